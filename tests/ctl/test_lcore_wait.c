/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's wait for a shard's answer (control/dpquicd/lcore_wait.c):
 * time the shard's thread spends waiting for a CPU does not count against
 * the timeout; a thread that could run and did not answer does. The
 * starved "shard" here is a SCHED_IDLE thread pinned to the CPU of a
 * busy normal thread: the kernel runs it only when nothing else wants
 * that CPU, so nearly all its time is runqueue wait, as a busy-poll lcore
 * on an overloaded machine (measured: 8.5 s in a row).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "control/dpquicd/lcore_wait.h"

struct spinner {
	pthread_t th;
	int policy;		/* SCHED_OTHER or SCHED_IDLE */
	int cpu;		/* pinned to it, or -1 */
	unsigned int answer_ms;	/* answer after this long; 0: never */
	uint32_t done;
	pid_t tid;
	int stop;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
spin(void *arg)
{
	struct spinner *s = arg;
	struct sched_param sp = { 0 };
	double t0 = now_s();

	if (s->policy == SCHED_IDLE)
		pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	__atomic_store_n(&s->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		if (s->answer_ms != 0 && now_s() - t0 >= s->answer_ms / 1e3)
			__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void
spinner_start(struct spinner *s, int policy, int cpu, unsigned int answer_ms)
{
	pthread_attr_t a;

	memset(s, 0, sizeof(*s));
	s->policy = policy;
	s->cpu = cpu;
	s->answer_ms = answer_ms;
	pthread_attr_init(&a);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&a, sizeof(set), &set);
	}
	assert_int_equal(pthread_create(&s->th, &a, spin, s), 0);
	pthread_attr_destroy(&a);
	while (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == 0)
		usleep(1000);
}

static void
spinner_stop(struct spinner *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->th, NULL);
}

/* An answer that comes is taken. */
static void
test_answer(void **state)
{
	struct spinner s;
	char why[160] = "";

	(void)state;
	spinner_start(&s, SCHED_OTHER, -1, 50);
	assert_int_equal(dpqd_lcore_wait(&s.done, 1, s.tid, 20000, 30000,
			why, sizeof(why)), 0);
	spinner_stop(&s);
}

/* Without a thread id (or schedstat): a plain wall-clock timeout. */
static void
test_plain_timeout(void **state)
{
	uint32_t done = 0;
	char why[160] = "";
	double t0 = now_s(), el;

	(void)state;
	assert_int_equal(dpqd_lcore_wait(&done, 1, 0, 200, 5000, why,
			sizeof(why)), -ETIMEDOUT);
	el = now_s() - t0;
	assert_true(el >= 0.2);
	assert_true(el < 4.0);	/* the hard limit is not waited */
	assert_non_null(strstr(why, "no answer in"));
}

/* A starved thread gets time up to the hard limit, and the message says
 * it waited for a CPU. */
static void
test_starved(void **state)
{
	struct spinner hog, idle;
	char why[160] = "";
	double t0, el;
	int cpu = sched_getcpu() >= 0 ? sched_getcpu() : 0, rc;

	(void)state;
	if (dpqd_thread_run_delay_ns((pid_t)syscall(SYS_gettid)) ==
	    UINT64_MAX)
		skip();		/* no /proc/.../schedstat here */
	spinner_start(&hog, SCHED_OTHER, cpu, 0);
	spinner_start(&idle, SCHED_IDLE, cpu, 0);
	t0 = now_s();
	rc = dpqd_lcore_wait(&idle.done, 1, idle.tid, 200, 2000, why,
			sizeof(why));
	el = now_s() - t0;
	spinner_stop(&idle);
	spinner_stop(&hog);
	print_message("starved: %.2f s: %s\n", el, why);
	assert_int_equal(rc, -ETIMEDOUT);
	/* far beyond the 200 ms a running thread gets */
	assert_true(el >= 1.5);
	assert_non_null(strstr(why, "for a CPU (the machine is overloaded)"));
}

/* A thread that is not kept from running and does not answer: the
 * timeout applies (plus what it did wait for a CPU), and the message
 * does not blame the machine unless it mostly waited. */
static void
test_running_no_answer(void **state)
{
	struct spinner s;
	char why[160] = "";
	double t0, el;
	int rc;

	(void)state;
	spinner_start(&s, SCHED_OTHER, -1, 0);
	t0 = now_s();
	rc = dpqd_lcore_wait(&s.done, 1, s.tid, 300, 20000, why, sizeof(why));
	el = now_s() - t0;
	spinner_stop(&s);
	print_message("running: %.2f s: %s\n", el, why);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(el >= 0.3);
	assert_true(el < 19.0);
	assert_non_null(strstr(why, "no answer in"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_plain_timeout),
		cmocka_unit_test(test_starved),
		cmocka_unit_test(test_running_no_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
