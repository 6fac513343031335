/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of drivers/dpdk/netproto.c (no EAL): checksums against known
 * values and DPDK's own inline helpers, parsing of ARP, IPv4/UDP, IPv6/UDP,
 * ICMP echo and Neighbor Discovery, and rejection of truncated, oversized,
 * fragmented and badly checksummed frames.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_ip.h>

#include "drivers/dpdk/netproto.h"

static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0, 0x0b };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t our4[4] = { 198, 18, 0, 2 };
static const uint8_t peer4[4] = { 198, 18, 0, 1 };
static uint8_t our6[16], peer6[16];

static struct dpq_np_local loc4, loc6;

static int
setup(void **state)
{
	(void)state;
	inet_pton(AF_INET6, "2001:db8:d0::2", our6);
	inet_pton(AF_INET6, "2001:db8:d0::1", peer6);
	memset(&loc4, 0, sizeof(loc4));
	memcpy(loc4.mac, our_mac, 6);
	loc4.family = AF_INET;
	loc4.port = 4433;
	memcpy(loc4.ip, our4, 4);
	loc6 = loc4;
	loc6.family = AF_INET6;
	memcpy(loc6.ip, our6, 16);
	dpq_np_solicited_node(our6, loc6.snm);
	return 0;
}

/* Parse a copy of exactly len bytes on the heap, so that ASan catches any
 * read past the end. */
static enum dpq_np_reason
parse_exact(const uint8_t *frame, size_t len, const struct dpq_np_local *loc,
		unsigned int flags, struct dpq_np_pkt *pk)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum dpq_np_reason r;

	assert_non_null(copy);
	memcpy(copy, frame, len);
	r = dpq_np_parse(copy, copy + len, loc, flags, pk);
	free(copy);
	return r;
}

/* A UDP frame from the peer to us (payload "hello quic" unless given). */
static size_t
mk_udp(int family, uint8_t *buf, uint16_t dport, uint8_t ecn,
		const char *payload)
{
	struct dpq_np_udp_args a;
	size_t hl = dpq_np_udp_hdr_len(family);
	size_t plen;

	if (payload == NULL)
		payload = "hello quic";
	plen = strlen(payload);
	memset(&a, 0, sizeof(a));
	a.family = (uint8_t)family;
	a.ecn = ecn;
	a.sport = 5000;
	a.dport = dport;
	memcpy(a.src_mac, peer_mac, 6);
	memcpy(a.dst_mac, our_mac, 6);
	a.src_ip = family == AF_INET ? peer4 : peer6;
	a.dst_ip = family == AF_INET ? our4 : our6;
	memcpy(buf + hl, payload, plen);
	dpq_np_write_udp(buf, &a, (uint16_t)plen, 0);
	return hl + plen;
}

/* Recompute the IPv4 header checksum after a test edited the header. */
static void
fix_ip4(uint8_t *frame)
{
	uint8_t *ip = frame + DPQ_NP_ETH_HLEN;
	size_t ihl = (ip[0] & 0xf) * 4u;
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = dpq_np_ipv4_cksum(ip, ihl);
	memcpy(ip + 10, &c, 2);
}

/* Recompute the UDP checksum of a frame (IPv6 without extension headers or
 * IPv4 without options). */
static void
fix_udp(int family, uint8_t *frame)
{
	uint8_t *ip = frame + DPQ_NP_ETH_HLEN;
	uint8_t *udp = ip + (family == AF_INET ? 20 : 40);
	size_t ulen = (size_t)(udp[4] << 8 | udp[5]);
	uint16_t c;

	udp[6] = udp[7] = 0;
	c = dpq_np_l4_cksum(family, family == AF_INET ? ip + 12 : ip + 8,
			family == AF_INET ? ip + 16 : ip + 24,
			DPQ_NP_PROTO_UDP, udp, ulen);
	memcpy(udp + 6, &c, 2);
}

/* ---- checksums ----------------------------------------------------------- */

