/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ackr.c: received packet numbers and the ACK schedule (RFC 9000
 * §13.2): duplicates (§12.3), range merging, the range limit with its
 * rising floor, immediate ACKs on gaps and reordering (§13.2.1), every
 * second ack-eliciting packet (§13.2.2), max_ack_delay deadlines, ACK
 * Delay encoding (§19.3), forgetting after the peer acknowledged our ACK
 * (§13.2.4), ECN counts, and a round trip through the frame codec.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/ackr.h"

#define MAD 25000	/* our max_ack_delay, us */

/* The ranges of the ackr under test (one test at a time). */
static struct dpq_ack_range ar[DPQ_ACKR_MAX_RANGES];

static void
rec_ok(struct dpq_ackr *a, uint64_t pn, bool elicit, uint64_t now)
{
	assert_int_equal(dpq_ackr_record(a, pn, elicit, DPQ_ECN_NOT_ECT, now),
			0);
}

/* Ranges as "s-l,s-l" largest first, for compact assertions. */
static void
assert_ranges(const struct dpq_ackr *a, const uint64_t *want, size_t n)
{
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES];
	size_t got, i;

	got = dpq_ackr_ranges(a, r, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(r[i].smallest, want[2 * i]);
		assert_int_equal(r[i].largest, want[2 * i + 1]);
	}
}

static void
test_duplicates(void **state)
{
	struct dpq_ackr a;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	assert_false(dpq_ackr_is_duplicate(&a, 0));
	assert_int_equal(dpq_ackr_largest(&a), DPQ_PN_NONE);
	rec_ok(&a, 5, true, 100);
	assert_true(dpq_ackr_is_duplicate(&a, 5));
	assert_false(dpq_ackr_is_duplicate(&a, 4));
	assert_false(dpq_ackr_is_duplicate(&a, 6));
	assert_int_equal(dpq_ackr_record(&a, 5, true, DPQ_ECN_ECT0, 200),
			-EALREADY);
	/* the duplicate changed nothing: no ECN count, no second packet
	 * toward the ACK threshold, largest time unchanged */
	assert_null(dpq_ackr_ecn(&a));
	assert_int_equal(a.eliciting_unacked, 1);
	assert_int_equal(a.largest_time, 100);
	assert_int_equal(dpq_ackr_record(&a, DPQ_PN_MAX + 1, true,
			DPQ_ECN_NOT_ECT, 0), -EINVAL);
	rec_ok(&a, DPQ_PN_MAX, false, 300);
	assert_true(dpq_ackr_is_duplicate(&a, DPQ_PN_MAX));
}

static void
test_merging(void **state)
{
	struct dpq_ackr a;
	static const uint64_t w1[] = { 7, 7, 4, 5, 0, 2 };
	static const uint64_t w2[] = { 7, 7, 0, 5 };
	static const uint64_t w3[] = { 0, 7 };
	static const uint64_t w4[] = { 9, 9, 0, 7 };

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 0, false, 0);
	rec_ok(&a, 1, false, 0);
	rec_ok(&a, 2, false, 0);
	rec_ok(&a, 5, false, 0);
	rec_ok(&a, 4, false, 0);	/* extends [5,5] downward */
	rec_ok(&a, 7, false, 0);
	assert_ranges(&a, w1, 3);
	rec_ok(&a, 3, false, 0);	/* joins [0,2] and [4,5] */
	assert_ranges(&a, w2, 2);
	rec_ok(&a, 6, false, 0);
	assert_ranges(&a, w3, 1);
	rec_ok(&a, 9, false, 0);
	assert_ranges(&a, w4, 2);
	assert_int_equal(dpq_ackr_largest(&a), 9);
	/* fewer slots than ranges: the oldest are left out (§13.2.3) */
	{
		struct dpq_ack_range r[1];

		assert_int_equal(dpq_ackr_ranges(&a, r, 1), 1);
		assert_int_equal(r[0].smallest, 9);
	}
}

