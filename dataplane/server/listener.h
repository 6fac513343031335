/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * listener.h: what a server does with a datagram whose Destination
 * Connection ID matched no connection (the shard's "new-connection path",
 * DESIGN.md §2). One call per datagram decides, and builds the reply:
 *
 *   unknown version, long header  Version Negotiation if the datagram is
 *                                 >= 1200 bytes (RFC 9000 §6.1, §5.2.2),
 *                                 else drop
 *   Initial in < 1200 bytes       drop (§14.1)
 *   Initial with a Retry token    valid: ACCEPT (address validated);
 *                                 invalid: CONNECTION_CLOSE INVALID_TOKEN
 *                                 in an Initial packet (§8.1.2: the client
 *                                 will not accept a second Retry)
 *   Initial with a NEW_TOKEN token valid: ACCEPT without Retry; invalid:
 *                                 handled as if no token (§8.1.3)
 *   Initial, no (usable) token    Retry or ACCEPT by policy: never /
 *                                 always / auto: while half-open
 *                                 connections are many (halfopen.h) /
 *                                 rate: that, or when unvalidated new
 *                                 connections exceed a rate (token bucket)
 *   short header                  Stateless Reset (§10.3), rate limited,
 *                                 or drop
 *   anything else                 drop, with the reason counted
 *
 * Replies never amplify: VN, Retry and the close answer >= 1200-byte
 * datagrams with far fewer bytes, and a Stateless Reset is always shorter
 * than its trigger (§10.3.3). Resets and INVALID_TOKEN closes (the replies
 * that cost a HMAC or an Initial key derivation) share one token bucket
 * so the server cannot be used as a reflector or made to burn CPU.
 *
 * Pure: no I/O, no clock (now is the caller's, in us), no DPDK. A listener
 * belongs to one shard (shard only): it uses the shard's struct dpq_crypto
 * (Retry tag, Initial keys for the close) and owns GnuTLS token handles.
 */
#ifndef DPQ_SERVER_LISTENER_H
#define DPQ_SERVER_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/wire.h"
#include "cid.h"
#include "halfopen.h"
#include "token.h"
#include "tokfilter.h"

/* Longest reason phrase of a refusal close. */
#define DPQ_LISTENER_REASON_MAX		64
/* §7.2: a client's first Destination CID is at least 8 bytes. */
#define DPQ_LISTENER_MIN_CLIENT_DCID	8
#define DPQ_LISTENER_MAX_VERSIONS	8
/* Default Retry packets per second per shard (retry_reply_rate). */
#define DPQ_LISTENER_RETRY_RATE		20000

/* Largest reply: a VN echoing two 255-byte CIDs. */
#define DPQ_LISTENER_REPLY_MAX		(7 + 2 * DPQ_MAX_CID_LEN_ANY + \
		4 * DPQ_LISTENER_MAX_VERSIONS)

/*
 * A token bucket: up to burst events at once, refilled at rate per second.
 * Level is kept in millionths of an event so the arithmetic is exact with
 * a us clock.
 */
struct dpq_bucket {
	uint64_t rate;		/* events per second */
	uint64_t burst;		/* bucket size, events */
	uint64_t level;		/* micro-events */
	uint64_t last;		/* us of the last refill */
};

/* Start full at now. */
void
dpq_bucket_init(struct dpq_bucket *b, uint64_t rate, uint64_t burst,
		uint64_t now);

/* Take one event if the bucket holds one; true if taken. A clock that
 * steps back refills nothing. */
bool
dpq_bucket_take(struct dpq_bucket *b, uint64_t now);

enum dpq_retry_policy {
	DPQ_RETRY_NEVER = 0,
	DPQ_RETRY_ALWAYS,
	DPQ_RETRY_RATE,		/* Retry once unvalidated new connections
				 * exceed retry_rate/s (burst retry_burst),
				 * or half-open ones reach the threshold */
	DPQ_RETRY_AUTO,		/* Retry while half-open connections are at
				 * or above halfopen.retry_threshold (the
				 * default) */
};

