/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_newreno.c: NewReno (RFC 9002 §7, Appendix B).
 *
 * Slow start grows the window by the bytes acknowledged; congestion
 * avoidance by one max datagram per window of bytes acknowledged,
 * counted with an accumulator (Appropriate Byte Counting, RFC 3465 §2.1)
 * so integer division loses nothing. A congestion event (loss or ECN-CE)
 * halves the window once per recovery period: the period starts at the
 * event and ends when a packet sent after its start is acknowledged
 * (§7.3.2). The window never grows while the sender is application
 * limited (§7.8). The first slow start ends early on an RTT rise
 * (HyStart++, RFC 9406, hystart.h). A spurious congestion event (every packet whose loss
 * started it was acknowledged after all) restores the window and
 * threshold saved when it started, as Linux TCP's undo does.
 */
#include <stdbool.h>
#include <string.h>

#include "dataplane/engine/cc_newreno.h"
#include "dataplane/engine/hystart.h"

/* RFC 9002 §7.3.2: kLossReductionFactor 0.5, as num/den. */
#define NEWRENO_LOSS_REDUCTION_NUM	1
#define NEWRENO_LOSS_REDUCTION_DEN	2
/* RFC 9002 §7.7: pacing gain N = 1.25, as num/den. */
#define NEWRENO_PACING_NUM	5
#define NEWRENO_PACING_DEN	4

struct newreno {
	uint64_t recovery_start;	/* valid if have_recovery */
	uint64_t ca_acked;		/* bytes acked toward the next +1 MSS */
	uint64_t undo_cwnd;		/* before the last reduction */
	uint64_t undo_ssthresh;
	bool have_recovery;		/* a recovery period has started */
	bool can_undo;			/* undo_* hold the state to restore */
	bool recovering;		/* no packet sent since the period
					 * started has been acked yet */
	struct dpq_hystart hs;		/* the end of the first slow start */
};

_Static_assert(sizeof(struct newreno) <= DPQ_CC_STATE_SIZE,
		"NewReno state must fit in struct dpq_cc");

static struct newreno *
nr(struct dpq_cc *cc)
{
	return (struct newreno *)(void *)cc->state;
}

static const struct newreno *
nr_c(const struct dpq_cc *cc)
{
	return (const struct newreno *)(const void *)cc->state;
}

/* §7.3.2 InCongestionRecovery(): sent during the current period. */
static bool
in_recovery(const struct newreno *s, uint64_t sent_time)
{
	return s->have_recovery && sent_time <= s->recovery_start;
}

static void
newreno_init(struct dpq_cc *cc, const struct dpq_cc_conf *conf,
		uint64_t now)
{
	struct newreno *s = nr(cc);

	memset(s, 0, sizeof(*s));
	dpq_hystart_init(&s->hs, now);
	dpq_hystart_set_paced(&s->hs, conf->paced);
	cc->ssthresh = UINT64_MAX;
	cc->cwnd = conf->initial_window != 0 ? conf->initial_window :
		dpq_cc_initial_window(cc->max_datagram_size);
	if (cc->cwnd < dpq_cc_min_window(cc))
		cc->cwnd = dpq_cc_min_window(cc);
}

static void
newreno_on_sent(struct dpq_cc *cc, uint32_t bytes, uint64_t now)
{
	/* The first slow start's capacity probe (hystart.h). */
	dpq_hystart_on_sent(&nr(cc)->hs, cc, bytes, now);
}

static void
newreno_on_ack(struct dpq_cc *cc, const struct dpq_cc_ack *ev)
{
	struct newreno *s = nr(cc);

	if (ev->bytes_acked == 0)
		return;
	dpq_hystart_observe(&s->hs, cc, ev);
	if (s->recovering && !in_recovery(s, ev->largest_sent_time))
		s->recovering = false;
	/* §7.8: an under-used window is not evidence the path can take a
	 * bigger one. */
	if (cc->app_limited)
		return;
	/* §7.3.2: no growth for packets sent before recovery started. */
	if (in_recovery(s, ev->largest_sent_time))
		return;
	if (cc->cwnd < cc->ssthresh) {
		/* §7.3.1 slow start; the first one ends by HyStart++
		 * (RFC 9406) before the queue overflows, if it can. */
		dpq_hystart_slow_start(&s->hs, cc, ev);
		return;
	}
	/* §7.3.3 congestion avoidance: + max_datagram_size per cwnd. */
	s->ca_acked += ev->bytes_acked;
	while (s->ca_acked >= cc->cwnd) {
		s->ca_acked -= cc->cwnd;
		cc->cwnd += cc->max_datagram_size;
	}
}

