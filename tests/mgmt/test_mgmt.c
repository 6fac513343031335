/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for control/mgmt: the management thread's handshake service,
 * driven by a fake shard that speaks the ring messages of msg.h directly.
 * Mechanics (tiny rings, pool exhaustion, backlogs, capacity, stale
 * handles, secret wiping), then real TLS handshakes between pairs of fake
 * endpoints whose HS_SEND bytes are carried to the other's HS_CRYPTO, with
 * the service on its own pthread. Needs EAL (--no-huge).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>

#include "control/mgmt/mgmt.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/tparams.h"

static struct dpq_tls_ctx *sctx, *cctx;

/* ---- fake shard ----------------------------------------------------------- */

/* One handshake endpoint as a connection would see it. */
struct ep {
	uint64_t handle;
	enum dpq_role role;
	struct fshard *fs;
	struct ep *peer;
	struct dpq_cid odcid, scid, peer_scid;
	uint8_t my_tp[DPQ_TPARAMS_MAX_LEN];
	size_t my_tp_len;
	uint8_t rsec[4][DPQ_HS_SECRET_MAX], wsec[4][DPQ_HS_SECRET_MAX];
	size_t rlen[4], wlen[4];
	uint8_t peer_tp[DPQ_TPARAMS_MAX_LEN];
	size_t peer_tp_len;
	unsigned int peer_tp_msgs;
	bool peer_tp_done, complete, failed;
	uint64_t err;
	/* Run by this thread with dpq_tls, not by the service. */
	struct dpq_tls *local;
	char alpn[DPQ_HS_ALPN_MAX];
};

/* A shard: its channel and a request backlog (msg.h helpers). */
struct fshard {
	struct dpq_hs_chan *ch;
	struct dpq_hs_backlog bl;
	struct dpq_hs_msg slots[64];
	struct dpq_hs_post_stats st;
	struct ep **eps;
	size_t n_eps;
	uint64_t unknown;	/* replies for no endpoint */
};

static void
fs_init(struct fshard *fs, struct dpq_hs_chan *ch, struct ep **eps,
		size_t n)
{
	memset(fs, 0, sizeof(*fs));
	fs->ch = ch;
	dpq_hs_backlog_init(&fs->bl, fs->slots, 64);
	fs->eps = eps;
	fs->n_eps = n;
}

static void
fs_post(struct fshard *fs, const struct dpq_hs_msg *m)
{
	assert_int_equal(dpq_hs_post(fs->ch->to_mgmt, fs->ch->req_pool,
			&fs->bl, m, &fs->st), 0);
}

static void
req_build(struct dpq_hs_msg *m, uint64_t h, uint8_t type, uint8_t epoch,
		const void *data, size_t len)
{
	memset(m, 0, DPQ_HS_MSG_HDR_LEN);
	m->handle = h;
	m->type = type;
	m->epoch = epoch;
	m->len = (uint16_t)len;
	if (len)
		memcpy(m->data, data, len);
}

/* Encode an endpoint's transport parameters (RFC 9000 §7.3 CIDs). */
static size_t
make_tp(uint8_t *buf, size_t cap, enum dpq_role sender,
		const struct dpq_cid *iscid, const struct dpq_cid *odcid,
		size_t ext_len)
{
	static uint8_t ext[3500];
	struct dpq_tparams tp;
	uint8_t *end;

	memset(ext, 0x5a, sizeof(ext));
	dpq_tparams_init_defaults(&tp);
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID) |
		DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_DATA);
	tp.initial_scid = *iscid;
	tp.initial_max_data = 1 << 20;
	if (sender == DPQ_ROLE_SERVER) {
		tp.present |= DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID);
		tp.original_dcid = *odcid;
	}
	if (ext_len) {
		tp.ext[0] = (struct dpq_tparam_ext){ 0x7f01, ext, ext_len };
		tp.n_ext = 1;
	}
	end = dpq_tparams_encode(buf, buf + cap, sender, &tp);
	assert_non_null(end);
	return (size_t)(end - buf);
}

static void
cid_fill(struct dpq_cid *c, uint8_t v)
{
	c->len = 8;
	memset(c->bytes, v, 8);
}

/* A client/server pair; index i makes the CIDs and handles distinct. */
static void
pair_init(struct ep *c, struct fshard *cfs, struct ep *s, struct fshard *sfs,
		uint32_t i, size_t client_ext)
{
	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	c->role = DPQ_ROLE_CLIENT;
	s->role = DPQ_ROLE_SERVER;
	c->fs = cfs;
	s->fs = sfs;
	c->peer = s;
	s->peer = c;
	c->handle = dpq_hs_handle(cfs->ch->shard_id, 2 * i, 1);
	s->handle = dpq_hs_handle(sfs->ch->shard_id, 2 * i + 1, 1);
	cid_fill(&c->odcid, (uint8_t)(0x10 + i));
	cid_fill(&c->scid, (uint8_t)(0x80 + i));
	cid_fill(&s->scid, (uint8_t)(0xc0 + i));
	s->peer_scid = c->scid;
	c->my_tp_len = make_tp(c->my_tp, sizeof(c->my_tp), DPQ_ROLE_CLIENT,
			&c->scid, NULL, client_ext);
	s->my_tp_len = make_tp(s->my_tp, sizeof(s->my_tp), DPQ_ROLE_SERVER,
			&s->scid, &c->odcid, 0);
}

static void
ep_start(struct ep *e)
{
	struct dpq_hs_msg m;

	req_build(&m, e->handle, DPQ_HS_NEW, 0, e->my_tp, e->my_tp_len);
	m.role = (uint8_t)e->role;
	if (e->role == DPQ_ROLE_CLIENT)
		m.odcid = e->odcid;
	else
		m.peer_scid = e->peer_scid;
	fs_post(e->fs, &m);
}

static struct ep *
fs_find(struct fshard *fs, uint64_t h)
{
	for (size_t i = 0; i < fs->n_eps; i++)
		if (fs->eps[i]->handle == h)
			return fs->eps[i];
	return NULL;
}

