/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's command line:
 *
 *   dpquicd [EAL args --] [-c FILE] [options]
 *
 * Everything before the first "--" goes to DPDK's EAL untouched; without
 * a "--" there are no EAL arguments on the command line and the config
 * file's eal section (or EAL's defaults) is used. The daemon's options
 * are generated from the config table (control/conf), so an option and
 * its config key share one parser and one help line; command-line values
 * override the file's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/dpquicd/dpquicd.h"

#define OPT_BASE	1000
#define OPT_SET		900
#define OPT_CHECK	901
#define OPT_VERSION	902

/* EAL options a user may put on the wrong side of "--". */
static const char *const eal_opts[] = {
	"no-huge", "no-pci", "vdev", "file-prefix", "in-memory", "no-shconf",
	"log-level", "huge-dir", "socket-mem", "main-lcore", "lcores",
	"proc-type", "iova-mode", "no-telemetry", "legacy-mem", "allow",
	"block", "single-file-segments", "huge-unlink", "base-virtaddr",
	"socket-limit", "match-allocations", "vfio-intr", "telemetry", NULL,
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: dpquicd [EAL args --] [-c FILE] [options]\n"
"\n"
"dpquicd serves files over QUIC v1 (ALPN hq-interop) from a DPDK port.\n"
"\n"
"  -c, --config FILE      read the configuration file FILE (libconfig\n"
"                         syntax; every key: dist/dpquicd.conf.example)\n"
"  --set SECTION.KEY=VALUE  set any config key (see dpquicd(8)), e.g.\n"
"                         --set ctl.max-clients=4\n"
"  --check                check the configuration, print every key with\n"
"                         its value and origin, and exit\n"
"  -h, --help             this text; --version: the version\n");
	dpq_conf_print_options(f);
	fprintf(f,
"\n"
"Options override the config file's keys. EAL arguments (before \"--\")\n"
"replace the file's eal section; e.g. dpquicd -l 0-2 --vdev=net_tap0 --\n"
"-c /etc/dpquic/dpquicd.conf. `dpdk-telemetry.py`, `dpdk-dumpcap` and\n"
"`dpdk-proc-info` reach the daemon through its --file-prefix (EAL's\n"
"default \"rte\" unless given). EAL's own options: dpquicd --help --\n"
"\n"
"Logs (rte_log, stderr, one line each with time and level): types\n"
"dpquic.daemon, .shard, .conn (per connection, debug), .peer (what\n"
"peers do wrong: rate-limited warnings, floods summed up every 10 s;\n"
"dropped datagrams at debug), .mgmt, .ctl, .driver; set\n"
"with --log-level LEVEL (all) or log.levels in the config file.\n"
"\n"
"Signals: TERM/INT close every connection (CONNECTION_CLOSE) and exit;\n"
"HUP re-reads the config file (also `dpquic-ctl reload`).\n"
"Exit status: 0 clean stop, 1 failure while running, 2 bad command line\n"
"or configuration, 3 EAL failure, 4 port failure, 5 control socket\n"
"failure, 6 certificate or key failure.\n");
}

static bool
is_eal_opt(const char *arg)
{
	unsigned int i;
	size_t n;

	if (arg[0] != '-')
		return false;
	if (arg[1] != '-')
		return strchr("lcnmabdv", arg[1]) != NULL && arg[1] != '\0';
	for (i = 0; eal_opts[i] != NULL; i++) {
		n = strlen(eal_opts[i]);
		if (strncmp(arg + 2, eal_opts[i], n) == 0 &&
		    (arg[2 + n] == '\0' || arg[2 + n] == '='))
			return true;
	}
	return false;
}

void
dpqd_opts_free(struct dpqd *d)
{
	unsigned int i;

	for (i = 0; i < d->ncli; i++)
		if (d->cli_owned != NULL)
			free(d->cli_owned[i]);
	free(d->cli_owned);
	free(d->cli_key);
	free(d->cli_val);
	d->cli_owned = NULL;
	d->cli_key = d->cli_val = NULL;
	d->ncli = 0;
}

