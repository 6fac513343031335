/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_loss.c: loss detection (RFC 9002 §6, §7.6, Appendix A) with a
 * NewReno controller attached: packet-threshold loss, time-threshold loss
 * at its exact time, RTT sampling rules, PTO value, backoff and reset,
 * no application PTO before confirmation, the client anti-deadlock timer,
 * early and spurious timer wake-ups, late acks of lost packets, discard
 * of a space, ECN-CE, acks of unsent packets, and persistent congestion
 * (true, cut by an acknowledged packet, and before the first RTT sample);
 * probe data (requeue, probes in every space with data in flight);
 * spurious losses (undo only when every loss of the episode was spurious,
 * never for ECN-CE, adaptive thresholds, lost packets forgotten after a
 * while or when the map is full).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/cc_newreno.h"
#include "dataplane/engine/loss.h"

#define MS	UINT64_C(1000)
#define MDS	1200
#define MAXPN	64

/* What the callbacks saw, per pn of the space under test. */
struct seen {
	int acked[DPQ_PN_SPACE_COUNT][MAXPN];
	int lost[DPQ_PN_SPACE_COUNT][MAXPN];
	int requeued[DPQ_PN_SPACE_COUNT][MAXPN];
	uint64_t last_rec_off;
	unsigned int nlost, nacked;
};

static void
on_acked(void *ctx, enum dpq_pn_space sp, const struct dpq_sent_pkt *p)
{
	struct seen *s = ctx;

	assert_true(p->pn < MAXPN);
	s->acked[sp][p->pn]++;
	s->nacked++;
}

static void
on_lost(void *ctx, enum dpq_pn_space sp, const struct dpq_sent_pkt *p)
{
	struct seen *s = ctx;

	assert_true(p->pn < MAXPN);
	s->lost[sp][p->pn]++;
	s->nlost++;
	if (p->nrec != 0) {
		const struct dpq_sent_rec *r = dpq_sent_pkt_recs(p);

		assert_int_equal(r[0].kind, DPQ_SENT_REC_STREAM);
		assert_int_equal(r[0].stream.id, 4);
		assert_int_equal(r[0].len, 1000);
		s->last_rec_off = r[0].stream.off;
	}
}

static void
on_requeue(void *ctx, enum dpq_pn_space sp, const struct dpq_sent_pkt *p)
{
	struct seen *s = ctx;

	assert_true(p->pn < MAXPN);
	assert_int_equal(p->nrec, 1);
	s->requeued[sp][p->pn]++;
}

struct fx {
	struct dpq_loss l;
	struct dpq_cc cc;
	struct seen seen;
	struct dpq_loss_cb cb;
};

static void
fx_init(struct fx *f, bool server, bool confirmed)
{
	struct dpq_loss_conf conf = {
		.is_server = server,
		.max_ack_delay = 25 * MS,
		.ecn = true,
	};
	struct dpq_cc_conf ccc = { .max_datagram_size = MDS };
	struct dpq_mem m = DPQ_MEM_LIBC;

	memset(f, 0, sizeof(*f));
	assert_int_equal(dpq_loss_init(&f->l, &conf, &m), 0);
	assert_int_equal(dpq_cc_init(&f->cc, &dpq_cc_newreno_ops, &ccc, 0),
			0);
	f->cb.on_acked = on_acked;
	f->cb.on_lost = on_lost;
	f->cb.on_requeue = on_requeue;
	f->cb.ctx = &f->seen;
	if (confirmed)
		dpq_loss_set_handshake_confirmed(&f->l, 0);
}

static void
fx_fini(struct fx *f)
{
	dpq_loss_destroy(&f->l);
}

/* An ack-eliciting in-flight packet of MDS bytes with one STREAM record
 * (stream 4, offset pn * 1000). */
static void
send(struct fx *f, enum dpq_pn_space sp, uint64_t pn, uint64_t now)
{
	struct dpq_sent_pkt p = {
		.pn = pn,
		.bytes = MDS,
		.flags = DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT |
			(dpq_loss_ecn_codepoint(&f->l) == DPQ_ECN_CP_ECT0 ?
			 DPQ_SENT_ECT0 : 0),
	};
	struct dpq_sent_rec r = {
		.kind = DPQ_SENT_REC_STREAM,
		.len = 1000,
		.stream = { .id = 4, .off = pn * 1000 },
	};

	assert_int_equal(dpq_loss_on_sent(&f->l, &f->cc, sp, &p, &r, 1, now),
			0);
}

static int
ack1(struct fx *f, enum dpq_pn_space sp, uint64_t lo, uint64_t hi,
		uint64_t now, struct dpq_loss_ack_info *info)
{
	struct dpq_ack_range r = { .smallest = lo, .largest = hi };

	return dpq_loss_on_ack(&f->l, &f->cc, sp, &r, 1, 0, NULL, now,
			&f->cb, info);
}