/* ---- an endpoint run locally with dpq_tls (no service) ---- */

static int
lc_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	struct ep *e = arg;

	(void)suite;
	assert_true(len <= DPQ_HS_SECRET_MAX);
	if (write) {
		memcpy(e->wsec[level], secret, len);
		e->wlen[level] = len;
	} else {
		memcpy(e->rsec[level], secret, len);
		e->rlen[level] = len;
	}
	return 0;
}

static int
lc_send(void *arg, enum dpq_tls_level level, const uint8_t *data,
		size_t len)
{
	struct ep *e = arg;
	struct dpq_hs_msg req;

	while (len > 0) {
		size_t n = len < DPQ_HS_MSG_DATA_MAX ? len :
			DPQ_HS_MSG_DATA_MAX;

		req_build(&req, e->peer->handle, DPQ_HS_CRYPTO, (uint8_t)level,
				data, n);
		fs_post(e->peer->fs, &req);
		data += n;
		len -= n;
	}
	return 0;
}

static uint64_t
lc_tparams(void *arg, const uint8_t *data, size_t len)
{
	struct ep *e = arg;

	memcpy(e->peer_tp, data, len);
	e->peer_tp_len = len;
	e->peer_tp_done = true;
	return 0;
}

static const struct dpq_tls_callbacks lc_cbs = {
	.on_secret = lc_secret,
	.on_send = lc_send,
	.on_peer_tparams = lc_tparams,
};

static void
local_recv(struct ep *e, uint8_t epoch, const uint8_t *data, size_t len)
{
	if (dpq_tls_recv(e->local, (enum dpq_tls_level)epoch, data,
			len) != 0) {
		e->failed = true;
		e->err = dpq_tls_error_code(e->local);
		return;
	}
	if (!e->complete && dpq_tls_handshake_complete(e->local)) {
		e->complete = true;
		snprintf(e->alpn, sizeof(e->alpn), "%s",
				dpq_tls_alpn(e->local));
	}
}

static void
ep_apply(struct ep *e, const struct dpq_hs_msg *m)
{
	struct dpq_hs_msg req;

	switch (m->type) {
	case DPQ_HS_SEND:
		/* As packets would: our bytes are the peer's CRYPTO. */
		if (e->peer->failed)
			break;
		if (e->peer->local != NULL) {
			local_recv(e->peer, m->epoch, m->data, m->len);
			break;
		}
		req_build(&req, e->peer->handle, DPQ_HS_CRYPTO, m->epoch,
				m->data, m->len);
		fs_post(e->peer->fs, &req);
		break;
	case DPQ_HS_SECRET:
		assert_true(m->len <= DPQ_HS_SECRET_MAX && m->epoch < 4);
		if (m->flags & DPQ_HS_F_WRITE) {
			memcpy(e->wsec[m->epoch], m->data, m->len);
			e->wlen[m->epoch] = m->len;
		} else {
			memcpy(e->rsec[m->epoch], m->data, m->len);
			e->rlen[m->epoch] = m->len;
		}
		break;
	case DPQ_HS_PEER_TP:
		assert_false(e->peer_tp_done);
		assert_true(e->peer_tp_len + m->len <= sizeof(e->peer_tp));
		memcpy(e->peer_tp + e->peer_tp_len, m->data, m->len);
		e->peer_tp_len += m->len;
		e->peer_tp_msgs++;
		if (!(m->flags & DPQ_HS_F_MORE))
			e->peer_tp_done = true;
		break;
	case DPQ_HS_COMPLETE:
		assert_true(e->peer_tp_done);
		e->complete = true;
		assert_true(m->len <= sizeof(e->alpn));
		memcpy(e->alpn, m->data, m->len);
		break;
	case DPQ_HS_FAILED:
		e->failed = true;
		e->err = m->error_code;
		/* Its CONNECTION_CLOSE would end the peer too. */
		if (!e->peer->complete && !e->peer->failed) {
			e->peer->failed = true;
			e->peer->err = UINT64_MAX;
		}
		break;
	default:
		fail_msg("unexpected reply type %u", m->type);
	}
}

/* Flush the request backlog and apply every waiting reply. */
static unsigned int
fs_pump(struct fshard *fs)
{
	unsigned int n = dpq_hs_backlog_flush(fs->ch->to_mgmt,
			fs->ch->req_pool, &fs->bl, &fs->st);
	void *obj;

	while (rte_ring_dequeue(fs->ch->to_shard, &obj) == 0) {
		struct dpq_hs_msg *m = obj;
		struct ep *e = fs_find(fs, m->handle);

		if (e != NULL)
			ep_apply(e, m);
		else
			fs->unknown++;
		dpq_hs_msg_free(m);
		n++;
	}
	return n;
}

static void
check_pair(const struct ep *c, const struct ep *s)
{
	assert_true(c->complete);
	assert_true(s->complete);
	assert_false(c->failed);
	assert_false(s->failed);
	assert_string_equal(c->alpn, "hq-interop");
	assert_string_equal(s->alpn, "hq-interop");
	/* Each side's write secret is the other's read secret. */
	for (int l = DPQ_TLS_LEVEL_HANDSHAKE; l <= DPQ_TLS_LEVEL_APP; l++) {
		assert_true(c->wlen[l] == 32 || c->wlen[l] == 48);
		assert_int_equal(c->wlen[l], s->rlen[l]);
		assert_int_equal(c->rlen[l], s->wlen[l]);
		assert_memory_equal(c->wsec[l], s->rsec[l], c->wlen[l]);
		assert_memory_equal(c->rsec[l], s->wsec[l], c->rlen[l]);
		assert_memory_not_equal(c->wsec[l], c->rsec[l], c->wlen[l]);
	}
	/* The parameters crossed intact (RFC 9001 §8.2). */
	assert_int_equal(c->peer_tp_len, s->my_tp_len);
	assert_memory_equal(c->peer_tp, s->my_tp, s->my_tp_len);
	assert_int_equal(s->peer_tp_len, c->my_tp_len);
	assert_memory_equal(s->peer_tp, c->my_tp, c->my_tp_len);
}

