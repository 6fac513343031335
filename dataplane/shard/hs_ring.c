/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hs_ring.c: a shard's adapter to the management thread's handshake
 * service (see hs_ring.h): requests out through a bounded backlog, replies
 * in and applied to connections found by handle. Shard only.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_memory.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/tparams.h"
#include "dataplane/shard/hs_ring.h"

/* The handle rides in the connection's hs_ctx pointer. */
_Static_assert(sizeof(void *) >= sizeof(uint64_t),
		"a handle must fit in a pointer");

struct dpq_hs_ring {
	struct dpq_hs_chan *chan;
	struct dpq_hs_backlog bl;
	struct dpq_hs_post_stats post;
	/* Releases waiting for room (sent once the backlog is empty). */
	uint64_t *rel;
	uint32_t rel_cap, rel_head, rel_count;
	/* Reassembly of a multi-part HS_PEER_TP. */
	uint64_t asm_handle;		/* NONE: idle */
	size_t asm_len;
	uint8_t asm_buf[DPQ_TPARAMS_MAX_LEN];
	struct dpq_hs_msg scratch;	/* request being built */
	uint64_t purged, release_lost, release_pending;
	uint64_t replies, applied, stale, bad, torn, tp_rejected;
	uint64_t hs_complete, hs_failed, backlog_now;
	uint64_t new_refused;
	void (*on_config)(void *arg, const struct dpq_hs_config *cfg);
	void *config_arg;
	uint64_t config_version;
	struct dpq_hs_msg slots[];	/* the backlog */
};

static uint64_t
conn_handle(const struct dpq_conn *c)
{
	return (uint64_t)(uintptr_t)dpq_conn_hs_ctx(c);
}

static void
sync_gauges(struct dpq_hs_ring *r)
{
	__atomic_store_n(&r->backlog_now, r->bl.count, __ATOMIC_RELAXED);
	__atomic_store_n(&r->release_pending, r->rel_count, __ATOMIC_RELAXED);
}

static struct dpq_hs_msg *
req_init(struct dpq_hs_ring *r, uint64_t handle, uint8_t type)
{
	memset(&r->scratch, 0, DPQ_HS_MSG_HDR_LEN);
	r->scratch.handle = handle;
	r->scratch.type = type;
	return &r->scratch;
}

static int
req_post(struct dpq_hs_ring *r)
{
	int rc = dpq_hs_post(r->chan->to_mgmt, r->chan->req_pool, &r->bl,
			&r->scratch, &r->post);

	sync_gauges(r);
	return rc;
}

/* ---- ops (called by the connection, shard only) ------------------------- */

static int
hs_recv(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	struct dpq_hs_ring *r = hs;
	uint64_t handle = conn_handle(c);
	size_t off = 0;

	if (r == NULL || handle == DPQ_HS_HANDLE_NONE ||
	    (unsigned int)epoch >= DPQ_EPOCH_COUNT)
		return -EINVAL;
	while (off < len) {
		size_t n = len - off < DPQ_HS_MSG_DATA_MAX ? len - off :
			DPQ_HS_MSG_DATA_MAX;
		struct dpq_hs_msg *m = req_init(r, handle, DPQ_HS_CRYPTO);

		m->epoch = (uint8_t)epoch;
		m->len = (uint16_t)n;
		memcpy(m->data, data + off, n);
		if (req_post(r) != 0)
			return -ENOBUFS;
		off += n;
	}
	return 0;
}

static void
hs_release(void *hs, struct dpq_conn *c)
{
	struct dpq_hs_ring *r = hs;
	uint64_t handle = conn_handle(c);
	bool had_new = false;

	if (r == NULL || handle == DPQ_HS_HANDLE_NONE)
		return;
	dpq_conn_set_hs_ctx(c, NULL);
	/* What still waits for the service is moot from now on. */
	dpq_hs_chan_set_live(r->chan, handle, false);
	/* Requests of a dead connection are moot; if its HS_NEW never
	 * left, the service never heard of it and needs no release. */
	DPQ_HS_STAT_ADD(r->purged, dpq_hs_backlog_purge(&r->bl, handle,
			DPQ_HS_NEW, &had_new));
	if (!had_new) {
		req_init(r, handle, DPQ_HS_RELEASE);
		if (r->bl.count != 0 || r->rel_count != 0 ||
		    dpq_hs_msg_send_copy(r->chan->to_mgmt, r->chan->req_pool,
				&r->scratch, &r->post) != 0) {
			if (r->rel_count == r->rel_cap) {
				DPQ_HS_STAT_ADD(r->release_lost, 1);
			} else {
				r->rel[(r->rel_head + r->rel_count) %
					r->rel_cap] = handle;
				r->rel_count++;
			}
		}
	}
	sync_gauges(r);
}

