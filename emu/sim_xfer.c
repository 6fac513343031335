/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_sim_transfer(): bulk transfer over the simulated link, checked byte
 * for byte. The client opens K bidirectional streams once its handshake
 * completes. Download: it sends an 8-byte request and FIN on each, the
 * server answers with x->bytes of a pattern and FIN. Upload: the client
 * sends the pattern and FIN, the server reads it and answers FIN. The
 * receiver compares every byte with the pattern, which depends on the
 * stream and the offset (a misplaced or corrupted byte shows).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/sim.h"

#define CHUNK		16384

struct xfer_stream {
	uint64_t id;
	uint64_t sent;		/* pattern bytes written */
	uint64_t got;		/* pattern bytes read and checked */
	bool fin_sent;
	bool sending;		/* download: the request arrived */
	bool complete;		/* receiver saw every byte and FIN */
	uint64_t done_ns;
	/* Sender: pattern bytes made for [cache_off, cache_off + cache_len)
	 * (a write that takes only part of a chunk leaves the rest here). */
	uint64_t cache_off;
	size_t cache_len;
	uint8_t cache[CHUNK];
};

struct xfer {
	const struct dpq_sim_xfer *x;
	struct dpq_sim *sim;
	struct xfer_stream st[DPQ_SIM_XFER_STREAMS];
	unsigned int opened, completed;
	uint64_t start_ns;	/* client handshake complete */
	uint64_t mark_ns[DPQ_SIM_XFER_MARKS];
	unsigned int marks_done;
	bool established;
	bool corrupt;
	bool failed;		/* a stream reset, or bytes past the end */
	/* The sender's first slow start (struct dpq_sim_xfer_result). */
	uint64_t ss_exit_ns, ss_snap_ns, ss_peak_cwnd;
	uint64_t ss_dropped, ss_offered;
	bool ss_done;
};

static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t
block(uint64_t id, uint64_t off)
{
	return mix((id << 40) ^ (off >> 3) ^ UINT64_C(0x9e3779b97f4a7c15));
}

/* The pattern byte stream of stream id from off: byte off is byte
 * (off % 8) (least significant first) of block(id, off). */
static void
pattern(uint64_t id, uint64_t off, uint8_t *buf, size_t n)
{
	size_t i = 0;

	/* Up to the next 8-byte boundary, a byte at a time. */
	for (; i < n && ((off + i) & 7) != 0; i++)
		buf[i] = (uint8_t)(block(id, off + i) >> (((off + i) & 7) * 8));
	/* Whole blocks, stored little-endian (the profile showed the byte
	 * loop as most of a simulation's CPU). */
	for (; i + 8 <= n; i += 8) {
		uint64_t v = block(id, off + i);
		uint8_t le[8];
		unsigned int k;

		for (k = 0; k < 8; k++)
			le[k] = (uint8_t)(v >> (8 * k));
		memcpy(buf + i, le, 8);
	}
	for (; i < n; i++)
		buf[i] = (uint8_t)(block(id, off + i) >> (((off + i) & 7) * 8));
}

static struct xfer_stream *
stream_of(struct xfer *t, uint64_t id)
{
	uint64_t i = id / 4;

	if ((id & 3) != 0 || i >= t->x->streams)
		return NULL;
	return &t->st[i];
}

/* Bytes of s the application has produced by now (objects mode: the
 * parts whose time has come). */
static uint64_t
produced(const struct xfer *t)
{
	uint64_t due;

	if (t->x->objects <= 1 || t->x->stagger_ns == 0)
		return t->x->bytes;
	due = (dpq_sim_elapsed_ns(t->sim) - t->start_ns) / t->x->stagger_ns + 1;
	if (due >= t->x->objects)
		return t->x->bytes;
	return t->x->bytes * due / t->x->objects;
}

