/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's counters, one table for every reader: the control socket's
 * `stats` (JSON, nested by group) and DPDK telemetry (`dpdk-telemetry.py
 * -f PREFIX`, flat dictionaries, group_name keys), so a counter added
 * here appears in both.
 *
 * Telemetry commands (docs/operations.md):
 *   /dpquic/info          version, pid, state, uptime, shards, connections
 *   /dpquic/stats         every shard's counters summed
 *   /dpquic/shard,N       one shard's counters (lcore, rings, handshakes)
 *   /dpquic/port          the port's counters as the driver counts them
 *   /dpquic/mgmt          the management thread (handshakes, its rings)
 *
 * Telemetry runs on its own thread (DPDK's): it reads the same plain
 * counters the main lcore reads for `stats` (64-bit loads, each value
 * whole, no cross-counter consistency), and only while `live` says the
 * shards exist; teardown clears it under the lock first.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "control/dpquicd/dpquicd.h"
#include "dataplane/engine/errors.h"

/* Everything known about one shard, copied once. */
struct snap {
	uint64_t shard, lcore;
	struct dpq_shard_stats st;
	uint64_t drops_tx;
	struct dpq_hs_ring_stats hr;
	struct dpq_mgmt_stats ms;
	struct dpq_app_stats as;
	struct dpq_listener_stats ls;
	uint64_t config_version;	/* server config the shard runs */
	/* management-thread CPU per handshake of each kind (ns) */
	uint64_t cpu_per_full, cpu_per_resumed;
};

struct stat_row {
	const char *group;	/* NULL: top level of the shard */
	const char *name;
	size_t off;		/* uint64_t in struct snap */
	bool no_sum;		/* /dpquic/stats: not summed (ids) */
};

#define R(n, f)		{ NULL, n, offsetof(struct snap, f), false }
#define G(g, n, f)	{ g, n, offsetof(struct snap, f), false }

/* The order is the output's; a group's rows are consecutive. */
static const struct stat_row shard_rows[] = {
	{ NULL, "shard", offsetof(struct snap, shard), true },
	{ NULL, "lcore", offsetof(struct snap, lcore), true },
	R("connections", st.conns_active),
	R("connections_created", st.conns_created),
	R("connections_refused", st.conns_refused),
	R("connections_unopened", st.conns_unopened),
	R("handshakes", st.handshakes_done),
	R("rx_packets", st.rx_pkts),
	R("rx_bytes", st.rx_bytes),
	R("tx_packets", st.tx_pkts),
	R("tx_bytes", st.tx_bytes),
	R("rx_batched", st.rx_batched),
	R("drops_no_connection", st.no_conn),
	R("drops_tx", drops_tx),
	R("closed_idle", st.closed_idle),
	R("closed_handshake_timeout", st.closed_handshake_timeout),
	R("halfopen", st.halfopen),
	R("conns_evicted", st.conns_evicted),
	R("conns_parked", st.conns_parked),
	R("mem_used", st.mem_used),
	R("mem_peak", st.mem_peak),
	R("mem_budget", st.mem_budget),
	R("mem_refused", st.mem_refused),
	R("unvalidated_rx_bytes", st.unvalidated_rx),
	R("unvalidated_tx_bytes", st.unvalidated_tx),
	R("closed_by_peer", st.closed_by_peer),
	R("closed_app", st.closed_app),
	R("closed_error", st.closed_error),
	R("key_updates", st.key_updates),
	R("key_updates_peer", st.key_updates_peer),
	/* paths and connection IDs (docs/paths.md) */
	G("paths", "migrations", st.path_migrations),
	G("paths", "validated", st.paths_validated),
	G("paths", "failed", st.paths_failed),
	G("paths", "reverts", st.path_reverts),
	G("paths", "rx_unknown_path", st.rx_unknown_path),
	G("paths", "cids_issued", st.cids_issued),
	G("paths", "cids_retired", st.cids_retired),
	G("paths", "cid_issue_fail", st.cid_issue_fail),
	R("handoff_out", st.handoff_out),
	R("handoff_in", st.handoff_in),
	R("handoff_ring_full", st.handoff_full),
	R("listener_replies", st.listener_replies),
	R("hs_ring_full", hr.ring_full),
	R("hs_ring_backlog", hr.backlog),
	R("hs_ring_requests", hr.requests),
	R("hs_ring_backlog_overflow", hr.backlog_overflow),
	R("hs_ring_new_refused", hr.new_refused),
	R("mgmt_cancelled", ms.cancelled),
	R("mgmt_ring_full", ms.ring_full),
	R("mgmt_handshakes_ok", ms.hs_ok),
	R("mgmt_handshakes_failed", ms.hs_failed),
	/* Resumption and 0-RTT, and what the handshakes cost the management
	 * thread (CPU ns per handshake of each kind; averages: not summed). */
	R("handshakes_full", ms.hs_full),
	R("handshakes_resumed", ms.hs_resumed),
	R("handshakes_0rtt", ms.hs_early),
	{ NULL, "mgmt_cpu_ns_per_full", offsetof(struct snap, cpu_per_full),
	  true },
	{ NULL, "mgmt_cpu_ns_per_resumed",
	  offsetof(struct snap, cpu_per_resumed), true },
	/* Address-validation tokens (RFC 9000 §8.1). */
	G("tokens", "new_token_sent", st.new_tokens_sent),
	G("tokens", "new_token_ok", ls.token_new_ok),
	G("tokens", "new_token_ignored", ls.token_new_bad),
	G("tokens", "new_token_replayed", ls.token_new_replay),
	G("tokens", "retry_token_ok", ls.token_retry_ok),
	G("tokens", "retry_token_bad", ls.token_retry_bad),
	{ "tokens", "config_version", offsetof(struct snap, config_version),
	  true },
	/* hq-interop answers: 200 (whole file), 403, 404, ... */
	G("hq", "requests", as.hq.requests),
	G("hq", "ok_200", as.hq.responses),
	G("hq", "forbidden_403", as.hq.err_forbidden),
	G("hq", "not_found_404", as.hq.err_not_found),
	G("hq", "bad_request_400", as.hq.err_bad_request),
	G("hq", "too_long_414", as.hq.err_too_long),
	G("hq", "internal_500", as.hq.err_internal),
	G("hq", "bytes_served", as.hq.bytes_served),
	G("hq", "peer_aborted", as.hq.peer_aborted),
};

#define MS(n, f)	{ NULL, n, offsetof(struct dpq_mgmt_stats, f), false }
/* The management thread's side of one shard's channel. */
static const struct stat_row mgmt_rows[] = {
	MS("requests", requests),
	MS("bad", bad),
	MS("stale", stale),
	MS("replies", replies),
	MS("ring_full", ring_full),
	MS("pool_empty", pool_empty),
	MS("backlogged", backlogged),
	MS("backlog", backlog),
	MS("backlog_max", backlog_max),
	MS("backlog_overflow", backlog_overflow),
	MS("fail_lost", fail_lost),
	MS("refused", refused),
	MS("cancelled", cancelled),
	MS("handshakes_started", hs_started),
	MS("handshakes_ok", hs_ok),
	MS("handshakes_failed", hs_failed),
	MS("handshakes_active", active),
};

#define PS(n, f)	{ NULL, n, offsetof(struct dpq_driver_stats, f), false }
static const struct stat_row port_rows[] = {
	PS("rx_packets", rx_pkts),
	PS("tx_packets", tx_pkts),
	PS("rx_dropped", rx_dropped),
	PS("rx_bad", rx_bad),
	PS("tx_dropped", tx_dropped),
	PS("arp_rx", arp_rx),
	PS("rx_bytes", rx_bytes),
	PS("tx_bytes", tx_bytes),
	PS("alloc_fail", alloc_fail),
	PS("arp_tx", arp_tx),
	PS("neigh_wait", neigh_wait),
	PS("neigh_drop", neigh_drop),
};

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

static uint64_t
row_val(const struct stat_row *r, const void *base)
{
	uint64_t v;

	memcpy(&v, (const char *)base + r->off, sizeof(v));
	return v;
}

static void
snap_take(const struct dpqd *d, unsigned int i, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	s->shard = i;
	s->lcore = d->sh[i].lcore;
	dpq_shard_get_stats(d->sh[i].shard, &s->st);
	s->drops_tx = s->st.tx_refused + s->st.tx_alloc_fail +
		s->st.tx_seal_fail;
	dpq_hs_ring_get_stats(d->sh[i].ring, &s->hr);
	dpq_mgmt_get_stats(d->mgmt, i, &s->ms);
	s->as = *dpq_app_env_stats(d->sh[i].apps);
	s->ls = *dpq_listener_stats(d->sh[i].listener);
	s->cpu_per_full = s->ms.hs_full ? s->ms.cpu_full_ns / s->ms.hs_full : 0;
	s->cpu_per_resumed = s->ms.hs_resumed ?
		s->ms.cpu_resumed_ns / s->ms.hs_resumed : 0;
	s->config_version = __atomic_load_n(&d->sh[i].config_version,
			__ATOMIC_ACQUIRE);
}

/* ---- one walk, two writers ------------------------------------------------ */

/* A writer gets every counter in table order; group NULL is top level.
 * Counters with variable names (listener outcomes, close error codes)
 * come last, only when non-zero. */
struct out {
	void (*u64)(struct out *o, const char *group, const char *name,
			uint64_t v);
};

static void
walk_rows(struct out *o, const struct stat_row *rows, size_t n,
		const void *base)
{
	size_t i;

	for (i = 0; i < n; i++)
		o->u64(o, rows[i].group, rows[i].name, row_val(&rows[i], base));
}

/* totals: a sum of shards (snap_sum), whose ids mean nothing. */
static void
walk_shard(struct out *o, const struct snap *s, bool totals)
{
	unsigned int k;
	size_t r;

	for (r = 0; r < NROWS(shard_rows); r++)
		if (!totals || !shard_rows[r].no_sum)
			o->u64(o, shard_rows[r].group, shard_rows[r].name,
				row_val(&shard_rows[r], s));
	for (k = 0; k < 17; k++)
		if (s->st.closed_error_code[k] != 0)
			o->u64(o, "closed_error_codes",
				dpq_transport_error_str(k),
				s->st.closed_error_code[k]);
	if (s->st.closed_crypto_error != 0)
		o->u64(o, "closed_error_codes", "CRYPTO_ERROR",
				s->st.closed_crypto_error);
	for (k = 0; k < DPQ_LO_COUNT; k++)
		if (s->ls.outcome[k] != 0)
			o->u64(o, "listener", dpq_listen_outcome_str(k),
				s->ls.outcome[k]);
	if (s->ls.retry_halfopen != 0)
		o->u64(o, "listener", "retry_halfopen", s->ls.retry_halfopen);
}

/* Sum of every shard (ids excepted), walked like one shard. */
static void
snap_sum(const struct dpqd *d, struct snap *sum)
{
	struct snap s;
	unsigned int i, k;
	size_t r;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < d->nshards; i++) {
		snap_take(d, i, &s);
		for (r = 0; r < NROWS(shard_rows); r++) {
			uint64_t v = row_val(&shard_rows[r], sum);

			if (shard_rows[r].no_sum)
				continue;
			v += row_val(&shard_rows[r], &s);
			memcpy((char *)sum + shard_rows[r].off, &v, sizeof(v));
		}
		for (k = 0; k < 17; k++)
			sum->st.closed_error_code[k] +=
				s.st.closed_error_code[k];
		sum->st.closed_crypto_error += s.st.closed_crypto_error;
		for (k = 0; k < DPQ_LO_COUNT; k++)
			sum->ls.outcome[k] += s.ls.outcome[k];
		sum->ls.retry_halfopen += s.ls.retry_halfopen;
	}
	sum->shard = d->nshards;	/* shown as "shards" */
}

