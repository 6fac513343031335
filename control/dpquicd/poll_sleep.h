/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sleeping between empty polls (server.poll-sleep-us, default off).
 *
 * A shard busy-polls its port: on a dedicated NIC server that is the
 * point (no interrupt, no wake-up latency). On a machine shared with
 * other work (a test box, a VM, this project's 2-core CI) a busy shard
 * keeps a CPU at 100% while it has nothing to do, and the threads that
 * do have work wait for a CPU: on an overloaded 2-core box threads were
 * measured waiting seconds in a row (docs/operations.md). With a
 * poll-sleep, a shard that found nothing to do in POLL_SLEEP_AFTER polls
 * in a row sleeps, at most max_us and never past its next timer, like
 * VPP's unix { poll-sleep-usec }. A poll that finds work resets it, so a
 * loaded shard never sleeps and goodput is unchanged; what it costs is
 * up to max_us of latency for the first datagram after a quiet spell
 * (and datagrams that arrive meanwhile wait in the port's RX ring).
 */
#ifndef DPQD_POLL_SLEEP_H
#define DPQD_POLL_SLEEP_H

#include <stdint.h>

/* Empty polls in a row before the first sleep: a few microseconds of
 * spinning, so that a burst of request/response keeps busy-poll
 * latency. */
#define DPQD_POLL_SLEEP_AFTER	32u

struct dpqd_poll_sleep {
	uint32_t max_us;	/* 0: never sleep (pure busy poll) */
	uint32_t empty;		/* polls without work, in a row */
	uint64_t sleeps;	/* counters, for the shard's totals */
	uint64_t slept_us;
};

/*
 * After a poll that did `work` units (datagrams, ready connections):
 * how many microseconds to sleep now, 0 for none. next_event is the
 * shard's next timer (dpq_shard_next_event(): now when a connection is
 * ready, UINT64_MAX when none is armed). Pure: no clock, no syscall.
 */
uint32_t dpqd_poll_sleep_decide(struct dpqd_poll_sleep *p, unsigned int work,
		uint64_t now, uint64_t next_event);

/* Sleeps us microseconds (nanosleep) and counts it. */
void dpqd_poll_sleep_do(struct dpqd_poll_sleep *p, uint32_t us);

/* For the calling thread: a timer slack of 1 us instead of Linux's
 * default 50 us, so that a sleep ends near its timer (best effort). */
void dpqd_poll_sleep_thread_init(const struct dpqd_poll_sleep *p);

#endif
