/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_stream.c: stream IDs (RFC 9000 §2.1), the send and receive state
 * machines (§3.1, §3.2) checked pair by pair against tables written here
 * from the RFC figures, direction checks of §19.x, and the stream object:
 * FIN, reset, STOP_SENDING, flow accounting, events.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/stream.h"
#include "streams_test.h"

#define SSE	DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR)

static void
test_streamid_types(void **state)
{
	static const struct {
		uint64_t id;
		enum dpq_stream_type t;
		bool server, uni;
	} v[] = {
		{ 0, DPQ_STREAM_CLIENT_BIDI, false, false },
		{ 1, DPQ_STREAM_SERVER_BIDI, true, false },
		{ 2, DPQ_STREAM_CLIENT_UNI, false, true },
		{ 3, DPQ_STREAM_SERVER_UNI, true, true },
		{ 4, DPQ_STREAM_CLIENT_BIDI, false, false },
		{ 15, DPQ_STREAM_SERVER_UNI, true, true },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t id = v[i].id;

		assert_int_equal(dpq_streamid_type(id), v[i].t);
		assert_int_equal(dpq_streamid_is_server_initiated(id), v[i].server);
		assert_int_equal(dpq_streamid_is_uni(id), v[i].uni);
		assert_int_equal(dpq_streamid_is_bidi(id), !v[i].uni);
		/* Local to the side that opened it. */
		assert_int_equal(dpq_streamid_is_local(id, v[i].server), true);
		assert_int_equal(dpq_streamid_is_local(id, !v[i].server), false);
		/* The opener sends; the other side receives; bidi both. */
		assert_true(dpq_streamid_can_send(id, v[i].server));
		assert_true(dpq_streamid_can_recv(id, !v[i].server));
		assert_int_equal(dpq_streamid_can_recv(id, v[i].server), !v[i].uni);
		assert_int_equal(dpq_streamid_can_send(id, !v[i].server), !v[i].uni);
		assert_int_equal(dpq_streamid_type_of(v[i].server, v[i].uni), v[i].t);
		assert_int_equal(dpq_streamid_make(v[i].t, dpq_streamid_index(id)),
				id);
	}
	/* count <-> id: the 3rd server uni stream is 11 and needs 3. */
	assert_int_equal(dpq_streamid_make(DPQ_STREAM_SERVER_UNI, 2), 11);
	assert_int_equal(dpq_streamid_index(11), 2);
	assert_int_equal(dpq_streamid_count_needed(11), 3);
	assert_int_equal(dpq_streamid_count_needed(0), 1);
	/* Largest id: 2^62 - 1 is stream number 2^60 - 1. */
	assert_int_equal(dpq_streamid_count_needed((UINT64_C(1) << 62) - 1),
			UINT64_C(1) << 60);
}

/* RFC 9000 §3.1 Figure 2, written independently of stream.c. */
static int
expect_send(enum dpq_send_state st, enum dpq_send_event ev)
{
	bool peer = ev == DPQ_SEV_RECV_MAX_STREAM_DATA ||
	    ev == DPQ_SEV_RECV_STOP_SENDING;

	if (st == DPQ_SEND_NONE)
		return -1;
	if (peer)
		return st;	/* allowed everywhere, no state change */
	switch (st) {
	case DPQ_SEND_READY:
	case DPQ_SEND_SEND:
		if (ev == DPQ_SEV_SEND_DATA)
			return DPQ_SEND_SEND;
		if (ev == DPQ_SEV_SEND_FIN)
			return DPQ_SEND_DATA_SENT;
		if (ev == DPQ_SEV_RESET)
			return DPQ_SEND_RESET_SENT;
		return -1;
	case DPQ_SEND_DATA_SENT:
		if (ev == DPQ_SEV_SEND_DATA || ev == DPQ_SEV_SEND_FIN)
			return DPQ_SEND_DATA_SENT;
		if (ev == DPQ_SEV_ALL_ACKED)
			return DPQ_SEND_DATA_RECVD;
		if (ev == DPQ_SEV_RESET)
			return DPQ_SEND_RESET_SENT;
		return -1;
	case DPQ_SEND_RESET_SENT:
		if (ev == DPQ_SEV_RESET)
			return DPQ_SEND_RESET_SENT;
		if (ev == DPQ_SEV_RESET_ACKED)
			return DPQ_SEND_RESET_RECVD;
		return -1;
	default:	/* terminal */
		return -1;
	}
}