static void
test_packet_threshold(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 6; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	assert_int_equal(f.cc.bytes_in_flight, 6 * MDS);
	/* ACK of 5 only, 100 ms after it was sent */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 5, 105 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 1);
	assert_true(info.rtt_sampled);
	assert_int_equal(f.l.rtt.latest, 100 * MS);
	/* §6.1.1: 5 >= pn + 3 for pn 0..2 */
	assert_int_equal(info.packets_lost, 3);
	assert_int_equal(info.bytes_lost, 3 * MDS);
	for (pn = 0; pn < 3; pn++)
		assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][pn], 1);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][3], 0);
	assert_int_equal(f.seen.acked[DPQ_PN_SPACE_APP][5], 1);
	assert_int_equal(f.seen.last_rec_off, 2000);
	/* flight: 3 and 4 remain; one congestion event halves cwnd */
	assert_int_equal(f.cc.bytes_in_flight, 2 * MDS);
	assert_int_equal(f.cc.cwnd, 6000);
	assert_false(info.persistent_congestion);
	fx_fini(&f);
}

static void
test_time_threshold(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_loss_timeout to;
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 6; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 5, 105 * MS, &info), 0);
	/* first sample: smoothed = latest = 100 ms; loss delay = 112.5 ms:
	 * pn 3 (sent at 3 ms) is lost at exactly 115.5 ms */
	assert_int_equal(f.l.sp[DPQ_PN_SPACE_APP].loss_time, 115500);
	assert_int_equal(dpq_loss_deadline(&f.l), 115500);
	/* early wake-up: nothing happens */
	dpq_loss_on_timeout(&f.l, &f.cc, 115499, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_NONE);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][3], 0);
	dpq_loss_on_timeout(&f.l, &f.cc, 115500, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_LOST);
	assert_int_equal(to.space, DPQ_PN_SPACE_APP);
	assert_int_equal(to.lost.packets_lost, 1);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][3], 1);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][4], 0);
	assert_int_equal(dpq_loss_deadline(&f.l), 116500);
	dpq_loss_on_timeout(&f.l, &f.cc, 116500, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_LOST);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][4], 1);
	/* nothing left: a server arms no timer */
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	assert_int_equal(f.cc.bytes_in_flight, 0);
	/* a spurious wake-up with no timer is harmless */
	dpq_loss_on_timeout(&f.l, &f.cc, 200 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_NONE);
	/* a late ACK of the lost packets: all five losses were spurious;
	 * their data is released (acked once each), nothing re-enters the
	 * flight, and the one congestion event they caused is undone */
	assert_int_equal(f.cc.cwnd, 6000);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 5, 300 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 5);
	assert_int_equal(info.packets_spurious, 5);
	assert_int_equal(info.bytes_acked, 0);
	assert_true(info.undone);
	assert_int_equal(f.seen.nacked, 6);
	assert_int_equal(f.seen.nlost, 5);
	for (pn = 0; pn < 5; pn++)
		assert_int_equal(f.seen.acked[DPQ_PN_SPACE_APP][pn], 1);
	assert_int_equal(f.cc.bytes_in_flight, 0);
	assert_int_equal(f.cc.cwnd, 12000);
	assert_int_equal(f.cc.spurious_undos, 1);
	assert_int_equal(f.l.stats.spurious, 5);
	/* pn 0-2 fell to the packet threshold 5 - pn >= 3: the worst
	 * reordering seen was 5, so the threshold is now 6; pn 3 and 4 fell
	 * to the time threshold, which grows by 1/8 per ACK frame */
	assert_int_equal(f.l.pkt_threshold, 6);
	assert_int_equal(f.l.time_threshold_num, 10);
	/* acked again: nothing is reported twice */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 5, 310 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 0);
	assert_int_equal(f.seen.nacked, 6);
	fx_fini(&f);
}

/* An XOR-FEC sender's slack (dpq_loss_set_time_slack) delays the time
 * threshold by up to one smoothed RTT, no more. */
static void
test_time_slack(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_loss_timeout to;
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 6; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	dpq_loss_set_time_slack(&f.l, 20 * MS);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 5, 105 * MS, &info), 0);
	/* 3 ms + 112.5 ms + 20 ms */
	assert_int_equal(f.l.sp[DPQ_PN_SPACE_APP].loss_time, 135500);
	dpq_loss_on_timeout(&f.l, &f.cc, 135499, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_NONE);
	dpq_loss_on_timeout(&f.l, &f.cc, 135500, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_LOST);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][3], 1);
	fx_fini(&f);

	/* More than smoothed_rtt (100 ms) counts as smoothed_rtt: pn 3 at
	 * 3 + 112.5 + 100 ms. */
	fx_init(&f, true, true);
	for (pn = 0; pn < 6; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	dpq_loss_set_time_slack(&f.l, 500 * MS);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 5, 105 * MS, &info), 0);
	assert_int_equal(f.l.sp[DPQ_PN_SPACE_APP].loss_time, 215500);
	fx_fini(&f);
}

