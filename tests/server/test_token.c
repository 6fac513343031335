/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of address-validation tokens (RFC 9000 §8.1) and stateless reset
 * (RFC 9000 §10.3): dataplane/server/token.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "dataplane/server/token.h"
#include "test_server_util.h"

#define SEC 1000000ull

static const uint8_t key1[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
	14, 15, 16 };
static const uint8_t key2[16] = { 0xa0, 0xa1, 0xa2 };
static const uint8_t key3[16] = { 0xb0 };

static struct test_rng rng = { .s = 4242 };
static struct dpq_rand rnd = { test_rng_fill, &rng };

static void
addr4(struct dpq_netaddr *a, uint8_t a0, uint8_t a1, uint8_t a2, uint8_t a3,
		uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = a0;
	a->ip[1] = a1;
	a->ip[2] = a2;
	a->ip[3] = a3;
}

static void
addr6(struct dpq_netaddr *a, uint8_t last, uint8_t byte6, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	a->port = port;
	a->ip[0] = 0x20;
	a->ip[1] = 0x01;
	a->ip[6] = byte6;
	a->ip[15] = last;
}

static void
retry_info(struct dpq_token_info *ti, const struct dpq_netaddr *a,
		uint64_t now)
{
	memset(ti, 0, sizeof(*ti));
	ti->type = DPQ_TOKEN_RETRY;
	ti->issued = now;
	ti->addr = *a;
	ti->odcid.len = 8;
	memset(ti->odcid.bytes, 0x83, 8);
	ti->retry_scid.len = 20;
	memset(ti->retry_scid.bytes, 0x5c, 20);
}

static void
new_info(struct dpq_token_info *ti, const struct dpq_netaddr *a, uint64_t now)
{
	memset(ti, 0, sizeof(*ti));
	ti->type = DPQ_TOKEN_NEW;
	ti->issued = now;
	ti->addr = *a;
}

static struct dpq_tokens *
mk(const struct dpq_token_cfg *cfg)
{
	struct dpq_tokens *t = dpq_tokens_create(cfg);

	assert_non_null(t);
	assert_int_equal(dpq_tokens_set_key(t, 1, key1), 0);
	return t;
}

/* Seal then open gives back every field, for both types and families. */
static void
test_seal_open(void **state)
{
	struct dpq_tokens *t = mk(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr a4, a6;
	uint8_t tok[DPQ_TOKEN_MAX_LEN], tok2[DPQ_TOKEN_MAX_LEN];
	ssize_t n, n2;

	(void)state;
	addr4(&a4, 192, 0, 2, 7, 4433);
	addr6(&a6, 9, 0, 50000);
	retry_info(&ti, &a6, 1000 * SEC);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(n, DPQ_TOKEN_MAX_LEN - (DPQ_MAX_CID_LEN - 8)); /* v6, 8- and 20-byte CIDs */
	assert_int_equal(dpq_token_peek_type(tok, (size_t)n), DPQ_TOKEN_RETRY);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY,
			&a6, 1000 * SEC + 1, &got), 0);
	assert_int_equal(got.type, DPQ_TOKEN_RETRY);
	assert_int_equal(got.issued, 1000 * SEC);
	assert_int_equal(got.addr.family, AF_INET6);
	assert_int_equal(got.addr.port, 50000);
	assert_memory_equal(got.addr.ip, a6.ip, 16);
	assert_true(dpq_cid_eq(&got.odcid, &ti.odcid));
	assert_true(dpq_cid_eq(&got.retry_scid, &ti.retry_scid));
	assert_true(got.addr_exact);

	new_info(&ti, &a4, 5 * SEC);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(n, DPQ_TOKEN_MIN_LEN);
	assert_int_equal(dpq_token_peek_type(tok, (size_t)n), DPQ_TOKEN_NEW);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_ANY, &a4,
			6 * SEC, &got), 0);
	assert_int_equal(got.type, DPQ_TOKEN_NEW);
	assert_int_equal(got.issued, 5 * SEC);
	assert_memory_equal(got.addr.ip, a4.ip, 4);
	/* NEW_TOKEN tokens for the same client differ (§8.1.3: unique,
	 * unlinkable): fresh nonce, and the address only encrypted. */
	n2 = dpq_token_seal(t, &ti, &rnd, tok2, sizeof(tok2));
	assert_int_equal(n2, n);
	assert_memory_not_equal(tok + 1, tok2 + 1, (size_t)n - 1);
	assert_null(memmem(tok, (size_t)n, a4.ip, 4));
	/* Empty CIDs in a Retry token are representable. */
	retry_info(&ti, &a4, 0);
	ti.odcid.len = 0;
	ti.retry_scid.len = 0;
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_true(n > 0);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY,
			&a4, 0, &got), 0);
	assert_int_equal(got.odcid.len, 0);
	dpq_tokens_destroy(t);
}

