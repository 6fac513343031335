/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine_test.h: small helpers shared by the engine codec tests: a
 * deterministic PRNG for the random-input loops, hex decoding of RFC
 * vectors, and exact-size heap copies so ASan flags any read past the
 * end of a parser's input.
 */
#ifndef DPQ_TESTS_ENGINE_TEST_H
#define DPQ_TESTS_ENGINE_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: fixed seed, same sequence on every run. */
struct test_rng {
	uint64_t s;
};

static inline uint64_t
test_rng_next(struct test_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

static inline void
test_rng_fill(struct test_rng *r, uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(test_rng_next(r) >> 32);
}

static inline int
test_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode hex (spaces ignored) into out; returns the byte count. */
static inline size_t
test_unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1, v;

	for (; *hex != '\0'; hex++) {
		v = test_hexval(*hex);
		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == cap)
			abort();
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return n;
}

/* Heap copy of exactly n bytes, so ASan reports any read past them
 * (for n == 0 glibc returns a zero-size block, or NULL elsewhere, which
 * the parsers must reject too). */
static inline uint8_t *
test_dup(const uint8_t *p, size_t n)
{
	uint8_t *q = malloc(n);

	if (q == NULL && n != 0)
		abort();
	if (n != 0)
		memcpy(q, p, n);
	return q;
}

#endif /* DPQ_TESTS_ENGINE_TEST_H */
