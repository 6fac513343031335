/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_conn keys in memory: a TLS KeyUpdate message is refused (RFC 9001
 * §6), stateless resets count only for CIDs in use (RFC 9000 §10.3.1).
 * White box: the tests play a misbehaving peer by sealing packets with a
 * connection's own keys (conn_int.h).
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
#include "dataplane/engine/frame.h"
#include "dataplane/quic/conn_int.h"

static bool
both_confirmed(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL &&
		dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

static bool
both_closed(struct pair *p, void *arg)
{
	(void)arg;
	return dpq_conn_state(p->client) == DPQ_CONN_CLOSED &&
		dpq_conn_state(p->server) == DPQ_CONN_CLOSED;
}

static void
start_pair(struct pair *p, uint64_t seed)
{
	pair_init(p, 0, NULL, 5000, 0, seed);
	p->cconf.key_update_gap_us = p->sconf.key_update_gap_us = 1;
	/* These tests send NEW_CONNECTION_ID frames of their own, with
	 * sequence numbers 1 and 2: the server issues none. */
	p->no_cids = true;
	pair_start(p);
	assert_true(pair_run(p, both_confirmed, NULL, 5000000));
	pair_run(p, NULL, NULL, 200000);	/* settle: acks, HANDSHAKE_DONE */
}

/* A 1-RTT packet from `from` to `to` holding frames, sealed with key
 * (NULL: from's current write key) under key phase bit phase (-1: from's)
 * and packet number pn (UINT64_MAX: from's next one). */
static size_t
seal_1rtt(struct pair *p, struct dpq_conn *from, uint8_t *pkt,
		const uint8_t *frames, size_t len, const struct dpq_pp_key *key,
		int phase, uint64_t pn)
{
	struct dpq_seal_op op = { 0 };
	uint8_t *q;

	if (pn == UINT64_MAX)
		pn = from->b->pns[DPQ_PN_SPACE_APP].next_pn++;
	assert_true(len + 64 < PAIR_MTU);
	q = dpq_pkt_write_short(pkt, pkt + PAIR_MTU, from->dcid.bytes,
			from->dcid.len, false,
			phase < 0 ? from->key_phase : phase, pn, 4);
	assert_non_null(q);
	memcpy(q, frames, len);
	op.key = key ? key : from->tx[DPQ_EPOCH_1RTT];
	op.pkt = pkt;
	op.pn = pn;
	op.pn_len = 4;
	op.pn_offset = (uint16_t)(q - 4 - pkt);
	op.len = (uint16_t)(q + len - pkt);
	assert_int_equal(dpq_crypto_seal_burst(p->crypto, &op, 1), 1);
	return op.len + DPQ_CRYPTO_TAG_LEN;
}

/* Deliver frames to `to` in a 1-RTT packet that `from` seals with its
 * current keys and next packet number, as if it had built it. `from`
 * then owes a PING so that its loss recovery has sent a packet above
 * the one the peer will acknowledge. Returns dpq_conn_recv's result. */
static int
inject(struct pair *p, struct dpq_conn *from, struct dpq_conn *to,
		const uint8_t *frames, size_t len)
{
	uint8_t pkt[PAIR_MTU];
	size_t n = seal_1rtt(p, from, pkt, frames, len, NULL, -1, UINT64_MAX);

	from->ping_pending = true;
	return dpq_conn_recv(to, pkt, n, NULL, p->now);
}

/* ---- TLS KeyUpdate (RFC 9001 §6) --------------------------------------- */

/* A CRYPTO frame at offset off of the 1-RTT CRYPTO stream. */
static size_t
crypto_frame(uint8_t *buf, size_t cap, uint64_t off, const uint8_t *d,
		size_t len)
{
	struct dpq_frame f = { .type = DPQ_FT_CRYPTO };
	uint8_t *q;

	f.crypto.offset = off;
	f.crypto.len = len;
	f.crypto.data = d;
	q = dpq_frame_encode(buf, buf + cap, &f);
	assert_non_null(q);
	return (size_t)(q - buf);
}

/* The peer sends a TLS KeyUpdate in a 1-RTT CRYPTO frame; the receiver
 * must close with 0x010a (CRYPTO_ERROR, unexpected_message), not hand it
 * to TLS and go on with replaced read keys. */
static void
run_tls_key_update(bool to_client)
{
	static const uint8_t ku[] = { 24, 0, 0, 1, 1 };
	struct pair p;
	struct dpq_conn *from, *to;
	const struct dpq_conn_close_info *ci;
	uint8_t frames[128];
	uint64_t off;
	size_t n;

	start_pair(&p, to_client ? 41 : 42);
	from = to_client ? p.server : p.client;
	to = to_client ? p.client : p.server;
	off = from->cs[DPQ_EPOCH_1RTT]->sb.sent_off;
	assert_int_equal(to->cs[DPQ_EPOCH_1RTT]->rb.read_off, off);
	if (to_client) {
		/* A NewSessionTicket first (RFC 8446 §4.6.1): the client
		 * must follow its framing to find the KeyUpdate after it. */
		static const uint8_t nst[] = { 4, 0, 0, 18,
			0, 0, 0, 60, 0, 0, 0, 0, 1, 0,
			0, 4, 0xde, 0xad, 0xbe, 0xef, 0, 0 };

		n = crypto_frame(frames, sizeof(frames), off, nst,
				sizeof(nst));
		assert_int_equal(inject(&p, from, to, frames, n), 1);
		assert_int_equal(dpq_conn_state(to), DPQ_CONN_ESTABLISHED);
		off += sizeof(nst);
	}
	n = crypto_frame(frames, sizeof(frames), off, ku, sizeof(ku));
	inject(&p, from, to, frames, n);
	assert_int_equal(dpq_conn_state(to), DPQ_CONN_CLOSING);
	ci = dpq_conn_close_info(to);
	assert_false(ci->remote);
	assert_false(ci->app);
	assert_int_equal(ci->error_code, 0x10a);
	/* The close reaches the peer: the read keys were left alone. */
	assert_true(pair_run(&p, both_closed, NULL, 10000000));
	ci = dpq_conn_close_info(from);
	assert_true(ci->remote);
	assert_int_equal(ci->error_code, 0x10a);
	pair_free(&p);
}

static void
test_tls_key_update(void **state)
{
	(void)state;
	run_tls_key_update(false);	/* client -> server */
	run_tls_key_update(true);	/* server -> client */
}

/* ---- stateless reset (RFC 9000 §10.3.1) -------------------------------- */

/* A stateless reset of 43 bytes ending in token: a short header's first
 * byte, unpredictable bytes, the token. */
static bool
reset_closes(struct pair *p, struct dpq_conn *c, const uint8_t *token)
{
	uint8_t d[43];

	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 37 + 11);
	d[0] = 0x40 | (d[0] & 0x3f);
	memcpy(d + sizeof(d) - DPQ_RESET_TOKEN_LEN, token,
			DPQ_RESET_TOKEN_LEN);
	dpq_conn_recv(c, d, sizeof(d), NULL, p->now);
	return dpq_conn_state(c) == DPQ_CONN_DRAINING;
}

