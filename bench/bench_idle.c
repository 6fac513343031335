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
 * Printed, all in the same run:
 *   - the server shard's poll loop: ns per iteration with nothing to
 *     receive, with 0, 10 and N idle connections, and the ratio N / 10;
 *   - the goodput of one busy connection (a bulk download) beside 10
 *     idle connections and beside N, and the ratio;
 *   - memory per idle connection: heap bytes the connections hold
 *     (glibc mallinfo2, everything a connection allocates: struct, keys,
 *     streams, buffers) plus the shard's per-slot tables (slot array,
 *     connection-ID hash), divided by the connections.
 *
 *   dpq-bench-idle [EAL args --] [--idle N] [--secs S] [--polls K]
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

static struct rte_mempool *pool;
static struct dpq_driver *sdrv, *cdrv;
static struct dpq_shard *srv;
static struct dpq_listener *lsn;
static struct dpq_addr saddr, caddr;
static uint64_t rx_bytes;		/* the busy client's */
static unsigned long established;	/* client side, this batch */
static struct dpq_conn *busy;		/* the busy client connection */
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
	/* Park after 50 ms of quiet (default 1 s): batches settle sooner. */
	sc.park_after_ms = 50;
	sc.socket_id = SOCKET_ID_ANY;
	if (dpq_shard_create(&sc, &s) != 0)
		return NULL;
	return s;
}

static void
poll_both(struct dpq_shard *cli)
{
	uint64_t now = dpq_shard_now_us();

	dpq_shard_poll(srv, now);
	if (cli != NULL)
		dpq_shard_poll(cli, now);
}

static unsigned long
dropped(void)
{
	struct dpq_driver_stats a, b;

	dpq_driver_stats(sdrv, &a);
	dpq_driver_stats(cdrv, &b);
	return (unsigned long)(a.tx_dropped + b.tx_dropped);
}

/* Both quiet: nothing in flight, no timer within a second. */
static bool
quiet(struct dpq_shard *cli)
{
	uint64_t now = dpq_shard_now_us();

	return !memdrv_pending(sdrv) && !memdrv_pending(cdrv) &&
		dpq_shard_next_event(srv) > now + 1000000 &&
		(cli == NULL || dpq_shard_next_event(cli) > now + 1000000);
}

