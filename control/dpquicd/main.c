/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd: the dpquic server daemon (dpquicd(8)).
 *
 *   dpquicd [EAL args --] [-c FILE] [options]
 *
 * Threads (DESIGN §2, docs/architecture.md): N shards on N dataplane
 * lcores, each owning a queue of the DPDK port and its connections; a
 * management pthread that runs every TLS handshake (GnuTLS) and talks to
 * shards over rings; the main lcore serves the control socket, signals
 * and reloads (and runs the last shard itself when there are fewer
 * worker lcores than shards).
 *
 * Start-up checks everything it can before it touches the port, and
 * stops with a distinct exit code at the first problem (enum dpq_exit):
 * configuration (file, options, root, lcores), control socket, TLS, EAL,
 * port. Only then does it print "serving" (and tell systemd READY=1).
 *
 * Stopping: SIGTERM/SIGINT (or --duration) refuse new connections, close
 * every connection with CONNECTION_CLOSE (NO_ERROR, "server shutting
 * down"), give the packets a moment to leave, and exit 0. A second signal
 * exits at once. `dpquic-ctl drain` refuses new connections and exits
 * when the last one ends or at the deadline (then closing the rest).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pdump.h>
#include <rte_ring.h>

#ifdef DPQ_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#else
static int
sd_notify(int unset, const char *state)
{
	(void)unset;
	(void)state;
	return 0;
}
#endif

#include "control/dpquicd/dpquicd.h"
#include "dataplane/engine/errors.h"

/* How long a stop waits for every shard to build its CONNECTION_CLOSE
 * packets (bounded: a shard whose core is taken from it answers late),
 * then for late packets of the peers to be answered. */
#define CLOSE_BUILD_WAIT_US	10000000
#define CLOSE_WAIT_US		500000

struct dpqd dpqd;
volatile sig_atomic_t dpqd_stop;
volatile sig_atomic_t dpqd_hup;
/* Tells the shard lcores to return; set only once connections are
 * closed (they must keep polling to send the closes). */
static volatile int lcores_stop;
static struct dpq_cid_cfg cid_cfg;

static void
on_stop(int sig)
{
	(void)sig;
	if (dpqd_stop)
		_exit(DPQ_EXIT_RUNTIME);	/* second signal: now */
	dpqd_stop = 1;
}

static void
on_hup(int sig)
{
	(void)sig;
	dpqd_hup = 1;
}

static void
signals_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* ---- helpers shared with reload.c ----------------------------------------- */

struct tls_err {
	char *buf;
	size_t n;
};

static void
tls_log(void *arg, const char *msg)
{
	struct tls_err *e = arg;

	snprintf(e->buf, e->n, "%s", msg);
}

int
dpqd_tls_create(const struct dpq_conf *c, struct dpq_tls_ctx **out,
		char *err, size_t n)
{
	struct dpq_tls_ctx_conf tc = { 0 };
	struct tls_err te = { err, n };
	char why[DPQ_CONF_ERR_MAX] = "";
	unsigned int i;
	int rc;

	tc.role = DPQ_TLS_SERVER;
	for (i = 0; dpq_app_alpns[i] != NULL && i < DPQ_TLS_ALPN_MAX; i++)
		tc.alpn[tc.alpn_count++] = dpq_app_alpns[i];
	tc.cert_file = c->tls.cert;
	tc.key_file = c->tls.key;
	tc.self_signed_name = "dpquicd";
	/* Key logs hold secrets: only when the operator asked for one in
	 * the config or on the command line, never from the environment. */
	tc.keylog_file = c->tls.keylog;
	te.buf = why;
	te.n = sizeof(why);
	tc.log = tls_log;
	tc.log_arg = &te;
	rc = dpq_tls_ctx_create(&tc, out);
	if (rc != 0) {
		if (c->tls.cert != NULL)
			snprintf(err, n, "cannot load certificate %s and key "
				"%s: %s", c->tls.cert, c->tls.key,
				why[0] ? why : strerror(-rc));
		else
			snprintf(err, n, "TLS set-up failed: %s",
				why[0] ? why : strerror(-rc));
		return rc ? rc : -EINVAL;
	}
	return 0;
}

void
dpqd_retry_parse(const char *s, enum dpq_retry_policy *p, uint32_t *rate)
{
	uint64_t r = 0;

	*rate = 0;
	if (strcmp(s, "auto") == 0) {
		*p = DPQ_RETRY_AUTO;
	} else if (strcmp(s, "always") == 0) {
		*p = DPQ_RETRY_ALWAYS;
	} else if (strncmp(s, "rate:", 5) == 0 &&
		   dpq_conf_parse_u64(s + 5, &r) == 0) {
		*p = DPQ_RETRY_RATE;
		*rate = (uint32_t)r;
	} else {
		*p = DPQ_RETRY_NEVER;
	}
}

/* ---- glue between shards and the management thread ---------------------- */

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

/* Which shard a DCID belongs to: ours by its QUIC-LB layout; a client's
 * random first DCID by hash, which spreads new connections over shards
 * even when the device has no RSS. */
static uint8_t
cid_to_shard(void *arg, const uint8_t *cid, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	(void)arg;
	if (dpq_cid_check(&cid_cfg, cid, len) == 0)
		return (uint8_t)dpq_cid_shard(&cid_cfg, cid, len);
	for (i = 0; i < len; i++)
		h = (h ^ cid[i]) * 16777619u;
	return (uint8_t)(h % dpqd.nshards);
}

/*
 * DPDK's net_tap asks the kernel for a signal per received packet (its
 * rx burst reads only after one; a real-time signal, SIGRTMIN+1 here,
 * so they queue and none is merged): under a flood that is tens of
 * thousands a second, and the kernel delivers each to any thread that
 * does not block it, waking a sleeping management, interrupt or
 * telemetry thread for nothing (perf in a spoofed Initial flood: three
 * quarters of the signals went there). Only the dataplane lcores take
 * them: EAL's threads inherit the block from rte_eal_init, the
 * management thread from its creation, and the lcores unblock (the main
 * one after rte_eal_init, workers in shard_loop). dpquicd uses no
 * real-time signal itself; SIGIO is blocked with them for a driver
 * that keeps the default.
 */
static void
sigio_block(bool block)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	for (sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(&set, sig);
	pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* The management thread is not a dataplane core (DESIGN §2): a thread
 * inherits its creator's CPU set, which EAL pinned to the main lcore,
 * so create it with every CPU allowed and let the scheduler place it. */
static int
start_mgmt_unpinned(struct dpq_mgmt *m)
{
	cpu_set_t saved, all;
	long i, n = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0)
		return dpq_mgmt_start_thread(m);
	CPU_ZERO(&all);
	for (i = 0; i < n && i < CPU_SETSIZE; i++)
		CPU_SET(i, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
	sigio_block(true);	/* inherited by the thread */
	rc = dpq_mgmt_start_thread(m);
	sigio_block(false);
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	return rc;
}

/* ---- shards ------------------------------------------------------------- */

static int
shard_loop(void *arg)
{
	struct dpqd_shard *r = arg;

	/* for the control requests' timeout (lcore_wait.h) */
	__atomic_store_n(&r->tid, (pid_t)syscall(SYS_gettid),
			__ATOMIC_RELEASE);
	sigio_block(false);
	dpqd_poll_sleep_thread_init(&r->ps);
	while (!lcores_stop) {
		uint64_t now = dpq_shard_now_us();
		unsigned int work = dpq_shard_poll(r->shard, now);

		dpqd_shardctl_serve(r);
		dpqd_poll_sleep_do(&r->ps, dpqd_poll_sleep_decide(&r->ps,
				work, now, dpq_shard_next_event(r->shard)));
	}
	return 0;
}

static int
setup_shard(struct dpqd *d, unsigned int i, struct rte_ring **handoff,
		const struct dpq_srvcfg_version *v0, const uint8_t *sreset_key)
{
	static const struct dpq_rand rnd = { dpq_rand_system_fill, NULL };
	struct dpq_listener_cfg lc;
	struct dpq_hs_ring_conf hc = { 0 };
	struct dpq_shard_conf sc = { 0 };
	struct dpq_app_env_conf ac = { .root = d->conf.server.root };
	struct dpqd_shard *r = &d->sh[i];
	uint32_t rate;
	int rc;

	hc.chan = dpq_mgmt_chan(d->mgmt, i);
	hc.socket_id = SOCKET_ID_ANY;
	hc.on_config = dpqd_on_config;
	hc.config_arg = r;
	rc = dpq_hs_ring_create(&hc, &r->ring);
	if (rc != 0)
		return rc;
	sc.shard_id = (uint16_t)i;
	sc.nb_shards = (uint16_t)d->nshards;
	sc.drv = d->drv;
	sc.queue = (uint16_t)i;
	sc.conn.role = DPQ_ROLE_SERVER;
	sc.conn.scid_len = cid_cfg.len;
	sc.conn.cc_name = d->conf.recovery.cc;
	dpqd_fec_conn_conf(&d->conf, &sc.conn);
	sc.conn.key_update_pkts = d->conf.crypto.key_update_pkts;
	sc.conn.key_update_gap_us =
		(uint64_t)(d->conf.crypto.key_update_gap * 1e6);
	sc.conn.idle_timeout_ms = d->conf.server.idle_timeout_ms;
	sc.max_conns = (uint32_t)d->conf.server.max_connections;
	sc.mem_budget = d->conf.server.mem_budget_mib << 20;
	r->ps.max_us = (uint32_t)d->conf.server.poll_sleep_us;
	sc.hs.ops = &dpq_hs_ring_ops;
	sc.hs.hs = r->ring;
	sc.hs.attach = ring_attach;
	sc.hs.poll = ring_poll;
	sc.hs.arg = r->ring;
	rc = dpq_app_env_create(&ac, &r->apps);
	if (rc != 0)
		return rc;
	sc.app.ops = &dpq_app_server_ops;
	/* the app's per-connection context, and the qlog sample */
	sc.app.conn_ctx = dpqd_conn_ctx;
	sc.app.conn_ctx_free = dpqd_conn_ctx_free;
	sc.app.arg = r;
	sc.handoff = d->nshards > 1 ? handoff : NULL;
	sc.cid_shard = cid_to_shard;
	sc.socket_id = SOCKET_ID_ANY;
	sc.new_token = v0->policy.new_token;
	rc = dpq_shard_create(&sc, &r->shard);
	if (rc != 0)
		return rc;

	/* The listener seals Retry tags with the shard's crypto context. */
	dpq_listener_cfg_default(&lc);
	lc.cid = cid_cfg;
	lc.shard = (uint8_t)i;
	dpqd_retry_parse(d->conf.server.retry, &lc.retry, &rate);
	if (rate != 0)
		lc.retry_rate = rate;
	memcpy(lc.sreset_key, sreset_key, 32);
	lc.sreset_key_len = 32;
	r->listener = dpq_listener_create(&lc, dpq_shard_crypto(r->shard),
			&rnd, dpq_shard_now_us());
	if (r->listener == NULL)
		return -ENOMEM;
	/* The server config's token keys and policies (the same for every
	 * shard, and for the fleet with a shared key file); later versions
	 * come over the handshake ring. */
	dpq_listener_set_token_filter(r->listener, d->token_filter);
	dpqd_srvcfg_apply_first(r, v0);
	dpq_shard_set_listener(r->shard, r->listener);
	return 0;
}

/* ---- start-up steps ------------------------------------------------------ */

/* --check: every key, its value and where it came from. */
static void
print_key(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k)
{
	const struct dpq_conf *c = arg;
	char key[96], val[1024], org[300];

	snprintf(key, sizeof(key), "%s.%s", s->name, k->name);
	dpq_conf_format(c, k, val, sizeof(val));
	printf("  %-24s = %-24s # %s\n", key, val,
		dpq_conf_origin_str(c, k, org, sizeof(org)));
}

static int
check_root(const struct dpq_conf *c)
{
	struct stat st;

	if (stat(c->server.root, &st) != 0) {
		fprintf(stderr, "dpquicd: server.root (--root) %s: %s\n",
			c->server.root, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dpquicd: server.root (--root) %s is not a "
			"directory\n", c->server.root);
		return -1;
	}
	return 0;
}

static int
ctl_open(struct dpqd *d)
{
	struct dpq_ctl_conf cc = { 0 };
	const char *path = d->conf.ctl.path;
	char dir[256];
	char *slash;
	int rc;

	if (path == NULL || path[0] == '\0')
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			fprintf(stderr, "dpquicd: control socket %s: cannot "
				"create directory %s: %s (choose another "
				"--ctl, or \"\" for none)\n", path, dir,
				strerror(errno));
			return -1;
		}
	}
	cc.path = path;
	cc.max_clients = (unsigned)d->conf.ctl.max_clients;
	rc = dpq_ctl_create(&cc, &d->ctl);
	switch (rc) {
	case 0:
		return 0;
	case -EADDRINUSE:
		fprintf(stderr, "dpquicd: control socket %s is in use: another "
			"dpquicd is running there (`dpquic-ctl -s %s status` "
			"shows it). Stop it, or give this one its own --ctl "
			"PATH (and its own EAL --file-prefix).\n", path, path);
		break;
	case -EEXIST:
		fprintf(stderr, "dpquicd: control socket %s: the path exists "
			"and is not a socket; remove it or choose another "
			"--ctl PATH\n", path);
		break;
	case -ENAMETOOLONG:
		fprintf(stderr, "dpquicd: control socket %s: the path is %zu "
			"bytes, a Unix socket path holds at most 107\n", path,
			strlen(path));
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "dpquicd: control socket %s: permission "
			"denied (run as root, or choose a --ctl PATH in a "
			"directory you may write)\n", path);
		break;
	default:
		fprintf(stderr, "dpquicd: control socket %s: %s\n", path,
			strerror(-rc));
		break;
	}
	return -1;
}

