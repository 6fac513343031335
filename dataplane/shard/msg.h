/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * msg.h: the messages between a shard and the management thread's
 * handshake service (DESIGN §2), and the helpers both sides use to post
 * them without ever losing one silently. It lives with the shard, the
 * lower layer: control/mgmt includes it, never the other way round.
 *
 * Each shard has one channel (struct dpq_hs_chan): two DPDK rings created
 * single-producer/single-consumer (RING_F_SP_ENQ | RING_F_SC_DEQ), one per
 * direction, carrying pointers to fixed-size message objects (struct
 * dpq_hs_msg, DPQ_HS_MSG_SIZE bytes) taken from two rte_mempools of that
 * shard, one per direction:
 *   requests  shard -> mgmt   HS_NEW, HS_CRYPTO, HS_RELEASE
 *   replies   mgmt -> shard   HS_SEND, HS_SECRET, HS_PEER_TP, HS_EARLY,
 *                             HS_COMPLETE, HS_FAILED; HS_CONFIG (no connection: a new
 *                             server config version, struct
 *                             dpq_hs_config)
 * The sender allocates, the receiver frees (dpq_hs_msg_free(), which
 * wipes secret bytes first).
 *
 * Why a pool per shard and per direction rather than one shared pool: a
 * shard that stops draining (or floods requests) exhausts only its own
 * pools, never another shard's; the memory sits on the shard's NUMA
 * socket; and exhaustion is attributed to one shard and one direction in
 * the counters. The pools have no per-lcore cache: the management thread
 * is not an EAL lcore (it has no cache anyway), a cache would strand
 * objects and blur the exhaustion accounting, and messages are a handful
 * per handshake, never per packet. Two threads put objects back (the
 * receiver frees, the sender frees on a failed enqueue), so the pools keep
 * DPDK's default multi-producer/multi-consumer backing ring.
 *
 * Connections are named by a handle (shard id, slot index, generation),
 * never by pointer (DESIGN §2). A reply whose generation no longer matches
 * the slot (the connection died and the slot was reused) is dropped and
 * counted as stale by the shard.
 *
 * Ordering: every message of one handle travels in order on its ring (the
 * local backlogs below are FIFO and are flushed before anything new goes
 * on the ring). A blob larger than one message (the peer's transport
 * parameters, HS_PEER_TP) is split into consecutive messages with
 * DPQ_HS_F_MORE set on all but the last; its parts are posted without
 * anything in between.
 *
 * Full ring or empty pool: the sender copies the message into a bounded
 * FIFO backlog (struct dpq_hs_backlog) and retries later; only when that
 * backlog overflows does the post fail, and the caller fails the
 * handshake (counted). No message is ever dropped without a counter.
 */
#ifndef DPQ_SHARD_MSG_H
#define DPQ_SHARD_MSG_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "dataplane/engine/wire.h"

/* ---- handles -------------------------------------------------------------- */

/*
 * A connection handle: shard id (16 bits), generation (16 bits), slot index
 * (32 bits). The shard's connection table composes it; generations start at
 * 1 so that no live connection has handle 0 (DPQ_HS_HANDLE_NONE).
 */
#define DPQ_HS_HANDLE_NONE	UINT64_C(0)

static inline uint64_t
dpq_hs_handle(uint16_t shard, uint32_t index, uint16_t gen)
{
	return (uint64_t)shard << 48 | (uint64_t)gen << 32 | index;
}

static inline uint16_t
dpq_hs_handle_shard(uint64_t h)
{
	return (uint16_t)(h >> 48);
}

static inline uint16_t
dpq_hs_handle_gen(uint64_t h)
{
	return (uint16_t)(h >> 32);
}

static inline uint32_t
dpq_hs_handle_index(uint64_t h)
{
	return (uint32_t)h;
}

/* ---- messages ------------------------------------------------------------- */

enum dpq_hs_msg_type {
	/* shard -> mgmt */
	DPQ_HS_NEW = 1,		/* role, CIDs, our transport parameters */
	DPQ_HS_CRYPTO,		/* CRYPTO bytes received at epoch */
	DPQ_HS_RELEASE,		/* the connection is gone */
	/* mgmt -> shard */
	DPQ_HS_SEND,		/* handshake bytes to send at epoch */
	DPQ_HS_SECRET,		/* traffic secret for epoch, read or write */
	DPQ_HS_PEER_TP,		/* the peer's transport parameters (parts) */
	DPQ_HS_COMPLETE,	/* handshake complete; data = ALPN */
	DPQ_HS_FAILED,		/* close with error_code */
	DPQ_HS_CONFIG,		/* handle NONE; data = struct dpq_hs_config */
	DPQ_HS_EARLY,		/* server: 0-RTT accepted; data = ALPN */
	DPQ_HS_TYPE_MAX,
};

