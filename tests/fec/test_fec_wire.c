/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fec_wire.c: the XOR-FEC codec (docs/fec.md §2-5): REPAIR and
 * RECOVERED round-trip; every truncation is a FRAME_ENCODING_ERROR;
 * oversized and hostile values (group sizes, lengths, packet numbers
 * past 2^62-1, length XORs the lengths cannot produce, non-shortest
 * types) are refused by decoder and encoder alike; the transport
 * parameter takes exactly one varint in range; codepoints are not
 * reserved GREASE values and use 4-byte varints (RFC 9000 §22.1.2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/tparams.h"
#include "dataplane/engine/varint.h"
#include "dataplane/fec/fec_wire.h"
#include "tests/engine/engine_test.h"

#define FEE	(DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR))
#define TPE	(DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR))

static void
test_codepoints(void **state)
{
	const uint64_t ids[] = { DPQ_FEC_TP_ID, DPQ_FEC_FT_REPAIR,
		DPQ_FEC_FT_RECOVERED };
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_int_equal(dpq_varint_len(ids[i]), 4);
		assert_false(dpq_tparams_is_reserved(ids[i]));
		assert_true(ids[i] >= DPQ_TP_COUNT);
	}
	assert_true(dpq_fec_is_frame(DPQ_FEC_FT_REPAIR));
	assert_true(dpq_fec_is_frame(DPQ_FEC_FT_RECOVERED));
	assert_false(dpq_fec_is_frame(0x1e));
	assert_false(dpq_fec_is_frame(DPQ_FEC_TP_ID));
}

/* Encode r with its data into buf; returns the frame length. */
static size_t
put_repair(uint8_t *buf, size_t cap, const struct dpq_fec_repair *r,
		const uint8_t *data)
{
	uint8_t *q = dpq_fec_repair_encode_hdr(buf, buf + cap, r);

	assert_non_null(q);
	assert_int_equal((size_t)(q - buf), dpq_fec_repair_hdr_len(r));
	memcpy(q, data, r->data_len);
	return (size_t)(q - buf) + r->data_len;
}

static void
test_repair_roundtrip_and_truncation(void **state)
{
	static uint8_t data[1400], buf[1500];
	struct test_rng rng = { 42 };
	const struct dpq_fec_repair cases[] = {
		{ .first_pn = 0, .size = 0, .next_delta = 1, .next_size = 16 },
		{ .first_pn = 7, .size = 16, .next_delta = 1, .next_size = 16,
		  .len_xor = 0x51, .data_len = 1350 },
		{ .first_pn = DPQ_VARINT_MAX - 65, .size = 64, .next_delta = 1,
		  .next_size = 0, .len_xor = 1023, .data_len = 1000 },
		{ .first_pn = 1u << 20, .size = 2, .next_delta = 300,
		  .next_size = 64, .len_xor = 0, .data_len = 1 },
	};
	size_t i, cut;

	(void)state;
	test_rng_fill(&rng, data, sizeof(data));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dpq_fec_repair d;
		size_t n = put_repair(buf, sizeof(buf), &cases[i], data);
		uint8_t *exact = malloc(n);

		memcpy(exact, buf, n);
		assert_int_equal(dpq_fec_repair_decode(exact, exact + n, &d),
				(ssize_t)n);
		assert_true(d.first_pn == cases[i].first_pn &&
			d.size == cases[i].size &&
			d.next_delta == cases[i].next_delta &&
			d.next_size == cases[i].next_size &&
			d.len_xor == cases[i].len_xor &&
			d.data_len == cases[i].data_len);
		assert_ptr_equal(d.data, exact + n - d.data_len);
		assert_memory_equal(d.data, data, d.data_len);
		/* Every truncation, on an exact-size heap copy (ASan). */
		for (cut = 0; cut < n; cut++) {
			uint8_t *t = malloc(cut + 1);

			memcpy(t, exact, cut);
			assert_int_equal(dpq_fec_repair_decode(t, t + cut, &d),
					FEE);
			free(t);
		}
		/* The encoder refuses a buffer one byte short of the data. */
		assert_null(dpq_fec_repair_encode_hdr(buf,
				buf + n - 1, &cases[i]));
		free(exact);
	}
}

