/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquicd's XOR-FEC settings (docs/fec.md): the [fec] config section
 * applied to the shards at start and on reload, and the control command
 *
 *   fec                                 show what new connections get
 *   fec [policy=P] [max_group=N] [spec=LIST]  set it for new connections
 *   fec id=ID policy=P                  set one connection's policy
 *
 * A value set here runs until the next reload, which goes back to the
 * file and the command line (like any setting, `dpquic-ctl config`
 * shows the running value).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/dpquicd/dpquicd.h"
#include "dataplane/fec/xor.h"

int
dpqd_fec_conn_conf(const struct dpq_conf *c, struct dpq_conn_conf *cc)
{
	cc->fec_max_group = (uint8_t)c->fec.max_group;
	cc->spec_spacing_us = (uint32_t)(c->fec.spec_spacing * 1e6);
	if (dpq_conn_spec_parse(c->fec.spec_retx, &cc->spec_retx) != 0)
		return -EINVAL;
	if (dpq_cc_fec_reaction_parse(c->fec.cc != NULL ? c->fec.cc :
			"guarded", &cc->fec_cc) != 0)
		return -EINVAL;
	return dpq_fec_policy_parse(c->fec.policy, &cc->fec);
}

int
dpqd_fec_start(const struct dpq_conf *c)
{
	/* Before any shard runs: the kernel pointer is read without a
	 * lock on the data path. */
	return dpq_xor_use(c->fec.xor_impl != NULL ? c->fec.xor_impl :
			"auto");
}

/* Every shard's defaults for new connections, from c. */
int
dpqd_fec_apply(struct dpqd *d, const struct dpq_conf *c)
{
	struct dpq_conn_conf cc = { 0 };
	unsigned int i;
	int rc = 0;

	if (dpqd_fec_conn_conf(c, &cc) != 0)
		return -EINVAL;		/* checked by the config already */
	for (i = 0; i < d->nshards; i++) {
		d->sh[i].mb->op = DPQD_OP_FEC;
		d->sh[i].mb->conn = cc;
		if (dpqd_shardctl_call(d, i, DPQD_SHARD_WAIT_MS) != 0 &&
		    rc == 0)
			rc = -ETIMEDOUT;
	}
	return rc;
}

/* A named argument as text; NULL when absent. */
static const char *
named(struct dpq_ctl_req *req, const char *name, char *buf, size_t n)
{
	const json_t *v = dpq_json_get(req->args, name);

	if (v == NULL)
		return NULL;
	if (json_is_string(v)) {
		snprintf(buf, n, "%s", json_string_value(v));
		return buf;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT,
			json_integer_value(v));
		return buf;
	}
	return "";
}

static void
show(struct dpq_ctl_req *req, const struct dpq_conf *c)
{
	dpq_json_w_ku64(req->reply, "max_group", c->fec.max_group);
	dpq_json_w_kstr(req->reply, "policy", c->fec.policy);
	dpq_json_w_kstr(req->reply, "xor", dpq_xor_active->name);
	dpq_json_w_kstr(req->reply, "spec_retx", c->fec.spec_retx);
	dpq_json_w_kstr(req->reply, "cc", c->fec.cc != NULL ? c->fec.cc :
			"guarded");
	dpq_json_w_kstr(req->reply, "extension", c->fec.max_group > 0 ?
			"offered" : "off");
}

int
dpqd_cmd_fec(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct dpq_fec_policy p;
	char pbuf[64], gbuf[32], ibuf[32], err[DPQ_CONF_ERR_MAX], *end;
	const char *pv = named(req, "policy", pbuf, sizeof(pbuf));
	const char *gv = named(req, "max_group", gbuf, sizeof(gbuf));
	const char *iv = named(req, "id", ibuf, sizeof(ibuf));
	char sbuf[64];
	const char *sv = named(req, "spec", sbuf, sizeof(sbuf));
	uint64_t g = d->conf.fec.max_group, h;
	unsigned int shard;
	int rc;

	if (pv == NULL && gv == NULL && iv == NULL && sv == NULL) {
		show(req, &d->conf);
		return 0;
	}
	if (pv != NULL && dpq_fec_policy_parse(pv, &p) != 0)
		return dpq_ctl_req_error(req, "fec: policy \"%s\": expected "
			"off, fixed[:K] or adaptive[:MIN-MAX] (K, MIN <= MAX "
			"in %d..%d)", pv, DPQ_FEC_MIN_GROUP,
			DPQ_FEC_GROUP_LIMIT);
	if (iv != NULL) {
		/* One connection: its policy from now on. */
		if (pv == NULL || gv != NULL || sv != NULL)
			return dpq_ctl_req_error(req, "fec: with id=ID give "
				"policy=P only (a connection's max_group was "
				"announced in its handshake)");
		errno = 0;
		h = strtoull(iv, &end, 16);
		if (errno != 0 || end == iv || *end != '\0' ||
		    dpq_hs_handle_shard(h) >= d->nshards)
			return dpq_ctl_req_error(req, "fec: \"%s\" is not a "
				"connection id (hex, from `dpquic-ctl "
				"connections`)", iv);
		shard = dpq_hs_handle_shard(h);
		d->sh[shard].mb->op = DPQD_OP_FEC_CONN;
		d->sh[shard].mb->handle = h;
		d->sh[shard].mb->fec = p;
		rc = dpqd_shardctl_call(d, shard, DPQD_SHARD_WAIT_MS);
		if (rc == -ENOENT)
			return dpq_ctl_req_error(req, "fec: no connection "
				"%" PRIx64 " (closed already?)", h);
		if (rc != 0)
			return dpq_ctl_req_error(req, "fec: shard %u: %s",
				shard, dpqd_shardctl_strerror(d, shard, rc));
		dpq_json_w_kstr(req->reply, "connection", iv);
		dpq_json_w_kstr(req->reply, "policy", pv);
		DLOG(NOTICE, "connection %" PRIx64 ": XOR-FEC policy %s "
			"(pid %d)\n", h, pv, (int)req->pid);
		return 0;
	}
	if (gv != NULL && (dpq_conf_parse_u64(gv, &g) != 0 ||
	    g > DPQ_FEC_GROUP_LIMIT))
		return dpq_ctl_req_error(req, "fec: max_group \"%s\": expected "
			"0 (extension off) to %d", gv, DPQ_FEC_GROUP_LIMIT);
	/* Through the config table, so `config` shows the running value. */
	if (pv != NULL && dpq_conf_set(&d->conf, "fec.policy", pv,
			DPQ_CONF_CLI, err, sizeof(err)) != 0)
		return dpq_ctl_req_error(req, "fec: %s", err);
	if (gv != NULL && dpq_conf_set(&d->conf, "fec.max-group", gv,
			DPQ_CONF_CLI, err, sizeof(err)) != 0)
		return dpq_ctl_req_error(req, "fec: %s", err);
	if (sv != NULL && dpq_conf_set(&d->conf, "fec.spec-retx", sv,
			DPQ_CONF_CLI, err, sizeof(err)) != 0)
		return dpq_ctl_req_error(req, "fec: %s", err);
	if (dpqd_fec_apply(d, &d->conf) != 0)
		return dpq_ctl_req_error(req, "fec: a shard did not answer; "
			"the others apply it");
	DLOG(NOTICE, "XOR-FEC for new connections: max_group %" PRIu64
		", policy %s, speculative retransmission %s (pid %d)\n",
		d->conf.fec.max_group, d->conf.fec.policy,
		d->conf.fec.spec_retx, (int)req->pid);
	show(req, &d->conf);
	return 0;
}