const struct dpq_hs_ops dpq_hs_ring_ops = {
	.recv = hs_recv,
	.release = hs_release,
};

/* ---- API ------------------------------------------------------------------- */

int
dpq_hs_ring_create(const struct dpq_hs_ring_conf *conf,
		struct dpq_hs_ring **out)
{
	unsigned int backlog, rels;
	struct dpq_hs_ring *r;

	if (conf == NULL || conf->chan == NULL || out == NULL)
		return -EINVAL;
	backlog = conf->backlog ? conf->backlog : DPQ_HS_RING_DEFAULT_BACKLOG;
	rels = conf->max_releases ? conf->max_releases :
		DPQ_HS_RING_DEFAULT_RELEASES;
	r = rte_zmalloc_socket("dpq_hs_ring", sizeof(*r) +
			(size_t)backlog * sizeof(struct dpq_hs_msg),
			RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (r == NULL)
		return -ENOMEM;
	r->rel = rte_zmalloc_socket("dpq_hs_ring_rel", rels * sizeof(*r->rel),
			RTE_CACHE_LINE_SIZE, conf->socket_id);
	if (r->rel == NULL) {
		rte_free(r);
		return -ENOMEM;
	}
	r->chan = conf->chan;
	r->on_config = conf->on_config;
	r->config_arg = conf->config_arg;
	r->rel_cap = rels;
	dpq_hs_backlog_init(&r->bl, r->slots, backlog);
	/* This side keeps the channel's liveness table (msg.h). */
	__atomic_store_n(&r->chan->live_on, 1, __ATOMIC_RELAXED);
	*out = r;
	return 0;
}

void
dpq_hs_ring_destroy(struct dpq_hs_ring *r)
{
	if (r == NULL)
		return;
	dpq_hs_backlog_clear(&r->bl);
	rte_free(r->rel);
	rte_free(r);
}

int
dpq_hs_ring_new_conn(struct dpq_hs_ring *r, struct dpq_conn *c,
		uint64_t handle)
{
	struct dpq_hs_msg *m;
	ssize_t n;
	int rc;

	if (r == NULL || c == NULL || handle == DPQ_HS_HANDLE_NONE ||
	    dpq_hs_handle_shard(handle) != r->chan->shard_id)
		return -EINVAL;
	/* A new handshake may take only half the backlog: the rest is
	 * kept for the CRYPTO of handshakes under way, which fail when
	 * the backlog overflows (a refused connection costs its client
	 * one Initial retransmission, a failed one costs it the
	 * connection). */
	if (r->bl.count >= (r->bl.cap + 1) / 2) {
		DPQ_HS_STAT_ADD(r->new_refused, 1);
		return -ENOBUFS;
	}
	m = req_init(r, handle, DPQ_HS_NEW);
	n = dpq_conn_local_tparams(c, m->data, DPQ_HS_MSG_DATA_MAX);
	if (n < 0)
		return n == -ENOSPC ? -EMSGSIZE : (int)n;
	m->len = (uint16_t)n;
	/* What the service checks in the peer's parameters (RFC 9000
	 * §7.3): right after creation, a client's DCID is the one of its
	 * first Initial and a server's is the client's SCID. */
	if (dpq_conn_is_server(c)) {
		m->role = DPQ_ROLE_SERVER;
		m->peer_scid = *dpq_conn_dcid(c);
	} else {
		m->role = DPQ_ROLE_CLIENT;
		m->odcid = *dpq_conn_dcid(c);
	}
	/* Live before the service can see the request (msg.h). */
	dpq_hs_chan_set_live(r->chan, handle, true);
	rc = req_post(r);
	if (rc != 0) {
		dpq_hs_chan_set_live(r->chan, handle, false);
		return rc;
	}
	dpq_conn_set_hs_ctx(c, (void *)(uintptr_t)handle);
	return 0;
}

static unsigned int
flush(struct dpq_hs_ring *r)
{
	unsigned int n = dpq_hs_backlog_flush(r->chan->to_mgmt,
			r->chan->req_pool, &r->bl, &r->post);

	while (r->bl.count == 0 && r->rel_count > 0) {
		req_init(r, r->rel[r->rel_head], DPQ_HS_RELEASE);
		if (dpq_hs_msg_send_copy(r->chan->to_mgmt, r->chan->req_pool,
				&r->scratch, &r->post) != 0)
			break;
		r->rel_head = (r->rel_head + 1) % r->rel_cap;
		r->rel_count--;
		n++;
	}
	sync_gauges(r);
	return n;
}

static void
peer_tparams(struct dpq_hs_ring *r, struct dpq_conn *c,
		const uint8_t *data, size_t len)
{
	uint64_t err = dpq_conn_hs_peer_tparams(c, data, len);

	if (err != 0) {
		/* The connection's fuller check (RFC 9000 §7.3: retry and
		 * the server's CIDs) disagrees with the service's. */
		DPQ_HS_STAT_ADD(r->tp_rejected, 1);
		dpq_conn_hs_failed(c, err);
	}
}

/* Apply one reply (shard only). */
static void
apply(struct dpq_hs_ring *r, const struct dpq_hs_msg *m,
		struct dpq_conn *(*lookup)(void *arg, uint64_t handle),
		void *arg)
{
	struct dpq_conn *c;
	int rc;

	if (m->type == DPQ_HS_CONFIG) {
		struct dpq_hs_config cfg;

		if (m->handle != DPQ_HS_HANDLE_NONE || m->len != sizeof(cfg)) {
			DPQ_HS_STAT_ADD(r->bad, 1);
			return;
		}
		memcpy(&cfg, m->data, sizeof(cfg));
		if (r->on_config != NULL)
			r->on_config(r->config_arg, &cfg);
		__atomic_store_n(&r->config_version, cfg.version,
				__ATOMIC_RELEASE);
		explicit_bzero(&cfg, sizeof(cfg));
		return;
	}
	if (m->handle == DPQ_HS_HANDLE_NONE || m->len > DPQ_HS_MSG_DATA_MAX ||
	    m->type < DPQ_HS_SEND || m->type >= DPQ_HS_TYPE_MAX ||
	    ((m->type == DPQ_HS_SEND || m->type == DPQ_HS_SECRET) &&
	     m->epoch >= DPQ_EPOCH_COUNT) ||
	    (m->type == DPQ_HS_SECRET && m->len > DPQ_HS_SECRET_MAX) ||
	    ((m->type == DPQ_HS_COMPLETE || m->type == DPQ_HS_EARLY) &&
	     (m->len == 0 || m->data[m->len - 1] != '\0'))) {
		DPQ_HS_STAT_ADD(r->bad, 1);
		return;
	}
	/* The parts of a blob follow each other on the ring: anything else
	 * in between means the rest was purged at the service. */
	if (r->asm_handle != DPQ_HS_HANDLE_NONE &&
	    (m->handle != r->asm_handle || m->type != DPQ_HS_PEER_TP)) {
		DPQ_HS_STAT_ADD(r->torn, 1);
		r->asm_handle = DPQ_HS_HANDLE_NONE;
		r->asm_len = 0;
	}
	c = lookup(arg, m->handle);
	if (c == NULL || conn_handle(c) != m->handle) {
		DPQ_HS_STAT_ADD(r->stale, 1);
		if (m->handle == r->asm_handle) {
			r->asm_handle = DPQ_HS_HANDLE_NONE;
			r->asm_len = 0;
		}
		return;
	}
	DPQ_HS_STAT_ADD(r->applied, 1);
	switch (m->type) {
	case DPQ_HS_SEND:
		rc = dpq_conn_hs_send(c, (enum dpq_epoch)m->epoch, m->data,
				m->len);
		if (rc != 0 && rc != -ENOBUFS)	/* -ENOBUFS: closed itself */
			dpq_conn_hs_failed(c, DPQ_TE_INTERNAL_ERROR);
		break;
	case DPQ_HS_SECRET:
		rc = dpq_conn_hs_secret(c, (enum dpq_epoch)m->epoch,
				(m->flags & DPQ_HS_F_WRITE) != 0,
				m->cipher_suite, m->data, m->len);
		if (rc != 0)
			dpq_conn_hs_failed(c, DPQ_TE_INTERNAL_ERROR);
		break;
	case DPQ_HS_PEER_TP:
		if (r->asm_handle == DPQ_HS_HANDLE_NONE &&
		    !(m->flags & DPQ_HS_F_MORE)) {
			peer_tparams(r, c, m->data, m->len);
			break;
		}
		if (r->asm_len + m->len > sizeof(r->asm_buf)) {
			r->asm_handle = DPQ_HS_HANDLE_NONE;
			r->asm_len = 0;
			DPQ_HS_STAT_ADD(r->tp_rejected, 1);
			dpq_conn_hs_failed(c,
					DPQ_TE_TRANSPORT_PARAMETER_ERROR);
			break;
		}
		memcpy(r->asm_buf + r->asm_len, m->data, m->len);
		r->asm_len += m->len;
		r->asm_handle = m->handle;
		if (!(m->flags & DPQ_HS_F_MORE)) {
			size_t n = r->asm_len;

			r->asm_handle = DPQ_HS_HANDLE_NONE;
			r->asm_len = 0;
			peer_tparams(r, c, r->asm_buf, n);
		}
		break;
	case DPQ_HS_EARLY:
		dpq_conn_hs_early(c, (const char *)m->data);
		break;
	case DPQ_HS_COMPLETE:
		DPQ_HS_STAT_ADD(r->hs_complete, 1);
		dpq_conn_hs_resumption(c, (m->flags & DPQ_HS_F_RESUMED) != 0,
				(m->flags & DPQ_HS_F_EARLY_OK) != 0);
		dpq_conn_hs_complete(c, (const char *)m->data);
		break;
	case DPQ_HS_FAILED:
		DPQ_HS_STAT_ADD(r->hs_failed, 1);
		dpq_conn_hs_failed(c, m->error_code);
		break;
	default:
		break;
	}
}

unsigned int
dpq_hs_ring_drain(struct dpq_hs_ring *r,
		struct dpq_conn *(*lookup)(void *arg, uint64_t handle),
		void *arg, unsigned int budget)
{
	void *burst[DPQ_HS_RING_BURST];
	unsigned int work, left = budget;

	if (r == NULL || lookup == NULL)
		return 0;
	work = flush(r);
	while (left > 0) {
		unsigned int n, i;

		n = rte_ring_dequeue_burst(r->chan->to_shard, burst,
				left < DPQ_HS_RING_BURST ? left :
				DPQ_HS_RING_BURST, NULL);
		if (n == 0)
			break;
		DPQ_HS_STAT_ADD(r->replies, n);
		for (i = 0; i < n; i++) {
			apply(r, burst[i], lookup, arg);
			dpq_hs_msg_free(burst[i]);
		}
		left -= n;
		work += n;
	}
	return work;
}

void
dpq_hs_ring_get_stats(const struct dpq_hs_ring *r,
		struct dpq_hs_ring_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (r == NULL)
		return;
	st->requests = DPQ_HS_STAT_LOAD(r->post.sent);
	st->ring_full = DPQ_HS_STAT_LOAD(r->post.ring_full);
	st->pool_empty = DPQ_HS_STAT_LOAD(r->post.pool_empty);
	st->backlogged = DPQ_HS_STAT_LOAD(r->post.backlogged);
	st->backlog = DPQ_HS_STAT_LOAD(r->backlog_now);
	st->backlog_max = DPQ_HS_STAT_LOAD(r->post.backlog_max);
	st->backlog_overflow = DPQ_HS_STAT_LOAD(r->post.backlog_overflow);
	st->new_refused = DPQ_HS_STAT_LOAD(r->new_refused);
	st->purged = DPQ_HS_STAT_LOAD(r->purged);
	st->release_pending = DPQ_HS_STAT_LOAD(r->release_pending);
	st->release_lost = DPQ_HS_STAT_LOAD(r->release_lost);
	st->replies = DPQ_HS_STAT_LOAD(r->replies);
	st->config_version = __atomic_load_n(&r->config_version,
			__ATOMIC_ACQUIRE);
	st->applied = DPQ_HS_STAT_LOAD(r->applied);
	st->stale = DPQ_HS_STAT_LOAD(r->stale);
	st->bad = DPQ_HS_STAT_LOAD(r->bad);
	st->torn = DPQ_HS_STAT_LOAD(r->torn);
	st->tp_rejected = DPQ_HS_STAT_LOAD(r->tp_rejected);
	st->hs_complete = DPQ_HS_STAT_LOAD(r->hs_complete);
	st->hs_failed = DPQ_HS_STAT_LOAD(r->hs_failed);
}
