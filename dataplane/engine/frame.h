/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.h: QUIC v1 frame codec (RFC 9000 §12.4, §19) and the frame table
 * of §12.4 Table 3.
 *
 * dpq_frame_decode() reads one frame from a decrypted packet payload into
 * a struct dpq_frame without allocating: variable-length parts (STREAM and
 * CRYPTO data, tokens, reason phrases, CIDs, ACK ranges) are pointers into
 * the payload, valid as long as the payload is. It returns the bytes
 * consumed (> 0) or a transport error, DPQ_TE_ERR(code) (errors.h), for
 * the connection to close with (RFC 9000 §12.4, §19), code being:
 *   DPQ_TE_FRAME_ENCODING_ERROR  truncated frame, unknown type, or a field
 *                                value §19 forbids
 *   DPQ_TE_PROTOCOL_VIOLATION    frame type not in its shortest encoding
 * Role and packet-type rules (dpq_frame_allowed(), DPQ_FTF_SERVER_ONLY) are
 * the caller's, because the decoder does not know them.
 *
 * Encoders write into [p, end) and return the pointer past what they wrote,
 * or NULL if it does not fit (nothing useful is left in the buffer then) or
 * the arguments are invalid. Pure C, no I/O; safe from any thread.
 */
#ifndef DPQ_ENGINE_FRAME_H
#define DPQ_ENGINE_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/varint.h"

/* RFC 9000 §19 frame types. */
enum dpq_frame_type {
	DPQ_FT_PADDING			= 0x00,
	DPQ_FT_PING			= 0x01,
	DPQ_FT_ACK			= 0x02,
	DPQ_FT_ACK_ECN			= 0x03,
	DPQ_FT_RESET_STREAM		= 0x04,
	DPQ_FT_STOP_SENDING		= 0x05,
	DPQ_FT_CRYPTO			= 0x06,
	DPQ_FT_NEW_TOKEN		= 0x07,
	DPQ_FT_STREAM			= 0x08,	/* 0x08..0x0f, low bits flags */
	DPQ_FT_STREAM_LAST		= 0x0f,
	DPQ_FT_MAX_DATA			= 0x10,
	DPQ_FT_MAX_STREAM_DATA		= 0x11,
	DPQ_FT_MAX_STREAMS_BIDI		= 0x12,
	DPQ_FT_MAX_STREAMS_UNI		= 0x13,
	DPQ_FT_DATA_BLOCKED		= 0x14,
	DPQ_FT_STREAM_DATA_BLOCKED	= 0x15,
	DPQ_FT_STREAMS_BLOCKED_BIDI	= 0x16,
	DPQ_FT_STREAMS_BLOCKED_UNI	= 0x17,
	DPQ_FT_NEW_CONNECTION_ID	= 0x18,
	DPQ_FT_RETIRE_CONNECTION_ID	= 0x19,
	DPQ_FT_PATH_CHALLENGE		= 0x1a,
	DPQ_FT_PATH_RESPONSE		= 0x1b,
	DPQ_FT_CONNECTION_CLOSE		= 0x1c,	/* transport: has frame type */
	DPQ_FT_CONNECTION_CLOSE_APP	= 0x1d,	/* application */
	DPQ_FT_HANDSHAKE_DONE		= 0x1e,
};
#define DPQ_FT_COUNT			0x1f	/* types 0x00..0x1e */

/* RFC 9000 §19.8: flag bits of the STREAM frame type. */
#define DPQ_STREAM_FLAG_FIN	0x01
#define DPQ_STREAM_FLAG_LEN	0x02
#define DPQ_STREAM_FLAG_OFF	0x04

static inline bool
dpq_frame_is_stream(uint64_t type)
{
	return type >= DPQ_FT_STREAM && type <= DPQ_FT_STREAM_LAST;
}

/* RFC 9000 §19.11, §19.14: stream counts above 2^60 are invalid. */
#define DPQ_MAX_STREAMS_LIMIT	(UINT64_C(1) << 60)
/* RFC 9000 §19.17/§19.18: PATH_CHALLENGE / PATH_RESPONSE data size. */
#define DPQ_PATH_DATA_LEN	8

/* One acknowledged range, inclusive, smallest <= largest. */
struct dpq_ack_range {
	uint64_t smallest;
	uint64_t largest;
};

/* RFC 9000 §19.3.2 ECN counts (ACK_ECN, type 0x03). */
struct dpq_ecn_counts {
	uint64_t ect0;
	uint64_t ect1;
	uint64_t ce;
};

