/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fewer round trips (issue 8 §3, §4) at the connection level, in memory:
 * NEW_TOKEN sent by the server after the handshake, kept by the client,
 * resent when lost, and presented in a later connection's Initial;
 * resumption with 0-RTT: a request written before the handshake
 * completes is answered one round trip after the start (against two for
 * a fresh connection); 0-RTT refused (by policy, after the anti-replay
 * recording restarted) is sent again as 1-RTT with nothing counted lost;
 * a server that accepts 0-RTT with lower limits is refused; no 0-RTT
 * without remembered parameters; the server's cap on 0-RTT bytes.
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

#include "conn_pair.h"
#include "dataplane/engine/errors.h"

static bool
both_established(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL &&
		dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

static bool
client_has_token(struct pair *p, void *arg)
{
	const uint8_t *t;

	(void)arg;
	return dpq_conn_new_token(p->client, &t) > 0;
}

static void
test_new_token(void **state)
{
	static const uint8_t tok[40] = { 0x80, 1, 2, 3, 4, 5 };
	const uint8_t *got;
	struct pair p, q;
	uint8_t keep[64];
	size_t n;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 7);
	pair_start(&p);
	assert_true(pair_run(&p, both_established, NULL, 5000000));
	assert_int_equal(dpq_conn_new_token(p.client, &got), 0);
	/* Only a server sends NEW_TOKEN (§19.7), tokens are 1..256 bytes. */
	assert_int_equal(dpq_conn_send_new_token(p.client, tok, sizeof(tok)),
			-EINVAL);
	assert_int_equal(dpq_conn_send_new_token(p.server, tok, 0), -EINVAL);
	assert_int_equal(dpq_conn_send_new_token(p.server, tok,
			DPQ_CONN_TOKEN_MAX + 1), -EINVAL);
	/* The first datagram carrying it is lost: it comes again. */
	p.s2c.drop_mask = UINT64_C(1) << p.s2c.sent;
	assert_int_equal(dpq_conn_send_new_token(p.server, tok, sizeof(tok)),
			0);
	assert_true(pair_run(&p, client_has_token, NULL, 5000000));
	assert_true(p.s2c.dropped >= 1);
	n = dpq_conn_new_token(p.client, &got);
	assert_int_equal(n, sizeof(tok));
	assert_memory_equal(got, tok, sizeof(tok));
	memcpy(keep, got, n);
	pair_free(&p);

	/* The next connection's Initial carries it (RFC 9000 §8.1.3). */
	pair_init(&q, 0, NULL, 10000, 0, 8);
	q.ctoken = keep;
	q.ctoken_len = (uint16_t)n;
	pair_start(&q);
	assert_true(pair_run(&q, both_established, NULL, 5000000));
	assert_int_equal(q.initial_token_len, n);
	assert_memory_equal(q.initial_token, keep, n);
	pair_free(&q);
}

/* ---- a request/response application ------------------------------------ */

#define RTT_US		20000	/* the pair's delay is 10 ms each way */
#define RESPONSE	3000

static struct pair *cur;	/* for the apps' clock */

struct req {
	size_t req_len;		/* request bytes the client writes */
	bool sent, early_called;
	uint64_t id;
	uint64_t t_first;	/* first response byte (pair time) */
	size_t got;
	bool fin;
	size_t srv_got;		/* request bytes the server read */
	bool srv_answered;
};

static void
send_req(struct dpq_conn *c)
{
	struct req *r = dpq_conn_app_ctx(c);
	static uint8_t buf[65536];
	ssize_t n;

	if (r->sent || dpq_conn_stream_open(c, false, &r->id) != 0)
		return;
	memset(buf, 'q', sizeof(buf));
	assert_true(r->req_len <= sizeof(buf));
	n = dpq_conn_stream_write(c, r->id, buf, r->req_len, true);
	assert_int_equal(n, (ssize_t)r->req_len);
	r->sent = true;
}

static void
cl_early(struct dpq_conn *c, const char *alpn)
{
	struct req *r = dpq_conn_app_ctx(c);

	assert_null(alpn);
	r->early_called = true;
	send_req(c);
}

static void
cl_established(struct dpq_conn *c, const char *alpn)
{
	(void)alpn;
	send_req(c);
}

static void
cl_data(struct dpq_conn *c, uint64_t id)
{
	struct req *r = dpq_conn_app_ctx(c);
	uint8_t buf[4096];
	ssize_t n;
	bool fin = false;

	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		if (n > 0 && r->got == 0)
			r->t_first = cur->now;
		if (n > 0)
			r->got += (size_t)n;
		if (fin)
			r->fin = true;
	} while (n > 0 && !fin);
}

static const struct dpq_app_ops client_ops = {
	.on_early = cl_early,
	.on_established = cl_established,
	.on_stream_data = cl_data,
};

static void
sv_data(struct dpq_conn *c, uint64_t id)
{
	struct req *r = dpq_conn_app_ctx(c);
	static uint8_t resp[RESPONSE];
	uint8_t buf[4096];
	ssize_t n;
	bool fin = false;

	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		if (n > 0)
			r->srv_got += (size_t)n;
	} while (n > 0 && !fin);
	if (fin && !r->srv_answered) {
		memset(resp, 'r', sizeof(resp));
		assert_int_equal(dpq_conn_stream_write(c, id, resp,
				sizeof(resp), true), RESPONSE);
		r->srv_answered = true;
	}
}

