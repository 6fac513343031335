/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_recovery_sim.c: randomized property test of ackr + sentmap + loss
 * + NewReno together. A sender and a receiver exchange packets through a
 * simulated link with random delay (so reordering), loss and duplication
 * in both directions, in virtual time, for many seeds. ACK frames go
 * through the real frame codec, and each side's ACK frames are
 * acknowledged in turn so the receiver forgets ranges (RFC 9000 §13.2.4).
 *
 * Properties checked:
 *   - every packet the sender sends is reported exactly once, as
 *     acknowledged or as lost, never twice; a packet reported lost may
 *     later be reported acknowledged, flagged DPQ_SENT_LOST (a spurious
 *     loss), and only then;
 *   - a packet reported acknowledged really reached the receiver;
 *   - duplicates delivered by the link are detected (RFC 9000 §12.3);
 *   - the simulation never stalls (some timer or packet is always
 *     pending while packets are outstanding) and finishes;
 *   - at the end nothing is in flight for congestion control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/ackr.h"
#include "dataplane/engine/cc_newreno.h"
#include "dataplane/engine/loss.h"

#define MS		UINT64_C(1000)
#define MDS		1200
#define NDATA		1500		/* data packets per run */
#define MAXPN		(NDATA * 8)	/* data + probes, either side */
#define QCAP		(1 << 15)
#define ACK_EXP		3
#define SEEDS		40

struct rng {
	uint64_t s;
};

static uint64_t
rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

/* true with probability permille / 1000 */
static bool
chance(struct rng *r, unsigned int permille)
{
	return rnd(r) % 1000 < permille;
}

struct pkt {
	uint64_t at;		/* arrival time */
	uint64_t pn;
	int to_receiver;
	size_t len;		/* ACK frame bytes, 0 if none */
	uint8_t ecn;
	uint8_t frame[1200];
};

struct sim {
	struct rng rng;
	uint64_t now;
	/* link */
	struct pkt *q;
	size_t nq;
	unsigned int loss, dup, ce;	/* permille */
	uint64_t delay, jitter;		/* us */
	/* sender */
	struct dpq_loss l;
	struct dpq_cc cc;
	struct dpq_ackr s_ackr;		/* receiver's (ACK-only) packets */
	struct dpq_ack_range s_ackr_r[DPQ_ACKR_MAX_RANGES];
	uint64_t s_next;
	uint8_t *state;			/* 0 out, 1 acked, 2 lost */
	unsigned long n_acked, n_lost, n_pto, n_spurious;
	/* receiver */
	struct dpq_ackr r_ackr;
	struct dpq_ack_range r_ackr_r[DPQ_ACKR_MAX_RANGES];
	uint64_t r_next;
	uint64_t *r_ack_largest;	/* per receiver pn: its ACK's largest */
	uint8_t *received;
	unsigned long n_dup;
};

static void
enqueue(struct sim *s, const struct pkt *p)
{
	unsigned int copies = 1, i;

	if (chance(&s->rng, s->loss))
		return;
	if (chance(&s->rng, s->dup))
		copies = 2;
	for (i = 0; i < copies; i++) {
		assert_true(s->nq < QCAP);
		s->q[s->nq] = *p;
		s->q[s->nq].at = s->now + s->delay +
			(s->jitter != 0 ? rnd(&s->rng) % s->jitter : 0);
		s->nq++;
	}
}

static void
s_on_acked(void *ctx, enum dpq_pn_space sp, const struct dpq_sent_pkt *p)
{
	struct sim *s = ctx;
	const struct dpq_sent_rec *r = dpq_sent_pkt_recs(p);
	uint16_t i;

	assert_int_equal(sp, DPQ_PN_SPACE_APP);
	assert_true(p->pn < s->s_next);
	assert_true(s->received[p->pn]);	/* no false ack */
	if (p->flags & DPQ_SENT_LOST) {
		/* spurious: reported lost before, acked once after */
		assert_int_equal(s->state[p->pn], 2);
		s->state[p->pn] = 3;
		s->n_spurious++;
	} else {
		assert_int_equal(s->state[p->pn], 0);	/* exactly once */
		s->state[p->pn] = 1;
		s->n_acked++;
	}
	/* our ACK frame was received: stop acking below it (§13.2.4) */
	for (i = 0; i < p->nrec; i++)
		if (r[i].kind == DPQ_SENT_REC_ACK)
			dpq_ackr_on_ack_acked(&s->s_ackr, r[i].ack.largest);
}

