/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cid.h: server connection IDs that say where a connection lives
 * (DESIGN.md §5), in the plaintext layout of QUIC-LB
 * (draft-ietf-quic-load-balancers, "CID format"):
 *
 *   First Octet { Config Rotation (3), CID Len or Random Bits (5) }
 *   Server ID   (server_id_len bytes: routes between machines)
 *   Shard ID    (1 byte: routes between the lcores of one server)
 *   Nonce       (random; shard + nonce >= DPQ_CID_NONCE_MIN bytes)
 *
 * To a QUIC-LB load balancer the shard byte is simply the first byte of
 * the nonce (draft §"Server Process Demultiplexing": a server may append
 * its own routing bytes after the server id).
 *
 * Only the unencrypted mode is implemented: the server id and shard are
 * visible on the wire, so an observer can link a migrated connection to
 * its server. The encrypted modes of the draft (single-pass AES-128-ECB
 * for 16-byte plaintexts, four-pass otherwise) are a later issue; they
 * will change dpq_cid_gen() and the decoders, not this API.
 *
 * Pure C, no I/O, no clock. Safe on any thread (cfg is read only).
 */
#ifndef DPQ_SERVER_CID_H
#define DPQ_SERVER_CID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/wire.h"

/* Config rotation codepoints 0..6; 0b111 marks an unroutable CID issued by
 * a server with no QUIC-LB configuration (draft §"Configuration Failover"). */
#define DPQ_CID_CR_MAX		6
#define DPQ_CID_CR_UNROUTABLE	7
#define DPQ_CID_CR_SHIFT	5
#define DPQ_CID_LEN_MASK	0x1f
/* Draft §"Configuration Agent Actions": the nonce is at least 4 octets
 * and server id + nonce at most 19. A load balancer sees the shard byte
 * as part of the nonce, so shard + random bytes >= 4 (>= 3 random bytes;
 * the connection table must still reject a colliding new CID). */
#define DPQ_CID_NONCE_MIN	4
/* First octet + minimum nonce (shard byte included). */
#define DPQ_CID_OVERHEAD	(1 + DPQ_CID_NONCE_MIN)
#define DPQ_CID_SERVER_ID_MAX	(DPQ_MAX_CID_LEN - DPQ_CID_OVERHEAD)
#define DPQ_CID_LEN_DEFAULT	8

/*
 * A source of random bytes. The listener, CIDs and tokens take it from the
 * caller so tests are deterministic; production passes dpq_rand_system.
 * fill must write len bytes and cannot fail.
 */
struct dpq_rand {
	void (*fill)(void *ctx, uint8_t *buf, size_t len);
	void *ctx;
};

/* Unpredictable bytes from GnuTLS's nonce generator (gnutls_rnd
 * GNUTLS_RND_NONCE); aborts if GnuTLS cannot produce randomness. */
void
dpq_rand_system_fill(void *ctx, uint8_t *buf, size_t len);

extern const struct dpq_rand dpq_rand_system;

/* One CID configuration (one config rotation codepoint). */
struct dpq_cid_cfg {
	uint8_t config_rotation;	/* 0..6, or 7: no QUIC-LB config */
	uint8_t server_id_len;		/* >= 1 with a config (draft
					 * §"Server ID Allocation"); 0 only
					 * with config_rotation 7 */
	uint8_t len;			/* whole CID, server_id_len +
					 * DPQ_CID_OVERHEAD .. 20 */
	bool encode_len;		/* low 5 bits of the first octet =
					 * len - 1 (draft §"Length
					 * Self-Description"); else random.
					 * Required with rotation 7. */
	uint8_t server_id[DPQ_CID_SERVER_ID_MAX];
};

/* Defaults: rotation 0, 1-byte server id 0, 8-byte CIDs with the length
 * encoded: first octet, server id, shard, 5 random bytes. */
void
dpq_cid_cfg_default(struct dpq_cid_cfg *cfg);

/* Check a configuration. Returns 0 or -EINVAL. */
int
dpq_cid_cfg_check(const struct dpq_cid_cfg *cfg);

/*
 * Make a new CID for a connection owned by shard: first octet, server id,
 * shard, then random nonce bytes from rnd. Returns 0 or -EINVAL (bad cfg,
 * NULL argument).
 */
int
dpq_cid_gen(const struct dpq_cid_cfg *cfg, uint8_t shard,
		const struct dpq_rand *rnd, struct dpq_cid *out);

/* Config rotation bits of a CID (first octet's top 3 bits); 7 for len 0. */
static inline unsigned int
dpq_cid_config_rotation(const uint8_t *cid, size_t len)
{
	return len == 0 ? DPQ_CID_CR_UNROUTABLE : (unsigned int)(cid[0] >>
			DPQ_CID_CR_SHIFT);
}

/*
 * Could this CID have been made under cfg? Returns 0, or
 *   -EMSGSIZE  length differs from cfg->len
 *   -ESTALE    config rotation bits are not cfg's (another or an old
 *              configuration: the caller may try its previous cfg)
 *   -EBADMSG   cfg encodes the length and the first octet disagrees
 *   -EINVAL    bad cfg or NULL
 */
int
dpq_cid_check(const struct dpq_cid_cfg *cfg, const uint8_t *cid, size_t len);

/* Shard id (0..255) of a CID made under cfg, or a dpq_cid_check() error. */
int
dpq_cid_shard(const struct dpq_cid_cfg *cfg, const uint8_t *cid, size_t len);

/*
 * Copy the server id of a CID made under cfg to sid (room for
 * DPQ_CID_SERVER_ID_MAX bytes). Returns its length (0..15) or a
 * dpq_cid_check() error.
 */
int
dpq_cid_server_id(const struct dpq_cid_cfg *cfg, const uint8_t *cid,
		size_t len, uint8_t *sid);

#endif /* DPQ_SERVER_CID_H */
