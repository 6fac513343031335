/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ack_policy.c: the receiver's ACK policy of RFC 9000 §13.2 as the
 * connection applies it, watched through the trace hook of one side of a
 * virtual-time transfer (emu/sim.h; deterministic, no wall clock):
 *   - §13.2.2: an ACK after every second ack-eliciting packet, not later
 *     and not much sooner;
 *   - §13.2.1: a lone ack-eliciting packet is acknowledged max_ack_delay
 *     after it arrived (the timer, nothing else sends then);
 *   - §13.2.1: a packet that leaves a gap, or arrives out of order, is
 *     acknowledged at once.
 * engine/ackr.c's decisions alone are tested in tests/recovery/test_ackr.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu/sim.h"

#define MS	UINT64_C(1000000)	/* ns */
#define SEC	(1000 * MS)
#define EPOCH_1RTT 3
#define MAX_EV	(1u << 20)

/* Ack-eliciting: any frame but ACK and PADDING (RFC 9002 §2). */
#define NOT_ELICITING ((1u << DPQ_TRACE_F_ACK) | (1u << DPQ_TRACE_F_PADDING))

struct ev {
	uint64_t t;		/* us */
	uint64_t pn;
	bool sent;
	bool eliciting;
	bool has_ack;
};

struct log {
	struct ev *e;
	size_t n;
};

static void
record(void *ctx, const struct dpq_trace_ev *ev)
{
	struct log *l = ctx;
	struct ev *e;

	if ((ev->type != DPQ_TRACE_PACKET_SENT &&
	     ev->type != DPQ_TRACE_PACKET_RECEIVED) ||
	    ev->epoch != EPOCH_1RTT || l->n >= MAX_EV)
		return;
	e = &l->e[l->n++];
	e->t = ev->time_us;
	e->pn = ev->u.pkt.pn;
	e->sent = ev->type == DPQ_TRACE_PACKET_SENT;
	e->eliciting = (ev->u.pkt.frames & ~NOT_ELICITING) != 0;
	e->has_ack = (ev->u.pkt.frames & (1u << DPQ_TRACE_F_ACK)) != 0;
}

/* A transfer with the trace on the client (download: the receiver) or
 * on the server (upload). */
static void
run(const char *spec, struct dpq_sim_xfer *x, bool trace_client,
		struct log *l)
{
	struct dpq_sim_conf c;
	struct dpq_sim_xfer_result r;
	char err[160];

	memset(&c, 0, sizeof(c));
	assert_int_equal(dpq_linkem_conf_parse(&c.c2s, spec, err,
			sizeof(err)), 0);
	assert_int_equal(dpq_linkem_conf_parse(&c.s2c, spec, err,
			sizeof(err)), 0);
	c.c2s.seed = 5;
	c.s2c.seed = 6;
	c.seed = 1;
	l->e = calloc(MAX_EV, sizeof(*l->e));
	assert_non_null(l->e);
	l->n = 0;
	if (trace_client) {
		c.ctrace = record;
		c.ctrace_ctx = l;
	} else {
		c.strace = record;
		c.strace_ctx = l;
	}
	assert_int_equal(dpq_sim_transfer(&c, x, &r), 0);
	assert_true(r.ok);
	assert_true(l->n < MAX_EV);
}

static void
test_every_second_packet(void **state)
{
	struct dpq_sim_xfer x = { .bytes = 4000000, .streams = 1,
		.max_ns = 60 * SEC };
	unsigned int pending = 0, max_pending = 0, acks = 0, at_two = 0;
	struct log l;
	size_t i;

	(void)state;
	run("delay=10ms,rate=100mbit", &x, true, &l);
	for (i = 0; i < l.n; i++) {
		const struct ev *e = &l.e[i];

		if (!e->sent) {
			pending += e->eliciting;
			if (pending > max_pending)
				max_pending = pending;
			continue;
		}
		if (e->has_ack) {
			acks++;
			at_two += pending == 2;
			pending = 0;
		}
	}
	print_message("%u ACKs, %u after two ack-eliciting packets, at "
			"most %u unacknowledged\n", acks, at_two, max_pending);
	/* Never a third ack-eliciting packet without an ACK... */
	assert_true(max_pending <= 2);
	/* ... and nearly always after the second one, not each one. */
	assert_true(acks > 1000);
	assert_true(at_two >= acks * 9 / 10);
	free(l.e);
}

static void
test_max_ack_delay(void **state)
{
	/* Upload of 300-byte messages every 50 ms: each arrives alone at
	 * the server, which has nothing to send but the ACK. */
	struct dpq_sim_xfer x = { .bytes = 20 * 300, .streams = 1,
		.upload = true, .objects = 20, .stagger_ns = 50 * MS,
		.max_ns = 60 * SEC };
	unsigned int checked = 0;
	uint64_t rx_t = 0;
	bool lone = false;
	struct log l;
	size_t i;

	(void)state;
	run("delay=10ms,rate=100mbit", &x, false, &l);
	for (i = 0; i < l.n; i++) {
		const struct ev *e = &l.e[i];

		if (!e->sent) {
			/* a second one before the ACK: not a lone packet */
			lone = e->eliciting && !lone;
			rx_t = e->t;
			continue;
		}
		if (!e->has_ack)
			continue;
		if (lone && rx_t > l.e[0].t + 200000) {
			/* the default max_ack_delay, 25 ms (our transport
			 * parameter), to the microsecond the timer fires */
			assert_true(e->t >= rx_t + 25000);
			assert_true(e->t <= rx_t + 25001);
			checked++;
		}
		lone = false;
	}
	print_message("%u lone packets acknowledged after max_ack_delay\n",
			checked);
	assert_true(checked >= 10);
	free(l.e);
}

static void
test_gap_and_reorder_ack_at_once(void **state)
{
	struct dpq_sim_xfer x = { .bytes = 4000000, .streams = 1,
		.max_ns = 60 * SEC };
	unsigned int gaps = 0, reordered = 0;
	uint64_t largest = 0;
	bool any = false;
	struct log l;
	size_t i, k;

	(void)state;
	run("delay=10ms,rate=100mbit,loss=1%,reorder=1%,reorder_delay=1ms",
			&x, true, &l);
	for (i = 0; i < l.n; i++) {
		const struct ev *e = &l.e[i];
		bool gap, late;

		if (e->sent)
			continue;
		gap = any && e->pn > largest + 1;
		late = any && e->pn < largest;
		if (!any || e->pn > largest)
			largest = e->pn;
		any = true;
		if (!e->eliciting || (!gap && !late))
			continue;
		/* The next thing the receiver does is send an ACK, at the
		 * same microsecond (before it reads another packet). */
		for (k = i + 1; k < l.n && !l.e[k].sent; k++)
			if (l.e[k].t != e->t)
				break;
		assert_true(k < l.n);
		assert_true(l.e[k].sent);
		assert_true(l.e[k].has_ack);
		assert_int_equal(l.e[k].t, e->t);
		gaps += gap;
		reordered += late;
	}
	print_message("%u gaps and %u late packets, each acknowledged at "
			"once\n", gaps, reordered);
	assert_true(gaps >= 10);
	assert_true(reordered >= 10);
	free(l.e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_second_packet),
		cmocka_unit_test(test_max_ack_delay),
		cmocka_unit_test(test_gap_and_reorder_ack_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
