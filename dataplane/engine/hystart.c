/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hystart.c: HyStart++ (RFC 9406 §4.2), see hystart.h; and the paced
 * delay signal described there (dpq_hystart_set_paced).
 */
#include <string.h>

#include "dataplane/engine/hystart.h"

void
dpq_hystart_init(struct dpq_hystart *h, uint64_t now)
{
	memset(h, 0, sizeof(*h));	/* not paced until set_paced */
	h->round_start = now;
	h->last_round_min_rtt = UINT64_MAX;
	h->cur_round_min_rtt = UINT64_MAX;
	h->css_baseline_min_rtt = UINT64_MAX;
	h->noise = UINT64_MAX;
	h->state = DPQ_HYSTART_SLOW_START;
	dpq_capest_init(&h->cap);
}

#define US_PER_S	UINT64_C(1000000)

/* The probe runs while the first slow start lasts, paced. */
static bool
probing(const struct dpq_hystart *h, const struct dpq_cc *cc)
{
	return h->paced && cc->ssthresh == UINT64_MAX &&
		h->state != DPQ_HYSTART_DONE;
}

static void
update_train(const struct dpq_hystart *h, struct dpq_cc *cc)
{
	cc->pace_train = probing(h, cc) && dpq_capest_get(&h->cap) == 0 ?
		DPQ_CAPEST_TRAIN_PKTS : 0;
}

void
dpq_hystart_on_sent(struct dpq_hystart *h, struct dpq_cc *cc,
		uint32_t bytes, uint64_t now)
{
	if (probing(h, cc))
		dpq_capest_on_sent(&h->cap, bytes, now);
	update_train(h, cc);
}

void
dpq_hystart_observe(struct dpq_hystart *h, struct dpq_cc *cc,
		const struct dpq_cc_ack *ev)
{
	if (probing(h, cc) && ev->bytes_acked != 0)
		dpq_capest_on_ack(&h->cap, ev->now, ev->largest_sent_time,
				ev->delivered, ev->lost);
	update_train(h, cc);
}

uint64_t
dpq_hystart_pacing_cap(const struct dpq_hystart *h, const struct dpq_cc *cc)
{
	uint64_t c = dpq_capest_low(&h->cap);

	if (c == 0 || !probing(h, cc))
		return DPQ_CC_UNPACED;
	return c;
}

uint64_t
dpq_hystart_pacing_rate(const struct dpq_hystart *h, const struct dpq_cc *cc,
		const struct dpq_rtt *rtt, uint64_t num, uint64_t den)
{
	uint64_t r = dpq_cc_rate_from_cwnd(cc->cwnd, rtt, num, den), cap, w;

	if (r == DPQ_CC_UNPACED || dpq_capest_get(&h->cap) == 0)
		return r;
	if (probing(h, cc)) {
		cap = dpq_hystart_pacing_cap(h, cc);
		return cap < r ? cap : r;
	}
	if (h->cap_exits == 0 || cc->congestion_events != h->cap_events)
		return r;
	cap = dpq_capest_low(&h->cap);
	w = dpq_cc_rate_from_cwnd(cc->cwnd, rtt, 1, 1);
	if (w > cap)
		cap = w;
	return cap < r ? cap : r;
}

bool
dpq_hystart_cap_reached(const struct dpq_hystart *h,
		const struct dpq_cc *cc, const struct dpq_cc_ack *ev)
{
	uint64_t c = dpq_hystart_pacing_cap(h, cc), min_rtt;

	if (c == DPQ_CC_UNPACED || ev->rtt == NULL || !ev->rtt->has_sample)
		return false;
	min_rtt = ev->rtt->min;
	return cc->cwnd >= c * min_rtt / US_PER_S;
}

