/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-fec: what XOR-FEC and speculative retransmission buy and cost
 * (docs/fec.md), through the emulated link in virtual time (emu/sim.h).
 * Figures, not pass/fail.
 *
 * Downloads of 100 KB and 1 MB, 20 ms RTT, a 100 Mbit/s bottleneck with a
 * 256 kB drop-tail queue (about one BDP), loss in both directions: none,
 * random 0.5/1/2/5%, bursty 1/2/5% (Gilbert-Elliott stepped per
 * datagram, bursts of 3 datagrams on average, as netem's gemodel) and
 * time-bursty 1/2/5% (the same chain running in time: bad periods of
 * --burst-time, default 1 ms, on average, whatever crosses them). Each configuration runs --runs times with
 * different seeds (the same seeds for every mode, so modes meet the same
 * losses as far as their packets line up). Completion time is from the
 * client's first Initial to the last byte, handshake included. Every
 * mode sends the datagrams --spec names twice (default handshake,repair,
 * as dpquicd does). Modes (the congestion response to rebuilt packets,
 * docs/fec.md §10.1, in brackets):
 *
 *   off        the extension not offered (plain QUIC)
 *   fixed      repairs after every 8 packets [guarded]
 *   adapt      adaptive 4-16, each connection starting cold (no prior)
 *              [guarded]
 *   adapt+pr   adaptive 4-16, starting from the loss the earlier runs
 *              saw (what a shard's prior gives a new connection; what
 *              dpquicd does) [guarded]
 *   a+pr/loss  adapt+pr, but every rebuilt packet is a congestion event
 *              as for a loss [loss] (the response before guarded)
 *   fixed/ign  fixed, rebuilt packets never a congestion event [ignore]:
 *              an unsafe experiment, the bound of what FEC could give
 *
 * Also: rebuilt / lost packets (server to client), repair overhead (bytes
 * of REPAIR frames / bytes sent) and copies sent; on the clean path, the
 * goodput of a 20 MB download with adaptive FEC beside none, and the CPU
 * of the run.
 *
 *   dpq-bench-fec [--runs N] [--quick] [--size BYTES] [--cc NAME]
 *                 [--spec LIST] [--burst-time US] [--csv FILE]
 *                 [--runlog FILE] [--qlog PREFIX --qlog-run N]
 * Under each table: the p99 ratio adapt+pr / off with its 95% interval
 * (paired bootstrap over the seeds), so a difference within the noise
 * reads as such. Default 1000 runs per cell (about 8 minutes of CPU).
 * --csv writes one line per cell for bench/fec_plot.py (p99 vs loss);
 * --runlog one line per run (times, probe timeouts, losses, rebuilt,
 * the prior it started from, how a failed run ended: what sets a p99);
 * --qlog the client's and server's qlog of run N of every cell
 * (PREFIX-SIZE-LOSS-MODE-N-side). A run that fails (a connection closed,
 * e.g. by its idle timeout, or 600 s of virtual time passed) counts as
 * slower than every run that finished, so a quantile that falls on it
 * reads "fail"; the failed runs are listed under the table with why.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/qlog/qlog.h"
#include "dataplane/engine/cc.h"
#include "emu/sim.h"

#define MS	UINT64_C(1000000)
#define SEC	(1000 * MS)

enum mode { M_OFF, M_FIXED, M_ADAPT, M_ADAPT_PRIOR, M_ADAPT_LOSS,
	M_IGNORE, M_COUNT };
static const char *const mode_name[M_COUNT] = { "off", "fixed", "adapt",
	"adapt+pr", "a+pr/loss", "fixed/ign" };

struct lossc {
	const char *kind;	/* "none", "random", "burst", "tburst" */
	double p;
};
static const struct lossc losses[] = {
	{ "none", 0 }, { "random", 0.005 }, { "random", 0.01 },
	{ "random", 0.02 },
	{ "random", 0.05 }, { "burst", 0.01 }, { "burst", 0.02 },
	{ "burst", 0.05 }, { "tburst", 0.01 }, { "tburst", 0.02 },
	{ "tburst", 0.05 },
};
#define N_LOSS (sizeof(losses) / sizeof(losses[0]))
static const uint64_t sizes[] = { 100000, 1000000 };
#define N_SIZE (sizeof(sizes) / sizeof(sizes[0]))

/* 1000: a p99 is then the 10th slowest run, not the 2nd (at 200 runs
 * one cell's sign flipped between runs of the same code). */
static unsigned int runs = 1000;
static unsigned int burst_us = 1000;	/* tburst: mean bad period */
static FILE *csv;
static FILE *runlog;
static const char *qlog_prefix;
static unsigned int qlog_run;

struct qlog_file {
	FILE *f;
	struct dpq_qlog q;
	bool started;
	bool server;
};

static void
on_trace(void *ctx, const struct dpq_trace_ev *ev)
{
	struct qlog_file *qf = ctx;

	if (!qf->started) {
		struct dpq_qlog_conf c = {
			.title = "dpq-bench-fec",
			.server = qf->server,
			.reference_us = DPQ_SIM_T0_US,
		};

		qf->started = true;
		dpq_qlog_write_start(&qf->q, &c, qf->f);
	}
	dpq_qlog_write(&qf->q, ev, qf->f);
}

/* --qlog: the traces of run qlog_run of a cell, one file per side. */
static void
qlog_open(struct dpq_sim_conf *c, struct qlog_file q[2], uint64_t bytes,
		const struct lossc *l, enum mode m)
{
	char path[4096];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s-%llu-%s%g-%s-%u-%s.sqlog",
				qlog_prefix, (unsigned long long)bytes,
				l->kind, l->p * 100, mode_name[m], qlog_run,
				i ? "server" : "client");
		for (char *x = path + strlen(qlog_prefix); *x; x++)
			if (*x == '/' || *x == '+')
				*x = '_';
		q[i].server = i;
		q[i].f = fopen(path, "w");
		if (q[i].f == NULL) {
			fprintf(stderr, "dpq-bench-fec: %s: %s\n", path,
					strerror(errno));
			exit(1);
		}
	}
	c->ctrace = on_trace;
	c->ctrace_ctx = &q[0];
	c->strace = on_trace;
	c->strace_ctx = &q[1];
}
static const char *cc_name = "newreno";
static uint8_t spec_retx = DPQ_SPEC_HANDSHAKE | DPQ_SPEC_REPAIR;
static const char *spec_name = "handshake,repair";

