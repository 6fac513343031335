/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-connection trace events: the engine's side of qlog
 * (draft-ietf-quic-qlog-quic-events, recovery events).
 *
 * A connection with a trace hook (dpq_conn_set_trace) calls it with one
 * fixed-size record per event, inside the dpq_conn_* call that caused it.
 * Records hold no pointers, so a shard can copy them into a ring of
 * 64-byte elements and the management thread can turn them into JSON off
 * the hot path (control/qlog writes them). Without a hook the cost is one
 * predictable branch per event site.
 *
 * Events and when they fire:
 *   PACKET_SENT      each packet built (coalesced packets: one each);
 *   PACKET_RECEIVED  each packet that opened and was processed;
 *   PACKET_LOST      each in-flight packet declared lost (RFC 9002 §6.1,
 *                    or a PTO's loss of the ones before it);
 *   METRICS          after an ACK frame or a loss event changed recovery
 *                    state: all values every time (the writer leaves out
 *                    the ones that did not change, as qlog asks);
 *   CC_STATE         the congestion controller changed phase;
 *   PACKET_DROPPED   a packet that reached the connection and was not
 *                    processed (trigger: enum dpq_trace_drop_trigger;
 *                    pn UINT64_MAX when it did not open);
 *   PACKET_BUFFERED  a packet held until its keys or the handshake are
 *                    ready (RFC 9001 §4.1.4, §5.7);
 *   CONN_CLOSED      the connection starts to end, or its owner frees it
 *                    while it is alive (an evicted half-open one): every
 *                    way a connection ends leaves one, silent ones too.
 */
#ifndef DPQ_QUIC_TRACE_H
#define DPQ_QUIC_TRACE_H

#include <stdint.h>

enum dpq_trace_type {
	DPQ_TRACE_PACKET_SENT = 1,
	DPQ_TRACE_PACKET_RECEIVED,
	DPQ_TRACE_PACKET_LOST,
	DPQ_TRACE_METRICS,
	DPQ_TRACE_CC_STATE,
	DPQ_TRACE_PACKET_DROPPED,
	DPQ_TRACE_PACKET_BUFFERED,
	DPQ_TRACE_CONN_CLOSED,
	DPQ_TRACE_TYPE_COUNT,
};

/* Frame kinds seen in a packet: bit (1 << kind) of dpq_trace_pkt.frames. */
enum dpq_trace_frame {
	DPQ_TRACE_F_PADDING = 0,
	DPQ_TRACE_F_PING,
	DPQ_TRACE_F_ACK,
	DPQ_TRACE_F_CRYPTO,
	DPQ_TRACE_F_STREAM,
	DPQ_TRACE_F_FLOW,	/* MAX_*, *_BLOCKED */
	DPQ_TRACE_F_STREAM_CTL,	/* RESET_STREAM, STOP_SENDING */
	DPQ_TRACE_F_CID,	/* NEW/RETIRE_CONNECTION_ID */
	DPQ_TRACE_F_PATH,	/* PATH_CHALLENGE/RESPONSE */
	DPQ_TRACE_F_CLOSE,	/* CONNECTION_CLOSE */
	DPQ_TRACE_F_HANDSHAKE_DONE,
	DPQ_TRACE_F_OTHER,	/* NEW_TOKEN, DATAGRAM, extensions */
	DPQ_TRACE_F_COUNT,
};

/* Why a packet was declared lost (qlog packet_lost trigger). */
enum dpq_trace_loss_trigger {
	DPQ_TRACE_LOST_UNKNOWN = 0,
	DPQ_TRACE_LOST_REORDERING,	/* packet threshold, §6.1.1 */
	DPQ_TRACE_LOST_TIME,		/* time threshold, §6.1.2 */
	DPQ_TRACE_LOST_PTO,
};

/* Why a packet was dropped: qlog 0.3's packet_dropped triggers
 * (draft-ietf-quic-qlog-quic-events-03), in brackets. */
enum dpq_trace_drop_trigger {
	DPQ_TRACE_DROP_GENERAL = 0,		/* (none given) */
	DPQ_TRACE_DROP_DECRYPTION_FAILURE,	/* [payload_decrypt_error] */
	DPQ_TRACE_DROP_KEY_UNAVAILABLE,		/* keys discarded or never
						 * [key_unavailable] */
	DPQ_TRACE_DROP_DUPLICATE,		/* §12.3, or below the floor
						 * [duplicate] */
	DPQ_TRACE_DROP_HEADER_PARSE,		/* [header_parse_error] */
	DPQ_TRACE_DROP_PROTOCOL_VIOLATION,	/* [protocol_violation] */
	DPQ_TRACE_DROP_UNEXPECTED,		/* closing or draining, no path
						 * for it [unexpected_packet] */
	DPQ_TRACE_DROP_DOS_PREVENTION,		/* no room to hold it, over the
						 * 0-RTT cap [dos_prevention] */
	DPQ_TRACE_DROP_INVALID_INITIAL,		/* in a datagram under 1200
						 * bytes, §14.1 [invalid_initial] */
	DPQ_TRACE_DROP_UNKNOWN_CID,		/* coalesced with another DCID,
						 * §12.2 [unknown_connection_id] */
	DPQ_TRACE_DROP_COUNT,
};

/* How a connection ends (qlog connection_closed trigger). */
enum dpq_trace_close_trigger {
	DPQ_TRACE_CLOSE_ERROR = 0,		/* a transport error code */
	DPQ_TRACE_CLOSE_CLEAN,			/* NO_ERROR */
	DPQ_TRACE_CLOSE_APPLICATION,		/* an application code */
	DPQ_TRACE_CLOSE_IDLE_TIMEOUT,		/* RFC 9000 §10.1, silent */
	DPQ_TRACE_CLOSE_HANDSHAKE_TIMEOUT,	/* silent */
	DPQ_TRACE_CLOSE_STATELESS_RESET,	/* §10.3 */
	DPQ_TRACE_CLOSE_VERSION_MISMATCH,	/* §6.2 */
	DPQ_TRACE_CLOSE_ABANDONED,		/* freed by its owner, silent */
};

/* PACKET_SENT, PACKET_RECEIVED, PACKET_LOST, PACKET_DROPPED,
 * PACKET_BUFFERED. */
struct dpq_trace_pkt {
	uint64_t pn;
	/* First ACK frame: largest acknowledged and first range length
	 * (RFC 9000 §19.3; smallest = largest - first_range). */
	uint64_t ack_largest;
	/* First STREAM frame. */
	uint64_t stream_id;
	uint64_t stream_off;
	uint32_t ack_first_range;
	uint32_t stream_len;
	uint32_t len;		/* packet bytes on the wire, tag included */
	uint32_t frames;	/* 1 << enum dpq_trace_frame, per kind */
};

/* METRICS. Times in us; UINT64_MAX: unknown / not applicable. */
struct dpq_trace_metrics {
	uint64_t cwnd;
	uint64_t bytes_in_flight;
	uint64_t ssthresh;
	uint64_t pacing_rate;	/* bytes/s; UINT64_MAX: not paced */
	uint32_t smoothed_rtt_us;
	uint32_t min_rtt_us;
	uint32_t latest_rtt_us;
	uint32_t rtt_var_us;
};

/* CC_STATE. */
struct dpq_trace_cc {
	uint8_t old_state;	/* enum dpq_cc_phase (engine/cc.h) */
	uint8_t new_state;
};

/* CONN_CLOSED. */
struct dpq_trace_close {
	uint64_t error_code;
	uint64_t frame_type;
	uint8_t trigger;	/* enum dpq_trace_close_trigger */
	uint8_t remote;		/* the peer closed */
	uint8_t app;		/* error_code is an application code */
	char reason[29];	/* NUL-terminated, cut */
};

/* One event: 64 bytes, no pointers. time_us is the connection's clock:
 * for a close the application starts between two events, the time of
 * the last one. */
struct dpq_trace_ev {
	uint64_t time_us;	/* the connection's now */
	uint8_t type;		/* enum dpq_trace_type */
	uint8_t epoch;		/* enum dpq_epoch of the packet (packet
				 * events): Initial, 0-RTT, Handshake, 1-RTT */
	uint8_t trigger;	/* PACKET_LOST: enum dpq_trace_loss_trigger,
				 * PACKET_DROPPED: dpq_trace_drop_trigger */
	uint8_t flags;		/* DPQ_TRACE_EV_* */
	uint32_t pto_count;	/* METRICS */
	union {
		struct dpq_trace_pkt pkt;
		struct dpq_trace_metrics m;
		struct dpq_trace_cc cc;
		struct dpq_trace_close close;
		uint8_t raw[48];
	} u;
};

/* flags: the packet was a PTO probe (PACKET_SENT). */
#define DPQ_TRACE_EV_PROBE	0x01

_Static_assert(sizeof(struct dpq_trace_ev) == 64,
		"a trace record is one 64-byte ring element");

/* The hook: called on the connection's thread; must not call back into
 * the connection. */
struct dpq_conn;
typedef void dpq_trace_fn(void *ctx, const struct dpq_trace_ev *ev);

/* Install (fn non-NULL) or remove (fn NULL) c's trace hook. Declared here
 * and defined in conn.c so callers that only route records need only
 * this header and conn.h. */
void dpq_conn_set_trace(struct dpq_conn *c, dpq_trace_fn *fn, void *ctx);

#endif /* DPQ_QUIC_TRACE_H */
