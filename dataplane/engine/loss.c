/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loss.c: loss detection (RFC 9002 §6, Appendix A), written around the
 * sentmap walk.
 *
 * One timer serves the connection: it is the earliest time-threshold
 * loss time of any space, else the probe timeout of the space whose last
 * ack-eliciting packet expires first (the application space only once
 * the handshake is confirmed), else, for a client whose address the
 * server may not have validated yet, an anti-deadlock probe from now
 * (§6.2.2.1). It is recomputed after every event that can move it.
 *
 * Persistent congestion (§7.6.2) needs to know whether any packet sent
 * between two lost ones was acknowledged. Within one space, packets are
 * walked in pn (and send-time) order; when a packet is acknowledged the
 * closest older outstanding packet gets DPQ_SENT_LATER_ACKED. Losses are
 * declared oldest first and a loss implies the loss of every older
 * outstanding packet, so a run of lost packets that crosses an
 * acknowledged one always crosses a marked packet, and the run is cut
 * there. Only the acknowledged space is considered (the MAY of §7.6.2).
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/loss.h"
#include "dataplane/engine/tparams.h"

#define US_PER_MS	UINT64_C(1000)

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* v * 2^shift, saturating. */
static uint64_t
sat_shl(uint64_t v, uint32_t shift)
{
	if (v == 0)
		return 0;
	if (shift >= 64 || v > (UINT64_MAX >> shift))
		return UINT64_MAX;
	return v << shift;
}

static void
space_reset(struct dpq_loss_space *s)
{
	s->largest_acked = DPQ_PN_NONE;
	s->largest_sent = DPQ_PN_NONE;
	s->loss_time = DPQ_LOSS_NO_TIMER;
	s->last_ack_eliciting_time = 0;
	s->in_flight_bytes = 0;
	s->ecn_ce = 0;
	s->ack_eliciting_in_flight = 0;
}

bool
dpq_loss_peer_completed_address_validation(const struct dpq_loss *l)
{
	/* A.4: servers assume clients validate them implicitly; a client
	 * knows once the server acknowledged a Handshake packet or the
	 * handshake is confirmed. */
	return l->is_server || l->peer_validated || l->handshake_confirmed;
}

uint32_t
dpq_loss_ack_eliciting_in_flight(const struct dpq_loss *l)
{
	uint32_t n = 0;
	int i;

	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++)
		n += l->sp[i].ack_eliciting_in_flight;
	return n;
}

uint64_t
dpq_loss_pto(const struct dpq_loss *l, enum dpq_pn_space space)
{
	uint64_t d = sat_shl(dpq_rtt_pto_base(&l->rtt), l->pto_count);

	if (space == DPQ_PN_SPACE_APP)
		d = sat_add(d, sat_shl(l->max_ack_delay, l->pto_count));
	return d;
}

/* A.8 GetPtoTimeAndSpace(). Returns DPQ_LOSS_NO_TIMER if no space may
 * arm a PTO. */
static uint64_t
pto_time_and_space(const struct dpq_loss *l, uint64_t now,
		enum dpq_pn_space *space)
{
	uint64_t best = DPQ_LOSS_NO_TIMER, t;
	int i;

	if (dpq_loss_ack_eliciting_in_flight(l) == 0) {
		/* Anti-deadlock (§6.2.2.1): from now, in the space the
		 * client can send in. */
		*space = l->has_handshake_keys ? DPQ_PN_SPACE_HANDSHAKE :
			DPQ_PN_SPACE_INITIAL;
		return sat_add(now, dpq_loss_pto(l, *space));
	}
	*space = DPQ_PN_SPACE_INITIAL;
	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
		const struct dpq_loss_space *s = &l->sp[i];

		if (!s->active || s->ack_eliciting_in_flight == 0)
			continue;
		/* §6.2.1: no PTO for application data before the handshake
		 * is confirmed. */
		if (i == DPQ_PN_SPACE_APP && !l->handshake_confirmed)
			break;
		t = sat_add(s->last_ack_eliciting_time,
				dpq_loss_pto(l, (enum dpq_pn_space)i));
		if (t < best) {
			best = t;
			*space = (enum dpq_pn_space)i;
		}
	}
	return best;
}

