/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The benchmark apps (echo, sink, source) end to end over two dpq_conn in
 * memory, each reached through dpq_app_server_ops by the ALPN the client
 * offers: byte-exact echo under backpressure, sink byte counts, source
 * patterns, bad and oversized requests, refused streams.
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
#include "dataplane/app/app.h"
#include "dataplane/app/bench_apps.h"
#include "raw_client.h"

struct run {
	struct pair p;
	struct dpq_app_env *env;
	struct dpq_app_conn *ac;
	struct raw_client rc;
};

static bool
done(struct pair *p, void *arg)
{
	(void)p;
	return raw_client_done(arg);
}

static void
run(struct run *r, const char *alpn, struct raw_stream *s, unsigned int n,
		double loss)
{
	struct dpq_app_env_conf ec = { .chunk = 20000 };

	memset(r, 0, sizeof(*r));
	assert_int_equal(dpq_app_env_create(&ec, &r->env), 0);
	r->ac = dpq_app_conn_create(r->env);
	assert_non_null(r->ac);
	r->rc.s = s;
	r->rc.n = n;
	pair_init(&r->p, 0, alpn, 5000, loss, 99);
	r->p.capp = &raw_client_ops;
	r->p.capp_ctx = &r->rc;
	r->p.sapp = &dpq_app_server_ops;
	r->p.sapp_ctx = r->ac;
	r->p.server_alpns = dpq_app_alpns;
	pair_start(&r->p);
	assert_true(pair_run(&r->p, done, &r->rc, 300000000ull));
	assert_string_equal(dpq_conn_alpn(r->p.server), alpn);
	pair_run(&r->p, NULL, NULL, 1000000ull);
}

static void
run_free(struct run *r)
{
	pair_free(&r->p);
	dpq_app_conn_destroy(r->ac);
	dpq_app_env_destroy(r->env);
	raw_client_free(&r->rc);
}

static uint8_t *
noise(size_t n, unsigned int seed)
{
	uint8_t *b = malloc(n);

	assert_non_null(b);
	srand(seed);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rand();
	return b;
}

static void
test_echo(void **state)
{
	const size_t sz[] = { 0, 1, 300000, 1 << 20 };
	struct raw_stream s[5] = { 0 };
	uint8_t *d[4];
	struct run r;
	const struct dpq_app_stats *st;

	(void)state;
	for (int i = 0; i < 4; i++) {
		d[i] = noise(sz[i] ? sz[i] : 1, (unsigned int)i + 3);
		s[i].out = d[i];
		s[i].out_len = sz[i];
		s[i].fin = true;
	}
	/* echo refuses unidirectional streams */
	s[4].uni = true;
	s[4].out = d[2];
	s[4].out_len = 1000;
	s[4].fin = true;
	run(&r, DPQ_ALPN_ECHO, s, 5, 0);
	for (int i = 0; i < 4; i++) {
		assert_true(s[i].got_fin);
		assert_false(s[i].got_reset);
		assert_int_equal(s[i].in_len, sz[i]);
		if (sz[i])
			assert_memory_equal(s[i].in, d[i], sz[i]);
	}
	assert_true(s[4].got_stop || s[4].closed);
	if (s[4].got_stop)
		assert_int_equal(s[4].stop_code, DPQ_BENCH_ERR_STREAM_CREATION);
	st = dpq_app_env_stats(r.env);
	assert_int_equal(st->bench.streams, 4);
	assert_int_equal(st->bench.bytes_in, sz[0] + sz[1] + sz[2] + sz[3]);
	assert_int_equal(st->bench.bytes_out, st->bench.bytes_in);
	assert_int_equal(st->bench.errors, 1);
	assert_int_equal(dpq_app_conn_streams(r.ac), 0);
	run_free(&r);
	for (int i = 0; i < 4; i++)
		free(d[i]);
}

static void
test_echo_lossy(void **state)
{
	struct raw_stream s[3] = { 0 };
	uint8_t *d = noise(400000, 11);
	struct run r;

	(void)state;
	for (int i = 0; i < 3; i++) {
		s[i].out = d + i * 1000;
		s[i].out_len = 400000 - (size_t)i * 1000;
		s[i].fin = true;
	}
	run(&r, DPQ_ALPN_ECHO, s, 3, 0.05);
	for (int i = 0; i < 3; i++) {
		assert_true(s[i].got_fin);
		assert_int_equal(s[i].in_len, s[i].out_len);
		assert_memory_equal(s[i].in, s[i].out, s[i].out_len);
	}
	assert_true(r.p.s2c.dropped > 0);
	run_free(&r);
	free(d);
}

