/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.c: one QUIC stream: state machines, buffers, stream-level flow
 * control (stream.h).
 *
 * The two transition tables below are RFC 9000 §3.1 Figure 2 and §3.2
 * Figure 3 written as data; the handlers turn frames and application
 * calls into events and never assign a state themselves.
 */
#include "dataplane/engine/stream.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/frame.h"

#include <errno.h>

#define X	(-1)	/* illegal pair */

/* RFC 9000 §3.1. Columns follow enum dpq_send_event. */
static const int8_t send_table[DPQ_SEND_NSTATES][DPQ_SEV_NEVENTS] = {
	/*                    DATA  FIN   ACKED RESET RSTACK MSD  STOP */
	[DPQ_SEND_NONE]     = { X,  X,    X,    X,    X,     X,   X },
	[DPQ_SEND_READY]    = {
		DPQ_SEND_SEND, DPQ_SEND_DATA_SENT, X, DPQ_SEND_RESET_SENT, X,
		DPQ_SEND_READY, DPQ_SEND_READY },
	[DPQ_SEND_SEND]     = {
		DPQ_SEND_SEND, DPQ_SEND_DATA_SENT, X, DPQ_SEND_RESET_SENT, X,
		DPQ_SEND_SEND, DPQ_SEND_SEND },
	/* Data Sent: retransmissions keep the state (§3.1). */
	[DPQ_SEND_DATA_SENT] = {
		DPQ_SEND_DATA_SENT, DPQ_SEND_DATA_SENT, DPQ_SEND_DATA_RECVD,
		DPQ_SEND_RESET_SENT, X, DPQ_SEND_DATA_SENT,
		DPQ_SEND_DATA_SENT },
	/* Terminal: late MAX_STREAM_DATA / STOP_SENDING are ignored. */
	[DPQ_SEND_DATA_RECVD] = {
		X, X, X, X, X, DPQ_SEND_DATA_RECVD, DPQ_SEND_DATA_RECVD },
	/* Reset Sent: RESET_STREAM may go out again until acknowledged. */
	[DPQ_SEND_RESET_SENT] = {
		X, X, X, DPQ_SEND_RESET_SENT, DPQ_SEND_RESET_RECVD,
		DPQ_SEND_RESET_SENT, DPQ_SEND_RESET_SENT },
	[DPQ_SEND_RESET_RECVD] = {
		X, X, X, X, X, DPQ_SEND_RESET_RECVD, DPQ_SEND_RESET_RECVD },
};

/* RFC 9000 §3.2. Columns follow enum dpq_recv_event. */
static const int8_t recv_table[DPQ_RECV_NSTATES][DPQ_REV_NEVENTS] = {
	/*                    DATA  FIN   ALLIN READ  RESET RDRST BLOCKED */
	[DPQ_RECV_NONE]     = { X,  X,    X,    X,    X,    X,    X },
	[DPQ_RECV_RECV]     = {
		DPQ_RECV_RECV, DPQ_RECV_SIZE_KNOWN, X, X,
		DPQ_RECV_RESET_RECVD, X, DPQ_RECV_RECV },
	[DPQ_RECV_SIZE_KNOWN] = {
		DPQ_RECV_SIZE_KNOWN, DPQ_RECV_SIZE_KNOWN,
		DPQ_RECV_DATA_RECVD, X, DPQ_RECV_RESET_RECVD, X,
		DPQ_RECV_SIZE_KNOWN },
	/* Data Recvd: a late RESET_STREAM is ignored and the data still
	 * delivered (§3.2 lets us choose). Retransmissions are dropped. */
	[DPQ_RECV_DATA_RECVD] = {
		DPQ_RECV_DATA_RECVD, DPQ_RECV_DATA_RECVD, X,
		DPQ_RECV_DATA_READ, DPQ_RECV_DATA_RECVD, X,
		DPQ_RECV_DATA_RECVD },
	[DPQ_RECV_DATA_READ] = {
		DPQ_RECV_DATA_READ, DPQ_RECV_DATA_READ, X, X,
		DPQ_RECV_DATA_READ, X, DPQ_RECV_DATA_READ },
	[DPQ_RECV_RESET_RECVD] = {
		DPQ_RECV_RESET_RECVD, DPQ_RECV_RESET_RECVD, X, X,
		DPQ_RECV_RESET_RECVD, DPQ_RECV_RESET_READ,
		DPQ_RECV_RESET_RECVD },
	[DPQ_RECV_RESET_READ] = {
		DPQ_RECV_RESET_READ, DPQ_RECV_RESET_READ, X, X,
		DPQ_RECV_RESET_READ, X, DPQ_RECV_RESET_READ },
};