/* owned: key was made by dotted() and is freed with d (dpqd_opts_free). */
static int
add_cli(struct dpqd *d, const char *key, const char *val, bool owned)
{
	const char **k = realloc(d->cli_key, (d->ncli + 1) * sizeof(*k));
	const char **v;
	char **o;

	if (k == NULL)
		return -ENOMEM;
	d->cli_key = k;
	v = realloc(d->cli_val, (d->ncli + 1) * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	d->cli_val = v;
	o = realloc(d->cli_owned, (d->ncli + 1) * sizeof(*o));
	if (o == NULL)
		return -ENOMEM;
	d->cli_owned = o;
	d->cli_owned[d->ncli] = owned ? (char *)key : NULL;
	d->cli_key[d->ncli] = key;
	d->cli_val[d->ncli] = val;
	d->ncli++;
	return 0;
}

struct optbuild {
	struct option *lo;
	const struct dpq_conf_key **keys;
	const struct dpq_conf_section **secs;
	unsigned int n;
};

static void
collect(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k)
{
	struct optbuild *b = arg;

	if (k->opt == NULL)
		return;
	b->lo[b->n].name = k->opt;
	b->lo[b->n].has_arg = k->flags & DPQ_CONF_F_FLAG ? no_argument :
		required_argument;
	b->lo[b->n].flag = NULL;
	b->lo[b->n].val = OPT_BASE + (int)b->n;
	b->keys[b->n] = k;
	b->secs[b->n] = s;
	b->n++;
}

/* "section.key" of a table key, in storage that lives as long as d. */
static char *
dotted(const struct dpq_conf_section *s, const struct dpq_conf_key *k)
{
	size_t n = strlen(s->name) + strlen(k->name) + 2;
	char *p = malloc(n);

	if (p != NULL)
		snprintf(p, n, "%s.%s", s->name, k->name);
	return p;
}

int
dpqd_opts_parse(struct dpqd *d, int argc, char **argv)
{
	static const struct option fixed[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "set", required_argument, NULL, OPT_SET },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "version", no_argument, NULL, OPT_VERSION },
	};
	struct option lo[DPQ_CONF_KEYS_MAX + 8];
	const struct dpq_conf_key *keys[DPQ_CONF_KEYS_MAX];
	const struct dpq_conf_section *secs[DPQ_CONF_KEYS_MAX];
	struct optbuild b = { lo, keys, secs, 0 };
	const char *config = NULL;
	int i, c, first = 1, dashdash = -1;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	if (dashdash > 0) {
		d->eal_argc = dashdash;
		d->eal_argv = argv;
		first = dashdash + 1;
	}
	dpq_conf_foreach(collect, &b);
	memcpy(&lo[b.n], fixed, sizeof(fixed));
	memset(&lo[b.n + sizeof(fixed) / sizeof(fixed[0])], 0, sizeof(lo[0]));

	/* getopt sees argv[first..]: argv[first] plays the program name. */
	optind = 1;
	opterr = 0;
	argc -= first - 1;
	argv += first - 1;
	while ((c = getopt_long(argc, argv, ":c:h", lo, NULL)) != -1) {
		const char *bad = argv[optind - 1];

		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case OPT_VERSION:
			printf("%s\n", DPQD_VERSION);
			return 1;
		case OPT_CHECK:
			d->check_only = true;
			break;
		case OPT_SET: {
			char *eq = strchr(optarg, '=');

			if (eq == NULL || eq == optarg) {
				fprintf(stderr, "dpquicd: --set %s: expected "
					"SECTION.KEY=VALUE\n", optarg);
				return -1;
			}
			*eq = '\0';
			if (add_cli(d, optarg, eq + 1, false) != 0)
				return -1;
			break;
		}
		case ':':
			fprintf(stderr, "dpquicd: %s needs a value (dpquicd "
				"--help lists the options)\n", bad);
			return -1;
		case '?':
			if (is_eal_opt(bad))
				fprintf(stderr, "dpquicd: %s is an EAL option: "
					"EAL arguments go before \"--\": "
					"dpquicd [EAL args] -- [options]\n",
					bad);
			else
				fprintf(stderr, "dpquicd: unknown option %s "
					"(dpquicd --help lists them)\n", bad);
			return -1;
		default:
			if (c >= OPT_BASE && c < OPT_BASE + (int)b.n) {
				unsigned int k = (unsigned int)(c - OPT_BASE);
				char *key = dotted(secs[k], keys[k]);

				if (key == NULL)
					return -1;
				if (add_cli(d, key, keys[k]->flags &
						DPQ_CONF_F_FLAG ? "true" :
						optarg, true) != 0) {
					free(key);
					return -1;
				}
				break;
			}
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dpquicd: unexpected argument \"%s\" (options "
			"start with --; dpquicd --help lists them)\n",
			argv[optind]);
		return -1;
	}
	if (config != NULL) {
		d->config_path = strdup(config);
		if (d->config_path == NULL)
			return -1;
	}
	return 0;
}

