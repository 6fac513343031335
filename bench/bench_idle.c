/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-idle: what idle connections cost a shard (issue: "a shard's
 * cost independent of its idle connections").
 *
 * One server shard holds the connections; client shards open them in
 * batches and are destroyed once the batch is established and quiet, so
 * the server keeps N idle established connections (idle timeout one
 * hour). Both sides talk over the in-memory driver (tests/lib/memdrv) in
 * one thread, with the TLS-less handshake service of tests/lib/hs_null:
 * only the dataplane is measured, not public-key work.
 *
 * Two server shards, each on its own in-memory link: one holds 10 idle
 * connections, the other N. Printed, all in the same run:
 *   - the server shard's poll loop: ns per iteration with nothing to
 *     receive, with 0 idle connections (before any), and with 10 and N,
 *     measured in alternating rounds of 1000 polls (so both see the same
 *     machine load), as medians over the rounds: on a shared machine a
 *     preemption inside a round spoils that round, not the figure;
 *   - the goodput of one busy connection (a bulk download) beside 10
 *     idle connections and beside N, alternating runs, medians;
 *   - memory per idle connection: heap bytes the connections hold
 *     (glibc mallinfo2, everything a connection allocates: struct, keys,
 *     streams, buffers) plus the shard's per-slot tables (slot array,
 *     connection-ID hash), divided by the connections.
 *
 *   dpq-bench-idle [EAL args --] [--idle N] [--secs S] [--polls K]
 *                  [--runs R]
 *
 * Without EAL args: --no-huge --no-shconf --no-pci -l 0 -m 1024.
 * Ends with a "RESULT key=value ..." line.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "dataplane/server/listener.h"
#include "dataplane/shard/shard.h"
#include "tests/lib/hs_null.h"
#include "tests/lib/memdrv.h"

#define BATCH		1000
#define CHUNK		16384
#define ROUND		1000	/* polls per timed round */

/* A server shard on its own link, and the client side's driver. */
struct side {
	const char *name;
	struct dpq_driver *sdrv, *cdrv;
	struct dpq_shard *srv;
	struct dpq_listener *lsn;
	struct dpq_addr saddr, caddr;
	size_t tables;			/* bytes of the server's tables */
};

static struct rte_mempool *pool;
static uint64_t rx_bytes;		/* the busy client's */
static unsigned long established;	/* client side, this batch */
static uint8_t chunk[CHUNK];

/* ---- applications: the server sends to whoever asks, forever ---------- */

static void
src_fill(struct dpq_conn *c, uint64_t id)
{
	while (dpq_conn_stream_write(c, id, chunk, CHUNK, false) == CHUNK)
		;
}

static void
src_data(struct dpq_conn *c, uint64_t id)
{
	uint8_t buf[256];
	bool fin;

	while (dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin) > 0)
		;
	src_fill(c, id);
}

static const struct dpq_app_ops srv_app = {
	.on_stream_data = src_data,
	.on_stream_writable = src_fill,
};

static void
cli_established(struct dpq_conn *c, const char *alpn)
{
	(void)c;
	(void)alpn;
	established++;
}

static void
cli_data(struct dpq_conn *c, uint64_t id)
{
	static uint8_t buf[65536];
	bool fin;
	ssize_t n;

	while ((n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin)) > 0)
		rx_bytes += (uint64_t)n;
}

static const struct dpq_app_ops cli_app = {
	.on_established = cli_established,
	.on_stream_data = cli_data,
};

/* ---- set-up ----------------------------------------------------------------- */

static int
null_attach(void *arg, struct dpq_conn *c, uint64_t handle)
{
	(void)arg;
	(void)handle;
	return dpq_hs_null_attach(c);
}