#undef X

int
dpq_stream_send_next(enum dpq_send_state st, enum dpq_send_event ev)
{
	if ((unsigned)st >= DPQ_SEND_NSTATES || (unsigned)ev >= DPQ_SEV_NEVENTS)
		return -1;
	return send_table[st][ev];
}

int
dpq_stream_recv_next(enum dpq_recv_state st, enum dpq_recv_event ev)
{
	if ((unsigned)st >= DPQ_RECV_NSTATES || (unsigned)ev >= DPQ_REV_NEVENTS)
		return -1;
	return recv_table[st][ev];
}

int
dpq_stream_send_transition(struct dpq_stream *s, enum dpq_send_event ev)
{
	int to = dpq_stream_send_next(s->send_state, ev);

	if (to < 0)
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	s->send_state = (enum dpq_send_state)to;
	return 0;
}

int
dpq_stream_recv_transition(struct dpq_stream *s, enum dpq_recv_event ev)
{
	int to = dpq_stream_recv_next(s->recv_state, ev);

	if (to < 0)
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	s->recv_state = (enum dpq_recv_state)to;
	return 0;
}

const char *
dpq_stream_send_state_str(enum dpq_send_state st)
{
	static const char *const names[DPQ_SEND_NSTATES] = {
		"None", "Ready", "Send", "Data Sent", "Data Recvd",
		"Reset Sent", "Reset Recvd",
	};

	return (unsigned)st < DPQ_SEND_NSTATES ? names[st] : "UNKNOWN";
}

const char *
dpq_stream_recv_state_str(enum dpq_recv_state st)
{
	static const char *const names[DPQ_RECV_NSTATES] = {
		"None", "Recv", "Size Known", "Data Recvd", "Data Read",
		"Reset Recvd", "Reset Read",
	};

	return (unsigned)st < DPQ_RECV_NSTATES ? names[st] : "UNKNOWN";
}

int
dpq_stream_frame_check(uint64_t id, bool is_server, uint64_t frame_type,
		uint64_t local_opened)
{
	bool need_recv, need_send;

	if (dpq_frame_is_stream(frame_type) ||
	    frame_type == DPQ_FT_RESET_STREAM ||
	    frame_type == DPQ_FT_STREAM_DATA_BLOCKED) {
		need_recv = true;
		need_send = false;
	} else if (frame_type == DPQ_FT_MAX_STREAM_DATA ||
	    frame_type == DPQ_FT_STOP_SENDING) {
		need_recv = false;
		need_send = true;
	} else {
		return 0;
	}
	if (need_recv && !dpq_streamid_can_recv(id, is_server))
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	if (need_send && !dpq_streamid_can_send(id, is_server))
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	/* §19.8, §19.10, §19.5: a stream of ours we have not opened. */
	if (dpq_streamid_is_local(id, is_server) &&
	    dpq_streamid_index(id) >= local_opened)
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	return 0;
}

/* --- lifetime ---------------------------------------------------------- */

