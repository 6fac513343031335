/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK ethdev driver: port setup, start, stats and close. The program
 * initialises EAL (`prog [EAL args] -- [options]`); dpq_driver_dpdk_open()
 * configures one port with N rx/tx queue pairs, RSS over IP + UDP when
 * N > 1, a mempool per queue on the port's NUMA node (else the calling
 * lcore's), checksum offloads where the port offers them (software
 * otherwise, see rxtx.c) and the MTU. Bursts are in rxtx.c.
 *
 * libnuma is not used here: EAL already reports the port's and lcores'
 * sockets, and rte_pktmbuf_pool_create places memory on a socket itself.
 *
 * net_memif ports are gated (intr_gate.h): their control operations hold
 * EAL's interrupt thread parked, their bursts run only while it is.
 *
 * Threading: open, start and close on one (control) thread; stats from any.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "drivers/dpdk/dpdk_priv.h"

/* dpquic.driver: the port's set-up and failures (rte_log). */
RTE_LOG_REGISTER(dpq_logtype_driver, dpquic.driver, INFO);
#define LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, dpq_logtype_driver, "dpq_dpdk: " fmt "\n", \
		##__VA_ARGS__)

static const struct dpq_driver_ops dpdk_ops;

static int
dpdk_start(struct dpq_driver *d)
{
	struct dpq_dpdk *dd = dpq_dpdk_of(d);
	struct rte_eth_link link;
	int rc;

	if (dd->started)
		return 0;
	if (dd->gated)
		dpq_gate_hold();
	rc = rte_eth_dev_start(dd->port_id);
	if (dd->gated)
		dpq_gate_release();
	if (rc != 0) {
		LOG(ERR, "port %u: start failed: %s", dd->port_id,
				rte_strerror(-rc));
		return -EIO;
	}
	dd->started = true;
	if (dd->loc.family == AF_INET6) {
		/* NS arrive at our solicited-node group, unsolicited NA at
		 * all-nodes (RFC 4861 §7.2.1): let them through the filter */
		static const uint8_t all_nodes[16] = {
			0xff, 0x02, [15] = 0x01 };
		struct rte_ether_addr mc[2];

		dpq_np_mcast_mac(dd->loc.snm, mc[0].addr_bytes);
		dpq_np_mcast_mac(all_nodes, mc[1].addr_bytes);
		if (rte_eth_dev_set_mc_addr_list(dd->port_id, mc, 2) != 0 &&
				rte_eth_allmulticast_enable(dd->port_id) != 0)
			LOG(WARNING, "port %u: cannot accept IPv6 multicast "
					"(neighbour discovery may fail)",
					dd->port_id);
	}
	if (rte_eth_link_get_nowait(dd->port_id, &link) == 0)
		LOG(INFO, "port %u: started, link %s, %u Mbps, %s duplex",
				dd->port_id, link.link_status ? "up" : "down",
				link.link_speed, link.link_duplex ?
				"full" : "half");
	return 0;
}

