/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_newreno.c: congestion-control registry and NewReno (RFC 9002 §7,
 * Appendix B): initial window, slow start, one reduction per recovery
 * period, congestion avoidance of one datagram per window, minimum
 * window, persistent congestion, app-limited acks, ECN-CE, pacing rate,
 * and the bytes_in_flight bookkeeping of the cc.c wrappers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/cc.h"
#include "dataplane/engine/cc_newreno.h"

#define MDS 1200

static void
start(struct dpq_cc *cc)
{
	struct dpq_cc_conf conf = { .max_datagram_size = MDS };

	assert_int_equal(dpq_cc_init(cc, dpq_cc_find("newreno"), &conf, 0), 0);
}

static void
ack(struct dpq_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now)
{
	struct dpq_cc_ack ev = {
		.now = now,
		.bytes_acked = bytes,
		.packets_acked = 1,
		.largest_sent_time = sent_time,
	};

	dpq_cc_on_ack(cc, &ev);
}

static void
lose(struct dpq_cc *cc, uint64_t bytes, uint64_t sent_time, uint64_t now)
{
	struct dpq_cc_loss ev = {
		.now = now,
		.bytes_lost = bytes,
		.packets_lost = 1,
		.largest_sent_time = sent_time,
	};

	dpq_cc_on_loss(cc, &ev);
}

static void
test_registry(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_conf bad = { .max_datagram_size = 1199 };

	(void)state;
	assert_non_null(dpq_cc_find("newreno"));
	assert_ptr_equal(dpq_cc_find("newreno"), &dpq_cc_newreno_ops);
	assert_string_equal(dpq_cc_get(0)->name, "newreno");
	/* every registered name finds itself; the list ends */
	for (size_t i = 0; dpq_cc_get(i) != NULL; i++) {
		assert_true(i < 8);
		assert_ptr_equal(dpq_cc_find(dpq_cc_get(i)->name),
				dpq_cc_get(i));
		assert_true(strlen(dpq_cc_get(i)->name) < DPQ_CC_NAME_MAX);
	}
	assert_null(dpq_cc_find("nosuch"));
	assert_null(dpq_cc_find("NewReno"));
	assert_null(dpq_cc_find(""));
	assert_null(dpq_cc_find(NULL));
	assert_int_equal(dpq_cc_init(&cc, &dpq_cc_newreno_ops, &bad, 0),
			-EINVAL);
	assert_int_equal(dpq_cc_init(&cc, NULL, &bad, 0), -EINVAL);
}

static void
test_initial_window(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_conf conf = { .max_datagram_size = 1500 };

	(void)state;
	/* §7.2: min(10 * mds, max(14720, 2 * mds)) */
	assert_int_equal(dpq_cc_initial_window(1200), 12000);
	assert_int_equal(dpq_cc_initial_window(1500), 14720);
	assert_int_equal(dpq_cc_initial_window(9000), 18000);
	start(&cc);
	assert_int_equal(cc.cwnd, 12000);
	assert_int_equal(cc.bytes_in_flight, 0);
	assert_int_equal(dpq_cc_newreno_ssthresh(&cc), UINT64_MAX);
	assert_int_equal(dpq_cc_init(&cc, &dpq_cc_newreno_ops, &conf, 0), 0);
	assert_int_equal(cc.cwnd, 14720);
	conf.initial_window = 30000;
	assert_int_equal(dpq_cc_init(&cc, &dpq_cc_newreno_ops, &conf, 0), 0);
	assert_int_equal(cc.cwnd, 30000);
}

static void
test_slow_start(void **state)
{
	struct dpq_cc cc;
	int i;

	(void)state;
	start(&cc);
	for (i = 0; i < 10; i++)
		dpq_cc_on_sent(&cc, MDS, 100);
	assert_int_equal(cc.bytes_in_flight, 12000);
	assert_int_equal(dpq_cc_available(&cc), 0);
	/* §7.3.1: + bytes acked */
	ack(&cc, 6000, 100, 1000);
	assert_int_equal(cc.cwnd, 18000);
	assert_int_equal(cc.bytes_in_flight, 6000);
	ack(&cc, 6000, 100, 1000);
	assert_int_equal(cc.cwnd, 24000);
	assert_int_equal(cc.bytes_in_flight, 0);
	assert_int_equal(dpq_cc_available(&cc), 24000);
}