void
dpq_stream_init(struct dpq_stream *s, const struct dpq_mem *mem, uint64_t id,
		bool is_server, const struct dpq_stream_params *p, uint64_t now)
{
	s->id = id;
	dpq_recvbuf_init(&s->rb, p->recv_mem != NULL ? p->recv_mem : mem,
			p->recv_window);
	dpq_sendbuf_init(&s->sb, mem, p->send_buffer);
	dpq_flow_rx_init(&s->rx_fc, p->recv_window, p->recv_window_max, now);
	dpq_flow_tx_init(&s->tx_fc, p->send_max);
	s->reset_code = 0;
	s->stop_code = 0;
	s->local_reset_code = 0;
	s->local_stop_code = 0;
	/* §3.1, §3.2: a side exists if we may send / receive on it. */
	s->send_state = dpq_streamid_can_send(id, is_server) ?
	    DPQ_SEND_READY : DPQ_SEND_NONE;
	s->recv_state = dpq_streamid_can_recv(id, is_server) ?
	    DPQ_RECV_RECV : DPQ_RECV_NONE;
	s->events = 0;
	s->reset_pending = false;
	s->stop_pending = false;
	s->stop_requested = false;
	s->want_writable = false;
	s->closed = false;
}

void
dpq_stream_free(struct dpq_stream *s)
{
	dpq_recvbuf_free(&s->rb);
	dpq_sendbuf_free(&s->sb);
}

bool
dpq_stream_is_closed(const struct dpq_stream *s)
{
	bool send_done = s->send_state == DPQ_SEND_NONE ||
	    s->send_state == DPQ_SEND_DATA_RECVD ||
	    s->send_state == DPQ_SEND_RESET_RECVD;
	bool recv_done = s->recv_state == DPQ_RECV_NONE ||
	    s->recv_state == DPQ_RECV_DATA_READ ||
	    s->recv_state == DPQ_RECV_RESET_READ;

	return send_done && recv_done;
}

static void
check_closed(struct dpq_stream *s)
{
	if (!s->closed && dpq_stream_is_closed(s)) {
		s->closed = true;
		s->events |= DPQ_STREAM_EV_CLOSED;
	}
}

uint32_t
dpq_stream_take_events(struct dpq_stream *s)
{
	uint32_t ev;

	if ((s->events & DPQ_STREAM_EV_RESET) &&
	    s->recv_state == DPQ_RECV_RESET_RECVD)
		(void)dpq_stream_recv_transition(s, DPQ_REV_READ_RESET);
	check_closed(s);
	ev = s->events;
	s->events = 0;
	return ev;
}

/* Move the receive side along as data completes or is read. */
static void
recv_progress(struct dpq_stream *s)
{
	if (s->recv_state == DPQ_RECV_SIZE_KNOWN &&
	    dpq_recvbuf_all_received(&s->rb))
		(void)dpq_stream_recv_transition(s, DPQ_REV_ALL_RECVD);
	if (s->recv_state == DPQ_RECV_DATA_RECVD &&
	    dpq_recvbuf_all_read(&s->rb))
		(void)dpq_stream_recv_transition(s, DPQ_REV_READ_ALL);
	/* An application that stopped reading never reads the reset. */
	if (s->recv_state == DPQ_RECV_RESET_RECVD && s->stop_requested)
		(void)dpq_stream_recv_transition(s, DPQ_REV_READ_RESET);
	check_closed(s);
}

/* --- frames from the peer ---------------------------------------------- */

