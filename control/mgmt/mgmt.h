/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_mgmt is the management thread's handshake service (DESIGN §2): it
 * runs the TLS 1.3 handshakes (control/tls) of every shard's connections,
 * so that public-key work never runs on a dataplane core.
 *
 * It owns one channel per shard (dataplane/shard/msg.h: two SP/SC
 * rte_rings and two rte_mempools, created here on the shard's NUMA
 * socket). Each poll drains the shards' request rings (HS_NEW,
 * HS_CRYPTO, HS_RELEASE) with bounded work, feeds dpq_tls, and turns its
 * callbacks into replies (HS_SEND, HS_SECRET, HS_PEER_TP, HS_COMPLETE,
 * HS_FAILED).
 *
 * Bounds, and what happens at them (all counted per shard):
 *  - the handshake table (max_handshakes): a new handshake beyond it is
 *    refused with HS_FAILED(CONNECTION_REFUSED);
 *  - a full reply ring or an empty reply pool: the reply waits in the
 *    shard's backlog (FIFO, bounded) and is retried on the next poll;
 *    while a shard's backlog is not empty, its requests are left on its
 *    ring (backpressure), so one request's replies are what can overflow;
 *  - backlog overflow: that handshake fails (its queued replies are
 *    purged) and HS_FAILED(INTERNAL_ERROR) is sent; an HS_FAILED that
 *    cannot be sent waits in a second bounded list, and only if that
 *    overflows too is it lost (counted: the connection then ends by its
 *    own idle timeout).
 *
 * The peer's transport parameters must be accepted or refused inside
 * GnuTLS's callback, so the service decodes them itself (dpq_tparams is
 * pure) and checks the connection IDs it knows from HS_NEW (RFC 9000
 * §7.3); the shard applies the same blob with dpq_conn_hs_peer_tparams()
 * and closes the connection if its fuller check disagrees.
 *
 * A server handshake's TLS state is freed as soon as it completes (a QUIC
 * client sends no post-handshake TLS messages; its NewSessionTicket has
 * gone out in the same call); a client's is kept until HS_RELEASE so that
 * NewSessionTicket messages can still be processed.
 *
 * With a server config, server handshakes resume sessions and accept
 * 0-RTT (control/tls): the version's ticket keys and policy, and one
 * anti-replay recorder for every shard's handshakes (this thread sees
 * them all), restarted when early_epoch moves. A 0-RTT read secret is
 * followed by HS_EARLY (the ALPN the 0-RTT data is for); HS_COMPLETE
 * says whether the handshake resumed and took 0-RTT.
 *
 * Thread: dpq_mgmt_poll() runs on one thread only (mgmt only): the
 * runner's pthread, or the caller's when no runner is started. Stats may
 * be read from any thread.
 *
 * Return codes: 0 or a negative errno (-EINVAL bad argument, -ENOMEM,
 * -EEXIST runner already started, -ESRCH no runner).
 */
#ifndef DPQ_CONTROL_MGMT_H
#define DPQ_CONTROL_MGMT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/shard/msg.h"
#include "control/mgmt/srvcfg.h"
#include "control/tls/tls.h"

#define DPQ_MGMT_MAX_SHARDS		128
#define DPQ_MGMT_DEFAULT_RING		1024
#define DPQ_MGMT_DEFAULT_HANDSHAKES	4096
#define DPQ_MGMT_DEFAULT_BACKLOG	64
#define DPQ_MGMT_DEFAULT_FAIL_BACKLOG	1024
#define DPQ_MGMT_DEFAULT_IDLE_SLEEP_US	200
#define DPQ_MGMT_DEFAULT_CONN_SLOTS	4096
/* Requests handled per dpq_mgmt_poll() by the thread runner. */
#define DPQ_MGMT_RUNNER_BUDGET		256

struct dpq_mgmt_conf {
	/* TLS contexts (not owned; must outlive the service). NULL:
	 * handshakes of that role are refused (INTERNAL_ERROR). */
	struct dpq_tls_ctx *server_ctx;
	struct dpq_tls_ctx *client_ctx;
	unsigned int n_shards;		/* 1..DPQ_MGMT_MAX_SHARDS */
	/* Ring capacity per direction per shard, exact (any value >= 1);
	 * 0: DPQ_MGMT_DEFAULT_RING. */
	unsigned int ring_size;
	/* Message objects per direction per shard; 0: 2 * ring_size. */
	unsigned int pool_size;
	/* Concurrent handshakes, all shards; 0: DPQ_MGMT_DEFAULT_HANDSHAKES. */
	unsigned int max_handshakes;
	/* Reply copies waiting per shard; 0: DPQ_MGMT_DEFAULT_BACKLOG. */
	unsigned int backlog;
	/* HS_FAILED waiting per shard; 0: DPQ_MGMT_DEFAULT_FAIL_BACKLOG. */
	unsigned int fail_backlog;
	/* NUMA socket of each shard (n_shards entries); NULL: any. */
	const int *socket_ids;
	/* Runner: longest idle sleep; 0: DPQ_MGMT_DEFAULT_IDLE_SLEEP_US. */
	unsigned int idle_sleep_us;
	/* Connection slots per shard (its max_conns): the size of each
	 * channel's liveness table (msg.h), which lets the service skip
	 * requests of connections already gone; slots beyond it are
	 * always served. 0: DPQ_MGMT_DEFAULT_CONN_SLOTS. */
	unsigned int conn_slots;
	/* The server config (srvcfg.h), owned by the service from create
	 * on (destroyed with it, also when create fails); NULL: none (no
	 * ticket keys: no resumption, no config messages). Its version at
	 * create is taken as known to the shards already (the daemon sets
	 * them up with it); later versions go to every shard as HS_CONFIG. */
	struct dpq_srvcfg *srvcfg;
};

