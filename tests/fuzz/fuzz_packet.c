/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet headers (RFC 9000 §17, RFC 8999): walk a datagram of coalesced
 * packets the way a receiver does; each header must stay inside the
 * datagram, long headers must survive being written again from their
 * parsed fields, VN lists and Retry pseudo-packets must be readable, and
 * packet number recovery (Appendix A.3) must invert the encoder's choice.
 * The first input byte picks the short-header DCID length.
 */
#include "dataplane/crypto/retry.h"
#include "dataplane/engine/packet.h"
#include "fuzz.h"

static struct dpq_crypto *cc;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cc = dpq_crypto_create();
	return cc == NULL;
}

static void
rewrite_long(const struct dpq_pkt_hdr *h)
{
	uint8_t buf[2048], *lenf, *pl;
	struct dpq_pkt_long_desc d = { 0 };
	struct dpq_pkt_hdr g;

	d.type = h->type;
	d.version = h->version;
	d.dcid = h->dcid;
	d.dcid_len = h->dcid_len;
	d.scid = h->scid;
	d.scid_len = h->scid_len;
	d.token = h->token;
	d.token_len = h->type == DPQ_PKT_INITIAL ? h->token_len : 0;
	d.pn = 0;
	d.pn_len = 4;
	pl = dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lenf);
	if (pl == NULL)
		return;		/* e.g. a token too long for this buffer */
	memset(pl, 0, 20);
	FUZZ_CHECK(dpq_pkt_patch_length(lenf, 24) == 0);
	FUZZ_CHECK(dpq_pkt_parse(buf, pl + 20, 8, &g) == 0);
	FUZZ_CHECK(g.type == h->type && g.version == h->version);
	FUZZ_CHECK(g.dcid_len == h->dcid_len &&
			memcmp(g.dcid, h->dcid, h->dcid_len) == 0);
	FUZZ_CHECK(g.scid_len == h->scid_len &&
			memcmp(g.scid, h->scid, h->scid_len) == 0);
	FUZZ_CHECK(g.token_len == d.token_len &&
			(d.token_len == 0 ||
			 memcmp(g.token, h->token, d.token_len) == 0));
	FUZZ_CHECK(g.pkt_len == (size_t)(pl + 20 - buf));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t dcid_lens[4] = { 0, 8, 16, 20 };
	const uint8_t *p, *end = data + size;
	size_t short_len;

	if (size < 1)
		return 0;
	short_len = dcid_lens[data[0] & 3];
	p = data + 1;
	while (p < end) {
		struct dpq_pkt_hdr h;
		size_t left = (size_t)(end - p), i;
		int rc = dpq_pkt_parse(p, end, short_len, &h);

		if (rc == DPQ_ERR_VERSION) {
			FUZZ_CHECK(h.type == DPQ_PKT_VERSION_UNKNOWN);
			FUZZ_CHECK(h.pkt_len == left);
			(void)dpq_pkt_vn_should_send(&h, left);
			break;
		}
		if (rc != 0)
			break;
		FUZZ_CHECK(h.pkt_len > 0 && h.pkt_len <= left);
		switch (h.type) {
		case DPQ_PKT_INITIAL:
		case DPQ_PKT_0RTT:
		case DPQ_PKT_HANDSHAKE:
			FUZZ_CHECK(h.pn_offset + 4 + 16 <= h.pkt_len);
			rewrite_long(&h);
			break;
		case DPQ_PKT_1RTT:
			FUZZ_CHECK(h.pkt_len == left);
			FUZZ_CHECK(h.dcid_len == short_len);
			break;
		case DPQ_PKT_VN:
			for (i = 0; i < h.vn_count; i++)
				(void)dpq_pkt_vn_version(&h, i);
			(void)dpq_pkt_vn_has_version(&h, DPQ_VERSION_1);
			break;
		case DPQ_PKT_RETRY: {
			uint8_t pseudo[4096];

			FUZZ_CHECK(h.token_len >= 1);
			if (dpq_pkt_retry_pseudo(pseudo, pseudo + sizeof(pseudo),
					h.dcid, h.dcid_len, p,
					h.pkt_len - DPQ_RETRY_TAG_LEN) != NULL)
				(void)dpq_retry_tag_verify(cc, h.dcid,
						h.dcid_len, p, h.pkt_len);
			break;
		}
		default:
			FUZZ_CHECK(0);
		}
		(void)dpq_pkt_check_reserved_bits(h.first);
		p += h.pkt_len;
	}
	/* Packet numbers: the encoder's length lets the decoder recover pn
	 * from the largest acknowledged (Appendix A.2, A.3). */
	if (size >= 17) {
		uint64_t pn, largest;
		size_t n;

		memcpy(&pn, data + 1, 8);
		memcpy(&largest, data + 9, 8);
		pn &= DPQ_PN_MAX;
		largest &= DPQ_PN_MAX;
		if (largest < pn && pn - largest < (1u << 30)) {
			n = dpq_pkt_pn_encode_len(pn, largest);
			FUZZ_CHECK(dpq_pkt_pn_decode(largest, pn &
					((UINT64_C(1) << (8 * n)) - 1), n) ==
					pn);
		}
	}
	return 0;
}
