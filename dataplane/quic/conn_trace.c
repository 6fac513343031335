/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trace records (trace.h) filled from the connection's state. Every
 * function here runs only when a hook is installed: the call sites test
 * c->trace first, so a connection without one pays a branch per event.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/quic/conn_int.h"

void
dpq_conn_set_trace(struct dpq_conn *c, dpq_trace_fn *fn, void *ctx)
{
	c->trace = fn;
	c->trace_ctx = ctx;
	c->trace_phase = DPQ_CC_PHASE_COUNT;	/* report the first phase */
}

static void
ev_init(struct dpq_trace_ev *ev, const struct dpq_conn *c,
		enum dpq_trace_type type)
{
	memset(ev, 0, sizeof(*ev));
	ev->time_us = c->now;
	ev->type = (uint8_t)type;
}

static enum dpq_epoch
space_epoch(enum dpq_pn_space sp)
{
	return sp == DPQ_PN_SPACE_INITIAL ? DPQ_EPOCH_INITIAL :
		sp == DPQ_PN_SPACE_HANDSHAKE ? DPQ_EPOCH_HANDSHAKE :
		DPQ_EPOCH_1RTT;
}

static uint32_t
rec_frame_bit(uint8_t kind)
{
	switch (kind) {
	case DPQ_SENT_REC_STREAM:
		return 1u << DPQ_TRACE_F_STREAM;
	case DPQ_SENT_REC_CRYPTO:
		return 1u << DPQ_TRACE_F_CRYPTO;
	case DPQ_SENT_REC_ACK:
		return 1u << DPQ_TRACE_F_ACK;
	case DPQ_SENT_REC_PING:
		return 1u << DPQ_TRACE_F_PING;
	case DPQ_SENT_REC_MAX_DATA:
	case DPQ_SENT_REC_MAX_STREAM_DATA:
	case DPQ_SENT_REC_MAX_STREAMS:
	case DPQ_SENT_REC_DATA_BLOCKED:
	case DPQ_SENT_REC_STREAM_DATA_BLOCKED:
	case DPQ_SENT_REC_STREAMS_BLOCKED:
		return 1u << DPQ_TRACE_F_FLOW;
	case DPQ_SENT_REC_NEW_CONNECTION_ID:
	case DPQ_SENT_REC_RETIRE_CONNECTION_ID:
		return 1u << DPQ_TRACE_F_CID;
	case DPQ_SENT_REC_HANDSHAKE_DONE:
		return 1u << DPQ_TRACE_F_HANDSHAKE_DONE;
	case DPQ_SENT_REC_RESET_STREAM:
	case DPQ_SENT_REC_STOP_SENDING:
		return 1u << DPQ_TRACE_F_STREAM_CTL;
	case DPQ_SENT_REC_PATH_CHALLENGE:
	case DPQ_SENT_REC_PATH_RESPONSE:
		return 1u << DPQ_TRACE_F_PATH;
	default:
		return 1u << DPQ_TRACE_F_OTHER;
	}
}

void
dpq_conn_trace_sent(struct dpq_conn *c, enum dpq_epoch e, uint64_t pn,
		uint32_t len, const struct dpq_sent_rec *recs, size_t nrec,
		bool padded, bool probe, bool close)
{
	struct dpq_trace_ev ev;
	bool have_stream = false;
	size_t i;

	ev_init(&ev, c, DPQ_TRACE_PACKET_SENT);
	ev.epoch = (uint8_t)e;
	ev.flags = probe ? DPQ_TRACE_EV_PROBE : 0;
	ev.u.pkt.pn = pn;
	ev.u.pkt.len = len;
	if (padded)
		ev.u.pkt.frames |= 1u << DPQ_TRACE_F_PADDING;
	if (close)
		ev.u.pkt.frames |= 1u << DPQ_TRACE_F_CLOSE;
	for (i = 0; i < nrec; i++) {
		const struct dpq_sent_rec *r = &recs[i];

		ev.u.pkt.frames |= rec_frame_bit(r->kind);
		if (r->kind == DPQ_SENT_REC_ACK)
			ev.u.pkt.ack_largest = r->ack.largest;
		if (r->kind == DPQ_SENT_REC_STREAM && !have_stream) {
			have_stream = true;
			ev.u.pkt.stream_id = r->stream.id;
			ev.u.pkt.stream_off = r->stream.off;
			ev.u.pkt.stream_len = r->len;
		}
	}
	c->trace(c->trace_ctx, &ev);
}

