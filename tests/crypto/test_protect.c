/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of burst packet protection: RFC 9001 A.2, A.3 and A.5 packets
 * sealed byte-exact and opened back; bursts mixing AEADs, keys and header
 * forms; tampering that must fail only the tampered packet; packets too
 * short for the header-protection sample; key phase switching; packet
 * number recovery (RFC 9000 §A.3).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/crypto/pp_key.h"
#include "rfc9001_vectors.h"
#include "test_util.h"

static struct dpq_crypto *cc;
/* Keys: [0] client Initial (A.1), [1] server Initial, [2] AES-256-GCM,
 * [3] ChaCha20 (A.5), [4] AES-128-GCM 1-RTT, [5] next phase of [4]. */
enum { K_CI, K_SI, K_A256, K_CHACHA, K_A128, K_A128_NEXT, K_NUM };
static struct dpq_pp_key *keys;

static int
setup(void **state)
{
	uint8_t dcid[8], secret[48];
	uint64_t s = 11;

	(void)state;
	cc = dpq_crypto_create();
	keys = aligned_alloc(64, K_NUM * sizeof(*keys));
	if (cc == NULL || keys == NULL)
		return -1;
	unhex(A_DCID, dcid, sizeof(dcid));
	if (dpq_pp_key_init_initial(cc, &keys[K_CI], dcid, 8, false) ||
			dpq_pp_key_init_initial(cc, &keys[K_SI], dcid, 8, true))
		return -1;
	test_fill(secret, sizeof(secret), &s);
	if (dpq_pp_key_init(cc, &keys[K_A256], DPQ_AEAD_AES_256_GCM, secret, 48))
		return -1;
	unhex(A5_SECRET, secret, sizeof(secret));
	if (dpq_pp_key_init(cc, &keys[K_CHACHA], DPQ_AEAD_CHACHA20_POLY1305,
			secret, 32))
		return -1;
	test_fill(secret, sizeof(secret), &s);
	if (dpq_pp_key_init(cc, &keys[K_A128], DPQ_AEAD_AES_128_GCM, secret, 32) ||
			dpq_pp_key_update(cc, &keys[K_A128_NEXT], &keys[K_A128]))
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < K_NUM; i++)
		dpq_pp_key_destroy(&keys[i]);
	free(keys);
	dpq_crypto_destroy(cc);
	return 0;
}

static void
assert_hex(const uint8_t *got, size_t len, const char *hex)
{
	uint8_t want[2048];
	size_t n = unhex(hex, want, sizeof(want));

	assert_int_equal(n, len);
	assert_memory_equal(got, want, len);
}

/* Seal one packet (header hex + payload) and compare with the RFC bytes;
 * then unprotect and open it back. */
static void
vector_both_ways(const struct dpq_pp_key *k, const char *hdr_hex,
		const uint8_t *payload, size_t plen, uint64_t pn,
		uint16_t pn_offset, uint8_t pn_len, const char *pkt_hex)
{
	uint8_t buf[1500], plain[1500];
	struct dpq_seal_op so;
	struct dpq_open_op oo;
	size_t hlen, len;

	hlen = unhex(hdr_hex, buf, sizeof(buf));
	assert_int_not_equal(hlen, 0);
	memcpy(buf + hlen, payload, plen);
	len = hlen + plen;
	memcpy(plain, buf, len);

	memset(&so, 0, sizeof(so));
	so.key = k;
	so.pkt = buf;
	so.len = (uint16_t)len;
	so.pn = pn;
	so.pn_offset = pn_offset;
	so.pn_len = pn_len;
	assert_int_equal(dpq_crypto_seal_burst(cc, &so, 1), 1);
	assert_int_equal(so.status, 0);
	assert_hex(buf, len + DPQ_CRYPTO_TAG_LEN, pkt_hex);

	memset(&oo, 0, sizeof(oo));
	oo.key = k;
	oo.pkt = buf;
	oo.len = (uint16_t)(len + DPQ_CRYPTO_TAG_LEN);
	oo.pn_offset = pn_offset;
	oo.largest_pn = pn - 1;
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &oo, 1), 1);
	assert_int_equal(oo.status, 0);
	assert_int_equal(oo.first_byte, plain[0]);
	assert_int_equal(oo.pn_len, pn_len);
	assert_int_equal(oo.pn, pn);
	assert_memory_equal(buf, plain, hlen);
	assert_int_equal(dpq_crypto_open_burst(cc, &oo, 1), 1);
	assert_int_equal(oo.status, 0);
	assert_memory_equal(buf, plain, len);
}

