/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Retry integrity tag (RFC 9001 §5.8) with ipsec-mb AES-128-GCM; the key's
 * GCM tables are precomputed once in struct dpq_crypto.
 */
#include <errno.h>
#include <string.h>

#include "crypto_int.h"
#include "retry.h"

/* RFC 9001 §5.8: nonce for QUIC v1. */
static const uint8_t retry_nonce_v1[DPQ_CRYPTO_IV_LEN] = {
	0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2,
	0x23, 0x98, 0x25, 0xbb,
};

int
dpq_retry_tag_compute(struct dpq_crypto *cc, const uint8_t *odcid,
		size_t odcid_len, const uint8_t *retry, size_t retry_len,
		uint8_t tag[DPQ_RETRY_TAG_LEN])
{
	struct gcm_context_data gctx;
	uint8_t *p;
	size_t len;

	if (cc == NULL || tag == NULL || (odcid == NULL && odcid_len) ||
			odcid_len > DPQ_CRYPTO_CID_MAX || retry == NULL)
		return -EINVAL;
	if (retry_len > DPQ_RETRY_PKT_MAX)
		return -EMSGSIZE;
	p = cc->retry_pseudo;
	p[0] = (uint8_t)odcid_len;
	if (odcid_len)
		memcpy(p + 1, odcid, odcid_len);
	memcpy(p + 1 + odcid_len, retry, retry_len);
	len = 1 + odcid_len + retry_len;
	/* Empty plaintext: the tag is a GMAC of the pseudo-packet. */
	IMB_AES128_GCM_ENC(cc->mgr, &cc->retry_key, &gctx, p + len, p + len, 0,
			retry_nonce_v1, p, len, tag, DPQ_RETRY_TAG_LEN);
	return 0;
}

int
dpq_retry_tag_verify(struct dpq_crypto *cc, const uint8_t *odcid,
		size_t odcid_len, const uint8_t *pkt, size_t pkt_len)
{
	uint8_t tag[DPQ_RETRY_TAG_LEN];
	int rc;

	if (pkt == NULL || pkt_len < DPQ_RETRY_TAG_LEN)
		return -EINVAL;
	rc = dpq_retry_tag_compute(cc, odcid, odcid_len, pkt,
			pkt_len - DPQ_RETRY_TAG_LEN, tag);
	if (rc != 0)
		return rc;
	return dpq_crypto_tag_cmp(tag, pkt + pkt_len - DPQ_RETRY_TAG_LEN) ?
			-EBADMSG : 0;
}