static size_t
new_cid_frame(uint8_t *buf, size_t cap, uint64_t seq, uint64_t rpt,
		uint8_t fill, const uint8_t *token)
{
	static uint8_t cids[4][8];
	struct dpq_frame f = { .type = DPQ_FT_NEW_CONNECTION_ID };
	uint8_t *q;

	memset(cids[seq % 4], fill, 8);
	f.new_cid.seq = seq;
	f.new_cid.retire_prior_to = rpt;
	f.new_cid.cid_len = 8;
	f.new_cid.cid = cids[seq % 4];
	f.new_cid.reset_token = token;
	q = dpq_frame_encode(buf, buf + cap, &f);
	assert_non_null(q);
	return (size_t)(q - buf);
}

/* The token of the CID in use ends the connection (the baseline). */
static void
test_reset_current_cid(void **state)
{
	struct pair p;
	uint8_t wrong[DPQ_RESET_TOKEN_LEN];

	(void)state;
	start_pair(&p, 43);
	memcpy(wrong, p.server->reset_token, sizeof(wrong));
	wrong[15] ^= 1;
	assert_false(reset_closes(&p, p.client, wrong));
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_ESTABLISHED);
	assert_true(reset_closes(&p, p.client, p.server->reset_token));
	assert_string_equal(dpq_conn_close_info(p.client)->reason,
			"stateless reset");
	pair_free(&p);
}

/* A CID the peer issued but we never sent with: its token must not end
 * the connection (RFC 9000 §10.3.1). */
