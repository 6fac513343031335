/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cubic.c: CUBIC (RFC 9438): K and W_cubic against the RFC's
 * equations, the window over time with ACK clocking against the curve
 * (concave up to W_max, plateau, convex beyond), the Reno-friendly region
 * on a short RTT, multiplicative decrease and fast convergence, one
 * reduction per recovery period, persistent congestion, spurious undo,
 * no growth (and no leap afterwards) while application limited.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/cc_cubic.h"

#define MSS	1200
#define MS	UINT64_C(1000)

static void
start(struct dpq_cc *cc, uint64_t iw)
{
	struct dpq_cc_conf conf = { .max_datagram_size = MSS,
		.initial_window = iw };

	assert_int_equal(dpq_cc_init(cc, dpq_cc_find("cubic"), &conf, 0), 0);
}

static void
ack(struct dpq_cc *cc, struct dpq_rtt *rtt, uint64_t bytes,
		uint64_t sent_time, uint64_t now)
{
	struct dpq_cc_ack ev = {
		.now = now,
		.bytes_acked = bytes,
		.packets_acked = 1,
		.largest_sent_time = sent_time,
		.rtt = rtt,
	};

	dpq_cc_on_sent(cc, (uint32_t)bytes, sent_time);
	dpq_cc_on_ack(cc, &ev);
}

static void
lose(struct dpq_cc *cc, uint64_t sent_time, uint64_t now)
{
	struct dpq_cc_loss ev = {
		.now = now,
		.bytes_lost = 0,
		.packets_lost = 1,
		.largest_sent_time = sent_time,
	};

	dpq_cc_on_loss(cc, &ev);
}

/* RFC 9438 eq. 1 and 2 written out independently. */
static double
rfc_k(double wmax_seg, double cwnd_epoch_seg)
{
	return cbrt((wmax_seg - cwnd_epoch_seg) / 0.4);
}

static double
rfc_w(double wmax_seg, double k, double t)
{
	return 0.4 * pow(t - k, 3) + wmax_seg;
}

static void
test_formulas(void **state)
{
	(void)state;
	/* W_max 100 segments, beta 0.7: K = cbrt(30 / 0.4) = cbrt(75) */
	assert_true(fabs(dpq_cubic_k(100.0 * MSS, 70.0 * MSS, MSS) -
			rfc_k(100, 70)) < 1e-9);
	assert_true(fabs(rfc_k(100, 70) - 4.2171633) < 1e-6);
	assert_true(dpq_cubic_k(100.0 * MSS, 120.0 * MSS, MSS) == 0.0);
	for (double t = 0; t < 10; t += 0.37)
		assert_true(fabs(dpq_cubic_w(100.0 * MSS, 4.2171633, t, MSS) -
				rfc_w(100, 4.2171633, t) * MSS) < 1e-6);
	/* W_cubic(0) = cwnd_epoch, W_cubic(K) = W_max */
	assert_true(fabs(rfc_w(100, rfc_k(100, 70), 0) - 70) < 1e-9);
	assert_true(fabs(dpq_cubic_w(100.0 * MSS, rfc_k(100, 70),
			rfc_k(100, 70), MSS) - 100.0 * MSS) < 1e-6);
}

/* Drive a cwnd-limited flow with ACK clocking: every RTT the whole
 * window is acknowledged, one MSS per ACK, spread over the RTT. */
static void
clock_rtt(struct dpq_cc *cc, struct dpq_rtt *rtt, uint64_t *now)
{
	uint64_t n = cc->cwnd / MSS, i, step;

	if (n == 0)
		n = 1;
	step = rtt->smoothed / n;
	for (i = 0; i < n; i++) {
		*now += step;
		ack(cc, rtt, MSS, *now - rtt->smoothed, *now);
	}
}

