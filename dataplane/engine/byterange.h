/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * byterange.h: a sorted set of disjoint half-open byte ranges [start, end).
 *
 * Used by the stream buffers: recvbuf keeps the ranges of a stream it has
 * received, sendbuf the ranges acknowledged and the ranges lost. The set
 * is a sorted array searched by bisection, grown by doubling from the
 * injected allocator; adjacent and overlapping ranges are merged, so its
 * size is the number of holes, not the number of frames. A bound on the
 * count (max) keeps a peer that sends every other byte from making it
 * grow without end.
 */
#ifndef DPQ_ENGINE_BYTERANGE_H
#define DPQ_ENGINE_BYTERANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dpq_mem;

struct dpq_byterange {
	uint64_t start;
	uint64_t end;	/* exclusive, > start */
};

struct dpq_byterange_set {
	struct dpq_byterange *r;	/* sorted by start, disjoint, not adjacent */
	const struct dpq_mem *mem;
	uint32_t n;
	uint32_t cap;
	uint32_t max;			/* most ranges the set may hold */
};

/* Empty set holding at most max ranges (no allocation until needed). */
void dpq_byterange_init(struct dpq_byterange_set *s,
		const struct dpq_mem *mem, uint32_t max);

/* Free the array; the set is empty and usable again. */
void dpq_byterange_free(struct dpq_byterange_set *s);

/*
 * Add [start, end), merging with what it touches. An empty range is a
 * no-op. Returns 0, -ENOBUFS if the set would hold more than max ranges,
 * or -ENOMEM; on error the set is unchanged.
 */
int dpq_byterange_add(struct dpq_byterange_set *s, uint64_t start,
		uint64_t end);

/*
 * Remove [start, end) (splitting a range may add one). Returns 0, -ENOBUFS
 * or -ENOMEM; on error the set is unchanged.
 */
int dpq_byterange_remove(struct dpq_byterange_set *s, uint64_t start,
		uint64_t end);

/* True if every byte of [start, end) is in the set (true for empty). */
bool dpq_byterange_contains(const struct dpq_byterange_set *s,
		uint64_t start, uint64_t end);

/*
 * Next part of [*cur, end) that is NOT in the set: returns true with
 * [*gs, *ge) and moves *cur to *ge; false when none is left. The set must
 * not change during a walk.
 */
bool dpq_byterange_next_gap(const struct dpq_byterange_set *s,
		uint64_t *cur, uint64_t end, uint64_t *gs, uint64_t *ge);

/* Index of the first range whose end is above off (n if none). */
uint32_t dpq_byterange_lower(const struct dpq_byterange_set *s,
		uint64_t off);

/* Lowest range, or NULL if the set is empty. */
static inline const struct dpq_byterange *
dpq_byterange_first(const struct dpq_byterange_set *s)
{
	return s->n ? &s->r[0] : NULL;
}

static inline bool
dpq_byterange_empty(const struct dpq_byterange_set *s)
{
	return s->n == 0;
}

#endif /* DPQ_ENGINE_BYTERANGE_H */
