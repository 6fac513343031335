/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the crypto module's files: the per-thread context and
 * the header-protection mask helper. Not for use outside dataplane/crypto.
 */
#ifndef DPQ_CRYPTO_CRYPTO_INT_H
#define DPQ_CRYPTO_CRYPTO_INT_H

#include <stdint.h>

#include <intel-ipsec-mb.h>

#include "crypto.h"
#include "pp_key.h"

/* RFC 9001 §5.8: Retry pseudo-packet = ODCID length, ODCID, Retry packet
 * without its tag; we bound the Retry packet by a maximum datagram. */
#define DPQ_RETRY_PKT_MAX 1500
#define DPQ_RETRY_PSEUDO_MAX (1 + DPQ_CRYPTO_CID_MAX + DPQ_RETRY_PKT_MAX)

/* HP mask bytes used: 1 for the first byte, up to 4 for the pn. */
#define DPQ_HP_MASK_LEN 5

struct dpq_crypto {
	IMB_MGR *mgr;
	IMB_ARCH arch;
	/* Per burst chunk scratch (index = op index within the chunk). */
	uint8_t samples[DPQ_CRYPTO_BURST_MAX][16] __attribute__((aligned(64)));
	uint8_t masks[DPQ_CRYPTO_BURST_MAX][16] __attribute__((aligned(64)));
	uint8_t nonce[DPQ_CRYPTO_BURST_MAX][16] __attribute__((aligned(16)));
	uint8_t tag[DPQ_CRYPTO_BURST_MAX][16] __attribute__((aligned(16)));
	const struct dpq_pp_key *hp_key[DPQ_CRYPTO_BURST_MAX];
	const uint8_t *hp_sample[DPQ_CRYPTO_BURST_MAX];
	/* RFC 9001 §5.8 Retry integrity key, precomputed once. */
	struct gcm_key_data retry_key;
	uint8_t retry_pseudo[DPQ_RETRY_PSEUDO_MAX];
} __attribute__((aligned(64)));

/*
 * Compute the header protection masks of n (<= DPQ_CRYPTO_BURST_MAX)
 * packets into cc->masks[i]: cc->hp_key[i] and cc->hp_sample[i] give each
 * packet's key and 16-byte sample; a NULL key skips slot i. AES masks of
 * the same key come from one ECB job. Returns 0 or -EIO; on -EIO fail[i]
 * is set to 1 for the slots without a mask.
 */
int
dpq_crypto_hp_masks(struct dpq_crypto *cc, unsigned n, uint8_t *fail);

/*
 * Fill a ChaCha20-Poly1305 job for the packet pkt (AAD = its hdr_len
 * header, text in place after it), nonce, tag output; op and slot i are
 * stored in user_data / user_data2.
 */
void
dpq_crypto_chacha_job(IMB_JOB *job, const struct dpq_pp_key *key,
		uint8_t *pkt, size_t hdr_len, size_t text_len,
		const uint8_t *nonce, uint8_t *tag, int encrypt,
		void *op, unsigned i);

/* Constant-time comparison of two 16-byte tags: 0 when equal. */
static inline int
dpq_crypto_tag_cmp(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	unsigned i;

	for (i = 0; i < DPQ_CRYPTO_TAG_LEN; i++)
		d |= a[i] ^ b[i];
	return d;
}

#endif /* DPQ_CRYPTO_CRYPTO_INT_H */
