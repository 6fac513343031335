/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_varint.c: QUIC variable-length integers (RFC 9000 §16, Appendix
 * A.1): the RFC examples, every length boundary, forced lengths,
 * truncation at each length, values too large, and a random round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/varint.h"
#include "tests/engine/engine_test.h"

/* RFC 9000 Appendix A.1 / §16 examples. */
static const struct {
	const char *hex;
	uint64_t value;
} rfc_examples[] = {
	{ "c2197c5eff14e88c", UINT64_C(151288809941952652) },
	{ "9d7f3e7d", 494878333 },
	{ "7bbd", 15293 },
	{ "25", 37 },
	{ "4025", 37 },
};

static void
test_rfc_examples_decode(void **state)
{
	uint8_t buf[8];
	uint64_t v;
	size_t i, n;
	const uint8_t *q;

	(void)state;
	for (i = 0; i < sizeof(rfc_examples) / sizeof(rfc_examples[0]); i++) {
		n = test_unhex(rfc_examples[i].hex, buf, sizeof(buf));
		uint8_t *h = test_dup(buf, n);
		v = 0;
		q = dpq_varint_decode(h, h + n, &v);
		assert_ptr_equal(q, h + n);
		assert_int_equal(v, rfc_examples[i].value);
		free(h);
	}
}

static void
test_rfc_examples_encode(void **state)
{
	uint8_t want[8], buf[8];
	size_t n;
	uint8_t *e;

	(void)state;
	/* shortest encodings of the first four examples */
	for (size_t i = 0; i < 4; i++) {
		n = test_unhex(rfc_examples[i].hex, want, sizeof(want));
		assert_int_equal(dpq_varint_len(rfc_examples[i].value), n);
		e = dpq_varint_encode(buf, buf + sizeof(buf),
				rfc_examples[i].value);
		assert_ptr_equal(e, buf + n);
		assert_memory_equal(buf, want, n);
	}
	/* 0x4025: 37 forced into two bytes */
	e = dpq_varint_encode_len(buf, buf + sizeof(buf), 37, 2);
	assert_ptr_equal(e, buf + 2);
	assert_int_equal(buf[0], 0x40);
	assert_int_equal(buf[1], 0x25);
}

static void
test_boundaries(void **state)
{
	static const struct {
		uint64_t v;
		size_t len;
	} cases[] = {
		{ 0, 1 }, { 63, 1 }, { 64, 2 }, { 16383, 2 }, { 16384, 4 },
		{ 1073741823, 4 }, { 1073741824, 8 },
		{ DPQ_VARINT_MAX - 1, 8 }, { DPQ_VARINT_MAX, 8 },
	};
	uint8_t buf[8];
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(dpq_varint_len(cases[i].v), cases[i].len);
		uint8_t *e = dpq_varint_encode(buf, buf + sizeof(buf), cases[i].v);
		assert_ptr_equal(e, buf + cases[i].len);
		assert_int_equal(dpq_varint_len_of(buf[0]), cases[i].len);
		assert_ptr_equal(dpq_varint_decode(buf, e, &v), e);
		assert_int_equal(v, cases[i].v);
	}
	assert_int_equal(DPQ_VARINT_MAX, (UINT64_C(1) << 62) - 1);
}

static void
test_too_large(void **state)
{
	uint8_t buf[16];
	size_t len;

	(void)state;
	assert_int_equal(dpq_varint_len(DPQ_VARINT_MAX + 1), 0);
	assert_int_equal(dpq_varint_len(UINT64_MAX), 0);
	assert_null(dpq_varint_encode(buf, buf + sizeof(buf), DPQ_VARINT_MAX + 1));
	assert_null(dpq_varint_encode(buf, buf + sizeof(buf), UINT64_MAX));
	assert_null(dpq_varint_encode_len(buf, buf + 16, DPQ_VARINT_MAX + 1, 8));
	/* value too large for the forced length */
	assert_null(dpq_varint_encode_len(buf, buf + 16, 64, 1));
	assert_null(dpq_varint_encode_len(buf, buf + 16, 16384, 2));
	assert_null(dpq_varint_encode_len(buf, buf + 16, 1073741824, 4));
	/* invalid forced lengths */
	for (len = 0; len < 10; len++) {
		if (len == 1 || len == 2 || len == 4 || len == 8)
			continue;
		assert_null(dpq_varint_encode_len(buf, buf + 16, 1, len));
	}
}

