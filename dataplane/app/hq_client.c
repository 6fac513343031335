/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hq-interop client (see hq_client.h): request scheduling within the
 * peer's stream limit, body delivery, per-request timing and SHA-256.
 *
 * Re-entrancy: dpq_conn_stream_read() may run on_stream_closed before it
 * returns; opening new streams from there is deferred to the end of the
 * outermost callback (depth counts nested callbacks).
 */
#include <errno.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "dataplane/app/hq_client.h"
#include "dataplane/app/hq_server.h"

#define NO_STREAM	UINT64_MAX
#define READ_BUF	16384

struct hq_req {
	struct dpq_hq_result r;
	uint64_t stream;		/* NO_STREAM until opened */
	gnutls_hash_hd_t hash;
	uint16_t req_len, req_sent;	/* request bytes written */
	bool started, done;
};

struct dpq_hq_client {
	struct dpq_hq_client_conf conf;
	struct dpq_mem mem;
	struct hq_req *reqs;
	unsigned int next;		/* first request not started */
	unsigned int active;		/* started, not done */
	unsigned int ndone;
	unsigned int depth;		/* nested callbacks */
	bool want_open;			/* try opening at depth 0 */
	bool established, closed;
	struct dpq_hq_client_stats st;
};

int
dpq_hq_client_create(const struct dpq_hq_client_conf *conf,
		struct dpq_hq_client **out)
{
	struct dpq_mem mem;
	struct dpq_hq_client *cl;
	unsigned int i;

	if (conf == NULL || out == NULL || (conf->npaths > 0 &&
	    conf->paths == NULL) || conf->npaths > (1u << 24))
		return -EINVAL;
	for (i = 0; i < conf->npaths; i++) {
		const char *p = conf->paths[i];
		size_t n = p ? strlen(p) : 0;

		/* "GET " + path + CRLF must fit the server's bound. */
		if (n == 0 || n + 6 > DPQ_HQ_MAX_REQUEST ||
		    strpbrk(p, "\r\n") != NULL)
			return -EINVAL;
	}
	mem = conf->mem ? *conf->mem : DPQ_MEM_LIBC;
	cl = dpq_mem_alloc(&mem, sizeof(*cl));
	if (cl == NULL)
		return -ENOMEM;
	memset(cl, 0, sizeof(*cl));
	cl->conf = *conf;
	cl->mem = mem;
	cl->reqs = dpq_mem_alloc(&mem, (conf->npaths ? conf->npaths : 1) *
			sizeof(*cl->reqs));
	if (cl->reqs == NULL) {
		dpq_mem_free(&mem, cl);
		return -ENOMEM;
	}
	memset(cl->reqs, 0, (conf->npaths ? conf->npaths : 1) *
			sizeof(*cl->reqs));
	for (i = 0; i < conf->npaths; i++) {
		cl->reqs[i].stream = NO_STREAM;
		cl->reqs[i].req_len = (uint16_t)(strlen(conf->paths[i]) + 6);
	}
	*out = cl;
	return 0;
}

void
dpq_hq_client_destroy(struct dpq_hq_client *cl)
{
	unsigned int i;

	if (cl == NULL)
		return;
	for (i = 0; i < cl->conf.npaths; i++)
		if (cl->reqs[i].hash != NULL)
			gnutls_hash_deinit(cl->reqs[i].hash, NULL);
	dpq_mem_free(&cl->mem, cl->reqs);
	dpq_mem_free(&cl->mem, cl);
}

static uint64_t
now_us(struct dpq_hq_client *cl)
{
	return cl->conf.clock ? cl->conf.clock(cl->conf.arg) : 0;
}

/* Request of stream id, or NULL. Streams are opened in request order, so
 * the stream index usually is the request index. */
static struct hq_req *
req_of(struct dpq_hq_client *cl, uint64_t id, unsigned int *idx)
{
	uint64_t k = id >> 2;
	unsigned int i;

	if (k < cl->conf.npaths && cl->reqs[k].stream == id) {
		*idx = (unsigned int)k;
		return &cl->reqs[k];
	}
	for (i = 0; i < cl->next; i++)
		if (cl->reqs[i].stream == id) {
			*idx = i;
			return &cl->reqs[i];
		}
	return NULL;
}

