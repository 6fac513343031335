/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hystart.c: HyStart++ (RFC 9406): rounds by send time, the minimum
 * RTT of a round against the last one (at least 8 samples, threshold
 * clamp(min / 8, 4 ms, 16 ms)), Conservative Slow Start at a quarter of
 * the growth for 5 rounds, the return to slow start when the RTT falls
 * back, and NewReno and CUBIC leaving their first slow start through it
 * without a reduction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/cc.h"
#include "dataplane/engine/hystart.h"

#define MDS 1200
#define MS 1000

struct run {
	struct dpq_rtt rtt;
	uint64_t now;		/* us */
	uint64_t sent;		/* send time of what the next ACK acks */
};

/* One round: n ACKs of MDS bytes spaced 100 us, every one with an RTT
 * sample of rtt_us, for packets sent at the round's start (so the first
 * ACK of the round ends the previous one). Returns the growth summed;
 * *left: some ACK said "leave". */
static uint64_t
round_of(struct dpq_hystart *h, struct run *r, unsigned int n,
		uint64_t rtt_us, bool *left)
{
	uint64_t grow = 0;
	unsigned int i;

	*left = false;
	r->sent = r->now + 1;	/* sent after the last round began */
	r->now += rtt_us;
	for (i = 0; i < n; i++) {
		struct dpq_cc_ack ev = {
			.now = r->now,
			.bytes_acked = MDS,
			.packets_acked = 1,
			.largest_sent_time = r->sent,
			.rtt = &r->rtt,
			.rtt_sampled = true,
		};
		bool leave;

		r->rtt.latest = rtt_us;
		grow += dpq_hystart_on_ack(h, &ev, &leave);
		*left |= leave;
		r->now += 100;
	}
	return grow;
}

static void
test_steady_rtt_stays(void **state)
{
	struct dpq_hystart h;
	struct run r = { .now = 1000 };
	bool left;
	int k;

	(void)state;
	dpq_hystart_init(&h, r.now);
	for (k = 0; k < 10; k++) {
		/* 3.9 ms of rise at 20 ms: below the 4 ms floor. */
		uint64_t rtt = k < 5 ? 20 * MS : 20 * MS + 3900;

		assert_int_equal(round_of(&h, &r, 16, rtt, &left), 16 * MDS);
		assert_false(left);
		assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
	}
}

static void
test_rise_enters_css_then_leaves(void **state)
{
	struct dpq_hystart h;
	struct run r = { .now = 1000 };
	uint64_t g;
	bool left;
	int k;

	(void)state;
	dpq_hystart_init(&h, r.now);
	round_of(&h, &r, 16, 20 * MS, &left);
	round_of(&h, &r, 16, 20 * MS, &left);
	/* +4 ms: the 8th sample of the round decides; the first 7 ACKs
	 * grow fully, the rest by a quarter. */
	g = round_of(&h, &r, 16, 24 * MS, &left);
	assert_int_equal(h.state, DPQ_HYSTART_CSS);
	assert_true(dpq_hystart_in_css(&h));
	assert_false(left);
	assert_int_equal(g, 7 * MDS + 9 * (MDS / 4));
	assert_int_equal(h.exits, 1);
	/* CSS rounds grow by a quarter; the 5th completed round leaves. */
	for (k = 1; k < DPQ_HYSTART_CSS_ROUNDS; k++) {
		g = round_of(&h, &r, 16, 25 * MS, &left);
		assert_false(left);
		assert_int_equal(g, 16 * (MDS / 4));
	}
	round_of(&h, &r, 16, 25 * MS, &left);
	assert_true(left);
	assert_int_equal(h.state, DPQ_HYSTART_DONE);
	/* Done: it no longer decides anything. */
	assert_int_equal(round_of(&h, &r, 4, 90 * MS, &left), 4 * MDS);
	assert_false(left);
}

static void
test_css_false_alarm(void **state)
{
	struct dpq_hystart h;
	struct run r = { .now = 1000 };
	bool left;

	(void)state;
	dpq_hystart_init(&h, r.now);
	round_of(&h, &r, 16, 20 * MS, &left);
	round_of(&h, &r, 16, 26 * MS, &left);
	assert_int_equal(h.state, DPQ_HYSTART_CSS);
	/* The next round's minimum is below the one that started CSS. */
	assert_int_equal(round_of(&h, &r, 16, 21 * MS, &left),
			7 * (MDS / 4) + 9 * MDS);
	assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
	assert_false(left);
}