/* EAL's --file-prefix: the last part of its runtime directory. */
static const char *
eal_prefix(void)
{
	const char *dir = rte_eal_get_runtime_dir();
	const char *slash = dir != NULL ? strrchr(dir, '/') : NULL;

	return slash != NULL ? slash + 1 : "rte";
}

/* Does the runtime directory hold file name (EAL made it)? */
static bool
runtime_has(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", rte_eal_get_runtime_dir(),
		name);
	return access(path, F_OK) == 0;
}

/* dpdk-dumpcap / dpdk-pdump: a secondary process asks us (over EAL's
 * multi-process socket) to copy the port's packets into its ring; the
 * copy runs in rx/tx callbacks on the shards' queues only while a
 * capture is on. Secondaries need the shared runtime directory (not
 * --no-shconf, not --in-memory: EAL then writes no "config" there) and
 * our memory in hugepages to map it; say which tools can attach. */
static bool
pdump_init(void)
{
	bool tel = runtime_has("dpdk_telemetry.v2");
	bool sec = rte_eal_has_hugepages() && runtime_has("config");
	bool up = sec && rte_pdump_init() == 0;

	if (up)
		DLOG(INFO, "DPDK tools: dpdk-dumpcap --file-prefix=%s -i %u "
			"-w FILE.pcapng captures the port; dpdk-proc-info "
			"--file-prefix=%s -- --stats; dpdk-telemetry.py -f %s\n",
			eal_prefix(), (unsigned int)dpqd.conf.port.id,
			eal_prefix(), eal_prefix());
	else
		DLOG(INFO, "DPDK tools: %s%s%s; dpdk-dumpcap and "
			"dpdk-proc-info cannot attach (%s)\n",
			tel ? "dpdk-telemetry.py -f " : "no telemetry",
			tel ? eal_prefix() : "", tel ? " works" : "",
			!sec ? "they need hugepages and the shared runtime "
			"directory: no --no-huge, --no-shconf, --in-memory" :
			rte_strerror(rte_errno));
	return up;
}

