/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-sim: run dpquic transfers through the emulated link in virtual
 * time, from the command line. One line per run, then the distribution
 * of completion times over the seeds; optionally a qlog of the first run.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/qlog/qlog.h"
#include "dataplane/engine/cc.h"
#include "emu/sim.h"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: dpq-sim [options]\n"
"  --link SPEC      impairments of both directions, e.g.\n"
"                   delay=10ms,rate=100mbit,queue=128kb,loss=1%%\n"
"  --c2s SPEC       client-to-server direction only (after --link)\n"
"  --s2c SPEC       server-to-client direction only (after --link)\n"
"                   keys: delay jitter rate queue loss burst=RATE/LEN\n"
"                   (LEN datagrams, or a time: burst=2%%/1ms)\n"
"                   reorder reorder_delay dup corrupt blackout=START+LEN\n"
"  --cc NAME|all    congestion controller (default newreno)\n"
"  --bytes N[k|M|G] bytes per stream (default 10M)\n"
"  --streams K      concurrent streams (default 1, at most %d)\n"
"  --upload         client sends (default: server sends)\n"
"  --no-pacing      both ends send unpaced (compare with pacing on)\n"
"  --hystart-rfc    HyStart++ exactly as RFC 9406 even when paced (no\n"
"                   paced delay signal, no capacity probe; compare)\n"
"  --seeds N        runs with seeds 1..N (default 1)\n"
"  --seed S         first seed (default 1)\n"
"  --max-time SEC   give up a run after this much virtual time (600)\n"
"  --qlog PREFIX    write PREFIX-client.sqlog and PREFIX-server.sqlog\n"
"                   for the first run\n"
"  --csv            one comma-separated line per run\n",
		DPQ_SIM_XFER_STREAMS);
}

