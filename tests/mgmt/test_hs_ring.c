/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for dataplane/shard/hs_ring: the shard side of the handshake
 * channel, against fake connections (this file defines struct dpq_conn
 * and the dpq_conn_* calls hs_ring makes, recording them) and with this
 * test standing in for the management thread on the rings. Needs EAL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_eal.h>

#include "control/mgmt/mgmt.h"
#include "dataplane/engine/errors.h"
#include "dataplane/shard/hs_ring.h"

/* ---- fake connection ------------------------------------------------------ */

struct dpq_conn {
	bool server;
	struct dpq_cid dcid;
	void *hs_ctx;
	uint16_t gen;
	uint8_t tp[64];
	ssize_t tp_rc;			/* <0: local_tparams fails so */
	uint8_t sent[DPQ_EPOCH_COUNT][8192];
	size_t sent_len[DPQ_EPOCH_COUNT];
	unsigned int secrets;
	uint8_t secret[DPQ_HS_SECRET_MAX];
	size_t secret_len;
	bool secret_write;
	uint16_t suite;
	int secret_rc;
	uint8_t peer_tp[DPQ_TPARAMS_MAX_LEN];
	size_t peer_tp_len;
	unsigned int peer_tp_calls;
	uint64_t peer_tp_err;		/* what the conn's check returns */
	bool complete, failed;
	char alpn[DPQ_HS_ALPN_MAX];
	bool resumed, early_ok;		/* HS_COMPLETE's flags */
	char early_alpn[DPQ_HS_ALPN_MAX];	/* HS_EARLY */
	uint64_t fail_code;
};

void *
dpq_conn_hs_ctx(const struct dpq_conn *c)
{
	return c->hs_ctx;
}

void
dpq_conn_set_hs_ctx(struct dpq_conn *c, void *ctx)
{
	c->hs_ctx = ctx;
}

ssize_t
dpq_conn_local_tparams(const struct dpq_conn *c, uint8_t *buf, size_t len)
{
	if (c->tp_rc < 0)
		return c->tp_rc;
	assert_true(len >= sizeof(c->tp));
	memcpy(buf, c->tp, sizeof(c->tp));
	return sizeof(c->tp);
}

bool
dpq_conn_is_server(const struct dpq_conn *c)
{
	return c->server;
}

const struct dpq_cid *
dpq_conn_dcid(const struct dpq_conn *c)
{
	return &c->dcid;
}

int
dpq_conn_hs_send(struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	assert_true(c->sent_len[epoch] + len <= sizeof(c->sent[epoch]));
	memcpy(c->sent[epoch] + c->sent_len[epoch], data, len);
	c->sent_len[epoch] += len;
	return 0;
}

int
dpq_conn_hs_secret(struct dpq_conn *c, enum dpq_epoch epoch, bool write,
		uint16_t cipher_suite, const uint8_t *secret, size_t len)
{
	(void)epoch;
	c->secrets++;
	memcpy(c->secret, secret, len);
	c->secret_len = len;
	c->secret_write = write;
	c->suite = cipher_suite;
	return c->secret_rc;
}

uint64_t
dpq_conn_hs_peer_tparams(struct dpq_conn *c, const uint8_t *data,
		size_t len)
{
	memcpy(c->peer_tp, data, len);
	c->peer_tp_len = len;
	c->peer_tp_calls++;
	return c->peer_tp_err;
}

void
dpq_conn_hs_complete(struct dpq_conn *c, const char *alpn)
{
	c->complete = true;
	snprintf(c->alpn, sizeof(c->alpn), "%s", alpn);
}

void
dpq_conn_hs_failed(struct dpq_conn *c, uint64_t error_code)
{
	c->failed = true;
	c->fail_code = error_code;
}

void
dpq_conn_hs_early(struct dpq_conn *c, const char *alpn)
{
	snprintf(c->early_alpn, sizeof(c->early_alpn), "%s", alpn);
}

void
dpq_conn_hs_resumption(struct dpq_conn *c, bool resumed, bool early_accepted)
{
	c->resumed = resumed;
	c->early_ok = early_accepted;
}

/* ---- harness ---------------------------------------------------------------- */

#define NCONN 8

struct table {
	struct dpq_conn conns[NCONN];
	bool ignore_gen;	/* a sloppy lookup, to test the hs_ctx check */
};