/* Shards need lcores: one worker each, or the main lcore for the last. */
static int
check_lcores(const struct dpqd *d)
{
	unsigned int workers = rte_lcore_count() - 1;

	if (workers + 1 >= d->nshards)
		return 0;
	fprintf(stderr, "dpquicd: %u shards need %u lcores (one each; the "
		"main lcore runs the last), EAL has %u: give more with -l "
		"(config: eal.lcores), e.g. -l 0-%u, or fewer --shards\n",
		d->nshards, d->nshards, rte_lcore_count(), d->nshards - 1);
	return -1;
}

static int
port_open(struct dpqd *d)
{
	struct dpq_dpdk_conf dc = { 0 };
	uint16_t id = (uint16_t)d->conf.port.id;

	if (!rte_eth_dev_is_valid_port(id)) {
		fprintf(stderr, "dpquicd: no DPDK port %u (EAL found %u): give "
			"one with EAL arguments, e.g. --vdev=net_tap0 or -a "
			"0000:03:00.0 (config: eal.vdev, eal.allow)\n", id,
			rte_eth_dev_count_avail());
		return -1;
	}
	dc.port_id = id;
	dc.nb_queues = (uint16_t)d->nshards;
	dc.socket_id = -1;
	dc.local = d->conf.server.addr;
	dc.prefix_len = (uint8_t)d->conf.port.prefix;
	dc.gateway = d->conf.port.gateway;
	dc.promiscuous = true;
	dc.allow_no_rss = d->conf.server.allow_no_rss;
	d->drv = dpq_driver_dpdk_open(&dc);
	if (d->drv == NULL || dpq_driver_start(d->drv) != 0) {
		fprintf(stderr, "dpquicd: port %u could not be set up: %s%s\n",
			id, rte_strerror(rte_errno),
			d->nshards > 1 && !d->conf.server.allow_no_rss ?
			" (several shards need a device with RSS, or "
			"--allow-no-rss)" : "");
		return -1;
	}
	return 0;
}

