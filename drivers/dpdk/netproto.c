/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netproto: Ethernet / ARP / IPv4 / IPv6 / UDP / ICMP / ICMPv6 parsing and
 * building for the DPDK driver. See netproto.h for the policy on VLAN tags,
 * fragments and IPv6 extension headers.
 */
#include <string.h>

#include "netproto.h"

const uint8_t dpq_np_bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t all_nodes6[16] = {
	0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01 };
static const uint8_t zero16[16];

static const char *const reason_names[DPQ_NP_REASON_MAX] = {
	[DPQ_NP_OK] = "ok",
	[DPQ_NP_BAD_TRUNC] = "bad_truncated",
	[DPQ_NP_BAD_IP_HDR] = "bad_ip_header",
	[DPQ_NP_BAD_IP_CKSUM] = "bad_ip_cksum",
	[DPQ_NP_BAD_UDP_LEN] = "bad_udp_len",
	[DPQ_NP_BAD_UDP_CKSUM] = "bad_udp_cksum",
	[DPQ_NP_BAD_ICMP] = "bad_icmp",
	[DPQ_NP_BAD_ARP] = "bad_arp",
	[DPQ_NP_DROP_VLAN] = "drop_vlan",
	[DPQ_NP_DROP_ETHERTYPE] = "drop_ethertype",
	[DPQ_NP_DROP_MAC] = "drop_other_mac",
	[DPQ_NP_DROP_FRAG] = "drop_fragment",
	[DPQ_NP_DROP_EXTHDR] = "drop_ipv6_ext_header",
	[DPQ_NP_DROP_PROTO] = "drop_ip_proto",
	[DPQ_NP_DROP_ADDR] = "drop_other_addr",
	[DPQ_NP_DROP_PORT] = "drop_other_port",
	[DPQ_NP_DROP_ICMP] = "drop_icmp_type",
	[DPQ_NP_DROP_ARP] = "drop_neigh_other",
	[DPQ_NP_DROP_MSEG] = "drop_multi_segment",
	[DPQ_NP_BAD_HW_CKSUM] = "bad_hw_cksum",
};

const char *
dpq_np_reason_name(enum dpq_np_reason r)
{
	if ((unsigned int)r >= DPQ_NP_REASON_MAX || reason_names[r] == NULL)
		return "unknown";
	return reason_names[r];
}

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Store a checksum computed on native words (see netproto.h). */
static inline void
wr_cksum(uint8_t *p, uint16_t c)
{
	memcpy(p, &c, 2);
}

/* ---- checksums ----------------------------------------------------------- */

uint64_t
dpq_np_sum(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = buf;
	uint32_t w32;
	uint16_t w16;

	/* 32-bit words into 64-bit accumulators: no carry is lost below
	 * 2^32 words, far beyond any frame. The 32-byte loop keeps four
	 * independent sums (this was the top function of a bulk transfer
	 * profile, above AES-GCM), then the tail goes word by word. */
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	while (len >= 32) {
		uint64_t w[4];

		memcpy(w, p, 32);
		s0 += (w[0] & 0xffffffffu) + (w[0] >> 32);
		s1 += (w[1] & 0xffffffffu) + (w[1] >> 32);
		s2 += (w[2] & 0xffffffffu) + (w[2] >> 32);
		s3 += (w[3] & 0xffffffffu) + (w[3] >> 32);
		p += 32;
		len -= 32;
	}
	sum += s0 + s1 + s2 + s3;
	while (len >= 4) {
		memcpy(&w32, p, 4);
		sum += w32;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w16, p, 2);
		sum += w16;
		p += 2;
		len -= 2;
	}
	if (len == 1) {
		w16 = 0;
		memcpy(&w16, p, 1);	/* the byte, then a zero pad byte */
		sum += w16;
	}
	return sum;
}

uint16_t
dpq_np_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint64_t
dpq_np_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst,
		uint8_t proto, uint32_t l4_len)
{
	/* IPv4 (RFC 768): src, dst, zero, protocol, 16-bit length.
	 * IPv6 (RFC 8200 §8.1): src, dst, 32-bit length, 3 zero bytes,
	 * next header. Both sum to the same words for lengths < 65536. */
	uint8_t tail[8] = { 0 };
	size_t alen = family == AF_INET ? 4 : 16;
	uint64_t sum;

	sum = dpq_np_sum(src, alen, 0);
	sum = dpq_np_sum(dst, alen, sum);
	tail[0] = (uint8_t)(l4_len >> 24);
	tail[1] = (uint8_t)(l4_len >> 16);
	tail[2] = (uint8_t)(l4_len >> 8);
	tail[3] = (uint8_t)l4_len;
	tail[7] = proto;
	return dpq_np_sum(tail, sizeof(tail), sum);
}