struct dpq_listener_cfg {
	struct dpq_cid_cfg cid;		/* our CIDs (Retry SCID, new SCID) */
	uint8_t shard;			/* shard written into our CIDs */
	enum dpq_retry_policy retry;
	uint32_t retry_rate;
	uint32_t retry_burst;
	bool stateless_reset;		/* answer short headers with resets */
	uint32_t reply_rate;		/* resets + INVALID_TOKEN closes /s */
	uint32_t reply_burst;
	/* Retry packets per second (each costs a token seal and an
	 * integrity tag): a spoofed flood beyond this is dropped, cheaply,
	 * instead of eating the shard's core. 0: unlimited. */
	uint32_t retry_reply_rate;
	uint32_t retry_reply_burst;
	uint8_t sreset_key[DPQ_SRESET_KEY_MAX];	/* §10.3.2 static key */
	uint8_t sreset_key_len;		/* 16..64 */
	uint32_t versions[DPQ_LISTENER_MAX_VERSIONS];	/* for VN */
	uint8_t n_versions;		/* 1..DPQ_LISTENER_MAX_VERSIONS */
	struct dpq_token_cfg token;
	struct dpq_halfopen_cfg halfopen;	/* half-open bounds */
};

/* Defaults: default CIDs, shard 0, Retry auto (above 128 half-open
 * connections; rate 1000/s, burst 100 when switched to DPQ_RETRY_RATE),
 * resets on at 100/s burst 10, versions {1}, token and half-open
 * defaults. sreset_key is zero length: the caller must set one
 * (dpq_listener_create refuses a config without it). */
void
dpq_listener_cfg_default(struct dpq_listener_cfg *cfg);

/* Why a datagram ended as it did; one counter each. */
enum dpq_listen_outcome {
	DPQ_LO_ACCEPT = 0,		/* new connection, address unvalidated */
	DPQ_LO_ACCEPT_RETRY_TOKEN,	/* ... after Retry (validated) */
	DPQ_LO_ACCEPT_NEW_TOKEN,	/* ... with a NEW_TOKEN token */
	DPQ_LO_VN,			/* sent Version Negotiation */
	DPQ_LO_RETRY,			/* sent Retry */
	DPQ_LO_CLOSE_INVALID_TOKEN,	/* sent CONNECTION_CLOSE (§8.1.2) */
	DPQ_LO_CLOSE_REFUSED,		/* sent CONNECTION_REFUSED: refusing */
	DPQ_LO_SRESET,			/* sent Stateless Reset */
	DPQ_LO_DROP_MALFORMED,		/* header did not parse */
	DPQ_LO_DROP_VN_SMALL,		/* unknown version, < 1200 bytes */
	DPQ_LO_DROP_VN_RECEIVED,	/* a VN packet sent to a server */
	DPQ_LO_DROP_INITIAL_SMALL,	/* Initial in < 1200 bytes (§14.1) */
	DPQ_LO_DROP_DCID_SHORT,		/* client Initial DCID < 8 (§7.2) */
	DPQ_LO_DROP_LONG_OTHER,		/* 0-RTT, Handshake, Retry: no conn */
	DPQ_LO_DROP_SRESET_OFF,		/* resets disabled */
	DPQ_LO_DROP_SRESET_SMALL,	/* trigger too short (§10.3.3) */
	DPQ_LO_DROP_REPLY_RATE,		/* reset/close/Retry over its rate */
	DPQ_LO_DROP_INTERNAL,		/* our own failure (crypto, no key) */
	DPQ_LO_COUNT,
};

/* Counter name ("accept", "drop_initial_small"...); never NULL. */
const char *
dpq_listen_outcome_str(enum dpq_listen_outcome o);

enum dpq_listen_action {
	DPQ_LISTEN_DROP = 0,
	DPQ_LISTEN_REPLY,	/* send reply/reply_len back to the peer */
	DPQ_LISTEN_ACCEPT,	/* create a connection with the fields below */
};

struct dpq_listener_result {
	enum dpq_listen_action action;
	enum dpq_listen_outcome outcome;
	/* REPLY: one datagram, in the listener's scratch buffer, valid until
	 * the next call on this listener. */
	const uint8_t *reply;
	size_t reply_len;
	/* ACCEPT: what the connection needs (RFC 9000 §7.3, §18.2). */
	uint32_t version;
	struct dpq_cid odcid;		/* original_destination_connection_id:
					 * the client's first DCID */
	struct dpq_cid retry_scid;	/* retry_source_connection_id (len 0
					 * when !retried) */
	bool retried;
	struct dpq_cid client_scid;	/* the client's SCID: our DCID */
	struct dpq_cid initial_dcid;	/* DCID of this Initial: Initial keys
					 * (RFC 9001 §5.2); the connection
					 * must also be found by it until
					 * the client switches to scid */
	struct dpq_cid scid;		/* our new CID: initial_source_
					 * connection_id */
	uint8_t sreset_token[DPQ_RESET_TOKEN_LEN];	/* for scid */
	bool addr_validated;		/* token proved this exact address:
					 * no anti-amplification limit
					 * (§8.1); a NEW_TOKEN matched by
					 * prefix only does not count */
};

