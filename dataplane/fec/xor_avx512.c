/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor_avx512.c: XOR with 64-byte AVX-512 vectors; byte-masked loads and
 * stores (AVX512BW) handle every tail in one instruction, and masked-off
 * bytes are never touched, so no read goes past a buffer. Functions carry
 * target attributes (see xor_avx2.c for why).
 */
#include <immintrin.h>

#include "dataplane/fec/xor_int.h"

#define AVX512 __attribute__((target("avx512f,avx512bw")))

static bool
avx512_supported(void)
{
	/* GCC's check includes the OS enabling the ZMM state (XGETBV). */
	return __builtin_cpu_supports("avx512f") &&
		__builtin_cpu_supports("avx512bw");
}

/* Mask of the first n (0..64) bytes of a vector. */
static AVX512 __mmask64
head_mask(size_t n)
{
	return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

static AVX512 void
avx512_xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t i = 0;

	for (; i + 256 <= len; i += 256) {
		__m512i a0 = _mm512_loadu_si512(dst + i);
		__m512i a1 = _mm512_loadu_si512(dst + i + 64);
		__m512i a2 = _mm512_loadu_si512(dst + i + 128);
		__m512i a3 = _mm512_loadu_si512(dst + i + 192);

		a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(src + i));
		a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(src + i + 64));
		a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(src + i + 128));
		a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(src + i + 192));
		_mm512_storeu_si512(dst + i, a0);
		_mm512_storeu_si512(dst + i + 64, a1);
		_mm512_storeu_si512(dst + i + 128, a2);
		_mm512_storeu_si512(dst + i + 192, a3);
	}
	for (; i < len; i += 64) {
		__mmask64 m = head_mask(len - i);
		__m512i a = _mm512_maskz_loadu_epi8(m, dst + i);

		a = _mm512_xor_si512(a, _mm512_maskz_loadu_epi8(m, src + i));
		_mm512_mask_storeu_epi8(dst + i, m, a);
	}
}

/*
 * One pass over acc in 256-byte blocks: each block is loaded once, every
 * source XORed in with masks for the part it covers (sources shorter than
 * the block contribute zeros past their end), and stored once.
 */
static AVX512 void
avx512_xor_burst(uint8_t *acc, const uint8_t *const *src, const uint16_t *len,
		unsigned int n)
{
	size_t off, max = 0;
	unsigned int j;

	for (j = 0; j < n; j++)
		if (len[j] > max)
			max = len[j];
	for (off = 0; off < max; off += 256) {
		size_t left = max - off;
		__mmask64 m0 = head_mask(left);
		__mmask64 m1 = left > 64 ? head_mask(left - 64) : 0;
		__mmask64 m2 = left > 128 ? head_mask(left - 128) : 0;
		__mmask64 m3 = left > 192 ? head_mask(left - 192) : 0;
		__m512i a0 = _mm512_maskz_loadu_epi8(m0, acc + off);
		__m512i a1 = _mm512_maskz_loadu_epi8(m1, acc + off + 64);
		__m512i a2 = _mm512_maskz_loadu_epi8(m2, acc + off + 128);
		__m512i a3 = _mm512_maskz_loadu_epi8(m3, acc + off + 192);

		for (j = 0; j < n; j++) {
			const uint8_t *s = src[j] + off;

			if (len[j] >= off + 256) {
				a0 = _mm512_xor_si512(a0,
						_mm512_loadu_si512(s));
				a1 = _mm512_xor_si512(a1,
						_mm512_loadu_si512(s + 64));
				a2 = _mm512_xor_si512(a2,
						_mm512_loadu_si512(s + 128));
				a3 = _mm512_xor_si512(a3,
						_mm512_loadu_si512(s + 192));
			} else if (len[j] > off) {
				size_t l = len[j] - off;

				a0 = _mm512_xor_si512(a0,
					_mm512_maskz_loadu_epi8(
						head_mask(l), s));
				if (l > 64)
					a1 = _mm512_xor_si512(a1,
						_mm512_maskz_loadu_epi8(
						head_mask(l - 64), s + 64));
				if (l > 128)
					a2 = _mm512_xor_si512(a2,
						_mm512_maskz_loadu_epi8(
						head_mask(l - 128), s + 128));
				if (l > 192)
					a3 = _mm512_xor_si512(a3,
						_mm512_maskz_loadu_epi8(
						head_mask(l - 192), s + 192));
			}
		}
		_mm512_mask_storeu_epi8(acc + off, m0, a0);
		_mm512_mask_storeu_epi8(acc + off + 64, m1, a1);
		_mm512_mask_storeu_epi8(acc + off + 128, m2, a2);
		_mm512_mask_storeu_epi8(acc + off + 192, m3, a3);
	}
}

const struct dpq_xor_impl dpq_xor_avx512 = {
	.name = "avx512",
	.supported = avx512_supported,
	.xor_into = avx512_xor_into,
	.xor_burst = avx512_xor_burst,
};
