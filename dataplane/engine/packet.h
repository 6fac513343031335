/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packet.h: QUIC packet headers (RFC 9000 §17, RFC 8999): parsing and
 * writing long and short headers, Version Negotiation, Retry, and packet
 * number encoding (RFC 9000 §17.1, Appendix A.2/A.3).
 *
 * Parsing works on the bytes as received: header protection (RFC 9001
 * §5.4) still hides the low bits of the first byte and the packet number,
 * so the parser reports pn_offset and the caller removes protection, then
 * applies dpq_pkt_check_reserved_bits() and dpq_pkt_pn_len(). All
 * pointers in struct dpq_pkt_hdr point into the parsed buffer.
 *
 * A malformed header is never a connection error: the parser returns a
 * DPQ_ERR_* code (errors.h) and the caller drops the packet (RFC 9000
 * §12.2: and, lacking a Length to skip it, the rest of the datagram).
 * Rules that need more than the header stay with the caller: a server
 * drops client Initials in datagrams under 1200 bytes (§14.1); coalesced
 * packets must share the first DCID (§12.2); a 1-RTT packet that fails to
 * decrypt may be a Stateless Reset (§10.3.1).
 * Pure C, no I/O; safe to call from any thread.
 */
#ifndef DPQ_ENGINE_PACKET_H
#define DPQ_ENGINE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/varint.h"
#include "dataplane/engine/wire.h"

/* First-byte bits (RFC 9000 §17.2, §17.3.1). */
#define DPQ_PKT_FORM_LONG	0x80
#define DPQ_PKT_FIXED_BIT	0x40
#define DPQ_PKT_LONG_TYPE_MASK	0x30
#define DPQ_PKT_LONG_RESERVED	0x0c	/* protected */
#define DPQ_PKT_SHORT_SPIN	0x20
#define DPQ_PKT_SHORT_RESERVED	0x18	/* protected */
#define DPQ_PKT_SHORT_KEY_PHASE	0x04	/* protected */
#define DPQ_PKT_PN_LEN_MASK	0x03	/* protected */

/* RFC 9000 §17.1: packet numbers are encoded in 1 to 4 bytes. */
#define DPQ_PKT_MAX_PN_LEN	4
/* RFC 9000 §12.3: packet numbers lie in 0..2^62-1. */
#define DPQ_PN_MAX		DPQ_VARINT_MAX
/* "No packet yet" for largest_acked / largest received. */
#define DPQ_PN_NONE		UINT64_MAX
/* RFC 9001 §5.4.2: the header-protection sample is 16 bytes taken 4 bytes
 * after pn_offset, so a protected packet holds at least 20 bytes from
 * pn_offset on; shorter ones cannot be unprotected and are dropped. */
#define DPQ_PKT_HP_SAMPLE_LEN	16
#define DPQ_PKT_MIN_AFTER_PN_OFFSET (DPQ_PKT_MAX_PN_LEN + DPQ_PKT_HP_SAMPLE_LEN)
/* RFC 9001 §5.8: Retry integrity tag size. */
#define DPQ_RETRY_TAG_LEN	16
/* Length fields the writer reserves (2-byte varint, up to 16383). */
#define DPQ_PKT_LENGTH_FIELD_LEN 2

/* Packet types. The first four equal the v1 long-header type bits. */
enum dpq_pkt_type {
	DPQ_PKT_INITIAL		= 0,
	DPQ_PKT_0RTT		= 1,
	DPQ_PKT_HANDSHAKE	= 2,
	DPQ_PKT_RETRY		= 3,
	DPQ_PKT_1RTT		= 4,	/* short header */
	DPQ_PKT_VN		= 5,	/* Version Negotiation (version 0) */
	DPQ_PKT_VERSION_UNKNOWN	= 6,	/* long header, version not 0 or 1 */
};

