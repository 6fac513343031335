/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * streams_test.h: helpers for the stream tests: a deterministic PRNG and
 * a counting allocator (live allocations and bytes, optional failure) so
 * tests can prove memory is given back.
 */
#ifndef DPQ_TESTS_STREAMS_TEST_H
#define DPQ_TESTS_STREAMS_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/engine/mem.h"

/* xorshift64*: fixed seed, same sequence on every run. */
struct test_rng {
	uint64_t s;
};

static inline uint64_t
test_rng_next(struct test_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

/* Uniform-ish in [0, n). */
static inline uint64_t
test_rng_below(struct test_rng *r, uint64_t n)
{
	return n ? (test_rng_next(r) >> 11) % n : 0;
}

/* Pattern byte of stream offset off: any mismatch shows up. */
static inline uint8_t
test_pattern(uint64_t off)
{
	uint64_t x = off * UINT64_C(0x9e3779b97f4a7c15);

	return (uint8_t)(x >> 56);
}

static inline void
test_fill_pattern(uint8_t *p, uint64_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = test_pattern(off + i);
}

/* Counting allocator: every block has a size header. */
struct test_alloc {
	long live;		/* blocks not freed */
	size_t bytes;		/* bytes not freed */
	long fail_after;	/* < 0: never fail; else fail once it hits 0 */
};

static inline void *
test_alloc_fn(void *ctx, size_t size)
{
	struct test_alloc *a = ctx;
	size_t *p;

	if (a->fail_after == 0)
		return NULL;
	if (a->fail_after > 0)
		a->fail_after--;
	p = malloc(sizeof(size_t) * 2 + size);
	if (p == NULL)
		return NULL;
	p[0] = size;
	a->live++;
	a->bytes += size;
	return p + 2;
}

static inline void
test_free_fn(void *ctx, void *ptr)
{
	struct test_alloc *a = ctx;
	size_t *p;

	if (ptr == NULL)
		return;
	p = (size_t *)ptr - 2;
	a->live--;
	a->bytes -= p[0];
	free(p);
}

static inline struct dpq_mem
test_mem(struct test_alloc *a)
{
	struct dpq_mem m = { test_alloc_fn, test_free_fn, a };

	a->live = 0;
	a->bytes = 0;
	a->fail_after = -1;
	return m;
}

#endif /* DPQ_TESTS_STREAMS_TEST_H */
