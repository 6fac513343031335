/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The impairment model (emu/linkem.c) on its own: delivery times through
 * the bottleneck, drop-tail queue limits, loss rates within statistical
 * bounds for fixed seeds, burst lengths (per datagram and in time),
 * reordering only when asked, duplication, corruption, blackouts,
 * reproducibility, and the option parser on good, bad, truncated and
 * oversized input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emu/linkem.h"

#define MS	UINT64_C(1000000)	/* ns */
#define US	UINT64_C(1000)

static void
init(struct dpq_linkem *le, const char *spec)
{
	struct dpq_linkem_conf c;
	char err[128] = "";

	memset(&c, 0, sizeof(c));
	assert_int_equal(dpq_linkem_conf_parse(&c, spec, err, sizeof(err)), 0);
	assert_int_equal(dpq_linkem_init(le, &c), 0);
}

/* |x - n p| within k standard deviations of a binomial(n, p). */
static void
assert_binomial(uint64_t x, uint64_t n, double p, double k)
{
	double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));

	if (fabs((double)x - mean) > k * sd)
		fail_msg("%llu of %llu, expected %.0f +- %.0f",
				(unsigned long long)x, (unsigned long long)n,
				mean, k * sd);
}

static void
test_delay_only(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;

	(void)state;
	init(&le, "delay=25ms");
	assert_int_equal(dpq_linkem_send(&le, 0, 1200, &v), 1);
	assert_int_equal(v.fate, DPQ_LINKEM_DELIVER);
	assert_int_equal(v.at_ns[0], 25 * MS);
	assert_int_equal(dpq_linkem_send(&le, 7 * MS, 100, &v), 1);
	assert_int_equal(v.at_ns[0], 32 * MS);
	assert_int_equal(v.flip[0], 0);
	assert_int_equal(le.stats.delivered, 2);
	assert_int_equal(le.stats.delivered_bytes, 1300);
}

static void
test_serialisation(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	int i;

	(void)state;
	/* 1000 bytes at 8 Mbit/s: 1 ms each, back to back. */
	init(&le, "delay=10ms,rate=8mbit");
	for (i = 0; i < 5; i++) {
		assert_int_equal(dpq_linkem_send(&le, 0, 1000, &v), 1);
		assert_int_equal(v.at_ns[0], (uint64_t)(i + 1) * MS + 10 * MS);
	}
	assert_int_equal(dpq_linkem_backlog(&le, 0), 5000);
	assert_int_equal(dpq_linkem_backlog(&le, 2 * MS), 3000);
	assert_int_equal(dpq_linkem_backlog(&le, 5 * MS), 0);
	/* An idle link starts at once. */
	assert_int_equal(dpq_linkem_send(&le, 100 * MS, 500, &v), 1);
	assert_int_equal(v.at_ns[0], 100 * MS + MS / 2 + 10 * MS);
}

static void
test_drop_tail(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	int i, ok = 0;

	(void)state;
	/* 1 Mbit/s: 1000 B = 8 ms; the queue holds 10 of them. */
	init(&le, "rate=1mbit,queue=10000b");
	for (i = 0; i < 20; i++)
		ok += (int)dpq_linkem_send(&le, 0, 1000, &v);
	assert_int_equal(ok, 10);
	assert_int_equal(v.fate, DPQ_LINKEM_DROP_QUEUE);
	assert_int_equal(le.stats.dropped[DPQ_LINKEM_DROP_QUEUE], 10);
	assert_int_equal(le.stats.max_backlog_bytes, 10000);
	/* 40 ms later 5 have left: 5 more fit, the sixth does not. */
	for (i = 0, ok = 0; i < 6; i++)
		ok += (int)dpq_linkem_send(&le, 40 * MS, 1000, &v);
	assert_int_equal(ok, 5);
	assert_true(dpq_linkem_backlog(&le, 40 * MS) <= 10000);
	/* A datagram larger than the whole queue never fits. */
	init(&le, "rate=1mbit,queue=1000b");
	assert_int_equal(dpq_linkem_send(&le, 0, 1001, &v), 0);
}

static void
test_random_loss(void **state)
{
	static const double rates[] = { 0.001, 0.01, 0.05, 0.10, 0.30 };
	struct dpq_linkem_conf c;
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	const uint64_t n = 200000;
	unsigned int r, seed;
	uint64_t i;

	(void)state;
	for (r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (seed = 1; seed <= 3; seed++) {
			memset(&c, 0, sizeof(c));
			c.loss = rates[r];
			c.seed = seed;
			assert_int_equal(dpq_linkem_init(&le, &c), 0);
			for (i = 0; i < n; i++)
				dpq_linkem_send(&le, i * US, 1200, &v);
			/* 5 sd: a fixed seed passes or fails for good. */
			assert_binomial(le.stats.dropped[DPQ_LINKEM_DROP_LOSS],
					n, rates[r], 5);
			assert_int_equal(le.stats.delivered +
					le.stats.dropped[DPQ_LINKEM_DROP_LOSS], n);
		}
	}
}