static void
test_cksum_known(void **state)
{
	/* RFC 1071 §3 example: the sum of these words is ddf2 */
	static const uint8_t rfc1071[8] = {
		0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	/* a classic IPv4 header whose checksum is b861 */
	uint8_t ip[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
		0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01,
		0xc0, 0xa8, 0x00, 0xc7 };
	uint16_t v;
	uint8_t b[2];

	(void)state;
	v = dpq_np_fold(dpq_np_sum(rfc1071, sizeof(rfc1071), 0));
	memcpy(b, &v, 2);
	assert_int_equal(b[0], 0xdd);
	assert_int_equal(b[1], 0xf2);
	/* odd length: the last byte is padded with zero (0xf7 -> f700) */
	v = dpq_np_fold(dpq_np_sum(rfc1071, 7, 0));
	memcpy(b, &v, 2);
	assert_int_equal(b[0] << 8 | b[1], (0xddf2 - 0x00f7) & 0xffff);

	v = dpq_np_ipv4_cksum(ip, sizeof(ip));
	memcpy(b, &v, 2);
	assert_int_equal(b[0], 0xb8);
	assert_int_equal(b[1], 0x61);
	/* DPDK's implementation agrees */
	assert_int_equal(v, rte_ipv4_cksum((const struct rte_ipv4_hdr *)ip));
	/* with the checksum in place the header verifies */
	memcpy(ip + 10, &v, 2);
	assert_int_equal(dpq_np_fold(dpq_np_sum(ip, 20, 0)), 0xffff);
}

static void
test_cksum_udp_vs_dpdk(void **state)
{
	uint8_t f[256];
	uint16_t mine, ref;
	size_t len;
	uint8_t *udp;

	(void)state;
	/* odd payload length exercises the pad byte */
	len = mk_udp(AF_INET, f, 4433, 0, "odd-length payload!");
	udp = f + 14 + 20;
	memcpy(&mine, udp + 6, 2);
	udp[6] = udp[7] = 0;
	ref = rte_ipv4_udptcp_cksum((const struct rte_ipv4_hdr *)(f + 14),
			udp);
	assert_int_equal(mine, ref);
	assert_true(len > 42);

	mk_udp(AF_INET6, f, 4433, 0, "odd-length payload!");
	udp = f + 14 + 40;
	memcpy(&mine, udp + 6, 2);
	udp[6] = udp[7] = 0;
	ref = rte_ipv6_udptcp_cksum((const struct rte_ipv6_hdr *)(f + 14),
			udp);
	assert_int_equal(mine, ref);

	/* offload mode stores the pseudo-header sum like DPDK's helper */
	{
		struct dpq_np_udp_args a;
		uint16_t phdr;

		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		a.sport = 1;
		a.dport = 2;
		a.src_ip = peer4;
		a.dst_ip = our4;
		memset(f + 42, 0x5a, 100);
		dpq_np_write_udp(f, &a, 100,
				DPQ_NP_TX_IP_CKSUM | DPQ_NP_TX_UDP_CKSUM);
		assert_int_equal(f[14 + 10], 0);	/* left to the device */
		assert_int_equal(f[14 + 11], 0);
		memcpy(&mine, f + 14 + 20 + 6, 2);
		phdr = rte_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)
				(f + 14), 0);
		assert_int_equal(mine, phdr);
	}
}

/* ---- UDP ----------------------------------------------------------------- */

static void
test_udp4_ok(void **state)
{
	uint8_t f[256];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	len = mk_udp(AF_INET, f, 4433, 2, NULL);
	assert_int_equal(len, 42 + 10);
	/* DF on transmit (RFC 9000 §14), TTL 64 */
	assert_int_equal(f[14 + 6], 0x40);
	assert_int_equal(f[14 + 8], 64);
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_UDP);
	assert_int_equal(pk.family, AF_INET);
	assert_int_equal(pk.payload_off, 42);
	assert_int_equal(pk.payload_len, 10);
	assert_memory_equal(f + pk.payload_off, "hello quic", 10);
	assert_int_equal(pk.sport, 5000);
	assert_int_equal(pk.dport, 4433);
	assert_int_equal(pk.ecn, 2);
	assert_memory_equal(pk.src_ip, peer4, 4);
	assert_memory_equal(pk.dst_ip, our4, 4);
	assert_memory_equal(pk.src_mac, peer_mac, 6);

	/* Ethernet padding after the IP datagram is ignored */
	memset(f + len, 0xee, 20);
	assert_int_equal(parse_exact(f, len + 20, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.payload_len, 10);

	/* IPv4 UDP checksum 0 means "none" (RFC 768): accepted */
	f[14 + 20 + 6] = f[14 + 20 + 7] = 0;
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_OK);

	/* IPv4 options are skipped: 4 bytes of NOPs */
	len = mk_udp(AF_INET, f, 4433, 0, NULL);
	memmove(f + 14 + 24, f + 14 + 20, len - 34);
	memset(f + 14 + 20, 1, 4);
	f[14] = 0x46;
	f[14 + 3] += 4;
	fix_ip4(f);
	assert_int_equal(parse_exact(f, len + 4, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.payload_off, 46);
	assert_memory_equal(f + pk.payload_off, "hello quic", 10);
}