/* A.6 GetLossTimeAndSpace(): earliest loss_time. */
static uint64_t
loss_time_and_space(const struct dpq_loss *l, enum dpq_pn_space *space)
{
	uint64_t best = DPQ_LOSS_NO_TIMER;
	int i;

	*space = DPQ_PN_SPACE_INITIAL;
	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
		if (l->sp[i].active && l->sp[i].loss_time < best) {
			best = l->sp[i].loss_time;
			*space = (enum dpq_pn_space)i;
		}
	}
	return best;
}

/* A.8 SetLossDetectionTimer(). */
static void
set_timer(struct dpq_loss *l, uint64_t now)
{
	enum dpq_pn_space space;
	uint64_t t = loss_time_and_space(l, &space);

	if (t != DPQ_LOSS_NO_TIMER) {
		l->timer = t;
		return;
	}
	/* §6.2.2.1: a server that cannot send arms nothing. */
	if (l->is_server && l->amplification_limited) {
		l->timer = DPQ_LOSS_NO_TIMER;
		return;
	}
	if (dpq_loss_ack_eliciting_in_flight(l) == 0 &&
	    dpq_loss_peer_completed_address_validation(l)) {
		l->timer = DPQ_LOSS_NO_TIMER;
		return;
	}
	l->timer = pto_time_and_space(l, now, &space);
}

int
dpq_loss_init(struct dpq_loss *l, const struct dpq_loss_conf *conf,
		const struct dpq_mem *mem)
{
	int i, rc;

	if (conf == NULL || mem == NULL)
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
		rc = dpq_sentmap_init(&l->sp[i].sent, mem, conf->max_packets);
		if (rc != 0)
			return rc;
		space_reset(&l->sp[i]);
		l->sp[i].active = true;
	}
	dpq_rtt_init(&l->rtt, conf->initial_rtt != 0 ? conf->initial_rtt :
			DPQ_RTT_INITIAL_DEFAULT);
	l->max_ack_delay = conf->max_ack_delay != 0 ? conf->max_ack_delay :
		DPQ_TP_DEFAULT_MAX_ACK_DELAY * US_PER_MS;
	l->is_server = conf->is_server;
	l->timer = DPQ_LOSS_NO_TIMER;
	return 0;
}

void
dpq_loss_destroy(struct dpq_loss *l)
{
	int i;

	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++)
		dpq_sentmap_destroy(&l->sp[i].sent);
}

int
dpq_loss_on_sent(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_sent_pkt *pkt,
		const struct dpq_sent_rec *recs, size_t nrec, uint64_t now)
{
	struct dpq_loss_space *s;
	struct dpq_sent_pkt h;
	int rc;

	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT || !l->sp[space].active)
		return -EINVAL;
	s = &l->sp[space];
	h = *pkt;
	h.time_sent = now;
	h.delivered = l->delivered;
	rc = dpq_sentmap_append(&s->sent, &h, recs, nrec);
	if (rc != 0)
		return rc;
	s->largest_sent = h.pn;
	if (h.flags & DPQ_SENT_IN_FLIGHT) {
		if (h.flags & DPQ_SENT_ACK_ELICITING) {
			s->last_ack_eliciting_time = now;
			s->ack_eliciting_in_flight++;
		}
		s->in_flight_bytes += h.bytes;
		if (cc != NULL)
			dpq_cc_on_sent(cc, h.bytes, now);
	}
	set_timer(l, now);
	return 0;
}

/* Take a packet out of the space's flight accounting. */
static void
leave_flight(struct dpq_loss_space *s, const struct dpq_sent_pkt *p)
{
	if (!(p->flags & DPQ_SENT_IN_FLIGHT))
		return;
	s->in_flight_bytes -= p->bytes;
	if (p->flags & DPQ_SENT_ACK_ELICITING)
		s->ack_eliciting_in_flight--;
}

/*
 * A.10 DetectAndRemoveLostPackets() plus the B.8 reaction: declare lost
 * what the packet or time threshold condemns, set loss_time for the rest,
 * tell cc, and check persistent congestion (§7.6.2).
 */
