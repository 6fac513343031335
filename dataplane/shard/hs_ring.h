/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_hs_ring is a shard's end of its channel to the management thread's
 * handshake service (DESIGN §2, dataplane/shard/msg.h): the struct
 * dpq_hs_ops its connections are created with (CRYPTO bytes become
 * HS_CRYPTO messages, release becomes HS_RELEASE), HS_NEW for a new
 * connection, and the drain that applies the service's replies to the
 * connections (dpq_conn_hs_send / _secret / _peer_tparams / _complete /
 * _failed).
 *
 * A connection is named by its handle (msg.h: shard, index, generation),
 * which dpq_hs_ring_new_conn() stores in the connection's hs_ctx; replies
 * are routed by the shard's own lookup, so a reply for a slot that was
 * reused (other generation) finds NULL and is dropped as stale (counted).
 *
 * A full ring or empty pool never loses a request: the copy waits in a
 * bounded FIFO backlog that dpq_hs_ring_drain() flushes first. When the
 * backlog overflows, recv fails (the connection closes with
 * INTERNAL_ERROR) and new_conn returns -ENOBUFS; new_conn already does
 * once the backlog is half full, keeping the rest for the handshakes under
 * way. A release that cannot be
 * sent waits in its own list (one handle per connection, so it is sized
 * like the shard's connection table); a release whose HS_NEW never left
 * the backlog is not needed and only purges it.
 *
 * Thread: everything here runs on the shard's lcore (shard only), except
 * dpq_hs_ring_get_stats() (any thread).
 *
 * Return codes: 0 or a negative errno (-EINVAL, -ENOMEM, -ENOBUFS backlog
 * full, -EMSGSIZE local transport parameters larger than one message).
 */
#ifndef DPQ_SHARD_HS_RING_H
#define DPQ_SHARD_HS_RING_H

#include <stdint.h>

#include "dataplane/shard/msg.h"
#include "dataplane/quic/conn.h"

#define DPQ_HS_RING_DEFAULT_BACKLOG	64
#define DPQ_HS_RING_DEFAULT_RELEASES	4096
/* Replies taken off the ring per dequeue. */
#define DPQ_HS_RING_BURST		32

struct dpq_hs_ring_conf {
	struct dpq_hs_chan *chan;	/* from dpq_mgmt_chan() */
	unsigned int backlog;		/* 0: DPQ_HS_RING_DEFAULT_BACKLOG */
	unsigned int max_releases;	/* 0: DPQ_HS_RING_DEFAULT_RELEASES */
	int socket_id;			/* memory; SOCKET_ID_ANY: any */
	/* A server config version arrived (HS_CONFIG): apply it to the
	 * shard (token keys, policies). NULL: ignored. Shard only, from
	 * dpq_hs_ring_drain(). */
	void (*on_config)(void *arg, const struct dpq_hs_config *cfg);
	void *config_arg;
};

struct dpq_hs_ring_stats {
	uint64_t requests;		/* request messages put on the ring */
	uint64_t ring_full;		/* enqueues refused */
	uint64_t pool_empty;		/* allocations refused */
	uint64_t backlogged;		/* requests that waited */
	uint64_t backlog;		/* waiting now */
	uint64_t backlog_max;
	uint64_t backlog_overflow;	/* recv/new_conn refused */
	uint64_t new_refused;		/* new_conn refused: backlog half
					 * full (kept for handshakes under
					 * way) */
	uint64_t purged;		/* queued requests of released conns */
	uint64_t release_pending;	/* releases waiting now */
	uint64_t release_lost;		/* release list full */
	uint64_t replies;		/* reply messages taken off the ring */
	uint64_t applied;		/* ... applied to a connection */
	uint64_t stale;			/* ... whose connection is gone */
	uint64_t bad;			/* ... malformed */
	uint64_t torn;			/* blobs whose parts did not follow */
	uint64_t tp_rejected;		/* peer parameters the conn refused */
	uint64_t hs_complete;
	uint64_t hs_failed;
	uint64_t config_version;	/* last HS_CONFIG applied (0: none) */
};

struct dpq_hs_ring;

/* The handshake service ops: give dpq_conn_init.hs_ops this and .hs the
 * struct dpq_hs_ring. */
extern const struct dpq_hs_ops dpq_hs_ring_ops;

int dpq_hs_ring_create(const struct dpq_hs_ring_conf *conf,
		struct dpq_hs_ring **out);
/* Wipes what waits in the backlog; pending releases are lost (the
 * management side frees its table when it is destroyed). */
void dpq_hs_ring_destroy(struct dpq_hs_ring *r);

/* Start the handshake of c (created with dpq_hs_ring_ops and r) under
 * handle: stores handle in c's hs_ctx and sends HS_NEW with c's role, its
 * transport parameters and the CIDs the service checks. Call right after
 * dpq_conn_create(), before any packet. */
int dpq_hs_ring_new_conn(struct dpq_hs_ring *r, struct dpq_conn *c,
		uint64_t handle);

/* Flush waiting requests, then take up to budget replies and apply them
 * to the connections lookup() returns for their handle (NULL: stale).
 * lookup must check the generation. A connection whose transport
 * parameters its own check refuses is failed with that error. Returns the
 * messages moved (requests flushed plus replies taken). */
unsigned int dpq_hs_ring_drain(struct dpq_hs_ring *r,
		struct dpq_conn *(*lookup)(void *arg, uint64_t handle),
		void *arg, unsigned int budget);

void dpq_hs_ring_get_stats(const struct dpq_hs_ring *r,
		struct dpq_hs_ring_stats *st);

#endif /* DPQ_SHARD_HS_RING_H */
