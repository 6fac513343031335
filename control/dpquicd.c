/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd: the dpquic server daemon.
 *
 *   dpquicd [EAL args] -- --addr IP:PORT --root DIR [--cert F --key F]
 *           [--shards N] [--retry never|always|rate:N] [--port-id P]
 *           [--prefix LEN] [--gateway IP] [--ctl PATH] [--keylog F]
 *           [--cc NAME] [--duration S] [--allow-no-rss]
 *
 * Threads (DESIGN §2): N shards on N dataplane lcores, each owning a
 * queue of the DPDK port and its connections; a management pthread that
 * runs every TLS handshake (GnuTLS) and talks to shards over rings; the
 * main lcore serves the control socket (and runs the last shard itself
 * when there are fewer worker lcores than shards).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "control/ctl/ctl_socket.h"
#include "control/mgmt/mgmt.h"
#include "control/tls/tls.h"
#include "dataplane/app/app.h"
#include "dataplane/engine/errors.h"
#include "dataplane/server/listener.h"
#include "dataplane/shard/hs_ring.h"
#include "dataplane/shard/shard.h"
#include "dpquic/driver.h"

#define MAX_SHARDS 16

struct opts {
	struct dpq_addr addr;
	const char *root;
	const char *cert, *key, *keylog, *ctl_path, *cc;
	unsigned int shards;
	enum dpq_retry_policy retry;
	uint32_t retry_rate;
	uint16_t port_id;
	uint8_t prefix;
	struct dpq_addr gateway;
	double duration;
	bool allow_no_rss;
};

struct shard_rt {
	struct dpq_shard *shard;
	struct dpq_app_env *apps;	/* one per shard: plain counters */
	struct dpq_listener *listener;
	struct dpq_hs_ring *ring;
	unsigned int lcore;
};

static volatile sig_atomic_t stop;
static struct opts o;
static struct shard_rt rt[MAX_SHARDS];
static struct dpq_mgmt *mgmt;
static struct dpq_driver *drv;
static struct dpq_cid_cfg cid_cfg;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL args] -- --addr IP:PORT --root DIR [options]\n"
		"  --cert F --key F    PEM certificate chain and key (default: "
		"self-signed)\n"
		"  --shards N          dataplane shards, one lcore each (1)\n"
		"  --retry POLICY      never | always | rate:N new conns/s "
		"(never)\n"
		"  --port-id P         DPDK port (0)\n"
		"  --prefix LEN        on-link prefix of --addr (24 / 64)\n"
		"  --gateway IP        next hop for off-link peers\n"
		"  --ctl PATH          control socket (%s)\n"
		"  --keylog F          NSS key log for Wireshark (created "
		"0600; SSLKEYLOGFILE is ignored)\n"
		"  --cc NAME           congestion controller (newreno)\n"
		"  --duration S        stop after S seconds (0: run until "
		"signalled)\n"
		"  --allow-no-rss      N queues on a device without RSS\n",
		prog, DPQ_CTL_DEFAULT_PATH);
}

static int
parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "root", required_argument, NULL, 'r' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "shards", required_argument, NULL, 's' },
		{ "retry", required_argument, NULL, 'R' },
		{ "port-id", required_argument, NULL, 'p' },
		{ "prefix", required_argument, NULL, 'P' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "ctl", required_argument, NULL, 'C' },
		{ "keylog", required_argument, NULL, 'K' },
		{ "cc", required_argument, NULL, 'x' },
		{ "duration", required_argument, NULL, 'd' },
		{ "allow-no-rss", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	o.shards = 1;
	o.ctl_path = DPQ_CTL_DEFAULT_PATH;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (dpq_addr_parse(optarg, &o.addr) != 0 ||
			    o.addr.port == 0) {
				fprintf(stderr, "dpquicd: bad --addr %s "
					"(IP:PORT)\n", optarg);
				return -1;
			}
			break;
		case 'r': o.root = optarg; break;
		case 'c': o.cert = optarg; break;
		case 'k': o.key = optarg; break;
		case 'C': o.ctl_path = optarg; break;
		case 'K': o.keylog = optarg; break;
		case 'x': o.cc = optarg; break;
		case 'n': o.allow_no_rss = true; break;
		case 's':
			o.shards = (unsigned int)atoi(optarg);
			if (o.shards < 1 || o.shards > MAX_SHARDS) {
				fprintf(stderr, "dpquicd: --shards 1..%d\n",
						MAX_SHARDS);
				return -1;
			}
			break;
		case 'R':
			if (strcmp(optarg, "never") == 0) {
				o.retry = DPQ_RETRY_NEVER;
			} else if (strcmp(optarg, "always") == 0) {
				o.retry = DPQ_RETRY_ALWAYS;
			} else if (strncmp(optarg, "rate:", 5) == 0 &&
				   atoi(optarg + 5) > 0) {
				o.retry = DPQ_RETRY_RATE;
				o.retry_rate = (uint32_t)atoi(optarg + 5);
			} else {
				fprintf(stderr, "dpquicd: --retry never | "
					"always | rate:N\n");
				return -1;
			}
			break;
		case 'p': o.port_id = (uint16_t)atoi(optarg); break;
		case 'P': o.prefix = (uint8_t)atoi(optarg); break;
		case 'g':
			if (dpq_addr_parse(optarg, &o.gateway) != 0) {
				fprintf(stderr, "dpquicd: bad --gateway\n");
				return -1;
			}
			break;
		case 'd': o.duration = atof(optarg); break;
		case 'h':
		default:
			usage(argv[0]);
			return -1;
		}
	}
	if (o.addr.family == 0 || o.root == NULL) {
		usage(argv[0]);
		return -1;
	}
	if ((o.cert == NULL) != (o.key == NULL)) {
		fprintf(stderr, "dpquicd: --cert and --key go together\n");
		return -1;
	}
	return 0;
}