static void
detect_lost(struct dpq_loss *l, struct dpq_cc *cc, enum dpq_pn_space space,
		uint64_t now, const struct dpq_loss_cb *cb,
		struct dpq_loss_ack_info *info)
{
	struct dpq_loss_space *s = &l->sp[space];
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p;
	uint64_t rtt, loss_delay, pc_duration, last_lost_time = 0;
	uint64_t run_start = 0, bytes_lost = 0;
	uint32_t packets_lost = 0;
	bool in_run = false, pc = false, any_in_flight_lost = false;

	s->loss_time = DPQ_LOSS_NO_TIMER;
	if (s->largest_acked == DPQ_PN_NONE)
		return;

	/* §6.1.2: 9/8 * max(smoothed_rtt, latest_rtt), >= kGranularity. */
	rtt = l->rtt.latest > l->rtt.smoothed ? l->rtt.latest :
		l->rtt.smoothed;
	loss_delay = rtt / DPQ_LOSS_TIME_THRESHOLD_DEN *
		DPQ_LOSS_TIME_THRESHOLD_NUM +
		rtt % DPQ_LOSS_TIME_THRESHOLD_DEN *
		DPQ_LOSS_TIME_THRESHOLD_NUM / DPQ_LOSS_TIME_THRESHOLD_DEN;
	if (loss_delay < DPQ_RTT_GRANULARITY)
		loss_delay = DPQ_RTT_GRANULARITY;

	/* §7.6.1: (smoothed + max(4 rttvar, granularity) + max_ack_delay)
	 * * kPersistentCongestionThreshold, whatever the space. */
	pc_duration = sat_add(dpq_rtt_pto_base(&l->rtt), l->max_ack_delay) *
		DPQ_LOSS_PC_THRESHOLD;

	p = dpq_sentmap_first(&s->sent, &it);
	while (p != NULL && p->pn <= s->largest_acked) {
		bool later_acked = (p->flags & DPQ_SENT_LATER_ACKED) != 0;
		uint64_t lost_at = sat_add(p->time_sent, loss_delay);

		if (lost_at <= now ||
		    s->largest_acked >= p->pn + DPQ_LOSS_PACKET_THRESHOLD) {
			/* §7.6.2: ack-eliciting, and sent after the first
			 * RTT sample. */
			if ((p->flags & DPQ_SENT_ACK_ELICITING) &&
			    l->rtt.has_sample &&
			    p->time_sent > l->rtt.first_sample_time) {
				if (!in_run) {
					in_run = true;
					run_start = p->time_sent;
				}
				if (p->time_sent - run_start > pc_duration)
					pc = true;
			}
			if (p->flags & DPQ_SENT_IN_FLIGHT) {
				any_in_flight_lost = true;
				bytes_lost += p->bytes;
				packets_lost++;
				if (p->time_sent > last_lost_time)
					last_lost_time = p->time_sent;
			}
			leave_flight(s, p);
			if (info != NULL)
				info->packets_lost++;
			if (cb != NULL && cb->on_lost != NULL)
				cb->on_lost(cb->ctx, space, p);
			p = dpq_sentmap_remove(&s->sent, &it);
		} else {
			if (lost_at < s->loss_time)
				s->loss_time = lost_at;
			p = dpq_sentmap_next(&s->sent, &it);
		}
		/* A packet sent after this one was acknowledged: a
		 * persistent-congestion period cannot span past it. */
		if (later_acked)
			in_run = false;
	}

	if (info != NULL)
		info->bytes_lost += bytes_lost;
	if (any_in_flight_lost && cc != NULL) {
		struct dpq_cc_loss ev = {
			.now = now,
			.bytes_lost = bytes_lost,
			.packets_lost = packets_lost,
			.largest_sent_time = last_lost_time,
			.rtt = &l->rtt,
		};

		dpq_cc_on_loss(cc, &ev);
	}
	if (pc) {
		/* §7.6.2: minimum window; §5.2: restart min_rtt. */
		if (cc != NULL)
			dpq_cc_on_persistent_congestion(cc, now);
		dpq_rtt_on_persistent_congestion(&l->rtt);
		if (info != NULL)
			info->persistent_congestion = true;
	}
}