static void
test_loss_and_curve(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt rtt;
	struct dpq_cubic_view v;
	uint64_t now = 0, t0;
	double k, worst = 0;

	(void)state;
	/* a long RTT keeps the Reno-friendly estimate below the curve for
	 * the 8 s followed (26 RTTs: W_est 70 + 0.53 * 26 = 84 segments) */
	dpq_rtt_init(&rtt, 300 * MS);
	start(&cc, 100 * MSS);
	assert_string_equal(dpq_cc_state_name(&cc), "slow_start");
	/* a loss at 100 segments */
	lose(&cc, 0, 10 * MS);
	assert_int_equal(cc.ssthresh, 70 * MSS);	/* §4.6: 0.7 */
	assert_int_equal(cc.cwnd, 70 * MSS);
	assert_string_equal(dpq_cc_state_name(&cc), "recovery");
	dpq_cc_cubic_view(&cc, &v);
	assert_true(fabs(v.w_max - 100.0 * MSS) < 1e-6);
	assert_true(fabs(v.cwnd_prior - 100.0 * MSS) < 1e-6);
	/* acks of packets sent before the event: no growth */
	ack(&cc, &rtt, MSS, 5 * MS, 20 * MS);
	assert_int_equal(cc.cwnd, 70 * MSS);
	/* the first ACK in avoidance starts the epoch: K = cbrt(75) */
	now = 300 * MS;
	ack(&cc, &rtt, MSS, 50 * MS, now);
	dpq_cc_cubic_view(&cc, &v);
	assert_int_equal(v.epoch_start, now);
	k = rfc_k(100, 70);
	assert_true(fabs(v.k - k) < 1e-9);
	t0 = now;
	/* follow the window for 8 s: it tracks W_cubic one RTT ahead
	 * (ACK clocking lags by about one RTT, so compare with W(t)) */
	while (now - t0 < 8000 * MS) {
		double t, w, err;

		clock_rtt(&cc, &rtt, &now);
		t = (double)(now - t0) / 1e6;
		w = rfc_w(100, k, t) * MSS;
		err = fabs((double)cc.cwnd - w) / w;
		if (err > worst)
			worst = err;
		/* never more than 1.5 cwnd per RTT, never below W_est */
		dpq_cc_cubic_view(&cc, &v);
		assert_true((double)cc.cwnd + 1 >= v.w_est ||
				v.reno_friendly);
		if (fabs(t - k) < 0.35) {
			/* the plateau: close to W_max, concave below it */
			assert_true(fabs((double)cc.cwnd - 100.0 * MSS) <
					3.0 * MSS);
		}
	}
	print_message("CUBIC window vs RFC 9438 W_cubic(t): worst relative "
			"error %.3f over 8 s\n", worst);
	assert_true(worst < 0.03);
	/* beyond K the curve is convex: W(8 s) = 0.4 * 3.78^3 + 100 =
	 * 121.6 segments */
	assert_true(cc.cwnd > 115 * MSS);
	assert_string_equal(dpq_cc_state_name(&cc), "convex");
}

/* A short RTT: Reno's one-segment-per-RTT growth is faster than the
 * cubic curve, and CUBIC must not be less aggressive (§4.3). */
static void
test_reno_friendly(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt rtt;
	struct dpq_cubic_view v;
	uint64_t now = 0, t0;
	double w_est = 0;
	int r;

	(void)state;
	dpq_rtt_init(&rtt, 1 * MS);
	start(&cc, 20 * MSS);
	lose(&cc, 0, 1);
	assert_int_equal(cc.cwnd, 14 * MSS);
	now = 2 * MS;
	t0 = now;
	for (r = 0; r < 200; r++)
		clock_rtt(&cc, &rtt, &now);
	dpq_cc_cubic_view(&cc, &v);
	assert_true(v.reno_friendly);
	assert_string_equal(dpq_cc_state_name(&cc), "reno_friendly");
	/* 200 RTTs of 1 ms: the cubic curve moved by a few segments only,
	 * the window by about alpha (0.53) then 1 segment per RTT */
	assert_true((double)cc.cwnd > rfc_w(20, rfc_k(20, 14),
			(double)(now - t0) / 1e6) * MSS + 50 * MSS);
	w_est = v.w_est;
	assert_true(fabs((double)cc.cwnd - w_est) <= 1.0);
	/* W_est passed cwnd_prior (20): alpha became 1, so ~1 per RTT */
	for (r = 0; r < 10; r++)
		clock_rtt(&cc, &rtt, &now);
	dpq_cc_cubic_view(&cc, &v);
	assert_true(v.w_est - w_est > 9.0 * MSS && v.w_est - w_est < 11.0 * MSS);
}

/* §4.7: a congestion event before the last W_max was reached again
 * lowers W_max further; one reduction per recovery period. */