void
dpq_conn_trace_frame(struct dpq_trace_pkt *tp, const struct dpq_frame *f)
{
	uint32_t bit;

	if (dpq_frame_is_stream(f->type)) {
		if ((tp->frames & (1u << DPQ_TRACE_F_STREAM)) == 0) {
			tp->stream_id = f->stream.stream_id;
			tp->stream_off = f->stream.offset;
			tp->stream_len = (uint32_t)f->stream.len;
		}
		tp->frames |= 1u << DPQ_TRACE_F_STREAM;
		return;
	}
	switch (f->type) {
	case DPQ_FT_PADDING:
		bit = DPQ_TRACE_F_PADDING;
		break;
	case DPQ_FT_PING:
		bit = DPQ_TRACE_F_PING;
		break;
	case DPQ_FT_ACK:
	case DPQ_FT_ACK_ECN:
		if ((tp->frames & (1u << DPQ_TRACE_F_ACK)) == 0) {
			tp->ack_largest = f->ack.largest;
			tp->ack_first_range = f->ack.first_range > UINT32_MAX ?
				UINT32_MAX : (uint32_t)f->ack.first_range;
		}
		bit = DPQ_TRACE_F_ACK;
		break;
	case DPQ_FT_CRYPTO:
		bit = DPQ_TRACE_F_CRYPTO;
		break;
	case DPQ_FT_MAX_DATA:
	case DPQ_FT_MAX_STREAM_DATA:
	case DPQ_FT_MAX_STREAMS_BIDI:
	case DPQ_FT_MAX_STREAMS_UNI:
	case DPQ_FT_DATA_BLOCKED:
	case DPQ_FT_STREAM_DATA_BLOCKED:
	case DPQ_FT_STREAMS_BLOCKED_BIDI:
	case DPQ_FT_STREAMS_BLOCKED_UNI:
		bit = DPQ_TRACE_F_FLOW;
		break;
	case DPQ_FT_RESET_STREAM:
	case DPQ_FT_STOP_SENDING:
		bit = DPQ_TRACE_F_STREAM_CTL;
		break;
	case DPQ_FT_NEW_CONNECTION_ID:
	case DPQ_FT_RETIRE_CONNECTION_ID:
		bit = DPQ_TRACE_F_CID;
		break;
	case DPQ_FT_PATH_CHALLENGE:
	case DPQ_FT_PATH_RESPONSE:
		bit = DPQ_TRACE_F_PATH;
		break;
	case DPQ_FT_CONNECTION_CLOSE:
	case DPQ_FT_CONNECTION_CLOSE_APP:
		bit = DPQ_TRACE_F_CLOSE;
		break;
	case DPQ_FT_HANDSHAKE_DONE:
		bit = DPQ_TRACE_F_HANDSHAKE_DONE;
		break;
	default:
		bit = DPQ_TRACE_F_OTHER;
		break;
	}
	tp->frames |= 1u << bit;
}

void
dpq_conn_trace_received(struct dpq_conn *c, enum dpq_epoch e, uint64_t pn,
		uint32_t len, const struct dpq_trace_pkt *tp)
{
	struct dpq_trace_ev ev;

	ev_init(&ev, c, DPQ_TRACE_PACKET_RECEIVED);
	ev.epoch = (uint8_t)e;
	ev.u.pkt = *tp;
	ev.u.pkt.pn = pn;
	ev.u.pkt.len = len;
	c->trace(c->trace_ctx, &ev);
}

void
dpq_conn_trace_lost(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_sent_pkt *pkt)
{
	struct dpq_trace_ev ev;

	ev_init(&ev, c, DPQ_TRACE_PACKET_LOST);
	ev.epoch = (uint8_t)space_epoch(sp);
	ev.trigger = c->trace_loss_trigger;
	ev.u.pkt.pn = pkt->pn;
	ev.u.pkt.len = pkt->bytes;
	c->trace(c->trace_ctx, &ev);
}

static uint32_t
us32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void
dpq_conn_trace_metrics(struct dpq_conn *c)
{
	const struct dpq_rtt *rtt = &c->b->loss.rtt;
	struct dpq_cc_info info;
	struct dpq_trace_ev ev;

	dpq_cc_get_info(&c->b->cc, &info);
	ev_init(&ev, c, DPQ_TRACE_METRICS);
	ev.pto_count = c->b->loss.pto_count;
	ev.u.m.cwnd = c->b->cc.cwnd;
	ev.u.m.bytes_in_flight = c->b->cc.bytes_in_flight;
	ev.u.m.ssthresh = info.ssthresh;
	ev.u.m.pacing_rate = dpq_cc_pacing_rate(&c->b->cc, rtt);
	ev.u.m.smoothed_rtt_us = us32(rtt->smoothed);
	ev.u.m.min_rtt_us = us32(rtt->min);
	ev.u.m.latest_rtt_us = us32(rtt->latest);
	ev.u.m.rtt_var_us = us32(rtt->var);
	c->trace(c->trace_ctx, &ev);
	if ((unsigned int)info.phase != c->trace_phase) {
		ev_init(&ev, c, DPQ_TRACE_CC_STATE);
		ev.u.cc.old_state = c->trace_phase < DPQ_CC_PHASE_COUNT ?
			(uint8_t)c->trace_phase : (uint8_t)info.phase;
		ev.u.cc.new_state = (uint8_t)info.phase;
		c->trace_phase = (uint8_t)info.phase;
		c->trace(c->trace_ctx, &ev);
	}
}

