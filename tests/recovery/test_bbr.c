/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_bbr.c: BBRv3 (draft-ietf-ccwg-bbr) driven by the real loss and
 * rate modules over a small packet-level bottleneck model in virtual
 * time (rate, propagation delay, drop-tail queue): the bandwidth and
 * min_rtt estimates, Startup -> Drain -> ProbeBW and the ProbeBW cycle
 * (DOWN, CRUISE, REFILL, UP), ProbeRTT every 5 s holding cwnd at half a
 * BDP for 200 ms, inflight_hi set by losses from a shallow buffer, a
 * Startup ended by loss, the pacing rate against the estimate, packet
 * conservation in recovery, and the undo of a spurious episode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/ackr.h"
#include "dataplane/engine/cc_bbr.h"
#include "dataplane/engine/loss.h"

#define MSS	1200
#define MS	UINT64_C(1000)
#define S	(1000 * MS)
#define MAXQ	65536

struct flight {
	uint64_t pn;
	uint64_t ack_at;	/* when its ACK reaches the sender */
};

struct sim {
	struct dpq_loss l;
	struct dpq_cc cc;
	struct dpq_ackr rx;	/* receiver's view, for ACK ranges */
	struct dpq_ack_range rx_r[DPQ_ACKR_MAX_RANGES];
	uint64_t now;
	uint64_t rate;		/* bottleneck, bytes/s */
	uint64_t delay;		/* one way, us */
	uint64_t queue;		/* bytes the bottleneck buffers */
	uint64_t link_free;	/* when the bottleneck is idle again */
	uint64_t next_send;	/* pacing */
	uint64_t next_pn;
	struct flight *acks;	/* ACK arrivals, in order */
	size_t head, tail;
	uint64_t dropped, sent;
	bool unpaced;
	/* state coverage */
	uint64_t in_state[DPQ_BBR_STATE_COUNT];	/* us spent */
	uint64_t entered[DPQ_BBR_STATE_COUNT];
	enum dpq_bbr_state last;
	uint64_t probe_rtt_cwnd_max;		/* largest cwnd in ProbeRTT */
	uint64_t probe_rtt_start, probe_rtt_len;
};

static void
sim_init(struct sim *s, uint64_t rate, uint64_t delay, uint64_t queue)
{
	struct dpq_loss_conf lc = { .is_server = true, .max_ack_delay = 1 };
	struct dpq_cc_conf ccc = { .max_datagram_size = MSS };
	struct dpq_mem m = DPQ_MEM_LIBC;

	memset(s, 0, sizeof(*s));
	s->rate = rate;
	s->delay = delay;
	s->queue = queue;
	s->now = 1;
	s->acks = calloc(MAXQ, sizeof(*s->acks));
	assert_non_null(s->acks);
	assert_int_equal(dpq_loss_init(&s->l, &lc, &m), 0);
	dpq_loss_set_handshake_confirmed(&s->l, s->now);
	assert_int_equal(dpq_cc_init(&s->cc, dpq_cc_find("bbr"), &ccc, s->now),
			0);
	dpq_ackr_init(&s->rx, 0, s->rx_r, DPQ_ACKR_MAX_RANGES);
	s->entered[DPQ_BBR_STARTUP] = 1;
}

static void
sim_fini(struct sim *s)
{
	dpq_loss_destroy(&s->l);
	free(s->acks);
}

/* Send one packet through the bottleneck model. */
static void
sim_send(struct sim *s)
{
	struct dpq_sent_pkt p = {
		.pn = s->next_pn++,
		.bytes = MSS,
		.flags = DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT,
	};
	uint64_t start = s->link_free > s->now ? s->link_free : s->now;
	uint64_t backlog = (start - s->now) * s->rate / S;
	uint64_t rate;

	assert_int_equal(dpq_loss_on_sent(&s->l, &s->cc, DPQ_PN_SPACE_APP,
			&p, NULL, 0, s->now), 0);
	s->sent++;
	rate = dpq_cc_pacing_rate(&s->cc, &s->l.rtt);
	s->next_send = s->unpaced || rate == DPQ_CC_UNPACED ? s->now :
		s->now + MSS * S / rate;
	if (backlog + MSS > s->queue) {
		s->dropped++;		/* drop-tail */
		return;
	}
	s->link_free = start + MSS * S / s->rate;
	assert_true(s->tail - s->head < MAXQ);
	s->acks[s->tail % MAXQ].pn = p.pn;
	s->acks[s->tail % MAXQ].ack_at = s->link_free + 2 * s->delay;
	s->tail++;
}

