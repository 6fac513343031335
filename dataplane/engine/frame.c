/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.c: QUIC v1 frame codec (RFC 9000 §19) and frame table (§12.4).
 *
 * Decoding reads every field through dpq_varint_decode(), which never
 * reads at or past end, and checks each length field against the bytes
 * left before taking a pointer, so a hostile payload can only produce an
 * error code. Value rules of §19 (ACK ranges below 0, offsets past 2^62-1,
 * stream counts past 2^60, CID lengths) are checked here so the
 * connection only sees well-formed frames.
 */
#include "dataplane/engine/frame.h"

#include <string.h>

#define FEE	(DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR))

/* Read a varint field into v or fail the frame (§12.4: truncation is a
 * FRAME_ENCODING_ERROR). */
#define GETV(v) do {						\
		p = dpq_varint_decode(p, end, &(v));		\
		if (p == NULL)					\
			return FEE;				\
	} while (0)

/* Take n bytes as a pointer, checking they are all there. */
#define GETB(ptr, n) do {					\
		if ((uint64_t)(end - p) < (uint64_t)(n))	\
			return FEE;				\
		(ptr) = p;					\
		p += (n);					\
	} while (0)

static ssize_t
decode_ack(const uint8_t *p, const uint8_t *end, struct dpq_frame_ack *a,
		bool ecn, const uint8_t **out)
{
	uint64_t smallest, gap, len, i;

	GETV(a->largest);
	GETV(a->ack_delay);
	GETV(a->range_count);
	GETV(a->first_range);
	/* §19.3.1: smallest = largest - first_range must not be negative. */
	if (a->first_range > a->largest)
		return FEE;
	smallest = a->largest - a->first_range;
	a->ranges = p;
	/* Each pair takes at least 2 bytes, so the loop ends with the input
	 * whatever range_count claims. */
	for (i = 0; i < a->range_count; i++) {
		GETV(gap);
		GETV(len);
		/* next largest = smallest - gap - 2, next smallest =
		 * largest - len; neither may go below 0 (§19.3.1). */
		if (smallest < 2 || gap > smallest - 2)
			return FEE;
		smallest = smallest - gap - 2;
		if (len > smallest)
			return FEE;
		smallest -= len;
	}
	a->ranges_end = p;
	if (ecn) {
		GETV(a->ecn.ect0);
		GETV(a->ecn.ect1);
		GETV(a->ecn.ce);
	}
	*out = p;
	return 0;
}