static void
test_rtt_sampling_rules(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_sent_pkt ackonly = { .pn = 2, .bytes = 50 };
	struct dpq_ack_range r[2] = { { 2, 2 }, { 0, 0 } };

	(void)state;
	fx_init(&f, true, true);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	send(&f, DPQ_PN_SPACE_APP, 1, 1 * MS);
	assert_int_equal(dpq_loss_on_sent(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			&ackonly, NULL, 0, 2 * MS), 0);
	/* not in flight: the flight is the two ack-eliciting packets */
	assert_int_equal(f.cc.bytes_in_flight, 2 * MDS);
	/* §5.1: largest (2) newly acked but only non-ack-eliciting with it?
	 * No: 0 is ack-eliciting and newly acked too, so a sample is taken,
	 * from the largest (sent at 2 ms). ack_delay 5 ms is applied. */
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 2,
			5 * MS, NULL, 52 * MS, &f.cb, &info), 0);
	assert_true(info.rtt_sampled);
	assert_int_equal(f.l.rtt.latest, 50 * MS);
	/* an ACK whose largest is not newly acked: no sample */
	r[0] = (struct dpq_ack_range){ 1, 2 };
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 1,
			0, NULL, 90 * MS, &f.cb, &info), 0);
	assert_int_equal(info.packets_acked, 1);
	assert_false(info.rtt_sampled);
	assert_int_equal(f.l.rtt.latest, 50 * MS);
	/* an ACK newly acking only a non-ack-eliciting packet: no sample */
	ackonly.pn = 3;
	assert_int_equal(dpq_loss_on_sent(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			&ackonly, NULL, 0, 100 * MS), 0);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 3, 3, 400 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 1);
	assert_false(info.rtt_sampled);
	assert_int_equal(f.l.rtt.latest, 50 * MS);
	fx_fini(&f);
}

static void
test_pto_and_backoff(void **state)
{
	struct fx f;
	struct dpq_loss_timeout to;
	struct dpq_loss_ack_info info;

	(void)state;
	fx_init(&f, true, true);
	/* no sample: smoothed 333, rttvar 166.5: base 999 ms; the
	 * application space adds max_ack_delay 25 ms (§6.2.1) */
	assert_int_equal(dpq_loss_pto(&f.l, DPQ_PN_SPACE_HANDSHAKE), 999 * MS);
	assert_int_equal(dpq_loss_pto(&f.l, DPQ_PN_SPACE_APP), 1024 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	assert_int_equal(dpq_loss_deadline(&f.l), 1024 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 1024 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(to.space, DPQ_PN_SPACE_APP);
	assert_int_equal(to.probes, 2);
	assert_int_equal(f.l.pto_count, 1);
	/* PTO declares nothing lost */
	assert_int_equal(f.seen.nlost, 0);
	/* backoff doubles the whole period, max_ack_delay included */
	assert_int_equal(dpq_loss_pto(&f.l, DPQ_PN_SPACE_APP), 2048 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 2048 * MS);
	send(&f, DPQ_PN_SPACE_APP, 1, 1024 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 3072 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 3072 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(f.l.pto_count, 2);
	assert_int_equal(dpq_loss_deadline(&f.l), (1024 + 4096) * MS);
	/* an ACK resets the backoff (server: address validated) */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 1, 1, 3100 * MS, &info),
			0);
	assert_int_equal(f.l.pto_count, 0);
	fx_fini(&f);
}

static void
test_pto_spaces(void **state)
{
	struct fx f;
	struct dpq_loss_timeout to;

	(void)state;
	/* not confirmed: no PTO for application data (§6.2.1); with only
	 * 1-RTT packets in flight the Handshake space is probed from their
	 * send time (its CRYPTO data may be waiting for the window) */
	fx_init(&f, true, false);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	assert_int_equal(dpq_loss_deadline(&f.l), 999 * MS);
	/* a Handshake packet arms its own PTO, without max_ack_delay */
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 0, 10 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 1009 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 1009 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(to.space, DPQ_PN_SPACE_HANDSHAKE);
	/* confirmation brings the application space in */
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_HANDSHAKE, 1100 * MS), 0);
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	dpq_loss_set_handshake_confirmed(&f.l, 1100 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 1024 * MS);
	/* server at the amplification limit: no timer (§6.2.2.1) */
	dpq_loss_set_amplification_limited(&f.l, true, 1100 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	dpq_loss_set_amplification_limited(&f.l, false, 1100 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 1024 * MS);
	fx_fini(&f);
}