/*
 * A parsed header. Which fields are valid depends on type:
 *   all:                type, first, dcid, dcid_len, pkt_len
 *   long headers:       version, scid, scid_len
 *   Initial:            token, token_len (token_len may be 0)
 *   Initial/0-RTT/HS:   length, pn_offset
 *   1-RTT:              pn_offset
 *   Retry:              token, token_len (>= 1), retry_tag
 *   VN:                 vn_versions, vn_count (read with dpq_pkt_vn_version)
 */
struct dpq_pkt_hdr {
	enum dpq_pkt_type type;
	uint8_t first;		/* first byte as received (still protected) */
	uint8_t dcid_len;	/* <= 20 for v1, <= 255 for VN/unknown */
	uint8_t scid_len;
	uint32_t version;
	const uint8_t *dcid;
	const uint8_t *scid;
	const uint8_t *token;
	size_t token_len;
	const uint8_t *retry_tag;
	const uint8_t *vn_versions;
	size_t vn_count;
	uint64_t length;	/* Length field: packet number + payload */
	size_t pn_offset;	/* from the first byte of this packet */
	size_t pkt_len;		/* bytes of this packet in the datagram */
};

/*
 * Parse the header of the packet at p; end is the end of the datagram.
 * short_dcid_len is the length of this endpoint's connection IDs, used for
 * short headers (RFC 9000 §17.3.1: the length is not on the wire).
 *
 * Coalesced packets (RFC 9000 §12.2): on success, the next packet starts at
 * p + h->pkt_len. Initial, 0-RTT and Handshake packets end where their
 * Length field says; Retry, VN, 1-RTT and unknown-version packets take the
 * rest of the datagram. Checking that coalesced packets share the first
 * packet's DCID (§12.2) is the caller's job.
 *
 * Returns 0 and fills *h, or:
 *   DPQ_ERR_TRUNCATED  header or Length runs past end
 *   DPQ_ERR_FIXED_BIT  v1 or short header with the fixed bit 0 (§17.2)
 *   DPQ_ERR_MALFORMED  v1 CID length > 20; empty Retry token (§17.2.5.2);
 *                      VN list not a multiple of 4 bytes; fewer than
 *                      DPQ_PKT_MIN_AFTER_PN_OFFSET bytes from pn_offset
 *                      (RFC 9001 §5.4.2); short_dcid_len > 20
 *   DPQ_ERR_VERSION    long header of another version: h->type is
 *                      DPQ_PKT_VERSION_UNKNOWN with version, dcid, scid
 *                      (RFC 8999: up to 255 bytes each) and pkt_len set, so
 *                      a server can answer with Version Negotiation.
 */
int dpq_pkt_parse(const uint8_t *p, const uint8_t *end, size_t short_dcid_len,
		struct dpq_pkt_hdr *h);

/*
 * After header protection is removed: reserved bits must be 0 (RFC 9000
 * §17.2, §17.3.1). Returns 0, or DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION).
 * Applies to Initial, 0-RTT, Handshake and 1-RTT packets.
 */
int dpq_pkt_check_reserved_bits(uint8_t first_unprotected);

/* After header protection is removed: packet number length (1..4). */
static inline size_t
dpq_pkt_pn_len(uint8_t first_unprotected)
{
	return (size_t)(first_unprotected & DPQ_PKT_PN_LEN_MASK) + 1;
}

/* After header protection is removed (1-RTT): key phase bit, 0 or 1. */
static inline unsigned int
dpq_pkt_key_phase(uint8_t first_unprotected)
{
	return (first_unprotected & DPQ_PKT_SHORT_KEY_PHASE) ? 1 : 0;
}

/* 1-RTT spin bit (not protected), 0 or 1. */
static inline unsigned int
dpq_pkt_spin(uint8_t first)
{
	return (first & DPQ_PKT_SHORT_SPIN) ? 1 : 0;
}

/*
 * What a long header writer needs. type is Initial, 0-RTT or Handshake
 * (dpq_pkt_write_retry ignores type and pn/pn_len). token is written only
 * for Initial packets (token_len 0 for none).
 */
