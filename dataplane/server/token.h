/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * token.h: address-validation tokens (RFC 9000 §8.1.1-§8.1.4) and
 * stateless reset (RFC 9000 §10.3).
 *
 * Tokens are sealed with AES-128-GCM (GnuTLS gnutls_aead_cipher_*: one
 * seal or open per new connection, never per packet) under a server key
 * that rotates: the current and the previous key are accepted, older ones
 * are not. Wire layout (only the server reads it, §8.1.4):
 *
 *   byte 0     type (2 bits: 1 Retry, 2 NEW_TOKEN) << 6 | key id (6 bits)
 *   12 bytes   random AEAD nonce
 *   ciphertext issue time (8, us, big endian), family (1: 4 or 6),
 *              IP (4 or 16); Retry only: port (2), ODCID length (1),
 *              ODCID, Retry SCID length (1), Retry SCID
 *   16 bytes   GCM tag; byte 0 is the additional data
 *
 * The type is in clear (authenticated) on purpose: §8.1.1 wants a server
 * to tell Retry tokens from NEW_TOKEN tokens, §8.1.3 allows that to be
 * visible, and the listener needs it even for a token it cannot
 * authenticate (§8.1.2: a bad Retry token gets INVALID_TOKEN, a bad
 * NEW_TOKEN token is ignored). NEW_TOKEN tokens carry the address only
 * encrypted and a fresh nonce, so they cannot be linked (§8.1.3).
 *
 * NEW_TOKEN replay (§8.1.4 "SHOULD NOT be accepted multiple times") is
 * the listener's business: it asks the shared filter of tokfilter.h with
 * the token's nonce (dpq_token_nonce()) once a token opened.
 *
 * Threads: a struct dpq_tokens holds GnuTLS AEAD handles, which are not
 * safe to share: each shard makes its own from the same key bytes.
 */
#ifndef DPQ_SERVER_TOKEN_H
#define DPQ_SERVER_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dataplane/engine/netaddr.h"
#include "dataplane/engine/wire.h"
#include "cid.h"

enum dpq_token_type {
	DPQ_TOKEN_ANY = 0,	/* dpq_token_open(): accept either */
	DPQ_TOKEN_RETRY = 1,
	DPQ_TOKEN_NEW = 2,	/* sent in a NEW_TOKEN frame */
};

#define DPQ_TOKEN_KEY_LEN	16	/* AES-128-GCM */
#define DPQ_TOKEN_KEY_ID_MAX	63
#define DPQ_TOKEN_NONCE_LEN	12
#define DPQ_TOKEN_TAG_LEN	16
#define DPQ_TOKEN_HDR_LEN	(1 + DPQ_TOKEN_NONCE_LEN)
/* Smallest (NEW_TOKEN, IPv4) and largest (Retry, IPv6, two 20-byte CIDs). */
#define DPQ_TOKEN_MIN_LEN	(DPQ_TOKEN_HDR_LEN + 8 + 1 + 4 + DPQ_TOKEN_TAG_LEN)
#define DPQ_TOKEN_MAX_LEN	(DPQ_TOKEN_HDR_LEN + 8 + 1 + 16 + 2 + \
		1 + DPQ_MAX_CID_LEN + 1 + DPQ_MAX_CID_LEN + DPQ_TOKEN_TAG_LEN)

/* §8.1.4: Retry tokens are returned at once, so live briefly. */
#define DPQ_TOKEN_RETRY_LIFETIME_DEFAULT	(10ull * 1000 * 1000)
#define DPQ_TOKEN_NEW_LIFETIME_DEFAULT		(24ull * 3600 * 1000 * 1000)
/* Tokens issued up to this far in the future are accepted (servers of a
 * fleet share keys, their clocks differ a little). */
#define DPQ_TOKEN_FUTURE_SKEW		(2ull * 1000 * 1000)

struct dpq_token_cfg {
	uint64_t retry_lifetime;	/* us; valid while age < lifetime */
	uint64_t new_lifetime;		/* us */
	/* NEW_TOKEN address match: leading bits of the IP that must equal
	 * the issuing address. 32 / 128 = exact (default); 24 / 56 accept
	 * a client that moved within its /24 or /56, which DESIGN.md §5
	 * notes saves 0-RTT for mobile and NATed clients. §8.1.3: the
	 * anti-amplification limit still applies then (the listener reports
	 * addr_validated only for an exact match). Retry tokens always
	 * need the exact IP and port (§8.1.4). */
	uint8_t new_v4_prefix;		/* 1..32 */
	uint8_t new_v6_prefix;		/* 1..128 */
};

void
dpq_token_cfg_default(struct dpq_token_cfg *cfg);

/* What a token says. */
struct dpq_token_info {
	enum dpq_token_type type;
	uint64_t issued;		/* us, the caller's clock */
	struct dpq_netaddr addr;	/* port only for Retry */
	struct dpq_cid odcid;		/* Retry: client's first DCID */
	struct dpq_cid retry_scid;	/* Retry: SCID of the Retry packet */
	bool addr_exact;		/* open: IP (and port) equal, not just
					 * the prefix */
};

struct dpq_tokens;

/* Create a token context with no key (cfg NULL: defaults). Returns NULL
 * with errno EINVAL or ENOMEM. */
struct dpq_tokens *
dpq_tokens_create(const struct dpq_token_cfg *cfg);

void
dpq_tokens_destroy(struct dpq_tokens *t);

/*
 * Install a new current key (RFC 9000 §8.1.4: only the server knows it).
 * The current key becomes the previous one (still accepted); the previous
 * one is dropped. key_id (0..63) names the key in tokens and must differ
 * from the current key's id. Returns 0, -EINVAL or -EIO (GnuTLS).
 */