static void
test_anti_deadlock(void **state)
{
	struct fx f;
	struct dpq_loss_timeout to;
	struct dpq_loss_ack_info info;

	(void)state;
	fx_init(&f, false, false);		/* client */
	assert_false(dpq_loss_peer_completed_address_validation(&f.l));
	send(&f, DPQ_PN_SPACE_INITIAL, 0, 0);
	assert_int_equal(dpq_loss_deadline(&f.l), 999 * MS);
	/* the server acks the Initial: nothing in flight, but the server
	 * may be blocked by its amplification limit, so the client keeps a
	 * timer from now: 100 + (100 + 4 * 50) ms */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_INITIAL, 0, 0, 100 * MS, &info),
			0);
	assert_int_equal(dpq_loss_ack_eliciting_in_flight(&f.l), 0);
	assert_int_equal(dpq_loss_deadline(&f.l), 400 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 400 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_ANTI_DEADLOCK);
	assert_int_equal(to.space, DPQ_PN_SPACE_INITIAL);
	assert_int_equal(to.probes, 1);
	assert_int_equal(f.l.pto_count, 1);
	assert_int_equal(dpq_loss_deadline(&f.l), 1000 * MS);
	/* with Handshake keys the probe moves to the Handshake space */
	dpq_loss_set_handshake_keys(&f.l, 500 * MS);
	assert_int_equal(dpq_loss_deadline(&f.l), 1100 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 1100 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_ANTI_DEADLOCK);
	assert_int_equal(to.space, DPQ_PN_SPACE_HANDSHAKE);
	/* the client sends its probe; a Handshake ACK validates */
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 0, 1100 * MS);
	assert_int_equal(f.l.pto_count, 2);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_HANDSHAKE, 0, 0, 1150 * MS,
			&info), 0);
	assert_true(dpq_loss_peer_completed_address_validation(&f.l));
	assert_int_equal(f.l.pto_count, 0);
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	fx_fini(&f);
}

static void
test_discard_space(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_loss_timeout to;

	(void)state;
	fx_init(&f, true, false);
	send(&f, DPQ_PN_SPACE_INITIAL, 0, 0);
	send(&f, DPQ_PN_SPACE_INITIAL, 1, 1 * MS);
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 0, 2 * MS);
	assert_int_equal(f.cc.bytes_in_flight, 3 * MDS);
	/* Initial's PTO: last ack-eliciting (1 ms) + 999 ms */
	assert_int_equal(dpq_loss_deadline(&f.l), 1000 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, 999 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_NONE);
	assert_int_equal(f.l.pto_count, 0);
	dpq_loss_on_timeout(&f.l, &f.cc, 1000 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(to.space, DPQ_PN_SPACE_INITIAL);
	assert_int_equal(f.l.pto_count, 1);
	/* §6.4: Initial keys gone: its bytes leave the flight silently */
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_INITIAL, 1000 * MS), 0);
	assert_int_equal(f.cc.bytes_in_flight, MDS);
	assert_int_equal(f.seen.nlost + f.seen.nacked, 0);
	assert_int_equal(f.l.pto_count, 0);
	assert_int_equal(dpq_sentmap_count(&f.l.sp[0].sent), 0);
	/* only the Handshake PTO is left */
	assert_int_equal(dpq_loss_deadline(&f.l), 1001 * MS);
	/* the discarded space takes nothing more */
	{
		struct dpq_sent_pkt p = { .pn = 2, .bytes = 1 };

		assert_int_equal(dpq_loss_on_sent(&f.l, &f.cc,
				DPQ_PN_SPACE_INITIAL, &p, NULL, 0, 1000 * MS),
				-EINVAL);
	}
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_INITIAL, 0, 1, 1000 * MS,
			&info), 0);
	assert_int_equal(info.packets_acked, 0);
	/* twice is fine; the application space is never discarded */
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_INITIAL, 1000 * MS), 0);
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_APP, 1000 * MS), -EINVAL);
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_HANDSHAKE, 1000 * MS), 0);
	assert_int_equal(f.cc.bytes_in_flight, 0);
	assert_int_equal(dpq_loss_deadline(&f.l), DPQ_LOSS_NO_TIMER);
	fx_fini(&f);
}

static void
test_bad_acks(void **state)
{
	struct fx f;
	struct dpq_ack_range r[2];

	(void)state;
	fx_init(&f, true, true);
	/* RFC 9000 §13.1: nothing sent yet */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 0, 0, NULL),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	send(&f, DPQ_PN_SPACE_APP, 1, 0);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 2, 0, NULL),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
	/* malformed ranges */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 1, 0, 0, NULL), -EINVAL);
	r[0] = (struct dpq_ack_range){ 1, 1 };
	r[1] = (struct dpq_ack_range){ 0, 1 };	/* overlaps */
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 2,
			0, NULL, 0, &f.cb, NULL), -EINVAL);
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 0,
			0, NULL, 0, &f.cb, NULL), -EINVAL);
	/* nothing was touched */
	assert_int_equal(dpq_sentmap_count(&f.l.sp[DPQ_PN_SPACE_APP].sent), 2);
	assert_int_equal(f.l.sp[DPQ_PN_SPACE_APP].largest_acked, DPQ_PN_NONE);
	fx_fini(&f);
}