struct dpq_listener_stats {
	uint64_t outcome[DPQ_LO_COUNT];
	uint64_t retry_halfopen;	/* Retries sent because of the
					 * half-open threshold */
	uint64_t token_retry_ok;
	uint64_t token_retry_bad;	/* led to INVALID_TOKEN (or drop) */
	uint64_t token_new_ok;
	uint64_t token_new_bad;		/* ignored, §8.1.3 */
	uint64_t token_new_prefix;	/* accepted on the prefix only */
	uint64_t token_new_replay;	/* authentic but used before, or the
					 * replay filter full: ignored */
	uint64_t token_new_issued;	/* sealed for NEW_TOKEN frames */
};

struct dpq_listener;

/*
 * Create a listener. cc is the shard's crypto context (not owned); rnd
 * supplies all randomness (copied; &dpq_rand_system in production). The
 * listener starts with no token key: Retry and token checks need
 * dpq_listener_set_token_key(). Returns NULL with errno EINVAL or ENOMEM.
 */
struct dpq_listener *
dpq_listener_create(const struct dpq_listener_cfg *cfg, struct dpq_crypto *cc,
		const struct dpq_rand *rnd, uint64_t now);

void
dpq_listener_destroy(struct dpq_listener *l);

/* Rotate the token key (see dpq_tokens_set_key()). */
int
dpq_listener_set_token_key(struct dpq_listener *l, uint8_t key_id,
		const uint8_t key[DPQ_TOKEN_KEY_LEN]);

/*
 * The shard's connection table has nslots slots: size the half-open
 * tracker for it (before the first datagram; again replaces it). Returns
 * 0, -EINVAL or -ENOMEM.
 */
int
dpq_listener_set_slots(struct dpq_listener *l, uint32_t nslots);

/* The half-open tracker the shard reports to (NULL before
 * dpq_listener_set_slots()): dpq_halfopen_admit() before creating a
 * connection, _add() once it exists, _remove() when its handshake
 * completes or it goes. */
struct dpq_halfopen *
dpq_listener_halfopen(struct dpq_listener *l);

/* The listener's token context, to seal NEW_TOKEN tokens on this shard. */
struct dpq_tokens *
dpq_listener_tokens(struct dpq_listener *l);

/* The NEW_TOKEN replay filter shared by the server's listeners (not
 * owned; NULL: none, a token may then be used again within its
 * lifetime). */
void
dpq_listener_set_token_filter(struct dpq_listener *l,
		struct dpq_tokfilter *f);

/*
 * Seal a token for a NEW_TOKEN frame (RFC 9000 §8.1.3) to the client at
 * peer (its validated address), issued now. Returns the length,
 * -ENOKEY (no token key yet) or another negative errno.
 */
ssize_t
dpq_listener_new_token(struct dpq_listener *l, const struct dpq_netaddr *peer,
		uint64_t now, uint8_t *out, size_t out_len);

/*
 * Decide what to do with a datagram (dgram, len) from peer that matched no
 * connection, at now (us). Fills *out and counts the outcome. Returns
 * out->action. Never reads outside [dgram, dgram + len).
 */
enum dpq_listen_action
dpq_listener_on_datagram(struct dpq_listener *l, const uint8_t *dgram,
		size_t len, const struct dpq_netaddr *peer, uint64_t now,
		struct dpq_listener_result *out);

const struct dpq_listener_stats *
dpq_listener_stats(const struct dpq_listener *l);

/*
 * Another CID for a connection of this listener's shard (NEW_CONNECTION_
 * ID, RFC 9000 §5.1.1): QUIC-LB layout like the first, and its stateless
 * reset token (§10.3.2). Returns 0, -ENOTSUP when the configuration is
 * the unroutable 0b111 (QUIC-LB "Configuration Failover": one CID per
 * connection), or -EINVAL.
 */
int
dpq_listener_new_cid(struct dpq_listener *l, struct dpq_cid *cid,
		uint8_t token[DPQ_RESET_TOKEN_LEN]);

/*
 * Refuse new connections (draining, shutting down): an Initial that would
 * be accepted is answered with CONNECTION_CLOSE(CONNECTION_REFUSED,
 * reason) in an Initial packet (RFC 9000 §10.2.3, §20.1), under the same
 * rate limit as the other closes. Connections that exist are not touched.
 */
void
dpq_listener_set_refuse(struct dpq_listener *l, bool refuse,
		const char *reason);

/* Change the Retry policy (a config reload); rate 0 keeps the rate. */
void
dpq_listener_set_retry(struct dpq_listener *l, enum dpq_retry_policy retry,
		uint32_t rate, uint64_t now);

#endif /* DPQ_SERVER_LISTENER_H */
