/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-bench-quic: end-to-end QUIC figures of the whole stack (shard loop,
 * connection engine, crypto, drivers, handshake service), each measured
 * over DPDK virtual devices and over the kernel UDP driver in the same run:
 *
 *  1. goodput of one connection: a client shard pulls bytes from the
 *     "dpq-source" app of a server shard ("SEND <n>\n"); the server shard
 *     runs on a worker lcore, the client on the main lcore (one lcore:
 *     alternating polls). Handshakes in-thread (hs_direct): only the
 *     transfer is timed. On net_ring the transfer runs twice, the
 *     server's connection paced (the default, RFC 9002 §7.7) and not
 *     paced, to show what pacing costs on a clean path.
 *  2. handshakes per second: connections opened (K at a time), closed as
 *     soon as the client sees the handshake confirmed. The server's
 *     handshakes run on the management thread over rings (control/mgmt +
 *     hs_ring, as dpquicd wires them), the client's in its own thread.
 *     The management thread gets a core of its own; both shards alternate
 *     on the main lcore.
 *
 * DPDK virtual devices: two net_ring ports wired back to back in this
 * process (rte_eth_from_rings), each opened with the dpquic DPDK driver
 * (which answers ARP). Kernel UDP: two dpq UDP drivers on 127.0.0.1 with
 * GSO and GRO on.
 *
 *   dpq-bench-quic [EAL args --] [--goodput-secs S] [--hs-secs S]
 *                  [--parallel K] [--only goodput|hs] [--drivers ring|udp]
 *                  [--verbose]
 *
 * --verbose adds per-phase shard, handshake-ring, management and listener
 * counters; --only and --drivers run a subset (e.g. under perf record).
 *
 * Without EAL args: --no-huge --no-shconf --no-pci -m 1024
 * --log-level=error (every core an lcore). Prints a table and a final
 * "RESULT key=value ..." line. Exit status 0 when every phase run
 * produced a figure.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "control/mgmt/mgmt.h"
#include "control/tls/hs_direct.h"
#include "control/tls/tls.h"
#include "dataplane/app/app.h"
#include "dataplane/server/listener.h"
#include "dataplane/shard/hs_ring.h"
#include "dataplane/shard/shard.h"
#include "dpquic/driver.h"

#define RING_SIZE	4096		/* net_ring depth, each direction */
#define WARMUP_US	500000		/* goodput: not timed after 1st byte */
#define HS_TIMEOUT_US	3000000		/* one handshake, at most */
#define CLOSE_LINGER_US	50000		/* let CONNECTION_CLOSE go out */
#define MAX_PARALLEL	256
#define SOURCE_BYTES	(1ull << 40)	/* more than any run can pull */
#define READ_CHUNK	65536

enum { PAIR_RING = 0, PAIR_UDP, PAIR_COUNT };

/* Two drivers wired to each other: the server's and the client's. */
struct pair {
	const char *name;
	struct dpq_driver *srv, *cli;
	struct dpq_addr srv_addr;	/* where the client connects */
};

/* A server shard and what it is made of. */
struct server {
	struct dpq_shard *shard;
	struct dpq_listener *listener;
	struct dpq_app_env *env;
	struct dpq_hs_ring *ring;	/* NULL: hs_direct */
	uint64_t last_handle;		/* the newest connection's */
	bool have_conn;
};

struct goodput_result {
	bool ok;
	double gbps;		/* timed window, after the warm-up */
	double gbps_all;	/* first byte to the end */
	uint64_t bytes, window_bytes;
	double window_s;
	double hs_ms;
	double cli_cpu, srv_cpu;	/* fraction of a core each thread got */
	struct dpq_conn_stats srv_cs, cli_cs;
	struct dpq_shard_stats srv_st, cli_st;
	struct dpq_driver_stats srv_ds, cli_ds;	/* deltas */
};

struct hs_result {
	bool ok;
	unsigned int k;
	uint64_t done, failed;
	double secs;
	double per_s, lat_ms, srv_lat_ms;
	double mgmt_cpu;	/* fraction of one core, management thread */
	double main_cpu;
	struct dpq_mgmt_stats ms;
	struct dpq_hs_ring_stats hr;
	struct dpq_listener_stats ls;
	struct dpq_shard_stats srv_st, cli_st;
	struct dpq_driver_stats srv_ds, cli_ds;
};

static struct {
	double goodput_secs, hs_secs;
	unsigned int parallel;
	bool verbose;
	const char *only;	/* "goodput" / "hs" / NULL: both */
	const char *drivers;	/* "ring" / "udp" / NULL: both */
} opt = { 4.0, 3.0, 16, false, NULL, NULL };

static volatile sig_atomic_t interrupted;
static volatile int server_stop;
static struct dpq_tls_ctx *srv_tls, *cli_tls;
static struct dpq_cid_cfg cid_cfg;
static unsigned int worker_lcore = RTE_MAX_LCORE;	/* none */

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double
now_s(void)
{
	return (double)dpq_shard_now_us() / 1e6;
}

static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* ---- the pieces ----------------------------------------------------- */

static int
direct_attach(void *arg, struct dpq_conn *c, uint64_t handle)
{
	(void)handle;
	return dpq_hs_direct_attach(arg, c);
}

static int
ring_attach(void *arg, struct dpq_conn *c, uint64_t handle)
{
	return dpq_hs_ring_new_conn(arg, c, handle);
}

static struct dpq_conn *
lookup_handle(void *arg, uint64_t handle)
{
	return dpq_shard_conn_by_handle(arg, handle);
}

static void
ring_poll(void *arg, struct dpq_shard *s)
{
	dpq_hs_ring_drain(arg, lookup_handle, s, 256);
}

static struct server *cur_server;	/* for srv_conn_ctx */
static bool server_no_pacing;	/* the server's connections unpaced */

/* The app env's per connection context, noting the newest connection. */
static void *
srv_conn_ctx(void *arg, struct dpq_conn *c)
{
	struct server *sv = cur_server;

	if (sv != NULL) {
		sv->last_handle = dpq_shard_conn_handle(sv->shard, c);
		sv->have_conn = true;
	}
	return dpq_app_conn_ctx(arg, c);
}

