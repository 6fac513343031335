/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sender.c: what the sender puts in its packets, through the
 * virtual-time simulator (deterministic, no wall clock):
 *   - a download limited by its send buffer (the application refills it
 *     as ACKs free space) goes in full packets, not in full packets plus
 *     a few-byte STREAM packet per ACK (silly window avoidance);
 *   - a small message with room left in the buffer is not held: each
 *     object of an upload written every 50 ms arrives one path delay
 *     after it is written (this found the simulator sending what the
 *     application wrote from its done() hook only at the next event);
 *   - through a shallow buffer, the simulator's split of the queue's
 *     drops at the end of the first slow start (dpq-bench-emu pacing)
 *     adds up, and shows why pacing does not cut NewReno's loss there:
 *     the unpaced slow start overflows the queue with its bursts at a
 *     small window, the paced one runs on to a window near the path's
 *     capacity (docs/recovery.md, "Pacing behind a shallow buffer").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "emu/sim.h"

#define MS	UINT64_C(1000000)	/* ns */
#define SEC	(1000 * MS)

struct count {
	uint64_t stream_pkts;		/* 1-RTT packets with a STREAM frame */
	uint64_t small_stream_pkts;	/* ... of them under 200 bytes */
};

static void
count_sent(void *ctx, const struct dpq_trace_ev *ev)
{
	struct count *n = ctx;

	if (ev->type != DPQ_TRACE_PACKET_SENT || ev->epoch != 3 ||
	    !(ev->u.pkt.frames & (1u << DPQ_TRACE_F_STREAM)))
		return;
	n->stream_pkts++;
	if (ev->u.pkt.len < 200)
		n->small_stream_pkts++;
}

static void
link(struct dpq_sim_conf *c, const char *spec)
{
	char err[160];

	memset(c, 0, sizeof(*c));
	assert_int_equal(dpq_linkem_conf_parse(&c->c2s, spec, err,
			sizeof(err)), 0);
	assert_int_equal(dpq_linkem_conf_parse(&c->s2c, spec, err,
			sizeof(err)), 0);
	c->c2s.seed = 3;
	c->s2c.seed = 4;
	c->seed = 1;
}

static void
test_buffer_limited_full_packets(void **state)
{
	static const char *const ccs[] = { "newreno", "bbr" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
		struct dpq_sim_conf c;
		struct dpq_sim_xfer x = { .bytes = 8000000, .streams = 1,
			.max_ns = 60 * SEC };
		struct dpq_sim_xfer_result r;
		struct count n = { 0 };

		/* 1 Gbit/s, 20 ms: a 256 KiB buffer limits the sender to
		 * about a tenth of the path. */
		link(&c, "delay=10ms,rate=1gbit,queue=2500kb");
		c.client.cc_name = c.server.cc_name = ccs[i];
		c.server.send_buffer = 256 * 1024;
		c.strace = count_sent;
		c.strace_ctx = &n;
		assert_int_equal(dpq_sim_transfer(&c, &x, &r), 0);
		assert_true(r.ok);
		print_message("%s: %lu STREAM packets, %lu under 200 bytes\n",
				ccs[i], (unsigned long)n.stream_pkts,
				(unsigned long)n.small_stream_pkts);
		/* Before: about one small packet per ACK (a third of
		 * all). Now only tails that could not wait (none here
		 * but the last). */
		assert_true(n.small_stream_pkts <= 2);
		/* 1412 stream bytes per full packet: at most 2% more
		 * packets than the bytes need. */
		assert_true(n.stream_pkts <= x.bytes / 1400 * 102 / 100);
	}
}

static void
test_small_messages_not_held(void **state)
{
	struct dpq_sim_conf c;
	struct dpq_sim_xfer x = { .bytes = 20 * 300, .streams = 1,
		.upload = true, .objects = 20, .marks = 20,
		.stagger_ns = 50 * MS, .max_ns = 60 * SEC };
	struct dpq_sim_xfer_result r;
	unsigned int i;

	(void)state;
	link(&c, "delay=10ms,rate=100mbit");
	assert_int_equal(dpq_sim_transfer(&c, &x, &r), 0);
	for (i = 0; i < x.objects; i++) {
		uint64_t late = r.mark_ns[i] - i * x.stagger_ns;

		/* Written at i * 50 ms, 300 bytes, no FIN until the last:
		 * delivered one path delay (10 ms) later, give or take the
		 * serialisation, not an RTT or a timer later. */
		assert_true(r.mark_ns[i] >= i * x.stagger_ns);
		assert_true(late < 12 * MS);
	}
}

static void
test_slow_start_drop_split(void **state)
{
	uint64_t peak[2];
	int p;

	(void)state;
	for (p = 0; p < 2; p++) {
		struct dpq_sim_conf c;
		struct dpq_sim_xfer x = { .bytes = 5000000, .streams = 1,
			.max_ns = 60 * SEC };
		struct dpq_sim_xfer_result r;
		uint64_t drops;

		/* 100 Mbit/s, 20 ms (BDP 250 kB), a ten-datagram queue. */
		link(&c, "delay=10ms,rate=100mbit,queue=15kb");
		c.client.no_pacing = c.server.no_pacing = p;
		assert_int_equal(dpq_sim_transfer(&c, &x, &r), 0);
		drops = r.s2c.dropped[DPQ_LINKEM_DROP_QUEUE];
		print_message("pacing %s: slow start ended at %.1f ms, peak "
				"window %lu, %lu of %lu drops in it\n",
				p ? "off" : "on", (double)r.ss_exit_ns / 1e6,
				(unsigned long)r.ss_peak_cwnd,
				(unsigned long)r.ss_dropped,
				(unsigned long)drops);
		/* Slow start ended by a loss (the queue overflowed) within
		 * the transfer; its drops are part of the total. */
		assert_true(r.ss_exit_ns < r.done_ns);
		assert_true(r.ss_dropped > 0);
		assert_true(r.ss_dropped <= drops);
		assert_true(r.ss_offered <= r.s2c.offered);
		assert_true(r.ss_peak_cwnd > 14720);
		peak[p] = r.ss_peak_cwnd;
	}
	/* Paced, slow start gets at least twice as far before the queue
	 * overflows (measured: 283 vs 55 kB). */
	assert_true(peak[0] > 2 * peak[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffer_limited_full_packets),
		cmocka_unit_test(test_small_messages_not_held),
		cmocka_unit_test(test_slow_start_drop_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
