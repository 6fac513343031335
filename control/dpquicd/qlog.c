/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-connection qlog files ([qlog] section, `dpquic-ctl qlog`).
 *
 * The shard side does no I/O: a traced connection's hook copies each
 * 64-byte trace record (dataplane/quic/trace.h), tagged with the
 * connection's handle, into its shard's ring (single producer: the shard;
 * single consumer: the control loop). A full ring drops the record and
 * counts it; the shard never waits. The control loop (dpqd_qlog_poll, on
 * the main lcore between control-socket polls) drains the rings and
 * formats the records with control/qlog into DIR/dpquicd-ID.sqlog.
 *
 * A file is closed by `qlog ID off`, at exit, or when its connection has
 * been quiet for DPQD_QLOG_IDLE_US (a closed connection sends nothing
 * more); records of a connection that resume later reopen it in append
 * mode without a second header, unless DPQD_QLOG_FORGET_US passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "control/dpquicd/dpquicd.h"
#include "control/qlog/qlog.h"

#define DPQD_QLOG_RING		8192	/* records per shard */
#define DPQD_QLOG_BURST		256	/* records per dequeue */
#define DPQD_QLOG_IDLE_US	(10 * 1000000ull)
/* A closed file's entry is forgotten after this long without records
 * (its connection is gone: idle timeouts are far shorter); records after
 * that start the file anew. */
#define DPQD_QLOG_FORGET_US	(300 * 1000000ull)

/* One ring element: 80 bytes (rte_ring elements are multiples of 4). */
struct qlog_rec {
	uint64_t handle;
	uint64_t pad;
	struct dpq_trace_ev ev;
};

/* Open files, main lcore only. */
struct qlog_file {
	uint64_t handle;
	FILE *f;
	struct dpq_qlog q;
	uint64_t last_us;	/* control loop time of the last record */
	uint64_t records;
	bool started;		/* header written */
	bool used;
};

static struct qlog_file files[DPQD_MAX_SHARDS * DPQD_QLOG_TRACED];

static void
trace_fn(void *ctx, const struct dpq_trace_ev *ev)
{
	struct dpqd_qtrace *t = ctx;
	struct qlog_rec r;

	r.handle = t->handle;
	r.pad = 0;
	r.ev = *ev;
	if (rte_ring_sp_enqueue_elem(t->qs->ring, &r, sizeof(r)) != 0)
		__atomic_fetch_add(&t->qs->dropped, 1, __ATOMIC_RELAXED);
}

/* ---- shard side (its lcore) ------------------------------------------------ */

static struct dpqd_qtrace *
find_trace(struct dpqd_qlog_shard *qs, uint64_t handle)
{
	unsigned int i;

	for (i = 0; i < DPQD_QLOG_TRACED; i++)
		if (qs->t[i].used && qs->t[i].handle == handle)
			return &qs->t[i];
	return NULL;
}

bool
dpqd_qlog_traced(const struct dpqd_shard *s, uint64_t handle)
{
	return s->qlog != NULL && find_trace(s->qlog, handle) != NULL;
}

int
dpqd_qlog_attach(struct dpqd_shard *s, struct dpq_conn *c)
{
	struct dpqd_qlog_shard *qs = s->qlog;
	uint64_t h = dpq_shard_conn_handle(s->shard, c);
	struct dpqd_qtrace *t = NULL;
	unsigned int i;

	if (qs == NULL)
		return -ENODEV;
	if (find_trace(qs, h) != NULL)
		return -EALREADY;
	for (i = 0; i < DPQD_QLOG_TRACED && t == NULL; i++) {
		struct dpqd_qtrace *x = &qs->t[i];

		/* a slot whose connection is gone is free again */
		if (x->used && dpq_shard_conn_by_handle(s->shard,
				x->handle) == NULL)
			x->used = false;
		if (!x->used)
			t = x;
	}
	if (t == NULL)
		return -ENOSPC;
	t->qs = qs;
	t->handle = h;
	t->used = true;
	dpq_conn_set_trace(c, trace_fn, t);
	return 0;
}

int
dpqd_qlog_detach(struct dpqd_shard *s, struct dpq_conn *c)
{
	struct dpqd_qtrace *t;

	if (s->qlog == NULL)
		return -ENOENT;
	t = find_trace(s->qlog, dpq_shard_conn_handle(s->shard, c));
	if (t == NULL)
		return -ENOENT;
	dpq_conn_set_trace(c, NULL, NULL);
	t->used = false;
	return 0;
}

