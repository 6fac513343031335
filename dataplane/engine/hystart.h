/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hystart.h: HyStart++ (RFC 9406), the end of the first slow start for
 * the loss-based controllers (NewReno, CUBIC). Slow start doubles the
 * window every round trip until a packet is lost, so it ends one round
 * too late, with up to a window of losses. HyStart++ watches the minimum
 * RTT of each round (at least N_RTT_SAMPLE samples): once it rose by
 * clamp(last round's minimum / 8, 4 ms, 16 ms) a queue is building, and
 * the window grows by a quarter of the acknowledged bytes (Conservative
 * Slow Start, CSS) for up to CSS_ROUNDS rounds, then congestion
 * avoidance starts with ssthresh = cwnd. A CSS round whose minimum RTT
 * fell below the one that started CSS was a false alarm: back to slow
 * start.
 *
 * Rounds (RFC 9406 §4.2 windowEnd) are counted in send times: a round
 * ends when a packet sent after it began is acknowledged. Used for the
 * first slow start only (§4.2: later ones stop at the ssthresh found).
 * The growth limit L is infinite (§4.3: every dpquic connection paces
 * by default). A loss ends it like any slow start: the caller stops
 * calling dpq_hystart_on_ack once ssthresh is set.
 *
 * Pure: no clock (times come in the ACK event), one connection.
 */
#ifndef DPQ_ENGINE_HYSTART_H
#define DPQ_ENGINE_HYSTART_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/engine/cc.h"

/* RFC 9406 §4.3, the recommended constants (times in us). */
#define DPQ_HYSTART_MIN_RTT_THRESH	4000
#define DPQ_HYSTART_MAX_RTT_THRESH	16000
#define DPQ_HYSTART_MIN_RTT_DIVISOR	8
#define DPQ_HYSTART_N_RTT_SAMPLE	8
#define DPQ_HYSTART_CSS_GROWTH_DIVISOR	4
#define DPQ_HYSTART_CSS_ROUNDS		5

enum dpq_hystart_state {
	DPQ_HYSTART_SLOW_START = 0,
	DPQ_HYSTART_CSS,		/* conservative slow start */
	DPQ_HYSTART_DONE,		/* left for congestion avoidance */
};

struct dpq_hystart {
	uint64_t round_start;		/* us: when the current round began */
	uint64_t last_round_min_rtt;	/* us; UINT64_MAX: none */
	uint64_t cur_round_min_rtt;	/* us; UINT64_MAX: none */
	uint64_t css_baseline_min_rtt;	/* us; UINT64_MAX: none */
	uint32_t rtt_samples;		/* in the current round */
	uint8_t css_rounds;		/* rounds completed in CSS */
	uint8_t state;			/* enum dpq_hystart_state */
	uint64_t exits;			/* times CSS was entered (stats) */
};

void dpq_hystart_init(struct dpq_hystart *h, uint64_t now);

/*
 * An ACK in the first slow start (cwnd < ssthresh, ssthresh never set):
 * returns the bytes the window grows by (ev->bytes_acked in slow start,
 * a quarter of it in CSS). *leave is set true when slow start is over:
 * the caller sets ssthresh = cwnd (after adding the growth).
 */
uint64_t dpq_hystart_on_ack(struct dpq_hystart *h,
		const struct dpq_cc_ack *ev, bool *leave);

/*
 * One ACK of slow start for a loss-based controller (RFC 9002 §7.3.1,
 * RFC 9438 §4.10): the window grows by the bytes acknowledged, and the
 * first slow start (ssthresh not yet set) ends by HyStart++ when the RTT
 * rises, setting ssthresh to the window reached. Shared by NewReno and
 * CUBIC.
 */
static inline void
dpq_hystart_slow_start(struct dpq_hystart *h, struct dpq_cc *cc,
		const struct dpq_cc_ack *ev)
{
	bool leave;

	if (cc->ssthresh != UINT64_MAX) {
		cc->cwnd += ev->bytes_acked;
		return;
	}
	cc->cwnd += dpq_hystart_on_ack(h, ev, &leave);
	if (leave)
		cc->ssthresh = cc->cwnd;
}

static inline bool
dpq_hystart_in_css(const struct dpq_hystart *h)
{
	return h->state == DPQ_HYSTART_CSS;
}

#endif /* DPQ_ENGINE_HYSTART_H */
