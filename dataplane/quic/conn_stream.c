/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Streams of a connection: the table from stream ID to stream (a chained
 * hash, grown by doubling), opening peer streams within the limits we
 * announced (RFC 9000 §4.6, implicitly opening lower IDs §3.2), the
 * round-robin send queue, application events, and the application API.
 * Shard only.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/streamid.h"
#include "dataplane/quic/conn_int.h"

#define STAB_INITIAL	16

static uint32_t
stab_slot(const struct dpq_conn *c, uint64_t id)
{
	/* IDs of one type step by 4; mix so they spread. */
	uint64_t h = (id >> 2) * 0x9e3779b97f4a7c15ull + (id & 3);

	return (uint32_t)(h >> 32) & (c->stab_size - 1);
}

/* The table is allocated with the first stream, and freed when a
 * connection without streams parks (dpq_conn_streams_trim). */
int
dpq_conn_streams_init(struct dpq_conn *c)
{
	c->stab_size = 0;
	c->stab = NULL;
	return 0;
}

void
dpq_conn_streams_trim(struct dpq_conn *c)
{
	if (c->nstreams != 0 || c->stab == NULL)
		return;
	dpq_mem_free(&c->mem, c->stab);
	c->stab = NULL;
	c->stab_size = 0;
	c->sendq = NULL;
}

static int
stab_grow(struct dpq_conn *c)
{
	uint32_t old_size = c->stab_size, i;
	uint32_t size = old_size ? 2 * old_size : STAB_INITIAL;
	struct dpq_qstream **old = c->stab, **nt;

	nt = dpq_mem_alloc(&c->mem, size * sizeof(*nt));
	if (nt == NULL)
		return -ENOMEM;
	memset(nt, 0, size * sizeof(*nt));
	c->stab = nt;
	c->stab_size = size;
	for (i = 0; i < old_size; i++) {
		struct dpq_qstream *qs = old[i], *next;

		for (; qs != NULL; qs = next) {
			uint32_t slot = stab_slot(c, qs->s.id);

			next = qs->hnext;
			qs->hnext = nt[slot];
			nt[slot] = qs;
		}
	}
	dpq_mem_free(&c->mem, old);
	return 0;
}

struct dpq_qstream *
dpq_conn_stream_find(struct dpq_conn *c, uint64_t id)
{
	struct dpq_qstream *qs;

	if (c->stab == NULL)
		return NULL;
	for (qs = c->stab[stab_slot(c, id)]; qs != NULL; qs = qs->hnext)
		if (qs->s.id == id)
			return qs;
	return NULL;
}

static struct dpq_qstream *
stream_create(struct dpq_conn *c, uint64_t id)
{
	bool server = c->role == DPQ_ROLE_SERVER;
	bool local = dpq_streamid_is_local(id, server);
	bool uni = dpq_streamid_is_uni(id);
	struct dpq_stream_params p = { 0 };
	struct dpq_qstream *qs;
	uint32_t slot;

	if (c->nstreams + 1 > c->stab_size && stab_grow(c) != 0)
		return NULL;
	qs = dpq_mem_alloc(&c->mem, sizeof(*qs));
	if (qs == NULL)
		return NULL;
	memset(qs, 0, sizeof(*qs));
	/* §18.2: our limits for what the peer sends, theirs for ours.
	 * bidi_local applies to streams opened by the endpoint that sent
	 * the parameter. */
	p.recv_window = c->conf.max_stream_data;
	p.recv_window_max = c->conf.max_stream_data_max;
	if (uni)
		p.send_max = local ? c->b->peer_tp.initial_max_stream_data_uni : 0;
	else
		p.send_max = local ?
			c->b->peer_tp.initial_max_stream_data_bidi_remote :
			c->b->peer_tp.initial_max_stream_data_bidi_local;
	p.send_buffer = c->conf.send_buffer;
	p.recv_mem = &c->rx_mem;
	dpq_stream_init(&qs->s, &c->buf_mem, id, server, &p, c->now);
	slot = stab_slot(c, id);
	qs->hnext = c->stab[slot];
	c->stab[slot] = qs;
	c->nstreams++;
	return qs;
}