uint16_t
dpq_np_ipv4_cksum(const uint8_t *hdr, size_t hlen)
{
	return (uint16_t)~dpq_np_fold(dpq_np_sum(hdr, hlen, 0));
}

uint16_t
dpq_np_l4_cksum(int family, const uint8_t *src, const uint8_t *dst,
		uint8_t proto, const uint8_t *l4, size_t len)
{
	uint64_t sum = 0;
	uint16_t c;

	/* ICMPv4 has no pseudo-header (RFC 792). */
	if (!(family == AF_INET && proto == DPQ_NP_PROTO_ICMP))
		sum = dpq_np_pseudo_sum(family, src, dst, proto,
				(uint32_t)len);
	c = (uint16_t)~dpq_np_fold(dpq_np_sum(l4, len, sum));
	/* RFC 768: a computed 0 is sent as all ones, 0 meaning "none". */
	if (c == 0 && proto == DPQ_NP_PROTO_UDP)
		c = 0xffff;
	return c;
}

/* True when the checksum over the data (field included) verifies. */
static bool
l4_cksum_ok(int family, const uint8_t *src, const uint8_t *dst,
		uint8_t proto, const uint8_t *l4, size_t len)
{
	uint64_t sum = 0;

	if (!(family == AF_INET && proto == DPQ_NP_PROTO_ICMP))
		sum = dpq_np_pseudo_sum(family, src, dst, proto,
				(uint32_t)len);
	return dpq_np_fold(dpq_np_sum(l4, len, sum)) == 0xffff;
}

/* ---- addresses ------------------------------------------------------------- */

void
dpq_np_solicited_node(const uint8_t ip[16], uint8_t out[16])
{
	static const uint8_t pfx[13] = {
		0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff };

	memcpy(out, pfx, sizeof(pfx));
	memcpy(out + 13, ip + 13, 3);
}

void
dpq_np_mcast_mac(const uint8_t ip6[16], uint8_t mac[6])
{
	mac[0] = 0x33;
	mac[1] = 0x33;
	memcpy(mac + 2, ip6 + 12, 4);
}

bool
dpq_np_same_prefix(const uint8_t *a, const uint8_t *b,
		unsigned int prefix_len)
{
	unsigned int full = prefix_len / 8, rest = prefix_len % 8;
	uint8_t mask;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return ((a[full] ^ b[full]) & mask) == 0;
}

/* ---- parsing --------------------------------------------------------------- */

static enum dpq_np_reason
parse_arp(const uint8_t *p, const uint8_t *end, struct dpq_np_pkt *out)
{
	if (end - p < DPQ_NP_ARP_LEN)
		return DPQ_NP_BAD_TRUNC;
	/* Ethernet hardware (1), IPv4 protocol, 6- and 4-byte addresses */
	if (rd16(p) != 1 || rd16(p + 2) != DPQ_NP_ETHERTYPE_IPV4 ||
			p[4] != 6 || p[5] != 4)
		return DPQ_NP_BAD_ARP;
	out->arp_op = rd16(p + 6);
	if (out->arp_op != DPQ_NP_ARP_REQUEST &&
			out->arp_op != DPQ_NP_ARP_REPLY)
		return DPQ_NP_BAD_ARP;
	/* a multicast sender hardware address is never a neighbour */
	if (p[8] & 1)
		return DPQ_NP_BAD_ARP;
	memcpy(out->lladdr, p + 8, 6);
	memcpy(out->src_ip, p + 14, 4);
	memcpy(out->target, p + 24, 4);
	out->has_lladdr = 1;
	out->family = AF_INET;
	out->kind = DPQ_NP_ARP;
	return DPQ_NP_OK;
}

static enum dpq_np_reason
parse_udp(const uint8_t *frame, const uint8_t *l4, const uint8_t *l4_end,
		const struct dpq_np_local *loc, unsigned int flags,
		struct dpq_np_pkt *out)
{
	uint16_t ulen, cks;