/* Write pattern bytes until done or the stream's buffer is full. */
static void
pump(struct dpq_conn *c, struct xfer *t, struct xfer_stream *s)
{
	uint64_t limit = produced(t);

	while (!s->fin_sent && s->sent < limit) {
		uint64_t left = limit - s->sent;
		size_t n = left < CHUNK ? (size_t)left : CHUNK;
		ssize_t w;

		if (s->sent >= s->cache_off &&
		    s->sent < s->cache_off + s->cache_len) {
			/* The rest of the chunk made before. */
			if (n > s->cache_off + s->cache_len - s->sent)
				n = (size_t)(s->cache_off + s->cache_len -
						s->sent);
		} else {
			pattern(s->id, s->sent, s->cache, n);
			s->cache_off = s->sent;
			s->cache_len = n;
		}
		w = dpq_conn_stream_write(c, s->id,
				s->cache + (s->sent - s->cache_off), n,
				s->sent + n == t->x->bytes);
		if (w < 0) {
			t->failed = true;
			return;
		}
		s->sent += (uint64_t)w;
		if ((size_t)w == n && s->sent == t->x->bytes)
			s->fin_sent = true;
		else if ((size_t)w < n || w == 0)
			return;		/* on_stream_writable goes on */
	}
}

/* Read and check what arrived; mark completion. */
static void
drain(struct dpq_conn *c, struct xfer *t, struct xfer_stream *s)
{
	uint8_t buf[CHUNK], want[CHUNK];
	bool fin = false;
	ssize_t n;

	/* The read that returns the FIN may free the stream: stop there. */
	while (!fin && (n = dpq_conn_stream_read(c, s->id, buf, sizeof(buf),
			&fin)) > 0) {
		if (s->got + (uint64_t)n > t->x->bytes) {
			t->failed = true;
			return;
		}
		pattern(s->id, s->got, want, (size_t)n);
		if (memcmp(buf, want, (size_t)n) != 0)
			t->corrupt = true;
		s->got += (uint64_t)n;
		while (s == &t->st[0] && t->marks_done < t->x->marks &&
		       t->marks_done < DPQ_SIM_XFER_MARKS &&
		       s->got * t->x->marks >= (t->marks_done + 1) *
				t->x->bytes)
			t->mark_ns[t->marks_done++] =
				dpq_sim_elapsed_ns(t->sim) - t->start_ns;
	}
	if (fin && !s->complete) {
		if (s->got != t->x->bytes)
			t->failed = true;
		s->complete = true;
		s->done_ns = dpq_sim_elapsed_ns(t->sim) - t->start_ns;
		t->completed++;
	}
}

/* Client: open the streams whose start time has come; in objects mode
 * write the parts that are due. Asks the sim to wake it for the next. */
static void
start_due(struct dpq_conn *c, struct xfer *t)
{
	uint8_t req[8] = { 'G', 'E', 'T', ' ', 'b', 'u', 'l', 'k' };
	uint64_t now = dpq_sim_elapsed_ns(t->sim) - t->start_ns;

	while (t->opened < t->x->streams &&
	       (uint64_t)t->opened * t->x->stagger_ns <= now) {
		struct xfer_stream *s = &t->st[t->opened];

		if (dpq_conn_stream_open(c, false, &s->id) != 0) {
			t->failed = true;
			return;
		}
		t->opened++;
		if (t->x->upload) {
			pump(c, t, s);
		} else if (dpq_conn_stream_write(c, s->id, req, sizeof(req),
				true) != (ssize_t)sizeof(req)) {
			t->failed = true;
		}
	}
	if (t->x->objects > 1 && t->x->upload && t->opened > 0)
		pump(c, t, &t->st[0]);
	if (t->x->stagger_ns != 0 && (t->opened < t->x->streams ||
			produced(t) < t->x->bytes))
		dpq_sim_wake_at(t->sim, t->start_ns +
				(now / t->x->stagger_ns + 1) * t->x->stagger_ns);
}

static void
on_established(struct dpq_conn *c, const char *alpn)
{
	struct xfer *t = dpq_conn_app_ctx(c);

	(void)alpn;
	if (dpq_conn_is_server(c))
		return;
	t->established = true;
	t->start_ns = dpq_sim_elapsed_ns(t->sim);
	start_due(c, t);
}

