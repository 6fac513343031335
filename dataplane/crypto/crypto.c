/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-thread crypto context (ipsec-mb manager and burst scratch), AES-ECB
 * helpers and header-protection mask computation (RFC 9001 §5.4.3-§5.4.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "crypto_int.h"

/* RFC 9001 §5.8: Retry integrity key for QUIC v1. */
static const uint8_t retry_key_v1[16] = {
	0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a,
	0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
};

/* Upper bound for one ECB call: 64 KiB of blocks. */
#define DPQ_ECB_BLOCKS_MAX 4096

struct dpq_crypto *
dpq_crypto_create(void)
{
	struct dpq_crypto *cc;

	cc = aligned_alloc(64, sizeof(*cc));
	if (cc == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(cc, 0, sizeof(*cc));
	cc->mgr = alloc_mb_mgr(0);
	if (cc->mgr == NULL) {
		free(cc);
		errno = ENOMEM;
		return NULL;
	}
	/* env-probe §9.16: never force an arch, let ipsec-mb pick. */
	init_mb_mgr_auto(cc->mgr, &cc->arch);
	if (imb_get_errno(cc->mgr) != 0 || cc->arch == IMB_ARCH_NONE) {
		free_mb_mgr(cc->mgr);
		free(cc);
		errno = ENOTSUP;
		return NULL;
	}
	IMB_AES128_GCM_PRE(cc->mgr, retry_key_v1, &cc->retry_key);
	return cc;
}

void
dpq_crypto_destroy(struct dpq_crypto *cc)
{
	if (cc == NULL)
		return;
	free_mb_mgr(cc->mgr);
	/* Scratch held plaintext samples and tags of recent packets. */
	gnutls_memset(cc, 0, sizeof(*cc));
	free(cc);
}

const char *
dpq_crypto_arch_name(const struct dpq_crypto *cc)
{
	switch (cc->arch) {
	case IMB_ARCH_NOAESNI:
		return "noaesni";
	case IMB_ARCH_SSE:
		return "sse";
	case IMB_ARCH_AVX:
		return "avx";
	case IMB_ARCH_AVX2:
		return "avx2";
	case IMB_ARCH_AVX512:
		return "avx512";
	default:
		return "none";
	}
}

int
dpq_aes_key_init(struct dpq_crypto *cc, struct dpq_aes_key *k,
		const uint8_t *raw, size_t raw_len)
{
	/* ipsec-mb always writes a decryption schedule too; ECB-encrypt-only
	 * users do not need it. */
	uint8_t dec[15 * 16] __attribute__((aligned(16)));

	if (cc == NULL || k == NULL || raw == NULL)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	if (raw_len == 16)
		IMB_AES_KEYEXP_128(cc->mgr, raw, k->enc, dec);
	else if (raw_len == 32)
		IMB_AES_KEYEXP_256(cc->mgr, raw, k->enc, dec);
	else
		return -EINVAL;
	k->key_len = (uint8_t)raw_len;
	gnutls_memset(dec, 0, sizeof(dec));
	return 0;
}

void
dpq_aes_key_destroy(struct dpq_aes_key *k)
{
	if (k != NULL)
		gnutls_memset(k, 0, sizeof(*k));
}

/* One synchronous AES-ECB job. The manager's queue is empty on entry
 * (every user here drains it), so a flush returns this job. */
static int
ecb_job(struct dpq_crypto *cc, const struct dpq_aes_key *k,
		const uint8_t *in, uint8_t *out, size_t len)
{
	IMB_JOB *job = IMB_GET_NEXT_JOB(cc->mgr);

	job->cipher_mode = IMB_CIPHER_ECB;
	job->cipher_direction = IMB_DIR_ENCRYPT;
	job->chain_order = IMB_ORDER_CIPHER_HASH;
	job->hash_alg = IMB_AUTH_NULL;
	job->enc_keys = k->enc;
	job->dec_keys = k->enc;
	job->key_len_in_bytes = k->key_len;
	job->src = in;
	job->dst = out;
	job->cipher_start_src_offset_in_bytes = 0;
	job->msg_len_to_cipher_in_bytes = len;
	job->iv = NULL;
	job->iv_len_in_bytes = 0;
	job->user_data = NULL;
	job = IMB_SUBMIT_JOB(cc->mgr);
	if (job == NULL)
		job = IMB_FLUSH_JOB(cc->mgr);
	if (job == NULL || job->status != IMB_STATUS_COMPLETED)
		return -EIO;
	return 0;
}

int
dpq_crypto_aes_ecb_encrypt(struct dpq_crypto *cc, const struct dpq_aes_key *k,
		const uint8_t *in, uint8_t *out, size_t nblocks)
{
	if (cc == NULL || k == NULL || in == NULL || out == NULL ||
			nblocks == 0 || nblocks > DPQ_ECB_BLOCKS_MAX ||
			(k->key_len != 16 && k->key_len != 32))
		return -EINVAL;
	return ecb_job(cc, k, in, out, nblocks * 16);
}

/* ChaCha20 HP (RFC 9001 §5.4.4): the 16-byte sample is the block counter
 * (4 bytes, little endian) followed by the nonce, exactly the IV layout of
 * GnuTLS's CHACHA20_32; the mask is the keystream, i.e. ChaCha20(zeros). */
static int
chacha_mask(const struct dpq_pp_key *key, const uint8_t *sample, uint8_t *mask)
{
	static const uint8_t zeros[DPQ_HP_MASK_LEN];
	gnutls_cipher_hd_t h = key->hp_chacha;
	uint8_t iv[16];

	memcpy(iv, sample, sizeof(iv));
	gnutls_cipher_set_iv(h, iv, sizeof(iv));
	if (gnutls_cipher_encrypt2(h, zeros, DPQ_HP_MASK_LEN, mask,
			DPQ_HP_MASK_LEN) < 0)
		return -EIO;
	return 0;
}

int
dpq_crypto_hp_masks(struct dpq_crypto *cc, unsigned n, uint8_t *fail)
{
	/* Samples of one AES key go contiguously into cc->samples; idx[]
	 * remembers which packet each block belongs to. */
	uint8_t idx[DPQ_CRYPTO_BURST_MAX];
	uint64_t done = 0;
	unsigned i, j, m;
	int rc = 0;

	for (i = 0; i < n; i++) {
		const struct dpq_pp_key *k = cc->hp_key[i];

		if (k == NULL || (done >> i) & 1)
			continue;
		if (k->alg == DPQ_AEAD_CHACHA20_POLY1305) {
			if (chacha_mask(k, cc->hp_sample[i], cc->masks[i]) != 0) {
				fail[i] = 1;
				rc = -EIO;
			}
			continue;
		}
		/* Gather every later packet with the same HP key. */
		m = 0;
		for (j = i; j < n; j++) {
			if (cc->hp_key[j] != k || ((done >> j) & 1))
				continue;
			done |= UINT64_C(1) << j;
			memcpy(cc->samples[m], cc->hp_sample[j], 16);
			idx[m++] = (uint8_t)j;
		}
		if (ecb_job(cc, &k->hp_aes, cc->samples[0], cc->samples[0],
				(size_t)m * 16) != 0) {
			for (j = 0; j < m; j++)
				fail[idx[j]] = 1;
			rc = -EIO;
			continue;
		}
		for (j = 0; j < m; j++)
			memcpy(cc->masks[idx[j]], cc->samples[j], DPQ_HP_MASK_LEN);
	}
	return rc;
}