/* flags */
#define DPQ_HS_F_MORE		0x01	/* the blob continues in the next */
#define DPQ_HS_F_WRITE		0x02	/* HS_SECRET: key for sending */
#define DPQ_HS_F_RESUMED	0x04	/* HS_COMPLETE: a session resumed */
#define DPQ_HS_F_EARLY_OK	0x08	/* HS_COMPLETE: 0-RTT accepted */

/* One message object; header then payload. */
#define DPQ_HS_MSG_SIZE		2048
#define DPQ_HS_MSG_HDR_LEN	72
#define DPQ_HS_MSG_DATA_MAX	(DPQ_HS_MSG_SIZE - DPQ_HS_MSG_HDR_LEN)
/* Largest secret carried (SHA-384 suites give 48 bytes). */
#define DPQ_HS_SECRET_MAX	64
/* Largest ALPN carried in HS_COMPLETE, NUL included (RFC 7301: 255). */
#define DPQ_HS_ALPN_MAX		256

struct dpq_hs_msg {
	uint64_t handle;
	uint8_t type;		/* enum dpq_hs_msg_type */
	uint8_t epoch;		/* HS_CRYPTO, HS_SEND, HS_SECRET (0..3) */
	uint8_t flags;		/* DPQ_HS_F_* */
	uint8_t role;		/* HS_NEW: enum dpq_role of the connection */
	uint16_t len;		/* bytes used in data[] */
	uint16_t cipher_suite;	/* HS_SECRET: DPQ_TLS_* suite */
	uint64_t error_code;	/* HS_FAILED: QUIC error to close with */
	/* HS_NEW: what the service checks in the peer's transport
	 * parameters (RFC 9000 §7.3): client: DCID of its first Initial;
	 * server: the client's SCID. */
	struct dpq_cid odcid;
	struct dpq_cid peer_scid;
	uint8_t pad[DPQ_HS_MSG_HDR_LEN - 24 - 2 * sizeof(struct dpq_cid)];
	uint8_t data[DPQ_HS_MSG_DATA_MAX];
};

_Static_assert(sizeof(struct dpq_hs_msg) == DPQ_HS_MSG_SIZE,
		"dpq_hs_msg size");
_Static_assert(offsetof(struct dpq_hs_msg, data) == DPQ_HS_MSG_HDR_LEN,
		"dpq_hs_msg header");

/*
 * A server config version as the shards need it (control/mgmt/srvcfg.h):
 * the address-validation token keys and the policies applied by the
 * shard. Why a message on the existing ring rather than a pointer swap
 * under DPDK RCU (rte_rcu_qsbr): the shard drains this ring on every
 * poll anyway, the data is about a hundred bytes, each shard must build
 * its own GnuTLS AEAD handles from the key bytes (they are not safe to
 * share between threads), and in-order delivery with the handshake
 * replies needs no quiescent-state reporting in the shard loop. Versions
 * only grow; a shard applies what it receives and reports the version.
 */
#define DPQ_HS_TOKEN_KEY_LEN	16
struct dpq_hs_config {
	uint64_t version;
	uint64_t token_lifetime_us;	/* NEW_TOKEN tokens */
	uint64_t retry_token_lifetime_us;
	uint64_t max_early_data;	/* 0-RTT bytes per connection */
	uint8_t token_key[2][DPQ_HS_TOKEN_KEY_LEN];	/* current, previous */
	uint8_t token_id[2];
	uint8_t token_has_prev;
	uint8_t new_token;		/* send NEW_TOKEN frames */
	uint8_t token_v4_prefix, token_v6_prefix;
	uint8_t early_data;		/* 0-RTT accepted at all */
	uint8_t pad;
};
_Static_assert(sizeof(struct dpq_hs_config) <= DPQ_HS_MSG_DATA_MAX,
		"dpq_hs_config fits a message");

/* Bytes of a message that carry information. */
static inline size_t
dpq_hs_msg_size(const struct dpq_hs_msg *m)
{
	return DPQ_HS_MSG_HDR_LEN + m->len;
}