/* ---- glue between shards and the management thread ------------------ */

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
	return (uint8_t)(h % o.shards);
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
	rc = dpq_mgmt_start_thread(m);
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	return rc;
}

/* ---- control socket --------------------------------------------------- */

static int
cmd_status(struct dpq_ctl_req *req, void *arg)
{
	char a[64];
	uint32_t conns = 0;
	unsigned int i;

	(void)arg;
	for (i = 0; i < o.shards; i++)
		conns += dpq_shard_conn_count(rt[i].shard);
	dpq_json_w_kstr(req->reply, "version", "dpquic 0.1.0");
	dpq_json_w_kstr(req->reply, "addr",
			dpq_addr_format(&o.addr, a, sizeof(a)));
	dpq_json_w_ku64(req->reply, "shards", o.shards);
	dpq_json_w_ku64(req->reply, "connections", conns);
	dpq_json_w_kstr(req->reply, "root", o.root);
	return 0;
}

static int
cmd_stats(struct dpq_ctl_req *req, void *arg)
{
	struct dpq_driver_stats ds;
	struct dpq_json_w *w = req->reply;
	unsigned int i;

	(void)arg;
	dpq_json_w_key(w, "shards");
	dpq_json_w_arr_begin(w);
	for (i = 0; i < o.shards; i++) {
		struct dpq_shard_stats st;
		struct dpq_hs_ring_stats hr;
		struct dpq_mgmt_stats ms;

		dpq_shard_get_stats(rt[i].shard, &st);
		dpq_hs_ring_get_stats(rt[i].ring, &hr);
		dpq_mgmt_get_stats(mgmt, i, &ms);
		dpq_json_w_obj_begin(w);
		dpq_json_w_ku64(w, "shard", i);
		dpq_json_w_ku64(w, "lcore", rt[i].lcore);
		dpq_json_w_ku64(w, "connections", st.conns_active);
		dpq_json_w_ku64(w, "connections_created", st.conns_created);
		dpq_json_w_ku64(w, "connections_refused", st.conns_refused);
		dpq_json_w_ku64(w, "connections_unopened", st.conns_unopened);
		dpq_json_w_ku64(w, "handshakes", st.handshakes_done);
		dpq_json_w_ku64(w, "rx_packets", st.rx_pkts);
		dpq_json_w_ku64(w, "rx_bytes", st.rx_bytes);
		dpq_json_w_ku64(w, "tx_packets", st.tx_pkts);
		dpq_json_w_ku64(w, "tx_bytes", st.tx_bytes);
		dpq_json_w_ku64(w, "rx_batched", st.rx_batched);
		dpq_json_w_ku64(w, "drops_no_connection", st.no_conn);
		dpq_json_w_ku64(w, "drops_tx", st.tx_refused +
				st.tx_alloc_fail + st.tx_seal_fail);
		dpq_json_w_ku64(w, "closed_idle", st.closed_idle);
		dpq_json_w_ku64(w, "closed_by_peer", st.closed_by_peer);
		dpq_json_w_ku64(w, "closed_app", st.closed_app);
		dpq_json_w_ku64(w, "closed_error", st.closed_error);
		dpq_json_w_key(w, "closed_error_codes");
		dpq_json_w_obj_begin(w);
		{
			unsigned int k;

			for (k = 0; k < 17; k++)
				if (st.closed_error_code[k] != 0)
					dpq_json_w_ku64(w,
						dpq_transport_error_str(k),
						st.closed_error_code[k]);
			if (st.closed_crypto_error != 0)
				dpq_json_w_ku64(w, "CRYPTO_ERROR",
						st.closed_crypto_error);
		}
		dpq_json_w_obj_end(w);
		dpq_json_w_ku64(w, "handoff_out", st.handoff_out);
		dpq_json_w_ku64(w, "handoff_in", st.handoff_in);
		dpq_json_w_ku64(w, "handoff_ring_full", st.handoff_full);
		dpq_json_w_ku64(w, "listener_replies", st.listener_replies);
		dpq_json_w_ku64(w, "hs_ring_full", hr.ring_full);
		dpq_json_w_ku64(w, "hs_ring_backlog", hr.backlog);
		dpq_json_w_ku64(w, "mgmt_ring_full", ms.ring_full);
		dpq_json_w_ku64(w, "mgmt_handshakes_ok", ms.hs_ok);
		dpq_json_w_ku64(w, "mgmt_handshakes_failed", ms.hs_failed);
		{
			const struct dpq_listener_stats *ls =
				dpq_listener_stats(rt[i].listener);
			unsigned int k;

			dpq_json_w_key(w, "listener");
			dpq_json_w_obj_begin(w);
			for (k = 0; k < DPQ_LO_COUNT; k++)
				if (ls->outcome[k] != 0)
					dpq_json_w_ku64(w,
						dpq_listen_outcome_str(k),
						ls->outcome[k]);
			dpq_json_w_obj_end(w);
		}
		dpq_json_w_obj_end(w);
	}
	dpq_json_w_arr_end(w);
	dpq_driver_stats(drv, &ds);
	dpq_json_w_key(w, "port");
	dpq_json_w_obj_begin(w);
	dpq_json_w_ku64(w, "rx_packets", ds.rx_pkts);
	dpq_json_w_ku64(w, "tx_packets", ds.tx_pkts);
	dpq_json_w_ku64(w, "rx_dropped", ds.rx_dropped);
	dpq_json_w_ku64(w, "rx_bad", ds.rx_bad);
	dpq_json_w_ku64(w, "tx_dropped", ds.tx_dropped);
	dpq_json_w_ku64(w, "arp_rx", ds.arp_rx);
	dpq_json_w_obj_end(w);
	return 0;
}

