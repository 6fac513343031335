/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor_int.h: the implementations behind xor.h, one file each.
 */
#ifndef DPQ_FEC_XOR_INT_H
#define DPQ_FEC_XOR_INT_H

#include "dataplane/fec/xor.h"

extern const struct dpq_xor_impl dpq_xor_scalar;
#if defined(__x86_64__)
extern const struct dpq_xor_impl dpq_xor_sse2;
extern const struct dpq_xor_impl dpq_xor_avx2;
extern const struct dpq_xor_impl dpq_xor_avx512;
#endif

/*
 * Burst XOR as one xor_into() per source. Measured here (dpq-bench-xor)
 * for 32 sources of 1350 bytes, a single pass over acc in blocks of
 * 32-byte vectors ran slower than this (acc is 1.4 KB and stays in L1;
 * the blocked pass interleaves 32 source streams and needs a scalar tail
 * per source), so only the AVX-512 kernel, whose byte masks absorb every
 * tail, makes a single pass.
 */
#define DPQ_XOR_BURST_BY_SOURCE(name, attr, into)			\
	static attr void						\
	name(uint8_t *acc, const uint8_t *const *src,			\
			const uint16_t *len, unsigned int n)		\
	{								\
		unsigned int j;						\
									\
		for (j = 0; j < n; j++)					\
			into(acc, src[j], len[j]);			\
	}

#endif /* DPQ_FEC_XOR_INT_H */
