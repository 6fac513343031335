/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_linkem: the impairment model of one direction of an emulated link.
 *
 * Pure: no I/O, no clock, no allocation after create, no packet storage.
 * The caller tells it that a datagram of len bytes enters the link at
 * time now (ns) and gets back a verdict: dropped (and why) or delivered,
 * once or twice (duplication), at which times, and which bit to flip
 * (corruption). The caller keeps the packet until then. The virtual-time
 * simulator (emu/sim.c) and the real-time DPDK bridge (dpq-linkem) share
 * this code, so both apply the same impairments from the same seed.
 *
 * The path a datagram takes, in order:
 *   1. blackout: a datagram that enters during a blackout interval is lost;
 *   2. the bottleneck: a FIFO served at rate_bps with a drop-tail queue of
 *      queue_bytes (a datagram that does not fit is dropped); its backlog
 *      is computed from the serialisation times, so nothing is stored;
 *   3. the wire, after serialisation: random loss (Bernoulli) and burst
 *      loss (a Gilbert-Elliott two-state chain, either stepped once per
 *      datagram that reaches the wire, as netem's gemodel does, or
 *      running in time: a bad period lasts the same whether one datagram
 *      or a hundred cross it, as a fade or interference does);
 *   4. corruption (one random bit of the datagram flipped) and
 *      duplication (a second copy right behind the first);
 *   5. propagation: delay_us plus a uniform jitter in [0, jitter_us]. Jitter
 *      alone never reorders (a datagram never arrives before the one that
 *      left the bottleneck before it, as on a real FIFO path); reordering
 *      comes from reorder: that fraction of datagrams is held back an
 *      extra reorder_us, so the ones behind overtake it.
 *
 * Randomness: one xoshiro256** stream per link seeded by splitmix64 from
 * seed; the same configuration, seed and sequence of calls gives the same
 * verdicts on every machine.
 *
 * Thread: one writer (the caller owns the struct).
 */
#ifndef DPQ_EMU_LINKEM_H
#define DPQ_EMU_LINKEM_H

#include <stdbool.h>
#include <stdint.h>

#define DPQ_LINKEM_BLACKOUTS	8

/* One blackout interval [start_ns, end_ns) on the caller's clock. */
struct dpq_linkem_blackout {
	uint64_t start_ns;
	uint64_t end_ns;
};

struct dpq_linkem_conf {
	uint64_t delay_us;	/* one-way propagation delay */
	uint64_t jitter_us;	/* extra delay, uniform in [0, jitter_us] */
	uint64_t rate_bps;	/* bottleneck rate, bits/s; 0: unlimited */
	/* Drop-tail queue in front of the bottleneck, bytes (the datagram
	 * in service counts); 0: unlimited. Ignored without rate_bps. */
	uint64_t queue_bytes;
	double loss;		/* random loss probability, [0, 1] */
	/* Gilbert-Elliott burst loss (p: good to bad per datagram, r: bad
	 * to good, and the loss probability in each state); ge_p 0: off.
	 * dpq_linkem_conf_burst() derives them from a rate and a burst
	 * length. */
	double ge_p, ge_r;
	double ge_loss_good, ge_loss_bad;
	/* Time-correlated chain instead (ge_p must be 0): the states last
	 * exponentially distributed times of these means, us; a datagram
	 * sees the state at the time it reaches the wire. ge_bad_us 0: off.
	 * dpq_linkem_conf_burst_time() derives them. */
	uint64_t ge_bad_us, ge_good_us;
	double reorder;		/* fraction held back reorder_us */
	uint64_t reorder_us;	/* 0: delay_us, at least 1 ms */
	double duplicate;	/* fraction delivered twice */
	double corrupt;		/* fraction with one bit flipped */
	struct dpq_linkem_blackout blackout[DPQ_LINKEM_BLACKOUTS];
	unsigned int n_blackout;
	uint64_t seed;		/* 0 is a valid seed */
};

