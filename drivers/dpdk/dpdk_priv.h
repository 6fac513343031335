/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal state of the DPDK ethdev driver, shared by ethdev.c (setup,
 * stats, close) and rxtx.c (bursts, ARP / ND, echo).
 */
#ifndef DPQ_DPDK_PRIV_H
#define DPQ_DPDK_PRIV_H

#include <rte_common.h>
#include <rte_mempool.h>

#include "dpquic/driver.h"
#include "drivers/dpdk/dpdk_driver.h"
#include "drivers/dpdk/intr_gate.h"
#include "drivers/dpdk/neigh.h"
#include "drivers/dpdk/netproto.h"

#define DPQ_DPDK_DEF_DESC	1024
#define DPQ_DPDK_DEF_MBUFS	8191
#define DPQ_DPDK_POOL_CACHE	256
#define DPQ_DPDK_TX_RETRIES	4	/* tx_burst calls before dropping */
#define DPQ_DPDK_TX_BATCH	64	/* datagrams per device tx_burst */
#define DPQ_DPDK_CTL_BATCH	32	/* ARP/ND/echo replies per rx burst */
#define DPQ_DPDK_GATE_WAIT_US	4000	/* tx waits for the gate, then drops */

/* Counters of one queue, written only by the queue's thread. */
struct dpq_dpdk_qstats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_dropped, rx_bad, tx_dropped, alloc_fail;
	uint64_t arp_rx, arp_tx, neigh_wait, neigh_drop;
	uint64_t echo_replies, neigh_probes, tx_no_route, tx_invalid, tx_full;
	uint64_t reason[DPQ_NP_REASON_MAX];
};

struct dpq_dpdk_queue {
	struct rte_mempool *pool;
	struct dpq_gate_slot *gate;	/* net_memif: see intr_gate.h */
	struct dpq_dpdk_qstats st;
} __rte_cache_aligned;

struct dpq_dpdk {
	struct dpq_driver base;
	uint16_t port_id;
	bool configured;
	bool started;
	bool gated;		/* queues go through the interrupt gate */
	uint64_t gate_wait;	/* TSC cycles tx waits for the gate */
	int socket_id;
	uint16_t mtu;
	uint16_t max_payload;	/* largest UDP payload for the MTU */
	uint16_t hdr_len;	/* Ethernet + IP + UDP */
	uint64_t rx_offloads, tx_offloads;	/* RTE_ETH_*_OFFLOAD_* set */
	unsigned int tx_np_flags;	/* DPQ_NP_TX_*: computed by the device */
	uint8_t prefix_len;
	struct dpq_addr local;
	struct dpq_addr gateway;
	struct dpq_np_local loc;
	struct dpq_neigh neigh;
	struct dpq_dpdk_queue q[];
};

static inline struct dpq_dpdk *
dpq_dpdk_of(struct dpq_driver *d)
{
	return (struct dpq_dpdk *)d;
}

static inline const struct dpq_dpdk *
dpq_dpdk_of_const(const struct dpq_driver *d)
{
	return (const struct dpq_dpdk *)d;
}

uint16_t dpq_dpdk_rx_burst(struct dpq_driver *d, uint16_t queue,
		struct rte_mbuf **pkts, uint16_t n);
uint16_t dpq_dpdk_tx_burst(struct dpq_driver *d, uint16_t queue,
		struct rte_mbuf **pkts, uint16_t n);

#endif /* DPQ_DPDK_PRIV_H */