/* Flipping any bit of any byte makes the token invalid. */
static void
test_tamper(void **state)
{
	struct dpq_tokens *t = mk(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr a;
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	ssize_t n;
	size_t i;
	int bit, types[2] = { DPQ_TOKEN_RETRY, DPQ_TOKEN_NEW }, k;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	for (k = 0; k < 2; k++) {
		if (types[k] == DPQ_TOKEN_RETRY)
			retry_info(&ti, &a, 50 * SEC);
		else
			new_info(&ti, &a, 50 * SEC);
		n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
		assert_true(n > 0);
		for (i = 0; i < (size_t)n; i++) {
			for (bit = 0; bit < 8; bit++) {
				tok[i] ^= (uint8_t)(1 << bit);
				assert_int_equal(dpq_token_open(t, tok,
						(size_t)n, DPQ_TOKEN_ANY, &a,
						50 * SEC, &got), -EBADMSG);
				tok[i] ^= (uint8_t)(1 << bit);
			}
		}
		assert_int_equal(dpq_token_open(t, tok, (size_t)n,
				DPQ_TOKEN_ANY, &a, 50 * SEC, &got), 0);
	}
	dpq_tokens_destroy(t);
}

/* Truncated, extended and oversized tokens fail without reading past. */
static void
test_sizes(void **state)
{
	struct dpq_tokens *t = mk(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr a;
	uint8_t tok[DPQ_TOKEN_MAX_LEN + 64], *heap;
	ssize_t n;
	size_t i;
	int rc;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	retry_info(&ti, &a, 0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_true(n > 0);
	/* Every prefix, copied to an exact-size heap buffer (ASan). */
	for (i = 0; i < (size_t)n; i++) {
		heap = malloc(i ? i : 1);
		memcpy(heap, tok, i);
		rc = dpq_token_open(t, heap, i, DPQ_TOKEN_ANY, &a, 0, &got);
		assert_true(rc == -EBADMSG || rc == -EMSGSIZE);
		if (i < DPQ_TOKEN_MIN_LEN)
			assert_int_equal(rc, -EMSGSIZE);
		free(heap);
	}
	tok[n] = 0;
	assert_int_equal(dpq_token_open(t, tok, (size_t)n + 1, DPQ_TOKEN_ANY,
			&a, 0, &got), -EBADMSG);
	assert_int_equal(dpq_token_open(t, tok, DPQ_TOKEN_MAX_LEN + 1,
			DPQ_TOKEN_ANY, &a, 0, &got), -EMSGSIZE);
	assert_int_equal(dpq_token_open(t, tok, SIZE_MAX, DPQ_TOKEN_ANY, &a,
			0, &got), -EMSGSIZE);
	/* Output too small; bad input. */
	assert_int_equal(dpq_token_seal(t, &ti, &rnd, tok, (size_t)n - 1),
			-ENOSPC);
	ti.odcid.len = 21;
	assert_int_equal(dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok)),
			-EINVAL);
	ti.odcid.len = 8;
	ti.addr.family = 0;
	assert_int_equal(dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok)),
			-EINVAL);
	ti.addr.family = AF_INET;
	ti.type = DPQ_TOKEN_ANY;
	assert_int_equal(dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok)),
			-EINVAL);
	assert_int_equal(dpq_token_open(t, NULL, 50, DPQ_TOKEN_ANY, &a, 0,
			&got), -EINVAL);
	assert_int_equal(dpq_token_peek_type(tok, 0), DPQ_TOKEN_ANY);
	tok[0] = 0x00;
	assert_int_equal(dpq_token_peek_type(tok, 1), DPQ_TOKEN_ANY);
	tok[0] = 0xc1;
	assert_int_equal(dpq_token_peek_type(tok, 1), DPQ_TOKEN_ANY);
	dpq_tokens_destroy(t);
}

