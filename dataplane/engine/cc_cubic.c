/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_cubic.c: CUBIC (RFC 9438) on the QUIC recovery of RFC 9002.
 *
 * Slow start and recovery periods are NewReno's (RFC 9002 §7.3.1,
 * §7.3.2): one reduction per period, no growth for packets sent before
 * it. In congestion avoidance the window follows the cubic function of
 * the time since the epoch started (§4.2):
 *
 *     W_cubic(t) = C * (t - K)^3 + W_max,  K = cbrt((W_max - cwnd_epoch) / C)
 *
 * aiming one RTT ahead, target = W_cubic(t + RTT) clamped to
 * [cwnd, 1.5 cwnd], and growing by (target - cwnd) / cwnd per segment
 * acknowledged; it stays at least the Reno-friendly estimate W_est, which
 * grows by alpha = 3 (1 - beta) / (1 + beta) segments per window, and
 * by one once W_est passed the window before the last reduction (§4.3).
 * A congestion event keeps beta = 0.7 of the window (§4.6) and, with
 * fast convergence, remembers a W_max below the window when the last
 * one was not reached again (§4.7). Persistent congestion goes to the
 * minimum window (§4.8). A spurious event restores everything saved
 * when it started (§4.9). While application limited the window does
 * not grow and the epoch is shifted by the time spent so, so the curve
 * does not leap afterwards (§5.8).
 *
 * The first slow start ends early on an RTT rise (HyStart++, RFC 9406,
 * hystart.h).
 *
 * Units: bytes and microseconds at the interface, segments and seconds
 * inside the formulas, double precision (no libm: the one cube root per
 * congestion event is Newton's method). Pacing: 2 cwnd / srtt in slow
 * start, 1.25 cwnd / srtt otherwise (RFC 9002 §7.7's N, and the slow
 * start ratio Linux uses so that pacing does not slow slow start).
 */
#include <string.h>

#include "dataplane/engine/cc_cubic.h"
#include "dataplane/engine/hystart.h"

#define US_PER_S	1e6
/* RFC 9438 §4.6 and §4.3. */
#define CUBIC_ALPHA	(3.0 * (1.0 - DPQ_CUBIC_BETA) / (1.0 + DPQ_CUBIC_BETA))
/* RFC 9438 §4.2: the target is at most 1.5 cwnd. */
#define CUBIC_TARGET_MAX	1.5

struct cubic_undo {
	uint64_t cwnd, ssthresh, epoch_start;
	double w_max, k, w_est, cwnd_prior, cwnd_epoch;
};

struct cubic {
	uint64_t recovery_start;	/* us, valid if have_recovery */
	uint64_t epoch_start;		/* us; 0 = start at the next ACK */
	uint64_t app_limited_since;	/* us; 0 = not limited */
	double w_max;			/* bytes */
	double k;			/* s */
	double w_est;			/* bytes */
	double cwnd_prior;		/* bytes */
	double cwnd_epoch;		/* bytes */
	double frac;			/* fractional growth carried, bytes */
	struct cubic_undo undo;
	bool have_recovery;
	bool recovering;
	bool can_undo;
	bool reno_friendly;
	struct dpq_hystart hs;		/* the end of the first slow start */
};

_Static_assert(sizeof(struct cubic) <= DPQ_CC_STATE_SIZE,
		"CUBIC state must fit in struct dpq_cc");

static struct cubic *
cu(struct dpq_cc *cc)
{
	return (struct cubic *)(void *)cc->state;
}

static const struct cubic *
cu_c(const struct dpq_cc *cc)
{
	return (const struct cubic *)(const void *)cc->state;
}

/* Cube root of x >= 0 by Newton's method (enough for a window). */
static double
cbrt_pos(double x)
{
	double r = x > 1.0 ? x / 3.0 : 1.0;
	int i;

	if (x <= 0.0)
		return 0.0;
	for (i = 0; i < 100; i++) {
		double n = r - (r * r * r - x) / (3.0 * r * r);

		if (n == r || (n > r ? n - r : r - n) < r * 1e-12)
			return n;
		r = n;
	}
	return r;
}

double
dpq_cubic_k(double w_max, double cwnd_epoch, uint32_t mss)
{
	if (cwnd_epoch >= w_max)
		return 0.0;
	return cbrt_pos((w_max - cwnd_epoch) / mss / DPQ_CUBIC_C);
}

double
dpq_cubic_w(double w_max, double k, double t, uint32_t mss)
{
	double d = t - k;

	return DPQ_CUBIC_C * d * d * d * mss + w_max;
}

static bool
in_recovery(const struct cubic *s, uint64_t sent_time)
{
	return s->have_recovery && sent_time <= s->recovery_start;
}

static void
cubic_init(struct dpq_cc *cc, const struct dpq_cc_conf *conf, uint64_t now)
{
	struct cubic *s = cu(cc);

	memset(s, 0, sizeof(*s));
	dpq_hystart_init(&s->hs, now);
	dpq_hystart_set_paced(&s->hs, conf->paced);
	cc->ssthresh = UINT64_MAX;
	cc->cwnd = conf->initial_window != 0 ? conf->initial_window :
		dpq_cc_initial_window(cc->max_datagram_size);
	if (cc->cwnd < dpq_cc_min_window(cc))
		cc->cwnd = dpq_cc_min_window(cc);
}

/* §4.2: a new congestion-avoidance epoch starts at this ACK. */
static void
epoch_begin(struct dpq_cc *cc, struct cubic *s, uint64_t now)
{
	double cwnd = (double)cc->cwnd;

	s->epoch_start = now != 0 ? now : 1;
	s->cwnd_epoch = cwnd;
	if (s->w_max < cwnd) {
		/* No loss below this window yet (e.g. slow start ended by
		 * an undo): the curve starts convex from here. */
		s->w_max = cwnd;
	}
	s->k = dpq_cubic_k(s->w_max, cwnd, cc->max_datagram_size);
	s->w_est = cwnd;
	s->frac = 0.0;
}

static void
cubic_avoidance(struct dpq_cc *cc, struct cubic *s,
		const struct dpq_cc_ack *ev)
{
	uint32_t mss = cc->max_datagram_size;
	double cwnd = (double)cc->cwnd, t, target, w_t, alpha, grow;
	uint64_t srtt = ev->rtt != NULL ? ev->rtt->smoothed : 0;

	if (s->epoch_start == 0)
		epoch_begin(cc, s, ev->now);
	t = (double)(ev->now - s->epoch_start) / US_PER_S;

	/* §4.3: the Reno-friendly estimate. */
	alpha = s->w_est >= s->cwnd_prior ? 1.0 : CUBIC_ALPHA;
	s->w_est += alpha * (double)ev->bytes_acked * mss / cwnd;

	/* §4.2: aim at the curve one RTT ahead. */
	target = dpq_cubic_w(s->w_max, s->k, t + (double)srtt / US_PER_S, mss);
	if (target < cwnd)
		target = cwnd;
	if (target > CUBIC_TARGET_MAX * cwnd)
		target = CUBIC_TARGET_MAX * cwnd;

	w_t = dpq_cubic_w(s->w_max, s->k, t, mss);
	if (w_t < s->w_est) {
		/* Reno-friendly region: at least what Reno would have. */
		s->reno_friendly = true;
		if (s->w_est > cwnd)
			cc->cwnd = (uint64_t)s->w_est;
		return;
	}
	s->reno_friendly = false;
	/* (target - cwnd) / cwnd per segment acknowledged, in bytes. */
	grow = (target - cwnd) * (double)ev->bytes_acked / cwnd + s->frac;
	if (grow >= 1.0) {
		cc->cwnd += (uint64_t)grow;
		grow -= (double)(uint64_t)grow;
	}
	s->frac = grow;
}

static void
cubic_on_sent(struct dpq_cc *cc, uint32_t bytes, uint64_t now)
{
	/* The first slow start's capacity probe (hystart.h). */
	dpq_hystart_on_sent(&cu(cc)->hs, cc, bytes, now);
}

static void
cubic_on_ack(struct dpq_cc *cc, const struct dpq_cc_ack *ev)
{
	struct cubic *s = cu(cc);

	if (ev->bytes_acked == 0)
		return;
	dpq_hystart_observe(&s->hs, cc, ev);
	if (s->recovering && !in_recovery(s, ev->largest_sent_time))
		s->recovering = false;
	if (cc->app_limited) {
		/* RFC 9002 §7.8: no growth. Remember when it began. */
		if (s->app_limited_since == 0)
			s->app_limited_since = ev->now != 0 ? ev->now : 1;
		return;
	}
	if (s->app_limited_since != 0) {
		/* §5.8: time spent application limited does not count
		 * toward t (the curve would leap otherwise). */
		if (s->epoch_start != 0 && ev->now > s->app_limited_since)
			s->epoch_start += ev->now - s->app_limited_since;
		s->app_limited_since = 0;
	}
	if (in_recovery(s, ev->largest_sent_time))
		return;
	if (cc->cwnd < cc->ssthresh) {
		/* RFC 9002 §7.3.1 (RFC 9438 §4.10): slow start; the first
		 * one ends by HyStart++ (RFC 9406) if the RTT rises first;
		 * the epoch then starts with W_max = cwnd. */
		dpq_hystart_slow_start(&s->hs, cc, ev);
		return;
	}
	cubic_avoidance(cc, s, ev);
}

static void
save_undo(struct dpq_cc *cc, struct cubic *s)
{
	s->undo.cwnd = cc->cwnd;
	s->undo.ssthresh = cc->ssthresh;
	s->undo.epoch_start = s->epoch_start;
	s->undo.w_max = s->w_max;
	s->undo.k = s->k;
	s->undo.w_est = s->w_est;
	s->undo.cwnd_prior = s->cwnd_prior;
	s->undo.cwnd_epoch = s->cwnd_epoch;
}

static void
cubic_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	struct cubic *s = cu(cc);
	double cwnd = (double)cc->cwnd;
	uint64_t ss;

	/* RFC 9002 §7.3.2: one reduction per recovery period. */
	if (in_recovery(s, ev->largest_sent_time))
		return;
	save_undo(cc, s);
	s->can_undo = !ev->ecn_ce;
	s->have_recovery = true;
	s->recovering = true;
	s->recovery_start = ev->now;
	/* §4.7 fast convergence: a window that did not reach the last
	 * W_max again leaves room for newer flows. */
	if (cwnd < s->w_max)
		s->w_max = cwnd * (1.0 + DPQ_CUBIC_BETA) / 2.0;
	else
		s->w_max = cwnd;
	s->cwnd_prior = cwnd;
	/* §4.6: ssthresh = cwnd * beta (0.7, in integers), at least the
	 * minimum window. */
	ss = cc->cwnd / 10 * 7 + cc->cwnd % 10 * 7 / 10;
	cc->ssthresh = ss > dpq_cc_min_window(cc) ? ss :
		dpq_cc_min_window(cc);
	cc->cwnd = cc->ssthresh;
	/* §4.6: the new epoch starts at the first ACK in avoidance. */
	s->epoch_start = 0;
	s->frac = 0.0;
}

