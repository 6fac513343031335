/* SPDX-License-Identifier: BSD-3-Clause */
/* See peer_seal.h. */
#include <stdlib.h>
#include <string.h>

#include "peer_seal.h"

struct dpq_pp_key *
peer_key_new(void)
{
	void *mem;

	if (posix_memalign(&mem, 64, sizeof(struct dpq_pp_key)) != 0)
		return NULL;
	memset(mem, 0, sizeof(struct dpq_pp_key));
	return mem;
}

void
peer_key_free(struct dpq_pp_key *k)
{
	if (k == NULL)
		return;
	dpq_pp_key_destroy(k);
	free(k);
}

struct dpq_pp_key *
peer_key_initial(struct dpq_crypto *cc, const struct dpq_cid *dcid,
		bool server)
{
	struct dpq_pp_key *k = peer_key_new();

	if (k != NULL && dpq_pp_key_init_initial(cc, k, dcid->bytes,
			dcid->len, server) != 0) {
		peer_key_free(k);
		return NULL;
	}
	return k;
}

struct dpq_pp_key *
peer_key_secret(struct dpq_crypto *cc, uint16_t suite, const uint8_t *secret,
		size_t len)
{
	struct dpq_pp_key *k = peer_key_new();
	enum dpq_aead alg;

	if (k == NULL || dpq_aead_from_tls_suite(suite, &alg) != 0 ||
	    dpq_pp_key_init(cc, k, alg, secret, len) != 0) {
		peer_key_free(k);
		return NULL;
	}
	return k;
}

ssize_t
peer_seal(struct dpq_crypto *cc, const struct dpq_pp_key *key,
		const struct peer_pkt *pk, uint8_t *buf, size_t cap)
{
	const size_t pn_len = 4;
	uint8_t *end, *pl, *lenf = NULL, *p;
	struct dpq_seal_op op = { 0 };
	size_t used;

	if (cap < DPQ_CRYPTO_TAG_LEN + 64 || cap > UINT16_MAX)
		return -1;
	end = buf + cap - DPQ_CRYPTO_TAG_LEN;
	if (pk->type == DPQ_PKT_1RTT) {
		pl = dpq_pkt_write_short(buf, end, pk->dcid->bytes,
				pk->dcid->len, false, pk->key_phase, pk->pn,
				pn_len);
	} else {
		struct dpq_pkt_long_desc d = { 0 };

		d.type = pk->type;
		d.version = DPQ_VERSION_1;
		d.dcid = pk->dcid->bytes;
		d.dcid_len = pk->dcid->len;
		d.scid = pk->scid != NULL ? pk->scid->bytes : NULL;
		d.scid_len = pk->scid != NULL ? pk->scid->len : 0;
		d.token = pk->token;
		d.token_len = pk->token_len;
		d.pn = pk->pn;
		d.pn_len = pn_len;
		pl = dpq_pkt_write_long(buf, end, &d, &lenf);
	}
	if (pl == NULL || pk->frames_len > (size_t)(end - pl))
		return -1;
	if (pk->frames_len > 0)
		memcpy(pl, pk->frames, pk->frames_len);
	p = pl + pk->frames_len;
	used = (size_t)(p - buf) + DPQ_CRYPTO_TAG_LEN;
	/* RFC 9001 §5.4.2: the header protection sample starts 4 bytes
	 * after the packet number: at least 4 - pn_len payload bytes. */
	if (p - pl < 4) {
		memset(p, 0, (size_t)(4 - (p - pl)));
		used += (size_t)(4 - (p - pl));
		p = pl + 4;
	}
	if (pk->pad_to > used) {
		if (pk->pad_to - used > (size_t)(end - p))
			return -1;
		memset(p, 0, pk->pad_to - used);	/* PADDING frames */
		p += pk->pad_to - used;
	}
	if (lenf != NULL && dpq_pkt_patch_length(lenf, (uint64_t)(p - pl) +
			pn_len + DPQ_CRYPTO_TAG_LEN) != 0)
		return -1;
	op.key = key;
	op.pkt = buf;
	op.pn = pk->pn;
	op.len = (uint16_t)(p - buf);
	op.pn_offset = (uint16_t)(pl - pn_len - buf);
	op.pn_len = (uint8_t)pn_len;
	if (dpq_crypto_seal_burst(cc, &op, 1) != 1)
		return -1;
	return (ssize_t)op.len + DPQ_CRYPTO_TAG_LEN;
}
