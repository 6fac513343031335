/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fec.c: the XOR-FEC sender and receiver state machines and the
 * policy (dataplane/fec/fec.h), without a connection. A simulated sender
 * builds packets in bursts the way the connection does (a REPAIR frame
 * right after each group's last member, the XOR pass per burst), a loss
 * pattern drops some, and a receiver accumulates and rebuilds. Checked:
 * a single loss anywhere in a group is rebuilt byte for byte; two losses
 * are not (and nothing wrong is produced); a lost REPAIR costs only its
 * own group (the next is predicted); a lost announcement; a tail group
 * closed early; a member arriving after its REPAIR; a skipped packet
 * number; group sizes changing between groups; allocation failure;
 * report order; policy parsing; the loss meter and adaptive group size.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/fec/fec.h"
#include "tests/engine/engine_test.h"

#define CAP	1400
#define MAXPKT	600

struct sim_pkt {
	uint64_t pn;
	bool repair;		/* carries a REPAIR frame (not a member) */
	bool member;
	uint16_t len;
	uint8_t payload[CAP];
};

struct sim {
	struct sim_pkt pkts[MAXPKT];
	unsigned int n;
	/* config */
	unsigned int burst;
	uint32_t (*k_of)(unsigned int group_no);
	bool skip_pn_at[MAXPKT];	/* sender skips a pn before pkt i */
	bool small;			/* short payloads only */
	/* receiver results */
	bool recovered[MAXPKT];
	unsigned int n_recovered, bad;
	struct sim_pkt *by_pn[MAXPKT * 2];
};

static struct test_rng rng = { 0xfec };
static const struct dpq_mem libc_mem = DPQ_MEM_LIBC;

static uint32_t
k8(unsigned int g)
{
	(void)g;
	return 8;
}

static uint32_t
k_varying(unsigned int g)
{
	static const uint32_t ks[] = { 4, 16, 2, 7, 64, 5 };

	return ks[g % 6];
}

/* Build npkts packets (members and repairs) in bursts. */
static void
sim_send(struct sim *s, struct dpq_fec_tx *tx, unsigned int npkts)
{
	struct dpq_fec_seg segs[64];
	unsigned int nseg = 0, groups = 0, ndata = 0, i;
	uint64_t pn = 100;

	memset(s->by_pn, 0, sizeof(s->by_pn));
	assert_int_equal(dpq_fec_tx_want(tx, s->k_of(groups)), 0);
	for (i = 0; ndata < npkts || dpq_fec_tx_frame_due(tx); i++) {
		struct sim_pkt *p = &s->pkts[s->n++];

		assert_true(s->n <= MAXPKT);
		if (s->skip_pn_at[i])
			pn++;
		p->pn = pn++;
		dpq_fec_tx_begin_packet(tx, p->pn);
		p->repair = dpq_fec_tx_frame_due(tx);
		if (p->repair) {
			uint8_t *data, *q;
			uint16_t dl;

			q = dpq_fec_tx_write_frame(tx, p->payload,
					p->payload + CAP, p->pn,
					s->k_of(++groups), &data, &dl);
			assert_non_null(q);
			p->len = (uint16_t)(q - p->payload);
			segs[nseg++] = (struct dpq_fec_seg){
				.repair = data, .len = dl };
		} else {
			size_t room = CAP - dpq_fec_tx_reserve(tx);

			p->len = (uint16_t)(1 + test_rng_next(&rng) %
					(s->small ? 60 : room));
			test_rng_fill(&rng, p->payload, p->len);
		}
		p->member = dpq_fec_tx_on_packet(tx, p->pn, p->len, true);
		assert_false(p->member && p->repair);
		if (p->member)
			segs[nseg++] = (struct dpq_fec_seg){
				.payload = p->payload, .len = p->len };
		s->by_pn[p->pn - 100] = p;
		/* End of the data: close the tail group. */
		if (!p->repair && ++ndata == npkts)
			dpq_fec_tx_close(tx);
		if (nseg >= 60 || (i + 1) % s->burst == 0) {
			dpq_fec_tx_pass(tx, segs, nseg);
			nseg = 0;
		}
	}
	dpq_fec_tx_pass(tx, segs, nseg);
}

static void
on_rec(void *ctx, uint64_t pn, const uint8_t *payload, size_t len)
{
	struct sim *s = ctx;
	struct sim_pkt *p = pn >= 100 && pn - 100 < MAXPKT * 2 ?
		s->by_pn[pn - 100] : NULL;

	if (p == NULL || !p->member || p->len != len ||
	    memcmp(p->payload, payload, len) != 0 ||
	    s->recovered[p - s->pkts]) {
		s->bad++;
		return;
	}
	s->recovered[p - s->pkts] = true;
	s->n_recovered++;
}

/* Deliver the packets in order(or as order[] says), dropping lost[]. */
static void
sim_recv(struct sim *s, struct dpq_fec_rx *rx, const bool *lost,
		const unsigned int *order)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		struct sim_pkt *p = &s->pkts[order ? order[i] : i];

		if (lost[p - s->pkts])
			continue;
		if (p->repair) {
			struct dpq_fec_repair r;

			assert_int_equal(dpq_fec_repair_decode(p->payload,
					p->payload + p->len, &r), p->len);
			assert_int_equal(dpq_fec_rx_on_repair(rx, &r), 0);
		} else {
			dpq_fec_rx_on_packet(rx, p->pn, p->payload, p->len);
		}
		if (i % 5 == 4)
			dpq_fec_rx_flush(rx);
	}
	dpq_fec_rx_flush(rx);
}