/* The shard's conn_ctx hook: the app's context, and the sample. */
void *
dpqd_conn_ctx(void *arg, struct dpq_conn *c)
{
	struct dpqd_shard *s = arg;
	struct dpqd_qlog_shard *qs = s->qlog;

	if (qs != NULL) {
		uint32_t n = __atomic_load_n(&qs->sample, __ATOMIC_RELAXED);

		if (n > 0 && ++qs->sample_ctr >= n) {
			qs->sample_ctr = 0;
			(void)dpqd_qlog_attach(s, c);	/* full: not traced */
		}
	}
	return dpq_app_conn_ctx(s->apps, c);
}

void
dpqd_conn_ctx_free(void *arg, struct dpq_conn *c, void *ctx)
{
	struct dpqd_shard *s = arg;

	dpq_app_conn_ctx_free(s->apps, c, ctx);
}

/* ---- control loop (main lcore) --------------------------------------------- */

int
dpqd_qlog_init(struct dpqd *d)
{
	unsigned int i;

	for (i = 0; i < d->nshards; i++) {
		struct dpqd_qlog_shard *qs;
		char name[RTE_RING_NAMESIZE];

		qs = calloc(1, sizeof(*qs));
		if (qs == NULL)
			return -ENOMEM;
		snprintf(name, sizeof(name), "dpqd_qlog_%u", i);
		qs->ring = rte_ring_create_elem(name, sizeof(struct qlog_rec),
			DPQD_QLOG_RING, SOCKET_ID_ANY,
			RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (qs->ring == NULL) {
			free(qs);
			return -rte_errno;
		}
		qs->sample = (uint32_t)d->conf.qlog.sample;
		d->sh[i].qlog = qs;
	}
	return 0;
}

static struct qlog_file *
file_find(uint64_t handle)
{
	unsigned int i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (files[i].used && files[i].handle == handle)
			return &files[i];
	return NULL;
}

void
dpqd_qlog_path(const struct dpqd *d, uint64_t handle, char *buf, size_t n)
{
	snprintf(buf, n, "%s/dpquicd-%" PRIx64 ".sqlog", d->conf.qlog.dir,
		handle);
}

/* The file of handle, opened (created, 0640) if needed; NULL on failure. */
static struct qlog_file *
file_get(struct dpqd *d, uint64_t handle, char *err, size_t n)
{
	struct qlog_file *qf = file_find(handle);
	char path[4096];
	unsigned int i;
	int fd;

	if (qf != NULL && qf->f != NULL)
		return qf;
	if (d->conf.qlog.dir == NULL || d->conf.qlog.dir[0] == '\0') {
		snprintf(err, n, "no qlog directory: set qlog.dir in the "
			"config (or --qlog-dir DIR) and reload");
		return NULL;
	}
	if (qf == NULL) {
		for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (!files[i].used) {
				qf = &files[i];
				break;
			}
		if (qf == NULL) {
			snprintf(err, n, "too many qlog files open (%zu)",
				sizeof(files) / sizeof(files[0]));
			return NULL;
		}
		memset(qf, 0, sizeof(*qf));
	}
	dpqd_qlog_path(d, handle, path, sizeof(path));
	/* no symlink games in a shared directory */
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
		(qf->started ? O_APPEND : O_TRUNC), 0640);
	if (fd < 0) {
		snprintf(err, n, "cannot write %.180s: %s", path,
			strerror(errno));
		if (!qf->started)
			qf->used = false;
		return NULL;
	}
	qf->f = fdopen(fd, qf->started ? "a" : "w");
	if (qf->f == NULL) {
		close(fd);
		snprintf(err, n, "cannot write %.180s: %s", path,
			strerror(errno));
		return NULL;
	}
	qf->handle = handle;
	qf->used = true;
	qf->last_us = dpqd_now_us();
	return qf;
}

static void
file_close(struct qlog_file *qf, bool forget)
{
	if (qf->f != NULL)
		fclose(qf->f);
	qf->f = NULL;
	if (forget)
		qf->used = false;
}

