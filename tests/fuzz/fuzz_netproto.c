/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK driver's L2-L4 parser (drivers/dpdk/netproto.c): any frame
 * gives a verdict without reading outside it; an accepted frame's offsets
 * and lengths lie inside it and agree with its kind. The first input byte
 * picks the local identity (IPv4 or IPv6) and the offload flags.
 */
#include <sys/socket.h>

#include "drivers/dpdk/netproto.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t ip4[4] = { 198, 18, 0, 2 };
	static const uint8_t ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 2 };
	struct dpq_np_local loc = { 0 };
	struct dpq_np_pkt pkt;
	enum dpq_np_reason r;
	uint8_t *copy;
	size_t n;

	if (size < 1)
		return 0;
	memcpy(loc.mac, mac, 6);
	loc.port = 4433;
	if (data[0] & 1) {
		loc.family = AF_INET6;
		memcpy(loc.ip, ip6, 16);
		dpq_np_solicited_node(loc.ip, loc.snm);
	} else {
		loc.family = AF_INET;
		memcpy(loc.ip, ip4, 4);
	}
	/* An exact-size copy: ASan sees any read past the frame. */
	n = size - 1;
	copy = malloc(n ? n : 1);
	FUZZ_CHECK(copy != NULL);
	memcpy(copy, data + 1, n);
	memset(&pkt, 0, sizeof(pkt));
	r = dpq_np_parse(copy, copy + n, &loc, (data[0] >> 1) & 3, &pkt);
	FUZZ_CHECK(dpq_np_reason_name(r) != NULL);
	if (r == DPQ_NP_OK) {
		FUZZ_CHECK(pkt.kind != DPQ_NP_NONE);
		if (pkt.kind == DPQ_NP_UDP || pkt.kind == DPQ_NP_ECHO) {
			FUZZ_CHECK(pkt.l3_off >= DPQ_NP_ETH_HLEN);
			FUZZ_CHECK(pkt.l4_off > pkt.l3_off);
			FUZZ_CHECK(pkt.payload_off >= pkt.l4_off);
			FUZZ_CHECK((size_t)pkt.payload_off + pkt.payload_len <=
					n);
			FUZZ_CHECK(pkt.family == loc.family);
		}
		if (pkt.kind == DPQ_NP_UDP)
			FUZZ_CHECK(pkt.dport == loc.port);
	}
	free(copy);
	return 0;
}
