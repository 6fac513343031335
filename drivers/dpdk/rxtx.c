/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive and transmit bursts of the DPDK ethdev driver.
 *
 * rx: every frame is parsed (netproto.c); UDP datagrams to our address and
 * port are handed over with data_off moved to the UDP payload and the
 * addresses in struct dpq_pkt_meta; ARP, NS/NA and echo requests are
 * answered inline on the same queue's tx side; everything else is freed and
 * counted by reason. Checksums the device verified (GOOD flags) are not
 * checked again; BAD drops; UNKNOWN and NONE are verified in software, so a
 * peer's unfinished (CHECKSUM_PARTIAL) checksum is counted and dropped, never
 * trusted.
 *
 * tx: headers are prepended in the headroom, checksums left to the device
 * where it offers them, the destination MAC taken from the neighbour table
 * (next hop: the peer when on-link, else the gateway). A datagram for an
 * unresolved neighbour is held (neigh_wait) and a request sent. tx_burst
 * always takes all n datagrams: what the device still refuses after
 * DPQ_DPDK_TX_RETRIES calls is freed and counted (tx_dropped), as a full
 * queue on a wire would lose it; QUIC recovers losses (RFC 9002). Datagrams
 * lost to neighbour resolution (pending queue full, table full, no answer)
 * count in neigh_drop only, not also in tx_dropped.
 *
 * On net_memif ports every device call goes through the interrupt gate
 * (intr_gate.h): rx skips a poll while the gate is closed, tx waits for it
 * (at most DPQ_DPDK_GATE_WAIT_US, then drops as a full queue would).
 *
 * Each queue pair is used by one thread; all functions here run on the
 * thread that owns `queue`.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "drivers/dpdk/dpdk_priv.h"

/* What the device takes of n packets in DPQ_DPDK_TX_RETRIES calls. */
static uint16_t
device_tx(struct dpq_dpdk *dd, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = 0;
	unsigned int tries;

	for (tries = 0; tries < DPQ_DPDK_TX_RETRIES && sent < n; tries++)
		sent += rte_eth_tx_burst(dd->port_id, q, pkts + sent, n - sent);
	return sent;
}

/* Hand a batch to the device with bounded retries; free and count the rest.
 * ctl: ARP/ND/echo traffic (counted apart from datagrams). */
static void
flush_tx(struct dpq_dpdk *dd, uint16_t q, struct rte_mbuf **pkts,
		uint16_t n, bool ctl)
{
	struct dpq_dpdk_qstats *st = &dd->q[q].st;
	uint64_t bytes = 0;
	uint16_t sent = 0, i;

	if (n == 0)
		return;
	/* read lengths before the device owns the mbufs */
	if (!ctl)
		for (i = 0; i < n; i++)
			bytes += pkts[i]->pkt_len - dd->hdr_len;
	if (!dd->gated) {
		sent = device_tx(dd, q, pkts, n);
	} else if (dpq_gate_enter_wait(dd->q[q].gate, dd->gate_wait)) {
		sent = device_tx(dd, q, pkts, n);
		dpq_gate_leave(dd->q[q].gate);
	}
	for (i = sent; i < n; i++) {
		if (!ctl)
			bytes -= pkts[i]->pkt_len - dd->hdr_len;
		rte_pktmbuf_free(pkts[i]);
	}
	if (ctl) {
		st->arp_tx += sent;
	} else {
		st->tx_pkts += sent;
		st->tx_bytes += bytes;
		st->tx_full += n - sent;
	}
	st->tx_dropped += n - sent;
}

/* A control frame (ARP, NS, NA, echo reply) in a fresh mbuf, or NULL. */
static struct rte_mbuf *
ctl_alloc(struct dpq_dpdk *dd, uint16_t q, uint8_t **buf, size_t *cap)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dd->q[q].pool);

	if (m == NULL) {
		dd->q[q].st.alloc_fail++;
		return NULL;
	}
	*buf = rte_pktmbuf_mtod(m, uint8_t *);
	*cap = rte_pktmbuf_tailroom(m);
	return m;
}