/* Retry: 10 s; NEW_TOKEN: 24 h by default; valid while age < lifetime;
 * up to 2 s from the future accepted. */
static void
test_expiry(void **state)
{
	struct dpq_tokens *t = mk(NULL);
	struct dpq_token_cfg cfg;
	struct dpq_token_info ti, got;
	struct dpq_netaddr a;
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	uint64_t t0 = 1000 * SEC, day = 24 * 3600 * SEC;
	ssize_t n;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	retry_info(&ti, &a, t0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			t0 + 10 * SEC - 1, &got), 0);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			t0 + 10 * SEC, &got), -ETIMEDOUT);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			t0 - DPQ_TOKEN_FUTURE_SKEW, &got), 0);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			t0 - DPQ_TOKEN_FUTURE_SKEW - 1, &got), -ETIMEDOUT);
	new_info(&ti, &a, t0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			t0 + day - 1, &got), 0);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			t0 + day, &got), -ETIMEDOUT);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			UINT64_MAX, &got), -ETIMEDOUT);
	dpq_tokens_destroy(t);
	/* Configured lifetimes. */
	dpq_token_cfg_default(&cfg);
	cfg.new_lifetime = 60 * SEC;
	cfg.retry_lifetime = 3 * SEC;
	t = mk(&cfg);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			t0 + 60 * SEC - 1, &got), 0);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			t0 + 60 * SEC, &got), -ETIMEDOUT);
	retry_info(&ti, &a, t0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			t0 + 3 * SEC, &got), -ETIMEDOUT);
	dpq_tokens_destroy(t);
	cfg.new_lifetime = 0;
	assert_null(dpq_tokens_create(&cfg));
}

static void
test_wrong_type(void **state)
{
	struct dpq_tokens *t = mk(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr a;
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	ssize_t n;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	retry_info(&ti, &a, 0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &a,
			0, &got), -EPROTOTYPE);
	new_info(&ti, &a, 0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &a,
			0, &got), -EPROTOTYPE);
	/* Relabelling the clear type byte breaks authentication. */
	tok[0] = (uint8_t)((tok[0] & 0x3f) | DPQ_TOKEN_RETRY << 6);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_ANY, &a,
			0, &got), -EBADMSG);
	dpq_tokens_destroy(t);
}

