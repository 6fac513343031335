/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The impairment suite, in virtual time: a dpquic client and server
 * (dataplane/quic, TLS through hs_direct) transfer data through the
 * emulated link (emu/sim.c) under each impairment, for every registered
 * congestion controller, in both directions, and every byte must arrive
 * exactly (dpq_sim_transfer checks each against its pattern). Each
 * scenario also checks that the impairment really happened (the link
 * dropped, reordered, duplicated, corrupted or went dark) and that the
 * connection saw it, so a link that silently did nothing fails.
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
#define SEEDS	3	/* per controller and direction */

enum check {
	CHECK_NONE = 0,
	CHECK_LOSS,		/* random loss happened and was repaired */
	CHECK_BURST,
	CHECK_RTT50,		/* handshake took at least one 50 ms RTT */
	CHECK_REORDER,
	CHECK_DUP,
	CHECK_CORRUPT,
	CHECK_BLACKOUT,
};

struct scenario {
	const char *name;
	const char *link;	/* both directions (seeds differ) */
	uint64_t bytes;
	unsigned int streams;
	enum check check;
};

static const struct scenario scenarios[] = {
	{ "clean", "delay=10ms,rate=20mbit,queue=75kb", 2000000, 1,
		CHECK_NONE },
	{ "loss1", "delay=10ms,rate=20mbit,queue=75kb,loss=1%", 1000000, 1,
		CHECK_LOSS },
	{ "loss5", "delay=10ms,rate=20mbit,queue=75kb,loss=5%", 600000, 2,
		CHECK_LOSS },
	{ "loss10", "delay=10ms,rate=20mbit,queue=75kb,loss=10%", 300000, 1,
		CHECK_LOSS },
	{ "burst", "delay=10ms,rate=20mbit,queue=75kb,burst=3%/4", 2000000, 1,
		CHECK_BURST },
	{ "rtt50", "delay=25ms,rate=20mbit,queue=190kb", 2000000, 1,
		CHECK_RTT50 },
	{ "reorder", "delay=10ms,rate=20mbit,reorder=5%,reorder_delay=4ms",
		1000000, 1, CHECK_REORDER },
	{ "dup", "delay=10ms,rate=20mbit,queue=75kb,dup=5%", 1000000, 1,
		CHECK_DUP },
	{ "corrupt", "delay=10ms,rate=20mbit,queue=75kb,corrupt=2%", 1000000,
		1, CHECK_CORRUPT },
	{ "blackout", "delay=10ms,rate=20mbit,queue=75kb,blackout=1s+2s",
		4000000, 1, CHECK_BLACKOUT },
	{ "everything", "delay=15ms,jitter=2ms,rate=20mbit,queue=100kb,"
		"loss=2%,burst=1%/4,reorder=2%,dup=1%,corrupt=1%",
		600000, 4, CHECK_LOSS },
};

