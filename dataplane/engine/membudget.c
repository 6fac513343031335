/* SPDX-License-Identifier: BSD-3-Clause */
/* membudget.c: charged allocators (see membudget.h). */
#include <stdalign.h>
#include <stddef.h>

#include "dataplane/engine/membudget.h"

/* Keeps the caller's block aligned for any object. */
#define HDR	16
_Static_assert(HDR >= sizeof(size_t) && HDR % alignof(max_align_t) == 0,
		"header keeps malloc alignment");

static const struct dpq_mem libc_mem = DPQ_MEM_LIBC;

void
dpq_membudget_init(struct dpq_membudget *b, const struct dpq_mem *parent,
		uint64_t limit)
{
	b->parent = parent != NULL ? parent : &libc_mem;
	b->limit = limit;
	b->used = 0;
	b->peak = 0;
	b->refused = 0;
}

static void *
charge(struct dpq_membudget *b, size_t size, bool strict)
{
	uint8_t *p;

	if (size > SIZE_MAX - HDR)
		return NULL;
	if (strict && b->limit != 0 && b->used + size + HDR > b->limit) {
		b->refused++;
		return NULL;
	}
	p = dpq_mem_alloc(b->parent, size + HDR);
	if (p == NULL)
		return NULL;
	*(size_t *)(void *)p = size + HDR;
	b->used += size + HDR;
	if (b->used > b->peak)
		b->peak = b->used;
	return p + HDR;
}

static void *
state_alloc(void *ctx, size_t size)
{
	return charge(ctx, size, false);
}

static void *
buf_alloc(void *ctx, size_t size)
{
	return charge(ctx, size, true);
}

static void
budget_free(void *ctx, void *ptr)
{
	struct dpq_membudget *b = ctx;
	uint8_t *p = ptr;

	if (p == NULL)
		return;
	p -= HDR;
	b->used -= *(size_t *)(void *)p;
	dpq_mem_free(b->parent, p);
}

struct dpq_mem
dpq_membudget_state_mem(struct dpq_membudget *b)
{
	return (struct dpq_mem){ state_alloc, budget_free, b };
}

struct dpq_mem
dpq_membudget_buf_mem(struct dpq_membudget *b)
{
	return (struct dpq_mem){ buf_alloc, budget_free, b };
}