ssize_t
dpq_frame_decode(const uint8_t *start, const uint8_t *end, struct dpq_frame *f)
{
	const uint8_t *p;
	uint64_t t, v;
	ssize_t rc;

	memset(f, 0, sizeof(*f));
	if (start == NULL || start >= end)
		return FEE;
	p = dpq_varint_decode(start, end, &t);
	if (p == NULL)
		return FEE;
	/* §12.4: a frame type MUST use its shortest encoding; we close with
	 * PROTOCOL_VIOLATION as the section permits. */
	if ((size_t)(p - start) != dpq_varint_len(t))
		return DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION);
	f->type = t;

	switch (t) {
	case DPQ_FT_PADDING:
		/* §19.1: one frame per run, so a padded packet costs one call. */
		while (p < end && *p == 0)
			p++;
		f->padding.len = (size_t)(p - start);
		break;
	case DPQ_FT_PING:
	case DPQ_FT_HANDSHAKE_DONE:
		break;
	case DPQ_FT_ACK:
	case DPQ_FT_ACK_ECN:
		rc = decode_ack(p, end, &f->ack, t == DPQ_FT_ACK_ECN, &p);
		if (rc != 0)
			return rc;
		break;
	case DPQ_FT_RESET_STREAM:
		GETV(f->reset_stream.stream_id);
		GETV(f->reset_stream.app_error);
		GETV(f->reset_stream.final_size);
		break;
	case DPQ_FT_STOP_SENDING:
		GETV(f->stop_sending.stream_id);
		GETV(f->stop_sending.app_error);
		break;
	case DPQ_FT_CRYPTO:
		GETV(f->crypto.offset);
		GETV(f->crypto.len);
		GETB(f->crypto.data, f->crypto.len);
		/* §19.6: offset + length cannot exceed 2^62-1. */
		if (f->crypto.len > DPQ_VARINT_MAX - f->crypto.offset)
			return FEE;
		break;
	case DPQ_FT_NEW_TOKEN:
		GETV(f->new_token.len);
		/* §19.7: an empty token is a FRAME_ENCODING_ERROR. */
		if (f->new_token.len == 0)
			return FEE;
		GETB(f->new_token.token, f->new_token.len);
		break;
	case DPQ_FT_MAX_DATA:
		GETV(f->max_data.max);
		break;
	case DPQ_FT_MAX_STREAM_DATA:
		GETV(f->max_stream_data.stream_id);
		GETV(f->max_stream_data.max);
		break;
	case DPQ_FT_MAX_STREAMS_BIDI:
	case DPQ_FT_MAX_STREAMS_UNI:
		GETV(f->max_streams.max);
		/* §19.11: more than 2^60 streams is a FRAME_ENCODING_ERROR. */
		if (f->max_streams.max > DPQ_MAX_STREAMS_LIMIT)
			return FEE;
		break;
	case DPQ_FT_DATA_BLOCKED:
		GETV(f->data_blocked.limit);
		break;
	case DPQ_FT_STREAM_DATA_BLOCKED:
		GETV(f->stream_data_blocked.stream_id);
		GETV(f->stream_data_blocked.limit);
		break;
	case DPQ_FT_STREAMS_BLOCKED_BIDI:
	case DPQ_FT_STREAMS_BLOCKED_UNI:
		GETV(f->streams_blocked.limit);
		/* §19.14: same bound as MAX_STREAMS. */
		if (f->streams_blocked.limit > DPQ_MAX_STREAMS_LIMIT)
			return FEE;
		break;
	case DPQ_FT_NEW_CONNECTION_ID:
		GETV(f->new_cid.seq);
		GETV(f->new_cid.retire_prior_to);
		/* §19.15: Retire Prior To <= Sequence Number. */
		if (f->new_cid.retire_prior_to > f->new_cid.seq)
			return FEE;
		if (p >= end)
			return FEE;
		v = *p++;
		/* §19.15: length 1..20, anything else FRAME_ENCODING_ERROR. */
		if (v < 1 || v > DPQ_MAX_CID_LEN)
			return FEE;
		f->new_cid.cid_len = (uint8_t)v;
		GETB(f->new_cid.cid, v);
		GETB(f->new_cid.reset_token, DPQ_RESET_TOKEN_LEN);
		break;
	case DPQ_FT_RETIRE_CONNECTION_ID:
		GETV(f->retire_cid.seq);
		break;
	case DPQ_FT_PATH_CHALLENGE:
	case DPQ_FT_PATH_RESPONSE:
		if (end - p < DPQ_PATH_DATA_LEN)
			return FEE;
		memcpy(f->path.data, p, DPQ_PATH_DATA_LEN);
		p += DPQ_PATH_DATA_LEN;
		break;
	case DPQ_FT_CONNECTION_CLOSE:
	case DPQ_FT_CONNECTION_CLOSE_APP:
		GETV(f->close.error_code);
		if (t == DPQ_FT_CONNECTION_CLOSE)
			GETV(f->close.frame_type);
		GETV(f->close.reason_len);
		GETB(f->close.reason, f->close.reason_len);
		break;
	default:
		if (!dpq_frame_is_stream(t))
			return FEE;	/* §12.4: unknown frame type */
		GETV(f->stream.stream_id);
		if (t & DPQ_STREAM_FLAG_OFF)
			GETV(f->stream.offset);
		if (t & DPQ_STREAM_FLAG_LEN)
			GETV(f->stream.len);
		else
			f->stream.len = (uint64_t)(end - p);
		GETB(f->stream.data, f->stream.len);
		/* §19.8: offset + length > 2^62-1 is FRAME_ENCODING_ERROR. */
		if (f->stream.len > DPQ_VARINT_MAX - f->stream.offset)
			return FEE;
		f->stream.fin = (t & DPQ_STREAM_FLAG_FIN) != 0;
		break;
	}
	return p - start;
}

/* ---- encoders ------------------------------------------------------- */

#define PUTV(v) do {						\
		p = dpq_varint_encode(p, end, (v));		\
		if (p == NULL)					\
			return NULL;				\
	} while (0)

#define PUTB(src, n) do {					\
		if ((uint64_t)(end - p) < (uint64_t)(n))	\
			return NULL;				\
		if ((n) != 0)					\
			memcpy(p, (src), (size_t)(n));		\
		p += (n);					\
	} while (0)

