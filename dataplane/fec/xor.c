/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xor.c: the table of XOR implementations and the run-time choice.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/fec/xor_int.h"

/* Fastest first: the first supported one is the default. */
static const struct dpq_xor_impl *const impls[] = {
#if defined(__x86_64__)
	&dpq_xor_avx512,
	&dpq_xor_avx2,
	&dpq_xor_sse2,
#endif
	&dpq_xor_scalar,
};
#define N_IMPLS (sizeof(impls) / sizeof(impls[0]))

const struct dpq_xor_impl *dpq_xor_active = &dpq_xor_scalar;

const struct dpq_xor_impl *
dpq_xor_impl_get(size_t i)
{
	return i < N_IMPLS ? impls[i] : NULL;
}

const struct dpq_xor_impl *
dpq_xor_impl_find(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < N_IMPLS; i++)
		if (strcmp(impls[i]->name, name) == 0)
			return impls[i];
	return NULL;
}

const struct dpq_xor_impl *
dpq_xor_impl_best(void)
{
	size_t i;

	for (i = 0; i < N_IMPLS; i++)
		if (impls[i]->supported())
			return impls[i];
	return &dpq_xor_scalar;
}

int
dpq_xor_use(const char *name)
{
	const struct dpq_xor_impl *x;

	if (name != NULL && strcmp(name, "auto") == 0) {
		dpq_xor_active = dpq_xor_impl_best();
		return 0;
	}
	x = dpq_xor_impl_find(name);
	if (x == NULL)
		return -ENOENT;
	if (!x->supported())
		return -ENOTSUP;
	dpq_xor_active = x;
	return 0;
}

/* Chosen once, before main() and before any thread exists. */
__attribute__((constructor)) static void
xor_choose(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
#endif
	dpq_xor_active = dpq_xor_impl_best();
}