static void
test_one_reduction_per_period(void **state)
{
	struct dpq_cc cc;

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 10 * MDS, 0);
	ack(&cc, 12000, 0, 100);	/* cwnd 24000 */
	dpq_cc_on_sent(&cc, 20 * MDS, 200);
	/* loss of a packet sent at 500, detected at 1000 */
	lose(&cc, MDS, 500, 1000);
	assert_int_equal(dpq_cc_newreno_ssthresh(&cc), 12000);
	assert_int_equal(cc.cwnd, 12000);
	assert_int_equal(cc.bytes_in_flight, 19 * MDS);
	/* §7.3.2: more losses of packets sent before 1000: no change */
	lose(&cc, MDS, 800, 1100);
	lose(&cc, MDS, 1000, 1200);
	assert_int_equal(cc.cwnd, 12000);
	assert_int_equal(cc.bytes_in_flight, 17 * MDS);
	/* acks of packets sent before recovery started: no growth */
	ack(&cc, 2 * MDS, 900, 1300);
	assert_int_equal(cc.cwnd, 12000);
	/* a loss of a packet sent after the period began: new event */
	lose(&cc, MDS, 1001, 1400);
	assert_int_equal(cc.cwnd, 6000);
	/* never below kMinimumWindow = 2 * mds */
	lose(&cc, MDS, 1500, 1600);
	lose(&cc, MDS, 1700, 1800);
	assert_int_equal(cc.cwnd, 2 * MDS);
	assert_int_equal(dpq_cc_newreno_ssthresh(&cc), 1500);
}

static void
test_congestion_avoidance(void **state)
{
	struct dpq_cc cc;
	int i;

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 100 * MDS, 0);
	lose(&cc, 0, 10, 100);		/* cwnd = ssthresh = 6000 */
	assert_int_equal(cc.cwnd, 6000);
	/* §7.3.3: + 1 mds per cwnd of bytes acked (sent after 100) */
	for (i = 0; i < 4; i++)
		ack(&cc, MDS, 200, 300);
	assert_int_equal(cc.cwnd, 6000);
	ack(&cc, MDS, 200, 300);	/* 5 * 1200 = 6000 acked */
	assert_int_equal(cc.cwnd, 7200);
	for (i = 0; i < 5; i++)
		ack(&cc, MDS, 200, 300);	/* 6000 of 7200 */
	assert_int_equal(cc.cwnd, 7200);
	ack(&cc, MDS, 200, 300);
	assert_int_equal(cc.cwnd, 8400);
	/* one big ack worth two windows: + 2 mds */
	ack(&cc, 8400 + 9600, 200, 300);
	assert_int_equal(cc.cwnd, 10800);
}

static void
test_persistent_congestion(void **state)
{
	struct dpq_cc cc;

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 10 * MDS, 0);
	ack(&cc, 5 * MDS, 0, 10);	/* 18000 */
	lose(&cc, 2 * MDS, 50, 100);	/* recovery from 100, cwnd 9000 */
	dpq_cc_on_persistent_congestion(&cc, 200);
	assert_int_equal(cc.cwnd, 2 * MDS);
	/* recovery was reset: a loss of a packet sent before 100 counts
	 * as a new event again (B.8 sets recovery start to 0) */
	lose(&cc, MDS, 60, 300);
	assert_int_equal(dpq_cc_newreno_ssthresh(&cc), MDS);
	assert_int_equal(cc.cwnd, 2 * MDS);
	assert_int_equal(cc.bytes_in_flight, 2 * MDS);
}

static void
test_app_limited(void **state)
{
	struct dpq_cc cc;

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 2 * MDS, 0);
	dpq_cc_set_app_limited(&cc, true);
	ack(&cc, 2 * MDS, 0, 100);
	/* §7.8: no growth, but the flight still shrinks */
	assert_int_equal(cc.cwnd, 12000);
	assert_int_equal(cc.bytes_in_flight, 0);
	dpq_cc_set_app_limited(&cc, false);
	dpq_cc_on_sent(&cc, 2 * MDS, 200);
	ack(&cc, 2 * MDS, 200, 300);
	assert_int_equal(cc.cwnd, 12000 + 2 * MDS);
}

