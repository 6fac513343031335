/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK ethdev driver over two in-process net_ring ports wired to each
 * other (rte_eth_from_rings): ARP and Neighbor Discovery resolve by
 * themselves, UDP datagrams flow both ways with payload and addresses
 * intact, drops are counted by reason, the pending queue overflows into
 * neigh_drop, unanswered neighbours time out, two queues work, and raw
 * frames injected on the ring (bad checksum, ping) are handled.
 *
 * One EAL init per binary, --no-huge, no PCI, no shared config.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpquic/driver.h"
#include "drivers/dpdk/dpdk_driver.h"
#include "drivers/dpdk/netproto.h"

#define MAXQ 2
#define TIMEOUT_MS 2000

/* Two ring ports: A transmits into ab[q], B receives from it; and back. */
struct pair {
	struct rte_ring *ab[MAXQ], *ba[MAXQ];
	uint16_t port_a, port_b;
	uint16_t nq;
	struct dpq_driver *a, *b;
};

static unsigned int pair_seq;

static void
make_ports(struct pair *p, uint16_t nq)
{
	char name[32];
	uint16_t q;
	int pa, pb;

	memset(p, 0, sizeof(*p));
	p->nq = nq;
	pair_seq++;
	for (q = 0; q < nq; q++) {
		snprintf(name, sizeof(name), "ab%u_%u", pair_seq, q);
		p->ab[q] = rte_ring_create(name, 1024, SOCKET_ID_ANY,
				RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "ba%u_%u", pair_seq, q);
		p->ba[q] = rte_ring_create(name, 1024, SOCKET_ID_ANY,
				RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(p->ab[q]);
		assert_non_null(p->ba[q]);
	}
	snprintf(name, sizeof(name), "pa%u", pair_seq);
	pa = rte_eth_from_rings(name, p->ba, nq, p->ab, nq, SOCKET_ID_ANY);
	snprintf(name, sizeof(name), "pb%u", pair_seq);
	pb = rte_eth_from_rings(name, p->ab, nq, p->ba, nq, SOCKET_ID_ANY);
	assert_true(pa >= 0 && pb >= 0);
	p->port_a = (uint16_t)pa;
	p->port_b = (uint16_t)pb;
}

static struct dpq_driver *
open_drv(uint16_t port, const char *addr, uint16_t nq, const char *gw)
{
	struct dpq_dpdk_conf c;
	struct dpq_driver *d;

	memset(&c, 0, sizeof(c));
	c.port_id = port;
	c.nb_queues = nq;
	c.nb_rxd = 256;
	c.nb_txd = 256;
	c.nb_mbufs = 1023;
	c.socket_id = -1;
	c.allow_no_rss = true;
	assert_int_equal(dpq_addr_parse(addr, &c.local), 0);
	if (gw != NULL)
		assert_int_equal(dpq_addr_parse(gw, &c.gateway), 0);
	d = dpq_driver_dpdk_open(&c);
	assert_non_null(d);
	assert_int_equal(dpq_driver_start(d), 0);
	return d;
}

static void
make_pair(struct pair *p, const char *a, const char *b, uint16_t nq,
		const char *gw_a)
{
	make_ports(p, nq);
	p->a = open_drv(p->port_a, a, nq, gw_a);
	p->b = open_drv(p->port_b, b, nq, NULL);
}

static void
free_pair(struct pair *p)
{
	uint16_t q;

	dpq_driver_close(p->a);
	dpq_driver_close(p->b);
	for (q = 0; q < p->nq; q++) {
		struct rte_mbuf *m;

		/* frames left in flight belong to freed pools: drop them
		 * before freeing the rings */
		while (rte_ring_dequeue(p->ab[q], (void **)&m) == 0)
			;
		while (rte_ring_dequeue(p->ba[q], (void **)&m) == 0)
			;
		rte_ring_free(p->ab[q]);
		rte_ring_free(p->ba[q]);
	}
}

static void
send_str(struct dpq_driver *d, uint16_t q, const char *to, const char *s)
{
	struct rte_mbuf *m;
	struct dpq_pkt_meta *meta;
	char *dst;

	assert_int_equal(dpq_driver_alloc_bulk(d, q, &m, 1), 0);
	meta = dpq_pkt_meta(m);
	assert_int_equal(meta->peer.family, 0);
	assert_int_equal(dpq_addr_parse(to, &meta->peer), 0);
	dst = rte_pktmbuf_append(m, (uint16_t)strlen(s));
	assert_non_null(dst);
	memcpy(dst, s, strlen(s));
	assert_int_equal(dpq_driver_tx_burst(d, q, &m, 1), 1);
}

/* Poll every queue of both drivers until `want` datagrams arrived at `to`
 * on queue q (others' datagrams are a test failure). Returns the count. */
static unsigned int
pump(struct pair *p, struct dpq_driver *to, uint16_t q,
		struct rte_mbuf **got, unsigned int want)
{
	uint64_t end = rte_get_tsc_cycles() +
			rte_get_tsc_hz() * TIMEOUT_MS / 1000;
	unsigned int n = 0;

	while (n < want && rte_get_tsc_cycles() < end) {
		struct dpq_driver *d[2] = { p->a, p->b };
		unsigned int i;
		uint16_t qq;

		for (i = 0; i < 2; i++) {
			for (qq = 0; qq < p->nq; qq++) {
				struct rte_mbuf *b[32];
				uint16_t k, nb;

				nb = dpq_driver_rx_burst(d[i], qq, b, 32);
				if (nb == 0)
					continue;
				if (d[i] != to || qq != q || n + nb > want)
					fail_msg("unexpected %u datagrams", nb);
				for (k = 0; k < nb; k++)
					got[n++] = b[k];
			}
		}
	}
	return n;
}

/* Poll everything for ms milliseconds; no datagram may arrive. */
static void
idle(struct pair *p, unsigned int ms)
{
	uint64_t end = rte_get_tsc_cycles() + rte_get_tsc_hz() * ms / 1000;
	struct dpq_driver *d[2] = { p->a, p->b };

	while (rte_get_tsc_cycles() < end) {
		unsigned int i;
		uint16_t q;

		for (i = 0; i < 2; i++)
			for (q = 0; q < p->nq; q++) {
				struct rte_mbuf *b[32];

				assert_int_equal(dpq_driver_rx_burst(d[i], q,
						b, 32), 0);
			}
	}
}

static void
check_dgram(struct rte_mbuf *m, const char *payload, const char *from,
		const char *to)
{
	struct dpq_pkt_meta *meta = dpq_pkt_meta(m);
	struct dpq_addr a;

	assert_int_equal(rte_pktmbuf_data_len(m), strlen(payload));
	assert_int_equal(rte_pktmbuf_pkt_len(m), strlen(payload));
	assert_memory_equal(rte_pktmbuf_mtod(m, char *), payload,
			strlen(payload));
	assert_int_equal(dpq_addr_parse(from, &a), 0);
	assert_true(dpq_addr_equal(&meta->peer, &a));
	assert_int_equal(dpq_addr_parse(to, &a), 0);
	assert_true(dpq_addr_equal(&meta->local, &a));
	assert_true(meta->rx_tsc != 0);
}

/* A talks to B, B answers to the address it saw; neighbours resolved by the
 * drivers themselves. */
static void
exchange(const char *a_addr, const char *b_addr, bool v6)
{
	struct dpq_driver_stats sa, sb;
	struct dpq_dpdk_xstats xa;
	struct rte_mbuf *m;
	struct dpq_addr peer, ip;
	struct pair p;
	uint8_t mac[6], mac_b[6], mac_a[6];

	make_pair(&p, a_addr, b_addr, 1, NULL);
	dpq_dpdk_mac(p.a, mac_a);
	dpq_dpdk_mac(p.b, mac_b);
	assert_memory_not_equal(mac_a, mac_b, 6);

	send_str(p.a, 0, b_addr, "hello from A");
	dpq_driver_stats(p.a, &sa);
	assert_int_equal(sa.neigh_wait, 1);	/* held for resolution */
	assert_int_equal(sa.arp_tx, 1);		/* request / NS sent */
	assert_int_equal(sa.tx_pkts, 0);

	assert_int_equal(pump(&p, p.b, 0, &m, 1), 1);
	check_dgram(m, "hello from A", a_addr, b_addr);
	dpq_driver_stats(p.a, &sa);
	dpq_driver_stats(p.b, &sb);
	assert_int_equal(sa.tx_pkts, 1);
	assert_int_equal(sa.tx_bytes, 12);
	assert_int_equal(sa.arp_rx, 1);		/* the reply / NA */
	assert_int_equal(sb.arp_rx, 1);		/* the request / NS */
	assert_int_equal(sb.arp_tx, 1);
	assert_int_equal(sb.rx_pkts, 1);
	assert_int_equal(sb.rx_bytes, 12);
	assert_int_equal(sb.rx_bad, 0);

	/* both learned each other's MAC */
	assert_int_equal(dpq_addr_parse(b_addr, &ip), 0);
	assert_int_equal(dpq_dpdk_neigh_lookup(p.a, &ip, mac), 0);
	assert_memory_equal(mac, mac_b, 6);
	assert_int_equal(dpq_addr_parse(a_addr, &ip), 0);
	assert_int_equal(dpq_dpdk_neigh_lookup(p.b, &ip, mac), 0);
	assert_memory_equal(mac, mac_a, 6);

	/* B answers the address it saw: no new request needed */
	peer = dpq_pkt_meta(m)->peer;
	dpq_driver_free_bulk(p.b, &m, 1);
	{
		char buf[64];

		dpq_addr_format(&peer, buf, sizeof(buf));
		send_str(p.b, 0, buf, "and back from B, a bit longer");
	}
	assert_int_equal(pump(&p, p.a, 0, &m, 1), 1);
	check_dgram(m, "and back from B, a bit longer", b_addr, a_addr);
	dpq_driver_free_bulk(p.a, &m, 1);
	dpq_driver_stats(p.b, &sb);
	assert_int_equal(sb.arp_tx, 1);
	assert_int_equal(sb.neigh_wait, 0);
	assert_int_equal(sb.tx_pkts, 1);

	/* a burst of 20 datagrams, resolved: sent at once, in order */
	{
		unsigned int i;
		struct rte_mbuf *got[20];
		char s[32];

		for (i = 0; i < 20; i++) {
			snprintf(s, sizeof(s), "dgram %u", i);
			send_str(p.a, 0, b_addr, s);
		}
		assert_int_equal(pump(&p, p.b, 0, got, 20), 20);
		for (i = 0; i < 20; i++) {
			snprintf(s, sizeof(s), "dgram %u", i);
			check_dgram(got[i], s, a_addr, b_addr);
		}
		dpq_driver_free_bulk(p.b, got, 20);
	}
	dpq_dpdk_xstats(p.a, &xa);
	assert_int_equal(xa.neigh_probes, 1);
	(void)v6;
	free_pair(&p);
}

static void
test_ipv4_arp_udp(void **state)
{
	(void)state;
	exchange("198.18.0.1:4433", "198.18.0.2:4434", false);
}

static void
test_ipv6_nd_udp(void **state)
{
	(void)state;
	exchange("[2001:db8:d0::1]:4433", "[2001:db8:d0::2]:4434", true);
}

/* Wrong port and wrong IP are dropped and counted; an off-link peer
 * without a gateway has no route. */
static void
test_drops(void **state)
{
	struct dpq_driver_stats sa, sb;
	struct dpq_dpdk_xstats xa, xb;
	struct rte_mbuf *m;
	struct pair p;

	(void)state;
	/* A routes off-link traffic through B; B has no gateway */
	make_pair(&p, "198.18.0.1:4433", "198.18.0.2:4434", 1,
			"198.18.0.2");
	send_str(p.a, 0, "198.18.0.2:4434", "resolve");
	assert_int_equal(pump(&p, p.b, 0, &m, 1), 1);
	dpq_driver_free_bulk(p.b, &m, 1);

	send_str(p.a, 0, "198.18.0.2:9999", "wrong port");
	send_str(p.a, 0, "198.18.1.9:4434", "wrong IP via the gateway");
	send_str(p.b, 0, "198.18.1.9:4433", "no route");
	idle(&p, 50);
	dpq_driver_stats(p.b, &sb);
	dpq_dpdk_xstats(p.b, &xb);
	assert_int_equal(xb.reason[DPQ_NP_DROP_PORT], 1);
	assert_int_equal(xb.reason[DPQ_NP_DROP_ADDR], 1);
	assert_int_equal(sb.rx_dropped, 2);
	assert_int_equal(sb.rx_bad, 0);
	assert_int_equal(sb.rx_pkts, 1);
	assert_int_equal(xb.tx_no_route, 1);
	assert_int_equal(sb.tx_dropped, 1);
	dpq_driver_stats(p.a, &sa);
	dpq_dpdk_xstats(p.a, &xa);
	assert_int_equal(sa.tx_pkts, 3);
	assert_int_equal(xa.neigh_probes, 1);	/* gateway == B: one ARP */

	/* a datagram of the wrong family and one too large are refused */
	{
		struct rte_mbuf *big;

		send_str(p.a, 0, "[2001:db8:d0::2]:4434", "v6 on a v4 port");
		assert_int_equal(dpq_driver_alloc_bulk(p.a, 0, &big, 1), 0);
		assert_int_equal(dpq_addr_parse("198.18.0.2:4434",
				&dpq_pkt_meta(big)->peer), 0);
		assert_non_null(rte_pktmbuf_append(big, 1500 - 28 + 1));
		assert_int_equal(dpq_driver_tx_burst(p.a, 0, &big, 1), 1);
		dpq_dpdk_xstats(p.a, &xa);
		assert_int_equal(xa.tx_invalid, 2);
	}
	/* a maximum-size datagram (MTU 1500) goes through */
	{
		struct rte_mbuf *big;
		char *d;

		assert_int_equal(dpq_driver_alloc_bulk(p.a, 0, &big, 1), 0);
		assert_int_equal(dpq_addr_parse("198.18.0.2:4434",
				&dpq_pkt_meta(big)->peer), 0);
		d = rte_pktmbuf_append(big, 1500 - 28);
		assert_non_null(d);
		memset(d, 0x77, 1500 - 28);
		assert_int_equal(dpq_driver_tx_burst(p.a, 0, &big, 1), 1);
		assert_int_equal(pump(&p, p.b, 0, &m, 1), 1);
		assert_int_equal(rte_pktmbuf_pkt_len(m), 1500 - 28);
		dpq_driver_free_bulk(p.b, &m, 1);
	}
	free_pair(&p);
}

/* More datagrams than the pending queue holds while the neighbour is
 * unresolved: DPQ_NEIGH_PENDING are sent after resolution, the rest count
 * in neigh_drop. */
static void
test_pending_overflow(void **state)
{
	struct dpq_driver_stats sa;
	struct rte_mbuf *got[16];
	struct pair p;
	unsigned int i;
	char s[16];

	(void)state;
	make_pair(&p, "198.18.0.1:4433", "198.18.0.2:4434", 1, NULL);
	for (i = 0; i < 12; i++) {
		snprintf(s, sizeof(s), "p%u", i);
		send_str(p.a, 0, "198.18.0.2:4434", s);
	}
	dpq_driver_stats(p.a, &sa);
	assert_int_equal(sa.neigh_wait, 8);
	assert_int_equal(sa.neigh_drop, 4);
	assert_int_equal(sa.arp_tx, 1);
	assert_int_equal(pump(&p, p.b, 0, got, 8), 8);
	for (i = 0; i < 8; i++) {
		snprintf(s, sizeof(s), "p%u", i);
		check_dgram(got[i], s, "198.18.0.1:4433", "198.18.0.2:4434");
	}
	dpq_driver_free_bulk(p.b, got, 8);
	idle(&p, 20);
	dpq_driver_stats(p.a, &sa);
	assert_int_equal(sa.tx_pkts, 8);
	free_pair(&p);
}

/* Nobody answers: requests are retried on the TSC deadline, then the held
 * datagram is dropped. */
static void
test_neigh_timeout(void **state)
{
	struct dpq_driver_stats sa;
	struct dpq_dpdk_xstats xa, xb;
	struct pair p;
	uint64_t end;

	(void)state;
	make_pair(&p, "[2001:db8:d0::1]:4433", "[2001:db8:d0::2]:4434", 1,
			NULL);
	send_str(p.a, 0, "[2001:db8:d0::77]:4434", "into the void");
	/* 5 probes 200 ms apart take about 1 s; the bound only keeps a
	 * broken driver from hanging the test on a loaded machine. */
	end = rte_get_tsc_cycles() + rte_get_tsc_hz() * 30;
	do {
		idle(&p, 10);
		dpq_driver_stats(p.a, &sa);
	} while (sa.neigh_drop == 0 && rte_get_tsc_cycles() < end);
	assert_int_equal(sa.neigh_wait, 1);
	assert_int_equal(sa.neigh_drop, 1);
	assert_int_equal(sa.tx_pkts, 0);
	dpq_dpdk_xstats(p.a, &xa);
	assert_int_equal(xa.neigh_probes, 5);	/* DPQ_NEIGH_MAX_PROBES */
	/* B saw the solicitations for someone else and counted them */
	dpq_dpdk_xstats(p.b, &xb);
	assert_int_equal(xb.reason[DPQ_NP_DROP_ADDR] +
			xb.reason[DPQ_NP_DROP_ARP], 5);
	free_pair(&p);
}

/* Two queue pairs: each queue of A reaches the same queue of B. */
static void
test_two_queues(void **state)
{
	struct dpq_driver_stats sb;
	struct rte_mbuf *m;
	struct pair p;
	uint16_t q;

	(void)state;
	make_pair(&p, "198.18.0.1:4433", "198.18.0.2:4434", 2, NULL);
	for (q = 0; q < 2; q++) {
		char s[16];

		snprintf(s, sizeof(s), "queue %u", q);
		send_str(p.a, q, "198.18.0.2:4434", s);
		assert_int_equal(pump(&p, p.b, q, &m, 1), 1);
		check_dgram(m, s, "198.18.0.1:4433", "198.18.0.2:4434");
		dpq_driver_free_bulk(p.b, &m, 1);
		send_str(p.b, q, "198.18.0.1:4433", s);
		assert_int_equal(pump(&p, p.a, q, &m, 1), 1);
		check_dgram(m, s, "198.18.0.2:4434", "198.18.0.1:4433");
		dpq_driver_free_bulk(p.a, &m, 1);
	}
	dpq_driver_stats(p.b, &sb);
	assert_int_equal(sb.rx_pkts, 2);
	assert_int_equal(sb.tx_pkts, 2);
	/* out-of-range queue: nothing happens */
	assert_int_equal(dpq_driver_rx_burst(p.a, 2, &m, 1), 0);
	assert_int_equal(dpq_driver_alloc_bulk(p.a, 2, &m, 1), -EINVAL);
	free_pair(&p);
}

/* Configuration errors are reported, not crashed on. */
static void
test_open_errors(void **state)
{
	struct dpq_dpdk_conf c;
	struct pair p;

	(void)state;
	make_ports(&p, 2);
	memset(&c, 0, sizeof(c));
	c.port_id = p.port_a;
	c.nb_queues = 2;
	c.nb_rxd = c.nb_txd = 256;
	c.nb_mbufs = 1023;
	c.socket_id = -1;
	assert_int_equal(dpq_addr_parse("198.18.0.1:4433", &c.local), 0);
	/* net_ring has no RSS: two queues need allow_no_rss */
	assert_null(dpq_driver_dpdk_open(&c));
	assert_int_equal(rte_errno, EINVAL);
	c.allow_no_rss = true;
	c.nb_queues = 3;		/* more than the device has */
	assert_null(dpq_driver_dpdk_open(&c));
	assert_int_equal(rte_errno, EINVAL);
	c.nb_queues = 1;
	c.port_id = RTE_MAX_ETHPORTS - 1;
	assert_null(dpq_driver_dpdk_open(&c));
	assert_int_equal(rte_errno, ENODEV);
	c.port_id = p.port_a;
	c.local.port = 0;
	assert_null(dpq_driver_dpdk_open(&c));
	assert_int_equal(rte_errno, EINVAL);
	c.local.port = 1;
	assert_int_equal(dpq_addr_parse("224.0.0.1:1", &c.local), 0);
	assert_null(dpq_driver_dpdk_open(&c));
	assert_int_equal(rte_errno, EADDRNOTAVAIL);
	assert_int_equal(dpq_addr_parse("198.18.0.1:4433", &c.local), 0);
	c.nb_mbufs = 100;		/* cannot fill the descriptors */
	assert_null(dpq_driver_dpdk_open(&c));
	/* the ports still work for a correct configuration */
	p.a = open_drv(p.port_a, "198.18.0.1:4433", 2, NULL);
	p.b = open_drv(p.port_b, "198.18.0.2:4433", 2, NULL);
	free_pair(&p);
}

/* Raw frames pushed into B's receive ring as if from a wire: a UDP
 * datagram with a bad checksum is counted in rx_bad, a ping is answered. */
static void
test_raw_frames(void **state)
{
	static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	struct dpq_driver_stats sb;
	struct dpq_dpdk_xstats xb;
	struct rte_mempool *mp;
	struct rte_mbuf *m, *r = NULL;
	struct dpq_np_udp_args a;
	struct pair p;
	uint8_t *f, peer4[4] = { 198, 18, 0, 1 }, our4[4] = { 198, 18, 0, 2 };
	uint16_t c;

	(void)state;
	make_pair(&p, "198.18.0.1:4433", "198.18.0.2:4434", 1, NULL);
	mp = rte_pktmbuf_pool_create("rawpool", 63, 0, DPQ_PKT_PRIV_SIZE,
			RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(mp);

	/* UDP with one payload bit flipped after the checksum */
	m = rte_pktmbuf_alloc(mp);
	f = (uint8_t *)rte_pktmbuf_append(m, 42 + 8);
	if (f == NULL) {
		fail();
		return;
	}
	memset(&a, 0, sizeof(a));
	a.family = AF_INET;
	a.sport = 4433;
	a.dport = 4434;
	memcpy(a.src_mac, peer_mac, 6);
	dpq_dpdk_mac(p.b, a.dst_mac);
	a.src_ip = peer4;
	a.dst_ip = our4;
	memcpy(f + 42, "corrupt!", 8);
	dpq_np_write_udp(f, &a, 8, 0);
	f[45] ^= 0x04;
	assert_int_equal(rte_ring_enqueue(p.ab[0], m), 0);

	/* ICMP echo request, 8 bytes of data */
	m = rte_pktmbuf_alloc(mp);
	f = (uint8_t *)rte_pktmbuf_append(m, 14 + 20 + 16);
	if (f == NULL) {
		fail();
		return;
	}
	memset(f, 0, 14 + 20 + 16);
	dpq_dpdk_mac(p.b, f);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 3] = 20 + 16;
	f[14 + 8] = 64;
	f[14 + 9] = DPQ_NP_PROTO_ICMP;
	memcpy(f + 14 + 12, peer4, 4);
	memcpy(f + 14 + 16, our4, 4);
	c = dpq_np_ipv4_cksum(f + 14, 20);
	memcpy(f + 14 + 10, &c, 2);
	f[34] = DPQ_NP_ICMP_ECHO_REQUEST;
	f[34 + 5] = 42;
	memcpy(f + 34 + 8, "pingpong", 8);
	c = dpq_np_l4_cksum(AF_INET, NULL, NULL, DPQ_NP_PROTO_ICMP, f + 34,
			16);
	memcpy(f + 34 + 2, &c, 2);
	assert_int_equal(rte_ring_enqueue(p.ab[0], m), 0);

	{
		struct rte_mbuf *b[4];

		assert_int_equal(dpq_driver_rx_burst(p.b, 0, b, 4), 0);
	}
	dpq_driver_stats(p.b, &sb);
	dpq_dpdk_xstats(p.b, &xb);
	assert_int_equal(sb.rx_bad, 1);
	assert_int_equal(xb.reason[DPQ_NP_BAD_UDP_CKSUM], 1);
	assert_int_equal(xb.echo_replies, 1);
	/* the reply is on the wire towards A, to the pinger's MAC */
	assert_int_equal(rte_ring_dequeue(p.ba[0], (void **)&r), 0);
	f = rte_pktmbuf_mtod(r, uint8_t *);
	assert_int_equal(rte_pktmbuf_data_len(r), 14 + 20 + 16);
	assert_memory_equal(f, peer_mac, 6);
	assert_int_equal(f[34], DPQ_NP_ICMP_ECHO_REPLY);
	assert_int_equal(f[34 + 5], 42);
	assert_memory_equal(f + 34 + 8, "pingpong", 8);
	assert_memory_equal(f + 14 + 16, peer4, 4);
	assert_int_equal(dpq_np_fold(dpq_np_sum(f + 34, 16, 0)), 0xffff);
	rte_pktmbuf_free(r);
	free_pair(&p);
	rte_mempool_free(mp);
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-shconf", "--no-pci",
		"-l", "0", "-m", "256", "--log-level=error",
		"--no-telemetry" };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_arp_udp),
		cmocka_unit_test(test_ipv6_nd_udp),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_pending_overflow),
		cmocka_unit_test(test_neigh_timeout),
		cmocka_unit_test(test_two_queues),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_raw_frames),
	};
	int rc;

	(void)argc;
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n",
				rte_strerror(rte_errno));
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