/* A.2: client Initial, 1162-byte padded CRYPTO payload, 1200 bytes. */
static void
test_a2_client_initial(void **state)
{
	uint8_t payload[1162];

	(void)state;
	memset(payload, 0, sizeof(payload));
	assert_int_equal(unhex(A2_CRYPTO_FRAME, payload, sizeof(payload)), 245);
	vector_both_ways(&keys[K_CI], A2_HEADER, payload, sizeof(payload), 2,
			18, 4, A2_PACKET);
}

/* A.3: server Initial, 2-byte packet number. */
static void
test_a3_server_initial(void **state)
{
	uint8_t payload[200];
	size_t n;

	(void)state;
	n = unhex(A3_PAYLOAD, payload, sizeof(payload));
	assert_int_equal(n, 99);
	vector_both_ways(&keys[K_SI], A3_HEADER, payload, n, 1, 18, 2,
			A3_PACKET);
}

/* A.5: ChaCha20-Poly1305 short header, pn 654360564 on 3 bytes. */
static void
test_a5_chacha_short(void **state)
{
	uint8_t payload[1];

	(void)state;
	unhex(A5_PLAINTEXT, payload, 1);
	vector_both_ways(&keys[K_CHACHA], A5_HEADER, payload, 1, A5_PN, 1, 3,
			A5_PACKET);
}

/* A test packet: its buffer, the plaintext copy and the op fields. */
struct tpkt {
	uint8_t *buf;		/* len + 16 bytes, malloc'd exactly */
	uint8_t *plain;
	const struct dpq_pp_key *key;
	uint64_t pn;
	uint16_t len, pn_offset;
	uint8_t pn_len;
};

/* Build a long (Initial-like) or short header packet with plen bytes of
 * payload. */
static void
tpkt_make(struct tpkt *t, const struct dpq_pp_key *k, bool long_hdr,
		uint8_t pn_len, uint64_t pn, size_t plen, uint8_t key_phase,
		uint64_t *s)
{
	size_t p = 0, hlen, j;
	uint8_t hdr[64];

	if (long_hdr) {
		hdr[p++] = (uint8_t)(0xc0 | (pn_len - 1));
		hdr[p++] = 0;
		hdr[p++] = 0;
		hdr[p++] = 0;
		hdr[p++] = 1;
		hdr[p++] = 8;
		test_fill(hdr + p, 8, s);
		p += 8;
		hdr[p++] = 0;	/* SCID length */
		hdr[p++] = 0;	/* token length */
		/* Length: pn + payload + tag, 2-byte varint. */
		hdr[p++] = (uint8_t)(0x40 | ((pn_len + plen + 16) >> 8));
		hdr[p++] = (uint8_t)(pn_len + plen + 16);
	} else {
		hdr[p++] = (uint8_t)(0x40 | key_phase | (pn_len - 1));
		test_fill(hdr + p, 8, s);
		p += 8;
	}
	t->pn_offset = (uint16_t)p;
	for (j = 0; j < pn_len; j++)
		hdr[p++] = (uint8_t)(pn >> (8 * (pn_len - 1 - j)));
	hlen = p;
	t->len = (uint16_t)(hlen + plen);
	t->buf = malloc(t->len + DPQ_CRYPTO_TAG_LEN);
	t->plain = malloc(t->len);
	assert_non_null(t->buf);
	assert_non_null(t->plain);
	memcpy(t->buf, hdr, hlen);
	test_fill(t->buf + hlen, plen, s);
	memcpy(t->plain, t->buf, t->len);
	t->key = k;
	t->pn = pn;
	t->pn_len = pn_len;
}