static void
file_write(struct dpqd *d, const struct qlog_rec *r)
{
	struct qlog_file *qf;
	char err[256];

	qf = file_get(d, r->handle, err, sizeof(err));
	if (qf == NULL) {
		static uint64_t last_warn;

		/* at most one warning a minute: records come fast */
		if (dpqd_now_us() - last_warn > 60 * 1000000ull) {
			last_warn = dpqd_now_us();
			DLOG(WARNING, "qlog: %s\n", err);
		}
		return;
	}
	if (!qf->started) {
		struct dpq_qlog_conf qc = {
			.title = "dpquicd", .server = true,
			.reference_us = r->ev.time_us,
		};

		dpq_qlog_write_start(&qf->q, &qc, qf->f);
		qf->started = true;
	}
	dpq_qlog_write(&qf->q, &r->ev, qf->f);
	qf->records++;
	qf->last_us = dpqd_now_us();
}

/* Write what shard i queued: everything there was when called (at most
 * one ring's worth, so a shard that keeps producing cannot hold the
 * control loop). The loop may poll only every 20 ms (its socket wait):
 * one burst per poll would let a busy connection fill the ring, and the
 * shard would drop whole stretches of records. Returns records written. */
static unsigned int
drain_shard(struct dpqd *d, struct dpqd_qlog_shard *qs)
{
	struct qlog_rec r[DPQD_QLOG_BURST];
	unsigned int k, n, total = 0;

	do {
		n = rte_ring_sc_dequeue_burst_elem(qs->ring, r, sizeof(r[0]),
			DPQD_QLOG_BURST, NULL);
		for (k = 0; k < n; k++)
			file_write(d, &r[k]);
		total += n;
	} while (n == DPQD_QLOG_BURST && total < DPQD_QLOG_RING);
	return total;
}

void
dpqd_qlog_poll(struct dpqd *d)
{
	uint64_t now = dpqd_now_us();
	unsigned int i;
	bool wrote = false;

	for (i = 0; i < d->nshards; i++) {
		struct dpqd_qlog_shard *qs = d->sh[i].qlog;

		if (qs == NULL)
			continue;
		wrote |= drain_shard(d, qs) > 0;
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct qlog_file *qf = &files[i];

		if (!qf->used)
			continue;
		if (qf->f == NULL) {
			if (now - qf->last_us > DPQD_QLOG_FORGET_US)
				qf->used = false;
			continue;
		}
		if (wrote)
			fflush(qf->f);
		if (now - qf->last_us > DPQD_QLOG_IDLE_US)
			file_close(qf, false);
	}
}

void
dpqd_qlog_apply(struct dpqd *d, const struct dpq_conf *c)
{
	unsigned int i;

	for (i = 0; i < d->nshards; i++)
		if (d->sh[i].qlog != NULL)
			__atomic_store_n(&d->sh[i].qlog->sample,
				(uint32_t)c->qlog.sample, __ATOMIC_RELAXED);
}

void
dpqd_qlog_fini(struct dpqd *d)
{
	unsigned int i;

	if (d->sh[0].qlog == NULL)
		return;		/* never started (EAL or set-up failed) */
	dpqd_qlog_poll(d);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (files[i].used)
			file_close(&files[i], true);
	for (i = 0; i < DPQD_MAX_SHARDS; i++) {
		if (d->sh[i].qlog == NULL)
			continue;
		rte_ring_free(d->sh[i].qlog->ring);
		free(d->sh[i].qlog);
		d->sh[i].qlog = NULL;
	}
}

/* ---- the command ------------------------------------------------------------- */

static uint64_t
total_dropped(const struct dpqd *d)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < d->nshards; i++)
		if (d->sh[i].qlog != NULL)
			n += __atomic_load_n(&d->sh[i].qlog->dropped,
				__ATOMIC_RELAXED);
	return n;
}

static void
w_files(struct dpqd *d, struct dpq_json_w *w)
{
	char h[32], path[4096];
	unsigned int i;

	dpq_json_w_key(w, "files");
	dpq_json_w_arr_begin(w);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!files[i].used)
			continue;
		snprintf(h, sizeof(h), "%" PRIx64, files[i].handle);
		dpqd_qlog_path(d, files[i].handle, path, sizeof(path));
		dpq_json_w_obj_begin(w);
		dpq_json_w_kstr(w, "id", h);
		dpq_json_w_kstr(w, "file", path);
		dpq_json_w_ku64(w, "records", files[i].records);
		dpq_json_w_kbool(w, "open", files[i].f != NULL);
		dpq_json_w_obj_end(w);
	}
	dpq_json_w_arr_end(w);
}