/* Retry: exact IP and port. NEW_TOKEN: IP, or its /24 (/56) by option. */
static void
test_address(void **state)
{
	struct dpq_tokens *t = mk(NULL), *tp;
	struct dpq_token_cfg cfg;
	struct dpq_token_info ti, got;
	struct dpq_netaddr a, b;
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	ssize_t n;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	retry_info(&ti, &a, 0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	addr4(&b, 10, 1, 2, 3, 1235);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &b,
			0, &got), -EADDRNOTAVAIL);
	addr4(&b, 10, 1, 2, 4, 1234);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &b,
			0, &got), -EADDRNOTAVAIL);
	addr6(&b, 3, 0, 1234);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_RETRY, &b,
			0, &got), -EADDRNOTAVAIL);

	/* NEW_TOKEN, exact by default: the port is not checked (§8.1.3). */
	new_info(&ti, &a, 0);
	n = dpq_token_seal(t, &ti, &rnd, tok, sizeof(tok));
	addr4(&b, 10, 1, 2, 3, 999);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), 0);
	assert_true(got.addr_exact);
	addr4(&b, 10, 1, 2, 4, 999);
	assert_int_equal(dpq_token_open(t, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), -EADDRNOTAVAIL);

	/* With /24 and /56 prefixes. */
	dpq_token_cfg_default(&cfg);
	cfg.new_v4_prefix = 24;
	cfg.new_v6_prefix = 56;
	tp = mk(&cfg);
	n = dpq_token_seal(tp, &ti, &rnd, tok, sizeof(tok));
	addr4(&b, 10, 1, 2, 200, 999);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), 0);
	assert_false(got.addr_exact);
	addr4(&b, 10, 1, 3, 3, 999);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), -EADDRNOTAVAIL);
	/* Retry tokens stay exact under the prefix option. */
	retry_info(&ti, &a, 0);
	n = dpq_token_seal(tp, &ti, &rnd, tok, sizeof(tok));
	addr4(&b, 10, 1, 2, 200, 1234);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_RETRY,
			&b, 0, &got), -EADDRNOTAVAIL);
	/* IPv6 /56: bytes 0..6 must match, byte 7 onward may differ. */
	addr6(&a, 1, 0x10, 0);
	new_info(&ti, &a, 0);
	n = dpq_token_seal(tp, &ti, &rnd, tok, sizeof(tok));
	addr6(&b, 77, 0x10, 0);
	b.ip[7] = 0xff;
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), 0);
	assert_false(got.addr_exact);
	addr6(&b, 1, 0x11, 0);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), -EADDRNOTAVAIL);
	addr4(&b, 0x20, 0x01, 0, 0, 0);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), -EADDRNOTAVAIL);
	/* Odd prefix lengths: /20 compares 4 bits of the third byte. */
	dpq_tokens_destroy(tp);
	cfg.new_v4_prefix = 20;
	tp = mk(&cfg);
	addr4(&a, 10, 1, 0x2f, 3, 0);
	new_info(&ti, &a, 0);
	n = dpq_token_seal(tp, &ti, &rnd, tok, sizeof(tok));
	addr4(&b, 10, 1, 0x20, 9, 0);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), 0);
	addr4(&b, 10, 1, 0x3f, 3, 0);
	assert_int_equal(dpq_token_open(tp, tok, (size_t)n, DPQ_TOKEN_NEW, &b,
			0, &got), -EADDRNOTAVAIL);
	dpq_tokens_destroy(tp);
	cfg.new_v4_prefix = 33;
	assert_null(dpq_tokens_create(&cfg));
	dpq_tokens_destroy(t);
}

/* Current and previous keys open tokens; a key two rotations old does
 * not; no key means no sealing. */
