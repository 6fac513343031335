/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tokfilter.h: the NEW_TOKEN replay filter (RFC 9000 §8.1.3, §8.1.4: a
 * token from a NEW_TOKEN frame "SHOULD NOT be accepted multiple times"),
 * shared by every shard's listener of one server.
 *
 * One fixed table of 64-bit slots, set-associative: a token's fingerprint
 * (40 bits of its random AEAD nonce) picks a bucket of 8 slots (one cache
 * line); a slot holds the fingerprint and the token's expiry in minutes.
 * dpq_tokfilter_use() is one pass over the bucket and one compare-and-swap
 * (C11 atomics), no lock: two shards may present the same token at the
 * same instant.
 *
 * Why this shape: the filter is consulted once per Initial that carries a
 * NEW_TOKEN token, from any shard; the memory is fixed at creation
 * (bounded, no allocation afterwards); an entry lives only until the
 * token it remembers would have expired anyway, so expired slots are
 * reused in place and nothing sweeps.
 *
 * Full: when every slot of a token's bucket holds a live entry, the
 * token is treated as already used (DPQ_TOKFILTER_FULL): it is not
 * accepted, the client is handled as if it had no token (Retry if the
 * policy asks, the anti-amplification limit applies), which is the
 * RFC's own fallback for a bad NEW_TOKEN token (§8.1.3). Filling the
 * filter therefore costs clients a round trip, never correctness; size
 * it for the tokens redeemed within one token lifetime (counted as
 * "full" in the stats when it is too small).
 *
 * Races: two uses of one token in flight can both insert it (each into
 * the first free slot it saw). After its insert, a user looks at the
 * bucket again; finding the fingerprint in another slot it reports a
 * replay. Both may refuse; neither accepts twice.
 *
 * Scope: one server (one process). Replays to another server of a fleet
 * are not seen; a NEW_TOKEN token still binds the client's address, so
 * a replay from elsewhere fails the address check there.
 *
 * Pure C11: no DPDK, no clock (now is the caller's, us).
 */
#ifndef DPQ_SERVER_TOKFILTER_H
#define DPQ_SERVER_TOKFILTER_H

#include <stddef.h>
#include <stdint.h>

#define DPQ_TOKFILTER_WAYS	8	/* slots per bucket: one cache line */
/* The fewest / most slots a filter may have. */
#define DPQ_TOKFILTER_MIN	DPQ_TOKFILTER_WAYS
#define DPQ_TOKFILTER_MAX	(UINT64_C(1) << 28)

enum dpq_tokfilter_result {
	DPQ_TOKFILTER_FIRST = 0,	/* not seen before: accept the token */
	DPQ_TOKFILTER_REPLAY,		/* used before (or concurrently) */
	DPQ_TOKFILTER_FULL,		/* no room to remember it: refuse */
};

struct dpq_tokfilter_stats {
	uint64_t first, replay, full;
};

struct dpq_tokfilter;

/*
 * A filter of at least slots entries (rounded up to a power of two
 * multiple of DPQ_TOKFILTER_WAYS). base_us is the caller's clock at
 * creation: expiries are kept in minutes after it. Returns NULL with
 * errno EINVAL or ENOMEM.
 */
struct dpq_tokfilter *
dpq_tokfilter_create(uint64_t slots, uint64_t base_us);

void
dpq_tokfilter_destroy(struct dpq_tokfilter *f);

/* Slots in the table. */
uint64_t
dpq_tokfilter_slots(const struct dpq_tokfilter *f);

/*
 * Record one use of the token whose nonce is nonce (at least 5 bytes,
 * random: DPQ_TOKEN_NONCE_LEN bytes of token.h) and which expires at
 * expires_us; now_us is the caller's clock. Any thread.
 */
enum dpq_tokfilter_result
dpq_tokfilter_use(struct dpq_tokfilter *f, const uint8_t *nonce, size_t len,
		uint64_t expires_us, uint64_t now_us);

/* Counters (relaxed loads; any thread). */
void
dpq_tokfilter_get_stats(const struct dpq_tokfilter *f,
		struct dpq_tokfilter_stats *st);

#endif /* DPQ_SERVER_TOKFILTER_H */