static void
test_udp6_ok(void **state)
{
	uint8_t f[256];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	len = mk_udp(AF_INET6, f, 4433, 1, NULL);
	assert_int_equal(len, 62 + 10);
	assert_int_equal(parse_exact(f, len, &loc6, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_UDP);
	assert_int_equal(pk.family, AF_INET6);
	assert_int_equal(pk.payload_off, 62);
	assert_int_equal(pk.payload_len, 10);
	assert_int_equal(pk.ecn, 1);
	assert_memory_equal(pk.src_ip, peer6, 16);
	assert_memory_equal(pk.dst_ip, our6, 16);
}

static void
test_ipv6_ext_headers(void **state)
{
	uint8_t f[256], g[256];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	len = mk_udp(AF_INET6, f, 4433, 0, NULL);
	/* insert an 8-byte Hop-by-Hop header (PadN) before UDP */
	memcpy(g, f, 54);
	g[54] = DPQ_NP_PROTO_UDP;	/* next header */
	g[55] = 0;			/* 8 bytes */
	g[56] = 1;			/* PadN */
	g[57] = 4;
	memset(g + 58, 0, 4);
	memcpy(g + 62, f + 54, len - 54);
	g[14 + 6] = 0;			/* IPv6 next header: HBH */
	g[14 + 5] += 8;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.payload_off, 70);

	/* Routing header with Segments Left 1: dropped */
	g[14 + 6] = 43;
	g[54] = DPQ_NP_PROTO_UDP;
	g[55] = 0;
	g[56] = 0;
	g[57] = 1;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk),
			DPQ_NP_DROP_EXTHDR);
	/* ... with Segments Left 0: skipped */
	g[57] = 0;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk), DPQ_NP_OK);

	/* Fragment header: dropped */
	g[14 + 6] = 44;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk),
			DPQ_NP_DROP_FRAG);
	/* ESP: a protocol we do not handle */
	g[14 + 6] = 50;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk),
			DPQ_NP_DROP_PROTO);
	/* an extension header longer than the payload */
	g[14 + 6] = 60;
	g[55] = 20;
	assert_int_equal(parse_exact(g, len + 8, &loc6, 0, &pk),
			DPQ_NP_BAD_TRUNC);
}