int
dpqd_conf_build(const struct dpqd *d, struct dpq_conf *out, char *err,
		size_t n)
{
	unsigned int i;
	int rc;

	rc = dpq_conf_init(out);
	if (rc == 0 && d->config_path != NULL)
		rc = dpq_conf_load_file(out, d->config_path, err, n);
	for (i = 0; rc == 0 && i < d->ncli; i++)
		rc = dpq_conf_set(out, d->cli_key[i], d->cli_val[i],
				DPQ_CONF_CLI, err, n);
	if (rc == 0)
		rc = dpq_conf_check(out, err, n);
	return rc;
}

/* ---- EAL arguments ------------------------------------------------------ */

struct argv_b {
	char **v;
	int n, cap;
	bool oom;
};

static void
push(struct argv_b *a, const char *fmt, const char *s)
{
	char *p = NULL;

	if (a->oom)
		return;
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **nv = realloc(a->v, (size_t)cap * sizeof(*nv));

		if (nv == NULL) {
			a->oom = true;
			return;
		}
		a->v = nv;
		a->cap = cap;
	}
	if (asprintf(&p, fmt, s) < 0) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = p;
	a->v[a->n] = NULL;
}

char **
dpqd_eal_argv(const struct dpqd *d, int *argc)
{
	const struct dpq_conf_eal *e = &d->conf.eal;
	struct argv_b a = { 0 };
	char num[32];
	unsigned int i;
	int k;

	push(&a, "%s", "dpquicd");
	if (d->eal_argv != NULL) {
		for (k = 1; k < d->eal_argc; k++)
			push(&a, "%s", d->eal_argv[k]);
	} else {
		if (e->lcores != NULL)
			push(&a, "-l%s", e->lcores);
		if (dpq_conf_is_set(&d->conf, "eal.main-lcore")) {
			snprintf(num, sizeof(num), "%llu",
				(unsigned long long)e->main_lcore);
			push(&a, "--main-lcore=%s", num);
		}
		for (i = 0; i < e->vdev.n; i++)
			push(&a, "--vdev=%s", e->vdev.v[i]);
		for (i = 0; i < e->allow.n; i++)
			push(&a, "-a%s", e->allow.v[i]);
		if (e->file_prefix != NULL)
			push(&a, "--file-prefix=%s", e->file_prefix);
		if (e->memory != 0) {
			snprintf(num, sizeof(num), "%llu",
				(unsigned long long)e->memory);
			push(&a, "-m%s", num);
		}
		if (e->no_huge)
			push(&a, "%s", "--no-huge");
		if (e->no_pci)
			push(&a, "%s", "--no-pci");
		if (e->in_memory)
			push(&a, "%s", "--in-memory");
		if (!e->telemetry)
			push(&a, "%s", "--no-telemetry");
		if (e->huge_dir != NULL)
			push(&a, "--huge-dir=%s", e->huge_dir);
		for (i = 0; i < e->args.n; i++)
			push(&a, "%s", e->args.v[i]);
	}
	if (a.oom) {
		dpqd_eal_argv_free(a.v);
		return NULL;
	}
	*argc = a.n;
	return a.v;
}

void
dpqd_eal_argv_free(char **argv)
{
	char **p;

	for (p = argv; p != NULL && *p != NULL; p++)
		free(*p);
	free(argv);
}
