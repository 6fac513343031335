/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netproto parses and builds the Ethernet, ARP, IPv4, IPv6, UDP, ICMP and
 * ICMPv6 (echo, Neighbor Discovery) headers the DPDK driver needs. Pure
 * functions on byte buffers: no EAL, no mbufs, so every rule is unit-tested
 * in memory (tests/drivers/test_dpdk_netproto.c).
 *
 * Parsers take (p, end) and never read at or past end. Wire integers are read
 * and written byte by byte or with memcpy (no unaligned access).
 *
 * Checksums: dpq_np_sum() adds 16-bit words as they lie in memory (native
 * loads); the folded result is stored back with a native 16-bit store, which
 * gives the network-order checksum on any host (RFC 1071 §2(B)).
 *
 * Policy decisions (why, in netproto.c):
 * - 802.1Q tagged frames are dropped (DPQ_NP_DROP_VLAN): the driver
 *   transmits untagged, so a tagged peer could not be answered anyway.
 * - IPv4 fragments and IPv6 Fragment headers are dropped (DPQ_NP_DROP_FRAG):
 *   QUIC never fragments (RFC 9000 §14), so a fragment is an attack or a
 *   misconfigured path, not a datagram to reassemble.
 * - IPv6 Hop-by-Hop, Destination Options and Routing headers with Segments
 *   Left 0 are skipped; every other extension header is dropped.
 */
#ifndef DPQ_NETPROTO_H
#define DPQ_NETPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define DPQ_NP_ETH_HLEN		14
#define DPQ_NP_VLAN_HLEN	4
#define DPQ_NP_IPV4_HLEN	20	/* without options */
#define DPQ_NP_IPV6_HLEN	40
#define DPQ_NP_UDP_HLEN		8
#define DPQ_NP_ARP_LEN		28	/* Ethernet/IPv4 ARP body */
#define DPQ_NP_ND_LEN		32	/* NS/NA with one link-layer option */
#define DPQ_NP_ICMP_HLEN	8	/* echo header */
#define DPQ_NP_ND_HOP_LIMIT	255	/* RFC 4861 §7.1.1 */
#define DPQ_NP_TTL		64
#define DPQ_NP_MAX_EXT6		8	/* IPv6 extension headers walked at most */

#define DPQ_NP_ETHERTYPE_IPV4	0x0800
#define DPQ_NP_ETHERTYPE_ARP	0x0806
#define DPQ_NP_ETHERTYPE_VLAN	0x8100
#define DPQ_NP_ETHERTYPE_QINQ	0x88a8
#define DPQ_NP_ETHERTYPE_IPV6	0x86dd

#define DPQ_NP_PROTO_ICMP	1
#define DPQ_NP_PROTO_UDP	17
#define DPQ_NP_PROTO_ICMPV6	58

#define DPQ_NP_ARP_REQUEST	1
#define DPQ_NP_ARP_REPLY	2

#define DPQ_NP_ICMP_ECHO_REPLY		0
#define DPQ_NP_ICMP_ECHO_REQUEST	8
#define DPQ_NP_ICMP6_ECHO_REQUEST	128
#define DPQ_NP_ICMP6_ECHO_REPLY		129
#define DPQ_NP_ICMP6_NS			135
#define DPQ_NP_ICMP6_NA			136

/* NA flags (first byte after the ICMPv6 header), RFC 4861 §4.4 */
#define DPQ_NP_NA_ROUTER	0x80
#define DPQ_NP_NA_SOLICITED	0x40
#define DPQ_NP_NA_OVERRIDE	0x20

/* ff:ff:ff:ff:ff:ff */
extern const uint8_t dpq_np_bcast_mac[6];

/* Why a frame was not delivered; DPQ_NP_OK when it was for us. The first
 * group counts as rx_bad (malformed), the second as rx_dropped (well formed
 * but not ours). Keep dpq_np_reason_name() in step. */
