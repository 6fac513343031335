/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.h: QUIC transport error codes (RFC 9000 §20.1) and the codec's
 * own return codes.
 *
 * Frame and transport-parameter decoders report a peer's protocol errors
 * as the negated transport error code (-DPQ_TE_FRAME_ENCODING_ERROR, ...),
 * which the connection turns into a CONNECTION_CLOSE. Packet-header
 * parsing reports DPQ_ERR_* codes: a malformed header is never a
 * connection error, the packet (and the rest of its datagram) is dropped.
 */
#ifndef DPQ_ENGINE_ERRORS_H
#define DPQ_ENGINE_ERRORS_H

#include <stdint.h>

/* RFC 9000 §20.1 transport error codes (CONNECTION_CLOSE type 0x1c). */
enum dpq_transport_error {
	DPQ_TE_NO_ERROR			= 0x00,
	DPQ_TE_INTERNAL_ERROR		= 0x01,
	DPQ_TE_CONNECTION_REFUSED	= 0x02,
	DPQ_TE_FLOW_CONTROL_ERROR	= 0x03,
	DPQ_TE_STREAM_LIMIT_ERROR	= 0x04,
	DPQ_TE_STREAM_STATE_ERROR	= 0x05,
	DPQ_TE_FINAL_SIZE_ERROR		= 0x06,
	DPQ_TE_FRAME_ENCODING_ERROR	= 0x07,
	DPQ_TE_TRANSPORT_PARAMETER_ERROR = 0x08,
	DPQ_TE_CONNECTION_ID_LIMIT_ERROR = 0x09,
	DPQ_TE_PROTOCOL_VIOLATION	= 0x0a,
	DPQ_TE_INVALID_TOKEN		= 0x0b,
	DPQ_TE_APPLICATION_ERROR	= 0x0c,
	DPQ_TE_CRYPTO_BUFFER_EXCEEDED	= 0x0d,
	DPQ_TE_KEY_UPDATE_ERROR		= 0x0e,
	DPQ_TE_AEAD_LIMIT_REACHED	= 0x0f,
	DPQ_TE_NO_VIABLE_PATH		= 0x10,
	/* 0x0100-0x01ff: CRYPTO_ERROR, low byte = TLS alert (RFC 9001 §4.8). */
	DPQ_TE_CRYPTO_ERROR		= 0x100,
};

#define DPQ_TE_CRYPTO_ERROR_MAX		0x1ff
/* CRYPTO_ERROR carrying TLS alert a (0..255). */
#define DPQ_TE_CRYPTO(a)		(DPQ_TE_CRYPTO_ERROR + ((a) & 0xff))
#define DPQ_TE_IS_CRYPTO(code) \
	((code) >= DPQ_TE_CRYPTO_ERROR && (code) <= DPQ_TE_CRYPTO_ERROR_MAX)

/*
 * Name of a transport error code ("FRAME_ENCODING_ERROR"); "CRYPTO_ERROR"
 * for the whole 0x100-0x1ff range; "UNKNOWN" otherwise. Never NULL.
 */
const char *dpq_transport_error_str(uint64_t code);

/*
 * Codec return codes of packet-header parsing and writing (packet.h).
 * They lie below -0x1ff so they can never be mistaken for a negated
 * transport error code.
 */
enum dpq_codec_err {
	/* Input ends before the header (or the Length field) says it does:
	 * drop this packet and the rest of the datagram. */
	DPQ_ERR_TRUNCATED	= -0x1001,
	/* A field has a value the format forbids (CID longer than 20 for v1,
	 * empty Retry token, VN list not a multiple of 4, packet too short
	 * for a header-protection sample): drop. */
	DPQ_ERR_MALFORMED	= -0x1002,
	/* Fixed bit is 0 in a v1 packet: discard (RFC 9000 §17.2, §17.3.1). */
	DPQ_ERR_FIXED_BIT	= -0x1003,
	/* Long header of a version other than 1 (and not 0): the
	 * version-independent fields (RFC 8999) are filled in so a server
	 * can answer with Version Negotiation; see dpq_pkt_vn_should_send(). */
	DPQ_ERR_VERSION		= -0x1004,
	/* Output buffer too small, or a value too large for its field. */
	DPQ_ERR_NOSPACE		= -0x1005,
};

/* Name of a DPQ_ERR_* code; "UNKNOWN" otherwise. Never NULL. */
const char *dpq_codec_err_str(int err);

#endif /* DPQ_ENGINE_ERRORS_H */
