/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packet.c: QUIC packet header codec (RFC 9000 §17, RFC 8999).
 *
 * The parser walks the header with a cursor that is compared with end
 * before every read. It checks the version-independent layout first
 * (RFC 8999 §5.1: form bit, version, CID lengths up to 255), then the
 * version-1 rules: fixed bit, CIDs of at most 20 bytes, the per-type
 * fields, and that the packet is long enough to take a header-protection
 * sample (RFC 9001 §5.4.2).
 */
#include "dataplane/engine/packet.h"

#include <string.h>

static inline uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void
wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Read a length-prefixed CID of at most max bytes at *pp. */
static int
read_cid(const uint8_t **pp, const uint8_t *end, size_t max,
		const uint8_t **cid, uint8_t *cid_len)
{
	const uint8_t *p = *pp;
	size_t len;

	if (p >= end)
		return DPQ_ERR_TRUNCATED;
	len = *p++;
	if (len > max)
		return DPQ_ERR_MALFORMED;
	if ((size_t)(end - p) < len)
		return DPQ_ERR_TRUNCATED;
	*cid = p;
	*cid_len = (uint8_t)len;
	*pp = p + len;
	return 0;
}

static int
parse_long(const uint8_t *start, const uint8_t *end, struct dpq_pkt_hdr *h)
{
	const uint8_t *p = start + 1;
	size_t max_cid;
	uint64_t v;
	int rc;

	if (end - p < 4)
		return DPQ_ERR_TRUNCATED;
	h->version = rd32(p);
	p += 4;

	if (h->version == DPQ_VERSION_1) {
		/* §17.2: fixed bit 0 in a v1 packet: discard. */
		if (!(h->first & DPQ_PKT_FIXED_BIT))
			return DPQ_ERR_FIXED_BIT;
		max_cid = DPQ_MAX_CID_LEN;
	} else {
		/* RFC 8999 §5.1: any other version may use up to 255 bytes,
		 * and VN (§6) has no fixed bit. */
		max_cid = DPQ_MAX_CID_LEN_ANY;
	}
	rc = read_cid(&p, end, max_cid, &h->dcid, &h->dcid_len);
	if (rc == 0)
		rc = read_cid(&p, end, max_cid, &h->scid, &h->scid_len);
	if (rc != 0)
		return rc;

	if (h->version == DPQ_VERSION_NEGOTIATION) {
		/* §17.2.1: the rest of the datagram is a list of versions. */
		size_t rest = (size_t)(end - p);

		if (rest % 4 != 0)
			return DPQ_ERR_MALFORMED;
		h->type = DPQ_PKT_VN;
		h->vn_versions = p;
		h->vn_count = rest / 4;
		h->pkt_len = (size_t)(end - start);
		return 0;
	}
	if (h->version != DPQ_VERSION_1) {
		h->type = DPQ_PKT_VERSION_UNKNOWN;
		h->pkt_len = (size_t)(end - start);
		return DPQ_ERR_VERSION;
	}

	h->type = (enum dpq_pkt_type)((h->first & DPQ_PKT_LONG_TYPE_MASK) >> 4);
	if (h->type == DPQ_PKT_RETRY) {
		/* §17.2.5: token runs to the tag at the end of the datagram;
		 * §17.2.5.2: a client discards a Retry with an empty token. */
		size_t rest = (size_t)(end - p);

		if (rest < DPQ_RETRY_TAG_LEN)
			return DPQ_ERR_TRUNCATED;
		if (rest == DPQ_RETRY_TAG_LEN)
			return DPQ_ERR_MALFORMED;
		h->token = p;
		h->token_len = rest - DPQ_RETRY_TAG_LEN;
		h->retry_tag = end - DPQ_RETRY_TAG_LEN;
		h->pkt_len = (size_t)(end - start);
		return 0;
	}
	if (h->type == DPQ_PKT_INITIAL) {
		/* §17.2.2: Token Length (i), Token (..). */
		p = dpq_varint_decode(p, end, &v);
		if (p == NULL)
			return DPQ_ERR_TRUNCATED;
		if (v > (uint64_t)(end - p))
			return DPQ_ERR_TRUNCATED;
		h->token = p;
		h->token_len = (size_t)v;
		p += v;
	}
	p = dpq_varint_decode(p, end, &h->length);
	if (p == NULL)
		return DPQ_ERR_TRUNCATED;
	if (h->length > (uint64_t)(end - p))
		return DPQ_ERR_TRUNCATED;
	if (h->length < DPQ_PKT_MIN_AFTER_PN_OFFSET)
		return DPQ_ERR_MALFORMED;
	h->pn_offset = (size_t)(p - start);
	h->pkt_len = h->pn_offset + (size_t)h->length;
	return 0;
}

