/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halfopen.h: a server's bound on half-open connections, those it created
 * for a client's Initial whose handshake has not completed yet.
 *
 * A half-open connection costs a slot, TLS state and a handshake; its
 * peer proved nothing yet (RFC 9000 §8, §21.1.1). Without a bound, one
 * host sending Initials fills the connection table until the handshakes
 * time out, and real clients are refused meanwhile. The tracker keeps, per
 * shard, the half-open connections in age order overall and per source
 * prefix (an IPv4 address or an IPv6 /64 by default), and decides for each
 * new connection:
 *   - a source prefix at its cap: evict that prefix's oldest half-open
 *     connection (a flood from one host competes only with itself);
 *   - the shard at its half-open cap, or the connection table full:
 *     evict the oldest half-open connection of the shard (an attacker's
 *     connection never completes, so the oldest is the likeliest to be
 *     one; a real client's handshake takes a round trip or two);
 *   - a full table without any half-open connection: refuse.
 * A connection whose peer proved its address (RFC 9000 §8.1: a Handshake
 * packet came from it, or its Initial carried a valid token) is a real
 * client whose handshake is under way, not a flood's: in both cases it is
 * the victim only when no unproven one is left (of the prefix, of the
 * shard). A flood of Initials, spoofed or not, cannot evict it, and one
 * that completes address validation must pay a key exchange for each.
 * And it says when Retry should be switched on (retry_threshold half-open
 * connections): from then on, new clients must prove their address first
 * (§8.1.2), which stops floods from spoofed sources.
 *
 * Connections are named by the shard's slot numbers (< nslots). Memory is
 * fixed at creation: three arrays of nslots and a prefix table of twice
 * max_total entries (open addressing, keyed hash: a spoofing attacker
 * cannot aim prefixes at one bucket). No I/O, no clock. Shard only.
 */
#ifndef DPQ_SERVER_HALFOPEN_H
#define DPQ_SERVER_HALFOPEN_H

#include <stdbool.h>
#include <stdint.h>

#include "cid.h"
#include "token.h"

/* Defaults (per shard); the shard's connection table holds 4096. */
#define DPQ_HALFOPEN_MAX_TOTAL		1024
#define DPQ_HALFOPEN_MAX_PER_PREFIX	64
#define DPQ_HALFOPEN_RETRY_THRESHOLD	128
#define DPQ_HALFOPEN_V4_PREFIX		32
#define DPQ_HALFOPEN_V6_PREFIX		64

struct dpq_halfopen_cfg {
	uint32_t max_total;		/* half-open connections per shard */
	uint32_t max_per_prefix;	/* ... per source prefix */
	uint8_t v4_prefix;		/* prefix length, bits (1..32) */
	uint8_t v6_prefix;		/* (1..128) */
	uint32_t retry_threshold;	/* ask for Retry from this many on */
};

void dpq_halfopen_cfg_default(struct dpq_halfopen_cfg *cfg);

enum dpq_halfopen_verdict {
	DPQ_HO_ADMIT = 0,	/* create the connection */
	DPQ_HO_EVICT,		/* free *victim first, then create */
	DPQ_HO_REFUSE,		/* table full of established connections */
};

struct dpq_halfopen_stats {
	uint64_t admitted;
	uint64_t evicted_prefix;	/* oldest of a prefix at its cap */
	uint64_t evicted_total;		/* oldest of the shard */
	uint64_t refused;
	uint64_t completed;		/* handshake completed */
	uint64_t proven;		/* peers that proved their address */
};

struct dpq_halfopen;

/* A tracker for slots 0..nslots-1; rnd seeds the prefix hash. Returns
 * NULL with errno EINVAL (bad cfg, nslots 0) or ENOMEM. */
struct dpq_halfopen *
dpq_halfopen_create(const struct dpq_halfopen_cfg *cfg, uint32_t nslots,
		const struct dpq_rand *rnd);

void
dpq_halfopen_destroy(struct dpq_halfopen *h);

/*
 * Before creating a connection for an Initial from peer: the verdict, and
 * for DPQ_HO_EVICT the slot to free (with dpq_halfopen_remove()) first.
 * table_full: the shard has no free slot.
 */
enum dpq_halfopen_verdict
dpq_halfopen_admit(struct dpq_halfopen *h, const struct dpq_netaddr *peer,
		bool table_full, uint32_t *victim);

/* The connection in slot was created for peer: it is half-open until
 * dpq_halfopen_remove(). Returns 0, -EINVAL (slot out of range or
 * tracked already) or -ENOSPC (the caller skipped dpq_halfopen_admit()). */
int
dpq_halfopen_add(struct dpq_halfopen *h, uint32_t slot,
		const struct dpq_netaddr *peer);

/* The peer of slot proved its address (RFC 9000 §8.1): from now on it is
 * evicted only after every unproven one. Untracked slots are ignored;
 * idempotent. */
void
dpq_halfopen_proven(struct dpq_halfopen *h, uint32_t slot);

/* The connection in slot completed its handshake (completed = true) or
 * went away. A slot that is not tracked is ignored. */
void
dpq_halfopen_remove(struct dpq_halfopen *h, uint32_t slot, bool completed);

bool
dpq_halfopen_tracked(const struct dpq_halfopen *h, uint32_t slot);

/* Half-open connections now (of the shard / of peer's prefix). */
uint32_t
dpq_halfopen_count(const struct dpq_halfopen *h);
uint32_t
dpq_halfopen_count_prefix(const struct dpq_halfopen *h,
		const struct dpq_netaddr *peer);

/* At or above retry_threshold: new clients should be sent a Retry. */
bool
dpq_halfopen_retry_wanted(const struct dpq_halfopen *h);

const struct dpq_halfopen_stats *
dpq_halfopen_stats(const struct dpq_halfopen *h);

#endif /* DPQ_SERVER_HALFOPEN_H */