static struct dpq_conn *
lookup(void *arg, uint64_t h)
{
	struct table *t = arg;
	uint32_t i = dpq_hs_handle_index(h);

	if (i >= NCONN || (!t->ignore_gen &&
	    t->conns[i].gen != dpq_hs_handle_gen(h)))
		return NULL;
	return &t->conns[i];
}

static uint64_t
handle_of(struct table *t, uint32_t i)
{
	return dpq_hs_handle(0, i, t->conns[i].gen);
}

struct fixture {
	struct dpq_mgmt *m;	/* only for its channel; never polled */
	struct dpq_hs_chan *ch;
	struct dpq_hs_ring *r;
	struct table t;
};

static void
fx_init(struct fixture *fx, unsigned int ring, unsigned int pool,
		unsigned int backlog, unsigned int rels)
{
	struct dpq_mgmt_conf conf = {
		.n_shards = 1,
		.ring_size = ring,
		.pool_size = pool,
	};
	struct dpq_hs_ring_conf rc = {
		.backlog = backlog,
		.max_releases = rels,
		.socket_id = SOCKET_ID_ANY,
	};

	memset(fx, 0, sizeof(*fx));
	fx->m = dpq_mgmt_create(&conf);
	assert_non_null(fx->m);
	fx->ch = dpq_mgmt_chan(fx->m, 0);
	rc.chan = fx->ch;
	assert_int_equal(dpq_hs_ring_create(&rc, &fx->r), 0);
	for (int i = 0; i < NCONN; i++) {
		struct dpq_conn *c = &fx->t.conns[i];

		c->gen = 1;
		c->server = i % 2 == 1;
		c->dcid.len = 8;
		memset(c->dcid.bytes, 0x30 + i, 8);
		memset(c->tp, 0x60 + i, sizeof(c->tp));
	}
}

static void
fx_fini(struct fixture *fx)
{
	dpq_hs_ring_destroy(fx->r);
	dpq_mgmt_destroy(fx->m);
}

static struct dpq_hs_ring_stats
rstats(struct fixture *fx)
{
	struct dpq_hs_ring_stats st;

	dpq_hs_ring_get_stats(fx->r, &st);
	return st;
}

/* The management end: take one request. */
static struct dpq_hs_msg *
req_get(struct fixture *fx)
{
	void *obj;

	return rte_ring_dequeue(fx->ch->to_mgmt, &obj) == 0 ? obj : NULL;
}

/* The management end: put a reply on the ring. */
static struct dpq_hs_msg *
rep_put(struct fixture *fx, uint64_t h, uint8_t type, uint8_t epoch,
		uint8_t flags, const void *data, size_t len)
{
	struct dpq_hs_msg *m;
	void *obj;

	assert_int_equal(rte_mempool_get(fx->ch->rep_pool, &obj), 0);
	m = obj;
	memset(m, 0, DPQ_HS_MSG_HDR_LEN);
	m->handle = h;
	m->type = type;
	m->epoch = epoch;
	m->flags = flags;
	m->len = (uint16_t)len;
	if (len)
		memcpy(m->data, data, len);
	assert_int_equal(rte_ring_enqueue(fx->ch->to_shard, obj), 0);
	return m;
}

/* ---- tests ------------------------------------------------------------------ */

/* HS_NEW carries role, parameters and CIDs; CRYPTO bytes are cut into
 * messages in order; the handle rides in hs_ctx. */