static void
on_data(struct dpq_conn *c, uint64_t id)
{
	struct xfer *t = dpq_conn_app_ctx(c);
	struct xfer_stream *s = stream_of(t, id);
	bool receiver = dpq_conn_is_server(c) == t->x->upload;

	if (s == NULL) {
		t->failed = true;
		return;
	}
	if (receiver) {
		drain(c, t, s);
		if (s->complete && t->x->upload && !s->fin_sent) {
			s->fin_sent = true;
			dpq_conn_stream_write(c, id, NULL, 0, true);
		}
		return;
	}
	/* The sender's side reads the request (download) or the FIN
	 * (upload) and discards it. */
	{
		uint8_t buf[64];
		bool fin = false;

		while (!fin && dpq_conn_stream_read(c, id, buf, sizeof(buf),
				&fin) > 0)
			;
		if (fin && !t->x->upload && !s->sending) {
			s->sending = true;
			pump(c, t, s);
		}
	}
}

static void
on_writable(struct dpq_conn *c, uint64_t id)
{
	struct xfer *t = dpq_conn_app_ctx(c);
	struct xfer_stream *s = stream_of(t, id);
	bool sender = dpq_conn_is_server(c) != t->x->upload;

	if (s != NULL && sender && (t->x->upload || s->sending))
		pump(c, t, s);
}

static void
on_reset(struct dpq_conn *c, uint64_t id, uint64_t err, bool stop)
{
	struct xfer *t = dpq_conn_app_ctx(c);

	(void)id;
	(void)err;
	(void)stop;
	t->failed = true;
}

static const struct dpq_app_ops xfer_app = {
	.on_established = on_established,
	.on_stream_data = on_data,
	.on_stream_writable = on_writable,
	.on_stream_reset = on_reset,
};

/* Follow the sender's first slow start until its drops are counted. */
static void
watch_slow_start(struct dpq_sim *sim, struct xfer *t)
{
	struct dpq_conn *snd = t->x->upload ? dpq_sim_client(sim) :
		dpq_sim_server(sim);
	const struct dpq_linkem *l;
	struct dpq_conn_stats st;
	uint64_t now = dpq_sim_elapsed_ns(sim);

	if (t->ss_done || snd == NULL)
		return;
	if (t->ss_snap_ns == 0) {
		dpq_conn_get_stats(snd, &st);
		if (st.ssthresh == UINT64_MAX) {
			if (st.cwnd > t->ss_peak_cwnd)
				t->ss_peak_cwnd = st.cwnd;
			return;
		}
		t->ss_exit_ns = now;
		t->ss_snap_ns = now + st.srtt_us * 1000;
		return;
	}
	if (now < t->ss_snap_ns)
		return;
	l = dpq_sim_link(sim, t->x->upload);
	t->ss_dropped = l->stats.dropped[DPQ_LINKEM_DROP_QUEUE];
	t->ss_offered = l->stats.offered;
	t->ss_done = true;
}

static bool
xfer_done(struct dpq_sim *sim, void *arg)
{
	struct xfer *t = arg;
	struct dpq_conn *sv = dpq_sim_server(sim);

	watch_slow_start(sim, t);
	if (t->failed || t->corrupt)
		return true;
	if (t->established && t->x->stagger_ns != 0 &&
	    dpq_conn_state(dpq_sim_client(sim)) < DPQ_CONN_CLOSING &&
	    (t->opened < t->x->streams || (t->x->objects > 1 &&
			t->st[0].sent < produced(t))))
		start_due(dpq_sim_client(sim), t);
	if (dpq_conn_state(dpq_sim_client(sim)) >= DPQ_CONN_CLOSING ||
	    (sv != NULL && dpq_conn_state(sv) >= DPQ_CONN_CLOSING))
		return true;
	return t->established && t->completed == t->x->streams;
}

