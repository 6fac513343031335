/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memdrv: a dpq_driver in memory, for tests and benches of the shard
 * loop. Two drivers joined with memdrv_link() carry each other's
 * datagrams: what one transmits, the other receives on its next rx_burst,
 * source and destination addresses filled in as a network would. Mbufs
 * come from one rte_mempool (EAL with --no-huge is enough). One queue,
 * one thread.
 */
#ifndef DPQ_TESTS_MEMDRV_H
#define DPQ_TESTS_MEMDRV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mempool.h>

#include "dpquic/driver.h"

/* A datagram on its way: return false to drop it (loss, blackout). */
typedef bool (*memdrv_filter_fn)(void *arg, const struct rte_mbuf *m);

/* A driver owning local, with mbufs from pool (DPQ_PKT_PRIV_SIZE private
 * area). Returns NULL on allocation failure. */
struct dpq_driver *memdrv_create(struct rte_mempool *pool,
		const struct dpq_addr *local);
/* Join two drivers back to back. */
void memdrv_link(struct dpq_driver *a, struct dpq_driver *b);
/* Filter what a transmits (NULL: deliver all). */
void memdrv_set_filter(struct dpq_driver *a, memdrv_filter_fn fn, void *arg);
/* Datagrams waiting to be received by d. */
unsigned int memdrv_pending(const struct dpq_driver *d);
/* A pool for memdrv: n mbufs with dpquic's private area. */
struct rte_mempool *memdrv_pool(const char *name, unsigned int n);

#endif