static void
test_reset_unused_cid(void **state)
{
	struct pair p;
	uint8_t t1[DPQ_RESET_TOKEN_LEN], frames[128];
	size_t n;

	(void)state;
	start_pair(&p, 44);
	memset(t1, 0xa1, sizeof(t1));
	n = new_cid_frame(frames, sizeof(frames), 1, 0, 0x11, t1);
	assert_int_equal(inject(&p, p.server, p.client, frames, n), 1);
	assert_false(reset_closes(&p, p.client, t1));
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_ESTABLISHED);
	/* The one in use still works. */
	assert_true(reset_closes(&p, p.client, p.server->reset_token));
	pair_free(&p);
}

/* A retired CID's token must not end the connection; the token of the
 * CID we switched to does. */
static void
test_reset_retired_cid(void **state)
{
	struct pair p;
	uint8_t t1[DPQ_RESET_TOKEN_LEN], t2[DPQ_RESET_TOKEN_LEN];
	uint8_t frames[128], t0[DPQ_RESET_TOKEN_LEN];
	size_t n;

	(void)state;
	start_pair(&p, 45);
	memcpy(t0, p.server->reset_token, sizeof(t0));
	memset(t1, 0xa1, sizeof(t1));
	memset(t2, 0xa2, sizeof(t2));
	n = new_cid_frame(frames, sizeof(frames), 1, 0, 0x11, t1);
	/* seq 2 retires 0 and 1: the client moves to seq 2. */
	n += new_cid_frame(frames + n, sizeof(frames) - n, 2, 2, 0x22, t2);
	assert_int_equal(inject(&p, p.server, p.client, frames, n), 1);
	assert_int_equal(dpq_conn_dcid(p.client)->bytes[0], 0x22);
	assert_false(reset_closes(&p, p.client, t0));
	assert_false(reset_closes(&p, p.client, t1));
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_ESTABLISHED);
	assert_true(reset_closes(&p, p.client, t2));
	pair_free(&p);
}

/* ---- key update (RFC 9001 §6) ---------------------------------------- */

/* The server echoes; the client sends size bytes on one stream and checks
 * what comes back. */
struct xfer {
	size_t size, written, got;
	uint64_t id;
	bool fin, bad, open;
};

static uint8_t
pat(size_t off)
{
	return (uint8_t)(off * 131 + (off >> 9));
}

/* The echo server holds what the stream could not take yet and reads
 * no more until it went out: its send buffer stays bounded. */
struct echo {
	uint8_t buf[16384];
	size_t off, len;
	bool fin, fin_sent;
};

static void
echo_data(struct dpq_conn *c, uint64_t id)
{
	struct echo *e = dpq_conn_app_ctx(c);
	ssize_t n;

	for (;;) {
		if (e->off < e->len) {
			n = dpq_conn_stream_write(c, id, e->buf + e->off,
					e->len - e->off, false);
			assert_true(n >= 0);
			e->off += (size_t)n;
			if (e->off < e->len)
				return;	/* on_stream_writable goes on */
		}
		if (e->fin) {
			if (!e->fin_sent)
				assert_int_equal(dpq_conn_stream_write(c, id,
						NULL, 0, true), 0);
			e->fin_sent = true;
			return;
		}
		n = dpq_conn_stream_read(c, id, e->buf, sizeof(e->buf),
				&e->fin);
		assert_true(n >= 0);
		e->off = 0;
		e->len = (size_t)n;
		if (n == 0 && !e->fin)
			return;
	}
}

static const struct dpq_app_ops echo_app = {
	.on_stream_data = echo_data,
	.on_stream_writable = echo_data,
};

static void
xfer_write(struct dpq_conn *c, uint64_t id)
{
	struct xfer *x = dpq_conn_app_ctx(c);
	uint8_t buf[8192];

	(void)id;
	while (x->open && x->written < x->size) {
		size_t n = x->size - x->written;
		ssize_t w;

		if (n > sizeof(buf))
			n = sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = pat(x->written + k);
		w = dpq_conn_stream_write(c, x->id, buf, n,
				x->written + n == x->size);
		if (w <= 0)
			return;
		x->written += (size_t)w;
	}
}

static void
xfer_established(struct dpq_conn *c, const char *alpn)
{
	struct xfer *x = dpq_conn_app_ctx(c);

	(void)alpn;
	assert_int_equal(dpq_conn_stream_open(c, false, &x->id), 0);
	x->open = true;
	xfer_write(c, x->id);
}

