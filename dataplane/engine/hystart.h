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

#include "dataplane/engine/capest.h"
#include "dataplane/engine/cc.h"

/* RFC 9406 §4.3, the recommended constants (times in us). */
#define DPQ_HYSTART_MIN_RTT_THRESH	4000
#define DPQ_HYSTART_MAX_RTT_THRESH	16000
#define DPQ_HYSTART_MIN_RTT_DIVISOR	8
#define DPQ_HYSTART_N_RTT_SAMPLE	8
#define DPQ_HYSTART_CSS_GROWTH_DIVISOR	4
#define DPQ_HYSTART_CSS_ROUNDS		5

/* The paced delay signal (a deliberate deviation from RFC 9406, see
 * below and docs/recovery.md): RTT samples in the sliding window, the
 * least threshold (us), the part of the last round's minimum it is at
 * least, and its least multiple of the path's noise (num/den). Chosen
 * by a Monte Carlo of FIFO jitter (1 ms, 200 us; 20-100 ms RTT): with
 * 1.5 x the largest spread and four samples no false exit in 60 slow
 * starts of each path; with 2 x the sliding minimum's own rise, up to
 * 28% (docs/recovery.md). */
#define DPQ_HYSTART_PACED_WIN		4
#define DPQ_HYSTART_PACED_MIN_THRESH	250
#define DPQ_HYSTART_PACED_MIN_RTT_DIVISOR 64
#define DPQ_HYSTART_PACED_NOISE_NUM	3
#define DPQ_HYSTART_PACED_NOISE_DEN	2

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
	/* The paced delay signal (dpq_hystart_set_paced). */
	uint32_t win[DPQ_HYSTART_PACED_WIN];	/* last RTT samples, us */
	uint8_t win_n;			/* samples in win (<= WIN) */
	uint8_t win_pos;		/* where the next one goes */
	bool paced;			/* the signal is on */
	uint64_t cur_round_max[2];	/* us: the round's two largest */
	uint64_t noise;			/* us; UINT64_MAX: unknown */
	uint64_t paced_exits;		/* CSS entered by it (stats) */
	/* The capacity probe (paced only). */
	struct dpq_capest cap;
	uint64_t cap_exits;		/* slow start ended by it (stats) */
	uint64_t cap_events;		/* cc->congestion_events then */
};

void dpq_hystart_init(struct dpq_hystart *h, uint64_t now);

/*
 * The sender paces (RFC 9002 §7.7, pacer.h): also watch for a queue far
 * smaller than RFC 9406's 4 ms floor. A deliberate deviation from RFC
 * 9406 §4.2, for paced senders only:
 *
 * RFC 9406 compares each round's minimum RTT with the last round's,
 * against clamp(min / 8, 4 ms, 16 ms). Behind a shallow drop-tail queue
 * (100 Mbit/s, 15 kB = 1.2 ms) the RTT can never rise by 4 ms, and the
 * round's minimum never rises at all in the round that overflows: its
 * first samples are of packets sent before the queue formed. The floor
 * exists because an unpaced sender's own line-rate bursts queue behind
 * each other and make its RTT samples jump. A paced sender's samples
 * carry no such self-inflicted noise, so a smaller rise is evidence too,
 * if it stands out from the noise the path itself showed:
 *
 *   slide  the minimum of the last DPQ_HYSTART_PACED_WIN samples (one
 *          late ACK or a jitter spike cannot move it; a queue that lasts
 *          that many samples does);
 *   noise  the largest spread of a completed round so far (of at least
 *          N_RTT_SAMPLE samples): its second largest sample minus its
 *          minimum (the largest may be an ACK the peer delayed on
 *          purpose). Earlier rounds together hold about as many samples
 *          as the current one (the window doubles), so the running
 *          maximum is a fair measure of what jitter alone does to it;
 *   rise   slide >= last round's minimum + max(1.5 * noise,
 *          DPQ_HYSTART_PACED_MIN_THRESH, minimum / PACED_MIN_RTT_DIVISOR)
 *          ends slow start at once: ssthresh = cwnd, no growth for this
 *          ACK, no CSS. CSS (§4.2) grows the window by a quarter of each
 *          ACK, i.e. sends 1.25 times what the path delivers into a
 *          queue that is then already full: behind the 15 kB queue it
 *          doubled the drops of the first slow start (docs/recovery.md).
 *          CSS is there against false alarms; here the threshold above
 *          the path's measured noise is.
 *
 * Used only while that threshold is below RFC 9406's: on a path whose
 * jitter is larger the RFC rule alone decides, as without pacing.
 */