static struct sim *
sim_new(void)
{
	struct sim *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->burst = 7;
	s->k_of = k8;
	return s;
}

static void
pair_init(struct sim *s, struct dpq_fec_tx *tx, struct dpq_fec_rx *rx)
{
	dpq_fec_tx_init(tx, &libc_mem, CAP);
	dpq_fec_rx_init(rx, &libc_mem, CAP, 64, on_rec, s);
}

static void
pair_free(struct dpq_fec_tx *tx, struct dpq_fec_rx *rx)
{
	dpq_fec_tx_destroy(tx);
	dpq_fec_rx_destroy(rx);
}

/* Index of the k-th member (0-based) of group g in send order. */
static unsigned int
member_at(const struct sim *s, unsigned int g, unsigned int k)
{
	unsigned int i, grp = 0, m = 0;
	bool seen_announce = false;

	for (i = 0; i < s->n; i++) {
		if (s->pkts[i].repair) {
			if (seen_announce)
				grp++;
			seen_announce = true;
			m = 0;
			continue;
		}
		if (s->pkts[i].member && grp == g && m++ == k)
			return i;
	}
	fail_msg("no member %u of group %u", k, g);
	return 0;
}

/* The REPAIR packet of group g (the announcement is group -1). */
static unsigned int
repair_of(const struct sim *s, int g)
{
	unsigned int i;
	int grp = -1;

	for (i = 0; i < s->n; i++)
		if (s->pkts[i].repair && grp++ == g)
			return i;
	fail_msg("no repair of group %d", g);
	return 0;
}

static void
test_single_loss_per_group(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct sim *s = sim_new();
	static bool lost[MAXPKT];
	unsigned int g;

	(void)state;
	pair_init(s, &tx, &rx);
	sim_send(s, &tx, 8 * 20);	/* 20 full groups of 8 */
	assert_int_equal(tx.stats.groups, 20);
	assert_int_equal(tx.stats.announces, 1);
	assert_true(s->pkts[0].repair);	/* the announcement goes first */
	memset(lost, 0, sizeof(lost));
	/* One loss per group, at every position in turn. */
	for (g = 0; g < 20; g++)
		lost[member_at(s, g, g % 8)] = true;
	sim_recv(s, &rx, lost, NULL);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->n_recovered, 20);
	assert_int_equal(rx.stats.recovered, 20);
	for (g = 0; g < 20; g++)
		assert_true(s->recovered[member_at(s, g, g % 8)]);
	pair_free(&tx, &rx);
	free(s);
}

