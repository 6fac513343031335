/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's sleep between empty polls (control/dpquicd/poll_sleep.c):
 * off by default, never while a poll finds work, only after
 * DPQD_POLL_SLEEP_AFTER empty polls in a row, never past the shard's
 * next timer, never longer than the configured maximum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "control/dpquicd/poll_sleep.h"

#define NOW	1000000u
#define FAR	UINT64_MAX	/* no timer armed */

/* Empty polls until the first sleep; returns how many it took. */
static unsigned int
polls_to_sleep(struct dpqd_poll_sleep *p, uint64_t next, uint32_t *us)
{
	unsigned int n;

	for (n = 1; n < 10 * DPQD_POLL_SLEEP_AFTER; n++) {
		*us = dpqd_poll_sleep_decide(p, 0, NOW, next);
		if (*us != 0)
			return n;
	}
	return 0;
}

static void
test_off_never_sleeps(void **state)
{
	struct dpqd_poll_sleep p = { 0 };
	uint32_t us = 0;

	(void)state;
	assert_int_equal(polls_to_sleep(&p, FAR, &us), 0);
	assert_int_equal(us, 0);
}

static void
test_sleeps_after_empty_polls(void **state)
{
	struct dpqd_poll_sleep p = { .max_us = 200 };
	uint32_t us = 0;

	(void)state;
	assert_int_equal(polls_to_sleep(&p, FAR, &us),
			DPQD_POLL_SLEEP_AFTER + 1);
	assert_int_equal(us, 200);
	/* Still idle: the next empty poll sleeps again at once. */
	assert_int_equal(dpqd_poll_sleep_decide(&p, 0, NOW, FAR), 200);
}

static void
test_work_resets(void **state)
{
	struct dpqd_poll_sleep p = { .max_us = 200 };
	uint32_t us = 0;

	(void)state;
	assert_int_not_equal(polls_to_sleep(&p, FAR, &us), 0);
	/* A poll with work never sleeps, and the count starts over. */
	assert_int_equal(dpqd_poll_sleep_decide(&p, 3, NOW, FAR), 0);
	assert_int_equal(polls_to_sleep(&p, FAR, &us),
			DPQD_POLL_SLEEP_AFTER + 1);
}

static void
test_bounded_by_next_timer(void **state)
{
	struct dpqd_poll_sleep p = { .max_us = 5000 };
	uint32_t us = 0;

	(void)state;
	/* A timer in 120 us: sleep 120, not 5000. */
	assert_int_not_equal(polls_to_sleep(&p, NOW + 120, &us), 0);
	assert_int_equal(us, 120);
	/* A timer due now, or a connection on the ready list
	 * (dpq_shard_next_event() == now): no sleep at all. */
	assert_int_equal(dpqd_poll_sleep_decide(&p, 0, NOW, NOW), 0);
	assert_int_equal(dpqd_poll_sleep_decide(&p, 0, NOW, NOW - 5), 0);
	/* The cap holds for a far timer too. */
	assert_int_equal(dpqd_poll_sleep_decide(&p, 0, NOW, NOW + 900000),
			5000);
}

static void
test_sleep_counts(void **state)
{
	struct dpqd_poll_sleep p = { .max_us = 50 };

	(void)state;
	dpqd_poll_sleep_do(&p, 0);
	assert_int_equal(p.sleeps, 0);
	dpqd_poll_sleep_do(&p, 30);
	dpqd_poll_sleep_do(&p, 50);
	assert_int_equal(p.sleeps, 2);
	assert_int_equal(p.slept_us, 80);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_never_sleeps),
		cmocka_unit_test(test_sleeps_after_empty_polls),
		cmocka_unit_test(test_work_resets),
		cmocka_unit_test(test_bounded_by_next_timer),
		cmocka_unit_test(test_sleep_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
