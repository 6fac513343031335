/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_xor.c: every XOR implementation this CPU supports agrees with a
 * byte-by-byte reference on random lengths (0..9000) and alignments, for
 * one source and for bursts of up to 40 sources of different lengths;
 * no byte outside [0, len) of the destination changes; the run-time
 * choice is the fastest supported implementation; dpq_xor_use() refuses
 * unknown and unsupported names.
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

#include "dataplane/fec/xor.h"
#include "tests/engine/engine_test.h"

#define MAXLEN	9000
#define GUARD	80	/* bytes checked on each side of the destination */
#define MAXSRC	40

static void
ref_xor(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] ^= src[i];
}

static size_t
rand_len(struct test_rng *r)
{
	/* Mostly packet sizes, with the boundaries of every block size. */
	switch (test_rng_next(r) % 4) {
	case 0:
		return test_rng_next(r) % 300;
	case 1:
		return 1100 + test_rng_next(r) % 400;
	case 2:
		return (size_t)64 * (1 + test_rng_next(r) % 24) +
			(test_rng_next(r) % 3) - 1;
	default:
		return test_rng_next(r) % (MAXLEN - 100);
	}
}

static void
check_into(const struct dpq_xor_impl *x, struct test_rng *r)
{
	static uint8_t dbuf[MAXLEN + 2 * GUARD + 64], sbuf[MAXLEN + 64];
	static uint8_t want[MAXLEN + 2 * GUARD + 64];
	int iter;

	for (iter = 0; iter < 3000; iter++) {
		size_t len = rand_len(r);
		size_t da = test_rng_next(r) % 64, sa = test_rng_next(r) % 64;
		uint8_t *dst = dbuf + GUARD + da;
		/* Exact-size source on the heap: ASan sees any overread. */
		uint8_t *src = malloc(len + 1);

		assert_non_null(src);
		test_rng_fill(r, dbuf, sizeof(dbuf));
		test_rng_fill(r, src, len);
		memcpy(want, dbuf, sizeof(dbuf));
		ref_xor(want + GUARD + da, src, len);
		x->xor_into(dst, src, len);
		if (memcmp(want, dbuf, sizeof(dbuf)) != 0)
			fail_msg("%s xor_into len %zu dst+%zu differs",
					x->name, len, da);
		/* Unaligned source within a larger buffer. */
		test_rng_fill(r, sbuf, sizeof(sbuf));
		memcpy(want, dbuf, sizeof(dbuf));
		ref_xor(want + GUARD + da, sbuf + sa, len);
		x->xor_into(dst, sbuf + sa, len);
		if (memcmp(want, dbuf, sizeof(dbuf)) != 0)
			fail_msg("%s xor_into len %zu src+%zu differs",
					x->name, len, sa);
		free(src);
	}
}

static void
check_burst(const struct dpq_xor_impl *x, struct test_rng *r)
{
	static uint8_t abuf[MAXLEN + 2 * GUARD + 64];
	static uint8_t want[MAXLEN + 2 * GUARD + 64];
	uint8_t *srcs[MAXSRC];
	const uint8_t *csrc[MAXSRC];
	uint16_t lens[MAXSRC];
	int iter;

	for (iter = 0; iter < 600; iter++) {
		unsigned int n = (unsigned int)(test_rng_next(r) % MAXSRC), j;
		size_t da = test_rng_next(r) % 64, max = 0;
		uint8_t *acc = abuf + GUARD + da;

		for (j = 0; j < n; j++) {
			size_t l = rand_len(r) % 1600;

			/* Sometimes all the same length (a full group). */
			if (iter % 3 == 0)
				l = 1350 + (size_t)(iter % 7);
			lens[j] = (uint16_t)l;
			srcs[j] = malloc(l + 1);
			assert_non_null(srcs[j]);
			test_rng_fill(r, srcs[j], l);
			csrc[j] = srcs[j];
			if (l > max)
				max = l;
		}
		test_rng_fill(r, abuf, sizeof(abuf));
		memcpy(want, abuf, sizeof(abuf));
		for (j = 0; j < n; j++)
			ref_xor(want + GUARD + da, srcs[j], lens[j]);
		x->xor_burst(acc, csrc, lens, n);
		if (memcmp(want, abuf, sizeof(abuf)) != 0)
			fail_msg("%s xor_burst n %u max %zu acc+%zu differs",
					x->name, n, max, da);
		for (j = 0; j < n; j++)
			free(srcs[j]);
	}
}

static void
test_all_variants_agree(void **state)
{
	const struct dpq_xor_impl *x;
	unsigned int tested = 0;
	size_t i;

	(void)state;
	for (i = 0; (x = dpq_xor_impl_get(i)) != NULL; i++) {
		struct test_rng r = { 0x5eed0000u + i };

		if (!x->supported()) {
			print_message("skipped %s: not supported here\n",
					x->name);
			continue;
		}
		check_into(x, &r);
		check_burst(x, &r);
		tested++;
	}
	assert_true(tested >= 1);
	/* The scalar fallback is always compiled in and runnable. */
	assert_non_null(dpq_xor_impl_find("scalar"));
	assert_true(dpq_xor_impl_find("scalar")->supported());
}

static void
test_choice(void **state)
{
	const struct dpq_xor_impl *best = dpq_xor_impl_best(), *x;
	size_t i;

	(void)state;
	/* The constructor picked the first supported of the table, which
	 * is ordered fastest first. */
	assert_ptr_equal(dpq_xor_active, best);
	for (i = 0; (x = dpq_xor_impl_get(i)) != best; i++)
		assert_false(x->supported());
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512bw"))
		assert_string_equal(best->name, "avx512");
	else if (__builtin_cpu_supports("avx2"))
		assert_string_equal(best->name, "avx2");
#endif
	print_message("in use: %s\n", dpq_xor_active->name);

	assert_int_equal(dpq_xor_use("no-such"), -ENOENT);
	assert_int_equal(dpq_xor_use(NULL), -ENOENT);
	assert_int_equal(dpq_xor_use("scalar"), 0);
	assert_string_equal(dpq_xor_active->name, "scalar");
	for (i = 0; (x = dpq_xor_impl_get(i)) != NULL; i++)
		if (!x->supported())
			assert_int_equal(dpq_xor_use(x->name), -ENOTSUP);
	assert_int_equal(dpq_xor_use("auto"), 0);
	assert_ptr_equal(dpq_xor_active, best);
}

/* The inline wrappers go through the active implementation. */
static void
test_wrappers(void **state)
{
	uint8_t a[100], b[100], c[100], want[100];
	const uint8_t *srcs[2] = { b, c };
	uint16_t lens[2] = { 100, 37 };
	size_t i;

	(void)state;
	for (i = 0; i < 100; i++) {
		a[i] = (uint8_t)i;
		b[i] = (uint8_t)(3 * i + 1);
		c[i] = (uint8_t)(7 * i + 5);
		want[i] = (uint8_t)(a[i] ^ b[i] ^ (i < 37 ? c[i] : 0));
	}
	dpq_xor_burst(a, srcs, lens, 2);
	assert_memory_equal(a, want, 100);
	dpq_xor_into(a, c, 37);
	dpq_xor_into(a, b, 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(a[i], (uint8_t)i);
	/* Zero sources and zero length change nothing. */
	dpq_xor_burst(a, srcs, lens, 0);
	dpq_xor_into(a, b, 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(a[i], (uint8_t)i);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_variants_agree),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_wrappers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