int
dpq_stream_on_stream(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t off, const uint8_t *data, size_t len, bool fin,
		uint64_t now)
{
	enum dpq_recv_event ev = fin ? DPQ_REV_RECV_FIN : DPQ_REV_RECV_DATA;
	uint64_t old_max = dpq_recvbuf_max_recv(&s->rb), end, delta;
	uint64_t old_read = s->rb.read_off, old_avail;
	bool old_all = dpq_recvbuf_all_received(&s->rb);
	int rc;

	(void)now;
	/* §19.8: STREAM on a send-only stream: the NONE row refuses. */
	if (dpq_stream_recv_next(s->recv_state, ev) < 0)
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	rc = dpq_recvbuf_check(&s->rb, off, len, fin);
	if (rc != 0)
		return rc;
	end = off + len;
	delta = end > old_max ? end - old_max : 0;
	/* §4.1: stream limit, then the connection's sum of limits. */
	rc = dpq_flow_rx_check(&s->rx_fc, end);
	if (rc == 0)
		rc = dpq_flow_rx_check(conn, conn->recvd + delta);
	if (rc != 0)
		return rc;
	old_avail = dpq_recvbuf_readable(&s->rb);
	rc = dpq_recvbuf_insert(&s->rb, off, data, len, fin);
	if (rc != 0)
		return rc;
	(void)dpq_flow_rx_on_recv(&s->rx_fc, end);
	(void)dpq_flow_rx_on_recv(conn, conn->recvd + delta);
	(void)dpq_stream_recv_transition(s, ev);
	if (s->rb.discarding) {
		/* Dropped bytes count as consumed for the connection (§3.5:
		 * the application no longer reads this stream). */
		if (s->rb.read_off > old_read)
			dpq_flow_rx_consume(conn, s->rb.read_off - old_read,
					now, 0);
	} else if (dpq_recvbuf_readable(&s->rb) > old_avail ||
	    (!old_all && dpq_recvbuf_all_received(&s->rb))) {
		s->events |= DPQ_STREAM_EV_READABLE;
	}
	recv_progress(s);
	return 0;
}

int
dpq_stream_on_reset_stream(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t app_error, uint64_t final_size, uint64_t now,
		uint64_t srtt)
{
	uint64_t old_max = dpq_recvbuf_max_recv(&s->rb), delta, unread;
	enum dpq_recv_state before = s->recv_state;
	int rc;

	/* §19.4: RESET_STREAM for a send-only stream. */
	if (dpq_stream_recv_next(s->recv_state, DPQ_REV_RECV_RESET) < 0)
		return DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);
	/* §4.5: the final size must agree with what we know... */
	rc = dpq_recvbuf_reset_check(&s->rb, final_size);
	if (rc != 0)
		return rc;
	/* ...and counts against both limits. */
	delta = final_size > old_max ? final_size - old_max : 0;
	rc = dpq_flow_rx_check(&s->rx_fc, final_size);
	if (rc == 0)
		rc = dpq_flow_rx_check(conn, conn->recvd + delta);
	if (rc != 0)
		return rc;
	rc = dpq_recvbuf_reset(&s->rb, final_size);
	if (rc != 0)
		return rc;
	(void)dpq_flow_rx_on_recv(&s->rx_fc, final_size);
	(void)dpq_flow_rx_on_recv(conn, conn->recvd + delta);
	(void)dpq_stream_recv_transition(s, DPQ_REV_RECV_RESET);
	if (s->recv_state == DPQ_RECV_RESET_RECVD &&
	    before != DPQ_RECV_RESET_RECVD) {
		s->reset_code = app_error;
		/* Unread bytes will never be read: give the connection its
		 * credit back (§4.5); nothing more to say on the stream. */
		unread = final_size - s->rb.read_off;
		dpq_recvbuf_discard(&s->rb);
		dpq_flow_rx_consume(conn, unread, now, srtt);
		s->rx_fc.pending = false;
		s->stop_pending = false;
		if (!s->stop_requested)
			s->events |= DPQ_STREAM_EV_RESET;
	}
	recv_progress(s);
	return 0;
}

/* Queue RESET_STREAM (local reset or answer to STOP_SENDING). */
static int
send_reset(struct dpq_stream *s, uint64_t app_error)
{
	int rc;

	if (s->send_state != DPQ_SEND_READY && s->send_state != DPQ_SEND_SEND &&
	    s->send_state != DPQ_SEND_DATA_SENT)
		return -EPIPE;
	rc = dpq_stream_send_transition(s, DPQ_SEV_RESET);
	if (rc != 0)
		return rc;
	s->local_reset_code = app_error;
	dpq_sendbuf_discard(&s->sb);
	s->tx_fc.blocked_pending = false;
	s->reset_pending = true;
	s->want_writable = false;
	return 0;
}