	if (l4_end - l4 < DPQ_NP_UDP_HLEN)
		return DPQ_NP_BAD_TRUNC;
	ulen = rd16(l4 + 4);
	if (ulen < DPQ_NP_UDP_HLEN || ulen > l4_end - l4)
		return DPQ_NP_BAD_UDP_LEN;
	out->sport = rd16(l4);
	out->dport = rd16(l4 + 2);
	if (out->dport != loc->port)
		return DPQ_NP_DROP_PORT;
	cks = rd16(l4 + 6);
	if (cks == 0) {
		/* RFC 8200 §8.1: IPv6 receivers discard a zero UDP
		 * checksum; for IPv4 it means "not computed" (RFC 768). */
		if (out->family == AF_INET6)
			return DPQ_NP_BAD_UDP_CKSUM;
	} else if (!(flags & DPQ_NP_L4_CKSUM_OK) &&
			!l4_cksum_ok(out->family, out->src_ip, out->dst_ip,
				DPQ_NP_PROTO_UDP, l4, ulen)) {
		return DPQ_NP_BAD_UDP_CKSUM;
	}
	out->l4_off = (uint16_t)(l4 - frame);
	out->payload_off = (uint16_t)(out->l4_off + DPQ_NP_UDP_HLEN);
	out->payload_len = (uint16_t)(ulen - DPQ_NP_UDP_HLEN);
	out->kind = DPQ_NP_UDP;
	return DPQ_NP_OK;
}

static enum dpq_np_reason
parse_ipv4(const uint8_t *frame, const uint8_t *p, const uint8_t *end,
		const struct dpq_np_local *loc, unsigned int flags,
		struct dpq_np_pkt *out)
{
	unsigned int ihl, tot;
	const uint8_t *l4, *l4_end;

	if (end - p < DPQ_NP_IPV4_HLEN)
		return DPQ_NP_BAD_TRUNC;
	if ((p[0] >> 4) != 4)
		return DPQ_NP_BAD_IP_HDR;
	ihl = (p[0] & 0x0fu) * 4;
	if (ihl < DPQ_NP_IPV4_HLEN)
		return DPQ_NP_BAD_IP_HDR;
	if (ihl > (size_t)(end - p))
		return DPQ_NP_BAD_TRUNC;
	tot = rd16(p + 2);
	if (tot < ihl)
		return DPQ_NP_BAD_IP_HDR;
	/* bytes past tot are Ethernet padding and are ignored */
	if (tot > (size_t)(end - p))
		return DPQ_NP_BAD_TRUNC;
	if (!(flags & DPQ_NP_IP_CKSUM_OK) &&
			dpq_np_fold(dpq_np_sum(p, ihl, 0)) != 0xffff)
		return DPQ_NP_BAD_IP_CKSUM;
	/* MF set or a fragment offset: a fragment (RFC 791) */
	if ((rd16(p + 6) & 0x3fff) != 0)
		return DPQ_NP_DROP_FRAG;
	out->family = AF_INET;
	out->ecn = p[1] & 0x3;
	out->hop_limit = p[8];
	memcpy(out->src_ip, p + 12, 4);
	memcpy(out->dst_ip, p + 16, 4);
	out->l3_off = (uint16_t)(p - frame);
	if (memcmp(out->dst_ip, loc->ip, 4) != 0)
		return DPQ_NP_DROP_ADDR;
	/* never answer a multicast, broadcast or "this network" source */
	if (out->src_ip[0] >= 224 || out->src_ip[0] == 0)
		return DPQ_NP_DROP_ADDR;
	l4 = p + ihl;
	l4_end = p + tot;
	switch (p[9]) {
	case DPQ_NP_PROTO_UDP:
		return parse_udp(frame, l4, l4_end, loc, flags, out);
	case DPQ_NP_PROTO_ICMP:
		if (l4_end - l4 < DPQ_NP_ICMP_HLEN)
			return DPQ_NP_BAD_TRUNC;
		if (!l4_cksum_ok(AF_INET, NULL, NULL, DPQ_NP_PROTO_ICMP, l4,
				(size_t)(l4_end - l4)))
			return DPQ_NP_BAD_ICMP;
		if (l4[0] != DPQ_NP_ICMP_ECHO_REQUEST || l4[1] != 0)
			return DPQ_NP_DROP_ICMP;
		out->l4_off = (uint16_t)(l4 - frame);
		out->payload_off = out->l4_off;
		out->payload_len = (uint16_t)(l4_end - l4);
		out->kind = DPQ_NP_ECHO;
		return DPQ_NP_OK;
	default:
		return DPQ_NP_DROP_PROTO;
	}
}

