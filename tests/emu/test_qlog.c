/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The qlog writer (control/qlog) on hand-made records, and the trace hook
 * of a real connection pair in the simulator: every packet the sender
 * builds is reported once, losses match the link's drops, metrics and
 * congestion state come out as qlog recovery events.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control/qlog/qlog.h"
#include "dataplane/engine/cc.h"
#include "emu/sim.h"

static void
assert_has(const char *s, const char *what)
{
	if (strstr(s, what) == NULL)
		fail_msg("'%s' not in %s", what, s);
}

static void
test_header(void **state)
{
	struct dpq_qlog q;
	struct dpq_qlog_conf c = {
		.title = "a \"quoted\"\ttitle",
		.server = true,
		.odcid_hex = "0a1b<script>2c",
		.reference_us = 5000,
	};
	char buf[512];
	int n;

	(void)state;
	n = dpq_qlog_start(&q, &c, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_int_equal(buf[0], 0x1e);
	assert_int_equal(buf[n - 1], '\n');
	assert_has(buf, "\"qlog_format\":\"JSON-SEQ\"");
	assert_has(buf, "\"qlog_version\":\"0.3\"");
	assert_has(buf, "\"type\":\"server\"");
	assert_has(buf, "a \\\"quoted\\\"\\u0009title");
	assert_has(buf, "\"group_id\":\"0a1bc2c\"");
	assert_int_equal(q.reference_us, 5000);
	/* Too small: -ENOSPC, never an overflow. */
	assert_int_equal(dpq_qlog_start(&q, &c, buf, 20), -ENOSPC);
	assert_int_equal(dpq_qlog_start(&q, &c, buf, 0), -ENOSPC);
}

static void
test_packets(void **state)
{
	struct dpq_qlog q = { .reference_us = 1000000 };
	struct dpq_trace_ev ev;
	char buf[DPQ_QLOG_EVENT_MAX];
	int n;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.type = DPQ_TRACE_PACKET_SENT;
	ev.time_us = 1012345;
	ev.epoch = DPQ_EPOCH_1RTT;
	ev.flags = DPQ_TRACE_EV_PROBE;
	ev.u.pkt.pn = 77;
	ev.u.pkt.len = 1252;
	ev.u.pkt.frames = (1u << DPQ_TRACE_F_ACK) | (1u << DPQ_TRACE_F_STREAM) |
		(1u << DPQ_TRACE_F_FLOW);
	ev.u.pkt.ack_largest = 40;
	ev.u.pkt.ack_first_range = 5;
	ev.u.pkt.stream_id = 4;
	ev.u.pkt.stream_off = 1000;
	ev.u.pkt.stream_len = 1200;
	n = dpq_qlog_format(&q, &ev, buf, sizeof(buf));
	assert_true(n > 0);
	assert_has(buf, "\"time\":12.345,");
	assert_has(buf, "\"name\":\"transport:packet_sent\"");
	assert_has(buf, "\"packet_type\":\"1RTT\",\"packet_number\":77");
	assert_has(buf, "\"raw\":{\"length\":1252}");
	assert_has(buf, "\"acked_ranges\":[[35,40]]");
	assert_has(buf, "\"stream_id\":4,\"offset\":1000,\"length\":1200");
	assert_has(buf, "\"dpq_kind\":\"flow_control\"");
	assert_has(buf, "\"trigger\":\"pto_probe\"");

	ev.type = DPQ_TRACE_PACKET_RECEIVED;
	ev.epoch = DPQ_EPOCH_HANDSHAKE;
	ev.flags = 0;
	ev.u.pkt.frames = 1u << DPQ_TRACE_F_CRYPTO;
	n = dpq_qlog_format(&q, &ev, buf, sizeof(buf));
	assert_true(n > 0);
	assert_has(buf, "transport:packet_received");
	assert_has(buf, "\"packet_type\":\"handshake\"");
	assert_has(buf, "\"frames\":[{\"frame_type\":\"crypto\"}]");

	ev.type = DPQ_TRACE_PACKET_LOST;
	ev.epoch = DPQ_EPOCH_INITIAL;
	ev.trigger = DPQ_TRACE_LOST_TIME;
	n = dpq_qlog_format(&q, &ev, buf, sizeof(buf));
	assert_true(n > 0);
	assert_has(buf, "recovery:packet_lost");
	assert_has(buf, "\"packet_type\":\"initial\",\"packet_number\":77");
	assert_has(buf, "\"trigger\":\"time_threshold\"");

	/* Bad records and small buffers. */
	ev.type = 0;
	assert_int_equal(dpq_qlog_format(&q, &ev, buf, sizeof(buf)), -EINVAL);
	ev.type = DPQ_TRACE_TYPE_COUNT;
	assert_int_equal(dpq_qlog_format(&q, &ev, buf, sizeof(buf)), -EINVAL);
	ev.type = DPQ_TRACE_PACKET_SENT;
	assert_int_equal(dpq_qlog_format(&q, &ev, buf, 30), -ENOSPC);
	/* A time before the reference is clamped to 0, not wrapped. */
	ev.time_us = 10;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"time\":0.000,");
}

