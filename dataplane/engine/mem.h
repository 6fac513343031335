/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem.h: the allocator injected into engine modules that need growable
 * memory (sentmap blocks, later connection and stream pools).
 *
 * The engine never calls malloc on its own: each module that allocates
 * takes a struct dpq_mem, so tests pass the libc allocator below and a
 * shard passes one backed by its NUMA-local pools (aesthetics lesson 10).
 * Modules allocate fixed-size objects only at growth time, never per
 * packet in steady state.
 */
#ifndef DPQ_ENGINE_MEM_H
#define DPQ_ENGINE_MEM_H

#include <stddef.h>
#include <stdlib.h>

struct dpq_mem {
	/* Returns size bytes aligned for any object, or NULL. */
	void *(*alloc)(void *ctx, size_t size);
	/* Frees what alloc returned; p may be NULL. */
	void (*free)(void *ctx, void *p);
	void *ctx;
};

static inline void *
dpq_mem_alloc(const struct dpq_mem *m, size_t size)
{
	return m->alloc(m->ctx, size);
}

static inline void
dpq_mem_free(const struct dpq_mem *m, void *p)
{
	if (p != NULL)
		m->free(m->ctx, p);
}

/* libc-backed allocator, for tests and tools (not for shards). */
static inline void *
dpq_mem_libc_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static inline void
dpq_mem_libc_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

#define DPQ_MEM_LIBC \
	((struct dpq_mem){ dpq_mem_libc_alloc, dpq_mem_libc_free, NULL })

#endif /* DPQ_ENGINE_MEM_H */
