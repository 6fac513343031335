/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * End to end: two real dpq_conn (client and server) on this thread, the
 * shard, exchanging datagrams in memory (dpq_conn_send / dpq_conn_recv),
 * their handshakes served by the management thread (control/mgmt on its
 * own pthread) over the rings, through dataplane/shard/hs_ring. Real
 * clock; every wait bounded. Needs EAL (--no-huge).
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

#include <cmocka.h>

#include <rte_eal.h>

#include "control/mgmt/mgmt.h"
#include "dataplane/crypto/crypto.h"
#include "dataplane/engine/packet.h"
#include "dataplane/quic/conn.h"
#include "dataplane/shard/hs_ring.h"

#define MTU 1500
#define QLEN 256

static struct dpq_tls_ctx *sctx, *cctx;

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct dgq {
	uint8_t d[QLEN][MTU];
	uint16_t len[QLEN];
	unsigned int head, tail;
};

/* The shard's connection table: slot i holds conns[i], generation gen[i]. */
struct shard {
	unsigned int id;
	struct dpq_hs_ring *r;
	struct dpq_conn *conns[2];
	uint16_t gen[2];
};

static struct dpq_conn *
lookup(void *arg, uint64_t h)
{
	struct shard *s = arg;
	uint32_t i = dpq_hs_handle_index(h);

	if (dpq_hs_handle_shard(h) != s->id || i >= 2 ||
	    s->gen[i] != dpq_hs_handle_gen(h))
		return NULL;
	return s->conns[i];
}

static void
q_push(struct dgq *q, const uint8_t *d, size_t len)
{
	assert_true(q->tail - q->head < QLEN);
	memcpy(q->d[q->tail % QLEN], d, len);
	q->len[q->tail % QLEN] = (uint16_t)len;
	q->tail++;
}

static void
flush(struct dpq_conn *c, struct dgq *q, uint64_t now)
{
	uint8_t buf[MTU];
	ssize_t n;
	int guard = 0;

	if (c == NULL)
		return;
	while ((n = dpq_conn_send(c, buf, sizeof(buf), NULL, now)) > 0 &&
	       guard++ < 1000)
		q_push(q, buf, (size_t)n);
}

static void
timers(struct dpq_conn *c, uint64_t now)
{
	if (c != NULL && dpq_conn_next_timeout(c) <= now)
		dpq_conn_on_timeout(c, now);
}

