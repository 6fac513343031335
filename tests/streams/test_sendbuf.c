/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sendbuf.c: the send buffer (sendbuf.h): bulk transfer with random
 * loss and resends, memory given back, lost-then-acked ranges never sent
 * again, FIN acknowledgement, bounds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/sendbuf.h"
#include "streams_test.h"

struct pkt {
	uint64_t off;
	uint64_t len;
	bool fin;
};

/* Append pattern bytes from *woff while there is room. */
static void
fill(struct dpq_sendbuf *sb, uint64_t *woff, uint64_t total)
{
	uint8_t buf[8192];

	while (*woff < total && dpq_sendbuf_room(sb) > 0) {
		size_t n = sizeof(buf);
		ssize_t got;

		if (n > total - *woff)
			n = (size_t)(total - *woff);
		test_fill_pattern(buf, *woff, n);
		got = dpq_sendbuf_append(sb, buf, n, *woff + n == total);
		assert_true(got > 0);
		*woff += (uint64_t)got;
	}
}

static void
check_copy(const struct dpq_sendbuf *sb, uint64_t off, uint64_t len)
{
	uint8_t buf[1500];
	uint64_t i;

	assert_true(len <= sizeof(buf));
	dpq_sendbuf_copy(sb, off, buf, (size_t)len);
	for (i = 0; i < len; i++)
		assert_int_equal(buf[i], test_pattern(off + i));
}

/* 10 MB through send / ack with 5 % random loss and acks in random order
 * within the flight; everything ends acknowledged, memory back. */
static void
test_bulk_random_loss(void **state)
{
	enum { FLIGHT = 256 };
	const uint64_t total = 10u * 1000 * 1000;
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct test_rng r = { 42 };
	struct dpq_sendbuf sb;
	struct pkt fl[FLIGHT];
	size_t nfl = 0, i;
	uint64_t woff = 0, sent_bytes = 0, lost_bytes = 0, steps = 0;
	size_t peak = 0;

	(void)state;
	dpq_sendbuf_init(&sb, &m, 1u << 20);
	while (!dpq_sendbuf_all_acked(&sb)) {
		uint64_t off, len;
		bool fin;

		assert_true(++steps < 10u * 1000 * 1000);
		fill(&sb, &woff, total);
		while (nfl < FLIGHT &&
		    dpq_sendbuf_next(&sb, UINT64_MAX, 1200, &off, &len, &fin)) {
			check_copy(&sb, off, len);
			assert_int_equal(dpq_sendbuf_on_sent(&sb, off, len, fin), 0);
			fl[nfl].off = off;
			fl[nfl].len = len;
			fl[nfl].fin = fin;
			nfl++;
			sent_bytes += len;
		}
		if (dpq_sendbuf_mem(&sb) > peak)
			peak = dpq_sendbuf_mem(&sb);
		assert_true(nfl > 0);
		/* Resolve one random packet of the flight. */
		i = (size_t)test_rng_below(&r, nfl);
		if (test_rng_below(&r, 100) < 5) {
			lost_bytes += fl[i].len;
			assert_int_equal(dpq_sendbuf_on_lost(&sb, fl[i].off,
					fl[i].len, fl[i].fin), 0);
		} else {
			assert_int_equal(dpq_sendbuf_on_acked(&sb, fl[i].off,
					fl[i].len, fl[i].fin), 0);
		}
		fl[i] = fl[--nfl];
	}
	assert_int_equal(woff, total);
	assert_int_equal(sb.acked_off, total);
	assert_true(dpq_byterange_empty(&sb.acked));
	assert_true(dpq_byterange_empty(&sb.lost));
	assert_false(dpq_sendbuf_pending(&sb));
	/* Resent no more than was lost: sent = total + lost. */
	assert_int_equal(sent_bytes, total + lost_bytes);
	/* Memory bounded by the buffer limit and given back as acked. */
	assert_true(peak <= (1u << 20) + 2 * DPQ_CHUNKBUF_SIZE);
	assert_true(dpq_sendbuf_mem(&sb) <= DPQ_CHUNKBUF_SIZE);
	dpq_sendbuf_free(&sb);
	assert_int_equal(ta.live, 0);
	print_message("bulk: %llu bytes, %llu lost and resent, peak %zu B\n",
	    (unsigned long long)total, (unsigned long long)lost_bytes, peak);
}

static void
test_lost_then_acked_not_resent(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_sendbuf sb;
	uint8_t buf[3000];
	uint64_t off, len;
	bool fin;

	(void)state;
	test_fill_pattern(buf, 0, sizeof(buf));
	dpq_sendbuf_init(&sb, &m, 1u << 16);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 3000, false), 3000);
	/* Three packets of 1000. */
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 0, 1000, false), 0);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 1000, 1000, false), 0);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 2000, 1000, false), 0);
	assert_false(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	/* The middle packet is declared lost, then its late ACK comes. */
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 1000, 1000, false), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1500, &off, &len, &fin));
	assert_int_equal(off, 1000);
	assert_int_equal(len, 1000);
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 1000, 1000, false), 0);
	assert_false(dpq_sendbuf_next(&sb, UINT64_MAX, 1500, &off, &len, &fin));
	/* Everything lost, but [0, 500) was acked meanwhile by a resent
	 * copy: only the unacked parts come back, lowest first. */
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 0, 500, false), 0);
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 0, 1000, false), 0);
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 1000, 1000, false), 0);
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 2000, 1000, false), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 5000, &off, &len, &fin));
	assert_int_equal(off, 500);
	assert_int_equal(len, 500);
	check_copy(&sb, off, len);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, off, len, fin), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 5000, &off, &len, &fin));
	assert_int_equal(off, 2000);
	assert_int_equal(len, 1000);
	/* Lost data goes before new data. */
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 100, false), 100);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 5000, &off, &len, &fin));
	assert_int_equal(off, 2000);
	dpq_sendbuf_free(&sb);
	assert_int_equal(ta.live, 0);
}