static void
test_ecn_ce(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_ecn_counts e = { .ect0 = 0, .ce = 1 };
	struct dpq_ack_range r = { 0, 0 };

	(void)state;
	fx_init(&f, true, true);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	send(&f, DPQ_PN_SPACE_APP, 1, 1 * MS);
	send(&f, DPQ_PN_SPACE_APP, 2, 2 * MS);
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, &r, 1,
			0, &e, 50 * MS, &f.cb, &info), 0);
	assert_true(info.ecn_ce);
	assert_int_equal(info.packets_lost, 0);
	assert_int_equal(f.cc.cwnd, 6000);	/* §7.1: halved */
	assert_int_equal(f.l.ecn.state, DPQ_ECN_TESTING);
	/* same CE count again (pn 1 arrived as ECT(0)): no new event */
	e.ect0 = 1;
	r = (struct dpq_ack_range){ 1, 1 };
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, &r, 1,
			0, &e, 51 * MS, &f.cb, &info), 0);
	assert_false(info.ecn_ce);
	assert_int_equal(f.cc.cwnd, 6000);
	/* counts that do not cover the marked packets acknowledged (pn 2
	 * acked, ECT(0)+CE unchanged): marks are lost on the path, ECN
	 * fails (RFC 9000 §13.4.2.1) and later CE counts are ignored */
	r = (struct dpq_ack_range){ 2, 2 };
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, &r, 1,
			0, &e, 52 * MS, &f.cb, &info), 0);
	assert_int_equal(f.l.ecn.state, DPQ_ECN_FAILED);
	assert_int_equal(dpq_loss_ecn_codepoint(&f.l), DPQ_ECN_CP_NOT_ECT);
	fx_fini(&f);
}

/* docs/fec.md §8: a packet the peer rebuilt from FEC is a congestion
 * event like a loss, dated by its send time, but stays in flight, is not
 * reported lost and is acknowledged normally afterwards. */
static void
test_fec_recovered(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	uint64_t flight;

	(void)state;
	fx_init(&f, true, true);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	send(&f, DPQ_PN_SPACE_APP, 1, 1 * MS);
	send(&f, DPQ_PN_SPACE_APP, 2, 2 * MS);
	flight = f.cc.bytes_in_flight;
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			1, 30 * MS), DPQ_LOSS_REC_CONGESTION);
	assert_int_equal(f.cc.cwnd, 6000);	/* halved, as for a loss */
	assert_int_equal(f.cc.bytes_in_flight, flight);
	assert_int_equal(f.seen.nlost, 0);
	assert_int_equal(f.l.stats.recovered, 1);
	/* Another in the same recovery period: no second reduction. */
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			2, 31 * MS), DPQ_LOSS_REC_CONGESTION);
	assert_int_equal(f.cc.cwnd, 6000);
	/* Unknown packet numbers and other spaces change nothing. */
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			9, 32 * MS), DPQ_LOSS_REC_UNKNOWN);
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc,
			DPQ_PN_SPACE_INITIAL, 1, 32 * MS), DPQ_LOSS_REC_UNKNOWN);
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc,
			DPQ_PN_SPACE_COUNT, 1, 32 * MS), DPQ_LOSS_REC_UNKNOWN);
	/* The ACK that follows acknowledges them: data not re-queued. */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 2, 40 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 3);
	assert_int_equal(info.packets_lost, 0);
	assert_int_equal(f.cc.bytes_in_flight, 0);
	/* Once acknowledged, a late report is ignored. */
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			1, 41 * MS), DPQ_LOSS_REC_UNKNOWN);
	assert_int_equal(f.l.stats.recovered, 2);
	fx_fini(&f);
}

/* A packet declared lost and then reported rebuilt: its loss reaction
 * stays (no spurious-loss undo when its ACK arrives). A raised packet
 * threshold lets a group's REPAIR arrive first. */
static void
test_fec_recovered_after_loss(void **state)
{
	struct dpq_loss_ack_info info;
	struct fx f;
	uint64_t pn, cwnd;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 6; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	/* 1..5 acked, 0 lost by packet threshold (3). */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 1, 5, 50 * MS, &info), 0);
	assert_int_equal(info.packets_lost, 1);
	cwnd = f.cc.cwnd;
	assert_int_equal(dpq_loss_on_recovered(&f.l, &f.cc, DPQ_PN_SPACE_APP,
			0, 51 * MS), DPQ_LOSS_REC_WAS_LOST);
	assert_int_equal(f.cc.cwnd, cwnd);	/* reacted once, at the loss */
	/* The ACK of 0 that follows: not spurious, nothing undone. */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 5, 52 * MS, &info), 0);
	assert_int_equal(info.packets_spurious, 0);
	assert_int_equal(f.l.stats.spurious, 0);
	assert_int_equal(f.cc.cwnd, cwnd);
	fx_fini(&f);

	fx_init(&f, true, true);
	dpq_loss_raise_pkt_threshold(&f.l, 10);
	dpq_loss_raise_pkt_threshold(&f.l, 4);		/* never lowers */
	assert_int_equal(f.l.pkt_threshold, 10);
	for (pn = 0; pn < 8; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS / 10);
	/* Within kGranularity of pn 0's send: only the packet threshold
	 * could condemn it, and 7 later packets are fewer than 10. */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 1, 7, 9 * MS / 10, &info),
			0);
	assert_int_equal(info.packets_lost, 0);
	dpq_loss_raise_pkt_threshold(&f.l, 1000);
	assert_int_equal(f.l.pkt_threshold, DPQ_LOSS_PACKET_THRESHOLD_MAX);
	fx_fini(&f);
}

