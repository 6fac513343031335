/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Extras of the DPDK ethdev driver beyond struct dpq_driver_ops: per-reason
 * drop counters, the port's MAC and neighbour lookups, for tests, benches
 * and the control socket. d must come from dpq_driver_dpdk_open().
 */
#ifndef DPQ_DPDK_DRIVER_H
#define DPQ_DPDK_DRIVER_H

#include <stdint.h>

#include "dpquic/driver.h"
#include "drivers/dpdk/netproto.h"

/* Extra counters of the DPDK driver (all queues summed). */
struct dpq_dpdk_xstats {
	uint64_t reason[DPQ_NP_REASON_MAX];	/* rx drops by reason */
	uint64_t echo_replies;		/* ICMP / ICMPv6 echo replies sent */
	uint64_t neigh_probes;		/* ARP requests / NS sent */
	uint64_t tx_no_route;		/* off-link peer and no gateway */
	uint64_t tx_invalid;		/* bad meta, size, headroom, segments */
	uint64_t tx_full;		/* refused by the device after retries */
};

void dpq_dpdk_xstats(const struct dpq_driver *d, struct dpq_dpdk_xstats *out);

/* The port's MAC address. */
void dpq_dpdk_mac(const struct dpq_driver *d, uint8_t mac[6]);

/* Resolved MAC of a neighbour (port of ip ignored): 0 or -ENOENT. */
int dpq_dpdk_neigh_lookup(const struct dpq_driver *d,
		const struct dpq_addr *ip, uint8_t mac[6]);

#endif /* DPQ_DPDK_DRIVER_H */