static int
check_ranges(const struct dpq_ack_range *r, size_t n)
{
	size_t i;

	if (r == NULL || n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (r[i].smallest > r[i].largest || r[i].largest > DPQ_PN_MAX)
			return -EINVAL;
		if (i + 1 < n && r[i + 1].largest >= r[i].smallest)
			return -EINVAL;
	}
	return 0;
}

int
dpq_loss_on_ack(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_ack_range *ranges,
		size_t n, uint64_t ack_delay, const struct dpq_ecn_counts *ecn,
		uint64_t now, const struct dpq_loss_cb *cb,
		struct dpq_loss_ack_info *info)
{
	struct dpq_loss_space *s;
	struct dpq_loss_ack_info local;
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p, *prev_live = NULL;
	uint64_t top_pn = 0, top_time = 0, top_delivered = 0;
	uint64_t top_flight_time = 0, bytes_acked = 0, flight_before;
	uint32_t packets_acked = 0, acked = 0;
	bool any_eliciting = false;
	size_t k;
	int rc;

	if (info == NULL)
		info = &local;
	memset(info, 0, sizeof(*info));
	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT)
		return -EINVAL;
	rc = check_ranges(ranges, n);
	if (rc != 0)
		return rc;
	s = &l->sp[space];
	if (!s->active)
		return 0;
	/* RFC 9000 §13.1: acknowledging a packet never sent. */
	if (s->largest_sent == DPQ_PN_NONE || ranges[0].largest > s->largest_sent)
		return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);

	if (s->largest_acked == DPQ_PN_NONE ||
	    ranges[0].largest > s->largest_acked)
		s->largest_acked = ranges[0].largest;
	/* A.4: a Handshake ACK proves the server validated our address. */
	if (space == DPQ_PN_SPACE_HANDSHAKE && !l->is_server)
		l->peer_validated = true;

	flight_before = cc != NULL ? cc->bytes_in_flight : 0;

	/* Merge-walk: packets ascending, ranges from the last (smallest). */
	k = n;
	p = dpq_sentmap_first(&s->sent, &it);
	while (p != NULL) {
		while (k > 0 && ranges[k - 1].largest < p->pn)
			k--;
		if (k == 0)
			break;
		if (p->pn < ranges[k - 1].smallest) {
			prev_live = p;
			p = dpq_sentmap_next(&s->sent, &it);
			continue;
		}
		/* Newly acknowledged. */
		if (prev_live != NULL)
			prev_live->flags |= DPQ_SENT_LATER_ACKED;
		acked++;
		top_pn = p->pn;
		top_time = p->time_sent;
		top_delivered = p->delivered;
		if (p->flags & DPQ_SENT_ACK_ELICITING)
			any_eliciting = true;
		if (p->flags & DPQ_SENT_IN_FLIGHT) {
			bytes_acked += p->bytes;
			packets_acked++;
			top_flight_time = p->time_sent;
		}
		leave_flight(s, p);
		if (cb != NULL && cb->on_acked != NULL)
			cb->on_acked(cb->ctx, space, p);
		p = dpq_sentmap_remove(&s->sent, &it);
	}
	/* A.7: nothing newly acknowledged, nothing to do. */
	if (acked == 0)
		return 0;
	info->packets_acked = acked;
	info->bytes_acked = bytes_acked;
	l->delivered += bytes_acked;

	/* §5.1: sample only if the largest acknowledged is new and
	 * something ack-eliciting was newly acknowledged. */
	if (top_pn == ranges[0].largest && any_eliciting) {
		dpq_rtt_sample(&l->rtt, now > top_time ? now - top_time : 0,
				space == DPQ_PN_SPACE_INITIAL ? 0 : ack_delay,
				l->max_ack_delay, l->handshake_confirmed, now);
		info->rtt_sampled = true;
	}

	/* §7.1, B.7: a higher CE count is a congestion event dated by the
	 * largest acknowledged packet. */
	if (ecn != NULL && ecn->ce > s->ecn_ce) {
		s->ecn_ce = ecn->ce;
		info->ecn_ce = true;
		if (cc != NULL) {
			struct dpq_cc_loss ev = {
				.now = now,
				.largest_sent_time = top_time,
				.rtt = &l->rtt,
				.ecn_ce = true,
			};

			dpq_cc_on_loss(cc, &ev);
		}
	}

	detect_lost(l, cc, space, now, cb, info);

	if (cc != NULL && bytes_acked != 0) {
		struct dpq_cc_ack ev = {
			.now = now,
			.bytes_acked = bytes_acked,
			.packets_acked = packets_acked,
			.largest_sent_time = top_flight_time,
			.bytes_in_flight_before = flight_before,
			.rtt = &l->rtt,
			.rtt_sampled = info->rtt_sampled,
			.delivered = l->delivered,
			.prior_delivered = top_delivered,
			.prior_time = top_time,
		};

		dpq_cc_on_ack(cc, &ev);
	}

	/* A.7: reset the backoff unless the client is unsure the server
	 * validated its address. */
	if (dpq_loss_peer_completed_address_validation(l))
		l->pto_count = 0;
	set_timer(l, now);
	return 0;
}