/*
 * §7.6.2 persistent congestion. First RTT sample 100 ms at t = 100 ms
 * (pn 0), so the duration is (100 + 200 + 25) * 3 = 975 ms, give or take
 * the later samples. pn 1 at 200 ms and pn 2 at 210 ms, pn 3..5 at 3000,
 * 3100, 3200 ms, pn 6 at 3300 ms acked alone at 3400 ms: 1..5 are lost
 * (1..3 by packet threshold, 4 and 5 by time), spanning 3000 ms.
 */
static void
pc_scenario(struct fx *f, bool ack_pn2, bool first_sample_late,
		struct dpq_loss_ack_info *info)
{
	struct dpq_loss_ack_info tmp;

	if (!first_sample_late) {
		send(f, DPQ_PN_SPACE_APP, 0, 0);
		assert_int_equal(ack1(f, DPQ_PN_SPACE_APP, 0, 0, 100 * MS,
				&tmp), 0);
		assert_true(tmp.rtt_sampled);
	}
	send(f, DPQ_PN_SPACE_APP, 1, 200 * MS);
	send(f, DPQ_PN_SPACE_APP, 2, 210 * MS);
	if (ack_pn2) {
		/* pn 2 acked 50 ms later: pn 1 is not lost yet */
		assert_int_equal(ack1(f, DPQ_PN_SPACE_APP, 2, 2, 260 * MS,
				&tmp), 0);
		assert_int_equal(tmp.packets_lost, 0);
	}
	send(f, DPQ_PN_SPACE_APP, 3, 3000 * MS);
	send(f, DPQ_PN_SPACE_APP, 4, 3100 * MS);
	send(f, DPQ_PN_SPACE_APP, 5, 3200 * MS);
	send(f, DPQ_PN_SPACE_APP, 6, 3300 * MS);
	assert_int_equal(ack1(f, DPQ_PN_SPACE_APP, 6, 6, 3400 * MS, info), 0);
}

static void
test_persistent_congestion(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;

	(void)state;
	fx_init(&f, true, true);
	pc_scenario(&f, false, false, &info);
	assert_int_equal(info.packets_lost, 5);
	assert_true(info.persistent_congestion);
	/* §7.6.2: collapsed to 2 * MDS; then, as in Appendix B (losses
	 * before acks, recovery reset), the acked pn 6 grows it in slow
	 * start by its 1200 bytes */
	assert_int_equal(f.cc.cwnd, 3 * MDS);
	assert_true(f.l.rtt.reset_min);		/* §5.2 */
	fx_fini(&f);
}

static void
test_persistent_congestion_cut_by_ack(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;

	(void)state;
	/* pn 2 (between pn 1 and pn 3) was acknowledged: the lost run is
	 * 3..5 (200 ms), not 1..5 */
	fx_init(&f, true, true);
	pc_scenario(&f, true, false, &info);
	assert_int_equal(info.packets_lost, 4);
	assert_int_equal(f.seen.lost[DPQ_PN_SPACE_APP][1], 1);
	assert_false(info.persistent_congestion);
	assert_true(f.cc.cwnd > 2 * MDS);
	fx_fini(&f);
}

static void
test_persistent_congestion_needs_sample(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;

	(void)state;
	/* no RTT sample before the losses were sent: no persistent
	 * congestion, however long the period */
	fx_init(&f, true, true);
	pc_scenario(&f, false, true, &info);
	assert_int_equal(info.packets_lost, 5);
	assert_false(info.persistent_congestion);
	fx_fini(&f);
}

static void
test_persistent_congestion_short(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	uint64_t pn;

	(void)state;
	/* lost packets spanning less than the duration */
	fx_init(&f, true, true);
	send(&f, DPQ_PN_SPACE_APP, 0, 0);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 0, 100 * MS, &info), 0);
	for (pn = 1; pn <= 5; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, (100 + 150 * pn) * MS);
	/* 1..4 lost over 450 ms: below the ~975 ms duration */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 5, 900 * MS, &info), 0);
	assert_int_equal(info.packets_lost, 4);
	assert_false(info.persistent_congestion);
	fx_fini(&f);
}


/* §6.2.4, A.9: the PTO names every space with data in flight, and the
 * data of in-flight packets can be requeued for the probes without any
 * loss or congestion signal. */
