/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shard's log lines (rte_log), one type per audience:
 *   dpquic.shard  the shard itself (start, stop)
 *   dpquic.conn   one line per connection event at DEBUG: opened,
 *                 handshake done, closed and why (off by default:
 *                 `log.levels = ["dpquic.conn:debug"]`)
 *   dpquic.peer   WARNING when a peer breaks the protocol and we close
 *                 its connection with a transport error; at most
 *                 DPQ_SHARD_WARN_PER_S per second per shard, the rest
 *                 counted and reported with the next line that passes;
 *                 DEBUG for each datagram the listener dropped without
 *                 a connection (garbage, unknown version, too small...),
 *                 limited the same way (its own limiter: a flood of
 *                 garbage does not hide protocol errors); WARNING for
 *                 an Initial with an invalid Retry token (the peer's
 *                 limiter), and a summary of a flood of new
 *                 connections (Retries because many handshakes are
 *                 half-open, replies over their rate, evictions,
 *                 refusals) at most every DPQ_SHARD_FLOOD_EVERY_US
 * Called once per event, never per packet; a disabled level costs one
 * compare (rte_log_can_log) and no formatting.
 */
#ifndef DPQ_SHARD_LOG_H
#define DPQ_SHARD_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/quic/conn.h"

#define DPQ_SHARD_WARN_PER_S	10
/* A flood lasts: one summary line per 10 s, not ten a second. */
#define DPQ_SHARD_FLOOD_EVERY_US	10000000ull

extern int dpq_logtype_shard;
extern int dpq_logtype_conn;
extern int dpq_logtype_peer;

/* The rate limiter of one shard's peer warnings. */
struct dpq_shard_warn {
	uint64_t window_us;	/* start of the current second */
	uint32_t in_window;	/* warnings printed in it */
	uint64_t suppressed;	/* not printed since the last one */
};

/* What a flood of new connections made a shard do, counted since start
 * (the shard's and its listener's counters). */
struct dpq_shard_flood {
	uint64_t retry_halfopen;	/* Retries: many handshakes half-open */
	uint64_t reply_rate_drops;	/* replies over their rate, dropped */
	uint64_t evicted;		/* half-open connections evicted */
	uint64_t refused;		/* new connections refused */
};

/* The flood summary's state: when it last printed and the counts then. */
struct dpq_shard_flood_log {
	uint64_t last_us;
	bool printed;
	struct dpq_shard_flood at_last;
};

enum dpq_shard_conn_event {
	DPQ_SHARD_EV_OPEN,
	DPQ_SHARD_EV_HANDSHAKE,
	DPQ_SHARD_EV_CLOSE,
};

/* A connection event of shard `shard`; peer: its address as text. */
void dpq_shard_log_conn(unsigned int shard, uint64_t handle,
		const char *peer, const struct dpq_conn *c,
		enum dpq_shard_conn_event ev);
/* The peer broke the protocol: we close its connection with ci's
 * transport error. Returns true when the line was printed (false:
 * counted as suppressed, or the level is off). */
bool dpq_shard_log_peer_error(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const struct dpq_conn_close_info *ci,
		uint64_t now_us);
/* The listener dropped a datagram of len bytes from peer; why: its
 * outcome's counter name (dpq_listen_outcome_str). Same return. */
bool dpq_shard_log_drop(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const char *why, size_t len,
		uint64_t now_us);

/* What peer did wrong that is not a protocol error of a connection
 * (what: one clause, e.g. "Initial with an invalid Retry token ...").
 * WARNING, limited by w like the peer errors. Same return. */
bool dpq_shard_log_peer_warn(struct dpq_shard_warn *w, unsigned int shard,
		const char *peer, const char *what, uint64_t now_us);
/* A flood event happened (counts: the totals now; halfopen: half-open
 * handshakes now). Prints a WARNING with what changed since the last
 * one, the first time at once, then at most every
 * DPQ_SHARD_FLOOD_EVERY_US; nothing when nothing changed. Same return. */
bool dpq_shard_log_flood(struct dpq_shard_flood_log *fl, unsigned int shard,
		const struct dpq_shard_flood *counts, uint32_t halfopen,
		uint64_t now_us);

#endif /* DPQ_SHARD_LOG_H */
