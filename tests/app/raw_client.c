/* SPDX-License-Identifier: BSD-3-Clause */
/* See raw_client.h. */
#include <stdlib.h>
#include <string.h>

#include "raw_client.h"

static struct raw_stream *
find(struct raw_client *rc, uint64_t id)
{
	for (unsigned int i = 0; i < rc->n; i++)
		if (rc->s[i].opened && rc->s[i].id == id)
			return &rc->s[i];
	return NULL;
}

static void
push(struct dpq_conn *c, struct raw_stream *s)
{
	if (s->fin_sent || (s->out_sent == s->out_len && !s->fin))
		return;
	for (;;) {
		ssize_t w = dpq_conn_stream_write(c, s->id,
				s->out ? s->out + s->out_sent : NULL,
				s->out_len - s->out_sent,
				s->fin);

		if (w < 0)
			return;
		s->out_sent += (size_t)w;
		if (s->out_sent == s->out_len) {
			s->fin_sent = s->fin;
			return;
		}
		if (w == 0)
			return;		/* on_stream_writable */
	}
}

static void
established(struct dpq_conn *c, const char *alpn)
{
	struct raw_client *rc = dpq_conn_app_ctx(c);

	(void)alpn;
	rc->established = true;
	for (unsigned int i = 0; i < rc->n; i++) {
		struct raw_stream *s = &rc->s[i];

		if (dpq_conn_stream_open(c, s->uni, &s->id) != 0)
			abort();
		s->opened = true;
		push(c, s);
	}
}

static void
data(struct dpq_conn *c, uint64_t id)
{
	struct raw_client *rc = dpq_conn_app_ctx(c);
	struct raw_stream *s = find(rc, id);
	uint8_t buf[16384];
	ssize_t n;
	bool fin = false;

	if (s == NULL)
		return;
	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		if (n > 0) {
			if (s->in_len + (size_t)n > s->in_cap) {
				s->in_cap = (s->in_len + (size_t)n) * 2;
				s->in = realloc(s->in, s->in_cap);
				if (s->in == NULL)
					abort();
			}
			memcpy(s->in + s->in_len, buf, (size_t)n);
			s->in_len += (size_t)n;
		}
		if (fin)
			s->got_fin = true;
		if (s->stop_after > 0 && !s->stopped &&
		    s->in_len >= s->stop_after) {
			s->stopped = true;
			dpq_conn_stream_stop(c, id, 0x10c);
			return;
		}
	} while (n > 0 && !fin);
}

static void
writable(struct dpq_conn *c, uint64_t id)
{
	struct raw_stream *s = find(dpq_conn_app_ctx(c), id);

	if (s != NULL)
		push(c, s);
}

static void
reset(struct dpq_conn *c, uint64_t id, uint64_t code, bool stop)
{
	struct raw_stream *s = find(dpq_conn_app_ctx(c), id);

	if (s == NULL)
		return;
	if (stop) {
		s->got_stop = true;
		s->stop_code = code;
	} else {
		s->got_reset = true;
		s->reset_code = code;
	}
}

static void
closed(struct dpq_conn *c, uint64_t id)
{
	struct raw_stream *s = find(dpq_conn_app_ctx(c), id);

	if (s != NULL)
		s->closed = true;
}

const struct dpq_app_ops raw_client_ops = {
	.on_established = established,
	.on_stream_data = data,
	.on_stream_writable = writable,
	.on_stream_reset = reset,
	.on_stream_closed = closed,
};

bool
raw_client_done(const struct raw_client *rc)
{
	if (!rc->established)
		return false;
	for (unsigned int i = 0; i < rc->n; i++) {
		const struct raw_stream *s = &rc->s[i];

		if (!(s->got_fin || s->got_reset || s->closed ||
		      (s->uni && s->got_stop)))
			return false;
	}
	return true;
}

void
raw_client_free(struct raw_client *rc)
{
	for (unsigned int i = 0; i < rc->n; i++)
		free(rc->s[i].in);
}