int
dpq_stream_on_stop_sending(struct dpq_stream *s, uint64_t app_error)
{
	int rc;

	/* §19.5: STOP_SENDING for a receive-only stream. */
	rc = dpq_stream_send_transition(s, DPQ_SEV_RECV_STOP_SENDING);
	if (rc != 0)
		return rc;
	/* §3.5: answer with RESET_STREAM unless already done or reset;
	 * the code of the STOP_SENDING frame may be used, and we do. */
	if (send_reset(s, app_error) == 0) {
		s->stop_code = app_error;
		s->events |= DPQ_STREAM_EV_STOPPED;
	}
	return 0;
}

int
dpq_stream_on_max_stream_data(struct dpq_stream *s, uint64_t max)
{
	int rc;

	/* §19.10: MAX_STREAM_DATA for a receive-only stream. */
	rc = dpq_stream_send_transition(s, DPQ_SEV_RECV_MAX_STREAM_DATA);
	if (rc != 0)
		return rc;
	if (dpq_flow_tx_on_max(&s->tx_fc, max) && s->want_writable) {
		/* Writes stopped DPQ_STREAM_SEND_AHEAD past the credit. */
		s->want_writable = false;
		s->events |= DPQ_STREAM_EV_WRITABLE;
	}
	return 0;
}

int
dpq_stream_on_stream_data_blocked(struct dpq_stream *s, uint64_t limit)
{
	(void)limit;
	/* §19.13: STREAM_DATA_BLOCKED for a send-only stream. */
	return dpq_stream_recv_transition(s, DPQ_REV_RECV_DATA_BLOCKED);
}

/* --- application ------------------------------------------------------- */

ssize_t
dpq_stream_write(struct dpq_stream *s, const uint8_t *data, size_t len,
		bool fin)
{
	return dpq_stream_write_capped(s, data, len, fin, UINT64_MAX);
}

ssize_t
dpq_stream_write_capped(struct dpq_stream *s, const uint8_t *data, size_t len,
		bool fin, uint64_t cap)
{
	size_t take = len;
	ssize_t n;

	if (s->send_state != DPQ_SEND_READY && s->send_state != DPQ_SEND_SEND)
		return -EPIPE;
	if (s->sb.write_off >= cap)
		take = 0;
	else if (take > cap - s->sb.write_off)
		take = (size_t)(cap - s->sb.write_off);
	n = dpq_sendbuf_append(&s->sb, data, take, fin && take == len);
	if (n >= 0 && (size_t)n < len)
		s->want_writable = true;
	return n;
}

size_t
dpq_stream_peek(const struct dpq_stream *s, const uint8_t **p, bool *fin)
{
	size_t n = 0;

	*p = NULL;
	*fin = false;
	if (s->recv_state == DPQ_RECV_NONE || s->rb.discarding)
		return 0;
	n = dpq_recvbuf_peek(&s->rb, p);
	*fin = dpq_recvbuf_final_known(&s->rb) &&
	    s->rb.read_off + n == s->rb.final_size;
	return n;
}

void
dpq_stream_consume(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t n, uint64_t now, uint64_t srtt)
{
	uint64_t before = s->rb.read_off, done;

	if (s->recv_state == DPQ_RECV_NONE || s->rb.discarding)
		return;
	dpq_recvbuf_consume(&s->rb, n);
	done = s->rb.read_off - before;
	dpq_flow_rx_consume(&s->rx_fc, done, now, srtt);
	dpq_flow_rx_consume(conn, done, now, srtt);
	/* The buffer may take whatever the new limit allows. */
	dpq_recvbuf_set_limit(&s->rb, s->rx_fc.max);
	recv_progress(s);
}