/*
 * A decoded ACK frame. The Gap/ACK Range Length pairs after the first
 * range stay encoded at [ranges, ranges_end): decode has already checked
 * that they are complete and that no range goes below packet number 0
 * (§19.3.1), so dpq_ack_iter_*() can walk them without failing.
 */
struct dpq_frame_ack {
	uint64_t largest;
	uint64_t ack_delay;	/* as encoded: scale by 2^ack_delay_exponent */
	uint64_t first_range;
	uint64_t range_count;	/* pairs at ranges, not counting the first */
	const uint8_t *ranges;
	const uint8_t *ranges_end;
	struct dpq_ecn_counts ecn;	/* ACK_ECN only, else zero */
};

/* A decoded frame. type is the type on the wire (STREAM keeps its flags,
 * MAX_STREAMS/STREAMS_BLOCKED/CONNECTION_CLOSE their variant). */
struct dpq_frame {
	uint64_t type;
	union {
		struct {
			size_t len;	/* bytes of the run of 0x00, >= 1 */
		} padding;
		struct dpq_frame_ack ack;
		struct {
			uint64_t stream_id;
			uint64_t app_error;
			uint64_t final_size;
		} reset_stream;
		struct {
			uint64_t stream_id;
			uint64_t app_error;
		} stop_sending;
		struct {
			uint64_t offset;
			uint64_t len;
			const uint8_t *data;
		} crypto;
		struct {
			uint64_t len;	/* >= 1 */
			const uint8_t *token;
		} new_token;
		struct {
			uint64_t stream_id;
			uint64_t offset;	/* 0 unless the OFF bit is set */
			uint64_t len;	/* without LEN: rest of the payload */
			const uint8_t *data;
			bool fin;	/* copy of the FIN bit (encoders use type) */
		} stream;
		struct {
			uint64_t max;
		} max_data;
		struct {
			uint64_t stream_id;
			uint64_t max;
		} max_stream_data;
		struct {
			uint64_t max;	/* <= 2^60 */
		} max_streams;
		struct {
			uint64_t limit;
		} data_blocked;
		struct {
			uint64_t stream_id;
			uint64_t limit;
		} stream_data_blocked;
		struct {
			uint64_t limit;	/* <= 2^60 */
		} streams_blocked;
		struct {
			uint64_t seq;
			uint64_t retire_prior_to;	/* <= seq */
			uint8_t cid_len;		/* 1..20 */
			const uint8_t *cid;
			const uint8_t *reset_token;	/* 16 bytes */
		} new_cid;
		struct {
			uint64_t seq;
		} retire_cid;
		struct {
			uint8_t data[DPQ_PATH_DATA_LEN];
		} path;		/* PATH_CHALLENGE and PATH_RESPONSE */
		struct {
			uint64_t error_code;
			uint64_t frame_type;	/* 0x1c only; 0 for 0x1d */
			uint64_t reason_len;
			const uint8_t *reason;	/* not NUL-terminated */
		} close;
	};
};

/*
 * Decode one frame at p; end is the end of the packet payload (a STREAM
 * frame without LEN takes everything up to end). Returns the bytes
 * consumed (> 0) or a transport error, see the top of this file.
 * A run of PADDING bytes is returned as one frame with padding.len.
 */
ssize_t dpq_frame_decode(const uint8_t *p, const uint8_t *end,
		struct dpq_frame *f);

/*
 * Encode any frame from a struct dpq_frame as dpq_frame_decode() fills it
 * (ACK ranges are copied from ack.ranges as encoded). STREAM flags come
 * from f->type: without OFF, stream.offset must be 0; without LEN the data
 * is written last and the caller must end the packet after it.
 */
uint8_t *dpq_frame_encode(uint8_t *p, const uint8_t *end,
		const struct dpq_frame *f);

/* n (>= 1) PADDING bytes. */
uint8_t *dpq_frame_encode_padding(uint8_t *p, const uint8_t *end, size_t n);

/*
 * ACK (or ACK_ECN if ecn != NULL) from n >= 1 ranges in descending order,
 * separated by gaps of at least one packet number (ranges[i].smallest >=
 * ranges[i + 1].largest + 2). ack_delay is the encoded (scaled) value.
 * NULL if the ranges are not in that form or it does not fit.
 */
