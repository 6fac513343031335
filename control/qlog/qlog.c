/* SPDX-License-Identifier: BSD-3-Clause */
/* See qlog.h. Field names follow draft-ietf-quic-qlog-quic-events-03. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "control/qlog/qlog.h"
#include "dataplane/engine/cc.h"
#include "dataplane/quic/conn.h"

/* Appending formatter: remembers overflow instead of failing each call. */
struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->full = true;
		return;
	}
	o->len += (size_t)n;
}

static int
done(struct out *o)
{
	return o->full ? -ENOSPC : (int)o->len;
}

/* Milliseconds with us precision, as qlog's relative time wants. */
static void
put_ms(struct out *o, const char *key, uint64_t us)
{
	put(o, "\"%s\":%llu.%03u", key, (unsigned long long)(us / 1000),
			(unsigned int)(us % 1000));
}

/* A JSON string body: ours or the peer's bytes (a CONNECTION_CLOSE
 * reason), valid JSON whatever they hold; at most max bytes. */
static void
put_json_str(struct out *o, const char *t, size_t max)
{
	size_t i;

	for (i = 0; t[i] != '\0' && i < max; i++) {
		unsigned char ch = (unsigned char)t[i];

		if (ch == '"' || ch == '\\')
			put(o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			put(o, "\\u%04x", ch);
		else
			put(o, "%c", ch);
	}
}

int
dpq_qlog_start(struct dpq_qlog *q, const struct dpq_qlog_conf *conf,
		char *buf, size_t cap)
{
	struct out o = { buf, cap, 0, cap == 0 };
	const char *t = conf->title != NULL ? conf->title : "dpquic";
	size_t i;

	memset(q, 0, sizeof(*q));
	q->reference_us = conf->reference_us;
	put(&o, "\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\","
			"\"title\":\"");
	/* The title is ours, but keep the JSON valid whatever it holds. */
	put_json_str(&o, t, 200);
	put(&o, "\",\"trace\":{\"vantage_point\":{\"type\":\"%s\"},"
			"\"common_fields\":{\"protocol_type\":[\"QUIC\"],"
			"\"time_format\":\"relative\",\"reference_time\":0",
			conf->server ? "server" : "client");
	if (conf->odcid_hex != NULL) {
		put(&o, ",\"group_id\":\"");
		for (i = 0; conf->odcid_hex[i] != '\0' && i < 40; i++)
			if (strchr("0123456789abcdef", conf->odcid_hex[i]))
				put(&o, "%c", conf->odcid_hex[i]);
		put(&o, "\"");
	}
	put(&o, "}}}\n");
	return done(&o);
}

static const char *
packet_type(uint8_t epoch)
{
	switch (epoch) {
	case DPQ_EPOCH_INITIAL:
		return "initial";
	case DPQ_EPOCH_0RTT:
		return "0RTT";
	case DPQ_EPOCH_HANDSHAKE:
		return "handshake";
	default:
		return "1RTT";
	}
}

static void
put_header(struct out *o, const struct dpq_trace_ev *ev)
{
	put(o, "\"header\":{\"packet_type\":\"%s\",\"packet_number\":%llu}",
			packet_type(ev->epoch),
			(unsigned long long)ev->u.pkt.pn);
}

static void
put_frames(struct out *o, const struct dpq_trace_pkt *p)
{
	static const char *const simple[DPQ_TRACE_F_COUNT] = {
		[DPQ_TRACE_F_PADDING] = "padding",
		[DPQ_TRACE_F_PING] = "ping",
		[DPQ_TRACE_F_CRYPTO] = "crypto",
		[DPQ_TRACE_F_HANDSHAKE_DONE] = "handshake_done",
		[DPQ_TRACE_F_CLOSE] = "connection_close",
	};
	/* Kinds the record folds together: qlog's "unknown" frame with
	 * the kind named. */
	static const char *const folded[DPQ_TRACE_F_COUNT] = {
		[DPQ_TRACE_F_FLOW] = "flow_control",
		[DPQ_TRACE_F_STREAM_CTL] = "stream_control",
		[DPQ_TRACE_F_CID] = "connection_id",
		[DPQ_TRACE_F_PATH] = "path",
		[DPQ_TRACE_F_OTHER] = "other",
	};
	bool first = true;
	unsigned int k;

	put(o, ",\"frames\":[");
	for (k = 0; k < DPQ_TRACE_F_COUNT; k++) {
		if ((p->frames & (1u << k)) == 0)
			continue;
		put(o, "%s{", first ? "" : ",");
		first = false;
		if (k == DPQ_TRACE_F_ACK) {
			uint64_t lo = p->ack_largest >= p->ack_first_range ?
				p->ack_largest - p->ack_first_range : 0;

			put(o, "\"frame_type\":\"ack\",\"acked_ranges\":"
					"[[%llu,%llu]]", (unsigned long long)lo,
					(unsigned long long)p->ack_largest);
		} else if (k == DPQ_TRACE_F_STREAM) {
			put(o, "\"frame_type\":\"stream\",\"stream_id\":%llu,"
					"\"offset\":%llu,\"length\":%u",
					(unsigned long long)p->stream_id,
					(unsigned long long)p->stream_off,
					p->stream_len);
		} else if (simple[k] != NULL) {
			put(o, "\"frame_type\":\"%s\"", simple[k]);
		} else {
			put(o, "\"frame_type\":\"unknown\",\"dpq_kind\":\"%s\"",
					folded[k] != NULL ? folded[k] : "other");
		}
		put(o, "}");
	}
	put(o, "]");
}

/* qlog 0.3's packet_dropped triggers (draft-ietf-quic-qlog-quic-events
 * -03, the version the header names); NULL: none given. */
static const char *
drop_trigger(uint8_t t)
{
	static const char *const name[DPQ_TRACE_DROP_COUNT] = {
		[DPQ_TRACE_DROP_DECRYPTION_FAILURE] = "payload_decrypt_error",
		[DPQ_TRACE_DROP_KEY_UNAVAILABLE] = "key_unavailable",
		[DPQ_TRACE_DROP_DUPLICATE] = "duplicate",
		[DPQ_TRACE_DROP_HEADER_PARSE] = "header_parse_error",
		[DPQ_TRACE_DROP_PROTOCOL_VIOLATION] = "protocol_violation",
		[DPQ_TRACE_DROP_UNEXPECTED] = "unexpected_packet",
		[DPQ_TRACE_DROP_DOS_PREVENTION] = "dos_prevention",
		[DPQ_TRACE_DROP_INVALID_INITIAL] = "invalid_initial",
		[DPQ_TRACE_DROP_UNKNOWN_CID] = "unknown_connection_id",
	};

	return t < DPQ_TRACE_DROP_COUNT ? name[t] : NULL;
}

/* connection_closed: qlog's triggers; an abandoned connection (freed by
 * its owner without a word) has none of them and says so in its own
 * field. */
static void
put_closed(struct out *o, const struct dpq_trace_close *x)
{
	static const char *const trig[] = {
		[DPQ_TRACE_CLOSE_ERROR] = "error",
		[DPQ_TRACE_CLOSE_CLEAN] = "clean",
		[DPQ_TRACE_CLOSE_APPLICATION] = "application",
		[DPQ_TRACE_CLOSE_IDLE_TIMEOUT] = "idle_timeout",
		[DPQ_TRACE_CLOSE_HANDSHAKE_TIMEOUT] = "handshake_timeout",
		[DPQ_TRACE_CLOSE_STATELESS_RESET] = "stateless_reset",
		[DPQ_TRACE_CLOSE_VERSION_MISMATCH] = "version_mismatch",
	};

	put(o, "\"owner\":\"%s\"", x->remote ? "remote" : "local");
	/* Silent endings sent and received no code: none written. */
	if (x->trigger == DPQ_TRACE_CLOSE_ABANDONED)
		put(o, ",\"dpq_abandoned\":true");
	else if (x->trigger == DPQ_TRACE_CLOSE_IDLE_TIMEOUT ||
	    x->trigger == DPQ_TRACE_CLOSE_HANDSHAKE_TIMEOUT ||
	    x->trigger == DPQ_TRACE_CLOSE_STATELESS_RESET ||
	    x->trigger == DPQ_TRACE_CLOSE_VERSION_MISMATCH)
		;
	else if (x->app)
		put(o, ",\"application_code\":%llu",
				(unsigned long long)x->error_code);
	else
		put(o, ",\"connection_code\":%llu",
				(unsigned long long)x->error_code);
	if (x->trigger < sizeof(trig) / sizeof(trig[0]) &&
	    trig[x->trigger] != NULL)
		put(o, ",\"trigger\":\"%s\"", trig[x->trigger]);
	if (x->reason[0] != '\0') {
		put(o, ",\"reason\":\"");
		put_json_str(o, x->reason, sizeof(x->reason) - 1);
		put(o, "\"");
	}
}

static const char *
loss_trigger(uint8_t t)
{
	switch (t) {
	case DPQ_TRACE_LOST_REORDERING:
		return "reordering_threshold";
	case DPQ_TRACE_LOST_TIME:
		return "time_threshold";
	case DPQ_TRACE_LOST_PTO:
		return "pto_expired";
	default:
		return NULL;
	}
}

/* metrics_updated with the fields that changed; false if none did. */
static bool
put_metrics(struct out *o, struct dpq_qlog *q, const struct dpq_trace_ev *ev)
{
	const struct dpq_trace_metrics *m = &ev->u.m, *l = &q->last;
	bool all = !q->have_last, any = false;

#define SEP() (any ? "," : (any = true, ""))
	if ((all || m->min_rtt_us != l->min_rtt_us) && m->min_rtt_us != 0) {
		put(o, "%s", SEP());
		put_ms(o, "min_rtt", m->min_rtt_us);
	}
	if (all || m->smoothed_rtt_us != l->smoothed_rtt_us) {
		put(o, "%s", SEP());
		put_ms(o, "smoothed_rtt", m->smoothed_rtt_us);
	}
	if ((all || m->latest_rtt_us != l->latest_rtt_us) &&
	    m->latest_rtt_us != 0) {
		put(o, "%s", SEP());
		put_ms(o, "latest_rtt", m->latest_rtt_us);
	}
	if (all || m->rtt_var_us != l->rtt_var_us) {
		put(o, "%s", SEP());
		put_ms(o, "rtt_variance", m->rtt_var_us);
	}
	if (all || ev->pto_count != q->last_pto)
		put(o, "%s\"pto_count\":%u", SEP(), ev->pto_count);
	if (all || m->cwnd != l->cwnd)
		put(o, "%s\"congestion_window\":%llu", SEP(),
				(unsigned long long)m->cwnd);
	if (all || m->bytes_in_flight != l->bytes_in_flight)
		put(o, "%s\"bytes_in_flight\":%llu", SEP(),
				(unsigned long long)m->bytes_in_flight);
	if ((all || m->ssthresh != l->ssthresh) && m->ssthresh != UINT64_MAX)
		put(o, "%s\"ssthresh\":%llu", SEP(),
				(unsigned long long)m->ssthresh);
	/* qlog's pacing_rate is in bits per second. */
	if ((all || m->pacing_rate != l->pacing_rate) &&
	    m->pacing_rate != UINT64_MAX && m->pacing_rate < UINT64_MAX / 8)
		put(o, "%s\"pacing_rate\":%llu", SEP(),
				(unsigned long long)(m->pacing_rate * 8));
#undef SEP
	q->last = *m;
	q->last_pto = ev->pto_count;
	q->have_last = true;
	return any;
}

int
dpq_qlog_format(struct dpq_qlog *q, const struct dpq_trace_ev *ev,
		char *buf, size_t cap)
{
	struct out o = { buf, cap, 0, cap == 0 };
	uint64_t rel = ev->time_us > q->reference_us ?
		ev->time_us - q->reference_us : 0;
	const char *trig;

	if (ev->type == 0 || ev->type >= DPQ_TRACE_TYPE_COUNT)
		return -EINVAL;
	put(&o, "\x1e{");
	put_ms(&o, "time", rel);
	switch (ev->type) {
	case DPQ_TRACE_PACKET_SENT:
	case DPQ_TRACE_PACKET_RECEIVED:
		put(&o, ",\"name\":\"transport:%s\",\"data\":{",
				ev->type == DPQ_TRACE_PACKET_SENT ?
				"packet_sent" : "packet_received");
		put_header(&o, ev);
		put(&o, ",\"raw\":{\"length\":%u}", ev->u.pkt.len);
		put_frames(&o, &ev->u.pkt);
		if (ev->flags & DPQ_TRACE_EV_PROBE)
			put(&o, ",\"trigger\":\"pto_probe\"");
		put(&o, "}");
		break;
	case DPQ_TRACE_PACKET_LOST:
		put(&o, ",\"name\":\"recovery:packet_lost\",\"data\":{");
		put_header(&o, ev);
		trig = loss_trigger(ev->trigger);
		if (trig != NULL)
			put(&o, ",\"trigger\":\"%s\"", trig);
		put(&o, "}");
		break;
	case DPQ_TRACE_METRICS:
		put(&o, ",\"name\":\"recovery:metrics_updated\",\"data\":{");
		if (!put_metrics(&o, q, ev))
			return 0;
		put(&o, "}");
		break;
	case DPQ_TRACE_CC_STATE:
		put(&o, ",\"name\":\"recovery:congestion_state_updated\","
				"\"data\":{\"old\":\"%s\",\"new\":\"%s\"}",
				dpq_cc_phase_str(ev->u.cc.old_state),
				dpq_cc_phase_str(ev->u.cc.new_state));
		break;
	case DPQ_TRACE_PACKET_DROPPED:
	case DPQ_TRACE_PACKET_BUFFERED:
		put(&o, ",\"name\":\"transport:%s\",\"data\":{"
				"\"header\":{\"packet_type\":\"%s\"",
				ev->type == DPQ_TRACE_PACKET_DROPPED ?
				"packet_dropped" : "packet_buffered",
				packet_type(ev->epoch));
		if (ev->u.pkt.pn != UINT64_MAX)
			put(&o, ",\"packet_number\":%llu",
					(unsigned long long)ev->u.pkt.pn);
		put(&o, "},\"raw\":{\"length\":%u}", ev->u.pkt.len);
		trig = ev->type == DPQ_TRACE_PACKET_BUFFERED ?
			"keys_unavailable" : drop_trigger(ev->trigger);
		if (trig != NULL)
			put(&o, ",\"trigger\":\"%s\"", trig);
		put(&o, "}");
		break;
	case DPQ_TRACE_CONN_CLOSED:
		put(&o, ",\"name\":\"connectivity:connection_closed\","
				"\"data\":{");
		put_closed(&o, &ev->u.close);
		put(&o, "}");
		break;
	}
	put(&o, "}\n");
	return done(&o);
}

int
dpq_qlog_write_start(struct dpq_qlog *q, const struct dpq_qlog_conf *conf,
		FILE *f)
{
	char buf[512];
	int n = dpq_qlog_start(q, conf, buf, sizeof(buf));

	if (n < 0)
		return n;
	return fwrite(buf, 1, (size_t)n, f) == (size_t)n ? 0 : -EIO;
}

int
dpq_qlog_write(struct dpq_qlog *q, const struct dpq_trace_ev *ev, FILE *f)
{
	char buf[DPQ_QLOG_EVENT_MAX];
	int n = dpq_qlog_format(q, ev, buf, sizeof(buf));

	if (n <= 0)
		return n;
	return fwrite(buf, 1, (size_t)n, f) == (size_t)n ? 0 : -EIO;
}