enum dpq_np_reason {
	DPQ_NP_OK = 0,
	DPQ_NP_BAD_TRUNC,	/* shorter than its own headers */
	DPQ_NP_BAD_IP_HDR,	/* version, header length, total length */
	DPQ_NP_BAD_IP_CKSUM,
	DPQ_NP_BAD_UDP_LEN,	/* UDP length vs IP payload */
	DPQ_NP_BAD_UDP_CKSUM,	/* includes IPv6 checksum 0 */
	DPQ_NP_BAD_ICMP,	/* ICMP/ND checksum, length, hop limit, options */
	DPQ_NP_BAD_ARP,		/* ARP with wrong sizes or addresses */
	DPQ_NP_DROP_VLAN,	/* 802.1Q / 802.1ad tagged */
	DPQ_NP_DROP_ETHERTYPE,	/* not IPv4, IPv6 or ARP (or wrong family) */
	DPQ_NP_DROP_MAC,	/* unicast frame for another MAC */
	DPQ_NP_DROP_FRAG,	/* IPv4 fragment or IPv6 Fragment header */
	DPQ_NP_DROP_EXTHDR,	/* IPv6 extension header we do not walk */
	DPQ_NP_DROP_PROTO,	/* IP protocol other than UDP / ICMP(v6) */
	DPQ_NP_DROP_ADDR,	/* IP destination not ours */
	DPQ_NP_DROP_PORT,	/* UDP destination port not ours */
	DPQ_NP_DROP_ICMP,	/* ICMP type we do not handle */
	DPQ_NP_DROP_ARP,	/* ARP / ND about another address */
	DPQ_NP_DROP_MSEG,	/* multi-segment mbuf (driver only) */
	DPQ_NP_BAD_HW_CKSUM,	/* device flagged a bad checksum (driver only) */
	DPQ_NP_REASON_MAX
};

static inline bool
dpq_np_reason_is_bad(enum dpq_np_reason r)
{
	return (r >= DPQ_NP_BAD_TRUNC && r <= DPQ_NP_BAD_ARP) ||
		r == DPQ_NP_BAD_HW_CKSUM;
}

const char *dpq_np_reason_name(enum dpq_np_reason r);

/* What the parser found for us. */
enum dpq_np_kind {
	DPQ_NP_NONE = 0,
	DPQ_NP_UDP,	/* UDP datagram to our address and port */
	DPQ_NP_ARP,	/* ARP request or reply (learn; answer requests for us) */
	DPQ_NP_NS,	/* Neighbor Solicitation for our address */
	DPQ_NP_NA,	/* Neighbor Advertisement (learn) */
	DPQ_NP_ECHO,	/* ICMP / ICMPv6 echo request to our address */
};

/* The identity the parser checks frames against. */
struct dpq_np_local {
	uint8_t mac[6];
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint16_t port;		/* UDP port, host order */
	uint8_t ip[16];		/* 4 or 16 bytes used */
	uint8_t snm[16];	/* IPv6 solicited-node multicast of ip */
};

/* Parse flags: what the device already verified. */
#define DPQ_NP_IP_CKSUM_OK	0x1	/* skip the IPv4 header checksum */
#define DPQ_NP_L4_CKSUM_OK	0x2	/* skip the UDP checksum */

struct dpq_np_pkt {
	uint8_t kind;		/* enum dpq_np_kind */
	uint8_t family;		/* AF_INET / AF_INET6 */
	uint8_t ecn;		/* ECN bits of the IP header */
	uint8_t has_lladdr;	/* lladdr valid (ARP sha, ND SLLA/TLLA) */
	uint8_t na_flags;	/* NA: R/S/O */
	uint8_t hop_limit;	/* IPv4 TTL / IPv6 hop limit */
	uint16_t arp_op;
	uint16_t l3_off;	/* offsets from the frame start */
	uint16_t l4_off;
	uint16_t payload_off;	/* UDP payload, or ICMP message (ECHO) */
	uint16_t payload_len;
	uint16_t sport, dport;	/* UDP, host order */
	uint8_t src_mac[6], dst_mac[6];
	uint8_t src_ip[16], dst_ip[16];
	uint8_t target[16];	/* ARP tpa / ND target */
	uint8_t lladdr[6];
};

/* Parse one Ethernet frame [p, end) against loc. Returns DPQ_NP_OK with out
 * filled when the frame is for us (out->kind says what it is), else the
 * reason it must be dropped. Never reads outside [p, end). */
enum dpq_np_reason dpq_np_parse(const uint8_t *p, const uint8_t *end,
		const struct dpq_np_local *loc, unsigned int flags,
		struct dpq_np_pkt *out);

/* ---- checksums ----------------------------------------------------------- */

/* Add the 16-bit words of buf (native loads) to sum; an odd last byte is
 * padded with zero. Not folded: callers fold with dpq_np_fold(). */
uint64_t dpq_np_sum(const void *buf, size_t len, uint64_t sum);

/* Fold a sum to 16 bits (not inverted). */
uint16_t dpq_np_fold(uint64_t sum);