void
dpq_conn_trace_dropped(struct dpq_conn *c, enum dpq_trace_type type,
		const uint8_t *pkt, uint32_t len, uint64_t pn,
		enum dpq_trace_drop_trigger why)
{
	static const uint8_t long_epoch[4] = { DPQ_EPOCH_INITIAL,
		DPQ_EPOCH_0RTT, DPQ_EPOCH_HANDSHAKE, DPQ_EPOCH_INITIAL };
	struct dpq_trace_ev ev;

	ev_init(&ev, c, type);
	/* RFC 9000 §17.2: the long header's type bits are not protected. */
	ev.epoch = len == 0 ? DPQ_EPOCH_1RTT : (pkt[0] & 0x80) ?
		long_epoch[(pkt[0] >> 4) & 3] : DPQ_EPOCH_1RTT;
	ev.trigger = (uint8_t)why;
	ev.u.pkt.pn = pn;
	ev.u.pkt.len = len;
	c->trace(c->trace_ctx, &ev);
}

enum dpq_trace_drop_trigger
dpq_conn_drop_trigger(int err)
{
	if (dpq_err_is_codec(err))
		return DPQ_TRACE_DROP_HEADER_PARSE;
	switch (err) {
	case -EBADMSG:
		return DPQ_TRACE_DROP_DECRYPTION_FAILURE;
	case -ENOKEY:
		return DPQ_TRACE_DROP_KEY_UNAVAILABLE;
	case -EALREADY:
		return DPQ_TRACE_DROP_DUPLICATE;
	case -EPIPE:		/* closing or draining */
	case -ENETUNREACH:	/* no path for it */
		return DPQ_TRACE_DROP_UNEXPECTED;
	case -ENOBUFS:		/* no room to hold it, over the 0-RTT cap */
		return DPQ_TRACE_DROP_DOS_PREVENTION;
	case -EMSGSIZE:
		return DPQ_TRACE_DROP_INVALID_INITIAL;
	case -ENOMEM:
		return DPQ_TRACE_DROP_GENERAL;
	default:
		return DPQ_TRACE_DROP_PROTOCOL_VIOLATION;
	}
}

void
dpq_conn_trace_closed(struct dpq_conn *c, const char *abandoned_why)
{
	const struct dpq_conn_close_info *ci = &c->close;
	struct dpq_trace_close *x;
	struct dpq_trace_ev ev;
	const char *why;

	ev_init(&ev, c, DPQ_TRACE_CONN_CLOSED);
	x = &ev.u.close;
	x->error_code = ci->error_code;
	x->frame_type = ci->frame_type;
	x->remote = ci->remote;
	x->app = ci->app;
	if (abandoned_why != NULL)
		x->trigger = DPQ_TRACE_CLOSE_ABANDONED;
	else if (ci->idle)
		x->trigger = DPQ_TRACE_CLOSE_IDLE_TIMEOUT;
	else if (ci->handshake_timeout)
		x->trigger = DPQ_TRACE_CLOSE_HANDSHAKE_TIMEOUT;
	else if (ci->stateless_reset)
		x->trigger = DPQ_TRACE_CLOSE_STATELESS_RESET;
	else if (ci->version_mismatch)
		x->trigger = DPQ_TRACE_CLOSE_VERSION_MISMATCH;
	else if (ci->app)
		x->trigger = DPQ_TRACE_CLOSE_APPLICATION;
	else
		x->trigger = ci->error_code == 0 ? DPQ_TRACE_CLOSE_CLEAN :
			DPQ_TRACE_CLOSE_ERROR;
	/* Cut to the record's room, NUL kept (ev_init zeroed it); the
	 * writer escapes it. */
	why = abandoned_why != NULL ? abandoned_why : ci->reason;
	memcpy(x->reason, why, strnlen(why, sizeof(x->reason) - 1));
	c->trace(c->trace_ctx, &ev);
}