/* Why a datagram was not delivered. */
enum dpq_linkem_fate {
	DPQ_LINKEM_DELIVER = 0,
	DPQ_LINKEM_DROP_QUEUE,		/* drop-tail: the queue was full */
	DPQ_LINKEM_DROP_LOSS,		/* random loss */
	DPQ_LINKEM_DROP_BURST,		/* Gilbert-Elliott loss */
	DPQ_LINKEM_DROP_BLACKOUT,	/* entered during a blackout */
	DPQ_LINKEM_FATE_COUNT,
};

const char *dpq_linkem_fate_str(enum dpq_linkem_fate f);

/* What happens to one datagram. */
struct dpq_linkem_verdict {
	enum dpq_linkem_fate fate;
	uint8_t copies;		/* 0 (dropped), 1, or 2 (duplicated) */
	bool reordered;		/* held back (copy 0) */
	uint64_t at_ns[2];	/* arrival time of each copy */
	/* Corruption: bit index + 1 to flip in copy i (0: intact). */
	uint32_t flip[2];
};

struct dpq_linkem_stats {
	uint64_t offered, offered_bytes;
	uint64_t delivered, delivered_bytes;	/* copies, duplicates too */
	uint64_t dropped[DPQ_LINKEM_FATE_COUNT];
	uint64_t duplicated, corrupted, reordered;
	uint64_t max_backlog_bytes;		/* bottleneck queue peak */
};

struct dpq_linkem {
	struct dpq_linkem_conf conf;
	uint64_t rng[4];
	bool ge_bad;			/* Gilbert-Elliott state */
	bool ge_started;		/* time chain: state known at ge_at_ns */
	uint64_t ge_at_ns;
	uint64_t busy_until_ns;		/* bottleneck serves until then */
	uint64_t last_at_ns;		/* latest in-order arrival */
	uint64_t reorder_ns;
	struct dpq_linkem_stats stats;
};

/* Check conf (probabilities in [0, 1], blackouts ordered) and start the
 * model. Returns 0 or -EINVAL. */
int dpq_linkem_init(struct dpq_linkem *le, const struct dpq_linkem_conf *conf);

/* A datagram of len bytes enters the link at now_ns (non-decreasing from
 * call to call). Fills *v and returns v->copies. */
unsigned int dpq_linkem_send(struct dpq_linkem *le, uint64_t now_ns,
		uint32_t len, struct dpq_linkem_verdict *v);

/* Flip the bit a verdict asked for (flip = v->flip[i]); no-op for 0. */
void dpq_linkem_corrupt(uint8_t *data, uint32_t len, uint32_t flip);

/* Bytes waiting in (or being sent by) the bottleneck at now_ns. */
uint64_t dpq_linkem_backlog(const struct dpq_linkem *le, uint64_t now_ns);

/* Gilbert-Elliott parameters for an average loss rate and a mean burst
 * length in datagrams (>= 1): every datagram in the bad state is lost,
 * none in the good state. */
void dpq_linkem_conf_burst(struct dpq_linkem_conf *conf, double loss,
		double mean_burst);

/* The time-correlated chain for an average loss rate (the fraction of
 * time in the bad state) and a mean bad period in us (> 0): every
 * datagram that reaches the wire in the bad state is lost. */
void dpq_linkem_conf_burst_time(struct dpq_linkem_conf *conf, double loss,
		uint64_t mean_bad_us);

/* Parse "key=value,key=value" (delay=25ms, jitter=1ms, rate=100mbit,
 * queue=64kb, loss=1%, burst=1%/4 (bursts of 4 datagrams on average),
 * burst=1%/2ms (bad periods of 2 ms on average), reorder=2%,
 * reorder_delay=5ms, dup=1%, corrupt=0.1%, blackout=2s+2s (start+length),
 * seed=N) into conf on top of what it holds. Returns 0, or -EINVAL with a message in err. */
int dpq_linkem_conf_parse(struct dpq_linkem_conf *conf, const char *spec,
		char *err, unsigned int errlen);

/* Uniform random 64-bit value from the link's stream (for callers that
 * need a seeded draw of their own, e.g. connection IDs in the sim). */
uint64_t dpq_linkem_rand(struct dpq_linkem *le);

#endif /* DPQ_EMU_LINKEM_H */
