/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Burst packet unprotection: header protection removal with packet number
 * recovery (RFC 9001 §5.4, RFC 9000 §A.3), then AEAD open (RFC 9001 §5.3)
 * with one status per packet, so a bad tag drops only its own packet.
 */
#include <errno.h>
#include <string.h>

#include "crypto_int.h"

static unsigned
hp_chunk(struct dpq_crypto *cc, struct dpq_open_op *ops, unsigned n)
{
	uint8_t fail[DPQ_CRYPTO_BURST_MAX];
	unsigned i, j, ok = 0;

	for (i = 0; i < n; i++) {
		struct dpq_open_op *op = &ops[i];
		const struct dpq_pp_key *k = op->key;

		cc->hp_key[i] = NULL;
		fail[i] = 0;
		op->pn_len = 0;
		/* RFC 9001 §5.4.2: the sample must exist; a packet too short
		 * for it is dropped, never read past len. */
		if (k == NULL || k->alg == 0 || op->pkt == NULL ||
				op->pn_offset == 0 ||
				(size_t)op->pn_offset + DPQ_CRYPTO_HP_SAMPLE_OFFSET +
				DPQ_CRYPTO_HP_SAMPLE_LEN > op->len) {
			op->status = -EINVAL;
			continue;
		}
		op->status = 0;
		cc->hp_key[i] = k;
		cc->hp_sample[i] = op->pkt + op->pn_offset +
				DPQ_CRYPTO_HP_SAMPLE_OFFSET;
	}
	dpq_crypto_hp_masks(cc, n, fail);
	for (i = 0; i < n; i++) {
		struct dpq_open_op *op = &ops[i];
		const uint8_t *mask = cc->masks[i];
		uint8_t *pkt = op->pkt;
		uint32_t trunc = 0;

		if (cc->hp_key[i] == NULL)
			continue;
		if (fail[i]) {
			op->status = -EIO;
			continue;
		}
		pkt[0] ^= mask[0] & ((pkt[0] & 0x80) ? 0x0f : 0x1f);
		op->first_byte = pkt[0];
		op->pn_len = (uint8_t)((pkt[0] & 0x03) + 1);
		for (j = 0; j < op->pn_len; j++) {
			pkt[op->pn_offset + j] ^= mask[1 + j];
			trunc = (trunc << 8) | pkt[op->pn_offset + j];
		}
		op->pn_trunc = trunc;
		op->pn = dpq_pkt_pn_decode(op->largest_pn, trunc, op->pn_len);
		/* Beyond 2^62 - 1 it cannot be a packet number: drop. */
		if (op->pn > DPQ_PN_MAX) {
			op->status = -EINVAL;
			continue;
		}
		ok++;
	}
	return ok;
}

uint16_t
dpq_crypto_unprotect_hp_burst(struct dpq_crypto *cc, struct dpq_open_op *ops,
		uint16_t n)
{
	unsigned done = 0, c, i;

	if (ops == NULL)
		return 0;
	if (cc == NULL) {
		for (i = 0; i < n; i++)
			ops[i].status = -EINVAL;
		return 0;
	}
	while (n > 0) {
		c = n < DPQ_CRYPTO_BURST_MAX ? n : DPQ_CRYPTO_BURST_MAX;
		done += hp_chunk(cc, ops, c);
		ops += c;
		n -= c;
	}
	return (uint16_t)done;
}

static inline void
open_job_done(struct dpq_crypto *cc, const IMB_JOB *job)
{
	struct dpq_open_op *op = job->user_data;
	unsigned i = (unsigned)(uintptr_t)job->user_data2;

	if (job->status != IMB_STATUS_COMPLETED)
		op->status = -EIO;
	else if (dpq_crypto_tag_cmp(cc->tag[i],
			op->pkt + op->len - DPQ_CRYPTO_TAG_LEN) != 0)
		op->status = -EBADMSG;
	else
		op->status = 0;
}

static unsigned
open_chunk(struct dpq_crypto *cc, struct dpq_open_op *ops, unsigned n)
{
	struct gcm_context_data gctx;
	unsigned i, opened = 0;
	IMB_JOB *job;

	for (i = 0; i < n; i++) {
		struct dpq_open_op *op = &ops[i];
		const struct dpq_pp_key *k = op->key;
		uint8_t *pkt = op->pkt;
		size_t hdr, clen;

		if (op->status != 0)
			continue;
		if (k == NULL || pkt == NULL || op->pn_len == 0 ||
				op->pn_len > DPQ_CRYPTO_PN_LEN_MAX) {
			op->status = -EINVAL;
			continue;
		}
		hdr = (size_t)op->pn_offset + op->pn_len;
		if (hdr + DPQ_CRYPTO_TAG_LEN > op->len) {
			op->status = -EINVAL;
			continue;
		}
		clen = op->len - hdr - DPQ_CRYPTO_TAG_LEN;
		dpq_pp_key_nonce(k, op->pn, cc->nonce[i]);
		switch (k->alg) {
		case DPQ_AEAD_AES_128_GCM:
			IMB_AES128_GCM_DEC(cc->mgr, &k->aead.gcm, &gctx,
					pkt + hdr, pkt + hdr, clen, cc->nonce[i],
					pkt, hdr, cc->tag[i], DPQ_CRYPTO_TAG_LEN);
			break;
		case DPQ_AEAD_AES_256_GCM:
			IMB_AES256_GCM_DEC(cc->mgr, &k->aead.gcm, &gctx,
					pkt + hdr, pkt + hdr, clen, cc->nonce[i],
					pkt, hdr, cc->tag[i], DPQ_CRYPTO_TAG_LEN);
			break;
		case DPQ_AEAD_CHACHA20_POLY1305:
			op->status = -EINPROGRESS;
			job = IMB_GET_NEXT_JOB(cc->mgr);
			dpq_crypto_chacha_job(job, k, pkt, hdr, clen,
					cc->nonce[i], cc->tag[i], 0, op, i);
			job = IMB_SUBMIT_JOB(cc->mgr);
			while (job != NULL) {
				open_job_done(cc, job);
				job = IMB_GET_COMPLETED_JOB(cc->mgr);
			}
			continue;
		default:
			op->status = -EINVAL;
			continue;
		}
		op->status = dpq_crypto_tag_cmp(cc->tag[i],
				pkt + op->len - DPQ_CRYPTO_TAG_LEN) ? -EBADMSG : 0;
	}
	while ((job = IMB_FLUSH_JOB(cc->mgr)) != NULL)
		open_job_done(cc, job);
	for (i = 0; i < n; i++)
		opened += ops[i].status == 0;
	return opened;
}

uint16_t
dpq_crypto_open_burst(struct dpq_crypto *cc, struct dpq_open_op *ops,
		uint16_t n)
{
	unsigned done = 0, c, i;

	if (ops == NULL)
		return 0;
	if (cc == NULL) {
		for (i = 0; i < n; i++)
			if (ops[i].status == 0)
				ops[i].status = -EINVAL;
		return 0;
	}
	while (n > 0) {
		c = n < DPQ_CRYPTO_BURST_MAX ? n : DPQ_CRYPTO_BURST_MAX;
		done += open_chunk(cc, ops, c);
		ops += c;
		n -= c;
	}
	return (uint16_t)done;
}
