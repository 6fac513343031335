/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.h: one QUIC stream (RFC 9000 §2-§4): its send and receive state
 * machines (§3.1, §3.2), its buffers (sendbuf, recvbuf) and its
 * stream-level flow control (flow.h), with application events out.
 *
 * The stream does not know the connection. Connection-level flow control
 * comes in as a struct dpq_flow_rx / dpq_flow_tx argument; the connection
 * looks the stream up by ID, checks the frame with dpq_stream_frame_check()
 * and the peer's stream limit (dpq_streams_rx_open), then calls the
 * dpq_stream_on_*() handler. Every function that a peer's frame drives
 * returns 0 or a transport error, DPQ_TE_ERR(code) (errors.h), for the
 * connection to close with; -ENOMEM / -ENOBUFS mean "drop the packet
 * without acknowledging it".
 *
 * Each state machine has exactly one writer, a transition function that
 * looks the {state, event} pair up in a table and refuses pairs the RFC
 * does not allow with DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR). A stream
 * without a send side (the peer's unidirectional stream) or receive side
 * (ours) sits in the NONE state, where every event is refused: that is
 * how a STREAM frame on our send-only stream or a MAX_STREAM_DATA on a
 * receive-only stream becomes STREAM_STATE_ERROR (§19.8, §19.10).
 */
#ifndef DPQ_ENGINE_STREAM_H
#define DPQ_ENGINE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/engine/flow.h"
#include "dataplane/engine/recvbuf.h"
#include "dataplane/engine/sendbuf.h"
#include "dataplane/engine/streamid.h"

struct dpq_mem;

/* RFC 9000 §3.1, Figure 2. */
enum dpq_send_state {
	DPQ_SEND_NONE = 0,	/* no send side: peer's unidirectional stream */
	DPQ_SEND_READY,
	DPQ_SEND_SEND,
	DPQ_SEND_DATA_SENT,
	DPQ_SEND_DATA_RECVD,	/* terminal */
	DPQ_SEND_RESET_SENT,
	DPQ_SEND_RESET_RECVD,	/* terminal */
	DPQ_SEND_NSTATES
};

enum dpq_send_event {
	DPQ_SEV_SEND_DATA = 0,	/* STREAM (or STREAM_DATA_BLOCKED) sent,
				 * retransmissions included */
	DPQ_SEV_SEND_FIN,	/* STREAM with FIN sent */
	DPQ_SEV_ALL_ACKED,	/* every byte and the FIN acknowledged */
	DPQ_SEV_RESET,		/* RESET_STREAM queued or sent again */
	DPQ_SEV_RESET_ACKED,	/* RESET_STREAM acknowledged */
	DPQ_SEV_RECV_MAX_STREAM_DATA,	/* peer frames that need a send */
	DPQ_SEV_RECV_STOP_SENDING,	/* side (§19.10, §19.5) */
	DPQ_SEV_NEVENTS
};

/* RFC 9000 §3.2, Figure 3. */
enum dpq_recv_state {
	DPQ_RECV_NONE = 0,	/* no receive side: our unidirectional stream */
	DPQ_RECV_RECV,
	DPQ_RECV_SIZE_KNOWN,
	DPQ_RECV_DATA_RECVD,
	DPQ_RECV_DATA_READ,	/* terminal */
	DPQ_RECV_RESET_RECVD,
	DPQ_RECV_RESET_READ,	/* terminal */
	DPQ_RECV_NSTATES
};

enum dpq_recv_event {
	DPQ_REV_RECV_DATA = 0,	/* STREAM without FIN */
	DPQ_REV_RECV_FIN,	/* STREAM with FIN: final size known */
	DPQ_REV_ALL_RECVD,	/* every byte up to the final size is in */
	DPQ_REV_READ_ALL,	/* the application read all data */
	DPQ_REV_RECV_RESET,	/* RESET_STREAM */
	DPQ_REV_READ_RESET,	/* the application was told of the reset */
	DPQ_REV_RECV_DATA_BLOCKED,	/* STREAM_DATA_BLOCKED (§19.13) */
	DPQ_REV_NEVENTS
};

/* Application events (bits), collected until dpq_stream_take_events(). */
#define DPQ_STREAM_EV_READABLE	0x01	/* new bytes, or the FIN, to read */
#define DPQ_STREAM_EV_WRITABLE	0x02	/* a refused write may be retried */
#define DPQ_STREAM_EV_RESET	0x04	/* peer reset its side: reset_code */
#define DPQ_STREAM_EV_STOPPED	0x08	/* peer sent STOP_SENDING: stop_code;
					 * RESET_STREAM already queued */
#define DPQ_STREAM_EV_CLOSED	0x10	/* both sides terminal: free it */

/* Per-stream settings, picked by the connection from transport
 * parameters by stream type (§18.2 initial_max_stream_data_*). */
struct dpq_stream_params {
	uint64_t recv_window;		/* our limit for this stream */
	uint64_t recv_window_max;	/* auto-tuning cap */
	uint64_t send_max;		/* the peer's limit for this stream */
	uint64_t send_buffer;		/* unacknowledged bytes buffered */
	/* Allocator of the receive buffer (NULL: the stream's mem), so a
	 * connection can bound what its peers' data may pin. */
	const struct dpq_mem *recv_mem;
};

/* On a shard with a memory budget the application may queue at most
 * this many bytes beyond the peer's credit for a stream (MAX_STREAM_DATA),
 * a sixteenth of it once half the budget is in use (send_cap in
 * dataplane/quic/conn_stream.c, through dpq_stream_write_capped): a peer
 * that reads slowly then pins about its credit, not whole send buffers.
 * Writes are cut short there; more credit makes the stream writable. */
#define DPQ_STREAM_SEND_AHEAD	(256u * 1024u)

struct dpq_stream {
	uint64_t id;
	struct dpq_recvbuf rb;
	struct dpq_sendbuf sb;
	struct dpq_flow_rx rx_fc;	/* credit we give on this stream */
	struct dpq_flow_tx tx_fc;	/* credit the peer gives us */
	uint64_t reset_code;		/* peer's RESET_STREAM error code */
	uint64_t stop_code;		/* peer's STOP_SENDING error code */
	uint64_t local_reset_code;	/* our RESET_STREAM error code */
	uint64_t local_stop_code;	/* our STOP_SENDING error code */
	enum dpq_send_state send_state;
	enum dpq_recv_state recv_state;
	uint32_t events;		/* DPQ_STREAM_EV_* not yet taken */
	bool reset_pending;		/* RESET_STREAM to (re)send */
	bool stop_pending;		/* STOP_SENDING to (re)send */
	bool stop_requested;		/* application stopped reading */
	bool want_writable;		/* a write was cut short */
	bool closed;			/* CLOSED was raised */
};

/* --- state machines ---------------------------------------------------- */

/*
 * The only writers of send_state / recv_state. Return 0 with the new
 * state set, or DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR) (state unchanged)
 * for a pair §3 does not allow. For local events a refusal is a bug in
 * the caller.
 */
int dpq_stream_send_transition(struct dpq_stream *s, enum dpq_send_event ev);
int dpq_stream_recv_transition(struct dpq_stream *s, enum dpq_recv_event ev);

/* Next state of the table, or -1 if the pair is illegal (no change). */
int dpq_stream_send_next(enum dpq_send_state st, enum dpq_send_event ev);
int dpq_stream_recv_next(enum dpq_recv_state st, enum dpq_recv_event ev);

const char *dpq_stream_send_state_str(enum dpq_send_state st);
const char *dpq_stream_recv_state_str(enum dpq_recv_state st);

/*
 * Can a frame of this type name stream id at all, before any stream is
 * looked up? local_opened: streams of id's type we have opened (only used
 * when id is ours). Returns 0 or DPQ_TE_ERR(DPQ_TE_STREAM_STATE_ERROR)
 * for: STREAM,
 * RESET_STREAM or STREAM_DATA_BLOCKED on our unidirectional stream
 * (§19.8, §19.4, §19.13); MAX_STREAM_DATA or STOP_SENDING on the peer's
 * unidirectional stream (§19.10, §19.5); any of them on a stream of ours
 * not opened yet (§19.8, §19.10, §19.5). Frame types other than those
 * five return 0. Peer stream ids beyond our limit are
 * dpq_streams_rx_open()'s job (STREAM_LIMIT_ERROR).
 */
int dpq_stream_frame_check(uint64_t id, bool is_server, uint64_t frame_type,
		uint64_t local_opened);

/* --- lifetime ---------------------------------------------------------- */

/* A new stream (ours or the peer's): states per §3 (Ready / Recv, NONE
 * for the missing side of a unidirectional stream). now in us. */
void dpq_stream_init(struct dpq_stream *s, const struct dpq_mem *mem,
		uint64_t id, bool is_server, const struct dpq_stream_params *p,
		uint64_t now);

/* Free the buffers (any state). */
void dpq_stream_free(struct dpq_stream *s);

/* Both sides terminal (§3.3): the stream can be freed. */
bool dpq_stream_is_closed(const struct dpq_stream *s);

/* Take and clear the pending DPQ_STREAM_EV_* bits. Taking EV_RESET is
 * the application reading the reset (§3.2 Reset Read). */
uint32_t dpq_stream_take_events(struct dpq_stream *s);

/* --- frames from the peer ---------------------------------------------- */

/* STREAM (§19.8); conn is the connection-level receive credit. */
int dpq_stream_on_stream(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t off, const uint8_t *data, size_t len, bool fin,
		uint64_t now);

/* RESET_STREAM (§19.4): final size checked (§4.5) and charged to the
 * connection's credit; unread data dropped and its credit returned. */
int dpq_stream_on_reset_stream(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t app_error, uint64_t final_size, uint64_t now,
		uint64_t srtt);

/* STOP_SENDING (§19.5, §3.5): queues RESET_STREAM with the same code. */
int dpq_stream_on_stop_sending(struct dpq_stream *s, uint64_t app_error);

/* MAX_STREAM_DATA (§19.10): lower values ignored. */
int dpq_stream_on_max_stream_data(struct dpq_stream *s, uint64_t max);

/* STREAM_DATA_BLOCKED (§19.13): state check only. */
int dpq_stream_on_stream_data_blocked(struct dpq_stream *s, uint64_t limit);

/* --- application ------------------------------------------------------- */

/*
 * Buffer data to send; fin ends the stream once all of it is in. Returns
 * bytes taken (fewer if the send buffer is full: EV_WRITABLE follows),
 * -EPIPE if the stream cannot send (no send side, FIN written, reset),
 * -EFBIG, -ENOMEM.
 */
ssize_t dpq_stream_write(struct dpq_stream *s, const uint8_t *data,
		size_t len, bool fin);
/* The same, queueing nothing at or past stream offset cap (the caller's
 * DPQ_STREAM_SEND_AHEAD bound; UINT64_MAX: none). */
ssize_t dpq_stream_write_capped(struct dpq_stream *s, const uint8_t *data,
		size_t len, bool fin, uint64_t cap);

/*
 * Next received bytes, without copying: returns their count and points *p
 * at them; *fin is true when these bytes (or none) reach the end of the
 * stream. Loop with dpq_stream_consume().
 */
size_t dpq_stream_peek(const struct dpq_stream *s, const uint8_t **p,
		bool *fin);

/* Release n peeked bytes: frees memory, returns credit (stream and conn)
 * and may make MAX_STREAM_DATA / MAX_DATA due (srtt for auto-tuning). */
void dpq_stream_consume(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t n, uint64_t now, uint64_t srtt);

/* Abandon sending (§3.1): queue RESET_STREAM with app_error. 0, or
 * -EPIPE if there is no send side or it is already terminal/reset. */
int dpq_stream_reset(struct dpq_stream *s, uint64_t app_error);

/* Abandon receiving (§3.5): queue STOP_SENDING, drop buffered data and
 * give its credit back. 0, or -EPIPE if there is no receive side or the
 * peer already finished or reset it. */
int dpq_stream_stop_sending(struct dpq_stream *s, struct dpq_flow_rx *conn,
		uint64_t app_error, uint64_t now, uint64_t srtt);

/* --- the packet builder ------------------------------------------------ */

/*
 * Next STREAM frame range: lost data first, then new data within both
 * the stream's and the connection's credit (conn). If new data waits on
 * credit, STREAM_DATA_BLOCKED / DATA_BLOCKED become due (once per limit).
 * See dpq_sendbuf_next() for off/len/fin. False: nothing to send now.
 */
bool dpq_stream_next(struct dpq_stream *s, struct dpq_flow_tx *conn,
		uint64_t max_len, uint64_t *off, uint64_t *len, bool *fin);

/* Copy stream bytes into a packet. */
void dpq_stream_copy(const struct dpq_stream *s, uint64_t off, uint8_t *dst,
		size_t len);

/* A STREAM frame [off, off + len) (+FIN) went out: state, credit used. */
int dpq_stream_on_data_sent(struct dpq_stream *s, struct dpq_flow_tx *conn,
		uint64_t off, uint64_t len, bool fin);
int dpq_stream_on_data_acked(struct dpq_stream *s, uint64_t off,
		uint64_t len, bool fin);
int dpq_stream_on_data_lost(struct dpq_stream *s, uint64_t off,
		uint64_t len, bool fin);

/* RESET_STREAM to send: its error code and final size. */
bool dpq_stream_reset_due(const struct dpq_stream *s, uint64_t *app_error,
		uint64_t *final_size);
void dpq_stream_on_reset_sent(struct dpq_stream *s);
void dpq_stream_on_reset_acked(struct dpq_stream *s);
void dpq_stream_on_reset_lost(struct dpq_stream *s);

/* STOP_SENDING to send. */
bool dpq_stream_stop_due(const struct dpq_stream *s, uint64_t *app_error);
void dpq_stream_on_stop_sent(struct dpq_stream *s);
void dpq_stream_on_stop_lost(struct dpq_stream *s);

/* MAX_STREAM_DATA to send (only while the final size is unknown, §3.2). */
bool dpq_stream_max_data_due(const struct dpq_stream *s, uint64_t *max);
void dpq_stream_on_max_data_sent(struct dpq_stream *s, uint64_t max);
void dpq_stream_on_max_data_lost(struct dpq_stream *s, uint64_t max);

/* STREAM_DATA_BLOCKED to send. */
bool dpq_stream_blocked_due(const struct dpq_stream *s, uint64_t *limit);
void dpq_stream_on_blocked_sent(struct dpq_stream *s, uint64_t limit);
void dpq_stream_on_blocked_lost(struct dpq_stream *s, uint64_t limit);

#endif /* DPQ_ENGINE_STREAM_H */
