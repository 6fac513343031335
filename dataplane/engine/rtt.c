/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rtt.c: RTT estimation (RFC 9002 §5). Integer microseconds throughout;
 * the 7/8 and 3/4 weights truncate toward zero.
 */
#include "dataplane/engine/rtt.h"

void
dpq_rtt_init(struct dpq_rtt *r, uint64_t initial_rtt)
{
	r->latest = 0;
	r->min = 0;
	r->smoothed = initial_rtt;
	r->var = initial_rtt / 2;
	r->first_sample_time = 0;
	r->has_sample = false;
	r->reset_min = false;
}

void
dpq_rtt_sample(struct dpq_rtt *r, uint64_t latest_rtt, uint64_t ack_delay,
		uint64_t max_ack_delay, bool handshake_confirmed, uint64_t now)
{
	uint64_t adjusted, diff;

	r->latest = latest_rtt;
	if (!r->has_sample) {
		/* §5.3: the first sample resets the estimator. */
		r->min = latest_rtt;
		r->smoothed = latest_rtt;
		r->var = latest_rtt / 2;
		r->first_sample_time = now;
		r->has_sample = true;
		r->reset_min = false;
		return;
	}

	/* §5.2: min_rtt ignores the ack delay; after persistent congestion
	 * it restarts from the newest sample. */
	if (r->reset_min || latest_rtt < r->min) {
		r->min = latest_rtt;
		r->reset_min = false;
	}

	/* §5.3: cap by max_ack_delay only once the handshake is confirmed. */
	if (handshake_confirmed && ack_delay > max_ack_delay)
		ack_delay = max_ack_delay;

	/* §5.3: never subtract the ack delay below min_rtt. */
	adjusted = latest_rtt;
	if (latest_rtt >= r->min + ack_delay)
		adjusted = latest_rtt - ack_delay;

	/*
	 * RFC 6298 order, as in RFC 9002 Appendix A.7: rttvar uses the
	 * smoothed_rtt from before this sample (the prose of §5.3 lists
	 * the two updates in the other order; the appendix is the one that
	 * matches TCP).
	 */
	diff = r->smoothed > adjusted ? r->smoothed - adjusted :
		adjusted - r->smoothed;
	r->var = (3 * r->var + diff) / 4;
	r->smoothed = (7 * r->smoothed + adjusted) / 8;
}

void
dpq_rtt_on_persistent_congestion(struct dpq_rtt *r)
{
	r->reset_min = true;
}