/* RFC 9000 §3.2 Figure 3. */
static int
expect_recv(enum dpq_recv_state st, enum dpq_recv_event ev)
{
	bool peer = ev == DPQ_REV_RECV_DATA || ev == DPQ_REV_RECV_FIN ||
	    ev == DPQ_REV_RECV_RESET || ev == DPQ_REV_RECV_DATA_BLOCKED;

	switch (st) {
	case DPQ_RECV_NONE:
		return -1;
	case DPQ_RECV_RECV:
		if (ev == DPQ_REV_RECV_DATA || ev == DPQ_REV_RECV_DATA_BLOCKED)
			return DPQ_RECV_RECV;
		if (ev == DPQ_REV_RECV_FIN)
			return DPQ_RECV_SIZE_KNOWN;
		if (ev == DPQ_REV_RECV_RESET)
			return DPQ_RECV_RESET_RECVD;
		return -1;
	case DPQ_RECV_SIZE_KNOWN:
		if (ev == DPQ_REV_ALL_RECVD)
			return DPQ_RECV_DATA_RECVD;
		if (ev == DPQ_REV_RECV_RESET)
			return DPQ_RECV_RESET_RECVD;
		return peer ? (int)st : -1;
	case DPQ_RECV_DATA_RECVD:
		if (ev == DPQ_REV_READ_ALL)
			return DPQ_RECV_DATA_READ;
		return peer ? (int)st : -1;
	case DPQ_RECV_RESET_RECVD:
		if (ev == DPQ_REV_READ_RESET)
			return DPQ_RECV_RESET_READ;
		return peer ? (int)st : -1;
	default:	/* Data Read, Reset Read: peer frames ignored */
		return peer ? (int)st : -1;
	}
}

static void
test_send_transitions_all_pairs(void **state)
{
	struct dpq_stream s;
	int st, ev, legal = 0, illegal = 0;

	(void)state;
	for (st = 0; st < DPQ_SEND_NSTATES; st++) {
		for (ev = 0; ev < DPQ_SEV_NEVENTS; ev++) {
			int want = expect_send(st, ev);
			int rc;

			s.send_state = st;
			rc = dpq_stream_send_transition(&s, ev);
			if (want < 0) {
				assert_int_equal(rc, SSE);
				assert_int_equal(s.send_state, st);
				illegal++;
			} else {
				assert_int_equal(rc, 0);
				assert_int_equal(s.send_state, want);
				legal++;
			}
		}
	}
	assert_true(legal > 0 && illegal > 0);
	/* Out-of-range input is refused, not indexed. */
	assert_int_equal(dpq_stream_send_next(DPQ_SEND_NSTATES, 0), -1);
	assert_int_equal(dpq_stream_send_next(0, DPQ_SEV_NEVENTS), -1);
	assert_string_equal(dpq_stream_send_state_str(DPQ_SEND_DATA_SENT),
			"Data Sent");
}

static void
test_recv_transitions_all_pairs(void **state)
{
	struct dpq_stream s;
	int st, ev;

	(void)state;
	for (st = 0; st < DPQ_RECV_NSTATES; st++) {
		for (ev = 0; ev < DPQ_REV_NEVENTS; ev++) {
			int want = expect_recv(st, ev);
			int rc;

			s.recv_state = st;
			rc = dpq_stream_recv_transition(&s, ev);
			if (want < 0) {
				assert_int_equal(rc, SSE);
				assert_int_equal(s.recv_state, st);
			} else {
				assert_int_equal(rc, 0);
				assert_int_equal(s.recv_state, want);
			}
		}
	}
	assert_int_equal(dpq_stream_recv_next(DPQ_RECV_NSTATES, 0), -1);
	assert_string_equal(dpq_stream_recv_state_str(DPQ_RECV_SIZE_KNOWN),
			"Size Known");
}

