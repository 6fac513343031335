/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HKDF (RFC 5869) and the TLS 1.3 HKDF-Expand-Label (RFC 8446 §7.1) used by
 * the QUIC key schedule (RFC 9001 §5.1), plus the QUIC v1 Initial secrets
 * (RFC 9001 §5.2). HMAC comes from GnuTLS; nothing here is hand-written SHA.
 *
 * Key derivation runs when keys are installed, not per packet; the functions
 * are thread safe (no shared state).
 */
#ifndef DPQ_CRYPTO_HKDF_H
#define DPQ_CRYPTO_HKDF_H

#include <stddef.h>
#include <stdint.h>

/* Largest hash output (SHA-384) and so largest traffic secret. */
#define DPQ_HKDF_HASH_MAX 48
/* RFC 8446 §7.1: HkdfLabel.label is "tls13 " + label, at most 255 bytes. */
#define DPQ_HKDF_LABEL_MAX 249
#define DPQ_HKDF_CONTEXT_MAX 255
/* QUIC v1 Initial secrets are SHA-256 sized (RFC 9001 §5.2). */
#define DPQ_INITIAL_SECRET_LEN 32
/* RFC 9000 §17.2: connection IDs are at most 20 bytes in v1. */
#define DPQ_CRYPTO_CID_MAX 20

enum dpq_hash {
	DPQ_HASH_SHA256 = 1,
	DPQ_HASH_SHA384 = 2,
};

/* Output length of hash h in bytes, 0 for an unknown hash. */
size_t
dpq_hkdf_hash_len(enum dpq_hash h);

/*
 * HKDF-Extract(salt, ikm) into prk (dpq_hkdf_hash_len(h) bytes).
 * Returns 0, -EINVAL (unknown hash, NULL prk) or -EIO (GnuTLS failure).
 */
int
dpq_hkdf_extract(enum dpq_hash h, const uint8_t *salt, size_t salt_len,
		const uint8_t *ikm, size_t ikm_len, uint8_t *prk);

/*
 * HKDF-Expand-Label(secret, label, context, out_len) (RFC 8446 §7.1):
 * label is given without the "tls13 " prefix (e.g. "quic key").
 * Returns 0, -EINVAL (unknown hash, secret shorter than the hash, label or
 * context too long, out_len 0 or above 255 * hash length) or -EIO.
 */
int
dpq_hkdf_expand_label(enum dpq_hash h, const uint8_t *secret,
		size_t secret_len, const char *label, const uint8_t *context,
		size_t context_len, uint8_t *out, size_t out_len);

/*
 * QUIC v1 Initial secrets for a client-chosen Destination Connection ID
 * (RFC 9001 §5.2): client_in protects packets the client sends, server_in
 * those the server sends; each is DPQ_INITIAL_SECRET_LEN bytes. Either
 * output may be NULL. Returns 0, -EINVAL (dcid_len > 20) or -EIO.
 */
int
dpq_hkdf_initial_secrets(const uint8_t *dcid, size_t dcid_len,
		uint8_t *client_in, uint8_t *server_in);

#endif /* DPQ_CRYPTO_HKDF_H */