static void
xfer_data(struct dpq_conn *c, uint64_t id)
{
	struct xfer *x = dpq_conn_app_ctx(c);
	uint8_t buf[16384];
	bool fin = false;
	ssize_t n;

	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		for (ssize_t k = 0; k < n; k++)
			x->bad |= buf[k] != pat(x->got + (size_t)k);
		if (n > 0)
			x->got += (size_t)n;
		x->fin |= fin;
	} while (n > 0 && !fin);
}

static const struct dpq_app_ops xfer_app = {
	.on_established = xfer_established,
	.on_stream_data = xfer_data,
	.on_stream_writable = xfer_write,
};

static bool
xfer_done(struct pair *p, void *arg)
{
	struct xfer *x = arg;

	(void)p;
	return x->fin;
}

static struct echo echo_state;

static void
xfer_setup(struct pair *p, struct xfer *x, uint16_t suite, size_t size,
		uint64_t delay, double loss, uint64_t seed)
{
	memset(x, 0, sizeof(*x));
	memset(&echo_state, 0, sizeof(echo_state));
	x->size = size;
	pair_init(p, suite, NULL, delay, loss, seed);
	p->capp = &xfer_app;
	p->capp_ctx = x;
	p->sapp = &echo_app;
	p->sapp_ctx = &echo_state;
	/* Virtual time: no need for the 1 s floor between updates. */
	p->cconf.key_update_gap_us = p->sconf.key_update_gap_us = 1;
}

static void
xfer_check(struct pair *p, struct xfer *x)
{
	assert_true(x->fin);
	assert_false(x->bad);
	assert_int_equal(x->got, x->size);
	assert_int_equal(dpq_conn_state(p->client), DPQ_CONN_ESTABLISHED);
	assert_int_equal(dpq_conn_state(p->server), DPQ_CONN_ESTABLISHED);
}

/* Many key updates during one long transfer, started by the client, by
 * the server, or by both; each followed by the other side, every byte
 * echoed intact. */
static void
run_many_updates(uint16_t suite, uint64_t cint, uint64_t sint, double loss,
		uint64_t seed)
{
	struct dpq_conn_stats cs, ss;
	struct pair p;
	struct xfer x;
	uint64_t gc, gs;

	xfer_setup(&p, &x, suite, 8 << 20, 2000, loss, seed);
	/* The link has no bandwidth limit: 64 KiB windows make the
	 * transfer last ~130 round trips, time for many updates (each
	 * waits three PTOs after the previous one was confirmed). */
	p.cconf.max_stream_data = p.cconf.max_stream_data_max = 64 << 10;
	p.sconf.max_stream_data = p.sconf.max_stream_data_max = 64 << 10;
	p.cconf.key_update_pkts = cint;
	p.sconf.key_update_pkts = sint;
	p.cconf.max_ack_delay_ms = p.sconf.max_ack_delay_ms = 2;
	pair_start(&p);
	assert_true(pair_run(&p, xfer_done, &x, 600000000));
	xfer_check(&p, &x);
	dpq_conn_get_stats(p.client, &cs);
	dpq_conn_get_stats(p.server, &ss);
	print_message("    suite %04x every %lu/%lu pkts: client %lu+%lu "
			"server %lu+%lu updates, %lu+%lu packets\n", suite,
			(unsigned long)cint, (unsigned long)sint,
			(unsigned long)cs.key_updates,
			(unsigned long)cs.key_updates_peer,
			(unsigned long)ss.key_updates,
			(unsigned long)ss.key_updates_peer,
			(unsigned long)cs.pkts_sent,
			(unsigned long)ss.pkts_sent);
	/* Both sides are at the same key generation (give or take the
	 * last update, still on its way); an update that both started at
	 * once counts as each one's own. */
	gc = cs.key_updates + cs.key_updates_peer;
	gs = ss.key_updates + ss.key_updates_peer;
	assert_true(gc + 1 >= gs && gs + 1 >= gc);
	assert_true(gc >= 10);
	assert_int_equal(gc, p.client->ku.tx_gen);
	/* No packet was lost to a wrong key. */
	assert_int_equal(cs.auth_failures, 0);
	assert_int_equal(ss.auth_failures, 0);
	if (!cint) {
		assert_int_equal(cs.key_updates, 0);
		assert_true(ss.key_updates >= 10);
	}
	if (!sint) {
		assert_int_equal(ss.key_updates, 0);
		assert_true(cs.key_updates >= 10);
	}
	pair_free(&p);
}