static struct dpq_mgmt *
mgmt_new(unsigned int shards, unsigned int ring, unsigned int pool,
		unsigned int max_hs, unsigned int backlog, unsigned int fails)
{
	struct dpq_mgmt_conf conf = {
		.server_ctx = sctx,
		.client_ctx = cctx,
		.n_shards = shards,
		.ring_size = ring,
		.pool_size = pool,
		.max_handshakes = max_hs,
		.backlog = backlog,
		.fail_backlog = fails,
	};
	struct dpq_mgmt *m = dpq_mgmt_create(&conf);

	assert_non_null(m);
	return m;
}

static struct dpq_mgmt_stats
stats(struct dpq_mgmt *m, unsigned int shard)
{
	struct dpq_mgmt_stats st;

	assert_int_equal(dpq_mgmt_get_stats(m, shard, &st), 0);
	return st;
}

/* Enqueue a request whose header claims len (no payload copied). */
static void
raw_post(struct dpq_hs_chan *ch, uint64_t h, uint8_t type, uint16_t len)
{
	struct dpq_hs_msg *m;
	void *obj;

	assert_int_equal(rte_mempool_get(ch->req_pool, &obj), 0);
	m = obj;
	req_build(m, h, type, 0, NULL, 0);
	m->len = len;
	assert_int_equal(rte_ring_enqueue(ch->to_mgmt, obj), 0);
}

static struct dpq_hs_msg *
rep_get(struct dpq_hs_chan *ch)
{
	void *obj;

	return rte_ring_dequeue(ch->to_shard, &obj) == 0 ? obj : NULL;
}

/* ---- tests ------------------------------------------------------------------ */

static void
test_handle_layout(void **state)
{
	uint64_t h = dpq_hs_handle(7, 0xabcdef12, 0x3456);

	(void)state;
	assert_int_equal(dpq_hs_handle_shard(h), 7);
	assert_int_equal(dpq_hs_handle_index(h), 0xabcdef12);
	assert_int_equal(dpq_hs_handle_gen(h), 0x3456);
	assert_true(dpq_hs_handle(0, 0, 1) != DPQ_HS_HANDLE_NONE);
}

static void
test_bad_conf(void **state)
{
	struct dpq_mgmt_conf conf = { .n_shards = 0 };

	(void)state;
	assert_null(dpq_mgmt_create(&conf));
	assert_int_equal(errno, EINVAL);
	conf.n_shards = DPQ_MGMT_MAX_SHARDS + 1;
	assert_null(dpq_mgmt_create(&conf));
	assert_null(dpq_mgmt_create(NULL));
	assert_null(dpq_mgmt_chan(NULL, 0));
	assert_int_equal(dpq_mgmt_poll(NULL, 1), -EINVAL);
	assert_int_equal(dpq_mgmt_stop_thread(NULL), -EINVAL);
}

/* Secret bytes do not outlive their message: freed objects and purged
 * backlog slots are zeroed. */
static void
test_secret_wiped(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 4, 4, 4, 4, 4);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	static const uint8_t zero[DPQ_HS_SECRET_MAX];
	struct dpq_hs_msg slots[4], *obj, tmpl;
	struct dpq_hs_backlog bl;
	void *p;

	(void)state;
	assert_int_equal(rte_mempool_get(ch->rep_pool, &p), 0);
	obj = p;
	req_build(obj, dpq_hs_handle(0, 1, 1), DPQ_HS_SECRET, 2, NULL, 0);
	memset(obj->data, 0xaa, 48);
	obj->len = 48;
	dpq_hs_msg_free(obj);
	/* The object is back in the pool's memory, wiped. */
	assert_memory_equal(obj->data, zero, sizeof(zero));

	/* A non-secret payload is left alone (no cost for handshake data). */
	assert_int_equal(rte_mempool_get(ch->rep_pool, &p), 0);
	obj = p;
	req_build(obj, dpq_hs_handle(0, 1, 1), DPQ_HS_SEND, 2, NULL, 0);
	memset(obj->data, 0xbb, 16);
	dpq_hs_msg_free(obj);
	assert_int_equal(obj->data[0], 0xbb);

	/* Backlog: a purged secret is zeroed, the others keep order. */
	dpq_hs_backlog_init(&bl, slots, 4);
	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < 3; i++) {
		bool sec = i == 1;

		req_build(&tmpl, dpq_hs_handle(0, (uint32_t)(sec ? 9 : i), 1),
				sec ? DPQ_HS_SECRET : DPQ_HS_SEND, 2,
				NULL, 0);
		memset(tmpl.data, 0xc0 + i, 32);
		tmpl.len = 32;
		bl.slots[bl.count++] = tmpl;
	}
	bool had = false;
	assert_int_equal(dpq_hs_backlog_purge(&bl, dpq_hs_handle(0, 9, 1),
			DPQ_HS_SECRET, &had), 1);
	assert_true(had);
	assert_int_equal(bl.count, 2);
	assert_int_equal(dpq_hs_backlog_at(&bl, 0)->data[0], 0xc0);
	assert_int_equal(dpq_hs_backlog_at(&bl, 1)->data[0], 0xc2);
	/* No copy of the secret is left in any slot. */
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 32; k++)
			assert_int_not_equal(slots[i].data[k], 0xc1);
	/* Purging the last entries wipes the secret in place. */
	req_build(&tmpl, dpq_hs_handle(0, 9, 1), DPQ_HS_SECRET, 3, NULL, 0);
	memset(tmpl.data, 0xc1, 32);
	tmpl.len = 32;
	*dpq_hs_backlog_at(&bl, bl.count) = tmpl;
	bl.count++;
	assert_int_equal(dpq_hs_backlog_purge(&bl, dpq_hs_handle(0, 9, 1),
			DPQ_HS_NEW, &had), 1);
	assert_memory_equal(dpq_hs_backlog_at(&bl, 2)->data, zero, 32);
	dpq_hs_backlog_clear(&bl);
	dpq_mgmt_destroy(m);
}