static uint64_t
rtt_thresh(uint64_t last_min)
{
	uint64_t t = last_min / DPQ_HYSTART_MIN_RTT_DIVISOR;

	if (t > DPQ_HYSTART_MAX_RTT_THRESH)
		t = DPQ_HYSTART_MAX_RTT_THRESH;
	return t < DPQ_HYSTART_MIN_RTT_THRESH ? DPQ_HYSTART_MIN_RTT_THRESH : t;
}

/* The minimum of the last DPQ_HYSTART_PACED_WIN samples; UINT64_MAX
 * until there are that many. */
static uint64_t
slide_min(const struct dpq_hystart *h)
{
	uint64_t m = UINT64_MAX;
	unsigned int i;

	if (h->win_n < DPQ_HYSTART_PACED_WIN)
		return UINT64_MAX;
	for (i = 0; i < DPQ_HYSTART_PACED_WIN; i++)
		if (h->win[i] < m)
			m = h->win[i];
	return m;
}

static void
add_sample(struct dpq_hystart *h, uint64_t rtt)
{
	h->win[h->win_pos] = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
	h->win_pos = (uint8_t)((h->win_pos + 1) % DPQ_HYSTART_PACED_WIN);
	if (h->win_n < DPQ_HYSTART_PACED_WIN)
		h->win_n++;
	/* The round's two largest samples (the largest may be one the
	 * peer delayed on purpose, RFC 9000 §13.2.1). */
	if (rtt > h->cur_round_max[0]) {
		h->cur_round_max[1] = h->cur_round_max[0];
		h->cur_round_max[0] = rtt;
	} else if (rtt > h->cur_round_max[1]) {
		h->cur_round_max[1] = rtt;
	}
}

/* The paced rule's threshold over the last round's minimum; UINT64_MAX
 * when it does not apply (not paced, noise unknown, or no finer than
 * RFC 9406's own threshold). */
static uint64_t
paced_thresh(const struct dpq_hystart *h)
{
	uint64_t t, f;

	if (!h->paced || h->noise == UINT64_MAX ||
	    h->last_round_min_rtt == UINT64_MAX)
		return UINT64_MAX;
	t = h->noise * DPQ_HYSTART_PACED_NOISE_NUM /
		DPQ_HYSTART_PACED_NOISE_DEN;
	f = h->last_round_min_rtt / DPQ_HYSTART_PACED_MIN_RTT_DIVISOR;
	if (f < DPQ_HYSTART_PACED_MIN_THRESH)
		f = DPQ_HYSTART_PACED_MIN_THRESH;
	if (t < f)
		t = f;
	return t < rtt_thresh(h->last_round_min_rtt) ? t : UINT64_MAX;
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
		/* The paced signal's noise: the largest spread of a round
		 * so far (second largest sample - minimum), in rounds with
		 * enough samples to tell. */
		if (h->rtt_samples >= DPQ_HYSTART_N_RTT_SAMPLE &&
		    h->cur_round_min_rtt != UINT64_MAX) {
			uint64_t sp = h->cur_round_max[1] > h->cur_round_min_rtt ?
				h->cur_round_max[1] - h->cur_round_min_rtt : 0;

			if (h->noise == UINT64_MAX || sp > h->noise)
				h->noise = sp;
		}
		h->round_start = ev->now;
		h->last_round_min_rtt = h->cur_round_min_rtt;
		h->cur_round_min_rtt = UINT64_MAX;
		h->cur_round_max[0] = h->cur_round_max[1] = 0;
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
		add_sample(h, ev->rtt->latest);
		/* hystart.h: a paced sender's queue shows before the round's
		 * minimum can rise; slow start ends at once, without CSS. */
		if (h->state == DPQ_HYSTART_SLOW_START) {
			uint64_t t = paced_thresh(h), s = slide_min(h);

			if (t != UINT64_MAX && s != UINT64_MAX &&
			    s >= h->last_round_min_rtt + t) {
				h->state = DPQ_HYSTART_DONE;
				h->exits++;
				h->paced_exits++;
				*leave = true;
				return 0;
			}
		}
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