static void
cubic_on_persistent_congestion(struct dpq_cc *cc, uint64_t now)
{
	struct cubic *s = cu(cc);

	(void)now;
	/* §4.8 and RFC 9002 §7.6.2: the minimum window, slow start up to
	 * the ssthresh the congestion event set; a fresh epoch after. */
	cc->cwnd = dpq_cc_min_window(cc);
	s->epoch_start = 0;
	s->have_recovery = false;
	s->recovering = false;
	s->can_undo = false;
	s->frac = 0.0;
}

static void
cubic_on_spurious(struct dpq_cc *cc, uint64_t now)
{
	struct cubic *s = cu(cc);

	(void)now;
	if (!s->can_undo)
		return;
	/* §4.9: restore the state of before the event. */
	s->can_undo = false;
	if (s->undo.cwnd > cc->cwnd)
		cc->cwnd = s->undo.cwnd;
	cc->ssthresh = s->undo.ssthresh;
	s->epoch_start = s->undo.epoch_start;
	s->w_max = s->undo.w_max;
	s->k = s->undo.k;
	s->w_est = s->undo.w_est;
	s->cwnd_prior = s->undo.cwnd_prior;
	s->cwnd_epoch = s->undo.cwnd_epoch;
	s->have_recovery = false;
	s->recovering = false;
}