static void
stream_destroy(struct dpq_conn *c, struct dpq_qstream *qs)
{
	struct dpq_qstream **pp = &c->stab[stab_slot(c, qs->s.id)];

	dpq_conn_stream_unschedule(c, qs);
	while (*pp != NULL && *pp != qs)
		pp = &(*pp)->hnext;
	if (*pp == qs)
		*pp = qs->hnext;
	c->nstreams--;
	if (!dpq_streamid_is_local(qs->s.id, c->role == DPQ_ROLE_SERVER))
		dpq_streams_rx_on_closed(
			&c->streams_rx[dpq_streamid_is_uni(qs->s.id)]);
	dpq_stream_free(&qs->s);
	dpq_mem_free(&c->mem, qs);
}

void
dpq_conn_streams_free(struct dpq_conn *c)
{
	uint32_t i;

	if (c->stab == NULL)
		return;
	for (i = 0; i < c->stab_size; i++) {
		struct dpq_qstream *qs = c->stab[i], *next;

		for (; qs != NULL; qs = next) {
			next = qs->hnext;
			dpq_stream_free(&qs->s);
			dpq_mem_free(&c->mem, qs);
		}
	}
	dpq_mem_free(&c->mem, c->stab);
	c->stab = NULL;
	c->sendq = NULL;
}

struct dpq_qstream *
dpq_conn_stream_get_peer(struct dpq_conn *c, uint64_t id,
		uint64_t frame_type, int *err)
{
	bool server = c->role == DPQ_ROLE_SERVER;
	bool uni = dpq_streamid_is_uni(id);
	struct dpq_qstream *qs;
	uint64_t first, idx;
	int64_t n;

	*err = dpq_stream_frame_check(id, server, frame_type,
			c->streams_tx[uni].opened);
	if (*err != 0)
		return NULL;
	qs = dpq_conn_stream_find(c, id);
	if (qs != NULL || dpq_streamid_is_local(id, server))
		return qs;	/* NULL: a closed local stream */
	/* A peer stream: opening it opens all lower ones (§3.2). */
	n = dpq_streams_rx_open(&c->streams_rx[uni],
			dpq_streamid_index(id), &first);
	if (n < 0) {
		*err = (int)n;
		return NULL;
	}
	if (n == 0)
		return NULL;	/* opened before and closed since */
	for (idx = first; idx <= dpq_streamid_index(id); idx++) {
		uint64_t sid = dpq_streamid_make(dpq_streamid_type(id), idx);

		qs = stream_create(c, sid);
		if (qs == NULL) {
			*err = DPQ_TE_ERR(DPQ_TE_INTERNAL_ERROR);
			return NULL;
		}
		if (c->app != NULL && c->app->on_stream_open != NULL)
			c->app->on_stream_open(c, sid);
	}
	return qs;
}

void
dpq_conn_stream_schedule(struct dpq_conn *c, struct dpq_qstream *qs)
{
	if (qs->in_sendq)
		return;
	qs->in_sendq = true;
	if (c->sendq == NULL) {
		qs->qnext = qs->qprev = qs;
		c->sendq = qs;
		return;
	}
	/* Join at the tail: just before the head of the round robin. */
	qs->qnext = c->sendq;
	qs->qprev = c->sendq->qprev;
	qs->qprev->qnext = qs;
	c->sendq->qprev = qs;
}

void
dpq_conn_stream_unschedule(struct dpq_conn *c, struct dpq_qstream *qs)
{
	if (!qs->in_sendq)
		return;
	qs->in_sendq = false;
	if (qs->qnext == qs) {
		c->sendq = NULL;
	} else {
		qs->qprev->qnext = qs->qnext;
		qs->qnext->qprev = qs->qprev;
		if (c->sendq == qs)
			c->sendq = qs->qnext;
	}
	qs->qnext = qs->qprev = NULL;
}

void
dpq_conn_streams_reschedule(struct dpq_conn *c)
{
	uint32_t i;

	for (i = 0; i < c->stab_size; i++) {
		struct dpq_qstream *qs;

		for (qs = c->stab[i]; qs != NULL; qs = qs->hnext)
			if (dpq_sendbuf_pending(&qs->s.sb))
				dpq_conn_stream_schedule(c, qs);
	}
}

/* Hand the stream's pending events to the application; free it once both
 * directions are done. qs may be freed on return. */