static void
test_schedule_in_order(void **state)
{
	struct dpq_ackr a;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(dpq_ackr_deadline(&a), DPQ_ACKR_NO_DEADLINE);
	/* non-ack-eliciting: never makes an ACK due (§13.2.1) */
	rec_ok(&a, 0, false, 1000);
	assert_int_equal(dpq_ackr_deadline(&a), DPQ_ACKR_NO_DEADLINE);
	assert_true(dpq_ackr_has_new(&a));
	/* first ack-eliciting: due within max_ack_delay */
	rec_ok(&a, 1, true, 2000);
	assert_int_equal(dpq_ackr_deadline(&a), 2000 + MAD);
	assert_false(dpq_ackr_ack_due(&a, 2000 + MAD - 1));
	assert_true(dpq_ackr_ack_due(&a, 2000 + MAD));
	/* second ack-eliciting: at once (§13.2.2) */
	rec_ok(&a, 2, true, 3000);
	assert_int_equal(dpq_ackr_deadline(&a), 3000);
	assert_true(dpq_ackr_ack_due(&a, 3000));
	dpq_ackr_on_ack_sent(&a);
	assert_int_equal(dpq_ackr_deadline(&a), DPQ_ACKR_NO_DEADLINE);
	assert_false(dpq_ackr_has_new(&a));
	assert_false(dpq_ackr_ack_due(&a, 1000000));
	/* the count restarts after an ACK */
	rec_ok(&a, 3, true, 4000);
	assert_int_equal(dpq_ackr_deadline(&a), 4000 + MAD);
	/* a later deadline never replaces an earlier one */
	rec_ok(&a, 4, false, 5000);
	assert_int_equal(dpq_ackr_deadline(&a), 4000 + MAD);
}

static void
test_schedule_gap_and_reorder(void **state)
{
	struct dpq_ackr a;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 0, true, 1000);
	dpq_ackr_on_ack_sent(&a);
	/* gap above the largest ack-eliciting: immediate */
	rec_ok(&a, 2, true, 2000);
	assert_int_equal(dpq_ackr_deadline(&a), 2000);
	dpq_ackr_on_ack_sent(&a);
	/* out of order (below the largest ack-eliciting): immediate */
	rec_ok(&a, 1, true, 3000);
	assert_int_equal(dpq_ackr_deadline(&a), 3000);
	dpq_ackr_on_ack_sent(&a);
	/* in order again: delayed */
	rec_ok(&a, 3, true, 4000);
	assert_int_equal(dpq_ackr_deadline(&a), 4000 + MAD);
	dpq_ackr_on_ack_sent(&a);
	/* a gap filled by non-ack-eliciting packets is no gap:
	 * 4 (non-eliciting) then 5 */
	rec_ok(&a, 4, false, 5000);
	rec_ok(&a, 5, true, 5000);
	assert_int_equal(dpq_ackr_deadline(&a), 5000 + MAD);
	dpq_ackr_on_ack_sent(&a);
	/* a non-ack-eliciting packet making a gap does not trigger */
	rec_ok(&a, 8, false, 6000);
	assert_int_equal(dpq_ackr_deadline(&a), DPQ_ACKR_NO_DEADLINE);
	/* but the next ack-eliciting one after the gap does */
	rec_ok(&a, 9, true, 7000);
	assert_int_equal(dpq_ackr_deadline(&a), 7000);
}

static void
test_immediate_space(void **state)
{
	struct dpq_ackr a;

	(void)state;
	/* Initial/Handshake: max_ack_delay 0, acknowledge at once */
	dpq_ackr_init(&a, 0, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 0, true, 500);
	assert_int_equal(dpq_ackr_deadline(&a), 500);
	assert_true(dpq_ackr_ack_due(&a, 500));
}

