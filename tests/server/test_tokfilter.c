/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the NEW_TOKEN replay filter (dataplane/server/tokfilter.h):
 * single use within the lifetime, reuse of expired slots, a full bucket
 * refuses, and shards racing on one token never both accept it.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/server/tokfilter.h"

#define MIN 60000000ull
#define T0 (1000 * MIN)

static void
nonce_of(uint64_t i, uint8_t n[12])
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;

	memset(n, 0, 12);
	memcpy(n, &x, 8);
	n[8] = (uint8_t)(i >> 3);
}

static void
test_single_use(void **state)
{
	struct dpq_tokfilter *f = dpq_tokfilter_create(1024, T0);
	struct dpq_tokfilter_stats st;
	uint8_t n[12];
	uint64_t i;

	(void)state;
	assert_non_null(f);
	assert_int_equal(dpq_tokfilter_slots(f), 1024);
	for (i = 0; i < 200; i++) {
		nonce_of(i, n);
		assert_int_equal(dpq_tokfilter_use(f, n, 12, T0 + 60 * MIN,
				T0), DPQ_TOKFILTER_FIRST);
	}
	for (i = 0; i < 200; i++) {
		nonce_of(i, n);
		assert_int_equal(dpq_tokfilter_use(f, n, 12, T0 + 60 * MIN,
				T0 + 59 * MIN), DPQ_TOKFILTER_REPLAY);
	}
	dpq_tokfilter_get_stats(f, &st);
	assert_int_equal(st.first, 200);
	assert_int_equal(st.replay, 200);
	assert_int_equal(st.full, 0);
	/* Too short a nonce, NULL: refused, never a crash. */
	assert_int_equal(dpq_tokfilter_use(f, n, 4, T0, T0),
			DPQ_TOKFILTER_FULL);
	assert_int_equal(dpq_tokfilter_use(f, NULL, 12, T0, T0),
			DPQ_TOKFILTER_FULL);
	dpq_tokfilter_destroy(f);
}

/* Once the token it remembers expired, a slot is reused: a filter of 8
 * slots takes tokens forever as long as they expire. */
static void
test_expiry_reuse(void **state)
{
	struct dpq_tokfilter *f = dpq_tokfilter_create(8, T0);
	uint8_t n[12];
	uint64_t i, now = T0;

	(void)state;
	assert_int_equal(dpq_tokfilter_slots(f), 8);
	for (i = 0; i < 8; i++) {
		nonce_of(i, n);
		assert_int_equal(dpq_tokfilter_use(f, n, 12, now + 2 * MIN,
				now), DPQ_TOKFILTER_FIRST);
	}
	/* Full of live entries: a ninth is refused (fail closed). */
	nonce_of(100, n);
	assert_int_equal(dpq_tokfilter_use(f, n, 12, now + 2 * MIN, now),
			DPQ_TOKFILTER_FULL);
	/* A replay is still a replay, not "full". */
	nonce_of(3, n);
	assert_int_equal(dpq_tokfilter_use(f, n, 12, now + 2 * MIN, now),
			DPQ_TOKFILTER_REPLAY);
	/* After the tokens expired (entries outlive them by at most two
	 * minutes of rounding), the slots take new tokens, and a token
	 * that expired may come again: the token check refuses it anyway. */
	now += 5 * MIN;
	for (i = 100; i < 108; i++) {
		nonce_of(i, n);
		assert_int_equal(dpq_tokfilter_use(f, n, 12, now + 2 * MIN,
				now), DPQ_TOKFILTER_FIRST);
	}
	dpq_tokfilter_destroy(f);
}

static void
test_bad_create(void **state)
{
	(void)state;
	assert_null(dpq_tokfilter_create(0, 0));
	assert_null(dpq_tokfilter_create(DPQ_TOKFILTER_MAX + 1, 0));
	dpq_tokfilter_destroy(NULL);
}

/* Shards race: every thread presents the same tokens; each token must be
 * accepted at most once in total. */
#define THREADS 4
#define TOKENS 20000

struct racer {
	struct dpq_tokfilter *f;
	uint32_t accepted[TOKENS];
};

static void *
race(void *arg)
{
	struct racer *r = arg;
	uint8_t n[12];
	uint64_t i;

	for (i = 0; i < TOKENS; i++) {
		nonce_of(i, n);
		if (dpq_tokfilter_use(r->f, n, 12, T0 + 60 * MIN, T0) ==
		    DPQ_TOKFILTER_FIRST)
			__atomic_fetch_add(&r->accepted[i], 1,
					__ATOMIC_RELAXED);
	}
	return NULL;
}

static void
test_race(void **state)
{
	static struct racer r;
	pthread_t th[THREADS];
	unsigned int i, once = 0;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.f = dpq_tokfilter_create(4 * TOKENS, T0);
	assert_non_null(r.f);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race, &r), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < TOKENS; i++) {
		assert_true(r.accepted[i] <= 1);
		once += r.accepted[i];
	}
	/* Refusing both racers is allowed, but rare: nearly all tokens are
	 * accepted exactly once. */
	assert_true(once > TOKENS * 9 / 10);
	dpq_tokfilter_destroy(r.f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_use),
		cmocka_unit_test(test_expiry_reuse),
		cmocka_unit_test(test_bad_create),
		cmocka_unit_test(test_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