static void
tpkt_free(struct tpkt *t, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(t[i].buf);
		free(t[i].plain);
	}
}

static void
seal_ops_of(struct dpq_seal_op *so, const struct tpkt *t, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		memset(&so[i], 0, sizeof(so[i]));
		so[i].key = t[i].key;
		so[i].pkt = t[i].buf;
		so[i].len = t[i].len;
		so[i].pn = t[i].pn;
		so[i].pn_offset = t[i].pn_offset;
		so[i].pn_len = t[i].pn_len;
		so[i].status = 12345;
	}
}

static void
open_ops_of(struct dpq_open_op *oo, const struct tpkt *t, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		memset(&oo[i], 0, sizeof(oo[i]));
		oo[i].key = t[i].key;
		oo[i].pkt = t[i].buf;
		oo[i].len = (uint16_t)(t[i].len + DPQ_CRYPTO_TAG_LEN);
		oo[i].pn_offset = t[i].pn_offset;
		oo[i].largest_pn = t[i].pn - 1;
		oo[i].status = 12345;
	}
}

static const int mix_keys[] = { K_CI, K_SI, K_A256, K_CHACHA, K_A128 };
#define NMIX (sizeof(mix_keys) / sizeof(mix_keys[0]))

/* Seal n packets mixing all AEADs, five keys interleaved, long and short
 * headers, pn lengths 1-4 and sizes 4-1350; the burst result must equal
 * sealing each packet alone; then open them all back. */
static void
mixed_roundtrip(unsigned n, uint64_t seed)
{
	struct tpkt *t = calloc(n, sizeof(*t));
	struct dpq_seal_op *so = calloc(n, sizeof(*so));
	struct dpq_open_op *oo = calloc(n, sizeof(*oo));
	uint8_t *single;
	uint64_t s = seed;
	unsigned i;

	assert_non_null(t);
	assert_non_null(so);
	assert_non_null(oo);
	for (i = 0; i < n; i++) {
		uint8_t pnl = (uint8_t)(1 + i % 4);
		size_t plen = 4 + test_rand(&s) % 1347;
		uint64_t pn = (test_rand(&s) % 100000) + 1;

		tpkt_make(&t[i], &keys[mix_keys[(i * 7 + seed) % NMIX]],
				(i / 3) % 2, pnl, pn, plen, 0, &s);
	}
	seal_ops_of(so, t, n);
	assert_int_equal(dpq_crypto_seal_burst(cc, so, (uint16_t)n), n);
	for (i = 0; i < n; i++) {
		struct dpq_seal_op one;

		assert_int_equal(so[i].status, 0);
		/* Header protection changed the pn bytes or first byte, or
		 * the payload is ciphertext now. */
		assert_memory_not_equal(t[i].buf, t[i].plain, t[i].len);
		single = malloc(t[i].len + DPQ_CRYPTO_TAG_LEN);
		assert_non_null(single);
		memcpy(single, t[i].plain, t[i].len);
		one = so[i];
		one.pkt = single;
		assert_int_equal(dpq_crypto_seal_burst(cc, &one, 1), 1);
		assert_memory_equal(single, t[i].buf,
				t[i].len + DPQ_CRYPTO_TAG_LEN);
		free(single);
	}
	open_ops_of(oo, t, n);
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, oo, (uint16_t)n), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(oo[i].status, 0);
		assert_int_equal(oo[i].first_byte, t[i].plain[0]);
		assert_int_equal(oo[i].pn_len, t[i].pn_len);
		assert_int_equal(oo[i].pn, t[i].pn);
	}
	assert_int_equal(dpq_crypto_open_burst(cc, oo, (uint16_t)n), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(oo[i].status, 0);
		assert_memory_equal(t[i].buf, t[i].plain, t[i].len);
	}
	tpkt_free(t, n);
	free(t);
	free(so);
	free(oo);
}