/* Add k idle connections to the server. Returns 0 or -1. */
static int
add_idle(unsigned int k)
{
	while (k > 0) {
		unsigned int b = k < BATCH ? k : BATCH, i;
		struct dpq_shard *cli = shard_new(DPQ_ROLE_CLIENT, cdrv,
				BATCH + 16);
		uint64_t t0;

		if (cli == NULL)
			return -1;
		established = 0;
		dpq_shard_poll(cli, dpq_shard_now_us());
		for (i = 0; i < b; i++) {
			struct dpq_conn *c;

			if (dpq_shard_connect(cli, &saddr, &c) != 0)
				return -1;
		}
		t0 = dpq_shard_now_us();
		while (established < b || !quiet(cli)) {
			poll_both(cli);
			if (dpq_shard_now_us() - t0 > 60000000) {
				struct dpq_shard_stats ss, cs;
				uint64_t now = dpq_shard_now_us();

				dpq_shard_get_stats(srv, &ss);
				dpq_shard_get_stats(cli, &cs);
				fprintf(stderr, "dpq-bench-idle: batch stuck "
						"(%lu of %u established; next "
						"event in %.1f ms (server), "
						"%.1f ms (client); parked %lu, "
						"%lu; datagrams dropped %lu; "
						"confirmed %lu, %lu; client "
						"closed %lu (idle %lu, by peer "
						"%lu, error %lu, handshake "
						"deadline %lu); server "
						"refused %lu, no conn %lu; "
						"mbufs free %u of %u)\n",
						established, b,
						(double)(dpq_shard_next_event(
						srv) - now) / 1e3,
						(double)(dpq_shard_next_event(
						cli) - now) / 1e3,
						(unsigned long)ss.conns_parked,
						(unsigned long)cs.conns_parked,
						dropped(),
						(unsigned long)ss.handshakes_done,
						(unsigned long)cs.handshakes_done,
						(unsigned long)cs.conns_closed,
						(unsigned long)cs.closed_idle,
						(unsigned long)cs.closed_by_peer,
						(unsigned long)cs.closed_error,
						(unsigned long)
						cs.closed_handshake_timeout,
						(unsigned long)ss.conns_refused,
						(unsigned long)ss.no_conn,
						rte_mempool_avail_count(pool),
						pool->size);
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

/* ns per poll of the server shard, nothing to receive. */
static double
poll_cost(unsigned int polls)
{
	uint64_t c0, c1, now = dpq_shard_now_us();
	unsigned int i;

	for (i = 0; i < 1000; i++)	/* warm */
		dpq_shard_poll(srv, now);
	c0 = rte_rdtsc_precise();
	for (i = 0; i < polls; i++)
		dpq_shard_poll(srv, now + i / 16);
	c1 = rte_rdtsc_precise();
	return (double)(c1 - c0) * 1e9 / (double)rte_get_tsc_hz() / polls;
}

/* Goodput (Gbit/s) of one bulk download during secs, beside whatever
 * idle connections the server holds. */
static double
goodput(double secs)
{
	struct dpq_shard *cli = shard_new(DPQ_ROLE_CLIENT, cdrv, 16);
	uint64_t t0, t1, b0, id;
	double gbps;

	if (cli == NULL)
		return -1;
	established = 0;
	dpq_shard_poll(cli, dpq_shard_now_us());
	if (dpq_shard_connect(cli, &saddr, &busy) != 0)
		return -1;
	while (established < 1)
		poll_both(cli);
	if (dpq_conn_stream_open(busy, false, &id) != 0 ||
	    dpq_conn_stream_write(busy, id, "GET", 3, true) != 3)
		return -1;
	/* Past slow start, then measured. */
	t0 = dpq_shard_now_us();
	while (dpq_shard_now_us() - t0 < 300000)
		poll_both(cli);
	b0 = rx_bytes;
	t0 = dpq_shard_now_us();
	do {
		poll_both(cli);
		t1 = dpq_shard_now_us();
	} while ((double)(t1 - t0) < secs * 1e6);
	gbps = (double)(rx_bytes - b0) * 8 / ((double)(t1 - t0) * 1e3);
	/* Closed, so that it does not keep sending into the next run. */
	dpq_conn_close(busy, true, 0, "done");
	t0 = dpq_shard_now_us();
	while (dpq_shard_conn_count(cli) > 0 &&
	       dpq_shard_now_us() - t0 < 2000000)
		poll_both(cli);
	dpq_shard_destroy(cli);
	return gbps;
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

int
main(int argc, char **argv)
{
	static char *def_eal[] = { NULL, "--no-huge", "--no-shconf",
		"--no-pci", "-l", "0", "-m", "1024", "--log-level=error",
		"--no-telemetry" };
	static const struct dpq_rand rnd = { dpq_rand_system_fill, NULL };
	unsigned int idle = 100000, polls = 200000;
	double secs = 2.0, p0, p10, pn, g10, gn, per_conn, per_slot;
	struct dpq_listener_cfg lc;
	size_t h0, h1, r0, r1;
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
			{ 0 } }, NULL)) != -1) {
		switch (opt) {
		case 'n': idle = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 's': secs = strtod(optarg, NULL); break;
		case 'p': polls = (unsigned int)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: dpq-bench-idle [EAL args --] "
					"[--idle N] [--secs S] [--polls K]\n");
			return 2;
		}
	}
	if (idle < 20 || secs <= 0 || polls == 0) {
		fprintf(stderr, "dpq-bench-idle: --idle >= 20, --secs > 0, "
				"--polls > 0\n");
		return 2;
	}
	memset(chunk, 'q', sizeof(chunk));
	pool = memdrv_pool("bench_idle", 32767);
	dpq_addr_parse("198.18.0.1:443", &saddr);
	dpq_addr_parse("198.18.0.2:40000", &caddr);
	sdrv = memdrv_create(pool, &saddr);
	cdrv = memdrv_create(pool, &caddr);
	if (pool == NULL || sdrv == NULL || cdrv == NULL)
		return 1;
	memdrv_link(sdrv, cdrv);

	h0 = heap_in_use();
	r0 = rte_in_use();
	srv = shard_new(DPQ_ROLE_SERVER, sdrv, idle + 64);
	dpq_listener_cfg_default(&lc);
	/* Every client comes from one address, a thousand at a time: no
	 * half-open bound or Retry (they defend a server under attack). */
	lc.retry = DPQ_RETRY_NEVER;
	lc.halfopen.max_total = 1u << 20;
	lc.halfopen.max_per_prefix = 1u << 20;
	lc.halfopen.retry_threshold = 1u << 20;
	lc.sreset_key_len = 32;
	dpq_rand_system_fill(NULL, lc.sreset_key, 32);
	lsn = srv ? dpq_listener_create(&lc, dpq_shard_crypto(srv), &rnd,
			dpq_shard_now_us()) : NULL;
	if (lsn == NULL) {
		fprintf(stderr, "dpq-bench-idle: server shard: out of memory\n");
		return 1;
	}
	dpq_shard_set_listener(srv, lsn);
	per_slot = ((double)(heap_in_use() - h0) +
			(double)(rte_in_use() - r0)) / (idle + 64);

	printf("dpq-bench-idle: one server shard, in-memory driver, "
			"TLS-less handshakes, %u idle connections\n", idle);
	p0 = poll_cost(polls);
	if (add_idle(10) != 0)
		return 1;
	p10 = poll_cost(polls);
	g10 = goodput(secs);

	h0 = heap_in_use();
	r0 = rte_in_use();
	printf("  opening %u idle connections ...\n", idle - 10);
	fflush(stdout);
	if (add_idle(idle - 10) != 0)
		return 1;
	h1 = heap_in_use();
	r1 = rte_in_use();
	per_conn = ((double)(h1 - h0) + (double)(r1 - r0)) / (idle - 10);
	pn = poll_cost(polls);
	gn = goodput(secs);

	printf("\n  %-44s %12s %12s %12s %8s\n", "", "0 idle", "10 idle",
			"N idle", "N / 10");
	printf("  %-44s %12.1f %12.1f %12.1f %8.2f\n",
			"poll loop, ns per iteration (nothing to do)",
			p0, p10, pn, pn / p10);
	printf("  %-44s %12s %12.2f %12.2f %8.2f\n",
			"one busy connection's goodput, Gbit/s", "",
			g10, gn, gn / g10);
	printf("  %-44s %12.0f\n", "bytes per idle connection (heap)",
			per_conn);
	printf("  %-44s %12.0f\n", "bytes per slot (shard tables)",
			per_slot);
	printf("  %-44s %12.0f\n", "bytes per idle connection, total",
			per_conn + per_slot);
	printf("  (server: %u connections; %lu handshakes TLS-less)\n",
			dpq_shard_conn_count(srv), dpq_hs_null_completed / 2);
	printf("RESULT idle=%u poll_ns_0=%.1f poll_ns_10=%.1f poll_ns_n=%.1f "
			"poll_ratio=%.2f goodput_10_gbps=%.2f "
			"goodput_n_gbps=%.2f goodput_ratio=%.2f "
			"bytes_per_conn=%.0f bytes_per_slot=%.0f "
			"bytes_per_idle_conn=%.0f\n", idle, p0, p10, pn,
			pn / p10, g10, gn, gn / g10, per_conn, per_slot,
			per_conn + per_slot);
	dpq_shard_destroy(srv);
	dpq_listener_destroy(lsn);
	dpq_driver_close(cdrv);
	dpq_driver_close(sdrv);
	rte_eal_cleanup();
	return 0;
}