/* The table is bounded: a new handshake beyond it is refused with
 * CONNECTION_REFUSED; a release frees a place. */
static void
test_capacity_refused(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 16, 0, 2, 8, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c[4], s[4], *eps[8];
	struct fshard fs;
	struct dpq_hs_msg req, *rep;
	struct dpq_mgmt_stats st;

	(void)state;
	for (int i = 0; i < 4; i++) {
		eps[2 * i] = &c[i];
		eps[2 * i + 1] = &s[i];
	}
	fs_init(&fs, ch, eps, 8);
	for (uint32_t i = 0; i < 4; i++)
		pair_init(&c[i], &fs, &s[i], &fs, i, 0);
	/* Three servers: the third is refused. */
	ep_start(&s[0]);
	ep_start(&s[1]);
	ep_start(&s[2]);
	assert_int_equal(dpq_mgmt_poll(m, 16), 3);
	st = stats(m, 0);
	assert_int_equal(st.active, 2);
	assert_int_equal(st.refused, 1);
	rep = rep_get(ch);
	assert_non_null(rep);
	assert_int_equal(rep->type, DPQ_HS_FAILED);
	assert_int_equal(rep->handle, s[2].handle);
	assert_int_equal(rep->error_code, DPQ_TE_CONNECTION_REFUSED);
	dpq_hs_msg_free(rep);
	assert_null(rep_get(ch));

	/* Release one: the next handshake is taken. */
	req_build(&req, s[0].handle, DPQ_HS_RELEASE, 0, NULL, 0);
	fs_post(&fs, &req);
	ep_start(&s[3]);
	dpq_mgmt_poll(m, 16);
	st = stats(m, 0);
	assert_int_equal(st.active, 2);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.hs_started, 3);
	assert_null(rep_get(ch));
	dpq_mgmt_destroy(m);
}

/* Unknown or stale handles and malformed requests are dropped, counted,
 * and answered with nothing. */
static void
test_stale_and_bad(void **state)
{
	struct dpq_mgmt *m = mgmt_new(2, 16, 0, 4, 8, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c, s, *eps[2] = { &c, &s };
	struct fshard fs;
	struct dpq_hs_msg req;
	struct dpq_mgmt_stats st;
	uint8_t junk[8] = { 0 };

	(void)state;
	fs_init(&fs, ch, eps, 2);
	pair_init(&c, &fs, &s, &fs, 0, 0);
	ep_start(&s);
	/* Same slot, newer generation: not the handshake we know. */
	req_build(&req, dpq_hs_handle(0, dpq_hs_handle_index(s.handle), 2),
			DPQ_HS_CRYPTO, 0, junk, sizeof(junk));
	fs_post(&fs, &req);
	/* Handle of another shard on this shard's ring. */
	req_build(&req, dpq_hs_handle(1, 5, 1), DPQ_HS_CRYPTO, 0, junk, 8);
	fs_post(&fs, &req);
	/* Handle 0, bad epoch, 0-RTT epoch, unknown type, oversize len. */
	req_build(&req, DPQ_HS_HANDLE_NONE, DPQ_HS_CRYPTO, 0, junk, 8);
	fs_post(&fs, &req);
	req_build(&req, s.handle, DPQ_HS_CRYPTO, 9, junk, 8);
	fs_post(&fs, &req);
	req_build(&req, s.handle, DPQ_HS_CRYPTO, DPQ_TLS_LEVEL_EARLY, junk, 8);
	fs_post(&fs, &req);
	req_build(&req, s.handle, DPQ_HS_SEND, 0, junk, 8);
	fs_post(&fs, &req);
	raw_post(ch, s.handle, DPQ_HS_CRYPTO, DPQ_HS_MSG_DATA_MAX + 1);
	/* A duplicate HS_NEW and one with a bad role. */
	ep_start(&s);
	req_build(&req, dpq_hs_handle(0, 77, 1), DPQ_HS_NEW, 0, NULL, 0);
	req.role = 7;
	fs_post(&fs, &req);
	/* A release of something unknown is quietly fine. */
	req_build(&req, dpq_hs_handle(0, 78, 1), DPQ_HS_RELEASE, 0, NULL, 0);
	fs_post(&fs, &req);

	assert_int_equal(dpq_mgmt_poll(m, 64), 11);
	st = stats(m, 0);
	assert_int_equal(st.requests, 11);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.bad, 8);
	assert_int_equal(st.active, 1);
	assert_int_equal(st.replies, 0);
	assert_null(rep_get(ch));
	dpq_mgmt_destroy(m);
}

/* Drive pairs through a service polled in this thread (budget per poll)
 * until all complete or fail; bounded. */
static void
run_polled(struct dpq_mgmt *m, struct fshard *fs, size_t nfs,
		struct ep **eps, size_t n, unsigned int budget)
{
	int iter;

	for (iter = 0; iter < 20000; iter++) {
		size_t done = 0;

		dpq_mgmt_poll(m, budget);
		for (size_t i = 0; i < nfs; i++)
			fs_pump(&fs[i]);
		for (size_t i = 0; i < n; i++)
			done += eps[i]->complete || eps[i]->failed;
		if (done == n)
			break;
	}
	assert_true(iter < 20000);
}

/* Rings of two messages each way: replies wait in the service's backlog,
 * requests in the shard's (the service stops taking requests while its
 * replies wait), nothing is lost and the handshakes complete. */