int
dpq_pkt_parse(const uint8_t *p, const uint8_t *end, size_t short_dcid_len,
		struct dpq_pkt_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (p == NULL || p >= end)
		return DPQ_ERR_TRUNCATED;
	h->first = p[0];
	if (h->first & DPQ_PKT_FORM_LONG)
		return parse_long(p, end, h);

	/* §17.3.1: 1-RTT; the DCID length is ours, not on the wire. */
	if (short_dcid_len > DPQ_MAX_CID_LEN)
		return DPQ_ERR_MALFORMED;
	if (!(h->first & DPQ_PKT_FIXED_BIT))
		return DPQ_ERR_FIXED_BIT;
	if ((size_t)(end - p) < 1 + short_dcid_len)
		return DPQ_ERR_TRUNCATED;
	h->type = DPQ_PKT_1RTT;
	h->dcid = p + 1;
	h->dcid_len = (uint8_t)short_dcid_len;
	h->pn_offset = 1 + short_dcid_len;
	h->pkt_len = (size_t)(end - p);
	if (h->pkt_len - h->pn_offset < DPQ_PKT_MIN_AFTER_PN_OFFSET)
		return DPQ_ERR_MALFORMED;
	return 0;
}

int
dpq_pkt_check_reserved_bits(uint8_t first)
{
	uint8_t mask = (first & DPQ_PKT_FORM_LONG) ? DPQ_PKT_LONG_RESERVED :
		DPQ_PKT_SHORT_RESERVED;

	/* §17.2/§17.3.1: nonzero reserved bits after removing header
	 * protection are a PROTOCOL_VIOLATION. */
	return (first & mask) ? DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION) : 0;
}

static bool
long_desc_ok(const struct dpq_pkt_long_desc *d)
{
	if (d->type != DPQ_PKT_INITIAL && d->type != DPQ_PKT_0RTT &&
	    d->type != DPQ_PKT_HANDSHAKE)
		return false;
	if (d->dcid_len > DPQ_MAX_CID_LEN || d->scid_len > DPQ_MAX_CID_LEN)
		return false;
	if (d->pn_len < 1 || d->pn_len > DPQ_PKT_MAX_PN_LEN)
		return false;
	if (d->type == DPQ_PKT_INITIAL && d->token_len > DPQ_VARINT_MAX)
		return false;
	return true;
}

size_t
dpq_pkt_long_hdr_len(const struct dpq_pkt_long_desc *d)
{
	size_t n;

	if (!long_desc_ok(d))
		return 0;
	n = 1 + 4 + 1 + d->dcid_len + 1 + d->scid_len;
	if (d->type == DPQ_PKT_INITIAL)
		n += dpq_varint_len(d->token_len) + d->token_len;
	return n + DPQ_PKT_LENGTH_FIELD_LEN + d->pn_len;
}

uint8_t *
dpq_pkt_write_long(uint8_t *p, const uint8_t *end,
		const struct dpq_pkt_long_desc *d, uint8_t **len_field)
{
	size_t need = dpq_pkt_long_hdr_len(d);

	if (need == 0 || p == NULL || end < p || (size_t)(end - p) < need)
		return NULL;
	*p++ = (uint8_t)(DPQ_PKT_FORM_LONG | DPQ_PKT_FIXED_BIT |
			(unsigned int)d->type << 4 | (d->pn_len - 1));
	wr32(p, d->version);
	p += 4;
	*p++ = (uint8_t)d->dcid_len;
	if (d->dcid_len != 0)
		memcpy(p, d->dcid, d->dcid_len);
	p += d->dcid_len;
	*p++ = (uint8_t)d->scid_len;
	if (d->scid_len != 0)
		memcpy(p, d->scid, d->scid_len);
	p += d->scid_len;
	if (d->type == DPQ_PKT_INITIAL) {
		p = dpq_varint_encode(p, end, d->token_len);
		if (d->token_len != 0)
			memcpy(p, d->token, d->token_len);
		p += d->token_len;
	}
	/* Length: reserved as a 2-byte varint, patched when known. */
	*len_field = p;
	p = dpq_varint_encode_len(p, end, 0, DPQ_PKT_LENGTH_FIELD_LEN);
	return dpq_pkt_pn_write(p, end, d->pn, d->pn_len);
}

int
dpq_pkt_patch_length(uint8_t *len_field, uint64_t length)
{
	if (length > DPQ_VARINT_MAX_2)
		return DPQ_ERR_NOSPACE;
	len_field[0] = (uint8_t)(0x40 | (length >> 8));
	len_field[1] = (uint8_t)length;
	return 0;
}