static void
test_udp_rejects(void **state)
{
	uint8_t f[256], g[256];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	len = mk_udp(AF_INET, f, 4433, 0, NULL);

	/* wrong port / wrong IP / other MAC / VLAN / ethertype / family */
	memcpy(g, f, len);
	g[14 + 20 + 3]++;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_PORT);
	memcpy(g, f, len);
	g[14 + 19]++;
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_ADDR);
	memcpy(g, f, len);
	g[5]++;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_MAC);
	memcpy(g, f, len);
	g[12] = 0x81;
	g[13] = 0x00;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_VLAN);
	g[12] = 0x88;
	g[13] = 0xb5;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk),
			DPQ_NP_DROP_ETHERTYPE);
	assert_int_equal(parse_exact(f, len, &loc6, 0, &pk),
			DPQ_NP_DROP_ETHERTYPE);

	/* bad IP header lengths */
	memcpy(g, f, len);
	g[14] = 0x44;			/* IHL 4 < 5 */
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_IP_HDR);
	memcpy(g, f, len);
	g[14] = 0x4f;			/* IHL 60 > frame */
	assert_int_equal(parse_exact(g, 14 + 40, &loc4, 0, &pk),
			DPQ_NP_BAD_TRUNC);
	memcpy(g, f, len);
	g[14] = 0x55;			/* version 5 */
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_IP_HDR);
	memcpy(g, f, len);
	g[14 + 2] = 0;
	g[14 + 3] = 16;			/* total length < IHL */
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_IP_HDR);
	memcpy(g, f, len);
	g[14 + 3] += 1;			/* total length > frame */
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_TRUNC);

	/* UDP length larger than the IP payload, and smaller than 8 */
	memcpy(g, f, len);
	g[14 + 20 + 5] += 1;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk),
			DPQ_NP_BAD_UDP_LEN);
	g[14 + 20 + 4] = 0;
	g[14 + 20 + 5] = 7;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk),
			DPQ_NP_BAD_UDP_LEN);

	/* bad checksums */
	memcpy(g, f, len);
	g[len - 1] ^= 0x01;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk),
			DPQ_NP_BAD_UDP_CKSUM);
	/* ... unless the device says it verified it */
	assert_int_equal(parse_exact(g, len, &loc4, DPQ_NP_L4_CKSUM_OK, &pk),
			DPQ_NP_OK);
	memcpy(g, f, len);
	g[14 + 10] ^= 0x40;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk),
			DPQ_NP_BAD_IP_CKSUM);
	assert_int_equal(parse_exact(g, len, &loc4, DPQ_NP_IP_CKSUM_OK, &pk),
			DPQ_NP_OK);

	/* fragments: MF, and a non-zero offset */
	memcpy(g, f, len);
	g[14 + 6] = 0x20;		/* MF */
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_FRAG);
	g[14 + 6] = 0x40;		/* DF + offset 8 */
	g[14 + 7] = 0x01;
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_FRAG);

	/* protocol other than UDP / ICMP */
	memcpy(g, f, len);
	g[14 + 9] = 6;
	fix_ip4(g);
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_DROP_PROTO);

	/* IPv6: checksum 0 is invalid (RFC 8200 §8.1), bad checksum, and a
	 * UDP length past the IPv6 payload */
	len = mk_udp(AF_INET6, f, 4433, 0, NULL);
	memcpy(g, f, len);
	g[14 + 40 + 6] = g[14 + 40 + 7] = 0;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_BAD_UDP_CKSUM);
	memcpy(g, f, len);
	g[len - 3] ^= 0x80;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_BAD_UDP_CKSUM);
	memcpy(g, f, len);
	g[14 + 40 + 5] += 2;
	fix_udp(AF_INET6, g);
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_BAD_UDP_LEN);
	memcpy(g, f, len);
	g[14 + 5] += 1;			/* payload length > frame */
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_BAD_TRUNC);
	memcpy(g, f, len);
	g[14] = 0x50;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_BAD_IP_HDR);
	/* to a multicast group we listen on (for ND), but UDP: dropped */
	memcpy(g, f, len);
	memcpy(g + 14 + 24, loc6.snm, 16);
	fix_udp(AF_INET6, g);
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk),
			DPQ_NP_DROP_ADDR);
}

/* ---- ARP ------------------------------------------------------------------ */

static void
test_arp(void **state)
{
	uint8_t f[64], g[64];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	len = dpq_np_build_arp(f, sizeof(f), DPQ_NP_ARP_REQUEST,
			dpq_np_bcast_mac, peer_mac, peer4, NULL, our4);
	assert_int_equal(len, 42);
	assert_memory_equal(f, dpq_np_bcast_mac, 6);
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_ARP);
	assert_int_equal(pk.arp_op, DPQ_NP_ARP_REQUEST);
	assert_true(pk.has_lladdr);
	assert_memory_equal(pk.lladdr, peer_mac, 6);
	assert_memory_equal(pk.src_ip, peer4, 4);
	assert_memory_equal(pk.target, our4, 4);
	/* too small a buffer builds nothing */
	assert_int_equal(dpq_np_build_arp(g, 41, DPQ_NP_ARP_REPLY, peer_mac,
			our_mac, our4, peer_mac, peer4), 0);

	/* reply to our MAC */
	len = dpq_np_build_arp(f, sizeof(f), DPQ_NP_ARP_REPLY, our_mac,
			peer_mac, peer4, our_mac, our4);
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.arp_op, DPQ_NP_ARP_REPLY);

	/* wrong hardware size, opcode, multicast sender */
	memcpy(g, f, len);
	g[14 + 4] = 8;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_ARP);
	memcpy(g, f, len);
	g[14 + 7] = 3;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_ARP);
	memcpy(g, f, len);
	g[14 + 8] |= 1;
	assert_int_equal(parse_exact(g, len, &loc4, 0, &pk), DPQ_NP_BAD_ARP);
	/* ARP on an IPv6 driver */
	assert_int_equal(parse_exact(f, len, &loc6, 0, &pk),
			DPQ_NP_DROP_ETHERTYPE);
}

/* ---- ICMP echo ------------------------------------------------------------ */

