/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the QUIC key schedule: HKDF-Expand-Label, Initial secrets and
 * keys (RFC 9001 A.1), ChaCha20 keys and "quic ku" (A.5), key update
 * (§6.1), cipher suite mapping, nonces (§5.3) and AES-ECB.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/crypto/hkdf.h"
#include "dataplane/crypto/pp_key.h"
#include "rfc9001_vectors.h"
#include "test_util.h"

static struct dpq_crypto *cc;

static int
setup(void **state)
{
	(void)state;
	cc = dpq_crypto_create();
	return cc == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
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

/* A.1: initial_secret, client/server secrets, key, iv, hp. */
static void
test_a1_initial_secrets(void **state)
{
	uint8_t dcid[8], salt[20], prk[32], cs[32], ss[32];
	struct dpq_pp_key_material m;

	(void)state;
	assert_int_equal(unhex(A_DCID, dcid, sizeof(dcid)), 8);
	assert_int_equal(unhex(A_INITIAL_SALT, salt, sizeof(salt)), 20);
	assert_int_equal(dpq_hkdf_extract(DPQ_HASH_SHA256, salt, 20, dcid, 8,
			prk), 0);
	assert_hex(prk, 32, A1_INITIAL_SECRET);

	assert_int_equal(dpq_hkdf_initial_secrets(dcid, 8, cs, ss), 0);
	assert_hex(cs, 32, A1_CLIENT_SECRET);
	assert_hex(ss, 32, A1_SERVER_SECRET);

	assert_int_equal(dpq_pp_key_derive(DPQ_AEAD_AES_128_GCM, cs, 32, &m), 0);
	assert_int_equal(m.key_len, 16);
	assert_hex(m.key, 16, A1_CLIENT_KEY);
	assert_hex(m.iv, 12, A1_CLIENT_IV);
	assert_hex(m.hp, 16, A1_CLIENT_HP);

	assert_int_equal(dpq_pp_key_derive(DPQ_AEAD_AES_128_GCM, ss, 32, &m), 0);
	assert_hex(m.key, 16, A1_SERVER_KEY);
	assert_hex(m.iv, 12, A1_SERVER_IV);
	assert_hex(m.hp, 16, A1_SERVER_HP);
}

/* Installed Initial keys carry the A.1 iv and HP key: the AES HP key
 * turns the A.2/A.3 samples into the RFC's masks. */
static void
test_a1_installed_keys(void **state)
{
	struct dpq_pp_key *ck, *sk;
	uint8_t dcid[8], sample[16], mask[16];

	(void)state;
	ck = aligned_alloc(64, sizeof(*ck));
	sk = aligned_alloc(64, sizeof(*sk));
	assert_non_null(ck);
	assert_non_null(sk);
	unhex(A_DCID, dcid, sizeof(dcid));
	assert_int_equal(dpq_pp_key_init_initial(cc, ck, dcid, 8, false), 0);
	assert_int_equal(dpq_pp_key_init_initial(cc, sk, dcid, 8, true), 0);
	assert_int_equal(ck->alg, DPQ_AEAD_AES_128_GCM);
	assert_hex(ck->iv, 12, A1_CLIENT_IV);
	assert_hex(sk->iv, 12, A1_SERVER_IV);
	assert_hex(ck->hp_raw, 16, A1_CLIENT_HP);

	unhex(A2_SAMPLE, sample, sizeof(sample));
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &ck->hp_aes, sample,
			mask, 1), 0);
	assert_hex(mask, 5, A2_MASK);
	unhex(A3_SAMPLE, sample, sizeof(sample));
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &sk->hp_aes, sample,
			mask, 1), 0);
	assert_hex(mask, 5, A3_MASK);

	/* A DCID above 20 bytes is refused. */
	assert_int_equal(dpq_pp_key_init_initial(cc, ck, dcid, 21, false),
			-EINVAL);
	dpq_pp_key_destroy(ck);
	dpq_pp_key_destroy(sk);
	free(ck);
	free(sk);
}

/* A.5: ChaCha20-Poly1305 key, iv, hp and "quic ku"; key update keeps the
 * HP key and derives key/iv from the ku secret. */