static void
ctl_finish(struct rte_mbuf *m, size_t len, struct rte_mbuf **ctl,
		uint16_t *n_ctl)
{
	if (len == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	ctl[(*n_ctl)++] = m;
}

/* Send an ARP request or NS for ip now. */
static void
send_probe(struct dpq_dpdk *dd, uint16_t q, const uint8_t *ip)
{
	struct rte_mbuf *m;
	uint8_t *buf;
	size_t cap, len;
	uint16_t n = 0;

	m = ctl_alloc(dd, q, &buf, &cap);
	if (m == NULL)
		return;
	if (dd->loc.family == AF_INET)
		len = dpq_np_build_arp(buf, cap, DPQ_NP_ARP_REQUEST,
				dpq_np_bcast_mac, dd->loc.mac, dd->loc.ip,
				NULL, ip);
	else
		len = dpq_np_build_ns(buf, cap, dd->loc.mac, dd->loc.ip, ip);
	ctl_finish(m, len, &m, &n);
	dd->q[q].st.neigh_probes += n;
	flush_tx(dd, q, &m, n, true);
}

/* Neighbour timers: probe again or give up. Called from rx and tx polls. */
static void
neigh_poll(struct dpq_dpdk *dd, uint16_t q, uint64_t now)
{
	uint8_t ips[DPQ_NEIGH_TICK_PROBES][16];
	unsigned int n, i, dropped;

	n = dpq_neigh_tick(&dd->neigh, now, ips, &dropped);
	dd->q[q].st.neigh_drop += dropped;
	for (i = 0; i < n; i++)
		send_probe(dd, q, ips[i]);
}

/* A neighbour resolved: record it and send what was waiting for it. */
static int
learn(struct dpq_dpdk *dd, uint16_t q, const uint8_t *ip, const uint8_t *mac,
		bool create)
{
	struct rte_mbuf *flush[DPQ_NEIGH_PENDING];
	unsigned int n, i;
	int rc;

	rc = dpq_neigh_learn(&dd->neigh, ip, mac, create, flush, &n);
	for (i = 0; i < n; i++)
		dpq_np_set_dst_mac(rte_pktmbuf_mtod(flush[i], uint8_t *), mac);
	flush_tx(dd, q, flush, (uint16_t)n, false);
	return rc;
}

static void
count_drop(struct dpq_dpdk_qstats *st, enum dpq_np_reason r)
{
	st->reason[r]++;
	if (dpq_np_reason_is_bad(r))
		st->rx_bad++;
	else
		st->rx_dropped++;
}

/* ARP, ND and echo; m is consumed. Replies go to ctl. */
static void
handle_ctl(struct dpq_dpdk *dd, uint16_t q, struct rte_mbuf *m,
		const struct dpq_np_pkt *pk, struct rte_mbuf **ctl,
		uint16_t *n_ctl)
{
	struct dpq_dpdk_qstats *st = &dd->q[q].st;
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	static const uint8_t zero_ip[16];
	struct rte_mbuf *r;
	uint8_t *buf, dst_mac[6];
	size_t cap, len;
	bool for_us;

	switch (pk->kind) {
	case DPQ_NP_ARP:
		st->arp_rx++;
		for_us = memcmp(pk->target, dd->loc.ip, 4) == 0;
		/* 0.0.0.0 sender: an address probe (RFC 5227), not a peer */
		if (memcmp(pk->src_ip, zero_ip, 4) == 0) {
			count_drop(st, DPQ_NP_DROP_ARP);
			break;
		}
		/* RFC 826: update a known sender; add it when we are the
		 * target (it is about to talk to us) */
		if (learn(dd, q, pk->src_ip, pk->lladdr, for_us) != 0 &&
				!for_us) {
			count_drop(st, DPQ_NP_DROP_ARP);
			break;
		}
		if (!for_us || pk->arp_op != DPQ_NP_ARP_REQUEST)
			break;
		r = ctl_alloc(dd, q, &buf, &cap);
		if (r == NULL)
			break;
		len = dpq_np_build_arp(buf, cap, DPQ_NP_ARP_REPLY, pk->lladdr,
				dd->loc.mac, dd->loc.ip, pk->lladdr,
				pk->src_ip);
		ctl_finish(r, len, ctl, n_ctl);
		break;
	case DPQ_NP_NS:
		st->arp_rx++;
		r = ctl_alloc(dd, q, &buf, &cap);
		if (r == NULL)
			break;
		if (memcmp(pk->src_ip, zero_ip, 16) == 0) {
			/* DAD for our address: defend it to all nodes,
			 * unsolicited (RFC 4861 §7.2.4) */
			static const uint8_t all_nodes[16] = {
				0xff, 0x02, [15] = 0x01 };

			dpq_np_mcast_mac(all_nodes, dst_mac);
			len = dpq_np_build_na(buf, cap, dd->loc.mac, dst_mac,
					dd->loc.ip, all_nodes,
					DPQ_NP_NA_OVERRIDE);
		} else {
			/* §7.2.3: the source link-layer option creates or
			 * updates the sender's entry */
			if (pk->has_lladdr)
				learn(dd, q, pk->src_ip, pk->lladdr, true);
			memcpy(dst_mac, pk->has_lladdr ? pk->lladdr :
					pk->src_mac, 6);
			len = dpq_np_build_na(buf, cap, dd->loc.mac, dst_mac,
					dd->loc.ip, pk->src_ip,
					DPQ_NP_NA_SOLICITED |
					DPQ_NP_NA_OVERRIDE);
		}
		ctl_finish(r, len, ctl, n_ctl);
		break;
	case DPQ_NP_NA:
		st->arp_rx++;
		/* §7.2.5: only entries we already have are updated; without
		 * a target link-layer option there is nothing to learn */
		if (!pk->has_lladdr ||
				learn(dd, q, pk->target, pk->lladdr, false) != 0)
			count_drop(st, DPQ_NP_DROP_ARP);
		break;
	case DPQ_NP_ECHO:
		r = ctl_alloc(dd, q, &buf, &cap);
		if (r == NULL)
			break;
		len = dpq_np_build_echo_reply(buf, cap, pk->family,
				dd->loc.mac, pk->src_mac, dd->loc.ip,
				pk->src_ip, frame + pk->payload_off,
				pk->payload_len);
		if (len != 0)
			st->echo_replies++;
		ctl_finish(r, len, ctl, n_ctl);
		break;
	default:
		break;
	}
	rte_pktmbuf_free(m);
}

uint16_t
dpq_dpdk_rx_burst(struct dpq_driver *d, uint16_t q, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct dpq_dpdk *dd = dpq_dpdk_of(d);
	struct rte_mbuf *ctl[DPQ_DPDK_CTL_BATCH];
	struct dpq_dpdk_qstats *st;
	struct dpq_np_pkt pk;
	uint16_t nb, i, out = 0, n_ctl = 0;
	uint64_t now, bytes = 0;

	if (unlikely(q >= d->nb_queues))
		return 0;
	st = &dd->q[q].st;
	if (!dd->gated) {
		nb = rte_eth_rx_burst(dd->port_id, q, pkts, n);
	} else if (dpq_gate_enter(dd->q[q].gate)) {
		nb = rte_eth_rx_burst(dd->port_id, q, pkts, n);
		dpq_gate_leave(dd->q[q].gate);
	} else {
		nb = 0;		/* the interrupt thread works: next poll */
	}
	now = rte_rdtsc();
	neigh_poll(dd, q, now);
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = pkts[i];
		uint64_t ipf = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
		uint64_t l4f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
		enum dpq_np_reason r;
		struct dpq_pkt_meta *meta;
		const uint8_t *p;
		unsigned int flags = 0;

		if (unlikely(m->nb_segs != 1)) {
			r = DPQ_NP_DROP_MSEG;
			goto drop;
		}
		if (unlikely(ipf == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
				l4f == RTE_MBUF_F_RX_L4_CKSUM_BAD)) {
			r = DPQ_NP_BAD_HW_CKSUM;
			goto drop;
		}
		if (ipf == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
			flags |= DPQ_NP_IP_CKSUM_OK;
		if (l4f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
			flags |= DPQ_NP_L4_CKSUM_OK;
		p = rte_pktmbuf_mtod(m, const uint8_t *);
		r = dpq_np_parse(p, p + m->data_len, &dd->loc, flags, &pk);
		if (unlikely(r != DPQ_NP_OK))
			goto drop;
		if (unlikely(pk.kind != DPQ_NP_UDP)) {
			if (n_ctl + 2 > DPQ_DPDK_CTL_BATCH) {
				flush_tx(dd, q, ctl, n_ctl, true);
				n_ctl = 0;
			}
			handle_ctl(dd, q, m, &pk, ctl, &n_ctl);
			continue;
		}
		/* a UDP datagram for us: strip headers and padding */
		m->data_off += pk.payload_off;
		m->data_len = pk.payload_len;
		m->pkt_len = pk.payload_len;
		meta = dpq_pkt_meta(m);
		meta->peer.family = pk.family;
		meta->peer.pad = 0;
		meta->peer.port = pk.sport;
		memcpy(meta->peer.bytes, pk.src_ip, 16);
		meta->local.family = pk.family;
		meta->local.pad = 0;
		meta->local.port = pk.dport;
		memcpy(meta->local.bytes, pk.dst_ip, 16);
		meta->rx_tsc = now;
		meta->ecn = pk.ecn;
		memset(meta->pad, 0, sizeof(meta->pad));
		bytes += pk.payload_len;
		pkts[out++] = m;
		continue;
drop:
		count_drop(st, r);
		rte_pktmbuf_free(m);
	}
	flush_tx(dd, q, ctl, n_ctl, true);
	st->rx_pkts += out;
	st->rx_bytes += bytes;
	return out;
}

/* Next hop for a peer: itself when on-link, else the gateway. */
static const uint8_t *
next_hop(const struct dpq_dpdk *dd, const struct dpq_addr *peer)
{
	if (dd->loc.family == AF_INET6 && peer->v6[0] == 0xfe &&
			(peer->v6[1] & 0xc0) == 0x80)
		return peer->v6;	/* link-local fe80::/10 */
	if (dpq_np_same_prefix(peer->bytes, dd->loc.ip, dd->prefix_len))
		return peer->bytes;
	if (dd->gateway.family == dd->loc.family)
		return dd->gateway.bytes;
	return NULL;
}

/* Prepend headers; returns false (m untouched) when it cannot be sent. */
static bool
prepare_tx(struct dpq_dpdk *dd, struct dpq_dpdk_qstats *st,
		struct rte_mbuf *m)
{
	const struct dpq_pkt_meta *meta = dpq_pkt_meta(m);
	struct dpq_np_udp_args a;
	uint16_t plen = m->data_len;
	uint8_t *frame;

	if (unlikely(meta->peer.family != dd->loc.family ||
			meta->peer.port == 0 || m->nb_segs != 1 ||
			plen > dd->max_payload ||
			(meta->local.family != 0 &&
			(meta->local.family != dd->loc.family ||
			memcmp(meta->local.bytes, dd->loc.ip,
			dd->loc.family == AF_INET ? 4 : 16) != 0)))) {
		st->tx_invalid++;
		return false;
	}
	frame = (uint8_t *)rte_pktmbuf_prepend(m, dd->hdr_len);
	if (unlikely(frame == NULL)) {
		st->tx_invalid++;
		return false;
	}
	a.family = dd->loc.family;
	a.ecn = meta->ecn;
	a.sport = meta->local.family != 0 && meta->local.port != 0 ?
			meta->local.port : dd->loc.port;
	a.dport = meta->peer.port;
	memcpy(a.src_mac, dd->loc.mac, 6);
	memset(a.dst_mac, 0, 6);
	a.src_ip = dd->loc.ip;
	a.dst_ip = meta->peer.bytes;
	dpq_np_write_udp(frame, &a, plen, dd->tx_np_flags);
	m->ol_flags &= ~RTE_MBUF_F_TX_OFFLOAD_MASK;
	if (dd->tx_np_flags != 0) {
		m->l2_len = DPQ_NP_ETH_HLEN;
		if (dd->loc.family == AF_INET) {
			m->l3_len = DPQ_NP_IPV4_HLEN;
			m->ol_flags |= RTE_MBUF_F_TX_IPV4;
			if (dd->tx_np_flags & DPQ_NP_TX_IP_CKSUM)
				m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
		} else {
			m->l3_len = DPQ_NP_IPV6_HLEN;
			m->ol_flags |= RTE_MBUF_F_TX_IPV6;
		}
		if (dd->tx_np_flags & DPQ_NP_TX_UDP_CKSUM)
			m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
	}
	return true;
}

uint16_t
dpq_dpdk_tx_burst(struct dpq_driver *d, uint16_t q, struct rte_mbuf **pkts,
		uint16_t n)
{
	struct dpq_dpdk *dd = dpq_dpdk_of(d);
	struct rte_mbuf *batch[DPQ_DPDK_TX_BATCH];
	struct dpq_dpdk_qstats *st;
	uint16_t i, nb = 0;
	uint64_t now;

	if (unlikely(q >= d->nb_queues))
		return 0;
	st = &dd->q[q].st;
	now = rte_rdtsc();
	neigh_poll(dd, q, now);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const uint8_t *hop;
		uint8_t mac[6];
		bool probe;

		if (unlikely(!prepare_tx(dd, st, m))) {
			st->tx_dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		hop = next_hop(dd, &dpq_pkt_meta(m)->peer);
		if (unlikely(hop == NULL)) {
			st->tx_no_route++;
			st->tx_dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (unlikely(!dpq_neigh_lookup(&dd->neigh, hop, mac))) {
			switch (dpq_neigh_hold(&dd->neigh, hop, m, now, mac,
					&probe)) {
			case DPQ_NEIGH_RESOLVED:
				break;
			case DPQ_NEIGH_HELD:
				st->neigh_wait++;
				if (probe)
					send_probe(dd, q, hop);
				continue;
			case DPQ_NEIGH_DROPPED:
			default:
				st->neigh_drop++;
				rte_pktmbuf_free(m);
				continue;
			}
		}
		dpq_np_set_dst_mac(rte_pktmbuf_mtod(m, uint8_t *), mac);
		batch[nb++] = m;
		if (nb == DPQ_DPDK_TX_BATCH) {
			flush_tx(dd, q, batch, nb, false);
			nb = 0;
		}
	}
	flush_tx(dd, q, batch, nb, false);
	return n;
}
