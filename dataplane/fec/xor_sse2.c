/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor_sse2.c: XOR with 16-byte SSE2 vectors, which every x86-64 CPU has:
 * the fallback on CPUs without AVX2.
 */
#include <immintrin.h>

#include "dataplane/fec/xor_int.h"

static bool
sse2_supported(void)
{
	return true;	/* part of the x86-64 baseline */
}

static void
sse2_xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i = 0;

	for (; i + 64 <= len; i += 64) {
		__m128i a0 = _mm_loadu_si128((const __m128i *)(dst + i));
		__m128i a1 = _mm_loadu_si128((const __m128i *)(dst + i + 16));
		__m128i a2 = _mm_loadu_si128((const __m128i *)(dst + i + 32));
		__m128i a3 = _mm_loadu_si128((const __m128i *)(dst + i + 48));

		a0 = _mm_xor_si128(a0,
			_mm_loadu_si128((const __m128i *)(src + i)));
		a1 = _mm_xor_si128(a1,
			_mm_loadu_si128((const __m128i *)(src + i + 16)));
		a2 = _mm_xor_si128(a2,
			_mm_loadu_si128((const __m128i *)(src + i + 32)));
		a3 = _mm_xor_si128(a3,
			_mm_loadu_si128((const __m128i *)(src + i + 48)));
		_mm_storeu_si128((__m128i *)(dst + i), a0);
		_mm_storeu_si128((__m128i *)(dst + i + 16), a1);
		_mm_storeu_si128((__m128i *)(dst + i + 32), a2);
		_mm_storeu_si128((__m128i *)(dst + i + 48), a3);
	}
	for (; i + 16 <= len; i += 16)
		_mm_storeu_si128((__m128i *)(dst + i), _mm_xor_si128(
			_mm_loadu_si128((const __m128i *)(dst + i)),
			_mm_loadu_si128((const __m128i *)(src + i))));
	for (; i < len; i++)
		dst[i] ^= src[i];
}

DPQ_XOR_BURST_BY_SOURCE(sse2_xor_burst, , sse2_xor_into)

const struct dpq_xor_impl dpq_xor_sse2 = {
	.name = "sse2",
	.supported = sse2_supported,
	.xor_into = sse2_xor_into,
	.xor_burst = sse2_xor_burst,
};