static void
test_requests(void **state)
{
	struct fixture fx;
	struct dpq_conn *cl, *sv;
	struct dpq_hs_msg *m;
	uint8_t big[5000];
	size_t off = 0;

	(void)state;
	fx_init(&fx, 16, 0, 8, 8);
	cl = &fx.t.conns[0];
	sv = &fx.t.conns[1];
	/* Not registered yet: refused. */
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, cl, DPQ_EPOCH_INITIAL,
			big, 10), -EINVAL);
	/* A handle of another shard. */
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, cl, dpq_hs_handle(3, 0,
			1)), -EINVAL);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, cl, handle_of(&fx.t, 0)),
			0);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, sv, handle_of(&fx.t, 1)),
			0);
	assert_true((uint64_t)(uintptr_t)dpq_conn_hs_ctx(cl) ==
			handle_of(&fx.t, 0));
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, cl, DPQ_EPOCH_HANDSHAKE,
			big, sizeof(big)), 0);

	m = req_get(&fx);
	assert_int_equal(m->type, DPQ_HS_NEW);
	assert_int_equal(m->role, DPQ_ROLE_CLIENT);
	assert_true(dpq_cid_eq(&m->odcid, &cl->dcid));
	assert_int_equal(m->len, sizeof(cl->tp));
	assert_memory_equal(m->data, cl->tp, sizeof(cl->tp));
	dpq_hs_msg_free(m);
	m = req_get(&fx);
	assert_int_equal(m->type, DPQ_HS_NEW);
	assert_int_equal(m->role, DPQ_ROLE_SERVER);
	assert_true(dpq_cid_eq(&m->peer_scid, &sv->dcid));
	dpq_hs_msg_free(m);
	while ((m = req_get(&fx)) != NULL) {
		assert_int_equal(m->type, DPQ_HS_CRYPTO);
		assert_int_equal(m->handle, handle_of(&fx.t, 0));
		assert_int_equal(m->epoch, DPQ_EPOCH_HANDSHAKE);
		assert_true(m->len <= DPQ_HS_MSG_DATA_MAX);
		assert_memory_equal(m->data, big + off, m->len);
		off += m->len;
		dpq_hs_msg_free(m);
	}
	assert_int_equal(off, sizeof(big));
	assert_int_equal(rstats(&fx).requests, 2 + 3);

	/* Our parameters too large for one message. */
	fx.t.conns[2].tp_rc = -ENOSPC;
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, &fx.t.conns[2],
			handle_of(&fx.t, 2)), -EMSGSIZE);
	assert_null(dpq_conn_hs_ctx(&fx.t.conns[2]));
	fx_fini(&fx);
}

/* A full ring: requests wait in the backlog, in order, and move when the
 * ring drains; beyond the backlog, recv fails (the conn closes). */
static void
test_ring_full_backlog(void **state)
{
	struct fixture fx;
	struct dpq_conn *c;
	struct dpq_hs_ring_stats st;
	struct dpq_hs_msg *m;
	uint8_t b[4];
	int got = 0;

	(void)state;
	fx_init(&fx, 2, 0, 3, 8);
	c = &fx.t.conns[0];
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, c, handle_of(&fx.t, 0)),
			0);
	for (uint8_t i = 0; i < 4; i++) {
		memset(b, i, sizeof(b));
		assert_int_equal(dpq_hs_ring_ops.recv(fx.r, c,
				DPQ_EPOCH_INITIAL, b, sizeof(b)), 0);
	}
	memset(b, 9, sizeof(b));
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, c, DPQ_EPOCH_INITIAL, b,
			sizeof(b)), -ENOBUFS);
	st = rstats(&fx);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.backlog, 3);
	assert_int_equal(st.backlog_max, 3);
	assert_true(st.ring_full >= 1);
	assert_int_equal(st.backlog_overflow, 1);

	/* The management side takes one at a time; drain refills. */
	while ((m = req_get(&fx)) != NULL) {
		if (got == 0) {
			assert_int_equal(m->type, DPQ_HS_NEW);
		} else {
			assert_int_equal(m->type, DPQ_HS_CRYPTO);
			assert_int_equal(m->data[0], got - 1);
		}
		got++;
		dpq_hs_msg_free(m);
		dpq_hs_ring_drain(fx.r, lookup, &fx.t, 0);
	}
	assert_int_equal(got, 5);
	st = rstats(&fx);
	assert_int_equal(st.backlog, 0);
	assert_int_equal(st.requests, 5);
	assert_int_equal(st.backlogged, 3);
	fx_fini(&fx);
}

/* New handshakes may fill only half the backlog: the rest stays for the
 * CRYPTO of handshakes under way (which fail when it overflows). The
 * channel's liveness table follows new_conn and release (msg.h). */
