/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-xor: XOR-accumulate throughput of each XOR-FEC kernel
 * (dataplane/fec/xor.h) beside memcpy of the same bytes and a plain C
 * byte loop built with this program's flags (generic x86-64 -O2, what the
 * compiler does without help), all measured in the same run.
 *
 * Two shapes, 1350-byte payloads (a full 1-RTT packet):
 *   one    xor_into(acc, pkt): one packet per call
 *   burst  xor_burst(acc, 32 packets): the FEC pass over a burst
 * Figures: median over REPS repetitions of ns per packet, GB/s of source
 * bytes, and the ratio to memcpy of the same bytes. The 32 packets
 * (43 KB) stay cache resident, as a burst just built or just opened is.
 * Usage: dpq-bench-xor [reps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/fec/xor.h"

#define PKT	1350
#define BURST	32
#define PASSES	64	/* bursts per repetition */
#define REPS_DEFAULT 51

static uint8_t pkts[BURST][PKT + 64];
static uint8_t acc[PKT + 64];
static uint8_t copy[BURST][PKT + 64];

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Keep the compiler from dropping or merging the work. */
static inline void
clobber(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* What plain C gives without vector code: the loop a first version
 * would write. */
static void __attribute__((noinline))
plain_loop(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] ^= src[i];
}

enum shape { S_MEMCPY, S_PLAIN, S_ONE, S_BURST };

static double
run_once(enum shape s, const struct dpq_xor_impl *x)
{
	const uint8_t *srcs[BURST];
	uint16_t lens[BURST];
	double t0;
	int pass, j;

	for (j = 0; j < BURST; j++) {
		srcs[j] = pkts[j];
		lens[j] = PKT;
	}
	t0 = now_ns();
	for (pass = 0; pass < PASSES; pass++) {
		switch (s) {
		case S_MEMCPY:
			for (j = 0; j < BURST; j++) {
				memcpy(copy[j], pkts[j], PKT);
				clobber(copy[j]);
			}
			break;
		case S_PLAIN:
			for (j = 0; j < BURST; j++)
				plain_loop(acc, pkts[j], PKT);
			break;
		case S_ONE:
			for (j = 0; j < BURST; j++)
				x->xor_into(acc, pkts[j], PKT);
			break;
		case S_BURST:
			x->xor_burst(acc, srcs, lens, BURST);
			break;
		}
		clobber(acc);
	}
	return (now_ns() - t0) / (PASSES * BURST);
}

static double
median_ns(enum shape s, const struct dpq_xor_impl *x, int reps)
{
	double *v = calloc((size_t)reps, sizeof(*v)), m;
	int i;

	if (v == NULL)
		exit(1);
	for (i = 0; i < 3; i++)
		run_once(s, x);		/* warm-up */
	for (i = 0; i < reps; i++)
		v[i] = run_once(s, x);
	qsort(v, (size_t)reps, sizeof(*v), cmp_double);
	m = v[reps / 2];
	free(v);
	return m;
}

static void
row(const char *name, const char *shape, double ns, double memcpy_ns)
{
	printf("%-8s %-6s %9.1f %9.1f %12.2f\n", name, shape, ns,
			PKT / ns, memcpy_ns / ns);
}

int
main(int argc, char **argv)
{
	const struct dpq_xor_impl *x;
	int reps = argc > 1 ? atoi(argv[1]) : REPS_DEFAULT;
	double mc;
	size_t i;
	int j;

	if (reps < 1) {
		fprintf(stderr, "usage: dpq-bench-xor [reps >= 1]\n");
		return 2;
	}
	for (j = 0; j < BURST; j++)
		for (i = 0; i < PKT; i++)
			pkts[j][i] = (uint8_t)(i * 31 + (size_t)j * 7);

	printf("XOR-accumulate of %d-byte packets, median of %d runs; "
			"default kernel here: %s\n", PKT, reps,
			dpq_xor_impl_best()->name);
	printf("%-8s %-6s %9s %9s %12s\n", "kernel", "shape", "ns/pkt",
			"GB/s", "vs memcpy");
	mc = median_ns(S_MEMCPY, NULL, reps);
	row("memcpy", "copy", mc, mc);
	row("plain-C", "one", median_ns(S_PLAIN, NULL, reps), mc);
	for (i = 0; (x = dpq_xor_impl_get(i)) != NULL; i++) {
		if (!x->supported()) {
			printf("%-8s (not supported by this CPU)\n", x->name);
			continue;
		}
		row(x->name, "one", median_ns(S_ONE, x, reps), mc);
		row(x->name, "burst", median_ns(S_BURST, x, reps), mc);
	}
	printf("(vs memcpy > 1: faster than copying the same bytes)\n");
	return 0;
}