static unsigned int
total_conns(const struct dpqd *d)
{
	unsigned int i, n = 0;

	for (i = 0; i < d->nshards; i++)
		n += dpq_shard_conn_count(d->sh[i].shard);
	return n;
}

static void
poll_main(struct dpqd *d, int main_shard)
{
	if (main_shard >= 0) {
		struct dpqd_shard *r = &d->sh[main_shard];
		uint32_t sleep_us = 0;
		unsigned int k;

		for (k = 0; k < 64 && sleep_us == 0; k++) {
			uint64_t now = dpq_shard_now_us();
			unsigned int work = dpq_shard_poll(r->shard, now);

			sleep_us = dpqd_poll_sleep_decide(&r->ps, work, now,
					dpq_shard_next_event(r->shard));
		}
		dpqd_shardctl_serve(r);
		if (d->ctl != NULL)
			dpq_ctl_poll(d->ctl, 0);
		dpqd_qlog_poll(d);
		dpqd_poll_sleep_do(&r->ps, sleep_us);
		return;
	} else if (d->ctl != NULL) {
		dpq_ctl_poll(d->ctl, 20);
	} else {
		usleep(20000);
	}
	dpqd_qlog_poll(d);
}

/* Does a shard still have connections to touch (closes to build)? */
static bool
shards_busy(struct dpqd *d)
{
	unsigned int i;
	bool busy = false;

	for (i = 0; i < d->nshards; i++) {
		d->sh[i].mb->op = DPQD_OP_SYNC;
		if (dpqd_shardctl_call(d, i, DPQD_SHARD_WAIT_MS) != 0 ||
		    d->sh[i].mb->n != 0)
			busy = true;
	}
	return busy;
}

