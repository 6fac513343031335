/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's commands (dpquic-ctl COMMAND). Arguments come as
 * named members ("timeout":30) or, from `dpquic-ctl drain 30`, as the
 * positional "args" array; arg() reads either.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/dpquicd/dpquicd.h"
#include "dataplane/engine/errors.h"

/* Argument `name`, else positional pos, as text; NULL when absent. */
static const char *
arg(struct dpq_ctl_req *req, const char *name, unsigned int pos, char *buf,
		size_t n)
{
	const json_t *v = dpq_json_get(req->args, name);
	const json_t *a = dpq_json_get(req->args, "args");

	if (v == NULL && json_is_array(a))
		v = json_array_get(a, pos);	/* NULL past the end */
	if (v == NULL)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, n, "%s", json_string_value(v));
		return buf;
	case JSON_INTEGER:
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT,
				json_integer_value(v));
		return buf;
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
		return buf;
	default:
		return NULL;
	}
}

static void
w_cid(struct dpq_json_w *w, const char *key, const struct dpq_cid *cid)
{
	char hex[2 * DPQ_MAX_CID_LEN + 1];
	unsigned int i;

	for (i = 0; i < cid->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", cid->bytes[i]);
	hex[2 * cid->len] = '\0';
	dpq_json_w_kstr(w, key, hex);
}

static const char *
suite_name(uint16_t s)
{
	switch (s) {
	case DPQ_TLS_AES_128_GCM_SHA256: return "TLS_AES_128_GCM_SHA256";
	case DPQ_TLS_AES_256_GCM_SHA384: return "TLS_AES_256_GCM_SHA384";
	case DPQ_TLS_CHACHA20_POLY1305_SHA256:
		return "TLS_CHACHA20_POLY1305_SHA256";
	default: return "";
	}
}

/* ---- status, stats ---------------------------------------------------- */

static int
cmd_status(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	uint32_t conns = 0;
	unsigned int i;
	char a[64];

	for (i = 0; i < d->nshards; i++)
		conns += dpq_shard_conn_count(d->sh[i].shard);
	dpq_json_w_kstr(req->reply, "version", DPQD_VERSION);
	dpq_json_w_ki64(req->reply, "pid", (int64_t)getpid());
	dpq_json_w_kstr(req->reply, "state", d->draining ? "draining" :
			"serving");
	dpq_json_w_ku64(req->reply, "uptime_s",
			(dpqd_now_us() - d->t_start_us) / 1000000);
	dpq_json_w_kstr(req->reply, "addr",
			dpq_addr_format(&d->conf.server.addr, a, sizeof(a)));
	dpq_json_w_ku64(req->reply, "shards", d->nshards);
	dpq_json_w_ku64(req->reply, "connections", conns);
	dpq_json_w_kstr(req->reply, "root", d->conf.server.root);
	dpq_json_w_kstr(req->reply, "config", d->conf.file ? d->conf.file :
			"");
	if (d->draining)
		dpq_json_w_ku64(req->reply, "drain_left_s",
			d->drain_deadline_us > dpqd_now_us() ?
			(d->drain_deadline_us - dpqd_now_us()) / 1000000 : 0);
	return 0;
}

static int
cmd_stats(struct dpq_ctl_req *req, void *arg_)
{
	dpqd_stats_json(arg_, req->reply);
	return 0;
}

/* ---- config, reload, drain -------------------------------------------- */

struct conf_walk {
	const struct dpq_conf *c;
	struct dpq_json_w *w;
};

static void
conf_one(void *arg_, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k)
{
	struct conf_walk *cw = arg_;
	char key[96], val[1024], org[300];

	snprintf(key, sizeof(key), "%s.%s", s->name, k->name);
	dpq_conf_format(cw->c, k, val, sizeof(val));
	dpq_json_w_obj_begin(cw->w);
	dpq_json_w_kstr(cw->w, "key", key);
	dpq_json_w_kstr(cw->w, "value", val);
	dpq_json_w_kstr(cw->w, "from", dpq_conf_origin_str(cw->c, k, org,
			sizeof(org)));
	dpq_json_w_kbool(cw->w, "reloadable",
			(k->flags & DPQ_CONF_F_RELOAD) != 0);
	dpq_json_w_obj_end(cw->w);
}

static int
cmd_config(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct conf_walk cw = { &d->conf, req->reply };

	dpq_json_w_kstr(req->reply, "file", d->conf.file ? d->conf.file : "");
	dpq_json_w_key(req->reply, "keys");
	dpq_json_w_arr_begin(req->reply);
	dpq_conf_foreach(conf_one, &cw);
	dpq_json_w_arr_end(req->reply);
	return 0;
}

static int
cmd_reload(struct dpq_ctl_req *req, void *arg_)
{
	return dpqd_reload(arg_, req);
}

int
dpqd_drain_start(struct dpqd *d, double timeout_s)
{
	int rc;

	rc = dpqd_shardctl_all(d, DPQD_OP_REFUSE, true, 0,
			"server draining: try again later");
	if (rc != 0)
		return rc;
	if (!d->draining)
		d->drain_started_us = dpqd_now_us();
	d->draining = true;
	d->drain_deadline_us = dpqd_now_us() + (uint64_t)(timeout_s * 1e6);
	return 0;
}

static int
cmd_drain(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	double t = d->conf.drain.timeout;
	const char *v;
	char buf[64];
	uint32_t conns = 0;
	unsigned int i;

	v = arg(req, "timeout", 0, buf, sizeof(buf));
	if (v != NULL && (dpq_conf_parse_seconds(v, &t) != 0 || t > 86400))
		return dpq_ctl_req_error(req, "drain: timeout \"%s\": expected "
			"seconds 0..86400 (default drain.timeout = %g)", v,
			d->conf.drain.timeout);
	if (dpqd_drain_start(d, t) != 0)
		return dpq_ctl_req_error(req, "drain: a shard did not answer");
	for (i = 0; i < d->nshards; i++)
		conns += dpq_shard_conn_count(d->sh[i].shard);
	dpq_json_w_kstr(req->reply, "state", "draining");
	dpq_json_w_ku64(req->reply, "connections", conns);
	dpq_json_w_ku64(req->reply, "timeout_s", (uint64_t)t);
	DLOG(NOTICE, "draining: refusing new connections, "
		"%u open, exit when they end or in %g s\n", conns, t);
	return 0;
}

/* ---- connections ---------------------------------------------------------- */

static void
w_conn(struct dpq_json_w *w, unsigned int shard,
		const struct dpqd_conn_info *ci)
{
	char a[64], h[32];

	snprintf(h, sizeof(h), "%" PRIx64, ci->handle);
	dpq_json_w_obj_begin(w);
	dpq_json_w_kstr(w, "id", h);
	dpq_json_w_ku64(w, "shard", shard);
	dpq_json_w_kstr(w, "peer", dpq_addr_format(&ci->peer, a, sizeof(a)));
	w_cid(w, "scid", &ci->scid);
	w_cid(w, "dcid", &ci->dcid);
	dpq_json_w_kstr(w, "state", dpq_conn_state_str(ci->state));
	dpq_json_w_ku64(w, "age_ms", ci->age_us / 1000);
	dpq_json_w_ku64(w, "srtt_us", ci->st.srtt_us);
	dpq_json_w_ku64(w, "min_rtt_us", ci->st.min_rtt_us);
	dpq_json_w_ku64(w, "cwnd", ci->st.cwnd);
	dpq_json_w_ku64(w, "bytes_in_flight", ci->st.bytes_in_flight);
	dpq_json_w_ku64(w, "bytes_sent", ci->st.bytes_sent);
	dpq_json_w_ku64(w, "bytes_recv", ci->st.bytes_recv);
	dpq_json_w_ku64(w, "stream_bytes_sent", ci->st.stream_bytes_sent);
	dpq_json_w_ku64(w, "stream_bytes_recv", ci->st.stream_bytes_recv);
	dpq_json_w_ku64(w, "packets_sent", ci->st.pkts_sent);
	dpq_json_w_ku64(w, "packets_recv", ci->st.pkts_recv);
	dpq_json_w_ku64(w, "packets_lost", ci->st.pkts_lost);
	dpq_json_w_ku64(w, "streams", ci->st.streams);
	dpq_json_w_kstr(w, "cipher", suite_name(ci->st.cipher_suite));
	dpq_json_w_kstr(w, "alpn", ci->alpn);
	dpq_json_w_ku64(w, "handshake_us", ci->st.handshake_us);
	dpq_json_w_kbool(w, "qlog", ci->qlog);
	if (ci->st.fec_on) {
		dpq_json_w_key(w, "fec");
		dpq_json_w_obj_begin(w);
		dpq_json_w_ku64(w, "repairs_sent", ci->st.fec_groups);
		dpq_json_w_ku64(w, "repair_bytes", ci->st.fec_repair_bytes);
		dpq_json_w_ku64(w, "protected", ci->st.fec_protected);
		dpq_json_w_ku64(w, "rebuilt", ci->st.fec_recovered);
		dpq_json_w_ku64(w, "unrecoverable", ci->st.fec_unrecoverable);
		dpq_json_w_ku64(w, "peer_rebuilt", ci->st.fec_peer_recovered);
		dpq_json_w_ku64(w, "loss_ppm", ci->st.fec_loss_ppm);
		dpq_json_w_obj_end(w);
	}
	dpq_json_w_obj_end(w);
}

static int
cmd_connections(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	uint64_t limit = 1000, shown = 0, total = 0;
	const char *v;
	char buf[32];
	unsigned int i, k;
	int rc;

	v = arg(req, "limit", 0, buf, sizeof(buf));
	if (v != NULL && (dpq_conf_parse_u64(v, &limit) != 0 || limit == 0))
		return dpq_ctl_req_error(req, "connections: limit \"%s\": "
			"expected a positive integer", v);
	dpq_json_w_key(req->reply, "connections");
	dpq_json_w_arr_begin(req->reply);
	for (i = 0; i < d->nshards; i++) {
		struct dpqd_mailbox *mb = d->sh[i].mb;

		mb->cursor = 0;
		do {
			mb->op = DPQD_OP_LIST;
			rc = dpqd_shardctl_call(d, i, DPQD_SHARD_WAIT_MS);
			if (rc != 0)
				return dpq_ctl_req_error(req, "connections: "
					"shard %u: %s", i,
					dpqd_shardctl_strerror(d, i, rc));
			for (k = 0; k < mb->n && shown < limit; k++, shown++)
				w_conn(req->reply, i, &mb->info[k]);
			mb->cursor += mb->n;
		} while (mb->n == DPQD_LIST_MAX && shown < limit);
		total += mb->total;
	}
	dpq_json_w_arr_end(req->reply);
	dpq_json_w_ku64(req->reply, "total", total);
	dpq_json_w_ku64(req->reply, "shown", shown);
	return 0;
}

/* A connection id as `dpquic-ctl connections` prints it (hex handle). */
static int
parse_id(struct dpq_ctl_req *req, struct dpqd *d, uint64_t *h,
		unsigned int *shard)
{
	const char *v;
	char buf[64], *end;

	v = arg(req, "id", 0, buf, sizeof(buf));
	if (v == NULL)
		return dpq_ctl_req_error(req, "%s: which connection? give its "
			"id from `dpquic-ctl connections`", req->cmd);
	errno = 0;
	*h = strtoull(v, &end, 16);
	if (errno != 0 || end == v || *end != '\0' ||
	    dpq_hs_handle_shard(*h) >= d->nshards)
		return dpq_ctl_req_error(req, "%s: \"%s\" is not a connection "
			"id (hex, from `dpquic-ctl connections`)", req->cmd, v);
	*shard = dpq_hs_handle_shard(*h);
	return 0;
}

static int
cmd_conn(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct dpqd_mailbox *mb;
	unsigned int shard, k;
	uint64_t h;
	int rc = parse_id(req, d, &h, &shard);

	if (rc != 0)
		return rc;
	mb = d->sh[shard].mb;
	mb->cursor = 0;
	do {
		mb->op = DPQD_OP_LIST;
		rc = dpqd_shardctl_call(d, shard, DPQD_SHARD_WAIT_MS);
		if (rc != 0)
			return dpq_ctl_req_error(req, "conn: shard %u: %s",
				shard, dpqd_shardctl_strerror(d, shard, rc));
		for (k = 0; k < mb->n; k++)
			if (mb->info[k].handle == h) {
				dpq_json_w_key(req->reply, "connection");
				w_conn(req->reply, shard, &mb->info[k]);
				return 0;
			}
		mb->cursor += mb->n;
	} while (mb->n == DPQD_LIST_MAX);
	return dpq_ctl_req_error(req, "conn: no connection %" PRIx64
		" (closed already?)", h);
}

static int
cmd_close(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct dpqd_mailbox *mb;
	unsigned int shard;
	uint64_t h;
	int rc = parse_id(req, d, &h, &shard);

	if (rc != 0)
		return rc;
	mb = d->sh[shard].mb;
	mb->op = DPQD_OP_CLOSE_ONE;
	mb->handle = h;
	mb->code = DPQ_TE_NO_ERROR;
	snprintf(mb->reason, sizeof(mb->reason), "closed by the operator");
	rc = dpqd_shardctl_call(d, shard, DPQD_SHARD_WAIT_MS);
	if (rc == -ENOENT)
		return dpq_ctl_req_error(req, "close: no connection %" PRIx64
			" (closed already?)", h);
	if (rc == -EALREADY)
		return dpq_ctl_req_error(req, "close: connection %" PRIx64
			" is closing already", h);
	if (rc != 0)
		return dpq_ctl_req_error(req, "close: shard %u: %s", shard,
			dpqd_shardctl_strerror(d, shard, rc));
	dpq_json_w_key(req->reply, "closed");
	w_conn(req->reply, shard, &mb->info[0]);
	DLOG(NOTICE, "connection %" PRIx64 " closed by "
		"the operator (pid %d)\n", h, (int)req->pid);
	return 0;
}

struct cmd_entry {
	const char *name;
	int (*fn)(struct dpq_ctl_req *, void *);
	const char *help;
};

/* Every command through here: who asked what on dpquic.ctl (DEBUG), and
 * a refusal at INFO with the reason the client got. */
static int
cmd_logged(struct dpq_ctl_req *req, void *arg_)
{
	const struct cmd_entry *e = arg_;
	int rc;

	rte_log(RTE_LOG_DEBUG, dpqd_logtype_ctl, "ctl: pid %d uid %u: %s\n",
		(int)req->pid, (unsigned int)req->uid, e->name);
	rc = e->fn(req, &dpqd);
	if (rc < 0)
		rte_log(RTE_LOG_INFO, dpqd_logtype_ctl, "ctl: pid %d: %s "
			"refused: %s\n", (int)req->pid, e->name,
			req->err[0] ? req->err : strerror(-rc));
	return rc;
}

int
dpqd_cmds_register(struct dpqd *d)
{
	static const struct cmd_entry cmds[] = {
		{ "status", cmd_status, "version, state, address, shards, "
		  "connections" },
		{ "stats", cmd_stats, "per shard: connections, packets, bytes, "
		  "drops, ring-full counts, hq-interop answers; port counters" },
		{ "config", cmd_config, "every config key: value, where it "
		  "came from, whether a reload changes it" },
		{ "reload", cmd_reload, "re-read the config file and apply what "
		  "can change without a restart (also SIGHUP)" },
		{ "drain", cmd_drain, "[timeout=S] refuse new connections, let "
		  "open ones finish, exit when they are gone or at the "
		  "deadline" },
		{ "connections", cmd_connections, "[limit=N] every connection: "
		  "peer, CIDs, shard, state, age, RTT, cwnd, bytes, streams, "
		  "cipher, ALPN" },
		{ "conn", cmd_conn, "id=ID one connection (ID from "
		  "connections)" },
		{ "close", cmd_close, "id=ID close one connection "
		  "(CONNECTION_CLOSE, NO_ERROR)" },
		{ "fec", dpqd_cmd_fec, "[policy=P] [max_group=N] [spec=LIST] "
		  "XOR-FEC of new connections (P: off, fixed[:K], "
		  "adaptive[:MIN-MAX]; LIST: off, all, handshake,tail,repair); "
		  "id=ID policy=P: of one connection" },
		{ "qlog", dpqd_cmd_qlog, "[ID on|off] write one connection's "
		  "qlog file into qlog.dir, or stop; without arguments: the "
		  "files written" },
	};
	unsigned int i;
	int rc;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		rc = dpq_ctl_register(d->ctl, cmds[i].name, cmd_logged,
				(void *)&cmds[i], cmds[i].help);
		if (rc != 0)
			return rc;
	}
	return 0;
}