static void
test_a5_chacha_keys_and_update(void **state)
{
	struct dpq_pp_key *k, *next;
	struct dpq_pp_key_material m, mku;
	uint8_t secret[32], ku[32];

	(void)state;
	k = aligned_alloc(64, sizeof(*k));
	next = aligned_alloc(64, sizeof(*next));
	assert_non_null(k);
	assert_non_null(next);
	unhex(A5_SECRET, secret, sizeof(secret));
	assert_int_equal(dpq_pp_key_derive(DPQ_AEAD_CHACHA20_POLY1305, secret,
			32, &m), 0);
	assert_int_equal(m.key_len, 32);
	assert_hex(m.key, 32, A5_KEY);
	assert_hex(m.iv, 12, A5_IV);
	assert_hex(m.hp, 32, A5_HP);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA256, secret, 32,
			"quic ku", NULL, 0, ku, 32), 0);
	assert_hex(ku, 32, A5_KU);

	assert_int_equal(dpq_pp_key_init(cc, k, DPQ_AEAD_CHACHA20_POLY1305,
			secret, 32), 0);
	assert_int_equal(dpq_pp_key_update(cc, next, k), 0);
	assert_int_equal(next->alg, DPQ_AEAD_CHACHA20_POLY1305);
	assert_int_equal(next->secret_len, 32);
	assert_hex(next->secret, 32, A5_KU);
	assert_int_equal(dpq_pp_key_derive(DPQ_AEAD_CHACHA20_POLY1305, ku, 32,
			&mku), 0);
	assert_memory_equal(next->aead.chacha, mku.key, 32);
	assert_memory_equal(next->iv, mku.iv, 12);
	/* HP key unchanged (RFC 9001 §6.1), and not the ku-derived one. */
	assert_hex(next->hp_raw, 32, A5_HP);
	assert_memory_not_equal(next->hp_raw, mku.hp, 32);
	assert_non_null(next->hp_chacha);
	assert_ptr_not_equal(next->hp_chacha, k->hp_chacha);
	/* Update to itself is refused. */
	assert_int_equal(dpq_pp_key_update(cc, k, k), -EINVAL);

	dpq_pp_key_destroy(k);
	dpq_pp_key_destroy(next);
	free(k);
	free(next);
}

/* AES-256-GCM (SHA-384): secret -> next secret by "quic ku" with the
 * 48-byte hash, HP unchanged; checked against an HKDF-Expand computed here
 * directly with GnuTLS HMAC (T(1) = HMAC(secret, info || 0x01)). */
static void
test_key_update_sha384(void **state)
{
	struct dpq_pp_key *k, *next, *next2;
	uint8_t secret[48], want[48], info[64], in[16], m1[16], m2[16];
	static const char label[] = "tls13 quic ku";
	size_t p = 0;
	uint64_t s = 7;

	(void)state;
	k = aligned_alloc(64, sizeof(*k));
	next = aligned_alloc(64, sizeof(*next));
	next2 = aligned_alloc(64, sizeof(*next2));
	assert_non_null(k);
	assert_non_null(next);
	assert_non_null(next2);
	test_fill(secret, sizeof(secret), &s);
	info[p++] = 0;
	info[p++] = 48;
	info[p++] = (uint8_t)(sizeof(label) - 1);
	memcpy(info + p, label, sizeof(label) - 1);
	p += sizeof(label) - 1;
	info[p++] = 0;
	info[p++] = 0x01;
	assert_int_equal(gnutls_hmac_fast(GNUTLS_MAC_SHA384, secret, 48, info,
			p, want), 0);

	/* Secret length must match the suite's hash. */
	assert_int_equal(dpq_pp_key_init(cc, k, DPQ_AEAD_AES_256_GCM, secret,
			32), -EINVAL);
	assert_int_equal(dpq_pp_key_init(cc, k, DPQ_AEAD_AES_256_GCM, secret,
			48), 0);
	assert_int_equal(k->key_len, 32);
	assert_int_equal(dpq_pp_key_update(cc, next, k), 0);
	assert_int_equal(next->secret_len, 48);
	assert_memory_equal(next->secret, want, 48);
	assert_memory_equal(next->hp_raw, k->hp_raw, 32);
	assert_memory_not_equal(next->iv, k->iv, 12);
	/* Same HP key: same mask for the same sample. */
	test_fill(in, sizeof(in), &s);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k->hp_aes, in, m1, 1), 0);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &next->hp_aes, in, m2,
			1), 0);
	assert_memory_equal(m1, m2, 16);
	/* A second update moves on again. */
	assert_int_equal(dpq_pp_key_update(cc, next2, next), 0);
	assert_memory_not_equal(next2->secret, next->secret, 48);
	assert_memory_equal(next2->hp_raw, k->hp_raw, 32);

	dpq_pp_key_destroy(k);
	dpq_pp_key_destroy(next);
	dpq_pp_key_destroy(next2);
	free(k);
	free(next);
	free(next2);
}