static void
server_destroy(struct server *sv)
{
	dpq_shard_destroy(sv->shard);
	dpq_listener_destroy(sv->listener);
	dpq_app_env_destroy(sv->env);
	dpq_hs_ring_destroy(sv->ring);
	if (cur_server == sv)
		cur_server = NULL;
	memset(sv, 0, sizeof(*sv));
}

/* A server shard on drv, handshakes in-thread or over mgmt's channel. */
static int
server_create(struct server *sv, struct dpq_driver *drv,
		struct dpq_mgmt *mgmt)
{
	static const struct dpq_rand rnd = { dpq_rand_system_fill, NULL };
	struct dpq_app_env_conf ac = { 0 };
	struct dpq_shard_conf sc = { 0 };
	struct dpq_listener_cfg lc;
	uint8_t key[32];
	int rc;

	memset(sv, 0, sizeof(*sv));
	cur_server = sv;
	rc = dpq_app_env_create(&ac, &sv->env);
	if (rc != 0)
		goto fail;
	sc.drv = drv;
	sc.nb_shards = 1;
	sc.conn.role = DPQ_ROLE_SERVER;
	sc.conn.scid_len = cid_cfg.len;
	sc.conn.no_pacing = server_no_pacing;
	if (mgmt != NULL) {
		struct dpq_hs_ring_conf hc = { 0 };

		hc.chan = dpq_mgmt_chan(mgmt, 0);
		hc.socket_id = SOCKET_ID_ANY;
		rc = dpq_hs_ring_create(&hc, &sv->ring);
		if (rc != 0)
			goto fail;
		sc.hs.ops = &dpq_hs_ring_ops;
		sc.hs.hs = sv->ring;
		sc.hs.attach = ring_attach;
		sc.hs.poll = ring_poll;
		sc.hs.arg = sv->ring;
	} else {
		sc.hs.ops = &dpq_hs_direct_ops;
		sc.hs.hs = srv_tls;
		sc.hs.attach = direct_attach;
		sc.hs.arg = srv_tls;
	}
	sc.app.ops = &dpq_app_server_ops;
	sc.app.conn_ctx = srv_conn_ctx;
	sc.app.conn_ctx_free = dpq_app_conn_ctx_free;
	sc.app.arg = sv->env;
	sc.socket_id = SOCKET_ID_ANY;
	rc = dpq_shard_create(&sc, &sv->shard);
	if (rc != 0)
		goto fail;
	dpq_listener_cfg_default(&lc);
	lc.cid = cid_cfg;
	dpq_rand_system_fill(NULL, key, sizeof(key));
	memcpy(lc.sreset_key, key, sizeof(key));
	lc.sreset_key_len = sizeof(key);
	sv->listener = dpq_listener_create(&lc, dpq_shard_crypto(sv->shard),
			&rnd, dpq_shard_now_us());
	if (sv->listener == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	dpq_rand_system_fill(NULL, key, sizeof(key));
	rc = dpq_listener_set_token_key(sv->listener, 1, key);
	if (rc != 0)
		goto fail;
	dpq_shard_set_listener(sv->shard, sv->listener);
	return 0;
fail:
	fprintf(stderr, "dpq-bench-quic: server shard: %s\n", strerror(-rc));
	server_destroy(sv);
	return rc;
}

static int
client_create(struct dpq_shard **out, struct dpq_driver *drv,
		const struct dpq_app_ops *app, void *app_arg)
{
	struct dpq_shard_conf sc = { 0 };
	int rc;

	sc.drv = drv;
	sc.nb_shards = 1;
	sc.conn.role = DPQ_ROLE_CLIENT;
	sc.conn.max_data = 16 << 20;
	sc.conn.max_stream_data = 8 << 20;
	sc.hs.ops = &dpq_hs_direct_ops;
	sc.hs.hs = cli_tls;
	sc.hs.attach = direct_attach;
	sc.hs.arg = cli_tls;
	sc.app.ops = app;
	sc.app.arg = app_arg;
	sc.socket_id = SOCKET_ID_ANY;
	rc = dpq_shard_create(&sc, out);
	if (rc != 0)
		fprintf(stderr, "dpq-bench-quic: client shard: %s\n",
				strerror(-rc));
	return rc;
}

static double
tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static double
cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return tv_s(&ru.ru_utime) + tv_s(&ru.ru_stime);
}

static double server_cpu_s;	/* the server loop's thread CPU time */

static int
server_loop(void *arg)
{
	struct dpq_shard *s = arg;
	double c0 = cpu_s(RUSAGE_THREAD);

	while (!server_stop)
		dpq_shard_poll(s, dpq_shard_now_us());
	server_cpu_s = cpu_s(RUSAGE_THREAD) - c0;
	return 0;
}

/* Datagrams left from an earlier phase would only meet the listener. */
static void
drain(struct pair *p)
{
	struct rte_mbuf *m[32];
	uint64_t until = dpq_shard_now_us() + 20000;
	uint16_t n;

	while (dpq_shard_now_us() < until) {
		n = dpq_driver_rx_burst(p->srv, 0, m, 32);
		dpq_driver_free_bulk(p->srv, m, n);
		n = dpq_driver_rx_burst(p->cli, 0, m, 32);
		dpq_driver_free_bulk(p->cli, m, n);
	}
}