uint8_t *
dpq_frame_encode_padding(uint8_t *p, const uint8_t *end, size_t n)
{
	if (p == NULL || end < p || n == 0 || (size_t)(end - p) < n)
		return NULL;
	memset(p, 0, n);
	return p + n;
}

uint8_t *
dpq_frame_encode_ack(uint8_t *p, const uint8_t *end,
		const struct dpq_ack_range *r, size_t n,
		uint64_t ack_delay, const struct dpq_ecn_counts *ecn)
{
	size_t i;

	if (p == NULL || end < p || n == 0 || r[0].largest > DPQ_VARINT_MAX)
		return NULL;
	for (i = 0; i < n; i++) {
		if (r[i].smallest > r[i].largest)
			return NULL;
		/* descending, with at least one missing number between */
		if (i > 0 && (r[i - 1].smallest < 2 ||
		    r[i].largest > r[i - 1].smallest - 2))
			return NULL;
	}
	PUTV(ecn != NULL ? DPQ_FT_ACK_ECN : DPQ_FT_ACK);
	PUTV(r[0].largest);
	PUTV(ack_delay);
	PUTV((uint64_t)n - 1);
	PUTV(r[0].largest - r[0].smallest);
	for (i = 1; i < n; i++) {
		PUTV(r[i - 1].smallest - r[i].largest - 2);	/* Gap */
		PUTV(r[i].largest - r[i].smallest);	/* ACK Range Length */
	}
	if (ecn != NULL) {
		PUTV(ecn->ect0);
		PUTV(ecn->ect1);
		PUTV(ecn->ce);
	}
	return p;
}

void
dpq_ack_iter_init(struct dpq_ack_iter *it, const struct dpq_frame_ack *a)
{
	it->p = a->ranges;
	it->end = a->ranges_end;
	it->left = a->range_count;
	it->smallest = 0;
	it->largest = a->largest;
	it->first_range = a->first_range;
	it->started = false;
}

bool
dpq_ack_iter_next(struct dpq_ack_iter *it, struct dpq_ack_range *r)
{
	uint64_t gap, len;
	const uint8_t *p;

	if (!it->started) {
		if (it->first_range > it->largest)
			return false;
		it->started = true;
		r->largest = it->largest;
		r->smallest = it->largest - it->first_range;
		it->smallest = r->smallest;
		return true;
	}
	if (it->left == 0)
		return false;
	p = dpq_varint_decode(it->p, it->end, &gap);
	if (p != NULL)
		p = dpq_varint_decode(p, it->end, &len);
	if (p == NULL || it->smallest < 2 || gap > it->smallest - 2) {
		it->left = 0;
		return false;
	}
	r->largest = it->smallest - gap - 2;
	if (len > r->largest) {
		it->left = 0;
		return false;
	}
	r->smallest = r->largest - len;
	it->smallest = r->smallest;
	it->p = p;
	it->left--;
	return true;
}

size_t
dpq_frame_stream_hdr_len(uint64_t stream_id, uint64_t offset, uint64_t len,
		bool with_len)
{
	size_t n = 1, l;

	l = dpq_varint_len(stream_id);
	if (l == 0)
		return 0;
	n += l;
	if (offset != 0) {
		l = dpq_varint_len(offset);
		if (l == 0)
			return 0;
		n += l;
	}
	if (with_len) {
		l = dpq_varint_len(len);
		if (l == 0)
			return 0;
		n += l;
	}
	return n;
}

uint8_t *
dpq_frame_encode_stream_hdr(uint8_t *p, const uint8_t *end,
		uint64_t stream_id, uint64_t offset, uint64_t len, bool fin,
		bool with_len)
{
	uint64_t t = DPQ_FT_STREAM;

	if (p == NULL || end < p || offset > DPQ_VARINT_MAX ||
	    len > DPQ_VARINT_MAX - offset)
		return NULL;
	if (offset != 0)
		t |= DPQ_STREAM_FLAG_OFF;
	if (with_len)
		t |= DPQ_STREAM_FLAG_LEN;
	if (fin)
		t |= DPQ_STREAM_FLAG_FIN;
	PUTV(t);
	PUTV(stream_id);
	if (offset != 0)
		PUTV(offset);
	if (with_len)
		PUTV(len);
	return p;
}

