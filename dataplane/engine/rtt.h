/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rtt.h: the round-trip time estimator of one path (RFC 9002 §5):
 * latest_rtt, min_rtt, smoothed_rtt and rttvar.
 *
 * All times are in microseconds. The caller measures latest_rtt (ack time
 * minus send time of the largest newly acknowledged packet, §5.1) and
 * passes the peer's decoded ACK Delay; this module only does the
 * arithmetic, so it reads no clock and knows no connection.
 */
#ifndef DPQ_ENGINE_RTT_H
#define DPQ_ENGINE_RTT_H

#include <stdbool.h>
#include <stdint.h>

/* RFC 9002 §6.2.2: initial RTT before any sample, 333 ms. */
#define DPQ_RTT_INITIAL_DEFAULT	UINT64_C(333000)
/* RFC 9002 §6.1.2: timer granularity kGranularity, 1 ms. */
#define DPQ_RTT_GRANULARITY	UINT64_C(1000)

struct dpq_rtt {
	uint64_t latest;	/* latest_rtt (us) */
	uint64_t min;		/* min_rtt (us); 0 before the first sample */
	uint64_t smoothed;	/* smoothed_rtt (us) */
	uint64_t var;		/* rttvar (us) */
	uint64_t first_sample_time; /* now of the first sample (us) */
	bool has_sample;	/* first_sample_time is valid */
	bool reset_min;		/* next sample replaces min_rtt (§5.2) */
};

/*
 * Initialise (or reset, e.g. on migration, RFC 9000 §9.4) with initial_rtt
 * in us: smoothed = initial_rtt, rttvar = initial_rtt / 2 (§5.3). Pass
 * DPQ_RTT_INITIAL_DEFAULT unless a remembered value is available.
 */
void dpq_rtt_init(struct dpq_rtt *r, uint64_t initial_rtt);

/*
 * Take one RTT sample (§5.1-§5.3). latest_rtt and ack_delay (the peer's
 * ACK Delay already scaled by its ack_delay_exponent) are in us. After
 * handshake confirmation the ack delay is capped at max_ack_delay (us,
 * the peer's transport parameter); before it, max_ack_delay is ignored.
 * The ack delay is never subtracted if that would go below min_rtt.
 */
void dpq_rtt_sample(struct dpq_rtt *r, uint64_t latest_rtt,
		uint64_t ack_delay, uint64_t max_ack_delay,
		bool handshake_confirmed, uint64_t now);

/*
 * Persistent congestion was declared (§5.2: SHOULD set min_rtt to the
 * newest sample afterwards): the next sample replaces min_rtt.
 */
void dpq_rtt_on_persistent_congestion(struct dpq_rtt *r);

/* smoothed_rtt + max(4 * rttvar, kGranularity): the PTO base (§6.2.1),
 * without max_ack_delay and backoff. */
static inline uint64_t
dpq_rtt_pto_base(const struct dpq_rtt *r)
{
	uint64_t v = 4 * r->var;

	return r->smoothed + (v > DPQ_RTT_GRANULARITY ? v :
			DPQ_RTT_GRANULARITY);
}

#endif /* DPQ_ENGINE_RTT_H */
