/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tokfilter.c: NEW_TOKEN replay filter (see tokfilter.h). A slot is
 *   fingerprint (40 bits) << 24 | expiry (24 bits, minutes after base)
 * and 0 when it never held anything.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tokfilter.h"

#define EXP_BITS	24
#define EXP_MASK	((UINT64_C(1) << EXP_BITS) - 1)
#define FP_BITS		40
#define US_PER_MIN	(60ull * 1000 * 1000)

struct dpq_tokfilter {
	uint64_t nbuckets;		/* power of two */
	uint64_t base_us;
	_Atomic uint64_t first, replay, full;
	_Atomic uint64_t *slots;	/* nbuckets * WAYS, 64-byte aligned */
};

struct dpq_tokfilter *
dpq_tokfilter_create(uint64_t slots, uint64_t base_us)
{
	struct dpq_tokfilter *f;
	uint64_t nb = 1, i;
	void *mem;

	if (slots < DPQ_TOKFILTER_MIN || slots > DPQ_TOKFILTER_MAX) {
		errno = EINVAL;
		return NULL;
	}
	while (nb * DPQ_TOKFILTER_WAYS < slots)
		nb <<= 1;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	if (posix_memalign(&mem, 64, nb * DPQ_TOKFILTER_WAYS *
			sizeof(uint64_t)) != 0) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->slots = mem;
	for (i = 0; i < nb * DPQ_TOKFILTER_WAYS; i++)
		atomic_init(&f->slots[i], 0);
	f->nbuckets = nb;
	f->base_us = base_us;
	return f;
}

void
dpq_tokfilter_destroy(struct dpq_tokfilter *f)
{
	if (f == NULL)
		return;
	free((void *)f->slots);
	free(f);
}

uint64_t
dpq_tokfilter_slots(const struct dpq_tokfilter *f)
{
	return f->nbuckets * DPQ_TOKFILTER_WAYS;
}

/* splitmix64 finaliser: spreads the nonce bits over bucket and print. */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* Minutes after base, rounded up: an entry outlives its token. */
static uint64_t
to_min(const struct dpq_tokfilter *f, uint64_t us, bool up)
{
	uint64_t m;

	if (us <= f->base_us)
		return 0;
	m = (us - f->base_us) / US_PER_MIN;
	if (up && (us - f->base_us) % US_PER_MIN != 0)
		m++;
	return m > EXP_MASK ? EXP_MASK : m;
}

static bool
slot_live(uint64_t v, uint64_t now_min)
{
	return v != 0 && (v & EXP_MASK) > now_min;
}

enum dpq_tokfilter_result
dpq_tokfilter_use(struct dpq_tokfilter *f, const uint8_t *nonce, size_t len,
		uint64_t expires_us, uint64_t now_us)
{
	uint64_t h = 0, fp, exp_min, now_min, want;
	_Atomic uint64_t *b;
	unsigned int i, mine;
	size_t k;

	if (f == NULL || nonce == NULL || len < 5)
		return DPQ_TOKFILTER_FULL;
	for (k = 0; k < len; k++)
		h = h << 8 ^ h >> 56 ^ nonce[k];
	h = mix(h);
	fp = h >> (64 - FP_BITS);
	if (fp == 0)
		fp = 1;
	b = &f->slots[(h & (f->nbuckets - 1)) * DPQ_TOKFILTER_WAYS];
	now_min = to_min(f, now_us, false);
	exp_min = to_min(f, expires_us, true) + 1;
	if (exp_min > EXP_MASK)
		exp_min = EXP_MASK;
	want = fp << EXP_BITS | exp_min;
retry:
	mine = DPQ_TOKFILTER_WAYS;
	for (i = 0; i < DPQ_TOKFILTER_WAYS; i++) {
		uint64_t v = atomic_load_explicit(&b[i], memory_order_acquire);

		if (slot_live(v, now_min) && v >> EXP_BITS == fp) {
			atomic_fetch_add_explicit(&f->replay, 1,
					memory_order_relaxed);
			return DPQ_TOKFILTER_REPLAY;
		}
		/* The first reusable slot; keep scanning: the token
		 * may sit further on. */
		if (!slot_live(v, now_min) && mine == DPQ_TOKFILTER_WAYS)
			mine = i;
	}
	if (mine == DPQ_TOKFILTER_WAYS) {
		atomic_fetch_add_explicit(&f->full, 1, memory_order_relaxed);
		return DPQ_TOKFILTER_FULL;
	}
	{
		uint64_t v = atomic_load_explicit(&b[mine],
				memory_order_acquire);

		if (slot_live(v, now_min) ||
		    !atomic_compare_exchange_strong_explicit(&b[mine], &v, want,
				memory_order_acq_rel, memory_order_acquire))
			goto retry;	/* someone took it: look again */
	}
	/* A concurrent use of the same token may have landed in another
	 * slot between our scan and our insert: then both refuse. */
	for (i = 0; i < DPQ_TOKFILTER_WAYS; i++) {
		uint64_t v;

		if (i == mine)
			continue;
		v = atomic_load_explicit(&b[i], memory_order_acquire);
		if (slot_live(v, now_min) && v >> EXP_BITS == fp) {
			atomic_fetch_add_explicit(&f->replay, 1,
					memory_order_relaxed);
			return DPQ_TOKFILTER_REPLAY;
		}
	}
	atomic_fetch_add_explicit(&f->first, 1, memory_order_relaxed);
	return DPQ_TOKFILTER_FIRST;
}

void
dpq_tokfilter_get_stats(const struct dpq_tokfilter *f,
		struct dpq_tokfilter_stats *st)
{
	st->first = atomic_load_explicit(&f->first, memory_order_relaxed);
	st->replay = atomic_load_explicit(&f->replay, memory_order_relaxed);
	st->full = atomic_load_explicit(&f->full, memory_order_relaxed);
}