static void
check_one(const struct scenario *sc, const char *cc, bool upload,
		uint64_t seed)
{
	struct dpq_sim_conf c;
	struct dpq_sim_xfer x = {
		.bytes = sc->bytes,
		.streams = sc->streams,
		.upload = upload,
		.max_ns = 300 * SEC,
	};
	struct dpq_sim_xfer_result r;
	const struct dpq_linkem_stats *data, *acks;
	const struct dpq_conn_stats *snd, *rcv;
	char err[128];
	int rc;

	memset(&c, 0, sizeof(c));
	if (dpq_linkem_conf_parse(&c.c2s, sc->link, err, sizeof(err)) != 0 ||
	    dpq_linkem_conf_parse(&c.s2c, sc->link, err, sizeof(err)) != 0)
		fail_msg("%s: %s", sc->name, err);
	c.c2s.seed = seed * 2 + 1;
	c.s2c.seed = seed * 2 + 2;
	c.seed = seed;
	c.client.cc_name = c.server.cc_name = cc;
	rc = dpq_sim_transfer(&c, &x, &r);
	print_message("  %-10s %-8s %-8s seed %llu: rc %d, %.2f s virtual, "
			"%.2f Mbit/s, %llu lost, %.3f s CPU\n", sc->name, cc,
			upload ? "upload" : "download",
			(unsigned long long)seed, rc, (double)r.done_ns / 1e9,
			r.goodput_bps / 1e6,
			(unsigned long long)(upload ? r.client.pkts_lost :
				r.server.pkts_lost), r.cpu_s);
	if (rc != 0 || !r.ok || r.corrupt)
		fail_msg("%s/%s/%s: transfer failed (rc %d, corrupt %d) %s",
				sc->name, cc, upload ? "up" : "down", rc,
				r.corrupt, r.closed);
	assert_int_equal(r.bytes, sc->bytes * sc->streams);
	assert_int_equal(r.overflow, 0);
	data = upload ? &r.c2s : &r.s2c;
	acks = upload ? &r.s2c : &r.c2s;
	snd = upload ? &r.client : &r.server;
	rcv = upload ? &r.server : &r.client;
	switch (sc->check) {
	case CHECK_NONE:
		assert_int_equal(data->dropped[DPQ_LINKEM_DROP_LOSS], 0);
		break;
	case CHECK_LOSS:
		assert_true(data->dropped[DPQ_LINKEM_DROP_LOSS] > 0);
		assert_true(snd->pkts_lost > 0);
		break;
	case CHECK_BURST:
		assert_true(data->dropped[DPQ_LINKEM_DROP_BURST] > 0);
		assert_int_equal(data->dropped[DPQ_LINKEM_DROP_LOSS], 0);
		assert_true(snd->pkts_lost > 0);
		break;
	case CHECK_RTT50:
		assert_true(r.handshake_ns >= 50 * MS);
		break;
	case CHECK_REORDER:
		assert_true(data->reordered > 0);
		break;
	case CHECK_DUP:
		assert_true(data->duplicated > 0 && acks->duplicated > 0);
		break;
	case CHECK_CORRUPT:
		/* Corrupted packets fail to open and are dropped. */
		assert_true(data->corrupted > 0);
		assert_true(rcv->pkts_dropped > 0);
		break;
	case CHECK_BLACKOUT:
		assert_true(data->dropped[DPQ_LINKEM_DROP_BLACKOUT] > 0);
		assert_true(acks->dropped[DPQ_LINKEM_DROP_BLACKOUT] > 0);
		assert_true(r.done_ns > 3 * SEC);
		break;
	}
}

static void
run_scenario(void **state)
{
	const struct scenario *sc = *state;
	const struct dpq_cc_ops *ops;
	uint64_t seed;
	size_t i;

	for (i = 0; (ops = dpq_cc_get(i)) != NULL; i++) {
		for (seed = 1; seed <= SEEDS; seed++) {
			check_one(sc, ops->name, false, seed);
			check_one(sc, ops->name, true, seed);
		}
	}
	assert_true(i > 0);
}

/*
 * A stall the suite found (issue 6 §2), kept as a regression test: at 10%
 * loss, upload, seed 102, the client's Handshake packet with its Finished
 * is lost while its window is full of 1-RTT packets that the server,
 * still without the Finished, could not process. The PTO probe used to be
 * a PING, the lost CRYPTO data waited for window that never freed, and
 * the connection idled out; now the probe carries the Finished again
 * (RFC 9002 §6.2.4).
 */
static void
known_stall(void **state)
{
	(void)state;
	check_one(&scenarios[3], "newreno", true, 102);
}

/*
 * A second stall, kept as a regression test: at 10% loss, upload, seeds
 * 43 and 66, the client's retransmitted Finished is lost again while its
 * window is full of 1-RTT packets the server never processed (it had no
 * Finished yet). The lost CRYPTO data waited for window, and no probe
 * timer was armed for those 1-RTT packets before handshake confirmation
 * (RFC 9002 §6.2.1), so the server idled out; now the Handshake space is
 * probed from their send time and the probe carries the Finished.
 */
static void
known_stall2(void **state)
{
	(void)state;
	check_one(&scenarios[3], "newreno", true, 43);
	check_one(&scenarios[3], "newreno", true, 66);
}

int
main(int argc, char **argv)
{
	struct CMUnitTest tests[sizeof(scenarios) / sizeof(scenarios[0])];
	size_t i;

	if (argc > 1 && strcmp(argv[1], "known-stall") == 0) {
		const struct CMUnitTest one[] = {
			cmocka_unit_test(known_stall),
		};

		return cmocka_run_group_tests(one, NULL, NULL);
	}
	if (argc > 1 && strcmp(argv[1], "known-stall2") == 0) {
		const struct CMUnitTest one[] = {
			cmocka_unit_test(known_stall2),
		};

		return cmocka_run_group_tests(one, NULL, NULL);
	}

	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		memset(&tests[i], 0, sizeof(tests[i]));
		tests[i].name = scenarios[i].name;
		tests[i].test_func = run_scenario;
		tests[i].initial_state = (void *)&scenarios[i];
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