static void
test_frame_check(void **state)
{
	const int E = DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR);

	(void)state;
	/* We are the server; client uni 2 is receive-only for us, server
	 * uni 3 send-only; we opened one stream of each type. */
	assert_int_equal(dpq_stream_frame_check(2, true, 0x0a, 1), 0);
	assert_int_equal(dpq_stream_frame_check(3, true, 0x0f, 1), E);
	assert_int_equal(dpq_stream_frame_check(3, true, DPQ_FT_RESET_STREAM, 1), E);
	assert_int_equal(dpq_stream_frame_check(3, true,
			DPQ_FT_STREAM_DATA_BLOCKED, 1), E);
	assert_int_equal(dpq_stream_frame_check(2, true,
			DPQ_FT_MAX_STREAM_DATA, 1), E);
	assert_int_equal(dpq_stream_frame_check(2, true, DPQ_FT_STOP_SENDING, 1), E);
	assert_int_equal(dpq_stream_frame_check(3, true,
			DPQ_FT_MAX_STREAM_DATA, 1), 0);
	assert_int_equal(dpq_stream_frame_check(3, true, DPQ_FT_STOP_SENDING, 1), 0);
	/* Our bidi stream 1 exists, 5 (number 1) not yet. */
	assert_int_equal(dpq_stream_frame_check(1, true, 0x08, 1), 0);
	assert_int_equal(dpq_stream_frame_check(5, true, 0x08, 1), E);
	assert_int_equal(dpq_stream_frame_check(5, true, DPQ_FT_STOP_SENDING, 1), E);
	assert_int_equal(dpq_stream_frame_check(5, true,
			DPQ_FT_MAX_STREAM_DATA, 1), E);
	/* Peer streams are the limit's business, not this check's. */
	assert_int_equal(dpq_stream_frame_check(400, true, 0x08, 0), 0);
	/* As the client: the roles flip. */
	assert_int_equal(dpq_stream_frame_check(2, false, 0x08, 1), E);
	assert_int_equal(dpq_stream_frame_check(3, false, 0x08, 0), 0);
	/* Other frame types pass. */
	assert_int_equal(dpq_stream_frame_check(3, true, DPQ_FT_PING, 0), 0);
}

static const struct dpq_stream_params params = {
	.recv_window = 10000,
	.recv_window_max = 10000,
	.send_max = 5000,
	.send_buffer = 100000,
};

static void
test_stream_receive_fin_and_close(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_flow_rx conn;
	struct dpq_flow_tx ctx;
	struct dpq_stream s;
	uint8_t data[3000];
	const uint8_t *p;
	uint64_t off, len;
	bool fin;
	size_t n;

	(void)state;
	test_fill_pattern(data, 0, sizeof(data));
	dpq_flow_rx_init(&conn, 100000, 100000, 0);
	dpq_flow_tx_init(&ctx, 100000);
	/* Server side, client bidi stream 0. */
	dpq_stream_init(&s, &m, 0, true, &params, 0);
	assert_int_equal(s.send_state, DPQ_SEND_READY);
	assert_int_equal(s.recv_state, DPQ_RECV_RECV);
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 1000, data + 1000,
			2000, true, 0), 0);
	assert_int_equal(s.recv_state, DPQ_RECV_SIZE_KNOWN);
	assert_int_equal(conn.recvd, 3000);
	assert_int_equal(dpq_stream_take_events(&s), 0);	/* nothing readable */
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 0, data, 1000, false,
			0), 0);
	assert_int_equal(s.recv_state, DPQ_RECV_DATA_RECVD);
	assert_int_equal(conn.recvd, 3000);	/* no double count */
	assert_int_equal(dpq_stream_take_events(&s), DPQ_STREAM_EV_READABLE);
	while ((n = dpq_stream_peek(&s, &p, &fin)) > 0) {
		assert_memory_equal(p, data + s.rb.read_off, n);
		dpq_stream_consume(&s, &conn, n, 0, 0);
	}
	assert_true(fin);
	assert_int_equal(s.recv_state, DPQ_RECV_DATA_READ);
	assert_int_equal(conn.consumed, 3000);
	assert_false(dpq_stream_is_closed(&s));
	/* Answer with data + FIN; acked: both sides terminal -> CLOSED. */
	assert_int_equal(dpq_stream_write(&s, data, 100, true), 100);
	assert_true(dpq_stream_next(&s, &ctx, 1000, &off, &len, &fin));
	assert_int_equal(len, 100);
	assert_true(fin);
	assert_int_equal(dpq_stream_on_data_sent(&s, &ctx, off, len, fin), 0);
	assert_int_equal(s.send_state, DPQ_SEND_DATA_SENT);
	assert_int_equal(ctx.sent, 100);
	assert_int_equal(s.tx_fc.sent, 100);
	assert_int_equal(dpq_stream_write(&s, data, 1, false), -EPIPE);
	assert_int_equal(dpq_stream_on_data_acked(&s, off, len, fin), 0);
	assert_int_equal(s.send_state, DPQ_SEND_DATA_RECVD);
	assert_true(dpq_stream_take_events(&s) & DPQ_STREAM_EV_CLOSED);
	dpq_stream_free(&s);
	assert_int_equal(ta.live, 0);
}

