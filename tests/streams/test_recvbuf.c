/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_recvbuf.c: reassembly of one byte stream (recvbuf.h): orderings,
 * overlaps, duplicates, final-size rules (RFC 9000 §4.5), limits (§4.1,
 * §7.5), zero-length FIN, memory accounting.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/recvbuf.h"
#include "streams_test.h"

#define BIG	(UINT64_C(1) << 40)
#define FSE	DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR)
#define FCE	DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR)

/* Read everything readable, check it against the pattern. */
static uint64_t
drain_check(struct dpq_recvbuf *rb)
{
	uint64_t total = 0;
	const uint8_t *p;
	size_t n, i;

	while ((n = dpq_recvbuf_peek(rb, &p)) > 0) {
		for (i = 0; i < n; i++)
			assert_int_equal(p[i], test_pattern(rb->read_off + i));
		assert_true(n <= DPQ_CHUNKBUF_SIZE);
		dpq_recvbuf_consume(rb, n);
		total += n;
	}
	return total;
}

static int
ins(struct dpq_recvbuf *rb, uint64_t off, size_t len, bool fin)
{
	uint8_t *buf = malloc(len ? len : 1);
	int rc;

	test_fill_pattern(buf, off, len);
	rc = dpq_recvbuf_insert(rb, off, buf, len, fin);
	free(buf);
	return rc;
}