/* Destroy zeroes every byte of the key (secrets included). */
static void
test_destroy_zeroes(void **state)
{
	static const uint8_t zero[sizeof(struct dpq_pp_key)];
	struct dpq_pp_key *k;
	uint8_t secret[32];
	uint64_t s = 3;
	int alg;

	(void)state;
	k = aligned_alloc(64, sizeof(*k));
	assert_non_null(k);
	test_fill(secret, sizeof(secret), &s);
	for (alg = DPQ_AEAD_AES_128_GCM; alg <= DPQ_AEAD_CHACHA20_POLY1305;
			alg++) {
		uint8_t sec[48];

		memset(sec, 0x5a, sizeof(sec));
		memcpy(sec, secret, sizeof(secret));
		assert_int_equal(dpq_pp_key_init(cc, k, alg, sec,
				alg == DPQ_AEAD_AES_256_GCM ? 48 : 32), 0);
		dpq_pp_key_destroy(k);
		assert_memory_equal(k, zero, sizeof(*k));
		/* Destroying twice is harmless. */
		dpq_pp_key_destroy(k);
	}
	dpq_pp_key_destroy(NULL);
	free(k);
}

/* A key saved in compact form and restored is the same key: same AEAD
 * tables, HP key, iv and secret (also after a key update, whose HP key
 * is not derived from its own secret); bad saved forms are refused. */
static void
test_save_restore(void **state)
{
	struct dpq_pp_key *k, *next, *r;
	struct dpq_pp_key_saved sv;
	uint64_t s = 9;
	int alg;

	(void)state;
	k = aligned_alloc(64, sizeof(*k));
	next = aligned_alloc(64, sizeof(*next));
	r = aligned_alloc(64, sizeof(*r));
	assert_non_null(k);
	assert_non_null(next);
	assert_non_null(r);
	for (alg = DPQ_AEAD_AES_128_GCM; alg <= DPQ_AEAD_CHACHA20_POLY1305;
			alg++) {
		size_t slen = alg == DPQ_AEAD_AES_256_GCM ? 48 : 32;
		uint8_t sec[48], in[16], m1[16], m2[16];

		test_fill(sec, sizeof(sec), &s);
		assert_int_equal(dpq_pp_key_init(cc, k, alg, sec, slen), 0);
		assert_int_equal(dpq_pp_key_update(cc, next, k), 0);
		assert_int_equal(dpq_pp_key_save(next, &sv), 0);
		assert_int_equal(dpq_pp_key_restore(cc, r, &sv), 0);
		assert_int_equal(r->alg, next->alg);
		assert_int_equal(r->key_len, next->key_len);
		assert_int_equal(r->secret_len, slen);
		assert_memory_equal(r->secret, next->secret, slen);
		assert_memory_equal(r->iv, next->iv, DPQ_CRYPTO_IV_LEN);
		assert_memory_equal(r->hp_raw, k->hp_raw, r->key_len);
		if (alg == DPQ_AEAD_CHACHA20_POLY1305) {
			assert_memory_equal(r->aead.chacha, next->aead.chacha,
					32);
		} else {
			assert_memory_equal(&r->aead.gcm, &next->aead.gcm,
					sizeof(r->aead.gcm));
			test_fill(in, sizeof(in), &s);
			assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc,
					&r->hp_aes, in, m1, 1), 0);
			assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc,
					&k->hp_aes, in, m2, 1), 0);
			assert_memory_equal(m1, m2, 16);
		}
		dpq_pp_key_destroy(r);
		/* A saved form that does not fit its algorithm. */
		sv.key_len = 7;
		assert_int_equal(dpq_pp_key_restore(cc, r, &sv), -EINVAL);
		dpq_pp_key_destroy(k);
		dpq_pp_key_destroy(next);
	}
	assert_int_equal(dpq_pp_key_save(k, &sv), -EINVAL);	/* zeroed */
	free(k);
	free(next);
	free(r);
}

static void
test_suite_mapping(void **state)
{
	enum dpq_aead a;

	(void)state;
	assert_int_equal(dpq_aead_from_tls_suite(0x1301, &a), 0);
	assert_int_equal(a, DPQ_AEAD_AES_128_GCM);
	assert_int_equal(dpq_aead_from_tls_suite(0x1302, &a), 0);
	assert_int_equal(a, DPQ_AEAD_AES_256_GCM);
	assert_int_equal(dpq_aead_from_tls_suite(0x1303, &a), 0);
	assert_int_equal(a, DPQ_AEAD_CHACHA20_POLY1305);
	assert_int_equal(dpq_aead_from_tls_suite(0x1304, &a), -ENOTSUP);
	assert_int_equal(dpq_aead_from_tls_suite(0x0000, &a), -ENOTSUP);
	assert_int_equal(dpq_aead_hash(DPQ_AEAD_AES_128_GCM), DPQ_HASH_SHA256);
	assert_int_equal(dpq_aead_hash(DPQ_AEAD_AES_256_GCM), DPQ_HASH_SHA384);
	assert_int_equal(dpq_aead_hash(DPQ_AEAD_CHACHA20_POLY1305),
			DPQ_HASH_SHA256);
	assert_int_equal(dpq_aead_key_len(DPQ_AEAD_AES_128_GCM), 16);
	assert_int_equal(dpq_aead_key_len(DPQ_AEAD_AES_256_GCM), 32);
	assert_int_equal(dpq_aead_key_len(DPQ_AEAD_CHACHA20_POLY1305), 32);
	assert_int_equal(dpq_aead_key_len(0), 0);
}