static void
test_range_limit(void **state)
{
	struct dpq_ackr a;
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES];
	uint64_t pn, extra = 5, top = 3 * (DPQ_ACKR_MAX_RANGES + extra - 1);
	size_t n, i;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	/* every third pn: each packet is its own range */
	for (pn = 0; pn <= top; pn += 3)
		rec_ok(&a, pn, false, pn);
	assert_int_equal(a.n, DPQ_ACKR_MAX_RANGES);
	n = dpq_ackr_ranges(&a, r, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(n, DPQ_ACKR_MAX_RANGES);
	/* largest first; the 5 lowest ranges (0..12) were evicted */
	assert_int_equal(r[0].largest, top);
	assert_int_equal(r[n - 1].smallest, 3 * extra);
	/* below the floor everything counts as received (§13.2.3) */
	assert_int_equal(a.floor, 13);
	assert_true(dpq_ackr_is_duplicate(&a, 0));
	assert_true(dpq_ackr_is_duplicate(&a, 11));	/* never received */
	assert_int_equal(dpq_ackr_record(&a, 4, true, DPQ_ECN_NOT_ECT, 0),
			-EALREADY);
	assert_false(dpq_ackr_is_duplicate(&a, 13));
	/* full, and the new range would be the lowest: it is the one
	 * forgotten, the floor passes it */
	rec_ok(&a, 13, false, 0);
	assert_int_equal(a.n, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(a.floor, 14);
	assert_true(dpq_ackr_is_duplicate(&a, 13));
	assert_false(dpq_ackr_is_duplicate(&a, 14));
	/* extending a range needs no slot */
	rec_ok(&a, top + 1, false, 0);
	assert_int_equal(a.n, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(a.floor, 14);
	/* a new top range evicts the lowest */
	rec_ok(&a, top + 10, false, 0);
	assert_int_equal(a.n, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(a.floor, 3 * extra + 1);
	n = dpq_ackr_ranges(&a, r, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(r[0].smallest, top + 10);
	assert_int_equal(r[n - 1].smallest, 3 * extra + 3);
	/* ranges stay sorted and separated by gaps */
	for (i = 0; i + 1 < n; i++)
		assert_true(r[i + 1].largest + 1 < r[i].smallest);
}

static void
test_ack_delay(void **state)
{
	struct dpq_ackr a;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	assert_int_equal(dpq_ackr_ack_delay(&a, 5000, 3), 0);
	rec_ok(&a, 10, true, 1000);
	rec_ok(&a, 4, true, 6000);	/* not the largest: time stays */
	/* §19.3: microseconds >> ack_delay_exponent */
	assert_int_equal(dpq_ackr_ack_delay(&a, 9000, 0), 8000);
	assert_int_equal(dpq_ackr_ack_delay(&a, 9000, 3), 1000);
	assert_int_equal(dpq_ackr_ack_delay(&a, 9007, 3), 1000);
	assert_int_equal(dpq_ackr_ack_delay(&a, 9000, 20), 0);
	assert_int_equal(dpq_ackr_ack_delay(&a, 500, 3), 0); /* clock back */
	rec_ok(&a, 11, true, 10000);
	assert_int_equal(dpq_ackr_ack_delay(&a, 12000, 3), 250);
}

static void
test_forget_after_ack_of_ack(void **state)
{
	struct dpq_ackr a;
	uint64_t pn;
	static const uint64_t w1[] = { 12, 15 };
	static const uint64_t w2[] = { 12, 15, 10, 10 };
	static const uint64_t w3[] = { 14, 15 };

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	for (pn = 0; pn < 10; pn++)
		rec_ok(&a, pn, true, pn);
	for (pn = 12; pn < 16; pn++)
		rec_ok(&a, pn, true, pn);
	/* the peer acked our packet whose ACK said Largest = 9 */
	dpq_ackr_on_ack_acked(&a, 9);
	assert_ranges(&a, w1, 1);
	assert_true(dpq_ackr_is_duplicate(&a, 3));
	assert_false(dpq_ackr_is_duplicate(&a, 10));
	rec_ok(&a, 10, true, 20);
	assert_ranges(&a, w2, 2);
	/* Largest = 13 cuts into [12,15] */
	dpq_ackr_on_ack_acked(&a, 13);
	assert_ranges(&a, w3, 1);
	/* an older ACK acked late changes nothing */
	dpq_ackr_on_ack_acked(&a, 5);
	assert_ranges(&a, w3, 1);
	/* everything acked: no ranges, but the largest pn is kept for
	 * packet number decoding (§13.2.3) */
	dpq_ackr_on_ack_acked(&a, 15);
	assert_int_equal(dpq_ackr_ranges(&a, NULL, 0), 0);
	assert_int_equal(a.n, 0);
	assert_false(dpq_ackr_has_new(&a));
	assert_int_equal(dpq_ackr_largest(&a), 15);
	assert_true(dpq_ackr_is_duplicate(&a, 15));
	rec_ok(&a, 16, true, 30);
	assert_int_equal(a.n, 1);
}

static void
test_ecn(void **state)
{
	struct dpq_ackr a;
	const struct dpq_ecn_counts *e;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 0, true, 0);
	assert_null(dpq_ackr_ecn(&a));
	assert_int_equal(dpq_ackr_record(&a, 1, false, DPQ_ECN_ECT0, 10), 0);
	assert_int_equal(dpq_ackr_record(&a, 2, false, DPQ_ECN_ECT0, 10), 0);
	assert_int_equal(dpq_ackr_record(&a, 3, false, DPQ_ECN_ECT1, 10), 0);
	e = dpq_ackr_ecn(&a);
	assert_non_null(e);
	assert_int_equal(e->ect0, 2);
	assert_int_equal(e->ect1, 1);
	assert_int_equal(e->ce, 0);
	/* CE: the pending ACK becomes due at once (§13.2.1) */
	assert_int_equal(dpq_ackr_deadline(&a), MAD);
	assert_int_equal(dpq_ackr_record(&a, 4, false, DPQ_ECN_CE, 20), 0);
	assert_int_equal(dpq_ackr_deadline(&a), 20);
	assert_int_equal(e->ce, 1);
	dpq_ackr_on_ack_sent(&a);
	assert_int_equal(dpq_ackr_record(&a, 5, true, DPQ_ECN_CE, 30), 0);
	assert_int_equal(dpq_ackr_deadline(&a), 30);
}

/* The ranges and delay feed the codec and decode back unchanged. */
static void
test_codec_round_trip(void **state)
{
	struct dpq_ackr a;
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES], back[DPQ_ACKR_MAX_RANGES];
	struct dpq_frame f;
	struct dpq_ack_iter it;
	uint8_t buf[1500];
	uint8_t *end;
	size_t n, m = 0;
	uint64_t pn;

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	for (pn = 0; pn < 300; pn++)
		if (pn % 7 != 3 && pn % 11 != 5)
			rec_ok(&a, pn, true, pn * 10);
	n = dpq_ackr_ranges(&a, r, DPQ_ACKR_MAX_RANGES);
	assert_true(n > 20);
	end = dpq_frame_encode_ack(buf, buf + sizeof(buf), r, n,
			dpq_ackr_ack_delay(&a, 5000, 3), dpq_ackr_ecn(&a));
	assert_non_null(end);
	assert_true(dpq_frame_decode(buf, end, &f) == end - buf);
	assert_int_equal(f.type, DPQ_FT_ACK);
	assert_int_equal(f.ack.largest, 299);
	assert_int_equal(f.ack.ack_delay, (5000 - 2990) >> 3);
	dpq_ack_iter_init(&it, &f.ack);
	while (m < DPQ_ACKR_MAX_RANGES && dpq_ack_iter_next(&it, &back[m]))
		m++;
	assert_int_equal(m, n);
	assert_memory_equal(back, r, n * sizeof(r[0]));
}

/* Moving the ranges to a smaller array (a parked connection) keeps the
 * highest, raises the floor past the others (RFC 9000 §13.2.3: they count
 * as duplicates), keeps the schedule; moving back gives room again. */
static void
test_move(void **state)
{
	struct dpq_ack_range small[2];
	struct dpq_ackr a;
	static const uint64_t top2[] = { 20, 21, 10, 12 };

	(void)state;
	dpq_ackr_init(&a, MAD, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 1, true, 0);
	rec_ok(&a, 5, true, 0);
	rec_ok(&a, 10, true, 0);
	rec_ok(&a, 11, true, 0);
	rec_ok(&a, 12, true, 0);
	rec_ok(&a, 20, false, 0);
	rec_ok(&a, 21, false, 0);
	dpq_ackr_move(&a, small, 2);
	assert_ranges(&a, top2, 2);
	/* The floor is 6 now: 1 and 5 were forgotten, 4 counts as seen;
	 * 7 and 15 were never received. */
	assert_true(dpq_ackr_is_duplicate(&a, 5));
	assert_true(dpq_ackr_is_duplicate(&a, 4));
	assert_false(dpq_ackr_is_duplicate(&a, 7));
	assert_false(dpq_ackr_is_duplicate(&a, 15));
	assert_int_equal(dpq_ackr_largest(&a), 21);
	/* Full at 2: a new range evicts the lowest. */
	rec_ok(&a, 30, true, 0);
	assert_true(dpq_ackr_is_duplicate(&a, 11));
	dpq_ackr_move(&a, ar, DPQ_ACKR_MAX_RANGES);
	rec_ok(&a, 15, true, 0);
	rec_ok(&a, 17, true, 0);
	assert_int_equal(dpq_ackr_ranges(&a, small, 2), 2);
	{
		static const uint64_t all[] = { 30, 30, 20, 21, 17, 17,
			15, 15 };

		assert_ranges(&a, all, 4);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_merging),
		cmocka_unit_test(test_schedule_in_order),
		cmocka_unit_test(test_schedule_gap_and_reorder),
		cmocka_unit_test(test_immediate_space),
		cmocka_unit_test(test_range_limit),
		cmocka_unit_test(test_ack_delay),
		cmocka_unit_test(test_forget_after_ack_of_ack),
		cmocka_unit_test(test_ecn),
		cmocka_unit_test(test_codec_round_trip),
		cmocka_unit_test(test_move),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
