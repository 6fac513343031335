/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The error space of errors.h: -errno, DPQ_ERR_* and DPQ_TE_ERR(code) never
 * share a value, and the decoders' transport errors decode back to the
 * RFC 9000 §20.1 code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <cmocka.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/mem.h"
#include "dataplane/engine/recvbuf.h"
#include "dataplane/engine/tparams.h"

static const int codec_errs[] = {
	DPQ_ERR_TRUNCATED, DPQ_ERR_MALFORMED, DPQ_ERR_FIXED_BIT,
	DPQ_ERR_VERSION, DPQ_ERR_NOSPACE,
};

/* Every errno value is an errno, never a transport or codec error: with
 * plain negation -EAGAIN was INVALID_TOKEN and -ENOMEM APPLICATION_ERROR. */
static void
test_errno_never_transport(void **state)
{
	(void)state;
	for (int e = 1; e <= DPQ_ERRNO_MAX; e++) {
		assert_true(dpq_err_is_errno(-e));
		assert_false(dpq_err_is_transport(-e));
		assert_false(dpq_err_is_codec(-e));
		assert_int_equal(dpq_err_transport_code(-e),
				DPQ_TE_INTERNAL_ERROR);
	}
	assert_int_not_equal(DPQ_TE_ERR(DPQ_TE_INVALID_TOKEN), -EAGAIN);
	assert_int_not_equal(DPQ_TE_ERR(DPQ_TE_APPLICATION_ERROR), -ENOMEM);
	assert_false(dpq_err_is_errno(0));
	assert_false(dpq_err_is_transport(0));
	assert_false(dpq_err_is_codec(0));
	assert_false(dpq_err_is_transport(1));
}

static void
test_codec_range(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(codec_errs) / sizeof(codec_errs[0]);
			i++) {
		int rc = codec_errs[i];

		assert_true(dpq_err_is_codec(rc));
		assert_false(dpq_err_is_errno(rc));
		assert_false(dpq_err_is_transport(rc));
		assert_string_not_equal(dpq_codec_err_str(rc), "UNKNOWN");
	}
}

/* Every code this implementation can send round-trips, and its encoding is
 * nothing else; the edges of the range are exact. */
static void
test_transport_round_trip(void **state)
{
	(void)state;
	for (uint64_t code = 0; code <= DPQ_TE_CRYPTO_ERROR_MAX; code++) {
		int rc = DPQ_TE_ERR(code);

		assert_true(rc < 0);
		assert_true(dpq_err_is_transport(rc));
		assert_false(dpq_err_is_errno(rc));
		assert_false(dpq_err_is_codec(rc));
		assert_int_equal(dpq_err_transport_code(rc), code);
	}
	assert_true(dpq_err_is_transport(DPQ_TE_ERR(DPQ_TE_ERR_SPAN - 1)));
	assert_false(dpq_err_is_transport(-(DPQ_TE_ERR_BASE - 1)));
	assert_false(dpq_err_is_transport(
			-(long)(DPQ_TE_ERR_BASE + DPQ_TE_ERR_SPAN)));
	/* A ssize_t result (the frame decoder's) tests the same. */
	assert_true(dpq_err_is_transport(
			(ssize_t)DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR)));
	assert_int_equal(dpq_err_transport_code(DPQ_TE_ERR(DPQ_TE_CRYPTO(80))),
			0x150);
}

/* The producers hand out transport errors in the new range. */
static void
test_producers(void **state)
{
	const struct dpq_mem mem = DPQ_MEM_LIBC;
	const uint8_t trunc_stream[] = { 0x0a, 0x00, 0x40, 0xff, 0x01 };
	const uint8_t long_ping[] = { 0x40, 0x01 };
	const uint8_t bad_tp[] = { 0x01, 0x08, 0x00 };	/* length past end */
	struct dpq_recvbuf rb;
	struct dpq_tparams tp;
	struct dpq_frame f;
	ssize_t n;
	int rc;

	(void)state;
	n = dpq_frame_decode(trunc_stream, trunc_stream + sizeof(trunc_stream),
			&f);
	assert_true(dpq_err_is_transport(n));
	assert_int_equal(dpq_err_transport_code(n),
			DPQ_TE_FRAME_ENCODING_ERROR);
	n = dpq_frame_decode(long_ping, long_ping + sizeof(long_ping), &f);
	assert_int_equal(dpq_err_transport_code(n),
			DPQ_TE_PROTOCOL_VIOLATION);
	rc = dpq_tparams_decode(bad_tp, bad_tp + sizeof(bad_tp),
			DPQ_ROLE_CLIENT, NULL, 0, &tp);
	assert_int_equal(dpq_err_transport_code(rc),
			DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	assert_true(dpq_err_is_transport(rc));

	dpq_recvbuf_init_crypto(&rb, &mem);
	rc = dpq_recvbuf_check(&rb, DPQ_RECVBUF_CRYPTO_MAX, 1, false);
	assert_int_equal(dpq_err_transport_code(rc),
			DPQ_TE_CRYPTO_BUFFER_EXCEEDED);
	dpq_recvbuf_free(&rb);
	dpq_recvbuf_init(&rb, &mem, 100);
	rc = dpq_recvbuf_check(&rb, 100, 1, false);
	assert_int_equal(rc, DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	dpq_recvbuf_free(&rb);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_never_transport),
		cmocka_unit_test(test_codec_range),
		cmocka_unit_test(test_transport_round_trip),
		cmocka_unit_test(test_producers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