struct dpq_pkt_long_desc {
	enum dpq_pkt_type type;
	uint32_t version;
	const uint8_t *dcid;
	size_t dcid_len;
	const uint8_t *scid;
	size_t scid_len;
	const uint8_t *token;
	size_t token_len;
	uint64_t pn;
	size_t pn_len;		/* 1..4, see dpq_pkt_pn_encode_len() */
};

/* Bytes dpq_pkt_write_long() will write (header through packet number);
 * 0 if the description is invalid. */
size_t dpq_pkt_long_hdr_len(const struct dpq_pkt_long_desc *d);

/*
 * Write an Initial, 0-RTT or Handshake header with reserved bits 0 and the
 * packet number unprotected. The Length field is reserved as a 2-byte
 * varint at *len_field for dpq_pkt_patch_length() once the payload is
 * known. Returns the pointer past the packet number (payload start), or
 * NULL if it does not fit or d is invalid (type, CID > 20, pn_len).
 */
uint8_t *dpq_pkt_write_long(uint8_t *p, const uint8_t *end,
		const struct dpq_pkt_long_desc *d, uint8_t **len_field);

/*
 * Fill the Length field reserved by dpq_pkt_write_long(): length counts
 * the packet number, the payload and the AEAD tag. Returns 0, or
 * DPQ_ERR_NOSPACE if length > 16383 (does not fit 2 bytes).
 */
int dpq_pkt_patch_length(uint8_t *len_field, uint64_t length);

/*
 * Write a short (1-RTT) header with reserved bits 0: fixed bit, spin bit,
 * key phase, DCID and the unprotected packet number. Returns the pointer
 * past the packet number, or NULL if it does not fit or the arguments are
 * invalid (dcid_len > 20, pn_len not 1..4).
 */
uint8_t *dpq_pkt_write_short(uint8_t *p, const uint8_t *end,
		const uint8_t *dcid, size_t dcid_len, bool spin, bool key_phase,
		uint64_t pn, size_t pn_len);

/*
 * Write a Version Negotiation packet (RFC 9000 §17.2.1) answering a packet
 * whose header is h: its DCID is h's SCID and its SCID is h's DCID
 * (RFC 8999 §6), both up to 255 bytes. unused supplies the 7 arbitrary bits;
 * the writer sets 0x40 as §17.2.1 recommends. versions (n >= 1) are the
 * versions this server accepts.
 *
 * RFC 9000 §5.2.2: a server sends VN only in response to a datagram of at
 * least 1200 bytes (dpq_pkt_vn_should_send()), never in response to a VN
 * (§6.1), and at most one per datagram.
 * Returns the pointer past the packet, or NULL if it does not fit.
 */
uint8_t *dpq_pkt_write_vn(uint8_t *p, const uint8_t *end, uint8_t unused,
		const uint8_t *dcid, size_t dcid_len,
		const uint8_t *scid, size_t scid_len,
		const uint32_t *versions, size_t n);

/*
 * Server side: should a packet parsed with DPQ_ERR_VERSION get a Version
 * Negotiation reply? True only for an unknown-version long header carried
 * in a datagram of at least DPQ_MIN_INITIAL_DATAGRAM bytes (RFC 9000
 * §5.2.2: smaller ones are dropped; §6.1: never answer a VN).
 */
bool dpq_pkt_vn_should_send(const struct dpq_pkt_hdr *h, size_t datagram_len);

/* i-th version of a parsed VN packet (i < h->vn_count). */
uint32_t dpq_pkt_vn_version(const struct dpq_pkt_hdr *h, size_t i);

/*
 * Client side: does the VN list contain version v? RFC 9000 §6.2: a client
 * MUST discard a VN packet that lists the version it attempted.
 */
bool dpq_pkt_vn_has_version(const struct dpq_pkt_hdr *h, uint32_t v);

/*
 * Write a Retry packet (RFC 9000 §17.2.5) without its integrity tag: the
 * crypto module computes the tag over dpq_pkt_retry_pseudo() and appends
 * DPQ_RETRY_TAG_LEN bytes. Uses d->version, dcid (the client's SCID), scid
 * (the server's new CID) and token (non-empty); unused gives the 4
 * arbitrary low bits of the first byte. Returns the pointer past the token,
 * or NULL if it does not fit or the arguments are invalid.
 */
