/* SPDX-License-Identifier: BSD-3-Clause */
/* See sim.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/tls/hs_direct.h"
#include "dataplane/engine/packet.h"
#include "emu/sim.h"

#define SIM_MTU		1500
#define NS_PER_US	UINT64_C(1000)

/* A datagram on its way; the heap orders by (at, seq). */
struct sim_dgram {
	uint64_t at;
	uint64_t seq;
	uint16_t len;
	uint8_t data[SIM_MTU];
};

/* One direction: the impairment model and the datagrams in flight. */
struct sim_link {
	struct dpq_linkem em;
	struct sim_dgram **heap;
	unsigned int n, cap;
	struct sim_dgram *free_list;	/* reused buffers, chained by seq */
	uint64_t seq;
	uint64_t overflow;
};

struct dpq_sim {
	struct dpq_sim_conf conf;
	struct dpq_crypto *crypto;
	struct dpq_tls_ctx *cctx, *sctx;
	struct dpq_conn *client, *server;
	struct sim_link c2s, s2c;
	uint64_t now_ns;		/* since the start */
	uint64_t wake_ns;		/* dpq_sim_wake_at; 0: none */
	uint64_t rng;
	bool server_refused;
};

static uint64_t
rnd(struct dpq_sim *s)
{
	/* splitmix64 */
	uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static struct dpq_tls_ctx *
mkctx(enum dpq_tls_role role, const char *alpn, uint16_t suite)
{
	struct dpq_tls_ctx_conf conf = {
		.role = role,
		.alpn = { alpn },
		.alpn_count = 1,
		.self_signed_name = "dpquic.test",
		.server_name = "dpquic.test",
		.log = quiet,
	};
	struct dpq_tls_ctx *ctx = NULL;

	if (suite != 0) {
		conf.suites[0] = suite;
		conf.suite_count = 1;
	}
	if (dpq_tls_ctx_create(&conf, &ctx) != 0)
		return NULL;
	return ctx;
}

uint64_t
dpq_sim_now_us(const struct dpq_sim *s)
{
	return DPQ_SIM_T0_US + s->now_ns / NS_PER_US;
}

uint64_t
dpq_sim_elapsed_ns(const struct dpq_sim *s)
{
	return s->now_ns;
}

struct dpq_conn *
dpq_sim_client(const struct dpq_sim *s)
{
	return s->client;
}

struct dpq_conn *
dpq_sim_server(const struct dpq_sim *s)
{
	return s->server;
}

struct dpq_linkem *
dpq_sim_link(struct dpq_sim *s, bool c2s)
{
	return c2s ? &s->c2s.em : &s->s2c.em;
}

uint64_t
dpq_sim_overflow(const struct dpq_sim *s)
{
	return s->c2s.overflow + s->s2c.overflow;
}

void
dpq_sim_wake_at(struct dpq_sim *s, uint64_t ns)
{
	s->wake_ns = ns;
}

/* ---- the heap of datagrams in flight ---------------------------------- */

static bool
before(const struct sim_dgram *a, const struct sim_dgram *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void
heap_push(struct sim_link *l, struct sim_dgram *g)
{
	unsigned int i = l->n++;

	while (i > 0) {
		unsigned int up = (i - 1) / 2;

		if (!before(g, l->heap[up]))
			break;
		l->heap[i] = l->heap[up];
		i = up;
	}
	l->heap[i] = g;
}

static struct sim_dgram *
heap_pop(struct sim_link *l)
{
	struct sim_dgram *top = l->heap[0], *last = l->heap[--l->n];
	unsigned int i = 0;

	for (;;) {
		unsigned int k = 2 * i + 1;

		if (k >= l->n)
			break;
		if (k + 1 < l->n && before(l->heap[k + 1], l->heap[k]))
			k++;
		if (!before(l->heap[k], last))
			break;
		l->heap[i] = l->heap[k];
		i = k;
	}
	if (l->n > 0)
		l->heap[i] = last;
	return top;
}

static struct sim_dgram *
dgram_get(struct sim_link *l)
{
	struct sim_dgram *g = l->free_list;

	if (g != NULL) {
		l->free_list = (struct sim_dgram *)(uintptr_t)g->seq;
		return g;
	}
	return malloc(sizeof(*g));
}

static void
dgram_put(struct sim_link *l, struct sim_dgram *g)
{
	g->seq = (uint64_t)(uintptr_t)l->free_list;
	l->free_list = g;
}

static bool
heap_reserve(struct sim_link *l)
{
	struct sim_dgram **h;
	unsigned int cap;

	if (l->n < l->cap)
		return true;
	if (l->cap >= DPQ_SIM_LINK_MAX)
		return false;
	cap = l->cap != 0 ? l->cap * 2 : 1024;
	h = realloc(l->heap, cap * sizeof(*h));
	if (h == NULL)
		return false;
	l->heap = h;
	l->cap = cap;
	return true;
}

static void
link_free(struct sim_link *l)
{
	struct sim_dgram *g;

	while (l->n > 0)
		free(heap_pop(l));
	while ((g = l->free_list) != NULL) {
		l->free_list = (struct sim_dgram *)(uintptr_t)g->seq;
		free(g);
	}
	free(l->heap);
}

/* A datagram enters the link at the current time. */
static void
link_send(struct dpq_sim *s, struct sim_link *l, const uint8_t *d,
		size_t len)
{
	struct dpq_linkem_verdict v;
	unsigned int i;

	if (dpq_linkem_send(&l->em, s->now_ns, (uint32_t)len, &v) == 0)
		return;
	for (i = 0; i < v.copies; i++) {
		struct sim_dgram *g;

		if (!heap_reserve(l) || (g = dgram_get(l)) == NULL) {
			l->overflow++;
			continue;
		}
		g->at = v.at_ns[i];
		g->seq = l->seq++;
		g->len = (uint16_t)len;
		memcpy(g->data, d, len);
		dpq_linkem_corrupt(g->data, (uint32_t)len, v.flip[i]);
		heap_push(l, g);
	}
}

/* ---- connections -------------------------------------------------------- */

static int
start_client(struct dpq_sim *s)
{
	struct dpq_conn_init in = { 0 };
	int i;

	in.conf = &s->conf.client;
	in.app = s->conf.capp;
	in.app_ctx = s->conf.capp_ctx;
	in.crypto = s->crypto;
	in.hs_ops = &dpq_hs_direct_ops;
	in.hs = s->cctx;
	in.scid.len = 8;
	in.dcid.len = 8;
	for (i = 0; i < 8; i++) {
		in.scid.bytes[i] = (uint8_t)rnd(s);
		in.dcid.bytes[i] = (uint8_t)rnd(s);
	}
	in.now = dpq_sim_now_us(s);
	if (dpq_conn_create(&in, &s->client) != 0)
		return -ENOMEM;
	if (s->conf.ctrace != NULL)
		dpq_conn_set_trace(s->client, s->conf.ctrace,
				s->conf.ctrace_ctx);
	if (dpq_hs_direct_attach(s->cctx, s->client) != 0)
		return -EPROTO;
	return 0;
}

/* The server connection, from the client's first Initial (as a listener
 * would: its DCID and SCID). */
static void
start_server(struct dpq_sim *s, const uint8_t *d, size_t len)
{
	struct dpq_conn_init in = { 0 };
	struct dpq_pkt_hdr h;
	int i;

	if (s->server_refused)
		return;
	if (dpq_pkt_parse(d, d + len, 8, &h) != 0 || h.type != DPQ_PKT_INITIAL ||
	    len < DPQ_MIN_INITIAL_DATAGRAM)
		return;
	in.conf = &s->conf.server;
	in.crypto = s->crypto;
	in.hs_ops = &dpq_hs_direct_ops;
	in.hs = s->sctx;
	in.app = s->conf.sapp;
	in.app_ctx = s->conf.sapp_ctx;
	in.scid.len = 8;
	for (i = 0; i < 8; i++)
		in.scid.bytes[i] = (uint8_t)rnd(s);
	if (dpq_cid_set(&in.dcid, h.dcid, h.dcid_len) != 0 ||
	    dpq_cid_set(&in.peer_scid, h.scid, h.scid_len) != 0)
		return;
	for (i = 0; i < DPQ_RESET_TOKEN_LEN; i++)
		in.reset_token[i] = (uint8_t)rnd(s);
	in.now = dpq_sim_now_us(s);
	if (dpq_conn_create(&in, &s->server) != 0) {
		s->server_refused = true;
		return;
	}
	if (s->conf.strace != NULL)
		dpq_conn_set_trace(s->server, s->conf.strace,
				s->conf.strace_ctx);
	if (dpq_hs_direct_attach(s->sctx, s->server) != 0) {
		dpq_conn_destroy(s->server);
		s->server = NULL;
		s->server_refused = true;
	}
}

/* Everything a connection has to send now goes onto its link. */
static void
conn_tx(struct dpq_sim *s, struct dpq_conn *c, struct sim_link *l)
{
	uint8_t buf[SIM_MTU];
	uint64_t now = dpq_sim_now_us(s);
	unsigned int guard = 0;
	ssize_t n;

	if (c == NULL)
		return;
	dpq_conn_poll(c, now);
	while (guard++ < 100000 &&
	       (n = dpq_conn_send(c, buf, sizeof(buf), NULL, now)) > 0)
		link_send(s, l, buf, (size_t)n);
}

static void
conn_rx(struct dpq_sim *s, struct dpq_conn *c, struct sim_dgram *g)
{
	dpq_conn_recv(c, g->data, g->len, NULL, dpq_sim_now_us(s));
}

/* Deliver every datagram due by now; true if any was. */
static bool
deliver(struct dpq_sim *s, struct sim_link *l, bool to_server)
{
	bool any = false;

	while (l->n > 0 && l->heap[0]->at <= s->now_ns) {
		struct sim_dgram *g = heap_pop(l);

		any = true;
		if (to_server) {
			if (s->server == NULL)
				start_server(s, g->data, g->len);
			if (s->server != NULL)
				conn_rx(s, s->server, g);
		} else {
			conn_rx(s, s->client, g);
		}
		dgram_put(l, g);
	}
	return any;
}

/* Earliest conn timer as sim time (ns); UINT64_MAX: none. */
static uint64_t
timer_ns(const struct dpq_conn *c)
{
	uint64_t t;

	if (c == NULL)
		return UINT64_MAX;
	t = dpq_conn_next_timeout(c);
	if (t == UINT64_MAX)
		return UINT64_MAX;
	if (t <= DPQ_SIM_T0_US)
		return 0;
	return (t - DPQ_SIM_T0_US) * NS_PER_US;
}

bool
dpq_sim_run(struct dpq_sim *s, bool (*done)(struct dpq_sim *, void *),
		void *arg, uint64_t max_ns)
{
	uint64_t end = s->now_ns + max_ns;

	while (s->now_ns <= end) {
		uint64_t t, tc, ts;

		conn_tx(s, s->client, &s->c2s);
		conn_tx(s, s->server, &s->s2c);
		if (done != NULL && done(s, arg))
			return true;
		/* done() may have written (an application on a schedule):
		 * that leaves now, not at the next event. */
		if (done != NULL) {
			uint64_t us = dpq_sim_now_us(s);

			if (s->client != NULL &&
			    dpq_conn_wants_send(s->client, us))
				conn_tx(s, s->client, &s->c2s);
			if (s->server != NULL &&
			    dpq_conn_wants_send(s->server, us))
				conn_tx(s, s->server, &s->s2c);
		}
		if (deliver(s, &s->c2s, true) | deliver(s, &s->s2c, false))
			continue;
		t = UINT64_MAX;
		if (s->c2s.n > 0)
			t = s->c2s.heap[0]->at;
		if (s->s2c.n > 0 && s->s2c.heap[0]->at < t)
			t = s->s2c.heap[0]->at;
		if (s->wake_ns > s->now_ns && s->wake_ns < t)
			t = s->wake_ns;
		tc = timer_ns(s->client);
		ts = timer_ns(s->server);
		if (tc < t)
			t = tc;
		if (ts < t)
			t = ts;
		if (t == UINT64_MAX)
			return done == NULL;
		if (t > end) {
			s->now_ns = end;
			break;
		}
		/* Connections count in us: a timer due within this us
		 * fires at the start of the next one, never before. */
		if (t > s->now_ns)
			s->now_ns = t;
		else if (t == tc || t == ts)
			s->now_ns += NS_PER_US - s->now_ns % NS_PER_US;
	}
	return done != NULL && done(s, arg);
}

int
dpq_sim_create(const struct dpq_sim_conf *conf, struct dpq_sim **out)
{
	const char *alpn = conf->alpn != NULL ? conf->alpn : "hq-interop";
	struct dpq_sim *s;
	int rc = -ENOMEM;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->conf = *conf;
	s->conf.client.role = DPQ_ROLE_CLIENT;
	s->conf.server.role = DPQ_ROLE_SERVER;
	s->rng = conf->seed;
	if (dpq_linkem_init(&s->c2s.em, &conf->c2s) != 0 ||
	    dpq_linkem_init(&s->s2c.em, &conf->s2c) != 0) {
		rc = -EINVAL;
		goto fail;
	}
	s->crypto = dpq_crypto_create();
	s->cctx = mkctx(DPQ_TLS_CLIENT, alpn, conf->suite);
	s->sctx = mkctx(DPQ_TLS_SERVER, alpn, 0);
	if (s->crypto == NULL || s->cctx == NULL || s->sctx == NULL)
		goto fail;
	rc = start_client(s);
	if (rc != 0)
		goto fail;
	*out = s;
	return 0;
fail:
	dpq_sim_destroy(s);
	return rc;
}

void
dpq_sim_destroy(struct dpq_sim *s)
{
	if (s == NULL)
		return;
	if (s->client != NULL)
		dpq_conn_destroy(s->client);
	if (s->server != NULL)
		dpq_conn_destroy(s->server);
	if (s->sctx != NULL)
		dpq_tls_ctx_destroy(s->sctx);
	if (s->cctx != NULL)
		dpq_tls_ctx_destroy(s->cctx);
	if (s->crypto != NULL)
		dpq_crypto_destroy(s->crypto);
	link_free(&s->c2s);
	link_free(&s->s2c);
	free(s);
}