static void
test_echo(void **state)
{
	uint8_t f[128], r[128];
	struct dpq_np_pkt pk;
	size_t len, rlen;
	uint8_t *ip = f + 14, *icmp = f + 34;
	uint16_t c;

	(void)state;
	/* an ICMP echo request from the peer, 16 bytes of data */
	memcpy(f, our_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[3] = 20 + 24;
	ip[8] = 64;
	ip[9] = DPQ_NP_PROTO_ICMP;
	memcpy(ip + 12, peer4, 4);
	memcpy(ip + 16, our4, 4);
	fix_ip4(f);
	memset(icmp, 0, 24);
	icmp[0] = DPQ_NP_ICMP_ECHO_REQUEST;
	icmp[5] = 7;			/* id */
	icmp[7] = 1;			/* seq */
	memset(icmp + 8, 0xab, 16);
	c = dpq_np_l4_cksum(AF_INET, NULL, NULL, DPQ_NP_PROTO_ICMP, icmp, 24);
	memcpy(icmp + 2, &c, 2);
	len = 14 + 20 + 24;
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_ECHO);
	assert_int_equal(pk.payload_len, 24);

	rlen = dpq_np_build_echo_reply(r, sizeof(r), AF_INET, our_mac,
			pk.src_mac, our4, pk.src_ip, f + pk.payload_off,
			pk.payload_len);
	assert_int_equal(rlen, len);
	assert_int_equal(r[34], DPQ_NP_ICMP_ECHO_REPLY);
	assert_memory_equal(r + 34 + 4, icmp + 4, 20);	/* id, seq, data */
	assert_int_equal(dpq_np_fold(dpq_np_sum(r + 34, 24, 0)), 0xffff);
	assert_int_equal(dpq_np_fold(dpq_np_sum(r + 14, 20, 0)), 0xffff);
	assert_memory_equal(r, peer_mac, 6);

	/* corrupt ICMP checksum; non-echo type */
	icmp[9] ^= 1;
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_BAD_ICMP);
	icmp[9] ^= 1;
	icmp[0] = 13;	/* timestamp */
	icmp[2] = icmp[3] = 0;
	c = dpq_np_l4_cksum(AF_INET, NULL, NULL, DPQ_NP_PROTO_ICMP, icmp, 24);
	memcpy(icmp + 2, &c, 2);
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk), DPQ_NP_DROP_ICMP);
}

/* ---- Neighbor Discovery --------------------------------------------------- */

static void
test_nd(void **state)
{
	uint8_t f[128], g[128], snm[16], mac[6];
	struct dpq_np_pkt pk;
	size_t len;

	(void)state;
	/* the peer solicits our address */
	len = dpq_np_build_ns(f, sizeof(f), peer_mac, peer6, our6);
	assert_int_equal(len, 14 + 40 + 32);
	dpq_np_solicited_node(our6, snm);
	dpq_np_mcast_mac(snm, mac);
	assert_memory_equal(f, mac, 6);
	assert_int_equal(f[0], 0x33);
	assert_int_equal(f[2], 0xff);
	assert_memory_equal(f + 14 + 24, snm, 16);
	assert_int_equal(f[14 + 7], 255);
	assert_int_equal(parse_exact(f, len, &loc6, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_NS);
	assert_memory_equal(pk.target, our6, 16);
	assert_true(pk.has_lladdr);
	assert_memory_equal(pk.lladdr, peer_mac, 6);

	/* hop limit != 255 is invalid (RFC 4861 §7.1.1) */
	memcpy(g, f, len);
	g[14 + 7] = 254;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk), DPQ_NP_BAD_ICMP);
	/* corrupted checksum */
	memcpy(g, f, len);
	g[len - 1] ^= 1;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk), DPQ_NP_BAD_ICMP);
	/* zero-length option */
	memcpy(g, f, len);
	g[14 + 40 + 25] = 0;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk), DPQ_NP_BAD_ICMP);
	/* NS for another address (sent to our group anyway) */
	len = dpq_np_build_ns(g, sizeof(g), peer_mac, peer6, peer6);
	memcpy(g + 14 + 24, snm, 16);
	memset(g + 14 + 40 + 2, 0, 2);
	{
		uint16_t c = dpq_np_l4_cksum(AF_INET6, g + 22, g + 38,
				DPQ_NP_PROTO_ICMPV6, g + 54, 32);
		memcpy(g + 54 + 2, &c, 2);
	}
	g[0] = 0x33;	/* group MAC: multicast, passes the MAC filter */
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk), DPQ_NP_DROP_ARP);

	/* the peer's advertisement in answer to our NS */
	len = dpq_np_build_na(f, sizeof(f), peer_mac, our_mac, peer6, our6,
			DPQ_NP_NA_SOLICITED | DPQ_NP_NA_OVERRIDE);
	assert_int_equal(parse_exact(f, len, &loc6, 0, &pk), DPQ_NP_OK);
	assert_int_equal(pk.kind, DPQ_NP_NA);
	assert_memory_equal(pk.target, peer6, 16);
	assert_int_equal(pk.na_flags, DPQ_NP_NA_SOLICITED | DPQ_NP_NA_OVERRIDE);
	assert_true(pk.has_lladdr);
	assert_memory_equal(pk.lladdr, peer_mac, 6);
	/* a multicast target is invalid */
	memcpy(g, f, len);
	g[54 + 8] = 0xff;
	assert_int_equal(parse_exact(g, len, &loc6, 0, &pk), DPQ_NP_BAD_ICMP);
	/* NS on an IPv4 driver */
	assert_int_equal(parse_exact(f, len, &loc4, 0, &pk),
			DPQ_NP_DROP_ETHERTYPE);
}