static void
test_backlog_reserve(void **state)
{
	struct fixture fx;
	struct dpq_hs_ring_stats st;
	uint8_t b[4] = { 1, 2, 3, 4 };

	(void)state;
	fx_init(&fx, 1, 0, 4, 8);
	assert_int_equal(fx.ch->live_on, 1);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(dpq_hs_ring_new_conn(fx.r, &fx.t.conns[i],
				handle_of(&fx.t, i)), 0);
	/* ring 1 + backlog 2 of 4: the next new one is refused ... */
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, &fx.t.conns[3],
			handle_of(&fx.t, 3)), -ENOBUFS);
	assert_null(dpq_conn_hs_ctx(&fx.t.conns[3]));
	assert_int_equal(fx.ch->live[3], 0);
	/* ... while a handshake under way still gets its bytes through. */
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, &fx.t.conns[0],
			DPQ_EPOCH_HANDSHAKE, b, sizeof(b)), 0);
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, &fx.t.conns[1],
			DPQ_EPOCH_HANDSHAKE, b, sizeof(b)), 0);
	st = rstats(&fx);
	assert_int_equal(st.new_refused, 1);
	assert_int_equal(st.backlog, 4);
	assert_int_equal(st.backlog_overflow, 0);

	/* Live: the generation of each connection started; released: 0. */
	assert_int_equal(fx.ch->live[0], fx.t.conns[0].gen);
	assert_true(dpq_hs_chan_live(fx.ch, handle_of(&fx.t, 2)));
	dpq_hs_ring_ops.release(fx.r, &fx.t.conns[2]);
	assert_int_equal(fx.ch->live[2], 0);
	assert_false(dpq_hs_chan_live(fx.ch, handle_of(&fx.t, 2)));
	/* Beyond the table: always live (served as before). */
	assert_true(dpq_hs_chan_live(fx.ch, dpq_hs_handle(0,
			fx.ch->nlive, 1)));
	fx_fini(&fx);
}

/* An empty request pool is counted; the request waits. */
static void
test_pool_empty(void **state)
{
	struct fixture fx;
	struct dpq_hs_msg *held[2], *m;
	struct dpq_hs_ring_stats st;

	(void)state;
	fx_init(&fx, 8, 2, 8, 8);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(dpq_hs_ring_new_conn(fx.r, &fx.t.conns[i],
				handle_of(&fx.t, i)), 0);
	st = rstats(&fx);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.pool_empty, 1);
	assert_int_equal(st.backlog, 1);
	held[0] = req_get(&fx);
	held[1] = req_get(&fx);
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 8);
	assert_int_equal(rstats(&fx).pool_empty, 2);	/* still held */
	dpq_hs_msg_free(held[0]);
	dpq_hs_msg_free(held[1]);
	assert_int_equal(dpq_hs_ring_drain(fx.r, lookup, &fx.t, 8), 1);
	m = req_get(&fx);
	assert_int_equal(m->handle, handle_of(&fx.t, 2));
	dpq_hs_msg_free(m);
	fx_fini(&fx);
}

/* Release: a connection whose HS_NEW never left needs no HS_RELEASE (its
 * queued requests are purged); one that cannot be sent waits in the
 * release list, and beyond it is lost but counted. */
static void
test_release(void **state)
{
	struct fixture fx;
	struct dpq_hs_ring_stats st;
	struct dpq_hs_msg *m;
	uint8_t b[8] = { 0 };

	(void)state;
	fx_init(&fx, 1, 0, 8, 1);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(dpq_hs_ring_new_conn(fx.r, &fx.t.conns[i],
				handle_of(&fx.t, i)), 0);
	assert_int_equal(dpq_hs_ring_ops.recv(fx.r, &fx.t.conns[1],
			DPQ_EPOCH_INITIAL, b, sizeof(b)), 0);
	/* #1: NEW and CRYPTO still queued: purged, nothing to send. */
	dpq_hs_ring_ops.release(fx.r, &fx.t.conns[1]);
	assert_null(dpq_conn_hs_ctx(&fx.t.conns[1]));
	st = rstats(&fx);
	assert_int_equal(st.purged, 2);
	assert_int_equal(st.backlog, 1);	/* #2's NEW */
	assert_int_equal(st.release_pending, 0);
	/* #0: its NEW is on the ring, which is full: release list. */
	dpq_hs_ring_ops.release(fx.r, &fx.t.conns[0]);
	assert_int_equal(rstats(&fx).release_pending, 1);
	/* A second pending release overflows the list of one. */
	fx.t.conns[3].hs_ctx = (void *)(uintptr_t)handle_of(&fx.t, 3);
	dpq_hs_ring_ops.release(fx.r, &fx.t.conns[3]);
	assert_int_equal(rstats(&fx).release_lost, 1);
	/* Released twice: nothing more happens. */
	dpq_hs_ring_ops.release(fx.r, &fx.t.conns[0]);

	/* Order on the ring: NEW #0, NEW #2, then RELEASE #0 after the
	 * backlog emptied. */
	m = req_get(&fx);
	assert_int_equal(m->type, DPQ_HS_NEW);
	assert_int_equal(m->handle, handle_of(&fx.t, 0));
	dpq_hs_msg_free(m);
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 8);
	m = req_get(&fx);
	assert_int_equal(m->type, DPQ_HS_NEW);
	assert_int_equal(m->handle, handle_of(&fx.t, 2));
	dpq_hs_msg_free(m);
	assert_null(req_get(&fx));
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 8);
	m = req_get(&fx);
	assert_int_equal(m->type, DPQ_HS_RELEASE);
	assert_int_equal(m->handle, handle_of(&fx.t, 0));
	dpq_hs_msg_free(m);
	assert_null(req_get(&fx));
	st = rstats(&fx);
	assert_int_equal(st.release_pending, 0);
	assert_int_equal(st.backlog, 0);
	fx_fini(&fx);
}

