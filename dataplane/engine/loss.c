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
 *
 * Spurious losses: a packet declared lost leaves the flight but stays in
 * the map, flagged DPQ_SENT_LOST, for the persistent-congestion duration
 * (by then its ACK would have come). If it is acknowledged meanwhile the
 * loss was a false alarm: its data is released, the reordering
 * thresholds grow (packet threshold to the observed reordering distance,
 * time threshold by 1/8 of an RTT, §6.1.1 and §6.1.2 allow adaptation),
 * and if every loss of the current episode (the congestion event that
 * started the recovery period, §7.3.2) turns out so, congestion control
 * undoes its reduction. Episodes signalled by ECN-CE or followed by
 * persistent congestion are never undone.
 *
 * Probes (§6.2.4, A.9): when the PTO fires the caller re-queues the data
 * of packets still in flight with dpq_loss_requeue() so the probes carry
 * it (a lost ClientHello or server flight is resent by the probe, not
 * after the peer answers a PING); the packets stay in flight.
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

/* Packets in the map that are not declared lost. */
static inline bool
is_outstanding(const struct dpq_sent_pkt *p)
{
	return !(p->flags & DPQ_SENT_LOST);
}

static void
space_reset(struct dpq_loss_space *s)
{
	s->largest_acked = DPQ_PN_NONE;
	s->largest_sent = DPQ_PN_NONE;
	s->loss_time = DPQ_LOSS_NO_TIMER;
	s->last_ack_eliciting_time = 0;
	s->in_flight_bytes = 0;
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
		 * is confirmed. But 1-RTT packets the peer cannot process yet
		 * may fill the window while the CRYPTO data that would let it
		 * (a lost Finished) waits for room: with nothing else in
		 * flight, probe the handshake space from their send time, or
		 * nothing would ever unblock the connection. */
		if (i == DPQ_PN_SPACE_APP && !l->handshake_confirmed) {
			enum dpq_pn_space hs = DPQ_PN_SPACE_HANDSHAKE;

			if (best != DPQ_LOSS_NO_TIMER || !l->sp[hs].active)
				break;
			best = sat_add(s->last_ack_eliciting_time,
					dpq_loss_pto(l, hs));
			*space = hs;
			break;
		}
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
	l->pkt_threshold = DPQ_LOSS_PACKET_THRESHOLD;
	l->time_threshold_num = DPQ_LOSS_TIME_THRESHOLD_NUM;
	dpq_rate_init(&l->rate);
	dpq_ecnv_init(&l->ecn, conf->ecn);
	return 0;
}

void
dpq_loss_destroy(struct dpq_loss *l)
{
	int i;

	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++)
		dpq_sentmap_destroy(&l->sp[i].sent);
}

/* Forget packets kept after their loss: all of them, or those older
 * than keep_until (send time). */
static void
purge_lost(struct dpq_loss_space *s, uint64_t sent_before)
{
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p = dpq_sentmap_first(&s->sent, &it);

	while (p != NULL) {
		if (!is_outstanding(p) && p->time_sent < sent_before)
			p = dpq_sentmap_remove(&s->sent, &it);
		else
			p = dpq_sentmap_next(&s->sent, &it);
	}
}