static void
test_probe_data(void **state)
{
	struct fx f;
	struct dpq_loss_timeout to;
	struct dpq_loss_ack_info info;
	uint64_t cwnd;

	(void)state;
	fx_init(&f, true, false);
	send(&f, DPQ_PN_SPACE_INITIAL, 0, 0);
	send(&f, DPQ_PN_SPACE_INITIAL, 1, 0);
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 0, 1 * MS);
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 1, 1 * MS);
	send(&f, DPQ_PN_SPACE_HANDSHAKE, 2, 1 * MS);
	cwnd = f.cc.cwnd;
	/* Initial's PTO expires first (999 ms); Handshake has data too */
	dpq_loss_on_timeout(&f.l, &f.cc, 999 * MS, &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(to.space, DPQ_PN_SPACE_INITIAL);
	assert_int_equal(to.probes, 2);
	assert_int_equal(to.also, 1u << DPQ_PN_SPACE_HANDSHAKE);
	/* all of the Initial space's data, two of the Handshake's */
	assert_int_equal(dpq_loss_requeue(&f.l, DPQ_PN_SPACE_INITIAL,
			UINT32_MAX, &f.cb), 2);
	assert_int_equal(dpq_loss_requeue(&f.l, DPQ_PN_SPACE_HANDSHAKE, 2,
			&f.cb), 2);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_INITIAL][0], 1);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_INITIAL][1], 1);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_HANDSHAKE][0], 1);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_HANDSHAKE][1], 1);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_HANDSHAKE][2], 0);
	assert_int_equal(f.l.stats.requeued, 4);
	/* past the two oldest: only the third, then nothing more */
	assert_int_equal(dpq_loss_requeue_from(&f.l, DPQ_PN_SPACE_HANDSHAKE,
			2, 1, &f.cb), 1);
	assert_int_equal(dpq_loss_requeue_from(&f.l, DPQ_PN_SPACE_HANDSHAKE,
			3, 1, &f.cb), 0);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_HANDSHAKE][0], 1);
	assert_int_equal(f.seen.requeued[DPQ_PN_SPACE_HANDSHAKE][2], 1);
	assert_int_equal(f.l.stats.requeued, 5);
	/* still in flight, nothing lost, the window untouched */
	assert_int_equal(f.seen.nlost, 0);
	assert_int_equal(f.cc.bytes_in_flight, 5 * MDS);
	assert_int_equal(f.cc.cwnd, cwnd);
	assert_int_equal(dpq_loss_ack_eliciting_in_flight(&f.l), 5);
	/* the original is acknowledged later: released once */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_INITIAL, 0, 1, 1000 * MS,
			&info), 0);
	assert_int_equal(info.packets_acked, 2);
	assert_int_equal(f.seen.acked[DPQ_PN_SPACE_INITIAL][0], 1);
	/* no application PTO before confirmation: not in `also` */
	send(&f, DPQ_PN_SPACE_APP, 0, 1000 * MS);
	dpq_loss_on_timeout(&f.l, &f.cc, dpq_loss_deadline(&f.l), &f.cb, &to);
	assert_int_equal(to.action, DPQ_LOSS_ACT_PTO);
	assert_int_equal(to.space, DPQ_PN_SPACE_HANDSHAKE);
	assert_int_equal(to.also, 0);
	/* a discarded space has nothing to requeue */
	assert_int_equal(dpq_loss_discard_space(&f.l, &f.cc,
			DPQ_PN_SPACE_INITIAL, 3000 * MS), 0);
	assert_int_equal(dpq_loss_requeue(&f.l, DPQ_PN_SPACE_INITIAL,
			UINT32_MAX, &f.cb), 0);
	fx_fini(&f);
}

/* Undo needs every loss of the episode to be spurious. */
static void
test_spurious_partial(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_ack_range r[2];
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 8; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	/* 5..7 acked: 0..4 lost by the packet threshold (7 - pn >= 3) */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 5, 7, 100 * MS, &info), 0);
	assert_int_equal(info.packets_lost, 5);
	assert_int_equal(f.cc.cwnd, 6000);
	assert_int_equal(f.l.episode_lost, 5);
	/* 1..3 turn up (reordered), 0 and 4 never: no undo */
	r[0] = (struct dpq_ack_range){ 1, 3 };
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 1,
			0, NULL, 110 * MS, &f.cb, &info), 0);
	assert_int_equal(info.packets_spurious, 3);
	assert_false(info.undone);
	assert_int_equal(f.cc.cwnd, 6000);
	assert_int_equal(f.l.episode_spurious, 3);
	/* reordering of up to 6 packets seen: threshold 7 */
	assert_int_equal(f.l.pkt_threshold, 7);
	/* then 0 and 4 too: all five were spurious, undo */
	r[0] = (struct dpq_ack_range){ 4, 4 };
	r[1] = (struct dpq_ack_range){ 0, 0 };
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, r, 2,
			0, NULL, 120 * MS, &f.cb, &info), 0);
	assert_true(info.undone);
	assert_int_equal(f.cc.cwnd, 12000);
	assert_int_equal(f.cc.ssthresh, UINT64_MAX);
	assert_int_equal(f.l.stats.undos, 1);
	fx_fini(&f);
}