static void
test_tiny_rings(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 2, 0, 8, 64, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c[2], s[2], *eps[4] = { &c[0], &s[0], &c[1], &s[1] };
	struct fshard fs;
	struct dpq_mgmt_stats st;

	(void)state;
	fs_init(&fs, ch, eps, 4);
	for (uint32_t i = 0; i < 2; i++) {
		pair_init(&c[i], &fs, &s[i], &fs, i, 0);
		ep_start(&s[i]);
		ep_start(&c[i]);
	}
	run_polled(m, &fs, 1, eps, 4, 1);
	check_pair(&c[0], &s[0]);
	check_pair(&c[1], &s[1]);
	st = stats(m, 0);
	assert_true(st.ring_full > 0);
	assert_true(st.backlogged > 0);
	assert_true(st.backlog_max >= 2);
	assert_int_equal(st.backlog, 0);
	assert_int_equal(st.backlog_overflow, 0);
	assert_int_equal(st.hs_ok, 4);
	assert_int_equal(st.hs_failed, 0);
	/* The shard side queued too, and every reply was counted. */
	assert_true(fs.st.ring_full > 0);
	assert_true(fs.st.backlogged > 0);
	assert_int_equal(fs.bl.count, 0);
	assert_int_equal(fs.unknown, 0);
	/* Servers left the table at completion, clients stay until
	 * released. */
	assert_int_equal(st.active, 2);
	dpq_mgmt_destroy(m);
}

/* An empty reply pool is counted and the replies wait in the backlog
 * until the shard frees objects. */
static void
test_pool_exhausted(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 8, 2, 8, 8, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c[3], s[3], *eps[6];
	struct dpq_hs_msg *held[3];
	struct fshard fs;
	struct dpq_mgmt_stats st;

	(void)state;
	for (int i = 0; i < 3; i++) {
		eps[2 * i] = &c[i];
		eps[2 * i + 1] = &s[i];
	}
	fs_init(&fs, ch, eps, 6);
	for (uint32_t i = 0; i < 3; i++) {
		pair_init(&c[i], &fs, &s[i], &fs, i, 0);
		ep_start(&c[i]);	/* each makes one ClientHello */
	}
	/* Two requests in the pool of two: the third waits for an object
	 * on the shard side. */
	assert_int_equal(fs.bl.count, 1);
	assert_true(fs.st.pool_empty >= 1);
	assert_int_equal(fs.st.sent, 2);
	dpq_mgmt_poll(m, 8);		/* frees two request objects */
	assert_int_equal(dpq_hs_backlog_flush(ch->to_mgmt, ch->req_pool,
			&fs.bl, &fs.st), 1);
	dpq_mgmt_poll(m, 8);
	assert_int_equal(stats(m, 0).hs_started, 3);

	dpq_mgmt_destroy(m);

	/* Now the shard holds the replies: three clients, nobody frees. */
	m = mgmt_new(1, 8, 2, 8, 8, 8);
	ch = dpq_mgmt_chan(m, 0);
	fs_init(&fs, ch, eps, 6);
	for (uint32_t i = 0; i < 3; i++)
		pair_init(&c[i], &fs, &s[i], &fs, i, 0);
	for (int i = 0; i < 2; i++) {
		ep_start(&c[i]);
		dpq_mgmt_poll(m, 8);
	}
	ep_start(&c[2]);
	dpq_mgmt_poll(m, 8);
	st = stats(m, 0);
	assert_int_equal(st.hs_started, 3);
	assert_int_equal(st.replies, 2);	/* pool of two, both held */
	assert_true(st.pool_empty >= 1);
	assert_int_equal(st.backlog, 1);
	for (int i = 0; i < 2; i++) {
		held[i] = rep_get(ch);
		assert_non_null(held[i]);
		assert_int_equal(held[i]->type, DPQ_HS_SEND);
		assert_int_equal(held[i]->handle, c[i].handle);
	}
	/* Still held: polling cannot move the backlog. */
	dpq_mgmt_poll(m, 8);
	assert_int_equal(stats(m, 0).backlog, 1);
	dpq_hs_msg_free(held[0]);
	dpq_hs_msg_free(held[1]);
	assert_int_equal(dpq_mgmt_poll(m, 8), 1);
	st = stats(m, 0);
	assert_int_equal(st.backlog, 0);
	assert_int_equal(st.replies, 3);
	held[2] = rep_get(ch);
	assert_non_null(held[2]);
	assert_int_equal(held[2]->handle, c[2].handle);
	assert_int_equal(held[2]->epoch, DPQ_TLS_LEVEL_INITIAL);
	dpq_hs_msg_free(held[2]);
	dpq_mgmt_destroy(m);
}

/* Requests of a connection the shard released while they waited are
 * skipped (no TLS work, no reply): the liveness table of the channel
 * (msg.h). Live handles are served as before, and a table nobody keeps
 * (live_on unset) cancels nothing. */
static void
test_cancelled(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 64, 0, 8, 64, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c, s, c2, s2, *eps[4] = { &c, &s, &c2, &s2 };
	struct dpq_mgmt_stats st;
	struct fshard fs;
	uint64_t old, n;

	(void)state;
	assert_non_null(ch->live);
	assert_int_equal(ch->nlive, DPQ_MGMT_DEFAULT_CONN_SLOTS);
	fs_init(&fs, ch, eps, 4);
	pair_init(&c, &fs, &s, &fs, 0, 0);
	pair_init(&c2, &fs, &s2, &fs, 1, 0);

	/* Not kept yet: a handle never marked live is served. */
	ep_start(&c2);
	dpq_mgmt_poll(m, 8);
	st = stats(m, 0);
	assert_int_equal(st.cancelled, 0);
	assert_int_equal(st.hs_started, 1);
	assert_int_equal(st.active, 1);

	/* Kept from now on: c2 was released by its shard; its next request
	 * frees its entry without running TLS. */
	__atomic_store_n(&ch->live_on, 1, __ATOMIC_RELAXED);
	dpq_hs_chan_set_live(ch, c2.handle, false);
	raw_post(ch, c2.handle, DPQ_HS_CRYPTO, 0);
	/* s2's HS_NEW waited behind it, and s2 went away meanwhile. */
	ep_start(&s2);
	dpq_mgmt_poll(m, 8);
	st = stats(m, 0);
	assert_int_equal(st.cancelled, 2);
	assert_int_equal(st.hs_started, 1);
	assert_int_equal(st.active, 0);
	/* c2's ClientHello (sent before) reaches s2 as CRYPTO: skipped. */
	fs_pump(&fs);
	dpq_mgmt_poll(m, 8);
	fs_pump(&fs);
	assert_false(s2.failed || s2.complete);
	assert_int_equal(stats(m, 0).hs_started, 1);
	n = stats(m, 0).cancelled;

	/* A slot reused (generation 2): requests of generation 1 are
	 * stale, those of the new connection are served. */
	old = c.handle;
	dpq_hs_chan_set_live(ch, old + (UINT64_C(1) << 32), true);
	ep_start(&c);
	dpq_mgmt_poll(m, 8);
	assert_int_equal(stats(m, 0).cancelled, n + 1);
	assert_int_equal(stats(m, 0).hs_started, 1);

	/* A live pair completes as always. */
	dpq_hs_chan_set_live(ch, c.handle, true);
	dpq_hs_chan_set_live(ch, s.handle, true);
	memset(&c, 0, sizeof(c));
	pair_init(&c, &fs, &s, &fs, 0, 0);
	ep_start(&s);
	ep_start(&c);
	run_polled(m, &fs, 1, eps, 2, 8);
	check_pair(&c, &s);
	assert_int_equal(stats(m, 0).cancelled, n + 1);
	assert_int_equal(stats(m, 0).hs_started, 3);
	dpq_mgmt_destroy(m);
}