/* Hand-encode a REPAIR with arbitrary field values. */
static size_t
raw_repair(uint8_t *buf, uint64_t type_len, uint64_t first, uint64_t size,
		uint64_t delta, uint64_t nsize, uint64_t lx, uint64_t dlen,
		size_t data_bytes)
{
	uint8_t *p = buf, *end = buf + 2000;

	p = dpq_varint_encode_len(p, end, DPQ_FEC_FT_REPAIR, type_len);
	p = dpq_varint_encode(p, end, first);
	p = dpq_varint_encode(p, end, size);
	p = dpq_varint_encode(p, end, delta);
	p = dpq_varint_encode(p, end, nsize);
	p = dpq_varint_encode(p, end, lx);
	p = dpq_varint_encode(p, end, dlen);
	assert_non_null(p);
	memset(p, 0xab, data_bytes);
	return (size_t)(p - buf) + data_bytes;
}

static void
test_repair_hostile(void **state)
{
	static uint8_t buf[2000];
	struct dpq_fec_repair d, e;
	size_t n;

	(void)state;
	/* Sane reference. */
	n = raw_repair(buf, 4, 10, 4, 1, 4, 100, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), (ssize_t)n);
	/* Type in 8 bytes: not the shortest form. */
	n = raw_repair(buf, 8, 10, 4, 1, 4, 100, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	/* Group sizes past the protocol limit. */
	n = raw_repair(buf, 4, 10, 65, 1, 4, 100, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 4, 1, 65, 100, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, DPQ_VARINT_MAX, 1, 4, 100, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	/* Repair Length past any packet, and claiming more than is there. */
	n = raw_repair(buf, 4, 10, 4, 1, 4, 100, 65528, 0);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 4, 1, 4, 100, 1500, 1499);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 4, 1, 4, 100, DPQ_VARINT_MAX, 10);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	/* A length XOR no lengths <= 200 can produce (> 255). */
	n = raw_repair(buf, 4, 10, 4, 1, 4, 256, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 4, 1, 4, 255, 200, 200);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), (ssize_t)n);
	/* Announcement with data, or a group without data. */
	n = raw_repair(buf, 4, 10, 0, 1, 4, 0, 5, 5);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 0, 1, 4, 3, 0, 0);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, 10, 3, 1, 4, 0, 0, 0);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	/* Packet numbers past 2^62-1: the group, or the next group. */
	n = raw_repair(buf, 4, DPQ_VARINT_MAX - 2, 4, 1, 4, 1, 1, 1);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, DPQ_VARINT_MAX - 10, 4, 7, 4, 1, 1, 1);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), FEE);
	n = raw_repair(buf, 4, DPQ_VARINT_MAX - 10, 4, 6, 4, 1, 1, 1);
	assert_int_equal(dpq_fec_repair_decode(buf, buf + n, &d), (ssize_t)n);
	/* Another frame type, empty input, NULL. */
	buf[0] = 0x01;
	assert_int_equal(dpq_fec_repair_decode(buf, buf + 1, &d), FEE);
	assert_int_equal(dpq_fec_repair_decode(buf, buf, &d), FEE);
	assert_int_equal(dpq_fec_repair_decode(NULL, buf, &d), FEE);
	/* The encoder applies the same rules. */
	e = (struct dpq_fec_repair){ .first_pn = 1, .size = 65, .data_len = 1 };
	assert_null(dpq_fec_repair_encode_hdr(buf, buf + 2000, &e));
	assert_int_equal(dpq_fec_repair_hdr_len(&e), 0);
	e = (struct dpq_fec_repair){ .first_pn = 1, .size = 2,
		.len_xor = 300, .data_len = 200 };
	assert_null(dpq_fec_repair_encode_hdr(buf, buf + 2000, &e));
	e = (struct dpq_fec_repair){ .first_pn = 1, .size = 0, .data_len = 1 };
	assert_null(dpq_fec_repair_encode_hdr(buf, buf + 2000, &e));
	e = (struct dpq_fec_repair){ .first_pn = DPQ_VARINT_MAX, .size = 1,
		.data_len = 1 };
	assert_null(dpq_fec_repair_encode_hdr(buf, buf + 2000, &e));
	/* The header bound holds for the largest fields. */
	e = (struct dpq_fec_repair){ .first_pn = UINT64_C(1) << 30,
		.size = 64, .next_delta = UINT64_C(1) << 30, .next_size = 64,
		.len_xor = 65535, .data_len = 65527 };
	assert_int_equal(dpq_fec_repair_hdr_len(&e), DPQ_FEC_REPAIR_HDR_MAX);
}