/* Mean length of runs of consecutive losses. */
static void
test_burst_loss(void **state)
{
	struct dpq_linkem_conf c;
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	const uint64_t n = 400000;
	uint64_t i, lost = 0, runs = 0;
	bool prev = false;
	double rate, mean;

	(void)state;
	memset(&c, 0, sizeof(c));
	dpq_linkem_conf_burst(&c, 0.02, 4);
	c.seed = 42;
	assert_int_equal(dpq_linkem_init(&le, &c), 0);
	for (i = 0; i < n; i++) {
		bool l = dpq_linkem_send(&le, i * US, 1200, &v) == 0;

		if (l) {
			assert_int_equal(v.fate, DPQ_LINKEM_DROP_BURST);
			lost++;
			if (!prev)
				runs++;
		}
		prev = l;
	}
	rate = (double)lost / (double)n;
	mean = (double)lost / (double)runs;
	/* Runs are geometric with mean 4; ~2000 runs: 10% bounds are
	 * more than 5 standard errors. */
	if (fabs(rate - 0.02) > 0.002 || fabs(mean - 4) > 0.4)
		fail_msg("burst loss %.4f, mean run %.2f", rate, mean);
	/* Random loss at the same rate has runs of about 1. */
	memset(&c, 0, sizeof(c));
	c.loss = 0.02;
	assert_int_equal(dpq_linkem_init(&le, &c), 0);
	for (i = 0, lost = 0, runs = 0, prev = false; i < n; i++) {
		bool l = dpq_linkem_send(&le, i * US, 1200, &v) == 0;

		lost += l;
		runs += l && !prev;
		prev = l;
	}
	assert_true((double)lost / (double)runs < 1.1);
}

/* Runs of consecutive losses, over n datagrams gap_ns apart, through a
 * link parsed from spec: loss rate and mean run length. */
static void
loss_runs(const char *spec, uint64_t n, uint64_t gap_ns, double *rate,
		double *mean)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	uint64_t i, lost = 0, runs = 0;
	bool prev = false;

	init(&le, spec);
	for (i = 0; i < n; i++) {
		bool l = dpq_linkem_send(&le, i * gap_ns, 1200, &v) == 0;

		if (l)
			assert_int_equal(v.fate, DPQ_LINKEM_DROP_BURST);
		lost += l;
		runs += l && !prev;
		prev = l;
	}
	*rate = (double)lost / (double)n;
	*mean = runs ? (double)lost / (double)runs : 0;
}

/* The time-correlated chain: the loss rate is the fraction of time bad
 * whatever the packet rate; a bad period takes as many datagrams as cross
 * it (2 ms: 20 datagrams 100 us apart), and datagrams further apart than
 * a bad period are lost nearly independently. The per-datagram chain
 * keeps its bursts however sparse the datagrams (what made the handshake
 * copy 5 ms later, and sparse ACKs, fall in the same burst). */
static void
test_burst_time(void **state)
{
	double rate, mean;

	(void)state;
	loss_runs("burst=2%/2ms,seed=7", 2000000, 100 * US, &rate, &mean);
	/* 200 s of virtual time, ~2000 bad periods: bounds > 4 sd */
	if (fabs(rate - 0.02) > 0.003 || fabs(mean - 20) > 3)
		fail_msg("dense: loss %.4f, mean run %.2f", rate, mean);
	loss_runs("burst=2%/2ms,seed=7", 200000, 50 * MS, &rate, &mean);
	if (fabs(rate - 0.02) > 0.003 || mean > 1.1)
		fail_msg("sparse: loss %.4f, mean run %.2f", rate, mean);
	loss_runs("burst=2%/4,seed=7", 200000, 50 * MS, &rate, &mean);
	if (fabs(rate - 0.02) > 0.003 || fabs(mean - 4) > 0.4)
		fail_msg("per datagram, sparse: loss %.4f, mean run %.2f",
				rate, mean);
}