/* Zero what must not outlive the message (secret bytes). */
static inline void
dpq_hs_msg_wipe(struct dpq_hs_msg *m)
{
	if (m->type == DPQ_HS_SECRET)
		explicit_bzero(m->data, sizeof(m->data) < DPQ_HS_SECRET_MAX ?
				sizeof(m->data) : DPQ_HS_SECRET_MAX);
	else if (m->type == DPQ_HS_CONFIG)
		explicit_bzero(m->data, sizeof(struct dpq_hs_config));
}

/* Give a message object back to its pool, wiping secrets first. Called by
 * whoever ends up owning the object (normally the receiver). */
static inline void
dpq_hs_msg_free(struct dpq_hs_msg *m)
{
	dpq_hs_msg_wipe(m);
	rte_mempool_put(rte_mempool_from_obj(m), m);
}

/* ---- channel ---------------------------------------------------------------- */

/* One shard's pair of rings and pools (created by the management side,
 * see dpq_mgmt_chan()). */
struct dpq_hs_chan {
	uint16_t shard_id;
	struct rte_ring *to_mgmt;	/* requests: shard SP, mgmt SC */
	struct rte_ring *to_shard;	/* replies: mgmt SP, shard SC */
	struct rte_mempool *req_pool;	/* shard allocs, mgmt frees */
	struct rte_mempool *rep_pool;	/* mgmt allocs, shard frees */
	/*
	 * Which handshakes are still wanted: live[index] is the generation
	 * of the connection in that slot whose handshake runs, 0 once it
	 * is released (shard writes, relaxed; the service reads). Requests
	 * travel in order behind everything queued before them: under a
	 * flood of Initials, most connections whose ClientHello waits on
	 * the ring were evicted already (dataplane/server/halfopen.h), and
	 * their HS_RELEASE comes only after it. The service skips the TLS
	 * work of a handle that is not live (a server handshake costs a
	 * signature), so a real client's handshake waits for the live ones
	 * only. The array (nlive entries, allocated by the service) is
	 * consulted only once the shard set live_on; an index beyond it is
	 * taken as live. Written before the request is posted, so the
	 * ring's ordering makes a live handle's requests see it.
	 */
	uint16_t *live;
	uint32_t nlive;
	uint8_t live_on;		/* shard sets it (relaxed) */
};

/* Shard: handle's handshake is wanted (gen) or not (0). */
static inline void
dpq_hs_chan_set_live(struct dpq_hs_chan *ch, uint64_t handle, bool live)
{
	uint32_t i = dpq_hs_handle_index(handle);

	if (ch->live != NULL && i < ch->nlive)
		__atomic_store_n(&ch->live[i],
				live ? dpq_hs_handle_gen(handle) : 0,
				__ATOMIC_RELAXED);
}

/* Service: is handle's handshake still wanted? */
static inline bool
dpq_hs_chan_live(const struct dpq_hs_chan *ch, uint64_t handle)
{
	uint32_t i = dpq_hs_handle_index(handle);

	if (ch->live == NULL || i >= ch->nlive ||
	    !__atomic_load_n(&ch->live_on, __ATOMIC_RELAXED))
		return true;
	return __atomic_load_n(&ch->live[i], __ATOMIC_RELAXED) ==
		dpq_hs_handle_gen(handle);
}

/* ---- posting with a backlog ------------------------------------------------- */

/* Counters of one sending side; single writer, read by others with
 * relaxed atomic loads. */
struct dpq_hs_post_stats {
	uint64_t sent;			/* messages put on the ring */
	uint64_t ring_full;		/* enqueue attempts refused */
	uint64_t pool_empty;		/* allocation attempts refused */
	uint64_t backlogged;		/* messages that waited in the backlog */
	uint64_t backlog_overflow;	/* posts refused: backlog full */
	uint64_t backlog_max;		/* deepest backlog seen */
};

#define DPQ_HS_STAT_ADD(field, n) \
	__atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define DPQ_HS_STAT_LOAD(field) \
	__atomic_load_n(&(field), __ATOMIC_RELAXED)

/* A bounded FIFO of message copies waiting for ring space or pool objects.
 * Owned by one thread. */
struct dpq_hs_backlog {
	struct dpq_hs_msg *slots;	/* cap entries, caller-provided */
	uint32_t cap;
	uint32_t head;
	uint32_t count;
};

static inline void
dpq_hs_backlog_init(struct dpq_hs_backlog *bl, struct dpq_hs_msg *slots,
		uint32_t cap)
{
	bl->slots = slots;
	bl->cap = cap;
	bl->head = 0;
	bl->count = 0;
}