static void
test_sink(void **state)
{
	struct raw_stream s[4] = { 0 };
	uint8_t *d = noise(1 << 20, 5);
	struct run r;

	(void)state;
	s[0].out = d;
	s[0].out_len = 1 << 20;
	s[0].fin = true;
	s[1].fin = true;		/* empty */
	s[2].out = d;
	s[2].out_len = 12345;
	s[2].fin = true;
	s[3].uni = true;		/* drained, no reply */
	s[3].out = d;
	s[3].out_len = 5000;
	s[3].fin = true;
	run(&r, DPQ_ALPN_SINK, s, 4, 0);
	assert_true(s[0].got_fin);
	assert_int_equal(s[0].in_len, 8);
	assert_memory_equal(s[0].in, "1048576\n", 8);
	assert_true(s[1].got_fin);
	assert_int_equal(s[1].in_len, 2);
	assert_memory_equal(s[1].in, "0\n", 2);
	assert_true(s[2].got_fin);
	assert_int_equal(s[2].in_len, 6);
	assert_memory_equal(s[2].in, "12345\n", 6);
	assert_true(s[3].closed);
	assert_false(s[3].got_stop);
	assert_int_equal(dpq_app_env_stats(r.env)->bench.bytes_in,
			(1 << 20) + 12345 + 5000);
	run_free(&r);
	free(d);
}

#define REQ(str) .out = (const uint8_t *)(str), .out_len = sizeof(str) - 1

static void
check_pattern(const struct raw_stream *s, size_t n)
{
	assert_true(s->got_fin);
	assert_false(s->got_reset);
	assert_int_equal(s->in_len, n);
	for (size_t i = 0; i < n; i++)
		if (s->in[i] != dpq_bench_pattern(i))
			fail_msg("byte %zu: %u != %u", i, s->in[i],
					dpq_bench_pattern(i));
}

static void
test_source(void **state)
{
	static uint8_t longreq[100];
	struct raw_stream s[] = {
		{ REQ("SEND 1000000\n"), .fin = true },
		{ REQ("SEND 0\r\n"), .fin = true },
		{ REQ("SEND 5"), .fin = true },
		{ REQ("SEND 70000\n"), .fin = false },
		{ REQ("SEND abc\n"), .fin = true },
		{ REQ("SEND \n"), .fin = true },
		{ REQ("GET /x\n"), .fin = true },
		{ REQ("SEND 99999999999999999999\n"), .fin = true },
		{ .out = longreq, .out_len = sizeof(longreq) },
	};
	struct run r;

	(void)state;
	memset(longreq, '1', sizeof(longreq));
	run(&r, DPQ_ALPN_SOURCE, s, sizeof(s) / sizeof(s[0]), 0);
	check_pattern(&s[0], 1000000);
	check_pattern(&s[1], 0);
	check_pattern(&s[2], 5);
	check_pattern(&s[3], 70000);
	for (int i = 4; i < 8; i++) {
		assert_true(s[i].got_reset);
		assert_int_equal(s[i].reset_code, DPQ_BENCH_ERR_BAD_REQUEST);
		assert_int_equal(s[i].in_len, 0);
	}
	assert_true(s[8].got_reset);
	assert_int_equal(s[8].reset_code, DPQ_BENCH_ERR_TOO_LONG);
	assert_true(s[8].got_stop);
	assert_int_equal(dpq_app_env_stats(r.env)->bench.errors, 5);
	assert_int_equal(dpq_app_env_stats(r.env)->bench.bytes_out,
			1000000 + 5 + 70000);
	run_free(&r);
}

/* Context adapters for struct dpq_shard_app; conf bounds. */
static void
test_env_shared(void **state)
{
	struct dpq_app_env_conf ec = { 0 };
	struct dpq_app_env *env;
	struct dpq_app_conn *a, *b;

	(void)state;
	assert_int_equal(dpq_app_env_create(&ec, &env), 0);
	a = dpq_app_conn_ctx(env, NULL);
	b = dpq_app_conn_ctx(env, NULL);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(dpq_app_conn_streams(a), 0);
	dpq_app_conn_ctx_free(env, NULL, a);
	dpq_app_conn_ctx_free(env, NULL, b);
	dpq_app_env_destroy(env);
	ec.chunk = DPQ_APP_CHUNK_MAX + 1;
	assert_int_equal(dpq_app_env_create(&ec, &env), -EINVAL);
	dpq_app_env_destroy(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_echo_lossy),
		cmocka_unit_test(test_sink),
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_env_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
