/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor_avx2.c: XOR with 32-byte AVX2 vectors. Every function here carries
 * target("avx2") instead of relying on -march: the build targets generic
 * x86-64 and libdpdk's flags pin -march=corei7, yet this code must exist
 * in the shipped binary and run wherever the CPU has AVX2.
 */
#include <immintrin.h>

#include "dataplane/fec/xor_int.h"

#define AVX2 __attribute__((target("avx2")))

static bool
avx2_supported(void)
{
	/* GCC's check includes the OS enabling the YMM state (XGETBV). */
	return __builtin_cpu_supports("avx2");
}

static AVX2 void
avx2_xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i = 0;

	for (; i + 128 <= len; i += 128) {
		__m256i a0 = _mm256_loadu_si256((const __m256i *)(dst + i));
		__m256i a1 = _mm256_loadu_si256(
				(const __m256i *)(dst + i + 32));
		__m256i a2 = _mm256_loadu_si256(
				(const __m256i *)(dst + i + 64));
		__m256i a3 = _mm256_loadu_si256(
				(const __m256i *)(dst + i + 96));

		a0 = _mm256_xor_si256(a0,
			_mm256_loadu_si256((const __m256i *)(src + i)));
		a1 = _mm256_xor_si256(a1,
			_mm256_loadu_si256((const __m256i *)(src + i + 32)));
		a2 = _mm256_xor_si256(a2,
			_mm256_loadu_si256((const __m256i *)(src + i + 64)));
		a3 = _mm256_xor_si256(a3,
			_mm256_loadu_si256((const __m256i *)(src + i + 96)));
		_mm256_storeu_si256((__m256i *)(dst + i), a0);
		_mm256_storeu_si256((__m256i *)(dst + i + 32), a1);
		_mm256_storeu_si256((__m256i *)(dst + i + 64), a2);
		_mm256_storeu_si256((__m256i *)(dst + i + 96), a3);
	}
	for (; i + 32 <= len; i += 32)
		_mm256_storeu_si256((__m256i *)(dst + i), _mm256_xor_si256(
			_mm256_loadu_si256((const __m256i *)(dst + i)),
			_mm256_loadu_si256((const __m256i *)(src + i))));
	if (i + 16 <= len) {
		_mm_storeu_si128((__m128i *)(dst + i), _mm_xor_si128(
			_mm_loadu_si128((const __m128i *)(dst + i)),
			_mm_loadu_si128((const __m128i *)(src + i))));
		i += 16;
	}
	for (; i < len; i++)
		dst[i] ^= src[i];
}

DPQ_XOR_BURST_BY_SOURCE(avx2_xor_burst, AVX2, avx2_xor_into)

const struct dpq_xor_impl dpq_xor_avx2 = {
	.name = "avx2",
	.supported = avx2_supported,
	.xor_into = avx2_xor_into,
	.xor_burst = avx2_xor_burst,
};