static void
test_fin_acked(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_sendbuf sb;
	uint8_t buf[100] = { 0 };
	uint64_t off, len;
	bool fin;

	(void)state;
	dpq_sendbuf_init(&sb, &m, 1000);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 100, false), 100);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_false(fin);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 0, 100, false), 0);
	/* FIN alone, after the data went. */
	assert_int_equal(dpq_sendbuf_append(&sb, NULL, 0, true), 0);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 1, false), -EPIPE);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_int_equal(off, 100);
	assert_int_equal(len, 0);
	assert_true(fin);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 100, 0, true), 0);
	assert_true(dpq_sendbuf_all_sent(&sb));
	assert_false(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 0, 100, false), 0);
	assert_false(dpq_sendbuf_all_acked(&sb));
	/* The FIN-only packet is lost: FIN alone again. */
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 100, 0, true), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_int_equal(off, 100);
	assert_int_equal(len, 0);
	assert_true(fin);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 100, 0, true), 0);
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 100, 0, true), 0);
	assert_true(dpq_sendbuf_all_acked(&sb));
	assert_false(dpq_sendbuf_pending(&sb));
	dpq_sendbuf_free(&sb);
	assert_int_equal(ta.live, 0);

	/* FIN with the last data, that packet lost: data+FIN together. */
	dpq_sendbuf_init(&sb, &m, 1000);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 100, true), 100);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 60, &off, &len, &fin));
	assert_false(fin);	/* 60 < 100: FIN not reached */
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 0, 60, false), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 60, &off, &len, &fin));
	assert_true(fin);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 60, 40, true), 0);
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 60, 40, true), 0);
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 0, 60, false), 0);
	assert_true(dpq_sendbuf_next(&sb, UINT64_MAX, 1000, &off, &len, &fin));
	assert_int_equal(off, 60);
	assert_int_equal(len, 40);
	assert_true(fin);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 60, 40, true), 0);
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 60, 40, true), 0);
	assert_true(dpq_sendbuf_all_acked(&sb));
	dpq_sendbuf_free(&sb);
	assert_int_equal(ta.live, 0);
}

static void
test_bounds_and_limit(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_sendbuf sb;
	uint8_t buf[5000] = { 0 };
	uint64_t off, len;
	bool fin;

	(void)state;
	dpq_sendbuf_init(&sb, &m, 3000);
	/* Partial accept: FIN not taken because bytes were left out. */
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 5000, true), 3000);
	assert_false(sb.fin);
	assert_int_equal(dpq_sendbuf_room(&sb), 0);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 10, false), 0);
	/* The flow-control limit stops new data. */
	assert_true(dpq_sendbuf_next(&sb, 1000, 5000, &off, &len, &fin));
	assert_int_equal(len, 1000);
	assert_int_equal(dpq_sendbuf_on_sent(&sb, 0, 1000, false), 0);
	assert_false(dpq_sendbuf_next(&sb, 1000, 5000, &off, &len, &fin));
	/* Acks give room back. */
	assert_int_equal(dpq_sendbuf_on_acked(&sb, 0, 1000, false), 0);
	assert_int_equal(dpq_sendbuf_room(&sb), 1000);
	/* Discard (reset): final size = bytes sent; nothing more goes. */
	dpq_sendbuf_discard(&sb);
	assert_int_equal(sb.write_off, 1000);
	assert_false(dpq_sendbuf_next(&sb, UINT64_MAX, 5000, &off, &len, &fin));
	assert_false(dpq_sendbuf_pending(&sb));
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 1, false), -EPIPE);
	assert_int_equal(dpq_sendbuf_on_lost(&sb, 0, 1000, true), 0);
	assert_false(dpq_sendbuf_pending(&sb));
	assert_int_equal(ta.live, 0);
	dpq_sendbuf_free(&sb);

	/* §19.8: no byte beyond 2^62 - 1. */
	dpq_sendbuf_init(&sb, &m, 3000);
	sb.write_off = sb.sent_off = sb.acked_off = (UINT64_C(1) << 62) - 2;
	sb.data.base = sb.write_off / DPQ_CHUNKBUF_SIZE;
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 2, false), -EFBIG);
	assert_int_equal(dpq_sendbuf_append(&sb, buf, 1, false), 1);
	dpq_sendbuf_free(&sb);
	assert_int_equal(ta.live, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_random_loss),
		cmocka_unit_test(test_lost_then_acked_not_resent),
		cmocka_unit_test(test_fin_acked),
		cmocka_unit_test(test_bounds_and_limit),
	};

	return cmocka_run_group_tests_name("streams_sendbuf", tests, NULL, NULL);
}
