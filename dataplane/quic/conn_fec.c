/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn_fec.c: the XOR-FEC extension (docs/fec.md) inside a connection:
 * the xor_fec transport parameter, the sender's hooks in the packet
 * builder (a REPAIR frame first in the packet after a group, room kept
 * for it in members, the XOR pass over a burst's plaintexts before they
 * are sealed), the receiver's (extension frames, each processed 1-RTT
 * packet accumulated, rebuilt packets processed as received) and the
 * loss meter the adaptive policy reads. The group logic itself is in
 * dataplane/fec. Shard only.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/varint.h"
#include "dataplane/quic/conn_int.h"

static bool
policy_ok(const struct dpq_fec_policy *p)
{
	switch (p->mode) {
	case DPQ_FEC_OFF:
		return true;
	case DPQ_FEC_FIXED:
		return p->group >= DPQ_FEC_MIN_GROUP &&
			p->group <= DPQ_FEC_GROUP_LIMIT;
	case DPQ_FEC_ADAPTIVE:
		return p->group_min >= DPQ_FEC_MIN_GROUP &&
			p->group_min <= p->group &&
			p->group <= DPQ_FEC_GROUP_LIMIT;
	default:
		return false;
	}
}

void
dpq_conn_fec_init(struct dpq_conn *c)
{
	struct dpq_tparams *tp = &c->hss->local_tp;
	size_t n;

	c->fec_policy = c->conf.fec;
	if (!policy_ok(&c->fec_policy))
		c->fec_policy.mode = DPQ_FEC_OFF;
	dpq_fec_meter_init(&c->fec_meter, c->conf.fec_loss_prior_ppm);
	if (c->conf.fec_max_group == 0 || tp->n_ext == DPQ_TPARAMS_MAX_EXT)
		return;
	n = dpq_fec_tp_encode(c->fec_tp, sizeof(c->fec_tp),
			c->conf.fec_max_group > DPQ_FEC_GROUP_LIMIT ?
			DPQ_FEC_GROUP_LIMIT : c->conf.fec_max_group);
	if (n == 0)
		return;
	c->fec_tp_len = (uint8_t)n;
	tp->ext[tp->n_ext++] = (struct dpq_tparam_ext){
		.id = DPQ_FEC_TP_ID, .value = c->fec_tp, .len = n };
}

void
dpq_conn_fec_destroy(struct dpq_conn *c)
{
	if (c->fec == NULL)
		return;
	dpq_fec_tx_destroy(&c->fec->tx);
	dpq_fec_rx_destroy(&c->fec->rx);
	dpq_mem_free(&c->mem, c->fec);
	c->fec = NULL;
}

static void
on_rebuilt(void *ctx, uint64_t pn, const uint8_t *payload, size_t len)
{
	struct dpq_conn *c = ctx;

	dpq_conn_rx_rebuilt(c, pn, payload, len, c->fec->now);
}

uint64_t
dpq_conn_fec_peer_tparams(struct dpq_conn *c, const struct dpq_tparams *tp)
{
	const struct dpq_tparam_ext *x = NULL;
	uint64_t max_group;
	size_t i;

	for (i = 0; i < tp->n_ext; i++)
		if (tp->ext[i].id == DPQ_FEC_TP_ID)
			x = &tp->ext[i];
	if (x == NULL)
		return 0;	/* the peer does not have it: nothing changes */
	if (dpq_fec_tp_decode(x->value, x->len, &max_group) != 0)
		return DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	if (c->fec_tp_len == 0 || c->fec != NULL)
		return 0;	/* we do not: nothing changes either */
	c->b->stats.fec_on = true;
	c->fec = dpq_mem_alloc(&c->mem, sizeof(*c->fec));
	if (c->fec == NULL)
		return 0;	/* frames are then accepted and ignored */
	memset(c->fec, 0, sizeof(*c->fec));
	c->fec->peer_max = (uint32_t)max_group;
	dpq_fec_tx_init(&c->fec->tx, &c->mem, c->conf.max_udp_payload);
	dpq_fec_rx_init(&c->fec->rx, &c->mem, c->conf.max_udp_payload,
			c->conf.fec_max_group, on_rebuilt, c);
	return 0;
}