static void
test_stream_wrong_direction(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_flow_rx conn;
	struct dpq_stream s;
	uint8_t b = 0;

	(void)state;
	dpq_flow_rx_init(&conn, 100000, 100000, 0);
	/* Server's own uni stream 3: no receive side. */
	dpq_stream_init(&s, &m, 3, true, &params, 0);
	assert_int_equal(s.recv_state, DPQ_RECV_NONE);
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 0, &b, 1, false, 0),
			DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR));
	assert_int_equal(dpq_stream_on_reset_stream(&s, &conn, 1, 0, 0, 0),
			DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR));
	assert_int_equal(dpq_stream_on_stream_data_blocked(&s, 0),
			DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR));
	assert_int_equal(dpq_stream_on_max_stream_data(&s, 9000), 0);
	assert_int_equal(s.tx_fc.max, 9000);
	dpq_stream_free(&s);
	/* Client's uni stream 2 seen by the server: no send side. */
	dpq_stream_init(&s, &m, 2, true, &params, 0);
	assert_int_equal(s.send_state, DPQ_SEND_NONE);
	assert_int_equal(dpq_stream_on_max_stream_data(&s, 9000),
			DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR));
	assert_int_equal(dpq_stream_on_stop_sending(&s, 7),
			DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR));
	assert_int_equal(dpq_stream_write(&s, &b, 1, false), -EPIPE);
	assert_int_equal(dpq_stream_reset(&s, 1), -EPIPE);
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 0, &b, 1, true, 0), 0);
	dpq_stream_free(&s);
	assert_int_equal(ta.live, 0);
}

