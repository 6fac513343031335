/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet protection keys from TLS traffic secrets (RFC 9001 §5.1, §5.2)
 * and key update (RFC 9001 §6.1).
 */
#include <errno.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "crypto_int.h"
#include "pp_key.h"

int
dpq_aead_from_tls_suite(uint16_t suite, enum dpq_aead *alg)
{
	switch (suite) {
	case DPQ_TLS_AES_128_GCM_SHA256:
		*alg = DPQ_AEAD_AES_128_GCM;
		return 0;
	case DPQ_TLS_AES_256_GCM_SHA384:
		*alg = DPQ_AEAD_AES_256_GCM;
		return 0;
	case DPQ_TLS_CHACHA20_POLY1305_SHA256:
		*alg = DPQ_AEAD_CHACHA20_POLY1305;
		return 0;
	}
	/* TLS_AES_128_CCM_SHA256 is allowed by RFC 9001 but not offered. */
	return -ENOTSUP;
}

enum dpq_hash
dpq_aead_hash(enum dpq_aead alg)
{
	switch (alg) {
	case DPQ_AEAD_AES_128_GCM:
	case DPQ_AEAD_CHACHA20_POLY1305:
		return DPQ_HASH_SHA256;
	case DPQ_AEAD_AES_256_GCM:
		return DPQ_HASH_SHA384;
	}
	return 0;
}

size_t
dpq_aead_key_len(enum dpq_aead alg)
{
	switch (alg) {
	case DPQ_AEAD_AES_128_GCM:
		return 16;
	case DPQ_AEAD_AES_256_GCM:
	case DPQ_AEAD_CHACHA20_POLY1305:
		return 32;
	}
	return 0;
}

int
dpq_pp_key_derive(enum dpq_aead alg, const uint8_t *secret, size_t secret_len,
		struct dpq_pp_key_material *m)
{
	enum dpq_hash h = dpq_aead_hash(alg);
	size_t klen = dpq_aead_key_len(alg);
	int rc;

	if (klen == 0 || secret == NULL || m == NULL ||
			secret_len != dpq_hkdf_hash_len(h))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	rc = dpq_hkdf_expand_label(h, secret, secret_len, "quic key", NULL, 0,
			m->key, klen);
	if (rc == 0)
		rc = dpq_hkdf_expand_label(h, secret, secret_len, "quic iv",
				NULL, 0, m->iv, DPQ_CRYPTO_IV_LEN);
	/* The HP key has the AEAD key's length (RFC 9001 §5.4.3-§5.4.4). */
	if (rc == 0)
		rc = dpq_hkdf_expand_label(h, secret, secret_len, "quic hp",
				NULL, 0, m->hp, klen);
	if (rc != 0) {
		gnutls_memset(m, 0, sizeof(*m));
		return rc;
	}
	m->key_len = (uint8_t)klen;
	return 0;
}

/* Install the HP part from a raw HP key. */
static int
hp_install(struct dpq_crypto *cc, struct dpq_pp_key *key, enum dpq_aead alg,
		const uint8_t *hp, size_t hp_len)
{
	gnutls_cipher_hd_t h;
	gnutls_datum_t kd;
	uint8_t iv[16] = { 0 };

	memcpy(key->hp_raw, hp, hp_len);
	if (alg != DPQ_AEAD_CHACHA20_POLY1305)
		return dpq_aes_key_init(cc, &key->hp_aes, hp, hp_len);
	/* One GnuTLS handle per key, never per packet. */
	kd.data = key->hp_raw;
	kd.size = (unsigned int)hp_len;
	if (gnutls_cipher_init(&h, GNUTLS_CIPHER_CHACHA20_32, &kd,
			&(gnutls_datum_t){ .data = iv, .size = sizeof(iv) }) < 0)
		return -ENOMEM;
	key->hp_chacha = h;
	return 0;
}

/* Install the AEAD key, iv and HP key; secret is kept for key update. */
static int
key_install(struct dpq_crypto *cc, struct dpq_pp_key *key, enum dpq_aead alg,
		const uint8_t *secret, size_t secret_len,
		const struct dpq_pp_key_material *m, const uint8_t *hp)
{
	int rc;

	memset(key, 0, sizeof(*key));
	switch (alg) {
	case DPQ_AEAD_AES_128_GCM:
		IMB_AES128_GCM_PRE(cc->mgr, m->key, &key->aead.gcm);
		break;
	case DPQ_AEAD_AES_256_GCM:
		IMB_AES256_GCM_PRE(cc->mgr, m->key, &key->aead.gcm);
		break;
	case DPQ_AEAD_CHACHA20_POLY1305:
		memcpy(key->aead.chacha, m->key, 32);
		break;
	}
	memcpy(key->iv, m->iv, DPQ_CRYPTO_IV_LEN);
	memcpy(key->aead_raw, m->key, m->key_len);
	memcpy(key->secret, secret, secret_len);
	key->secret_len = (uint8_t)secret_len;
	key->key_len = m->key_len;
	rc = hp_install(cc, key, alg, hp, m->key_len);
	if (rc != 0) {
		gnutls_memset(key, 0, sizeof(*key));
		return rc;
	}
	key->alg = (uint8_t)alg;
	return 0;
}

