/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fec_cc.c: how congestion control takes packets the peer rebuilt
 * with XOR-FEC (dpq_cc_on_recovered, enum dpq_cc_fec_reaction in
 * dataplane/engine/cc.h; docs/fec.md §8).
 *
 *   - the decision alone, on a NewReno controller: GUARDED forgives a
 *     repaired loss while RTT samples show no queue and the repaired-loss
 *     credit lasts, and reacts as to a loss otherwise; LOSS always reacts;
 *     IGNORE never does;
 *   - through the link emulator in virtual time (deterministic, no wall
 *     clock), a server sending with fixed XOR-FEC (K = 8):
 *       random loss on an uncongested path: GUARDED forgives most repaired
 *       losses, LOSS forgives none and reacts more often;
 *       random loss on a path the sender can fill (20 Mbit/s, a deep
 *       queue): GUARDED still backs off when the queue builds, so the
 *       queue drops no more than without FEC, while IGNORE (the control:
 *       the scenario does stress the guard) overflows it;
 *       a shallow queue (a quarter of the BDP), clean and with random
 *       loss: no more queue drops with FEC and GUARDED than without FEC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/cc.h"
#include "emu/sim.h"

#define MS	UINT64_C(1000000)	/* ns */
#define SEC	(1000 * MS)
#define MDS	1200
#define US_MS	UINT64_C(1000)		/* us */

/* ---- the decision, on a controller ------------------------------------- */

static void
start(struct dpq_cc *cc, enum dpq_cc_fec_reaction r)
{
	struct dpq_cc_conf conf = { .max_datagram_size = MDS,
		.fec_reaction = r };

	assert_int_equal(dpq_cc_init(cc, dpq_cc_find("newreno"), &conf, 0),
			0);
	/* Leave slow start at a known window: one loss, then grow. */
	cc->cwnd = 100 * MDS;
	cc->ssthresh = 100 * MDS;
}

static void
acks(struct dpq_cc *cc, uint32_t pkts, uint64_t sent, uint64_t now)
{
	struct dpq_cc_ack ev = {
		.now = now,
		.bytes_acked = (uint64_t)pkts * MDS,
		.packets_acked = pkts,
		.largest_sent_time = sent,
	};

	cc->bytes_in_flight += ev.bytes_acked;
	dpq_cc_on_ack(cc, &ev);
}

static bool
recovered(struct dpq_cc *cc, const struct dpq_rtt *rtt, uint64_t sent,
		uint64_t now)
{
	struct dpq_cc_loss ev = {
		.now = now,
		.packets_lost = 1,
		.largest_sent_time = sent,
		.rtt = rtt,
	};

	return dpq_cc_on_recovered(cc, &ev);
}

static void
rtt_at(struct dpq_rtt *r, uint64_t min_ms, uint64_t latest_us)
{
	memset(r, 0, sizeof(*r));
	r->min = min_ms * US_MS;
	r->smoothed = latest_us;
	r->latest = latest_us;
	r->has_sample = true;
}

static void
test_guarded_no_queue(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt r;
	uint64_t w;

	(void)state;
	start(&cc, DPQ_CC_FEC_GUARDED);
	rtt_at(&r, 20, 22 * US_MS);	/* 2 ms over 20: below 20/8 */
	acks(&cc, 64, 1000, 2000);
	w = cc.cwnd;
	/* 64 packets acknowledged: credit for two repaired losses. */
	assert_false(recovered(&cc, &r, 3000, 4000));
	assert_false(recovered(&cc, &r, 3001, 4000));
	assert_int_equal(cc.cwnd, w);
	assert_int_equal(cc.ssthresh, 100 * MDS);
	assert_int_equal(cc.congestion_events, 0);
	assert_int_equal(cc.fec_forgiven, 2);
	/* A third before 16 more packets are acknowledged: more repaired
	 * loss than FEC is sized for, a congestion event. */
	assert_true(recovered(&cc, &r, 3002, 4000));
	assert_int_equal(cc.cwnd, w / 2);	/* NewReno: kLossReductionFactor */
	assert_int_equal(cc.congestion_events, 1);
	assert_int_equal(cc.fec_congestion, 1);
	/* Credit comes back with acknowledged packets. */
	acks(&cc, 16, 5000, 30000);
	w = cc.cwnd;
	assert_false(recovered(&cc, &r, 31000, 50000));
	assert_int_equal(cc.cwnd, w);
	assert_int_equal(cc.fec_forgiven, 3);
}

