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
	pair_start(p);
	assert_true(pair_run(p, both_confirmed, NULL, 5000000));
	pair_run(p, NULL, NULL, 200000);	/* settle: acks, HANDSHAKE_DONE */
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
	struct dpq_seal_op op = { 0 };
	uint64_t pn = from->pns[DPQ_PN_SPACE_APP].next_pn++;
	uint8_t *q;

	assert_true(len + 64 < sizeof(pkt));
	q = dpq_pkt_write_short(pkt, pkt + sizeof(pkt), from->dcid.bytes,
			from->dcid.len, false, from->key_phase, pn, 4);
	assert_non_null(q);
	memcpy(q, frames, len);
	op.key = from->tx[DPQ_EPOCH_1RTT];
	op.pkt = pkt;
	op.pn = pn;
	op.pn_len = 4;
	op.pn_offset = (uint16_t)(q - 4 - pkt);
	op.len = (uint16_t)(q + len - pkt);
	assert_int_equal(dpq_crypto_seal_burst(p->crypto, &op, 1), 1);
	from->ping_pending = true;
	return dpq_conn_recv(to, pkt, op.len + DPQ_CRYPTO_TAG_LEN, p->now);
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
	off = from->cs[DPQ_EPOCH_1RTT].sb.sent_off;
	assert_int_equal(to->cs[DPQ_EPOCH_1RTT].rb.read_off, off);
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
	dpq_conn_recv(c, d, sizeof(d), p->now);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_key_update),
		cmocka_unit_test(test_reset_current_cid),
		cmocka_unit_test(test_reset_unused_cid),
		cmocka_unit_test(test_reset_retired_cid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