static void
test_many_updates(void **state)
{
	(void)state;
	run_many_updates(0, 200, 0, 0, 50);	/* the client starts them */
	run_many_updates(0, 0, 200, 0, 51);	/* the server does */
	run_many_updates(0, 150, 230, 0, 52);	/* both, crossing */
	run_many_updates(0x1303, 200, 200, 0, 53);	/* ChaCha20 */
	run_many_updates(0x1302, 200, 200, 0.02, 54);	/* lossy */
}

/* Open one-packet datagrams the way a shard does (dataplane/shard/
 * shard.c): header protection off for all, a key chosen for each, one
 * AEAD burst, then each processed in order. Returns packets accepted. */
static int
batch_recv(struct pair *p, struct dpq_conn *c, uint8_t *const *d,
		const size_t *len, unsigned int n)
{
	struct dpq_open_op ops[8];
	struct dpq_pkt_hdr h[8];
	int ok = 0;

	assert_true(n <= 8);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(dpq_conn_rx_prepare(c, d[i], len[i], &h[i],
				&ops[i]), 0);
	dpq_crypto_unprotect_hp_burst(p->crypto, ops, (uint16_t)n);
	for (unsigned int i = 0; i < n; i++)
		dpq_conn_rx_select_key(c, &h[i], &ops[i]);
	dpq_crypto_open_burst(p->crypto, ops, (uint16_t)n);
	for (unsigned int i = 0; i < n; i++) {
		if (ops[i].status != 0)
			dpq_conn_rx_failed(c, d[i], len[i], p->now);
		else if (dpq_conn_rx_process(c, &h[i], &ops[i], len[i], NULL,
				p->now) == 0)
			ok++;
	}
	return ok;
}

/* Let a pair run long enough that a key update is allowed (the current
 * keys acknowledged, three PTOs passed). */
static void
start_pair_ku(struct pair *p, uint64_t seed)
{
	start_pair(p, seed);
	/* An ack-eliciting packet each way, acknowledged. */
	p->client->ping_pending = p->server->ping_pending = true;
	pair_run(p, NULL, NULL, 1000000);
	assert_int_equal(dpq_conn_state(p->client), DPQ_CONN_ESTABLISHED);
	assert_true(p->client->ku.confirmed_at != UINT64_MAX);
	assert_true(p->server->ku.confirmed_at != UINT64_MAX);
}

/* One datagram of client stream data, built and sealed, not delivered. */
static size_t
client_dgram(struct pair *p, uint64_t id, uint8_t *buf)
{
	static const uint8_t data[1000];
	ssize_t n;

	assert_int_equal(dpq_conn_stream_write(p->client, id, data,
			sizeof(data), false), (ssize_t)sizeof(data));
	n = dpq_conn_send(p->client, buf, PAIR_MTU, NULL, p->now);
	assert_true(n > 0);
	return (size_t)n;
}

/* Reordering across a key phase: packets sealed before an update arrive
 * after the first one sealed after it, and are opened with the previous
 * keys; three PTOs later those keys are gone and a late packet of the
 * old phase is dropped. batch: the server opens like a shard. */