/* Why a connection closed before the transfer finished (first one). */
static void
closed_why(struct dpq_sim_xfer_result *res, const struct dpq_conn *c,
		const char *who)
{
	const struct dpq_conn_close_info *ci;

	if (res->closed[0] != '\0' || dpq_conn_state(c) < DPQ_CONN_CLOSING)
		return;
	ci = dpq_conn_close_info(c);
	snprintf(res->closed, sizeof(res->closed), "%s closed: %s%s "
			"error 0x%llx (%s)", who, ci->remote ? "by peer, " : "",
			ci->app ? "application" : "transport",
			(unsigned long long)ci->error_code, ci->reason);
}

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
dpq_sim_transfer(const struct dpq_sim_conf *conf,
		const struct dpq_sim_xfer *x, struct dpq_sim_xfer_result *res)
{
	struct dpq_sim_conf c = *conf;
	struct dpq_sim *sim;
	struct xfer *t;
	double cpu0 = cpu_now();
	unsigned int i;
	int rc;

	memset(res, 0, sizeof(*res));
	if (x->streams == 0 || x->streams > DPQ_SIM_XFER_STREAMS ||
	    (x->objects > 1 && (x->streams != 1 || !x->upload)))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	t->x = x;
	c.capp = c.sapp = &xfer_app;
	c.capp_ctx = c.sapp_ctx = t;
	rc = dpq_sim_create(&c, &sim);
	if (rc != 0) {
		free(t);
		return rc;
	}
	t->sim = sim;
	dpq_sim_run(sim, xfer_done, t, x->max_ns);

	res->corrupt = t->corrupt;
	res->ok = t->established && !t->failed && !t->corrupt &&
		t->completed == x->streams;
	res->handshake_ns = t->established ? t->start_ns : UINT64_MAX;
	for (i = 0; i < DPQ_SIM_XFER_MARKS; i++)
		res->mark_ns[i] = i < t->marks_done ? t->mark_ns[i] :
			UINT64_MAX;
	for (i = 0; i < x->streams; i++) {
		res->stream_ns[i] = t->st[i].complete ? t->st[i].done_ns :
			UINT64_MAX;
		res->bytes += t->st[i].got;
		if (t->st[i].complete && t->st[i].done_ns > res->done_ns)
			res->done_ns = t->st[i].done_ns;
	}
	if (res->ok && res->done_ns > 0)
		res->goodput_bps = (double)res->bytes * 8e9 /
			(double)res->done_ns;
	if (res->ok)
		res->done_ns += t->start_ns;
	else
		res->done_ns = dpq_sim_elapsed_ns(sim);
	dpq_conn_get_stats(dpq_sim_client(sim), &res->client);
	if (dpq_sim_server(sim) != NULL)
		dpq_conn_get_stats(dpq_sim_server(sim), &res->server);
	res->c2s = dpq_sim_link(sim, true)->stats;
	res->s2c = dpq_sim_link(sim, false)->stats;
	res->overflow = dpq_sim_overflow(sim);
	res->ss_exit_ns = t->ss_snap_ns != 0 ? t->ss_exit_ns : UINT64_MAX;
	res->ss_peak_cwnd = t->ss_peak_cwnd;
	if (!t->ss_done) {	/* the run ended first: all in slow start */
		const struct dpq_linkem_stats *ls = x->upload ? &res->c2s :
			&res->s2c;

		t->ss_dropped = ls->dropped[DPQ_LINKEM_DROP_QUEUE];
		t->ss_offered = ls->offered;
	}
	res->ss_dropped = t->ss_dropped;
	res->ss_offered = t->ss_offered;
	closed_why(res, dpq_sim_client(sim), "client");
	if (dpq_sim_server(sim) != NULL)
		closed_why(res, dpq_sim_server(sim), "server");
	rc = res->ok ? 0 : (t->corrupt || t->failed ||
			res->closed[0] != '\0') ? -EPROTO : -ETIMEDOUT;
	dpq_sim_destroy(sim);
	free(t);
	res->cpu_s = cpu_now() - cpu0;
	return rc;
}