/* The public face of the current server config version (no key bytes). */
struct dpq_mgmt_srvcfg_info {
	uint64_t version;
	uint64_t early_epoch;
	char stek_name[2][9];		/* current, previous ("" none) */
	char token_name[2][9];
	uint8_t token_id[2];
	struct dpq_srvcfg_policy policy;
	uint64_t rotations;		/* on command */
	uint64_t scheduled;		/* by the schedule */
};

/* Per-shard counters. */
struct dpq_mgmt_stats {
	uint64_t requests;		/* request messages handled */
	uint64_t bad;			/* malformed requests dropped */
	uint64_t stale;			/* requests for unknown handles */
	uint64_t replies;		/* reply messages put on the ring */
	uint64_t ring_full;		/* reply enqueues refused */
	uint64_t pool_empty;		/* reply allocations refused */
	uint64_t backlogged;		/* replies that waited */
	uint64_t backlog;		/* replies waiting now */
	uint64_t backlog_max;
	uint64_t backlog_overflow;	/* handshakes failed for it */
	uint64_t fail_lost;		/* HS_FAILED lost (fail list full) */
	uint64_t refused;		/* HS_NEW refused: table full */
	uint64_t cancelled;		/* requests skipped: the shard had
					 * released the connection */
	uint64_t hs_started;
	uint64_t hs_ok;
	uint64_t hs_failed;
	uint64_t active;		/* handshakes in the table now */
	/* Completed server handshakes by kind, and the management
	 * thread's CPU time they took (CLOCK_THREAD_CPUTIME_ID around
	 * every TLS call of the handshake): a resumption signs nothing. */
	uint64_t hs_full, hs_resumed, hs_early;
	uint64_t cpu_full_ns, cpu_resumed_ns;
};

struct dpq_mgmt;

/* Create the service and its channels (EAL must be initialised). Returns
 * NULL with errno set (EINVAL, ENOMEM, or rte_errno's value). */
struct dpq_mgmt *dpq_mgmt_create(const struct dpq_mgmt_conf *conf);
/* Stop the runner if any, free every handshake, the rings and pools (their
 * messages are wiped). The shards must no longer use the channels. */
void dpq_mgmt_destroy(struct dpq_mgmt *m);

/* Shard shard's channel, for its dpq_hs_ring (NULL if out of range). */
struct dpq_hs_chan *dpq_mgmt_chan(struct dpq_mgmt *m, unsigned int shard);

/* Flush reply backlogs, then handle up to budget requests across the
 * shards (round robin). Returns the work done (requests handled plus
 * replies moved from backlogs); 0 means idle. mgmt only. */
int dpq_mgmt_poll(struct dpq_mgmt *m, unsigned int budget);

/* Run dpq_mgmt_poll() on a pthread of its own (not an EAL lcore), sleeping
 * with exponential backoff up to idle_sleep_us while idle. */
int dpq_mgmt_start_thread(struct dpq_mgmt *m);
/* Ask the runner to stop and join it (bounded: it sleeps at most
 * idle_sleep_us between checks). */
int dpq_mgmt_stop_thread(struct dpq_mgmt *m);

/*
 * Replace the server TLS context (certificate reload) from any thread.
 * The service adopts ctx on its next poll: new handshakes use it,
 * handshakes in progress finish with the one they started with. From the
 * first call on, the service owns every server context (ctx and the one
 * from conf): each is destroyed when replaced and no longer used, or by
 * dpq_mgmt_destroy(); the caller must not destroy them. Returns 0, or
 * -EBUSY while an earlier ctx is not adopted yet (try again).
 */
int dpq_mgmt_set_server_ctx(struct dpq_mgmt *m, struct dpq_tls_ctx *ctx);
/* True while a context given to dpq_mgmt_set_server_ctx() waits. */
bool dpq_mgmt_server_ctx_pending(const struct dpq_mgmt *m);
/* How many contexts were adopted so far. */
uint64_t dpq_mgmt_server_ctx_swaps(const struct dpq_mgmt *m);

/*
 * Server config requests from another thread (the control socket's):
 * executed by the management thread on its next poll; the caller waits
 * at most timeout_ms. One caller at a time. Return 0, the operation's
 * error with err filled (dpq_srvcfg_rotate / _set_policy), -ENOENT (no
 * server config), -EBUSY (a request still running) or -ETIMEDOUT (the
 * request will still run).
 */
int dpq_mgmt_rotate_keys(struct dpq_mgmt *m, unsigned int what,
		int timeout_ms, char *err, size_t n);
int dpq_mgmt_set_policy(struct dpq_mgmt *m,
		const struct dpq_srvcfg_policy *p, int timeout_ms, char *err,
		size_t n);
/* The current version (any thread). -ENOENT: no server config. */
int dpq_mgmt_srvcfg_info(struct dpq_mgmt *m, struct dpq_mgmt_srvcfg_info *out);

/* The shard-side config message of a server config version (token keys,
 * policies): what the management thread pushes to every shard. */
void dpq_mgmt_hs_config(const struct dpq_srvcfg_version *v,
		struct dpq_hs_config *cfg);

/* Counters of one shard (any thread; values are individually atomic). */
int dpq_mgmt_get_stats(const struct dpq_mgmt *m, unsigned int shard,
		struct dpq_mgmt_stats *st);

#endif /* DPQ_CONTROL_MGMT_H */