static void
test_double_loss_and_lost_repair(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct sim *s = sim_new();
	static bool lost[MAXPKT];

	(void)state;
	pair_init(s, &tx, &rx);
	sim_send(s, &tx, 8 * 6);
	memset(lost, 0, sizeof(lost));
	/* Group 0: two losses (nothing can be rebuilt). */
	lost[member_at(s, 0, 1)] = true;
	lost[member_at(s, 0, 6)] = true;
	/* Group 1 loses a member, and group 1's REPAIR is lost too. */
	lost[member_at(s, 1, 3)] = true;
	lost[repair_of(s, 1)] = true;
	/* Group 2 was announced only by that lost REPAIR: predicted. */
	lost[member_at(s, 2, 0)] = true;
	/* Group 3 fine, group 4 loses its last member. */
	lost[member_at(s, 4, 7)] = true;
	sim_recv(s, &rx, lost, NULL);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->n_recovered, 2);
	assert_true(s->recovered[member_at(s, 2, 0)]);
	assert_true(s->recovered[member_at(s, 4, 7)]);
	assert_int_equal(rx.stats.predicted, 1);
	assert_true(rx.stats.complete >= 2);	/* groups 3 and 5 */
	pair_free(&tx, &rx);
	free(s);
}

static void
test_lost_announcement_and_varying_k(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct sim *s = sim_new();
	static bool lost[MAXPKT];
	unsigned int g;

	(void)state;
	s->k_of = k_varying;	/* 4, 16, 2, 7, 64, 5, ... */
	s->burst = 3;
	pair_init(s, &tx, &rx);
	sim_send(s, &tx, 4 + 16 + 2 + 7 + 64 + 5 + 4);
	memset(lost, 0, sizeof(lost));
	lost[0] = true;			/* the announcement */
	lost[member_at(s, 0, 2)] = true;	/* unknown group: lost */
	for (g = 1; g <= 6; g++)
		lost[member_at(s, g, g % 2)] = true;
	sim_recv(s, &rx, lost, NULL);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->n_recovered, 6);
	assert_int_equal(rx.stats.unknown, 1);
	/* The tail group (4 members announced as 7+, closed at 4) too. */
	assert_true(tx.stats.early >= 1);
	pair_free(&tx, &rx);
	free(s);
}

static void
test_tail_short_group(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	static bool lost[MAXPKT];
	unsigned int t;

	(void)state;
	/* The last group closed with t of its 8 members (t = 1: a REPAIR
	 * that is a copy of one packet), its last member lost: rebuilt
	 * whatever t (docs/fec.md §6, §7). */
	for (t = 1; t < 8; t++) {
		struct sim *s = sim_new();

		pair_init(s, &tx, &rx);
		sim_send(s, &tx, 8 * 2 + t);
		assert_int_equal(tx.stats.groups, 3);
		assert_int_equal(tx.stats.early, 1);
		memset(lost, 0, sizeof(lost));
		lost[member_at(s, 2, t - 1)] = true;	/* the last packet */
		sim_recv(s, &rx, lost, NULL);
		assert_int_equal(s->bad, 0);
		assert_int_equal(s->n_recovered, 1);
		/* The last packet sent is the tail REPAIR. */
		assert_true(s->pkts[s->n - 1].repair);
		pair_free(&tx, &rx);
		free(s);
	}
}

static void
test_late_member_after_repair(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct sim *s = sim_new();
	static bool lost[MAXPKT];
	unsigned int order[MAXPKT], i, a, b, rep;

	(void)state;
	pair_init(s, &tx, &rx);
	sim_send(s, &tx, 8 * 3);
	memset(lost, 0, sizeof(lost));
	/* Group 1: member 2 lost, member 5 arrives after the REPAIR. */
	a = member_at(s, 1, 2);
	b = member_at(s, 1, 5);
	rep = repair_of(s, 1);
	lost[a] = true;
	for (i = 0; i < s->n; i++)
		order[i] = i;
	memmove(&order[b], &order[b + 1], (rep - b) * sizeof(order[0]));
	order[rep] = b;
	sim_recv(s, &rx, lost, order);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->n_recovered, 1);
	assert_true(s->recovered[a]);
	pair_free(&tx, &rx);
	free(s);
}