/* The receiver got pn: it acknowledges at once with its ranges. */
static void
sim_ack(struct sim *s, uint64_t pn)
{
	struct dpq_ack_range r[DPQ_ACKR_MAX_RANGES];
	size_t n;

	assert_int_equal(dpq_ackr_record(&s->rx, pn, true, DPQ_ECN_NOT_ECT,
			s->now), 0);
	n = dpq_ackr_ranges(&s->rx, r, 16);
	assert_int_equal(dpq_loss_on_ack(&s->l, &s->cc, DPQ_PN_SPACE_APP, r,
			n, 0, NULL, s->now, NULL, NULL), 0);
}

static void
observe(struct sim *s, uint64_t dt)
{
	struct dpq_bbr_view v;

	dpq_cc_bbr_view(&s->cc, &v);
	s->in_state[v.state] += dt;
	if (v.state != s->last) {
		s->entered[v.state]++;
		if (v.state == DPQ_BBR_PROBE_RTT)
			s->probe_rtt_start = s->now;
		if (s->last == DPQ_BBR_PROBE_RTT)
			s->probe_rtt_len = s->now - s->probe_rtt_start;
		s->last = v.state;
	}
	if (v.state == DPQ_BBR_PROBE_RTT &&
	    s->cc.cwnd > s->probe_rtt_cwnd_max)
		s->probe_rtt_cwnd_max = s->cc.cwnd;
}

/* Run a bulk transfer for dur of virtual time. */
static void
sim_run(struct sim *s, uint64_t dur)
{
	uint64_t end = s->now + dur;

	while (s->now < end) {
		uint64_t t = end, prev = s->now;

		if (s->head != s->tail && s->acks[s->head % MAXQ].ack_at < t)
			t = s->acks[s->head % MAXQ].ack_at;
		if (dpq_loss_deadline(&s->l) < t)
			t = dpq_loss_deadline(&s->l);
		if (dpq_cc_available(&s->cc) >= MSS && s->next_send < t)
			t = s->next_send;
		if (t > s->now)
			s->now = t;
		observe(s, s->now - prev);
		if (s->head != s->tail &&
		    s->acks[s->head % MAXQ].ack_at <= s->now) {
			sim_ack(s, s->acks[s->head++ % MAXQ].pn);
			continue;
		}
		if (dpq_loss_deadline(&s->l) <= s->now) {
			struct dpq_loss_timeout to;

			dpq_loss_on_timeout(&s->l, &s->cc, s->now, NULL, &to);
			if (to.action == DPQ_LOSS_ACT_PTO)
				sim_send(s);	/* probe */
			continue;
		}
		if (dpq_cc_available(&s->cc) >= MSS && s->next_send <= s->now)
			sim_send(s);
	}
}