uint8_t *
dpq_pkt_write_short(uint8_t *p, const uint8_t *end,
		const uint8_t *dcid, size_t dcid_len, bool spin, bool key_phase,
		uint64_t pn, size_t pn_len)
{
	if (dcid_len > DPQ_MAX_CID_LEN || pn_len < 1 ||
	    pn_len > DPQ_PKT_MAX_PN_LEN || p == NULL || end < p ||
	    (size_t)(end - p) < 1 + dcid_len + pn_len)
		return NULL;
	*p++ = (uint8_t)(DPQ_PKT_FIXED_BIT | (spin ? DPQ_PKT_SHORT_SPIN : 0) |
			(key_phase ? DPQ_PKT_SHORT_KEY_PHASE : 0) |
			(pn_len - 1));
	if (dcid_len != 0)
		memcpy(p, dcid, dcid_len);
	p += dcid_len;
	return dpq_pkt_pn_write(p, end, pn, pn_len);
}

uint8_t *
dpq_pkt_write_vn(uint8_t *p, const uint8_t *end, uint8_t unused,
		const uint8_t *dcid, size_t dcid_len,
		const uint8_t *scid, size_t scid_len,
		const uint32_t *versions, size_t n)
{
	size_t hdr, i;

	if (dcid_len > DPQ_MAX_CID_LEN_ANY || scid_len > DPQ_MAX_CID_LEN_ANY ||
	    n == 0 || p == NULL || end < p)
		return NULL;
	hdr = 1 + 4 + 1 + dcid_len + 1 + scid_len;
	if ((size_t)(end - p) < hdr || ((size_t)(end - p) - hdr) / 4 < n)
		return NULL;
	*p++ = (uint8_t)(DPQ_PKT_FORM_LONG | DPQ_PKT_FIXED_BIT | (unused & 0x3f));
	wr32(p, DPQ_VERSION_NEGOTIATION);
	p += 4;
	*p++ = (uint8_t)dcid_len;
	if (dcid_len != 0)
		memcpy(p, dcid, dcid_len);
	p += dcid_len;
	*p++ = (uint8_t)scid_len;
	if (scid_len != 0)
		memcpy(p, scid, scid_len);
	p += scid_len;
	for (i = 0; i < n; i++, p += 4)
		wr32(p, versions[i]);
	return p;
}

bool
dpq_pkt_vn_should_send(const struct dpq_pkt_hdr *h, size_t datagram_len)
{
	return h->type == DPQ_PKT_VERSION_UNKNOWN &&
		(h->first & DPQ_PKT_FORM_LONG) &&
		h->version != DPQ_VERSION_NEGOTIATION &&
		datagram_len >= DPQ_MIN_INITIAL_DATAGRAM;
}

uint32_t
dpq_pkt_vn_version(const struct dpq_pkt_hdr *h, size_t i)
{
	if (h->type != DPQ_PKT_VN || i >= h->vn_count)
		return 0;
	return rd32(h->vn_versions + 4 * i);
}

bool
dpq_pkt_vn_has_version(const struct dpq_pkt_hdr *h, uint32_t v)
{
	size_t i;

	if (h->type != DPQ_PKT_VN)
		return false;
	for (i = 0; i < h->vn_count; i++)
		if (rd32(h->vn_versions + 4 * i) == v)
			return true;
	return false;
}

uint8_t *
dpq_pkt_write_retry(uint8_t *p, const uint8_t *end,
		const struct dpq_pkt_long_desc *d, uint8_t unused)
{
	size_t need;

	if (d->dcid_len > DPQ_MAX_CID_LEN || d->scid_len > DPQ_MAX_CID_LEN ||
	    d->token_len == 0 || p == NULL || end < p)
		return NULL;
	need = 1 + 4 + 1 + d->dcid_len + 1 + d->scid_len;
	if ((size_t)(end - p) < need || (size_t)(end - p) - need < d->token_len)
		return NULL;
	*p++ = (uint8_t)(DPQ_PKT_FORM_LONG | DPQ_PKT_FIXED_BIT |
			DPQ_PKT_RETRY << 4 | (unused & 0x0f));
	wr32(p, d->version);
	p += 4;
	*p++ = (uint8_t)d->dcid_len;
	if (d->dcid_len != 0)
		memcpy(p, d->dcid, d->dcid_len);
	p += d->dcid_len;
	*p++ = (uint8_t)d->scid_len;
	if (d->scid_len != 0)
		memcpy(p, d->scid, d->scid_len);
	p += d->scid_len;
	memcpy(p, d->token, d->token_len);
	return p + d->token_len;
}

uint8_t *
dpq_pkt_retry_pseudo(uint8_t *out, const uint8_t *out_end,
		const uint8_t *odcid, size_t odcid_len,
		const uint8_t *retry, size_t retry_len)
{
	if (odcid_len > DPQ_MAX_CID_LEN || out == NULL || out_end < out ||
	    (size_t)(out_end - out) < 1 + odcid_len ||
	    (size_t)(out_end - out) - 1 - odcid_len < retry_len)
		return NULL;
	*out++ = (uint8_t)odcid_len;
	if (odcid_len != 0)
		memcpy(out, odcid, odcid_len);
	out += odcid_len;
	if (retry_len != 0)
		memcpy(out, retry, retry_len);
	return out + retry_len;
}
