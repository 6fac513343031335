/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hystart.c: HyStart++ (RFC 9406 §4.2), see hystart.h.
 */
#include "dataplane/engine/hystart.h"

void
dpq_hystart_init(struct dpq_hystart *h, uint64_t now)
{
	h->round_start = now;
	h->last_round_min_rtt = UINT64_MAX;
	h->cur_round_min_rtt = UINT64_MAX;
	h->css_baseline_min_rtt = UINT64_MAX;
	h->rtt_samples = 0;
	h->css_rounds = 0;
	h->state = DPQ_HYSTART_SLOW_START;
	h->exits = 0;
}

static uint64_t
rtt_thresh(uint64_t last_min)
{
	uint64_t t = last_min / DPQ_HYSTART_MIN_RTT_DIVISOR;

	if (t > DPQ_HYSTART_MAX_RTT_THRESH)
		t = DPQ_HYSTART_MAX_RTT_THRESH;
	return t < DPQ_HYSTART_MIN_RTT_THRESH ? DPQ_HYSTART_MIN_RTT_THRESH : t;
}

uint64_t
dpq_hystart_on_ack(struct dpq_hystart *h, const struct dpq_cc_ack *ev,
		bool *leave)
{
	*leave = false;
	if (h->state == DPQ_HYSTART_DONE)
		return ev->bytes_acked;
	/* §4.2: a round ends when data sent after it began is acked
	 * (windowEnd); the next one starts now. */
	if (ev->largest_sent_time > h->round_start) {
		h->round_start = ev->now;
		h->last_round_min_rtt = h->cur_round_min_rtt;
		h->cur_round_min_rtt = UINT64_MAX;
		h->rtt_samples = 0;
		if (h->state == DPQ_HYSTART_CSS &&
		    ++h->css_rounds >= DPQ_HYSTART_CSS_ROUNDS) {
			/* §4.2: CSS_ROUNDS in CSS: congestion avoidance. */
			h->state = DPQ_HYSTART_DONE;
			*leave = true;
			return ev->bytes_acked / DPQ_HYSTART_CSS_GROWTH_DIVISOR;
		}
	}
	if (ev->rtt_sampled && ev->rtt != NULL) {
		if (ev->rtt->latest < h->cur_round_min_rtt)
			h->cur_round_min_rtt = ev->rtt->latest;
		h->rtt_samples++;
	}
	if (h->rtt_samples >= DPQ_HYSTART_N_RTT_SAMPLE &&
	    h->cur_round_min_rtt != UINT64_MAX) {
		if (h->state == DPQ_HYSTART_SLOW_START &&
		    h->last_round_min_rtt != UINT64_MAX &&
		    h->cur_round_min_rtt >= h->last_round_min_rtt +
		    rtt_thresh(h->last_round_min_rtt)) {
			/* The RTT rose: a queue is building. */
			h->css_baseline_min_rtt = h->cur_round_min_rtt;
			h->state = DPQ_HYSTART_CSS;
			h->css_rounds = 0;
			h->exits++;
		} else if (h->state == DPQ_HYSTART_CSS &&
		    h->cur_round_min_rtt < h->css_baseline_min_rtt) {
			/* The rise did not last: slow start again. */
			h->css_baseline_min_rtt = UINT64_MAX;
			h->state = DPQ_HYSTART_SLOW_START;
		}
	}
	if (h->state == DPQ_HYSTART_CSS)
		return ev->bytes_acked / DPQ_HYSTART_CSS_GROWTH_DIVISOR;
	return ev->bytes_acked;
}