static void
test_burst_1(void **state)
{
	(void)state;
	mixed_roundtrip(1, 1);
	mixed_roundtrip(1, 3);	/* the ChaCha key */
}

static void
test_burst_32(void **state)
{
	(void)state;
	mixed_roundtrip(32, 2);
}

static void
test_burst_64(void **state)
{
	(void)state;
	mixed_roundtrip(64, 3);
}

/* Above the internal chunk size the burst is split transparently. */
static void
test_burst_150(void **state)
{
	(void)state;
	mixed_roundtrip(150, 4);
}

/* AES-256-GCM alone, long and short, round trip. */
static void
test_aes256_roundtrip(void **state)
{
	struct tpkt t[4];
	struct dpq_seal_op so[4];
	struct dpq_open_op oo[4];
	uint64_t s = 99;
	unsigned i;

	(void)state;
	for (i = 0; i < 4; i++)
		tpkt_make(&t[i], &keys[K_A256], i & 1, (uint8_t)(1 + i), 1000 + i,
				i == 0 ? 3 : 1300, 0, &s);
	seal_ops_of(so, t, 4);
	assert_int_equal(dpq_crypto_seal_burst(cc, so, 4), 4);
	open_ops_of(oo, t, 4);
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, oo, 4), 4);
	assert_int_equal(dpq_crypto_open_burst(cc, oo, 4), 4);
	for (i = 0; i < 4; i++)
		assert_memory_equal(t[i].buf, t[i].plain, t[i].len);
	tpkt_free(t, 4);
}

enum tamper { T_NONE, T_CIPHERTEXT, T_TAG, T_HEADER, T_PN };

/* In a burst of 12 packets of key k, tamper with four after sealing:
 * exactly those fail with -EBADMSG, the others open intact. */
static void
tamper_burst(const struct dpq_pp_key *k, bool long_hdr)
{
	enum { N = 12 };
	static const enum tamper what[N] = {
		T_NONE, T_CIPHERTEXT, T_NONE, T_TAG, T_NONE, T_HEADER,
		T_NONE, T_PN, T_NONE, T_NONE, T_CIPHERTEXT, T_NONE,
	};
	struct tpkt t[N];
	struct dpq_seal_op so[N];
	struct dpq_open_op oo[N];
	uint64_t s = 5;
	unsigned i, bad = 0;

	for (i = 0; i < N; i++)
		tpkt_make(&t[i], k, long_hdr, 2, 500 + i, 200, 0, &s);
	seal_ops_of(so, t, N);
	assert_int_equal(dpq_crypto_seal_burst(cc, so, N), N);
	for (i = 0; i < N; i++) {
		uint8_t *b = t[i].buf;

		switch (what[i]) {
		case T_CIPHERTEXT:
			b[t[i].pn_offset + 2 + 100] ^= 0x01;
			break;
		case T_TAG:
			b[t[i].len + 15] ^= 0x80;
			break;
		case T_HEADER:	/* a DCID byte: AAD */
			b[long_hdr ? 7 : 2] ^= 0x10;
			break;
		case T_PN:	/* protected packet number, low byte */
			b[t[i].pn_offset + 1] ^= 0x01;
			break;
		default:
			continue;
		}
		bad++;
	}
	open_ops_of(oo, t, N);
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, oo, N), N);
	assert_int_equal(dpq_crypto_open_burst(cc, oo, N), N - bad);
	for (i = 0; i < N; i++) {
		if (what[i] == T_NONE) {
			assert_int_equal(oo[i].status, 0);
			assert_memory_equal(t[i].buf, t[i].plain, t[i].len);
		} else {
			assert_int_equal(oo[i].status, -EBADMSG);
		}
	}
	tpkt_free(t, N);
}

