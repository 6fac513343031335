/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting for a shard's answer with a timeout that does not count the
 * time its thread waited for a CPU (see lcore_wait.h).
 *
 * The kernel adds to a thread's runqueue wait (schedstat's second field)
 * only when the thread gets a CPU again, so a thread starved right now
 * shows nothing there. What moves while it waits is its run time
 * (schedstat's first field, brought up to date at every tick) and its
 * state: so each interval counts as "could run" when the thread slept
 * (state other than R: it is blocked, a stuck shard) or as long as it
 * did run; the rest of an R interval it waited for a CPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "control/dpquicd/lcore_wait.h"

/* How often the thread's state is sampled while no answer came. */
#define SAMPLE_US	10000
/* No sampling for an answer that comes this fast (the common case). */
#define FIRST_US	1000

static uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int
read_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *wait_ns)
{
	unsigned long long run, wait;
	char path[64];
	FILE *f;
	int n;

	if (tid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	if (n != 2)
		return -1;
	*run_ns = run;
	*wait_ns = wait;
	return 0;
}

uint64_t
dpqd_thread_run_delay_ns(pid_t tid)
{
	uint64_t run, wait;

	return read_schedstat(tid, &run, &wait) == 0 ? wait : UINT64_MAX;
}

/* Is thread tid runnable (state R)? Unknown counts as not. */
static bool
runnable(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold anything */
	return p != NULL && p[1] == ' ' && p[2] == 'R';
}

int
dpqd_lcore_wait(const uint32_t *done, uint32_t want, pid_t tid,
		int timeout_ms, int max_ms, char *why, size_t why_len)
{
	uint64_t start = mono_us(), now = start, last = 0, run0 = 0, w;
	uint64_t limit = (uint64_t)timeout_ms * 1000;
	uint64_t hard = (uint64_t)(max_ms > timeout_ms ? max_ms :
			timeout_ms) * 1000;
	uint64_t could = 0;	/* µs the thread could run (or slept) */
	bool sampling = false, known = tid > 0;

	for (;;) {
		struct timespec ts = { 0, 50000 };

		if (__atomic_load_n(done, __ATOMIC_ACQUIRE) == want)
			return 0;
		now = mono_us();
		if (!known) {
			could = now - start;
		} else if (!sampling && now - start >= FIRST_US) {
			known = read_schedstat(tid, &run0, &w) == 0;
			sampling = known;
			could = now - start;
			last = now;
		} else if (sampling && now - last >= SAMPLE_US) {
			uint64_t run1;
			bool r = runnable(tid);

			if (read_schedstat(tid, &run1, &w) != 0) {
				known = false;
				continue;
			}
			if (!r || (run1 - run0) / 1000 >= now - last)
				could += now - last;
			else
				could += (run1 - run0) / 1000;
			run0 = run1;
			last = now;
		}
		if (could > limit || now - start >= hard)
			break;
		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(done, __ATOMIC_ACQUIRE) == want)
		return 0;
	if (why != NULL && why_len > 0) {
		double el = (double)(now - start) / 1e6;
		double starved = (double)(now - start - could) / 1e6;

		if (!known)
			snprintf(why, why_len, "no answer in %.1f s", el);
		else if (starved * 4 >= el)
			snprintf(why, why_len, "no answer in %.1f s: its "
				"thread waited %.1f s of them for a CPU "
				"(the machine is overloaded)", el, starved);
		else
			snprintf(why, why_len, "no answer in %.1f s, although "
				"its thread waited only %.1f s of them for a "
				"CPU (stuck?)", el, starved);
	}
	return -ETIMEDOUT;
}