static void
test_hkdf_bad_input(void **state)
{
	uint8_t secret[48] = { 1 }, out[64];
	char label[300];
	struct dpq_pp_key_material m;

	(void)state;
	memset(label, 'a', sizeof(label) - 1);
	label[sizeof(label) - 1] = 0;
	assert_int_equal(dpq_hkdf_expand_label(0, secret, 32, "x", NULL, 0,
			out, 16), -EINVAL);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA256, secret, 31,
			"x", NULL, 0, out, 16), -EINVAL);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA384, secret, 32,
			"x", NULL, 0, out, 16), -EINVAL);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA256, secret, 32,
			label, NULL, 0, out, 16), -EINVAL);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA256, secret, 32,
			"x", NULL, 0, out, 0), -EINVAL);
	assert_int_equal(dpq_hkdf_expand_label(DPQ_HASH_SHA256, secret, 32,
			"x", NULL, 256, out, 16), -EINVAL);
	assert_int_equal(dpq_hkdf_extract(0, NULL, 0, NULL, 0, out), -EINVAL);
	assert_int_equal(dpq_hkdf_initial_secrets(secret, 21, out, NULL),
			-EINVAL);
	assert_int_equal(dpq_pp_key_derive(0, secret, 32, &m), -EINVAL);
	assert_int_equal(dpq_pp_key_derive(DPQ_AEAD_AES_128_GCM, secret, 48,
			&m), -EINVAL);
	/* A zero-length DCID is legal for the extract. */
	assert_int_equal(dpq_hkdf_initial_secrets(NULL, 0, out, out + 32), 0);
}

/* §5.3 nonce: A.5 iv with pn 654360564. */
static void
test_nonce(void **state)
{
	struct dpq_pp_key k;
	uint8_t nonce[12];

	(void)state;
	memset(&k, 0, sizeof(k));
	unhex(A5_IV, k.iv, sizeof(k.iv));
	dpq_pp_key_nonce(&k, A5_PN, nonce);
	assert_hex(nonce, 12, A5_NONCE);
	dpq_pp_key_nonce(&k, 0, nonce);
	assert_memory_equal(nonce, k.iv, 12);
	dpq_pp_key_nonce(&k, DPQ_PN_MAX, nonce);
	assert_int_equal(nonce[4], k.iv[4] ^ 0x3f);
	assert_int_equal(nonce[11], k.iv[11] ^ 0xff);
}

/* AES-ECB helper against FIPS-197 Appendix C. */
static void
test_aes_ecb(void **state)
{
	struct dpq_aes_key k;
	uint8_t raw[32], in[32], out[32];
	unsigned i;

	(void)state;
	for (i = 0; i < 32; i++)
		raw[i] = (uint8_t)i;
	unhex("00112233445566778899aabbccddeeff", in, 16);
	memcpy(in + 16, in, 16);
	assert_int_equal(dpq_aes_key_init(cc, &k, raw, 16), 0);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k, in, out, 2), 0);
	assert_hex(out, 16, "69c4e0d86a7b0430d8cdb78070b4c55a");
	assert_hex(out + 16, 16, "69c4e0d86a7b0430d8cdb78070b4c55a");
	assert_int_equal(dpq_aes_key_init(cc, &k, raw, 32), 0);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k, in, out, 1), 0);
	assert_hex(out, 16, "8ea2b7ca516745bfeafc49904b496089");
	/* In place. */
	memcpy(out, in, 16);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k, out, out, 1), 0);
	assert_hex(out, 16, "8ea2b7ca516745bfeafc49904b496089");
	assert_int_equal(dpq_aes_key_init(cc, &k, raw, 24), -EINVAL);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k, in, out, 0),
			-EINVAL);
	dpq_aes_key_destroy(&k);
	assert_int_equal(k.key_len, 0);
	assert_int_equal(dpq_crypto_aes_ecb_encrypt(cc, &k, in, out, 1),
			-EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a1_initial_secrets),
		cmocka_unit_test(test_a1_installed_keys),
		cmocka_unit_test(test_a5_chacha_keys_and_update),
		cmocka_unit_test(test_key_update_sha384),
		cmocka_unit_test(test_destroy_zeroes),
		cmocka_unit_test(test_save_restore),
		cmocka_unit_test(test_suite_mapping),
		cmocka_unit_test(test_hkdf_bad_input),
		cmocka_unit_test(test_nonce),
		cmocka_unit_test(test_aes_ecb),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