static void
test_skipped_packet_number(void **state)
{
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct sim *s = sim_new();
	static bool lost[MAXPKT];

	(void)state;
	/* The sender skips a packet number inside group 1 (RFC 9000
	 * §21.4 allows it): that group ends early, before the gap. */
	s->skip_pn_at[8 + 2 + 3] = true;
	/* And one before a group's first member: announced again. */
	s->skip_pn_at[1] = true;
	pair_init(s, &tx, &rx);
	sim_send(s, &tx, 8 * 4);
	assert_true(tx.stats.early >= 1);
	assert_int_equal(tx.stats.announces, 2);
	memset(lost, 0, sizeof(lost));
	lost[member_at(s, 1, 1)] = true;
	lost[member_at(s, 3, 4)] = true;
	sim_recv(s, &rx, lost, NULL);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->n_recovered, 2);
	pair_free(&tx, &rx);
	free(s);
}

/* Random loss: whatever is rebuilt is exactly what was sent. */
static void
test_random_loss(void **state)
{
	static bool lost[MAXPKT];
	unsigned int round;

	(void)state;
	for (round = 0; round < 40; round++) {
		struct dpq_fec_tx tx;
		struct dpq_fec_rx rx;
		struct sim *s = sim_new();
		unsigned int i, nlost = 0;

		s->burst = 1 + round % 9;
		s->k_of = round % 2 ? k8 : k_varying;
		s->small = round % 3 == 0;
		pair_init(s, &tx, &rx);
		sim_send(s, &tx, 200 + round);
		for (i = 0; i < s->n; i++) {
			lost[i] = test_rng_next(&rng) % 100 < 2 + round % 10;
			nlost += lost[i] && s->pkts[i].member;
		}
		sim_recv(s, &rx, lost, NULL);
		assert_int_equal(s->bad, 0);
		assert_true(s->n_recovered <= nlost);
		for (i = 0; i < s->n; i++)
			if (s->recovered[i])
				assert_true(lost[i]);
		pair_free(&tx, &rx);
		free(s);
	}
}

static void *
fail_alloc(void *ctx, size_t n)
{
	(void)ctx;
	(void)n;
	return NULL;
}

static void
fail_free(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
}

static void
test_alloc_failure_and_states(void **state)
{
	const struct dpq_mem bad = { fail_alloc, fail_free, NULL };
	struct dpq_fec_tx tx;
	struct dpq_fec_rx rx;
	struct dpq_fec_repair r = { .first_pn = 5, .next_delta = 1,
		.next_size = 4 };
	uint8_t buf[64], *data;
	uint16_t dl;

	(void)state;
	dpq_fec_tx_init(&tx, &bad, CAP);
	assert_int_equal(dpq_fec_tx_want(&tx, 8), -ENOMEM);
	assert_int_equal(tx.state, DPQ_FEC_TX_IDLE);
	assert_int_equal(dpq_fec_tx_reserve(&tx), 0);
	assert_false(dpq_fec_tx_on_packet(&tx, 1, 100, true));
	assert_null(dpq_fec_tx_write_frame(&tx, buf, buf + 64, 1, 8, &data,
			&dl));
	dpq_fec_tx_destroy(&tx);

	dpq_fec_rx_init(&rx, &bad, CAP, 16, NULL, NULL);
	assert_int_equal(dpq_fec_rx_on_repair(&rx, &r), -ENOMEM);
	dpq_fec_rx_on_packet(&rx, 6, buf, 10);
	dpq_fec_rx_flush(&rx);
	dpq_fec_rx_destroy(&rx);

	/* want(0) before anything was announced goes back to idle; the
	 * announcement does not fit a tiny packet and changes nothing. */
	dpq_fec_tx_init(&tx, &libc_mem, CAP);
	assert_int_equal(dpq_fec_tx_want(&tx, 8), 0);
	assert_int_equal(tx.state, DPQ_FEC_TX_ANNOUNCE);
	assert_null(dpq_fec_tx_write_frame(&tx, buf, buf + 4, 1, 8, &data,
			&dl));
	assert_int_equal(tx.state, DPQ_FEC_TX_ANNOUNCE);
	assert_int_equal(dpq_fec_tx_want(&tx, 0), 0);
	assert_int_equal(tx.state, DPQ_FEC_TX_IDLE);
	/* Announce with next size 0 is possible only from ANNOUNCE; an
	 * open group with only non-eliciting members is not closed. */
	assert_int_equal(dpq_fec_tx_want(&tx, 4), 0);
	assert_non_null(dpq_fec_tx_write_frame(&tx, buf, buf + 64, 10, 4,
			&data, &dl));
	assert_int_equal(dl, 0);
	assert_int_equal(tx.state, DPQ_FEC_TX_OPEN);
	assert_true(dpq_fec_tx_on_packet(&tx, 11, 40, false));
	assert_false(dpq_fec_tx_close(&tx));
	assert_true(dpq_fec_tx_on_packet(&tx, 12, 40, true));
	assert_true(dpq_fec_tx_close(&tx));
	assert_int_equal(tx.state, DPQ_FEC_TX_REPAIR_DUE);
	/* The policy turns FEC off: the REPAIR announces nothing. */
	assert_non_null(dpq_fec_tx_write_frame(&tx, buf, buf + 64, 13, 0,
			&data, &dl));
	assert_int_equal(dl, 40);
	assert_int_equal(tx.state, DPQ_FEC_TX_IDLE);
	dpq_fec_tx_destroy(&tx);
}

