/* SPDX-License-Identifier: BSD-3-Clause */
/* See conn_pair.h. */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "conn_pair.h"
#include "dataplane/engine/packet.h"

static uint64_t
rnd(struct pair *p)
{
	/* xorshift64*: deterministic per seed */
	p->rng ^= p->rng >> 12;
	p->rng ^= p->rng << 25;
	p->rng ^= p->rng >> 27;
	return p->rng * 0x2545f4914f6cdd1dull;
}

static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* CIDs for NEW_CONNECTION_ID: random, like the shard's (the pair routes
 * by link, not by CID). */
static int
pair_cid_issue(void *arg, struct dpq_conn *c, struct dpq_cid *cid,
		uint8_t token[DPQ_RESET_TOKEN_LEN])
{
	struct pair *p = arg;

	if (p->no_cids)
		return -ENOTSUP;
	cid->len = 8;
	for (int i = 0; i < 8; i++)
		cid->bytes[i] = (uint8_t)rnd(p);
	for (int i = 0; i < DPQ_RESET_TOKEN_LEN; i++)
		token[i] = (uint8_t)rnd(p);
	p->cids_made[dpq_conn_is_server(c)]++;
	return 0;
}

static void
pair_cid_retire(void *arg, struct dpq_conn *c, const struct dpq_cid *cid)
{
	struct pair *p = arg;

	(void)cid;
	p->cids_dropped[dpq_conn_is_server(c)]++;
}

static const struct dpq_cid_ops pair_cid_ops = {
	.issue = pair_cid_issue,
	.retire = pair_cid_retire,
};

static struct dpq_tls_ctx *
mkctx(enum dpq_tls_role role, const char *alpn, uint16_t suite,
		const char *const *alpns, const char *keylog)
{
	struct dpq_tls_ctx_conf conf = {
		.role = role,
		.alpn = { alpn },
		.alpn_count = 1,
		.self_signed_name = "dpquic.test",
		.server_name = "dpquic.test",
		.keylog_file = keylog,
		.log = quiet,
	};
	struct dpq_tls_ctx *ctx = NULL;

	/* A NULL-terminated list replaces the single ALPN. */
	for (unsigned int i = 0; alpns != NULL && alpns[i] != NULL &&
			i < DPQ_TLS_ALPN_MAX; i++) {
		conf.alpn[i] = alpns[i];
		conf.alpn_count = i + 1;
	}
	if (suite) {
		conf.suites[0] = suite;
		conf.suite_count = 1;
	}
	if (dpq_tls_ctx_create(&conf, &ctx) != 0)
		abort();
	return ctx;
}

void
pair_init(struct pair *p, uint16_t suite, const char *calpn,
		uint64_t delay_us, double loss, uint64_t seed)
{
	memset(p, 0, sizeof(*p));
	p->rng = seed ? seed : 1;
	p->crypto = dpq_crypto_create();
	p->cctx = mkctx(DPQ_TLS_CLIENT, calpn ? calpn : "hq-interop", suite,
			NULL, NULL);
	p->c2s.q = calloc(PAIR_QUEUE, sizeof(struct pair_dgram));
	p->s2c.q = calloc(PAIR_QUEUE, sizeof(struct pair_dgram));
	p->c2s.delay_us = p->s2c.delay_us = delay_us;
	p->c2s.loss = p->s2c.loss = loss;
	p->cconf.role = DPQ_ROLE_CLIENT;
	p->sconf.role = DPQ_ROLE_SERVER;
	p->now = 1000000;
	pair_addr4(&p->caddr, 198, 18, 0, 1, 40000);
	pair_addr4(&p->saddr, 198, 18, 0, 2, 4433);
}

void
pair_addr4(struct dpq_netaddr *a, uint8_t a0, uint8_t a1, uint8_t a2,
		uint8_t a3, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = a0;
	a->ip[1] = a1;
	a->ip[2] = a2;
	a->ip[3] = a3;
}

static void
pair_on_ticket(void *arg, struct dpq_conn *c, const uint8_t *data, size_t len,
		bool early)
{
	struct pair *p = arg;

	(void)c;
	if (len > sizeof(p->ticket))
		abort();
	memcpy(p->ticket, data, len);
	p->ticket_len = len;
	p->ticket_early = early;
}