/* An ECN-CE episode is real congestion: never undone. */
static void
test_spurious_not_after_ce(void **state)
{
	struct fx f;
	struct dpq_loss_ack_info info;
	struct dpq_ecn_counts e = { .ect0 = 0, .ce = 1 };
	struct dpq_ack_range r = { 4, 4 };
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 5; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	/* pn 4 acked with a CE mark: the episode starts with CE, and
	 * pn 0 and 1 are lost in it by the packet threshold */
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, &r, 1,
			0, &e, 50 * MS, &f.cb, &info), 0);
	assert_true(info.ecn_ce);
	assert_int_equal(info.packets_lost, 2);
	assert_int_equal(f.cc.cwnd, 6000);
	r = (struct dpq_ack_range){ 0, 1 };
	e.ect0 = 2;
	assert_int_equal(dpq_loss_on_ack(&f.l, &f.cc, DPQ_PN_SPACE_APP, &r, 1,
			0, &e, 60 * MS, &f.cb, &info), 0);
	assert_int_equal(info.packets_spurious, 2);
	assert_false(info.undone);
	assert_int_equal(f.cc.cwnd, 6000);
	assert_int_equal(f.cc.spurious_undos, 0);
	fx_fini(&f);
}

/* Lost packets are forgotten after the persistent-congestion duration,
 * and at once when the map is full. */
static void
test_lost_kept_then_forgotten(void **state)
{
	struct fx f;
	struct dpq_loss_conf conf = { .is_server = true, .max_packets = 8 };
	struct dpq_cc_conf ccc = { .max_datagram_size = MDS };
	struct dpq_mem m = DPQ_MEM_LIBC;
	struct dpq_loss_ack_info info;
	uint64_t pn;

	(void)state;
	fx_init(&f, true, true);
	for (pn = 0; pn < 5; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 4, 4, 100 * MS, &info), 0);
	assert_int_equal(info.packets_lost, 2);		/* 0 and 1 */
	assert_int_equal(dpq_sentmap_count(&f.l.sp[DPQ_PN_SPACE_APP].sent), 4);
	/* 3 * (100 + 4 * 50 + 25) ms = 975 ms later they are gone: an ACK
	 * of them at 2 s reports nothing */
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 0, 1, 2000 * MS, &info), 0);
	assert_int_equal(info.packets_acked, 0);
	assert_int_equal(f.l.stats.spurious, 0);
	assert_int_equal(f.seen.acked[DPQ_PN_SPACE_APP][0], 0);
	fx_fini(&f);

	/* a map of 8 packets, 2 of them kept after their loss: the ninth
	 * send purges them instead of failing */
	memset(&f, 0, sizeof(f));
	assert_int_equal(dpq_loss_init(&f.l, &conf, &m), 0);
	assert_int_equal(dpq_cc_init(&f.cc, &dpq_cc_newreno_ops, &ccc, 0), 0);
	f.cb.on_acked = on_acked;
	f.cb.on_lost = on_lost;
	f.cb.ctx = &f.seen;
	dpq_loss_set_handshake_confirmed(&f.l, 0);
	for (pn = 0; pn < 5; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, pn * MS);
	assert_int_equal(ack1(&f, DPQ_PN_SPACE_APP, 4, 4, 100 * MS, &info), 0);
	for (pn = 5; pn < 11; pn++)
		send(&f, DPQ_PN_SPACE_APP, pn, 100 * MS + pn);
	assert_int_equal(dpq_sentmap_count(&f.l.sp[DPQ_PN_SPACE_APP].sent), 8);
	fx_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packet_threshold),
		cmocka_unit_test(test_time_threshold),
		cmocka_unit_test(test_time_slack),
		cmocka_unit_test(test_rtt_sampling_rules),
		cmocka_unit_test(test_pto_and_backoff),
		cmocka_unit_test(test_pto_spaces),
		cmocka_unit_test(test_anti_deadlock),
		cmocka_unit_test(test_discard_space),
		cmocka_unit_test(test_bad_acks),
		cmocka_unit_test(test_ecn_ce),
		cmocka_unit_test(test_persistent_congestion),
		cmocka_unit_test(test_persistent_congestion_cut_by_ack),
		cmocka_unit_test(test_persistent_congestion_needs_sample),
		cmocka_unit_test(test_persistent_congestion_short),
		cmocka_unit_test(test_probe_data),
		cmocka_unit_test(test_spurious_partial),
		cmocka_unit_test(test_spurious_not_after_ce),
		cmocka_unit_test(test_lost_kept_then_forgotten),
		cmocka_unit_test(test_fec_recovered),
		cmocka_unit_test(test_fec_recovered_after_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