static void
test_stream_flow_errors(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_flow_rx conn;
	struct dpq_stream s, s2;
	static uint8_t data[10001];

	(void)state;
	dpq_flow_rx_init(&conn, 15000, 15000, 0);
	dpq_stream_init(&s, &m, 0, true, &params, 0);
	dpq_stream_init(&s2, &m, 4, true, &params, 0);
	/* Stream limit 10000: one byte over. */
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 0, data, 10001, false,
			0), DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	assert_int_equal(conn.recvd, 0);
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 9000, data, 1000,
			false, 0), 0);
	/* Connection limit 15000: 10000 used, 5001 more is over. */
	assert_int_equal(dpq_stream_on_stream(&s2, &conn, 5000, data, 1, false,
			0), DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	assert_int_equal(dpq_stream_on_stream(&s2, &conn, 4999, data, 1, false,
			0), 0);
	assert_int_equal(conn.recvd, 15000);
	/* A RESET_STREAM final size also counts (§4.5). */
	assert_int_equal(dpq_stream_on_reset_stream(&s2, &conn, 9, 5001, 0, 0),
			DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	/* ...and must not be below received data. */
	assert_int_equal(dpq_stream_on_reset_stream(&s2, &conn, 9, 4999, 0, 0),
			DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR));
	assert_int_equal(dpq_stream_on_reset_stream(&s2, &conn, 9, 5000, 0, 0),
			0);
	assert_int_equal(s2.recv_state, DPQ_RECV_RESET_RECVD);
	/* Unread bytes are given back to the connection. */
	assert_int_equal(conn.consumed, 5000);
	assert_int_equal(dpq_stream_take_events(&s2), DPQ_STREAM_EV_RESET);
	assert_int_equal(s2.reset_code, 9);
	assert_int_equal(s2.recv_state, DPQ_RECV_RESET_READ);
	/* Duplicate RESET_STREAM: fine; another size: FINAL_SIZE_ERROR. */
	assert_int_equal(dpq_stream_on_reset_stream(&s2, &conn, 9, 5000, 0, 0),
			0);
	assert_int_equal(dpq_stream_on_reset_stream(&s2, &conn, 9, 5002, 0, 0),
			DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR));
	dpq_stream_free(&s);
	dpq_stream_free(&s2);
	assert_int_equal(ta.live, 0);
}

static void
test_stream_stop_sending_and_reset(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_flow_rx conn;
	struct dpq_flow_tx ctx;
	struct dpq_stream s;
	uint8_t data[4000] = { 0 };
	uint64_t off, len, code, fsize;
	bool fin;

	(void)state;
	dpq_flow_rx_init(&conn, 100000, 100000, 0);
	dpq_flow_tx_init(&ctx, 100000);
	/* Client side, own bidi stream 0. */
	dpq_stream_init(&s, &m, 0, false, &params, 0);
	assert_int_equal(dpq_stream_write(&s, data, 4000, false), 4000);
	assert_true(dpq_stream_next(&s, &ctx, 1000, &off, &len, &fin));
	assert_int_equal(dpq_stream_on_data_sent(&s, &ctx, off, len, fin), 0);
	assert_int_equal(s.send_state, DPQ_SEND_SEND);
	/* Peer: STOP_SENDING code 77 -> RESET_STREAM 77, final size 1000. */
	assert_int_equal(dpq_stream_on_stop_sending(&s, 77), 0);
	assert_int_equal(s.send_state, DPQ_SEND_RESET_SENT);
	assert_true(dpq_stream_take_events(&s) & DPQ_STREAM_EV_STOPPED);
	assert_int_equal(s.stop_code, 77);
	assert_true(dpq_stream_reset_due(&s, &code, &fsize));
	assert_int_equal(code, 77);
	assert_int_equal(fsize, 1000);
	assert_false(dpq_stream_next(&s, &ctx, 1000, &off, &len, &fin));
	assert_int_equal(dpq_sendbuf_mem(&s.sb), 0);
	dpq_stream_on_reset_sent(&s);
	assert_false(dpq_stream_reset_due(&s, &code, &fsize));
	dpq_stream_on_reset_lost(&s);
	assert_true(dpq_stream_reset_due(&s, &code, &fsize));
	dpq_stream_on_reset_sent(&s);
	/* A second STOP_SENDING changes nothing. */
	assert_int_equal(dpq_stream_on_stop_sending(&s, 78), 0);
	assert_false(dpq_stream_reset_due(&s, &code, &fsize));
	dpq_stream_on_reset_acked(&s);
	assert_int_equal(s.send_state, DPQ_SEND_RESET_RECVD);
	dpq_stream_on_reset_lost(&s);	/* late loss: ignored */
	assert_false(dpq_stream_reset_due(&s, &code, &fsize));
	assert_int_equal(dpq_stream_reset(&s, 1), -EPIPE);

	/* We stop reading: STOP_SENDING due, data dropped, credit back. */
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 0, data, 3000, false,
			0), 0);
	assert_int_equal(dpq_stream_stop_sending(&s, &conn, 5, 0, 0), 0);
	assert_true(dpq_stream_stop_due(&s, &code));
	assert_int_equal(code, 5);
	assert_int_equal(conn.consumed, 3000);
	assert_int_equal(dpq_recvbuf_mem(&s.rb), 0);
	dpq_stream_on_stop_sent(&s);
	dpq_stream_on_stop_lost(&s);
	assert_true(dpq_stream_stop_due(&s, &code));
	/* More data arrives anyway: counted and given back. */
	assert_int_equal(dpq_stream_on_stream(&s, &conn, 3000, data, 500,
			false, 0), 0);
	assert_int_equal(conn.consumed, 3500);
	/* The peer answers with RESET_STREAM: stream closes by itself. */
	assert_int_equal(dpq_stream_on_reset_stream(&s, &conn, 5, 3600, 0, 0),
			0);
	assert_int_equal(conn.consumed, 3600);
	assert_int_equal(s.recv_state, DPQ_RECV_RESET_READ);
	assert_false(dpq_stream_stop_due(&s, &code));
	assert_true(dpq_stream_is_closed(&s));
	assert_true(dpq_stream_take_events(&s) & DPQ_STREAM_EV_CLOSED);
	dpq_stream_free(&s);
	assert_int_equal(ta.live, 0);
}