static void
test_tamper_aes128(void **state)
{
	(void)state;
	tamper_burst(&keys[K_A128], false);
	tamper_burst(&keys[K_CI], true);
}

static void
test_tamper_aes256(void **state)
{
	(void)state;
	tamper_burst(&keys[K_A256], false);
}

static void
test_tamper_chacha(void **state)
{
	(void)state;
	tamper_burst(&keys[K_CHACHA], false);
	tamper_burst(&keys[K_CHACHA], true);
}

/* Receive: packets too short for the HP sample fail with -EINVAL in the
 * HP stage (exact-size buffers: ASan catches any read past len), are
 * skipped by open, and do not disturb their neighbours. */
static void
test_too_short_open(void **state)
{
	enum { N = 6 };
	struct tpkt t[N];
	struct dpq_open_op oo[N];
	uint8_t *shortp[3];
	uint64_t s = 17;
	unsigned i;

	(void)state;
	for (i = 0; i < N; i++)
		tpkt_make(&t[i], &keys[i % 2 ? K_CHACHA : K_A128], false, 4,
				77 + i, 64, 0, &s);
	{
		struct dpq_seal_op so[N];

		seal_ops_of(so, t, N);
		assert_int_equal(dpq_crypto_seal_burst(cc, so, N), N);
	}
	open_ops_of(oo, t, N);
	/* ops 1, 3, 4 get truncated copies: 28 bytes (1 short of the
	 * sample for pn_offset 9), 10 bytes, and 0 bytes. */
	shortp[0] = malloc(28);
	shortp[1] = malloc(10);
	shortp[2] = malloc(1);
	memcpy(shortp[0], t[1].buf, 28);
	memcpy(shortp[1], t[3].buf, 10);
	oo[1].pkt = shortp[0];
	oo[1].len = 28;
	oo[3].pkt = shortp[1];
	oo[3].len = 10;
	oo[4].pkt = shortp[2];
	oo[4].len = 0;
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, oo, N), N - 3);
	assert_int_equal(oo[1].status, -EINVAL);
	assert_int_equal(oo[3].status, -EINVAL);
	assert_int_equal(oo[4].status, -EINVAL);
	assert_int_equal(dpq_crypto_open_burst(cc, oo, N), N - 3);
	for (i = 0; i < N; i++) {
		if (i == 1 || i == 3 || i == 4) {
			assert_int_equal(oo[i].status, -EINVAL);
			continue;
		}
		assert_int_equal(oo[i].status, 0);
		assert_memory_equal(t[i].buf, t[i].plain, t[i].len);
	}
	/* The minimum length (sample exactly at the end) passes HP. */
	{
		struct dpq_open_op o = oo[0];
		uint8_t *m = malloc(29);

		memcpy(m, t[0].buf, 29);
		o.pkt = m;
		o.len = 29;
		o.status = 0;
		assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &o, 1), 1);
		/* ...and its AEAD fails cleanly (tag is not the real one). */
		assert_int_equal(dpq_crypto_open_burst(cc, &o, 1), 0);
		assert_int_equal(o.status, -EBADMSG);
		free(m);
	}
	for (i = 0; i < 3; i++)
		free(shortp[i]);
	tpkt_free(t, N);
}

/* Send: a payload too short to leave a sample (pn_offset + 4 > len) and
 * malformed ops are refused; the rest of the burst is sealed. */
