/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chunkbuf.c: offset-addressed chunk storage of one stream (chunkbuf.h).
 */
#include "dataplane/engine/chunkbuf.h"
#include "dataplane/engine/mem.h"

#include <errno.h>
#include <string.h>

#define CHUNKBUF_INIT_CAP	4u

void
dpq_chunkbuf_init(struct dpq_chunkbuf *b, const struct dpq_mem *mem)
{
	b->slot = NULL;
	b->mem = mem;
	b->base = 0;
	b->cap = 0;
	b->nchunks = 0;
}

void
dpq_chunkbuf_free(struct dpq_chunkbuf *b)
{
	uint32_t i;

	for (i = 0; i < b->cap; i++)
		if (b->slot[i] != NULL)
			dpq_mem_free(b->mem, b->slot[i]);
	if (b->slot != NULL)
		dpq_mem_free(b->mem, b->slot);
	b->slot = NULL;
	b->cap = 0;
	b->nchunks = 0;
}

/* Grow the ring so chunk k has a slot. */
static int
ring_fit(struct dpq_chunkbuf *b, uint64_t k)
{
	uint64_t need = k - b->base + 1, i;
	uint32_t ncap;
	uint8_t **ns;

	if (need <= b->cap)
		return 0;
	if (need > (UINT64_C(1) << 31))
		return -ENOMEM;
	ncap = b->cap ? b->cap : CHUNKBUF_INIT_CAP;
	while (ncap < need)
		ncap *= 2;
	ns = dpq_mem_alloc(b->mem, (size_t)ncap * sizeof(*ns));
	if (ns == NULL)
		return -ENOMEM;
	memset(ns, 0, (size_t)ncap * sizeof(*ns));
	for (i = b->base; i < b->base + b->cap; i++)
		ns[i & (ncap - 1)] = b->slot[i & (b->cap - 1)];
	if (b->slot != NULL)
		dpq_mem_free(b->mem, b->slot);
	b->slot = ns;
	b->cap = ncap;
	return 0;
}

int
dpq_chunkbuf_write(struct dpq_chunkbuf *b, uint64_t off, const uint8_t *src,
		size_t len)
{
	while (len > 0) {
		uint64_t k = off / DPQ_CHUNKBUF_SIZE;
		size_t in = (size_t)(off % DPQ_CHUNKBUF_SIZE);
		size_t n = DPQ_CHUNKBUF_SIZE - in;
		uint8_t **sp;
		int rc;

		if (k < b->base)
			return -EINVAL;
		rc = ring_fit(b, k);
		if (rc != 0)
			return rc;
		sp = &b->slot[k & (b->cap - 1)];
		if (*sp == NULL) {
			*sp = dpq_mem_alloc(b->mem, DPQ_CHUNKBUF_SIZE);
			if (*sp == NULL)
				return -ENOMEM;
			b->nchunks++;
		}
		if (n > len)
			n = len;
		memcpy(*sp + in, src, n);
		src += n;
		off += n;
		len -= n;
	}
	return 0;
}

const uint8_t *
dpq_chunkbuf_peek(const struct dpq_chunkbuf *b, uint64_t off, size_t *contig)
{
	uint64_t k = off / DPQ_CHUNKBUF_SIZE;
	size_t in = (size_t)(off % DPQ_CHUNKBUF_SIZE);
	const uint8_t *c;

	*contig = 0;
	if (k < b->base || k - b->base >= b->cap)
		return NULL;
	c = b->slot[k & (b->cap - 1)];
	if (c == NULL)
		return NULL;
	*contig = DPQ_CHUNKBUF_SIZE - in;
	return c + in;
}

void
dpq_chunkbuf_copy(const struct dpq_chunkbuf *b, uint64_t off, uint8_t *dst,
		size_t len)
{
	while (len > 0) {
		size_t n;
		const uint8_t *p = dpq_chunkbuf_peek(b, off, &n);

		if (p == NULL)
			return;	/* caller broke the contract; copy nothing more */
		if (n > len)
			n = len;
		memcpy(dst, p, n);
		dst += n;
		off += n;
		len -= n;
	}
}

void
dpq_chunkbuf_release(struct dpq_chunkbuf *b, uint64_t off)
{
	uint64_t lim = off / DPQ_CHUNKBUF_SIZE;	/* chunks below lim are done */

	if (b->cap == 0) {
		if (lim > b->base)
			b->base = lim;
		return;
	}
	while (b->base < lim) {
		uint8_t **sp = &b->slot[b->base & (b->cap - 1)];

		if (*sp != NULL) {
			dpq_mem_free(b->mem, *sp);
			*sp = NULL;
			b->nchunks--;
		}
		b->base++;
		/* Past the ring's reach everything is empty: jump. */
		if (b->nchunks == 0 && b->base < lim) {
			b->base = lim;
			break;
		}
	}
}
