/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * varint.h: QUIC variable-length integers (RFC 9000 §16).
 *
 * The two most significant bits of the first byte give the encoded length
 * (1, 2, 4 or 8 bytes); the rest is the value in network byte order, so the
 * largest value is 2^62-1. Everything here is static inline because every
 * frame and header field goes through it. Readers take (p, end) and never
 * touch bytes at or past end; they read byte by byte, so no alignment is
 * assumed.
 */
#ifndef DPQ_ENGINE_VARINT_H
#define DPQ_ENGINE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* RFC 9000 §16: largest value a varint can hold. */
#define DPQ_VARINT_MAX	((UINT64_C(1) << 62) - 1)

/* Largest value each encoded length can hold. */
#define DPQ_VARINT_MAX_1	UINT64_C(63)
#define DPQ_VARINT_MAX_2	UINT64_C(16383)
#define DPQ_VARINT_MAX_4	UINT64_C(1073741823)
#define DPQ_VARINT_MAX_8	DPQ_VARINT_MAX

/*
 * Shortest encoded length of v: 1, 2, 4 or 8; 0 if v > DPQ_VARINT_MAX
 * (cannot be encoded).
 */
static inline size_t
dpq_varint_len(uint64_t v)
{
	if (v <= DPQ_VARINT_MAX_1)
		return 1;
	if (v <= DPQ_VARINT_MAX_2)
		return 2;
	if (v <= DPQ_VARINT_MAX_4)
		return 4;
	if (v <= DPQ_VARINT_MAX_8)
		return 8;
	return 0;
}

/* Encoded length announced by a first byte (1, 2, 4 or 8). */
static inline size_t
dpq_varint_len_of(uint8_t first)
{
	return (size_t)1 << (first >> 6);
}

/* Largest value encodable in len bytes; 0 if len is not 1, 2, 4 or 8. */
static inline uint64_t
dpq_varint_max_for_len(size_t len)
{
	switch (len) {
	case 1: return DPQ_VARINT_MAX_1;
	case 2: return DPQ_VARINT_MAX_2;
	case 4: return DPQ_VARINT_MAX_4;
	case 8: return DPQ_VARINT_MAX_8;
	default: return 0;
	}
}

/*
 * Write v in exactly len bytes (1, 2, 4 or 8), which may be longer than the
 * shortest form: RFC 9000 §16 allows that for every field except frame
 * types (§12.4). Used to reserve length fields before the content is known.
 * Returns the pointer past the written bytes, or NULL if len is not a valid
 * length, v does not fit in len bytes, or fewer than len bytes remain.
 */
static inline uint8_t *
dpq_varint_encode_len(uint8_t *p, const uint8_t *end, uint64_t v, size_t len)
{
	if (len == 0 || v > dpq_varint_max_for_len(len) || p == NULL ||
	    end < p || (size_t)(end - p) < len)
		return NULL;
	switch (len) {
	case 1:
		p[0] = (uint8_t)v;
		return p + 1;
	case 2:
		p[0] = (uint8_t)(0x40 | (v >> 8));
		p[1] = (uint8_t)v;
		return p + 2;
	case 4:
		p[0] = (uint8_t)(0x80 | (v >> 24));
		p[1] = (uint8_t)(v >> 16);
		p[2] = (uint8_t)(v >> 8);
		p[3] = (uint8_t)v;
		return p + 4;
	default:
		p[0] = (uint8_t)(0xc0 | (v >> 56));
		p[1] = (uint8_t)(v >> 48);
		p[2] = (uint8_t)(v >> 40);
		p[3] = (uint8_t)(v >> 32);
		p[4] = (uint8_t)(v >> 24);
		p[5] = (uint8_t)(v >> 16);
		p[6] = (uint8_t)(v >> 8);
		p[7] = (uint8_t)v;
		return p + 8;
	}
}

/*
 * Write v in its shortest form. Returns the pointer past the written bytes,
 * or NULL if v > DPQ_VARINT_MAX or there is no room.
 */
static inline uint8_t *
dpq_varint_encode(uint8_t *p, const uint8_t *end, uint64_t v)
{
	return dpq_varint_encode_len(p, end, v, dpq_varint_len(v));
}

/*
 * Read one varint from [p, end) into *v. Returns the pointer past it, or
 * NULL if the input ends first (*v is then left untouched).
 */
static inline const uint8_t *
dpq_varint_decode(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	size_t len;

	if (p == NULL || p >= end)
		return NULL;
	len = dpq_varint_len_of(p[0]);
	if ((size_t)(end - p) < len)
		return NULL;
	switch (len) {
	case 1:
		*v = p[0];
		break;
	case 2:
		*v = (uint64_t)(p[0] & 0x3f) << 8 | p[1];
		break;
	case 4:
		*v = (uint64_t)(p[0] & 0x3f) << 24 | (uint64_t)p[1] << 16 |
			(uint64_t)p[2] << 8 | p[3];
		break;
	default:
		*v = (uint64_t)(p[0] & 0x3f) << 56 | (uint64_t)p[1] << 48 |
			(uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
			(uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
			(uint64_t)p[6] << 8 | p[7];
		break;
	}
	return p + len;
}

#endif /* DPQ_ENGINE_VARINT_H */
