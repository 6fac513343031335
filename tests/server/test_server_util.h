/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the server tests: a seeded deterministic random source and
 * hex decoding.
 */
#ifndef DPQ_TEST_SERVER_UTIL_H
#define DPQ_TEST_SERVER_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/server/cid.h"

/* xorshift64*: reproducible, good enough for tests. */
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
test_rng_fill(void *ctx, uint8_t *buf, size_t len)
{
	struct test_rng *r = ctx;
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(test_rng_next(r) >> 56);
}

/* A source replaying fixed bytes (then zeros). */
struct test_fixed {
	const uint8_t *p;
	size_t n;
};

static inline void
test_fixed_fill(void *ctx, uint8_t *buf, size_t len)
{
	struct test_fixed *f = ctx;
	size_t k = len < f->n ? len : f->n;

	memcpy(buf, f->p, k);
	memset(buf + k, 0, len - k);
	f->p += k;
	f->n -= k;
}

static inline size_t
test_unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned int v;

	while (s[0] != '\0' && s[1] != '\0' && n < cap) {
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

#endif /* DPQ_TEST_SERVER_UTIL_H */