/* Walk ND options (RFC 4861 §4.6): find the link-layer address option of
 * type want. A zero option length is invalid (§4.6: "MUST silently discard"). */
static enum dpq_np_reason
parse_nd_opts(const uint8_t *o, const uint8_t *end, uint8_t want,
		struct dpq_np_pkt *out)
{
	while (o < end) {
		size_t olen;

		if (end - o < 2)
			return DPQ_NP_BAD_ICMP;
		olen = (size_t)o[1] * 8;
		if (olen == 0 || olen > (size_t)(end - o))
			return DPQ_NP_BAD_ICMP;
		if (o[0] == want && olen >= 8) {
			memcpy(out->lladdr, o + 2, 6);
			out->has_lladdr = 1;
		}
		o += olen;
	}
	return DPQ_NP_OK;
}

static enum dpq_np_reason
parse_icmp6(const uint8_t *frame, const uint8_t *l4, const uint8_t *l4_end,
		const struct dpq_np_local *loc, bool dst_mcast,
		struct dpq_np_pkt *out)
{
	size_t len = (size_t)(l4_end - l4);
	enum dpq_np_reason r;
	bool src_unspec;

	if (len < 4)
		return DPQ_NP_BAD_TRUNC;
	if (!l4_cksum_ok(AF_INET6, out->src_ip, out->dst_ip,
			DPQ_NP_PROTO_ICMPV6, l4, len))
		return DPQ_NP_BAD_ICMP;
	out->l4_off = (uint16_t)(l4 - frame);
	switch (l4[0]) {
	case DPQ_NP_ICMP6_ECHO_REQUEST:
		if (dst_mcast)
			return DPQ_NP_DROP_ADDR;
		if (len < DPQ_NP_ICMP_HLEN)
			return DPQ_NP_BAD_TRUNC;
		out->payload_off = out->l4_off;
		out->payload_len = (uint16_t)len;
		out->kind = DPQ_NP_ECHO;
		return DPQ_NP_OK;
	case DPQ_NP_ICMP6_NS:
	case DPQ_NP_ICMP6_NA:
		/* RFC 4861 §7.1.1 / §7.1.2 validity checks */
		if (out->hop_limit != DPQ_NP_ND_HOP_LIMIT || l4[1] != 0 ||
				len < 24 || l4[8] == 0xff)
			return DPQ_NP_BAD_ICMP;
		memcpy(out->target, l4 + 8, 16);
		src_unspec = memcmp(out->src_ip, zero16, 16) == 0;
		if (l4[0] == DPQ_NP_ICMP6_NS) {
			r = parse_nd_opts(l4 + 24, l4_end, 1, out);
			if (r != DPQ_NP_OK)
				return r;
			/* DAD probe: must go to the solicited-node group
			 * and carry no source link-layer address */
			if (src_unspec && (out->has_lladdr ||
					memcmp(out->dst_ip, loc->snm, 16) != 0))
				return DPQ_NP_BAD_ICMP;
			if (memcmp(out->target, loc->ip, 16) != 0)
				return DPQ_NP_DROP_ARP;
			out->kind = DPQ_NP_NS;
		} else {
			out->na_flags = l4[4] & 0xe0;
			if (dst_mcast && (out->na_flags & DPQ_NP_NA_SOLICITED))
				return DPQ_NP_BAD_ICMP;
			r = parse_nd_opts(l4 + 24, l4_end, 2, out);
			if (r != DPQ_NP_OK)
				return r;
			out->kind = DPQ_NP_NA;
		}
		return DPQ_NP_OK;
	default:
		return DPQ_NP_DROP_ICMP;
	}
}

static enum dpq_np_reason
parse_ipv6(const uint8_t *frame, const uint8_t *p, const uint8_t *end,
		const struct dpq_np_local *loc, unsigned int flags,
		struct dpq_np_pkt *out)
{
	const uint8_t *l4, *l4_end;
	unsigned int plen, i;
	uint8_t nh;
	bool dst_mcast = false;