/* JSON (control socket): groups become nested objects. */
struct out_json {
	struct out o;
	struct dpq_json_w *w;
	const char *group;
};

static void
json_u64(struct out *o, const char *group, const char *name, uint64_t v)
{
	struct out_json *j = (struct out_json *)o;

	if (j->group != group && (j->group == NULL || group == NULL ||
	    strcmp(j->group, group) != 0)) {
		if (j->group != NULL)
			dpq_json_w_obj_end(j->w);
		if (group != NULL) {
			dpq_json_w_key(j->w, group);
			dpq_json_w_obj_begin(j->w);
		}
		j->group = group;
	}
	dpq_json_w_ku64(j->w, name, v);
}

static void
json_close(struct out_json *j)
{
	if (j->group != NULL)
		dpq_json_w_obj_end(j->w);
	j->group = NULL;
}

void
dpqd_stats_json(struct dpqd *d, struct dpq_json_w *w)
{
	struct out_json j = { { json_u64 }, w, NULL };
	struct dpq_driver_stats ds;
	struct snap s;
	unsigned int i;

	dpq_json_w_key(w, "shards");
	dpq_json_w_arr_begin(w);
	for (i = 0; i < d->nshards; i++) {
		snap_take(d, i, &s);
		dpq_json_w_obj_begin(w);
		walk_shard(&j.o, &s, false);
		json_close(&j);
		dpq_json_w_obj_end(w);
	}
	dpq_json_w_arr_end(w);
	dpq_driver_stats(d->drv, &ds);
	dpq_json_w_key(w, "port");
	dpq_json_w_obj_begin(w);
	walk_rows(&j.o, port_rows, NROWS(port_rows), &ds);
	dpq_json_w_obj_end(w);
}

