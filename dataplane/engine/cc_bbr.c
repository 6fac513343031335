/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_bbr.c: BBR version 3 (draft-ietf-ccwg-bbr) on the QUIC recovery of
 * RFC 9002.
 *
 * BBR models the path with two estimates, the bottleneck bandwidth
 * (max_bw: the windowed maximum of delivery-rate samples, rate.h) and
 * the round-trip propagation delay (min_rtt: the windowed minimum of RTT
 * samples), and sends at pacing_gain * bw with at most cwnd_gain * BDP in
 * flight. The state machine (draft §4.1, §4.3):
 *
 *   Startup      pacing 2.77, cwnd 2: double the rate each round until
 *                the delivery rate stops growing by 25% for 3 rounds, or
 *                losses exceed 2% with 6+ loss events in a round;
 *   Drain        pacing 0.35 until in-flight <= BDP;
 *   ProbeBW      DOWN (0.90) until the queue is drained and headroom is
 *                left, CRUISE (1.0), REFILL (1.0, one round), UP (1.25,
 *                cwnd 2.25: raise inflight_hi until losses or a plateau),
 *                with the next probe after 2-3 s or after as many rounds
 *                as a Reno flow would need (coexistence);
 *   ProbeRTT     every 5 s without a lower RTT sample: cwnd 0.5 BDP for
 *                200 ms and a round, to measure min_rtt again.
 *
 * Loss (draft §4.5.10, §4.5.11): a round with more than 2% of the bytes
 * in flight lost while probing sets inflight_hi (the long-term upper
 * bound); a round with any loss outside probing cuts the short-term lower
 * bounds bw_lo and inflight_lo by beta = 0.7. During a recovery period
 * (RFC 9002 §7.3.2) the window is held at in-flight + one packet (packet
 * conservation) and restored afterwards.
 *
 * How close to the draft (written from draft-ietf-ccwg-bbr's
 * description and pseudocode, not from another implementation):
 *  - the max_bw filter keeps two slots, the current and the previous
 *    ProbeBW cycle (MaxBwFilterLen = 2 cycles) as the draft says;
 *    extra_acked uses two slots of 5 rounds each for its 10-round window
 *    (the draft's windowed max, approximated the way Linux does);
 *  - loss is reported per ACK frame or timer, not per packet: the
 *    per-packet loss check (BBRHandleLostPacket, IsInflightTooHigh) runs
 *    once on the newest lost packet of the batch with the bytes lost
 *    since it left;
 *  - ProbeRTT's "mark the connection application limited" is done by
 *    treating its samples as application limited for the max_bw filter
 *    (the connection's rate state belongs to the loss module);
 *  - no send quantum / offload budget (the pacer's burst allowance plays
 *    that part), and the quantization budget is 4 packets (+2 in UP);
 *  - ECN-CE counts as a loss signal for the lower bounds (the draft's
 *    L4S-style ECN response is experimental and not done);
 *  - persistent congestion (RFC 9002 §7.6.2) sets cwnd to 4 packets
 *    (BBR's minimum) and restarts the lower bounds; a spurious episode
 *    restores cwnd and the bounds saved when it began.
 * Integers only: gains in percent, rates in bytes per second, times in
 * microseconds.
 */
#include <string.h>

#include "dataplane/engine/cc_bbr.h"

#define US_PER_S		UINT64_C(1000000)
#define PCT			100
/* §2.x constants of the draft. */
#define BBR_STARTUP_PACING_GAIN	277	/* 4 ln 2 */
#define BBR_DRAIN_PACING_GAIN	35
#define BBR_DEFAULT_CWND_GAIN	200
#define BBR_UP_PACING_GAIN	125
#define BBR_UP_CWND_GAIN	225
#define BBR_DOWN_PACING_GAIN	90
#define BBR_PROBE_RTT_CWND_GAIN	50
#define BBR_PACING_MARGIN	1	/* percent off bw */
#define BBR_LOSS_THRESH		2	/* percent */
#define BBR_BETA		70	/* percent */
#define BBR_HEADROOM		15	/* percent */
#define BBR_MIN_PIPE_PKTS	4
#define BBR_STARTUP_FULL_LOSS_COUNT 6
#define BBR_FULL_BW_GROWTH	125	/* percent */
#define BBR_FULL_BW_ROUNDS	3
#define BBR_MIN_RTT_FILTER_US	(10 * US_PER_S)
#define BBR_PROBE_RTT_INTERVAL_US (5 * US_PER_S)
#define BBR_PROBE_RTT_DURATION_US (200 * UINT64_C(1000))
#define BBR_EXTRA_ACKED_ROUNDS	5	/* per slot, two slots */
#define BBR_PROBE_WAIT_BASE_US	(2 * US_PER_S)
#define BBR_PROBE_WAIT_RAND_US	US_PER_S
#define BBR_RENO_ROUNDS_MAX	63
#define BBR_NONE		UINT64_MAX

enum ack_phase {
	ACKS_INIT = 0,
	ACKS_PROBE_STARTING,
	ACKS_PROBE_STOPPING,
	ACKS_PROBE_FEEDBACK,
	ACKS_REFILLING,
};

struct bbr {
	uint64_t max_bw_slot[2];	/* this cycle, last cycle */
	uint64_t bw, bw_lo, bw_latest;
	uint64_t pacing_rate;
	uint64_t min_rtt, min_rtt_stamp;
	uint64_t probe_rtt_min_delay, probe_rtt_min_stamp;
	uint64_t probe_rtt_done_stamp;	/* 0: not set */
	uint64_t inflight_hi, inflight_lo, inflight_latest;
	uint64_t extra_acked_slot[2];
	uint64_t extra_acked_start, extra_acked_delivered;
	uint64_t round_count, next_round_delivered;
	uint64_t loss_round_delivered;
	uint64_t full_bw;
	uint64_t cycle_stamp, bw_probe_wait;
	uint64_t probe_up_cnt, bw_probe_up_acks;
	uint64_t prior_cwnd;
	uint64_t recovery_start;	/* us */
	uint64_t recovery_round;	/* round the recovery began in */
	uint64_t pending_lost;		/* bytes lost since the last ACK */
	uint64_t rng;
	/* undo (spurious episodes) */
	uint64_t undo_cwnd, undo_bw_lo, undo_inflight_lo, undo_inflight_hi;
	uint32_t pending_loss_events;
	uint32_t loss_events_in_round;
	uint32_t rounds_since_bw_probe;
	uint32_t bw_probe_up_rounds;
	uint32_t extra_acked_round;	/* round the current slot began */
	uint16_t pacing_gain, cwnd_gain;
	uint8_t state;			/* enum dpq_bbr_state */
	uint8_t ack_phase;		/* enum ack_phase */
	uint8_t full_bw_count;
	bool round_start, loss_round_start, loss_in_round;
	bool full_bw_reached, full_bw_now;
	bool bw_probe_samples;
	bool probe_rtt_round_done, probe_rtt_expired;
	bool idle_restart;
	bool in_recovery, packet_conservation;
	bool can_undo;
};

_Static_assert(sizeof(struct bbr) <= DPQ_CC_STATE_SIZE,
		"BBR state must fit in struct dpq_cc");

static struct bbr *
bb(struct dpq_cc *cc)
{
	return (struct bbr *)(void *)cc->state;
}

static const struct bbr *
bb_c(const struct dpq_cc *cc)
{
	return (const struct bbr *)(const void *)cc->state;
}

static uint64_t
max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* a * b / c without overflow for the sizes here (rates up to ~10^12
 * B/s, times up to ~10^8 us). */
static uint64_t
muldiv(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)((unsigned __int128)a * b / c);
}

/* xorshift64*: the draft randomizes probe timing; deterministic per
 * connection so simulations reproduce. */
static uint64_t
bbr_rand(struct bbr *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * UINT64_C(2685821657736338717);
}

static const char *const state_names[DPQ_BBR_STATE_COUNT] = {
	[DPQ_BBR_STARTUP] = "startup",
	[DPQ_BBR_DRAIN] = "drain",
	[DPQ_BBR_PROBE_BW_DOWN] = "probe_bw_down",
	[DPQ_BBR_PROBE_BW_CRUISE] = "probe_bw_cruise",
	[DPQ_BBR_PROBE_BW_REFILL] = "probe_bw_refill",
	[DPQ_BBR_PROBE_BW_UP] = "probe_bw_up",
	[DPQ_BBR_PROBE_RTT] = "probe_rtt",
};

const char *
dpq_bbr_state_str(enum dpq_bbr_state st)
{
	return (unsigned int)st < DPQ_BBR_STATE_COUNT ? state_names[st] : "?";
}

/* ---- model helpers ---------------------------------------------------- */

static uint64_t
min_pipe_cwnd(const struct dpq_cc *cc)
{
	return BBR_MIN_PIPE_PKTS * (uint64_t)cc->max_datagram_size;
}

static bool
in_probe_bw(const struct bbr *s)
{
	return s->state >= DPQ_BBR_PROBE_BW_DOWN &&
		s->state <= DPQ_BBR_PROBE_BW_UP;
}

/* BBRIsProbingBW(): the states that push for more bandwidth, where
 * losses are expected and do not cut the lower bounds. */
static bool
probing_bw(const struct bbr *s)
{
	return s->state == DPQ_BBR_STARTUP ||
		s->state == DPQ_BBR_PROBE_BW_REFILL ||
		s->state == DPQ_BBR_PROBE_BW_UP;
}

static uint64_t
max_bw(const struct bbr *s)
{
	return max64(s->max_bw_slot[0], s->max_bw_slot[1]);
}

/* BBRBDPMultiple(): gain * bw * min_rtt. */
static uint64_t
bdp_multiple(const struct dpq_cc *cc, const struct bbr *s, uint64_t bw,
		uint32_t gain)
{
	if (s->min_rtt == BBR_NONE)
		return cc->conf.initial_window != 0 ? cc->conf.initial_window :
			dpq_cc_initial_window(cc->max_datagram_size);
	return muldiv(muldiv(bw, s->min_rtt, US_PER_S), gain, PCT);
}

/* BBRQuantizationBudget() without offload: at least the minimum pipe,
 * two more packets while probing up. */
static uint64_t
quantization_budget(const struct dpq_cc *cc, const struct bbr *s,
		uint64_t inflight)
{
	inflight = max64(inflight, min_pipe_cwnd(cc));
	if (s->state == DPQ_BBR_PROBE_BW_UP)
		inflight += 2 * (uint64_t)cc->max_datagram_size;
	return inflight;
}

static uint64_t
bbr_inflight(const struct dpq_cc *cc, const struct bbr *s, uint64_t bw,
		uint32_t gain)
{
	return quantization_budget(cc, s, bdp_multiple(cc, s, bw, gain));
}

static uint64_t
extra_acked(const struct bbr *s)
{
	return max64(s->extra_acked_slot[0], s->extra_acked_slot[1]);
}

static uint64_t
inflight_with_headroom(const struct dpq_cc *cc, const struct bbr *s)
{
	uint64_t headroom;

	if (s->inflight_hi == BBR_NONE)
		return BBR_NONE;
	headroom = max64(cc->max_datagram_size,
			s->inflight_hi * BBR_HEADROOM / PCT);
	return max64(s->inflight_hi > headroom ? s->inflight_hi - headroom : 0,
			min_pipe_cwnd(cc));
}

static uint64_t
target_inflight(const struct dpq_cc *cc, const struct bbr *s)
{
	return min64(bbr_inflight(cc, s, s->bw, PCT), cc->cwnd);
}

/* ---- states ----------------------------------------------------------- */

static void
set_state(struct bbr *s, enum dpq_bbr_state st, uint32_t pacing_gain,
		uint32_t cwnd_gain)
{
	s->state = (uint8_t)st;
	s->pacing_gain = (uint16_t)pacing_gain;
	s->cwnd_gain = (uint16_t)cwnd_gain;
}

static void
reset_lower_bounds(struct bbr *s)
{
	s->bw_lo = BBR_NONE;
	s->inflight_lo = BBR_NONE;
}

static void
reset_congestion_signals(struct bbr *s)
{
	s->loss_in_round = false;
	s->bw_latest = 0;
	s->inflight_latest = 0;
}

static void
reset_full_bw(struct bbr *s)
{
	s->full_bw = 0;
	s->full_bw_count = 0;
	s->full_bw_now = false;
}

/* The round ends when a packet sent after now is acknowledged. */
static void
start_round(struct bbr *s, uint64_t delivered)
{
	s->next_round_delivered = delivered;
}

static void
save_cwnd(const struct dpq_cc *cc, struct bbr *s)
{
	if (!s->in_recovery && s->state != DPQ_BBR_PROBE_RTT)
		s->prior_cwnd = cc->cwnd;
	else
		s->prior_cwnd = max64(s->prior_cwnd, cc->cwnd);
}

static void
restore_cwnd(struct dpq_cc *cc, const struct bbr *s)
{
	cc->cwnd = max64(cc->cwnd, s->prior_cwnd);
}

static void
enter_startup(struct bbr *s)
{
	set_state(s, DPQ_BBR_STARTUP, BBR_STARTUP_PACING_GAIN,
			BBR_DEFAULT_CWND_GAIN);
}

static void
pick_probe_wait(struct bbr *s)
{
	uint64_t r = bbr_rand(s);

	/* §4.3.3.5: 0 or 1 rounds already counted, wait 2-3 s. */
	s->rounds_since_bw_probe = (uint32_t)(r & 1);
	s->bw_probe_wait = BBR_PROBE_WAIT_BASE_US +
		(r >> 1) % BBR_PROBE_WAIT_RAND_US;
}

static void
start_probe_bw_down(struct bbr *s, uint64_t delivered, uint64_t now)
{
	reset_congestion_signals(s);
	s->probe_up_cnt = BBR_NONE;
	pick_probe_wait(s);
	s->cycle_stamp = now;
	s->ack_phase = ACKS_PROBE_STOPPING;
	start_round(s, delivered);
	set_state(s, DPQ_BBR_PROBE_BW_DOWN, BBR_DOWN_PACING_GAIN,
			BBR_DEFAULT_CWND_GAIN);
}

static void
start_probe_bw_cruise(struct bbr *s)
{
	set_state(s, DPQ_BBR_PROBE_BW_CRUISE, PCT, BBR_DEFAULT_CWND_GAIN);
}

static void
start_probe_bw_refill(struct bbr *s, const struct dpq_cc_ack *ev)
{
	reset_lower_bounds(s);
	s->bw_probe_up_rounds = 0;
	s->bw_probe_up_acks = 0;
	s->ack_phase = ACKS_REFILLING;
	start_round(s, ev->delivered);
	set_state(s, DPQ_BBR_PROBE_BW_REFILL, PCT, BBR_DEFAULT_CWND_GAIN);
}

/* §4.3.3.6: inflight_hi grows 1, 2, 4... packets per round in UP. */
static void
raise_inflight_hi_slope(const struct dpq_cc *cc, struct bbr *s)
{
	uint64_t growth = (uint64_t)cc->max_datagram_size <<
		s->bw_probe_up_rounds;

	if (s->bw_probe_up_rounds < 30)
		s->bw_probe_up_rounds++;
	s->probe_up_cnt = max64(cc->cwnd / growth, 1) *
		cc->max_datagram_size;
}

static void
start_probe_bw_up(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	s->ack_phase = ACKS_PROBE_STARTING;
	start_round(s, ev->delivered);
	reset_full_bw(s);
	s->full_bw = ev->rs != NULL ? ev->rs->delivery_rate : 0;
	set_state(s, DPQ_BBR_PROBE_BW_UP, BBR_UP_PACING_GAIN,
			BBR_UP_CWND_GAIN);
	raise_inflight_hi_slope(cc, s);
}

static void
enter_probe_rtt(struct bbr *s)
{
	set_state(s, DPQ_BBR_PROBE_RTT, PCT, BBR_PROBE_RTT_CWND_GAIN);
}

static void
exit_probe_rtt(struct bbr *s, const struct dpq_cc_ack *ev, uint64_t now)
{
	reset_lower_bounds(s);
	if (s->full_bw_reached) {
		/* In-flight is below the BDP already: straight to CRUISE,
		 * with the probe clock restarted by DOWN. */
		start_probe_bw_down(s, ev->delivered, now);
		start_probe_bw_cruise(s);
	} else {
		enter_startup(s);
	}
}

/* ---- per-ACK model updates (draft §4.2.3 BBRUpdateModelAndState) ------ */

static bool
inflight_too_high(uint64_t lost, uint64_t tx_in_flight)
{
	return lost * PCT > tx_in_flight * BBR_LOSS_THRESH;
}

static void
update_round(struct bbr *s, const struct dpq_cc_ack *ev)
{
	if (ev->rs != NULL && ev->rs->has_data &&
	    ev->rs->prior_delivered >= s->next_round_delivered) {
		start_round(s, ev->delivered);
		s->round_count++;
		s->rounds_since_bw_probe++;
		s->round_start = true;
		s->loss_events_in_round = 0;
	} else {
		s->round_start = false;
	}
}

static void
update_latest_delivery_signals(struct bbr *s, const struct dpq_cc_ack *ev)
{
	const struct dpq_rate_sample *rs = ev->rs;

	s->loss_round_start = false;
	if (rs == NULL || !rs->has_data)
		return;
	s->bw_latest = max64(s->bw_latest, rs->delivery_rate);
	s->inflight_latest = max64(s->inflight_latest, rs->delivered);
	if (rs->prior_delivered >= s->loss_round_delivered) {
		s->loss_round_delivered = ev->delivered;
		s->loss_round_start = true;
	}
}

static void
update_max_bw(struct bbr *s, const struct dpq_cc_ack *ev)
{
	const struct dpq_rate_sample *rs = ev->rs;
	bool app_limited;

	update_round(s, ev);
	if (rs == NULL || !rs->valid)
		return;
	/* ProbeRTT's low-rate samples count as application limited. */
	app_limited = rs->is_app_limited || s->state == DPQ_BBR_PROBE_RTT;
	if (rs->delivery_rate >= max_bw(s) || !app_limited) {
		if (rs->delivery_rate > s->max_bw_slot[0])
			s->max_bw_slot[0] = rs->delivery_rate;
	}
}

static void
init_lower_bounds(const struct dpq_cc *cc, struct bbr *s)
{
	if (s->bw_lo == BBR_NONE)
		s->bw_lo = max_bw(s);
	if (s->inflight_lo == BBR_NONE)
		s->inflight_lo = cc->cwnd;
}

static void
update_congestion_signals(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	update_max_bw(s, ev);
	s->loss_events_in_round += s->pending_loss_events;
	s->pending_loss_events = 0;
	s->pending_lost = 0;
	if (!s->loss_round_start)
		return;		/* once per round */
	/* §4.5.11 BBRAdaptLowerBoundsFromCongestion(). */
	if (!probing_bw(s) && s->loss_in_round) {
		init_lower_bounds(cc, s);
		s->bw_lo = max64(s->bw_latest, s->bw_lo * BBR_BETA / PCT);
		s->inflight_lo = max64(s->inflight_latest,
				s->inflight_lo * BBR_BETA / PCT);
	}
	s->loss_in_round = false;
}

/* §4.5.6 extra_acked: how much more was acknowledged than bw predicts,
 * for the window's aggregation allowance. */
static void
update_ack_aggregation(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	uint64_t interval = ev->now > s->extra_acked_start ?
		ev->now - s->extra_acked_start : 0;
	uint64_t expected = muldiv(s->bw, interval, US_PER_S), extra;

	if (s->extra_acked_delivered <= expected) {
		s->extra_acked_delivered = 0;
		s->extra_acked_start = ev->now;
		expected = 0;
	}
	s->extra_acked_delivered += ev->bytes_acked;
	extra = min64(s->extra_acked_delivered - expected, cc->cwnd);
	if (s->round_start &&
	    s->round_count - s->extra_acked_round >= BBR_EXTRA_ACKED_ROUNDS) {
		/* Two slots of 5 rounds make the 10-round window. */
		s->extra_acked_round = (uint32_t)s->round_count;
		s->extra_acked_slot[1] = s->extra_acked_slot[0];
		s->extra_acked_slot[0] = 0;
	}
	if (extra > s->extra_acked_slot[0])
		s->extra_acked_slot[0] = extra;
}

/* §4.3.1.2: three rounds without 25% growth fill the pipe. */
static void
check_full_bw_reached(struct bbr *s, const struct dpq_cc_ack *ev)
{
	const struct dpq_rate_sample *rs = ev->rs;

	if (s->full_bw_now || rs == NULL || !rs->valid || rs->is_app_limited)
		return;
	if (rs->delivery_rate * PCT >= s->full_bw * BBR_FULL_BW_GROWTH) {
		reset_full_bw(s);
		s->full_bw = rs->delivery_rate;
		return;
	}
	if (!s->round_start)
		return;
	s->full_bw_count++;
	s->full_bw_now = s->full_bw_count >= BBR_FULL_BW_ROUNDS;
	if (s->full_bw_now)
		s->full_bw_reached = true;
}

/* §4.3.1.3: Startup ends on sustained high loss too. */
static void
check_startup_high_loss(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	const struct dpq_rate_sample *rs = ev->rs;

	if (s->full_bw_reached || rs == NULL || !rs->has_data ||
	    s->loss_events_in_round <= BBR_STARTUP_FULL_LOSS_COUNT ||
	    (s->in_recovery && s->round_count <= s->recovery_round) ||
	    !inflight_too_high(rs->lost, rs->tx_in_flight))
		return;
	s->full_bw_reached = true;
	s->inflight_hi = max64(bdp_multiple(cc, s, s->bw, s->cwnd_gain),
			s->inflight_latest);
}

static void
check_startup_done(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	check_startup_high_loss(cc, s, ev);
	if (s->state == DPQ_BBR_STARTUP && s->full_bw_reached)
		set_state(s, DPQ_BBR_DRAIN, BBR_DRAIN_PACING_GAIN,
				BBR_DEFAULT_CWND_GAIN);
}

static void
check_drain_done(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	if (s->state == DPQ_BBR_DRAIN &&
	    cc->bytes_in_flight <= bbr_inflight(cc, s, s->bw, PCT))
		start_probe_bw_down(s, ev->delivered, ev->now);
}

static void
handle_inflight_too_high(const struct dpq_cc *cc, struct bbr *s,
		uint64_t tx_in_flight, bool app_limited, uint64_t delivered,
		uint64_t now)
{
	s->bw_probe_samples = false;
	if (!app_limited)
		s->inflight_hi = max64(tx_in_flight,
				target_inflight(cc, s) * BBR_BETA / PCT);
	if (s->state == DPQ_BBR_PROBE_BW_UP)
		start_probe_bw_down(s, delivered, now);
}

static void
probe_inflight_hi_upward(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	/* Grow only while the window is really in use up to the bound. */
	if (ev->bytes_in_flight_before < cc->cwnd ||
	    cc->cwnd < s->inflight_hi)
		return;
	s->bw_probe_up_acks += ev->bytes_acked;
	if (s->bw_probe_up_acks >= s->probe_up_cnt) {
		uint64_t delta = s->bw_probe_up_acks / s->probe_up_cnt;

		s->bw_probe_up_acks -= delta * s->probe_up_cnt;
		s->inflight_hi += delta * cc->max_datagram_size;
	}
	if (s->round_start)
		raise_inflight_hi_slope(cc, s);
}

/* §4.5.10.2 BBRAdaptUpperBounds(). */
static void
adapt_upper_bounds(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	const struct dpq_rate_sample *rs = ev->rs;

	if (s->ack_phase == ACKS_PROBE_STARTING && s->round_start)
		s->ack_phase = ACKS_PROBE_FEEDBACK;
	if (s->ack_phase == ACKS_PROBE_STOPPING && s->round_start &&
	    in_probe_bw(s) && rs != NULL && !rs->is_app_limited) {
		/* A ProbeBW cycle's samples are in: the max_bw filter
		 * moves on (MaxBwFilterLen = 2 cycles). */
		s->max_bw_slot[1] = s->max_bw_slot[0];
		s->max_bw_slot[0] = 0;
	}
	if (rs == NULL || !rs->has_data)
		return;
	if (inflight_too_high(rs->lost, rs->tx_in_flight)) {
		if (s->bw_probe_samples)
			handle_inflight_too_high(cc, s, rs->tx_in_flight,
					rs->is_app_limited, ev->delivered,
					ev->now);
		return;
	}
	if (s->inflight_hi == BBR_NONE)
		return;
	if (rs->tx_in_flight > s->inflight_hi)
		s->inflight_hi = rs->tx_in_flight;
	if (s->state == DPQ_BBR_PROBE_BW_UP)
		probe_inflight_hi_upward(cc, s, ev);
}

static bool
time_to_probe_bw(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	uint64_t reno_rounds = target_inflight(cc, s) / cc->max_datagram_size;

	if (ev->now - s->cycle_stamp > s->bw_probe_wait ||
	    s->rounds_since_bw_probe >= min64(reno_rounds,
			BBR_RENO_ROUNDS_MAX)) {
		start_probe_bw_refill(s, ev);
		return true;
	}
	return false;
}

static bool
time_to_cruise(const struct dpq_cc *cc, const struct bbr *s)
{
	if (cc->bytes_in_flight > inflight_with_headroom(cc, s))
		return false;
	return cc->bytes_in_flight <= bbr_inflight(cc, s, max_bw(s), PCT);
}

static bool
time_to_go_down(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	if (ev->bytes_in_flight_before >= cc->cwnd &&
	    cc->cwnd >= s->inflight_hi) {
		/* Limited by inflight_hi, not by the path: keep probing. */
		reset_full_bw(s);
		s->full_bw = ev->rs != NULL ? ev->rs->delivery_rate : 0;
	} else if (s->full_bw_now) {
		return true;
	}
	return false;
}

/* §4.3.3.6 BBRUpdateProbeBWCyclePhase(). */
static void
update_probe_bw_cycle_phase(const struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev)
{
	if (!s->full_bw_reached)
		return;
	adapt_upper_bounds(cc, s, ev);
	if (!in_probe_bw(s))
		return;
	switch (s->state) {
	case DPQ_BBR_PROBE_BW_DOWN:
		if (time_to_probe_bw(cc, s, ev))
			return;
		if (time_to_cruise(cc, s))
			start_probe_bw_cruise(s);
		break;
	case DPQ_BBR_PROBE_BW_CRUISE:
		(void)time_to_probe_bw(cc, s, ev);
		break;
	case DPQ_BBR_PROBE_BW_REFILL:
		/* One round of REFILL, then UP. */
		if (s->round_start) {
			s->bw_probe_samples = true;
			start_probe_bw_up(cc, s, ev);
		}
		break;
	case DPQ_BBR_PROBE_BW_UP:
		if (time_to_go_down(cc, s, ev))
			start_probe_bw_down(s, ev->delivered, ev->now);
		break;
	default:
		break;
	}
}

/* §4.3.4.4 BBRUpdateMinRTT(). */
static void
update_min_rtt(struct bbr *s, const struct dpq_cc_ack *ev)
{
	uint64_t sample = ev->rtt_sampled && ev->rtt != NULL ?
		ev->rtt->latest : BBR_NONE;

	s->probe_rtt_expired = ev->now >
		s->probe_rtt_min_stamp + BBR_PROBE_RTT_INTERVAL_US;
	if (sample != BBR_NONE && (sample < s->probe_rtt_min_delay ||
	    s->probe_rtt_expired)) {
		s->probe_rtt_min_delay = sample;
		s->probe_rtt_min_stamp = ev->now;
	}
	if (s->probe_rtt_min_delay < s->min_rtt ||
	    (s->min_rtt != BBR_NONE &&
	     ev->now > s->min_rtt_stamp + BBR_MIN_RTT_FILTER_US)) {
		s->min_rtt = s->probe_rtt_min_delay;
		s->min_rtt_stamp = s->probe_rtt_min_stamp;
	}
}

static uint64_t
probe_rtt_cwnd(const struct dpq_cc *cc, const struct bbr *s)
{
	return max64(bdp_multiple(cc, s, s->bw, BBR_PROBE_RTT_CWND_GAIN),
			min_pipe_cwnd(cc));
}

static void
check_probe_rtt_done(struct dpq_cc *cc, struct bbr *s,
		const struct dpq_cc_ack *ev, uint64_t now)
{
	if (s->probe_rtt_done_stamp != 0 && now > s->probe_rtt_done_stamp) {
		s->probe_rtt_min_stamp = now;	/* next one in 5 s */
		restore_cwnd(cc, s);
		exit_probe_rtt(s, ev, now);
	}
}

/* §4.3.4.4 BBRCheckProbeRTT(). */
static void
check_probe_rtt(struct dpq_cc *cc, struct bbr *s, const struct dpq_cc_ack *ev)
{
	if (s->state != DPQ_BBR_PROBE_RTT && s->probe_rtt_expired &&
	    !s->idle_restart) {
		enter_probe_rtt(s);
		save_cwnd(cc, s);
		s->probe_rtt_done_stamp = 0;
		s->ack_phase = ACKS_PROBE_STOPPING;
		start_round(s, ev->delivered);
	}
	if (s->state == DPQ_BBR_PROBE_RTT) {
		if (s->probe_rtt_done_stamp == 0 &&
		    cc->bytes_in_flight <= probe_rtt_cwnd(cc, s)) {
			/* At least ProbeRTTDuration and one round. */
			s->probe_rtt_done_stamp = ev->now +
				BBR_PROBE_RTT_DURATION_US;
			s->probe_rtt_round_done = false;
			start_round(s, ev->delivered);
		} else if (s->probe_rtt_done_stamp != 0) {
			if (s->round_start)
				s->probe_rtt_round_done = true;
			if (s->probe_rtt_round_done)
				check_probe_rtt_done(cc, s, ev, ev->now);
		}
	}
	if (ev->rs != NULL && ev->rs->delivered > 0)
		s->idle_restart = false;
}

static void
advance_latest_delivery_signals(struct bbr *s, const struct dpq_cc_ack *ev)
{
	if (s->loss_round_start && ev->rs != NULL) {
		s->bw_latest = ev->rs->delivery_rate;
		s->inflight_latest = ev->rs->delivered;
	}
}

/* ---- control parameters (draft §4.6) -------------------------------- */

static void
set_pacing_rate_with_gain(struct bbr *s, uint32_t gain)
{
	uint64_t rate;

	if (s->bw == 0)
		return;
	rate = muldiv(muldiv(s->bw, gain, PCT), PCT - BBR_PACING_MARGIN, PCT);
	/* §4.6.2: in Startup the rate never drops. */
	if (s->full_bw_reached || rate > s->pacing_rate)
		s->pacing_rate = rate;
}

static void
set_cwnd(struct dpq_cc *cc, struct bbr *s, const struct dpq_cc_ack *ev)
{
	uint64_t max_inflight, cap = BBR_NONE;

	/* BBRUpdateMaxInflight(): the BDP with gain, plus aggregation. */
	max_inflight = quantization_budget(cc, s,
			bdp_multiple(cc, s, s->bw, s->cwnd_gain) +
			extra_acked(s));
	if (s->packet_conservation) {
		/* BBRModulateCwndForRecovery(): the first round of a
		 * recovery period sends what was delivered. */
		cc->cwnd = max64(cc->cwnd, cc->bytes_in_flight +
				ev->bytes_acked);
	} else {
		if (s->full_bw_reached)
			cc->cwnd = min64(cc->cwnd + ev->bytes_acked,
					max_inflight);
		else if (cc->cwnd < max_inflight || ev->delivered <
			 dpq_cc_initial_window(cc->max_datagram_size))
			cc->cwnd += ev->bytes_acked;
		cc->cwnd = max64(cc->cwnd, min_pipe_cwnd(cc));
	}
	if (s->state == DPQ_BBR_PROBE_RTT)
		cc->cwnd = min64(cc->cwnd, probe_rtt_cwnd(cc, s));
	/* BBRBoundCwndForModel(). */
	if (in_probe_bw(s) && s->state != DPQ_BBR_PROBE_BW_CRUISE)
		cap = s->inflight_hi;
	else if (s->state == DPQ_BBR_PROBE_RTT ||
		 s->state == DPQ_BBR_PROBE_BW_CRUISE)
		cap = inflight_with_headroom(cc, s);
	cap = min64(cap, s->inflight_lo);
	cap = max64(cap, min_pipe_cwnd(cc));
	cc->cwnd = min64(cc->cwnd, cap);
}

/* ---- vtable ------------------------------------------------------------ */

static void
bbr_init(struct dpq_cc *cc, const struct dpq_cc_conf *conf, uint64_t now)
{
	struct bbr *s = bb(cc);

	memset(s, 0, sizeof(*s));
	cc->ssthresh = UINT64_MAX;
	cc->cwnd = conf->initial_window != 0 ? conf->initial_window :
		dpq_cc_initial_window(cc->max_datagram_size);
	if (cc->cwnd < min_pipe_cwnd(cc))
		cc->cwnd = min_pipe_cwnd(cc);
	s->rng = (now ^ UINT64_C(0x9e3779b97f4a7c15)) | 1;
	s->min_rtt = BBR_NONE;
	s->min_rtt_stamp = now;
	s->probe_rtt_min_delay = BBR_NONE;
	s->probe_rtt_min_stamp = now;
	s->extra_acked_start = now;
	s->inflight_hi = BBR_NONE;
	s->probe_up_cnt = BBR_NONE;
	s->loss_round_delivered = BBR_NONE;
	reset_lower_bounds(s);
	reset_full_bw(s);
	enter_startup(s);
}

static void
bbr_on_sent(struct dpq_cc *cc, uint32_t bytes, uint64_t now)
{
	struct bbr *s = bb(cc);

	/* §4.3.4.2 restart from idle: the first send into an empty pipe
	 * after an application-limited pause paces at bw, not above. */
	if (cc->bytes_in_flight != bytes || !cc->app_limited)
		return;
	s->idle_restart = true;
	s->extra_acked_start = now;
	if (in_probe_bw(s))
		set_pacing_rate_with_gain(s, PCT);
}

static void
bbr_on_ack(struct dpq_cc *cc, const struct dpq_cc_ack *ev)
{
	struct bbr *s = bb(cc);

	/* The recovery period ends with an ACK of a packet sent after it
	 * began (RFC 9002 §7.3.2): restore the window. */
	if (s->in_recovery && ev->bytes_acked != 0 &&
	    ev->largest_sent_time > s->recovery_start) {
		s->in_recovery = false;
		s->packet_conservation = false;
		restore_cwnd(cc, s);
	}
	if (s->packet_conservation && s->round_count > s->recovery_round)
		s->packet_conservation = false;

	update_latest_delivery_signals(s, ev);
	update_congestion_signals(cc, s, ev);
	update_ack_aggregation(cc, s, ev);
	check_full_bw_reached(s, ev);
	check_startup_done(cc, s, ev);
	check_drain_done(cc, s, ev);
	update_probe_bw_cycle_phase(cc, s, ev);
	update_min_rtt(s, ev);
	check_probe_rtt(cc, s, ev);
	advance_latest_delivery_signals(s, ev);
	s->bw = min64(max_bw(s), s->bw_lo);	/* BBRBoundBWForModel() */

	set_pacing_rate_with_gain(s, s->pacing_gain);
	set_cwnd(cc, s, ev);
}

static void
bbr_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	struct bbr *s = bb(cc);

	/* BBRNoteLoss(): the round's loss signal. */
	if (!s->loss_in_round)
		s->loss_round_delivered = ev->delivered;
	s->loss_in_round = true;
	if (ev->ecn_ce)
		return;
	s->pending_lost += ev->bytes_lost;
	s->pending_loss_events++;

	/* §4.5.10.2 BBRHandleLostPacket(), on the newest lost packet. */
	if (s->bw_probe_samples && s->state != DPQ_BBR_STARTUP &&
	    inflight_too_high(ev->lost_since_sent, ev->tx_in_flight)) {
		uint64_t size = cc->max_datagram_size;
		uint64_t prev = ev->tx_in_flight > size ?
			ev->tx_in_flight - size : 0;
		uint64_t lost_prev = ev->lost_since_sent > ev->bytes_lost ?
			ev->lost_since_sent - ev->bytes_lost : 0;
		uint64_t prefix = 0;

		/* BBRInflightHiFromLostPacket(): the in-flight level at
		 * which losses passed the threshold. */
		if (BBR_LOSS_THRESH * prev > lost_prev * PCT)
			prefix = (BBR_LOSS_THRESH * prev - lost_prev * PCT) /
				(PCT - BBR_LOSS_THRESH);
		handle_inflight_too_high(cc, s, prev + prefix,
				ev->app_limited, ev->delivered, ev->now);
	}

	/* Within a recovery period (RFC 9002 §7.3.2) losses take their
	 * bytes off the window (BBRModulateCwndForRecovery()). */
	if (s->in_recovery && ev->largest_sent_time <= s->recovery_start) {
		cc->cwnd = cc->cwnd > ev->bytes_lost + cc->max_datagram_size ?
			cc->cwnd - ev->bytes_lost : cc->max_datagram_size;
		return;
	}
	/* A new one: packet conservation for a round (draft §4.6.4.4). */
	s->undo_cwnd = cc->cwnd;
	s->undo_bw_lo = s->bw_lo;
	s->undo_inflight_lo = s->inflight_lo;
	s->undo_inflight_hi = s->inflight_hi;
	s->can_undo = true;
	save_cwnd(cc, s);
	s->in_recovery = true;
	s->packet_conservation = true;
	s->recovery_start = ev->now;
	s->recovery_round = s->round_count;
	cc->cwnd = max64(cc->bytes_in_flight + cc->max_datagram_size,
			min_pipe_cwnd(cc));
}

static void
bbr_on_persistent_congestion(struct dpq_cc *cc, uint64_t now)
{
	struct bbr *s = bb(cc);

	(void)now;
	/* Like an RTO: keep the old window to restore when the recovery
	 * ends, go to the minimum now. */
	save_cwnd(cc, s);
	s->can_undo = false;
	reset_lower_bounds(s);
	cc->cwnd = min_pipe_cwnd(cc);
}

static void
bbr_on_spurious(struct dpq_cc *cc, uint64_t now)
{
	struct bbr *s = bb(cc);

	(void)now;
	if (!s->can_undo)
		return;
	s->can_undo = false;
	s->in_recovery = false;
	s->packet_conservation = false;
	cc->cwnd = max64(cc->cwnd, s->undo_cwnd);
	s->bw_lo = s->undo_bw_lo;
	s->inflight_lo = s->undo_inflight_lo;
	s->inflight_hi = s->undo_inflight_hi;
}

static uint64_t
bbr_pacing_rate(const struct dpq_cc *cc, const struct dpq_rtt *rtt)
{
	const struct bbr *s = bb_c(cc);
	uint64_t srtt;

	if (s->pacing_rate != 0)
		return s->pacing_rate;
	/* §4.6.2 BBRInitPacingRate(): the startup gain over the initial
	 * window per RTT; 1 ms if there is no RTT sample yet. */
	srtt = rtt != NULL && rtt->has_sample && rtt->smoothed != 0 ?
		rtt->smoothed : 1000;
	return muldiv(muldiv(cc->cwnd, BBR_STARTUP_PACING_GAIN, PCT),
			US_PER_S, srtt);
}

static void
bbr_info(const struct dpq_cc *cc, struct dpq_cc_info *out)
{
	const struct bbr *s = bb_c(cc);

	out->ssthresh = UINT64_MAX;
	out->state = dpq_bbr_state_str((enum dpq_bbr_state)s->state);
	if (s->in_recovery)
		out->phase = DPQ_CC_PHASE_RECOVERY;
	else if (s->state == DPQ_BBR_STARTUP)
		out->phase = DPQ_CC_PHASE_SLOW_START;
	else
		out->phase = DPQ_CC_PHASE_OTHER;
}

void
dpq_cc_bbr_view(const struct dpq_cc *cc, struct dpq_bbr_view *v)
{
	const struct bbr *s = bb_c(cc);

	v->state = (enum dpq_bbr_state)s->state;
	v->max_bw = max_bw(s);
	v->bw = s->bw;
	v->bw_lo = s->bw_lo;
	v->min_rtt = s->min_rtt;
	v->inflight_hi = s->inflight_hi;
	v->inflight_lo = s->inflight_lo;
	v->pacing_rate = s->pacing_rate;
	v->pacing_gain = s->pacing_gain;
	v->cwnd_gain = s->cwnd_gain;
	v->round_count = s->round_count;
	v->full_bw_reached = s->full_bw_reached;
}

const struct dpq_cc_ops dpq_cc_bbr_ops = {
	.name = "bbr",
	.init = bbr_init,
	.on_sent = bbr_on_sent,
	.on_ack = bbr_on_ack,
	.on_loss = bbr_on_loss,
	.on_persistent_congestion = bbr_on_persistent_congestion,
	.on_spurious = bbr_on_spurious,
	.pacing_rate = bbr_pacing_rate,
	.info = bbr_info,
};
