/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_capest.c: the capacity probe of a paced first slow start
 * (dataplane/engine/capest.h, hystart.h): trains of datagrams sent back
 * to back, their ACKs spaced by a bottleneck of known rate, give that
 * rate once seven trains agree; compressed, scattered, reordered and
 * lossy trains give nothing; paced (not back-to-back) sends are no
 * trains; with jitter the median stays near the rate. Then what HyStart
 * does with it: slow start paced at no more than the estimate's lower
 * bound (the median less half the samples' scatter), ended when the
 * window reaches that rate times min_rtt, and after that, until the
 * first congestion event, no pacing above max(that bound, cwnd / srtt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/capest.h"
#include "dataplane/engine/cc.h"
#include "dataplane/engine/hystart.h"

#define PKT	1250
#define RATE	UINT64_C(12500000)	/* 100 Mbit/s: one PKT per 100 us */
#define TAU	100			/* us */
#define RTT	20000			/* us */

struct path {
	uint64_t now;		/* us */
	uint64_t delivered, lost;
};

/*
 * Send a train of n datagrams at p->now, then deliver its ACKs: the
 * bottleneck spaces the datagrams TAU apart, the peer acks every second
 * one at once; ack i arrives at gap[i] us after the train's first ACK
 * (NULL: 2 * TAU * i). Then one paced datagram and its ACK end the
 * train. p->now moves on by an RTT.
 */
/* n datagrams at once at sent, then a paced one 1 ms later. */
static void
send_train(struct dpq_capest *e, unsigned int n, uint64_t sent)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		dpq_capest_on_sent(e, PKT, sent);
	dpq_capest_on_sent(e, PKT, sent + 1000);
}

static void
train(struct dpq_capest *e, struct path *p, unsigned int n,
		const uint64_t *gap)
{
	uint64_t sent = p->now, t0 = sent + RTT;
	unsigned int i;

	/* The paced datagram is acked on its own after the train. */
	send_train(e, n, sent);
	for (i = 0; i < n / 2; i++) {
		p->delivered += 2 * PKT;
		dpq_capest_on_ack(e, t0 + (gap != NULL ? gap[i] : 2 * TAU * i),
				sent, p->delivered, p->lost);
	}
	p->delivered += PKT;
	dpq_capest_on_ack(e, t0 + 1000 + n * TAU, sent + 1000, p->delivered,
			p->lost);
	p->now = t0 + 2000;
}

static void
test_train_gives_rate(void **state)
{
	struct dpq_capest e;
	struct path p = { .now = 1000000 };
	unsigned int i;

	(void)state;
	dpq_capest_init(&e);
	for (i = 0; i < DPQ_CAPEST_SAMPLES; i++) {
		/* Nothing until seven trains agree. */
		assert_int_equal(dpq_capest_get(&e), 0);
		train(&e, &p, DPQ_CAPEST_TRAIN_PKTS, NULL);
	}
	assert_int_equal(e.trains, DPQ_CAPEST_SAMPLES);
	assert_int_equal(e.rejected, 0);
	/* 3 intervals of 2 TAU, 6 datagrams: exactly the rate. */
	assert_int_equal(dpq_capest_get(&e), RATE);
}

static void
test_paced_sends_are_no_train(void **state)
{
	struct dpq_capest e;
	struct path p = { .now = 1000000 };
	uint64_t t;
	unsigned int i;

	(void)state;
	dpq_capest_init(&e);
	/* One datagram every 100 us, acked every second one. */
	for (t = p.now, i = 0; i < 400; i++, t += TAU) {
		dpq_capest_on_sent(&e, PKT, t);
		if (i % 2 == 1) {
			p.delivered += 2 * PKT;
			dpq_capest_on_ack(&e, t + RTT, t, p.delivered, 0);
		}
	}
	assert_int_equal(e.trains, 0);
	assert_int_equal(dpq_capest_get(&e), 0);
	/* Five back to back are not a train either. */
	for (i = 0; i < 5; i++)
		dpq_capest_on_sent(&e, PKT, t);
	dpq_capest_on_sent(&e, PKT, t + 1000);
	assert_int_equal(e.trains, 0);
}

static void
test_compressed_acks_give_nothing(void **state)
{
	static const uint64_t at_once[4] = { 0, 0, 0, 0 };
	/* A middlebox (or a receiver) that batches: the train's ACKs come
	 * in clumps, some trains 4-8 times too fast. */
	static const uint64_t clumped[4] = { 0, 50, 100, 150 };
	static const uint64_t clumped2[4] = { 0, 1, 2, 75 };
	struct dpq_capest e;
	struct path p = { .now = 1000000 };
	unsigned int i;

	(void)state;
	dpq_capest_init(&e);
	for (i = 0; i < 3 * DPQ_CAPEST_SAMPLES; i++)
		train(&e, &p, DPQ_CAPEST_TRAIN_PKTS, at_once);
	assert_int_equal(e.rejected, 3 * DPQ_CAPEST_SAMPLES);
	assert_int_equal(dpq_capest_get(&e), 0);
	/* Mixed with good trains: the samples disagree, no estimate. */
	for (i = 0; i < 3 * DPQ_CAPEST_SAMPLES; i++)
		train(&e, &p, DPQ_CAPEST_TRAIN_PKTS,
				i % 3 == 0 ? clumped : i % 3 == 1 ? clumped2 :
				NULL);
	assert_int_equal(dpq_capest_get(&e), 0);
	/* Good trains only: the compressed ones age out. */
	for (i = 0; i < DPQ_CAPEST_SAMPLES; i++)
		train(&e, &p, DPQ_CAPEST_TRAIN_PKTS, NULL);
	assert_int_equal(dpq_capest_get(&e), RATE);
}

static void
test_reordered_or_lossy_trains_rejected(void **state)
{
	struct dpq_capest e;
	struct path p = { .now = 1000000 };
	uint64_t sent, t0;
	unsigned int i, k;

	(void)state;
	dpq_capest_init(&e);
	for (k = 0; k < DPQ_CAPEST_SAMPLES; k++) {
		sent = p.now;
		t0 = sent + RTT;
		send_train(&e, DPQ_CAPEST_TRAIN_PKTS, sent);
		/* Two ACKs of the train, then one of the later datagram
		 * overtakes the rest (reordering): the train's two
		 * remaining ACKs come after it. */
		for (i = 0; i < 2; i++) {
			p.delivered += 2 * PKT;
			dpq_capest_on_ack(&e, t0 + 2 * TAU * i, sent,
					p.delivered, p.lost);
		}
		p.delivered += PKT;
		dpq_capest_on_ack(&e, t0 + 4 * TAU, sent + 1000, p.delivered,
				p.lost);
		for (i = 2; i < 4; i++) {
			p.delivered += 2 * PKT;
			dpq_capest_on_ack(&e, t0 + 2 * TAU * i + 10, sent,
					p.delivered, p.lost);
		}
		p.now = t0 + 2000;
	}
	assert_int_equal(e.rejected, DPQ_CAPEST_SAMPLES);
	assert_int_equal(dpq_capest_get(&e), 0);

	/* A loss declared while a train's ACKs come in. */
	dpq_capest_init(&e);
	for (k = 0; k < DPQ_CAPEST_SAMPLES; k++) {
		sent = p.now;
		t0 = sent + RTT;
		send_train(&e, DPQ_CAPEST_TRAIN_PKTS, sent);
		for (i = 0; i < 4; i++) {
			if (i == 2)
				p.lost += PKT;
			else
				p.delivered += 2 * PKT;
			dpq_capest_on_ack(&e, t0 + 2 * TAU * i, sent,
					p.delivered, p.lost);
		}
		p.delivered += PKT;
		dpq_capest_on_ack(&e, t0 + 1000, sent + 1000, p.delivered,
				p.lost);
		p.now = t0 + 2000;
	}
	assert_int_equal(e.rejected, DPQ_CAPEST_SAMPLES);
	assert_int_equal(dpq_capest_get(&e), 0);
}

static void
test_jitter_median(void **state)
{
	struct dpq_capest e;
	struct path p = { .now = 1000000 };
	uint64_t gap[4], x = 12345;
	unsigned int i, k;

	(void)state;
	dpq_capest_init(&e);
	/* Each ACK up to +-40 us off its place (a fifth of the 200 us
	 * between ACKs). */
	for (k = 0; k < 40; k++) {
		for (i = 0; i < 4; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			gap[i] = 40 + 2 * TAU * i + (x >> 33) % 81 - 40;
		}
		gap[0] = 40;	/* the first is the reference */
		train(&e, &p, DPQ_CAPEST_TRAIN_PKTS, gap);
	}
	print_message("estimate %lu (rate %lu)\n",
			(unsigned long)dpq_capest_get(&e),
			(unsigned long)RATE);
	assert_true(dpq_capest_get(&e) >= RATE * 9 / 10);
	assert_true(dpq_capest_get(&e) <= RATE * 11 / 10);
}

/* HyStart with an estimate: pacing ceiling, the exit, and after. */
static void
test_hystart_uses_estimate(void **state)
{
	struct dpq_hystart h;
	struct dpq_cc cc;
	struct dpq_rtt rtt = { .latest = RTT, .min = RTT, .smoothed = RTT,
		.has_sample = true };
	struct path p = { .now = 1000000 };
	/* ACK spans of 560, 600 and 640 us: samples 13.4, 12.5 and 11.7
	 * MB/s. */
	static const uint64_t gaps[3][4] = {
		{ 0, 187, 373, 560 }, { 0, 200, 400, 600 },
		{ 0, 213, 427, 640 },
	};
	uint64_t cap, bdp, w;
	unsigned int i;

	(void)state;
	memset(&cc, 0, sizeof(cc));
	cc.ssthresh = UINT64_MAX;
	cc.cwnd = 14720;
	cc.max_datagram_size = PKT;
	dpq_hystart_init(&h, p.now);
	/* Unpaced: no probe, no trains asked for. */
	dpq_hystart_on_sent(&h, &cc, PKT, p.now);
	assert_int_equal(cc.pace_train, 0);
	dpq_hystart_set_paced(&h, true);
	dpq_hystart_on_sent(&h, &cc, PKT, p.now);
	assert_int_equal(cc.pace_train, DPQ_CAPEST_TRAIN_PKTS);
	/* Seven trains' worth of samples (fed as the controller does). */
	for (i = 0; i < DPQ_CAPEST_SAMPLES; i++)
		train(&h.cap, &p, DPQ_CAPEST_TRAIN_PKTS, gaps[i % 3]);
	assert_int_equal(dpq_capest_get(&h.cap), RATE);
	/* The ceiling: the median less half the scatter of the middle
	 * samples (13.4 - 11.7 MB/s). */
	cap = dpq_capest_low(&h.cap);
	assert_int_equal(cap, RATE - (7500 * UINT64_C(1000000) / 560 -
			7500 * UINT64_C(1000000) / 640) / 2);
	bdp = cap * RTT / 1000000;
	dpq_hystart_on_sent(&h, &cc, PKT, p.now);
	assert_int_equal(cc.pace_train, 0);	/* measured: no more trains */
	/* Slow start at 2x cwnd / srtt, not above the bound. */
	assert_int_equal(dpq_hystart_pacing_rate(&h, &cc, &rtt, 2, 1),
			dpq_cc_rate_from_cwnd(cc.cwnd, &rtt, 2, 1));
	cc.cwnd = bdp * 3 / 4;
	assert_int_equal(dpq_hystart_pacing_rate(&h, &cc, &rtt, 2, 1), cap);
	/* Slow start goes on below the bound x min_rtt, ends at it. */
	for (;;) {
		struct dpq_cc_ack ev = {
			.now = p.now += 100,
			.bytes_acked = PKT,
			.packets_acked = 1,
			.largest_sent_time = p.now - RTT,
			.rtt = &rtt,
		};

		dpq_hystart_slow_start(&h, &cc, &ev);
		if (cc.ssthresh != UINT64_MAX)
			break;
		assert_true(cc.cwnd < bdp);
	}
	assert_true(cc.cwnd >= bdp && cc.cwnd < bdp + PKT);
	assert_int_equal(cc.ssthresh, cc.cwnd);
	assert_int_equal(h.cap_exits, 1);
	/* After: 1.25 cwnd / srtt would exceed the capacity; until the
	 * first congestion event the pacer stays at max(bound, cwnd/srtt). */
	assert_true(dpq_cc_rate_from_cwnd(cc.cwnd, &rtt, 5, 4) > RATE);
	w = dpq_cc_rate_from_cwnd(cc.cwnd, &rtt, 1, 1);
	assert_int_equal(dpq_hystart_pacing_rate(&h, &cc, &rtt, 5, 4),
			w > cap ? w : cap);
	assert_true(dpq_hystart_pacing_rate(&h, &cc, &rtt, 5, 4) < RATE);
	cc.cwnd = bdp * 2;
	assert_int_equal(dpq_hystart_pacing_rate(&h, &cc, &rtt, 5, 4),
			dpq_cc_rate_from_cwnd(cc.cwnd, &rtt, 1, 1));
	cc.congestion_events++;
	assert_int_equal(dpq_hystart_pacing_rate(&h, &cc, &rtt, 5, 4),
			dpq_cc_rate_from_cwnd(cc.cwnd, &rtt, 5, 4));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_train_gives_rate),
		cmocka_unit_test(test_paced_sends_are_no_train),
		cmocka_unit_test(test_compressed_acks_give_nothing),
		cmocka_unit_test(test_reordered_or_lossy_trains_rejected),
		cmocka_unit_test(test_jitter_median),
		cmocka_unit_test(test_hystart_uses_estimate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