int
dpq_conn_set_fec_policy(struct dpq_conn *c, const struct dpq_fec_policy *p)
{
	if (c == NULL || p == NULL || !policy_ok(p))
		return -EINVAL;
	c->fec_policy = *p;
	return 0;
}

/* ---- sender --------------------------------------------------------------- */

static uint32_t
group_wanted(const struct dpq_conn *c)
{
	return dpq_fec_policy_group(&c->fec_policy, &c->fec_meter,
			c->fec->peer_max);
}


static void
add_seg(struct dpq_conn *c, const uint8_t *payload, uint8_t *repair,
		uint16_t len)
{
	struct dpq_conn_fec *f = c->fec;

	if (f->nsegs == DPQ_CONN_FEC_SEGS)
		dpq_conn_fec_pass(c);	/* plaintexts are all still there */
	f->segs[f->nsegs++] = (struct dpq_fec_seg){
		.payload = payload, .repair = repair, .len = len };
}

/* A pause in sending longer than this (a quarter of the RTT, at least
 * 1 ms) ends the open group: its members before the pause would wait a
 * round trip for their REPAIR, long enough for loss detection to condemn
 * a missing one first (RFC 9002 §6.1.2: 9/8 RTT). The REPAIR goes first
 * in the packet after the pause. */
static uint64_t
pause_limit(const struct dpq_conn *c)
{
	uint64_t q = c->b->loss.rtt.smoothed / 4;

	return q > 1000 ? q : 1000;
}

/* The pause does not wait for the next packet: when the window is full
 * (the end of a slow start round: the next packet goes only when the
 * first ACK comes back, a round trip after the round's first member) the
 * group would otherwise stay open across the round trip, and its missing
 * member be declared lost before its REPAIR arrived. The REPAIR goes one
 * packet over the window (§10). */
uint64_t
dpq_conn_fec_deadline(const struct dpq_conn *c)
{
	const struct dpq_fec_tx *tx;

	if (c->fec == NULL)
		return UINT64_MAX;
	tx = &c->fec->tx;
	if (tx->state != DPQ_FEC_TX_OPEN || tx->count == 0 || !tx->eliciting)
		return UINT64_MAX;
	/* + 1: due strictly after the limit, as begin_packet tests it. */
	return c->fec->member_sent + pause_limit(c) + 1;
}

bool
dpq_conn_fec_send_due(const struct dpq_conn *c, uint64_t now)
{
	/* An announcement rides on the next packet; a REPAIR must go even
	 * if nothing else does. */
	return c->fec != NULL && (c->fec->tx.state == DPQ_FEC_TX_REPAIR_DUE ||
			now >= dpq_conn_fec_deadline(c));
}

/* A group's REPAIR is being written: loss detection's time slack is the
 * longest group of the last two round trips, not just this one (a short
 * group at the tail must not shrink the wait of a long one before it,
 * whose missing member's RECOVERED report is still on its way). */
static void
update_slack(struct dpq_conn *c, uint64_t now)
{
	struct dpq_conn_fec *f = c->fec;
	uint64_t d = now - f->group_start;

	if (d >= f->slack || now > f->slack_at + 2 * c->b->loss.rtt.smoothed) {
		f->slack = d;
		f->slack_at = now;
	}
	dpq_loss_set_time_slack(&c->b->loss, f->slack);
}