static struct dpq_shard *
shard_new(enum dpq_role role, struct dpq_driver *drv, uint32_t max)
{
	struct dpq_shard_conf sc = { 0 };
	struct dpq_shard *s;

	sc.nb_shards = 1;
	sc.drv = drv;
	sc.conn.role = role;
	sc.conn.idle_timeout_ms = 3600 * 1000;
	/* A batch of 1000 handshakes in one thread of a loaded machine can
	 * take longer than the 10 s deadline meant for half-open attacks. */
	sc.conn.handshake_timeout_ms = 600 * 1000;
	sc.conn.max_data = 16 << 20;
	sc.conn.max_stream_data = 8 << 20;
	sc.hs.ops = &dpq_hs_null_ops;
	sc.hs.attach = null_attach;
	sc.app.ops = role == DPQ_ROLE_SERVER ? &srv_app : &cli_app;
	sc.max_conns = max;
	/* The default budget (DPQ_SHARD_MEM_BUDGET, 256 MiB) holds about
	 * 32,000 idle connections: past it the shard refuses new ones. Give
	 * the server 64 KiB per slot (a limit, not an allocation). */
	if (role == DPQ_ROLE_SERVER)
		sc.mem_budget = DPQ_SHARD_MEM_BUDGET +
			((uint64_t)max << 16);
	/* Park after 50 ms of quiet (default 1 s): batches settle sooner. */
	sc.park_after_ms = 50;
	sc.socket_id = SOCKET_ID_ANY;
	if (dpq_shard_create(&sc, &s) != 0)
		return NULL;
	return s;
}

static size_t
heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static size_t
rte_in_use(void)
{
	struct rte_malloc_socket_stats st;
	size_t sum = 0;

	for (int sock = 0; sock < RTE_MAX_NUMA_NODES; sock++)
		if (rte_malloc_get_socket_stats(sock, &st) == 0)
			sum += st.heap_allocsz_bytes;
	return sum;
}

static size_t
mem_in_use(void)
{
	return heap_in_use() + rte_in_use();
}

static int
side_init(struct side *sd, const char *name, unsigned int idx,
		uint32_t max)
{
	static const struct dpq_rand rnd = { dpq_rand_system_fill, NULL };
	struct dpq_listener_cfg lc;
	char a[64];
	size_t m0;

	sd->name = name;
	snprintf(a, sizeof(a), "198.18.%u.1:443", idx);
	dpq_addr_parse(a, &sd->saddr);
	snprintf(a, sizeof(a), "198.18.%u.2:40000", idx);
	dpq_addr_parse(a, &sd->caddr);
	sd->sdrv = memdrv_create(pool, &sd->saddr);
	sd->cdrv = memdrv_create(pool, &sd->caddr);
	if (sd->sdrv == NULL || sd->cdrv == NULL)
		return -1;
	memdrv_link(sd->sdrv, sd->cdrv);
	m0 = mem_in_use();
	sd->srv = shard_new(DPQ_ROLE_SERVER, sd->sdrv, max);
	dpq_listener_cfg_default(&lc);
	/* Every client comes from one address, a thousand at a time: no
	 * half-open bound or Retry (they defend a server under attack). */
	lc.retry = DPQ_RETRY_NEVER;
	lc.halfopen.max_total = 1u << 20;
	lc.halfopen.max_per_prefix = 1u << 20;
	lc.halfopen.retry_threshold = 1u << 20;
	lc.sreset_key_len = 32;
	dpq_rand_system_fill(NULL, lc.sreset_key, 32);
	sd->lsn = sd->srv ? dpq_listener_create(&lc,
			dpq_shard_crypto(sd->srv), &rnd,
			dpq_shard_now_us()) : NULL;
	if (sd->lsn == NULL)
		return -1;
	dpq_shard_set_listener(sd->srv, sd->lsn);
	sd->tables = mem_in_use() - m0;
	return 0;
}

static void
side_fini(struct side *sd)
{
	dpq_shard_destroy(sd->srv);
	dpq_listener_destroy(sd->lsn);
	dpq_driver_close(sd->cdrv);
	dpq_driver_close(sd->sdrv);
}

static void
poll_both(struct side *sd, struct dpq_shard *cli)
{
	uint64_t now = dpq_shard_now_us();

	dpq_shard_poll(sd->srv, now);
	if (cli != NULL)
		dpq_shard_poll(cli, now);
}

static unsigned long
dropped(const struct side *sd)
{
	struct dpq_driver_stats a, b;

	dpq_driver_stats(sd->sdrv, &a);
	dpq_driver_stats(sd->cdrv, &b);
	return (unsigned long)(a.tx_dropped + b.tx_dropped);
}