/* ---- shard loops ------------------------------------------------------ */

static int
shard_loop(void *arg)
{
	struct shard_rt *r = arg;

	while (!stop)
		dpq_shard_poll(r->shard, dpq_shard_now_us());
	return 0;
}

static int
setup_shard(unsigned int i, struct rte_ring **handoff,
		const uint8_t *token_key, const uint8_t *sreset_key)
{
	struct dpq_listener_cfg lc;
	struct dpq_hs_ring_conf hc = { 0 };
	struct dpq_shard_conf sc = { 0 };
	static const struct dpq_rand rnd = { dpq_rand_system_fill, NULL };
	int rc;

	hc.chan = dpq_mgmt_chan(mgmt, i);
	hc.socket_id = SOCKET_ID_ANY;
	rc = dpq_hs_ring_create(&hc, &rt[i].ring);
	if (rc != 0)
		return rc;

	sc.shard_id = (uint16_t)i;
	sc.nb_shards = (uint16_t)o.shards;
	sc.drv = drv;
	sc.queue = (uint16_t)i;
	sc.conn.role = DPQ_ROLE_SERVER;
	sc.conn.scid_len = cid_cfg.len;
	sc.conn.cc_name = o.cc;
	sc.hs.ops = &dpq_hs_ring_ops;
	sc.hs.hs = rt[i].ring;
	sc.hs.attach = ring_attach;
	sc.hs.poll = ring_poll;
	sc.hs.arg = rt[i].ring;
	{
		struct dpq_app_env_conf ac = { .root = o.root };

		rc = dpq_app_env_create(&ac, &rt[i].apps);
		if (rc != 0) {
			fprintf(stderr, "dpquicd: --root %s: %s\n", o.root,
					strerror(-rc));
			return rc;
		}
	}
	sc.app.ops = &dpq_app_server_ops;
	sc.app.conn_ctx = dpq_app_conn_ctx;
	sc.app.conn_ctx_free = dpq_app_conn_ctx_free;
	sc.app.arg = rt[i].apps;
	sc.handoff = o.shards > 1 ? handoff : NULL;
	sc.cid_shard = cid_to_shard;
	sc.socket_id = SOCKET_ID_ANY;
	rc = dpq_shard_create(&sc, &rt[i].shard);
	if (rc != 0)
		return rc;

	/* The listener seals Retry tags with the shard's crypto context. */
	dpq_listener_cfg_default(&lc);
	lc.cid = cid_cfg;
	lc.shard = (uint8_t)i;
	lc.retry = o.retry;
	lc.retry_rate = o.retry_rate;
	memcpy(lc.sreset_key, sreset_key, 32);
	lc.sreset_key_len = 32;
	rt[i].listener = dpq_listener_create(&lc,
			dpq_shard_crypto(rt[i].shard), &rnd,
			dpq_shard_now_us());
	if (rt[i].listener == NULL)
		return -ENOMEM;
	/* One token key for every shard (and, later, the fleet). */
	rc = dpq_listener_set_token_key(rt[i].listener, 1, token_key);
	if (rc != 0)
		return rc;
	dpq_shard_set_listener(rt[i].shard, rt[i].listener);
	return 0;
}