static void
test_recovered(void **state)
{
	uint64_t pns[DPQ_FEC_RECOVERED_MAX + 1];
	struct dpq_fec_recovered r;
	uint8_t buf[512], *q;
	size_t n, i, cut;

	(void)state;
	for (i = 0; i <= DPQ_FEC_RECOVERED_MAX; i++)
		pns[i] = 1000000 - i * i * 7;
	for (size_t cnt = 1; cnt <= DPQ_FEC_RECOVERED_MAX; cnt += 7) {
		q = dpq_fec_recovered_encode(buf, buf + sizeof(buf), pns, cnt);
		assert_non_null(q);
		n = (size_t)(q - buf);
		assert_int_equal(dpq_fec_recovered_decode(buf, q, &r),
				(ssize_t)n);
		assert_int_equal(r.count, cnt);
		for (i = 0; i < cnt; i++)
			assert_int_equal(r.pn[i], pns[i]);
		for (cut = 0; cut < n; cut++) {
			uint8_t *t = malloc(cut + 1);

			memcpy(t, buf, cut);
			assert_int_equal(dpq_fec_recovered_decode(t, t + cut,
					&r), FEE);
			free(t);
		}
		assert_null(dpq_fec_recovered_encode(buf, buf + n - 1, pns,
				cnt));
	}
	/* Count 0, too many, not descending, below zero. */
	assert_null(dpq_fec_recovered_encode(buf, buf + 512, pns, 0));
	assert_null(dpq_fec_recovered_encode(buf, buf + 512, pns,
			DPQ_FEC_RECOVERED_MAX + 1));
	pns[1] = pns[0];
	assert_null(dpq_fec_recovered_encode(buf, buf + 512, pns, 2));
	q = dpq_varint_encode(buf, buf + 512, DPQ_FEC_FT_RECOVERED);
	q = dpq_varint_encode(q, buf + 512, 0);
	assert_int_equal(dpq_fec_recovered_decode(buf, q, &r), FEE);
	q = dpq_varint_encode(buf, buf + 512, DPQ_FEC_FT_RECOVERED);
	q = dpq_varint_encode(q, buf + 512, DPQ_FEC_RECOVERED_MAX + 1);
	for (i = 0; i < 40; i++)
		q = dpq_varint_encode(q, buf + 512, 1);
	assert_int_equal(dpq_fec_recovered_decode(buf, q, &r), FEE);
	/* 5, then gap 5: would be -1. */
	q = dpq_varint_encode(buf, buf + 512, DPQ_FEC_FT_RECOVERED);
	q = dpq_varint_encode(q, buf + 512, 2);
	q = dpq_varint_encode(q, buf + 512, 5);
	q = dpq_varint_encode(q, buf + 512, 5);
	assert_int_equal(dpq_fec_recovered_decode(buf, q, &r), FEE);
	/* gap 4: 5 then 0, fine. */
	q[-1] = 4;
	assert_true(dpq_fec_recovered_decode(buf, q, &r) > 0);
	assert_int_equal(r.pn[1], 0);
	/* A huge count cannot make the decoder read past the input. */
	q = dpq_varint_encode(buf, buf + 512, DPQ_FEC_FT_RECOVERED);
	q = dpq_varint_encode(q, buf + 512, DPQ_VARINT_MAX);
	assert_int_equal(dpq_fec_recovered_decode(buf, q, &r), FEE);
}

