/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rtt.c: RTT estimator (RFC 9002 §5), values computed by hand:
 * initial state, first sample, later samples (Appendix A.7 order), ack
 * delay capped by max_ack_delay only after confirmation, never below
 * min_rtt, min_rtt tracking and its reset after persistent congestion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/rtt.h"

/* State after a first sample of 100 ms at t = 1 ms. */
static void
first(struct dpq_rtt *r)
{
	dpq_rtt_init(r, DPQ_RTT_INITIAL_DEFAULT);
	dpq_rtt_sample(r, 100000, 5000, 25000, false, 1000);
}

static void
test_initial(void **state)
{
	struct dpq_rtt r;

	(void)state;
	dpq_rtt_init(&r, DPQ_RTT_INITIAL_DEFAULT);
	assert_int_equal(r.smoothed, 333000);
	assert_int_equal(r.var, 166500);
	assert_int_equal(r.min, 0);
	assert_false(r.has_sample);
	/* §6.2.1: 333 + 4 * 166.5 = 999 ms */
	assert_int_equal(dpq_rtt_pto_base(&r), 999000);
}

static void
test_first_sample(void **state)
{
	struct dpq_rtt r;

	(void)state;
	first(&r);
	/* §5.3: the ack delay is not used on the first sample. */
	assert_true(r.has_sample);
	assert_int_equal(r.latest, 100000);
	assert_int_equal(r.min, 100000);
	assert_int_equal(r.smoothed, 100000);
	assert_int_equal(r.var, 50000);
	assert_int_equal(r.first_sample_time, 1000);
	assert_int_equal(dpq_rtt_pto_base(&r), 300000);
}

static void
test_second_sample(void **state)
{
	struct dpq_rtt r;

	(void)state;
	first(&r);
	/* latest 120, ack_delay 10: adjusted 110 (120 >= 100 + 10).
	 * rttvar = (3 * 50 + |100 - 110|) / 4 = 40
	 * smoothed = (7 * 100 + 110) / 8 = 101.25 */
	dpq_rtt_sample(&r, 120000, 10000, 25000, false, 2000);
	assert_int_equal(r.min, 100000);
	assert_int_equal(r.var, 40000);
	assert_int_equal(r.smoothed, 101250);
	assert_int_equal(r.first_sample_time, 1000);
	/* third: latest 90, no delay: min 90; adjusted 90.
	 * rttvar = (3 * 40 + 11.25) / 4 = 32.8125 -> 32812 us
	 * smoothed = (7 * 101.25 + 90) / 8 = 99.84375 -> 99843 us */
	dpq_rtt_sample(&r, 90000, 0, 25000, false, 3000);
	assert_int_equal(r.min, 90000);
	assert_int_equal(r.var, 32812);
	assert_int_equal(r.smoothed, 99843);
}

static void
test_ack_delay_cap(void **state)
{
	struct dpq_rtt r;

	(void)state;
	/* Confirmed: ack_delay 50 capped at max_ack_delay 25:
	 * adjusted = 200 - 25 = 175; rttvar = (150 + 75) / 4 = 56.25;
	 * smoothed = (700 + 175) / 8 = 109.375 */
	first(&r);
	dpq_rtt_sample(&r, 200000, 50000, 25000, true, 2000);
	assert_int_equal(r.var, 56250);
	assert_int_equal(r.smoothed, 109375);
	/* Not confirmed: the full 50 ms is used (§5.3 SHOULD ignore
	 * max_ack_delay): adjusted 150; rttvar 50; smoothed 106.25 */
	first(&r);
	dpq_rtt_sample(&r, 200000, 50000, 25000, false, 2000);
	assert_int_equal(r.var, 50000);
	assert_int_equal(r.smoothed, 106250);
}

static void
test_ack_delay_not_below_min(void **state)
{
	struct dpq_rtt r;

	(void)state;
	/* 105 < min 100 + delay 10: the delay is not subtracted.
	 * rttvar = (150 + 5) / 4 = 38.75; smoothed = (700 + 105) / 8 */
	first(&r);
	dpq_rtt_sample(&r, 105000, 10000, 25000, true, 2000);
	assert_int_equal(r.var, 38750);
	assert_int_equal(r.smoothed, 100625);
	/* exactly min + delay: subtracted (>=), adjusted = 100 */
	first(&r);
	dpq_rtt_sample(&r, 110000, 10000, 25000, true, 2000);
	assert_int_equal(r.var, 37500);
	assert_int_equal(r.smoothed, 100000);
}

static void
test_min_rtt(void **state)
{
	struct dpq_rtt r;

	(void)state;
	first(&r);
	/* §5.2: min_rtt ignores the ack delay. */
	dpq_rtt_sample(&r, 95000, 20000, 25000, true, 2000);
	assert_int_equal(r.min, 95000);
	dpq_rtt_sample(&r, 300000, 0, 25000, true, 3000);
	assert_int_equal(r.min, 95000);
	/* §5.2: after persistent congestion the next sample resets it. */
	dpq_rtt_on_persistent_congestion(&r);
	dpq_rtt_sample(&r, 250000, 0, 25000, true, 4000);
	assert_int_equal(r.min, 250000);
	dpq_rtt_sample(&r, 260000, 0, 25000, true, 5000);
	assert_int_equal(r.min, 250000);
}

static void
test_pto_granularity(void **state)
{
	struct dpq_rtt r;

	(void)state;
	dpq_rtt_init(&r, 1000);
	dpq_rtt_sample(&r, 100, 0, 0, true, 0);
	/* 4 * rttvar = 200 us < kGranularity: 100 + 1000 */
	assert_int_equal(dpq_rtt_pto_base(&r), 1100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initial),
		cmocka_unit_test(test_first_sample),
		cmocka_unit_test(test_second_sample),
		cmocka_unit_test(test_ack_delay_cap),
		cmocka_unit_test(test_ack_delay_not_below_min),
		cmocka_unit_test(test_min_rtt),
		cmocka_unit_test(test_pto_granularity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