/* 100 Mbit/s (12.5 MB/s), 40 ms RTT, a BDP of buffer. */
static void
test_model_and_cycle(void **state)
{
	struct sim s;
	struct dpq_bbr_view v;
	uint64_t rate = 12500000, bdp = rate * 40 / 1000;

	(void)state;
	sim_init(&s, rate, 20 * MS, bdp);
	assert_string_equal(dpq_cc_state_name(&s.cc), "startup");
	/* Startup doubles per round: the pipe is full within ~1 s */
	sim_run(&s, 1 * S);
	dpq_cc_bbr_view(&s.cc, &v);
	assert_true(v.full_bw_reached);
	assert_true(s.entered[DPQ_BBR_DRAIN] >= 1);
	assert_true(v.state >= DPQ_BBR_PROBE_BW_DOWN);
	/* the estimates: bandwidth within 10% of the bottleneck (never
	 * above it by more than sampling noise), min_rtt the path's 40 ms
	 * plus one packet's serialization */
	print_message("max_bw %lu B/s (link %lu), min_rtt %lu us, "
			"round %lu, %lu dropped of %lu\n", v.max_bw, rate,
			v.min_rtt, v.round_count, s.dropped, s.sent);
	assert_true(v.max_bw > rate * 9 / 10 && v.max_bw < rate * 11 / 10);
	assert_true(v.min_rtt >= 40 * MS && v.min_rtt < 41 * MS);
	/* pacing at gain * bw * 99% */
	assert_int_equal(v.pacing_rate, (uint64_t)((unsigned __int128)v.bw *
			v.pacing_gain / 100 * 99 / 100));
	/* 12 s more: the ProbeBW cycle goes round several times and a
	 * ProbeRTT comes every 5 s or so */
	sim_run(&s, 12 * S);
	dpq_cc_bbr_view(&s.cc, &v);
	print_message("entered: down %lu cruise %lu refill %lu up %lu "
			"probe_rtt %lu; ProbeRTT cwnd <= %lu, lasted %lu us\n",
			s.entered[DPQ_BBR_PROBE_BW_DOWN],
			s.entered[DPQ_BBR_PROBE_BW_CRUISE],
			s.entered[DPQ_BBR_PROBE_BW_REFILL],
			s.entered[DPQ_BBR_PROBE_BW_UP],
			s.entered[DPQ_BBR_PROBE_RTT], s.probe_rtt_cwnd_max,
			s.probe_rtt_len);
	/* (leaving ProbeRTT passes DOWN within one ACK, unseen here) */
	assert_true(s.entered[DPQ_BBR_PROBE_BW_DOWN] >= 2);
	assert_true(s.entered[DPQ_BBR_PROBE_BW_CRUISE] >= 3);
	assert_true(s.entered[DPQ_BBR_PROBE_BW_REFILL] >= 3);
	assert_true(s.entered[DPQ_BBR_PROBE_BW_UP] >= 3);
	assert_true(s.entered[DPQ_BBR_PROBE_RTT] >= 2);
	/* ProbeRTT: half a BDP (at least 4 packets) for >= 200 ms */
	assert_true(s.probe_rtt_cwnd_max <= bdp / 2 + 4 * MSS);
	assert_true(s.probe_rtt_len >= 200 * MS);
	assert_true(s.in_state[DPQ_BBR_PROBE_RTT] < 13 * S / 10);
	/* bandwidth still right, and the link was kept busy */
	assert_true(v.max_bw > rate * 9 / 10 && v.max_bw < rate * 11 / 10);
	assert_true(s.sent * MSS > rate * 13 * 8 / 10);
	sim_fini(&s);
}

/* A buffer of a tenth of a BDP: Startup overshoots and loses; losses
 * beyond 2% while probing set inflight_hi, near the BDP + buffer. */
static void
test_shallow_buffer(void **state)
{
	struct sim s;
	struct dpq_bbr_view v;
	uint64_t rate = 12500000, bdp = rate * 40 / 1000;

	(void)state;
	sim_init(&s, rate, 20 * MS, bdp / 10);
	sim_run(&s, 6 * S);
	dpq_cc_bbr_view(&s.cc, &v);
	print_message("shallow: inflight_hi %lu (bdp %lu), max_bw %lu, "
			"%lu dropped of %lu\n", v.inflight_hi, bdp, v.max_bw,
			s.dropped, s.sent);
	assert_true(v.full_bw_reached);
	assert_true(v.inflight_hi != UINT64_MAX);
	assert_true(v.inflight_hi < 2 * bdp);
	assert_true(v.inflight_hi > bdp / 2);
	assert_true(v.max_bw > rate * 8 / 10 && v.max_bw < rate * 11 / 10);
	/* loss stays low after Startup */
	assert_true(s.dropped * 20 < s.sent);
	sim_fini(&s);
}