static void
finish(struct dpq_hq_client *cl, unsigned int idx,
		enum dpq_hq_status status, uint64_t app_error)
{
	struct hq_req *q = &cl->reqs[idx];

	if (q->done)
		return;
	q->done = true;
	q->r.status = status;
	q->r.app_error = app_error;
	q->r.t_done = now_us(cl);
	if (q->hash != NULL) {
		if (status == DPQ_HQ_OK) {
			gnutls_hash_deinit(q->hash, q->r.sha256);
			q->r.has_sha256 = true;
		} else {
			gnutls_hash_deinit(q->hash, NULL);
		}
		q->hash = NULL;
	}
	if (q->started)
		cl->active--;
	cl->ndone++;
	if (status == DPQ_HQ_OK)
		cl->st.ok++;
	else
		cl->st.failed++;
	cl->want_open = true;
	if (cl->conf.on_done != NULL)
		cl->conf.on_done(cl->conf.arg, idx, &q->r);
}

/* Write what is left of the request line, FIN with its last byte. */
static void
write_request(struct dpq_hq_client *cl, struct dpq_conn *c, unsigned int idx)
{
	struct hq_req *q = &cl->reqs[idx];
	char line[DPQ_HQ_MAX_REQUEST];
	ssize_t w;

	if (q->done || q->req_sent == q->req_len)
		return;
	memcpy(line, "GET ", 4);
	memcpy(line + 4, cl->conf.paths[idx], q->req_len - 6u);
	memcpy(line + q->req_len - 2, "\r\n", 2);
	w = dpq_conn_stream_write(c, q->stream, line + q->req_sent,
			q->req_len - q->req_sent, true);
	if (w < 0) {
		/* The stream is gone: a reset from the server reports. */
		return;
	}
	q->req_sent += (uint16_t)w;
}

static void
start_more(struct dpq_hq_client *cl, struct dpq_conn *c)
{
	cl->want_open = false;
	while (cl->established && !cl->closed && cl->next < cl->conf.npaths &&
	       (cl->conf.max_concurrent == 0 ||
		cl->active < cl->conf.max_concurrent)) {
		unsigned int idx = cl->next;
		struct hq_req *q = &cl->reqs[idx];
		uint64_t id;
		int rc = dpq_conn_stream_open(c, false, &id);

		if (rc == -EAGAIN) {
			cl->st.open_blocked++;
			return;
		}
		cl->next++;
		q->started = true;
		cl->active++;
		cl->st.started++;
		q->r.t_start = now_us(cl);
		if (rc != 0) {
			finish(cl, idx, DPQ_HQ_FAILED, 0);
			continue;
		}
		q->stream = id;
		if (cl->conf.sha256 &&
		    gnutls_hash_init(&q->hash, GNUTLS_DIG_SHA256) < 0) {
			q->hash = NULL;
			(void)dpq_conn_stream_reset(c, id, DPQ_HQ_ERR_CANCELLED);
			finish(cl, idx, DPQ_HQ_FAILED, 0);
			continue;
		}
		write_request(cl, c, idx);
	}
}

static void
enter(struct dpq_hq_client *cl)
{
	cl->depth++;
}

static void
leave(struct dpq_hq_client *cl, struct dpq_conn *c)
{
	if (--cl->depth == 0 && cl->want_open)
		start_more(cl, c);
}

void
dpq_hq_client_poll(struct dpq_hq_client *cl, struct dpq_conn *c)
{
	if (cl->depth == 0 && cl->next < cl->conf.npaths)
		start_more(cl, c);
}

bool
dpq_hq_client_done(const struct dpq_hq_client *cl)
{
	return cl->ndone == cl->conf.npaths;
}

const struct dpq_hq_result *
dpq_hq_client_result(const struct dpq_hq_client *cl, unsigned int idx)
{
	/* A pending request has no result: its zeroed status would read
	 * as DPQ_HQ_OK. */
	return idx < cl->conf.npaths && cl->reqs[idx].done ?
		&cl->reqs[idx].r : NULL;
}

void
dpq_hq_client_get_stats(const struct dpq_hq_client *cl,
		struct dpq_hq_client_stats *st)
{
	*st = cl->st;
}

