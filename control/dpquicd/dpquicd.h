/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's pieces (one file per concern, all on the main lcore unless
 * said otherwise):
 *   main.c      start-up in order, the main loop, shutdown, exit codes
 *   opts.c      command line -> config (with the file), EAL arguments,
 *               --help
 *   eal_diag.c  why EAL failed, in words (hugepages, --file-prefix)
 *   shardctl.c  requests to the shards (close all, refuse, list, close
 *               one), executed by each shard between two polls
 *   cmds.c      the control socket's commands
 *   stats.c     the counters: one table for `stats` and DPDK telemetry
 *   reload.c    SIGHUP / `dpquic-ctl reload`: what changed, applied or
 *               reported as needing a restart
 *   qlog.c      per-connection qlog files: shard hook -> ring -> files
 *   keys.c      the server config (ticket and token keys, 0-RTT and
 *               NEW_TOKEN policy): set-up, versions applied on the
 *               shards, `dpquic-ctl rotate-keys` and `keys`
 */
#ifndef DPQ_DPQUICD_H
#define DPQ_DPQUICD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_log.h>

#include "control/conf/conf.h"
#include "control/ctl/ctl_socket.h"
#include "control/dpquicd/poll_sleep.h"
#include "control/mgmt/mgmt.h"
#include "control/tls/tls.h"
#include "dataplane/app/app.h"
#include "dataplane/server/listener.h"
#include "dataplane/shard/hs_ring.h"
#include "dataplane/shard/shard.h"

#define DPQD_MAX_SHARDS	16
#define DPQD_VERSION	"dpquic 0.1.0"

/* ---- requests to a shard (shardctl.c) ----------------------------------- */

enum dpqd_shard_op {
	DPQD_OP_NONE = 0,
	DPQD_OP_CLOSE_ALL,	/* CONNECTION_CLOSE every connection */
	DPQD_OP_REFUSE,		/* listener: refuse (arg) new connections */
	DPQD_OP_LIST,		/* fill info[] from connection `cursor` on */
	DPQD_OP_CLOSE_ONE,	/* close connection `handle` */
	DPQD_OP_RETRY,		/* listener: new Retry policy */
	DPQD_OP_FEC,		/* XOR-FEC of new connections (conn) */
	DPQD_OP_FEC_CONN,	/* XOR-FEC policy of connection `handle` */
	DPQD_OP_SYNC,		/* n = 1 while connections wait to be
				 * touched (e.g. closes not yet built) */
	DPQD_OP_QLOG_ON,	/* trace connection `handle` (qlog.c) */
	DPQD_OP_QLOG_OFF,
};

/* What `dpquic-ctl connections` shows of one connection. */
struct dpqd_conn_info {
	uint64_t handle;
	struct dpq_addr peer;
	struct dpq_cid scid, dcid;
	enum dpq_conn_state state;
	uint64_t age_us;
	struct dpq_conn_stats st;
	char alpn[32];
	bool qlog;		/* traced into a qlog file */
};

#define DPQD_LIST_MAX	256	/* connections per LIST request */
/* How long the main lcore waits for a shard to run a request: a shard
 * answers between two polls (microseconds). Time its thread spends
 * waiting for a CPU (an overloaded machine) does not count, up to
 * DPQD_SHARD_WAIT_MAX_MS in all (control/dpquicd/lcore_wait.h). */
#define DPQD_SHARD_WAIT_MS	8000
#define DPQD_SHARD_WAIT_MAX_MS	30000

/*
 * One outstanding request per shard. The main lcore writes the request
 * and then bumps seq (release); the shard sees seq != done (acquire),
 * executes between two polls, writes the results, then sets done = seq
 * (release). Nothing else is shared, so neither side locks.
 */
struct dpqd_mailbox {
	uint32_t seq;
	uint32_t done;
	enum dpqd_shard_op op;
	/* arguments */
	uint64_t handle;
	uint64_t code;
	bool flag;
	uint32_t cursor;
	uint32_t rate;
	struct dpq_fec_policy fec;
	struct dpq_conn_conf conn;	/* FEC: its fec* and spec* fields */
	char reason[DPQ_LISTENER_REASON_MAX + 1];
	/* results */
	int rc;
	uint32_t n;		/* LIST: entries filled; CLOSE_ALL: closed */
	uint32_t total;		/* LIST: live connections */
	struct dpqd_conn_info info[DPQD_LIST_MAX];
};