	if (end - p < DPQ_NP_IPV6_HLEN)
		return DPQ_NP_BAD_TRUNC;
	if ((p[0] >> 4) != 6)
		return DPQ_NP_BAD_IP_HDR;
	plen = rd16(p + 4);
	if (plen > (size_t)(end - p) - DPQ_NP_IPV6_HLEN)
		return DPQ_NP_BAD_TRUNC;
	out->family = AF_INET6;
	out->ecn = (p[1] >> 4) & 0x3;
	out->hop_limit = p[7];
	memcpy(out->src_ip, p + 8, 16);
	memcpy(out->dst_ip, p + 24, 16);
	out->l3_off = (uint16_t)(p - frame);
	if (memcmp(out->dst_ip, loc->ip, 16) != 0) {
		if (memcmp(out->dst_ip, loc->snm, 16) != 0 &&
				memcmp(out->dst_ip, all_nodes6, 16) != 0)
			return DPQ_NP_DROP_ADDR;
		dst_mcast = true;
	}
	if (out->src_ip[0] == 0xff)
		return DPQ_NP_DROP_ADDR;
	nh = p[6];
	l4 = p + DPQ_NP_IPV6_HLEN;
	l4_end = l4 + plen;
	for (i = 0; ; i++) {
		size_t hlen;

		if (nh == DPQ_NP_PROTO_UDP || nh == DPQ_NP_PROTO_ICMPV6)
			break;
		if (nh == 44)
			return DPQ_NP_DROP_FRAG;
		/* Hop-by-Hop (0, first only), Routing (43), Dest Opts (60) */
		if (!((nh == 0 && i == 0) || nh == 43 || nh == 60))
			return nh == 0 ? DPQ_NP_DROP_EXTHDR : DPQ_NP_DROP_PROTO;
		if (i >= DPQ_NP_MAX_EXT6)
			return DPQ_NP_DROP_EXTHDR;
		if (l4_end - l4 < 8)
			return DPQ_NP_BAD_TRUNC;
		hlen = ((size_t)l4[1] + 1) * 8;
		if (hlen > (size_t)(l4_end - l4))
			return DPQ_NP_BAD_TRUNC;
		/* Segments Left != 0: we would have to forward (RFC 8200 §4.4) */
		if (nh == 43 && l4[3] != 0)
			return DPQ_NP_DROP_EXTHDR;
		nh = l4[0];
		l4 += hlen;
	}
	if (nh == DPQ_NP_PROTO_UDP) {
		if (dst_mcast)
			return DPQ_NP_DROP_ADDR;
		return parse_udp(frame, l4, l4_end, loc, flags, out);
	}
	return parse_icmp6(frame, l4, l4_end, loc, dst_mcast, out);
}

enum dpq_np_reason
dpq_np_parse(const uint8_t *p, const uint8_t *end,
		const struct dpq_np_local *loc, unsigned int flags,
		struct dpq_np_pkt *out)
{
	uint16_t type;

	memset(out, 0, sizeof(*out));
	if (p == NULL || end < p || end - p < DPQ_NP_ETH_HLEN)
		return DPQ_NP_BAD_TRUNC;
	memcpy(out->dst_mac, p, 6);
	memcpy(out->src_mac, p + 6, 6);
	type = rd16(p + 12);
	if (type == DPQ_NP_ETHERTYPE_VLAN || type == DPQ_NP_ETHERTYPE_QINQ)
		return DPQ_NP_DROP_VLAN;
	/* unicast for another station (promiscuous port, shared segment) */
	if (!(p[0] & 1) && memcmp(p, loc->mac, 6) != 0)
		return DPQ_NP_DROP_MAC;
	switch (type) {
	case DPQ_NP_ETHERTYPE_ARP:
		if (loc->family != AF_INET)
			return DPQ_NP_DROP_ETHERTYPE;
		return parse_arp(p + DPQ_NP_ETH_HLEN, end, out);
	case DPQ_NP_ETHERTYPE_IPV4:
		if (loc->family != AF_INET)
			return DPQ_NP_DROP_ETHERTYPE;
		return parse_ipv4(p, p + DPQ_NP_ETH_HLEN, end, loc, flags, out);
	case DPQ_NP_ETHERTYPE_IPV6:
		if (loc->family != AF_INET6)
			return DPQ_NP_DROP_ETHERTYPE;
		return parse_ipv6(p, p + DPQ_NP_ETH_HLEN, end, loc, flags, out);
	default:
		return DPQ_NP_DROP_ETHERTYPE;
	}
}

/* ---- building -------------------------------------------------------------- */