/* ---- callbacks ----------------------------------------------------------- */

static void
cl_established(struct dpq_conn *c, const char *alpn)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);

	(void)alpn;
	cl->established = true;
	enter(cl);
	cl->want_open = true;
	leave(cl, c);
}

/* 0-RTT keys (RFC 9001 §4.6.1): requests may leave now, within the
 * server's remembered limits; a rejection sends them again in 1-RTT. */
static void
cl_early(struct dpq_conn *c, const char *alpn)
{
	cl_established(c, alpn);
}

static void
cl_stream_open(struct dpq_conn *c, uint64_t id)
{
	/* hq has no server-initiated streams. */
	(void)dpq_conn_stream_stop(c, id, DPQ_HQ_ERR_STREAM_CREATION);
	if ((id & 2) == 0)
		(void)dpq_conn_stream_reset(c, id,
				DPQ_HQ_ERR_STREAM_CREATION);
}

static void
cl_stream_data(struct dpq_conn *c, uint64_t id)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);
	uint8_t buf[READ_BUF];
	unsigned int idx;
	struct hq_req *q;
	ssize_t n;
	bool fin = false;

	enter(cl);
	q = req_of(cl, id, &idx);
	while (q != NULL && !q->done) {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		if (n < 0)
			break;
		if (n > 0) {
			if (q->r.bytes == 0)
				q->r.t_first_byte = now_us(cl);
			q->r.bytes += (uint64_t)n;
			cl->st.bytes += (uint64_t)n;
			if (q->hash != NULL)
				(void)gnutls_hash(q->hash, buf, (size_t)n);
			if (cl->conf.on_body != NULL)
				cl->conf.on_body(cl->conf.arg, idx, buf,
						(size_t)n);
		}
		if (fin) {
			finish(cl, idx, DPQ_HQ_OK, 0);
			break;
		}
		if (n == 0)
			break;
	}
	if (q != NULL && !q->done && q->stream == NO_STREAM)
		finish(cl, idx, DPQ_HQ_RESET, 0);	/* closed under us */
	leave(cl, c);
}

static void
cl_stream_writable(struct dpq_conn *c, uint64_t id)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);
	unsigned int idx;

	enter(cl);
	if (req_of(cl, id, &idx) != NULL)
		write_request(cl, c, idx);
	leave(cl, c);
}

static void
cl_stream_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error,
		bool stop)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);
	unsigned int idx;
	struct hq_req *q;

	enter(cl);
	q = req_of(cl, id, &idx);
	if (q != NULL && !q->done) {
		/* STOP_SENDING refuses the request: no response will come,
		 * stop reading too. */
		if (stop)
			(void)dpq_conn_stream_stop(c, id, app_error);
		finish(cl, idx, DPQ_HQ_RESET, app_error);
	}
	leave(cl, c);
}

static void
cl_stream_closed(struct dpq_conn *c, uint64_t id)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);
	unsigned int idx;
	struct hq_req *q;

	enter(cl);
	q = req_of(cl, id, &idx);
	if (q != NULL) {
		/* Nested in our own read (depth > 1), the read that took the
		 * FIN is about to report it. Otherwise a stream never closes
		 * before its FIN or reset was reported; never leave a request
		 * open anyway. */
		if (cl->depth == 1)
			finish(cl, idx, DPQ_HQ_RESET, 0);
		q->stream = NO_STREAM;
	}
	cl->want_open = true;
	leave(cl, c);
}

static void
cl_closed(struct dpq_conn *c)
{
	struct dpq_hq_client *cl = dpq_conn_app_ctx(c);
	unsigned int i;

	enter(cl);
	cl->closed = true;
	for (i = 0; i < cl->conf.npaths; i++)
		finish(cl, i, DPQ_HQ_ABORTED, 0);
	cl->next = cl->conf.npaths;
	leave(cl, c);
}

const struct dpq_app_ops dpq_hq_client_ops = {
	.on_established = cl_established,
	.on_early = cl_early,
	.on_stream_open = cl_stream_open,
	.on_stream_data = cl_stream_data,
	.on_stream_writable = cl_stream_writable,
	.on_stream_reset = cl_stream_reset,
	.on_stream_closed = cl_stream_closed,
	.on_closed = cl_closed,
};
