/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pacer.h: the pacer of one connection (RFC 9002 §7.7): a token bucket
 * filled at the congestion controller's pacing rate, holding at most a
 * small burst, that says when the next datagram may leave.
 *
 * The sender asks dpq_pacer_next() before building an in-flight
 * datagram: a time <= now means go; a later time is when to come back
 * (the connection reports it in dpq_conn_next_timeout() and the shard's
 * timer wheel wakes it: nothing spins). After sending, dpq_pacer_on_sent()
 * takes the bytes out. ACK-only packets and probes are not paced (they
 * are not limited by the window either), but probes still pay their
 * bytes, so paced data after them waits a little longer.
 *
 * Tokens are kept in micro-bytes (bytes * 10^6, i.e. rate in B/s times
 * microseconds) so that slow rates and frequent calls lose nothing to
 * rounding. No clock: now comes in, in microseconds. One thread.
 */
#ifndef DPQ_ENGINE_PACER_H
#define DPQ_ENGINE_PACER_H

#include <stdbool.h>
#include <stdint.h>

/* Burst allowance: the tokens the bucket holds at most, bytes:
 * max(DPQ_PACER_MIN_BURST_PKTS datagrams, min(rate * 100 us, 256 KiB)):
 * two packets at low rates, a few timer ticks' worth (the shard's wheel
 * ticks every 16 us) at high ones, so that pacing never caps the rate a
 * shard can reach (at 40 Gbit/s a datagram leaves every 0.3 us). */
#define DPQ_PACER_MIN_BURST_PKTS	2
#define DPQ_PACER_BURST_US		100
#define DPQ_PACER_MAX_BURST		(256 * 1024)
/* A sender served later than the release time it asked for (its shard
 * was busy or its thread descheduled) may use the time it was late, up
 * to this much: otherwise every late wake-up is lost sending time and a
 * loaded machine paces below the rate (Linux TCP pacing gives the same
 * slack for OS jitter). */
#define DPQ_PACER_MAX_LATE_US		4000
/* Datagrams the bucket holds at the start (the initial window). */
#define DPQ_PACER_INITIAL_PKTS		10
/* A train's datagrams leave within this many us of its first (in one
 * burst of the sender), else what is left of it is dropped. */
#define DPQ_PACER_TRAIN_US		2
/* A train waits for the bucket to hold all of it at most this much
 * longer than its first datagram alone would (us): at low rates the
 * datagrams go one at a time as without trains. */
#define DPQ_PACER_TRAIN_WAIT_US		5000
/* Rate meaning "do not pace" (as DPQ_CC_UNPACED). */
#define DPQ_PACER_UNPACED		UINT64_MAX

struct dpq_pacer {
	int64_t tokens;		/* micro-bytes; negative: debt */
	uint64_t last;		/* us, when tokens were last updated */
	uint32_t mtu;		/* bytes of a full datagram */
	uint64_t held;		/* times next() said "not yet" (stats) */
	uint64_t release;	/* release time last reported; 0: none */
	uint32_t train;		/* datagrams to release together; 0, 1: one */
	uint32_t train_left;	/* datagrams of the train still to go */
	uint64_t train_at;	/* us, when the train's first one left */
};

/* A bucket holding the initial window at now, for datagrams of mtu
 * bytes. */
void dpq_pacer_init(struct dpq_pacer *p, uint32_t mtu, uint64_t now);

/* The bucket's size at rate (bytes/s), in bytes. */
uint64_t dpq_pacer_burst(const struct dpq_pacer *p, uint64_t rate);

/*
 * Data waits: when may a datagram of up to mtu bytes be sent at rate
 * (bytes/s)? Now or earlier = at once; DPQ_PACER_UNPACED rate = at once.
 * A later time is remembered as the release time the sender was told,
 * and counted in p->held. Ask only with data waiting (see
 * dpq_pacer_idle()).
 */
uint64_t dpq_pacer_next(struct dpq_pacer *p, uint64_t rate, uint64_t now);

/* Same question without counting (for wake-up times). */
uint64_t dpq_pacer_release_time(const struct dpq_pacer *p, uint64_t rate,
		uint64_t now);

/* Nothing waits for the pacer: forget the release time, so an idle
 * period is not mistaken for a late wake-up. */
static inline void
dpq_pacer_idle(struct dpq_pacer *p)
{
	p->release = 0;
}

/* bytes left at now while pacing at rate (debt allowed, bounded). */
void dpq_pacer_on_sent(struct dpq_pacer *p, uint64_t rate, uint32_t bytes,
		uint64_t now);

/*
 * Release datagrams in trains of pkts instead of one at a time: the
 * sender waits until the bucket holds a train's worth, then sends it
 * back to back (the same average rate), if that wait is at most
 * DPQ_PACER_TRAIN_WAIT_US longer than for one datagram. The congestion
 * controller asks for this while it measures the bottleneck's capacity
 * from the trains' dispersion (capest.h); 0 (the default): one datagram
 * at a time.
 */
static inline void
dpq_pacer_set_train(struct dpq_pacer *p, uint32_t pkts)
{
	p->train = pkts;
}

/* The datagram size changed (path MTU, transport parameters). */
static inline void
dpq_pacer_set_mtu(struct dpq_pacer *p, uint32_t mtu)
{
	p->mtu = mtu;
}

#endif /* DPQ_ENGINE_PACER_H */