static void
test_reorder_only_when_asked(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	uint64_t i, last = 0, inversions = 0, held = 0, n = 20000;

	(void)state;
	/* Jitter alone keeps the order. */
	init(&le, "delay=20ms,jitter=5ms,seed=9");
	for (i = 0; i < n; i++) {
		assert_int_equal(dpq_linkem_send(&le, i * 100 * US, 1200, &v),
				1);
		assert_true(v.at_ns[0] >= last);
		assert_true(v.at_ns[0] >= i * 100 * US + 20 * MS);
		assert_true(v.at_ns[0] <= i * 100 * US + 25 * MS + 5 * MS);
		last = v.at_ns[0];
	}
	/* 5% held back 3 ms: packets sent 100 us apart get overtaken. */
	init(&le, "delay=20ms,reorder=5%,reorder_delay=3ms,seed=9");
	last = 0;
	for (i = 0; i < n; i++) {
		dpq_linkem_send(&le, i * 100 * US, 1200, &v);
		if (v.reordered) {
			held++;
			assert_int_equal(v.at_ns[0], i * 100 * US + 23 * MS);
		} else {
			if (v.at_ns[0] < last)
				inversions++;
			last = v.at_ns[0];
		}
	}
	assert_int_equal(inversions, 0);	/* in-order ones stay so */
	assert_int_equal(held, le.stats.reordered);
	assert_binomial(held, n, 0.05, 5);
}

static void
test_duplicate_corrupt(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	uint64_t i, dups = 0, flips = 0, n = 50000;
	uint8_t buf[100], orig[100];

	(void)state;
	init(&le, "delay=1ms,dup=10%,corrupt=20%,seed=5");
	for (i = 0; i < n; i++) {
		unsigned int k, copies = dpq_linkem_send(&le, i * US, 100, &v);

		assert_true(copies == 1 || copies == 2);
		dups += copies == 2;
		for (k = 0; k < copies; k++) {
			if (v.flip[k] == 0)
				continue;
			flips++;
			assert_true(v.flip[k] <= 800);
			memset(buf, 0x5a, sizeof(buf));
			memcpy(orig, buf, sizeof(buf));
			dpq_linkem_corrupt(buf, sizeof(buf), v.flip[k]);
			/* exactly one bit differs */
			{
				unsigned int j, bits = 0;

				for (j = 0; j < sizeof(buf); j++)
					bits += (unsigned int)
						__builtin_popcount(buf[j] ^
								orig[j]);
				assert_int_equal(bits, 1);
			}
		}
		if (copies == 2)
			assert_int_equal(v.at_ns[0], v.at_ns[1]);
	}
	assert_binomial(dups, n, 0.10, 5);
	assert_int_equal(dups, le.stats.duplicated);
	assert_binomial(flips, n + dups, 0.20, 5);
	/* A flip past the end is ignored, 0 is a no-op. */
	memset(buf, 0, sizeof(buf));
	dpq_linkem_corrupt(buf, 10, 81);
	dpq_linkem_corrupt(buf, 10, 0);
	for (i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);
}

static void
test_blackout(void **state)
{
	struct dpq_linkem le;
	struct dpq_linkem_verdict v;
	uint64_t t;

	(void)state;
	init(&le, "delay=5ms,blackout=2s+2s,blackout=10s+500ms");
	for (t = 0; t < 12000; t += 10) {
		bool dark = (t >= 2000 && t < 4000) ||
			(t >= 10000 && t < 10500);
		unsigned int n = dpq_linkem_send(&le, t * MS, 1200, &v);

		assert_int_equal(n, dark ? 0 : 1);
		if (dark)
			assert_int_equal(v.fate, DPQ_LINKEM_DROP_BLACKOUT);
	}
	assert_int_equal(le.stats.dropped[DPQ_LINKEM_DROP_BLACKOUT], 250);
}

static void
test_reproducible(void **state)
{
	struct dpq_linkem a, b, c;
	struct dpq_linkem_verdict va, vb, vc;
	const char *spec = "delay=10ms,jitter=2ms,rate=50mbit,queue=30kb,"
		"loss=3%,burst=1%/3,reorder=2%,dup=1%,corrupt=1%";
	char s1[256], s2[256];
	uint64_t i, differ = 0;

	(void)state;
	snprintf(s1, sizeof(s1), "%s,seed=77", spec);
	snprintf(s2, sizeof(s2), "%s,seed=78", spec);
	init(&a, s1);
	init(&b, s1);
	init(&c, s2);
	for (i = 0; i < 20000; i++) {
		uint64_t t = i * 50 * US;
		uint32_t len = 100 + (uint32_t)(i % 1300);

		dpq_linkem_send(&a, t, len, &va);
		dpq_linkem_send(&b, t, len, &vb);
		dpq_linkem_send(&c, t, len, &vc);
		assert_memory_equal(&va, &vb, sizeof(va));
		differ += memcmp(&va, &vc, sizeof(va)) != 0;
	}
	assert_memory_equal(&a.stats, &b.stats, sizeof(a.stats));
	assert_true(differ > 1000);
}

