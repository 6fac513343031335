/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pacer.c: token bucket at the pacing rate (RFC 9002 §7.7). The bucket
 * fills lazily: every question first credits rate * (now - last), capped
 * at the burst allowance, so an idle connection starts again with one
 * burst and no more, and a busy one sends one datagram every mtu / rate.
 */
#include "dataplane/engine/pacer.h"

#define MICRO	UINT64_C(1000000)

void
dpq_pacer_init(struct dpq_pacer *p, uint32_t mtu, uint64_t now)
{
	p->mtu = mtu;
	p->last = now;
	p->held = 0;
	p->release = 0;
	p->train = 0;
	p->train_left = 0;
	p->train_at = 0;
	/* The first flight leaves at once: RFC 9002 §7.7 lets the initial
	 * window (10 datagrams, §7.2) go as a burst. */
	p->tokens = (int64_t)((uint64_t)DPQ_PACER_INITIAL_PKTS * mtu * MICRO);
}

uint64_t
dpq_pacer_burst(const struct dpq_pacer *p, uint64_t rate)
{
	uint64_t lo = (uint64_t)DPQ_PACER_MIN_BURST_PKTS * p->mtu;
	uint64_t b = rate == DPQ_PACER_UNPACED ? DPQ_PACER_MAX_BURST :
		rate / (MICRO / DPQ_PACER_BURST_US);

	if (b > DPQ_PACER_MAX_BURST)
		b = DPQ_PACER_MAX_BURST;
	if (lo < (uint64_t)p->train * p->mtu)
		lo = (uint64_t)p->train * p->mtu;	/* a train must fit */
	return b > lo ? b : lo;
}

/* Tokens at now, without changing p. */
static int64_t
tokens_at(const struct dpq_pacer *p, uint64_t rate, uint64_t now)
{
	int64_t cap = (int64_t)(dpq_pacer_burst(p, rate) * MICRO);

	/* Served late: the lost time is credited (bounded). */
	if (p->release != 0 && now > p->release && rate != DPQ_PACER_UNPACED) {
		uint64_t late = now - p->release;

		if (late > DPQ_PACER_MAX_LATE_US)
			late = DPQ_PACER_MAX_LATE_US;
		cap += (int64_t)((unsigned __int128)late * rate);
	}
	uint64_t dt = now > p->last ? now - p->last : 0;
	unsigned __int128 add;
	int64_t t = p->tokens;

	if (t >= cap)
		return t;	/* the initial window may exceed one burst */
	add = (unsigned __int128)dt * rate;
	if (add >= (unsigned __int128)(cap - t))
		return cap;
	return t + (int64_t)add;
}

static void
refill(struct dpq_pacer *p, uint64_t rate, uint64_t now)
{
	p->tokens = tokens_at(p, rate, now);
	if (now > p->last)
		p->last = now;
}

/* When the bucket holds need micro-bytes, from now. */
static uint64_t
time_for(int64_t need, int64_t t, uint64_t rate, uint64_t now)
{
	if (t >= need)
		return now;
	/* ceil((need - t) / rate) microseconds from now */
	return now + ((uint64_t)(need - t) + rate - 1) / rate;
}

uint64_t
dpq_pacer_release_time(const struct dpq_pacer *p, uint64_t rate,
		uint64_t now)
{
	int64_t one = (int64_t)((uint64_t)p->mtu * MICRO), t;
	uint64_t single, whole;

	if (rate == DPQ_PACER_UNPACED || rate == 0)
		return now;
	/* The rest of a train follows its first datagram at once
	 * (pacer.h dpq_pacer_set_train), or not at all: a train the
	 * sender did not fill (window, data) is over. */
	if (p->train_left > 0 && now <= p->train_at + DPQ_PACER_TRAIN_US)
		return now;
	t = tokens_at(p, rate, now);
	single = time_for(one, t, rate, now);
	if (p->train <= 1)
		return single;
	/* A train waits until the bucket holds all of it, if that is
	 * soon; else the datagram goes alone. */
	whole = time_for(one * (int64_t)p->train, t, rate, now);
	return whole - single <= DPQ_PACER_TRAIN_WAIT_US ? whole : single;
}

uint64_t
dpq_pacer_next(struct dpq_pacer *p, uint64_t rate, uint64_t now)
{
	uint64_t t = dpq_pacer_release_time(p, rate, now);

	if (t > now) {
		p->held++;
		p->release = t;
	}
	return t;
}

void
dpq_pacer_on_sent(struct dpq_pacer *p, uint64_t rate, uint32_t bytes,
		uint64_t now)
{
	int64_t floor;

	if (rate == DPQ_PACER_UNPACED || rate == 0) {
		p->last = now > p->last ? now : p->last;
		return;
	}
	refill(p, rate, now);
	p->release = 0;		/* the late credit is in the tokens now */
	if (p->train_left > 0 && now <= p->train_at + DPQ_PACER_TRAIN_US) {
		p->train_left--;
	} else if (p->train > 1 && p->tokens >=
	    (int64_t)((uint64_t)p->train * p->mtu * MICRO)) {
		p->train_left = p->train - 1;	/* a train starts */
		p->train_at = now;
	} else {
		p->train_left = 0;
	}
	p->tokens -= (int64_t)((uint64_t)bytes * MICRO);
	/* Unpaced sends (probes) may overdraw; the debt is bounded by
	 * one burst so a burst of probes cannot stall data for long. */
	floor = -(int64_t)(dpq_pacer_burst(p, rate) * MICRO);
	if (p->tokens < floor)
		p->tokens = floor;
}