static void
run_reorder(bool batch)
{
	static uint8_t d[3][PAIR_MTU];
	uint8_t *dp[2] = { d[2], d[1] };
	struct dpq_conn_stats ss;
	size_t len[3], lp[2];
	struct pair p;
	uint64_t id;

	start_pair_ku(&p, batch ? 60 : 61);
	assert_int_equal(dpq_conn_stream_open(p.client, false, &id), 0);
	len[0] = client_dgram(&p, id, d[0]);
	len[1] = client_dgram(&p, id, d[1]);
	assert_int_equal(dpq_conn_key_update(p.client), 0);
	len[2] = client_dgram(&p, id, d[2]);
	assert_int_equal(p.client->key_phase, 1);
	assert_int_equal(p.client->b->stats.key_updates, 1);

	/* The new phase first, then one from before the update. */
	lp[0] = len[2];
	lp[1] = len[1];
	if (batch) {
		assert_int_equal(batch_recv(&p, p.server, dp, lp, 2), 2);
	} else {
		assert_int_equal(dpq_conn_recv(p.server, d[2], len[2], NULL, p.now),
				1);
		assert_int_equal(dpq_conn_recv(p.server, d[1], len[1], NULL, p.now),
				1);
	}
	assert_int_equal(p.server->ku.rx_gen, 1);
	assert_int_equal(p.server->ku.tx_gen, 1);	/* followed (§6.2) */
	assert_int_equal(p.server->b->stats.key_updates_peer, 1);
	assert_non_null(p.server->ku.rx_prev);
	dpq_conn_get_stats(p.server, &ss);
	assert_int_equal(ss.stream_bytes_recv, 2000);

	/* Three PTOs later the previous keys are dropped... */
	assert_true(dpq_conn_next_timeout(p.server) <=
			p.now + 3 * dpq_conn_pto(p.server));
	p.now += 3 * dpq_conn_pto(p.server) + 1;
	dpq_conn_on_timeout(p.server, p.now);
	assert_null(p.server->ku.rx_prev);
	/* ...and the oldest packet no longer opens. */
	assert_int_equal(dpq_conn_recv(p.server, d[0], len[0], NULL, p.now), 0);
	dpq_conn_get_stats(p.server, &ss);
	assert_int_equal(ss.stream_bytes_recv, 2000);
	assert_int_equal(ss.auth_failures, 1);
	assert_int_equal(dpq_conn_state(p.server), DPQ_CONN_ESTABLISHED);
	/* Recovery sends its data again under the new keys: all 3000
	 * bytes are readable in order (stream_bytes_recv would also count
	 * bytes that arrived twice). */
	pair_run(&p, NULL, NULL, 2000000);
	{
		static uint8_t rbuf[4096];
		bool fin = false;

		assert_int_equal(dpq_conn_stream_read(p.server, id, rbuf,
				sizeof(rbuf), &fin), 3000);
	}
	assert_int_equal(dpq_conn_state(p.server), DPQ_CONN_ESTABLISHED);
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_ESTABLISHED);
	pair_free(&p);
}

static void
test_reorder_across_phase(void **state)
{
	(void)state;
	run_reorder(false);
	run_reorder(true);
}

/* Keys of generation gen of the client's write secret, made by the test
 * (a peer that misbehaves). */
static struct dpq_pp_key *
client_gen_key(struct pair *p, unsigned int gen)
{
	struct dpq_pp_key *k = aligned_alloc(64, sizeof(*k));
	struct dpq_pp_key *t = aligned_alloc(64, sizeof(*t));

	assert_non_null(k);
	assert_non_null(t);
	memcpy(k, p->client->tx[DPQ_EPOCH_1RTT], sizeof(*k));
	k->hp_chacha = NULL;	/* AES suites here: no handle to share */
	for (unsigned int i = 0; i < gen; i++) {
		assert_int_equal(dpq_pp_key_update(p->crypto, t, k), 0);
		dpq_pp_key_destroy(k);
		memcpy(k, t, sizeof(*k));
	}
	free(t);
	return k;
}

/* A PING from the client sealed with key k, phase bit, packet number. */
static int
client_ping(struct pair *p, const struct dpq_pp_key *k, int phase,
		uint64_t pn)
{
	static const uint8_t ping[] = { 0x01 };
	uint8_t pkt[PAIR_MTU];
	size_t n = seal_1rtt(p, p->client, pkt, ping, 1, k, phase, pn);

	return dpq_conn_recv(p->server, pkt, n, NULL, p->now);
}

static void
expect_key_update_error(struct pair *p)
{
	const struct dpq_conn_close_info *ci = dpq_conn_close_info(p->server);

	assert_int_equal(dpq_conn_state(p->server), DPQ_CONN_CLOSING);
	assert_false(ci->remote);
	assert_int_equal(ci->error_code, 0x0e);	/* KEY_UPDATE_ERROR */
}

/* RFC 9001 §6.5: a peer that updates again before we acknowledged a
 * packet of its previous update gets KEY_UPDATE_ERROR; once we did, the
 * second update is followed. */