static inline void
dpq_hystart_set_paced(struct dpq_hystart *h, bool paced)
{
	h->paced = paced;
}

/*
 * The capacity probe, a second deviation from RFC 9406 §4.2 for paced
 * senders (RFC 9406 ends slow start on RTT rises only; its predecessor
 * HyStart also watched ACK trains): the delay signal above sees the
 * bottleneck only an RTT after the round that first exceeds its rate,
 * and behind a queue of ten datagrams that round has already overflowed
 * it. So while the first slow start lasts the pacer sends in trains of
 * DPQ_CAPEST_TRAIN_PKTS datagrams (same average rate) and capest.h
 * measures their dispersion. Once it gives an estimate C (consistent
 * samples only), slow start is paced at no more than its lower bound
 * (dpq_capest_low: the median less half the samples' scatter; an
 * estimate a little too high must not fill a queue of a few datagrams,
 * one too low only ends slow start early) and ends at once, without
 * CSS, when the window reaches that rate times min_rtt. That ceiling
 * may be below cwnd / smoothed_rtt, a deviation from RFC 9002 §7.7 (N
 * at least 1): in slow start the window grows by what is acknowledged
 * and runs ahead of what the path can take; the window stops there.
 * Without an estimate nothing changes.
 */

/* An in-flight datagram left (the controller's on_sent). */
void dpq_hystart_on_sent(struct dpq_hystart *h, struct dpq_cc *cc,
		uint32_t bytes, uint64_t now);

/* Every ACK of in-flight data, before the controller's own checks (the
 * probe needs the ACKs' timing even while the window does not grow). */
void dpq_hystart_observe(struct dpq_hystart *h, struct dpq_cc *cc,
		const struct dpq_cc_ack *ev);

/* The pacing rate's ceiling in the first slow start, bytes/s;
 * DPQ_CC_UNPACED: none. */
uint64_t dpq_hystart_pacing_cap(const struct dpq_hystart *h,
		const struct dpq_cc *cc);

/*
 * The pacing rate of a loss-based controller (RFC 9002 §7.7): num/den *
 * cwnd / smoothed_rtt (the caller's gain: 2 in slow start, as Linux
 * paces, so that pacing never holds the window's doubling back; 1.25
 * after), and with the capacity probe:
 *   - in the first slow start, at most the ceiling above;
 *   - after the probe ended it, until the first congestion event, at most
 *     max(ceiling, cwnd / smoothed_rtt). The window ends below the
 *     capacity times min_rtt, but a flight that is still short of it
 *     (flow control, or the slow start's last round) would otherwise
 *     leave at 1.25 times the window's rate, above the capacity, and
 *     fill a shallow queue in a few ms before the window is reached.
 *     Gain 1 above the ceiling: the window, not the pacer, is then the
 *     limit.
 */
uint64_t dpq_hystart_pacing_rate(const struct dpq_hystart *h,
		const struct dpq_cc *cc, const struct dpq_rtt *rtt,
		uint64_t num, uint64_t den);

/*
 * An ACK in the first slow start (cwnd < ssthresh, ssthresh never set):
 * returns the bytes the window grows by (ev->bytes_acked in slow start,
 * a quarter of it in CSS). *leave is set true when slow start is over:
 * the caller sets ssthresh = cwnd (after adding the growth).
 */
uint64_t dpq_hystart_on_ack(struct dpq_hystart *h,
		const struct dpq_cc_ack *ev, bool *leave);

/* The window reached what the capacity probe measured (see above). */
bool dpq_hystart_cap_reached(const struct dpq_hystart *h,
		const struct dpq_cc *cc, const struct dpq_cc_ack *ev);

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
	if (!leave && dpq_hystart_cap_reached(h, cc, ev)) {
		h->state = DPQ_HYSTART_DONE;
		h->exits++;
		h->cap_exits++;
		h->cap_events = cc->congestion_events;
		leave = true;
	}
	if (leave) {
		cc->ssthresh = cc->cwnd;
		cc->pace_train = 0;
	}
}

static inline bool
dpq_hystart_in_css(const struct dpq_hystart *h)
{
	return h->state == DPQ_HYSTART_CSS;
}

#endif /* DPQ_ENGINE_HYSTART_H */