static void
test_too_short_and_bad_seal(void **state)
{
	enum { N = 7 };
	struct tpkt t[N];
	struct dpq_seal_op so[N];
	uint64_t s = 23;
	unsigned i;

	(void)state;
	for (i = 0; i < N; i++)
		tpkt_make(&t[i], &keys[K_A128], false, 1, 10 + i,
				i == 1 ? 2 : 3, 0, &s);
	seal_ops_of(so, t, N);
	/* op 1: pn_len 1 + payload 2 < 4 -> no sample. */
	so[2].key = NULL;
	so[3].pn_len = 2;	/* disagrees with the first byte */
	so[4].pn_offset = so[4].len;	/* pn beyond len */
	so[5].pn = DPQ_PN_MAX + 1;
	assert_int_equal(dpq_crypto_seal_burst(cc, so, N), 2);
	for (i = 1; i <= 5; i++) {
		assert_int_equal(so[i].status, -EINVAL);
		/* Refused packets are left untouched. */
		assert_memory_equal(t[i].buf, t[i].plain, t[i].len);
	}
	assert_int_equal(so[0].status, 0);
	assert_int_equal(so[6].status, 0);
	/* The minimal legal packet (pn_len 1, payload 3) opens again. */
	{
		struct dpq_open_op oo[N];

		open_ops_of(oo, t, N);
		assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &oo[0], 1), 1);
		assert_int_equal(dpq_crypto_open_burst(cc, &oo[0], 1), 1);
		assert_memory_equal(t[0].buf, t[0].plain, t[0].len);
	}
	/* NULL context: every op is refused. */
	seal_ops_of(so, t, 1);
	assert_int_equal(dpq_crypto_seal_burst(NULL, so, 1), 0);
	assert_int_equal(so[0].status, -EINVAL);
	assert_int_equal(dpq_crypto_seal_burst(cc, NULL, 1), 0);
	tpkt_free(t, N);
}

/* Key phase (RFC 9001 §6): a packet sealed with the next key carries
 * KEY_PHASE=1; the receiver removes HP with the current key (the HP key
 * does not change), reads the bit, and opens with the next key. */
static void
test_key_phase_switch(void **state)
{
	struct tpkt t;
	struct dpq_seal_op so;
	struct dpq_open_op oo, copy;
	uint8_t *dup;
	uint64_t s = 31;

	(void)state;
	tpkt_make(&t, &keys[K_A128_NEXT], false, 2, 4242, 300, 0x04, &s);
	seal_ops_of(&so, &t, 1);
	assert_int_equal(dpq_crypto_seal_burst(cc, &so, 1), 1);
	dup = malloc(t.len + DPQ_CRYPTO_TAG_LEN);
	memcpy(dup, t.buf, t.len + DPQ_CRYPTO_TAG_LEN);

	open_ops_of(&oo, &t, 1);
	oo.key = &keys[K_A128];
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &oo, 1), 1);
	assert_int_equal(oo.first_byte & 0x04, 0x04);
	assert_int_equal(oo.pn, 4242);
	copy = oo;
	copy.pkt = dup;
	/* Current key: authentication fails. */
	memcpy(dup, t.buf, (size_t)t.pn_offset + oo.pn_len);
	assert_int_equal(dpq_crypto_open_burst(cc, &copy, 1), 0);
	assert_int_equal(copy.status, -EBADMSG);
	/* Next key: opens. */
	oo.key = &keys[K_A128_NEXT];
	assert_int_equal(dpq_crypto_open_burst(cc, &oo, 1), 1);
	assert_memory_equal(t.buf, t.plain, t.len);
	free(dup);
	tpkt_free(&t, 1);
}

/* Ops with a non-zero status are skipped by open and keep their status. */
static void
test_open_skips_flagged(void **state)
{
	struct tpkt t[2];
	struct dpq_seal_op so[2];
	struct dpq_open_op oo[2];
	uint64_t s = 41;

	(void)state;
	tpkt_make(&t[0], &keys[K_CHACHA], true, 4, 9, 100, 0, &s);
	tpkt_make(&t[1], &keys[K_CHACHA], true, 4, 10, 100, 0, &s);
	seal_ops_of(so, t, 2);
	assert_int_equal(dpq_crypto_seal_burst(cc, so, 2), 2);
	open_ops_of(oo, t, 2);
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, oo, 2), 2);
	oo[0].status = -EPROTO;	/* e.g. reserved bits set */
	assert_int_equal(dpq_crypto_open_burst(cc, oo, 2), 1);
	assert_int_equal(oo[0].status, -EPROTO);
	assert_int_equal(oo[1].status, 0);
	assert_memory_equal(t[1].buf, t[1].plain, t[1].len);
	tpkt_free(t, 2);
}