void
pair_start(struct pair *p)
{
	struct dpq_conn_init in = { 0 };
	struct dpq_hs_direct_opts ho = { &p->copts, pair_on_ticket, p };

	p->sctx = mkctx(DPQ_TLS_SERVER, "hq-interop", 0, p->server_alpns,
			p->server_keylog);
	in.conf = &p->cconf;
	in.app = p->capp;
	in.app_ctx = p->capp_ctx;
	in.crypto = p->crypto;
	in.hs_ops = &dpq_hs_direct_ops;
	in.hs = p->cctx;
	in.scid.len = 8;
	in.dcid.len = 8;
	for (int i = 0; i < 8; i++) {
		in.scid.bytes[i] = (uint8_t)rnd(p);
		in.dcid.bytes[i] = (uint8_t)rnd(p);
	}
	in.now = p->now;
	in.tuple.local = p->caddr;
	in.tuple.peer = p->saddr;
	in.cid_ops = &pair_cid_ops;
	in.cid_arg = p;
	in.token = p->ctoken;
	in.token_len = p->ctoken_len;
	in.remembered_tp = p->ctp;
	in.remembered_tp_len = p->ctp_len;
	if (dpq_conn_create(&in, &p->client) != 0 ||
	    dpq_hs_direct_attach_opts(p->cctx, p->client, &ho) != 0)
		abort();
}

/* The asynchronous handshake service: CRYPTO bytes are queued and fed
 * to TLS server_hs_delay_us later, so keys, handshake bytes and the
 * handshake's completion reach the connection between datagrams. */
static int
async_recv(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	struct pair *p = hs;
	struct pair_hs_msg *m;

	if (p->hsq_tail - p->hsq_head >= PAIR_HS_QUEUE)
		return -ENOBUFS;
	m = &p->hsq[p->hsq_tail++ % PAIR_HS_QUEUE];
	m->at = p->now + p->server_hs_delay_us;
	m->c = c;
	m->epoch = epoch;
	m->len = len;
	m->data = malloc(len ? len : 1);
	if (m->data == NULL)
		abort();
	memcpy(m->data, data, len);
	return 0;
}

static void
async_release(void *hs, struct dpq_conn *c)
{
	struct pair *p = hs;

	for (unsigned int i = p->hsq_head; i != p->hsq_tail; i++)
		if (p->hsq[i % PAIR_HS_QUEUE].c == c)
			p->hsq[i % PAIR_HS_QUEUE].c = NULL;
	dpq_hs_direct_ops.release(NULL, c);
}

static const struct dpq_hs_ops async_hs_ops = {
	.recv = async_recv,
	.release = async_release,
};

/* Feed the handshake service's due deliveries; true if any. */
static bool
async_run(struct pair *p)
{
	bool any = false;

	while (p->hsq_head != p->hsq_tail &&
	       p->hsq[p->hsq_head % PAIR_HS_QUEUE].at <= p->now) {
		struct pair_hs_msg *m = &p->hsq[p->hsq_head++ % PAIR_HS_QUEUE];

		if (m->c != NULL)
			dpq_hs_direct_ops.recv(NULL, m->c, m->epoch, m->data,
					m->len);
		free(m->data);
		any = true;
	}
	return any;
}

/* Create the server from the client's first Initial. */
static void
make_server(struct pair *p, const uint8_t *d, size_t len,
		const struct dpq_tuple *t)
{
	struct dpq_conn_init in = { 0 };
	struct dpq_pkt_hdr h;

	if (dpq_pkt_parse(d, d + len, 8, &h) != 0 || h.type != DPQ_PKT_INITIAL)
		return;
	if (h.token_len <= sizeof(p->initial_token)) {
		memcpy(p->initial_token, h.token, h.token_len);
		p->initial_token_len = h.token_len;
	}
	in.conf = &p->sconf;
	if (p->server_budget != NULL) {
		p->server_state_mem = dpq_membudget_state_mem(p->server_budget);
		p->server_buf_mem = dpq_membudget_buf_mem(p->server_budget);
		in.mem = &p->server_state_mem;
		in.buf_mem = &p->server_buf_mem;
		in.budget = p->server_budget;
	}
	in.crypto = p->crypto;
	in.hs_ops = p->server_hs_delay_us ? &async_hs_ops : &dpq_hs_direct_ops;
	in.hs = p->server_hs_delay_us ? (void *)p : (void *)p->sctx;
	in.app = p->sapp;
	in.app_ctx = p->sapp_ctx;
	in.scid.len = 8;
	for (int i = 0; i < 8; i++)
		in.scid.bytes[i] = (uint8_t)rnd(p);
	dpq_cid_set(&in.dcid, h.dcid, h.dcid_len);
	dpq_cid_set(&in.peer_scid, h.scid, h.scid_len);
	for (int i = 0; i < 16; i++)
		in.reset_token[i] = (uint8_t)rnd(p);
	in.now = p->now;
	in.tuple = *t;
	in.cid_ops = &pair_cid_ops;
	in.cid_arg = p;
	{
		struct dpq_hs_direct_opts ho = { &p->sopts, NULL, NULL };

		if (dpq_conn_create(&in, &p->server) != 0 ||
		    dpq_hs_direct_attach_opts(p->sctx, p->server, &ho) != 0)
			abort();
	}
	if (p->strace != NULL)
		dpq_conn_set_trace(p->server, p->strace, p->strace_ctx);
}