int
dpq_pp_key_init(struct dpq_crypto *cc, struct dpq_pp_key *key,
		enum dpq_aead alg, const uint8_t *secret, size_t secret_len)
{
	struct dpq_pp_key_material m;
	int rc;

	if (cc == NULL || key == NULL)
		return -EINVAL;
	rc = dpq_pp_key_derive(alg, secret, secret_len, &m);
	if (rc == 0)
		rc = key_install(cc, key, alg, secret, secret_len, &m, m.hp);
	else
		gnutls_memset(key, 0, sizeof(*key));
	gnutls_memset(&m, 0, sizeof(m));
	return rc;
}

int
dpq_pp_key_init_initial(struct dpq_crypto *cc, struct dpq_pp_key *key,
		const uint8_t *dcid, size_t dcid_len, bool server)
{
	uint8_t secret[DPQ_INITIAL_SECRET_LEN];
	int rc;

	if (key == NULL)
		return -EINVAL;
	rc = dpq_hkdf_initial_secrets(dcid, dcid_len, server ? NULL : secret,
			server ? secret : NULL);
	if (rc == 0)
		rc = dpq_pp_key_init(cc, key, DPQ_AEAD_AES_128_GCM, secret,
				sizeof(secret));
	else
		gnutls_memset(key, 0, sizeof(*key));
	gnutls_memset(secret, 0, sizeof(secret));
	return rc;
}

int
dpq_pp_key_update(struct dpq_crypto *cc, struct dpq_pp_key *next,
		const struct dpq_pp_key *cur)
{
	struct dpq_pp_key_material m;
	uint8_t secret[DPQ_HKDF_HASH_MAX];
	enum dpq_aead alg;
	int rc;

	if (cc == NULL || next == NULL || cur == NULL || next == cur ||
			cur->alg == 0)
		return -EINVAL;
	alg = cur->alg;
	rc = dpq_hkdf_expand_label(dpq_aead_hash(alg), cur->secret,
			cur->secret_len, "quic ku", NULL, 0, secret,
			cur->secret_len);
	if (rc == 0)
		rc = dpq_pp_key_derive(alg, secret, cur->secret_len, &m);
	/* RFC 9001 §6.1: the header protection key is not updated. */
	if (rc == 0)
		rc = key_install(cc, next, alg, secret, cur->secret_len, &m,
				cur->hp_raw);
	else
		gnutls_memset(next, 0, sizeof(*next));
	gnutls_memset(&m, 0, sizeof(m));
	gnutls_memset(secret, 0, sizeof(secret));
	return rc;
}

int
dpq_pp_key_save(const struct dpq_pp_key *key, struct dpq_pp_key_saved *s)
{
	if (key == NULL || s == NULL || key->alg == 0)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	memcpy(s->key, key->aead_raw, key->key_len);
	memcpy(s->iv, key->iv, DPQ_CRYPTO_IV_LEN);
	memcpy(s->hp, key->hp_raw, key->key_len);
	memcpy(s->secret, key->secret, key->secret_len);
	s->secret_len = key->secret_len;
	s->alg = key->alg;
	s->key_len = key->key_len;
	return 0;
}

int
dpq_pp_key_restore(struct dpq_crypto *cc, struct dpq_pp_key *key,
		const struct dpq_pp_key_saved *s)
{
	struct dpq_pp_key_material m;
	int rc;

	if (cc == NULL || key == NULL || s == NULL ||
	    dpq_aead_key_len((enum dpq_aead)s->alg) != s->key_len ||
	    s->key_len == 0 || s->secret_len > DPQ_HKDF_HASH_MAX)
		return -EINVAL;
	memcpy(m.key, s->key, sizeof(m.key));
	memcpy(m.iv, s->iv, sizeof(m.iv));
	memcpy(m.hp, s->hp, sizeof(m.hp));
	m.key_len = s->key_len;
	rc = key_install(cc, key, (enum dpq_aead)s->alg, s->secret,
			s->secret_len, &m, s->hp);
	gnutls_memset(&m, 0, sizeof(m));
	return rc;
}

void
dpq_pp_key_destroy(struct dpq_pp_key *key)
{
	if (key == NULL)
		return;
	if (key->alg == DPQ_AEAD_CHACHA20_POLY1305 && key->hp_chacha != NULL)
		gnutls_cipher_deinit(key->hp_chacha);
	gnutls_memset(key, 0, sizeof(*key));
}
