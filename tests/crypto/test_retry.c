/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the Retry integrity tag (RFC 9001 §5.8) with the A.4 vector.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/crypto/retry.h"
#include "rfc9001_vectors.h"
#include "test_util.h"

static struct dpq_crypto *cc;

static int
setup(void **state)
{
	(void)state;
	cc = dpq_crypto_create();
	return cc == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	dpq_crypto_destroy(cc);
	return 0;
}

static void
test_a4_compute(void **state)
{
	uint8_t pkt[64], odcid[8], tag[16];
	size_t n;

	(void)state;
	n = unhex(A4_RETRY, pkt, sizeof(pkt));
	assert_int_equal(n, 36);
	unhex(A_DCID, odcid, sizeof(odcid));
	assert_int_equal(dpq_retry_tag_compute(cc, odcid, 8, pkt, n - 16, tag),
			0);
	assert_memory_equal(tag, pkt + n - 16, 16);
}

static void
test_a4_verify_and_tamper(void **state)
{
	uint8_t pkt[64], odcid[8], big[1600];
	size_t n, i;

	(void)state;
	n = unhex(A4_RETRY, pkt, sizeof(pkt));
	unhex(A_DCID, odcid, sizeof(odcid));
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, pkt, n), 0);
	/* Every byte of the packet and of the ODCID is covered. */
	for (i = 0; i < n; i++) {
		pkt[i] ^= 0x01;
		assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, pkt, n),
				-EBADMSG);
		pkt[i] ^= 0x01;
	}
	odcid[7] ^= 0x01;
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, pkt, n), -EBADMSG);
	odcid[7] ^= 0x01;
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 7, pkt, n), -EBADMSG);
	/* Truncated, oversized, bad arguments. */
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, pkt, 15), -EINVAL);
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, pkt, n - 1),
			-EBADMSG);
	memset(big, 0, sizeof(big));
	assert_int_equal(dpq_retry_tag_verify(cc, odcid, 8, big, sizeof(big)),
			-EMSGSIZE);
	assert_int_equal(dpq_retry_tag_verify(cc, big, 21, pkt, n), -EINVAL);
	assert_int_equal(dpq_retry_tag_verify(cc, NULL, 8, pkt, n), -EINVAL);
	/* Empty ODCID is legal (and gives a different tag). */
	assert_int_equal(dpq_retry_tag_verify(cc, NULL, 0, pkt, n), -EBADMSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a4_compute),
		cmocka_unit_test(test_a4_verify_and_tamper),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
