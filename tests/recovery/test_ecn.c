/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ecn.c: ECN validation (RFC 9000 §13.4.2): testing marks ten
 * packets then waits; valid counts make the path capable; plain ACKs of
 * marked packets, counts short of the marked packets acknowledged,
 * counts above what was sent, ECT(1) counts, or the loss of every
 * testing packet make it fail for good; reordered (smaller) counts are
 * ignored; CE increases are reported; disabled never marks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/ecn.h"

#define APP 2

static void
send_n(struct dpq_ecnv *v, unsigned int space, unsigned int n)
{
	while (n-- > 0)
		dpq_ecnv_on_sent(v, space, dpq_ecnv_codepoint(v));
}

static void
test_testing_then_capable(void **state)
{
	struct dpq_ecnv v;
	struct dpq_ecn_counts c = { .ect0 = 3 };

	(void)state;
	dpq_ecnv_init(&v, true);
	assert_int_equal(v.state, DPQ_ECN_TESTING);
	assert_int_equal(dpq_ecnv_codepoint(&v), DPQ_ECN_CP_ECT0);
	send_n(&v, APP, 9);
	assert_int_equal(v.state, DPQ_ECN_TESTING);
	send_n(&v, APP, 1);
	/* ten marked: stop marking until validated */
	assert_int_equal(v.state, DPQ_ECN_UNKNOWN);
	assert_int_equal(dpq_ecnv_codepoint(&v), DPQ_ECN_CP_NOT_ECT);
	send_n(&v, APP, 5);
	assert_int_equal(v.sent_ect0[APP], 10);
	/* three marked packets acked with ECT(0) 3: capable */
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 3, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_CAPABLE);
	assert_int_equal(dpq_ecnv_codepoint(&v), DPQ_ECN_CP_ECT0);
	/* CE increases are reported for congestion control */
	c.ect0 = 4;
	c.ce = 2;
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 3, &c), 2);
	assert_int_equal(v.ce_events, 1);
	/* an older ACK frame (smaller counts) is ignored, nothing fails */
	c.ect0 = 3;
	c.ce = 1;
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 0, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_CAPABLE);
	assert_string_equal(dpq_ecn_state_str(v.state), "capable");
}

static void
test_failures(void **state)
{
	struct dpq_ecnv v;
	struct dpq_ecn_counts c;

	(void)state;
	/* a plain ACK of marked packets: the marks are not echoed */
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 2);
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 0, NULL), 0);
	assert_int_equal(v.state, DPQ_ECN_TESTING);	/* nothing marked acked */
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 1, NULL), 0);
	assert_int_equal(v.state, DPQ_ECN_FAILED);
	assert_int_equal(dpq_ecnv_codepoint(&v), DPQ_ECN_CP_NOT_ECT);
	/* failed for good: later valid counts change nothing, CE ignored */
	c = (struct dpq_ecn_counts){ .ect0 = 1, .ce = 1 };
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 1, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_FAILED);

	/* ECT(0)+CE short of the marked packets acknowledged (bleached) */
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 4);
	c = (struct dpq_ecn_counts){ .ect0 = 1 };
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 2, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_FAILED);

	/* more counted than sent */
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 2);
	c = (struct dpq_ecn_counts){ .ect0 = 3 };
	dpq_ecnv_on_ack(&v, APP, 2, &c);
	assert_int_equal(v.state, DPQ_ECN_FAILED);

	/* ECT(1): we send none */
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 2);
	c = (struct dpq_ecn_counts){ .ect0 = 1, .ect1 = 1 };
	dpq_ecnv_on_ack(&v, APP, 1, &c);
	assert_int_equal(v.state, DPQ_ECN_FAILED);

	/* counts are per space: Initial's do not validate 1-RTT's */
	dpq_ecnv_init(&v, true);
	send_n(&v, 0, 2);
	send_n(&v, APP, 2);
	c = (struct dpq_ecn_counts){ .ect0 = 4 };
	dpq_ecnv_on_ack(&v, APP, 2, &c);
	assert_int_equal(v.state, DPQ_ECN_FAILED);
}

/* Every testing packet lost: the marks may be what the path drops. */
static void
test_all_marked_lost(void **state)
{
	struct dpq_ecnv v;
	struct dpq_ecn_counts c = { .ect0 = 1 };

	(void)state;
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 10);
	dpq_ecnv_on_lost(&v, 9);
	assert_int_equal(v.state, DPQ_ECN_UNKNOWN);
	dpq_ecnv_on_lost(&v, 1);
	assert_int_equal(v.state, DPQ_ECN_FAILED);
	/* some got through instead: validated, later losses irrelevant */
	dpq_ecnv_init(&v, true);
	send_n(&v, APP, 10);
	dpq_ecnv_on_lost(&v, 9);
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 1, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_CAPABLE);
	dpq_ecnv_on_lost(&v, 100);
	assert_int_equal(v.state, DPQ_ECN_CAPABLE);
}

static void
test_disabled(void **state)
{
	struct dpq_ecnv v;
	struct dpq_ecn_counts c = { .ce = 5 };

	(void)state;
	dpq_ecnv_init(&v, false);
	assert_int_equal(dpq_ecnv_codepoint(&v), DPQ_ECN_CP_NOT_ECT);
	send_n(&v, APP, 20);
	assert_int_equal(v.sent_ect0[APP], 0);
	assert_int_equal(dpq_ecnv_on_ack(&v, APP, 0, &c), 0);
	assert_int_equal(v.state, DPQ_ECN_DISABLED);
	/* out-of-range space and codepoints are ignored */
	dpq_ecnv_init(&v, true);
	dpq_ecnv_on_sent(&v, 7, DPQ_ECN_CP_ECT0);
	dpq_ecnv_on_sent(&v, APP, DPQ_ECN_CP_NOT_ECT);
	assert_int_equal(v.testing_sent, 0);
	assert_int_equal(dpq_ecnv_on_ack(&v, 7, 1, NULL), 0);
	assert_int_equal(v.state, DPQ_ECN_TESTING);
	assert_string_equal(dpq_ecn_state_str(DPQ_ECN_STATE_COUNT), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_testing_then_capable),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_all_marked_lost),
		cmocka_unit_test(test_disabled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
