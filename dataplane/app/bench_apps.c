/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The benchmark apps (see bench_apps.h): echo, sink and source, each with
 * a small per-stream state allocated when the peer opens the stream.
 * Shard only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dataplane/app/app_int.h"
#include "dataplane/app/bench_apps.h"

static struct dpq_bench_stats *
bstats(struct dpq_app_conn *ac)
{
	return &ac->env->stats.bench;
}

/* Abandon both directions of a held stream. */
static void
bench_fail(struct dpq_conn *c, struct dpq_app_stream *h, bool *req_done,
		uint64_t code)
{
	bstats(app_conn(c))->errors++;
	if (!*req_done) {
		*req_done = true;
		(void)dpq_conn_stream_stop(c, h->id, code);
	}
	if (!h->dead)
		(void)dpq_conn_stream_reset(c, h->id, code);
}

/* Allocate size bytes of state for a peer bidi stream, or refuse it. */
static struct dpq_app_stream *
bench_open(struct dpq_conn *c, uint64_t id, size_t size, bool allow_uni)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct dpq_app_stream *h;

	if (!app_id_client_bidi(id) && !(allow_uni && (id & 3) == 2)) {
		bstats(ac)->errors++;
		(void)dpq_conn_stream_stop(c, id,
				DPQ_BENCH_ERR_STREAM_CREATION);
		return NULL;
	}
	h = app_stream_new(ac, id, size);
	if (h == NULL) {
		bstats(ac)->errors++;
		(void)dpq_conn_stream_stop(c, id, DPQ_BENCH_ERR_INTERNAL);
		if (app_id_client_bidi(id))
			(void)dpq_conn_stream_reset(c, id,
					DPQ_BENCH_ERR_INTERNAL);
		return NULL;
	}
	bstats(ac)->streams++;
	return h;
}

static void
bench_stream_closed(struct dpq_conn *c, uint64_t id)
{
	app_stream_closed(app_conn(c), id);
}

static void
bench_closed(struct dpq_conn *c)
{
	struct dpq_app_conn *ac = app_conn(c);

	app_streams_free(ac);
	ac->closed = true;
}

/* ---- echo ---------------------------------------------------------------- */

struct echo_stream {
	struct dpq_app_stream h;
	bool fin_seen, fin_sent, done;
	uint32_t off, len;		/* bytes of buf still to write */
	uint8_t buf[DPQ_BENCH_ECHO_BUF];
};

static void
echo_established(struct dpq_conn *c, const char *alpn)
{
	(void)alpn;
	app_conn_bind(c, &dpq_bench_echo_proto);
}

static void
echo_open(struct dpq_conn *c, uint64_t id)
{
	(void)bench_open(c, id, sizeof(struct echo_stream), false);
}

/* Write what is buffered, then read more, until the send buffer is full
 * or nothing is left to read. s is held. */
static void
echo_pump(struct dpq_conn *c, struct echo_stream *s)
{
	struct dpq_bench_stats *st = bstats(app_conn(c));

	while (!s->h.dead && !s->done) {
		ssize_t n;
		bool fin = false;

		if (s->len > 0) {
			n = dpq_conn_stream_write(c, s->h.id, s->buf + s->off,
					s->len, false);
			if (n < 0) {
				s->done = true;		/* stopped, closing */
				return;
			}
			st->bytes_out += (uint64_t)n;
			s->off += (uint32_t)n;
			s->len -= (uint32_t)n;
			if (s->len > 0)
				return;		/* on_stream_writable */
		}
		if (s->fin_seen) {
			if (!s->fin_sent &&
			    dpq_conn_stream_write(c, s->h.id, NULL, 0,
					true) == 0)
				s->fin_sent = true;
			s->done = true;
			return;
		}
		n = dpq_conn_stream_read(c, s->h.id, s->buf, sizeof(s->buf),
				&fin);
		if (n < 0)
			return;
		st->bytes_in += (uint64_t)n;
		s->off = 0;
		s->len = (uint32_t)n;
		s->fin_seen = fin;
		if (n == 0 && !fin)
			return;
	}
}

static void
echo_event(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct echo_stream *s = (struct echo_stream *)app_stream_hold(ac, id);

	if (s == NULL)
		return;
	echo_pump(c, s);
	app_stream_release(ac, &s->h);
}