/* Both quiet: nothing in flight, no timer within a second. */
static bool
quiet(const struct side *sd, struct dpq_shard *cli)
{
	uint64_t now = dpq_shard_now_us();

	return !memdrv_pending(sd->sdrv) && !memdrv_pending(sd->cdrv) &&
		dpq_shard_next_event(sd->srv) > now + 1000000 &&
		(cli == NULL || dpq_shard_next_event(cli) > now + 1000000);
}

static void
batch_failed(const struct side *sd, struct dpq_shard *cli, unsigned int b,
		const char *why)
{
	struct dpq_shard_stats ss, cs;
	uint64_t now = dpq_shard_now_us();

	dpq_shard_get_stats(sd->srv, &ss);
	dpq_shard_get_stats(cli, &cs);
	fprintf(stderr, "dpq-bench-idle: a batch %s after %lu connections "
			"(%lu of %u of the batch established; next event in "
			"%.1f ms (server), %.1f ms (client); parked %lu, %lu; "
			"datagrams dropped %lu; confirmed %lu, %lu; client "
			"closed %lu (idle %lu, by peer %lu, error %lu, "
			"handshake deadline %lu); server closed %lu (error "
			"%lu), refused %lu, no conn %lu; server memory %lu of "
			"%lu MiB; mbufs free %u of %u)\n", why,
			(unsigned long)dpq_shard_conn_count(sd->srv),
			established, b,
			(double)(dpq_shard_next_event(sd->srv) - now) / 1e3,
			(double)(dpq_shard_next_event(cli) - now) / 1e3,
			(unsigned long)ss.conns_parked,
			(unsigned long)cs.conns_parked, dropped(sd),
			(unsigned long)ss.handshakes_done,
			(unsigned long)cs.handshakes_done,
			(unsigned long)cs.conns_closed,
			(unsigned long)cs.closed_idle,
			(unsigned long)cs.closed_by_peer,
			(unsigned long)cs.closed_error,
			(unsigned long)cs.closed_handshake_timeout,
			(unsigned long)ss.conns_closed,
			(unsigned long)ss.closed_error,
			(unsigned long)ss.conns_refused,
			(unsigned long)ss.no_conn,
			(unsigned long)(ss.mem_used >> 20),
			(unsigned long)(ss.mem_budget >> 20),
			rte_mempool_avail_count(pool), pool->size);
}

/* Add k idle connections to sd's server. Returns 0 or -1. */
static int
add_idle(struct side *sd, unsigned int k)
{
	while (k > 0) {
		unsigned int b = k < BATCH ? k : BATCH, i;
		struct dpq_shard *cli = shard_new(DPQ_ROLE_CLIENT, sd->cdrv,
				BATCH + 16);
		struct dpq_shard_stats cs;
		uint64_t t0;

		if (cli == NULL)
			return -1;
		established = 0;
		dpq_shard_poll(cli, dpq_shard_now_us());
		for (i = 0; i < b; i++) {
			struct dpq_conn *c;

			if (dpq_shard_connect(cli, &sd->saddr, &c) != 0)
				return -1;
		}
		t0 = dpq_shard_now_us();
		while (established < b || !quiet(sd, cli)) {
			poll_both(sd, cli);
			dpq_shard_get_stats(cli, &cs);
			if (cs.conns_closed > 0) {
				batch_failed(sd, cli, b, "lost connections");
				return -1;
			}
			if (dpq_shard_now_us() - t0 > 60000000) {
				batch_failed(sd, cli, b, "did not settle");
				return -1;
			}
		}
		/* The client side goes without a word: the server's
		 * connections stay established and idle. */
		dpq_shard_destroy(cli);
		k -= b;
	}
	return 0;
}

