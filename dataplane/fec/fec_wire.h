/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec_wire.h: the wire format of dpquic's XOR-FEC extension (docs/fec.md):
 * the xor_fec transport parameter, the REPAIR frame and the RECOVERED
 * frame. Codepoints are 4-byte varints chosen at random from the ranges
 * RFC 9000 §22.1.2 recommends for experiments (not 31 * N + 27).
 *
 * Decoders take (p, end) at the frame type, never read past end, and
 * return the bytes consumed or DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR)
 * (DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR) for the parameter);
 * variable parts point into the input. Encoders return the pointer past
 * what they wrote, or NULL if it does not fit or a value is invalid.
 * Pure C, no I/O; safe from any thread.
 */
#ifndef DPQ_FEC_WIRE_H
#define DPQ_FEC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/engine/errors.h"

/* Codepoints (docs/fec.md §2). */
#define DPQ_FEC_TP_ID		UINT64_C(0x2fec1a5e)	/* xor_fec */
#define DPQ_FEC_FT_REPAIR	UINT64_C(0x2fec1a60)
#define DPQ_FEC_FT_RECOVERED	UINT64_C(0x2fec1a61)

/* Largest group the protocol allows (receivers announce up to this). */
#define DPQ_FEC_GROUP_LIMIT	64
/* Largest Repair Length / member payload: a QUIC packet fits a UDP
 * payload of at most 65527 bytes (RFC 9000 §18.2). */
#define DPQ_FEC_PAYLOAD_LIMIT	65527
/* Upper bound of a REPAIR frame's bytes before its Repair Data. */
#define DPQ_FEC_REPAIR_HDR_MAX	(4 + 8 + 2 + 8 + 2 + 4 + 4)

static inline bool
dpq_fec_is_frame(uint64_t type)
{
	return type == DPQ_FEC_FT_REPAIR || type == DPQ_FEC_FT_RECOVERED;
}

/* ---- transport parameter (docs/fec.md §3) ---------------------------- */

/* The value: Max Group Size (i), 1 .. DPQ_FEC_GROUP_LIMIT. Returns 0 and
 * *max_group, or DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR) for a value
 * that is not exactly one varint in range. */
int dpq_fec_tp_decode(const uint8_t *v, size_t len, uint64_t *max_group);

/* Write the value into buf (>= 8 bytes); returns its length, 0 if
 * max_group is out of range. */
size_t dpq_fec_tp_encode(uint8_t *buf, size_t cap, uint64_t max_group);

/* ---- REPAIR (docs/fec.md §4) ------------------------------------------ */

struct dpq_fec_repair {
	uint64_t first_pn;	/* group's first packet number */
	uint64_t size;		/* members; 0: announcement only */
	uint64_t next_delta;	/* next group starts at first_pn + size +
				 * next_delta */
	uint64_t next_size;	/* next group's size; 0: none announced */
	uint64_t len_xor;	/* XOR of the members' payload lengths */
	uint64_t data_len;	/* Repair Length: longest member payload */
	const uint8_t *data;	/* decode: Repair Data in the input */
};

/*
 * Decode a REPAIR frame at p. FRAME_ENCODING_ERROR for: truncation, a
 * type that is not REPAIR or not in its shortest form, size or next_size
 * above DPQ_FEC_GROUP_LIMIT, data_len or len_xor above
 * DPQ_FEC_PAYLOAD_LIMIT, len_xor above the largest value data_len allows
 * (2^bits(data_len) - 1), size 0 with len_xor or data_len non-zero, size
 * > 0 with data_len 0, and packet numbers past 2^62-1.
 */
ssize_t dpq_fec_repair_decode(const uint8_t *p, const uint8_t *end,
		struct dpq_fec_repair *r);

/* Bytes of the frame before its Repair Data (0 if r is invalid). */
size_t dpq_fec_repair_hdr_len(const struct dpq_fec_repair *r);

/* Write the frame up to its Repair Data (r->data is not used): the
 * caller fills data_len bytes right after the returned pointer (the FEC
 * pass does, after the members are XORed). NULL if it does not fit with
 * its data or r breaks a rule of dpq_fec_repair_decode(). */
uint8_t *dpq_fec_repair_encode_hdr(uint8_t *p, const uint8_t *end,
		const struct dpq_fec_repair *r);

/* ---- RECOVERED (docs/fec.md §5) --------------------------------------- */

/* At most this many packet numbers in one RECOVERED frame. */
#define DPQ_FEC_RECOVERED_MAX	32

struct dpq_fec_recovered {
	uint64_t count;		/* 1 .. DPQ_FEC_RECOVERED_MAX */
	uint64_t pn[DPQ_FEC_RECOVERED_MAX];	/* strictly descending */
};

/* Decode; FRAME_ENCODING_ERROR for truncation, count 0 or above
 * DPQ_FEC_RECOVERED_MAX, or a packet number below 0. */
ssize_t dpq_fec_recovered_decode(const uint8_t *p, const uint8_t *end,
		struct dpq_fec_recovered *r);

/* Encode n (1 .. DPQ_FEC_RECOVERED_MAX) packet numbers, strictly
 * descending; NULL if they are not or it does not fit. */
uint8_t *dpq_fec_recovered_encode(uint8_t *p, const uint8_t *end,
		const uint64_t *pn, size_t n);

#endif /* DPQ_FEC_WIRE_H */