static void
echo_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error, bool stop)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct echo_stream *s = (struct echo_stream *)app_stream_hold(ac, id);

	(void)app_error;
	if (s == NULL)
		return;
	s->done = true;
	s->len = 0;
	if (!stop && !s->fin_sent)	/* nothing more to echo */
		(void)dpq_conn_stream_reset(c, id, app_error);
	else if (stop)			/* nobody reads what we echo */
		(void)dpq_conn_stream_stop(c, id, app_error);
	app_stream_release(ac, &s->h);
}

static const struct dpq_app_ops echo_ops = {
	.on_established = echo_established,
	.on_stream_open = echo_open,
	.on_stream_data = echo_event,
	.on_stream_writable = echo_event,
	.on_stream_reset = echo_reset,
	.on_stream_closed = bench_stream_closed,
	.on_closed = bench_closed,
};

const struct dpq_app_proto dpq_bench_echo_proto = {
	.alpn = DPQ_ALPN_ECHO,
	.ops = &echo_ops,
};

/* ---- sink ---------------------------------------------------------------- */

struct sink_stream {
	struct dpq_app_stream h;
	uint64_t count;
	bool fin_seen, done;
	uint8_t reply_off, reply_len;
	char reply[24];
};

static void
sink_established(struct dpq_conn *c, const char *alpn)
{
	(void)alpn;
	app_conn_bind(c, &dpq_bench_sink_proto);
}

static void
sink_open(struct dpq_conn *c, uint64_t id)
{
	(void)bench_open(c, id, sizeof(struct sink_stream), true);
}

static void
sink_reply(struct dpq_conn *c, struct sink_stream *s)
{
	ssize_t w;

	if (s->done || s->h.dead || !s->fin_seen || (s->h.id & 3) != 0)
		return;
	w = dpq_conn_stream_write(c, s->h.id, s->reply + s->reply_off,
			s->reply_len - s->reply_off, true);
	if (w < 0) {
		s->done = true;
		return;
	}
	bstats(app_conn(c))->bytes_out += (uint64_t)w;
	s->reply_off += (uint8_t)w;
	if (s->reply_off == s->reply_len)
		s->done = true;
}

static void
sink_data(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct sink_stream *s = (struct sink_stream *)app_stream_hold(ac, id);
	ssize_t n;
	bool fin = false;

	if (s == NULL)
		return;
	while (!s->h.dead && !s->fin_seen) {
		n = dpq_conn_stream_read(c, id, ac->env->scratch,
				ac->env->chunk, &fin);
		if (n > 0) {
			s->count += (uint64_t)n;
			bstats(ac)->bytes_in += (uint64_t)n;
		}
		if (fin) {
			int l = snprintf(s->reply, sizeof(s->reply),
					"%" PRIu64 "\n", s->count);

			s->fin_seen = true;
			s->reply_len = (uint8_t)l;
			sink_reply(c, s);
		}
		if (n <= 0)
			break;
	}
	app_stream_release(ac, &s->h);
}

static void
sink_writable(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct sink_stream *s = (struct sink_stream *)app_stream_hold(ac, id);

	if (s == NULL)
		return;
	sink_reply(c, s);
	app_stream_release(ac, &s->h);
}

static void
sink_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error, bool stop)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct sink_stream *s = (struct sink_stream *)app_stream_hold(ac, id);

	if (s == NULL)
		return;
	s->done = true;
	if (!stop && (id & 3) == 0)	/* no count to report */
		(void)dpq_conn_stream_reset(c, id, app_error);
	app_stream_release(ac, &s->h);
}

static const struct dpq_app_ops sink_ops = {
	.on_established = sink_established,
	.on_stream_open = sink_open,
	.on_stream_data = sink_data,
	.on_stream_writable = sink_writable,
	.on_stream_reset = sink_reset,
	.on_stream_closed = bench_stream_closed,
	.on_closed = bench_closed,
};

const struct dpq_app_proto dpq_bench_sink_proto = {
	.alpn = DPQ_ALPN_SINK,
	.ops = &sink_ops,
};

/* ---- source -------------------------------------------------------------- */

enum source_phase { SRC_REQUEST = 0, SRC_SENDING, SRC_DONE };

struct source_stream {
	struct dpq_app_stream h;
	enum source_phase phase;
	bool req_done;
	uint64_t total, off;
	uint8_t req_len;
	uint8_t req[DPQ_BENCH_MAX_REQUEST];
};

static void
source_established(struct dpq_conn *c, const char *alpn)
{
	(void)alpn;
	app_conn_bind(c, &dpq_bench_source_proto);
}