static void
test_init_rejects(void **state)
{
	struct dpq_linkem_conf c;
	struct dpq_linkem le;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.loss = 1.5;
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
	c.loss = NAN;
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
	c.loss = 0;
	c.duplicate = -0.1;
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
	c.duplicate = 0;
	c.n_blackout = 2;
	c.blackout[0].start_ns = 5;
	c.blackout[0].end_ns = 10;
	c.blackout[1].start_ns = 8;	/* overlaps */
	c.blackout[1].end_ns = 20;
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
	c.n_blackout = 1;
	c.blackout[0].end_ns = 5;	/* empty */
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
	c.n_blackout = DPQ_LINKEM_BLACKOUTS + 1;
	assert_int_equal(dpq_linkem_init(&le, &c), -EINVAL);
}

static void
test_parse(void **state)
{
	static const char *const bad[] = {
		"delay", "delay=", "=5ms", "delay=5parsecs", "delay=-1ms",
		"rate=fast", "rate=1e20bit", "queue=12zb", "loss=101%",
		"loss=2", "loss=abc", "burst=2%", "burst=2%/0.5", "burst=/4",
		"burst=2%/0ms", "burst=2%/1xs", "burst=2%/s",
		"blackout=2s", "blackout=2s+0", "blackout=+1s", "seed=12x",
		"colour=blue", "delay=5ms,,loss=1%", "loss=1%,",
		"delay=999999999999999999999999999999s",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1",
		"delay=1111111111111111111111111111111111111111111111111111111111"
		"11111111111111111111ms",
	};
	struct dpq_linkem_conf c;
	char err[160];
	unsigned int i;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(dpq_linkem_conf_parse(&c,
			"delay=25ms,jitter=500us,rate=1gbit,queue=64kb,loss=1%,"
			"reorder=0.02,reorder_delay=3,dup=0.5%,corrupt=0.1%,"
			"blackout=2s+1.5s,seed=0x10", err, sizeof(err)), 0);
	assert_int_equal(c.delay_us, 25000);
	assert_int_equal(c.jitter_us, 500);
	assert_int_equal(c.rate_bps, 1000000000);
	assert_int_equal(c.queue_bytes, 65536);
	assert_true(fabs(c.loss - 0.01) < 1e-12);
	assert_true(fabs(c.reorder - 0.02) < 1e-12);
	assert_int_equal(c.reorder_us, 3000);	/* bare number: ms */
	assert_true(fabs(c.duplicate - 0.005) < 1e-12);
	assert_true(fabs(c.corrupt - 0.001) < 1e-12);
	assert_int_equal(c.n_blackout, 1);
	assert_int_equal(c.blackout[0].start_ns, 2000 * MS);
	assert_int_equal(c.blackout[0].end_ns, 3500 * MS);
	assert_int_equal(c.seed, 16);
	assert_int_equal(dpq_linkem_conf_parse(&c, "burst=3%/5", err,
			sizeof(err)), 0);
	assert_true(fabs(c.ge_r - 0.2) < 1e-12);
	assert_true(c.ge_p > 0 && c.ge_loss_bad == 1);
	assert_int_equal(c.ge_bad_us, 0);
	assert_int_equal(dpq_linkem_conf_parse(&c, "burst=2%/1.5ms", err,
			sizeof(err)), 0);
	assert_true(c.ge_p == 0 && c.ge_loss_bad == 1);
	assert_int_equal(c.ge_bad_us, 1500);
	assert_int_equal(c.ge_good_us, 73500);
	assert_int_equal(dpq_linkem_conf_parse(&c, "burst=2%/3", err,
			sizeof(err)), 0);	/* back to per datagram */
	assert_true(c.ge_p > 0 && c.ge_bad_us == 0);
	assert_int_equal(dpq_linkem_conf_parse(&c, "", err, sizeof(err)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		err[0] = '\0';
		if (dpq_linkem_conf_parse(&c, bad[i], err, sizeof(err)) !=
				-EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(strlen(err) > 0);	/* says why */
	}
	/* A short error buffer truncates, never overflows. */
	assert_int_equal(dpq_linkem_conf_parse(&c, "colour=blue", err, 4),
			-EINVAL);
	assert_true(strlen(err) <= 3);
	assert_int_equal(dpq_linkem_conf_parse(&c, "colour=blue", NULL, 0),
			-EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delay_only),
		cmocka_unit_test(test_serialisation),
		cmocka_unit_test(test_drop_tail),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_burst_loss),
		cmocka_unit_test(test_burst_time),
		cmocka_unit_test(test_reorder_only_when_asked),
		cmocka_unit_test(test_duplicate_corrupt),
		cmocka_unit_test(test_blackout),
		cmocka_unit_test(test_reproducible),
		cmocka_unit_test(test_init_rejects),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
