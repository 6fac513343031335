/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cid.c: QUIC-LB plaintext server connection IDs (see cid.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "cid.h"

void
dpq_rand_system_fill(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	/* A CID nonce, a token nonce or reset padding: unpredictable and
	 * unique is what matters, GNUTLS_RND_NONCE gives both. */
	if (len != 0 && gnutls_rnd(GNUTLS_RND_NONCE, buf, len) != 0)
		abort();
}

const struct dpq_rand dpq_rand_system = {
	.fill = dpq_rand_system_fill,
	.ctx = NULL,
};

void
dpq_cid_cfg_default(struct dpq_cid_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->config_rotation = 0;
	cfg->server_id_len = 1;
	cfg->len = DPQ_CID_LEN_DEFAULT;
	cfg->encode_len = true;
}

int
dpq_cid_cfg_check(const struct dpq_cid_cfg *cfg)
{
	if (cfg == NULL || cfg->config_rotation > DPQ_CID_CR_UNROUTABLE ||
			cfg->server_id_len > DPQ_CID_SERVER_ID_MAX ||
			cfg->len > DPQ_MAX_CID_LEN ||
			cfg->len < cfg->server_id_len + DPQ_CID_OVERHEAD)
		return -EINVAL;
	if (cfg->config_rotation == DPQ_CID_CR_UNROUTABLE) {
		/* Draft §"Configuration Failover": unroutable CIDs MUST
		 * self-encode their length and carry no server id. */
		if (cfg->server_id_len != 0 || !cfg->encode_len)
			return -EINVAL;
	} else if (cfg->server_id_len == 0) {
		/* Draft §"Server ID Allocation": at least one octet. */
		return -EINVAL;
	}
	return 0;
}

int
dpq_cid_gen(const struct dpq_cid_cfg *cfg, uint8_t shard,
		const struct dpq_rand *rnd, struct dpq_cid *out)
{
	size_t off;
	uint8_t low;

	if (dpq_cid_cfg_check(cfg) != 0 || rnd == NULL || rnd->fill == NULL ||
			out == NULL)
		return -EINVAL;
	off = 1u + cfg->server_id_len;
	out->len = cfg->len;
	out->bytes[off] = shard;
	/* One call for the nonce and (if needed) the first octet's bits. */
	rnd->fill(rnd->ctx, out->bytes + off + 1, cfg->len - off - 1);
	if (cfg->encode_len) {
		low = (uint8_t)(cfg->len - 1);
	} else {
		rnd->fill(rnd->ctx, &low, 1);
		low &= DPQ_CID_LEN_MASK;
	}
	out->bytes[0] = (uint8_t)(cfg->config_rotation << DPQ_CID_CR_SHIFT |
			low);
	if (cfg->server_id_len != 0)
		memcpy(out->bytes + 1, cfg->server_id, cfg->server_id_len);
	return 0;
}

int
dpq_cid_check(const struct dpq_cid_cfg *cfg, const uint8_t *cid, size_t len)
{
	if (dpq_cid_cfg_check(cfg) != 0 || (cid == NULL && len != 0))
		return -EINVAL;
	if (len != cfg->len)
		return -EMSGSIZE;
	if (dpq_cid_config_rotation(cid, len) != cfg->config_rotation)
		return -ESTALE;
	if (cfg->encode_len && (cid[0] & DPQ_CID_LEN_MASK) != len - 1)
		return -EBADMSG;
	return 0;
}

int
dpq_cid_shard(const struct dpq_cid_cfg *cfg, const uint8_t *cid, size_t len)
{
	int rc = dpq_cid_check(cfg, cid, len);

	if (rc != 0)
		return rc;
	return cid[1 + cfg->server_id_len];
}

int
dpq_cid_server_id(const struct dpq_cid_cfg *cfg, const uint8_t *cid,
		size_t len, uint8_t *sid)
{
	int rc = dpq_cid_check(cfg, cid, len);

	if (rc != 0)
		return rc;
	if (sid == NULL)
		return -EINVAL;
	if (cfg->server_id_len != 0)
		memcpy(sid, cid + 1, cfg->server_id_len);
	return cfg->server_id_len;
}