static void
source_open(struct dpq_conn *c, uint64_t id)
{
	(void)bench_open(c, id, sizeof(struct source_stream), false);
}

/* "SEND <n>" without line end → n, or -1. */
static int64_t
source_parse(const uint8_t *p, const uint8_t *end)
{
	static const char verb[] = "SEND ";
	uint64_t n = 0;

	if ((size_t)(end - p) < sizeof(verb) - 1 ||
	    memcmp(p, verb, sizeof(verb) - 1) != 0)
		return -1;
	p += sizeof(verb) - 1;
	if (p == end)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (uint64_t)(*p - '0');
		if (n > DPQ_BENCH_SOURCE_MAX)
			return -1;
	}
	return (int64_t)n;
}

static void
source_send(struct dpq_conn *c, struct source_stream *s)
{
	struct dpq_app_env *env = app_conn(c)->env;

	while (s->phase == SRC_SENDING && !s->h.dead) {
		uint64_t left = s->total - s->off;
		size_t n = left < env->chunk ? (size_t)left : env->chunk;
		const uint8_t *src = env->pattern +
			s->off % DPQ_BENCH_PATTERN_PERIOD;
		ssize_t w;
		bool fin = n == left;

		w = dpq_conn_stream_write(c, s->h.id, src, n, fin);
		if (w < 0) {
			s->phase = SRC_DONE;
			return;
		}
		s->off += (uint64_t)w;
		env->stats.bench.bytes_out += (uint64_t)w;
		if ((size_t)w < n)
			return;		/* on_stream_writable */
		if (fin)
			s->phase = SRC_DONE;
	}
}

static void
source_data(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct source_stream *s = (struct source_stream *)app_stream_hold(ac,
			id);
	ssize_t n;
	bool fin = false;

	if (s == NULL)
		return;
	while (!s->h.dead && !s->req_done) {
		uint8_t *buf = s->phase == SRC_REQUEST ? s->req + s->req_len :
			ac->env->scratch;
		size_t cap = s->phase == SRC_REQUEST ?
			sizeof(s->req) - s->req_len : ac->env->chunk;
		uint8_t *nl;
		size_t len;
		int64_t total;

		n = dpq_conn_stream_read(c, id, buf, cap, &fin);
		if (n < 0)
			break;
		bstats(ac)->bytes_in += (uint64_t)n;
		if (fin)
			s->req_done = true;
		if (s->phase != SRC_REQUEST) {
			if (n == 0)
				break;
			continue;
		}
		s->req_len += (uint8_t)n;
		nl = memchr(s->req, '\n', s->req_len);
		if (nl == NULL && !fin) {
			if (s->req_len >= sizeof(s->req))
				bench_fail(c, &s->h, &s->req_done,
						DPQ_BENCH_ERR_TOO_LONG);
			if (n == 0)
				break;
			continue;
		}
		len = nl ? (size_t)(nl - s->req) : s->req_len;
		if (len > 0 && s->req[len - 1] == '\r')
			len--;
		total = source_parse(s->req, s->req + len);
		if (total < 0) {
			s->phase = SRC_DONE;
			bench_fail(c, &s->h, &s->req_done,
					DPQ_BENCH_ERR_BAD_REQUEST);
			break;
		}
		s->total = (uint64_t)total;
		s->phase = SRC_SENDING;
		source_send(c, s);
	}
	app_stream_release(ac, &s->h);
}

static void
source_writable(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct source_stream *s = (struct source_stream *)app_stream_hold(ac,
			id);

	if (s == NULL)
		return;
	source_send(c, s);
	app_stream_release(ac, &s->h);
}

static void
source_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error, bool stop)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct source_stream *s = (struct source_stream *)app_stream_hold(ac,
			id);

	if (s == NULL)
		return;
	if (stop) {
		s->phase = SRC_DONE;
	} else {
		s->req_done = true;
		if (s->phase == SRC_REQUEST) {
			s->phase = SRC_DONE;
			(void)dpq_conn_stream_reset(c, id, app_error);
		}
	}
	app_stream_release(ac, &s->h);
}

static const struct dpq_app_ops source_ops = {
	.on_established = source_established,
	.on_stream_open = source_open,
	.on_stream_data = source_data,
	.on_stream_writable = source_writable,
	.on_stream_reset = source_reset,
	.on_stream_closed = bench_stream_closed,
	.on_closed = bench_closed,
};

const struct dpq_app_proto dpq_bench_source_proto = {
	.alpn = DPQ_ALPN_SOURCE,
	.ops = &source_ops,
};