int
dpq_loss_on_sent(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_sent_pkt *pkt,
		const struct dpq_sent_rec *recs, size_t nrec, uint64_t now)
{
	struct dpq_loss_space *s;
	struct dpq_sent_pkt h;
	uint64_t flight;
	int rc;

	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT || !l->sp[space].active)
		return -EINVAL;
	s = &l->sp[space];
	h = *pkt;
	h.flags &= DPQ_SENT_USER_MASK;
	h.time_sent = now;
	flight = cc != NULL ? cc->bytes_in_flight : 0;
	if (h.flags & DPQ_SENT_IN_FLIGHT) {
		/* draft-cheng-iccrg-delivery-rate-estimation §3.4: the
		 * sender ran out of data with room in the window. */
		if (cc != NULL && cc->app_limited)
			dpq_rate_on_app_limited(&l->rate, flight);
		dpq_rate_on_sent(&l->rate, &h, flight, flight + h.bytes, now);
	}
	rc = dpq_sentmap_append(&s->sent, &h, recs, nrec);
	if (rc == -ENOBUFS) {
		/* Make room by forgetting losses kept for spurious
		 * detection; only then is the map really full. */
		purge_lost(s, UINT64_MAX);
		rc = dpq_sentmap_append(&s->sent, &h, recs, nrec);
	}
	if (rc != 0)
		return rc;
	s->largest_sent = h.pn;
	if (h.flags & DPQ_SENT_ECT0)
		dpq_ecnv_on_sent(&l->ecn, space, DPQ_ECN_CP_ECT0);
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

static void
leave_flight_if_outstanding(struct dpq_loss_space *s,
		const struct dpq_sent_pkt *p)
{
	if (is_outstanding(p))
		leave_flight(s, p);
}

/* §6.1.2: max(smoothed_rtt, latest_rtt) * time threshold, at least
 * kGranularity; plus the slack an XOR-FEC sender asked for (at most
 * smoothed_rtt). */
static uint64_t
loss_delay(const struct dpq_loss *l)
{
	uint64_t rtt = l->rtt.latest > l->rtt.smoothed ? l->rtt.latest :
		l->rtt.smoothed;
	uint64_t d = rtt / DPQ_LOSS_TIME_THRESHOLD_DEN * l->time_threshold_num +
		rtt % DPQ_LOSS_TIME_THRESHOLD_DEN * l->time_threshold_num /
		DPQ_LOSS_TIME_THRESHOLD_DEN;

	d += l->time_slack < l->rtt.smoothed ? l->time_slack :
		l->rtt.smoothed;

	return d < DPQ_RTT_GRANULARITY ? DPQ_RTT_GRANULARITY : d;
}

/* §7.6.1: (smoothed + max(4 rttvar, granularity) + max_ack_delay) *
 * kPersistentCongestionThreshold, whatever the space. Also how long lost
 * packets are kept for spurious-loss detection. */
static uint64_t
pc_duration(const struct dpq_loss *l)
{
	uint64_t d = sat_add(dpq_rtt_pto_base(&l->rtt), l->max_ack_delay);

	return d > UINT64_MAX / DPQ_LOSS_PC_THRESHOLD ? UINT64_MAX :
		d * DPQ_LOSS_PC_THRESHOLD;
}

/* A loss of a packet sent at sent_time: does it start a new episode
 * (the §7.3.2 rule congestion control applies too)? */
static void
episode_on_loss(struct dpq_loss *l, uint64_t sent_time, bool undoable,
		uint64_t now)
{
	if (l->episode != 0 && sent_time <= l->episode_start) {
		if (!undoable)
			l->episode_undoable = false;
		return;
	}
	if (++l->episode == 0)
		l->episode = 1;
	l->episode_start = now;
	l->episode_lost = 0;
	l->episode_spurious = 0;
	l->episode_undoable = undoable;
}

/*
 * A.10 DetectAndRemoveLostPackets() plus the B.8 reaction: declare lost
 * what the packet or time threshold condemns, set loss_time for the rest,
 * tell cc, and check persistent congestion (§7.6.2). Lost packets stay
 * in the map (DPQ_SENT_LOST) until they are older than the
 * persistent-congestion duration.
 */
static void
detect_lost(struct dpq_loss *l, struct dpq_cc *cc, enum dpq_pn_space space,
		uint64_t now, const struct dpq_loss_cb *cb,
		struct dpq_loss_ack_info *info)
{
	struct dpq_loss_space *s = &l->sp[space];
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p, *newest = NULL;
	uint64_t delay, pcd, keep_from, last_lost_time = 0;
	uint64_t run_start = 0, bytes_lost = 0, newest_lost_at_send = 0;
	uint32_t packets_lost = 0, lost_ect0 = 0;
	bool in_run = false, pc = false;

