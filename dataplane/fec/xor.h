/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor.h: XOR accumulation for the XOR-FEC extension (docs/fec.md), in
 * several implementations chosen once at run time from the CPU's flags.
 *
 * The shipped build is compiled for generic x86-64 (and libdpdk's
 * pkg-config flags add -march=corei7), where a plain C loop runs at a
 * few GB/s. The AVX2 and AVX-512 kernels are compiled with per-function
 * target attributes, so they exist in every build and run only where the
 * CPU (and the OS, for the wide register state) supports them:
 *   avx512  64-byte vectors, masked loads/stores for tails (F + BW)
 *   avx2    32-byte vectors
 *   sse2    16-byte vectors (every x86-64 CPU)
 *   scalar  64-bit words, never vectorised (any CPU: the portable
 *           fallback and the baseline the benchmark compares against)
 * The choice is made before main() (a constructor), so there is no
 * race; dpq_xor_use() overrides it (tests, benchmarks, configuration).
 *
 * Two operations:
 *   xor_into(dst, src, len)       dst[i] ^= src[i] for i < len
 *   xor_burst(acc, src, len, n)   acc ^= each src[j] zero-extended to
 *                                 its own len[j]: one pass that loads
 *                                 and stores each block of acc once for
 *                                 the whole burst, however many sources
 * acc must hold max(len[]) bytes; bytes of acc past a source's length
 * are left as they are (a zero-padded XOR). Buffers may have any
 * alignment; src and dst must not overlap. Pure C, no I/O, no DPDK.
 */
#ifndef DPQ_FEC_XOR_H
#define DPQ_FEC_XOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dpq_xor_impl {
	const char *name;
	/* Can this CPU run it? */
	bool (*supported)(void);
	void (*xor_into)(uint8_t *dst, const uint8_t *src, size_t len);
	void (*xor_burst)(uint8_t *acc, const uint8_t *const *src,
			const uint16_t *len, unsigned int n);
};

/* The implementation in use (never NULL once the library is loaded). */
extern const struct dpq_xor_impl *dpq_xor_active;

/* i-th compiled-in implementation, fastest first; NULL past the end. */
const struct dpq_xor_impl *dpq_xor_impl_get(size_t i);

/* Implementation by name, or NULL (unknown name). */
const struct dpq_xor_impl *dpq_xor_impl_find(const char *name);

/* The fastest implementation this CPU supports. */
const struct dpq_xor_impl *dpq_xor_impl_best(void);

/* Use the named implementation ("auto": the fastest supported). Returns
 * 0, -ENOENT for an unknown name, -ENOTSUP if this CPU lacks it. */
int dpq_xor_use(const char *name);

static inline void
dpq_xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
	dpq_xor_active->xor_into(dst, src, len);
}

static inline void
dpq_xor_burst(uint8_t *acc, const uint8_t *const *src, const uint16_t *len,
		unsigned int n)
{
	dpq_xor_active->xor_burst(acc, src, len, n);
}

#endif /* DPQ_FEC_XOR_H */
