/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * membudget.h: a memory budget, and allocators (struct dpq_mem) that
 * charge it.
 *
 * A shard gives its connections two allocators on one budget: state (the
 * connection, keys, stream records, sent-packet blocks: charged, never
 * refused, bounded by the connection and stream limits) and buffers
 * (stream and CRYPTO data: refused once the budget is spent, which the
 * receive path turns into "drop the packet unacknowledged, the peer sends
 * it again"). So whatever peers do, buffered data stays within the
 * budget, and what is in use is known (dpquicd's stats).
 *
 * A connection puts its own allocator in front of the buffer one (see
 * dataplane/quic): its received-data buffers may hold at most its
 * receive window plus a slack, so out-of-order data cannot pin more
 * memory than the flow-control credit it was given (chunk rounding and
 * hole tracking included).
 *
 * Each block carries a 16-byte header with its size (frees need no size
 * from the caller). Single thread (the shard); others may read the
 * counters without a lock.
 */
#ifndef DPQ_ENGINE_MEMBUDGET_H
#define DPQ_ENGINE_MEMBUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/mem.h"

struct dpq_membudget {
	const struct dpq_mem *parent;	/* where the bytes come from */
	uint64_t limit;			/* refusable allocations stop here;
					 * 0: no limit */
	uint64_t used;			/* bytes charged now (headers too) */
	uint64_t peak;
	uint64_t refused;		/* allocations refused */
};

/* An empty budget over parent (NULL: libc). */
void dpq_membudget_init(struct dpq_membudget *b, const struct dpq_mem *parent,
		uint64_t limit);

/* Allocators charging b: state never refuses; buffers refuse an
 * allocation that would take used above limit. */
struct dpq_mem dpq_membudget_state_mem(struct dpq_membudget *b);
struct dpq_mem dpq_membudget_buf_mem(struct dpq_membudget *b);

/* At least half the budget is in use: no receive window grows. */
static inline bool
dpq_membudget_tight(const struct dpq_membudget *b)
{
	return b != NULL && b->limit != 0 && b->used >= b->limit / 2;
}

#endif /* DPQ_ENGINE_MEMBUDGET_H */