static void
test_report(void **state)
{
	struct dpq_fec_rx rx;
	uint64_t pn[DPQ_FEC_RECOVERED_MAX];
	size_t n, i;

	(void)state;
	dpq_fec_rx_init(&rx, &libc_mem, CAP, 16, NULL, NULL);
	assert_int_equal(dpq_fec_rx_take_report(&rx, pn, 4), 0);
	/* 40 groups, one loss each: more than the report holds. */
	{
		struct dpq_fec_tx tx;
		struct sim *s = sim_new();
		static bool lost[MAXPKT];
		unsigned int g;

		s->k_of = k8;
		dpq_fec_tx_init(&tx, &libc_mem, CAP);
		dpq_fec_rx_destroy(&rx);
		dpq_fec_rx_init(&rx, &libc_mem, CAP, 64, on_rec, s);
		sim_send(s, &tx, 8 * 40);
		memset(lost, 0, sizeof(lost));
		for (g = 0; g < 40; g++)
			lost[member_at(s, g, 3)] = true;
		sim_recv(s, &rx, lost, NULL);
		assert_int_equal(s->n_recovered, 40);
		n = dpq_fec_rx_take_report(&rx, pn, 5);
		assert_int_equal(n, 5);
		for (i = 1; i < n; i++)
			assert_true(pn[i] < pn[i - 1]);
		assert_int_equal(pn[0], s->pkts[member_at(s, 39, 3)].pn);
		n = dpq_fec_rx_take_report(&rx, pn, DPQ_FEC_RECOVERED_MAX);
		/* The report keeps the newest DPQ_FEC_RX_REPORT. */
		assert_int_equal(n, DPQ_FEC_RX_REPORT - 5);
		assert_int_equal(dpq_fec_rx_take_report(&rx, pn, 4), 0);
		dpq_fec_tx_destroy(&tx);
		free(s);
	}
	dpq_fec_rx_destroy(&rx);
}