/* A truncated pn that recovers above 2^62 - 1 (largest_pn at the limit)
 * is dropped by the HP stage and skipped by open. */
static void
test_pn_beyond_max(void **state)
{
	struct tpkt t;
	struct dpq_seal_op so;
	struct dpq_open_op oo;
	uint64_t s = 51;

	(void)state;
	tpkt_make(&t, &keys[K_A128], false, 1, DPQ_PN_MAX - 255, 40, 0, &s);
	seal_ops_of(&so, &t, 1);
	assert_int_equal(dpq_crypto_seal_burst(cc, &so, 1), 1);
	open_ops_of(&oo, &t, 1);
	oo.largest_pn = DPQ_PN_MAX;	/* expected 2^62: decodes to 2^62 */
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &oo, 1), 0);
	assert_int_equal(oo.status, -EINVAL);
	assert_int_equal(dpq_crypto_open_burst(cc, &oo, 1), 0);
	assert_int_equal(oo.status, -EINVAL);
	tpkt_free(&t, 1);
}

/* RFC 9000 §A.3 packet number recovery, as the HP stage uses it (the
 * codec's dpq_pkt_pn_decode). */
static void
test_decode_pn(void **state)
{
	(void)state;
	/* The RFC's example. */
	assert_int_equal(dpq_pkt_pn_decode(0xa82f30ea, 0x9b32, 2),
			0xa82f9b32);
	/* Nothing received yet: expected pn is 0. */
	assert_int_equal(dpq_pkt_pn_decode(DPQ_PN_NONE, 0, 1), 0);
	assert_int_equal(dpq_pkt_pn_decode(DPQ_PN_NONE, 2, 4), 2);
	/* Window forward and backward. */
	assert_int_equal(dpq_pkt_pn_decode(0xff, 0x01, 1), 0x101);
	assert_int_equal(dpq_pkt_pn_decode(0x100, 0xff, 1), 0xff);
	assert_int_equal(dpq_pkt_pn_decode(0x17f, 0x00, 1), 0x200);
	assert_int_equal(dpq_pkt_pn_decode(A5_PN - 1, 0xbff4, 3), A5_PN);
	/* Never above 2^62 - 1. */
	assert_true(dpq_pkt_pn_decode(DPQ_PN_MAX - 1, 0x00, 1) <= DPQ_PN_MAX);
	assert_int_equal(dpq_pkt_pn_decode(DPQ_PN_MAX - 1, 0xff, 1),
			DPQ_PN_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a2_client_initial),
		cmocka_unit_test(test_a3_server_initial),
		cmocka_unit_test(test_a5_chacha_short),
		cmocka_unit_test(test_burst_1),
		cmocka_unit_test(test_burst_32),
		cmocka_unit_test(test_burst_64),
		cmocka_unit_test(test_burst_150),
		cmocka_unit_test(test_aes256_roundtrip),
		cmocka_unit_test(test_tamper_aes128),
		cmocka_unit_test(test_tamper_aes256),
		cmocka_unit_test(test_tamper_chacha),
		cmocka_unit_test(test_too_short_open),
		cmocka_unit_test(test_too_short_and_bad_seal),
		cmocka_unit_test(test_key_phase_switch),
		cmocka_unit_test(test_open_skips_flagged),
		cmocka_unit_test(test_pn_beyond_max),
		cmocka_unit_test(test_decode_pn),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
