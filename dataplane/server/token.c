/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * token.c: address-validation tokens (RFC 9000 §8.1) sealed with
 * AES-128-GCM, and stateless reset tokens and packets (RFC 9000 §10.3).
 * See token.h for the token layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "token.h"

#define TOKEN_TYPE_SHIFT 6
#define TOKEN_KEY_ID_MASK 0x3f
/* Largest plaintext: issued, family, IPv6, port, two CIDs with lengths. */
#define TOKEN_PT_MAX (DPQ_TOKEN_MAX_LEN - DPQ_TOKEN_HDR_LEN - DPQ_TOKEN_TAG_LEN)

struct token_key {
	gnutls_aead_cipher_hd_t hd;	/* NULL: no key in this slot */
	uint8_t id;
};

struct dpq_tokens {
	struct dpq_token_cfg cfg;
	struct token_key cur;
	struct token_key prev;
};

void
dpq_token_cfg_default(struct dpq_token_cfg *cfg)
{
	cfg->retry_lifetime = DPQ_TOKEN_RETRY_LIFETIME_DEFAULT;
	cfg->new_lifetime = DPQ_TOKEN_NEW_LIFETIME_DEFAULT;
	cfg->new_v4_prefix = 32;
	cfg->new_v6_prefix = 128;
}

static bool
cfg_ok(const struct dpq_token_cfg *cfg)
{
	return cfg->new_v4_prefix >= 1 && cfg->new_v4_prefix <= 32 &&
		cfg->new_v6_prefix >= 1 && cfg->new_v6_prefix <= 128 &&
		cfg->retry_lifetime != 0 && cfg->new_lifetime != 0;
}