#define CELL_FAILS	4	/* failed runs described per cell */

struct cell {
	unsigned int ok, failed;
	/* ms, every run (a failed one INFINITY): start to last byte, and
	 * handshake done to last byte */
	double *t;
	double *tx;
	char why[CELL_FAILS][512];
	uint64_t rebuilt, lost_link, repair_bytes, bytes_sent, copies;
	double cpu;
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), nearest rank. */
static double
quantile(double *v, unsigned int n, double q)
{
	size_t r;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	r = (size_t)ceil(q * n);
	return v[r == 0 ? 0 : r - 1];
}

/*
 * How sure a p99 comparison is. With 200 runs a p99 is the second slowest
 * run, and which seeds land there moves with every datagram a mode adds
 * to the chain (100 kB, bursty 1%: +4% at 200 runs, -15% at 1000); a
 * paired bootstrap over seeds (the same seed is the same
 * emulated path for both modes) gives the ratio's 95% interval:
 * resample the seeds with replacement, take each mode's p99 of the
 * resample, and read the 2.5% and 97.5% quantiles of the ratios.
 */
#define BOOT_N	1000

static uint64_t
boot_rand(uint64_t *s)
{
	/* xorshift64*: reproducible, no libc state */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* p99 ratio b/a of two cells' runs (seed order, before anything sorted
 * them): the point estimate and a 95% interval. A failed run is INFINITY,
 * so a resample whose a-p99 is a failure gives 0 and whose b-p99 is one
 * gives inf: the interval says so. */
static void
p99_ratio_ci(const double *a, const double *b, unsigned int n, double *est,
		double *lo, double *hi)
{
	double *ra = malloc(n * sizeof(*ra)), *rb = malloc(n * sizeof(*rb));
	double *r = malloc(BOOT_N * sizeof(*r));
	uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
	unsigned int i, j;

	if (ra == NULL || rb == NULL || r == NULL)
		exit(1);
	memcpy(ra, a, n * sizeof(*ra));
	memcpy(rb, b, n * sizeof(*rb));
	*est = quantile(rb, n, 0.99) / quantile(ra, n, 0.99);
	for (i = 0; i < BOOT_N; i++) {
		for (j = 0; j < n; j++) {
			unsigned int k = (unsigned int)(boot_rand(&seed) % n);

			ra[j] = a[k];
			rb[j] = b[k];
		}
		r[i] = quantile(rb, n, 0.99) / quantile(ra, n, 0.99);
		if (isnan(r[i]))	/* both failures: no better, no worse */
			r[i] = 1;
	}
	*lo = quantile(r, BOOT_N, 0.025);
	*hi = quantile(r, BOOT_N, 0.975);
	free(ra);
	free(rb);
	free(r);
}

