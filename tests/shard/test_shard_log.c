/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shard's peer warnings (dataplane/shard/shard_log.c): at most
 * DPQ_SHARD_WARN_PER_S lines a second, the rest counted and reported by
 * the next line that passes; nothing at all when dpquic.peer is off.
 * rte_log works without EAL: the lines go to a memory stream here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_log.h>

#include "dataplane/engine/errors.h"
#include "dataplane/shard/shard_log.h"

static char *buf;
static size_t buflen;
static FILE *mem;

static int
setup(void **state)
{
	(void)state;
	buf = NULL;
	buflen = 0;
	mem = open_memstream(&buf, &buflen);
	assert_non_null(mem);
	fflush(mem);	/* buf: a valid empty string from here on */
	assert_int_equal(rte_openlog_stream(mem), 0);
	rte_log_set_level(dpq_logtype_peer, RTE_LOG_WARNING);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rte_openlog_stream(NULL);
	fclose(mem);
	free(buf);
	buf = NULL;
	return 0;
}

static unsigned int
count(const char *needle)
{
	const char *p = buf;
	unsigned int n = 0;

	fflush(mem);
	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return n;
}

static void
rate_limited(void **state)
{
	struct dpq_shard_warn w = { 0 };
	struct dpq_conn_close_info ci = { 0 };
	uint64_t t0 = 5000000;
	unsigned int i, shown = 0;

	(void)state;
	ci.error_code = DPQ_TE_FLOW_CONTROL_ERROR;
	snprintf(ci.reason, sizeof(ci.reason), "stream 4 over its limit");
	/* 25 violations within half a second: 10 lines, 15 counted */
	for (i = 0; i < 25; i++)
		shown += dpq_shard_log_peer_error(&w, 3, "198.18.0.1:5000",
				&ci, t0 + i * 20000);
	assert_int_equal(shown, DPQ_SHARD_WARN_PER_S);
	assert_int_equal(count("peer 198.18.0.1:5000 (shard 3): "
		"FLOW_CONTROL_ERROR (0x3) \"stream 4 over its limit\": its "
		"connection is closed\n"), DPQ_SHARD_WARN_PER_S);
	assert_int_equal(w.suppressed, 15);
	/* the next second: printed, with what was left out */
	assert_true(dpq_shard_log_peer_error(&w, 3, "198.18.0.1:5001", &ci,
			t0 + 1200000));
	assert_int_equal(count("(15 more like it not shown)"), 1);
	assert_int_equal(w.suppressed, 0);
	/* a TLS alert is named as such */
	ci.error_code = 0x178;
	ci.reason[0] = '\0';
	assert_true(dpq_shard_log_peer_error(&w, 0, "[2001:db8::1]:443", &ci,
			t0 + 1300000));
	assert_int_equal(count("CRYPTO_ERROR (TLS alert 120): its "), 1);
}

/* Datagrams the listener dropped: DEBUG lines, limited like the
 * warnings but by their own limiter. */
static void
drop_lines(void **state)
{
	struct dpq_shard_warn w = { 0 };
	unsigned int i, shown = 0;

	(void)state;
	assert_false(dpq_shard_log_drop(&w, 1, "198.18.0.3:4000",
			"drop_malformed", 77, 1));	/* WARNING: off */
	assert_int_equal(count("dropped"), 0);
	rte_log_set_level(dpq_logtype_peer, RTE_LOG_DEBUG);
	for (i = 0; i < 40; i++)
		shown += dpq_shard_log_drop(&w, 1, "198.18.0.3:4000",
				"drop_malformed", 77, 2000000 + i);
	assert_int_equal(shown, DPQ_SHARD_WARN_PER_S);
	assert_int_equal(count("peer 198.18.0.3:4000 (shard 1): datagram of "
		"77 bytes dropped: drop_malformed\n"), DPQ_SHARD_WARN_PER_S);
	assert_true(dpq_shard_log_drop(&w, 1, "198.18.0.3:4000",
			"drop_vn_small", 1199, 3000001));
	assert_int_equal(count("drop_vn_small (30 more like it not "
		"shown)"), 1);
}

