/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server config in the daemon (control/mgmt/srvcfg.h): built from the
 * [tickets] and [tokens] sections, applied to each shard when a version
 * arrives (on the shard's lcore, from its handshake ring), changed by a
 * reload, and the control commands `rotate-keys` and `keys`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "control/dpquicd/dpquicd.h"

/* How long `rotate-keys` waits for the management thread and then for
 * the shards to take the new version. */
#define ROTATE_WAIT_MS	2000

void
dpqd_srvcfg_policy(const struct dpq_conf *c, struct dpq_srvcfg_policy *p)
{
	struct dpq_conn_conf in = { 0 }, cc;

	memset(p, 0, sizeof(*p));
	p->ticket_lifetime_s = (uint32_t)(c->tickets.lifetime + 0.5);
	p->early_data = c->tickets.early_data;
	p->max_early_data = c->tickets.max_early_data;
	p->replay_window_ms = (uint32_t)(c->tickets.replay_window * 1000);
	p->replay_entries = (uint32_t)c->tickets.replay_entries;
	p->new_token = c->tokens.new_token;
	p->token_lifetime_us = (uint64_t)(c->tokens.lifetime * 1e6);
	p->retry_token_lifetime_us = (uint64_t)(c->tokens.retry_lifetime * 1e6);
	p->token_v4_prefix = (uint8_t)c->tokens.v4_prefix;
	p->token_v6_prefix = (uint8_t)c->tokens.v6_prefix;
	/* What the shards' connections announce (RFC 9000 §7.4.1): the
	 * values 0-RTT clients remember. */
	in.role = DPQ_ROLE_SERVER;
	in.idle_timeout_ms = c->server.idle_timeout_ms;
	dpq_conn_conf_fill(&cc, &in);
	p->tp.initial_max_data = cc.max_data;
	p->tp.initial_max_stream_data_bidi_local = cc.max_stream_data;
	p->tp.initial_max_stream_data_bidi_remote = cc.max_stream_data;
	p->tp.initial_max_stream_data_uni = cc.max_stream_data;
	p->tp.initial_max_streams_bidi = cc.max_streams_bidi;
	p->tp.initial_max_streams_uni = cc.max_streams_uni;
}

int
dpqd_srvcfg_create(const struct dpq_conf *c, struct dpq_srvcfg **out,
		char *err, size_t n)
{
	struct dpq_srvcfg_conf sc;

	dpq_srvcfg_conf_default(&sc);
	sc.ticket_key_file = c->tickets.key_file;
	sc.token_key_file = c->tokens.key_file;
	sc.ticket_rotation_s = (uint64_t)c->tickets.rotation;
	sc.token_rotation_s = (uint64_t)c->tokens.rotation;
	dpqd_srvcfg_policy(c, &sc.policy);
	return dpq_srvcfg_create(&sc, (uint64_t)time(NULL), out, err, n);
}

/* A version's token keys and policies into a shard's listener and loop:
 * the same path for the first version (set-up) and later ones. */
static void
apply(struct dpqd_shard *r, const struct dpq_hs_config *cfg)
{
	struct dpq_tokens *t = dpq_listener_tokens(r->listener);
	struct dpq_token_cfg tc;

	if (t != NULL) {
		dpq_tokens_set_keys(t, cfg->token_id[0], cfg->token_key[0],
				cfg->token_id[1], cfg->token_has_prev ?
				cfg->token_key[1] : NULL);
		tc = *dpq_tokens_cfg(t);
		tc.new_lifetime = cfg->token_lifetime_us;
		tc.retry_lifetime = cfg->retry_token_lifetime_us;
		tc.new_v4_prefix = cfg->token_v4_prefix;
		tc.new_v6_prefix = cfg->token_v6_prefix;
		dpq_tokens_set_cfg(t, &tc);
	}
	if (r->shard != NULL) {
		dpq_shard_set_new_token(r->shard, cfg->new_token);
		dpq_shard_set_max_early_data(r->shard, cfg->max_early_data);
	}
	__atomic_store_n(&r->config_version, cfg->version, __ATOMIC_RELEASE);
}

void
dpqd_on_config(void *arg, const struct dpq_hs_config *cfg)
{
	apply(arg, cfg);
}

void
dpqd_srvcfg_apply_first(struct dpqd_shard *r,
		const struct dpq_srvcfg_version *v)
{
	struct dpq_hs_config cfg;

	dpq_mgmt_hs_config(v, &cfg);
	apply(r, &cfg);
	explicit_bzero(&cfg, sizeof(cfg));
}

/* ---- control commands ------------------------------------------------- */

static void
w_info(struct dpqd *d, struct dpq_json_w *w,
		const struct dpq_mgmt_srvcfg_info *in)
{
	unsigned int i;

	dpq_json_w_ku64(w, "version", in->version);
	dpq_json_w_key(w, "tickets");
	dpq_json_w_obj_begin(w);
	dpq_json_w_kstr(w, "current", in->stek_name[0]);
	dpq_json_w_kstr(w, "previous", in->stek_name[1]);
	dpq_json_w_kstr(w, "key_file", d->conf.tickets.key_file ?
			d->conf.tickets.key_file : "");
	dpq_json_w_kbool(w, "early_data", in->policy.early_data);
	dpq_json_w_ku64(w, "lifetime_s", in->policy.ticket_lifetime_s);
	dpq_json_w_obj_end(w);
	dpq_json_w_key(w, "tokens");
	dpq_json_w_obj_begin(w);
	dpq_json_w_kstr(w, "current", in->token_name[0]);
	dpq_json_w_kstr(w, "previous", in->token_name[1]);
	dpq_json_w_kstr(w, "key_file", d->conf.tokens.key_file ?
			d->conf.tokens.key_file : "");
	dpq_json_w_kbool(w, "new_token", in->policy.new_token);
	dpq_json_w_obj_end(w);
	dpq_json_w_ku64(w, "rotations", in->rotations);
	dpq_json_w_ku64(w, "scheduled_rotations", in->scheduled);
	dpq_json_w_key(w, "shards_version");
	dpq_json_w_arr_begin(w);
	for (i = 0; i < d->nshards; i++)
		dpq_json_w_u64(w, __atomic_load_n(&d->sh[i].config_version,
				__ATOMIC_ACQUIRE));
	dpq_json_w_arr_end(w);
}

static int
cmd_keys(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct dpq_mgmt_srvcfg_info in;

	if (dpq_mgmt_srvcfg_info(d->mgmt, &in) != 0)
		return dpq_ctl_req_error(req, "keys: no server config");
	w_info(d, req->reply, &in);
	return 0;
}

/* Worker shards take a version on their next poll; a shard polled by the
 * main lcore (this thread) takes it after this command returns. */
static void
wait_shards(struct dpqd *d, uint64_t version)
{
	struct timespec ts = { 0, 1000000 };
	unsigned int i, waited = 0;

	for (i = 0; i < d->nshards; i++) {
		if (d->sh[i].on_main)
			continue;
		while (__atomic_load_n(&d->sh[i].config_version,
				__ATOMIC_ACQUIRE) < version &&
		       waited++ < ROTATE_WAIT_MS)
			nanosleep(&ts, NULL);
	}
}

static int
cmd_rotate_keys(struct dpq_ctl_req *req, void *arg_)
{
	struct dpqd *d = arg_;
	struct dpq_mgmt_srvcfg_info in;
	char err[DPQ_SRVCFG_ERR_MAX], buf[32];
	const json_t *v = dpq_json_get(req->args, "what");
	const json_t *a = dpq_json_get(req->args, "args");
	const char *what = "all";
	unsigned int mask;
	int rc;

	if (v == NULL && json_is_array(a))
		v = json_array_get(a, 0);	/* NULL when empty */
	if (json_is_string(v)) {
		snprintf(buf, sizeof(buf), "%s", json_string_value(v));
		what = buf;
	}
	if (strcmp(what, "all") == 0)
		mask = DPQ_SRVCFG_TICKETS | DPQ_SRVCFG_TOKENS;
	else if (strcmp(what, "tickets") == 0)
		mask = DPQ_SRVCFG_TICKETS;
	else if (strcmp(what, "tokens") == 0)
		mask = DPQ_SRVCFG_TOKENS;
	else
		return dpq_ctl_req_error(req, "rotate-keys: \"%s\": expected "
			"tickets, tokens or all", what);
	rc = dpq_mgmt_rotate_keys(d->mgmt, mask, ROTATE_WAIT_MS, err,
			sizeof(err));
	if (rc != 0)
		return dpq_ctl_req_error(req, "rotate-keys: %s", err);
	dpq_mgmt_srvcfg_info(d->mgmt, &in);
	wait_shards(d, in.version);
	DLOG(NOTICE, "keys rotated (%s) by the operator (pid %d): server "
		"config version %" PRIu64 ", ticket key %s, token key %s\n",
		what, (int)req->pid, in.version, in.stek_name[0],
		in.token_name[0]);
	w_info(d, req->reply, &in);
	return 0;
}

int
dpqd_keys_register(struct dpqd *d)
{
	int rc;

	rc = dpq_ctl_register(d->ctl, "rotate-keys", cmd_rotate_keys, d,
		"[tickets|tokens|all] new current session-ticket and token "
		"keys (the key files read again, else random); the current "
		"ones stay accepted as previous");
	if (rc == 0)
		rc = dpq_ctl_register(d->ctl, "keys", cmd_keys, d,
			"server config version, key names (not the keys), "
			"0-RTT and NEW_TOKEN policy");
	return rc;
}

int
dpqd_srvcfg_reload(struct dpqd *d, const struct dpq_conf *c, char *err,
		size_t n)
{
	struct dpq_srvcfg_policy p;

	dpqd_srvcfg_policy(c, &p);
	return dpq_mgmt_set_policy(d->mgmt, &p, ROTATE_WAIT_MS, err, n);
}