static void
ds_delta(struct dpq_driver_stats *d, const struct dpq_driver_stats *a,
		const struct dpq_driver_stats *b)
{
	const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
	uint64_t *pd = (uint64_t *)d;
	size_t i;

	for (i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		pd[i] = pb[i] - pa[i];
}

static uint64_t
ds_drops(const struct dpq_driver_stats *d)
{
	return d->rx_dropped + d->rx_bad + d->tx_dropped + d->alloc_fail +
		d->neigh_drop;
}

/* ---- 1. goodput ---------------------------------------------------- */

/* The client side of dpq-source: one request, count what comes back. */
struct src_client {
	uint64_t got;
	uint64_t t_first;	/* us of the first body byte */
	bool fin, failed, requested;
};

static struct src_client src;
static uint8_t src_buf[READ_CHUNK];

static void
src_on_established(struct dpq_conn *c, const char *alpn)
{
	char req[64];
	uint64_t id;
	int n;

	(void)alpn;
	n = snprintf(req, sizeof(req), "SEND %llu\n",
			(unsigned long long)SOURCE_BYTES);
	if (dpq_conn_stream_open(c, false, &id) != 0 ||
	    dpq_conn_stream_write(c, id, req, (size_t)n, true) != n) {
		src.failed = true;
		return;
	}
	src.requested = true;
}

static void
src_on_stream_data(struct dpq_conn *c, uint64_t id)
{
	bool fin = false;
	ssize_t n;

	/* The read that returns the last bytes returns the FIN with them
	 * and may free the stream (our request was acknowledged): stop
	 * there, a read after it finds no stream. */
	do {
		n = dpq_conn_stream_read(c, id, src_buf, sizeof(src_buf), &fin);
		if (n > 0) {
			if (src.got == 0)
				src.t_first = dpq_shard_now_us();
			src.got += (uint64_t)n;
		}
	} while (n > 0 && !fin);
	if (n < 0)
		src.failed = true;
	if (fin)
		src.fin = true;
}

static void
src_on_stream_reset(struct dpq_conn *c, uint64_t id, uint64_t err,
		bool stop)
{
	(void)c;
	(void)id;
	(void)err;
	(void)stop;
	src.failed = true;
}

static const struct dpq_app_ops src_ops = {
	.on_established = src_on_established,
	.on_stream_data = src_on_stream_data,
	.on_stream_reset = src_on_stream_reset,
};

static void
run_goodput(struct pair *p, struct goodput_result *r)
{
	struct dpq_driver_stats sd0, cd0, sd1, cd1;
	struct server sv;
	struct dpq_shard *cli = NULL;
	struct dpq_conn *c = NULL;
	uint64_t h = 0, t0, mark_t = 0, mark_b = 0, end_t = 0, deadline;
	bool two = worker_lcore != RTE_MAX_LCORE, launched = false;
	double c0, w0;

	memset(r, 0, sizeof(*r));
	memset(&src, 0, sizeof(src));
	drain(p);
	if (server_create(&sv, p->srv, NULL) != 0)
		return;
	if (client_create(&cli, p->cli, &src_ops, NULL) != 0)
		goto out;
	dpq_driver_stats(p->srv, &sd0);
	dpq_driver_stats(p->cli, &cd0);
	server_stop = 0;
	server_cpu_s = 0;
	c0 = cpu_s(RUSAGE_THREAD);
	if (two && rte_eal_remote_launch(server_loop, sv.shard,
			worker_lcore) == 0)
		launched = true;
	if (dpq_shard_connect(cli, &p->srv_addr, &c) != 0) {
		fprintf(stderr, "dpq-bench-quic: %s: connect failed\n",
				p->name);
		goto stop;
	}
	h = dpq_shard_conn_handle(cli, c);
	t0 = dpq_shard_now_us();
	w0 = now_s();
	deadline = t0 + HS_TIMEOUT_US + WARMUP_US +
		(uint64_t)(opt.goodput_secs * 1e6) + 1000000;
	for (;;) {
		uint64_t now = dpq_shard_now_us();

		dpq_shard_poll(cli, now);
		if (!launched)
			dpq_shard_poll(sv.shard, now);
		if (interrupted || src.failed || src.fin || now > deadline)
			break;
		if (dpq_shard_conn_by_handle(cli, h) == NULL)
			break;
		if (src.got == 0)
			continue;
		if (mark_t == 0 && now >= src.t_first + WARMUP_US) {
			mark_t = now;
			mark_b = src.got;
		}
		if (mark_t != 0 &&
		    now >= mark_t + (uint64_t)(opt.goodput_secs * 1e6)) {
			end_t = now;
			break;
		}
	}
	r->bytes = src.got;
	if (end_t != 0) {
		r->ok = true;
		r->window_bytes = src.got - mark_b;
		r->window_s = (double)(end_t - mark_t) / 1e6;
		r->gbps = (double)r->window_bytes * 8 / r->window_s / 1e9;
		r->gbps_all = (double)src.got * 8 /
			((double)(end_t - src.t_first) / 1e6) / 1e9;
	} else {
		fprintf(stderr, "dpq-bench-quic: %s: goodput run ended early "
			"(%s, %llu bytes)\n", p->name,
			src.failed ? "stream failed" :
			src.fin ? "stream ended" :
			interrupted ? "interrupted" :
			dpq_shard_conn_by_handle(cli, h) == NULL ?
			"connection closed" : "timeout",
			(unsigned long long)src.got);
	}
stop:
	server_stop = 1;
	if (launched)
		rte_eal_wait_lcore(worker_lcore);
	if (h != 0) {
		double wall = now_s() - w0;

		r->cli_cpu = (cpu_s(RUSAGE_THREAD) - c0) / wall;
		r->srv_cpu = launched ? server_cpu_s / wall : r->cli_cpu;
	}
	/* The server shard is ours now: read its connection, then close. */
	c = h != 0 ? dpq_shard_conn_by_handle(cli, h) : NULL;
	if (c != NULL)
		dpq_conn_get_stats(c, &r->cli_cs);
	r->hs_ms = (double)r->cli_cs.handshake_us / 1e3;
	if (sv.have_conn) {
		struct dpq_conn *sc = dpq_shard_conn_by_handle(sv.shard,
				sv.last_handle);

		if (sc != NULL)
			dpq_conn_get_stats(sc, &r->srv_cs);
	}
	dpq_driver_stats(p->srv, &sd1);
	dpq_driver_stats(p->cli, &cd1);
	ds_delta(&r->srv_ds, &sd0, &sd1);
	ds_delta(&r->cli_ds, &cd0, &cd1);
	dpq_shard_get_stats(sv.shard, &r->srv_st);
	dpq_shard_get_stats(cli, &r->cli_st);
	if (c != NULL && dpq_conn_state(c) < DPQ_CONN_CLOSING) {
		uint64_t until = dpq_shard_now_us() + CLOSE_LINGER_US;

		dpq_conn_close(c, true, 0, "");
		while (dpq_shard_now_us() < until) {
			dpq_shard_poll(cli, dpq_shard_now_us());
			dpq_shard_poll(sv.shard, dpq_shard_now_us());
		}
	}
out:
	dpq_shard_destroy(cli);
	server_destroy(&sv);
}

/* ---- 2. handshakes per second ------------------------------------- */

struct inflight {
	uint64_t handle;
	uint64_t t0;
};

/* Start the management thread with a core of its own when there is one:
 * it inherits the creating thread's affinity, so lend it the worker's. */
static struct dpq_mgmt *
mgmt_start(void)
{
	struct dpq_mgmt_conf mc = { 0 };
	struct dpq_mgmt *m;
	cpu_set_t saved, one;
	bool moved = false;

	mc.server_ctx = srv_tls;
	mc.n_shards = 1;
	m = dpq_mgmt_create(&mc);
	if (m == NULL) {
		fprintf(stderr, "dpq-bench-quic: mgmt: %s\n", strerror(errno));
		return NULL;
	}
	if (worker_lcore != RTE_MAX_LCORE &&
	    pthread_getaffinity_np(pthread_self(), sizeof(saved),
			&saved) == 0) {
		CPU_ZERO(&one);
		CPU_SET(rte_lcore_to_cpu_id((int)worker_lcore), &one);
		moved = pthread_setaffinity_np(pthread_self(), sizeof(one),
				&one) == 0;
	}
	if (dpq_mgmt_start_thread(m) != 0) {
		fprintf(stderr, "dpq-bench-quic: mgmt thread failed\n");
		dpq_mgmt_destroy(m);
		m = NULL;
	}
	if (moved)
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	return m;
}

static void
run_hs(struct pair *p, unsigned int k, struct hs_result *r)
{
	static struct inflight fl[MAX_PARALLEL];
	struct dpq_driver_stats sd0, cd0, sd1, cd1;
	struct dpq_mgmt *mgmt;
	struct server sv;
	struct dpq_shard *cli = NULL;
	unsigned int n = 0, i;
	uint64_t t0, t_end, lat_sum = 0, until;
	double proc0, main0, proc1, main1;

	memset(r, 0, sizeof(*r));
	r->k = k;
	drain(p);
	mgmt = mgmt_start();
	if (mgmt == NULL)
		return;
	if (server_create(&sv, p->srv, mgmt) != 0)
		goto out_mgmt;
	if (client_create(&cli, p->cli, NULL, NULL) != 0)
		goto out;
	dpq_driver_stats(p->srv, &sd0);
	dpq_driver_stats(p->cli, &cd0);
	proc0 = cpu_s(RUSAGE_SELF);
	main0 = cpu_s(RUSAGE_THREAD);
	t0 = dpq_shard_now_us();
	t_end = t0 + (uint64_t)(opt.hs_secs * 1e6);
	for (;;) {
		uint64_t now = dpq_shard_now_us();
		bool opening = now < t_end && !interrupted;

		while (opening && n < k) {
			struct dpq_conn *c;

			if (dpq_shard_connect(cli, &p->srv_addr, &c) != 0) {
				r->failed++;
				break;
			}
			fl[n].handle = dpq_shard_conn_handle(cli, c);
			fl[n].t0 = dpq_shard_now_us();
			n++;
		}
		if (!opening && n == 0)
			break;
		if (now > t_end + HS_TIMEOUT_US)
			break;
		dpq_shard_poll(cli, now);
		dpq_shard_poll(sv.shard, now);
		now = dpq_shard_now_us();
		for (i = 0; i < n;) {
			struct dpq_conn *c = dpq_shard_conn_by_handle(cli,
					fl[i].handle);

			if (c != NULL && !dpq_conn_handshake_confirmed(c) &&
			    now - fl[i].t0 < HS_TIMEOUT_US) {
				i++;
				continue;
			}
			if (c != NULL && dpq_conn_handshake_confirmed(c)) {
				r->done++;
				lat_sum += now - fl[i].t0;
				dpq_conn_close(c, true, 0, "");
			} else {
				r->failed++;
				if (c != NULL)
					dpq_conn_close(c, true, 1, "timeout");
			}
			fl[i] = fl[--n];
		}
	}
	r->secs = (double)(dpq_shard_now_us() - t0) / 1e6;
	proc1 = cpu_s(RUSAGE_SELF);
	main1 = cpu_s(RUSAGE_THREAD);
	dpq_driver_stats(p->srv, &sd1);
	dpq_driver_stats(p->cli, &cd1);
	ds_delta(&r->srv_ds, &sd0, &sd1);
	ds_delta(&r->cli_ds, &cd0, &cd1);
	/* The worker lcore sleeps in this phase: the process's CPU beyond
	 * the main thread is the management thread's (and EAL's idle
	 * service threads). */
	r->main_cpu = (main1 - main0) / r->secs;
	r->mgmt_cpu = ((proc1 - proc0) - (main1 - main0)) / r->secs;
	dpq_shard_get_stats(sv.shard, &r->srv_st);
	dpq_shard_get_stats(cli, &r->cli_st);
	dpq_mgmt_get_stats(mgmt, 0, &r->ms);
	dpq_hs_ring_get_stats(sv.ring, &r->hr);
	r->ls = *dpq_listener_stats(sv.listener);
	if (r->done > 0) {
		r->ok = true;
		r->per_s = (double)r->done / r->secs;
		r->lat_ms = (double)lat_sum / (double)r->done / 1e3;
	}
	if (r->srv_st.handshakes_done > 0)
		r->srv_lat_ms = (double)r->srv_st.handshake_us_sum /
			(double)r->srv_st.handshakes_done / 1e3;
	/* Closing connections linger 3 PTO (RFC 9000 §10.2): let them go. */
	until = dpq_shard_now_us() + 1000000;
	while (dpq_shard_now_us() < until &&
	       (dpq_shard_conn_count(cli) > 0 ||
		dpq_shard_conn_count(sv.shard) > 0)) {
		dpq_shard_poll(cli, dpq_shard_now_us());
		dpq_shard_poll(sv.shard, dpq_shard_now_us());
	}
out:
	dpq_shard_destroy(cli);
	/* The management thread may still hold releases for this shard. */
	dpq_mgmt_stop_thread(mgmt);
	server_destroy(&sv);
out_mgmt:
	dpq_mgmt_destroy(mgmt);
}

/* ---- drivers ------------------------------------------------------ */

static int
open_ring_pair(struct pair *p, struct rte_ring *r[2])
{
	struct dpq_addr addr[2];
	int port[2] = { -1, -1 };
	unsigned int i;

	p->name = "net_ring";
	(void)dpq_addr_parse("198.18.0.1:4433", &addr[0]);	/* server */
	(void)dpq_addr_parse("198.18.0.2:4433", &addr[1]);	/* client */
	for (i = 0; i < 2; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dpqbq_r%u", i);
		r[i] = rte_ring_create(name, RING_SIZE, rte_socket_id(),
				RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (r[i] == NULL)
			goto fail;
	}
	/* port 0 receives on r0 and sends on r1, port 1 the opposite */
	port[0] = rte_eth_from_rings("dpqbq_p0", &r[0], 1, &r[1], 1,
			rte_socket_id());
	port[1] = rte_eth_from_rings("dpqbq_p1", &r[1], 1, &r[0], 1,
			rte_socket_id());
	if (port[0] < 0 || port[1] < 0)
		goto fail;
	for (i = 0; i < 2; i++) {
		struct dpq_dpdk_conf dc = { 0 };
		struct dpq_driver *d;

		dc.port_id = (uint16_t)port[i];
		dc.nb_queues = 1;
		dc.socket_id = -1;
		dc.local = addr[i];
		dc.promiscuous = true;
		d = dpq_driver_dpdk_open(&dc);
		if (d == NULL)
			goto fail;
		port[i] = -1;	/* the driver closes it */
		if (i == 0)
			p->srv = d;
		else
			p->cli = d;
		if (dpq_driver_start(d) != 0)
			goto fail;
	}
	p->srv_addr = addr[0];
	return 0;
fail:
	fprintf(stderr, "dpq-bench-quic: net_ring pair: %s\n",
			rte_strerror(rte_errno));
	for (i = 0; i < 2; i++)
		if (port[i] >= 0)
			rte_eth_dev_close((uint16_t)port[i]);
	return -1;
}

static int
open_udp_pair(struct pair *p)
{
	struct dpq_udp_conf uc = { 0 };

	p->name = "kernel UDP";
	(void)dpq_addr_parse("127.0.0.1:0", &uc.local);
	uc.nb_queues = 1;
	uc.gso = true;
	uc.gro = true;
	uc.socket_id = -1;
	p->srv = dpq_driver_udp_open(&uc);
	if (p->srv == NULL || dpq_driver_start(p->srv) != 0)
		goto fail;
	p->cli = dpq_driver_udp_open(&uc);
	if (p->cli == NULL || dpq_driver_start(p->cli) != 0)
		goto fail;
	if (dpq_driver_local_addr(p->srv, &p->srv_addr) != 0 ||
	    p->srv_addr.port == 0) {
		errno = EADDRNOTAVAIL;
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "dpq-bench-quic: kernel UDP pair: %s\n",
			strerror(errno));
	return -1;
}

static void
close_pair(struct pair *p)
{
	if (p->srv != NULL)
		dpq_driver_close(p->srv);
	if (p->cli != NULL)
		dpq_driver_close(p->cli);
	p->srv = p->cli = NULL;
}

/* ---- report ------------------------------------------------------- */

static void
print_drops(const char *who, const struct dpq_driver_stats *d,
		const struct dpq_shard_stats *st)
{
	if (ds_drops(d) == 0 && st->tx_refused == 0 &&
	    st->tx_alloc_fail == 0 && st->tx_seal_fail == 0)
		return;
	printf("    %s drops: driver rx_dropped %llu rx_bad %llu "
		"tx_dropped %llu alloc_fail %llu neigh_drop %llu; shard "
		"tx_refused %llu tx_alloc_fail %llu tx_seal_fail %llu\n", who,
		(unsigned long long)d->rx_dropped,
		(unsigned long long)d->rx_bad,
		(unsigned long long)d->tx_dropped,
		(unsigned long long)d->alloc_fail,
		(unsigned long long)d->neigh_drop,
		(unsigned long long)st->tx_refused,
		(unsigned long long)st->tx_alloc_fail,
		(unsigned long long)st->tx_seal_fail);
}

static void
print_goodput(const char *name, const struct goodput_result *r)
{
	const struct dpq_conn_stats *s = &r->srv_cs;

	printf("  %-10s %8.3f %9.3f %10.1f %9.3f %8.1f %9llu %8llu "
		"%10llu %6.0f%% %6.0f%%\n", name, r->gbps, r->gbps_all,
		(double)r->bytes / 1e6, (double)s->srtt_us / 1e3,
		(double)s->cwnd / 1024.0, (unsigned long long)s->pkts_lost,
		(unsigned long long)r->cli_cs.pkts_lost,
		(unsigned long long)s->pkts_sent, r->srv_cpu * 100,
		r->cli_cpu * 100);
	print_drops("server", &r->srv_ds, &r->srv_st);
	print_drops("client", &r->cli_ds, &r->cli_st);
	if (opt.verbose) {
		const struct dpq_conn_stats *c = &r->cli_cs;

		printf("    handshake %.3f ms; client conn: sent %llu recv %llu "
			"lost %llu srtt %.3f ms; server conn: sent %llu recv "
			"%llu acked %llu inflight %llu min_rtt %.3f ms\n",
			r->hs_ms, (unsigned long long)c->pkts_sent,
			(unsigned long long)c->pkts_recv,
			(unsigned long long)c->pkts_lost,
			(double)c->srtt_us / 1e3,
			(unsigned long long)s->pkts_sent,
			(unsigned long long)s->pkts_recv,
			(unsigned long long)s->pkts_acked,
			(unsigned long long)s->bytes_in_flight,
			(double)s->min_rtt_us / 1e3);
		printf("    server shard: conns %llu active %llu closed idle "
			"%llu peer %llu app %llu err %llu rx %llu tx %llu; "
			"client shard: rx %llu tx %llu closed err %llu\n",
			(unsigned long long)r->srv_st.conns_created,
			(unsigned long long)r->srv_st.conns_active,
			(unsigned long long)r->srv_st.closed_idle,
			(unsigned long long)r->srv_st.closed_by_peer,
			(unsigned long long)r->srv_st.closed_app,
			(unsigned long long)r->srv_st.closed_error,
			(unsigned long long)r->srv_st.rx_pkts,
			(unsigned long long)r->srv_st.tx_pkts,
			(unsigned long long)r->cli_st.rx_pkts,
			(unsigned long long)r->cli_st.tx_pkts,
			(unsigned long long)r->cli_st.closed_error);
	}
	if (r->srv_ds.gso_sends + r->cli_ds.gro_recvs != 0)
		printf("    kernel UDP: server sendmsg with GSO %llu, client "
			"receives with GRO %llu (of %llu datagrams)\n",
			(unsigned long long)r->srv_ds.gso_sends,
			(unsigned long long)r->cli_ds.gro_recvs,
			(unsigned long long)r->cli_ds.rx_pkts);
}

static void
print_hs(const struct pair *p, const struct hs_result *r)
{
	char srv[16];

	/* The shard sums dpq_conn_stats.handshake_us when it sees the
	 * handshake confirmed; a server connection whose handshake
	 * completed through the ring sets it only on its next received
	 * packet, so the sum can be 0: say n/a rather than 0. */
	if (r->srv_lat_ms > 0)
		snprintf(srv, sizeof(srv), "%.3f", r->srv_lat_ms);
	else
		snprintf(srv, sizeof(srv), "n/a");
	printf("  %-10s %3u %9.0f %9.3f %9s %6llu %6llu %7.0f%% %7.0f%% "
		"%10.0f\n", p->name, r->k, r->per_s, r->lat_ms, srv,
		(unsigned long long)r->done, (unsigned long long)r->failed,
		r->main_cpu * 100, r->mgmt_cpu * 100,
		r->mgmt_cpu > 0 ? r->per_s / r->mgmt_cpu : 0.0);
	if (r->ms.hs_failed || r->ms.refused || r->ms.ring_full ||
	    r->ms.backlog_overflow)
		printf("    mgmt: hs_ok %llu hs_failed %llu refused %llu "
			"ring_full %llu backlog_overflow %llu\n",
			(unsigned long long)r->ms.hs_ok,
			(unsigned long long)r->ms.hs_failed,
			(unsigned long long)r->ms.refused,
			(unsigned long long)r->ms.ring_full,
			(unsigned long long)r->ms.backlog_overflow);
	if (r->cli_st.closed_error || r->srv_st.closed_error)
		printf("    closed on error: client %llu server %llu\n",
			(unsigned long long)r->cli_st.closed_error,
			(unsigned long long)r->srv_st.closed_error);
	print_drops("server", &r->srv_ds, &r->srv_st);
	print_drops("client", &r->cli_ds, &r->cli_st);
	if (opt.verbose) {
		unsigned int k;

		printf("    server: conns %llu hs %llu no_conn %llu rx %llu "
			"tx %llu; client: conns %llu hs %llu rx %llu tx %llu "
			"closed idle %llu peer %llu app %llu err %llu\n",
			(unsigned long long)r->srv_st.conns_created,
			(unsigned long long)r->srv_st.handshakes_done,
			(unsigned long long)r->srv_st.no_conn,
			(unsigned long long)r->srv_st.rx_pkts,
			(unsigned long long)r->srv_st.tx_pkts,
			(unsigned long long)r->cli_st.conns_created,
			(unsigned long long)r->cli_st.handshakes_done,
			(unsigned long long)r->cli_st.rx_pkts,
			(unsigned long long)r->cli_st.tx_pkts,
			(unsigned long long)r->cli_st.closed_idle,
			(unsigned long long)r->cli_st.closed_by_peer,
			(unsigned long long)r->cli_st.closed_app,
			(unsigned long long)r->cli_st.closed_error);
		printf("    hs_ring: req %llu replies %llu applied %llu "
			"stale %llu ring_full %llu complete %llu failed %llu; "
			"mgmt: req %llu replies %llu ok %llu failed %llu "
			"stale %llu\n    listener:",
			(unsigned long long)r->hr.requests,
			(unsigned long long)r->hr.replies,
			(unsigned long long)r->hr.applied,
			(unsigned long long)r->hr.stale,
			(unsigned long long)r->hr.ring_full,
			(unsigned long long)r->hr.hs_complete,
			(unsigned long long)r->hr.hs_failed,
			(unsigned long long)r->ms.requests,
			(unsigned long long)r->ms.replies,
			(unsigned long long)r->ms.hs_ok,
			(unsigned long long)r->ms.hs_failed,
			(unsigned long long)r->ms.stale);
		for (k = 0; k < DPQ_LO_COUNT; k++)
			if (r->ls.outcome[k] != 0)
				printf(" %s %llu", dpq_listen_outcome_str(k),
					(unsigned long long)r->ls.outcome[k]);
		printf("\n");
	}
}

static bool
want_pair(unsigned int i)
{
	if (opt.drivers == NULL)
		return true;
	return strcmp(opt.drivers, i == PAIR_RING ? "ring" : "udp") == 0;
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

/* ---- main --------------------------------------------------------- */

static int
parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "goodput-secs", required_argument, NULL, 'g' },
		{ "hs-secs", required_argument, NULL, 's' },
		{ "parallel", required_argument, NULL, 'k' },
		{ "only", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "drivers", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'g': opt.goodput_secs = atof(optarg); break;
		case 's': opt.hs_secs = atof(optarg); break;
		case 'k': opt.parallel = (unsigned int)atoi(optarg); break;
		case 'o': opt.only = optarg; break;
		case 'v': opt.verbose = true; break;
		case 'd': opt.drivers = optarg; break;
		default:
			fprintf(stderr, "usage: dpq-bench-quic [EAL args --] "
				"[--goodput-secs S (4)] [--hs-secs S (3)] "
				"[--parallel K (16)] [--only goodput|hs] "
				"[--drivers ring|udp] [--verbose]\n");
			return -1;
		}
	}
	if (opt.goodput_secs <= 0 || opt.goodput_secs > 60 ||
	    opt.hs_secs <= 0 || opt.hs_secs > 60 || opt.parallel < 1 ||
	    opt.parallel > MAX_PARALLEL) {
		fprintf(stderr, "dpq-bench-quic: seconds 0..60, parallel "
			"1..%d\n", MAX_PARALLEL);
		return -1;
	}
	return 0;
}