/* An Initial with a forged Retry token: a WARNING naming the peer, at
 * the default level, limited with the protocol errors. */
static void
peer_warn(void **state)
{
	struct dpq_shard_warn w = { 0 };
	unsigned int i, shown = 0;

	(void)state;
	for (i = 0; i < 12; i++)
		shown += dpq_shard_log_peer_warn(&w, 2, "198.18.0.9:777",
				"Initial with an invalid Retry token", 10 + i);
	assert_int_equal(shown, DPQ_SHARD_WARN_PER_S);
	assert_int_equal(count("peer 198.18.0.9:777 (shard 2): Initial with "
		"an invalid Retry token\n"), DPQ_SHARD_WARN_PER_S);
	assert_true(dpq_shard_log_peer_warn(&w, 2, "198.18.0.9:777", "x",
			2000000));
	assert_int_equal(count("x (2 more like it not shown)"), 1);
}

/* A flood: the first event at once with the totals, then one summary of
 * what changed per DPQ_SHARD_FLOOD_EVERY_US however many events, and
 * nothing when nothing changed. */
static void
flood_summary(void **state)
{
	struct dpq_shard_flood_log fl = { 0 };
	struct dpq_shard_flood f = { 0 };
	uint64_t t = 7000000, i;
	unsigned int shown = 0;

	(void)state;
	assert_false(dpq_shard_log_flood(&fl, 0, &f, 0, t));	/* no change */
	f.retry_halfopen = 1;
	assert_true(dpq_shard_log_flood(&fl, 0, &f, 130, t));
	assert_int_equal(count("shard 0: a flood of new connections "
		"(130 handshakes half-open): so far 1 Initials answered with "
		"a Retry, 0 replies over their rate dropped, 0 half-open "
		"connections evicted, 0 new connections refused"), 1);
	/* 100,000 events in the next 9.9 s: silent */
	for (i = 1; i <= 100000; i++) {
		f.retry_halfopen++;
		if (i % 10 == 0)
			f.reply_rate_drops++;
		shown += dpq_shard_log_flood(&fl, 0, &f, 900,
				t + i * 99);
	}
	assert_int_equal(shown, 0);
	f.evicted = 3;
	f.refused = 4;
	assert_true(dpq_shard_log_flood(&fl, 0, &f, 1000,
			t + DPQ_SHARD_FLOOD_EVERY_US));
	assert_int_equal(count("(1000 handshakes half-open): in the last 10 s "
		"100000 Initials answered with a Retry, 10000 replies over "
		"their rate dropped, 3 half-open connections evicted, 4 new "
		"connections refused"), 1);
	/* the flood is over: nothing new, nothing printed */
	assert_false(dpq_shard_log_flood(&fl, 0, &f, 0,
			t + 5 * DPQ_SHARD_FLOOD_EVERY_US));
	assert_int_equal(count("flood"), 2);
	/* WARNING off: nothing */
	rte_log_set_level(dpq_logtype_peer, RTE_LOG_ERR);
	f.refused++;
	assert_false(dpq_shard_log_flood(&fl, 0, &f, 0,
			t + 9 * DPQ_SHARD_FLOOD_EVERY_US));
	assert_int_equal(count("flood"), 2);
}

static void
level_off(void **state)
{
	struct dpq_shard_warn w = { 0 };
	struct dpq_conn_close_info ci = { .error_code = 0xa };

	(void)state;
	rte_log_set_level(dpq_logtype_peer, RTE_LOG_ERR);
	assert_false(dpq_shard_log_peer_error(&w, 0, "198.18.0.1:1", &ci, 1));
	assert_int_equal(count("peer "), 0);
	assert_int_equal(w.suppressed, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(drop_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_warn, setup, teardown),
		cmocka_unit_test_setup_teardown(flood_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(level_off, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
