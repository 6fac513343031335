/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pacer.c: the pacer's token bucket (RFC 9002 §7.7): the initial
 * window as one burst, then one datagram per mtu / rate exactly, no
 * loss to rounding at slow rates, one burst (not more) after idle, the
 * burst allowance at low and high rates, bounded debt after unpaced
 * sends, "do not pace", and trains (dpq_pacer_set_train): k datagrams
 * back to back every k * mtu / rate, the same average rate; a train the
 * sender does not fill is over; none at rates where a train would hold
 * its first datagram too long.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/pacer.h"

#define MTU	1200
#define S	UINT64_C(1000000)

/* Send as fast as the pacer allows from now until end; count. */
static uint64_t
drain(struct dpq_pacer *p, uint64_t rate, uint64_t *now, uint64_t end)
{
	uint64_t n = 0, t;

	while ((t = dpq_pacer_next(p, rate, *now)) < end) {
		if (t > *now)
			*now = t;
		dpq_pacer_on_sent(p, rate, MTU, *now);
		n++;
	}
	return n;
}

static void
test_steady_rate(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 1200 * 1000;	/* one datagram per ms */
	uint64_t now = 5, n, t, prev;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	/* the initial window leaves at once */
	for (n = 0; n < DPQ_PACER_INITIAL_PKTS; n++) {
		assert_int_equal(dpq_pacer_next(&p, rate, now), now);
		dpq_pacer_on_sent(&p, rate, MTU, now);
	}
	assert_true(dpq_pacer_next(&p, rate, now) > now);
	assert_int_equal(p.held, 1);
	/* then exactly one per millisecond */
	prev = now;
	for (n = 0; n < 1000; n++) {
		t = dpq_pacer_next(&p, rate, now);
		assert_int_equal(t, prev + 1000);
		now = prev = t;
		dpq_pacer_on_sent(&p, rate, MTU, now);
	}
	/* release_time asks without counting */
	n = p.held;
	assert_int_equal(dpq_pacer_release_time(&p, rate, now), now + 1000);
	assert_int_equal(p.held, n);
}

/* 1000 B/s asked every microsecond: the credit of each call is 0.001
 * byte, and must not be rounded away. */
static void
test_slow_rate_no_rounding(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 1000, now = 0, sent = 0;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	p.tokens = 0;
	for (now = 1; now <= 12 * S; now++) {
		if (dpq_pacer_next(&p, rate, now) <= now) {
			dpq_pacer_on_sent(&p, rate, MTU, now);
			sent++;
		}
	}
	/* 12 s at 1000 B/s = 12000 bytes = 10 datagrams */
	assert_int_equal(sent, 10);
}

static void
test_idle_then_burst(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 125000000;	/* 1 Gbit/s: burst 12500 B */
	uint64_t now = 0, n;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	assert_int_equal(dpq_pacer_burst(&p, rate), 12500);
	n = drain(&p, rate, &now, now + 1);
	assert_int_equal(n, DPQ_PACER_INITIAL_PKTS);
	dpq_pacer_idle(&p);	/* nothing more to send for a while */
	/* 10 s idle: one burst of floor(12500 / 1200) datagrams, not
	 * 10 s worth */
	now += 10 * S;
	n = drain(&p, rate, &now, now + 1);
	assert_int_equal(n, 10);
	/* at one datagram per 9.6 us afterwards: 1 s = 104166 */
	n = drain(&p, rate, &now, now + S);
	assert_true(n >= 104165 && n <= 104168);
}

/* Served late (busy shard, descheduled thread): the time lost is
 * credited, up to DPQ_PACER_MAX_LATE_US, so a loaded machine still paces
 * at the rate on average. */
static void
test_late_wakeup(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 1200 * 1000, now = 0, t, n;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	p.tokens = 0;
	t = dpq_pacer_next(&p, rate, now);
	assert_int_equal(t, 1000);
	/* woken 3 ms late: the 3 ms count, plus the one released */
	now = t + 3000;
	n = drain(&p, rate, &now, now + 1);
	assert_int_equal(n, 4);
	/* back on schedule afterwards */
	t = dpq_pacer_next(&p, rate, now);
	assert_int_equal(t, now + 1000);
	/* 50 ms late: credited up to 4 ms only (plus the burst) */
	now = t + 50000;
	n = drain(&p, rate, &now, now + 1);
	assert_int_equal(n, 4 + 2);
}

