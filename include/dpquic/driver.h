/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_driver moves bursts of UDP datagrams between the protocol engine and a
 * network: a DPDK ethdev port (real NIC or virtual device) or kernel UDP
 * sockets. The engine never sees Ethernet, IP or UDP headers: on receive a
 * driver hands over rte_mbufs whose data is the UDP payload, with the
 * datagram's addresses in the mbuf's private area (struct dpq_pkt_meta); on
 * transmit the engine fills the payload and meta.peer, and the driver adds
 * whatever headers its network needs.
 *
 * Threading: a driver is opened and started by one thread. After start, each
 * queue is used by exactly one thread (its shard); rx_burst, tx_burst,
 * alloc_bulk and free_bulk on different queues may run concurrently. stats
 * may be read from any thread (counters are read without locks and may be
 * slightly stale). close is called once, after every queue user stopped.
 *
 * Return codes: functions returning int give 0 on success or a negative errno
 * (-EINVAL bad argument or config, -ENOMEM out of buffers or memory, -ENODEV
 * no such port, -EADDRNOTAVAIL address not usable, -EIO device failure).
 * Burst functions return the number of packets handled, DPDK style.
 */
#ifndef DPQ_DRIVER_H
#define DPQ_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rte_mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An IPv4 or IPv6 address and UDP port. Address bytes are in network order,
 * the port in host order. family is AF_INET or AF_INET6 (0: unset). */
struct dpq_addr {
	uint8_t family;
	uint8_t pad;
	uint16_t port;
	union {
		uint8_t v4[4];
		uint8_t v6[16];
		uint8_t bytes[16];
	};
};

/* Per-datagram metadata kept in the mbuf private area. */
struct dpq_pkt_meta {
	struct dpq_addr peer;	/* rx: source; tx: destination (required) */
	struct dpq_addr local;	/* rx: destination; tx: source (family 0: driver's) */
	uint64_t rx_tsc;	/* rx: rte_rdtsc() when the burst was received */
	uint8_t ecn;		/* rx: ECN bits of the IP header; tx: to set */
	uint8_t pad[7];
};

/* Size of the private area every dpquic mempool must give its mbufs. */
#define DPQ_PKT_PRIV_SIZE \
	RTE_ALIGN(sizeof(struct dpq_pkt_meta), RTE_MBUF_PRIV_ALIGN)

static inline struct dpq_pkt_meta *
dpq_pkt_meta(struct rte_mbuf *m)
{
	return (struct dpq_pkt_meta *)rte_mbuf_to_priv(m);
}

/* Largest UDP payload a driver accepts for transmit by default (RFC 9000
 * §14: QUIC datagrams fit a 1500-byte MTU path after IPv6+UDP headers). */
#define DPQ_DEFAULT_MAX_UDP_PAYLOAD 1452

/* Counters every driver keeps. Monotonic since start. */
struct dpq_driver_stats {
	uint64_t rx_pkts;	/* UDP datagrams delivered to the caller */
	uint64_t rx_bytes;	/* UDP payload bytes delivered */
	uint64_t tx_pkts;	/* datagrams handed to the device / kernel */
	uint64_t tx_bytes;	/* UDP payload bytes transmitted */
	uint64_t rx_dropped;	/* not for us: other protocol, address, port */
	uint64_t rx_bad;	/* malformed frame/IP/UDP or bad checksum */
	uint64_t tx_dropped;	/* could not be sent (device full, no route) */
	uint64_t alloc_fail;	/* mbuf allocation failures */
	uint64_t arp_rx;	/* ARP / neighbour discovery packets handled */
	uint64_t arp_tx;	/* ARP / NS / NA packets sent */
	uint64_t neigh_wait;	/* tx packets held until a neighbour resolved */
	uint64_t neigh_drop;	/* tx packets dropped: neighbour unresolved */
	uint64_t gso_sends;	/* kernel UDP: sendmsg calls carrying UDP GSO */
	uint64_t gro_recvs;	/* kernel UDP: receives that carried GRO */
	/* Kernel UDP with recv_err: ICMP errors about datagrams we sent
	 * (IP_RECVERR), and the last one: its errno (ECONNREFUSED for port
	 * unreachable, EHOSTUNREACH, ENETUNREACH...), ICMP type and code,
	 * the address our datagram was for and the one that reported it. */
	uint64_t icmp_errors;
	int icmp_errno;
	uint8_t icmp_type, icmp_code;
	struct dpq_addr icmp_dst, icmp_from;
};

struct dpq_driver;

/* The operations every driver implements. */
struct dpq_driver_ops {
	const char *name;
	int (*start)(struct dpq_driver *d);
	uint16_t (*rx_burst)(struct dpq_driver *d, uint16_t queue,
			struct rte_mbuf **pkts, uint16_t n);
	uint16_t (*tx_burst)(struct dpq_driver *d, uint16_t queue,
			struct rte_mbuf **pkts, uint16_t n);
	int (*alloc_bulk)(struct dpq_driver *d, uint16_t queue,
			struct rte_mbuf **pkts, unsigned int n);
	void (*free_bulk)(struct dpq_driver *d, struct rte_mbuf **pkts,
			unsigned int n);
	int (*local_addr)(const struct dpq_driver *d, struct dpq_addr *out);
	void (*stats)(const struct dpq_driver *d, struct dpq_driver_stats *out);
	void (*close)(struct dpq_driver *d);
};

/* Every driver's state begins with this. */
struct dpq_driver {
	const struct dpq_driver_ops *ops;
	uint16_t nb_queues;
};