int
dpq_stream_reset(struct dpq_stream *s, uint64_t app_error)
{
	return send_reset(s, app_error);
}

int
dpq_stream_stop_sending(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t app_error, uint64_t now, uint64_t srtt)
{
	uint64_t before;

	if (s->recv_state == DPQ_RECV_DATA_RECVD && !s->stop_requested) {
		/* Everything arrived already: no STOP_SENDING to send (§3.5),
		 * but the application abandons the unread bytes, so the
		 * receive side finishes (Data Read) and the stream can
		 * close. */
		s->stop_requested = true;
		s->events &= ~(uint32_t)DPQ_STREAM_EV_READABLE;
		before = s->rb.read_off;
		dpq_recvbuf_discard(&s->rb);
		dpq_flow_rx_consume(conn, s->rb.read_off - before, now, srtt);
		recv_progress(s);
		return 0;
	}
	/* §3.5: only while the peer may still be sending. */
	if ((s->recv_state != DPQ_RECV_RECV &&
	    s->recv_state != DPQ_RECV_SIZE_KNOWN) || s->stop_requested)
		return -EPIPE;
	s->stop_requested = true;
	s->events &= ~(uint32_t)DPQ_STREAM_EV_READABLE;
	s->local_stop_code = app_error;
	s->stop_pending = true;
	s->rx_fc.pending = false;
	before = s->rb.read_off;
	dpq_recvbuf_discard(&s->rb);
	/* Bytes dropped unread still give the connection credit back. */
	dpq_flow_rx_consume(conn, s->rb.read_off - before, now, srtt);
	recv_progress(s);
	return 0;
}

/* --- the packet builder ------------------------------------------------ */

bool
dpq_stream_next(struct dpq_stream *s, struct dpq_flow_tx *conn,
		uint64_t max_len, uint64_t *off, uint64_t *len, bool *fin)
{
	uint64_t credit = dpq_flow_tx_credit(conn), limit;
	bool any;

	if (s->send_state == DPQ_SEND_NONE || s->send_state == DPQ_SEND_RESET_SENT ||
	    s->send_state == DPQ_SEND_RESET_RECVD ||
	    s->send_state == DPQ_SEND_DATA_RECVD)
		return false;
	/* New data may go up to the stream limit and use at most the
	 * connection's remaining credit (§4.1). */
	limit = s->sb.sent_off + credit;
	if (limit > s->tx_fc.max || limit < s->sb.sent_off)
		limit = s->tx_fc.max;
	any = dpq_sendbuf_next(&s->sb, limit, max_len, off, len, fin);
	if (s->sb.sent_off < s->sb.write_off &&
	    (!any || *off + *len <= s->sb.sent_off)) {
		/* New data waits: on whose credit? */
		if (s->sb.sent_off >= s->tx_fc.max)
			dpq_flow_tx_note_blocked(&s->tx_fc);
		if (credit == 0)
			dpq_flow_tx_note_blocked(conn);
	}
	return any;
}

void
dpq_stream_copy(const struct dpq_stream *s, uint64_t off, uint8_t *dst,
		size_t len)
{
	dpq_sendbuf_copy(&s->sb, off, dst, len);
}

int
dpq_stream_on_data_sent(struct dpq_stream *s, struct dpq_flow_tx *conn,
		uint64_t off, uint64_t len, bool fin)
{
	uint64_t end = off + len, fresh;
	int rc;

	rc = dpq_stream_send_transition(s, fin ? DPQ_SEV_SEND_FIN :
	    DPQ_SEV_SEND_DATA);
	if (rc != 0)
		return rc;
	fresh = end > s->sb.sent_off ? end - s->sb.sent_off : 0;
	rc = dpq_sendbuf_on_sent(&s->sb, off, len, fin);
	if (rc != 0)
		return rc;
	dpq_flow_tx_add_sent(&s->tx_fc, fresh);
	dpq_flow_tx_add_sent(conn, fresh);
	return 0;
}

