/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memdrv (memdrv.h): each driver has a FIFO of received mbufs; transmit
 * moves the caller's mbufs into the peer's FIFO. A full FIFO drops, as a
 * device queue would, and counts it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "tests/lib/memdrv.h"

#define FIFO	16384		/* power of two */

struct memdrv {
	struct dpq_driver d;		/* first */
	struct rte_mempool *pool;
	struct dpq_addr local;
	struct memdrv *peer;
	memdrv_filter_fn filter;
	void *filter_arg;
	struct rte_mbuf *fifo[FIFO];
	unsigned int head, tail;	/* tail - head = queued */
	struct dpq_driver_stats st;
};

static int
md_start(struct dpq_driver *d)
{
	(void)d;
	return 0;
}

static uint16_t
md_rx(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct memdrv *md = (struct memdrv *)d;
	uint16_t i = 0;

	(void)queue;
	while (i < n && md->head != md->tail) {
		struct rte_mbuf *m = md->fifo[md->head++ % FIFO];

		md->st.rx_pkts++;
		md->st.rx_bytes += m->data_len;
		pkts[i++] = m;
	}
	return i;
}

static uint16_t
md_tx(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct memdrv *md = (struct memdrv *)d;
	struct memdrv *to = md->peer;
	uint16_t i;

	(void)queue;
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct dpq_pkt_meta *meta = dpq_pkt_meta(m);

		md->st.tx_pkts++;
		md->st.tx_bytes += m->data_len;
		if (to == NULL || to->tail - to->head == FIFO ||
		    (md->filter != NULL && !md->filter(md->filter_arg, m))) {
			md->st.tx_dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		/* As received: from us, to the address it was sent to. */
		meta->local = meta->peer;
		meta->peer = md->local;
		to->fifo[to->tail++ % FIFO] = m;
	}
	return n;
}

static int
md_alloc(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **pkts,
		unsigned int n)
{
	struct memdrv *md = (struct memdrv *)d;
	unsigned int i;

	(void)queue;
	if (rte_pktmbuf_alloc_bulk(md->pool, pkts, n) != 0) {
		md->st.alloc_fail++;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		memset(dpq_pkt_meta(pkts[i]), 0, sizeof(struct dpq_pkt_meta));
	return 0;
}

static void
md_free(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n)
{
	(void)d;
	rte_pktmbuf_free_bulk(pkts, n);
}

static int
md_local(const struct dpq_driver *d, struct dpq_addr *out)
{
	*out = ((const struct memdrv *)d)->local;
	return 0;
}

static void
md_stats(const struct dpq_driver *d, struct dpq_driver_stats *out)
{
	*out = ((const struct memdrv *)d)->st;
}

static void
md_close(struct dpq_driver *d)
{
	struct memdrv *md = (struct memdrv *)d;

	while (md->head != md->tail)
		rte_pktmbuf_free(md->fifo[md->head++ % FIFO]);
	if (md->peer != NULL && md->peer->peer == md)
		md->peer->peer = NULL;
	free(md);
}

static const struct dpq_driver_ops md_ops = {
	.name = "memdrv",
	.start = md_start,
	.rx_burst = md_rx,
	.tx_burst = md_tx,
	.alloc_bulk = md_alloc,
	.free_bulk = md_free,
	.local_addr = md_local,
	.stats = md_stats,
	.close = md_close,
};

struct dpq_driver *
memdrv_create(struct rte_mempool *pool, const struct dpq_addr *local)
{
	struct memdrv *md = calloc(1, sizeof(*md));

	if (md == NULL)
		return NULL;
	md->d.ops = &md_ops;
	md->d.nb_queues = 1;
	md->pool = pool;
	md->local = *local;
	return &md->d;
}

void
memdrv_link(struct dpq_driver *a, struct dpq_driver *b)
{
	((struct memdrv *)a)->peer = (struct memdrv *)b;
	((struct memdrv *)b)->peer = (struct memdrv *)a;
}

void
memdrv_set_filter(struct dpq_driver *a, memdrv_filter_fn fn, void *arg)
{
	((struct memdrv *)a)->filter = fn;
	((struct memdrv *)a)->filter_arg = arg;
}

unsigned int
memdrv_pending(const struct dpq_driver *d)
{
	const struct memdrv *md = (const struct memdrv *)d;

	return md->tail - md->head;
}

struct rte_mempool *
memdrv_pool(const char *name, unsigned int n)
{
	return rte_pktmbuf_pool_create(name, n, 256, DPQ_PKT_PRIV_SIZE,
			RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
}