/* ---- truncation at every length ------------------------------------------ */

static void
truncate_all(const uint8_t *f, size_t len, const struct dpq_np_local *loc)
{
	struct dpq_np_pkt pk;
	size_t n;

	assert_int_equal(parse_exact(f, len, loc, 0, &pk), DPQ_NP_OK);
	for (n = 0; n < len; n++) {
		enum dpq_np_reason r = parse_exact(f, n, loc, 0, &pk);

		if (r == DPQ_NP_OK)
			fail_msg("accepted a frame truncated to %zu of %zu",
					n, len);
		assert_true(dpq_np_reason_is_bad(r));
	}
}

static void
test_truncated(void **state)
{
	uint8_t f[256];
	size_t len;

	(void)state;
	truncate_all(f, mk_udp(AF_INET, f, 4433, 0, NULL), &loc4);
	truncate_all(f, mk_udp(AF_INET6, f, 4433, 0, NULL), &loc6);
	len = dpq_np_build_arp(f, sizeof(f), DPQ_NP_ARP_REQUEST,
			dpq_np_bcast_mac, peer_mac, peer4, NULL, our4);
	truncate_all(f, len, &loc4);
	len = dpq_np_build_ns(f, sizeof(f), peer_mac, peer6, our6);
	truncate_all(f, len, &loc6);
	/* NULL and reversed pointers */
	{
		struct dpq_np_pkt pk;

		assert_int_equal(dpq_np_parse(NULL, NULL, &loc4, 0, &pk),
				DPQ_NP_BAD_TRUNC);
		assert_int_equal(dpq_np_parse(f + 10, f, &loc4, 0, &pk),
				DPQ_NP_BAD_TRUNC);
	}
}

static void
test_helpers(void **state)
{
	uint8_t a[16] = { 10, 1, 2, 3 }, b[16] = { 10, 1, 2, 200 };

	(void)state;
	assert_true(dpq_np_same_prefix(a, b, 24));
	assert_false(dpq_np_same_prefix(a, b, 25));
	assert_true(dpq_np_same_prefix(a, b, 0));
	b[2] = 3;
	assert_true(dpq_np_same_prefix(a, b, 23));
	assert_false(dpq_np_same_prefix(a, b, 24));
	assert_string_equal(dpq_np_reason_name(DPQ_NP_DROP_FRAG),
			"drop_fragment");
	assert_string_equal(dpq_np_reason_name(DPQ_NP_REASON_MAX), "unknown");
	assert_true(dpq_np_reason_is_bad(DPQ_NP_BAD_UDP_CKSUM));
	assert_false(dpq_np_reason_is_bad(DPQ_NP_DROP_PORT));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cksum_known),
		cmocka_unit_test(test_cksum_udp_vs_dpdk),
		cmocka_unit_test(test_udp4_ok),
		cmocka_unit_test(test_udp6_ok),
		cmocka_unit_test(test_ipv6_ext_headers),
		cmocka_unit_test(test_udp_rejects),
		cmocka_unit_test(test_arp),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_nd),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_helpers),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