static void
link_send(struct pair *p, struct pair_link *l, const uint8_t *d, size_t len,
		const struct dpq_netaddr *src, const struct dpq_netaddr *dst,
		uint8_t ecn)
{
	uint64_t idx = l->sent++;
	struct pair_dgram *g;

	l->bytes += len;
	if (idx < 64) {
		l->log_len[idx] = (uint16_t)len;
		l->log_first[idx] = len > 0 ? d[0] : 0;
	}
	if (l == &p->s2c && !dpq_netaddr_eq(dst, &p->caddr) &&
	    !(p->nat_on && dpq_netaddr_eq(dst, &p->nat))) {
		p->stray_dgrams++;
		p->stray_bytes += len;
		p->stray_last = *dst;
		return;
	}
	if (l->run != 0 && l->run_at == p->now) {
		l->run++;
	} else {
		l->run = 1;
		l->run_at = p->now;
	}
	if (l->run > l->max_run)
		l->max_run = l->run;
	if (l->drop_next) {
		l->drop_next = false;
		l->dropped++;
		return;
	}
	if (l->blackhole || (idx < 64 && (l->drop_mask >> idx) & 1) ||
	    (l->drop_from_len != 0 && len >= l->drop_from_len) ||
	    (l->loss > 0 && (double)(rnd(p) % 1000000) / 1e6 < l->loss) ||
	    l->tail - l->head >= PAIR_QUEUE) {
		l->dropped++;
		return;
	}
	g = &l->q[l->tail++ % PAIR_QUEUE];
	g->at = p->now + l->delay_us;
	g->len = (uint16_t)len;
	g->src = *src;
	g->dst = *dst;
	/* The NAT rewrites the client's source address. */
	if (l == &p->c2s && p->nat_on)
		g->src = p->nat;
	memcpy(g->data, d, len);
	/* The codepoint as the path leaves it (ECN bits: 2 ECT(0), 3 CE). */
	if (ecn == 2)
		l->ect0_seen++;
	if (l->ecn_bleach)
		ecn = 0;
	else if ((ecn == 1 || ecn == 2) && l->ce_permille != 0 &&
		 rnd(p) % 1000 < l->ce_permille) {
		ecn = 3;
		l->ce_marked++;
	}
	g->ecn = ecn;
}

static void
flush(struct pair *p, struct dpq_conn *c, struct pair_link *l)
{
	uint8_t buf[PAIR_MTU];
	struct dpq_seal_op ops[DPQ_CONN_MAX_SEAL_OPS];
	int guard = 0;

	if (c == NULL)
		return;
	/* dpq_conn_send() with the ECN codepoint kept. */
	while (guard++ < 10000) {
		struct dpq_tx_dgram d = { .buf = buf, .cap = sizeof(buf) };
		struct dpq_tuple to;

		if (dpq_conn_build_burst(c, &d, 1, ops, p->now) != 1)
			break;
		if (dpq_crypto_seal_burst(p->crypto, ops, d.nops) != d.nops)
			abort();
		dpq_conn_tx_done(c, p->now);
		to = d.tuple;
		/* An unset local address is the endpoint's own. */
		if (to.local.family == 0)
			to.local = c == p->client ? p->caddr : p->saddr;
		link_send(p, l, buf, d.len, &to.local, &to.peer, d.ecn);
	}
}

static void
server_recv(struct pair *p, uint8_t *d, size_t len,
		const struct dpq_netaddr *src, const struct dpq_netaddr *dst,
		uint8_t ecn)
{
	struct dpq_rx_info ri = { .tuple = { .local = *dst, .peer = *src },
		.ecn = ecn };

	/* As a listener does: a connection that ended is freed, and the
	 * next Initial makes another (server_respawn). */
	if (p->server_respawn && p->server != NULL && !p->rx_batch &&
	    p->hsq_head == p->hsq_tail &&
	    dpq_conn_state(p->server) == DPQ_CONN_CLOSED) {
		dpq_conn_destroy(p->server);
		p->server = NULL;
		p->server_respawns++;
	}
	if (p->server == NULL)
		make_server(p, d, len, &ri.tuple);
	if (p->server != NULL)
		dpq_conn_recv(p->server, d, len, &ri, p->now);
}

