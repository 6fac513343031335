/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A download whose return path dies (virtual time): every datagram the
 * client sends after the first ACKs is lost, while the server's probes
 * still reach it. This is what the one unfinished run of dpq-bench-fec
 * was (100 kB, bursty 5%, no FEC, seed 60): the per-datagram burst chain
 * stayed bad for the client's next 12 datagrams, which, one ACK per
 * probe, took 24 s; the server heard nothing for 30 s and closed on its
 * idle timeout (RFC 9000 §10.1). Not a stall of loss recovery: the
 * sender keeps probing with exponential backoff (RFC 9002 §6.2.1) and
 * finishes as soon as an ACK gets through, and gives up cleanly, both
 * ends, when none does for the idle timeout.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "emu/linkem.h"
#include "emu/sim.h"

#define MS	UINT64_C(1000000)	/* ns */
#define SEC	(1000 * MS)

/* 100 kB download, 20 ms RTT, 100 Mbit/s; the client-to-server direction
 * dark from 45 ms (after the handshake, during the first window) for
 * dark_ms. */
static int
run(uint64_t dark_ms, struct dpq_sim_xfer_result *r)
{
	struct dpq_sim_conf c;
	struct dpq_sim_xfer x = { .bytes = 100000, .streams = 1,
		.max_ns = 600 * SEC };
	char spec[128], err[128];

	memset(&c, 0, sizeof(c));
	assert_int_equal(dpq_linkem_conf_parse(&c.s2c,
			"delay=10ms,rate=100mbit,queue=256kb", err,
			sizeof(err)), 0);
	snprintf(spec, sizeof(spec),
			"delay=10ms,rate=100mbit,queue=256kb,"
			"blackout=45ms+%llums", (unsigned long long)dark_ms);
	assert_int_equal(dpq_linkem_conf_parse(&c.c2s, spec, err,
			sizeof(err)), 0);
	c.seed = 60;
	c.client.cc_name = c.server.cc_name = "newreno";
	return dpq_sim_transfer(&c, &x, r);
}

/* Dark for 10 s: the server backs off (each probe timeout twice the
 * last), the first probe after the outage gets its ACK through and the
 * transfer completes byte-exact (at 13.3 s). */
static void
test_outage_recovers(void **state)
{
	struct dpq_sim_xfer_result r;

	(void)state;
	assert_int_equal(run(10000, &r), 0);
	assert_true(r.ok && !r.corrupt);
	assert_true(r.c2s.dropped[DPQ_LINKEM_DROP_BLACKOUT] >= 5);
	assert_true(r.server.ptos >= 5);
	/* done at the first probe after the outage (not at a cap) */
	assert_true(r.done_ns > 10 * SEC && r.done_ns < 25 * SEC);
	assert_string_equal(r.closed, "");
}

/* Dark for 40 s, longer than the 30 s idle timeout: the server closes
 * silently on its idle timeout 30 s after the last ACK it heard, the
 * transfer reports the close (-EPROTO, why in closed), not the 600 s cap,
 * and no byte the client holds is wrong. */
static void
test_dead_path_idles_out(void **state)
{
	struct dpq_sim_xfer_result r;

	(void)state;
	assert_int_equal(run(40000, &r), -EPROTO);
	assert_false(r.ok);
	assert_false(r.corrupt);
	assert_non_null(strstr(r.closed, "server closed"));
	assert_non_null(strstr(r.closed, "idle timeout"));
	assert_true(r.done_ns >= 30 * SEC && r.done_ns < 31 * SEC);
	assert_true(r.server.ptos >= 8);
	assert_true(r.s2c.delivered >= r.server.ptos); /* probes got through */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outage_recovers),
		cmocka_unit_test(test_dead_path_idles_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
