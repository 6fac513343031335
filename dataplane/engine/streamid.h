/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * streamid.h: QUIC stream identifiers (RFC 9000 §2.1).
 *
 * The two low bits of a stream ID give its type: bit 0 the initiator
 * (0 client, 1 server), bit 1 the direction (0 bidirectional, 1
 * unidirectional). The rest (id >> 2) numbers the streams of one type
 * from 0, so "count of streams of a type" (MAX_STREAMS, §4.6) and "stream
 * number" convert with one shift.
 */
#ifndef DPQ_ENGINE_STREAMID_H
#define DPQ_ENGINE_STREAMID_H

#include <stdbool.h>
#include <stdint.h>

/* RFC 9000 §2.1 Table 1. */
enum dpq_stream_type {
	DPQ_STREAM_CLIENT_BIDI	= 0x0,
	DPQ_STREAM_SERVER_BIDI	= 0x1,
	DPQ_STREAM_CLIENT_UNI	= 0x2,
	DPQ_STREAM_SERVER_UNI	= 0x3,
};

#define DPQ_STREAMID_SERVER_BIT	0x1
#define DPQ_STREAMID_UNI_BIT	0x2

static inline enum dpq_stream_type
dpq_streamid_type(uint64_t id)
{
	return (enum dpq_stream_type)(id & 0x3);
}

static inline bool
dpq_streamid_is_server_initiated(uint64_t id)
{
	return (id & DPQ_STREAMID_SERVER_BIT) != 0;
}

static inline bool
dpq_streamid_is_uni(uint64_t id)
{
	return (id & DPQ_STREAMID_UNI_BIT) != 0;
}

static inline bool
dpq_streamid_is_bidi(uint64_t id)
{
	return (id & DPQ_STREAMID_UNI_BIT) == 0;
}

/* Opened by this endpoint (is_server says which end we are)? */
static inline bool
dpq_streamid_is_local(uint64_t id, bool is_server)
{
	return dpq_streamid_is_server_initiated(id) == is_server;
}

/* Do we send on it? Not on a unidirectional stream the peer opened. */
static inline bool
dpq_streamid_can_send(uint64_t id, bool is_server)
{
	return dpq_streamid_is_bidi(id) || dpq_streamid_is_local(id, is_server);
}

/* Do we receive on it? Not on a unidirectional stream we opened. */
static inline bool
dpq_streamid_can_recv(uint64_t id, bool is_server)
{
	return dpq_streamid_is_bidi(id) || !dpq_streamid_is_local(id, is_server);
}

/* Stream number within its type: 0 for the first stream of a type. */
static inline uint64_t
dpq_streamid_index(uint64_t id)
{
	return id >> 2;
}

/* The index-th stream of a type (index < 2^60). */
static inline uint64_t
dpq_streamid_make(enum dpq_stream_type t, uint64_t index)
{
	return (index << 2) | (uint64_t)t;
}

/* Streams of its type that must be allowed for id to be opened: the
 * MAX_STREAMS value it needs (§4.6). */
static inline uint64_t
dpq_streamid_count_needed(uint64_t id)
{
	return (id >> 2) + 1;
}

/* The type of stream we (is_server) or the peer open, bidi or uni. */
static inline enum dpq_stream_type
dpq_streamid_type_of(bool server_initiated, bool uni)
{
	return (enum dpq_stream_type)((server_initiated ? 1 : 0) |
	    (uni ? 2 : 0));
}

#endif /* DPQ_ENGINE_STREAMID_H */