/* Largest d with hdr_base + varint_len(d) + d <= room (Length present). */
static size_t
fit_with_len(size_t base, size_t room)
{
	static const size_t lens[] = { 1, 2, 4, 8 };
	size_t best = 0, i;
	uint64_t d;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		if (room < base + lens[i])
			break;
		d = room - base - lens[i];
		if (d > dpq_varint_max_for_len(lens[i]))
			d = dpq_varint_max_for_len(lens[i]);
		if (d > best)
			best = (size_t)d;
	}
	return best;
}

bool
dpq_frame_stream_fit(uint64_t stream_id, uint64_t offset, size_t room,
		bool with_len, size_t *max_data)
{
	size_t base = dpq_frame_stream_hdr_len(stream_id, offset, 0, false);
	uint64_t cap, d;

	*max_data = 0;
	if (base == 0 || room < base + (with_len ? 1 : 0))
		return false;
	d = with_len ? fit_with_len(base, room) : room - base;
	cap = DPQ_VARINT_MAX - offset;	/* §19.8 */
	if (d > cap)
		d = cap;
	*max_data = (size_t)d;
	return true;
}

size_t
dpq_frame_crypto_hdr_len(uint64_t offset, uint64_t len)
{
	size_t lo = dpq_varint_len(offset), ll = dpq_varint_len(len);

	if (lo == 0 || ll == 0)
		return 0;
	return 1 + lo + ll;
}

uint8_t *
dpq_frame_encode_crypto_hdr(uint8_t *p, const uint8_t *end, uint64_t offset,
		uint64_t len)
{
	if (p == NULL || end < p || offset > DPQ_VARINT_MAX ||
	    len > DPQ_VARINT_MAX - offset)
		return NULL;
	PUTV(DPQ_FT_CRYPTO);
	PUTV(offset);
	PUTV(len);
	return p;
}

bool
dpq_frame_crypto_fit(uint64_t offset, size_t room, size_t *max_data)
{
	size_t lo = dpq_varint_len(offset);
	uint64_t d, cap;

	*max_data = 0;
	if (lo == 0 || room < 1 + lo + 1)
		return false;
	d = fit_with_len(1 + lo, room);
	cap = DPQ_VARINT_MAX - offset;	/* §19.6 */
	if (d > cap)
		d = cap;
	*max_data = (size_t)d;
	return true;
}