/* Sum of the UDP/ICMPv6 pseudo-header (RFC 768, RFC 8200 §8.1), not folded. */
uint64_t dpq_np_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst,
		uint8_t proto, uint32_t l4_len);

/* IPv4 header checksum to store in the header (checksum field as 0 or not:
 * the field is skipped). hlen is the header length in bytes. */
uint16_t dpq_np_ipv4_cksum(const uint8_t *hdr, size_t hlen);

/* The checksum to store in a UDP / ICMPv6 header (the field itself is
 * skipped). UDP results of 0 are returned as 0xffff (RFC 768). */
uint16_t dpq_np_l4_cksum(int family, const uint8_t *src, const uint8_t *dst,
		uint8_t proto, const uint8_t *l4, size_t len);

/* ---- builders -------------------------------------------------------------- */

/* Length of Ethernet + IP + UDP headers for a family (0 if unknown). */
static inline size_t
dpq_np_udp_hdr_len(int family)
{
	return family == AF_INET ?
		DPQ_NP_ETH_HLEN + DPQ_NP_IPV4_HLEN + DPQ_NP_UDP_HLEN :
		family == AF_INET6 ?
		DPQ_NP_ETH_HLEN + DPQ_NP_IPV6_HLEN + DPQ_NP_UDP_HLEN : 0;
}

struct dpq_np_udp_args {
	uint8_t family;
	uint8_t ecn;
	uint16_t sport, dport;	/* host order */
	uint8_t src_mac[6], dst_mac[6];
	const uint8_t *src_ip, *dst_ip;
};

/* Build flags: what the device will compute. */
#define DPQ_NP_TX_IP_CKSUM	0x1	/* leave the IPv4 checksum 0 */
#define DPQ_NP_TX_UDP_CKSUM	0x2	/* store the pseudo-header sum only */

/* Write Ethernet + IP + UDP headers at frame; the payload (payload_len
 * bytes) must already be at frame + dpq_np_udp_hdr_len(). IPv4 gets DF set
 * (RFC 9000 §14) and identification 0 (RFC 6864 §4.1: atomic datagram). */
void dpq_np_write_udp(uint8_t *frame, const struct dpq_np_udp_args *a,
		uint16_t payload_len, unsigned int flags);

/* Write dst_mac into an already built frame (after neighbour resolution). */
void dpq_np_set_dst_mac(uint8_t *frame, const uint8_t mac[6]);

/* ARP packet (Ethernet + 28 bytes). eth_dst is the frame's destination
 * (broadcast for requests); tha may be NULL (zero). Returns the length or 0
 * when cap is too small. */
size_t dpq_np_build_arp(uint8_t *buf, size_t cap, uint16_t op,
		const uint8_t eth_dst[6], const uint8_t sha[6],
		const uint8_t spa[4], const uint8_t *tha, const uint8_t tpa[4]);

/* Neighbor Solicitation for target from src_ip, with a source link-layer
 * address option, sent to the target's solicited-node multicast address
 * (RFC 4861 §7.2.2). Returns the length or 0. */
size_t dpq_np_build_ns(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
		const uint8_t src_ip[16], const uint8_t target[16]);

/* Neighbor Advertisement for target (our address) with a target link-layer
 * address option (RFC 4861 §7.2.4). Returns the length or 0. */
size_t dpq_np_build_na(uint8_t *buf, size_t cap, const uint8_t src_mac[6],
		const uint8_t eth_dst[6], const uint8_t target[16],
		const uint8_t dst_ip[16], uint8_t na_flags);

/* Echo reply for an echo request message msg (ICMP or ICMPv6 header and
 * data, msg_len bytes). Returns the length or 0. */
size_t dpq_np_build_echo_reply(uint8_t *buf, size_t cap, int family,
		const uint8_t src_mac[6], const uint8_t eth_dst[6],
		const uint8_t *src_ip, const uint8_t *dst_ip,
		const uint8_t *msg, size_t msg_len);

/* ff02::1:ffXX:XXXX for ip (RFC 4291 §2.7.1). */
void dpq_np_solicited_node(const uint8_t ip[16], uint8_t out[16]);

/* 33:33:xx:xx:xx:xx for an IPv6 multicast address (RFC 2464 §7). */
void dpq_np_mcast_mac(const uint8_t ip6[16], uint8_t mac[6]);

/* True when a and b agree on their first prefix_len bits. */
bool dpq_np_same_prefix(const uint8_t *a, const uint8_t *b,
		unsigned int prefix_len);

#endif /* DPQ_NETPROTO_H */