/* A backlog too small for one request's replies fails that handshake:
 * its queued replies are purged and HS_FAILED(INTERNAL_ERROR) follows
 * once there is room. */
static void
test_backlog_overflow(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 1, 0, 8, 1, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c, s, *eps[2] = { &c, &s };
	struct fshard fs;
	struct dpq_mgmt_stats st;

	(void)state;
	fs_init(&fs, ch, eps, 2);
	pair_init(&c, &fs, &s, &fs, 0, 0);
	ep_start(&s);
	ep_start(&c);
	run_polled(m, &fs, 1, eps, 2, 4);
	/* The server's first flight (ServerHello, secrets, EE..Finished)
	 * is more than ring (1) + backlog (1). */
	assert_true(s.failed);
	assert_int_equal(s.err, DPQ_TE_INTERNAL_ERROR);
	st = stats(m, 0);
	assert_true(st.backlog_overflow >= 1);
	assert_true(st.hs_failed >= 1);
	assert_int_equal(st.fail_lost, 0);
	for (int i = 0; i < 8; i++) {
		dpq_mgmt_poll(m, 4);
		fs_pump(&fs);
	}
	assert_int_equal(stats(m, 0).backlog, 0);
	dpq_mgmt_destroy(m);
}

/* HS_FAILED that find no room wait in the fail list; beyond it they are
 * lost, but counted. */
static void
test_fail_list(void **state)
{
	struct dpq_mgmt_conf conf = {
		.server_ctx = NULL,	/* every server handshake refused */
		.client_ctx = cctx,
		.n_shards = 1,
		.ring_size = 1,
		.fail_backlog = 1,
	};
	struct dpq_mgmt *m = dpq_mgmt_create(&conf);
	struct dpq_hs_chan *ch;
	struct dpq_hs_msg req, *rep;
	struct dpq_mgmt_stats st;
	struct fshard fs;

	(void)state;
	assert_non_null(m);
	ch = dpq_mgmt_chan(m, 0);
	fs_init(&fs, ch, NULL, 0);
	/* Requests ring of one: post three through the backlog, then let
	 * the service take them one at a time... */
	for (uint32_t i = 0; i < 3; i++) {
		req_build(&req, dpq_hs_handle(0, i, 1), DPQ_HS_NEW, 0, NULL, 0);
		req.role = DPQ_ROLE_SERVER;
		fs_post(&fs, &req);
	}
	dpq_mgmt_poll(m, 8);	/* #0 refused, its HS_FAILED on the ring */
	dpq_hs_backlog_flush(ch->to_mgmt, ch->req_pool, &fs.bl, &fs.st);
	dpq_mgmt_poll(m, 8);	/* #1 refused, ring full: fail list */
	dpq_hs_backlog_flush(ch->to_mgmt, ch->req_pool, &fs.bl, &fs.st);
	dpq_mgmt_poll(m, 8);	/* list not empty: #2 left on its ring */
	st = stats(m, 0);
	assert_int_equal(st.refused, 2);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.fail_lost, 0);
	rep = rep_get(ch);
	assert_int_equal(rep->handle, dpq_hs_handle(0, 0, 1));
	dpq_hs_msg_free(rep);
	dpq_mgmt_poll(m, 8);	/* the waiting HS_FAILED goes, #2 taken */
	rep = rep_get(ch);
	assert_int_equal(rep->type, DPQ_HS_FAILED);
	assert_int_equal(rep->handle, dpq_hs_handle(0, 1, 1));
	assert_int_equal(rep->error_code, DPQ_TE_INTERNAL_ERROR);
	dpq_hs_msg_free(rep);
	st = stats(m, 0);
	assert_int_equal(st.refused, 3);
	dpq_mgmt_destroy(m);

	/* Loss: one burst of three refusals, ring 1, list 1. */
	conf.ring_size = 4;
	m = dpq_mgmt_create(&conf);
	assert_non_null(m);
	ch = dpq_mgmt_chan(m, 0);
	fs_init(&fs, ch, NULL, 0);
	/* Fill the reply ring first so nothing goes straight out. */
	for (int i = 0; i < 4; i++) {
		void *obj;

		assert_int_equal(rte_mempool_get(ch->rep_pool, &obj), 0);
		req_build(obj, dpq_hs_handle(0, 100, 1), DPQ_HS_SEND, 0,
				NULL, 0);
		assert_int_equal(rte_ring_enqueue(ch->to_shard, obj), 0);
	}
	for (uint32_t i = 0; i < 3; i++) {
		req_build(&req, dpq_hs_handle(0, i, 1), DPQ_HS_NEW, 0, NULL, 0);
		req.role = DPQ_ROLE_SERVER;
		fs_post(&fs, &req);
	}
	dpq_mgmt_poll(m, 8);
	st = stats(m, 0);
	assert_int_equal(st.refused, 3);
	assert_int_equal(st.fail_lost, 2);
	assert_true(st.ring_full >= 1);
	dpq_mgmt_destroy(m);
}