static uint8_t *
write_eth(uint8_t *p, const uint8_t dst[6], const uint8_t src[6],
		uint16_t type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	wr16(p + 12, type);
	return p + DPQ_NP_ETH_HLEN;
}

static void
write_ipv4(uint8_t *ip, uint8_t tos, uint16_t tot, uint8_t proto,
		const uint8_t *src, const uint8_t *dst, bool hw_cksum)
{
	ip[0] = 0x45;
	ip[1] = tos;
	wr16(ip + 2, tot);
	wr16(ip + 4, 0);	/* RFC 6864 §4.1: atomic datagram */
	wr16(ip + 6, 0x4000);	/* DF: RFC 9000 §14 */
	ip[8] = DPQ_NP_TTL;
	ip[9] = proto;
	wr16(ip + 10, 0);
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	if (!hw_cksum)
		wr_cksum(ip + 10, dpq_np_ipv4_cksum(ip, DPQ_NP_IPV4_HLEN));
}

static void
write_ipv6(uint8_t *ip, uint8_t tclass, uint16_t plen, uint8_t nh,
		uint8_t hops, const uint8_t *src, const uint8_t *dst)
{
	ip[0] = (uint8_t)(0x60 | (tclass >> 4));
	ip[1] = (uint8_t)(tclass << 4);
	ip[2] = 0;
	ip[3] = 0;
	wr16(ip + 4, plen);
	ip[6] = nh;
	ip[7] = hops;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
}

void
dpq_np_write_udp(uint8_t *frame, const struct dpq_np_udp_args *a,
		uint16_t payload_len, unsigned int flags)
{
	uint16_t ulen = (uint16_t)(payload_len + DPQ_NP_UDP_HLEN);
	uint8_t *ip, *udp;

	if (a->family == AF_INET) {
		ip = write_eth(frame, a->dst_mac, a->src_mac,
				DPQ_NP_ETHERTYPE_IPV4);
		write_ipv4(ip, a->ecn & 0x3,
				(uint16_t)(ulen + DPQ_NP_IPV4_HLEN),
				DPQ_NP_PROTO_UDP, a->src_ip, a->dst_ip,
				flags & DPQ_NP_TX_IP_CKSUM);
		udp = ip + DPQ_NP_IPV4_HLEN;
	} else {
		ip = write_eth(frame, a->dst_mac, a->src_mac,
				DPQ_NP_ETHERTYPE_IPV6);
		write_ipv6(ip, a->ecn & 0x3, ulen, DPQ_NP_PROTO_UDP,
				DPQ_NP_TTL, a->src_ip, a->dst_ip);
		udp = ip + DPQ_NP_IPV6_HLEN;
	}
	wr16(udp, a->sport);
	wr16(udp + 2, a->dport);
	wr16(udp + 4, ulen);
	wr16(udp + 6, 0);
	if (flags & DPQ_NP_TX_UDP_CKSUM)
		/* device convention: the pseudo-header sum, not inverted */
		wr_cksum(udp + 6, dpq_np_fold(dpq_np_pseudo_sum(a->family,
				a->src_ip, a->dst_ip, DPQ_NP_PROTO_UDP, ulen)));
	else
		wr_cksum(udp + 6, dpq_np_l4_cksum(a->family, a->src_ip,
				a->dst_ip, DPQ_NP_PROTO_UDP, udp, ulen));
}

void
dpq_np_set_dst_mac(uint8_t *frame, const uint8_t mac[6])
{
	memcpy(frame, mac, 6);
}

size_t
dpq_np_build_arp(uint8_t *buf, size_t cap, uint16_t op,
		const uint8_t eth_dst[6], const uint8_t sha[6],
		const uint8_t spa[4], const uint8_t *tha, const uint8_t tpa[4])
{
	uint8_t *a;

	if (cap < DPQ_NP_ETH_HLEN + DPQ_NP_ARP_LEN)
		return 0;
	a = write_eth(buf, eth_dst, sha, DPQ_NP_ETHERTYPE_ARP);
	wr16(a, 1);
	wr16(a + 2, DPQ_NP_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	wr16(a + 6, op);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, spa, 4);
	if (tha != NULL)
		memcpy(a + 18, tha, 6);
	else
		memset(a + 18, 0, 6);
	memcpy(a + 24, tpa, 4);
	return DPQ_NP_ETH_HLEN + DPQ_NP_ARP_LEN;
}

