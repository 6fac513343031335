/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.h: basic QUIC v1 wire types shared by the codec modules (packet,
 * frame, tparams): versions, connection IDs and the endpoint role.
 * Pure C, no I/O.
 */
#ifndef DPQ_ENGINE_WIRE_H
#define DPQ_ENGINE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* RFC 9000 §15: QUIC version 1. */
#define DPQ_VERSION_1		UINT32_C(0x00000001)
/* RFC 9000 §17.2.1: a long header with version 0 is Version Negotiation. */
#define DPQ_VERSION_NEGOTIATION	UINT32_C(0x00000000)

/* RFC 9000 §17.2: connection IDs of version 1 are at most 20 bytes. */
#define DPQ_MAX_CID_LEN		20
/* RFC 8999 §5.1: version-independent long headers allow up to 255 bytes. */
#define DPQ_MAX_CID_LEN_ANY	255
/* RFC 9000 §10.3: stateless reset token size. */
#define DPQ_RESET_TOKEN_LEN	16
/* RFC 9000 §14.1: smallest datagram that may carry a client Initial. */
#define DPQ_MIN_INITIAL_DATAGRAM 1200

/* Who sent a message; decoders apply role rules (RFC 9000 §18.2). */
enum dpq_role {
	DPQ_ROLE_CLIENT = 0,
	DPQ_ROLE_SERVER = 1,
};

/* A version-1 connection ID held by value (at most DPQ_MAX_CID_LEN). */
struct dpq_cid {
	uint8_t len;
	uint8_t bytes[DPQ_MAX_CID_LEN];
};

/* Set *c from (p, len). Returns 0, or -1 if len > DPQ_MAX_CID_LEN. */
static inline int
dpq_cid_set(struct dpq_cid *c, const uint8_t *p, size_t len)
{
	if (len > DPQ_MAX_CID_LEN)
		return -1;
	c->len = (uint8_t)len;
	if (len != 0)
		memcpy(c->bytes, p, len);
	return 0;
}

static inline bool
dpq_cid_eq(const struct dpq_cid *a, const struct dpq_cid *b)
{
	return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

#endif /* DPQ_ENGINE_WIRE_H */