static const struct dpq_app_ops server_ops = {
	.on_stream_data = sv_data,
};

static bool
answered(struct pair *p, void *arg)
{
	struct req *r = arg;

	(void)p;
	return r->fin && r->got == RESPONSE;
}

static struct dpq_tls_antireplay *ar;
static uint8_t stek[DPQ_TLS_STEK_LEN];

/* What a client keeps about a server. */
struct cache {
	uint8_t ticket[4096];
	size_t ticket_len;
	uint8_t tp[256];
	uint16_t tp_len;
};

/* A fresh connection that asks once; fills the cache. Returns the time to
 * the first response byte. */
static uint64_t
fresh(struct cache *k, struct req *cr, struct req *sr)
{
	struct pair p;
	uint64_t t0;
	ssize_t n;

	pair_init(&p, 0, NULL, RTT_US / 2, 0, 11);
	cur = &p;
	memset(cr, 0, sizeof(*cr));
	memset(sr, 0, sizeof(*sr));
	cr->req_len = 20;
	p.capp = &client_ops;
	p.capp_ctx = cr;
	p.sapp = &server_ops;
	p.sapp_ctx = sr;
	p.sopts.stek = stek;
	p.sopts.ticket_lifetime_s = 3600;
	p.sopts.early_data = true;
	p.sopts.antireplay = ar;
	t0 = p.now;
	pair_start(&p);
	assert_true(pair_run(&p, answered, cr, 5000000));
	/* The ticket comes after the handshake: let it arrive. */
	pair_run(&p, NULL, NULL, 100000);
	assert_true(p.ticket_len > 0);
	assert_true(p.ticket_early);
	memcpy(k->ticket, p.ticket, p.ticket_len);
	k->ticket_len = p.ticket_len;
	n = dpq_conn_remembered_tparams(p.client, k->tp, sizeof(k->tp));
	assert_true(n > 0);
	k->tp_len = (uint16_t)n;
	assert_false(cr->early_called);
	pair_free(&p);
	return cr->t_first - t0;
}

struct resume_opts {
	bool server_early;	/* server accepts 0-RTT */
	bool restart;		/* anti-replay restarted before */
	bool no_tp;		/* client forgot the parameters */
	uint64_t server_max_data;
	uint64_t max_early_data;
	size_t req_len;
};

/* A resumed connection that asks at once; returns the time to the first
 * response byte, and the client's and server's stats. */
static uint64_t
resume(const struct cache *k, const struct resume_opts *o, struct req *cr,
		struct req *sr, struct dpq_conn_stats *cs,
		struct dpq_conn_stats *ss, struct dpq_conn_close_info *ci)
{
	struct pair p;
	uint64_t t0;

	pair_init(&p, 0, NULL, RTT_US / 2, 0, 12);
	cur = &p;
	memset(cr, 0, sizeof(*cr));
	memset(sr, 0, sizeof(*sr));
	cr->req_len = o->req_len ? o->req_len : 20;
	p.capp = &client_ops;
	p.capp_ctx = cr;
	p.sapp = &server_ops;
	p.sapp_ctx = sr;
	p.sconf.max_data = o->server_max_data;
	p.sconf.max_early_data = o->max_early_data;
	p.sopts.stek = stek;
	p.sopts.ticket_lifetime_s = 3600;
	p.sopts.early_data = o->server_early;
	p.sopts.antireplay = ar;
	p.copts.session = k->ticket;
	p.copts.session_len = k->ticket_len;
	p.copts.offer_early_data = true;
	if (!o->no_tp) {
		p.ctp = k->tp;
		p.ctp_len = k->tp_len;
	}
	if (o->restart)
		assert_int_equal(dpq_tls_antireplay_restart(ar, 10000, 64), 0);
	t0 = p.now;
	pair_start(&p);
	pair_run(&p, answered, cr, 5000000);
	/* The answer may come before the server's handshake completes
	 * (0.5-RTT): let it complete. */
	pair_run(&p, NULL, NULL, 100000);
	dpq_conn_get_stats(p.client, cs);
	memset(ss, 0, sizeof(*ss));
	if (p.server != NULL)
		dpq_conn_get_stats(p.server, ss);
	*ci = *dpq_conn_close_info(p.client);
	if (dpq_conn_state(p.client) < DPQ_CONN_CLOSING)
		memset(ci, 0, sizeof(*ci));
	pair_free(&p);
	return cr->fin ? cr->t_first - t0 : UINT64_MAX;
}