/* ---- telemetry -------------------------------------------------------------- */

static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tel_live;

/* Telemetry: a flat dictionary, "group_name" keys (RTE_TEL_MAX_DICT_ENTRIES
 * bounds it; a shard has fewer than 100). */
struct out_tel {
	struct out o;
	struct rte_tel_data *t;
};

static void
tel_u64(struct out *o, const char *group, const char *name, uint64_t v)
{
	struct out_tel *t = (struct out_tel *)o;
	char key[RTE_TEL_MAX_STRING_LEN];

	if (group != NULL)
		snprintf(key, sizeof(key), "%s_%s", group, name);
	else
		snprintf(key, sizeof(key), "%s", name);
	rte_tel_data_add_dict_u64(t->t, key, v);
}

static int
tel_enter(void)
{
	pthread_mutex_lock(&tel_lock);
	if (tel_live)
		return 0;
	pthread_mutex_unlock(&tel_lock);
	return -EAGAIN;
}

static int
tel_shard(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct out_tel o = { { tel_u64 }, t };
	struct snap s;
	char *end;
	unsigned long i;

	(void)cmd;
	if (params == NULL || *params == '\0')
		return -EINVAL;
	i = strtoul(params, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (tel_enter() != 0)
		return -EAGAIN;
	if (i >= dpqd.nshards) {
		pthread_mutex_unlock(&tel_lock);
		return -EINVAL;
	}
	snap_take(&dpqd, (unsigned int)i, &s);
	rte_tel_data_start_dict(t);
	walk_shard(&o.o, &s, false);
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct out_tel o = { { tel_u64 }, t };
	struct snap s;

	(void)cmd;
	(void)params;
	if (tel_enter() != 0)
		return -EAGAIN;
	snap_sum(&dpqd, &s);
	pthread_mutex_unlock(&tel_lock);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "shards", s.shard);
	walk_shard(&o.o, &s, true);
	return 0;
}

