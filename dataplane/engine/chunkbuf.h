/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chunkbuf.h: byte storage of one stream, addressed by stream offset.
 *
 * Bytes live in fixed-size chunks taken from the injected allocator when
 * the first byte of a chunk is written, and given back when everything
 * below a chunk's end is released (read by the application, or
 * acknowledged by the peer). The chunk pointers form a ring indexed by
 * offset / DPQ_CHUNKBUF_SIZE that doubles when a write lands beyond it,
 * so neither reassembly nor retransmission copies stored data around.
 * The owner bounds how far beyond the released point it writes
 * (flow-control window, send-buffer limit), which bounds the memory.
 */
#ifndef DPQ_ENGINE_CHUNKBUF_H
#define DPQ_ENGINE_CHUNKBUF_H

#include <stddef.h>
#include <stdint.h>

struct dpq_mem;

/* Bytes per chunk: a page, a few full-size packets. */
#define DPQ_CHUNKBUF_SIZE	4096u

struct dpq_chunkbuf {
	uint8_t **slot;		/* ring: chunk k at slot[k & (cap - 1)] */
	const struct dpq_mem *mem;
	uint64_t base;		/* lowest chunk number still held */
	uint32_t cap;		/* 0 or a power of 2 */
	uint32_t nchunks;	/* chunks allocated now */
};

void dpq_chunkbuf_init(struct dpq_chunkbuf *b, const struct dpq_mem *mem);

/* Free every chunk and the ring. */
void dpq_chunkbuf_free(struct dpq_chunkbuf *b);

/*
 * Copy len bytes to stream offset off (off must not be below the released
 * point), allocating chunks as needed. Returns 0 or -ENOMEM (bytes already
 * written stay; a retry writes them again).
 */
int dpq_chunkbuf_write(struct dpq_chunkbuf *b, uint64_t off,
		const uint8_t *src, size_t len);

/*
 * Pointer to the byte at off and, in *contig, how many bytes follow it in
 * the same chunk; NULL if that chunk was never written or was released.
 */
const uint8_t *dpq_chunkbuf_peek(const struct dpq_chunkbuf *b, uint64_t off,
		size_t *contig);

/* Copy [off, off + len) out; every byte must have been written. */
void dpq_chunkbuf_copy(const struct dpq_chunkbuf *b, uint64_t off,
		uint8_t *dst, size_t len);

/* Free the chunks that lie wholly below off; off never goes back. */
void dpq_chunkbuf_release(struct dpq_chunkbuf *b, uint64_t off);

/* Bytes of chunk memory held. */
static inline size_t
dpq_chunkbuf_mem(const struct dpq_chunkbuf *b)
{
	return (size_t)b->nchunks * DPQ_CHUNKBUF_SIZE;
}

#endif /* DPQ_ENGINE_CHUNKBUF_H */
