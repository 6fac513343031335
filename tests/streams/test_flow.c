/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_flow.c: flow control and stream limits (flow.h, RFC 9000 §4):
 * overrun by one byte, when MAX_DATA is due and with what value,
 * auto-tuning growth and cap, blocked signalling once per limit, stream
 * counts, STREAM_LIMIT_ERROR, values above 2^60.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/flow.h"

static void
test_overrun_by_one(void **state)
{
	struct dpq_flow_rx fc;

	(void)state;
	dpq_flow_rx_init(&fc, 1000, 1000, 0);
	assert_int_equal(dpq_flow_rx_on_recv(&fc, 1000), 0);
	assert_int_equal(dpq_flow_rx_on_recv(&fc, 1001),
			DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
	assert_int_equal(fc.recvd, 1000);
	assert_int_equal(dpq_flow_rx_check(&fc, 999), 0);
	/* Once the limit moves, the same byte is fine. */
	dpq_flow_rx_consume(&fc, 1000, 10, 0);
	assert_int_equal(dpq_flow_rx_on_recv(&fc, 1001), 0);
	assert_int_equal(dpq_flow_rx_check(&fc, 2001),
			DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR));
}

static void
test_max_data_timing(void **state)
{
	struct dpq_flow_rx fc;
	uint64_t v;

	(void)state;
	dpq_flow_rx_init(&fc, 1000, 1000, 0);
	assert_false(dpq_flow_rx_due(&fc, &v));
	(void)dpq_flow_rx_on_recv(&fc, 1000);
	/* Less than half the window consumed: nothing due. */
	dpq_flow_rx_consume(&fc, 499, 1, 0);
	assert_false(dpq_flow_rx_due(&fc, &v));
	dpq_flow_rx_consume(&fc, 1, 2, 0);	/* half consumed: update */
	assert_true(dpq_flow_rx_due(&fc, &v));
	assert_int_equal(v, 500 + 1000);
	assert_int_equal(fc.max, 1500);
	dpq_flow_rx_consume(&fc, 1, 3, 0);	/* not half again: same value */
	assert_true(dpq_flow_rx_due(&fc, &v));
	assert_int_equal(v, 1500);
	/* Sent: not due; lost: due again with the same value. */
	dpq_flow_rx_on_sent(&fc, v);
	assert_false(dpq_flow_rx_due(&fc, &v));
	dpq_flow_rx_on_lost(&fc, 1500);
	assert_true(dpq_flow_rx_due(&fc, &v));
	assert_int_equal(v, 1500);
	dpq_flow_rx_on_sent(&fc, v);
	/* A newer value supersedes: losing the old one re-queues nothing. */
	(void)dpq_flow_rx_on_recv(&fc, 1500);
	dpq_flow_rx_consume(&fc, 999, 4, 0);	/* consumed 1500 */
	assert_true(dpq_flow_rx_due(&fc, &v));
	assert_int_equal(v, 2500);
	dpq_flow_rx_on_sent(&fc, 2500);
	dpq_flow_rx_on_lost(&fc, 1500);
	assert_false(dpq_flow_rx_due(&fc, &v));
}

static void
test_autotune_growth_and_cap(void **state)
{
	const uint64_t srtt = 10000;	/* 10 ms */
	struct dpq_flow_rx fc;
	uint64_t now = 0, v;
	int updates = 0;

	(void)state;
	dpq_flow_rx_init(&fc, 16384, 1u << 20, 0);
	/* Fast reader: each half window consumed in 1 ms << 2 RTT. */
	while (fc.window < (1u << 20)) {
		uint64_t w = fc.window;

		now += 1000;
		(void)dpq_flow_rx_on_recv(&fc, fc.max);
		dpq_flow_rx_consume(&fc, fc.recvd - fc.consumed, now, srtt);
		assert_true(dpq_flow_rx_due(&fc, &v));
		assert_int_equal(v, fc.consumed + fc.window);
		dpq_flow_rx_on_sent(&fc, v);
		assert_int_equal(fc.window, w * 2);
		assert_true(++updates < 20);
	}
	assert_int_equal(updates, 6);	/* 16 KiB -> 1 MiB */
	/* Capped: never above window_max. */
	now += 1000;
	(void)dpq_flow_rx_on_recv(&fc, fc.max);
	dpq_flow_rx_consume(&fc, fc.recvd - fc.consumed, now, srtt);
	assert_int_equal(fc.window, 1u << 20);
	assert_int_equal(fc.max, fc.consumed + (1u << 20));

	/* Slow reader: updates 3 RTT apart never grow the window. */
	dpq_flow_rx_init(&fc, 16384, 1u << 20, 0);
	now = 0;
	for (updates = 0; updates < 10; updates++) {
		now += 3 * srtt;
		(void)dpq_flow_rx_on_recv(&fc, fc.max);
		dpq_flow_rx_consume(&fc, fc.recvd - fc.consumed, now, srtt);
		assert_int_equal(fc.window, 16384);
	}
	/* Unknown RTT (0): no tuning either. */
	dpq_flow_rx_init(&fc, 16384, 1u << 20, 0);
	(void)dpq_flow_rx_on_recv(&fc, fc.max);
	dpq_flow_rx_consume(&fc, fc.max, 1, 0);
	assert_int_equal(fc.window, 16384);
}