static void
s_on_lost(void *ctx, enum dpq_pn_space sp, const struct dpq_sent_pkt *p)
{
	struct sim *s = ctx;

	assert_int_equal(sp, DPQ_PN_SPACE_APP);
	assert_true(p->pn < s->s_next);
	assert_int_equal(s->state[p->pn], 0);	/* exactly once */
	s->state[p->pn] = 2;
	s->n_lost++;
}

static struct dpq_loss_cb
s_cb(struct sim *s)
{
	struct dpq_loss_cb cb = { .on_acked = s_on_acked,
		.on_lost = s_on_lost, .ctx = s };

	return cb;
}

/* Sender: one data (or probe) packet, with an ACK of the receiver's
 * packets when there is something new to acknowledge. */
static void
s_send(struct sim *s, bool probe)
{
	struct dpq_sent_rec recs[2];
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES];
	bool ect = dpq_loss_ecn_codepoint(&s->l) == DPQ_ECN_CP_ECT0;
	struct dpq_sent_pkt sp = {
		.pn = s->s_next,
		.bytes = MDS,
		.flags = DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT |
			(probe ? DPQ_SENT_PROBE : 0) |
			(ect ? DPQ_SENT_ECT0 : 0),
	};
	struct pkt p = { .pn = s->s_next, .to_receiver = 1 };
	size_t nrec = 0, n;
	uint8_t *end;

	assert_true(s->s_next < MAXPN);
	recs[nrec++] = (struct dpq_sent_rec){
		.kind = DPQ_SENT_REC_STREAM,
		.len = 1000,
		.stream = { .id = 0, .off = s->s_next * 1000 },
	};
	if (dpq_ackr_has_new(&s->s_ackr)) {
		n = dpq_ackr_ranges(&s->s_ackr, r, DPQ_ACKR_MAX_RANGES);
		end = dpq_frame_encode_ack(p.frame, p.frame + sizeof(p.frame),
				r, n, dpq_ackr_ack_delay(&s->s_ackr, s->now,
				ACK_EXP), NULL);
		assert_non_null(end);
		p.len = (size_t)(end - p.frame);
		recs[nrec++] = (struct dpq_sent_rec){
			.kind = DPQ_SENT_REC_ACK,
			.ack = { .largest = r[0].largest },
		};
		dpq_ackr_on_ack_sent(&s->s_ackr);
	}
	assert_int_equal(dpq_loss_on_sent(&s->l, &s->cc, DPQ_PN_SPACE_APP,
			&sp, recs, nrec, s->now), 0);
	s->s_next++;
	/* the link marks some ECT(0) packets CE */
	p.ecn = !ect ? DPQ_ECN_NOT_ECT :
		chance(&s->rng, s->ce) ? DPQ_ECN_CE : DPQ_ECN_ECT0;
	enqueue(s, &p);
}

/* Receiver: an ACK-only packet. */
static void
r_send_ack(struct sim *s)
{
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES];
	struct pkt p = { .pn = s->r_next, .to_receiver = 0 };
	size_t n;
	uint8_t *end;

	n = dpq_ackr_ranges(&s->r_ackr, r, DPQ_ACKR_MAX_RANGES);
	dpq_ackr_on_ack_sent(&s->r_ackr);
	if (n == 0)
		return;
	assert_true(s->r_next < MAXPN);
	end = dpq_frame_encode_ack(p.frame, p.frame + sizeof(p.frame), r, n,
			dpq_ackr_ack_delay(&s->r_ackr, s->now, ACK_EXP),
			dpq_ackr_ecn(&s->r_ackr));
	assert_non_null(end);
	p.len = (size_t)(end - p.frame);
	s->r_ack_largest[s->r_next] = r[0].largest;
	s->r_next++;
	enqueue(s, &p);
}