void
dpq_conn_stream_events(struct dpq_conn *c, struct dpq_qstream *qs)
{
	const struct dpq_app_ops *app = c->app;
	uint64_t id = qs->s.id;
	uint32_t ev = dpq_stream_take_events(&qs->s);

	if (ev == 0)
		return;
	if ((ev & DPQ_STREAM_EV_STOPPED))
		dpq_conn_stream_schedule(c, qs);	/* RESET_STREAM */
	if (app != NULL) {
		if ((ev & DPQ_STREAM_EV_RESET) && app->on_stream_reset)
			app->on_stream_reset(c, id, qs->s.reset_code, false);
		if ((ev & DPQ_STREAM_EV_STOPPED) && app->on_stream_reset)
			app->on_stream_reset(c, id, qs->s.stop_code, true);
		if ((ev & DPQ_STREAM_EV_READABLE) && app->on_stream_data)
			app->on_stream_data(c, id);
		if ((ev & DPQ_STREAM_EV_WRITABLE) && app->on_stream_writable)
			app->on_stream_writable(c, id);
	}
	/* The callbacks may have read, written or reset: look again. */
	qs = dpq_conn_stream_find(c, id);
	if (qs == NULL)
		return;
	ev = dpq_stream_take_events(&qs->s) | (ev & DPQ_STREAM_EV_CLOSED);
	if ((ev & DPQ_STREAM_EV_CLOSED) || dpq_stream_is_closed(&qs->s)) {
		if (app != NULL && app->on_stream_closed)
			app->on_stream_closed(c, id);
		stream_destroy(c, qs);
	} else if (ev != 0) {
		/* New events raised by the callbacks themselves. */
		qs->s.events |= ev;
	}
}

/* After an application call: a stream whose both directions finished
 * is closed and freed now. */
static void
maybe_close(struct dpq_conn *c, struct dpq_qstream *qs)
{
	if (!dpq_stream_is_closed(&qs->s))
		return;
	if (c->app != NULL && c->app->on_stream_closed)
		c->app->on_stream_closed(c, qs->s.id);
	stream_destroy(c, qs);
}

/* ---- application API ------------------------------------------------------ */

/* The peer's initial send limit of our stream id (§18.2). */
static uint64_t
initial_send_max(const struct dpq_conn *c, uint64_t id)
{
	return dpq_streamid_is_uni(id) ?
		c->b->peer_tp.initial_max_stream_data_uni :
		c->b->peer_tp.initial_max_stream_data_bidi_remote;
}

void
dpq_conn_streams_raise_send_max(struct dpq_conn *c)
{
	uint32_t i;
	struct dpq_qstream *qs;

	for (i = 0; i < c->stab_size; i++)
		for (qs = c->stab[i]; qs != NULL; qs = qs->hnext)
			if (dpq_streamid_is_local(qs->s.id,
					c->role == DPQ_ROLE_SERVER) &&
			    dpq_flow_tx_on_max(&qs->s.tx_fc,
					initial_send_max(c, qs->s.id)))
				dpq_conn_stream_schedule(c, qs);
}

bool
dpq_conn_streams_over_send_max(const struct dpq_conn *c)
{
	uint32_t i;
	const struct dpq_qstream *qs;

	for (i = 0; i < c->stab_size; i++)
		for (qs = c->stab[i]; qs != NULL; qs = qs->hnext)
			if (dpq_streamid_is_local(qs->s.id,
					c->role == DPQ_ROLE_SERVER) &&
			    qs->s.tx_fc.sent > initial_send_max(c, qs->s.id))
				return true;
	return false;
}

int
dpq_conn_stream_open(struct dpq_conn *c, bool uni, uint64_t *id)
{
	uint64_t index;
	int rc;

	dpq_conn_wake(c);
	if (!dpq_conn_awake(c))
		return -EPIPE;
	/* Before the handshake completes only with 0-RTT (RFC 9001 §4.6):
	 * a client sending it, a server that accepted it. */
	if (c->state != DPQ_CONN_ESTABLISHED &&
	    !(c->state == DPQ_CONN_HANDSHAKING &&
	      (dpq_conn_early_send(c) || dpq_conn_app_ready(c))))
		return c->state == DPQ_CONN_HANDSHAKING ? -EAGAIN : -EPIPE;
	rc = dpq_streams_tx_open(&c->streams_tx[uni], &index);
	if (rc != 0)
		return rc;	/* -EAGAIN: STREAMS_BLOCKED is queued */
	*id = dpq_streamid_make(dpq_streamid_type_of(
			c->role == DPQ_ROLE_SERVER, uni), index);
	if (stream_create(c, *id) == NULL)
		return -ENOMEM;
	return 0;
}