/* Start receiving and transmitting. */
static inline int
dpq_driver_start(struct dpq_driver *d)
{
	return d->ops->start(d);
}

/* Receive up to n datagrams on a queue; returns how many were stored. */
static inline uint16_t
dpq_driver_rx_burst(struct dpq_driver *d, uint16_t queue,
		struct rte_mbuf **pkts, uint16_t n)
{
	return d->ops->rx_burst(d, queue, pkts, n);
}

/* Transmit up to n datagrams; the driver owns (and frees) the first k it
 * returns, the caller keeps the rest. A datagram waiting for ARP / neighbour
 * resolution counts as taken. */
static inline uint16_t
dpq_driver_tx_burst(struct dpq_driver *d, uint16_t queue,
		struct rte_mbuf **pkts, uint16_t n)
{
	return d->ops->tx_burst(d, queue, pkts, n);
}

/* Allocate n empty transmit buffers (all or none): data_off leaves headroom
 * for the driver's headers, meta zeroed. Returns 0 or -ENOMEM. */
static inline int
dpq_driver_alloc_bulk(struct dpq_driver *d, uint16_t queue,
		struct rte_mbuf **pkts, unsigned int n)
{
	return d->ops->alloc_bulk(d, queue, pkts, n);
}

static inline void
dpq_driver_free_bulk(struct dpq_driver *d, struct rte_mbuf **pkts,
		unsigned int n)
{
	d->ops->free_bulk(d, pkts, n);
}

/* The address and UDP port this driver receives on. */
static inline int
dpq_driver_local_addr(const struct dpq_driver *d, struct dpq_addr *out)
{
	return d->ops->local_addr(d, out);
}

static inline void
dpq_driver_stats(const struct dpq_driver *d, struct dpq_driver_stats *out)
{
	d->ops->stats(d, out);
}

/* Stop, release queues, buffers and the device; d is freed. */
static inline void
dpq_driver_close(struct dpq_driver *d)
{
	d->ops->close(d);
}

/* ---- address helpers (drivers/addr.c) ---------------------------------- */

/* Parse "1.2.3.4:443", "[::1]:443", "1.2.3.4" or "::1" (port 0 when absent).
 * Returns 0 or -EINVAL. */
int dpq_addr_parse(const char *s, struct dpq_addr *out);

/* Format as "1.2.3.4:443" or "[::1]:443" into buf; returns buf. */
char *dpq_addr_format(const struct dpq_addr *a, char *buf, size_t len);

bool dpq_addr_equal(const struct dpq_addr *a, const struct dpq_addr *b);

/* ---- DPDK ethdev driver (drivers/dpdk/) ------------------------------------ */

struct dpq_dpdk_conf {
	uint16_t port_id;	/* ethdev port (after rte_eal_init) */
	uint16_t nb_queues;	/* rx/tx queue pairs; >1 uses RSS */
	uint16_t nb_rxd, nb_txd;	/* descriptors per queue (0: 1024) */
	uint32_t nb_mbufs;	/* mbufs per queue pool (0: 8191) */
	int socket_id;		/* NUMA node (-1: the port's, else lcore's) */
	struct dpq_addr local;	/* IP:port the dataplane owns (IPv4 or IPv6) */
	uint8_t prefix_len;	/* on-link prefix of local (0: /24 or /64) */
	struct dpq_addr gateway; /* next hop for off-link peers (family 0: none) */
	uint16_t mtu;		/* 0: device default (1500) */
	bool promiscuous;	/* accept frames for other MACs (virtual devs) */
	bool allow_no_rss;	/* nb_queues > 1 on a device without RSS: the
				 * device (or peer) picks the rx queue, as with
				 * net_ring or memif; otherwise open fails */
};

/* Configure and open a DPDK port as a dpquic driver. EAL must be initialised.
 * Returns NULL with rte_errno set on failure, and logs why. */
struct dpq_driver *dpq_driver_dpdk_open(const struct dpq_dpdk_conf *conf);

/* ---- kernel UDP socket driver (drivers/udp/) -------------------------------- */

struct dpq_udp_conf {
	struct dpq_addr local;	/* bind address (port 0: ephemeral) */
	uint16_t nb_queues;	/* sockets (SO_REUSEPORT when > 1) */
	uint32_t nb_mbufs;	/* mbufs in the driver's pool (0: 8191) */
	bool gso;		/* use UDP GSO on transmit when available */
	bool gro;		/* use UDP GRO on receive when available */
	/* Read ICMP errors (IP_RECVERR / IPV6_RECVERR) into the stats: for
	 * a client, whose one peer's "port unreachable" means something. */
	bool recv_err;
	int socket_id;		/* NUMA node of the pool (-1: caller's) */
};

/* Open kernel UDP sockets as a dpquic driver. EAL must be initialised (for
 * the mbuf pool; --no-huge is enough). Returns NULL with errno set. */
struct dpq_driver *dpq_driver_udp_open(const struct dpq_udp_conf *conf);

/* Move a one-queue UDP driver to a new socket bound to local (port 0:
 * ephemeral), as a client does to migrate a connection (RFC 9000 §9.2):
 * the old socket is closed, and what it still held is dropped. *bound
 * gets the address now in use. Queue thread only. Returns 0, -EINVAL
 * (not a one-queue UDP driver, other family) or -errno of the socket
 * calls (the old socket stays then). */
int dpq_driver_udp_rebind(struct dpq_driver *d, const struct dpq_addr *local,
		struct dpq_addr *bound);

#ifdef __cplusplus
}
#endif

#endif /* DPQ_DRIVER_H */