static void
test_burst_sizes(void **state)
{
	struct dpq_pacer p;

	(void)state;
	dpq_pacer_init(&p, MTU, 0);
	/* low rates: 2 datagrams; 100 us worth in between; 256 KiB cap
	 * (40 Gbit/s for 100 us would be 500 KB) */
	assert_int_equal(dpq_pacer_burst(&p, 12500000), 2 * MTU);
	assert_int_equal(dpq_pacer_burst(&p, 125000000), 12500);
	assert_int_equal(dpq_pacer_burst(&p, 5000000000ull), 256 * 1024);
	assert_int_equal(dpq_pacer_burst(&p, DPQ_PACER_UNPACED), 256 * 1024);
}

static void
test_debt_and_unpaced(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 1200 * 1000, now = 0, n;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	p.tokens = 0;
	/* two probes sent regardless: 2 ms of debt */
	dpq_pacer_on_sent(&p, rate, MTU, now);
	dpq_pacer_on_sent(&p, rate, MTU, now);
	assert_int_equal(dpq_pacer_next(&p, rate, now), now + 3000);
	/* a hundred: the debt stops at one burst (2 datagrams) */
	for (n = 0; n < 100; n++)
		dpq_pacer_on_sent(&p, rate, MTU, now);
	assert_int_equal(dpq_pacer_next(&p, rate, now), now + 3000);
	/* not paced: always now, and sends cost nothing */
	assert_int_equal(dpq_pacer_next(&p, DPQ_PACER_UNPACED, now), now);
	dpq_pacer_on_sent(&p, DPQ_PACER_UNPACED, MTU, now + 7);
	assert_int_equal(dpq_pacer_next(&p, 0, now + 7), now + 7);
	/* time never runs backwards inside */
	assert_true(dpq_pacer_next(&p, rate, now) >= now);
}

static void
test_trains(void **state)
{
	struct dpq_pacer p;
	uint64_t rate = 1200 * 10000;	/* one datagram per 100 us */
	uint64_t now = 5, t, first = 0;
	unsigned int n, k;

	(void)state;
	dpq_pacer_init(&p, MTU, now);
	for (n = 0; n < DPQ_PACER_INITIAL_PKTS; n++)
		dpq_pacer_on_sent(&p, rate, MTU, now);
	dpq_pacer_set_train(&p, 8);
	assert_true(dpq_pacer_burst(&p, rate) >= 8 * MTU);
	for (k = 0; k < 50; k++) {
		/* Waits until the bucket holds eight ... */
		t = dpq_pacer_next(&p, rate, now);
		assert_int_equal(t, now + 800);
		now = t;
		if (k == 0)
			first = now;
		/* ... then eight leave at once. */
		for (n = 0; n < 8; n++) {
			assert_int_equal(dpq_pacer_next(&p, rate, now), now);
			dpq_pacer_on_sent(&p, rate, MTU, now);
		}
		assert_true(dpq_pacer_next(&p, rate, now) > now);
	}
	/* The same average rate: 49 trains of 800 us after the first. */
	assert_int_equal(now - first, 49 * 800);
	/* A train the sender does not fill is over: the next datagram,
	 * later, waits as alone. */
	t = dpq_pacer_next(&p, rate, now);
	now = t;
	for (n = 0; n < 3; n++)
		dpq_pacer_on_sent(&p, rate, MTU, now);
	now += 10;
	assert_true(dpq_pacer_next(&p, rate, now) > now);
	/* At one datagram per ms: after idle the bucket holds a train,
	 * which leaves at once; then a train would wait 7 ms more than
	 * one datagram (more than DPQ_PACER_TRAIN_WAIT_US): one at a
	 * time. */
	rate = 1200 * 1000;
	dpq_pacer_idle(&p);
	now += 1000000;
	for (n = 0; n < 8; n++) {
		assert_int_equal(dpq_pacer_next(&p, rate, now), now);
		dpq_pacer_on_sent(&p, rate, MTU, now);
	}
	for (n = 0; n < 5; n++) {
		t = dpq_pacer_next(&p, rate, now);
		assert_int_equal(t, now + 1000);
		now = t;
		dpq_pacer_on_sent(&p, rate, MTU, now);
	}
	/* Back to one at a time. */
	dpq_pacer_set_train(&p, 0);
	assert_true(dpq_pacer_burst(&p, rate) < 8 * MTU);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_rate),
		cmocka_unit_test(test_slow_rate_no_rounding),
		cmocka_unit_test(test_idle_then_burst),
		cmocka_unit_test(test_late_wakeup),
		cmocka_unit_test(test_burst_sizes),
		cmocka_unit_test(test_debt_and_unpaced),
		cmocka_unit_test(test_trains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