static int
make_tls(void)
{
	struct dpq_tls_ctx_conf tc = { 0 };
	unsigned int i;

	tc.role = DPQ_TLS_SERVER;
	for (i = 0; i < DPQ_APP_ALPN_COUNT; i++)
		tc.alpn[tc.alpn_count++] = dpq_app_alpns[i];
	tc.self_signed_name = "dpq-bench";
	tc.log = quiet;
	if (dpq_tls_ctx_create(&tc, &srv_tls) != 0)
		return -1;
	memset(&tc, 0, sizeof(tc));
	tc.role = DPQ_TLS_CLIENT;
	tc.alpn[0] = DPQ_ALPN_SOURCE;
	tc.alpn_count = 1;
	tc.server_name = "dpq-bench";
	tc.log = quiet;
	return dpq_tls_ctx_create(&tc, &cli_tls);
}

int
main(int argc, char **argv)
{
	char *def_eal[] = { argv[0], "--no-huge", "--no-shconf", "--no-pci",
		"-m", "1024", "--log-level=error", NULL };
	struct goodput_result gp[PAIR_COUNT], unpaced;
	struct hs_result hs1[PAIR_COUNT], hsk[PAIR_COUNT];
	struct pair pairs[PAIR_COUNT];
	struct rte_ring *rings[2] = { NULL, NULL };
	unsigned int i, lcore;
	int dash = -1, n, rc = 1;
	double t_start;

	memset(pairs, 0, sizeof(pairs));
	memset(gp, 0, sizeof(gp));
	memset(&unpaced, 0, sizeof(unpaced));
	memset(hs1, 0, sizeof(hs1));
	memset(hsk, 0, sizeof(hsk));
	for (n = 1; n < argc; n++)
		if (strcmp(argv[n], "--") == 0) {
			dash = n;
			break;
		}
	if (dash > 1) {
		n = rte_eal_init(argc, argv);
		if (n >= 0) {
			argc -= n;
			argv += n;
		}
	} else {
		/* no EAL args ("--" first, or none): the defaults */
		n = rte_eal_init((int)RTE_DIM(def_eal) - 1, def_eal);
		if (n >= 0 && dash == 1) {
			argc -= 1;
			argv += 1;
		}
	}
	if (n < 0) {
		fprintf(stderr, "dpq-bench-quic: EAL init failed: %s\n",
				rte_strerror(rte_errno));
		return 1;
	}
	if (parse_opts(argc, argv) != 0)
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	t_start = now_s();

	RTE_LCORE_FOREACH_WORKER(lcore) {
		worker_lcore = lcore;
		break;
	}
	dpq_cid_cfg_default(&cid_cfg);
	if (make_tls() != 0) {
		fprintf(stderr, "dpq-bench-quic: TLS setup failed\n");
		goto out;
	}
	if (open_ring_pair(&pairs[PAIR_RING], rings) != 0 ||
	    open_udp_pair(&pairs[PAIR_UDP]) != 0)
		goto out;

	{
		double la[3] = { 0, 0, 0 };

		if (getloadavg(la, 3) > 0)
			printf("dpq-bench-quic: load average before the run "
				"%.2f %.2f %.2f (%ld cpus): a loaded machine "
				"starves the polling threads, see the *_cpu "
				"columns\n", la[0], la[1], la[2],
				sysconf(_SC_NPROCESSORS_ONLN));
	}
	printf("dpq-bench-quic: %u lcore(s); DPDK virtual device: net_ring "
		"pair (rte_eth_from_rings, %u deep); kernel UDP: 127.0.0.1, "
		"GSO+GRO\n", rte_lcore_count(), RING_SIZE);
	fflush(stdout);

	for (i = 0; i < PAIR_COUNT && !interrupted; i++)
		if ((opt.only == NULL || strcmp(opt.only, "goodput") == 0) &&
		    want_pair(i))
			run_goodput(&pairs[i], &gp[i]);
	/* The same on net_ring with the server's pacing off. */
	if ((opt.only == NULL || strcmp(opt.only, "goodput") == 0) &&
	    want_pair(PAIR_RING) && !interrupted) {
		server_no_pacing = true;
		run_goodput(&pairs[PAIR_RING], &unpaced);
		server_no_pacing = false;
	}
	for (i = 0; i < PAIR_COUNT && !interrupted &&
	     (opt.only == NULL || strcmp(opt.only, "hs") == 0); i++) {
		if (!want_pair(i))
			continue;
		run_hs(&pairs[i], 1, &hs1[i]);
		if (!interrupted)
			run_hs(&pairs[i], opt.parallel, &hsk[i]);
	}

	printf("\n1. goodput, one connection, dpq-source (\"SEND <n>\"), "
		"handshake in-thread (hs_direct);\n   %s; timed %.1f s after "
		"a %.1f s warm-up\n",
		worker_lcore != RTE_MAX_LCORE ?
		"server shard on worker lcore, client shard on main lcore" :
		"one lcore: server and client shard polls alternate",
		opt.goodput_secs, WARMUP_US / 1e6);
	printf("  %-10s %8s %9s %10s %9s %8s %9s %8s %10s %7s %7s\n",
		"driver", "Gbit/s", "all_Gb/s", "MB", "srtt_ms", "cwnd_KiB",
		"srv_lost", "cli_lost", "srv_pkts", "srv_cpu", "cli_cpu");
	for (i = 0; i < PAIR_COUNT; i++)
		print_goodput(pairs[i].name, &gp[i]);
	print_goodput("ring-nopace", &unpaced);
	printf("  ratio net_ring / kernel UDP: %.2f\n",
		ratio(gp[PAIR_RING].gbps, gp[PAIR_UDP].gbps));
	printf("  pacing (server, %s): paced / unpaced goodput on net_ring "
		"%.2f; the pacer held %llu sends, pacing rate at the end "
		"%.2f Gbit/s\n", gp[PAIR_RING].srv_cs.cc,
		ratio(gp[PAIR_RING].gbps, unpaced.gbps),
		(unsigned long long)gp[PAIR_RING].srv_cs.pacer_held,
		(double)gp[PAIR_RING].srv_cs.pacing_rate * 8 / 1e9);

	printf("\n2. handshakes: open K at a time, close once confirmed; "
		"server TLS on the management thread over rings\n   "
		"(dpquicd's wiring), client TLS in-thread; %s; %.1f s each\n",
		worker_lcore != RTE_MAX_LCORE ?
		"management thread alone on the worker lcore's cpu, both "
		"shards alternating on the main lcore" :
		"one lcore: shards and management thread share it",
		opt.hs_secs);
	printf("  %-10s %3s %9s %9s %9s %6s %6s %8s %8s %10s\n", "driver",
		"K", "hs/s", "lat_ms", "srv_ms", "done", "failed",
		"main_cpu", "mgmt_cpu", "hs/mgmt_s");
	for (i = 0; i < PAIR_COUNT; i++) {
		print_hs(&pairs[i], &hs1[i]);
		print_hs(&pairs[i], &hsk[i]);
	}
	printf("  ratio net_ring / kernel UDP: K=1 %.2f, K=%u %.2f\n",
		ratio(hs1[PAIR_RING].per_s, hs1[PAIR_UDP].per_s),
		opt.parallel,
		ratio(hsk[PAIR_RING].per_s, hsk[PAIR_UDP].per_s));
	printf("  lat_ms: client connect -> handshake confirmed; srv_ms: "
		"server connection created -> handshake complete;\n  "
		"hs/mgmt_s: handshakes per CPU-second of the management "
		"thread (DESIGN target >= 10000)\n");
	printf("\ntotal run time %.1f s\n", now_s() - t_start);

	printf("RESULT goodput_ring_gbps=%.3f goodput_udp_gbps=%.3f "
		"goodput_ratio=%.2f hs_ring_per_s=%.0f hs_udp_per_s=%.0f "
		"hs_ratio=%.2f hs_ring_lat_ms=%.3f hs_udp_lat_ms=%.3f "
		"hs_ring_par_per_s=%.0f hs_udp_par_per_s=%.0f "
		"hs_par_ratio=%.2f parallel=%u hs_ring_per_mgmt_cpu_s=%.0f "
		"ring_srtt_ms=%.3f udp_srtt_ms=%.3f ring_lost=%llu "
		"udp_lost=%llu lcores=%u goodput_ring_unpaced_gbps=%.3f "
		"pacing_ratio=%.2f\n",
		gp[PAIR_RING].gbps, gp[PAIR_UDP].gbps,
		ratio(gp[PAIR_RING].gbps, gp[PAIR_UDP].gbps),
		hs1[PAIR_RING].per_s, hs1[PAIR_UDP].per_s,
		ratio(hs1[PAIR_RING].per_s, hs1[PAIR_UDP].per_s),
		hs1[PAIR_RING].lat_ms, hs1[PAIR_UDP].lat_ms,
		hsk[PAIR_RING].per_s, hsk[PAIR_UDP].per_s,
		ratio(hsk[PAIR_RING].per_s, hsk[PAIR_UDP].per_s),
		opt.parallel,
		hsk[PAIR_RING].mgmt_cpu > 0 ?
		hsk[PAIR_RING].per_s / hsk[PAIR_RING].mgmt_cpu : 0.0,
		(double)gp[PAIR_RING].srv_cs.srtt_us / 1e3,
		(double)gp[PAIR_UDP].srv_cs.srtt_us / 1e3,
		(unsigned long long)gp[PAIR_RING].srv_cs.pkts_lost,
		(unsigned long long)gp[PAIR_UDP].srv_cs.pkts_lost,
		rte_lcore_count(), unpaced.gbps,
		ratio(gp[PAIR_RING].gbps, unpaced.gbps));
	fflush(stdout);
	rc = 0;
	for (i = 0; i < PAIR_COUNT; i++) {
		if (!want_pair(i))
			continue;
		if ((opt.only == NULL || strcmp(opt.only, "goodput") == 0) &&
		    (!gp[i].ok || (i == PAIR_RING && !unpaced.ok)))
			rc = 1;
		if ((opt.only == NULL || strcmp(opt.only, "hs") == 0) &&
		    (!hs1[i].ok || !hsk[i].ok))
			rc = 1;
	}
out:
	for (i = 0; i < PAIR_COUNT; i++)
		close_pair(&pairs[i]);
	for (i = 0; i < 2; i++)
		rte_ring_free(rings[i]);
	dpq_tls_ctx_destroy(srv_tls);
	dpq_tls_ctx_destroy(cli_tls);
	rte_eal_cleanup();
	return rc;
}