uint8_t *dpq_frame_encode_ack(uint8_t *p, const uint8_t *end,
		const struct dpq_ack_range *ranges, size_t n,
		uint64_t ack_delay, const struct dpq_ecn_counts *ecn);

/* Walk the ranges of a decoded ACK, largest first. */
struct dpq_ack_iter {
	const uint8_t *p;
	const uint8_t *end;
	uint64_t left;		/* gap/length pairs not yet read */
	uint64_t smallest;	/* smallest of the range last yielded */
	uint64_t largest;
	uint64_t first_range;
	bool started;
};

void dpq_ack_iter_init(struct dpq_ack_iter *it, const struct dpq_frame_ack *a);

/* Next range into *r; false when done (or, for an ACK struct that did not
 * come from dpq_frame_decode(), when its ranges are invalid). */
bool dpq_ack_iter_next(struct dpq_ack_iter *it, struct dpq_ack_range *r);

/*
 * STREAM frame header for the pull model: the caller writes len data bytes
 * right after it. OFF is set iff offset != 0; LEN iff with_len (a frame
 * without LEN must be the last in the packet). NULL if it does not fit or
 * offset + len > 2^62-1 (§19.8).
 */
uint8_t *dpq_frame_encode_stream_hdr(uint8_t *p, const uint8_t *end,
		uint64_t stream_id, uint64_t offset, uint64_t len, bool fin,
		bool with_len);

/* Bytes of that STREAM header (0 if a value cannot be encoded). */
size_t dpq_frame_stream_hdr_len(uint64_t stream_id, uint64_t offset,
		uint64_t len, bool with_len);

/*
 * Most STREAM data bytes that fit with their header in room bytes, also
 * capped so offset + len <= 2^62-1. Returns false if not even a frame with
 * no data fits; *max_data is then 0.
 */
bool dpq_frame_stream_fit(uint64_t stream_id, uint64_t offset, size_t room,
		bool with_len, size_t *max_data);

/* CRYPTO frame header (always with Length); data follows. */
uint8_t *dpq_frame_encode_crypto_hdr(uint8_t *p, const uint8_t *end,
		uint64_t offset, uint64_t len);

/* Bytes of that CRYPTO header (0 if a value cannot be encoded). */
size_t dpq_frame_crypto_hdr_len(uint64_t offset, uint64_t len);

/* As dpq_frame_stream_fit(), for CRYPTO frames. */
bool dpq_frame_crypto_fit(uint64_t offset, size_t room, size_t *max_data);

/*
 * Frame table (RFC 9000 §12.4 Table 3).
 * pkts: bit (1 << enum dpq_pkt_type) for each packet type the frame may
 * appear in (Initial, 0-RTT, Handshake, 1-RTT).
 */
#define DPQ_FTF_NOT_ACK_ELICITING 0x01	/* N: §13.2 */
#define DPQ_FTF_NOT_IN_FLIGHT	0x02	/* C: not counted by congestion control */
#define DPQ_FTF_PROBING		0x04	/* P: §9.1 */
#define DPQ_FTF_FLOW_CONTROLLED	0x08	/* F: §4 */
#define DPQ_FTF_SERVER_ONLY	0x10	/* only a server sends it: a server
					 * receiving it closes with
					 * PROTOCOL_VIOLATION (§19.7, §19.20) */

struct dpq_frame_info {
	const char *name;
	uint8_t pkts;
	uint8_t flags;
};

/* Table row of a frame type, or NULL if the type is unknown. */
const struct dpq_frame_info *dpq_frame_info(uint64_t type);

/*
 * May a frame of this type appear in a packet of pkt_type? RFC 9000 §12.4:
 * a frame in a forbidden packet type is a PROTOCOL_VIOLATION (and only
 * CONNECTION_CLOSE 0x1c, not 0x1d, is allowed in Initial/Handshake).
 * False for unknown types and for Retry/VN packets (no frames).
 */
bool dpq_frame_allowed(uint64_t type, enum dpq_pkt_type pkt_type);

/* §13.2: does this frame make its packet ack-eliciting? */
bool dpq_frame_is_ack_eliciting(uint64_t type);

/* §9.1: is this a probing frame? */
bool dpq_frame_is_probing(uint64_t type);

/* Name for logs ("STREAM", "ACK", ...); "UNKNOWN" otherwise. */
const char *dpq_frame_type_str(uint64_t type);

#endif /* DPQ_ENGINE_FRAME_H */