uint8_t *
dpq_conn_fec_begin_packet(struct dpq_conn *c, uint64_t pn, uint8_t *p,
		uint8_t **end, bool *repair, uint64_t *first, uint32_t *count,
		uint64_t now)
{
	struct dpq_fec_tx *tx;
	uint8_t *q, *data;
	uint16_t dl;
	uint32_t k;

	*repair = false;
	if (c->fec == NULL)
		return p;
	tx = &c->fec->tx;
	if (tx->state == DPQ_FEC_TX_IDLE)
		dpq_fec_tx_want(tx, group_wanted(c));	/* -ENOMEM: stay off */
	dpq_fec_tx_begin_packet(tx, pn);
	if (now >= dpq_conn_fec_deadline(c))
		dpq_fec_tx_close(tx);
	if (dpq_fec_tx_frame_due(tx)) {
		bool announce = tx->state == DPQ_FEC_TX_ANNOUNCE;

		*first = announce ? pn : tx->first_pn;
		*count = announce ? 0 : tx->count;
		k = group_wanted(c);
		q = dpq_fec_tx_write_frame(tx, p, *end, pn, k, &data, &dl);
		if (q == NULL)
			return announce ? p : NULL;
		/* A missing member is not condemned before its group's
		 * REPAIR could arrive (RFC 9002 §6.1.1 reordering). */
		if (k > 0)
			dpq_loss_raise_pkt_threshold(&c->b->loss, k + 2);
		/* ... nor before the time it could take (RFC 9002 §6.1.2):
		 * a paced group spans up to this long from its first member
		 * to its REPAIR; the next groups will be alike. */
		if (!announce)
			update_slack(c, now);
		if (dl > 0)
			add_seg(c, NULL, data, dl);
		*repair = true;
		return q;
	}
	/* A member leaves room for its group's REPAIR. */
	if (dpq_fec_tx_reserve(tx) > 0)
		*end = *end - p > (ptrdiff_t)dpq_fec_tx_reserve(tx) ?
			*end - dpq_fec_tx_reserve(tx) : p;
	return p;
}

void
dpq_conn_fec_end_packet(struct dpq_conn *c, uint64_t pn,
		const uint8_t *payload, size_t len, bool ack_eliciting)
{
	if (ack_eliciting)
		dpq_fec_meter_on_sent(&c->fec_meter, 1);
	if (c->fec != NULL &&
	    dpq_fec_tx_on_packet(&c->fec->tx, pn, len, ack_eliciting)) {
		add_seg(c, payload, NULL, (uint16_t)len);
		c->fec->member_sent = c->now;
		if (c->fec->tx.count == 1)
			c->fec->group_start = c->now;
	}
}

void
dpq_conn_fec_on_idle(struct dpq_conn *c)
{
	if (c->fec != NULL)
		dpq_fec_tx_close(&c->fec->tx);
}

void
dpq_conn_fec_pass(struct dpq_conn *c)
{
	struct dpq_conn_fec *f = c->fec;

	if (f == NULL || f->nsegs == 0)
		return;
	dpq_fec_tx_pass(&f->tx, f->segs, f->nsegs);
	f->nsegs = 0;
}

void
dpq_conn_fec_on_lost(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_sent_pkt *pkt)
{
	if (sp == DPQ_PN_SPACE_APP && (pkt->flags & DPQ_SENT_ACK_ELICITING))
		dpq_fec_meter_on_lost(&c->fec_meter, 1);
}

uint8_t *
dpq_conn_fec_write_recovered(struct dpq_conn *c, uint8_t *p,
		const uint8_t *end)
{
	struct dpq_fec_rx *rx;
	uint64_t pn[DPQ_FEC_RECOVERED_MAX];
	size_t n, i;
	uint8_t *q;

	if (c->fec == NULL || c->fec->rx.nreport == 0)
		return p;
	rx = &c->fec->rx;
	n = rx->nreport < DPQ_FEC_RECOVERED_MAX ? rx->nreport :
		DPQ_FEC_RECOVERED_MAX;
	for (i = 0; i < n; i++)
		pn[i] = rx->report[rx->nreport - 1 - i];
	q = dpq_fec_recovered_encode(p, end, pn, n);
	if (q == NULL)
		return p;	/* next packet with an ACK */
	dpq_fec_rx_take_report(rx, pn, n);
	return q;
}

/* ---- receiver ------------------------------------------------------------- */

bool
dpq_conn_fec_is_frame(const struct dpq_conn *c, const uint8_t *p,
		const uint8_t *end, uint64_t *type)
{
	(void)c;
	/* Our frame types are 4-byte varints: one test for all others. */
	if ((p[0] & 0xc0) != 0x80 ||
	    dpq_varint_decode(p, end, type) == NULL)
		return false;
	return dpq_fec_is_frame(*type);
}

