/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The timing wheel against a reference model: every armed timer fires in
 * the first advance whose now reaches its expiry (rounded up to a tick),
 * never earlier, exactly once; cancelled and re-armed timers do not fire
 * at their old time; long jumps in time and huge expiries work.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/wheel.h"

#define NT	1500

struct tmr {
	struct dpq_wheel_node node;	/* first: node is the timer */
	unsigned int id;
	bool armed;			/* model */
	uint64_t expire;		/* model */
	unsigned int fired;
};

struct ctx {
	struct dpq_wheel w;
	struct tmr t[NT];
	uint64_t now;
	unsigned int shift;
	unsigned int nfired;
	/* callback behaviour */
	bool rearm;			/* re-arm each fired timer later */
	int cancel_id;			/* cancel this one when any fires */
};

static uint64_t rng = 88172645463325252ull;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t
tick_up(const struct ctx *x, uint64_t e)
{
	uint64_t m = (UINT64_C(1) << x->shift) - 1;

	return (e >> x->shift) + ((e & m) != 0);
}

static void
on_fire(void *arg, struct dpq_wheel_node *n)
{
	struct ctx *x = arg;
	struct tmr *t = (struct tmr *)n;

	assert_false(dpq_wheel_armed(n));
	/* Never early; at most one tick late. */
	assert_true(t->armed);
	assert_true(t->expire <= x->now);
	assert_true(tick_up(x, t->expire) <= x->now >> x->shift);
	t->armed = false;
	t->fired++;
	x->nfired++;
	if (x->cancel_id >= 0 && (unsigned int)x->cancel_id != t->id) {
		struct tmr *c = &x->t[x->cancel_id];

		dpq_wheel_cancel(&x->w, &c->node);
		c->armed = false;
	}
	if (x->rearm) {
		t->expire = x->now + 1 + rnd() % 5000;
		t->armed = true;
		dpq_wheel_arm(&x->w, n, t->expire);
	}
}

static void
ctx_init(struct ctx *x, unsigned int shift, uint64_t now)
{
	memset(x, 0, sizeof(*x));
	x->shift = shift;
	x->now = now;
	x->cancel_id = -1;
	dpq_wheel_init(&x->w, now, shift);
	for (unsigned int i = 0; i < NT; i++) {
		dpq_wheel_node_init(&x->t[i].node);
		x->t[i].id = i;
	}
}

static void
arm(struct ctx *x, unsigned int i, uint64_t e)
{
	x->t[i].armed = e != DPQ_WHEEL_NEVER;
	x->t[i].expire = e;
	dpq_wheel_arm(&x->w, &x->t[i].node, e);
}

/* Advance and check: exactly the timers due fired (none left due). */
static void
advance(struct ctx *x, uint64_t now)
{
	unsigned int i, armed = 0;

	x->now = now;
	dpq_wheel_advance(&x->w, now, on_fire, x);
	for (i = 0; i < NT; i++) {
		const struct tmr *t = &x->t[i];

		assert_int_equal(t->armed, dpq_wheel_armed(&t->node));
		if (!t->armed)
			continue;
		armed++;
		assert_true(tick_up(x, t->expire) > now >> x->shift);
		assert_true(dpq_wheel_next_event(&x->w) <=
				tick_up(x, t->expire) << x->shift);
	}
	assert_int_equal(x->w.armed, armed);
	if (armed == 0)
		assert_true(dpq_wheel_next_event(&x->w) == DPQ_WHEEL_NEVER);
}

static void
test_basic(void **state)
{
	struct ctx *x = malloc(sizeof(*x));

	(void)state;
	ctx_init(x, 0, 1000);
	assert_true(dpq_wheel_next_event(&x->w) == DPQ_WHEEL_NEVER);
	arm(x, 0, 1100);
	arm(x, 1, 1000 + 64 * 64 * 3 + 5);	/* level 2 */
	arm(x, 2, 900);				/* in the past: next advance */
	advance(x, 1000);
	assert_int_equal(x->t[2].fired, 1);
	advance(x, 1099);
	assert_int_equal(x->t[0].fired, 0);
	advance(x, 1100);
	assert_int_equal(x->t[0].fired, 1);
	/* Re-arming moves it; the old time no longer fires. */
	arm(x, 0, 5000);
	arm(x, 0, 20000);
	advance(x, 1000 + 64 * 64 * 3 + 4);
	assert_int_equal(x->t[1].fired, 0);
	advance(x, 1000 + 64 * 64 * 3 + 5);
	assert_int_equal(x->t[1].fired, 1);
	assert_int_equal(x->t[0].fired, 1);
	advance(x, 19999);
	assert_int_equal(x->t[0].fired, 1);
	advance(x, 20000);
	assert_int_equal(x->t[0].fired, 2);
	/* Cancel. */
	arm(x, 3, 30000);
	dpq_wheel_cancel(&x->w, &x->t[3].node);
	x->t[3].armed = false;
	advance(x, 40000);
	assert_int_equal(x->t[3].fired, 0);
	free(x);
}

