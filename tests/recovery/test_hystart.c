/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hystart.c: HyStart++ (RFC 9406): rounds by send time, the minimum
 * RTT of a round against the last one (at least 8 samples, threshold
 * clamp(min / 8, 4 ms, 16 ms)), Conservative Slow Start at a quarter of
 * the growth for 5 rounds, the return to slow start when the RTT falls
 * back, and NewReno and CUBIC leaving their first slow start through it
 * without a reduction; the paced delay signal (hystart.h): a paced
 * sender leaves slow start on a rise far below RFC 9406's 4 ms floor,
 * measured against the path's own noise, and an unpaced one does not.
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

/* One round of n ACKs as round_of(), the RTT of ACK i from rtt_of(i).
 * Returns the index of the ACK that said "leave", or -1. */
static int
round_fn(struct dpq_hystart *h, struct run *r, unsigned int n,
		uint64_t (*rtt_of)(unsigned int i, void *arg), void *arg,
		uint64_t *grow)
{
	unsigned int i;
	int at = -1;

	r->sent = r->now + 1;
	r->now += 20 * MS;
	*grow = 0;
	for (i = 0; i < n; i++) {
		struct dpq_cc_ack ev = {
			.now = r->now, .bytes_acked = MDS, .packets_acked = 1,
			.largest_sent_time = r->sent, .rtt = &r->rtt,
			.rtt_sampled = true,
		};
		bool leave;

		r->rtt.latest = rtt_of(i, arg);
		*grow += dpq_hystart_on_ack(h, &ev, &leave);
		r->now += 100;
		if (leave)
			return (int)i;	/* the caller sets ssthresh */
	}
	return at;
}

/* 20 ms, 0-40 us of noise, and one ACK the peer delayed by 25 ms. */
static uint64_t
quiet(unsigned int i, void *arg)
{
	(void)arg;
	return i == 5 ? 45 * MS : 20 * MS + (i % 3) * 20;
}

/* The same until ACK 6, then a queue of *(uint64_t *)arg us. */
static uint64_t
rise_at_6(unsigned int i, void *arg)
{
	return i < 6 ? 20 * MS + (i % 3) * 20 : 20 * MS +
		*(const uint64_t *)arg;
}

/* 1 ms of noise: 20 ms and 21 ms by turns. */
static uint64_t
noisy(unsigned int i, void *arg)
{
	(void)arg;
	return 20 * MS + (i % 2) * MS;
}

static void
test_paced_small_rise(void **state)
{
	uint64_t rise = 600, grow;
	int paced, k, at;

	(void)state;
	for (paced = 0; paced < 2; paced++) {
		struct dpq_hystart h;
		struct run r = { .now = 1000 };

		dpq_hystart_init(&h, r.now);
		dpq_hystart_set_paced(&h, paced);
		for (k = 0; k < 3; k++)
			assert_int_equal(round_fn(&h, &r, 16, quiet, NULL,
					&grow), -1);
		/* +0.6 ms (a 1.2 ms queue half full): paced, the 4th
		 * raised sample fills the window and ends slow start, with
		 * no growth for that ACK and no CSS. */
		at = round_fn(&h, &r, 16, rise_at_6, &rise, &grow);
		if (paced) {
			assert_int_equal(at, 6 + DPQ_HYSTART_PACED_WIN - 1);
			assert_int_equal(grow, (uint64_t)at * MDS);
			assert_int_equal(h.state, DPQ_HYSTART_DONE);
			assert_int_equal(h.paced_exits, 1);
		} else {
			assert_int_equal(at, -1);
			assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
			assert_int_equal(h.exits, 0);
		}
	}
}

static void
test_paced_threshold_follows_noise(void **state)
{
	static const uint64_t rises[] = { 1400, 1600 };
	uint64_t grow;
	size_t i;
	int k, at;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct dpq_hystart h;
		struct run r = { .now = 1000 };

		dpq_hystart_init(&h, r.now);
		dpq_hystart_set_paced(&h, true);
		for (k = 0; k < 3; k++)
			assert_int_equal(round_fn(&h, &r, 16, noisy, NULL,
					&grow), -1);
		/* The path moves by 1 ms on its own: the threshold is
		 * 1.5 ms; 1.4 ms is no evidence, 1.6 ms is. */
		at = round_fn(&h, &r, 16, rise_at_6, (void *)&rises[i], &grow);
		if (i == 0) {
			assert_int_equal(at, -1);
			assert_int_equal(h.state, DPQ_HYSTART_SLOW_START);
		} else {
			assert_int_equal(at, 6 + DPQ_HYSTART_PACED_WIN - 1);
			assert_int_equal(h.state, DPQ_HYSTART_DONE);
		}
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
		cmocka_unit_test(test_paced_small_rise),
		cmocka_unit_test(test_paced_threshold_follows_noise),
		cmocka_unit_test(test_newreno_uses_it),
		cmocka_unit_test(test_cubic_uses_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