static void
test_guarded_queue(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt r;

	(void)state;
	start(&cc, DPQ_CC_FEC_GUARDED);
	acks(&cc, 64, 1000, 2000);
	/* 20 ms + 3 ms: a queue (over 20/8 = 2.5 ms): a congestion event,
	 * although credit is left. */
	rtt_at(&r, 20, 23 * US_MS);
	assert_true(recovered(&cc, &r, 3000, 4000));
	assert_int_equal(cc.cwnd, 50 * MDS);
	assert_int_equal(cc.ssthresh, 50 * MDS);
	assert_int_equal(cc.fec_forgiven, 0);
	/* A short path: kGranularity (1 ms) is the least inflation taken
	 * for a queue. 4 ms + 0.9 ms: none; the window is not cut. */
	start(&cc, DPQ_CC_FEC_GUARDED);
	acks(&cc, 64, 1000, 2000);
	rtt_at(&r, 4, 4900);
	assert_false(recovered(&cc, &r, 3000, 4000));
	assert_int_equal(cc.cwnd, 100 * MDS);
	rtt_at(&r, 4, 5100);
	assert_true(recovered(&cc, &r, 3001, 4000));
	assert_int_equal(cc.cwnd, 50 * MDS);
	/* No RTT sample yet: cannot tell, a congestion event. */
	start(&cc, DPQ_CC_FEC_GUARDED);
	acks(&cc, 64, 1000, 2000);
	assert_true(recovered(&cc, NULL, 3000, 4000));
	memset(&r, 0, sizeof(r));
	start(&cc, DPQ_CC_FEC_GUARDED);
	acks(&cc, 64, 1000, 2000);
	assert_true(recovered(&cc, &r, 3000, 4000));
}

static void
test_loss_and_ignore(void **state)
{
	struct dpq_cc cc;
	struct dpq_rtt r;
	enum dpq_cc_fec_reaction x;

	(void)state;
	rtt_at(&r, 20, 20 * US_MS);
	start(&cc, DPQ_CC_FEC_LOSS);
	acks(&cc, 64, 1000, 2000);
	assert_true(recovered(&cc, &r, 3000, 4000));
	assert_int_equal(cc.cwnd, 50 * MDS);
	assert_int_equal(cc.fec_congestion, 1);
	/* Same recovery period (RFC 9002 §7.3.2): no second reduction. */
	assert_true(recovered(&cc, &r, 3500, 4000));
	assert_int_equal(cc.cwnd, 50 * MDS);

	start(&cc, DPQ_CC_FEC_IGNORE);
	rtt_at(&r, 20, 80 * US_MS);	/* even with a queue */
	for (int i = 0; i < 10; i++)
		assert_false(recovered(&cc, &r, 3000 + (uint64_t)i, 4000));
	assert_int_equal(cc.cwnd, 100 * MDS);
	assert_int_equal(cc.fec_forgiven, 10);
	assert_int_equal(cc.congestion_events, 0);

	/* Names both ways; a reset keeps the choice and the counters. */
	assert_string_equal(dpq_cc_fec_reaction_str(DPQ_CC_FEC_GUARDED),
			"guarded");
	assert_int_equal(dpq_cc_fec_reaction_parse("loss", &x), 0);
	assert_int_equal(x, DPQ_CC_FEC_LOSS);
	assert_int_equal(dpq_cc_fec_reaction_parse("ignore", &x), 0);
	assert_int_equal(x, DPQ_CC_FEC_IGNORE);
	assert_int_equal(dpq_cc_fec_reaction_parse("Guarded", &x), -1);
	assert_int_equal(dpq_cc_fec_reaction_parse("", &x), -1);
	assert_int_equal(dpq_cc_fec_reaction_parse(NULL, &x), -1);
	dpq_cc_reset(&cc, 5000);
	assert_int_equal(cc.conf.fec_reaction, DPQ_CC_FEC_IGNORE);
	assert_int_equal(cc.fec_forgiven, 10);
}

/* ---- through the emulated link ----------------------------------------- */

enum side { NOFEC, GUARDED, LOSS, IGNORE };

struct sums {
	uint64_t queue_drops, sent, events, rec_cong, forgiven, rebuilt;
	unsigned int ok;
};

/* seeds downloads of bytes through spec (both ways), the server sending
 * fixed XOR-FEC groups of 8 (or no FEC), summed. */
static void
run(const char *spec, uint64_t bytes, unsigned int seeds, enum side m,
		struct sums *out)
{
	unsigned int k;