static void
link_spec(char *buf, size_t n, const struct lossc *l)
{
	int k = snprintf(buf, n, "delay=10ms,rate=100mbit,queue=256kb");

	if (strcmp(l->kind, "random") == 0)
		snprintf(buf + k, n - (size_t)k, ",loss=%g%%", l->p * 100);
	else if (strcmp(l->kind, "burst") == 0)
		snprintf(buf + k, n - (size_t)k, ",burst=%g%%/3", l->p * 100);
	else if (strcmp(l->kind, "tburst") == 0)
		snprintf(buf + k, n - (size_t)k, ",burst=%g%%/%uus",
				l->p * 100, burst_us);
}

static void
conf_for(struct dpq_sim_conf *c, const char *spec, uint64_t seed,
		enum mode m, uint32_t prior_ppm)
{
	char err[160];

	memset(c, 0, sizeof(*c));
	if (dpq_linkem_conf_parse(&c->c2s, spec, err, sizeof(err)) != 0 ||
	    dpq_linkem_conf_parse(&c->s2c, spec, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpq-bench-fec: %s: %s\n", spec, err);
		exit(1);
	}
	c->seed = seed;
	c->c2s.seed = seed * 2 + 1;
	c->s2c.seed = seed * 2 + 2;
	c->client.cc_name = c->server.cc_name = cc_name;
	c->client.max_data = c->server.max_data = 16 << 20;
	c->client.max_stream_data = c->server.max_stream_data = 16 << 20;
	if (m != M_OFF) {
		c->client.fec_max_group = c->server.fec_max_group = 64;
		c->server.fec = m == M_FIXED || m == M_IGNORE ?
			(struct dpq_fec_policy){ DPQ_FEC_FIXED, 8, 8 } :
			(struct dpq_fec_policy){ DPQ_FEC_ADAPTIVE, 16, 4 };
		if (m == M_ADAPT_PRIOR || m == M_ADAPT_LOSS)
			c->server.fec_loss_prior_ppm = prior_ppm;
		c->server.fec_cc = m == M_IGNORE ? DPQ_CC_FEC_IGNORE :
			m == M_ADAPT_LOSS ? DPQ_CC_FEC_LOSS :
			DPQ_CC_FEC_GUARDED;
	}
	c->client.spec_retx = c->server.spec_retx = spec_retx;
}

/* How a run failed: who closed and why, when, and what each direction of
 * the link lost (a dead return path shows as every datagram lost). */
static void
fail_why(char *buf, const struct dpq_sim_xfer_result *r, unsigned int seed)
{
	snprintf(buf, 512, "seed %u: %s at %.1f s (the cap: 600 s); lost on the "
			"link c2s %llu of %llu, s2c %llu of %llu datagrams; "
			"server probe timeouts %llu", seed,
			r->closed[0] ? r->closed : "no connection closed",
			(double)r->done_ns / 1e9,
			(unsigned long long)(r->c2s.offered -
				r->c2s.delivered + r->c2s.duplicated),
			(unsigned long long)r->c2s.offered,
			(unsigned long long)(r->s2c.offered -
				r->s2c.delivered + r->s2c.duplicated),
			(unsigned long long)r->s2c.offered,
			(unsigned long long)r->server.ptos);
}

static void
run_cell(struct cell *cl, uint64_t bytes, const struct lossc *l, enum mode m)
{
	struct dpq_fec_prior prior = { 0 };
	char spec[160];
	unsigned int k;

	memset(cl, 0, sizeof(*cl));
	cl->t = calloc(runs, sizeof(*cl->t));
	cl->tx = calloc(runs, sizeof(*cl->tx));
	if (cl->t == NULL || cl->tx == NULL)
		exit(1);
	link_spec(spec, sizeof(spec), l);
	for (k = 0; k < runs; k++) {
		struct dpq_sim_conf c;
		struct dpq_sim_xfer x = { .bytes = bytes, .streams = 1,
			.max_ns = 600 * SEC };
		struct dpq_sim_xfer_result r;
		uint64_t lost;

		struct qlog_file q[2] = { { 0 } };

		conf_for(&c, spec, k + 1, m, dpq_fec_prior_ppm(&prior));
		if (qlog_prefix != NULL && k + 1 == qlog_run)
			qlog_open(&c, q, bytes, l, m);
		dpq_sim_transfer(&c, &x, &r);
		if (q[0].f != NULL) {
			fclose(q[0].f);
			fclose(q[1].f);
		}
		cl->cpu += r.cpu_s;
		lost = r.s2c.dropped[DPQ_LINKEM_DROP_LOSS] +
			r.s2c.dropped[DPQ_LINKEM_DROP_BURST];
		/* What the shard would fold when the connection closes. */
		dpq_fec_prior_fold(&prior, r.server.pkts_sent,
				r.server.pkts_lost + r.server.fec_peer_recovered);
		if (runlog != NULL)
			fprintf(runlog, "%llu,%s,%g,%s,%u,%d,%.3f,%.3f,%.3f,"
				"%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
				"%llu,%u,%llu,%llu,%llu,%llu,\"%s\"\n",
				(unsigned long long)bytes, l->kind, l->p,
				mode_name[m], k + 1, r.ok,
				(double)r.done_ns / 1e6,
				(double)r.handshake_ns / 1e6,
				(double)r.stream_ns[0] / 1e6,
				(unsigned long long)r.server.ptos,
				(unsigned long long)r.client.ptos,
				(unsigned long long)r.server.pkts_lost,
				(unsigned long long)r.client.pkts_lost,
				(unsigned long long)r.client.fec_recovered,
				(unsigned long long)lost,
				(unsigned long long)(r.c2s.dropped[
					DPQ_LINKEM_DROP_LOSS] + r.c2s.dropped[
					DPQ_LINKEM_DROP_BURST]),
				(unsigned long long)r.server.fec_groups,
				(unsigned long long)r.server.pkts_sent,
				dpq_fec_prior_ppm(&prior),
				(unsigned long long)r.server.spec_sent,
				(unsigned long long)r.server.spec_dropped,
				(unsigned long long)r.client.spec_sent,
				(unsigned long long)r.client.spec_dropped,
				r.ok ? "" : r.closed[0] ? r.closed :
				"time cap");
		if (!r.ok) {
			if (cl->failed < CELL_FAILS)
				fail_why(cl->why[cl->failed], &r, k + 1);
			cl->t[k] = cl->tx[k] = INFINITY;
			cl->failed++;
			continue;
		}
		cl->tx[k] = (double)r.stream_ns[0] / 1e6;
		cl->t[k] = (double)r.done_ns / 1e6;
		cl->ok++;
		cl->rebuilt += r.client.fec_recovered;
		cl->lost_link += lost;
		cl->repair_bytes += r.server.fec_repair_bytes;
		cl->bytes_sent += r.server.bytes_sent;
		cl->copies += r.server.spec_sent + r.client.spec_sent;
	}
}

static void
label(char *buf, size_t n, const struct lossc *l)
{
	if (l->p == 0)
		snprintf(buf, n, "none");
	else
		snprintf(buf, n, "%s %g%%", l->kind, l->p * 100);
}

/* "median/p99", "fail" for a quantile on a failed run, "!N" when N runs
 * failed. */
static void
fmt_q(char *b, size_t n, double *v, unsigned int runs_n, unsigned int failed)
{
	char m[24], p[24];
	double qm = quantile(v, runs_n, 0.5), qp = quantile(v, runs_n, 0.99);

	snprintf(m, sizeof(m), isinf(qm) ? "fail" : "%.0f", qm);
	snprintf(p, sizeof(p), isinf(qp) ? "fail" : "%.0f", qp);
	if (failed)
		snprintf(b, n, "%.20s/%.20s!%u", m, p, failed);
	else
		snprintf(b, n, "%s/%s", m, p);
}

/* One table of median / p99 over cells[][] of t (total) or tx. */
static void
print_times(struct cell cells[N_LOSS][M_COUNT], bool xfer)
{
	unsigned int li, m;

	printf("%-12s", "loss");
	for (m = 0; m < M_COUNT; m++)
		printf(" %13s", mode_name[m]);
	printf("\n");
	for (li = 0; li < N_LOSS; li++) {
		char lbl[32];

		label(lbl, sizeof(lbl), &losses[li]);
		printf("%-12s", lbl);
		for (m = 0; m < M_COUNT; m++) {
			struct cell *cl = &cells[li][m];
			double *v = xfer ? cl->tx : cl->t;
			char b[64];

			fmt_q(b, sizeof(b), v, cl->ok + cl->failed,
					cl->failed);
			printf(" %13s", b);
		}
		printf("\n");
	}
}

static void
print_size(uint64_t bytes)
{
	static struct cell cells[N_LOSS][M_COUNT];
	double ratio[N_LOSS][3];	/* adapt+pr / off p99: est, lo, hi */
	unsigned int li, m, k;
	double cpu = 0;

	for (li = 0; li < N_LOSS; li++) {
		for (m = 0; m < M_COUNT; m++)
			run_cell(&cells[li][m], bytes, &losses[li],
					(enum mode)m);
		/* Before the quantiles below sort the runs. */
		p99_ratio_ci(cells[li][M_OFF].t, cells[li][M_ADAPT_PRIOR].t,
				runs, &ratio[li][0], &ratio[li][1],
				&ratio[li][2]);
	}
	for (li = 0; li < N_LOSS; li++)
		for (m = 0; m < M_COUNT; m++) {
			struct cell *cl = &cells[li][m];

			cpu += cl->cpu;
			if (csv != NULL)
				fprintf(csv, "%llu,%s,%g,%s,%u,%u,%.3f,%.3f,"
						"%.3f,%.3f,%llu,%llu,%llu,%llu,"
						"%llu\n",
						(unsigned long long)bytes,
						losses[li].kind, losses[li].p,
						mode_name[m], cl->ok, cl->failed,
						quantile(cl->t, runs, 0.5),
						quantile(cl->t, runs, 0.99),
						quantile(cl->tx, runs, 0.5),
						quantile(cl->tx, runs, 0.99),
						(unsigned long long)cl->rebuilt,
						(unsigned long long)cl->lost_link,
						(unsigned long long)cl->repair_bytes,
						(unsigned long long)cl->bytes_sent,
						(unsigned long long)cl->copies);
		}
	printf("\n%llu kB download, 20 ms RTT, 100 Mbit/s, 256 kB queue, %s, "
			"spec %s, %u runs per cell; burst: bursts of 3 "
			"datagrams on average (the chain steps per datagram), "
			"tburst: bad periods of %u us on average (the chain runs "
			"in time)\n\ncompletion time, ms "
			"from the first Initial to the last byte: median / p99\n",
			(unsigned long long)(bytes / 1000), cc_name, spec_name,
			runs, burst_us);
	print_times(cells, false);
	printf("\ntransfer time, ms from the handshake's end to the last "
			"byte: median / p99\n");
	print_times(cells, true);
	printf("\nrebuilt/lost (server to client) | repair bytes / bytes "
			"sent | speculative copies per run\n");
	printf("%-12s", "loss");
	for (m = M_FIXED; m < M_COUNT; m++)
		printf(" %17s", mode_name[m]);
	printf("\n");
	for (li = 0; li < N_LOSS; li++) {
		char lbl[32];

		label(lbl, sizeof(lbl), &losses[li]);
		printf("%-12s", lbl);
		for (m = M_FIXED; m < M_COUNT; m++) {
			struct cell *cl = &cells[li][m];
			char v[48];

			snprintf(v, sizeof(v), "%3.0f%% %4.1f%% %.0f",
					cl->lost_link ? 100.0 * cl->rebuilt /
					cl->lost_link : 0,
					cl->bytes_sent ? 100.0 *
					cl->repair_bytes / cl->bytes_sent : 0,
				cl->ok ? (double)cl->copies / cl->ok : 0);
			printf(" %17s", v);
		}
		printf("\n");
	}
	printf("\np99 completion time, adapt+pr / off, with its 95%% "
			"interval (paired bootstrap over the %u seeds, %u "
			"resamples): below 1 is FEC faster\n", runs, BOOT_N);
	for (li = 0; li < N_LOSS; li++) {
		char lbl[32];

		if (losses[li].p == 0)
			continue;
		label(lbl, sizeof(lbl), &losses[li]);
		if (ratio[li][2] == 0) {	/* off's p99 failed always */
			printf("%-12s  off's p99 is a failed run in every "
					"resample: lower\n", lbl);
			continue;
		}
		printf("%-12s %5.2f  [%4.2f, %4.2f]%s\n", lbl, ratio[li][0],
				ratio[li][1], ratio[li][2],
				runs < 10 ? "  (too few runs to tell)" :
				ratio[li][2] < 1 ? "  lower" :
				ratio[li][1] > 1 ? "  HIGHER" : "  not "
				"distinguishable at this many runs");
	}
	printf("(%.1f s of CPU; !N: N runs failed, counted as slower than "
			"every run that finished; fail: the quantile is a failed "
			"run)\n", cpu);
	for (li = 0; li < N_LOSS; li++)
		for (m = 0; m < M_COUNT; m++) {
			struct cell *cl = &cells[li][m];
			char lbl[32];

			label(lbl, sizeof(lbl), &losses[li]);
			for (k = 0; k < cl->failed && k < CELL_FAILS; k++)
				printf("failed, %s, %s: %s\n", lbl,
						mode_name[m], cl->why[k]);
			free(cl->t);
			free(cl->tx);
		}
	fflush(stdout);
}

/* Clean path, long transfer: adaptive FEC against none, goodput and CPU
 * (nothing should differ: no loss, no repair), cold and with the prior
 * the earlier clean runs give (a shard's: what dpquicd does). */
static void
clean_goodput(void)
{
	static const enum mode ms[3] = { M_OFF, M_ADAPT, M_ADAPT_PRIOR };
	static const char *const spec = "delay=10ms,rate=1gbit,queue=2500kb";
	double g[3][64], cpu[3] = { 0, 0, 0 };
	uint64_t rb[3] = { 0, 0, 0 };
	unsigned int i, k, n = runs < 20 ? runs : 20, ok[3] = { 0, 0, 0 };

	for (i = 0; i < 3; i++) {
		struct dpq_fec_prior prior = { 0 };

		for (k = 0; k < n; k++) {
			struct dpq_sim_conf c;
			struct dpq_sim_xfer x = { .bytes = 20000000,
				.streams = 1, .max_ns = 600 * SEC };
			struct dpq_sim_xfer_result r;

			conf_for(&c, spec, k + 1, ms[i],
					dpq_fec_prior_ppm(&prior));
			dpq_sim_transfer(&c, &x, &r);
			dpq_fec_prior_fold(&prior, r.server.pkts_sent,
					r.server.pkts_lost +
					r.server.fec_peer_recovered);
			cpu[i] += r.cpu_s;
			rb[i] += r.server.fec_repair_bytes;
			if (r.ok)
				g[i][ok[i]++] = r.goodput_bps / 1e6;
		}
	}
	printf("\nclean path, 20 MB, 20 ms RTT, 1 Gbit/s: goodput median of "
			"%u runs: off %.1f Mbit/s, adaptive %.1f Mbit/s "
			"(ratio %.4f), adapt+pr %.1f Mbit/s (ratio %.4f); "
			"repair bytes %llu / %llu; CPU per run off %.3f s, "
			"adaptive %.3f s (ratio %.3f)\n", n,
			quantile(g[0], ok[0], 0.5), quantile(g[1], ok[1], 0.5),
			quantile(g[1], ok[1], 0.5) / quantile(g[0], ok[0], 0.5),
			quantile(g[2], ok[2], 0.5),
			quantile(g[2], ok[2], 0.5) / quantile(g[0], ok[0], 0.5),
			(unsigned long long)rb[1], (unsigned long long)rb[2],
			cpu[0] / n, cpu[1] / n, cpu[1] / cpu[0]);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "csv", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "cc", required_argument, NULL, 'C' },
		{ "spec", required_argument, NULL, 'S' },
		{ "runlog", required_argument, NULL, 'R' },
		{ "qlog", required_argument, NULL, 'Q' },
		{ "qlog-run", required_argument, NULL, 'N' },
		{ "burst-time", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *csv_path = NULL;
	uint64_t only = 0;
	unsigned int i;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = (unsigned int)strtoul(optarg, &end, 10);
			if (*end != '\0' || runs < 1 || runs > 100000) {
				fprintf(stderr, "dpq-bench-fec: --runs wants "
					"1..100000\n");
				return 2;
			}
			break;
		case 'q':
			runs = 20;
			break;
		case 'B':
			burst_us = (unsigned int)strtoul(optarg, &end, 10);
			if (*end != '\0' || burst_us < 1 ||
			    burst_us > 10000000) {
				fprintf(stderr, "dpq-bench-fec: --burst-time "
					"wants 1..10000000 us\n");
				return 2;
			}
			break;
		case 'c':
			csv_path = optarg;
			break;
		case 'Q':
			qlog_prefix = optarg;
			break;
		case 'N':
			qlog_run = (unsigned int)strtoul(optarg, &end, 10);
			if (*end != '\0' || qlog_run < 1) {
				fprintf(stderr, "dpq-bench-fec: --qlog-run "
					"wants a run number from 1\n");
				return 2;
			}
			break;
		case 'R':
			runlog = fopen(optarg, "w");
			if (runlog == NULL) {
				fprintf(stderr, "dpq-bench-fec: %s: %s\n",
					optarg, strerror(errno));
				return 1;
			}
			fprintf(runlog, "bytes,loss_kind,loss,mode,seed,ok,"
				"done_ms,handshake_ms,xfer_ms,server_ptos,"
				"client_ptos,server_lost,client_lost,rebuilt,"
				"lost_s2c,lost_c2s,repairs,server_pkts,"
				"prior_ppm,server_spec,server_spec_dropped,"
				"client_spec,client_spec_dropped,failed\n");
			break;
		case 'C':
			if (dpq_cc_find(optarg) == NULL) {
				fprintf(stderr, "dpq-bench-fec: --cc: unknown "
					"congestion controller %s\n", optarg);
				return 2;
			}
			cc_name = optarg;
			break;
		case 'S':
			if (dpq_conn_spec_parse(optarg, &spec_retx) != 0) {
				fprintf(stderr, "dpq-bench-fec: --spec: off, "
					"all, or handshake,tail,repair\n");
				return 2;
			}
			spec_name = optarg;
			break;
		case 's':
			only = strtoull(optarg, &end, 10);
			if (*end != '\0' || (only != sizes[0] &&
			    only != sizes[1])) {
				fprintf(stderr, "dpq-bench-fec: --size is "
					"100000 or 1000000\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: dpq-bench-fec [--runs N] "
				"[--quick] [--size BYTES] [--cc NAME] "
				"[--spec LIST] [--burst-time US] [--csv FILE] "
				"[--runlog FILE] [--qlog PREFIX --qlog-run N]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if ((qlog_prefix == NULL) != (qlog_run == 0)) {
		fprintf(stderr, "dpq-bench-fec: --qlog and --qlog-run go "
			"together\n");
		return 2;
	}
	if (csv_path != NULL) {
		csv = fopen(csv_path, "w");
		if (csv == NULL) {
			fprintf(stderr, "dpq-bench-fec: %s: %s\n", csv_path,
				strerror(errno));
			return 1;
		}
		fprintf(csv, "bytes,loss_kind,loss,mode,ok,failed,median_ms,"
			"p99_ms,xfer_median_ms,xfer_p99_ms,rebuilt,lost,"
			"repair_bytes,bytes_sent,copies\n");
	}
	printf("XOR-FEC through the emulated link (virtual time), %s\n"
		"modes: off = plain QUIC; fixed = a repair per 8 packets; adapt = "
		"adaptive 4-16\nfrom no loss; adapt+pr = from the loss earlier "
		"runs saw (a shard's prior: run k\nof a cell starts from the "
		"loss of its runs 1..k-1 on the same emulated path,\nrun 1 "
		"from none);\nrebuilt packets a congestion event "
		"only with signs of congestion (guarded),\nbut a+pr/loss: always "
		"(as a loss), fixed/ign: never (unsafe experiment)\n",
		cc_name);
	for (i = 0; i < N_SIZE; i++)
		if (only == 0 || only == sizes[i])
			print_size(sizes[i]);
	if (only == 0)
		clean_goodput();
	if (csv != NULL)
		fclose(csv);
	if (runlog != NULL)
		fclose(runlog);
	return 0;
}