static void
test_policy(void **state)
{
	struct dpq_fec_policy p = { 0 };
	struct dpq_fec_meter m;
	char buf[32];
	int i;

	(void)state;
	assert_int_equal(dpq_fec_policy_parse("off", &p), 0);
	assert_int_equal(p.mode, DPQ_FEC_OFF);
	assert_int_equal(dpq_fec_policy_parse("fixed", &p), 0);
	assert_int_equal(p.group, DPQ_FEC_DEFAULT_GROUP);
	assert_int_equal(dpq_fec_policy_parse("fixed:8", &p), 0);
	assert_int_equal(p.mode, DPQ_FEC_FIXED);
	assert_int_equal(p.group, 8);
	assert_int_equal(dpq_fec_policy_parse("adaptive:3-40", &p), 0);
	assert_int_equal(p.group_min, 3);
	assert_int_equal(p.group, 40);
	dpq_fec_policy_str(&p, buf, sizeof(buf));
	assert_string_equal(buf, "adaptive:3-40");
	assert_int_equal(dpq_fec_policy_parse("adaptive", &p), 0);
	dpq_fec_policy_str(&p, buf, sizeof(buf));
	assert_string_equal(buf, "adaptive:4-16");
	{
		const char *bad[] = { "", "on", "fixed:", "fixed:1", "fixed:65",
			"fixed:8x", "fixed:-2", "adaptive:8", "adaptive:9-8",
			"adaptive:2-65", "adaptive:-", "fixed:99999999999999999",
			"adaptive:4-16 ", NULL };

		for (i = 0; bad[i] != NULL; i++) {
			struct dpq_fec_policy q = p;

			assert_int_equal(dpq_fec_policy_parse(bad[i], &q),
					-EINVAL);
			assert_memory_equal(&q, &p, sizeof(p));
		}
		assert_int_equal(dpq_fec_policy_parse(NULL, &p), -EINVAL);
	}

	/* Adaptive: nothing without loss, K shrinking as loss grows. */
	p = (struct dpq_fec_policy){ DPQ_FEC_ADAPTIVE, 32, 4 };
	dpq_fec_meter_init(&m, 0);
	for (i = 0; i < 10000; i++)
		dpq_fec_meter_on_sent(&m, 1);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 0);
	/* 2% loss for a while: K near 1/(4 * 0.02) = 12. */
	for (i = 0; i < 20000; i++) {
		dpq_fec_meter_on_sent(&m, 1);
		if (i % 50 == 0)
			dpq_fec_meter_on_lost(&m, 1);
	}
	assert_in_range(dpq_fec_policy_group(&p, &m, 64), 10, 15);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 6), 6);
	/* 20%: the smallest group. */
	for (i = 0; i < 5000; i++) {
		dpq_fec_meter_on_sent(&m, 1);
		if (i % 5 == 0)
			dpq_fec_meter_on_lost(&m, 1);
	}
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 4);
	/* Loss stops: FEC turns itself off again. */
	for (i = 0; i < 3000; i++)
		dpq_fec_meter_on_sent(&m, 1);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 0);
	/* A prior starts a fresh connection protected. */
	dpq_fec_meter_init(&m, 20000);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 12);
	/* Loss within the current window acts before it ends. */
	dpq_fec_meter_init(&m, 0);
	dpq_fec_meter_on_sent(&m, 10);
	dpq_fec_meter_on_lost(&m, 2);
	assert_true(dpq_fec_policy_group(&p, &m, 64) >= 4);

	/* The shard's prior: loss-weighted by packets, decaying. */
	{
		struct dpq_fec_prior pr = { 0 };

		assert_int_equal(dpq_fec_prior_ppm(&pr), 0);
		dpq_fec_prior_fold(&pr, 10, 5);	/* too few to say */
		assert_int_equal(dpq_fec_prior_ppm(&pr), 0);
		dpq_fec_prior_fold(&pr, 1000, 45);
		assert_in_range(dpq_fec_prior_ppm(&pr), 45000, 55000);
		for (i = 0; i < 60; i++)
			dpq_fec_prior_fold(&pr, 1000, 0);
		assert_true(dpq_fec_prior_ppm(&pr) < DPQ_FEC_METER_OFF_PPM);
		dpq_fec_prior_fold(&pr, 5, 9);	/* lost > sent: capped */
		assert_true(pr.lost <= pr.sent);
	}

	/* Fixed ignores loss, obeys the peer; off is off; K < 2 is 0. */
	p = (struct dpq_fec_policy){ DPQ_FEC_FIXED, 16, 4 };
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 16);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 8), 8);
	assert_int_equal(dpq_fec_policy_group(&p, &m, 1), 0);
	p.mode = DPQ_FEC_OFF;
	assert_int_equal(dpq_fec_policy_group(&p, &m, 64), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_loss_per_group),
		cmocka_unit_test(test_double_loss_and_lost_repair),
		cmocka_unit_test(test_lost_announcement_and_varying_k),
		cmocka_unit_test(test_tail_short_group),
		cmocka_unit_test(test_late_member_after_repair),
		cmocka_unit_test(test_skipped_packet_number),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_alloc_failure_and_states),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
