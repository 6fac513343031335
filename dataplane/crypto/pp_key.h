/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QUIC packet protection keys (RFC 9001 §5.1): from a TLS traffic secret,
 * the AEAD key and IV ("quic key", "quic iv") and the header protection key
 * ("quic hp"), ready for ipsec-mb (precomputed GCM tables, expanded AES HP
 * key) or GnuTLS (ChaCha20 HP handle, made once per key). Key update
 * (RFC 9001 §6.1) derives the next generation from the kept secret.
 *
 * A key is used by one thread at a time (its ChaCha20 HP handle has state).
 * Install and update run at key-installation time (shard only: they need
 * the shard's struct dpq_crypto), never per packet.
 */
#ifndef DPQ_CRYPTO_PP_KEY_H
#define DPQ_CRYPTO_PP_KEY_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <intel-ipsec-mb.h>

#include "crypto.h"
#include "hkdf.h"

/* TLS 1.3 cipher suites (DPQ_TLS_*): dataplane/crypto/suites.h */
#include "dataplane/crypto/suites.h"

#define DPQ_AEAD_KEY_MAX 32
#define DPQ_HP_KEY_MAX 32

enum dpq_aead {
	DPQ_AEAD_AES_128_GCM = 1,
	DPQ_AEAD_AES_256_GCM = 2,
	DPQ_AEAD_CHACHA20_POLY1305 = 3,
};

/* The raw values derived from one secret (for tests, logs, token keys). */
struct dpq_pp_key_material {
	uint8_t key[DPQ_AEAD_KEY_MAX];
	uint8_t iv[DPQ_CRYPTO_IV_LEN];
	uint8_t hp[DPQ_HP_KEY_MAX];
	uint8_t key_len;	/* also the HP key length */
};

struct dpq_pp_key {
	/* AEAD key: GCM tables (ipsec-mb wants 64-byte alignment) or the
	 * ChaCha20-Poly1305 key. */
	union {
		struct gcm_key_data gcm;
		uint8_t chacha[32];
	} aead;
	/* Header protection: expanded AES key, or the GnuTLS ChaCha20 handle
	 * (gnutls_cipher_hd_t) and its raw key kept for key update. */
	struct dpq_aes_key hp_aes;
	void *hp_chacha;
	uint8_t hp_raw[DPQ_HP_KEY_MAX];
	uint8_t iv[DPQ_CRYPTO_IV_LEN];
	uint8_t secret[DPQ_HKDF_HASH_MAX];	/* for "quic ku" */
	uint8_t aead_raw[DPQ_AEAD_KEY_MAX];	/* for dpq_pp_key_save() */
	uint8_t secret_len;
	uint8_t alg;		/* enum dpq_aead; 0 = not installed */
	uint8_t key_len;
} __attribute__((aligned(64)));

/*
 * A key in compact form: its RFC 9001 §5.1 material and secret, 130 bytes
 * instead of the 1.4 KB of expanded tables (ipsec-mb's VAES GCM tables
 * alone are 1 KiB). An idle connection keeps its keys so (dpq_conn_park)
 * and expands them again when it next sends or receives.
 */
struct dpq_pp_key_saved {
	uint8_t key[DPQ_AEAD_KEY_MAX];
	uint8_t iv[DPQ_CRYPTO_IV_LEN];
	uint8_t hp[DPQ_HP_KEY_MAX];
	uint8_t secret[DPQ_HKDF_HASH_MAX];
	uint8_t secret_len;
	uint8_t alg;
	uint8_t key_len;
};

/* Map a TLS cipher suite id to an AEAD. Returns 0 or -ENOTSUP. */
int
dpq_aead_from_tls_suite(uint16_t suite, enum dpq_aead *alg);

/* Hash of the suite's HKDF, key length (AEAD and HP) of an AEAD; 0 for an
 * unknown alg. */
enum dpq_hash
dpq_aead_hash(enum dpq_aead alg);
size_t
dpq_aead_key_len(enum dpq_aead alg);

/*
 * Derive key, iv and hp from a traffic secret (RFC 9001 §5.1). The secret
 * must be the hash length of alg's suite. Returns 0, -EINVAL or -EIO.
 */
int
dpq_pp_key_derive(enum dpq_aead alg, const uint8_t *secret, size_t secret_len,
		struct dpq_pp_key_material *m);

/*
 * Install a key from a traffic secret. key may be uninitialised; on
 * failure it is left zeroed (alg 0). Returns 0, -EINVAL, -EIO or -ENOMEM.
 */
int
dpq_pp_key_init(struct dpq_crypto *cc, struct dpq_pp_key *key,
		enum dpq_aead alg, const uint8_t *secret, size_t secret_len);

/*
 * Install the QUIC v1 Initial key (RFC 9001 §5.2, AES-128-GCM) for the
 * packets sent by the server (server = true) or the client, from the
 * client's first Destination Connection ID. Returns as dpq_pp_key_init or
 * -EINVAL for dcid_len > 20.
 */
int
dpq_pp_key_init_initial(struct dpq_crypto *cc, struct dpq_pp_key *key,
		const uint8_t *dcid, size_t dcid_len, bool server);

/*
 * Key update (RFC 9001 §6.1): next gets secret_{n+1} = HKDF-Expand-Label(
 * secret_n, "quic ku", "", Hash.length), its key and iv, and the same HP
 * key as cur. next must not be cur. Returns 0, -EINVAL, -EIO or -ENOMEM.
 */
int
dpq_pp_key_update(struct dpq_crypto *cc, struct dpq_pp_key *next,
		const struct dpq_pp_key *cur);

/* Save an installed key in compact form. Returns 0 or -EINVAL. */
int
dpq_pp_key_save(const struct dpq_pp_key *key, struct dpq_pp_key_saved *s);

/*
 * Install a key from its saved form (the same key as the one saved: no
 * HKDF, only the AEAD and HP key schedules). Returns as dpq_pp_key_init.
 */
int
dpq_pp_key_restore(struct dpq_crypto *cc, struct dpq_pp_key *key,
		const struct dpq_pp_key_saved *s);

/* Free the key's handles and zero all its secrets (NULL or a zeroed key is
 * allowed; destroying twice is harmless). */
void
dpq_pp_key_destroy(struct dpq_pp_key *key);

/* AEAD nonce for packet number pn: iv XOR pn left-padded (RFC 9001 §5.3).
 * pn < 2^62, so only the last 8 bytes of the 12-byte iv change. */
static inline void
dpq_pp_key_nonce(const struct dpq_pp_key *key, uint64_t pn,
		uint8_t nonce[DPQ_CRYPTO_IV_LEN])
{
	uint64_t low;

	memcpy(&low, key->iv + 4, sizeof(low));
	low ^= htobe64(pn);
	memcpy(nonce, key->iv, 4);
	memcpy(nonce + 4, &low, sizeof(low));
}

#endif /* DPQ_CRYPTO_PP_KEY_H */