	memset(out, 0, sizeof(*out));
	for (k = 1; k <= seeds; k++) {
		struct dpq_sim_conf c;
		struct dpq_sim_xfer x = { .bytes = bytes, .streams = 1,
			.max_ns = 300 * SEC };
		struct dpq_sim_xfer_result r;
		char err[160];

		memset(&c, 0, sizeof(c));
		assert_int_equal(dpq_linkem_conf_parse(&c.c2s, spec, err,
				sizeof(err)), 0);
		assert_int_equal(dpq_linkem_conf_parse(&c.s2c, spec, err,
				sizeof(err)), 0);
		c.seed = k;
		c.c2s.seed = 2 * k + 1;
		c.s2c.seed = 2 * k + 2;
		c.client.max_data = c.server.max_data = 64 << 20;
		c.client.max_stream_data = 64 << 20;
		c.server.max_stream_data = 64 << 20;
		/* Slow start ended by a loss, as RFC 9406 has it: HyStart++'s
		 * paced delay signal (hystart.h) ends it before the deep
		 * queue overflows, and the IGNORE control would no longer
		 * show that the scenario fills the queue. */
		c.client.hystart_rfc = c.server.hystart_rfc = true;
		if (m != NOFEC) {
			c.client.fec_max_group = c.server.fec_max_group = 64;
			c.server.fec = (struct dpq_fec_policy){
				DPQ_FEC_FIXED, 8, 8 };
			c.server.fec_cc = m == GUARDED ? DPQ_CC_FEC_GUARDED :
				m == LOSS ? DPQ_CC_FEC_LOSS :
				DPQ_CC_FEC_IGNORE;
		}
		dpq_sim_transfer(&c, &x, &r);
		out->ok += r.ok;
		out->queue_drops += r.s2c.dropped[DPQ_LINKEM_DROP_QUEUE];
		out->sent += r.server.pkts_sent;
		out->events += r.server.congestion_events;
		out->rec_cong += r.server.fec_cc_congestion;
		out->forgiven += r.server.fec_cc_forgiven;
		out->rebuilt += r.client.fec_recovered;
	}
	print_message("  %-40s %-7s queue drops %4llu / %6llu, congestion "
		"events %4llu, rebuilt %4llu: reacted %4llu forgiven %4llu\n",
		spec, m == NOFEC ? "no FEC" : m == GUARDED ? "guarded" :
		m == LOSS ? "loss" : "ignore",
		(unsigned long long)out->queue_drops,
		(unsigned long long)out->sent,
		(unsigned long long)out->events,
		(unsigned long long)out->rebuilt,
		(unsigned long long)out->rec_cong,
		(unsigned long long)out->forgiven);
	assert_int_equal(out->ok, seeds);
}

/* Random loss, far below the link's capacity (no queue builds): repaired
 * losses cost no window. */
static void
test_sim_random_loss(void **state)
{
	static const char *const spec =
		"delay=10ms,rate=1gbit,queue=2500kb,loss=1%";
	struct sums g, l;

	(void)state;
	run(spec, 1000000, 3, GUARDED, &g);
	run(spec, 1000000, 3, LOSS, &l);
	assert_true(g.rebuilt > 10 && l.rebuilt > 10);
	/* Nearly all forgiven: no queue, credit to spare. */
	assert_true(g.forgiven >= 3 * g.rec_cong);
	assert_int_equal(l.forgiven, 0);
	assert_true(l.rec_cong > 0);
	assert_true(g.events < l.events);
}

/* Random loss on a path the sender can fill, with a deep queue: a queue
 * builds before it overflows, and GUARDED must back off then. */
static void
test_sim_deep_queue(void **state)
{
	static const char *const spec =
		"delay=10ms,rate=20mbit,queue=256kb,loss=1%";
	struct sums n, g, i;

	(void)state;
	run(spec, 5000000, 3, NOFEC, &n);
	run(spec, 5000000, 3, GUARDED, &g);
	run(spec, 5000000, 3, IGNORE, &i);
	assert_true(g.rec_cong > 0);		/* the guard fired */
	assert_true(g.forgiven > 0);
	assert_true(g.queue_drops <= n.queue_drops + 5);
	/* The control: without the guard the queue overflows. */
	assert_true(i.queue_drops > g.queue_drops + 20);
}

/* A shallow queue (a quarter of the BDP: 20 Mbit/s x 20 ms = 50 kB):
 * the sender still backs off, and queue loss is no higher with FEC. */
static void
test_sim_shallow_queue(void **state)
{
	static const char *const specs[] = {
		"delay=10ms,rate=20mbit,queue=12kb",
		"delay=10ms,rate=20mbit,queue=12kb,loss=1%",
		"delay=10ms,rate=20mbit,queue=64kb,loss=1%",
	};
	unsigned int s;

	(void)state;
	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct sums n, g;

		run(specs[s], 5000000, 3, NOFEC, &n);
		run(specs[s], 5000000, 3, GUARDED, &g);
		assert_true(g.events > 0);
		/* Queue-drop rate with FEC at most 1.25x that without
		 * (plus a few drops), cross-multiplied. */
		assert_true(g.queue_drops * n.sent * 4 <=
				n.queue_drops * g.sent * 5 + 8 * n.sent);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guarded_no_queue),
		cmocka_unit_test(test_guarded_queue),
		cmocka_unit_test(test_loss_and_ignore),
		cmocka_unit_test(test_sim_random_loss),
		cmocka_unit_test(test_sim_deep_queue),
		cmocka_unit_test(test_sim_shallow_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