static ssize_t
on_repair(struct dpq_conn *c, const uint8_t *p, const uint8_t *end)
{
	struct dpq_fec_repair r;
	ssize_t n = dpq_fec_repair_decode(p, end, &r);
	struct dpq_conn_fec *f = c->fec;

	if (n < 0)
		return n;
	/* §4: groups larger than we accept. */
	if (r.size > c->conf.fec_max_group ||
	    r.next_size > c->conf.fec_max_group)
		return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);
	/* §7: not inside a rebuilt packet; nothing to do without state. */
	if (f == NULL || f->rx.in_recovery)
		return n;
	if (f->rx_has_repair)
		dpq_fec_rx_on_repair(&f->rx, &f->rx_repair);
	f->rx_repair = r;
	f->rx_has_repair = true;
	return n;
}

static ssize_t
on_recovered(struct dpq_conn *c, const uint8_t *p, const uint8_t *end,
		uint64_t now)
{
	struct dpq_fec_recovered r;
	ssize_t n = dpq_fec_recovered_decode(p, end, &r);
	uint64_t i;

	if (n < 0)
		return n;
	/* §5, §8: congestion control sees the loss (and judges it,
	 * conf.fec_cc); nothing is re-sent. One declared lost before was
	 * counted then, by loss recovery and by the meter. */
	for (i = 0; i < r.count; i++) {
		switch (dpq_loss_on_recovered(&c->b->loss, &c->b->cc,
				DPQ_PN_SPACE_APP, r.pn[i], now)) {
		case DPQ_LOSS_REC_CONGESTION:
		case DPQ_LOSS_REC_FORGIVEN:
			/* Path loss for the adaptive policy either way. */
			dpq_fec_meter_on_lost(&c->fec_meter, 1);
			c->b->stats.fec_peer_recovered++;
			break;
		case DPQ_LOSS_REC_WAS_LOST:
			c->b->stats.fec_peer_recovered++;
			break;
		default:
			break;
		}
	}
	return n;
}

ssize_t
dpq_conn_fec_on_frame(struct dpq_conn *c, enum dpq_pkt_type pkt_type,
		const uint8_t *p, const uint8_t *end, uint64_t now)
{
	uint64_t type;

	/* §3: without the parameter on both sides, an unknown frame type
	 * (RFC 9000 §12.4); §4, §5: 1-RTT packets only. */
	if (!c->b->stats.fec_on ||
	    dpq_varint_decode(p, end, &type) == NULL)
		return DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR);
	if (pkt_type != DPQ_PKT_1RTT)
		return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);
	if (type == DPQ_FEC_FT_REPAIR)
		return on_repair(c, p, end);
	return on_recovered(c, p, end, now);
}

void
dpq_conn_fec_on_rx(struct dpq_conn *c, uint64_t pn, const uint8_t *payload,
		size_t len, uint64_t now)
{
	struct dpq_conn_fec *f = c->fec;

	if (f == NULL || f->rx.in_recovery)
		return;
	f->now = now;
	if (f->rx_has_repair) {
		/* §7: a packet carrying a REPAIR frame is no member. */
		f->rx_has_repair = false;
		dpq_fec_rx_on_repair(&f->rx, &f->rx_repair);
	} else {
		dpq_fec_rx_on_packet(&f->rx, pn, payload, len);
	}
	/* The payload lives in the caller's buffer only until we return,
	 * unless the caller keeps the batch until dpq_conn_rx_end(). */
	if (!f->rx_batch)
		dpq_conn_rx_end(c);
}

void
dpq_conn_rx_begin(struct dpq_conn *c)
{
	if (c != NULL && c->fec != NULL)
		c->fec->rx_batch = true;
}

void
dpq_conn_rx_end(struct dpq_conn *c)
{
	struct dpq_conn_fec *f;

	if (c == NULL || c->fec == NULL)
		return;
	f = c->fec;
	f->rx_batch = false;
	if (f->rx.nq != 0)
		dpq_fec_rx_flush(&f->rx);
}