uint8_t *
dpq_frame_encode(uint8_t *p, const uint8_t *end, const struct dpq_frame *f)
{
	uint64_t t = f->type;

	if (p == NULL || end < p)
		return NULL;
	if (t == DPQ_FT_PADDING)
		return dpq_frame_encode_padding(p, end, f->padding.len);
	if (dpq_frame_info(t) == NULL)
		return NULL;
	PUTV(t);
	switch (t) {
	case DPQ_FT_PING:
	case DPQ_FT_HANDSHAKE_DONE:
		break;
	case DPQ_FT_ACK:
	case DPQ_FT_ACK_ECN:
		if (f->ack.first_range > f->ack.largest ||
		    f->ack.ranges_end < f->ack.ranges)
			return NULL;
		PUTV(f->ack.largest);
		PUTV(f->ack.ack_delay);
		PUTV(f->ack.range_count);
		PUTV(f->ack.first_range);
		PUTB(f->ack.ranges, (size_t)(f->ack.ranges_end - f->ack.ranges));
		if (t == DPQ_FT_ACK_ECN) {
			PUTV(f->ack.ecn.ect0);
			PUTV(f->ack.ecn.ect1);
			PUTV(f->ack.ecn.ce);
		}
		break;
	case DPQ_FT_RESET_STREAM:
		PUTV(f->reset_stream.stream_id);
		PUTV(f->reset_stream.app_error);
		PUTV(f->reset_stream.final_size);
		break;
	case DPQ_FT_STOP_SENDING:
		PUTV(f->stop_sending.stream_id);
		PUTV(f->stop_sending.app_error);
		break;
	case DPQ_FT_CRYPTO:
		if (f->crypto.len > DPQ_VARINT_MAX - f->crypto.offset ||
		    f->crypto.offset > DPQ_VARINT_MAX)
			return NULL;
		PUTV(f->crypto.offset);
		PUTV(f->crypto.len);
		PUTB(f->crypto.data, f->crypto.len);
		break;
	case DPQ_FT_NEW_TOKEN:
		if (f->new_token.len == 0)
			return NULL;
		PUTV(f->new_token.len);
		PUTB(f->new_token.token, f->new_token.len);
		break;
	case DPQ_FT_MAX_DATA:
		PUTV(f->max_data.max);
		break;
	case DPQ_FT_MAX_STREAM_DATA:
		PUTV(f->max_stream_data.stream_id);
		PUTV(f->max_stream_data.max);
		break;
	case DPQ_FT_MAX_STREAMS_BIDI:
	case DPQ_FT_MAX_STREAMS_UNI:
		if (f->max_streams.max > DPQ_MAX_STREAMS_LIMIT)
			return NULL;
		PUTV(f->max_streams.max);
		break;
	case DPQ_FT_DATA_BLOCKED:
		PUTV(f->data_blocked.limit);
		break;
	case DPQ_FT_STREAM_DATA_BLOCKED:
		PUTV(f->stream_data_blocked.stream_id);
		PUTV(f->stream_data_blocked.limit);
		break;
	case DPQ_FT_STREAMS_BLOCKED_BIDI:
	case DPQ_FT_STREAMS_BLOCKED_UNI:
		if (f->streams_blocked.limit > DPQ_MAX_STREAMS_LIMIT)
			return NULL;
		PUTV(f->streams_blocked.limit);
		break;
	case DPQ_FT_NEW_CONNECTION_ID:
		if (f->new_cid.cid_len < 1 || f->new_cid.cid_len > DPQ_MAX_CID_LEN ||
		    f->new_cid.retire_prior_to > f->new_cid.seq)
			return NULL;
		PUTV(f->new_cid.seq);
		PUTV(f->new_cid.retire_prior_to);
		if (p >= end)
			return NULL;
		*p++ = f->new_cid.cid_len;
		PUTB(f->new_cid.cid, f->new_cid.cid_len);
		PUTB(f->new_cid.reset_token, DPQ_RESET_TOKEN_LEN);
		break;
	case DPQ_FT_RETIRE_CONNECTION_ID:
		PUTV(f->retire_cid.seq);
		break;
	case DPQ_FT_PATH_CHALLENGE:
	case DPQ_FT_PATH_RESPONSE:
		PUTB(f->path.data, DPQ_PATH_DATA_LEN);
		break;
	case DPQ_FT_CONNECTION_CLOSE:
	case DPQ_FT_CONNECTION_CLOSE_APP:
		PUTV(f->close.error_code);
		if (t == DPQ_FT_CONNECTION_CLOSE)
			PUTV(f->close.frame_type);
		PUTV(f->close.reason_len);
		PUTB(f->close.reason, f->close.reason_len);
		break;
	default:	/* STREAM, flags taken from t */
		if (!(t & DPQ_STREAM_FLAG_OFF) && f->stream.offset != 0)
			return NULL;
		if (f->stream.offset > DPQ_VARINT_MAX ||
		    f->stream.len > DPQ_VARINT_MAX - f->stream.offset)
			return NULL;
		PUTV(f->stream.stream_id);
		if (t & DPQ_STREAM_FLAG_OFF)
			PUTV(f->stream.offset);
		if (t & DPQ_STREAM_FLAG_LEN)
			PUTV(f->stream.len);
		PUTB(f->stream.data, f->stream.len);
		break;
	}
	return p;
}

/* ---- frame table (RFC 9000 §12.4, Table 3) --------------------------- */

#define PK_I	(1u << DPQ_PKT_INITIAL)
#define PK_0	(1u << DPQ_PKT_0RTT)
#define PK_H	(1u << DPQ_PKT_HANDSHAKE)
#define PK_1	(1u << DPQ_PKT_1RTT)
#define N	DPQ_FTF_NOT_ACK_ELICITING
#define C	DPQ_FTF_NOT_IN_FLIGHT
#define P	DPQ_FTF_PROBING
#define F	DPQ_FTF_FLOW_CONTROLLED
#define S	DPQ_FTF_SERVER_ONLY

/*
 * One row per type, the "Pkts" and "Spec" columns of Table 3. Note that
 * RFC 9002 §2 counts a packet as in flight when it is ack-eliciting or
 * holds PADDING, so a CONNECTION_CLOSE-only packet is not in flight
 * either; the sent-packet tracker applies that rule, this table keeps the
 * RFC's markings.
 */
