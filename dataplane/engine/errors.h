/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.h: QUIC transport error codes (RFC 9000 §20.1), the codec's own
 * return codes, and the one error space an int return value lives in.
 *
 * A negative int (or ssize_t) result means exactly one of three things,
 * told apart by range, never by context:
 *
 *   -1 .. -4095            -errno: a local condition (-ENOMEM, -EAGAIN...)
 *   DPQ_ERR_* (-0x1001 ..  packet-header codec: drop the packet (and the
 *              -0x1fff)    rest of the datagram), never a connection error
 *   DPQ_TE_ERR(code)       a peer's protocol error that closes the
 *     (-0x100000 - code)   connection with transport error `code`
 *
 * Frame, stream, flow-control and transport-parameter code reports a
 * peer's protocol errors as DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR)...;
 * the connection turns it back into the code with dpq_err_transport_code()
 * for its CONNECTION_CLOSE. Test with dpq_err_is_transport(), so that an
 * -ENOMEM is never sent to a peer as APPLICATION_ERROR (0x0c) nor an
 * -EAGAIN taken for INVALID_TOKEN (0x0b), as when the codes were simply
 * negated. The ranges are disjoint by the _Static_asserts below.
 */
#ifndef DPQ_ENGINE_ERRORS_H
#define DPQ_ENGINE_ERRORS_H

#include <stdbool.h>
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

/* Largest errno value (Linux's MAX_ERRNO): -errno results are -1..-4095. */
#define DPQ_ERRNO_MAX		4095

/*
 * Codec return codes of packet-header parsing and writing (packet.h), in
 * -DPQ_ERR_CODEC_LAST .. -DPQ_ERR_CODEC_FIRST.
 */
#define DPQ_ERR_CODEC_FIRST	0x1001
#define DPQ_ERR_CODEC_LAST	0x1fff
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

/*
 * Transport errors as return values: DPQ_TE_ERR(code) for code in
 * 0 .. DPQ_TE_ERR_SPAN - 1 (every code this implementation sends: RFC
 * 9000 §20.1 and the CRYPTO_ERROR range). A constant expression, so it
 * can be a case label or an initializer.
 */
#define DPQ_TE_ERR_BASE		0x100000
#define DPQ_TE_ERR_SPAN		0x10000
#define DPQ_TE_ERR(code)	(-(int)(DPQ_TE_ERR_BASE + (code)))

_Static_assert(DPQ_ERRNO_MAX < DPQ_ERR_CODEC_FIRST,
		"-errno and DPQ_ERR_* ranges overlap");
_Static_assert(DPQ_ERR_CODEC_FIRST <= -DPQ_ERR_NOSPACE &&
		-DPQ_ERR_TRUNCATED <= DPQ_ERR_CODEC_LAST &&
		-DPQ_ERR_MALFORMED <= DPQ_ERR_CODEC_LAST &&
		-DPQ_ERR_FIXED_BIT <= DPQ_ERR_CODEC_LAST &&
		-DPQ_ERR_VERSION <= DPQ_ERR_CODEC_LAST &&
		DPQ_ERR_CODEC_FIRST <= -DPQ_ERR_TRUNCATED,
		"a DPQ_ERR_* code lies outside the codec range");
_Static_assert(DPQ_ERR_CODEC_LAST < DPQ_TE_ERR_BASE,
		"DPQ_ERR_* and transport-error ranges overlap");
_Static_assert(DPQ_TE_CRYPTO_ERROR_MAX < DPQ_TE_ERR_SPAN,
		"a transport error code does not fit DPQ_TE_ERR()");
_Static_assert(DPQ_TE_ERR_BASE + DPQ_TE_ERR_SPAN - 1 <= 0x7fffffff,
		"DPQ_TE_ERR() does not fit an int");

/* Is rc a transport error, DPQ_TE_ERR(code)? */
static inline bool
dpq_err_is_transport(long rc)
{
	return rc <= -DPQ_TE_ERR_BASE &&
	    rc > -(long)(DPQ_TE_ERR_BASE + DPQ_TE_ERR_SPAN);
}

/* The transport error code in rc = DPQ_TE_ERR(code). Only for rc where
 * dpq_err_is_transport(rc); anything else gives DPQ_TE_INTERNAL_ERROR, so
 * a local failure never reaches the peer as some other code. */
static inline uint64_t
dpq_err_transport_code(long rc)
{
	if (!dpq_err_is_transport(rc))
		return DPQ_TE_INTERNAL_ERROR;
	return (uint64_t)(-rc - DPQ_TE_ERR_BASE);
}

/* Is rc a codec result, DPQ_ERR_*? */
static inline bool
dpq_err_is_codec(long rc)
{
	return rc <= -DPQ_ERR_CODEC_FIRST && rc >= -DPQ_ERR_CODEC_LAST;
}

/* Is rc a negated errno value? */
static inline bool
dpq_err_is_errno(long rc)
{
	return rc < 0 && rc >= -DPQ_ERRNO_MAX;
}

#endif /* DPQ_ENGINE_ERRORS_H */