static int
tel_port(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct out_tel o = { { tel_u64 }, t };
	struct dpq_driver_stats ds;

	(void)cmd;
	(void)params;
	if (tel_enter() != 0)
		return -EAGAIN;
	dpq_driver_stats(dpqd.drv, &ds);
	pthread_mutex_unlock(&tel_lock);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "port_id", dpqd.conf.port.id);
	walk_rows(&o.o, port_rows, NROWS(port_rows), &ds);
	return 0;
}

static int
tel_mgmt(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct out_tel o = { { tel_u64 }, t };
	struct dpq_mgmt_stats ms, sum;
	unsigned int i;
	size_t r;

	(void)cmd;
	(void)params;
	if (tel_enter() != 0)
		return -EAGAIN;
	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < dpqd.nshards; i++) {
		dpq_mgmt_get_stats(dpqd.mgmt, i, &ms);
		for (r = 0; r < NROWS(mgmt_rows); r++) {
			uint64_t v = row_val(&mgmt_rows[r], &sum) +
				row_val(&mgmt_rows[r], &ms);

			memcpy((char *)&sum + mgmt_rows[r].off, &v, sizeof(v));
		}
	}
	i = dpqd.nshards;
	pthread_mutex_unlock(&tel_lock);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "channels", i);
	walk_rows(&o.o, mgmt_rows, NROWS(mgmt_rows), &sum);
	return 0;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	uint64_t conns = 0;
	unsigned int i;
	char a[64];

	(void)cmd;
	(void)params;
	if (tel_enter() != 0)
		return -EAGAIN;
	for (i = 0; i < dpqd.nshards; i++)
		conns += dpq_shard_conn_count(dpqd.sh[i].shard);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "version", DPQD_VERSION);
	rte_tel_data_add_dict_u64(t, "pid", (uint64_t)getpid());
	rte_tel_data_add_dict_string(t, "state", dpqd.draining ? "draining" :
			"serving");
	rte_tel_data_add_dict_u64(t, "uptime_s",
			(dpqd_now_us() - dpqd.t_start_us) / 1000000);
	rte_tel_data_add_dict_string(t, "addr", dpq_addr_format(
			&dpqd.conf.server.addr, a, sizeof(a)));
	rte_tel_data_add_dict_u64(t, "shards", dpqd.nshards);
	rte_tel_data_add_dict_u64(t, "connections", conns);
	rte_tel_data_add_dict_u64(t, "port_id", dpqd.conf.port.id);
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

int
dpqd_telemetry_register(void)
{
	static const struct {
		const char *cmd;
		telemetry_cb fn;
		const char *help;
	} cmds[] = {
		{ "/dpquic/info", tel_info, "dpquicd: version, pid, state, "
		  "uptime, address, shards, connections" },
		{ "/dpquic/stats", tel_stats, "dpquicd: every shard's counters "
		  "summed" },
		{ "/dpquic/shard", tel_shard, "dpquicd: one shard's counters. "
		  "Parameters: int shard" },
		{ "/dpquic/port", tel_port, "dpquicd: the port's counters as "
		  "the driver counts them (ethdev's own: /ethdev/stats)" },
		{ "/dpquic/mgmt", tel_mgmt, "dpquicd: management thread: TLS "
		  "handshakes and its rings, all shards" },
	};
	unsigned int i;
	int rc;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		rc = rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn,
				cmds[i].help);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
dpqd_telemetry_live(bool live)
{
	pthread_mutex_lock(&tel_lock);
	tel_live = live;
	pthread_mutex_unlock(&tel_lock);
}