static const struct dpq_frame_info frame_table[DPQ_FT_COUNT] = {
	[0x00] = { "PADDING",		PK_I | PK_H | PK_0 | PK_1, N | P },
	[0x01] = { "PING",		PK_I | PK_H | PK_0 | PK_1, 0 },
	[0x02] = { "ACK",		PK_I | PK_H | PK_1, N | C },
	[0x03] = { "ACK_ECN",		PK_I | PK_H | PK_1, N | C },
	[0x04] = { "RESET_STREAM",	PK_0 | PK_1, 0 },
	[0x05] = { "STOP_SENDING",	PK_0 | PK_1, 0 },
	[0x06] = { "CRYPTO",		PK_I | PK_H | PK_1, 0 },
	[0x07] = { "NEW_TOKEN",		PK_1, S },
	[0x08] = { "STREAM",		PK_0 | PK_1, F },
	[0x09] = { "STREAM",		PK_0 | PK_1, F },
	[0x0a] = { "STREAM",		PK_0 | PK_1, F },
	[0x0b] = { "STREAM",		PK_0 | PK_1, F },
	[0x0c] = { "STREAM",		PK_0 | PK_1, F },
	[0x0d] = { "STREAM",		PK_0 | PK_1, F },
	[0x0e] = { "STREAM",		PK_0 | PK_1, F },
	[0x0f] = { "STREAM",		PK_0 | PK_1, F },
	[0x10] = { "MAX_DATA",		PK_0 | PK_1, 0 },
	[0x11] = { "MAX_STREAM_DATA",	PK_0 | PK_1, 0 },
	[0x12] = { "MAX_STREAMS_BIDI",	PK_0 | PK_1, 0 },
	[0x13] = { "MAX_STREAMS_UNI",	PK_0 | PK_1, 0 },
	[0x14] = { "DATA_BLOCKED",	PK_0 | PK_1, 0 },
	[0x15] = { "STREAM_DATA_BLOCKED", PK_0 | PK_1, 0 },
	[0x16] = { "STREAMS_BLOCKED_BIDI", PK_0 | PK_1, 0 },
	[0x17] = { "STREAMS_BLOCKED_UNI", PK_0 | PK_1, 0 },
	[0x18] = { "NEW_CONNECTION_ID",	PK_0 | PK_1, P },
	[0x19] = { "RETIRE_CONNECTION_ID", PK_0 | PK_1, 0 },
	[0x1a] = { "PATH_CHALLENGE",	PK_0 | PK_1, P },
	[0x1b] = { "PATH_RESPONSE",	PK_1, P },
	/* "ih": only type 0x1c may appear in Initial and Handshake. */
	[0x1c] = { "CONNECTION_CLOSE",	PK_I | PK_H | PK_0 | PK_1, N },
	[0x1d] = { "CONNECTION_CLOSE_APP", PK_0 | PK_1, N },
	[0x1e] = { "HANDSHAKE_DONE",	PK_1, S },
};

#undef PK_I
#undef PK_0
#undef PK_H
#undef PK_1
#undef N
#undef C
#undef P
#undef F
#undef S

const struct dpq_frame_info *
dpq_frame_info(uint64_t type)
{
	if (type >= DPQ_FT_COUNT)
		return NULL;
	return &frame_table[type];
}

bool
dpq_frame_allowed(uint64_t type, enum dpq_pkt_type pkt_type)
{
	const struct dpq_frame_info *fi = dpq_frame_info(type);

	if (fi == NULL || (unsigned int)pkt_type > DPQ_PKT_1RTT ||
	    pkt_type == DPQ_PKT_RETRY)
		return false;
	return (fi->pkts & (1u << pkt_type)) != 0;
}

bool
dpq_frame_is_ack_eliciting(uint64_t type)
{
	const struct dpq_frame_info *fi = dpq_frame_info(type);

	return fi != NULL && !(fi->flags & DPQ_FTF_NOT_ACK_ELICITING);
}

bool
dpq_frame_is_probing(uint64_t type)
{
	const struct dpq_frame_info *fi = dpq_frame_info(type);

	return fi != NULL && (fi->flags & DPQ_FTF_PROBING);
}

const char *
dpq_frame_type_str(uint64_t type)
{
	const struct dpq_frame_info *fi = dpq_frame_info(type);

	return fi != NULL ? fi->name : "UNKNOWN";
}