	s->loss_time = DPQ_LOSS_NO_TIMER;
	if (s->largest_acked == DPQ_PN_NONE)
		return;
	delay = loss_delay(l);
	pcd = pc_duration(l);
	keep_from = now > pcd ? now - pcd : 0;

	p = dpq_sentmap_first(&s->sent, &it);
	while (p != NULL && p->pn <= s->largest_acked) {
		bool later_acked = (p->flags & DPQ_SENT_LATER_ACKED) != 0;
		uint64_t lost_at = sat_add(p->time_sent, delay);

		if (!is_outstanding(p)) {
			/* Kept after its loss; forget it once its ACK
			 * cannot plausibly come any more. */
			if (p->time_sent < keep_from)
				p = dpq_sentmap_remove(&s->sent, &it);
			else
				p = dpq_sentmap_next(&s->sent, &it);
			continue;
		}
		bool by_pn = s->largest_acked >= p->pn + l->pkt_threshold;

		if (lost_at <= now || by_pn) {
			/* §7.6.2: ack-eliciting, and sent after the first
			 * RTT sample. */
			if ((p->flags & DPQ_SENT_ACK_ELICITING) &&
			    l->rtt.has_sample &&
			    p->time_sent > l->rtt.first_sample_time) {
				if (!in_run) {
					in_run = true;
					run_start = p->time_sent;
				}
				if (p->time_sent - run_start > pcd)
					pc = true;
			}
			if (p->flags & DPQ_SENT_IN_FLIGHT) {
				bytes_lost += p->bytes;
				packets_lost++;
				if (p->time_sent > last_lost_time)
					last_lost_time = p->time_sent;
				newest = p;
				newest_lost_at_send = p->lost;
				episode_on_loss(l, p->time_sent, true, now);
				l->episode_lost++;
			}
			leave_flight(s, p);
			if (p->flags & DPQ_SENT_ECT0)
				lost_ect0++;
			if (info != NULL)
				info->packets_lost++;
			if (cb != NULL && cb->on_lost != NULL)
				cb->on_lost(cb->ctx, space, p);
			p->flags |= DPQ_SENT_LOST |
				(by_pn ? DPQ_SENT_LOST_BY_PN : 0);
			p->episode = l->episode;
			p->lost_largest = s->largest_acked;
			p = dpq_sentmap_next(&s->sent, &it);
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
	if (lost_ect0 != 0)
		dpq_ecnv_on_lost(&l->ecn, lost_ect0);
	if (packets_lost != 0) {
		dpq_rate_on_lost(&l->rate, bytes_lost);
		if (cc != NULL) {
			struct dpq_cc_loss ev = {
				.now = now,
				.bytes_lost = bytes_lost,
				.packets_lost = packets_lost,
				.largest_sent_time = last_lost_time,
				.rtt = &l->rtt,
				.tx_in_flight = newest->tx_in_flight,
				.lost_since_sent = l->rate.lost -
					newest_lost_at_send,
				.app_limited = (newest->flags &
					DPQ_SENT_APP_LIMITED) != 0,
				.delivered = l->rate.delivered,
				.lost = l->rate.lost,
			};

			dpq_cc_on_loss(cc, &ev);
		}
	}
	if (pc) {
		/* §7.6.2: minimum window; §5.2: restart min_rtt. Not a
		 * reaction that a spurious loss can undo. */
		l->episode_undoable = false;
		l->stats.persistent++;
		if (cc != NULL)
			dpq_cc_on_persistent_congestion(cc, now);
		dpq_rtt_on_persistent_congestion(&l->rtt);
		if (info != NULL)
			info->persistent_congestion = true;
	}
}

/* What the spurious losses of one ACK frame showed. */
struct spurious_seen {
	uint64_t max_dist;	/* largest reordering distance */
	bool by_pn;		/* a packet-threshold loss was spurious */
	bool by_time;		/* a time-threshold loss was */
};

/* Packet p, declared lost before, was acknowledged: the loss was
 * spurious. Count it for the episode's undo and note what it shows
 * about reordering. */
static void
on_spurious(struct dpq_loss *l, const struct dpq_sent_pkt *p,
		struct spurious_seen *ss)
{
	uint64_t dist = p->lost_largest > p->pn ? p->lost_largest - p->pn : 0;

	l->stats.spurious++;
	if (p->flags & DPQ_SENT_LOST_BY_PN) {
		ss->by_pn = true;
		if (dist > ss->max_dist)
			ss->max_dist = dist;
	} else {
		ss->by_time = true;
	}
	if (p->episode == l->episode && l->episode != 0)
		l->episode_spurious++;
}

/* Adapt the thresholds once per ACK frame (§6.1.1 and §6.1.2 allow
 * adaptive thresholds): the packet threshold to one more than the
 * reordering seen, the time threshold by 1/8 of an RTT. */
static void
adapt_thresholds(struct dpq_loss *l, const struct spurious_seen *ss)
{
	if (ss->by_pn && ss->max_dist + 1 > l->pkt_threshold)
		l->pkt_threshold = ss->max_dist + 1 >
			DPQ_LOSS_PACKET_THRESHOLD_MAX ?
			DPQ_LOSS_PACKET_THRESHOLD_MAX :
			(uint32_t)(ss->max_dist + 1);
	if (ss->by_time &&
	    l->time_threshold_num < DPQ_LOSS_TIME_THRESHOLD_NUM_MAX)
		l->time_threshold_num++;
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
	struct dpq_rate_sample rs;
	struct spurious_seen ss = { 0 };
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p, *prev_live = NULL;
	uint64_t top_pn = 0, top_time = 0;
	uint64_t top_flight_time = 0, bytes_acked = 0, flight_before;
	uint64_t keep_from;
	uint32_t packets_acked = 0, acked = 0, acked_ect0 = 0;
	uint64_t ce;
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
	dpq_rate_sample_begin(&rs);

	/* Merge-walk: packets ascending, ranges from the last (smallest). */
	keep_from = pc_duration(l);
	keep_from = now > keep_from ? now - keep_from : 0;
	k = n;
	p = dpq_sentmap_first(&s->sent, &it);
	while (p != NULL) {
		if (!is_outstanding(p) && p->time_sent < keep_from) {
			/* Lost too long ago to learn anything from. */
			p = dpq_sentmap_remove(&s->sent, &it);
			continue;
		}
		while (k > 0 && ranges[k - 1].largest < p->pn)
			k--;
		if (k == 0)
			break;
		if (p->pn < ranges[k - 1].smallest) {
			if (is_outstanding(p))
				prev_live = p;
			p = dpq_sentmap_next(&s->sent, &it);
			continue;
		}
		/* Newly acknowledged. */
		if (prev_live != NULL)
			prev_live->flags |= DPQ_SENT_LATER_ACKED;
		acked++;
		if (p->flags & DPQ_SENT_ECT0)
			acked_ect0++;
		top_pn = p->pn;
		top_time = p->time_sent;
		if (p->flags & DPQ_SENT_ACK_ELICITING)
			any_eliciting = true;
		if (!is_outstanding(p)) {
			/* Left the flight when declared lost. */
			info->packets_spurious++;
			on_spurious(l, p, &ss);
		} else if (p->flags & DPQ_SENT_IN_FLIGHT) {
			bytes_acked += p->bytes;
			packets_acked++;
			top_flight_time = p->time_sent;
			dpq_rate_on_acked(&l->rate, &rs, p, now);
		}
		leave_flight_if_outstanding(s, p);
		if (cb != NULL && cb->on_acked != NULL)
			cb->on_acked(cb->ctx, space, p);
		p = dpq_sentmap_remove(&s->sent, &it);
	}
	/* A.7: nothing newly acknowledged, nothing to do. */
	if (acked == 0)
		return 0;
	info->packets_acked = acked;
	info->bytes_acked = bytes_acked;
	if (info->packets_spurious != 0)
		adapt_thresholds(l, &ss);

	/* §5.1: sample only if the largest acknowledged is new and
	 * something ack-eliciting was newly acknowledged. */
	if (top_pn == ranges[0].largest && any_eliciting) {
		dpq_rtt_sample(&l->rtt, now > top_time ? now - top_time : 0,
				space == DPQ_PN_SPACE_INITIAL ? 0 : ack_delay,
				l->max_ack_delay, l->handshake_confirmed, now);
		info->rtt_sampled = true;
	}
	dpq_rate_sample_end(&l->rate, &rs, l->rtt.min);

	/* RFC 9000 §13.4.2: validate the counts; §7.1, B.7: a higher CE
	 * count is a congestion event dated by the largest acknowledged
	 * packet. */
	ce = dpq_ecnv_on_ack(&l->ecn, space, acked_ect0, ecn);
	if (ce != 0) {
		info->ecn_ce = true;
		episode_on_loss(l, top_time, false, now);
		if (cc != NULL) {
			struct dpq_cc_loss ev = {
				.now = now,
				.largest_sent_time = top_time,
				.rtt = &l->rtt,
				.ecn_ce = true,
				.delivered = l->rate.delivered,
				.lost = l->rate.lost,
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
			.rs = &rs,
			.delivered = l->rate.delivered,
			.lost = l->rate.lost,
		};

		dpq_cc_on_ack(cc, &ev);
	}

	/* Every loss that started this episode was a false alarm: undo
	 * (after the ack, so the restored window is not grown again by
	 * this ACK's bytes in slow start). */
	if (info->packets_spurious != 0 && l->episode_undoable &&
	    l->episode_lost != 0 && l->episode_spurious >= l->episode_lost) {
		l->episode_undoable = false;
		l->stats.undos++;
		info->undone = true;
		if (cc != NULL)
			dpq_cc_on_spurious(cc, now);
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
		int i;

		/* §6.2.4: one or two probes in the PTO's space, and
		 * ack-eliciting packets in the other spaces with data in
		 * flight, coalesced. */
		(void)pto_time_and_space(l, now, &space);
		out->action = DPQ_LOSS_ACT_PTO;
		out->space = space;
		out->probes = 2;
		for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
			if (i == (int)space || !l->sp[i].active ||
			    l->sp[i].ack_eliciting_in_flight == 0)
				continue;
			if (i == DPQ_PN_SPACE_APP && !l->handshake_confirmed)
				continue;
			out->also |= (uint8_t)(1u << i);
		}
	}
	l->stats.ptos++;
	l->pto_count++;
	set_timer(l, now);
}

uint32_t
dpq_loss_requeue(struct dpq_loss *l, enum dpq_pn_space space,
		uint32_t max_pkts, const struct dpq_loss_cb *cb)
{
	return dpq_loss_requeue_from(l, space, 0, max_pkts, cb);
}

uint32_t
dpq_loss_requeue_from(struct dpq_loss *l, enum dpq_pn_space space,
		uint32_t skip, uint32_t max_pkts, const struct dpq_loss_cb *cb)
{
	struct dpq_loss_space *s;
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p;
	uint32_t n = 0;

	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT)
		return 0;
	s = &l->sp[space];
	if (!s->active)
		return 0;
	for (p = dpq_sentmap_first(&s->sent, &it); p != NULL && n < max_pkts;
	     p = dpq_sentmap_next(&s->sent, &it)) {
		if (!is_outstanding(p) ||
		    (p->flags & (DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT)) !=
		    (DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT))
			continue;
		if (skip > 0) {
			skip--;
			continue;
		}
		if (cb != NULL && cb->on_requeue != NULL)
			cb->on_requeue(cb->ctx, space, p);
		n++;
	}
	l->stats.requeued += n;
	return n;
}

enum dpq_loss_recovered
dpq_loss_on_recovered(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, uint64_t pn, uint64_t now)
{
	struct dpq_loss_space *s;
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p;

	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT)
		return DPQ_LOSS_REC_UNKNOWN;
	s = &l->sp[space];
	if (!s->active)
		return DPQ_LOSS_REC_UNKNOWN;
	for (p = dpq_sentmap_first(&s->sent, &it); p != NULL && p->pn < pn;
	     p = dpq_sentmap_next(&s->sent, &it))
		;
	if (p == NULL || p->pn != pn || !(p->flags & DPQ_SENT_IN_FLIGHT))
		return DPQ_LOSS_REC_UNKNOWN;
	l->stats.recovered++;
	if (!is_outstanding(p)) {
		/* Its loss was counted when it was declared; its ACK must
		 * not undo that as a spurious loss. */
		dpq_sentmap_remove(&s->sent, &it);
		return DPQ_LOSS_REC_WAS_LOST;
	}
	if (cc != NULL) {
		struct dpq_cc_loss ev = {
			.now = now,
			.packets_lost = 1,
			.largest_sent_time = p->time_sent,
			.rtt = &l->rtt,
			.delivered = l->rate.delivered,
			.lost = l->rate.lost,
		};

		/* bytes_lost 0: the packet stays in flight until acked.
		 * Whether this is a congestion event is decided in one
		 * place, by the connection's choice (cc.h). */
		if (!dpq_cc_on_recovered(cc, &ev))
			return DPQ_LOSS_REC_FORGIVEN;
	}
	/* Not undoable: the packet really was lost on the path. */
	episode_on_loss(l, p->time_sent, false, now);
	return DPQ_LOSS_REC_CONGESTION;
}

