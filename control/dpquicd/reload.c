/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reload (SIGHUP, `dpquic-ctl reload`): build the configuration again
 * (file, then the command line's overrides), compare it key by key with
 * the running one, apply the keys marked DPQ_CONF_F_RELOAD and report the
 * others that changed as needing a restart. A configuration with an error
 * changes nothing: the daemon keeps running with the old one and says
 * why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/dpquicd/dpquicd.h"

#define LIST_MAX 1024

struct diff {
	const struct dpq_conf *old, *new;
	char applied[LIST_MAX], restart[LIST_MAX];
	bool tls, log, retry, fec, qlog, srvcfg;
};

static void
add(char *list, const char *s, const char *k)
{
	size_t n = strlen(list);

	snprintf(list + n, LIST_MAX - n, "%s%s.%s", n ? " " : "", s, k);
}

static void
diff_one(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k)
{
	struct diff *df = arg;
	char a[1024], b[1024];

	dpq_conf_format(df->old, k, a, sizeof(a));
	dpq_conf_format(df->new, k, b, sizeof(b));
	if (strcmp(a, b) == 0)
		return;
	if (!(k->flags & DPQ_CONF_F_RELOAD)) {
		add(df->restart, s->name, k->name);
		return;
	}
	add(df->applied, s->name, k->name);
	if (strcmp(s->name, "tls") == 0)
		df->tls = true;
	else if (strcmp(s->name, "log") == 0)
		df->log = true;
	else if (strcmp(s->name, "server") == 0 &&
		 strcmp(k->name, "retry") == 0)
		df->retry = true;
	else if (strcmp(s->name, "fec") == 0)
		df->fec = true;
	else if (strcmp(s->name, "qlog") == 0)
		df->qlog = true;
	else if (strcmp(s->name, "tickets") == 0 ||
		 strcmp(s->name, "tokens") == 0)
		df->srvcfg = true;
}

/* A new TLS context from c's certificate; handed to the management
 * thread, which switches new handshakes to it. */
static int
reload_tls(struct dpqd *d, const struct dpq_conf *c, char *err, size_t n)
{
	struct dpq_tls_ctx *tls;
	int rc;

	rc = dpqd_tls_create(c, &tls, err, n);
	if (rc != 0)
		return rc;
	rc = dpq_mgmt_set_server_ctx(d->mgmt, tls);
	if (rc != 0) {
		dpq_tls_ctx_destroy(tls);
		snprintf(err, n, "the previous certificate change is still "
			"being applied: try again in a moment");
		return rc;
	}
	/* The management thread owns every server context from now on. */
	d->tls = NULL;
	return 0;
}

static void
reply_list(struct dpq_ctl_req *req, const char *key, const char *list)
{
	char buf[LIST_MAX], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	dpq_json_w_key(req->reply, key);
	dpq_json_w_arr_begin(req->reply);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	     tok = strtok_r(NULL, " ", &save))
		dpq_json_w_str(req->reply, tok);
	dpq_json_w_arr_end(req->reply);
}

struct keep {
	struct dpq_conf *run, *old;
};

static void
keep_one(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k)
{
	struct keep *kp = arg;

	(void)s;
	if (!(k->flags & DPQ_CONF_F_RELOAD))
		dpq_conf_swap(kp->run, kp->old, k);
}

/* run takes old's values of the keys a reload does not apply. */
static void
keep_restart(struct dpq_conf *run, struct dpq_conf *old)
{
	struct keep kp = { run, old };

	dpq_conf_foreach(keep_one, &kp);
}

/* A reload that fails changes nothing: the new config is dropped and
 * the old one stays, which the log and the control reply both say. */
static int
reload_failed(struct dpq_conf *nc, struct dpq_ctl_req *req, const char *err,
		int rc)
{
	dpq_conf_free(nc);
	DLOG(ERR, "reload failed, still running with the previous "
		"configuration: %s\n", err);
	if (req != NULL)
		return dpq_ctl_req_error(req, "reload: %s (still running with "
			"the previous configuration)", err);
	return rc;
}

int
dpqd_reload(struct dpqd *d, struct dpq_ctl_req *req)
{
	struct dpq_conf nc;
	struct diff df;
	char err[DPQ_CONF_ERR_MAX];
	int rc;

	if (d->config_path == NULL) {
		DLOG(WARNING, "reload: no config file (-c FILE) to re-read: "
			"nothing changed\n");
		if (req != NULL)
			return dpq_ctl_req_error(req, "reload: dpquicd runs "
				"without a config file (-c FILE): nothing to "
				"re-read");
		return 0;
	}
	rc = dpqd_conf_build(d, &nc, err, sizeof(err));
	if (rc != 0)
		return reload_failed(&nc, req, err, rc);
	memset(&df, 0, sizeof(df));
	df.old = &d->conf;
	df.new = &nc;
	dpq_conf_foreach(diff_one, &df);
	if (df.tls) {
		rc = reload_tls(d, &nc, err, sizeof(err));
		if (rc != 0)
			return reload_failed(&nc, req, err, rc);
	}
	if (df.srvcfg) {
		/* A new server config version (0-RTT and token policy);
		 * the key files are read by rotate-keys, not here. */
		rc = dpqd_srvcfg_reload(d, &nc, err, sizeof(err));
		if (rc != 0)
			return reload_failed(&nc, req, err, rc);
	}
	if (df.log)
		dpqd_log_apply(&nc);
	if (df.fec)
		dpqd_fec_apply(d, &nc);
	if (df.qlog)
		dpqd_qlog_apply(d, &nc);
	if (df.retry) {
		enum dpq_retry_policy p;
		uint32_t rate;
		unsigned int i;

		dpqd_retry_parse(nc.server.retry, &p, &rate);
		for (i = 0; i < d->nshards; i++) {
			d->sh[i].mb->op = DPQD_OP_RETRY;
			d->sh[i].mb->code = p;
			d->sh[i].mb->rate = rate;
			dpqd_shardctl_call(d, i, DPQD_SHARD_WAIT_MS);
		}
	}
	/* Keep the running values of keys that need a restart, so that
	 * `dpquic-ctl config` shows what runs, and the next reload reports
	 * them again. */
	{
		struct dpq_conf run = nc;

		memset(&nc, 0, sizeof(nc));
		keep_restart(&run, &d->conf);
		dpq_conf_free(&d->conf);
		d->conf = run;
	}
	DLOG(NOTICE, "reloaded %s: applied: %s; need a restart: %s\n",
		d->conf.file, df.applied[0] ? df.applied : "nothing changed",
		df.restart[0] ? df.restart : "none");
	if (req != NULL) {
		dpq_json_w_kstr(req->reply, "file", d->conf.file);
		reply_list(req, "applied", df.applied);
		reply_list(req, "need_restart", df.restart);
	}
	return 0;
}