static void
test_blocked_once_per_limit(void **state)
{
	struct dpq_flow_tx fc;
	uint64_t lim;

	(void)state;
	dpq_flow_tx_init(&fc, 1000);
	assert_int_equal(dpq_flow_tx_credit(&fc), 1000);
	dpq_flow_tx_note_blocked(&fc);		/* not blocked yet */
	assert_false(dpq_flow_tx_blocked_due(&fc, &lim));
	dpq_flow_tx_add_sent(&fc, 1000);
	assert_int_equal(dpq_flow_tx_credit(&fc), 0);
	dpq_flow_tx_note_blocked(&fc);
	assert_true(dpq_flow_tx_blocked_due(&fc, &lim));
	assert_int_equal(lim, 1000);
	dpq_flow_tx_on_blocked_sent(&fc, 1000);
	dpq_flow_tx_note_blocked(&fc);
	dpq_flow_tx_note_blocked(&fc);
	assert_false(dpq_flow_tx_blocked_due(&fc, &lim));
	/* Lost while still blocked at 1000: again. */
	dpq_flow_tx_on_blocked_lost(&fc, 1000);
	assert_true(dpq_flow_tx_blocked_due(&fc, &lim));
	dpq_flow_tx_on_blocked_sent(&fc, 1000);
	/* Lower or equal MAX_DATA ignored; a raise unblocks. */
	assert_false(dpq_flow_tx_on_max(&fc, 999));
	assert_false(dpq_flow_tx_on_max(&fc, 1000));
	assert_true(dpq_flow_tx_on_max(&fc, 3000));
	assert_int_equal(dpq_flow_tx_credit(&fc), 2000);
	dpq_flow_tx_on_blocked_lost(&fc, 1000);	/* stale: ignored */
	assert_false(dpq_flow_tx_blocked_due(&fc, &lim));
	dpq_flow_tx_add_sent(&fc, 2000);
	dpq_flow_tx_note_blocked(&fc);
	assert_true(dpq_flow_tx_blocked_due(&fc, &lim));
	assert_int_equal(lim, 3000);
	/* A raise before it went out cancels it. */
	assert_true(dpq_flow_tx_on_max(&fc, 4000));
	assert_false(dpq_flow_tx_blocked_due(&fc, &lim));
}