/* ns per poll of a server shard in one round, nothing to receive. */
static double
poll_round(struct dpq_shard *srv, uint64_t now)
{
	uint64_t c0, c1;
	unsigned int i;

	c0 = rte_rdtsc_precise();
	for (i = 0; i < ROUND; i++)
		dpq_shard_poll(srv, now + i / 16);
	c1 = rte_rdtsc_precise();
	return (double)(c1 - c0) * 1e9 / (double)rte_get_tsc_hz() / ROUND;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median ns per poll of each of the n shards (alternating rounds), and
 * the connections they touched meanwhile (an idle one: none). */
static void
poll_cost(struct dpq_shard **srv, unsigned int n, unsigned int polls,
		double *out, uint64_t *touched)
{
	unsigned int rounds = (polls + ROUND - 1) / ROUND, r, j;
	double *v = calloc((size_t)rounds * n, sizeof(*v));
	struct dpq_shard_stats st;

	for (j = 0; j < n; j++) {
		dpq_shard_get_stats(srv[j], &st);
		touched[j] = st.conns_touched;
		poll_round(srv[j], dpq_shard_now_us());	/* warm */
	}
	for (r = 0; r < rounds; r++)
		for (j = 0; j < n; j++)
			v[j * rounds + r] = poll_round(srv[j],
					dpq_shard_now_us());
	for (j = 0; j < n; j++) {
		out[j] = median(v + j * rounds, rounds);
		dpq_shard_get_stats(srv[j], &st);
		touched[j] = st.conns_touched - touched[j];
	}
	free(v);
}

/* Goodput (Gbit/s) of one bulk download during secs, beside whatever
 * idle connections sd's server holds. */
static double
goodput(struct side *sd, double secs)
{
	struct dpq_shard *cli = shard_new(DPQ_ROLE_CLIENT, sd->cdrv, 16);
	struct dpq_conn *busy;
	uint64_t t0, t1, b0, id;
	double gbps;

	if (cli == NULL)
		return -1;
	established = 0;
	dpq_shard_poll(cli, dpq_shard_now_us());
	if (dpq_shard_connect(cli, &sd->saddr, &busy) != 0)
		return -1;
	while (established < 1)
		poll_both(sd, cli);
	if (dpq_conn_stream_open(busy, false, &id) != 0 ||
	    dpq_conn_stream_write(busy, id, "GET", 3, true) != 3)
		return -1;
	/* Past slow start, then measured. */
	t0 = dpq_shard_now_us();
	while (dpq_shard_now_us() - t0 < 300000)
		poll_both(sd, cli);
	b0 = rx_bytes;
	t0 = dpq_shard_now_us();
	do {
		poll_both(sd, cli);
		t1 = dpq_shard_now_us();
	} while ((double)(t1 - t0) < secs * 1e6);
	gbps = (double)(rx_bytes - b0) * 8 / ((double)(t1 - t0) * 1e3);
	/* Closed, so that it does not keep sending into the next run. */
	dpq_conn_close(busy, true, 0, "done");
	t0 = dpq_shard_now_us();
	while (dpq_shard_conn_count(cli) > 0 &&
	       dpq_shard_now_us() - t0 < 2000000)
		poll_both(sd, cli);
	dpq_shard_destroy(cli);
	/* The server's side of it ends too (closing period, RFC 9000
	 * §10.2), so that the next poll measurement sees idle ones only. */
	t0 = dpq_shard_now_us();
	while (!quiet(sd, NULL) && dpq_shard_now_us() - t0 < 5000000)
		poll_both(sd, NULL);
	return gbps;
}

int
main(int argc, char **argv)
{
	static char *def_eal[] = { NULL, "--no-huge", "--no-shconf",
		"--no-pci", "-l", "0", "-m", "2048", "--log-level=error",
		"--no-telemetry" };
	unsigned int idle = 100000, polls = 200000, runs = 3;
	double secs = 2.0, p0[2], pp[2], per_conn, per_slot;
	double *g10, *gn, gr10, grn;
	struct side s10, sn;
	struct dpq_shard *both[2];
	uint64_t touched[2];
	size_t m0;
	int rc, opt, i;

	def_eal[0] = argv[0];
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		;
	if (i < argc) {
		rc = rte_eal_init(i, argv);
		argc -= i;
		argv += i;
	} else {
		rc = rte_eal_init((int)(sizeof(def_eal) / sizeof(def_eal[0])),
				def_eal);
	}
	if (rc < 0) {
		fprintf(stderr, "dpq-bench-idle: EAL init failed\n");
		return 1;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", (const struct option[]){
			{ "idle", required_argument, NULL, 'n' },
			{ "secs", required_argument, NULL, 's' },
			{ "polls", required_argument, NULL, 'p' },
			{ "runs", required_argument, NULL, 'r' },
			{ 0 } }, NULL)) != -1) {
		switch (opt) {
		case 'n': idle = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 's': secs = strtod(optarg, NULL); break;
		case 'p': polls = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': runs = (unsigned int)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: dpq-bench-idle [EAL args --] "
					"[--idle N] [--secs S] [--polls K] "
					"[--runs R]\n");
			return 2;
		}
	}
	if (idle < 20 || secs <= 0 || polls < ROUND || runs == 0 ||
	    runs > 100) {
		fprintf(stderr, "dpq-bench-idle: --idle >= 20, --secs > 0, "
				"--polls >= %u, --runs 1..100\n", ROUND);
		return 2;
	}
	memset(chunk, 'q', sizeof(chunk));
	pool = memdrv_pool("bench_idle", 32767);
	if (pool == NULL)
		return 1;
	g10 = calloc(runs, sizeof(*g10));
	gn = calloc(runs, sizeof(*gn));

	if (side_init(&s10, "10", 0, 10 + 64) != 0) {
		fprintf(stderr, "dpq-bench-idle: out of memory\n");
		return 1;
	}
	if (side_init(&sn, "N", 1, idle + 64) != 0) {
		fprintf(stderr, "dpq-bench-idle: server shard: out of "
				"memory\n");
		return 1;
	}
	per_slot = (double)sn.tables / (idle + 64);

	printf("dpq-bench-idle: two server shards (10 and %u idle "
			"connections), in-memory driver, TLS-less "
			"handshakes\n", idle);
	both[0] = s10.srv;
	both[1] = sn.srv;
	poll_cost(both, 2, polls, p0, touched);
	if (add_idle(&s10, 10) != 0)
		return 1;
	printf("  opening %u idle connections ...\n", idle);
	fflush(stdout);
	m0 = mem_in_use();
	if (add_idle(&sn, idle) != 0)
		return 1;
	per_conn = (double)(mem_in_use() - m0) / idle;
	poll_cost(both, 2, polls, pp, touched);
	for (i = 0; i < (int)runs; i++) {
		g10[i] = goodput(&s10, secs);
		gn[i] = goodput(&sn, secs);
	}
	gr10 = median(g10, runs);
	grn = median(gn, runs);

	printf("\n  %-44s %12s %12s %12s %8s\n", "", "0 idle", "10 idle",
			"N idle", "N / 10");
	printf("  %-44s %12.1f %12.1f %12.1f %8.2f\n",
			"poll loop, ns per iteration (nothing to do)",
			(p0[0] + p0[1]) / 2, pp[0], pp[1], pp[1] / pp[0]);
	printf("  %-44s %12s %12.2f %12.2f %8.2f\n",
			"one busy connection's goodput, Gbit/s", "",
			gr10, grn, grn / gr10);
	printf("  %-44s %12.0f\n", "bytes per idle connection (heap)",
			per_conn);
	printf("  %-44s %12.0f\n", "bytes per slot (shard tables)",
			per_slot);
	printf("  %-44s %12.0f\n", "bytes per idle connection, total",
			per_conn + per_slot);
	printf("  (poll: median of %u rounds of %u polls each, "
			"connections touched meanwhile %lu and %lu; goodput: "
			"median of %u runs of %.1f s; servers: %u and %u "
			"connections, %lu handshakes TLS-less)\n",
			polls / ROUND, ROUND, (unsigned long)touched[0],
			(unsigned long)touched[1], runs, secs,
			dpq_shard_conn_count(s10.srv),
			dpq_shard_conn_count(sn.srv),
			dpq_hs_null_completed / 2);
	printf("RESULT idle=%u poll_ns_0=%.1f poll_ns_10=%.1f "
			"poll_ns_n=%.1f poll_ratio=%.2f goodput_10_gbps=%.2f "
			"goodput_n_gbps=%.2f goodput_ratio=%.2f "
			"bytes_per_conn=%.0f bytes_per_slot=%.0f "
			"bytes_per_idle_conn=%.0f\n", idle,
			(p0[0] + p0[1]) / 2, pp[0], pp[1], pp[1] / pp[0],
			gr10, grn, grn / gr10, per_conn, per_slot,
			per_conn + per_slot);
	side_fini(&sn);
	side_fini(&s10);
	free(g10);
	free(gn);
	rte_eal_cleanup();
	return 0;
}
