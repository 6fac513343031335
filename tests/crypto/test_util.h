/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers for the crypto tests: hex decoding of the RFC vectors and
 * a deterministic byte generator.
 */
#ifndef DPQ_TESTS_CRYPTO_TEST_UTIL_H
#define DPQ_TESTS_CRYPTO_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode hex into out (capacity cap); returns the byte count, or 0 on a
 * bad digit / odd length / overflow (never for the RFC vectors). */
static inline size_t
unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex), i;

	if (n % 2 || n / 2 > cap)
		return 0;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return n / 2;
}

/* xorshift64*: reproducible test data. */
static inline uint64_t
test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static inline void
test_fill(uint8_t *p, size_t n, uint64_t *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)test_rand(s);
}

#endif /* DPQ_TESTS_CRYPTO_TEST_UTIL_H */
