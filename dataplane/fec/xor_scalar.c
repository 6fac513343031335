/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor_scalar.c: XOR in 64-bit words, the portable fallback. Built with
 * -fno-tree-vectorize (meson.build) so it stays scalar on every target:
 * it is also the baseline the benchmark measures the vector kernels
 * against.
 */
#include <string.h>

#include "dataplane/fec/xor_int.h"

static bool
scalar_supported(void)
{
	return true;
}

static void
scalar_xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	uint64_t a, b;
	size_t i = 0;

	/* memcpy: any alignment, compiled to plain loads and stores. */
	for (; i + 8 <= len; i += 8) {
		memcpy(&a, dst + i, 8);
		memcpy(&b, src + i, 8);
		a ^= b;
		memcpy(dst + i, &a, 8);
	}
	for (; i < len; i++)
		dst[i] ^= src[i];
}

DPQ_XOR_BURST_BY_SOURCE(scalar_xor_burst, , scalar_xor_into)

const struct dpq_xor_impl dpq_xor_scalar = {
	.name = "scalar",
	.supported = scalar_supported,
	.xor_into = scalar_xor_into,
	.xor_burst = scalar_xor_burst,
};