static void
test_conn_pair_over_rings(void **state)
{
	struct dpq_mgmt_conf mconf = {
		.server_ctx = sctx,
		.client_ctx = cctx,
		.n_shards = 2,
	};
	struct dpq_conn_conf cconf = { .role = DPQ_ROLE_CLIENT };
	struct dpq_conn_conf sconf = { .role = DPQ_ROLE_SERVER };
	struct dpq_conn_init in = { 0 };
	struct dpq_hs_ring_conf rconf = { .socket_id = SOCKET_ID_ANY };
	struct dpq_mgmt *m;
	struct dpq_crypto *crypto;
	struct shard sh[2];
	struct dgq *c2s, *s2c;
	struct dpq_conn *cl, *sv = NULL;
	struct dpq_mgmt_stats st0, st1;
	struct dpq_hs_ring_stats rs0, rs1;
	static const char msg[] = "ping over rings";
	char got[64];
	size_t got_len = 0;
	bool fin = false, sent = false;
	uint64_t deadline, sid, t0, t_est = 0;

	(void)state;
	c2s = calloc(1, sizeof(*c2s));
	s2c = calloc(1, sizeof(*s2c));
	assert_non_null(c2s);
	assert_non_null(s2c);
	crypto = dpq_crypto_create();
	assert_non_null(crypto);
	m = dpq_mgmt_create(&mconf);
	assert_non_null(m);
	/* Client on shard 0, server on shard 1 (both run by this thread,
	 * each with its own channel). */
	memset(sh, 0, sizeof(sh));
	for (unsigned int i = 0; i < 2; i++) {
		sh[i].id = i;
		sh[i].gen[0] = 5;
		rconf.chan = dpq_mgmt_chan(m, i);
		assert_int_equal(dpq_hs_ring_create(&rconf, &sh[i].r), 0);
	}
	assert_int_equal(dpq_mgmt_start_thread(m), 0);

	t0 = now_us();
	in.conf = &cconf;
	in.crypto = crypto;
	in.hs_ops = &dpq_hs_ring_ops;
	in.hs = sh[0].r;
	in.scid.len = 8;
	in.dcid.len = 8;
	for (int i = 0; i < 8; i++) {
		in.scid.bytes[i] = (uint8_t)(0x11 * i + 1);
		in.dcid.bytes[i] = (uint8_t)(0x23 * i + 7);
	}
	in.now = t0;
	assert_int_equal(dpq_conn_create(&in, &cl), 0);
	sh[0].conns[0] = cl;
	assert_int_equal(dpq_hs_ring_new_conn(sh[0].r, cl,
			dpq_hs_handle(0, 0, sh[0].gen[0])), 0);

	deadline = t0 + 20 * 1000000;
	while (now_us() < deadline) {
		uint64_t now = now_us();

		dpq_hs_ring_drain(sh[0].r, lookup, &sh[0], 64);
		dpq_hs_ring_drain(sh[1].r, lookup, &sh[1], 64);
		timers(cl, now);
		timers(sv, now);
		flush(cl, c2s, now);
		flush(sv, s2c, now);
		while (c2s->head != c2s->tail) {
			uint8_t *d = c2s->d[c2s->head % QLEN];
			size_t len = c2s->len[c2s->head % QLEN];

			c2s->head++;
			if (sv == NULL) {
				struct dpq_conn_init si = { 0 };
				struct dpq_pkt_hdr h;

				/* The new-connection path: the client's
				 * first Initial creates the server. */
				assert_int_equal(dpq_pkt_parse(d, d + len, 8,
						&h), 0);
				assert_int_equal(h.type, DPQ_PKT_INITIAL);
				si.conf = &sconf;
				si.crypto = crypto;
				si.hs_ops = &dpq_hs_ring_ops;
				si.hs = sh[1].r;
				si.scid.len = 8;
				memset(si.scid.bytes, 0x5c, 8);
				dpq_cid_set(&si.dcid, h.dcid, h.dcid_len);
				dpq_cid_set(&si.peer_scid, h.scid, h.scid_len);
				memset(si.reset_token, 0x77, 16);
				si.now = now;
				assert_int_equal(dpq_conn_create(&si, &sv), 0);
				sh[1].conns[0] = sv;
				sh[1].gen[0] = 9;
				assert_int_equal(dpq_hs_ring_new_conn(sh[1].r,
						sv, dpq_hs_handle(1, 0, 9)), 0);
			}
			dpq_conn_recv(sv, d, len, NULL, now);
		}
		while (s2c->head != s2c->tail) {
			uint8_t *d = s2c->d[s2c->head % QLEN];

			dpq_conn_recv(cl, d, s2c->len[s2c->head % QLEN], NULL, now);
			s2c->head++;
		}
		if (t_est == 0 && sv != NULL &&
		    dpq_conn_state(cl) == DPQ_CONN_ESTABLISHED &&
		    dpq_conn_state(sv) == DPQ_CONN_ESTABLISHED)
			t_est = now_us();
		/* Once established, the client sends on a stream: the keys
		 * the service gave both ends agree. */
		if (!sent && dpq_conn_state(cl) == DPQ_CONN_ESTABLISHED) {
			assert_int_equal(dpq_conn_stream_open(cl, false, &sid),
					0);
			assert_int_equal(dpq_conn_stream_write(cl, sid, msg,
					sizeof(msg), true), sizeof(msg));
			sent = true;
		}
		if (sent && sv != NULL && !fin) {
			ssize_t n = dpq_conn_stream_read(sv, sid,
					got + got_len, sizeof(got) - got_len,
					&fin);

			if (n > 0)
				got_len += (size_t)n;
		}
		if (fin && t_est != 0)
			break;
		if (dpq_conn_state(cl) >= DPQ_CONN_CLOSING ||
		    (sv != NULL && dpq_conn_state(sv) >= DPQ_CONN_CLOSING))
			break;
	}
	assert_int_equal(dpq_conn_state(cl), DPQ_CONN_ESTABLISHED);
	assert_non_null(sv);
	assert_int_equal(dpq_conn_state(sv), DPQ_CONN_ESTABLISHED);
	assert_string_equal(dpq_conn_alpn(cl), "hq-interop");
	assert_string_equal(dpq_conn_alpn(sv), "hq-interop");
	assert_true(fin);
	assert_int_equal(got_len, sizeof(msg));
	assert_memory_equal(got, msg, sizeof(msg));
	print_message("handshake over rings: %.3f ms (real clock)\n",
			(double)(t_est - t0) / 1000.0);

	/* Tear down: releases reach the service; its table empties. */
	sh[0].conns[0] = NULL;
	sh[1].conns[0] = NULL;
	dpq_conn_destroy(cl);
	dpq_conn_destroy(sv);
	deadline = now_us() + 5 * 1000000;
	do {
		dpq_hs_ring_drain(sh[0].r, lookup, &sh[0], 64);
		dpq_hs_ring_drain(sh[1].r, lookup, &sh[1], 64);
		dpq_mgmt_get_stats(m, 0, &st0);
		dpq_mgmt_get_stats(m, 1, &st1);
	} while ((st0.active | st1.active) != 0 && now_us() < deadline);
	assert_int_equal(dpq_mgmt_stop_thread(m), 0);
	dpq_mgmt_get_stats(m, 0, &st0);
	dpq_mgmt_get_stats(m, 1, &st1);
	dpq_hs_ring_get_stats(sh[0].r, &rs0);
	dpq_hs_ring_get_stats(sh[1].r, &rs1);
	assert_int_equal(st0.active + st1.active, 0);
	assert_int_equal(st0.hs_ok, 1);
	assert_int_equal(st1.hs_ok, 1);
	assert_int_equal(st0.hs_failed + st1.hs_failed, 0);
	assert_int_equal(st0.bad + st1.bad, 0);
	assert_int_equal(rs0.hs_complete, 1);
	assert_int_equal(rs1.hs_complete, 1);
	assert_int_equal(rs0.bad + rs1.bad + rs0.torn + rs1.torn, 0);
	assert_int_equal(rs0.tp_rejected + rs1.tp_rejected, 0);
	print_message("client shard: %llu requests, %llu replies; server "
			"shard: %llu requests, %llu replies\n",
			(unsigned long long)rs0.requests,
			(unsigned long long)rs0.replies,
			(unsigned long long)rs1.requests,
			(unsigned long long)rs1.replies);
	dpq_hs_ring_destroy(sh[0].r);
	dpq_hs_ring_destroy(sh[1].r);
	dpq_mgmt_destroy(m);
	dpq_crypto_destroy(crypto);
	free(c2s);
	free(s2c);
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
	char *eal_argv[] = { "test_mgmt_conn", "--no-huge", "--no-shconf",
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
		.log = quiet_log,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_pair_over_rings),
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