static void
test_0rtt_accepted(void **state)
{
	struct cache k;
	struct req cr, sr;
	struct resume_opts o = { .server_early = true };
	struct dpq_conn_stats cs, ss;
	struct dpq_conn_close_info ci;
	uint64_t t_fresh, t_early;

	(void)state;
	t_fresh = fresh(&k, &cr, &sr);
	/* RFC 9001: a fresh connection's answer comes after 2 RTT. */
	assert_true(t_fresh >= 2 * RTT_US && t_fresh < 3 * RTT_US);
	t_early = resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_true(cr.early_called);
	assert_true(cs.resumed && ss.resumed);
	assert_int_equal(cs.early, DPQ_EARLY_ACCEPTED);
	assert_int_equal(ss.early, DPQ_EARLY_ACCEPTED);
	assert_true(cs.early_bytes >= 20);
	assert_true(ss.early_bytes > 0);
	/* The request left in 0-RTT and the answer in 0.5-RTT: 1 RTT. */
	assert_true(t_early >= RTT_US && t_early < 2 * RTT_US);
	assert_int_equal(cr.got, RESPONSE);
	assert_int_equal(cs.pkts_lost, 0);
}

/* Refused 0-RTT (RFC 9001 §4.6.2): resumed, the request sent again in
 * 1-RTT, answered completely, nothing counted lost. */
static void
test_0rtt_rejected(void **state)
{
	struct cache k;
	struct req cr, sr;
	struct resume_opts o = { 0 };
	struct dpq_conn_stats cs, ss;
	struct dpq_conn_close_info ci;
	uint64_t t;

	(void)state;
	fresh(&k, &cr, &sr);
	/* By policy: the server does not take 0-RTT. */
	t = resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_true(cr.early_called);
	assert_true(cs.resumed);
	assert_int_equal(cs.early, DPQ_EARLY_REJECTED);
	assert_int_equal(ss.early, DPQ_EARLY_NONE);
	assert_true(cs.early_bytes >= 20);
	assert_int_equal(sr.srv_got, 20);
	assert_int_equal(cr.got, RESPONSE);
	assert_int_equal(cs.pkts_lost, 0);
	assert_true(t >= 2 * RTT_US && t < 3 * RTT_US);
	/* The recording restarted (a change of what 0-RTT relied on): the
	 * ticket predates it. */
	fresh(&k, &cr, &sr);
	o.server_early = true;
	o.restart = true;
	resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_true(cs.resumed);
	assert_int_equal(cs.early, DPQ_EARLY_REJECTED);
	assert_int_equal(cr.got, RESPONSE);
	assert_int_equal(cs.pkts_lost, 0);
}

/* RFC 9000 §7.4.1: a server that accepts 0-RTT must not lower the
 * limits it relied on; the client closes when it does. */
static void
test_0rtt_lower_limits(void **state)
{
	struct cache k;
	struct req cr, sr;
	struct resume_opts o = { .server_early = true,
		.server_max_data = 4096 };
	struct dpq_conn_stats cs, ss;
	struct dpq_conn_close_info ci;

	(void)state;
	fresh(&k, &cr, &sr);
	resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_int_equal(ci.error_code, DPQ_TE_PROTOCOL_VIOLATION);
	assert_false(ci.remote);
}

/* Without the remembered parameters no 0-RTT is sent (nothing would
 * bound it); the session still resumes. */
static void
test_0rtt_needs_tp(void **state)
{
	struct cache k;
	struct req cr, sr;
	struct resume_opts o = { .server_early = true, .no_tp = true };
	struct dpq_conn_stats cs, ss;
	struct dpq_conn_close_info ci;

	(void)state;
	fresh(&k, &cr, &sr);
	resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_false(cr.early_called);
	assert_true(cs.resumed);
	assert_int_equal(cs.early, DPQ_EARLY_NONE);
	assert_int_equal(cs.early_bytes, 0);
	assert_int_equal(cr.got, RESPONSE);
}

/* The server processes at most max_early_data bytes of 0-RTT; the rest
 * of a large request is dropped and arrives again in 1-RTT. */
static void
test_0rtt_cap(void **state)
{
	struct cache k;
	struct req cr, sr;
	struct resume_opts o = { .server_early = true, .max_early_data = 2500,
		.req_len = 20000 };
	struct dpq_conn_stats cs, ss;
	struct dpq_conn_close_info ci;

	(void)state;
	fresh(&k, &cr, &sr);
	resume(&k, &o, &cr, &sr, &cs, &ss, &ci);
	assert_int_equal(cs.early, DPQ_EARLY_ACCEPTED);
	assert_true(ss.early_bytes <= 2500);
	assert_true(ss.early_dropped > 0);
	assert_int_equal(sr.srv_got, 20000);
	assert_int_equal(cr.got, RESPONSE);
}

static int
setup(void **state)
{
	(void)state;
	for (int i = 0; i < DPQ_TLS_STEK_LEN; i++)
		stek[i] = (uint8_t)(i * 7);
	return dpq_tls_antireplay_create(10000, 64, &ar);
}

static int
teardown(void **state)
{
	(void)state;
	dpq_tls_antireplay_destroy(ar);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_token),
		cmocka_unit_test(test_0rtt_accepted),
		cmocka_unit_test(test_0rtt_rejected),
		cmocka_unit_test(test_0rtt_lower_limits),
		cmocka_unit_test(test_0rtt_needs_tp),
		cmocka_unit_test(test_0rtt_cap),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