/* Close everything and wait (bounded) for the closes to leave. */
static void
close_all(struct dpqd *d, int main_shard, const char *why)
{
	uint64_t until = dpqd_now_us() + CLOSE_BUILD_WAIT_US;
	unsigned int n = total_conns(d);

	DLOG(NOTICE, "%s: closing %u connection(s) with CONNECTION_CLOSE\n",
		why, n);
	sd_notify(0, "STOPPING=1");
	dpqd_shardctl_all(d, DPQD_OP_REFUSE, true, 0, "server shutting down");
	dpqd_shardctl_all(d, DPQD_OP_CLOSE_ALL, false, DPQ_TE_NO_ERROR,
			"server shutting down");
	do
		poll_main(d, main_shard);
	while (dpqd_now_us() < until && shards_busy(d));
	until = dpqd_now_us() + CLOSE_WAIT_US;
	while (dpqd_now_us() < until && total_conns(d) > 0)
		poll_main(d, main_shard);
	/* At least a few polls so that every shard built its closes. */
	if (main_shard >= 0)
		poll_main(d, main_shard);
}

static void
print_shard_totals(const struct dpqd *d)
{
	unsigned int i;

	for (i = 0; i < d->nshards; i++) {
		struct dpq_shard_stats st;

		if (d->sh[i].shard == NULL)
			continue;
		dpq_shard_get_stats(d->sh[i].shard, &st);
		DLOG(INFO, "shard %u: %lu connections, %lu handshakes, "
			"rx %lu pkts / %lu bytes, tx %lu pkts / %lu bytes, "
			"%lu handed over\n", i,
			(unsigned long)st.conns_created,
			(unsigned long)st.handshakes_done,
			(unsigned long)st.rx_pkts, (unsigned long)st.rx_bytes,
			(unsigned long)st.tx_pkts, (unsigned long)st.tx_bytes,
			(unsigned long)st.handoff_out);
		if (d->sh[i].ps.max_us != 0)
			DLOG(INFO, "shard %u: poll-sleep: slept %lu times, "
				"%.1f s in all\n", i,
				(unsigned long)d->sh[i].ps.sleeps,
				(double)d->sh[i].ps.slept_us / 1e6);
	}
}