static void
test_stream_limits_rx(void **state)
{
	struct dpq_streams_rx s;
	uint64_t first = 99, v;
	int i;

	(void)state;
	dpq_streams_rx_init(&s, 10);
	/* Stream number 5 opens 0..5. */
	assert_int_equal(dpq_streams_rx_open(&s, 5, &first), 6);
	assert_int_equal(first, 0);
	assert_int_equal(dpq_streams_rx_open(&s, 3, &first), 0);
	assert_int_equal(dpq_streams_rx_open(&s, 9, &first), 4);
	assert_int_equal(first, 6);
	/* Number 10 needs a limit of 11. */
	assert_int_equal(dpq_streams_rx_open(&s, 10, &first),
			DPQ_TE_ERR(DPQ_TE_STREAM_LIMIT_ERROR));
	/* Closing gives credit back, announced per half window. */
	for (i = 0; i < 4; i++) {
		dpq_streams_rx_on_closed(&s);
		assert_false(dpq_streams_rx_due(&s, &v));
	}
	dpq_streams_rx_on_closed(&s);
	assert_true(dpq_streams_rx_due(&s, &v));
	assert_int_equal(v, 15);
	dpq_streams_rx_on_sent(&s, 15);
	assert_false(dpq_streams_rx_due(&s, &v));
	dpq_streams_rx_on_lost(&s, 15);
	assert_true(dpq_streams_rx_due(&s, &v));
	assert_int_equal(dpq_streams_rx_open(&s, 14, &first), 5);
	assert_int_equal(dpq_streams_rx_open(&s, 15, &first),
			DPQ_TE_ERR(DPQ_TE_STREAM_LIMIT_ERROR));
	/* STREAMS_BLOCKED above 2^60 is an encoding error (§19.14). */
	assert_int_equal(dpq_streams_rx_on_blocked(&s, DPQ_STREAMS_MAX), 0);
	assert_int_equal(dpq_streams_rx_on_blocked(&s, DPQ_STREAMS_MAX + 1),
			DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR));

	/* Near 2^60 the limit stops there. */
	dpq_streams_rx_init(&s, UINT64_MAX);
	assert_int_equal(s.max, DPQ_STREAMS_MAX);
	assert_int_equal(dpq_streams_rx_open(&s, DPQ_STREAMS_MAX - 1, &first),
			(int64_t)DPQ_STREAMS_MAX);
	dpq_streams_rx_on_closed(&s);
	assert_int_equal(s.max, DPQ_STREAMS_MAX);
	assert_false(dpq_streams_rx_due(&s, &v));
}

static void
test_stream_limits_tx(void **state)
{
	struct dpq_streams_tx s;
	uint64_t idx, lim;

	(void)state;
	/* §18.2 / §19.11: values above 2^60 refused. */
	assert_int_equal(dpq_streams_tx_init(&s, DPQ_STREAMS_MAX + 1),
			DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR));
	assert_int_equal(dpq_streams_tx_init(&s, 2), 0);
	assert_int_equal(dpq_streams_tx_on_max(&s, DPQ_STREAMS_MAX + 1),
			DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR));
	assert_int_equal(dpq_streams_tx_on_max(&s, UINT64_MAX),
			DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR));
	assert_int_equal(s.max, 2);
	assert_int_equal(dpq_streams_tx_open(&s, &idx), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(dpq_streams_tx_open(&s, &idx), 0);
	assert_int_equal(idx, 1);
	/* Blocked: STREAMS_BLOCKED once per limit. */
	assert_int_equal(dpq_streams_tx_open(&s, &idx), -EAGAIN);
	assert_true(dpq_streams_tx_blocked_due(&s, &lim));
	assert_int_equal(lim, 2);
	dpq_streams_tx_on_blocked_sent(&s, 2);
	assert_int_equal(dpq_streams_tx_open(&s, &idx), -EAGAIN);
	assert_false(dpq_streams_tx_blocked_due(&s, &lim));
	dpq_streams_tx_on_blocked_lost(&s, 2);
	assert_true(dpq_streams_tx_blocked_due(&s, &lim));
	dpq_streams_tx_on_blocked_sent(&s, 2);
	/* Not an increase: ignored. */
	assert_int_equal(dpq_streams_tx_on_max(&s, 1), 0);
	assert_int_equal(dpq_streams_tx_on_max(&s, 2), 0);
	assert_int_equal(dpq_streams_tx_on_max(&s, 3), 1);
	assert_int_equal(dpq_streams_tx_open(&s, &idx), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(dpq_streams_tx_open(&s, &idx), -EAGAIN);
	assert_true(dpq_streams_tx_blocked_due(&s, &lim));
	assert_int_equal(lim, 3);
	/* Exactly 2^60 is allowed. */
	assert_int_equal(dpq_streams_tx_on_max(&s, DPQ_STREAMS_MAX), 1);
	assert_false(dpq_streams_tx_blocked_due(&s, &lim));
	assert_int_equal(dpq_streams_tx_init(&s, DPQ_STREAMS_MAX), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overrun_by_one),
		cmocka_unit_test(test_max_data_timing),
		cmocka_unit_test(test_autotune_growth_and_cap),
		cmocka_unit_test(test_blocked_once_per_limit),
		cmocka_unit_test(test_stream_limits_rx),
		cmocka_unit_test(test_stream_limits_tx),
	};

	return cmocka_run_group_tests_name("streams_flow", tests, NULL, NULL);
}
