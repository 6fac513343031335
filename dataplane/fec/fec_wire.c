/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec_wire.c: codec of the XOR-FEC transport parameter and frames
 * (docs/fec.md). Every field goes through dpq_varint_decode(), which
 * never reads at or past end; lengths are checked against the bytes left
 * before a pointer is taken, so hostile input only yields an error.
 */
#include "dataplane/fec/fec_wire.h"

#include "dataplane/engine/varint.h"

#define FEE	(DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR))
#define TPE	(DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR))

#define GETV(v) do {						\
		p = dpq_varint_decode(p, end, &(v));		\
		if (p == NULL)					\
			return FEE;				\
	} while (0)

#define PUTV(v) do {						\
		p = dpq_varint_encode(p, end, (v));		\
		if (p == NULL)					\
			return NULL;				\
	} while (0)

int
dpq_fec_tp_decode(const uint8_t *v, size_t len, uint64_t *max_group)
{
	const uint8_t *q;
	uint64_t x;

	if (v == NULL && len != 0)
		return TPE;
	q = dpq_varint_decode(v, v + len, &x);
	if (q == NULL || q != v + len || x < 1 || x > DPQ_FEC_GROUP_LIMIT)
		return TPE;
	*max_group = x;
	return 0;
}

size_t
dpq_fec_tp_encode(uint8_t *buf, size_t cap, uint64_t max_group)
{
	uint8_t *e;

	if (max_group < 1 || max_group > DPQ_FEC_GROUP_LIMIT)
		return 0;
	e = dpq_varint_encode(buf, buf + cap, max_group);
	return e == NULL ? 0 : (size_t)(e - buf);
}

/* Largest value an XOR of numbers <= v can take. */
static uint64_t
xor_bound(uint64_t v)
{
	uint64_t b = 0;

	while (b < v)
		b = b << 1 | 1;
	return b;
}

/* The value rules shared by the decoder and the encoder. */
static bool
repair_ok(const struct dpq_fec_repair *r)
{
	if (r->size > DPQ_FEC_GROUP_LIMIT ||
	    r->next_size > DPQ_FEC_GROUP_LIMIT ||
	    r->data_len > DPQ_FEC_PAYLOAD_LIMIT ||
	    r->len_xor > xor_bound(r->data_len))
		return false;
	if (r->size == 0 ? (r->data_len != 0 || r->len_xor != 0) :
	    r->data_len == 0)
		return false;
	/* Every packet number named, up to the next group's first, must
	 * be a valid one (size <= DPQ_FEC_GROUP_LIMIT: no wrap). */
	if (r->first_pn > DPQ_VARINT_MAX - r->size)
		return false;
	return r->next_delta <= DPQ_VARINT_MAX - r->first_pn - r->size;
}

ssize_t
dpq_fec_repair_decode(const uint8_t *start, const uint8_t *end,
		struct dpq_fec_repair *r)
{
	const uint8_t *p = start;
	uint64_t t;

	if (p == NULL || p >= end)
		return FEE;
	GETV(t);
	if (t != DPQ_FEC_FT_REPAIR || (size_t)(p - start) != dpq_varint_len(t))
		return FEE;
	GETV(r->first_pn);
	GETV(r->size);
	GETV(r->next_delta);
	GETV(r->next_size);
	GETV(r->len_xor);
	GETV(r->data_len);
	if (!repair_ok(r))
		return FEE;
	if ((uint64_t)(end - p) < r->data_len)
		return FEE;
	r->data = p;
	p += r->data_len;
	return p - start;
}

size_t
dpq_fec_repair_hdr_len(const struct dpq_fec_repair *r)
{
	if (!repair_ok(r))
		return 0;
	return dpq_varint_len(DPQ_FEC_FT_REPAIR) +
		dpq_varint_len(r->first_pn) + dpq_varint_len(r->size) +
		dpq_varint_len(r->next_delta) + dpq_varint_len(r->next_size) +
		dpq_varint_len(r->len_xor) + dpq_varint_len(r->data_len);
}

uint8_t *
dpq_fec_repair_encode_hdr(uint8_t *p, const uint8_t *end,
		const struct dpq_fec_repair *r)
{
	if (p == NULL || end < p || !repair_ok(r))
		return NULL;
	PUTV(DPQ_FEC_FT_REPAIR);
	PUTV(r->first_pn);
	PUTV(r->size);
	PUTV(r->next_delta);
	PUTV(r->next_size);
	PUTV(r->len_xor);
	PUTV(r->data_len);
	if ((uint64_t)(end - p) < r->data_len)
		return NULL;
	return p;
}

ssize_t
dpq_fec_recovered_decode(const uint8_t *start, const uint8_t *end,
		struct dpq_fec_recovered *r)
{
	const uint8_t *p = start;
	uint64_t t, gap, i;

	if (p == NULL || p >= end)
		return FEE;
	GETV(t);
	if (t != DPQ_FEC_FT_RECOVERED ||
	    (size_t)(p - start) != dpq_varint_len(t))
		return FEE;
	GETV(r->count);
	if (r->count < 1 || r->count > DPQ_FEC_RECOVERED_MAX)
		return FEE;
	GETV(r->pn[0]);
	for (i = 1; i < r->count; i++) {
		GETV(gap);
		/* next = previous - gap - 1, never below 0 */
		if (gap >= r->pn[i - 1])
			return FEE;
		r->pn[i] = r->pn[i - 1] - gap - 1;
	}
	return p - start;
}

uint8_t *
dpq_fec_recovered_encode(uint8_t *p, const uint8_t *end, const uint64_t *pn,
		size_t n)
{
	size_t i;

	if (p == NULL || end < p || n < 1 || n > DPQ_FEC_RECOVERED_MAX ||
	    pn[0] > DPQ_VARINT_MAX)
		return NULL;
	for (i = 1; i < n; i++)
		if (pn[i] >= pn[i - 1])
			return NULL;
	PUTV(DPQ_FEC_FT_RECOVERED);
	PUTV((uint64_t)n);
	PUTV(pn[0]);
	for (i = 1; i < n; i++)
		PUTV(pn[i - 1] - pn[i] - 1);
	return p;
}