int
dpq_stream_on_data_acked(struct dpq_stream *s, uint64_t off, uint64_t len,
		bool fin)
{
	uint64_t room = dpq_sendbuf_room(&s->sb);
	int rc;

	rc = dpq_sendbuf_on_acked(&s->sb, off, len, fin);
	if (rc != 0)
		return rc;
	if (s->want_writable && dpq_sendbuf_room(&s->sb) > room) {
		s->want_writable = false;
		s->events |= DPQ_STREAM_EV_WRITABLE;
	}
	if (s->send_state == DPQ_SEND_DATA_SENT &&
	    dpq_sendbuf_all_acked(&s->sb)) {
		(void)dpq_stream_send_transition(s, DPQ_SEV_ALL_ACKED);
		check_closed(s);
	}
	return 0;
}

int
dpq_stream_on_data_lost(struct dpq_stream *s, uint64_t off, uint64_t len,
		bool fin)
{
	return dpq_sendbuf_on_lost(&s->sb, off, len, fin);
}

bool
dpq_stream_reset_due(const struct dpq_stream *s, uint64_t *app_error,
		uint64_t *final_size)
{
	if (!s->reset_pending)
		return false;
	*app_error = s->local_reset_code;
	*final_size = s->sb.write_off;
	return true;
}

void
dpq_stream_on_reset_sent(struct dpq_stream *s)
{
	s->reset_pending = false;
}

void
dpq_stream_on_reset_acked(struct dpq_stream *s)
{
	if (dpq_stream_send_transition(s, DPQ_SEV_RESET_ACKED) == 0) {
		s->reset_pending = false;
		check_closed(s);
	}
}

void
dpq_stream_on_reset_lost(struct dpq_stream *s)
{
	if (s->send_state == DPQ_SEND_RESET_SENT)
		s->reset_pending = true;
}

bool
dpq_stream_stop_due(const struct dpq_stream *s, uint64_t *app_error)
{
	if (!s->stop_pending)
		return false;
	*app_error = s->local_stop_code;
	return true;
}

void
dpq_stream_on_stop_sent(struct dpq_stream *s)
{
	s->stop_pending = false;
}

void
dpq_stream_on_stop_lost(struct dpq_stream *s)
{
	/* Worth repeating only while the peer may still send (§3.5). */
	if (s->recv_state == DPQ_RECV_RECV ||
	    s->recv_state == DPQ_RECV_SIZE_KNOWN)
		s->stop_pending = true;
}

bool
dpq_stream_max_data_due(const struct dpq_stream *s, uint64_t *max)
{
	/* §3.2: once the final size is known no more credit is needed. */
	if (s->recv_state != DPQ_RECV_RECV || s->stop_requested)
		return false;
	return dpq_flow_rx_due(&s->rx_fc, max);
}

void
dpq_stream_on_max_data_sent(struct dpq_stream *s, uint64_t max)
{
	dpq_flow_rx_on_sent(&s->rx_fc, max);
}

void
dpq_stream_on_max_data_lost(struct dpq_stream *s, uint64_t max)
{
	dpq_flow_rx_on_lost(&s->rx_fc, max);
}

bool
dpq_stream_blocked_due(const struct dpq_stream *s, uint64_t *limit)
{
	if (s->send_state != DPQ_SEND_READY && s->send_state != DPQ_SEND_SEND)
		return false;
	return dpq_flow_tx_blocked_due(&s->tx_fc, limit);
}

void
dpq_stream_on_blocked_sent(struct dpq_stream *s, uint64_t limit)
{
	dpq_flow_tx_on_blocked_sent(&s->tx_fc, limit);
}

void
dpq_stream_on_blocked_lost(struct dpq_stream *s, uint64_t limit)
{
	dpq_flow_tx_on_blocked_lost(&s->tx_fc, limit);
}