static void
test_ecn_event(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_loss ev = {
		.now = 500,
		.largest_sent_time = 400,
		.ecn_ce = true,
	};

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 5 * MDS, 0);
	dpq_cc_on_loss(&cc, &ev);
	assert_int_equal(cc.cwnd, 6000);
	assert_int_equal(cc.bytes_in_flight, 5 * MDS);
}

static void
test_pacing_and_flight(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt rtt;

	(void)state;
	start(&cc);
	dpq_rtt_init(&rtt, 100000);
	/* slow start: 2 * 12000 B / 0.1 s = 240000 B/s */
	assert_int_equal(dpq_cc_pacing_rate(&cc, &rtt), 240000);
	/* §7.7 after slow start: 1.25 * 12000 B / 0.1 s = 150000 B/s */
	cc.ssthresh = 12000;
	assert_int_equal(dpq_cc_pacing_rate(&cc, &rtt), 150000);
	rtt.smoothed = 0;
	assert_int_equal(dpq_cc_pacing_rate(&cc, &rtt), UINT64_MAX);
	assert_int_equal(dpq_cc_pacing_rate(&cc, NULL), UINT64_MAX);
	cc.cwnd = UINT64_MAX / 2;	/* no overflow */
	rtt.smoothed = 1000000;
	assert_true(dpq_cc_pacing_rate(&cc, &rtt) >= UINT64_MAX / 2);
	/* §6.4: discarded bytes leave the flight; never below zero */
	cc.bytes_in_flight = 3000;
	dpq_cc_on_discard(&cc, 1000);
	assert_int_equal(cc.bytes_in_flight, 2000);
	dpq_cc_on_discard(&cc, 5000);
	assert_int_equal(cc.bytes_in_flight, 0);
}


/* A spurious congestion event is undone: window and threshold come back,
 * and the next loss is a new event. Not after ECN-CE or persistent
 * congestion. */
static void
test_spurious_undo(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_loss ce = { .now = 3000, .largest_sent_time = 2500,
		.ecn_ce = true };

	(void)state;
	start(&cc);
	dpq_cc_on_sent(&cc, 20 * MDS, 0);
	ack(&cc, 12000, 0, 100);		/* slow start: 24000 */
	lose(&cc, MDS, 500, 1000);
	assert_int_equal(cc.cwnd, 12000);
	assert_string_equal(dpq_cc_state_name(&cc), "recovery");
	dpq_cc_on_spurious(&cc, 1100);
	assert_int_equal(cc.cwnd, 24000);
	assert_int_equal(cc.ssthresh, UINT64_MAX);
	assert_int_equal(cc.spurious_undos, 1);
	assert_string_equal(dpq_cc_state_name(&cc), "slow_start");
	/* a second undo has nothing to restore */
	dpq_cc_on_spurious(&cc, 1200);
	assert_int_equal(cc.cwnd, 24000);
	/* the period was cancelled: a loss of a packet sent before 1000
	 * is a new event */
	lose(&cc, MDS, 900, 1300);
	assert_int_equal(cc.cwnd, 12000);
	/* ECN-CE: real congestion, no undo */
	dpq_cc_on_loss(&cc, &ce);
	assert_int_equal(cc.cwnd, 6000);
	dpq_cc_on_spurious(&cc, 3100);
	assert_int_equal(cc.cwnd, 6000);
	/* persistent congestion: no undo either */
	lose(&cc, MDS, 3500, 4000);
	dpq_cc_on_persistent_congestion(&cc, 4100);
	dpq_cc_on_spurious(&cc, 4200);
	assert_int_equal(cc.cwnd, 2 * MDS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spurious_undo),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_initial_window),
		cmocka_unit_test(test_slow_start),
		cmocka_unit_test(test_one_reduction_per_period),
		cmocka_unit_test(test_congestion_avoidance),
		cmocka_unit_test(test_persistent_congestion),
		cmocka_unit_test(test_app_limited),
		cmocka_unit_test(test_ecn_event),
		cmocka_unit_test(test_pacing_and_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
