/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-emu: dpquic through the emulated link, in virtual time
 * (emu/sim.h), medians over seeds. Figures, not pass/fail.
 *
 *   loss    goodput vs random loss (0, 0.1, 1, 5%) at 20 ms RTT and a
 *           1 Gbit/s bottleneck, for each congestion controller
 *   hol     head-of-line blocking: 10 concurrent streams at 2% loss,
 *           per-stream completion times, beside the same bytes on one
 *           stream (when each tenth of it was delivered in order)
 *   pacing  loss rate and goodput through a shallow-buffer bottleneck,
 *           pacing on and off, for each congestion controller
 *
 * --csv prints machine-readable lines too (bench/bench_loss.sh puts the
 * kernel TCP figures measured through dpq-linkem beside them).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/engine/cc.h"
#include "emu/sim.h"

#define MS	UINT64_C(1000000)
#define SEC	(1000 * MS)
#define MAX_SEEDS 200

static unsigned int seeds = 5;
static bool csv, quick;

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned int n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
link_conf(struct dpq_sim_conf *c, const char *spec, uint64_t seed)
{
	char err[160];

	memset(c, 0, sizeof(*c));
	if (dpq_linkem_conf_parse(&c->c2s, spec, err, sizeof(err)) != 0 ||
	    dpq_linkem_conf_parse(&c->s2c, spec, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpq-bench-emu: %s: %s\n", spec, err);
		exit(1);
	}
	c->seed = seed;
	c->c2s.seed = seed * 2 + 1;
	c->s2c.seed = seed * 2 + 2;
}

/* ---- goodput vs loss ------------------------------------------------------ */

static const double loss_rates[] = { 0, 0.001, 0.01, 0.05 };
/* Bytes per run: enough to leave slow start at each loss rate without
 * minutes of virtual time at the lossy end. bench_loss.sh sends the same
 * over kernel TCP. */
static const uint64_t loss_bytes[] = { 200000000, 50000000, 10000000,
	3000000 };

static int
bench_loss(void)
{
	const struct dpq_cc_ops *ops;
	double cpu = 0, vt = 0;
	unsigned int li, k, ok;
	size_t ci;

	printf("goodput vs random loss (both directions), 20 ms RTT, 1 Gbit/s "
			"bottleneck, 2.5 MB drop-tail queue (1 BDP), "
			"download;\nMbit/s, median of %u seeds (goodput = bytes "
			"/ time from handshake to last byte)\n\n", seeds);
	printf("%-6s %7s", "loss", "bytes");
	for (ci = 0; (ops = dpq_cc_get(ci)) != NULL; ci++)
		printf(" %12s", ops->name);
	printf("\n");
	for (li = 0; li < sizeof(loss_rates) / sizeof(loss_rates[0]); li++) {
		uint64_t bytes = loss_bytes[li] / (quick ? 10 : 1);

		printf("%4.1f%%  %5.1fMB", loss_rates[li] * 100,
				(double)bytes / 1e6);
		for (ci = 0; (ops = dpq_cc_get(ci)) != NULL; ci++) {
			double g[MAX_SEEDS];
			char spec[160];

			for (k = 0, ok = 0; k < seeds; k++) {
				struct dpq_sim_conf c;
				struct dpq_sim_xfer x = { .bytes = bytes,
					.streams = 1, .max_ns = 3600 * SEC };
				struct dpq_sim_xfer_result r;

				snprintf(spec, sizeof(spec), "delay=10ms,"
						"rate=1gbit,queue=2500kb,loss=%g",
						loss_rates[li]);
				link_conf(&c, spec, k + 1);
				c.client.cc_name = c.server.cc_name = ops->name;
				/* Windows that a 1 Gbit/s x 20 ms path needs. */
				c.client.max_data = c.server.max_data = 16 << 20;
				c.client.max_stream_data = 16 << 20;
				c.server.max_stream_data = 16 << 20;
				dpq_sim_transfer(&c, &x, &r);
				cpu += r.cpu_s;
				vt += (double)r.done_ns / 1e9;
				if (r.ok)
					g[ok++] = r.goodput_bps / 1e6;
				if (csv)
					fprintf(stderr, "csv,loss,%s,%g,%u,%llu,"
							"%d,%.3f,%llu\n",
							ops->name,
							loss_rates[li], k + 1,
							(unsigned long long)bytes,
							r.ok, r.goodput_bps / 1e6,
							(unsigned long long)
							r.server.pkts_lost);
			}
			if (ok == seeds)
				printf(" %12.1f", median(g, ok));
			else
				printf(" %8.1f(%u!)", median(g, ok),
						seeds - ok);
			fflush(stdout);
		}
		printf("\n");
	}
	printf("\n(%.0f s of virtual time in %.1f s of CPU; (n!) = n runs "
			"did not finish)\n", vt, cpu);
	return 0;
}

/* ---- head-of-line blocking ------------------------------------------------ */

#define HOL_STREAMS	10

/*
 * 10 streams of bytes each, started stagger apart (upload), against the
 * same 10 parts written as consecutive parts of one stream at the same
 * times. Latency of part k = when its last byte was delivered (in order)
 * minus when it was written. On one stream a loss in part k also holds
 * back every later part that arrived before the retransmission; on
 * separate streams it holds back only part k.
 */
static int
bench_hol_one(uint64_t HOL_BYTES, uint64_t HOL_STAGGER)
{
	static const char *const links[2] = {
		"delay=10ms,rate=100mbit,queue=250kb",
		"delay=10ms,rate=100mbit,queue=250kb,loss=2%",
	};
	double multi[2][HOL_STREAMS + 1], single[2][HOL_STREAMS + 1];
	double cpu = 0;
	unsigned int li, k, i;

	printf("head-of-line blocking: %d streams x %llu kB started %llu ms "
			"apart vs the same %d parts\nwritten at the same times "
			"on one stream; 20 ms RTT, 100 Mbit/s, 250 kB queue, "
			"newreno,\nupload; ms from writing a part to its last "
			"byte delivered in order, median of %u seeds\n\n",
			HOL_STREAMS, (unsigned long long)(HOL_BYTES / 1000),
			(unsigned long long)(HOL_STAGGER / MS), HOL_STREAMS,
			seeds);
	for (li = 0; li < 2; li++) {
		static double m[HOL_STREAMS + 1][MAX_SEEDS];
		static double s1[HOL_STREAMS + 1][MAX_SEEDS];
		unsigned int okm = 0, oks = 0;

		for (k = 0; k < seeds; k++) {
			struct dpq_sim_conf c;
			struct dpq_sim_xfer xm = { .bytes = HOL_BYTES,
				.streams = HOL_STREAMS, .upload = true,
				.stagger_ns = HOL_STAGGER,
				.max_ns = 600 * SEC };
			struct dpq_sim_xfer xs = { .bytes = HOL_STREAMS *
				(uint64_t)HOL_BYTES, .streams = 1,
				.upload = true, .objects = HOL_STREAMS,
				.marks = HOL_STREAMS, .stagger_ns = HOL_STAGGER,
				.max_ns = 600 * SEC };
			struct dpq_sim_xfer_result r;
			double sum;

			link_conf(&c, links[li], k + 1);
			dpq_sim_transfer(&c, &xm, &r);
			cpu += r.cpu_s;
			if (r.ok) {
				for (i = 0, sum = 0; i < HOL_STREAMS; i++) {
					m[i][okm] = (double)(r.stream_ns[i] -
						i * HOL_STAGGER) / 1e6;
					sum += m[i][okm];
				}
				m[HOL_STREAMS][okm++] = sum / HOL_STREAMS;
			}
			link_conf(&c, links[li], k + 1);
			dpq_sim_transfer(&c, &xs, &r);
			cpu += r.cpu_s;
			if (r.ok) {
				for (i = 0, sum = 0; i < HOL_STREAMS; i++) {
					s1[i][oks] = (double)(r.mark_ns[i] -
						i * HOL_STAGGER) / 1e6;
					sum += s1[i][oks];
				}
				s1[HOL_STREAMS][oks++] = sum / HOL_STREAMS;
			}
		}
		for (i = 0; i <= HOL_STREAMS; i++) {
			multi[li][i] = median(m[i], okm);
			single[li][i] = median(s1[i], oks);
		}
		if (okm < seeds || oks < seeds)
			printf("(%s: %u + %u runs did not finish)\n",
					li ? "2% loss" : "no loss", seeds - okm,
					seeds - oks);
	}
	printf("%-5s | %-25s | %-25s\n", "", "no loss", "2% random loss");
	printf("%-5s | %11s %13s | %11s %13s\n", "part", "own stream",
			"one stream", "own stream", "one stream");
	for (i = 0; i <= HOL_STREAMS; i++)
		printf("%-5s | %11.1f %13.1f | %11.1f %13.1f\n",
				i < HOL_STREAMS ? (char[8]){ (char)('1' +
				i % 9), i == 9 ? '0' : 0, 0 } : "mean",
				multi[0][i], single[0][i], multi[1][i],
				single[1][i]);
	printf("\n(mean: median over seeds of the mean over the %d parts; "
			"%.1f s CPU)\n", HOL_STREAMS, cpu);
	return 0;
}

/* Light load (messages: each part fits in the window when written) shows
 * head-of-line blocking; bulk parts that overlap show the cost of round
 * robin between streams instead. */
static int
bench_hol(void)
{
	bench_hol_one(15000, 20 * MS);
	printf("\n");
	return bench_hol_one(100000, 10 * MS);
}

/* ---- pacing ---------------------------------------------------------------- */

/* How a run sends: paced (the default), paced with HyStart++ exactly as
 * RFC 9406 (no paced delay signal or capacity probe,
 * dataplane/engine/hystart.h), or unpaced. */
enum pace_mode { PACED, PACED_RFC, UNPACED, PACE_MODES };
static const char *const pace_mode_name[] = { "paced", "paced, RFC 9406",
	"unpaced" };

/* Medians over the seeds of one path, controller and mode. */
struct pace_fig {
	double loss;		/* % of the data direction's datagrams */
	double good;		/* Mbit/s */
	double ssd, cad;	/* queue drops in the first slow start, after */
	double peak;		/* the first slow start's largest window, kB */
	unsigned int ok, noexit;
};

static double pace_cpu;

static void
pace_run(const char *spec, const char *cc, enum pace_mode m,
		uint64_t bytes, bool big, struct pace_fig *f)
{
	double l[MAX_SEEDS], g[MAX_SEEDS], d0[MAX_SEEDS], d1[MAX_SEEDS];
	double pk[MAX_SEEDS];
	unsigned int k, ok = 0;

	memset(f, 0, sizeof(*f));
	for (k = 0; k < seeds; k++) {
		struct dpq_sim_conf c;
		struct dpq_sim_xfer x = { .bytes = bytes, .streams = 1,
			.max_ns = 600 * SEC };
		struct dpq_sim_xfer_result r;

		link_conf(&c, spec, k + 1);
		c.client.cc_name = c.server.cc_name = cc;
		c.client.no_pacing = c.server.no_pacing = m == UNPACED;
		c.client.hystart_rfc = c.server.hystart_rfc = m == PACED_RFC;
		if (big) {
			/* Windows that the 1 Gbit/s and 100 ms paths need
			 * (elsewhere the defaults, auto-tuned, as dpquicd
			 * and dpquic-client run). */
			c.client.max_data = c.server.max_data = 32 << 20;
			c.client.max_stream_data = 32 << 20;
			c.server.max_stream_data = 32 << 20;
		}
		dpq_sim_transfer(&c, &x, &r);
		pace_cpu += r.cpu_s;
		if (!r.ok)
			continue;
		l[ok] = 100.0 * (double)r.s2c.dropped[DPQ_LINKEM_DROP_QUEUE] /
			(double)(r.s2c.offered ? r.s2c.offered : 1);
		d0[ok] = (double)r.ss_dropped;
		d1[ok] = (double)(r.s2c.dropped[DPQ_LINKEM_DROP_QUEUE] -
				r.ss_dropped);
		pk[ok] = (double)r.ss_peak_cwnd / 1e3;
		/* No ssthresh (BBR): no split to show. */
		f->noexit += r.ss_exit_ns == UINT64_MAX;
		g[ok++] = r.goodput_bps / 1e6;
	}
	f->ok = ok;
	f->loss = median(l, ok);
	f->good = median(g, ok);
	f->ssd = median(d0, ok);
	f->cad = median(d1, ok);
	f->peak = median(pk, ok);
	if (ok < seeds)
		printf("(%s, %s, %s: %u runs did not finish)\n", spec, cc,
				pace_mode_name[m], seeds - ok);
	if (csv)
		printf("csv,pacing,%s,%s,%s,%.4f,%.2f,%.0f,%.0f,%.0f\n", spec,
				cc, pace_mode_name[m], f->loss, f->good,
				f->ssd, f->cad, f->peak);
}

static double
ratio(double off, double on)
{
	return on > 0 ? off / on : off > 0 ? 99.9 : 1.0;
}

/*
 * A shallow buffer: 100 Mbit/s, 20 ms RTT (BDP 250 kB), a 15 kB queue
 * (ten full packets, 1.2 ms, 6% of the BDP). An unpaced sender's window
 * leaves in line-rate bursts that overflow it; a paced one spreads them
 * over the RTT. No random loss: every loss is a queue overflow. Loss rate
 * = data-direction datagrams dropped by the queue / datagrams offered.
 * 100 MB so that the end of slow start does not dominate. The drops are
 * split at the end of the first slow start (its first congestion event,
 * plus one RTT for what was already in flight): "ss" drops came from the
 * slow start's overshoot, "ca" drops from the probing afterwards; peak =
 * the largest window of the first slow start.
 *
 * Then the same at other queue depths (the goal's ratio, where it holds),
 * and paths where a slow-start exit on a small RTT rise could cost
 * goodput (jitter, long RTT, deep queue, 1 Gbit/s): all three modes in
 * the same run.
 */
static const char *const pace_head =
	"delay=10ms,jitter=200us,rate=100mbit,queue=15kb";
static const struct {
	const char *queue;
	const char *bdp;
} pace_depths[] = {
	{ "30kb", "0.12" }, { "62kb", "0.25" }, { "125kb", "0.5" },
};
static const struct {
	const char *name;
	const char *spec;
} pace_paths[] = {
	{ "clean 20 ms", "delay=10ms,rate=100mbit,queue=250kb" },
	{ "20 ms, jitter 1 ms", "delay=10ms,jitter=1ms,rate=100mbit,"
		"queue=250kb" },
	{ "100 ms, jitter 1 ms", "delay=50ms,jitter=1ms,rate=100mbit,"
		"queue=1250kb" },
	{ "1 Gbit/s 20 ms", "delay=10ms,jitter=200us,rate=1gbit,"
		"queue=2500kb" },
};

static int
bench_pacing(void)
{
#ifndef DPQ_HAVE_NO_PACING
	fprintf(stderr, "dpq-bench-emu: pacing: this tree has no per-connection "
			"pacing switch (struct dpq_conn_conf.no_pacing)\n");
	return 2;
#else
	const uint64_t bytes = quick ? 20000000 : 100000000;
	const uint64_t sbytes = quick ? 10000000 : 50000000;
	const uint64_t pbytes = quick ? 5000000 : 20000000;
	const struct dpq_cc_ops *ops;
	struct pace_fig f[PACE_MODES];
	size_t ci, di, pi;
	int m;

	pace_cpu = 0;
	printf("pacing: %s, %.0f MB download, median of %u seeds\n"
			"(drops: by the queue in the first slow start / "
			"after it; peak: its largest window, kB;\n"
			"paced RFC: HyStart++ exactly as RFC 9406, without the "
			"paced delay signal and capacity probe)\n\n",
			pace_head, (double)bytes / 1e6, seeds);
	printf("%-8s | %-33s | %-21s | %-33s | %s\n", "", "paced", "paced RFC",
			"unpaced", "loss unpaced/paced");
	printf("%-8s | %7s %6s %10s %6s | %7s %6s %6s | %7s %6s %10s %6s |\n",
			"cc", "loss %", "Mbit/s", "drops", "peak", "loss %",
			"Mbit/s", "drops", "loss %", "Mbit/s", "drops", "peak");
	for (ci = 0; (ops = dpq_cc_get(ci)) != NULL; ci++) {
		for (m = 0; m < PACE_MODES; m++)
			pace_run(pace_head, ops->name, (enum pace_mode)m,
					bytes, false, &f[m]);
		if (f[PACED].noexit != 0)
			printf("%-8s | %7.3f %6.1f %17s | %7.3f %6.1f %6s | "
					"%7.3f %6.1f %17s | %.1fx\n", ops->name,
					f[0].loss, f[0].good, "(no ssthresh)",
					f[1].loss, f[1].good, "",
					f[2].loss, f[2].good, "(no ssthresh)",
					ratio(f[2].loss, f[0].loss));
		else
			printf("%-8s | %7.3f %6.1f %4.0f / %3.0f %6.0f | "
					"%7.3f %6.1f %6.0f | "
					"%7.3f %6.1f %4.0f / %3.0f %6.0f | "
					"%.1fx\n", ops->name,
					f[0].loss, f[0].good, f[0].ssd,
					f[0].cad, f[0].peak,
					f[1].loss, f[1].good, f[1].ssd + f[1].cad,
					f[2].loss, f[2].good, f[2].ssd,
					f[2].cad, f[2].peak,
					ratio(f[2].loss, f[0].loss));
	}

	printf("\ndeeper queues (same link, %.0f MB; 15kb = 0.06 BDP above): "
			"loss %% paced / unpaced, unpaced/paced, Mbit/s paced "
			"/ unpaced\n", (double)sbytes / 1e6);
	printf("%-6s %-5s %-8s | %7s %7s | %6s | %6s %6s\n", "queue",
			"BDP", "cc", "paced", "unpaced", "ratio",
			"paced", "unpaced");
	for (di = 0; di < sizeof(pace_depths) / sizeof(pace_depths[0]);
	     di++) {
		char spec[160];

		snprintf(spec, sizeof(spec), "delay=10ms,jitter=200us,"
				"rate=100mbit,queue=%s", pace_depths[di].queue);
		for (ci = 0; (ops = dpq_cc_get(ci)) != NULL; ci++) {
			pace_run(spec, ops->name, PACED, sbytes, false,
					&f[PACED]);
			pace_run(spec, ops->name, UNPACED, sbytes, false,
					&f[UNPACED]);
			printf("%-6s %-5s %-8s | %7.3f %7.3f | %5.1fx | "
					"%6.1f %6.1f\n", pace_depths[di].queue,
					pace_depths[di].bdp, ops->name,
					f[PACED].loss, f[UNPACED].loss,
					ratio(f[UNPACED].loss, f[PACED].loss),
					f[PACED].good, f[UNPACED].good);
		}
	}

	printf("\nother paths (100 Mbit/s unless said, 1-BDP queue, %.0f MB, "
			"the controllers that use HyStart++): Mbit/s paced / "
			"paced RFC / unpaced, loss %% paced / paced RFC / "
			"unpaced\n", (double)pbytes / 1e6);
	printf("%-20s %-8s | %6s %6s %6s | %7s %7s %7s\n", "path", "cc",
			"paced", "RFC", "unpace", "paced", "RFC", "unpaced");
	for (pi = 0; pi < sizeof(pace_paths) / sizeof(pace_paths[0]); pi++) {
		for (ci = 0; (ops = dpq_cc_get(ci)) != NULL; ci++) {
			if (strcmp(ops->name, "bbr") == 0)
				continue;	/* no HyStart++ */
			for (m = 0; m < PACE_MODES; m++)
				pace_run(pace_paths[pi].spec, ops->name,
						(enum pace_mode)m, pbytes, true,
						&f[m]);
			printf("%-20s %-8s | %6.1f %6.1f %6.1f | %7.3f %7.3f "
					"%7.3f\n", pace_paths[pi].name,
					ops->name, f[0].good, f[1].good,
					f[2].good, f[0].loss, f[1].loss,
					f[2].loss);
		}
	}
	printf("\n(%.1f s CPU)\n", pace_cpu);
	return 0;
#endif
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: dpq-bench-emu [--seeds N] [--quick] [--csv] "
			"loss|hol|pacing|all\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 's' },
		{ "quick", no_argument, NULL, 'q' },
		{ "csv", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *what;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			seeds = (unsigned int)strtoul(optarg, &end, 10);
			if (*end != '\0' || seeds == 0 || seeds > MAX_SEEDS) {
				fprintf(stderr, "dpq-bench-emu: --seeds wants "
						"1..%d\n", MAX_SEEDS);
				return 2;
			}
			break;
		case 'q':
			quick = true;
			break;
		case 'c':
			csv = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	what = argv[optind];
	if (strcmp(what, "loss") == 0)
		return bench_loss();
	if (strcmp(what, "hol") == 0)
		return bench_hol();
	if (strcmp(what, "pacing") == 0)
		return bench_pacing();
	if (strcmp(what, "all") == 0) {
		bench_loss();
		printf("\n");
		bench_hol();
		printf("\n");
		return bench_pacing();
	}
	usage(stderr);
	return 2;
}