/*
 * Argument `name`, else positional pos, as text (dpquic-ctl sends an ID
 * of decimal digits as an integer: its digits are still hexadecimal).
 */
static const char *
arg_text(const json_t *args, const char *name, const json_t *a,
		unsigned int pos, char *buf, size_t n)
{
	const json_t *v = dpq_json_get(args, name);

	if (v == NULL && json_is_array(a))
		v = json_array_get(a, pos);
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT,
			json_integer_value(v));
	else
		return NULL;
	return buf;
}

/*
 * qlog                 the settings and the files written
 * qlog ID on|off       trace one connection, or stop
 */
int
dpqd_cmd_qlog(struct dpq_ctl_req *req, void *arg)
{
	struct dpqd *d = arg;
	const json_t *a = dpq_json_get(req->args, "args");
	char *end, err[256], path[4096], idbuf[32], wbuf[8];
	const char *ids, *what;
	struct qlog_file *qf;
	uint64_t handle;
	unsigned int sh;
	bool on;
	int rc;

	ids = arg_text(req->args, "id", a, 0, idbuf, sizeof(idbuf));
	what = arg_text(req->args, "state", a, 1, wbuf, sizeof(wbuf));
	if (ids == NULL && what == NULL) {
		dpq_json_w_kstr(req->reply, "dir", d->conf.qlog.dir);
		dpq_json_w_ku64(req->reply, "sample", d->conf.qlog.sample);
		dpq_json_w_ku64(req->reply, "dropped", total_dropped(d));
		w_files(d, req->reply);
		return 0;
	}
	if (ids == NULL || what == NULL ||
	    (strcmp(what, "on") != 0 && strcmp(what, "off") != 0))
		return dpq_ctl_req_error(req, "qlog: usage: qlog ID on|off "
			"(ID from `dpquic-ctl connections`)");
	on = strcmp(what, "on") == 0;
	errno = 0;
	handle = strtoull(ids, &end, 16);
	if (errno != 0 || end == ids || *end != '\0')
		return dpq_ctl_req_error(req, "qlog: \"%s\" is not a "
			"connection ID (hexadecimal, from `dpquic-ctl "
			"connections`)", ids);
	sh = dpq_hs_handle_shard(handle);
	if (sh >= d->nshards)
		return dpq_ctl_req_error(req, "qlog %s: no connection (no "
			"shard %u)", ids, sh);
	if (on && (qf = file_get(d, handle, err, sizeof(err))) == NULL)
		return dpq_ctl_req_error(req, "qlog %s on: %s", ids, err);
	d->sh[sh].mb->op = on ? DPQD_OP_QLOG_ON : DPQD_OP_QLOG_OFF;
	d->sh[sh].mb->handle = handle;
	rc = dpqd_shardctl_call(d, sh, DPQD_SHARD_WAIT_MS);
	if (rc == -ENOENT && on) {
		qf = file_find(handle);
		if (qf != NULL && qf->records == 0) {
			file_close(qf, true);
			dpqd_qlog_path(d, handle, path, sizeof(path));
			unlink(path);
		}
		return dpq_ctl_req_error(req, "qlog %s on: no connection "
			"(closed already?)", ids);
	}
	if (rc == -ENOENT)
		return dpq_ctl_req_error(req, "qlog %s off: not traced", ids);
	if (rc == -ENOSPC)
		return dpq_ctl_req_error(req, "qlog %s on: shard %u traces %d "
			"connections already", ids, sh, DPQD_QLOG_TRACED);
	if (rc != 0 && rc != -EALREADY)
		return dpq_ctl_req_error(req, "qlog %s: shard %u: %s", ids,
			sh, dpqd_shardctl_strerror(d, sh, rc));
	if (!on) {
		/* What the shard queued before the hook went away: all of it
		 * (the shard detached before it answered, so nothing of this
		 * connection follows). A record left in the ring would reopen
		 * the forgotten file from scratch and overwrite it. One
		 * drain takes them all: they are ahead of anything newer,
		 * and it stops only at an empty ring or a ring's worth. */
		dpqd_qlog_poll(d);
		qf = file_find(handle);
		if (qf != NULL)
			file_close(qf, true);
	}
	dpqd_qlog_path(d, handle, path, sizeof(path));
	dpq_json_w_kstr(req->reply, "connection", ids);
	dpq_json_w_kstr(req->reply, "qlog", on ? "on" : "off");
	dpq_json_w_kstr(req->reply, "file", path);
	return 0;
}