static void
test_needs_samples_and_clamps(void **state)
{
	struct dpq_hystart h;
	struct run r = { .now = 1000 };
	bool left;

	(void)state;
	/* Seven samples per round: never enough to decide. */
	dpq_hystart_init(&h, r.now);
	round_of(&h, &r, 7, 20 * MS, &left);
	round_of(&h, &r, 7, 40 * MS, &left);
	round_of(&h, &r, 7, 80 * MS, &left);
	assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
	/* At 200 ms the threshold is 16 ms (200 / 8 = 25 clamped):
	 * +15 ms stays, +16 ms enters CSS. */
	dpq_hystart_init(&h, r.now);
	round_of(&h, &r, 8, 200 * MS, &left);
	round_of(&h, &r, 8, 215 * MS, &left);
	assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
	round_of(&h, &r, 8, 231 * MS, &left);
	assert_int_equal(h.state, DPQ_HYSTART_CSS);
	/* ACKs without an RTT sample count for nothing. */
	dpq_hystart_init(&h, r.now);
	{
		struct dpq_cc_ack ev = { .now = r.now + 10, .bytes_acked = MDS,
			.largest_sent_time = r.now + 5 };
		int i;

		for (i = 0; i < 20; i++)
			assert_int_equal(dpq_hystart_on_ack(&h, &ev, &left),
					MDS);
		assert_int_equal(h.rtt_samples, 0);
	}
}

/* NewReno and CUBIC: an RTT rise in the first slow start ends it with
 * ssthresh = cwnd and no reduction (RFC 9406 §4.2). */
static void
cc_leaves_on_rise(const char *name)
{
	struct dpq_cc_conf conf = { .max_datagram_size = MDS };
	struct dpq_cc cc;
	struct dpq_rtt rtt = { 0 };
	struct dpq_cc_info info;
	uint64_t now = 1000, sent, before;
	int k, i;

	assert_int_equal(dpq_cc_init(&cc, dpq_cc_find(name), &conf, now), 0);
	for (k = 0; k < 12 && cc.ssthresh == UINT64_MAX; k++) {
		sent = now + 1;
		now += k < 3 ? 20 * MS : 30 * MS;
		for (i = 0; i < 16 && cc.ssthresh == UINT64_MAX; i++) {
			struct dpq_cc_ack ev = {
				.now = now, .bytes_acked = MDS,
				.packets_acked = 1, .largest_sent_time = sent,
				.rtt = &rtt, .rtt_sampled = true,
			};

			rtt.latest = k < 3 ? 20 * MS : 30 * MS;
			dpq_cc_on_sent(&cc, MDS, now);
			dpq_cc_on_ack(&cc, &ev);
			now += 100;
		}
		if (k == 3) {
			dpq_cc_get_info(&cc, &info);
			assert_int_equal(info.phase, DPQ_CC_PHASE_SLOW_START);
			assert_string_equal(dpq_cc_state_name(&cc),
					"conservative_slow_start");
		}
	}
	/* 3 slow-start rounds, CSS entered in the 4th, left 5 rounds on. */
	assert_int_equal(k, 9);
	assert_int_equal(cc.ssthresh, cc.cwnd);
	before = cc.cwnd;
	assert_true(before > dpq_cc_initial_window(MDS));
	dpq_cc_get_info(&cc, &info);
	assert_int_equal(info.phase, DPQ_CC_PHASE_AVOIDANCE);
}

static void
test_newreno_uses_it(void **state)
{
	(void)state;
	cc_leaves_on_rise("newreno");
}

static void
test_cubic_uses_it(void **state)
{
	(void)state;
	cc_leaves_on_rise("cubic");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_rtt_stays),
		cmocka_unit_test(test_rise_enters_css_then_leaves),
		cmocka_unit_test(test_css_false_alarm),
		cmocka_unit_test(test_needs_samples_and_clamps),
		cmocka_unit_test(test_newreno_uses_it),
		cmocka_unit_test(test_cubic_uses_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