int
dpq_tokens_set_key(struct dpq_tokens *t, uint8_t key_id,
		const uint8_t key[DPQ_TOKEN_KEY_LEN]);

/*
 * Install exactly these keys (a server config version: every server of a
 * fleet derives the same pair, so the order of rotations must not
 * matter): cur becomes the key that seals, prev (NULL: none) is still
 * accepted. The ids may be equal (a token whose id matches both is
 * tried with both). Returns 0, -EINVAL or -EIO; on failure
 * the keys in use stay.
 */
int
dpq_tokens_set_keys(struct dpq_tokens *t, uint8_t cur_id,
		const uint8_t cur[DPQ_TOKEN_KEY_LEN], uint8_t prev_id,
		const uint8_t *prev);

/* Change lifetimes and prefixes (checked as in dpq_tokens_create()).
 * Returns 0 or -EINVAL. */
int
dpq_tokens_set_cfg(struct dpq_tokens *t, const struct dpq_token_cfg *cfg);

const struct dpq_token_cfg *
dpq_tokens_cfg(const struct dpq_tokens *t);

/* The random nonce of a sealed token (DPQ_TOKEN_NONCE_LEN bytes at
 * tok + 1), or NULL if len is too short to hold one. */
const uint8_t *
dpq_token_nonce(const uint8_t *tok, size_t len);

/*
 * Seal a token describing info (issued, addr, type, and for Retry odcid
 * and retry_scid) into out. Returns its length (<= DPQ_TOKEN_MAX_LEN),
 * -ENOKEY (no key), -ENOSPC (out too small), -EINVAL or -EIO.
 */
ssize_t
dpq_token_seal(struct dpq_tokens *t, const struct dpq_token_info *info,
		const struct dpq_rand *rnd, uint8_t *out, size_t out_len);

/* Type a token claims in its clear first byte (not yet authenticated):
 * DPQ_TOKEN_RETRY, DPQ_TOKEN_NEW, or DPQ_TOKEN_ANY if neither / empty. */
enum dpq_token_type
dpq_token_peek_type(const uint8_t *tok, size_t len);

/*
 * Open and validate a token received from peer at now. expect is the
 * type wanted (DPQ_TOKEN_ANY: either). On success fills *info. Returns 0 or
 *   -EBADMSG       not authentic: wrong size for its content, unknown or
 *                  dropped key id, tag mismatch, bad plaintext
 *   -EMSGSIZE      longer than DPQ_TOKEN_MAX_LEN or shorter than the min
 *   -EPROTOTYPE    authentic but not of the expected type
 *   -ETIMEDOUT     expired (age >= lifetime) or issued too far ahead
 *   -EADDRNOTAVAIL issued to another address (family, IP or prefix, and
 *                  for Retry the port)
 *   -EINVAL        NULL argument
 */
int
dpq_token_open(struct dpq_tokens *t, const uint8_t *tok, size_t len,
		enum dpq_token_type expect, const struct dpq_netaddr *peer,
		uint64_t now, struct dpq_token_info *info);

/* ---- Stateless reset (RFC 9000 §10.3) ---------------------------------- */

/* §10.3: Fixed Bits (2) + 38 unpredictable bits + 128-bit token. */
#define DPQ_SRESET_MIN_LEN	21
/* §10.3.3: a reset must be smaller than its trigger. */
#define DPQ_SRESET_MIN_TRIGGER	(DPQ_SRESET_MIN_LEN + 1)
/* §10.3: below 41 bytes a reset may be recognisable; above 43-byte
 * triggers we send 42..DPQ_SRESET_MAX_LEN bytes. */
#define DPQ_SRESET_SMALL_TRIGGER 43
#define DPQ_SRESET_LARGE_MIN	42
#define DPQ_SRESET_MAX_LEN	64
#define DPQ_SRESET_KEY_MIN	16
#define DPQ_SRESET_KEY_MAX	64

/*
 * §10.3.2: token for one of our CIDs = first 16 bytes of
 * HMAC-SHA256(static key, CID). Returns 0, -EINVAL (key_len outside
 * DPQ_SRESET_KEY_MIN..MAX, cid_len 0 or > 20: §10.3.2 excludes empty CIDs)
 * or -EIO.
 */
int
dpq_sreset_token(const uint8_t *key, size_t key_len, const uint8_t *cid,
		size_t cid_len, uint8_t token[DPQ_RESET_TOKEN_LEN]);

/*
 * The length of the reset we send for a trigger of trigger_len bytes, or
 * 0 if we must not send one (trigger < 22 bytes: §10.3.3 needs it shorter
 * than the trigger and §10.3 needs 21 bytes). Triggers up to 43 bytes get
 * trigger_len - 1 (§10.3 SHOULD); larger ones 42..min(trigger-1, 64)
 * bytes, picked with r.
 */
size_t
dpq_sreset_len(size_t trigger_len, uint32_t r);

/*
 * Build a Stateless Reset answering a datagram of trigger_len bytes into
 * out: first byte 0b01xxxxxx (random x), random bytes, token last
 * (§10.3). Returns its length, -EINVAL (trigger too small, NULL) or
 * -ENOSPC (out too small).
 */
ssize_t
dpq_sreset_build(const uint8_t token[DPQ_RESET_TOKEN_LEN], size_t trigger_len,
		const struct dpq_rand *rnd, uint8_t *out, size_t out_len);

#endif /* DPQ_SERVER_TOKEN_H */
