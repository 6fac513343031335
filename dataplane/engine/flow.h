/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flow.h: QUIC flow control (RFC 9000 §4), as small counters that know
 * nothing of streams or connections. The same structs serve one stream
 * (MAX_STREAM_DATA / STREAM_DATA_BLOCKED) and the whole connection
 * (MAX_DATA / DATA_BLOCKED); stream-count limits (§4.6, MAX_STREAMS /
 * STREAMS_BLOCKED) have their own pair, one per stream type.
 *
 * Receive side (dpq_flow_rx): the credit we give the peer. Data beyond it
 * is a FLOW_CONTROL_ERROR (§4.1). As the application consumes data the
 * limit moves up: when less than half the window is left, a new limit of
 * consumed + window is due. Auto-tuning: if the previous update was less
 * than two smoothed RTTs ago, the window itself limited the peer (it can
 * send at most a window per RTT, and we let half a window be used before
 * each update), so the window doubles, up to window_max. This is the
 * msquic/quicly idea; we chose doubling (not a BDP estimate) because it
 * needs no rate sampler, converges in log2(max/initial) updates and can
 * never exceed the configured memory bound.
 *
 * Send side (dpq_flow_tx): the credit the peer gives us. A sender that has
 * data but no credit signals it once per limit value (§4.1: "a sender
 * SHOULD send a STREAM_DATA_BLOCKED or DATA_BLOCKED frame ... when it
 * wishes to send data but is unable to do so due to flow control").
 *
 * Frames that carry a value (MAX_*, *_BLOCKED) go through due() ->
 * on_sent() -> on_lost(): a lost frame is re-queued only if its value is
 * still the current one (§13.3: send the current value, not the old one).
 * Errors are transport errors, DPQ_TE_ERR(code) (errors.h). No clock reads:
 * time comes in as now, in microseconds.
 */
#ifndef DPQ_ENGINE_FLOW_H
#define DPQ_ENGINE_FLOW_H

#include <stdbool.h>
#include <stdint.h>

/* RFC 9000 §4.6, §19.11: a stream count cannot exceed 2^60. */
#define DPQ_STREAMS_MAX		(UINT64_C(1) << 60)

/* --- credit we give: MAX_DATA / MAX_STREAM_DATA ------------------------ */

struct dpq_flow_rx {
	uint64_t max;		/* limit in force (advertised or due) */
	uint64_t recvd;		/* credit used: highest offset received, or
				 * for the connection the sum over streams */
	uint64_t consumed;	/* bytes the application has consumed */
	uint64_t window;	/* current window (auto-tuned) */
	uint64_t window_max;	/* cap on the window */
	uint64_t last_update;	/* now of the last limit raise (us) */
	bool pending;		/* a frame announcing max is due */
};

/* Initial limit = window (the transport parameter we sent); the window
 * may grow to window_max (window_max < window is taken as window). */
void dpq_flow_rx_init(struct dpq_flow_rx *fc, uint64_t window,
		uint64_t window_max, uint64_t now);

/* Would credit use new_recvd break the limit? 0 or
 * DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR) (§4.1). Changes nothing. */
int dpq_flow_rx_check(const struct dpq_flow_rx *fc, uint64_t new_recvd);

/* Check, then record new_recvd (values below recvd are ignored). */
int dpq_flow_rx_on_recv(struct dpq_flow_rx *fc, uint64_t new_recvd);

/*
 * The application consumed n more bytes (for a stream: read them; for the
 * connection: read them on any stream, or a reset stream's unread bytes,
 * §4.5). May raise the limit and auto-tune (srtt in us, 0 = unknown: no
 * tuning).
 */
void dpq_flow_rx_consume(struct dpq_flow_rx *fc, uint64_t n, uint64_t now,
		uint64_t srtt);

/* Is a MAX_DATA / MAX_STREAM_DATA due? If so, *value is what to send. */
bool dpq_flow_rx_due(const struct dpq_flow_rx *fc, uint64_t *value);

/* A frame carrying value was sent / lost. */
void dpq_flow_rx_on_sent(struct dpq_flow_rx *fc, uint64_t value);
void dpq_flow_rx_on_lost(struct dpq_flow_rx *fc, uint64_t value);

/* --- credit we have: peer's MAX_DATA / MAX_STREAM_DATA ----------------- */

struct dpq_flow_tx {
	uint64_t max;		/* the peer's limit */
	uint64_t sent;		/* credit used (highest offset sent / sum) */
	uint64_t blocked_at;	/* limit last signalled; UINT64_MAX: none */
	bool blocked_pending;	/* a *_BLOCKED frame with max is due */
};

void dpq_flow_tx_init(struct dpq_flow_tx *fc, uint64_t initial_max);

/* Bytes we may still send. */
static inline uint64_t
dpq_flow_tx_credit(const struct dpq_flow_tx *fc)
{
	return fc->max > fc->sent ? fc->max - fc->sent : 0;
}

/*
 * The peer's MAX_DATA / MAX_STREAM_DATA: a value that does not raise the
 * limit is ignored (§4.1, §19.9, §19.10). Returns true if the limit rose
 * (the sender may be writable again).
 */
bool dpq_flow_tx_on_max(struct dpq_flow_tx *fc, uint64_t max);

/* n more bytes of credit were used (n <= credit). */
void dpq_flow_tx_add_sent(struct dpq_flow_tx *fc, uint64_t n);

/* We had data to send but no credit: queue a *_BLOCKED frame, once per
 * limit value. */
void dpq_flow_tx_note_blocked(struct dpq_flow_tx *fc);

/* Is a DATA_BLOCKED / STREAM_DATA_BLOCKED due? *limit is its value. */
bool dpq_flow_tx_blocked_due(const struct dpq_flow_tx *fc, uint64_t *limit);
void dpq_flow_tx_on_blocked_sent(struct dpq_flow_tx *fc, uint64_t limit);
/* Re-queued only while still blocked at that same limit. */
void dpq_flow_tx_on_blocked_lost(struct dpq_flow_tx *fc, uint64_t limit);

/* --- stream counts the peer may open: MAX_STREAMS (§4.6) --------------- */

struct dpq_streams_rx {
	uint64_t max;		/* count limit in force (advertised or due) */
	uint64_t opened;	/* peer streams opened: highest index + 1 */
	uint64_t closed;	/* of those, fully closed */
	uint64_t window;	/* concurrent streams allowed */
	bool pending;		/* a MAX_STREAMS with max is due */
};

/* window: our initial_max_streams_{bidi,uni} (clamped to 2^60). */
void dpq_streams_rx_init(struct dpq_streams_rx *s, uint64_t window);

/*
 * A frame names peer stream number index (stream id >> 2). Opening it
 * opens every lower one too (§3.2). Returns how many streams are new
 * (0 if index was opened already); the new ones are [*first, index].
 * DPQ_TE_ERR(DPQ_TE_STREAM_LIMIT_ERROR) if index >= max (§4.6).
 */
int64_t dpq_streams_rx_open(struct dpq_streams_rx *s, uint64_t index,
		uint64_t *first);

/*
 * A peer stream reached its terminal states and was freed: credit for a
 * new one. MAX_STREAMS becomes due once half the window is to be given
 * back (fewer, bigger updates), with max = closed + window (<= 2^60).
 */
void dpq_streams_rx_on_closed(struct dpq_streams_rx *s);

/* The peer's STREAMS_BLOCKED (§19.14):
 * DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR) if limit > 2^60, else 0
 * (informational). */
int dpq_streams_rx_on_blocked(struct dpq_streams_rx *s, uint64_t limit);

bool dpq_streams_rx_due(const struct dpq_streams_rx *s, uint64_t *value);
void dpq_streams_rx_on_sent(struct dpq_streams_rx *s, uint64_t value);
void dpq_streams_rx_on_lost(struct dpq_streams_rx *s, uint64_t value);

/* --- stream counts we may open: the peer's MAX_STREAMS ----------------- */

struct dpq_streams_tx {
	uint64_t max;		/* the peer's limit */
	uint64_t opened;	/* streams we opened of this type */
	uint64_t blocked_at;	/* limit last signalled; UINT64_MAX: none */
	bool blocked_pending;	/* a STREAMS_BLOCKED with max is due */
};

/* From the peer's initial_max_streams_*:
 * DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR) if above 2^60 (§18.2),
 * else 0. */
int dpq_streams_tx_init(struct dpq_streams_tx *s, uint64_t initial_max);

/*
 * The peer's MAX_STREAMS: DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR) if
 * above 2^60 (§19.11); 1 if the limit rose, 0 if ignored (not an increase).
 */
int dpq_streams_tx_on_max(struct dpq_streams_tx *s, uint64_t max);

/*
 * Take the next stream number (id = index << 2 | type): 0 with *index, or
 * -EAGAIN at the limit, which queues STREAMS_BLOCKED once per limit.
 */
int dpq_streams_tx_open(struct dpq_streams_tx *s, uint64_t *index);

bool dpq_streams_tx_blocked_due(const struct dpq_streams_tx *s,
		uint64_t *limit);
void dpq_streams_tx_on_blocked_sent(struct dpq_streams_tx *s, uint64_t limit);
void dpq_streams_tx_on_blocked_lost(struct dpq_streams_tx *s, uint64_t limit);

#endif /* DPQ_ENGINE_FLOW_H */