static void
test_fast_convergence(void **state)
{
	struct dpq_cc cc;
	struct dpq_cubic_view v;

	(void)state;
	start(&cc, 100 * MSS);
	lose(&cc, 0, 10);
	assert_int_equal(cc.cwnd, 70 * MSS);
	/* more losses of packets sent before the period: nothing */
	lose(&cc, 5, 20);
	assert_int_equal(cc.cwnd, 70 * MSS);
	/* a new event at cwnd 70 < W_max 100 */
	lose(&cc, 30, 40);
	dpq_cc_cubic_view(&cc, &v);
	assert_true(fabs(v.w_max - 70.0 * MSS * 1.7 / 2) < 1e-6);
	assert_int_equal(cc.cwnd, 49 * MSS);
	assert_true(fabs(v.cwnd_prior - 70.0 * MSS) < 1e-6);
	/* never below the minimum window */
	for (uint64_t t = 50; t < 500; t += 10)
		lose(&cc, t, t + 5);
	assert_int_equal(cc.cwnd, 2 * MSS);
}

static void
test_undo_and_persistent(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt rtt;
	struct dpq_cubic_view before, after;
	uint64_t now = 0;
	int r;

	(void)state;
	dpq_rtt_init(&rtt, 50 * MS);
	start(&cc, 40 * MSS);
	lose(&cc, 0, 1);
	now = 100 * MS;
	for (r = 0; r < 10; r++)
		clock_rtt(&cc, &rtt, &now);
	dpq_cc_cubic_view(&cc, &before);
	uint64_t cwnd = cc.cwnd, ss = cc.ssthresh;

	lose(&cc, now - 1, now);
	assert_true(cc.cwnd < cwnd);
	dpq_cc_on_spurious(&cc, now + 10 * MS);
	dpq_cc_cubic_view(&cc, &after);
	assert_int_equal(cc.cwnd, cwnd);
	assert_int_equal(cc.ssthresh, ss);
	assert_true(after.w_max == before.w_max);
	assert_true(after.k == before.k);
	assert_int_equal(after.epoch_start, before.epoch_start);
	assert_int_equal(cc.spurious_undos, 1);
	/* persistent congestion: the minimum window, not undone */
	lose(&cc, now + 20 * MS, now + 30 * MS);
	dpq_cc_on_persistent_congestion(&cc, now + 40 * MS);
	assert_int_equal(cc.cwnd, 2 * MSS);
	dpq_cc_on_spurious(&cc, now + 50 * MS);
	assert_int_equal(cc.cwnd, 2 * MSS);
	/* then slow start up to ssthresh */
	assert_string_equal(dpq_cc_state_name(&cc), "slow_start");
}

static void
test_app_limited(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt rtt;
	struct dpq_cubic_view v;
	uint64_t now = 0, cwnd, epoch;
	int r;

	(void)state;
	dpq_rtt_init(&rtt, 100 * MS);
	start(&cc, 100 * MSS);
	lose(&cc, 0, 1);
	now = 200 * MS;
	clock_rtt(&cc, &rtt, &now);
	dpq_cc_cubic_view(&cc, &v);
	epoch = v.epoch_start;
	cwnd = cc.cwnd;
	/* 5 s with little to send: no growth */
	dpq_cc_set_app_limited(&cc, true);
	for (r = 0; r < 50; r++)
		clock_rtt(&cc, &rtt, &now);
	assert_int_equal(cc.cwnd, cwnd);
	assert_string_equal(dpq_cc_state_name(&cc), "application_limited");
	/* data again: the epoch moved by the time spent limited, so the
	 * next RTT grows like the one before the pause, not like t = 5 s */
	dpq_cc_set_app_limited(&cc, false);
	clock_rtt(&cc, &rtt, &now);
	dpq_cc_cubic_view(&cc, &v);
	assert_true(v.epoch_start >= epoch + 4900 * MS);
	assert_true(cc.cwnd < cwnd + 10 * MSS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formulas),
		cmocka_unit_test(test_loss_and_curve),
		cmocka_unit_test(test_reno_friendly),
		cmocka_unit_test(test_fast_convergence),
		cmocka_unit_test(test_undo_and_persistent),
		cmocka_unit_test(test_app_limited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