int
pair_inject_to_server(struct pair *p, const uint8_t *d, size_t len,
		const struct dpq_netaddr *src)
{
	struct dpq_rx_info ri = { .tuple = { .local = p->saddr, .peer = *src } };
	uint8_t buf[PAIR_MTU];

	if (p->server == NULL || len > sizeof(buf))
		return -1;
	memcpy(buf, d, len);
	p->c2s.bytes += len;
	return dpq_conn_recv(p->server, buf, len, &ri, p->now);
}

static bool
deliver(struct pair *p, struct pair_link *l, bool to_server)
{
	bool any = false;
	struct dpq_conn *batch = NULL;

	if (p->rx_batch) {
		batch = to_server ? p->server : p->client;
		dpq_conn_rx_begin(batch);
	}
	while (l->head != l->tail && l->q[l->head % PAIR_QUEUE].at <= p->now) {
		struct pair_dgram *g = &l->q[l->head++ % PAIR_QUEUE];

		any = true;
		l->delivered++;
		if (to_server) {
			server_recv(p, g->data, g->len, &g->src, &g->dst,
					g->ecn);
		} else if ((dpq_netaddr_eq(&g->dst, &p->caddr) &&
			    !p->nat_only) ||
			   (p->nat_on && dpq_netaddr_eq(&g->dst, &p->nat))) {
			/* Through the NAT, or straight to the client. */
			struct dpq_rx_info ri = { .tuple = {
				.local = p->caddr, .peer = g->src },
				.ecn = g->ecn };

			dpq_conn_recv(p->client, g->data, g->len, &ri, p->now);
		} else {
			l->dropped++;	/* the client left that address */
		}
	}
	/* The ring slots just read stay untouched until the next send. */
	dpq_conn_rx_end(batch);
	return any;
}

static uint64_t
min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

bool
pair_run(struct pair *p, bool (*done)(struct pair *, void *), void *arg,
		uint64_t max_us)
{
	uint64_t end = p->now + max_us;

	while (p->now < end) {
		uint64_t t, tc, ts, tl = UINT64_MAX;

		flush(p, p->client, &p->c2s);
		flush(p, p->server, &p->s2c);
		if (done != NULL && done(p, arg))
			return true;
		if (deliver(p, &p->c2s, true) | deliver(p, &p->s2c, false) |
		    async_run(p))
			continue;
		if (p->c2s.head != p->c2s.tail)
			tl = p->c2s.q[p->c2s.head % PAIR_QUEUE].at;
		if (p->s2c.head != p->s2c.tail &&
		    p->s2c.q[p->s2c.head % PAIR_QUEUE].at < tl)
			tl = p->s2c.q[p->s2c.head % PAIR_QUEUE].at;
		if (p->hsq_head != p->hsq_tail &&
		    p->hsq[p->hsq_head % PAIR_HS_QUEUE].at < tl)
			tl = p->hsq[p->hsq_head % PAIR_HS_QUEUE].at;
		tc = dpq_conn_next_timeout(p->client);
		ts = p->server ? dpq_conn_next_timeout(p->server) : UINT64_MAX;
		t = min3(tl, tc, ts);
		if (t == UINT64_MAX)
			return done == NULL;
		if (t > end) {
			/* Nothing before the end of this run: stop there,
			 * without firing later timers. */
			p->now = end;
			break;
		}
		if (t > p->now)
			p->now = t;
		if (p->now >= tc)
			dpq_conn_on_timeout(p->client, p->now);
		if (p->server && p->now >= ts)
			dpq_conn_on_timeout(p->server, p->now);
	}
	return done != NULL && done(p, arg);
}

void
pair_free(struct pair *p)
{
	dpq_conn_destroy(p->client);
	dpq_conn_destroy(p->server);
	while (p->hsq_head != p->hsq_tail)
		free(p->hsq[p->hsq_head++ % PAIR_HS_QUEUE].data);
	dpq_tls_ctx_destroy(p->sctx);
	dpq_tls_ctx_destroy(p->cctx);
	dpq_crypto_destroy(p->crypto);
	free(p->c2s.q);
	free(p->s2c.q);
}