void
dpq_loss_raise_pkt_threshold(struct dpq_loss *l, uint32_t n)
{
	if (n > DPQ_LOSS_PACKET_THRESHOLD_MAX)
		n = DPQ_LOSS_PACKET_THRESHOLD_MAX;
	if (n > l->pkt_threshold)
		l->pkt_threshold = n;
}

void
dpq_loss_set_time_slack(struct dpq_loss *l, uint64_t us)
{
	l->time_slack = us;
}

void
dpq_loss_on_path_change(struct dpq_loss *l, struct dpq_cc *cc,
		uint64_t initial_rtt, uint64_t now)
{
	/* RFC 9000 §9.4: the new path's RTT and capacity are unknown. */
	dpq_rtt_init(&l->rtt, initial_rtt != 0 ? initial_rtt :
			DPQ_RTT_INITIAL_DEFAULT);
	l->rate.delivered_time = now;
	l->rate.first_sent_time = now;
	l->rate.app_limited = 0;
	dpq_ecnv_restart(&l->ecn);
	l->episode_undoable = false;
	l->episode_start = now;
	l->pto_count = 0;
	if (cc != NULL)
		dpq_cc_reset(cc, now);
	set_timer(l, now);
}

void
dpq_loss_trim(struct dpq_loss *l)
{
	int i;

	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++)
		dpq_sentmap_trim(&l->sp[i].sent);
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
	/* The space is never used again: its blocks go back too. */
	dpq_sentmap_destroy(&s->sent);
	space_reset(s);
	s->active = false;
	l->pto_count = 0;
	set_timer(l, now);
	return 0;
}

uint32_t
dpq_loss_forget_space(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_loss_cb *cb,
		uint64_t now)
{
	struct dpq_loss_space *s;
	uint32_t n;

	if ((unsigned int)space >= DPQ_PN_SPACE_COUNT)
		return 0;
	s = &l->sp[space];
	if (!s->active)
		return 0;
	n = dpq_loss_requeue(l, space, UINT32_MAX, cb);
	if (cc != NULL)
		dpq_cc_on_discard(cc, s->in_flight_bytes);
	dpq_sentmap_clear(&s->sent);
	space_reset(s);
	l->pto_count = 0;
	set_timer(l, now);
	return n;
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