/* The service refuses peer transport parameters whose CIDs contradict
 * what HS_NEW said (RFC 9000 §7.3), and splits a blob larger than one
 * message into parts (the large client runs locally: its own HS_NEW
 * could not carry it). */
static void
test_peer_tparams(void **state)
{
	struct dpq_mgmt *m = mgmt_new(1, 64, 0, 8, 64, 8);
	struct dpq_hs_chan *ch = dpq_mgmt_chan(m, 0);
	struct ep c[3], s[3], *eps[6] = { &c[0], &s[0], &c[1], &s[1],
		&c[2], &s[2] };
	struct fshard fs;

	(void)state;
	fs_init(&fs, ch, eps, 6);
	/* Pair 0: the server expects another client SCID. */
	pair_init(&c[0], &fs, &s[0], &fs, 0, 0);
	s[0].peer_scid.bytes[0] ^= 1;
	/* Pair 1: the client expects another original DCID. */
	pair_init(&c[1], &fs, &s[1], &fs, 1, 0);
	c[1].odcid.bytes[7] ^= 1;
	/* Pair 2: the client's parameters carry a 3000-byte extension. */
	pair_init(&c[2], &fs, &s[2], &fs, 2, 3000);
	assert_true(c[2].my_tp_len > DPQ_HS_MSG_DATA_MAX);
	for (int i = 0; i < 2; i++) {
		ep_start(&s[i]);
		ep_start(&c[i]);
	}
	ep_start(&s[2]);
	assert_int_equal(dpq_tls_new(cctx, &lc_cbs, &c[2], c[2].my_tp,
			c[2].my_tp_len, &c[2].local), 0);
	run_polled(m, &fs, 1, eps, 6, 64);
	assert_true(s[0].failed);
	assert_int_equal(s[0].err, DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	assert_false(s[0].peer_tp_done);
	assert_true(c[1].failed);
	assert_int_equal(c[1].err, DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	assert_false(c[1].peer_tp_done);
	check_pair(&c[2], &s[2]);
	assert_int_equal(s[2].peer_tp_msgs, 2);
	assert_int_equal(stats(m, 0).hs_failed, 2);
	dpq_tls_free(c[2].local);
	dpq_mgmt_destroy(m);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The service on its own pthread, this thread as two shards (clients on
 * shard 0, servers on shard 1): pairs of endpoints complete real
 * handshakes with matching secrets, then release everything. */
static void
test_threaded_handshakes(void **state)
{
	enum { PAIRS = 16 };
	struct dpq_mgmt *m = mgmt_new(2, 0, 0, 0, 0, 0);
	struct ep *c = calloc(PAIRS, sizeof(*c));
	struct ep *s = calloc(PAIRS, sizeof(*s));
	struct ep *ceps[PAIRS], *seps[PAIRS];
	struct fshard *fs = calloc(2, sizeof(*fs));
	struct dpq_mgmt_stats st0, st1;
	uint64_t deadline;
	size_t done = 0;

	(void)state;
	assert_non_null(c);
	assert_non_null(s);
	assert_non_null(fs);
	for (int i = 0; i < PAIRS; i++) {
		ceps[i] = &c[i];
		seps[i] = &s[i];
	}
	fs_init(&fs[0], dpq_mgmt_chan(m, 0), ceps, PAIRS);
	fs_init(&fs[1], dpq_mgmt_chan(m, 1), seps, PAIRS);
	for (uint32_t i = 0; i < PAIRS; i++) {
		pair_init(&c[i], &fs[0], &s[i], &fs[1], i, 0);
		ep_start(&s[i]);
		ep_start(&c[i]);
	}
	assert_int_equal(dpq_mgmt_start_thread(m), 0);
	assert_int_equal(dpq_mgmt_start_thread(m), -EEXIST);
	deadline = now_ms() + 30000;
	while (done < 2 * PAIRS && now_ms() < deadline) {
		fs_pump(&fs[0]);
		fs_pump(&fs[1]);
		done = 0;
		for (int i = 0; i < PAIRS; i++)
			done += (c[i].complete || c[i].failed) +
				(s[i].complete || s[i].failed);
	}
	assert_int_equal(done, 2 * PAIRS);
	for (int i = 0; i < PAIRS; i++)
		check_pair(&c[i], &s[i]);

	/* Release everything; the clients' entries go. */
	for (int i = 0; i < PAIRS; i++) {
		struct dpq_hs_msg req;

		req_build(&req, c[i].handle, DPQ_HS_RELEASE, 0, NULL, 0);
		fs_post(&fs[0], &req);
		req_build(&req, s[i].handle, DPQ_HS_RELEASE, 0, NULL, 0);
		fs_post(&fs[1], &req);
	}
	deadline = now_ms() + 10000;
	do {
		fs_pump(&fs[0]);
		fs_pump(&fs[1]);
		st0 = stats(m, 0);
		st1 = stats(m, 1);
	} while ((st0.active != 0 || st1.active != 0) && now_ms() < deadline);
	assert_int_equal(dpq_mgmt_stop_thread(m), 0);
	assert_int_equal(dpq_mgmt_stop_thread(m), -ESRCH);
	st0 = stats(m, 0);
	st1 = stats(m, 1);
	assert_int_equal(st0.active, 0);
	assert_int_equal(st1.active, 0);
	assert_int_equal(st0.hs_ok, PAIRS);
	assert_int_equal(st1.hs_ok, PAIRS);
	assert_int_equal(st0.hs_failed + st1.hs_failed, 0);
	assert_int_equal(st0.bad + st1.bad + st0.stale + st1.stale, 0);
	assert_int_equal(st0.backlog_overflow + st1.backlog_overflow, 0);
	assert_int_equal(fs[0].unknown + fs[1].unknown, 0);
	print_message("threaded: %d pairs; shard0 %llu req %llu rep, "
			"shard1 %llu req %llu rep\n", PAIRS,
			(unsigned long long)st0.requests,
			(unsigned long long)st0.replies,
			(unsigned long long)st1.requests,
			(unsigned long long)st1.replies);
	dpq_mgmt_destroy(m);
	free(c);
	free(s);
	free(fs);
}

/* The server config: a rotation asked from this thread is run by the
 * service's thread, and the new version goes to every shard as one
 * HS_CONFIG with the new token keys (current + previous); a policy
 * change makes another version; requests without a config are refused. */
static void
test_srvcfg_versions(void **state)
{
	struct dpq_mgmt_conf conf = {
		.server_ctx = sctx, .client_ctx = cctx, .n_shards = 2,
	};
	struct dpq_srvcfg_conf sc;
	struct dpq_srvcfg *cfg = NULL;
	struct dpq_mgmt_srvcfg_info in;
	struct dpq_srvcfg_policy pol;
	struct dpq_hs_config got;
	struct dpq_mgmt *m;
	uint8_t tok1[16];
	char err[DPQ_SRVCFG_ERR_MAX];
	unsigned int sh;

	(void)state;
	dpq_srvcfg_conf_default(&sc);
	assert_int_equal(dpq_srvcfg_create(&sc, 1700000000, &cfg, err,
			sizeof(err)), 0);
	memcpy(tok1, dpq_srvcfg_current(cfg)->token_key[0], 16);
	conf.srvcfg = cfg;
	m = dpq_mgmt_create(&conf);
	assert_non_null(m);
	assert_int_equal(dpq_mgmt_srvcfg_info(m, &in), 0);
	assert_int_equal(in.version, 1);
	assert_int_equal(dpq_mgmt_start_thread(m), 0);
	assert_int_equal(dpq_mgmt_rotate_keys(m, DPQ_SRVCFG_TICKETS |
			DPQ_SRVCFG_TOKENS, 5000, err, sizeof(err)), 0);
	assert_int_equal(dpq_mgmt_srvcfg_info(m, &in), 0);
	assert_int_equal(in.version, 2);
	assert_int_equal(in.rotations, 1);
	assert_string_not_equal(in.stek_name[0], in.stek_name[1]);
	for (sh = 0; sh < 2; sh++) {
		struct dpq_hs_chan *ch = dpq_mgmt_chan(m, sh);
		struct dpq_hs_msg *msg = NULL;
		int i;

		for (i = 0; i < 2000 && (msg = rep_get(ch)) == NULL; i++)
			usleep(1000);
		assert_non_null(msg);
		assert_int_equal(msg->type, DPQ_HS_CONFIG);
		assert_int_equal(msg->handle, DPQ_HS_HANDLE_NONE);
		assert_int_equal(msg->len, sizeof(got));
		memcpy(&got, msg->data, sizeof(got));
		dpq_hs_msg_free(msg);
		assert_int_equal(got.version, 2);
		assert_true(got.token_has_prev);
		assert_memory_equal(got.token_key[1], tok1, 16);
		assert_memory_not_equal(got.token_key[0], tok1, 16);
		assert_true(got.new_token);
		assert_true(got.early_data);
	}
	pol = in.policy;
	pol.new_token = false;
	assert_int_equal(dpq_mgmt_set_policy(m, &pol, 5000, err, sizeof(err)),
			0);
	assert_int_equal(dpq_mgmt_srvcfg_info(m, &in), 0);
	assert_int_equal(in.version, 3);
	assert_false(in.policy.new_token);
	pol.ticket_lifetime_s = 0;
	assert_int_equal(dpq_mgmt_set_policy(m, &pol, 5000, err, sizeof(err)),
			-EINVAL);
	assert_true(err[0] != '\0');
	dpq_mgmt_destroy(m);

	/* No server config: refused, nothing sent. */
	conf.srvcfg = NULL;
	m = dpq_mgmt_create(&conf);
	assert_int_equal(dpq_mgmt_rotate_keys(m, DPQ_SRVCFG_TOKENS, 100, err,
			sizeof(err)), -ENOENT);
	assert_int_equal(dpq_mgmt_srvcfg_info(m, &in), -ENOENT);
	dpq_mgmt_destroy(m);
}

static void
quiet_log(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

int
main(void)
{
	char *eal_argv[] = { "test_mgmt", "--no-huge", "--no-shconf",
		"--no-pci", "-l", "0", "-m", "256", "--log-level=error", NULL };
	struct dpq_tls_ctx_conf sconf = {
		.role = DPQ_TLS_SERVER,
		.alpn = { "hq-interop" },
		.alpn_count = 1,
		.self_signed_name = "dpquic.test",
		.log = quiet_log,
	};
	struct dpq_tls_ctx_conf cconf = {
		.role = DPQ_TLS_CLIENT,
		.alpn = { "hq-interop" },
		.alpn_count = 1,
		.server_name = "dpquic.test",
		.verify = false,
		.log = quiet_log,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handle_layout),
		cmocka_unit_test(test_bad_conf),
		cmocka_unit_test(test_secret_wiped),
		cmocka_unit_test(test_capacity_refused),
		cmocka_unit_test(test_stale_and_bad),
		cmocka_unit_test(test_tiny_rings),
		cmocka_unit_test(test_pool_exhausted),
		cmocka_unit_test(test_backlog_overflow),
		cmocka_unit_test(test_cancelled),
		cmocka_unit_test(test_fail_list),
		cmocka_unit_test(test_peer_tparams),
		cmocka_unit_test(test_threaded_handshakes),
		cmocka_unit_test(test_srvcfg_versions),
	};
	int rc;

	if (rte_eal_init(9, eal_argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	if (dpq_tls_ctx_create(&sconf, &sctx) != 0 ||
	    dpq_tls_ctx_create(&cconf, &cctx) != 0) {
		fprintf(stderr, "TLS contexts failed\n");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	dpq_tls_ctx_destroy(cctx);
	dpq_tls_ctx_destroy(sctx);
	rte_eal_cleanup();
	return rc;
}
