/* SPDX-License-Identifier: BSD-3-Clause */
/* Sleeping between empty polls (see poll_sleep.h). */
#include <sys/prctl.h>
#include <time.h>

#include "control/dpquicd/poll_sleep.h"

uint32_t
dpqd_poll_sleep_decide(struct dpqd_poll_sleep *p, unsigned int work,
		uint64_t now, uint64_t next_event)
{
	uint64_t until;

	if (p->max_us == 0)
		return 0;
	if (work != 0) {
		p->empty = 0;
		return 0;
	}
	if (p->empty < DPQD_POLL_SLEEP_AFTER) {
		p->empty++;
		return 0;
	}
	/* A timer due (or a connection ready) now: poll again at once. */
	if (next_event <= now)
		return 0;
	until = next_event - now;
	return until < p->max_us ? (uint32_t)until : p->max_us;
}

void
dpqd_poll_sleep_do(struct dpqd_poll_sleep *p, uint32_t us)
{
	struct timespec ts = {
		.tv_sec = us / 1000000u,
		.tv_nsec = (long)(us % 1000000u) * 1000,
	};

	if (us == 0)
		return;
	nanosleep(&ts, NULL);
	p->sleeps++;
	p->slept_us += us;
}

void
dpqd_poll_sleep_thread_init(const struct dpqd_poll_sleep *p)
{
	if (p->max_us != 0)
		(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}