/* The recovery period: packet conservation, then the window comes
 * back; a spurious episode is undone. */
static void
test_recovery_and_undo(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_conf conf = { .max_datagram_size = MSS };
	struct dpq_cc_loss loss = { .now = 100 * MS, .bytes_lost = MSS,
		.packets_lost = 1, .largest_sent_time = 90 * MS };
	struct dpq_rate_sample rs = { .has_data = true, .valid = true,
		.delivery_rate = 1000000, .delivered = 10 * MSS,
		.interval = 10 * MS, .tx_in_flight = 20 * MSS };
	struct dpq_rtt rtt;
	struct dpq_cc_ack ack = { .now = 110 * MS, .bytes_acked = MSS,
		.packets_acked = 1, .largest_sent_time = 95 * MS,
		.rtt = &rtt, .rs = &rs, .delivered = 30 * MSS };
	uint64_t before;

	(void)state;
	dpq_rtt_init(&rtt, 10 * MS);
	assert_int_equal(dpq_cc_init(&cc, dpq_cc_find("bbr"), &conf, 0), 0);
	assert_int_equal(cc.cwnd, 12000);
	dpq_cc_on_sent(&cc, 10 * MSS, 0);
	dpq_cc_on_sent(&cc, 10 * MSS, 50 * MS);
	before = cc.cwnd;
	/* a loss: window = in flight + 1 packet (19 + 1 after the loss) */
	dpq_cc_on_loss(&cc, &loss);
	assert_int_equal(cc.bytes_in_flight, 19 * MSS);
	assert_int_equal(cc.cwnd, 20 * MSS);
	assert_string_equal(dpq_cc_state_name(&cc), "startup");
	{
		struct dpq_cc_info in;

		dpq_cc_get_info(&cc, &in);
		assert_int_equal(in.phase, DPQ_CC_PHASE_RECOVERY);
	}
	/* in conservation the window covers what is in flight plus what
	 * the ACK delivered */
	dpq_cc_on_ack(&cc, &ack);
	assert_true(cc.cwnd >= cc.bytes_in_flight + MSS);
	/* the losses were spurious: the window before them returns */
	dpq_cc_on_spurious(&cc, 120 * MS);
	assert_true(cc.cwnd >= before);
	assert_int_equal(cc.spurious_undos, 1);
	/* persistent congestion: the minimum pipe of 4 packets */
	loss.now = 200 * MS;
	loss.largest_sent_time = 150 * MS;
	dpq_cc_on_loss(&cc, &loss);
	dpq_cc_on_persistent_congestion(&cc, 210 * MS);
	assert_int_equal(cc.cwnd, 4 * MSS);
}

/* Before any bandwidth sample: the initial pacing rate is the startup
 * gain over the initial window per RTT (1 ms without an RTT sample). */
static void
test_initial_pacing(void **state)
{
	struct dpq_cc cc;
	struct dpq_cc_conf conf = { .max_datagram_size = MSS };
	struct dpq_rtt rtt;

	(void)state;
	assert_int_equal(dpq_cc_init(&cc, dpq_cc_find("bbr"), &conf, 0), 0);
	dpq_rtt_init(&rtt, 333 * MS);
	assert_int_equal(dpq_cc_pacing_rate(&cc, &rtt),
			(uint64_t)12000 * 277 / 100 * 1000);
	rtt.has_sample = true;
	rtt.smoothed = 50 * MS;
	assert_int_equal(dpq_cc_pacing_rate(&cc, &rtt),
			(uint64_t)12000 * 277 / 100 * 20);
	assert_string_equal(dpq_bbr_state_str(DPQ_BBR_PROBE_BW_UP),
			"probe_bw_up");
	assert_string_equal(dpq_bbr_state_str(DPQ_BBR_STATE_COUNT), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initial_pacing),
		cmocka_unit_test(test_recovery_and_undo),
		cmocka_unit_test(test_model_and_cycle),
		cmocka_unit_test(test_shallow_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