static int
run(struct dpqd *d, int main_shard)
{
	uint64_t end = d->conf.server.duration > 0 ? d->t_start_us +
		(uint64_t)(d->conf.server.duration * 1e6) : UINT64_MAX;
	char buf[160];

	for (;;) {
		uint64_t now = dpqd_now_us();

		if (dpqd_stop) {
			close_all(d, main_shard, "stopping on signal");
			break;
		}
		if (now >= end) {
			close_all(d, main_shard, "--duration reached");
			break;
		}
		if (dpqd_hup) {
			dpqd_hup = 0;
			sd_notify(0, "RELOADING=1");
			DLOG(NOTICE, "SIGHUP: reloading %s\n", d->conf.file ?
				d->conf.file : "(no config file)");
			dpqd_reload(d, NULL);
			sd_notify(0, "READY=1");
		}
		if (d->draining) {
			unsigned int n = total_conns(d);

			if (n == 0) {
				DLOG(NOTICE, "drained: no connection left "
					"after %.1f s, exiting\n",
					(double)(now - d->drain_started_us) /
					1e6);
				sd_notify(0, "STOPPING=1");
				break;
			}
			if (now >= d->drain_deadline_us) {
				close_all(d, main_shard, "drain deadline");
				break;
			}
			snprintf(buf, sizeof(buf), "STATUS=draining, %u "
				"connection(s) left", n);
			sd_notify(0, buf);
		}
		poll_main(d, main_shard);
	}
	return DPQ_EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct dpqd *d = &dpqd;
	struct dpq_mgmt_conf mc = { 0 };
	struct rte_ring *handoff[DPQD_MAX_SHARDS] = { NULL };
	uint8_t sreset_key[32];
	struct dpq_srvcfg *srvcfg = NULL;
	struct dpq_srvcfg_version v0;
	char err[DPQ_CONF_ERR_MAX], a[64];
	char **eal_argv = NULL;
	unsigned int i, lcore;
	int n, eal_argc = 0, main_shard = -1, rc = DPQ_EXIT_CONFIG;
	bool eal_up = false, pdump_up = false;

	/* 1. command line and config file: nothing else happens before
	 *    they are known to be right */
	n = dpqd_opts_parse(d, argc, argv);
	if (n != 0) {
		dpqd_opts_free(d);
		return n > 0 ? DPQ_EXIT_OK : DPQ_EXIT_CONFIG;
	}
	if (dpqd_conf_build(d, &d->conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpquicd: %s\n", err);
		goto out;
	}
	if (check_root(&d->conf) != 0)
		goto out;
	d->nshards = (unsigned int)d->conf.server.shards;
	if (d->check_only) {
		printf("dpquicd: configuration OK%s%s\n", d->conf.file ?
			": " : "", d->conf.file ? d->conf.file : "");
		dpq_conf_foreach(print_key, &d->conf);
		rc = DPQ_EXIT_OK;
		goto out;
	}
	signals_init();
	dpqd_log_init();
	dpqd_log_apply(&d->conf);

	/* 2. TLS (certificate and key files) */
	if (dpqd_tls_create(&d->conf, &d->tls, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpquicd: %s\n", err);
		rc = DPQ_EXIT_TLS;
		goto out;
	}
	/* 2b. server config: ticket and token key files */
	if (dpqd_srvcfg_create(&d->conf, &srvcfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "dpquicd: %s\n", err);
		rc = DPQ_EXIT_TLS;
		goto out;
	}
	v0 = *dpq_srvcfg_current(srvcfg);
	/* 3. control socket: a second daemon stops here, before EAL */
	if (ctl_open(d) != 0) {
		rc = DPQ_EXIT_CTL;
		goto out;
	}

	/* 4. EAL */
	eal_argv = dpqd_eal_argv(d, &eal_argc);
	if (eal_argv == NULL) {
		rc = DPQ_EXIT_RUNTIME;
		goto out;
	}
	{
		/* rte_eal_init may permute its argv: give it a copy. */
		char **copy = calloc((size_t)eal_argc + 1, sizeof(*copy));

		if (copy == NULL) {
			rc = DPQ_EXIT_RUNTIME;
			goto out;
		}
		memcpy(copy, eal_argv, (size_t)eal_argc * sizeof(*copy));
		sigio_block(true);	/* EAL's threads: see sigio_block */
		n = rte_eal_init(eal_argc, copy);
		sigio_block(false);
		free(copy);
	}
	if (n < 0) {
		dpqd_eal_explain(eal_argc, eal_argv, rte_errno);
		rc = DPQ_EXIT_EAL;
		goto out;
	}
	eal_up = true;
	if (dpqd_telemetry_register() != 0)
		DLOG(WARNING, "telemetry: /dpquic/ commands not registered "
			"(dpdk-telemetry.py shows DPDK's counters only)\n");
	if (check_lcores(d) != 0) {
		rc = DPQ_EXIT_CONFIG;
		goto out;
	}
	pdump_up = pdump_init();

	/* 5. management thread, port, shards */
	rc = DPQ_EXIT_RUNTIME;
	dpqd_fec_start(&d->conf);	/* checked by the config already */
	mc.server_ctx = d->tls;
	mc.n_shards = d->nshards;
	mc.conn_slots = d->conf.server.max_connections;
	mc.srvcfg = srvcfg;	/* the management thread owns it now */
	srvcfg = NULL;
	d->mgmt = dpq_mgmt_create(&mc);
	if (d->mgmt == NULL || start_mgmt_unpinned(d->mgmt) != 0) {
		fprintf(stderr, "dpquicd: management thread failed: %s\n",
			strerror(errno));
		goto out;
	}
	if (port_open(d) != 0) {
		rc = DPQ_EXIT_PORT;
		goto out;
	}
	dpq_cid_cfg_default(&cid_cfg);
	dpq_rand_system_fill(NULL, sreset_key, sizeof(sreset_key));
	d->token_filter = dpq_tokfilter_create(d->conf.tokens.filter_entries,
			dpq_shard_now_us());
	if (d->token_filter == NULL) {
		fprintf(stderr, "dpquicd: NEW_TOKEN replay filter: %s\n",
			strerror(errno));
		goto out;
	}
	for (i = 0; i < d->nshards && d->nshards > 1; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dpq_handoff_%u", i);
		handoff[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY,
				RING_F_SC_DEQ);
		if (handoff[i] == NULL) {
			fprintf(stderr, "dpquicd: ring %s: %s\n", name,
				rte_strerror(rte_errno));
			goto out;
		}
	}
	for (i = 0; i < d->nshards; i++) {
		int src = setup_shard(d, i, handoff, &v0, sreset_key);

		if (src != 0) {
			fprintf(stderr, "dpquicd: shard %u setup failed: %s\n",
				i, strerror(-src));
			goto out;
		}
	}
	if (dpqd_shardctl_init(d) != 0)
		goto out;
	if (dpqd_qlog_init(d) != 0) {
		DLOG(ERR, "qlog rings: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	if (d->ctl != NULL && (dpqd_cmds_register(d) != 0 ||
			dpqd_keys_register(d) != 0))
		goto out;

	/* 6. run: shards on worker lcores; one left over on the main one */
	i = 0;
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i >= d->nshards)
			break;
		d->sh[i].lcore = lcore;
		rte_eal_remote_launch(shard_loop, &d->sh[i], lcore);
		i++;
	}
	if (i < d->nshards) {
		main_shard = (int)i;
		d->sh[i].lcore = rte_lcore_id();
		d->sh[i].on_main = true;
		dpqd_poll_sleep_thread_init(&d->sh[i].ps);
	}
	d->t_start_us = dpqd_now_us();
	dpqd_telemetry_live(true);
	DLOG(NOTICE, "serving %s on %s, %u shard(s), port %u, retry %s, "
		"TLS %s, control socket %s\n", d->conf.server.root,
		dpq_addr_format(&d->conf.server.addr, a, sizeof(a)),
		d->nshards, (unsigned int)d->conf.port.id,
		d->conf.server.retry, d->conf.tls.cert ? d->conf.tls.cert :
		"self-signed certificate", d->ctl ? d->conf.ctl.path :
		"none");
	sd_notify(0, "READY=1\nSTATUS=serving");
	rc = run(d, main_shard);
out:
	dpqd_telemetry_live(false);
	lcores_stop = 1;
	if (eal_up)
		rte_eal_mp_wait_lcore();
	print_shard_totals(d);
	dpq_ctl_destroy(d->ctl);
	for (i = 0; i < DPQD_MAX_SHARDS; i++) {
		dpq_shard_destroy(d->sh[i].shard);
		dpq_listener_destroy(d->sh[i].listener);
		dpq_app_env_destroy(d->sh[i].apps);
	}
	if (d->mgmt != NULL)
		dpq_mgmt_stop_thread(d->mgmt);
	for (i = 0; i < DPQD_MAX_SHARDS; i++) {
		dpq_hs_ring_destroy(d->sh[i].ring);
		rte_ring_free(handoff[i]);
	}
	dpq_mgmt_destroy(d->mgmt);
	dpq_srvcfg_destroy(srvcfg);
	explicit_bzero(&v0, sizeof(v0));
	explicit_bzero(sreset_key, sizeof(sreset_key));
	dpq_tokfilter_destroy(d->token_filter);
	if (d->drv != NULL)
		dpq_driver_close(d->drv);
	dpq_tls_ctx_destroy(d->tls);
	dpqd_qlog_fini(d);
	dpqd_shardctl_fini(d);
	dpq_conf_free(&d->conf);
	dpqd_eal_argv_free(eal_argv);
	free(d->config_path);
	dpqd_opts_free(d);
	if (pdump_up)
		rte_pdump_uninit();
	if (eal_up)
		rte_eal_cleanup();
	return rc;
}