static void
test_peer_updates_too_fast(void **state)
{
	for (int acked = 0; acked < 2; acked++) {
		struct dpq_pp_key *k1, *k2;
		uint8_t buf[PAIR_MTU];
		struct pair p;
		uint64_t pn;

		(void)state;
		start_pair_ku(&p, 70 + (uint64_t)acked);
		k1 = client_gen_key(&p, 1);
		k2 = client_gen_key(&p, 2);
		pn = p.client->b->pns[DPQ_PN_SPACE_APP].next_pn + 10;
		assert_int_equal(client_ping(&p, k1, 1, pn), 1);
		assert_int_equal(p.server->ku.rx_gen, 1);
		assert_int_equal(p.server->b->stats.key_updates_peer, 1);
		if (acked) {
			/* The server acknowledges the update (in the new
			 * keys) once its ACK delay passed. */
			p.now += 30000;
			assert_true(dpq_conn_send(p.server, buf, sizeof(buf), NULL,
					p.now) > 0);
			assert_false(p.server->ku.rx_unacked);
		}
		client_ping(&p, k2, 0, pn + 1);
		if (acked) {
			assert_int_equal(dpq_conn_state(p.server),
					DPQ_CONN_ESTABLISHED);
			assert_int_equal(p.server->ku.rx_gen, 2);
			assert_int_equal(p.server->ku.tx_gen, 2);
			assert_int_equal(p.server->b->stats.key_updates_peer, 2);
		} else {
			expect_key_update_error(&p);
		}
		dpq_pp_key_destroy(k1);
		dpq_pp_key_destroy(k2);
		free(k1);
		free(k2);
		pair_free(&p);
	}
}

/* RFC 9001 §6.4: higher packet numbers never use older keys. A packet of
 * the new phase below one of the old phase, or (opened in one burst) an
 * old-phase packet above the first new-phase one: KEY_UPDATE_ERROR. */
static void
test_key_phase_order(void **state)
{
	static uint8_t d[2][PAIR_MTU];
	static const uint8_t ping[] = { 0x01 };
	uint8_t *dp[2] = { d[0], d[1] };
	struct dpq_pp_key *k1;
	size_t len[2];
	struct pair p;
	uint64_t pn;

	(void)state;
	start_pair_ku(&p, 80);
	k1 = client_gen_key(&p, 1);
	pn = p.client->b->pns[DPQ_PN_SPACE_APP].next_pn + 10;
	assert_int_equal(client_ping(&p, p.client->tx[DPQ_EPOCH_1RTT], 0,
			pn + 5), 1);
	client_ping(&p, k1, 1, pn);
	expect_key_update_error(&p);
	pair_free(&p);

	start_pair_ku(&p, 81);
	dpq_pp_key_destroy(k1);
	free(k1);
	k1 = client_gen_key(&p, 1);
	pn = p.client->b->pns[DPQ_PN_SPACE_APP].next_pn + 10;
	len[0] = seal_1rtt(&p, p.client, d[0], ping, 1, k1, 1, pn);
	len[1] = seal_1rtt(&p, p.client, d[1], ping, 1,
			p.client->tx[DPQ_EPOCH_1RTT], 0, pn + 1);
	assert_int_equal(batch_recv(&p, p.server, dp, len, 2), 1);
	expect_key_update_error(&p);
	dpq_pp_key_destroy(k1);
	free(k1);
	pair_free(&p);
}

/* Without a gap set, updates we start are at least 1 s apart (besides
 * three PTOs): a 40 ms RTT transfer of ~5 s gets a few, not dozens. */
static void
test_update_gap(void **state)
{
	struct dpq_conn_stats cs, ss;
	struct pair p;
	struct xfer x;
	uint64_t t0, secs;

	(void)state;
	xfer_setup(&p, &x, 0, 8 << 20, 20000, 0, 95);
	p.cconf.key_update_gap_us = 0;		/* the default, 1 s */
	p.cconf.key_update_pkts = 100;
	p.cconf.max_stream_data = p.cconf.max_stream_data_max = 64 << 10;
	p.sconf.max_stream_data = p.sconf.max_stream_data_max = 64 << 10;
	t0 = p.now;
	pair_start(&p);
	assert_true(pair_run(&p, xfer_done, &x, 600000000));
	xfer_check(&p, &x);
	secs = (p.now - t0) / 1000000;
	dpq_conn_get_stats(p.client, &cs);
	dpq_conn_get_stats(p.server, &ss);
	print_message("    %lu s: %lu updates\n", (unsigned long)secs,
			(unsigned long)cs.key_updates);
	assert_true(secs >= 3);
	assert_true(cs.key_updates >= 2);
	assert_true(cs.key_updates <= secs + 1);
	assert_int_equal(ss.key_updates_peer, cs.key_updates);
	pair_free(&p);
}