static inline struct dpq_hs_msg *
dpq_hs_backlog_at(const struct dpq_hs_backlog *bl, uint32_t i)
{
	return &bl->slots[(bl->head + i) % bl->cap];
}

/* Wipe every entry (before the memory is freed). */
static inline void
dpq_hs_backlog_clear(struct dpq_hs_backlog *bl)
{
	while (bl->count > 0) {
		dpq_hs_msg_wipe(dpq_hs_backlog_at(bl, 0));
		bl->head = (bl->head + 1) % bl->cap;
		bl->count--;
	}
}

/* Put a copy of m on ring r now. Returns 0, -ENOBUFS (pool empty) or
 * -ENOSPC (ring full); nothing changes on failure. */
static inline int
dpq_hs_msg_send_copy(struct rte_ring *r, struct rte_mempool *mp,
		const struct dpq_hs_msg *m, struct dpq_hs_post_stats *st)
{
	void *obj;

	if (rte_mempool_get(mp, &obj) != 0) {
		DPQ_HS_STAT_ADD(st->pool_empty, 1);
		return -ENOBUFS;
	}
	memcpy(obj, m, dpq_hs_msg_size(m));
	if (rte_ring_enqueue(r, obj) != 0) {
		dpq_hs_msg_free(obj);
		DPQ_HS_STAT_ADD(st->ring_full, 1);
		return -ENOSPC;
	}
	DPQ_HS_STAT_ADD(st->sent, 1);
	return 0;
}

/*
 * Post m: straight onto the ring when nothing is waiting before it, else
 * (or when the ring or pool refuses) at the tail of the backlog. Returns 0
 * (sent or queued) or -ENOBUFS when the backlog is full (counted; the
 * caller fails the handshake).
 */
static inline int
dpq_hs_post(struct rte_ring *r, struct rte_mempool *mp,
		struct dpq_hs_backlog *bl, const struct dpq_hs_msg *m,
		struct dpq_hs_post_stats *st)
{
	struct dpq_hs_msg *slot;

	if (bl->count == 0 && dpq_hs_msg_send_copy(r, mp, m, st) == 0)
		return 0;
	if (bl->count == bl->cap) {
		DPQ_HS_STAT_ADD(st->backlog_overflow, 1);
		return -ENOBUFS;
	}
	slot = dpq_hs_backlog_at(bl, bl->count);
	memcpy(slot, m, dpq_hs_msg_size(m));
	bl->count++;
	DPQ_HS_STAT_ADD(st->backlogged, 1);
	if (bl->count > st->backlog_max)
		DPQ_HS_STAT_ADD(st->backlog_max, bl->count - st->backlog_max);
	return 0;
}

/* Move backlog entries onto the ring, oldest first, until it is empty or
 * the ring/pool refuses. Returns the number moved. */
static inline unsigned int
dpq_hs_backlog_flush(struct rte_ring *r, struct rte_mempool *mp,
		struct dpq_hs_backlog *bl, struct dpq_hs_post_stats *st)
{
	unsigned int n = 0;

	while (bl->count > 0) {
		struct dpq_hs_msg *m = dpq_hs_backlog_at(bl, 0);

		/* Called on every poll: a ring still full is no news (no
		 * pool round trip, no count: ring_full counts posts). */
		if (rte_ring_full(r) ||
		    dpq_hs_msg_send_copy(r, mp, m, st) != 0)
			break;
		dpq_hs_msg_wipe(m);
		bl->head = (bl->head + 1) % bl->cap;
		bl->count--;
		n++;
	}
	return n;
}

/* Remove (and wipe) every backlog entry of handle, keeping the order of
 * the others. *had_type is set when a removed entry was of type t.
 * Returns the number removed. */
static inline unsigned int
dpq_hs_backlog_purge(struct dpq_hs_backlog *bl, uint64_t handle,
		uint8_t t, bool *had_type)
{
	uint32_t i, kept = 0, n = bl->count;

	for (i = 0; i < n; i++) {
		struct dpq_hs_msg *m = dpq_hs_backlog_at(bl, i);

		if (m->handle == handle) {
			if (m->type == t && had_type != NULL)
				*had_type = true;
			dpq_hs_msg_wipe(m);
			continue;
		}
		if (kept != i)
			memcpy(dpq_hs_backlog_at(bl, kept), m,
					dpq_hs_msg_size(m));
		kept++;
	}
	for (i = kept; i < n; i++)
		dpq_hs_msg_wipe(dpq_hs_backlog_at(bl, i));
	bl->count = kept;
	return n - kept;
}

#endif /* DPQ_SHARD_MSG_H */