/* Replies reach the right connection's dpq_conn_hs_*; secrets are wiped
 * from the freed objects; a blob in parts is reassembled. */
static void
test_replies(void **state)
{
	static const uint8_t zero[DPQ_HS_SECRET_MAX];
	uint8_t sec[48], tp[3000], data[100];
	struct fixture fx;
	struct dpq_conn *c, *d;
	struct dpq_hs_msg *secmsg;
	struct dpq_hs_ring_stats st;
	uint64_t h0, h1;

	(void)state;
	fx_init(&fx, 32, 0, 8, 8);
	c = &fx.t.conns[0];
	d = &fx.t.conns[1];
	h0 = handle_of(&fx.t, 0);
	h1 = handle_of(&fx.t, 1);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, c, h0), 0);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, d, h1), 0);
	memset(sec, 0xa5, sizeof(sec));
	memset(data, 0x11, sizeof(data));
	for (size_t i = 0; i < sizeof(tp); i++)
		tp[i] = (uint8_t)i;
	rep_put(&fx, h0, DPQ_HS_SEND, DPQ_EPOCH_HANDSHAKE, 0, data, 100);
	secmsg = rep_put(&fx, h0, DPQ_HS_SECRET, DPQ_EPOCH_HANDSHAKE,
			DPQ_HS_F_WRITE, sec, sizeof(sec));
	secmsg->cipher_suite = DPQ_TLS_AES_256_GCM_SHA384;
	rep_put(&fx, h0, DPQ_HS_PEER_TP, 0, DPQ_HS_F_MORE, tp,
			DPQ_HS_MSG_DATA_MAX);
	rep_put(&fx, h0, DPQ_HS_PEER_TP, 0, 0, tp + DPQ_HS_MSG_DATA_MAX,
			sizeof(tp) - DPQ_HS_MSG_DATA_MAX);
	rep_put(&fx, h0, DPQ_HS_COMPLETE, 0, 0, "hq-interop", 11);
	rep_put(&fx, h1, DPQ_HS_FAILED, 0, 0, NULL, 0)->error_code = 0x128;
	assert_int_equal(dpq_hs_ring_drain(fx.r, lookup, &fx.t, 64), 6);
	assert_int_equal(c->sent_len[DPQ_EPOCH_HANDSHAKE], 100);
	assert_int_equal(c->secrets, 1);
	assert_true(c->secret_write);
	assert_int_equal(c->suite, DPQ_TLS_AES_256_GCM_SHA384);
	assert_memory_equal(c->secret, sec, sizeof(sec));
	assert_memory_equal(secmsg->data, zero, sizeof(zero));
	assert_int_equal(c->peer_tp_calls, 1);
	assert_int_equal(c->peer_tp_len, sizeof(tp));
	assert_memory_equal(c->peer_tp, tp, sizeof(tp));
	assert_true(c->complete);
	assert_string_equal(c->alpn, "hq-interop");
	assert_false(c->failed);
	assert_true(d->failed);
	assert_int_equal(d->fail_code, 0x128);
	st = rstats(&fx);
	assert_int_equal(st.replies, 6);
	assert_int_equal(st.applied, 6);
	assert_int_equal(st.hs_complete, 1);
	assert_int_equal(st.hs_failed, 1);
	fx_fini(&fx);
}

/* A reply for a reused slot (other generation) or a connection that no
 * longer carries the handle is stale; malformed replies and torn blobs
 * are counted; a conn refusing the parameters or keys is failed. */