static void
r_receive(struct sim *s, const struct pkt *p)
{
	struct dpq_frame f;
	struct dpq_ack_iter it;
	struct dpq_ack_range r;
	uint64_t pn;

	if (dpq_ackr_is_duplicate(&s->r_ackr, p->pn)) {
		s->n_dup++;
		return;
	}
	/* the sender's ACK of our ACK-only packets */
	if (p->len != 0) {
		assert_int_equal(dpq_frame_decode(p->frame, p->frame + p->len,
				&f), (ssize_t)p->len);
		dpq_ack_iter_init(&it, &f.ack);
		while (dpq_ack_iter_next(&it, &r))
			for (pn = r.smallest; pn <= r.largest; pn++)
				dpq_ackr_on_ack_acked(&s->r_ackr,
						s->r_ack_largest[pn]);
	}
	assert_int_equal(dpq_ackr_record(&s->r_ackr, p->pn, true,
			(enum dpq_ecn)p->ecn, s->now), 0);
	s->received[p->pn] = 1;
}

static void
s_receive(struct sim *s, const struct pkt *p)
{
	struct dpq_frame f;
	struct dpq_ack_range r[DPQ_LOSS_MAX_ACK_RANGES];
	struct dpq_loss_cb cb = s_cb(s);
	size_t n;

	if (dpq_ackr_record(&s->s_ackr, p->pn, false, DPQ_ECN_NOT_ECT,
			s->now) != 0)
		return;		/* duplicate */
	assert_int_equal(dpq_frame_decode(p->frame, p->frame + p->len, &f),
			(ssize_t)p->len);
	assert_true(f.type == DPQ_FT_ACK || f.type == DPQ_FT_ACK_ECN);
	n = dpq_loss_ack_ranges(&f.ack, r, DPQ_LOSS_MAX_ACK_RANGES);
	assert_true(n >= 1);
	assert_int_equal(dpq_loss_on_ack(&s->l, &s->cc, DPQ_PN_SPACE_APP, r, n,
			dpq_loss_ack_delay_us(f.ack.ack_delay, ACK_EXP),
			f.type == DPQ_FT_ACK_ECN ? &f.ack.ecn : NULL, s->now,
			&cb, NULL), 0);
}

/* Totals over all seeds, printed so a log shows the link did its job. */
static unsigned long tot_sent, tot_acked, tot_lost, tot_dup, tot_pto;
static unsigned long tot_spurious, tot_undo, tot_ce;