/*
 * How far the application may queue on a stream: on a shard with a
 * memory budget, DPQ_STREAM_SEND_AHEAD beyond what the peer lets us send
 * (MAX_STREAM_DATA), a sixteenth of it once half the budget is in use.
 * A peer that opens many streams and reads slowly then pins about its
 * credit, not whole send buffers: 8 such peers x 100 streams with 16 KiB
 * windows filled a 256 MiB budget when only the second half was capped,
 * and new connections were refused meanwhile (tests/hostile/attack.sh).
 * More credit makes the stream writable again.
 */
static uint64_t
send_cap(const struct dpq_conn *c, const struct dpq_qstream *qs)
{
	if (c->budget == NULL || c->budget->limit == 0)
		return UINT64_MAX;
	return qs->s.tx_fc.max + (dpq_membudget_tight(c->budget) ?
			DPQ_STREAM_SEND_AHEAD / 16 : DPQ_STREAM_SEND_AHEAD);
}

ssize_t
dpq_conn_stream_write(struct dpq_conn *c, uint64_t id, const void *data,
		size_t len, bool fin)
{
	struct dpq_qstream *qs;
	ssize_t n;

	dpq_conn_wake(c);
	if (dpq_conn_is_closing(c) || !dpq_conn_awake(c))
		return -EPIPE;
	qs = dpq_conn_stream_find(c, id);
	if (qs == NULL)
		return -ENOENT;
	n = dpq_stream_write_capped(&qs->s, data, len, fin,
			send_cap(c, qs));
	if (n > 0 || fin)
		dpq_conn_stream_schedule(c, qs);
	return n;
}

ssize_t
dpq_conn_stream_read(struct dpq_conn *c, uint64_t id, void *buf, size_t len,
		bool *fin)
{
	struct dpq_qstream *qs;
	size_t done = 0;

	dpq_conn_wake(c);
	*fin = false;
	if (!dpq_conn_awake(c))
		return -EPIPE;
	qs = dpq_conn_stream_find(c, id);
	if (qs == NULL)
		return -ENOENT;
	while (done < len) {
		const uint8_t *p;
		bool f = false;
		size_t avail = dpq_stream_peek(&qs->s, &p, &f);
		size_t n = avail < len - done ? avail : len - done;

		if (n > 0)
			memcpy((uint8_t *)buf + done, p, n);
		done += n;
		/* Reading up to the final size completes the stream, and
		 * maybe_close below frees it: the FIN goes with its last
		 * byte, also when that byte fills buf. Before, a read that
		 * ended exactly there returned no FIN and the next found no
		 * stream (an XOR-FEC bench run whose client never finished
		 * a 1 MB download). */
		if (n > 0 || f)
			dpq_stream_consume(&qs->s, &c->rx_fc, n, c->now,
					dpq_conn_tune_rtt(c));
		if (f && n == avail) {
			*fin = true;
			break;
		}
		if (n == 0)
			break;
	}
	/* Credit may now be due (MAX_STREAM_DATA). Only then: a stream
	 * scheduled for nothing made the builder send a packet with just
	 * the ACK it carries along, one per packet read, instead of one
	 * ACK per two packets (RFC 9000 §13.2.2). */
	{
		uint64_t v;

		if (dpq_stream_max_data_due(&qs->s, &v))
			dpq_conn_stream_schedule(c, qs);
	}
	maybe_close(c, qs);
	return (ssize_t)done;
}

int
dpq_conn_stream_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error)
{
	struct dpq_qstream *qs = dpq_conn_stream_find(c, id);
	int rc;

	dpq_conn_wake(c);
	if (qs == NULL)
		return -ENOENT;
	if (!dpq_conn_awake(c))
		return -EPIPE;
	rc = dpq_stream_reset(&qs->s, app_error);
	if (rc == 0)
		dpq_conn_stream_schedule(c, qs);
	maybe_close(c, qs);
	return rc;
}

int
dpq_conn_stream_stop(struct dpq_conn *c, uint64_t id, uint64_t app_error)
{
	struct dpq_qstream *qs = dpq_conn_stream_find(c, id);
	int rc;

	dpq_conn_wake(c);
	if (qs == NULL)
		return -ENOENT;
	if (!dpq_conn_awake(c))
		return -EPIPE;
	rc = dpq_stream_stop_sending(&qs->s, &c->rx_fc, app_error, c->now,
			dpq_conn_tune_rtt(c));
	if (rc == 0)
		dpq_conn_stream_schedule(c, qs);
	return rc;
}