static void
test_stream_blocked_and_credit(void **state)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct dpq_flow_tx ctx;
	struct dpq_stream s;
	static uint8_t data[8000];
	uint64_t off, len, lim;
	bool fin;

	(void)state;
	dpq_flow_tx_init(&ctx, 100000);
	dpq_stream_init(&s, &m, 0, false, &params, 0);	/* send_max 5000 */
	assert_int_equal(dpq_stream_write(&s, data, 8000, false), 8000);
	while (dpq_stream_next(&s, &ctx, 1200, &off, &len, &fin))
		assert_int_equal(dpq_stream_on_data_sent(&s, &ctx, off, len,
				fin), 0);
	assert_int_equal(s.sb.sent_off, 5000);
	assert_true(dpq_stream_blocked_due(&s, &lim));
	assert_int_equal(lim, 5000);
	dpq_stream_on_blocked_sent(&s, 5000);
	(void)dpq_stream_next(&s, &ctx, 1200, &off, &len, &fin);
	assert_false(dpq_stream_blocked_due(&s, &lim));	/* once per limit */
	/* MAX_STREAM_DATA: lower ignored, higher unblocks. */
	assert_int_equal(dpq_stream_on_max_stream_data(&s, 4000), 0);
	assert_int_equal(s.tx_fc.max, 5000);
	assert_int_equal(dpq_stream_on_max_stream_data(&s, 6000), 0);
	assert_true(dpq_stream_next(&s, &ctx, 5000, &off, &len, &fin));
	assert_int_equal(off, 5000);
	assert_int_equal(len, 1000);
	/* Connection credit caps too: DATA_BLOCKED on the conn. */
	dpq_flow_tx_init(&ctx, 5500);
	ctx.sent = 5000;
	assert_true(dpq_stream_next(&s, &ctx, 5000, &off, &len, &fin));
	assert_int_equal(len, 500);
	assert_int_equal(dpq_stream_on_data_sent(&s, &ctx, off, len, fin), 0);
	assert_false(dpq_stream_next(&s, &ctx, 5000, &off, &len, &fin));
	assert_true(dpq_flow_tx_blocked_due(&ctx, &lim));
	assert_int_equal(lim, 5500);
	dpq_stream_free(&s);
	assert_int_equal(ta.live, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streamid_types),
		cmocka_unit_test(test_send_transitions_all_pairs),
		cmocka_unit_test(test_recv_transitions_all_pairs),
		cmocka_unit_test(test_frame_check),
		cmocka_unit_test(test_stream_receive_fin_and_close),
		cmocka_unit_test(test_stream_wrong_direction),
		cmocka_unit_test(test_stream_flow_errors),
		cmocka_unit_test(test_stream_stop_sending_and_reset),
		cmocka_unit_test(test_stream_blocked_and_credit),
	};

	return cmocka_run_group_tests_name("streams_stream", tests, NULL, NULL);
}
