/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netaddr.h: an IPv4 or IPv6 address and UDP port, for the code that must
 * build without DPDK (engine, connection, server policy). Same fields,
 * layout and meaning as struct dpq_addr in include/dpquic/driver.h
 * (family AF_INET/AF_INET6 or 0 for unset, port in host order, address
 * bytes in network order), which pulls in rte_mbuf.h; the shard copies
 * one into the other (it checks the layouts agree at compile time).
 */
#ifndef DPQ_ENGINE_NETADDR_H
#define DPQ_ENGINE_NETADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* AF_INET and AF_INET6 as Linux numbers them, without pulling
 * <sys/socket.h> into every user (the shard checks they agree). */
#define DPQ_AF_INET	2
#define DPQ_AF_INET6	10

struct dpq_netaddr {
	uint8_t family;
	uint8_t pad;
	uint16_t port;
	uint8_t ip[16];		/* AF_INET: first 4 bytes */
};

/* Bytes of ip in use for a family (0 when unset). */
static inline unsigned int
dpq_netaddr_ip_len(const struct dpq_netaddr *a)
{
	return a->family == DPQ_AF_INET ? 4 :
		a->family == DPQ_AF_INET6 ? 16 : 0;
}

/* Same IP address (the port not compared). */
static inline bool
dpq_netaddr_eq_ip(const struct dpq_netaddr *a, const struct dpq_netaddr *b)
{
	return a->family == b->family &&
		memcmp(a->ip, b->ip, dpq_netaddr_ip_len(a)) == 0;
}

/* Same IP address and port. */
static inline bool
dpq_netaddr_eq(const struct dpq_netaddr *a, const struct dpq_netaddr *b)
{
	return a->port == b->port && dpq_netaddr_eq_ip(a, b);
}

#endif /* DPQ_ENGINE_NETADDR_H */