struct dpq_tokens *
dpq_tokens_create(const struct dpq_token_cfg *cfg)
{
	struct dpq_tokens *t;

	if (cfg != NULL && !cfg_ok(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	if (cfg != NULL)
		t->cfg = *cfg;
	else
		dpq_token_cfg_default(&t->cfg);
	return t;
}

static void
key_clear(struct token_key *k)
{
	if (k->hd != NULL)
		gnutls_aead_cipher_deinit(k->hd);
	k->hd = NULL;
}

void
dpq_tokens_destroy(struct dpq_tokens *t)
{
	if (t == NULL)
		return;
	key_clear(&t->cur);
	key_clear(&t->prev);
	free(t);
}

int
dpq_tokens_set_key(struct dpq_tokens *t, uint8_t key_id,
		const uint8_t key[DPQ_TOKEN_KEY_LEN])
{
	gnutls_aead_cipher_hd_t hd;
	gnutls_datum_t d;

	if (t == NULL || key == NULL || key_id > DPQ_TOKEN_KEY_ID_MAX ||
			(t->cur.hd != NULL && t->cur.id == key_id))
		return -EINVAL;
	d.data = (unsigned char *)(uintptr_t)key;
	d.size = DPQ_TOKEN_KEY_LEN;
	if (gnutls_aead_cipher_init(&hd, GNUTLS_CIPHER_AES_128_GCM, &d) < 0)
		return -EIO;
	key_clear(&t->prev);
	t->prev = t->cur;
	t->cur.hd = hd;
	t->cur.id = key_id;
	return 0;
}

static int
key_make(struct token_key *k, uint8_t id, const uint8_t *key)
{
	gnutls_datum_t d;

	d.data = (unsigned char *)(uintptr_t)key;
	d.size = DPQ_TOKEN_KEY_LEN;
	k->id = id;
	k->hd = NULL;
	return gnutls_aead_cipher_init(&k->hd, GNUTLS_CIPHER_AES_128_GCM,
			&d) < 0 ? -EIO : 0;
}

int
dpq_tokens_set_keys(struct dpq_tokens *t, uint8_t cur_id,
		const uint8_t cur[DPQ_TOKEN_KEY_LEN], uint8_t prev_id,
		const uint8_t *prev)
{
	struct token_key c, p = { NULL, 0 };

	if (t == NULL || cur == NULL || cur_id > DPQ_TOKEN_KEY_ID_MAX ||
			(prev != NULL && prev_id > DPQ_TOKEN_KEY_ID_MAX))
		return -EINVAL;
	if (key_make(&c, cur_id, cur) != 0)
		return -EIO;
	if (prev != NULL && key_make(&p, prev_id, prev) != 0) {
		key_clear(&c);
		return -EIO;
	}
	key_clear(&t->cur);
	key_clear(&t->prev);
	t->cur = c;
	t->prev = p;
	return 0;
}

int
dpq_tokens_set_cfg(struct dpq_tokens *t, const struct dpq_token_cfg *cfg)
{
	if (t == NULL || cfg == NULL || !cfg_ok(cfg))
		return -EINVAL;
	t->cfg = *cfg;
	return 0;
}

const struct dpq_token_cfg *
dpq_tokens_cfg(const struct dpq_tokens *t)
{
	return &t->cfg;
}

const uint8_t *
dpq_token_nonce(const uint8_t *tok, size_t len)
{
	return tok != NULL && len >= DPQ_TOKEN_HDR_LEN ? tok + 1 : NULL;
}

static void
put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static size_t
ip_len(uint8_t family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

/* Plaintext of info into pt; returns its length or 0 if info is invalid. */
static size_t
token_plaintext(const struct dpq_token_info *info, uint8_t *pt)
{
	size_t n = 0, alen = ip_len(info->addr.family);

	if (alen == 0 || (info->type != DPQ_TOKEN_RETRY &&
			info->type != DPQ_TOKEN_NEW))
		return 0;
	put64(pt, info->issued);
	n = 8;
	pt[n++] = alen == 4 ? 4 : 6;
	memcpy(pt + n, info->addr.ip, alen);
	n += alen;
	if (info->type == DPQ_TOKEN_NEW)
		return n;
	if (info->odcid.len > DPQ_MAX_CID_LEN ||
			info->retry_scid.len > DPQ_MAX_CID_LEN)
		return 0;
	pt[n++] = (uint8_t)(info->addr.port >> 8);
	pt[n++] = (uint8_t)info->addr.port;
	pt[n++] = info->odcid.len;
	memcpy(pt + n, info->odcid.bytes, info->odcid.len);
	n += info->odcid.len;
	pt[n++] = info->retry_scid.len;
	memcpy(pt + n, info->retry_scid.bytes, info->retry_scid.len);
	n += info->retry_scid.len;
	return n;
}

ssize_t
dpq_token_seal(struct dpq_tokens *t, const struct dpq_token_info *info,
		const struct dpq_rand *rnd, uint8_t *out, size_t out_len)
{
	uint8_t pt[TOKEN_PT_MAX];
	size_t n, ct_len;

	if (t == NULL || info == NULL || rnd == NULL || rnd->fill == NULL ||
			out == NULL)
		return -EINVAL;
	if (t->cur.hd == NULL)
		return -ENOKEY;
	n = token_plaintext(info, pt);
	if (n == 0)
		return -EINVAL;
	if (out_len < DPQ_TOKEN_HDR_LEN + n + DPQ_TOKEN_TAG_LEN)
		return -ENOSPC;
	out[0] = (uint8_t)(info->type << TOKEN_TYPE_SHIFT | t->cur.id);
	rnd->fill(rnd->ctx, out + 1, DPQ_TOKEN_NONCE_LEN);
	ct_len = out_len - DPQ_TOKEN_HDR_LEN;
	if (gnutls_aead_cipher_encrypt(t->cur.hd, out + 1, DPQ_TOKEN_NONCE_LEN,
			out, 1, DPQ_TOKEN_TAG_LEN, pt, n,
			out + DPQ_TOKEN_HDR_LEN, &ct_len) < 0 ||
			ct_len != n + DPQ_TOKEN_TAG_LEN) {
		explicit_bzero(pt, sizeof(pt));
		return -EIO;
	}
	explicit_bzero(pt, sizeof(pt));
	return (ssize_t)(DPQ_TOKEN_HDR_LEN + ct_len);
}

enum dpq_token_type
dpq_token_peek_type(const uint8_t *tok, size_t len)
{
	unsigned int type;

	if (tok == NULL || len == 0)
		return DPQ_TOKEN_ANY;
	type = tok[0] >> TOKEN_TYPE_SHIFT;
	if (type == DPQ_TOKEN_RETRY || type == DPQ_TOKEN_NEW)
		return (enum dpq_token_type)type;
	return DPQ_TOKEN_ANY;
}

/* Parse an authenticated plaintext strictly: every byte accounted for. */
static int
token_parse(enum dpq_token_type type, const uint8_t *p, size_t n,
		struct dpq_token_info *info)
{
	const uint8_t *end = p + n;
	size_t alen;

	memset(info, 0, sizeof(*info));
	info->type = type;
	if (n < 9)
		return -EBADMSG;
	info->issued = get64(p);
	p += 8;
	if (*p == 4)
		info->addr.family = AF_INET;
	else if (*p == 6)
		info->addr.family = AF_INET6;
	else
		return -EBADMSG;
	p++;
	alen = ip_len(info->addr.family);
	if ((size_t)(end - p) < alen)
		return -EBADMSG;
	memcpy(info->addr.ip, p, alen);
	p += alen;
	if (type == DPQ_TOKEN_NEW)
		return p == end ? 0 : -EBADMSG;
	if (end - p < 3)
		return -EBADMSG;
	info->addr.port = (uint16_t)(p[0] << 8 | p[1]);
	p += 2;
	if (*p > DPQ_MAX_CID_LEN || (size_t)(end - p - 1) < *p)
		return -EBADMSG;
	info->odcid.len = *p++;
	memcpy(info->odcid.bytes, p, info->odcid.len);
	p += info->odcid.len;
	if (end - p < 1 || *p > DPQ_MAX_CID_LEN ||
			(size_t)(end - p - 1) != *p)
		return -EBADMSG;
	info->retry_scid.len = *p++;
	memcpy(info->retry_scid.bytes, p, info->retry_scid.len);
	return 0;
}

/* Do the first bits leading bits of a and b agree? */
static bool
prefix_eq(const uint8_t *a, const uint8_t *b, unsigned int bits)
{
	unsigned int whole = bits / 8, rest = bits % 8;
	uint8_t mask;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return ((a[whole] ^ b[whole]) & mask) == 0;
}

int
dpq_token_open(struct dpq_tokens *t, const uint8_t *tok, size_t len,
		enum dpq_token_type expect, const struct dpq_netaddr *peer,
		uint64_t now, struct dpq_token_info *info)
{
	uint8_t pt[TOKEN_PT_MAX + DPQ_TOKEN_TAG_LEN];
	const struct token_key *k;
	enum dpq_token_type type;
	size_t pt_len, alen;
	uint64_t lifetime;
	unsigned int id, bits;
	int rc;

	if (t == NULL || tok == NULL || peer == NULL || info == NULL)
		return -EINVAL;
	if (len < DPQ_TOKEN_MIN_LEN || len > DPQ_TOKEN_MAX_LEN)
		return -EMSGSIZE;
	type = dpq_token_peek_type(tok, len);
	if (type == DPQ_TOKEN_ANY)
		return -EBADMSG;
	/* The key the id names; keys derived for a fleet (set_keys) may
	 * share an id, so the previous key is tried when the current one's
	 * tag does not match. */
	id = tok[0] & TOKEN_KEY_ID_MASK;
	rc = -EBADMSG;
	for (k = &t->cur; k != NULL; k = k == &t->cur ? &t->prev : NULL) {
		if (k->hd == NULL || k->id != id)
			continue;
		pt_len = sizeof(pt);
		if (gnutls_aead_cipher_decrypt(k->hd, tok + 1,
				DPQ_TOKEN_NONCE_LEN, tok, 1, DPQ_TOKEN_TAG_LEN,
				tok + DPQ_TOKEN_HDR_LEN, len - DPQ_TOKEN_HDR_LEN,
				pt, &pt_len) >= 0) {
			rc = 0;
			break;
		}
	}
	if (rc != 0)
		return -EBADMSG;
	rc = token_parse(type, pt, pt_len, info);
	explicit_bzero(pt, sizeof(pt));
	if (rc != 0)
		return rc;
	if (expect != DPQ_TOKEN_ANY && expect != type)
		return -EPROTOTYPE;
	/* Expiry (§8.1.3 SHOULD have one; §8.1.4 Retry tokens briefly). */
	lifetime = type == DPQ_TOKEN_RETRY ? t->cfg.retry_lifetime :
			t->cfg.new_lifetime;
	if (info->issued > now) {
		if (info->issued - now > DPQ_TOKEN_FUTURE_SKEW)
			return -ETIMEDOUT;
	} else if (now - info->issued >= lifetime) {
		return -ETIMEDOUT;
	}
	/* Address (§8.1.4): Retry exact IP and port, NEW_TOKEN the IP or,
	 * by configuration, its prefix. */
	alen = ip_len(info->addr.family);
	if (peer->family != info->addr.family)
		return -EADDRNOTAVAIL;
	info->addr_exact = memcmp(peer->ip, info->addr.ip, alen) == 0;
	if (type == DPQ_TOKEN_RETRY) {
		info->addr_exact = info->addr_exact &&
				peer->port == info->addr.port;
		return info->addr_exact ? 0 : -EADDRNOTAVAIL;
	}
	bits = alen == 4 ? t->cfg.new_v4_prefix : t->cfg.new_v6_prefix;
	if (!info->addr_exact && !prefix_eq(peer->ip, info->addr.ip, bits))
		return -EADDRNOTAVAIL;
	return 0;
}

/* ---- Stateless reset ---------------------------------------------------- */

int
dpq_sreset_token(const uint8_t *key, size_t key_len, const uint8_t *cid,
		size_t cid_len, uint8_t token[DPQ_RESET_TOKEN_LEN])
{
	uint8_t mac[32];

	if (key == NULL || cid == NULL || token == NULL ||
			key_len < DPQ_SRESET_KEY_MIN ||
			key_len > DPQ_SRESET_KEY_MAX || cid_len == 0 ||
			cid_len > DPQ_MAX_CID_LEN)
		return -EINVAL;
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, key_len, cid, cid_len,
			mac) < 0)
		return -EIO;
	memcpy(token, mac, DPQ_RESET_TOKEN_LEN);
	explicit_bzero(mac, sizeof(mac));
	return 0;
}

size_t
dpq_sreset_len(size_t trigger_len, uint32_t r)
{
	size_t hi;

	if (trigger_len < DPQ_SRESET_MIN_TRIGGER)
		return 0;
	if (trigger_len <= DPQ_SRESET_SMALL_TRIGGER)
		return trigger_len - 1;
	hi = trigger_len - 1;
	if (hi > DPQ_SRESET_MAX_LEN)
		hi = DPQ_SRESET_MAX_LEN;
	return DPQ_SRESET_LARGE_MIN + r % (hi - DPQ_SRESET_LARGE_MIN + 1);
}

ssize_t
dpq_sreset_build(const uint8_t token[DPQ_RESET_TOKEN_LEN], size_t trigger_len,
		const struct dpq_rand *rnd, uint8_t *out, size_t out_len)
{
	uint8_t rb[4];
	size_t n;

	if (token == NULL || rnd == NULL || rnd->fill == NULL || out == NULL)
		return -EINVAL;
	rnd->fill(rnd->ctx, rb, sizeof(rb));
	n = dpq_sreset_len(trigger_len, (uint32_t)rb[0] << 24 |
			(uint32_t)rb[1] << 16 | (uint32_t)rb[2] << 8 | rb[3]);
	if (n == 0)
		return -EINVAL;
	if (out_len < n)
		return -ENOSPC;
	rnd->fill(rnd->ctx, out, n - DPQ_RESET_TOKEN_LEN);
	/* §10.3: looks like a short header: 0b01, then unpredictable bits. */
	out[0] = (uint8_t)((out[0] & 0x3f) | 0x40);
	memcpy(out + n - DPQ_RESET_TOKEN_LEN, token, DPQ_RESET_TOKEN_LEN);
	return (ssize_t)n;
}