static void
newreno_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	struct newreno *s = nr(cc);

	/* §7.3.2: one reduction per recovery period. */
	if (in_recovery(s, ev->largest_sent_time))
		return;
	s->undo_cwnd = cc->cwnd;
	s->undo_ssthresh = cc->ssthresh;
	s->can_undo = !ev->ecn_ce;
	s->have_recovery = true;
	s->recovering = true;
	s->recovery_start = ev->now;
	/* B.6: ssthresh = cwnd * kLossReductionFactor, cwnd =
	 * max(ssthresh, kMinimumWindow). */
	cc->ssthresh = cc->cwnd * NEWRENO_LOSS_REDUCTION_NUM /
		NEWRENO_LOSS_REDUCTION_DEN;
	cc->cwnd = cc->ssthresh > dpq_cc_min_window(cc) ? cc->ssthresh :
		dpq_cc_min_window(cc);
	s->ca_acked = 0;
}

static void
newreno_on_persistent_congestion(struct dpq_cc *cc, uint64_t now)
{
	struct newreno *s = nr(cc);

	(void)now;
	/* §7.6.2 and B.8: minimum window, and leave recovery so the next
	 * loss is a new congestion event. */
	cc->cwnd = dpq_cc_min_window(cc);
	s->have_recovery = false;
	s->recovering = false;
	s->can_undo = false;
	s->ca_acked = 0;
}

static void
newreno_on_spurious(struct dpq_cc *cc, uint64_t now)
{
	struct newreno *s = nr(cc);

	(void)now;
	if (!s->can_undo)
		return;
	s->can_undo = false;
	if (s->undo_cwnd > cc->cwnd)
		cc->cwnd = s->undo_cwnd;
	cc->ssthresh = s->undo_ssthresh;
	/* The period rested on a false signal: the next loss counts. */
	s->have_recovery = false;
	s->recovering = false;
	s->ca_acked = 0;
}

static uint64_t
newreno_pacing_rate(const struct dpq_cc *cc, const struct dpq_rtt *rtt)
{
	/* §7.7: rate = N * cwnd / smoothed_rtt; N = 2 in slow start (as
	 * Linux paces), so pacing never holds the window's doubling back;
	 * bounded by the first slow start's capacity probe (hystart.h). */
	if (cc->cwnd < cc->ssthresh)
		return dpq_hystart_pacing_rate(&nr_c(cc)->hs, cc, rtt, 2, 1);
	return dpq_hystart_pacing_rate(&nr_c(cc)->hs, cc, rtt,
			NEWRENO_PACING_NUM, NEWRENO_PACING_DEN);
}

static void
newreno_info(const struct dpq_cc *cc, struct dpq_cc_info *out)
{
	const struct newreno *s = nr_c(cc);

	out->ssthresh = cc->ssthresh;
	if (cc->cwnd < cc->ssthresh && dpq_hystart_in_css(&s->hs))
		out->state = "conservative_slow_start";
	out->phase = s->recovering ? DPQ_CC_PHASE_RECOVERY :
		cc->cwnd < cc->ssthresh ? DPQ_CC_PHASE_SLOW_START :
		DPQ_CC_PHASE_AVOIDANCE;
}

uint64_t
dpq_cc_newreno_ssthresh(const struct dpq_cc *cc)
{
	return cc->ssthresh;
}

const struct dpq_cc_ops dpq_cc_newreno_ops = {
	.name = "newreno",
	.init = newreno_init,
	.on_sent = newreno_on_sent,
	.on_ack = newreno_on_ack,
	.on_loss = newreno_on_loss,
	.on_persistent_congestion = newreno_on_persistent_congestion,
	.on_spurious = newreno_on_spurious,
	.pacing_rate = newreno_pacing_rate,
	.info = newreno_info,
};