/* An NS or NA with one link-layer address option (RFC 4861 §4.3, §4.4). */
static size_t
build_nd(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
		const uint8_t eth_dst[6], const uint8_t src_ip[16],
		const uint8_t dst_ip[16], uint8_t type, uint8_t flags,
		const uint8_t target[16])
{
	uint8_t *ip, *icmp;

	if (cap < DPQ_NP_ETH_HLEN + DPQ_NP_IPV6_HLEN + DPQ_NP_ND_LEN)
		return 0;
	ip = write_eth(buf, eth_dst, src_mac, DPQ_NP_ETHERTYPE_IPV6);
	write_ipv6(ip, 0, DPQ_NP_ND_LEN, DPQ_NP_PROTO_ICMPV6,
			DPQ_NP_ND_HOP_LIMIT, src_ip, dst_ip);
	icmp = ip + DPQ_NP_IPV6_HLEN;
	memset(icmp, 0, DPQ_NP_ND_LEN);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	/* option: 1 source / 2 target link-layer address, length 1 (8 B) */
	icmp[24] = type == DPQ_NP_ICMP6_NS ? 1 : 2;
	icmp[25] = 1;
	memcpy(icmp + 26, src_mac, 6);
	wr_cksum(icmp + 2, dpq_np_l4_cksum(AF_INET6, src_ip, dst_ip,
			DPQ_NP_PROTO_ICMPV6, icmp, DPQ_NP_ND_LEN));
	return DPQ_NP_ETH_HLEN + DPQ_NP_IPV6_HLEN + DPQ_NP_ND_LEN;
}

size_t
dpq_np_build_ns(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
		const uint8_t src_ip[16], const uint8_t target[16])
{
	uint8_t snm[16], mac[6];

	dpq_np_solicited_node(target, snm);
	dpq_np_mcast_mac(snm, mac);
	return build_nd(buf, cap, src_mac, mac, src_ip, snm, DPQ_NP_ICMP6_NS,
			0, target);
}

size_t
dpq_np_build_na(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
		const uint8_t eth_dst[6], const uint8_t target[16],
		const uint8_t dst_ip[16], uint8_t na_flags)
{
	return build_nd(buf, cap, src_mac, eth_dst, target, dst_ip,
			DPQ_NP_ICMP6_NA, na_flags, target);
}

size_t
dpq_np_build_echo_reply(uint8_t *buf, size_t cap, int family,
		const uint8_t src_mac[6], const uint8_t eth_dst[6],
		const uint8_t *src_ip, const uint8_t *dst_ip,
		const uint8_t *msg, size_t msg_len)
{
	size_t ip_hlen = family == AF_INET ? DPQ_NP_IPV4_HLEN :
			DPQ_NP_IPV6_HLEN;
	uint8_t *ip, *icmp;

	if (msg_len < DPQ_NP_ICMP_HLEN ||
			msg_len > 65535 - DPQ_NP_IPV4_HLEN ||
			cap < DPQ_NP_ETH_HLEN + ip_hlen + msg_len)
		return 0;
	if (family == AF_INET) {
		ip = write_eth(buf, eth_dst, src_mac, DPQ_NP_ETHERTYPE_IPV4);
		write_ipv4(ip, 0, (uint16_t)(ip_hlen + msg_len),
				DPQ_NP_PROTO_ICMP, src_ip, dst_ip, false);
	} else {
		ip = write_eth(buf, eth_dst, src_mac, DPQ_NP_ETHERTYPE_IPV6);
		write_ipv6(ip, 0, (uint16_t)msg_len, DPQ_NP_PROTO_ICMPV6,
				DPQ_NP_TTL, src_ip, dst_ip);
	}
	icmp = ip + ip_hlen;
	memmove(icmp, msg, msg_len);
	icmp[0] = family == AF_INET ? DPQ_NP_ICMP_ECHO_REPLY :
			DPQ_NP_ICMP6_ECHO_REPLY;
	icmp[1] = 0;
	wr16(icmp + 2, 0);
	wr_cksum(icmp + 2, dpq_np_l4_cksum(family, src_ip, dst_ip,
			family == AF_INET ? DPQ_NP_PROTO_ICMP :
			DPQ_NP_PROTO_ICMPV6, icmp, msg_len));
	return DPQ_NP_ETH_HLEN + ip_hlen + msg_len;
}