/* A tick of 16 us: fires at the first advance at or after the expiry's
 * tick, never before the expiry itself. */
static void
test_ticks(void **state)
{
	struct ctx *x = malloc(sizeof(*x));

	(void)state;
	ctx_init(x, 4, 0);
	arm(x, 0, 33);		/* tick 3 (48 us) */
	advance(x, 33);
	assert_int_equal(x->t[0].fired, 0);
	advance(x, 47);
	assert_int_equal(x->t[0].fired, 0);
	advance(x, 48);
	assert_int_equal(x->t[0].fired, 1);
	arm(x, 1, 64);		/* exactly a tick */
	advance(x, 64);
	assert_int_equal(x->t[1].fired, 1);
	free(x);
}

/* Expiries on every scale, polls small and huge, random re-arms and
 * cancels, against the model checked after every advance. */
static void
run_random(unsigned int shift, uint64_t start, unsigned int rounds)
{
	struct ctx *x = malloc(sizeof(*x));

	ctx_init(x, shift, start);
	for (unsigned int r = 0; r < rounds; r++) {
		unsigned int ops = (unsigned int)(rnd() % 40);

		for (unsigned int k = 0; k < ops; k++) {
			unsigned int i = (unsigned int)(rnd() % NT);
			unsigned int scale = (unsigned int)(rnd() % 48);
			uint64_t d = rnd() & ((UINT64_C(1) << scale) - 1);

			if (rnd() % 8 == 0)
				arm(x, i, DPQ_WHEEL_NEVER);
			else if (rnd() % 16 == 0)
				arm(x, i, x->now > d ? x->now - d : 0);
			else
				arm(x, i, x->now + d);
		}
		switch (rnd() % 10) {
		case 0:		/* long sleep */
			advance(x, x->now + (rnd() & ((UINT64_C(1) << 40) - 1)));
			break;
		case 1:
			advance(x, x->now);
			break;
		default:	/* a poll loop */
			advance(x, x->now + rnd() % 200);
			break;
		}
	}
	/* Everything fires at the end of time (but the far future). */
	advance(x, UINT64_MAX - (UINT64_C(1) << 50));
	free(x);
}

static void
test_random_1us(void **state)
{
	(void)state;
	run_random(0, 12345, 20000);
}

static void
test_random_16us(void **state)
{
	(void)state;
	run_random(4, 1, 20000);
}

/* Near the top of the tick range (groups all 63 then wrapping). */
static void
test_random_high(void **state)
{
	(void)state;
	run_random(0, UINT64_MAX - (UINT64_C(1) << 52), 5000);
}

/* Callbacks re-arm the fired timer (periodic) and cancel another. */
static void
test_callbacks(void **state)
{
	struct ctx *x = malloc(sizeof(*x));

	(void)state;
	ctx_init(x, 0, 0);
	x->rearm = true;
	for (unsigned int i = 0; i < 100; i++)
		arm(x, i, 1 + rnd() % 5000);
	for (uint64_t now = 0; now < 200000; now += 37)
		advance(x, now);
	/* Each timer fires about every 2500 us on average. */
	assert_true(x->nfired > 100 * 200000 / 5000);
	/* A timer due in the same batch and cancelled by an earlier
	 * callback does not fire. */
	ctx_init(x, 0, 0);
	x->cancel_id = 7;
	arm(x, 3, 100);
	arm(x, 7, 100);
	advance(x, 200);
	assert_int_equal(x->t[3].fired + x->t[7].fired, 1);
	free(x);
}

/* 30 s timers among 1 ms polls: none fires early, all fire at once. */
static void
test_idle_cost(void **state)
{
	struct ctx *x = malloc(sizeof(*x));
	unsigned int polls = 0;

	(void)state;
	ctx_init(x, 4, 0);
	for (unsigned int i = 0; i < NT; i++)
		arm(x, i, 30000000 + i);
	for (uint64_t now = 0; now < 29000000; now += 1000, polls++)
		advance(x, now);
	assert_int_equal(x->nfired, 0);
	advance(x, 30000000 + NT + 16);
	assert_int_equal(x->nfired, NT);
	assert_true(polls > 20000);
	free(x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_random_1us),
		cmocka_unit_test(test_random_16us),
		cmocka_unit_test(test_random_high),
		cmocka_unit_test(test_callbacks),
		cmocka_unit_test(test_idle_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