static void
test_forced_lengths(void **state)
{
	static const size_t lens[] = { 1, 2, 4, 8 };
	uint8_t buf[8];
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		uint64_t x = dpq_varint_max_for_len(lens[i]);
		uint8_t *e = dpq_varint_encode_len(buf, buf + 8, 5, lens[i]);

		assert_ptr_equal(e, buf + lens[i]);
		assert_ptr_equal(dpq_varint_decode(buf, buf + 8, &v), e);
		assert_int_equal(v, 5);
		e = dpq_varint_encode_len(buf, buf + 8, x, lens[i]);
		assert_ptr_equal(e, buf + lens[i]);
		assert_ptr_equal(dpq_varint_decode(buf, e, &v), e);
		assert_int_equal(v, x);
	}
}

static void
test_no_room(void **state)
{
	static const uint64_t vals[] = { 1, 300, 70000, UINT64_C(1) << 40 };
	uint8_t buf[9];
	size_t i, room;

	(void)state;
	for (i = 0; i < 4; i++) {
		size_t need = dpq_varint_len(vals[i]);

		for (room = 0; room < need; room++) {
			memset(buf, 0xee, sizeof(buf));
			assert_null(dpq_varint_encode(buf, buf + room, vals[i]));
			/* nothing written, not even inside the room */
			for (size_t k = 0; k < sizeof(buf); k++)
				assert_int_equal(buf[k], 0xee);
		}
	}
	/* end before p */
	assert_null(dpq_varint_encode(buf + 4, buf, 1));
	assert_null(dpq_varint_encode(NULL, NULL, 1));
}

static void
test_truncated(void **state)
{
	static const uint64_t vals[] = { 5, 15293, 494878333,
		UINT64_C(151288809941952652) };
	uint8_t buf[8];
	uint64_t v;
	size_t i, k;

	(void)state;
	for (i = 0; i < 4; i++) {
		size_t n = (size_t)(dpq_varint_encode(buf, buf + 8, vals[i]) - buf);

		for (k = 0; k < n; k++) {
			uint8_t *h = test_dup(buf, k);

			v = 0xabcd;
			assert_null(dpq_varint_decode(h, h + k, &v));
			assert_int_equal(v, 0xabcd);	/* untouched */
			free(h);
		}
	}
	assert_null(dpq_varint_decode(NULL, NULL, &v));
	assert_null(dpq_varint_decode(buf + 1, buf, &v));
}

static void
test_random_roundtrip(void **state)
{
	struct test_rng rng = { UINT64_C(0x9e3779b97f4a7c15) };
	uint8_t buf[8];
	uint64_t v, w;
	int i;

	(void)state;
	for (i = 0; i < 200000; i++) {
		/* spread over all lengths: random value, random bit width */
		v = test_rng_next(&rng) >> (2 + test_rng_next(&rng) % 62);
		uint8_t *e = dpq_varint_encode(buf, buf + 8, v);

		assert_non_null(e);
		assert_int_equal((size_t)(e - buf), dpq_varint_len(v));
		assert_ptr_equal(dpq_varint_decode(buf, e, &w), e);
		assert_int_equal(v, w);
		/* random bytes decode to something in range or NULL */
		test_rng_fill(&rng, buf, 8);
		size_t n = test_rng_next(&rng) % 9;
		uint8_t *h = test_dup(buf, n);
		const uint8_t *q = dpq_varint_decode(h, h + n, &w);
		if (q != NULL) {
			assert_true(q <= h + n);
			assert_true(w <= DPQ_VARINT_MAX);
		}
		free(h);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_examples_decode),
		cmocka_unit_test(test_rfc_examples_encode),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_forced_lengths),
		cmocka_unit_test(test_no_room),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_random_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
