/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the libFuzzer targets of tests/fuzz: a check that aborts (the
 * fuzzer then saves the input as a crash) and a byte reader over the
 * input, so one input drives a sequence of operations.
 */
#ifndef DPQ_TESTS_FUZZ_H
#define DPQ_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,	\
				__LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct fuzz_in {
	const uint8_t *p, *end;
};

static inline size_t
fuzz_left(const struct fuzz_in *in)
{
	return (size_t)(in->end - in->p);
}

static inline uint8_t
fuzz_u8(struct fuzz_in *in)
{
	return in->p < in->end ? *in->p++ : 0;
}

static inline uint16_t
fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_u8(in);

	return (uint16_t)(v << 8 | fuzz_u8(in));
}

static inline uint64_t
fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | fuzz_u8(in);
	return v;
}

/* Up to max bytes (fewer at the end of the input). */
static inline const uint8_t *
fuzz_bytes(struct fuzz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < fuzz_left(in) ? want : fuzz_left(in);
	in->p += *got;
	return p;
}

#endif