static bool
parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || v <= 0)
		return false;
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'M')
		v *= 1e6, end++;
	else if (*end == 'G')
		v *= 1e9, end++;
	if (*end != '\0' || v > 1e12)
		return false;
	*out = (uint64_t)v;
	return true;
}

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
			.title = "dpq-sim",
			.server = qf->server,
			.reference_us = DPQ_SIM_T0_US,
		};

		qf->started = true;
		dpq_qlog_write_start(&qf->q, &c, qf->f);
	}
	dpq_qlog_write(&qf->q, ev, qf->f);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct(const uint64_t *v, unsigned int n, double p)
{
	unsigned int i = (unsigned int)(p * (n - 1) + 0.5);

	return (double)v[i] / 1e9;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "link", required_argument, NULL, 'l' },
		{ "c2s", required_argument, NULL, 'u' },
		{ "s2c", required_argument, NULL, 'd' },
		{ "cc", required_argument, NULL, 'c' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "streams", required_argument, NULL, 'k' },
		{ "upload", no_argument, NULL, 'U' },
		{ "no-pacing", no_argument, NULL, 'P' },
		{ "hystart-rfc", no_argument, NULL, 'H' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-time", required_argument, NULL, 't' },
		{ "qlog", required_argument, NULL, 'q' },
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dpq_sim_conf conf;
	struct dpq_sim_xfer x = { .bytes = 10000000, .streams = 1,
		.max_ns = UINT64_C(600) * 1000000000 };
	const char *cc = "newreno", *qprefix = NULL;
	unsigned long nseeds = 1, seed0 = 1, k;
	bool csv = false;
	char err[160];
	int opt, failed = 0;
	size_t ci;

	memset(&conf, 0, sizeof(conf));
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case 'l':
			if (dpq_linkem_conf_parse(&conf.c2s, optarg, err,
					sizeof(err)) != 0 ||
			    dpq_linkem_conf_parse(&conf.s2c, optarg, err,
					sizeof(err)) != 0)
				goto bad_link;
			break;
		case 'u':
		case 'd':
			if (dpq_linkem_conf_parse(opt == 'u' ? &conf.c2s :
					&conf.s2c, optarg, err,
					sizeof(err)) != 0)
				goto bad_link;
			break;
		case 'c':
			cc = optarg;
			if (strcmp(cc, "all") != 0 && dpq_cc_find(cc) == NULL) {
				fprintf(stderr, "dpq-sim: unknown --cc '%s'; "
						"known:", cc);
				for (ci = 0; dpq_cc_get(ci) != NULL; ci++)
					fprintf(stderr, " %s",
							dpq_cc_get(ci)->name);
				fprintf(stderr, " all\n");
				return 2;
			}
			break;
		case 'b':
			if (!parse_size(optarg, &x.bytes)) {
				fprintf(stderr, "dpq-sim: --bytes wants a size "
						"such as 500k or 10M\n");
				return 2;
			}
			break;
		case 'k':
			k = strtoul(optarg, &end, 10);
			if (*end != '\0' || k == 0 || k > DPQ_SIM_XFER_STREAMS) {
				fprintf(stderr, "dpq-sim: --streams wants 1..%d\n",
						DPQ_SIM_XFER_STREAMS);
				return 2;
			}
			x.streams = (unsigned int)k;
			break;
		case 'U':
			x.upload = true;
			break;
		case 'H':
			conf.client.hystart_rfc = conf.server.hystart_rfc =
				true;
			break;
		case 'P':
			conf.client.no_pacing = conf.server.no_pacing = true;
			break;
		case 'n':
		case 's':
			k = strtoul(optarg, &end, 10);
			if (*end != '\0' || (opt == 'n' && (k == 0 ||
					k > 100000))) {
				fprintf(stderr, "dpq-sim: --%s wants a number%s\n",
						opt == 'n' ? "seeds" : "seed",
						opt == 'n' ? " from 1 to 100000" :
						"");
				return 2;
			}
			if (opt == 'n')
				nseeds = k;
			else
				seed0 = k;
			break;
		case 't':
			k = strtoul(optarg, &end, 10);
			if (*end != '\0' || k == 0 || k > 86400) {
				fprintf(stderr, "dpq-sim: --max-time wants "
						"seconds, 1..86400\n");
				return 2;
			}
			x.max_ns = (uint64_t)k * 1000000000;
			break;
		case 'q':
			qprefix = optarg;
			break;
		case 'C':
			csv = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		continue;
bad_link:
		fprintf(stderr, "dpq-sim: %s\n", err);
		return 2;
	}
	if (optind != argc) {
		fprintf(stderr, "dpq-sim: unexpected argument '%s'\n",
				argv[optind]);
		usage(stderr);
		return 2;
	}
	if (csv)
		printf("cc,seed,direction,streams,bytes,ok,handshake_ms,"
				"done_s,goodput_mbps,lost,sent,cpu_s\n");

	for (ci = 0; ; ci++) {
		const struct dpq_cc_ops *ops = strcmp(cc, "all") == 0 ?
			dpq_cc_get(ci) : (ci == 0 ? dpq_cc_find(cc) : NULL);
		uint64_t *times;
		unsigned int nok = 0;
		double cpu = 0, vt = 0;

		if (ops == NULL)
			break;
		times = calloc(nseeds, sizeof(*times));
		if (times == NULL)
			return 1;
		for (k = 0; k < nseeds; k++) {
			struct dpq_sim_conf c = conf;
			struct dpq_sim_xfer_result r;
			struct qlog_file qc = { 0 }, qs = { .server = true };
			unsigned long seed = seed0 + k;
			const struct dpq_conn_stats *snd;
			int rc;

			c.client.cc_name = c.server.cc_name = ops->name;
			c.seed = seed;
			c.c2s.seed = conf.c2s.seed + seed * 2 + 1;
			c.s2c.seed = conf.s2c.seed + seed * 2 + 2;
			if (qprefix != NULL && k == 0 && ci == 0) {
				char path[4096];

				snprintf(path, sizeof(path), "%s-client.sqlog",
						qprefix);
				qc.f = fopen(path, "w");
				snprintf(path, sizeof(path), "%s-server.sqlog",
						qprefix);
				qs.f = fopen(path, "w");
				if (qc.f == NULL || qs.f == NULL) {
					perror("dpq-sim: --qlog");
					return 1;
				}
				c.ctrace = on_trace;
				c.ctrace_ctx = &qc;
				c.strace = on_trace;
				c.strace_ctx = &qs;
			}
			rc = dpq_sim_transfer(&c, &x, &r);
			if (qc.f != NULL)
				fclose(qc.f);
			if (qs.f != NULL)
				fclose(qs.f);
			if (rc != 0 && rc != -ETIMEDOUT && rc != -EPROTO) {
				fprintf(stderr, "dpq-sim: setup failed: %s\n",
						strerror(-rc));
				return 1;
			}
			snd = x.upload ? &r.client : &r.server;
			times[k] = r.ok ? r.done_ns - r.handshake_ns : UINT64_MAX;
			nok += r.ok;
			failed += !r.ok;
			cpu += r.cpu_s;
			vt += (double)r.done_ns / 1e9;
			if (csv) {
				printf("%s,%lu,%s,%u,%llu,%d,%.3f,%.6f,%.3f,"
						"%llu,%llu,%.4f\n", ops->name,
						seed, x.upload ? "up" : "down",
						x.streams,
						(unsigned long long)x.bytes,
						r.ok, (double)r.handshake_ns / 1e6,
						(double)r.done_ns / 1e9,
						r.goodput_bps / 1e6,
						(unsigned long long)snd->pkts_lost,
						(unsigned long long)snd->pkts_sent,
						r.cpu_s);
			} else {
				printf("%-8s seed %-5lu %s: %s in %.3f s "
						"(handshake %.1f ms), %.2f Mbit/s, "
						"%llu of %llu packets lost, "
						"%.3f s CPU\n", ops->name, seed,
						x.upload ? "upload" : "download",
						r.ok ? "ok" : r.corrupt ?
						"CORRUPT" : "FAILED",
						(double)r.done_ns / 1e9,
						(double)r.handshake_ns / 1e6,
						r.goodput_bps / 1e6,
						(unsigned long long)snd->pkts_lost,
						(unsigned long long)snd->pkts_sent,
						r.cpu_s);
				if (!r.ok && r.closed[0] != '\0')
					printf("         %s\n", r.closed);
			}
		}
		if (!csv && nseeds > 1) {
			qsort(times, nseeds, sizeof(*times), cmp_u64);
			printf("%-8s %u/%lu ok; transfer time (s) min %.3f "
					"median %.3f p90 %.3f max %.3f; "
					"%.1f s virtual in %.2f s CPU\n",
					ops->name, nok, nseeds,
					nok ? pct(times, nok, 0) : 0,
					nok ? pct(times, nok, 0.5) : 0,
					nok ? pct(times, nok, 0.9) : 0,
					nok ? pct(times, nok, 1) : 0, vt, cpu);
		}
		free(times);
	}
	return failed ? 1 : 0;
}