static void
test_in_order(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;
	uint64_t off = 0;
	int i;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	for (i = 0; i < 300; i++) {
		assert_int_equal(ins(&rb, off, 1000, i == 299), 0);
		off += 1000;
		assert_int_equal(dpq_recvbuf_readable(&rb), 1000);
		assert_int_equal(drain_check(&rb), 1000);
		/* Consumed chunks are freed: at most one partial chunk. */
		assert_true(dpq_recvbuf_mem(&rb) <= DPQ_CHUNKBUF_SIZE);
	}
	assert_int_equal(dpq_recvbuf_max_recv(&rb), 300000);
	assert_true(dpq_recvbuf_all_received(&rb));
	assert_true(dpq_recvbuf_all_read(&rb));
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_reverse_order(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;
	int i;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	for (i = 99; i >= 1; i--) {
		assert_int_equal(ins(&rb, (uint64_t)i * 777, 777, i == 99), 0);
		assert_int_equal(dpq_recvbuf_readable(&rb), 0);
		assert_false(dpq_recvbuf_all_received(&rb));
	}
	assert_int_equal(dpq_recvbuf_max_recv(&rb), 100 * 777);
	assert_int_equal(ins(&rb, 0, 777, false), 0);
	assert_true(dpq_recvbuf_all_received(&rb));
	assert_int_equal(dpq_recvbuf_readable(&rb), 100 * 777);
	assert_int_equal(drain_check(&rb), 100 * 777);
	assert_true(dpq_recvbuf_all_read(&rb));
	assert_true(dpq_recvbuf_mem(&rb) <= DPQ_CHUNKBUF_SIZE);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

/* 1000 chunks of random length overlapping their neighbours, some sent
 * twice, inserted in a random order with random reads in between. */
static void
test_random_permutation_overlaps(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct test_rng r = { 0x1234567u };
	enum { N = 1000, STEP = 500 };
	struct { uint64_t off; size_t len; } seg[N + N / 4], t;
	const uint64_t total = (uint64_t)N * STEP;
	struct dpq_recvbuf rb;
	uint64_t got = 0;
	size_t nseg = 0, i, j;
	int round;

	(void)state;
	for (round = 0; round < 4; round++) {
		nseg = 0;
		for (i = 0; i < N; i++) {
			seg[nseg].off = i * STEP - (i ? test_rng_below(&r, 200) : 0);
			seg[nseg].len = STEP + 200 + test_rng_below(&r, 400);
			if (seg[nseg].off + seg[nseg].len > total)
				seg[nseg].len = (size_t)(total - seg[nseg].off);
			nseg++;
		}
		for (i = 0; i < N / 4; i++)	/* duplicates */
			seg[nseg++] = seg[test_rng_below(&r, N)];
		for (i = nseg - 1; i > 0; i--) {	/* Fisher-Yates */
			j = test_rng_below(&r, i + 1);
			t = seg[i];
			seg[i] = seg[j];
			seg[j] = t;
		}
		dpq_recvbuf_init(&rb, &m, total);
		got = 0;
		for (i = 0; i < nseg; i++) {
			bool fin = seg[i].off + seg[i].len == total;

			assert_int_equal(ins(&rb, seg[i].off, seg[i].len, fin),
					0);
			if (test_rng_below(&r, 4) == 0)
				got += drain_check(&rb);
		}
		got += drain_check(&rb);
		assert_int_equal(got, total);
		assert_true(dpq_recvbuf_all_received(&rb));
		assert_true(dpq_recvbuf_all_read(&rb));
		assert_int_equal(rb.got.n, 1);
		dpq_recvbuf_free(&rb);
		assert_int_equal(ta.live, 0);
	}
}

static void
test_duplicates(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;
	uint8_t other[100];
	const uint8_t *p;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	assert_int_equal(ins(&rb, 0, 100, false), 0);
	assert_int_equal(ins(&rb, 0, 100, false), 0);
	assert_int_equal(ins(&rb, 50, 20, false), 0);
	assert_int_equal(dpq_recvbuf_readable(&rb), 100);
	/* Different bytes at held offsets are ignored (first copy wins,
	 * RFC 9000 §2.2), new bytes beyond them are taken. */
	memset(other, 0xee, sizeof(other));
	assert_int_equal(dpq_recvbuf_insert(&rb, 60, other, 100, false), 0);
	assert_int_equal(dpq_recvbuf_readable(&rb), 160);
	assert_true(dpq_recvbuf_peek(&rb, &p) == 160);
	assert_int_equal(p[99], test_pattern(99));
	assert_int_equal(p[100], 0xee);
	dpq_recvbuf_consume(&rb, 160);
	/* Data wholly below the read offset: accepted, nothing readable. */
	assert_int_equal(ins(&rb, 0, 160, false), 0);
	assert_int_equal(dpq_recvbuf_readable(&rb), 0);
	assert_int_equal(dpq_recvbuf_max_recv(&rb), 160);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_final_size_errors(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;

	(void)state;
	/* Data beyond a known final size. */
	dpq_recvbuf_init(&rb, &m, BIG);
	assert_int_equal(ins(&rb, 0, 100, true), 0);
	assert_int_equal(ins(&rb, 100, 1, false), FSE);
	assert_int_equal(ins(&rb, 50, 51, false), FSE);
	/* Same final size again, and data inside it: fine. */
	assert_int_equal(ins(&rb, 50, 50, true), 0);
	assert_int_equal(ins(&rb, 100, 0, true), 0);
	assert_int_equal(ins(&rb, 10, 10, false), 0);
	/* A different final size, lower or higher. */
	assert_int_equal(ins(&rb, 0, 99, true), FSE);
	assert_int_equal(ins(&rb, 101, 0, true), FSE);
	/* RESET_STREAM with another final size; with the same one: ok. */
	assert_int_equal(dpq_recvbuf_reset(&rb, 99), FSE);
	assert_int_equal(dpq_recvbuf_reset(&rb, 100), 0);
	dpq_recvbuf_free(&rb);

	/* A FIN below data already received (out of order). */
	dpq_recvbuf_init(&rb, &m, BIG);
	assert_int_equal(ins(&rb, 1000, 10, false), 0);
	assert_int_equal(ins(&rb, 0, 500, true), FSE);
	assert_int_equal(ins(&rb, 0, 0, true), FSE);
	assert_false(dpq_recvbuf_final_known(&rb));
	/* RESET_STREAM below received data. */
	assert_int_equal(dpq_recvbuf_reset(&rb, 1009), FSE);
	assert_int_equal(dpq_recvbuf_reset(&rb, 1010), 0);
	assert_int_equal(ins(&rb, 1010, 1, false), FSE);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_limit_exceeded(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;

	(void)state;
	dpq_recvbuf_init(&rb, &m, 1000);
	assert_int_equal(ins(&rb, 990, 10, false), 0);
	assert_int_equal(ins(&rb, 990, 11, false), FCE);
	assert_int_equal(ins(&rb, 1000, 0, true), 0);	/* at the limit */
	dpq_recvbuf_free(&rb);

	dpq_recvbuf_init(&rb, &m, 1000);
	assert_int_equal(ins(&rb, 1001, 0, false), FCE);
	dpq_recvbuf_set_limit(&rb, 2000);
	assert_int_equal(ins(&rb, 1001, 999, false), 0);
	dpq_recvbuf_set_limit(&rb, 10);		/* never lowered */
	assert_int_equal(ins(&rb, 1500, 10, false), 0);
	/* §19.8: offset + length above 2^62 - 1. */
	assert_int_equal(dpq_recvbuf_check(&rb, (UINT64_C(1) << 62) - 1, 1,
			false), DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	assert_int_equal(dpq_recvbuf_check(&rb, UINT64_MAX, 1, false),
			DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	dpq_recvbuf_free(&rb);

	/* CRYPTO: a window above the read offset, then the window moves. */
	dpq_recvbuf_init_crypto(&rb, &m);
	assert_int_equal(ins(&rb, 0, 100, false), 0);
	assert_int_equal(ins(&rb, DPQ_RECVBUF_CRYPTO_MAX, 1, false),
			DPQ_TE_ERR(DPQ_TE_CRYPTO_BUFFER_EXCEEDED));
	assert_int_equal(ins(&rb, DPQ_RECVBUF_CRYPTO_MAX - 1, 1, false), 0);
	assert_int_equal(drain_check(&rb), 100);
	assert_int_equal(ins(&rb, DPQ_RECVBUF_CRYPTO_MAX, 100, false), 0);
	assert_int_equal(ins(&rb, DPQ_RECVBUF_CRYPTO_MAX + 100, 1, false),
			DPQ_TE_ERR(DPQ_TE_CRYPTO_BUFFER_EXCEEDED));
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_zero_length_fin(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;
	const uint8_t *p;

	(void)state;
	/* Empty stream: one zero-length STREAM frame with FIN. */
	dpq_recvbuf_init(&rb, &m, 1000);
	assert_int_equal(dpq_recvbuf_insert(&rb, 0, NULL, 0, true), 0);
	assert_true(dpq_recvbuf_final_known(&rb));
	assert_true(dpq_recvbuf_all_received(&rb));
	assert_true(dpq_recvbuf_all_read(&rb));
	assert_int_equal(dpq_recvbuf_peek(&rb, &p), 0);
	assert_int_equal(ta.live, 0);	/* nothing allocated */
	dpq_recvbuf_free(&rb);

	/* FIN alone after the data, arriving before the data. */
	dpq_recvbuf_init(&rb, &m, 1000);
	assert_int_equal(dpq_recvbuf_insert(&rb, 300, NULL, 0, true), 0);
	assert_false(dpq_recvbuf_all_received(&rb));
	assert_int_equal(ins(&rb, 0, 300, false), 0);
	assert_true(dpq_recvbuf_all_received(&rb));
	assert_false(dpq_recvbuf_all_read(&rb));
	assert_int_equal(drain_check(&rb), 300);
	assert_true(dpq_recvbuf_all_read(&rb));
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_too_many_holes(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;
	uint32_t i;
	uint8_t b = 0;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	for (i = 0; i < DPQ_RECVBUF_MAX_RANGES; i++)
		assert_int_equal(dpq_recvbuf_insert(&rb, 2 * i + 1, &b, 1,
				false), 0);
	/* One more hole: refused, nothing recorded. */
	assert_int_equal(dpq_recvbuf_insert(&rb, 2 * i + 1, &b, 1, false),
			-ENOBUFS);
	assert_int_equal(dpq_recvbuf_max_recv(&rb), 2 * i);
	/* Filling a hole instead is fine. */
	assert_int_equal(dpq_recvbuf_insert(&rb, 0, &b, 1, false), 0);
	assert_int_equal(dpq_recvbuf_readable(&rb), 2);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_alloc_failure(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	ta.fail_after = 0;
	assert_int_equal(ins(&rb, 0, 100, false), -ENOMEM);
	assert_int_equal(dpq_recvbuf_readable(&rb), 0);
	assert_int_equal(dpq_recvbuf_max_recv(&rb), 0);
	ta.fail_after = -1;
	assert_int_equal(ins(&rb, 0, 100, false), 0);
	assert_int_equal(drain_check(&rb), 100);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
}

static void
test_discard(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_recvbuf rb;

	(void)state;
	dpq_recvbuf_init(&rb, &m, BIG);
	assert_int_equal(ins(&rb, 0, 10000, false), 0);
	assert_int_equal(ins(&rb, 20000, 10000, false), 0);
	dpq_recvbuf_discard(&rb);
	assert_int_equal(ta.live, 0);
	assert_int_equal(dpq_recvbuf_readable(&rb), 0);
	/* Later data is checked and counted but not stored. */
	assert_int_equal(ins(&rb, 30000, 5000, true), 0);
	assert_int_equal(ta.live, 0);
	assert_int_equal(rb.read_off, 35000);
	assert_true(dpq_recvbuf_all_read(&rb));
	assert_int_equal(ins(&rb, 30000, 5001, false), FSE);
	dpq_recvbuf_free(&rb);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_reverse_order),
		cmocka_unit_test(test_random_permutation_overlaps),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_final_size_errors),
		cmocka_unit_test(test_limit_exceeded),
		cmocka_unit_test(test_zero_length_fin),
		cmocka_unit_test(test_too_many_holes),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_discard),
	};

	return cmocka_run_group_tests_name("streams_recvbuf", tests, NULL, NULL);
}