/* ---- qlog (qlog.c) ---------------------------------------------------------- */

#define DPQD_QLOG_TRACED	64	/* traced connections per shard */

struct dpqd_qlog_shard;

/* The trace hook's context of one connection; written by its shard. */
struct dpqd_qtrace {
	struct dpqd_qlog_shard *qs;
	uint64_t handle;
	bool used;
};

/* Per shard: the record ring (shard -> control loop) and its traces. */
struct dpqd_qlog_shard {
	struct rte_ring *ring;
	struct dpqd_qtrace t[DPQD_QLOG_TRACED];
	uint64_t dropped;	/* ring full (shard adds, relaxed) */
	uint32_t sample;	/* one in N new connections (main writes) */
	uint32_t sample_ctr;	/* shard only */
};

struct dpqd_shard {
	struct dpq_shard *shard;
	struct dpq_app_env *apps;	/* one per shard: plain counters */
	struct dpq_listener *listener;
	struct dpq_hs_ring *ring;
	unsigned int lcore;
	bool on_main;			/* polled by the main lcore */
	pid_t tid;			/* its lcore's thread (0: not yet) */
	struct dpqd_mailbox *mb;
	char why[160];			/* the last request's failure */
	struct dpqd_qlog_shard *qlog;
	uint64_t config_version;	/* server config applied (atomic) */
	struct dpqd_poll_sleep ps;	/* server.poll-sleep-us */
};

/* The daemon's state; one instance, in main.c. */
struct dpqd {
	struct dpq_conf conf;
	char *config_path;		/* -c FILE, or NULL */
	/* command-line settings, kept to be re-applied over a reloaded
	 * file: "section.key" and value, in order */
	unsigned int ncli;
	const char **cli_key, **cli_val;
	char **cli_owned;	/* "section.key" strings made for options */
	bool check_only;
	/* EAL arguments from the command line (before "--"), or NULL */
	int eal_argc;
	char **eal_argv;

	struct dpqd_shard sh[DPQD_MAX_SHARDS];
	unsigned int nshards;
	struct dpq_mgmt *mgmt;
	struct dpq_driver *drv;
	struct dpq_tls_ctx *tls;
	struct dpq_tokfilter *token_filter;	/* shared by the listeners */
	struct dpq_ctl *ctl;
	uint64_t t_start_us;

	/* life cycle, main lcore only */
	bool draining;
	uint64_t drain_deadline_us;
	uint64_t drain_started_us;
};

extern struct dpqd dpqd;
extern volatile sig_atomic_t dpqd_stop;		/* SIGTERM, SIGINT */
extern volatile sig_atomic_t dpqd_hup;	/* SIGHUP */

