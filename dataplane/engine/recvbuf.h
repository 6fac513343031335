/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recvbuf.h: out-of-order reassembly of one received byte stream: the
 * data of a STREAM (RFC 9000 §2.2) or the CRYPTO data of one encryption
 * level (RFC 9000 §19.6, §7.5).
 *
 * Frames are copied into chunkbuf storage at their offsets; a byterange
 * set records what has arrived. The application sees the contiguous
 * bytes from its read offset without a copy (peek) and releases them
 * (consume), which frees whole chunks. Each stream byte is stored once:
 * bytes already held are never rewritten, so an overlapping retransmission
 * that carries different bytes is ignored rather than detected (RFC 9000
 * §2.2 allows either; checking would cost a memcmp per duplicate).
 *
 * The caller bounds how far beyond the start of the stream data may land
 * (the flow-control limit it advertised, or for CRYPTO a window above the
 * read offset), so memory is bounded too. The final-size rules of
 * RFC 9000 §4.5 are enforced here. Errors that are the peer's fault are
 * transport errors, DPQ_TE_ERR(code) (errors.h), for a CONNECTION_CLOSE.
 */
#ifndef DPQ_ENGINE_RECVBUF_H
#define DPQ_ENGINE_RECVBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/byterange.h"
#include "dataplane/engine/chunkbuf.h"

struct dpq_mem;

/* RFC 9000 §7.5: CRYPTO data buffered beyond the read offset before the
 * connection fails with CRYPTO_BUFFER_EXCEEDED (the RFC's minimum is
 * 4096; a certificate chain can be far longer). */
#define DPQ_RECVBUF_CRYPTO_MAX	(64u * 1024u)

/* Holes one buffer may track: a peer scattering tiny frames over a large
 * window hits this and gets -ENOBUFS (drop the packet, do not ack it). */
#define DPQ_RECVBUF_MAX_RANGES	4096u

/* "No final size yet." */
#define DPQ_RECVBUF_NO_FINAL	UINT64_MAX

struct dpq_recvbuf {
	struct dpq_chunkbuf data;
	struct dpq_byterange_set got;	/* ranges received, merged */
	uint64_t read_off;		/* consumed by the application */
	uint64_t max_recv;		/* highest offset + 1 received */
	uint64_t final_size;		/* DPQ_RECVBUF_NO_FINAL until FIN */
	uint64_t limit;			/* absolute limit (rel_window == 0) */
	uint64_t rel_window;		/* if > 0: limit = read_off + this */
	uint32_t limit_error;		/* transport error over the limit */
	bool discarding;		/* after discard(): count, store nothing */
};

/*
 * Stream buffer: data ending beyond limit (the flow-control limit the
 * caller advertised) fails with DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR)
 * (§4.1).
 */
void dpq_recvbuf_init(struct dpq_recvbuf *rb, const struct dpq_mem *mem,
		uint64_t limit);

/*
 * CRYPTO buffer of one encryption level: data ending more than
 * DPQ_RECVBUF_CRYPTO_MAX above the read offset fails with
 * DPQ_TE_ERR(DPQ_TE_CRYPTO_BUFFER_EXCEEDED) (§7.5).
 */
void dpq_recvbuf_init_crypto(struct dpq_recvbuf *rb,
		const struct dpq_mem *mem);

/* Free all memory; the buffer must be initialized again before reuse. */
void dpq_recvbuf_free(struct dpq_recvbuf *rb);

/* Move the absolute limit (only up; a lower value is ignored). */
void dpq_recvbuf_set_limit(struct dpq_recvbuf *rb, uint64_t limit);

/*
 * Check what inserting [off, off + len) (with fin) would do, changing
 * nothing: 0, or DPQ_TE_ERR(code) (errors.h) with code:
 *   DPQ_TE_FLOW_CONTROL_ERROR     off + len > 2^62 - 1 (§19.8), or beyond
 *                                 the limit of a stream buffer (§4.1);
 *   DPQ_TE_CRYPTO_BUFFER_EXCEEDED beyond a CRYPTO buffer's window (§7.5);
 *   DPQ_TE_FINAL_SIZE_ERROR       data beyond a known final size, a FIN
 *                                 at another final size, or a FIN below
 *                                 data already received (§4.5).
 */
int dpq_recvbuf_check(const struct dpq_recvbuf *rb, uint64_t off,
		size_t len, bool fin);

/*
 * Insert the data of one frame; fin marks off + len as the final size
 * (a zero-length frame with FIN only sets it). Duplicate and overlapping
 * bytes are accepted; only bytes not held yet are copied. Returns 0, an
 * error of dpq_recvbuf_check(), or -ENOBUFS / -ENOMEM (nothing recorded:
 * drop the packet without acknowledging it; the peer will send again).
 */
int dpq_recvbuf_insert(struct dpq_recvbuf *rb, uint64_t off,
		const uint8_t *data, size_t len, bool fin);

/* Contiguous bytes ready at the read offset. */
uint64_t dpq_recvbuf_readable(const struct dpq_recvbuf *rb);

/*
 * Point *p at the next readable bytes without copying: returns how many
 * are contiguous in memory (may be fewer than readable(); loop with
 * consume), 0 if nothing is ready.
 */
size_t dpq_recvbuf_peek(const struct dpq_recvbuf *rb, const uint8_t **p);

/* Release n readable bytes (n <= readable()); frees chunks read past. */
void dpq_recvbuf_consume(struct dpq_recvbuf *rb, uint64_t n);

/* Copy up to len readable bytes to dst and consume them; returns count. */
size_t dpq_recvbuf_read(struct dpq_recvbuf *rb, uint8_t *dst, size_t len);

/* Final size known and every byte below it received (§3.2 Data Recvd). */
bool dpq_recvbuf_all_received(const struct dpq_recvbuf *rb);

/* Final size known and every byte read (§3.2 Data Read). */
bool dpq_recvbuf_all_read(const struct dpq_recvbuf *rb);

/*
 * A RESET_STREAM announced final_size (§19.4, §4.5):
 * DPQ_TE_ERR(DPQ_TE_FINAL_SIZE_ERROR) if it contradicts a known final
 * size or data already received, else 0 with the final size recorded.
 * Buffered data is kept (the stream decides whether to drop it, see
 * dpq_recvbuf_discard()).
 */
int dpq_recvbuf_reset(struct dpq_recvbuf *rb, uint64_t final_size);

/* What dpq_recvbuf_reset() would return, changing nothing. */
int dpq_recvbuf_reset_check(const struct dpq_recvbuf *rb,
		uint64_t final_size);

/*
 * Drop all buffered data and free its memory (after a reset, or when the
 * application stops reading, §3.5). From then on insert() still checks
 * and tracks offsets and the final size (flow control and §4.5 still
 * apply) but stores nothing; the read offset follows the data.
 */
void dpq_recvbuf_discard(struct dpq_recvbuf *rb);

/* Highest offset received + 1: the flow-control credit used (§4.1). */
static inline uint64_t
dpq_recvbuf_max_recv(const struct dpq_recvbuf *rb)
{
	return rb->max_recv;
}

static inline bool
dpq_recvbuf_final_known(const struct dpq_recvbuf *rb)
{
	return rb->final_size != DPQ_RECVBUF_NO_FINAL;
}

/* Bytes of memory the buffer holds (chunks only). */
static inline size_t
dpq_recvbuf_mem(const struct dpq_recvbuf *rb)
{
	return dpq_chunkbuf_mem(&rb->data);
}

#endif /* DPQ_ENGINE_RECVBUF_H */