size_t
dpq_loss_ack_ranges(const struct dpq_frame_ack *f, struct dpq_ack_range *out,
		size_t max)
{
	struct dpq_ack_iter it;
	size_t n = 0;

	dpq_ack_iter_init(&it, f);
	while (n < max && dpq_ack_iter_next(&it, &out[n]))
		n++;
	return n;
}

void
dpq_loss_on_timeout(struct dpq_loss *l, struct dpq_cc *cc, uint64_t now,
		const struct dpq_loss_cb *cb, struct dpq_loss_timeout *out)
{
	enum dpq_pn_space space;

	memset(out, 0, sizeof(*out));
	if (l->timer == DPQ_LOSS_NO_TIMER || now < l->timer) {
		out->action = DPQ_LOSS_ACT_NONE;
		return;
	}
	/* A.9: time-threshold loss first. */
	if (loss_time_and_space(l, &space) != DPQ_LOSS_NO_TIMER) {
		detect_lost(l, cc, space, now, cb, &out->lost);
		out->action = DPQ_LOSS_ACT_LOST;
		out->space = space;
		set_timer(l, now);
		return;
	}
	if (dpq_loss_ack_eliciting_in_flight(l) == 0) {
		/* §6.2.2.1: client anti-deadlock probe. */
		out->action = DPQ_LOSS_ACT_ANTI_DEADLOCK;
		out->space = l->has_handshake_keys ? DPQ_PN_SPACE_HANDSHAKE :
			DPQ_PN_SPACE_INITIAL;
		out->probes = 1;
	} else {
		/* §6.2.4: one or two probes in the PTO's space. */
		(void)pto_time_and_space(l, now, &space);
		out->action = DPQ_LOSS_ACT_PTO;
		out->space = space;
		out->probes = 2;
	}
	l->pto_count++;
	set_timer(l, now);
}

int
dpq_loss_discard_space(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, uint64_t now)
{
	struct dpq_loss_space *s;

	if (space != DPQ_PN_SPACE_INITIAL && space != DPQ_PN_SPACE_HANDSHAKE)
		return -EINVAL;
	s = &l->sp[space];
	if (!s->active)
		return 0;
	/* A.11 and B.9: out of flight without an ack or loss signal. */
	if (cc != NULL)
		dpq_cc_on_discard(cc, s->in_flight_bytes);
	dpq_sentmap_clear(&s->sent);
	space_reset(s);
	s->active = false;
	l->pto_count = 0;
	set_timer(l, now);
	return 0;
}

void
dpq_loss_set_handshake_confirmed(struct dpq_loss *l, uint64_t now)
{
	l->handshake_confirmed = true;
	set_timer(l, now);
}

void
dpq_loss_set_handshake_keys(struct dpq_loss *l, uint64_t now)
{
	l->has_handshake_keys = true;
	set_timer(l, now);
}

void
dpq_loss_set_max_ack_delay(struct dpq_loss *l, uint64_t max_ack_delay,
		uint64_t now)
{
	l->max_ack_delay = max_ack_delay;
	set_timer(l, now);
}

void
dpq_loss_set_amplification_limited(struct dpq_loss *l, bool limited,
		uint64_t now)
{
	l->amplification_limited = limited;
	set_timer(l, now);
}