/* log.c: dpquic.daemon log type; DLOG(INFO, "fmt\n", ...) */
extern int dpqd_logtype;
extern int dpqd_logtype_ctl;	/* dpquic.ctl: control socket commands */
#define DLOG(level, ...) \
	rte_log(RTE_LOG_ ## level, dpqd_logtype, "dpquicd: " __VA_ARGS__)
/* Timestamped lines on stderr for every rte_log message. */
int dpqd_log_init(void);
/* Levels and timestamps from the config (start-up and reload). */
void dpqd_log_apply(const struct dpq_conf *c);

/* main.c helpers shared with reload.c */
/* The server TLS context of conf c (certificate, key, key log). */
int dpqd_tls_create(const struct dpq_conf *c, struct dpq_tls_ctx **out,
		char *err, size_t n);
/* "never" / "always" / "rate:N" (already checked by the config). */
void dpqd_retry_parse(const char *s, enum dpq_retry_policy *p,
		uint32_t *rate);

/* opts.c */
/* Parse argv into d (config file, overrides). Returns -1 after printing
 * the problem (exit DPQ_EXIT_CONFIG), 1 when --help/--version printed
 * (exit 0), 0 to go on. */
int dpqd_opts_parse(struct dpqd *d, int argc, char **argv);
/* Free what dpqd_opts_parse() kept in d. */
void dpqd_opts_free(struct dpqd *d);
/* Build the configuration: defaults, file, then command line; check.
 * err gets the message. */
int dpqd_conf_build(const struct dpqd *d, struct dpq_conf *out, char *err,
		size_t n);
/* The EAL argv (argv[0] first, NULL-terminated; malloc'd). */
char **dpqd_eal_argv(const struct dpqd *d, int *argc);
void dpqd_eal_argv_free(char **argv);

/* eal_diag.c: after rte_eal_init failed, say why and what to do. */
void dpqd_eal_explain(int argc, char **argv, int rte_err);

/* shardctl.c */
int dpqd_shardctl_init(struct dpqd *d);
void dpqd_shardctl_fini(struct dpqd *d);
/* On the shard's lcore, between polls: run a pending request. */
void dpqd_shardctl_serve(struct dpqd_shard *s);
/* Main lcore: post a request (mb fields filled by the caller) and wait
 * for it, bounded (timeout_ms); returns 0 or -ETIMEDOUT. */
int dpqd_shardctl_call(struct dpqd *d, unsigned int i, int timeout_ms);
/* What failed in shard i's last call that returned rc (a sentence). */
const char *dpqd_shardctl_strerror(struct dpqd *d, unsigned int i, int rc);
/* Request on every shard; returns the first failure. */
int dpqd_shardctl_all(struct dpqd *d, enum dpqd_shard_op op, bool flag,
		uint64_t code, const char *reason);

/* cmds.c */
int dpqd_cmds_register(struct dpqd *d);
/* Begin a drain with a deadline (seconds); refuses new connections. */
int dpqd_drain_start(struct dpqd *d, double timeout_s);

/* stats.c: every counter as the `stats` reply (main lcore) */
void dpqd_stats_json(struct dpqd *d, struct dpq_json_w *w);
/* /dpquic/... telemetry commands (after rte_eal_init); they answer only
 * while live (set once the shards exist, cleared before teardown). */
int dpqd_telemetry_register(void);
void dpqd_telemetry_live(bool live);

/* reload.c: re-read the config and apply what can change; the summary
 * goes to the log and into the reply when req is not NULL. */
int dpqd_reload(struct dpqd *d, struct dpq_ctl_req *req);

/* fec.c: the [fec] section (docs/fec.md) and the `fec` command. */
int dpqd_fec_conn_conf(const struct dpq_conf *c, struct dpq_conn_conf *cc);
int dpqd_fec_start(const struct dpq_conf *c);
int dpqd_fec_apply(struct dpqd *d, const struct dpq_conf *c);
int dpqd_cmd_fec(struct dpq_ctl_req *req, void *arg);
/* keys.c */
/* The server config's policy from conf c (also for reloads). */
void dpqd_srvcfg_policy(const struct dpq_conf *c, struct dpq_srvcfg_policy *p);
/* Key files read (or secrets drawn) and version 1 built. */
int dpqd_srvcfg_create(const struct dpq_conf *c, struct dpq_srvcfg **out,
		char *err, size_t n);
/* Version v's token keys and policies into shard r before it runs. */
void dpqd_srvcfg_apply_first(struct dpqd_shard *r,
		const struct dpq_srvcfg_version *v);
/* A shard's struct dpq_hs_ring_conf.on_config (arg: its dpqd_shard). */
void dpqd_on_config(void *arg, const struct dpq_hs_config *cfg);
int dpqd_keys_register(struct dpqd *d);
/* A reload's new [tickets]/[tokens] policy to the management thread. */
int dpqd_srvcfg_reload(struct dpqd *d, const struct dpq_conf *c, char *err,
		size_t n);

/* qlog.c: per-connection qlog files. Shard side: */
int dpqd_qlog_attach(struct dpqd_shard *s, struct dpq_conn *c);
int dpqd_qlog_detach(struct dpqd_shard *s, struct dpq_conn *c);
bool dpqd_qlog_traced(const struct dpqd_shard *s, uint64_t handle);
/* The shard's conn_ctx hooks (arg: the struct dpqd_shard): the app's
 * context, and the qlog sample. */
void *dpqd_conn_ctx(void *arg, struct dpq_conn *c);
void dpqd_conn_ctx_free(void *arg, struct dpq_conn *c, void *ctx);
/* Control loop side: */
int dpqd_qlog_init(struct dpqd *d);
void dpqd_qlog_poll(struct dpqd *d);
void dpqd_qlog_apply(struct dpqd *d, const struct dpq_conf *c);
void dpqd_qlog_fini(struct dpqd *d);
void dpqd_qlog_path(const struct dpqd *d, uint64_t handle, char *buf,
		size_t n);
int dpqd_cmd_qlog(struct dpq_ctl_req *req, void *arg);

/* Monotonic microseconds. */
uint64_t dpqd_now_us(void);

#endif /* DPQ_DPQUICD_H */
