/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HKDF-Extract / HKDF-Expand-Label (RFC 8446 §7.1) over GnuTLS's HMAC, and
 * the QUIC v1 Initial secrets (RFC 9001 §5.2).
 */
#include <errno.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "hkdf.h"

/* RFC 9001 §5.2: initial_salt for QUIC version 1. */
static const uint8_t initial_salt_v1[] = {
	0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
};

/* "tls13 " prefix of every HkdfLabel.label (RFC 8446 §7.1). */
#define TLS13_PREFIX "tls13 "
#define TLS13_PREFIX_LEN 6

static int
hash_to_mac(enum dpq_hash h, gnutls_mac_algorithm_t *mac)
{
	switch (h) {
	case DPQ_HASH_SHA256:
		*mac = GNUTLS_MAC_SHA256;
		return 0;
	case DPQ_HASH_SHA384:
		*mac = GNUTLS_MAC_SHA384;
		return 0;
	}
	return -EINVAL;
}

size_t
dpq_hkdf_hash_len(enum dpq_hash h)
{
	switch (h) {
	case DPQ_HASH_SHA256:
		return 32;
	case DPQ_HASH_SHA384:
		return 48;
	}
	return 0;
}

int
dpq_hkdf_extract(enum dpq_hash h, const uint8_t *salt, size_t salt_len,
		const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
	gnutls_mac_algorithm_t mac;
	gnutls_datum_t key, salt_d;
	/* GnuTLS takes non-NULL data even for empty inputs. */
	static const uint8_t empty[1];

	if (hash_to_mac(h, &mac) != 0 || prk == NULL ||
			(salt == NULL && salt_len) || (ikm == NULL && ikm_len))
		return -EINVAL;
	key.data = (unsigned char *)(uintptr_t)(ikm_len ? ikm : empty);
	key.size = (unsigned int)ikm_len;
	salt_d.data = (unsigned char *)(uintptr_t)(salt_len ? salt : empty);
	salt_d.size = (unsigned int)salt_len;
	if (gnutls_hkdf_extract(mac, &key, &salt_d, prk) < 0)
		return -EIO;
	return 0;
}

int
dpq_hkdf_expand_label(enum dpq_hash h, const uint8_t *secret,
		size_t secret_len, const char *label, const uint8_t *context,
		size_t context_len, uint8_t *out, size_t out_len)
{
	/* struct HkdfLabel: uint16 length, opaque label<7..255>,
	 * opaque context<0..255> (RFC 8446 §7.1). */
	uint8_t info[2 + 1 + 255 + 1 + 255];
	gnutls_mac_algorithm_t mac;
	gnutls_datum_t key, info_d;
	size_t hlen = dpq_hkdf_hash_len(h);
	size_t label_len, p = 0;
	int rc;

	if (hash_to_mac(h, &mac) != 0 || secret == NULL || label == NULL ||
			out == NULL)
		return -EINVAL;
	label_len = strnlen(label, DPQ_HKDF_LABEL_MAX + 1);
	if (label_len > DPQ_HKDF_LABEL_MAX || context_len > DPQ_HKDF_CONTEXT_MAX ||
			(context == NULL && context_len) ||
			secret_len < hlen || out_len == 0 ||
			out_len > 255 * hlen || out_len > UINT16_MAX)
		return -EINVAL;
	info[p++] = (uint8_t)(out_len >> 8);
	info[p++] = (uint8_t)out_len;
	info[p++] = (uint8_t)(TLS13_PREFIX_LEN + label_len);
	memcpy(info + p, TLS13_PREFIX, TLS13_PREFIX_LEN);
	p += TLS13_PREFIX_LEN;
	memcpy(info + p, label, label_len);
	p += label_len;
	info[p++] = (uint8_t)context_len;
	if (context_len)
		memcpy(info + p, context, context_len);
	p += context_len;

	key.data = (unsigned char *)(uintptr_t)secret;
	key.size = (unsigned int)secret_len;
	info_d.data = info;
	info_d.size = (unsigned int)p;
	rc = gnutls_hkdf_expand(mac, &key, &info_d, out, out_len);
	return rc < 0 ? -EIO : 0;
}

int
dpq_hkdf_initial_secrets(const uint8_t *dcid, size_t dcid_len,
		uint8_t *client_in, uint8_t *server_in)
{
	uint8_t initial[DPQ_INITIAL_SECRET_LEN];
	int rc;

	if (dcid_len > DPQ_CRYPTO_CID_MAX || (dcid == NULL && dcid_len))
		return -EINVAL;
	rc = dpq_hkdf_extract(DPQ_HASH_SHA256, initial_salt_v1,
			sizeof(initial_salt_v1), dcid, dcid_len, initial);
	if (rc == 0 && client_in != NULL)
		rc = dpq_hkdf_expand_label(DPQ_HASH_SHA256, initial,
				sizeof(initial), "client in", NULL, 0,
				client_in, DPQ_INITIAL_SECRET_LEN);
	if (rc == 0 && server_in != NULL)
		rc = dpq_hkdf_expand_label(DPQ_HASH_SHA256, initial,
				sizeof(initial), "server in", NULL, 0,
				server_in, DPQ_INITIAL_SECRET_LEN);
	gnutls_memset(initial, 0, sizeof(initial));
	return rc;
}