/* RFC 9001 §6.6, confidentiality: with a limit of 2000 packets per key,
 * updates start on their own before it and the transfer completes. */
static void
test_confidentiality_limit_updates(void **state)
{
	struct dpq_conn_stats cs, ss;
	struct pair p;
	struct xfer x;

	(void)state;
	xfer_setup(&p, &x, 0, 8 << 20, 2000, 0, 90);
	p.cconf.aead_conf_limit = p.sconf.aead_conf_limit = 2000;
	p.cconf.max_stream_data = p.cconf.max_stream_data_max = 64 << 10;
	p.sconf.max_stream_data = p.sconf.max_stream_data_max = 64 << 10;
	pair_start(&p);
	assert_true(pair_run(&p, xfer_done, &x, 600000000));
	xfer_check(&p, &x);
	dpq_conn_get_stats(p.client, &cs);
	dpq_conn_get_stats(p.server, &ss);
	assert_true(cs.key_updates + ss.key_updates >= 3);
	assert_true(p.client->ku.tx_pkts < 2000);
	assert_true(p.server->ku.tx_pkts < 2000);
	pair_free(&p);
}

/* §6.6: a key whose update never gets confirmed (the peer acknowledges
 * nothing) is not used up to the limit: AEAD_LIMIT_REACHED first. */
static void
test_confidentiality_limit_close(void **state)
{
	struct pair p;
	uint8_t buf[PAIR_MTU];
	uint64_t id;

	(void)state;
	pair_init(&p, 0, NULL, 5000, 0, 91);
	p.cconf.aead_conf_limit = 64;
	pair_start(&p);
	assert_true(pair_run(&p, both_confirmed, NULL, 5000000));
	/* As if 63 packets went out unacknowledged under these keys. */
	p.client->ku.tx_pkts = 63;
	p.client->ku.confirmed_at = UINT64_MAX;
	assert_int_equal(dpq_conn_stream_open(p.client, false, &id), 0);
	assert_int_equal(dpq_conn_stream_write(p.client, id, "x", 1, false),
			1);
	assert_true(dpq_conn_send(p.client, buf, sizeof(buf), NULL, p.now) > 0);
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_CLOSING);
	assert_int_equal(dpq_conn_close_info(p.client)->error_code, 0x0f);
	assert_true(pair_run(&p, both_closed, NULL, 10000000));
	assert_int_equal(dpq_conn_close_info(p.server)->error_code, 0x0f);
	assert_true(dpq_conn_close_info(p.server)->remote);
	pair_free(&p);
}

/* §6.6, integrity: past the limit of packets that fail to open, the
 * connection closes with AEAD_LIMIT_REACHED. */
static void
test_integrity_limit(void **state)
{
	struct pair p;
	uint8_t junk[100];

	(void)state;
	pair_init(&p, 0, NULL, 5000, 0, 92);
	p.sconf.aead_integ_limit = 5;
	pair_start(&p);
	assert_true(pair_run(&p, both_confirmed, NULL, 5000000));
	for (int i = 0; i < 6; i++) {
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)(k * 13 + (size_t)i * 7);
		junk[0] = 0x40 | (junk[0] & 0x3f);
		memcpy(junk + 1, dpq_conn_scid(p.server)->bytes, 8);
		assert_int_equal(dpq_conn_recv(p.server, junk, sizeof(junk), NULL,
				p.now), 0);
		assert_int_equal(dpq_conn_state(p.server), i < 5 ?
				DPQ_CONN_ESTABLISHED : DPQ_CONN_CLOSING);
	}
	assert_int_equal(dpq_conn_close_info(p.server)->error_code, 0x0f);
	assert_true(pair_run(&p, both_closed, NULL, 10000000));
	assert_int_equal(dpq_conn_close_info(p.client)->error_code, 0x0f);
	pair_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_key_update),
		cmocka_unit_test(test_reset_current_cid),
		cmocka_unit_test(test_reset_unused_cid),
		cmocka_unit_test(test_reset_retired_cid),
		cmocka_unit_test(test_many_updates),
		cmocka_unit_test(test_update_gap),
		cmocka_unit_test(test_reorder_across_phase),
		cmocka_unit_test(test_peer_updates_too_fast),
		cmocka_unit_test(test_key_phase_order),
		cmocka_unit_test(test_confidentiality_limit_updates),
		cmocka_unit_test(test_confidentiality_limit_close),
		cmocka_unit_test(test_integrity_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