static uint64_t
cubic_pacing_rate(const struct dpq_cc *cc, const struct dpq_rtt *rtt)
{
	if (cc->cwnd < cc->ssthresh)
		return dpq_hystart_pacing_rate(&cu_c(cc)->hs, cc, rtt, 2, 1);
	return dpq_hystart_pacing_rate(&cu_c(cc)->hs, cc, rtt, 5, 4);
}

static void
cubic_info(const struct dpq_cc *cc, struct dpq_cc_info *out)
{
	const struct cubic *s = cu_c(cc);

	out->ssthresh = cc->ssthresh;
	if (s->recovering) {
		out->phase = DPQ_CC_PHASE_RECOVERY;
		out->state = "recovery";
	} else if (cc->cwnd < cc->ssthresh) {
		out->phase = DPQ_CC_PHASE_SLOW_START;
		out->state = dpq_hystart_in_css(&s->hs) ?
			"conservative_slow_start" : "slow_start";
	} else {
		out->phase = DPQ_CC_PHASE_AVOIDANCE;
		out->state = s->reno_friendly ? "reno_friendly" :
			(double)cc->cwnd < s->w_max ? "concave" : "convex";
	}
}

void
dpq_cc_cubic_view(const struct dpq_cc *cc, struct dpq_cubic_view *v)
{
	const struct cubic *s = cu_c(cc);

	v->w_max = s->w_max;
	v->k = s->k;
	v->w_est = s->w_est;
	v->cwnd_prior = s->cwnd_prior;
	v->epoch_start = s->epoch_start;
	v->reno_friendly = s->reno_friendly;
}

const struct dpq_cc_ops dpq_cc_cubic_ops = {
	.name = "cubic",
	.init = cubic_init,
	.on_sent = cubic_on_sent,
	.on_ack = cubic_on_ack,
	.on_loss = cubic_on_loss,
	.on_persistent_congestion = cubic_on_persistent_congestion,
	.on_spurious = cubic_on_spurious,
	.pacing_rate = cubic_pacing_rate,
	.info = cubic_info,
};