static void
test_key_rotation(void **state)
{
	struct dpq_tokens *t = dpq_tokens_create(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr a;
	uint8_t tok1[DPQ_TOKEN_MAX_LEN], tok2[DPQ_TOKEN_MAX_LEN];
	ssize_t n1, n2;

	(void)state;
	addr4(&a, 10, 1, 2, 3, 1234);
	new_info(&ti, &a, 0);
	assert_int_equal(dpq_token_seal(t, &ti, &rnd, tok1, sizeof(tok1)),
			-ENOKEY);
	assert_int_equal(dpq_tokens_set_key(t, 64, key1), -EINVAL);
	assert_int_equal(dpq_tokens_set_key(t, 1, key1), 0);
	assert_int_equal(dpq_tokens_set_key(t, 1, key2), -EINVAL);
	n1 = dpq_token_seal(t, &ti, &rnd, tok1, sizeof(tok1));
	assert_int_equal(tok1[0] & 0x3f, 1);
	assert_int_equal(dpq_tokens_set_key(t, 2, key2), 0);
	n2 = dpq_token_seal(t, &ti, &rnd, tok2, sizeof(tok2));
	assert_int_equal(tok2[0] & 0x3f, 2);
	assert_int_equal(dpq_token_open(t, tok1, (size_t)n1, DPQ_TOKEN_NEW, &a,
			0, &got), 0);
	assert_int_equal(dpq_token_open(t, tok2, (size_t)n2, DPQ_TOKEN_NEW, &a,
			0, &got), 0);
	/* A token claiming key 2 but sealed under key 1 fails. */
	tok1[0] = (uint8_t)((tok1[0] & 0xc0) | 2);
	assert_int_equal(dpq_token_open(t, tok1, (size_t)n1, DPQ_TOKEN_NEW, &a,
			0, &got), -EBADMSG);
	tok1[0] = (uint8_t)((tok1[0] & 0xc0) | 1);
	assert_int_equal(dpq_tokens_set_key(t, 3, key3), 0);
	assert_int_equal(dpq_token_open(t, tok1, (size_t)n1, DPQ_TOKEN_NEW, &a,
			0, &got), -EBADMSG);
	assert_int_equal(dpq_token_open(t, tok2, (size_t)n2, DPQ_TOKEN_NEW, &a,
			0, &got), 0);
	/* Key id 1 reused for new key material: old tokens stay dead. */
	assert_int_equal(dpq_tokens_set_key(t, 1, key2), 0);
	assert_int_equal(dpq_token_open(t, tok1, (size_t)n1, DPQ_TOKEN_NEW, &a,
			0, &got), -EBADMSG);
	dpq_tokens_destroy(t);
	dpq_tokens_destroy(NULL);
}

/* dpq_tokens_set_keys installs a derived pair as is: servers of a fleet
 * derive ids independently, so current and previous may share an id and
 * both must still open their tokens; a third key drops the oldest. */
static void
test_set_keys(void **state)
{
	struct dpq_tokens *a = dpq_tokens_create(NULL);
	struct dpq_tokens *b = dpq_tokens_create(NULL);
	struct dpq_token_info ti, got;
	struct dpq_netaddr addr;
	uint8_t tok1[DPQ_TOKEN_MAX_LEN], tok2[DPQ_TOKEN_MAX_LEN];
	ssize_t n1, n2;

	(void)state;
	addr4(&addr, 10, 1, 2, 3, 1234);
	new_info(&ti, &addr, 0);
	assert_int_equal(dpq_tokens_set_keys(a, 64, key1, 0, NULL), -EINVAL);
	assert_int_equal(dpq_tokens_set_keys(a, 5, key1, 0, NULL), 0);
	n1 = dpq_token_seal(a, &ti, &rnd, tok1, sizeof(tok1));
	assert_true(n1 > 0);
	/* Rotation: key2 current, key1 previous, same id 5. */
	assert_int_equal(dpq_tokens_set_keys(a, 5, key2, 5, key1), 0);
	n2 = dpq_token_seal(a, &ti, &rnd, tok2, sizeof(tok2));
	assert_int_equal(dpq_token_open(a, tok1, (size_t)n1, DPQ_TOKEN_NEW,
			&addr, 0, &got), 0);
	assert_int_equal(dpq_token_open(a, tok2, (size_t)n2, DPQ_TOKEN_NEW,
			&addr, 0, &got), 0);
	/* Another server given the same pair opens both (a fleet). */
	assert_int_equal(dpq_tokens_set_keys(b, 5, key2, 5, key1), 0);
	assert_int_equal(dpq_token_open(b, tok1, (size_t)n1, DPQ_TOKEN_NEW,
			&addr, 0, &got), 0);
	assert_int_equal(dpq_token_open(b, tok2, (size_t)n2, DPQ_TOKEN_NEW,
			&addr, 0, &got), 0);
	/* key3 current, key2 previous: key1's token is refused. */
	assert_int_equal(dpq_tokens_set_keys(b, 9, key3, 5, key2), 0);
	assert_int_equal(dpq_token_open(b, tok1, (size_t)n1, DPQ_TOKEN_NEW,
			&addr, 0, &got), -EBADMSG);
	assert_int_equal(dpq_token_open(b, tok2, (size_t)n2, DPQ_TOKEN_NEW,
			&addr, 0, &got), 0);
	assert_non_null(dpq_token_nonce(tok1, (size_t)n1));
	assert_null(dpq_token_nonce(tok1, 5));
	dpq_tokens_destroy(a);
	dpq_tokens_destroy(b);
}

/* RFC 4231 test case 1 (key 0x0b x 20, "Hi There"): the reset token is
 * the first 16 bytes of HMAC-SHA256. */
static void
test_sreset_token(void **state)
{
	uint8_t key[20], want[32], tok[16], tok2[16];
	const uint8_t cid[8] = { 'H', 'i', ' ', 'T', 'h', 'e', 'r', 'e' };

	(void)state;
	memset(key, 0x0b, sizeof(key));
	test_unhex("b0344c61d8db38535ca8afceaf0bf12b"
			"881dc200c9833da726e9376c2e32cff7", want, 32);
	assert_int_equal(dpq_sreset_token(key, 20, cid, 8, tok), 0);
	assert_memory_equal(tok, want, 16);
	assert_int_equal(dpq_sreset_token(key, 20, cid, 7, tok2), 0);
	assert_memory_not_equal(tok, tok2, 16);
	assert_int_equal(dpq_sreset_token(key, 15, cid, 8, tok), -EINVAL);
	assert_int_equal(dpq_sreset_token(key, 20, cid, 0, tok), -EINVAL);
	assert_int_equal(dpq_sreset_token(key, 20, cid, 21, tok), -EINVAL);
}

/* §10.3, §10.3.3: for every trigger size, a reset is shorter than the
 * trigger, at least 21 bytes, at most 64, one byte shorter for triggers up
 * to 43 bytes, starts 0b01 and ends with the token; none below 22. */
static void
test_sreset_sizes(void **state)
{
	uint8_t tok[16], out[128];
	size_t trig, seen_lo = 1000, seen_hi = 0;
	ssize_t n;
	int i;

	(void)state;
	memset(tok, 0xee, sizeof(tok));
	for (trig = 0; trig <= 1500; trig++) {
		for (i = 0; i < 8; i++) {
			n = dpq_sreset_build(tok, trig, &rnd, out,
					sizeof(out));
			if (trig < 22) {
				assert_int_equal(n, -EINVAL);
				continue;
			}
			assert_true(n >= 21);
			assert_true((size_t)n < trig);
			assert_true(n <= DPQ_SRESET_MAX_LEN);
			if (trig <= 43)
				assert_int_equal(n, trig - 1);
			else
				assert_true(n >= 42);
			assert_int_equal(out[0] & 0xc0, 0x40);
			assert_memory_equal(out + n - 16, tok, 16);
			if (trig > 100) {
				if ((size_t)n < seen_lo)
					seen_lo = (size_t)n;
				if ((size_t)n > seen_hi)
					seen_hi = (size_t)n;
			}
		}
	}
	/* The length varies over its range for large triggers. */
	assert_int_equal(seen_lo, 42);
	assert_int_equal(seen_hi, 64);
	assert_int_equal(dpq_sreset_len(21, 0), 0);
	assert_int_equal(dpq_sreset_len(22, 0), 21);
	assert_int_equal(dpq_sreset_len(44, 12345), 43);
	assert_int_equal(dpq_sreset_build(tok, 100, &rnd, out, 41), -ENOSPC);
	assert_int_equal(dpq_sreset_build(tok, 30, &rnd, out, 28), -ENOSPC);
	assert_int_equal(dpq_sreset_build(tok, 30, &rnd, out, 29), 29);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_tamper),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_wrong_type),
		cmocka_unit_test(test_address),
		cmocka_unit_test(test_key_rotation),
		cmocka_unit_test(test_set_keys),
		cmocka_unit_test(test_sreset_token),
		cmocka_unit_test(test_sreset_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
