/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting for another thread's answer when that thread may be starved.
 *
 * A shard is a busy-polling thread pinned to one CPU. It answers a
 * request between two polls (microseconds), unless the kernel gives its
 * CPU to other threads: on an overloaded machine a runnable shard was
 * measured waiting 8.5 s in a row for its CPU (Linux's per-thread
 * schedstat: runqueue wait 8,582 ms of an 8,634 ms window). Counting
 * such time against the caller's timeout turns "the machine is busy"
 * into "the shard is broken". So the timeout counts only time the thread
 * could run: wall time minus the runqueue wait the kernel reports for it
 * (/proc/self/task/TID/schedstat, second field), bounded by a hard limit
 * in wall time; the message on failure says which of the two it was.
 */
#ifndef DPQD_LCORE_WAIT_H
#define DPQD_LCORE_WAIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Nanoseconds thread tid of this process has spent runnable but not
 * running, or UINT64_MAX when the kernel does not say (no schedstat). */
uint64_t dpqd_thread_run_delay_ns(pid_t tid);

/*
 * Waits until *done == want (acquire). timeout_ms counts time in which
 * thread tid was running or sleeping, not time it waited for a CPU;
 * max_ms bounds the wall time in any case. tid <= 0: plain wall timeout.
 * Returns 0, or -ETIMEDOUT with a sentence in why (what it waited, and
 * whether the thread was starved of CPU or had it and did not answer).
 */
int dpqd_lcore_wait(const uint32_t *done, uint32_t want, pid_t tid,
		int timeout_ms, int max_ms, char *why, size_t why_len);

#endif