static void
test_metrics_changed_only(void **state)
{
	struct dpq_qlog q = { 0 };
	struct dpq_trace_ev ev;
	char buf[DPQ_QLOG_EVENT_MAX];

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.type = DPQ_TRACE_METRICS;
	ev.u.m.cwnd = 14720;
	ev.u.m.bytes_in_flight = 2400;
	ev.u.m.ssthresh = UINT64_MAX;
	ev.u.m.pacing_rate = 1000000;
	ev.u.m.smoothed_rtt_us = 20500;
	ev.u.m.min_rtt_us = 20000;
	ev.u.m.latest_rtt_us = 21000;
	ev.u.m.rtt_var_us = 1500;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "recovery:metrics_updated");
	assert_has(buf, "\"congestion_window\":14720");
	assert_has(buf, "\"smoothed_rtt\":20.500");
	assert_has(buf, "\"min_rtt\":20.000");
	assert_has(buf, "\"pacing_rate\":8000000");	/* bits/s */
	assert_null(strstr(buf, "ssthresh"));		/* unknown */
	/* Unchanged: nothing to write. */
	assert_int_equal(dpq_qlog_format(&q, &ev, buf, sizeof(buf)), 0);
	/* One field changed: only it. */
	ev.u.m.bytes_in_flight = 3600;
	ev.u.m.ssthresh = 7360;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"data\":{\"bytes_in_flight\":3600,"
			"\"ssthresh\":7360}");
	/* Congestion state names. */
	memset(&ev, 0, sizeof(ev));
	ev.type = DPQ_TRACE_CC_STATE;
	ev.u.cc.old_state = DPQ_CC_PHASE_SLOW_START;
	ev.u.cc.new_state = DPQ_CC_PHASE_RECOVERY;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"old\":\"slow_start\",\"new\":\"recovery\"");
	ev.u.cc.new_state = 200;		/* out of range */
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"new\":\"other\"");
}

/* packet_dropped / packet_buffered / connection_closed as qlog names them;
 * a peer's close reason escaped, an unknown pn left out. */
static void
test_drop_and_close(void **state)
{
	struct dpq_qlog q = { 0 };
	struct dpq_trace_ev ev;
	char buf[DPQ_QLOG_EVENT_MAX];

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.type = DPQ_TRACE_PACKET_DROPPED;
	ev.epoch = DPQ_EPOCH_1RTT;
	ev.trigger = DPQ_TRACE_DROP_DECRYPTION_FAILURE;
	ev.u.pkt.pn = UINT64_MAX;
	ev.u.pkt.len = 51;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"name\":\"transport:packet_dropped\"");
	assert_has(buf, "\"header\":{\"packet_type\":\"1RTT\"},"
			"\"raw\":{\"length\":51},"
			"\"trigger\":\"payload_decrypt_error\"");
	ev.epoch = DPQ_EPOCH_HANDSHAKE;
	ev.trigger = DPQ_TRACE_DROP_DUPLICATE;
	ev.u.pkt.pn = 9;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"packet_type\":\"handshake\",\"packet_number\":9}");
	assert_has(buf, "\"trigger\":\"duplicate\"");
	ev.trigger = DPQ_TRACE_DROP_INVALID_INITIAL;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"trigger\":\"invalid_initial\"");
	ev.trigger = 200;			/* out of range: none */
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, "trigger"));
	ev.type = DPQ_TRACE_PACKET_BUFFERED;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"name\":\"transport:packet_buffered\"");
	assert_has(buf, "\"trigger\":\"keys_unavailable\"");

	memset(&ev, 0, sizeof(ev));
	ev.type = DPQ_TRACE_CONN_CLOSED;
	ev.u.close.trigger = DPQ_TRACE_CLOSE_IDLE_TIMEOUT;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"name\":\"connectivity:connection_closed\","
			"\"data\":{\"owner\":\"local\","
			"\"trigger\":\"idle_timeout\"}");	/* no code: silent */
	ev.u.close.trigger = DPQ_TRACE_CLOSE_ERROR;
	ev.u.close.error_code = 0xa;
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"connection_code\":10,\"trigger\":\"error\"");
	ev.u.close.trigger = DPQ_TRACE_CLOSE_APPLICATION;
	ev.u.close.remote = 1;
	ev.u.close.app = 1;
	ev.u.close.error_code = 0x42;
	memcpy(ev.u.close.reason, "a \"b\"\\\n", 8);
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"owner\":\"remote\",\"application_code\":66,"
			"\"trigger\":\"application\","
			"\"reason\":\"a \\\"b\\\"\\\\\\u000a\"");
	/* A reason that fills the record: cut, not read past. */
	memset(ev.u.close.reason, 'x', sizeof(ev.u.close.reason));
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"reason\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}");
	memset(&ev.u.close, 0, sizeof(ev.u.close));
	ev.u.close.trigger = DPQ_TRACE_CLOSE_ABANDONED;
	memcpy(ev.u.close.reason, "evicted", 7);
	assert_true(dpq_qlog_format(&q, &ev, buf, sizeof(buf)) > 0);
	assert_has(buf, "\"dpq_abandoned\":true,\"reason\":\"evicted\"");
	assert_null(strstr(buf, "\"trigger\""));
}