static void
test_stale_bad_torn(void **state)
{
	struct fixture fx;
	struct dpq_conn *c, *d;
	struct dpq_hs_ring_stats st;
	uint8_t x[16] = { 1 };
	uint64_t h0, h1, old;

	(void)state;
	fx_init(&fx, 32, 0, 8, 8);
	c = &fx.t.conns[0];
	d = &fx.t.conns[1];
	old = handle_of(&fx.t, 0);
	c->gen = 2;			/* the slot was reused */
	h0 = handle_of(&fx.t, 0);
	h1 = handle_of(&fx.t, 1);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, c, h0), 0);
	assert_int_equal(dpq_hs_ring_new_conn(fx.r, d, h1), 0);

	rep_put(&fx, old, DPQ_HS_SEND, 0, 0, x, sizeof(x));	/* stale */
	rep_put(&fx, old, DPQ_HS_COMPLETE, 0, 0, "h3", 3);	/* stale */
	rep_put(&fx, h0, DPQ_HS_SEND, 7, 0, x, sizeof(x));	/* bad */
	rep_put(&fx, h0, DPQ_HS_COMPLETE, 0, 0, "h3", 2);	/* no NUL */
	rep_put(&fx, h0, DPQ_HS_NEW, 0, 0, NULL, 0);		/* wrong dir */
	rep_put(&fx, h0, DPQ_HS_SECRET, 2, 0, x, sizeof(x))->len = 65;
	/* Part of a blob, then another handle's message: torn. */
	rep_put(&fx, h0, DPQ_HS_PEER_TP, 0, DPQ_HS_F_MORE, x, sizeof(x));
	rep_put(&fx, h1, DPQ_HS_SEND, 0, 0, x, sizeof(x));
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 64);
	st = rstats(&fx);
	assert_int_equal(st.stale, 2);
	assert_int_equal(st.bad, 4);
	assert_int_equal(st.torn, 1);
	assert_int_equal(c->peer_tp_calls, 0);
	assert_int_equal(c->sent_len[0], 0);
	assert_false(c->complete);
	assert_int_equal(d->sent_len[0], sizeof(x));

	/* A sloppy lookup still cannot hand a reply to the slot's new
	 * connection: its hs_ctx carries the new generation. */
	fx.t.ignore_gen = true;
	rep_put(&fx, old, DPQ_HS_SEND, 0, 0, x, sizeof(x));
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 64);
	assert_int_equal(rstats(&fx).stale, 3);
	assert_int_equal(c->sent_len[0], 0);
	fx.t.ignore_gen = false;

	/* The conn's own check refuses the parameters: it is failed with
	 * its error; keys it cannot install fail it too. */
	c->peer_tp_err = DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	rep_put(&fx, h0, DPQ_HS_PEER_TP, 0, 0, x, sizeof(x));
	d->secret_rc = -ENOTSUP;
	rep_put(&fx, h1, DPQ_HS_SECRET, 2, 0, x, sizeof(x));
	dpq_hs_ring_drain(fx.r, lookup, &fx.t, 64);
	assert_int_equal(rstats(&fx).tp_rejected, 1);
	assert_true(c->failed);
	assert_int_equal(c->fail_code, DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	assert_true(d->failed);
	assert_int_equal(d->fail_code, DPQ_TE_INTERNAL_ERROR);

	/* Budget: one reply per call. */
	rep_put(&fx, h1, DPQ_HS_SEND, 0, 0, x, sizeof(x));
	rep_put(&fx, h1, DPQ_HS_SEND, 0, 0, x, sizeof(x));
	assert_int_equal(dpq_hs_ring_drain(fx.r, lookup, &fx.t, 1), 1);
	assert_int_equal(dpq_hs_ring_drain(fx.r, lookup, &fx.t, 1), 1);
	assert_int_equal(dpq_hs_ring_drain(fx.r, lookup, &fx.t, 1), 0);
	fx_fini(&fx);
}

int
main(void)
{
	char *eal_argv[] = { "test_hs_ring", "--no-huge", "--no-shconf",
		"--no-pci", "-l", "0", "-m", "256", "--log-level=error", NULL };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_ring_full_backlog),
		cmocka_unit_test(test_pool_empty),
		cmocka_unit_test(test_backlog_reserve),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_stale_bad_torn),
	};
	int rc;

	if (rte_eal_init(9, eal_argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