uint8_t *dpq_pkt_write_retry(uint8_t *p, const uint8_t *end,
		const struct dpq_pkt_long_desc *d, uint8_t unused);

/*
 * Build the Retry pseudo-packet of RFC 9001 §5.8 into [out, out_end):
 * ODCID length, ODCID (the DCID of the client Initial that the Retry
 * answers), then the Retry packet without its tag (retry, retry_len; for a
 * parsed Retry retry_len = h->pkt_len - DPQ_RETRY_TAG_LEN). Returns the
 * pointer past the pseudo-packet, or NULL if it does not fit or
 * odcid_len > 20.
 */
uint8_t *dpq_pkt_retry_pseudo(uint8_t *out, const uint8_t *out_end,
		const uint8_t *odcid, size_t odcid_len,
		const uint8_t *retry, size_t retry_len);

/*
 * RFC 9000 §17.1 and Appendix A.2: bytes (1..4) needed to send packet
 * number pn when the peer has acknowledged up to largest_acked
 * (DPQ_PN_NONE if nothing yet): enough for twice the distance, i.e. the
 * smallest n with pn - largest_acked <= 2^(8n-1). Returns 4 when even 4
 * bytes are not enough (the sender must never be that far ahead).
 */
static inline size_t
dpq_pkt_pn_encode_len(uint64_t pn, uint64_t largest_acked)
{
	uint64_t unacked;

	if (largest_acked == DPQ_PN_NONE || largest_acked > pn)
		unacked = pn + 1;
	else
		unacked = pn - largest_acked;
	if (unacked <= (UINT64_C(1) << 7))
		return 1;
	if (unacked <= (UINT64_C(1) << 15))
		return 2;
	if (unacked <= (UINT64_C(1) << 23))
		return 3;
	return 4;
}

/*
 * RFC 9000 §17.1 and Appendix A.3: recover the full packet number from
 * the truncated value (pn_len bytes, 1..4) and the largest packet number
 * received so far in this space (DPQ_PN_NONE if none). A result above
 * DPQ_PN_MAX cannot be a valid packet number: drop the packet.
 */
static inline uint64_t
dpq_pkt_pn_decode(uint64_t largest_pn, uint64_t truncated, size_t pn_len)
{
	uint64_t expected = largest_pn == DPQ_PN_NONE ? 0 : largest_pn + 1;
	uint64_t win = UINT64_C(1) << (pn_len * 8);
	uint64_t hwin = win / 2;
	uint64_t mask = win - 1;
	uint64_t cand = (expected & ~mask) | (truncated & mask);

	/* candidate <= expected - hwin, written without underflow */
	if (cand + hwin <= expected && cand < (UINT64_C(1) << 62) - win)
		return cand + win;
	if (cand > expected + hwin && cand >= win)
		return cand - win;
	return cand;
}

/* Write the low pn_len bytes of pn, big endian. NULL if no room/bad len. */
static inline uint8_t *
dpq_pkt_pn_write(uint8_t *p, const uint8_t *end, uint64_t pn, size_t pn_len)
{
	size_t i;

	if (pn_len < 1 || pn_len > DPQ_PKT_MAX_PN_LEN || end < p ||
	    (size_t)(end - p) < pn_len)
		return NULL;
	for (i = 0; i < pn_len; i++)
		p[i] = (uint8_t)(pn >> (8 * (pn_len - 1 - i)));
	return p + pn_len;
}

/* Read a pn_len-byte truncated packet number (caller checked bounds; a
 * header accepted by dpq_pkt_parse() has 4 bytes after pn_offset). */
static inline uint64_t
dpq_pkt_pn_read(const uint8_t *p, size_t pn_len)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < pn_len; i++)
		v = (v << 8) | p[i];
	return v;
}

#endif /* DPQ_ENGINE_PACKET_H */