static void
run(uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct dpq_loss_conf lc = { .is_server = true,
		.max_ack_delay = 25 * MS, .ecn = true };
	struct dpq_cc_conf ccc = { .max_datagram_size = MDS };
	struct dpq_mem m = DPQ_MEM_LIBC;
	struct dpq_loss_cb cb;
	struct dpq_loss_timeout to;
	uint64_t next, t, pn;
	size_t i, best;
	unsigned long steps = 0;
	uint32_t k;

	assert_non_null(s);
	s->rng.s = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
	s->q = calloc(QCAP, sizeof(*s->q));
	s->state = calloc(MAXPN, 1);
	s->received = calloc(MAXPN, 1);
	s->r_ack_largest = calloc(MAXPN, sizeof(uint64_t));
	assert_non_null(s->q);
	assert_non_null(s->state);
	assert_non_null(s->received);
	assert_non_null(s->r_ack_largest);
	s->loss = (unsigned int)(rnd(&s->rng) % 250);	/* up to 25% */
	s->dup = (unsigned int)(rnd(&s->rng) % 30);
	s->ce = (unsigned int)(rnd(&s->rng) % 10);
	s->delay = (5 + rnd(&s->rng) % 60) * MS;
	s->jitter = (rnd(&s->rng) % 40) * MS;	/* reordering */
	s->now = 0;
	cb = s_cb(s);

	assert_int_equal(dpq_loss_init(&s->l, &lc, &m), 0);
	dpq_loss_set_handshake_confirmed(&s->l, 0);
	assert_int_equal(dpq_cc_init(&s->cc, &dpq_cc_newreno_ops, &ccc, 0), 0);
	dpq_ackr_init(&s->s_ackr, 25 * MS, s->s_ackr_r, DPQ_ACKR_MAX_RANGES);
	dpq_ackr_init(&s->r_ackr, 25 * MS, s->r_ackr_r, DPQ_ACKR_MAX_RANGES);

	for (;;) {
		/* sender: as much new data as the window allows */
		while (s->s_next < NDATA &&
		       dpq_cc_available(&s->cc) >= MDS)
			s_send(s, false);
		if (s->s_next >= NDATA &&
		    s->l.sp[DPQ_PN_SPACE_APP].in_flight_bytes == 0)
			break;

		/* the earliest of: a packet arriving, the loss timer, the
		 * receiver's ACK deadline */
		next = UINT64_MAX;
		best = SIZE_MAX;
		for (i = 0; i < s->nq; i++) {
			if (s->q[i].at < next) {
				next = s->q[i].at;
				best = i;
			}
		}
		t = dpq_loss_deadline(&s->l);
		if (t < next)
			next = t;
		t = dpq_ackr_deadline(&s->r_ackr);
		if (t < next)
			next = t;
		/* progress: something is always pending */
		assert_true(next != UINT64_MAX);
		if (next > s->now)
			s->now = next;
		assert_true(s->now < 3600 * 1000 * MS);
		assert_true(++steps < 10000000);

		if (dpq_loss_deadline(&s->l) <= s->now) {
			dpq_loss_on_timeout(&s->l, &s->cc, s->now, &cb, &to);
			if (to.action == DPQ_LOSS_ACT_PTO) {
				s->n_pto++;
				for (k = 0; k < to.probes; k++)
					s_send(s, true);
			}
			assert_true(to.action != DPQ_LOSS_ACT_ANTI_DEADLOCK);
			continue;
		}
		if (dpq_ackr_ack_due(&s->r_ackr, s->now)) {
			r_send_ack(s);
			continue;
		}
		if (best != SIZE_MAX && s->q[best].at <= s->now) {
			struct pkt p = s->q[best];

			s->q[best] = s->q[--s->nq];
			if (p.to_receiver)
				r_receive(s, &p);
			else
				s_receive(s, &p);
		}
	}

	/* every packet sent: exactly one outcome */
	for (pn = 0; pn < s->s_next; pn++)
		assert_true(s->state[pn] >= 1 && s->state[pn] <= 3);
	assert_int_equal(s->n_acked + s->n_lost, s->s_next);
	assert_true(s->n_spurious <= s->n_lost);
	assert_int_equal(s->l.stats.spurious, s->n_spurious);
	assert_true(s->cc.spurious_undos <= s->cc.congestion_events);
	/* RFC 9000 §13.4.2: a path that keeps the marks and a receiver
	 * that counts them validate ECN whatever the loss, reordering and
	 * duplication; CE marks become congestion events */
	assert_int_equal(s->l.ecn.state, DPQ_ECN_CAPABLE);
	tot_ce += s->l.ecn.ce_events;
	assert_int_equal(s->cc.bytes_in_flight, 0);
	assert_int_equal(s->l.sp[DPQ_PN_SPACE_APP].in_flight_bytes, 0);
	assert_int_equal(dpq_loss_ack_eliciting_in_flight(&s->l), 0);
	assert_true(s->n_acked > 0);
	if (s->loss == 0 && s->dup == 0)
		assert_int_equal(s->n_dup, 0);

	tot_sent += s->s_next;
	tot_acked += s->n_acked;
	tot_lost += s->n_lost;
	tot_spurious += s->n_spurious;
	tot_undo += s->cc.spurious_undos;
	tot_dup += s->n_dup;
	tot_pto += s->n_pto;

	dpq_loss_destroy(&s->l);
	free(s->q);
	free(s->state);
	free(s->received);
	free(s->r_ack_largest);
	free(s);
}

static void
test_random_links(void **state)
{
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= SEEDS; seed++)
		run(seed);
	print_message("%d seeds: %lu sent, %lu acked, %lu lost (%lu of them "
			"spurious, %lu undos), %lu duplicates dropped, "
			"%lu PTOs, %lu ECN-CE events\n", SEEDS, tot_sent,
			tot_acked, tot_lost, tot_spurious, tot_undo, tot_dup,
			tot_pto, tot_ce);
	/* the links really lost, duplicated and timed out */
	assert_true(tot_lost > 0);
	assert_true(tot_dup > 0);
	assert_true(tot_pto > 0);
	/* jitter reorders: some losses are false alarms, some undone */
	assert_true(tot_spurious > 0);
	assert_true(tot_undo > 0);
	assert_true(tot_ce > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