/* ---- the hook on a real connection ------------------------------------- */

struct count {
	uint64_t sent[DPQ_EPOCH_COUNT], recv, lost, metrics, cc_changes;
	uint64_t last_sent_pn_app;
	bool pn_in_order;
	uint8_t last_phase;
	bool saw_recovery;
};

static void
count_ev(void *ctx, const struct dpq_trace_ev *ev)
{
	struct count *k = ctx;

	switch (ev->type) {
	case DPQ_TRACE_PACKET_SENT:
		k->sent[ev->epoch]++;
		if (ev->epoch == DPQ_EPOCH_1RTT) {
			if (k->sent[ev->epoch] > 1 &&
			    ev->u.pkt.pn != k->last_sent_pn_app + 1)
				k->pn_in_order = false;
			k->last_sent_pn_app = ev->u.pkt.pn;
		}
		break;
	case DPQ_TRACE_PACKET_RECEIVED:
		k->recv++;
		break;
	case DPQ_TRACE_PACKET_LOST:
		k->lost++;
		break;
	case DPQ_TRACE_METRICS:
		k->metrics++;
		assert_true(ev->u.m.cwnd >= 2400);
		break;
	case DPQ_TRACE_CC_STATE:
		k->cc_changes++;
		if (ev->u.cc.new_state == DPQ_CC_PHASE_RECOVERY)
			k->saw_recovery = true;
		break;
	default:
		fail_msg("record type %u", ev->type);
	}
}

static void
test_hook_in_sim(void **state)
{
	struct dpq_sim_conf c;
	struct dpq_sim_xfer x = { .bytes = 2000000, .streams = 1,
		.max_ns = UINT64_C(120000000000) };
	struct dpq_sim_xfer_result r;
	struct count ks = { .pn_in_order = true }, kc = { .pn_in_order = true };
	char err[100];
	int i;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(dpq_linkem_conf_parse(&c.s2c,
			"delay=10ms,rate=20mbit,queue=60kb,loss=2%,seed=3",
			err, sizeof(err)), 0);
	assert_int_equal(dpq_linkem_conf_parse(&c.c2s, "delay=10ms,seed=4",
			err, sizeof(err)), 0);
	c.seed = 9;
	c.strace = count_ev;
	c.strace_ctx = &ks;
	c.ctrace = count_ev;
	c.ctrace_ctx = &kc;
	assert_int_equal(dpq_sim_transfer(&c, &x, &r), 0);
	/* Every packet built is reported, each space numbered in order. */
	for (i = 0, x.bytes = 0; i < DPQ_EPOCH_COUNT; i++)
		x.bytes += ks.sent[i];
	assert_int_equal(x.bytes, r.server.pkts_sent);
	assert_true(ks.pn_in_order && kc.pn_in_order);
	assert_int_equal(ks.recv, r.server.pkts_recv);
	assert_int_equal(kc.recv, r.client.pkts_recv);
	/* Losses reported = losses counted; the link really dropped. */
	assert_int_equal(ks.lost, r.server.pkts_lost);
	assert_true(ks.lost > 0 && r.s2c.dropped[DPQ_LINKEM_DROP_LOSS] > 0);
	assert_true(ks.metrics > 100);
	assert_true(ks.cc_changes >= 2 && ks.saw_recovery);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_metrics_changed_only),
		cmocka_unit_test(test_drop_and_close),
		cmocka_unit_test(test_hook_in_sim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