int
main(int argc, char **argv)
{
	struct dpq_tls_ctx_conf tc = { 0 };
	struct dpq_mgmt_conf mc = { 0 };
	struct dpq_dpdk_conf dc = { 0 };
	struct dpq_ctl_conf cc = { 0 };
	struct rte_ring *handoff[MAX_SHARDS] = { NULL };
	struct dpq_tls_ctx *tls = NULL;
	struct dpq_ctl *ctl = NULL;
	uint8_t token_key[32], sreset_key[32];
	unsigned int i, lcore, main_shard = UINT32_MAX;
	uint64_t t0, end;
	char a[64];
	int n, rc = 1;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "dpquicd: EAL init failed: %s\n",
				rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	argv[0] = "dpquicd";
	if (parse_opts(argc, argv) != 0)
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	{
		struct stat st;

		if (stat(o.root, &st) != 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "dpquicd: --root %s: not a directory\n",
					o.root);
			goto out;
		}
	}
	tc.role = DPQ_TLS_SERVER;
	for (i = 0; dpq_app_alpns[i] != NULL && i < DPQ_TLS_ALPN_MAX; i++)
		tc.alpn[tc.alpn_count++] = dpq_app_alpns[i];
	tc.cert_file = o.cert;
	tc.key_file = o.key;
	tc.self_signed_name = "dpquicd";
	tc.keylog_file = o.keylog;
	if (dpq_tls_ctx_create(&tc, &tls) != 0) {
		fprintf(stderr, "dpquicd: TLS setup failed\n");
		goto out;
	}
	mc.server_ctx = tls;
	mc.n_shards = o.shards;
	mgmt = dpq_mgmt_create(&mc);
	if (mgmt == NULL || start_mgmt_unpinned(mgmt) != 0) {
		fprintf(stderr, "dpquicd: management thread failed\n");
		goto out;
	}

	if (!rte_eth_dev_is_valid_port(o.port_id)) {
		fprintf(stderr, "dpquicd: no DPDK port %u: give one with EAL "
			"args, e.g. --vdev=net_tap0 or a PCI device\n",
			o.port_id);
		goto out;
	}
	dc.port_id = o.port_id;
	dc.nb_queues = (uint16_t)o.shards;
	dc.socket_id = -1;
	dc.local = o.addr;
	dc.prefix_len = o.prefix;
	dc.gateway = o.gateway;
	dc.promiscuous = true;
	dc.allow_no_rss = o.allow_no_rss;
	drv = dpq_driver_dpdk_open(&dc);
	if (drv == NULL || dpq_driver_start(drv) != 0) {
		fprintf(stderr, "dpquicd: port %u: %s\n", o.port_id,
				rte_strerror(rte_errno));
		goto out;
	}

	dpq_cid_cfg_default(&cid_cfg);
	dpq_rand_system_fill(NULL, token_key, sizeof(token_key));
	dpq_rand_system_fill(NULL, sreset_key, sizeof(sreset_key));
	for (i = 0; i < o.shards && o.shards > 1; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dpq_handoff_%u", i);
		handoff[i] = rte_ring_create(name, 1024, SOCKET_ID_ANY,
				RING_F_SC_DEQ);
		if (handoff[i] == NULL)
			goto out;
	}
	for (i = 0; i < o.shards; i++) {
		if (setup_shard(i, handoff, token_key, sreset_key) != 0) {
			fprintf(stderr, "dpquicd: shard %u setup failed\n", i);
			goto out;
		}
	}

	cc.path = o.ctl_path;
	if (o.ctl_path[0] != '\0') {
		char dir[256];
		char *slash;

		snprintf(dir, sizeof(dir), "%s", o.ctl_path);
		slash = strrchr(dir, '/');
		if (slash != NULL && slash != dir) {
			*slash = '\0';
			mkdir(dir, 0700);
		}
		if (dpq_ctl_create(&cc, &ctl) != 0) {
			fprintf(stderr, "dpquicd: control socket %s: %s\n",
					o.ctl_path, strerror(errno));
			goto out;
		}
		dpq_ctl_register(ctl, "status", cmd_status, NULL,
				"daemon address, shards, connections");
		dpq_ctl_register(ctl, "stats", cmd_stats, NULL,
				"per shard: connections, packets, bytes, drops, "
				"ring-full counts; port counters");
	}

	/* Shards on worker lcores; one left over runs on the main lcore. */
	i = 0;
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i >= o.shards)
			break;
		rt[i].lcore = lcore;
		rte_eal_remote_launch(shard_loop, &rt[i], lcore);
		i++;
	}
	if (i < o.shards) {
		if (o.shards - i > 1) {
			fprintf(stderr, "dpquicd: %u shards need %u worker "
				"lcores (-l)\n", o.shards, o.shards - 1);
			stop = 1;
		} else {
			main_shard = i;
			rt[i].lcore = rte_lcore_id();
		}
	}
	printf("dpquicd: serving %s on %s, %u shard(s), port %u, "
		"retry %s, TLS %s\n", o.root,
		dpq_addr_format(&o.addr, a, sizeof(a)), o.shards, o.port_id,
		o.retry == DPQ_RETRY_NEVER ? "never" :
		o.retry == DPQ_RETRY_ALWAYS ? "always" : "rate",
		dpq_tls_ctx_self_signed(tls) ? "self-signed certificate" :
		o.cert);
	fflush(stdout);

	t0 = dpq_shard_now_us();
	end = o.duration > 0 ? t0 + (uint64_t)(o.duration * 1e6) : UINT64_MAX;
	while (!stop) {
		uint64_t now = dpq_shard_now_us();

		if (now >= end)
			break;
		if (main_shard != UINT32_MAX) {
			unsigned int k;

			for (k = 0; k < 64; k++)
				dpq_shard_poll(rt[main_shard].shard,
						dpq_shard_now_us());
			if (ctl != NULL)
				dpq_ctl_poll(ctl, 0);
		} else if (ctl != NULL) {
			dpq_ctl_poll(ctl, 50);
		} else {
			usleep(50000);
		}
	}
	stop = 1;
	rte_eal_mp_wait_lcore();
	for (i = 0; i < o.shards; i++) {
		struct dpq_shard_stats st;

		if (rt[i].shard == NULL)
			continue;
		dpq_shard_get_stats(rt[i].shard, &st);
		printf("dpquicd: shard %u: %lu connections, %lu handshakes, "
			"rx %lu pkts / %lu bytes, tx %lu pkts / %lu bytes, "
			"%lu handed over\n", i,
			(unsigned long)st.conns_created,
			(unsigned long)st.handshakes_done,
			(unsigned long)st.rx_pkts, (unsigned long)st.rx_bytes,
			(unsigned long)st.tx_pkts, (unsigned long)st.tx_bytes,
			(unsigned long)st.handoff_out);
	}
	rc = 0;
out:
	stop = 1;
	rte_eal_mp_wait_lcore();
	dpq_ctl_destroy(ctl);
	for (i = 0; i < MAX_SHARDS; i++) {
		dpq_shard_destroy(rt[i].shard);
		dpq_listener_destroy(rt[i].listener);
		dpq_app_env_destroy(rt[i].apps);
	}
	if (mgmt != NULL) {
		dpq_mgmt_stop_thread(mgmt);
	}
	for (i = 0; i < MAX_SHARDS; i++)
		dpq_hs_ring_destroy(rt[i].ring);
	dpq_mgmt_destroy(mgmt);
	if (drv != NULL)
		dpq_driver_close(drv);
	dpq_tls_ctx_destroy(tls);
	rte_eal_cleanup();
	return rc;
}