static void
test_tparam(void **state)
{
	uint8_t buf[16];
	uint64_t k = 0;
	size_t n;

	(void)state;
	n = dpq_fec_tp_encode(buf, sizeof(buf), 16);
	assert_int_equal(n, 1);
	assert_int_equal(dpq_fec_tp_decode(buf, n, &k), 0);
	assert_int_equal(k, 16);
	n = dpq_fec_tp_encode(buf, sizeof(buf), 64);
	assert_int_equal(n, 2);
	assert_int_equal(dpq_fec_tp_decode(buf, n, &k), 0);
	assert_int_equal(k, 64);
	assert_int_equal(dpq_fec_tp_encode(buf, sizeof(buf), 0), 0);
	assert_int_equal(dpq_fec_tp_encode(buf, sizeof(buf), 65), 0);
	assert_int_equal(dpq_fec_tp_encode(buf, 1, 64), 0);
	/* Empty, truncated, trailing bytes, zero, too large. */
	assert_int_equal(dpq_fec_tp_decode(buf, 0, &k), TPE);
	assert_int_equal(dpq_fec_tp_decode(buf, 1, &k), TPE);
	buf[0] = 4;
	buf[1] = 0;
	assert_int_equal(dpq_fec_tp_decode(buf, 2, &k), TPE);
	buf[0] = 0;
	assert_int_equal(dpq_fec_tp_decode(buf, 1, &k), TPE);
	buf[0] = 0x40;
	buf[1] = 65;
	assert_int_equal(dpq_fec_tp_decode(buf, 2, &k), TPE);
	assert_int_equal(k, 64);	/* untouched on error */
	/* The parameter survives the engine's codec as an extension. */
	{
		struct dpq_tparams tp, back;
		uint8_t blob[256], v[8], *e;
		const uint64_t keep[] = { DPQ_FEC_TP_ID };

		dpq_tparams_init_defaults(&tp);
		n = dpq_fec_tp_encode(v, sizeof(v), 32);
		tp.ext[0] = (struct dpq_tparam_ext){ DPQ_FEC_TP_ID, v, n };
		tp.n_ext = 1;
		e = dpq_tparams_encode(blob, blob + sizeof(blob),
				DPQ_ROLE_CLIENT, &tp);
		assert_non_null(e);
		assert_int_equal(dpq_tparams_decode(blob, e, DPQ_ROLE_CLIENT,
				keep, 1, &back), 0);
		assert_int_equal(back.n_ext, 1);
		assert_int_equal(dpq_fec_tp_decode(back.ext[0].value,
				back.ext[0].len, &k), 0);
		assert_int_equal(k, 32);
	}
}

/* Random bytes and mutations of valid frames never crash a decoder. */
static void
test_random_input(void **state)
{
	static uint8_t data[300];
	struct test_rng rng = { 7 };
	struct dpq_fec_repair r = { .first_pn = 99, .size = 8,
		.next_delta = 1, .next_size = 8, .len_xor = 3,
		.data_len = 300 };
	struct dpq_fec_recovered rc;
	uint8_t good[400], buf[400];
	size_t n = put_repair(good, sizeof(good), &r, data);
	int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		size_t len = test_rng_next(&rng) % sizeof(buf);
		uint8_t *t;
		ssize_t rc1, rc2;

		if (i % 2) {
			memcpy(buf, good, n);
			buf[test_rng_next(&rng) % n] ^=
				(uint8_t)(1u << (test_rng_next(&rng) % 8));
			len = n;
		} else {
			test_rng_fill(&rng, buf, len);
		}
		t = malloc(len + 1);
		memcpy(t, buf, len);
		rc1 = dpq_fec_repair_decode(t, t + len, &r);
		rc2 = dpq_fec_recovered_decode(t, t + len, &rc);
		assert_true(rc1 == FEE || (rc1 > 0 && (size_t)rc1 <= len));
		assert_true(rc2 == FEE || (rc2 > 0 && (size_t)rc2 <= len));
		free(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codepoints),
		cmocka_unit_test(test_repair_roundtrip_and_truncation),
		cmocka_unit_test(test_repair_hostile),
		cmocka_unit_test(test_recovered),
		cmocka_unit_test(test_tparam),
		cmocka_unit_test(test_random_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