static int
dpdk_alloc_bulk(struct dpq_driver *d, uint16_t q, struct rte_mbuf **pkts,
		unsigned int n)
{
	struct dpq_dpdk *dd = dpq_dpdk_of(d);
	unsigned int i;

	if (q >= d->nb_queues)
		return -EINVAL;
	if (rte_pktmbuf_alloc_bulk(dd->q[q].pool, pkts, n) != 0) {
		dd->q[q].st.alloc_fail += n;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		memset(dpq_pkt_meta(pkts[i]), 0, sizeof(struct dpq_pkt_meta));
	return 0;
}

static void
dpdk_free_bulk(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n)
{
	RTE_SET_USED(d);
	rte_pktmbuf_free_bulk(pkts, n);
}

static int
dpdk_local_addr(const struct dpq_driver *d, struct dpq_addr *out)
{
	*out = dpq_dpdk_of_const(d)->local;
	return 0;
}

static void
sum_qstats(const struct dpq_dpdk *dd, struct dpq_dpdk_qstats *s)
{
	const uint64_t *src;
	uint64_t *dst = (uint64_t *)s;
	unsigned int q, k, nwords = sizeof(*s) / sizeof(uint64_t);

	memset(s, 0, sizeof(*s));
	for (q = 0; q < dd->base.nb_queues; q++) {
		src = (const uint64_t *)&dd->q[q].st;
		for (k = 0; k < nwords; k++)
			dst[k] += __atomic_load_n(&src[k], __ATOMIC_RELAXED);
	}
}

static void
dpdk_stats(const struct dpq_driver *d, struct dpq_driver_stats *out)
{
	struct dpq_dpdk_qstats s;

	sum_qstats(dpq_dpdk_of_const(d), &s);
	memset(out, 0, sizeof(*out));
	out->rx_pkts = s.rx_pkts;
	out->rx_bytes = s.rx_bytes;
	out->tx_pkts = s.tx_pkts;
	out->tx_bytes = s.tx_bytes;
	out->rx_dropped = s.rx_dropped;
	out->rx_bad = s.rx_bad;
	out->tx_dropped = s.tx_dropped;
	out->alloc_fail = s.alloc_fail;
	out->arp_rx = s.arp_rx;
	out->arp_tx = s.arp_tx;
	out->neigh_wait = s.neigh_wait;
	out->neigh_drop = s.neigh_drop;
}

void
dpq_dpdk_xstats(const struct dpq_driver *d, struct dpq_dpdk_xstats *out)
{
	struct dpq_dpdk_qstats s;

	sum_qstats(dpq_dpdk_of_const(d), &s);
	memset(out, 0, sizeof(*out));
	memcpy(out->reason, s.reason, sizeof(out->reason));
	out->echo_replies = s.echo_replies;
	out->neigh_probes = s.neigh_probes;
	out->tx_no_route = s.tx_no_route;
	out->tx_invalid = s.tx_invalid;
	out->tx_full = s.tx_full;
}

void
dpq_dpdk_mac(const struct dpq_driver *d, uint8_t mac[6])
{
	memcpy(mac, dpq_dpdk_of_const(d)->loc.mac, 6);
}

int
dpq_dpdk_neigh_lookup(const struct dpq_driver *d, const struct dpq_addr *ip,
		uint8_t mac[6])
{
	const struct dpq_dpdk *dd = dpq_dpdk_of_const(d);

	if (ip->family != dd->loc.family)
		return -ENOENT;
	return dpq_neigh_lookup(&dd->neigh, ip->bytes, mac) ? 0 : -ENOENT;
}

/* Free everything open() made. close_port: stop and close the port (close);
 * a failed open leaves the port configured but usable for another open
 * (closing a virtual device would destroy it). */
static void
release(struct dpq_dpdk *dd, uint16_t nb_pools, bool close_port)
{
	uint16_t q;
	unsigned int n;

	/* memif: not while its control channel runs on the interrupt
	 * thread (both would tear the link down) */
	if (dd->gated)
		dpq_gate_hold();
	if (dd->started)
		rte_eth_dev_stop(dd->port_id);
	if (dd->configured && close_port)
		rte_eth_dev_close(dd->port_id);
	if (dd->gated)
		dpq_gate_release();
	for (q = 0; q < dd->base.nb_queues; q++)
		dpq_gate_detach(dd->q[q].gate);
	/* held packets before their pools go away */
	n = dpq_neigh_flush_all(&dd->neigh);
	if (n != 0)
		LOG(DEBUG, "port %u: dropped %u held packets at close",
				dd->port_id, n);
	for (q = 0; q < nb_pools; q++)
		rte_mempool_free(dd->q[q].pool);
	rte_free(dd);
}

static void
dpdk_close(struct dpq_driver *d)
{
	struct dpq_dpdk *dd = dpq_dpdk_of(d);

	LOG(INFO, "port %u: closing", dd->port_id);
	release(dd, d->nb_queues, true);
}

static int
check_conf(const struct dpq_dpdk_conf *c, uint8_t *prefix_len)
{
	unsigned int max;

	if (c->local.family != AF_INET && c->local.family != AF_INET6) {
		LOG(ERR, "local address must be IPv4 or IPv6");
		return -EINVAL;
	}
	if (c->local.port == 0) {
		LOG(ERR, "local UDP port must not be 0");
		return -EINVAL;
	}
	if (c->gateway.family != 0 && c->gateway.family != c->local.family) {
		LOG(ERR, "gateway and local address differ in family");
		return -EINVAL;
	}
	max = c->local.family == AF_INET ? 32 : 128;
	*prefix_len = c->prefix_len != 0 ? c->prefix_len :
			c->local.family == AF_INET ? 24 : 64;
	if (*prefix_len > max) {
		LOG(ERR, "prefix length %u too long", *prefix_len);
		return -EINVAL;
	}
	if ((c->local.family == AF_INET && (c->local.v4[0] == 0 ||
			c->local.v4[0] >= 224)) ||
			(c->local.family == AF_INET6 && (c->local.v6[0] == 0xff ||
			memcmp(c->local.v6, (uint8_t[16]){ 0 }, 16) == 0))) {
		LOG(ERR, "local address is not a unicast address");
		return -EADDRNOTAVAIL;
	}
	return 0;
}

/* Device configuration: queues, RSS, offloads, MTU. */
static int
configure_port(struct dpq_dpdk *dd, const struct dpq_dpdk_conf *c,
		const struct rte_eth_dev_info *info, uint16_t nq)
{
	struct rte_eth_conf ec;
	uint64_t want;
	uint16_t mtu;
	int rc;

	memset(&ec, 0, sizeof(ec));
	if (nq > 1) {
		uint64_t hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) &
				info->flow_type_rss_offloads;

		if (hf != 0) {
			ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			ec.rx_adv_conf.rss_conf.rss_hf = hf;
		} else if (c->allow_no_rss) {
			LOG(WARNING, "port %u: no RSS, %u queues: the device "
					"chooses the rx queue", dd->port_id, nq);
		} else {
			LOG(ERR, "port %u: %u queues need RSS over IP/UDP, "
					"which the device does not offer; use "
					"nb_queues=1", dd->port_id, nq);
			return -EINVAL;
		}
	}

	/* checksums: device where offered, software otherwise */
	want = RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	if (c->local.family == AF_INET)
		want |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	ec.rxmode.offloads = want & info->rx_offload_capa;
	dd->tx_np_flags = 0;
	if ((info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0) {
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
		dd->tx_np_flags |= DPQ_NP_TX_UDP_CKSUM;
	}
	if (c->local.family == AF_INET &&
			(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)) {
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		dd->tx_np_flags |= DPQ_NP_TX_IP_CKSUM;
	}

	rc = rte_eth_dev_configure(dd->port_id, nq, nq, &ec);
	if (rc != 0) {
		LOG(ERR, "port %u: configure failed: %s", dd->port_id,
				rte_strerror(-rc));
		return -EIO;
	}
	dd->configured = true;
	dd->rx_offloads = ec.rxmode.offloads;
	dd->tx_offloads = ec.txmode.offloads;

	if (c->mtu != 0) {
		if (c->mtu < info->min_mtu || c->mtu > info->max_mtu) {
			LOG(ERR, "port %u: MTU %u outside [%u, %u]",
					dd->port_id, c->mtu, info->min_mtu,
					info->max_mtu);
			return -EINVAL;
		}
		rc = rte_eth_dev_set_mtu(dd->port_id, c->mtu);
		if (rc != 0) {
			LOG(ERR, "port %u: set MTU %u failed: %s", dd->port_id,
					c->mtu, rte_strerror(-rc));
			return -EIO;
		}
	}
	if (rte_eth_dev_get_mtu(dd->port_id, &mtu) != 0 || mtu == 0)
		mtu = RTE_ETHER_MTU;
	dd->mtu = mtu;
	LOG(INFO, "port %u (%s): %u queue(s)%s, MTU %u, rx cksum offload "
			"0x%" PRIx64 ", tx cksum offload 0x%" PRIx64,
			dd->port_id, info->driver_name, nq,
			ec.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS ? " RSS" : "",
			mtu, ec.rxmode.offloads, ec.txmode.offloads);
	return 0;
}

static int
setup_queues(struct dpq_dpdk *dd, const struct dpq_dpdk_conf *c,
		const struct rte_eth_dev_info *info, uint16_t nq,
		uint16_t *nb_pools)
{
	uint16_t nb_rxd = c->nb_rxd ? c->nb_rxd : DPQ_DPDK_DEF_DESC;
	uint16_t nb_txd = c->nb_txd ? c->nb_txd : DPQ_DPDK_DEF_DESC;
	uint32_t nb_mbufs = c->nb_mbufs ? c->nb_mbufs : DPQ_DPDK_DEF_MBUFS;
	struct rte_eth_rxconf rxc = info->default_rxconf;
	struct rte_eth_txconf txc = info->default_txconf;
	unsigned int cache;
	uint32_t room;
	uint16_t q;
	int rc;

	rc = rte_eth_dev_adjust_nb_rx_tx_desc(dd->port_id, &nb_rxd, &nb_txd);
	if (rc != 0) {
		LOG(ERR, "port %u: descriptors: %s", dd->port_id,
				rte_strerror(-rc));
		return -EIO;
	}
	rxc.offloads = dd->rx_offloads;
	txc.offloads = dd->tx_offloads;
	/* one whole frame per mbuf: rx never chains segments */
	room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE,
			(uint32_t)(RTE_PKTMBUF_HEADROOM + dd->mtu +
			RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN +
			2 * RTE_VLAN_HLEN));
	if (room > UINT16_MAX) {
		LOG(ERR, "port %u: MTU %u too large for one mbuf",
				dd->port_id, dd->mtu);
		return -EINVAL;
	}
	if (nb_mbufs < (uint32_t)nb_rxd + nb_txd + DPQ_DPDK_TX_BATCH) {
		LOG(ERR, "port %u: %u mbufs per queue cannot fill %u rx + %u "
				"tx descriptors", dd->port_id, nb_mbufs,
				nb_rxd, nb_txd);
		return -EINVAL;
	}
	cache = RTE_MIN((unsigned int)DPQ_DPDK_POOL_CACHE, nb_mbufs / 4);
	for (q = 0; q < nq; q++) {
		char name[RTE_MEMPOOL_NAMESIZE];

		snprintf(name, sizeof(name), "dpq_p%u_q%u", dd->port_id, q);
		dd->q[q].pool = rte_pktmbuf_pool_create(name, nb_mbufs, cache,
				DPQ_PKT_PRIV_SIZE, (uint16_t)room,
				dd->socket_id);
		if (dd->q[q].pool == NULL) {
			LOG(ERR, "port %u: pool %s (%u mbufs, socket %d): %s",
					dd->port_id, name, nb_mbufs,
					dd->socket_id, rte_strerror(rte_errno));
			return -ENOMEM;
		}
		*nb_pools = q + 1;
		rc = rte_eth_rx_queue_setup(dd->port_id, q, nb_rxd,
				dd->socket_id, &rxc, dd->q[q].pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(dd->port_id, q, nb_txd,
					dd->socket_id, &txc);
		if (rc != 0) {
			LOG(ERR, "port %u: queue %u setup: %s", dd->port_id, q,
					rte_strerror(-rc));
			return -EIO;
		}
	}
	return 0;
}

/* net_memif handles its peer on the interrupt thread, unmapping the rings
 * under our pollers when the peer goes away: gate its queues (intr_gate.h).
 * Other drivers change nothing on that thread that a burst reads. */
static int
gate_attach(struct dpq_dpdk *dd, const struct rte_eth_dev_info *info)
{
	uint16_t q;

	if (info->driver_name == NULL ||
			strcmp(info->driver_name, "net_memif") != 0)
		return 0;
	dd->gated = true;
	dd->gate_wait = rte_get_tsc_hz() * DPQ_DPDK_GATE_WAIT_US / 1000000;
	for (q = 0; q < dd->base.nb_queues; q++) {
		dd->q[q].gate = dpq_gate_attach();
		if (dd->q[q].gate == NULL) {
			int err = errno;

			LOG(ERR, "port %u: no interrupt gate: %s",
					dd->port_id, strerror(err));
			return -err;
		}
	}
	return 0;
}

struct dpq_driver *
dpq_driver_dpdk_open(const struct dpq_dpdk_conf *c)
{
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	struct dpq_dpdk *dd;
	uint16_t nq, nb_pools = 0;
	uint8_t prefix_len;
	int socket, rc;
	char abuf[64];
	bool held;

	if (c == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = check_conf(c, &prefix_len);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	if (!rte_eth_dev_is_valid_port(c->port_id)) {
		LOG(ERR, "no port %u", c->port_id);
		rte_errno = ENODEV;
		return NULL;
	}
	rc = rte_eth_dev_info_get(c->port_id, &info);
	if (rc != 0) {
		LOG(ERR, "port %u: info: %s", c->port_id, rte_strerror(-rc));
		rte_errno = EIO;
		return NULL;
	}
	nq = c->nb_queues ? c->nb_queues : 1;
	if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
		LOG(ERR, "port %u: %u queues asked, device has %u rx / %u tx",
				c->port_id, nq, info.max_rx_queues,
				info.max_tx_queues);
		rte_errno = EINVAL;
		return NULL;
	}
	/* NUMA: the configured node, else the port's, else this lcore's */
	socket = c->socket_id;
	if (socket < 0)
		socket = rte_eth_dev_socket_id(c->port_id);
	if (socket < 0)
		socket = (int)rte_socket_id();
	if (socket < 0 || (unsigned int)socket >= RTE_MAX_NUMA_NODES)
		socket = SOCKET_ID_ANY;

	dd = rte_zmalloc_socket("dpq_dpdk", sizeof(*dd) +
			nq * sizeof(dd->q[0]), RTE_CACHE_LINE_SIZE, socket);
	if (dd == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	dd->base.ops = &dpdk_ops;
	dd->base.nb_queues = nq;
	dd->port_id = c->port_id;
	dd->socket_id = socket;
	dd->local = c->local;
	dd->gateway = c->gateway;
	dd->prefix_len = prefix_len;
	dd->loc.family = c->local.family;
	dd->loc.port = c->local.port;
	memcpy(dd->loc.ip, c->local.bytes, 16);
	if (c->local.family == AF_INET6)
		dpq_np_solicited_node(dd->loc.ip, dd->loc.snm);
	dpq_neigh_init(&dd->neigh, c->local.family, rte_get_tsc_hz());

	rc = gate_attach(dd, &info);
	held = rc == 0 && dd->gated;
	if (held)
		dpq_gate_hold();
	if (rc == 0)
		rc = configure_port(dd, c, &info, nq);
	if (rc == 0) {
		dd->hdr_len = (uint16_t)dpq_np_udp_hdr_len(c->local.family);
		dd->max_payload = (uint16_t)(dd->mtu - (dd->hdr_len -
				DPQ_NP_ETH_HLEN));
		rc = setup_queues(dd, c, &info, nq, &nb_pools);
	}
	if (rc == 0 && (rc = rte_eth_macaddr_get(c->port_id, &mac)) == 0 &&
			rte_is_zero_ether_addr(&mac)) {
		/* some virtual ports (net_ring) have no address: give it a
		 * random locally administered one */
		rte_eth_random_addr(mac.addr_bytes);
		if (rte_eth_dev_default_mac_addr_set(c->port_id, &mac) != 0)
			LOG(WARNING, "port %u: cannot set a MAC address",
					c->port_id);
	}
	if (rc == 0)
		memcpy(dd->loc.mac, mac.addr_bytes, 6);
	if (rc == 0 && c->promiscuous) {
		rc = rte_eth_promiscuous_enable(c->port_id);
		if (rc != 0)
			LOG(ERR, "port %u: promiscuous mode: %s", c->port_id,
					rte_strerror(-rc));
	}
	if (held)
		dpq_gate_release();
	if (rc != 0) {
		release(dd, nb_pools, false);
		rte_errno = rc < 0 ? -rc : rc;
		return NULL;
	}
	LOG(INFO, "port %u: " RTE_ETHER_ADDR_PRT_FMT " %s/%u, socket %d",
			c->port_id, RTE_ETHER_ADDR_BYTES(&mac),
			dpq_addr_format(&c->local, abuf, sizeof(abuf)),
			prefix_len, socket);
	return &dd->base;
}

static const struct dpq_driver_ops dpdk_ops = {
	.name = "dpdk",
	.start = dpdk_start,
	.rx_burst = dpq_dpdk_rx_burst,
	.tx_burst = dpq_dpdk_tx_burst,
	.alloc_bulk = dpdk_alloc_bulk,
	.free_bulk = dpdk_free_bulk,
	.local_addr = dpdk_local_addr,
	.stats = dpdk_stats,
	.close = dpdk_close,
};
