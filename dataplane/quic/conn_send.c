/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send path: the packet builder. One call builds one datagram, coalescing
 * an Initial, a Handshake and a 1-RTT packet where each has something to
 * send (RFC 9000 §12.2), and leaves a seal op per packet for the caller's
 * crypto burst. Frames go in this order: ACK, CONNECTION_CLOSE,
 * HANDSHAKE_DONE, CRYPTO, connection control frames, stream frames round
 * robin, then PING for a probe. Every ack-eliciting frame is recorded in
 * the sent map so that a loss re-queues its data, not the packet (RFC 9000
 * §13.3). The acked/lost callbacks of loss recovery land here too.
 * Shard only.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "dataplane/engine/errors.h"
#include "dataplane/engine/streamid.h"
#include "dataplane/quic/conn_int.h"

/* Leave room for a few records after the last frame added. */
#define REC_LIMIT	(DPQ_SENTMAP_MAX_RECS - 4)
/* Our ack_delay_exponent (the §18.2 default: we do not send it). */
#define OUR_ACK_DELAY_EXPONENT 3

struct pkt_build {
	enum dpq_epoch e;
	enum dpq_pn_space sp;
	uint8_t *start;
	uint8_t *len_field;	/* long headers */
	uint8_t *payload;
	uint8_t *p;
	uint8_t *end;		/* payload limit: tag excluded */
	uint64_t pn;
	size_t pn_len;
	size_t pn_offset;
	size_t nrec;
	bool eliciting;
	bool padded;
	bool probe;
	bool cc_ok;		/* congestion window allows new data */
	bool cc_blocked;	/* stream data waited for the window */
	bool path_frame;	/* PATH_CHALLENGE/RESPONSE: 1200 bytes */
	/* A probe on a path other than the active one: neither in flight
	 * nor an RTT sample (RFC 9000 §9.4). */
	bool off_path;
	bool stream_data;	/* a STREAM frame went in */
	/* Last: begin_packet() clears everything before it. */
	struct dpq_sent_rec recs[DPQ_SENTMAP_MAX_RECS];
};

static struct dpq_sent_rec *
rec_add(struct pkt_build *b, uint8_t kind)
{
	struct dpq_sent_rec *r = &b->recs[b->nrec++];

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	return r;
}

static bool
room_for_rec(const struct pkt_build *b)
{
	return b->nrec < REC_LIMIT;
}

/* ---- deciding what to send ------------------------------------------- */

static bool
ack_wanted(const struct dpq_conn *c, enum dpq_pn_space sp, uint64_t now)
{
	return dpq_ackr_has_new(c->b->pns[sp].ackr) &&
		dpq_ackr_ack_due(c->b->pns[sp].ackr, now);
}

static bool
app_control_pending(const struct dpq_conn *c)
{
	uint64_t v;

	const struct dpq_path *p = &c->b->paths[c->active];

	return c->handshake_done_pending || p->response_due ||
		p->challenge_due || c->nt_tx_pending ||
		c->n_retire_pending > 0 || c->ping_pending ||
		dpq_conn_cids_announce_pending(c) ||
		dpq_flow_rx_due(&c->rx_fc, &v) ||
		dpq_streams_rx_due(&c->streams_rx[0], &v) ||
		dpq_streams_rx_due(&c->streams_rx[1], &v) ||
		dpq_flow_tx_blocked_due(&c->tx_fc, &v) ||
		dpq_streams_tx_blocked_due(&c->streams_tx[0], &v) ||
		dpq_streams_tx_blocked_due(&c->streams_tx[1], &v);
}

/* Something to send in epoch e now; hold: the pacer holds new data
 * back (ACKs, probes and what the window would stop anyway still go
 * through the builder). */
static bool
epoch_has_data(const struct dpq_conn *c, enum dpq_epoch e, uint64_t now,
		bool hold)
{
	enum dpq_pn_space sp = dpq_epoch_space(e);

	if (!dpq_conn_has_tx_key(c, e) || c->b->pns[sp].discarded)
		return false;
	/* 0-RTT: stream data only (no ACK, no CRYPTO: RFC 9000 §12.4). */
	if (e == DPQ_EPOCH_0RTT)
		return dpq_conn_early_send(c) && c->sendq != NULL &&
			dpq_cc_available(&c->b->cc) > 0;
	if (ack_wanted(c, sp, now) || c->b->pns[sp].probes > 0 ||
	    dpq_sendbuf_pending(&c->cs[e]->sb))
		return true;
	if (e != DPQ_EPOCH_1RTT || !dpq_conn_app_ready(c))
		return false;
	return app_control_pending(c) || dpq_conn_fec_send_due(c, now) ||
		(c->sendq != NULL && dpq_cc_available(&c->b->cc) > 0 && !hold);
}

/* A server's ack-eliciting Initial needs a datagram of 1200 bytes (RFC
 * 9000 §14.1); with less amplification credit than that it waits for the
 * client's next datagram (RFC 9002 §6.2.2.1). */
static bool
server_initial_blocked(const struct dpq_conn *c, uint64_t allow)
{
	return c->role == DPQ_ROLE_SERVER &&
		allow < DPQ_MIN_INITIAL_DATAGRAM &&
		c->cs[DPQ_EPOCH_INITIAL] != NULL &&
		(dpq_sendbuf_pending(&c->cs[DPQ_EPOCH_INITIAL]->sb) ||
		 c->b->pns[DPQ_PN_SPACE_INITIAL].probes > 0);
}

/* ---- pacing (RFC 9002 §7.7) ------------------------------------------- */

uint64_t
dpq_conn_pacing_rate(const struct dpq_conn *c)
{
	uint64_t rate;

	/* Until the first RTT sample the rate is a guess from 333 ms: the
	 * initial window goes as a burst instead (§7.7). */
	if (c->conf.no_pacing || !c->b->loss.rtt.has_sample)
		return DPQ_PACER_UNPACED;
	rate = dpq_cc_pacing_rate(&c->b->cc, &c->b->loss.rtt);
	return rate == DPQ_CC_UNPACED ? DPQ_PACER_UNPACED : rate;
}

/* Work the window would let out that the pacer may hold back. */
static bool
paced_work(const struct dpq_conn *c)
{
	enum dpq_epoch e;

	if (dpq_cc_available(&c->b->cc) == 0)
		return false;	/* the window holds it, not the pacer */
	for (e = DPQ_EPOCH_INITIAL; e < DPQ_EPOCH_COUNT; e++)
		if (dpq_conn_has_tx_key(c, e) && c->cs[e] != NULL &&
		    !c->b->pns[dpq_epoch_space(e)].discarded &&
		    dpq_sendbuf_pending(&c->cs[e]->sb))
			return true;
	if (dpq_conn_early_send(c) && c->sendq != NULL)
		return true;	/* 0-RTT data */
	return dpq_conn_app_ready(c) && c->tx[DPQ_EPOCH_1RTT] != NULL &&
		(c->sendq != NULL || app_control_pending(c));
}

uint64_t
dpq_conn_pacing_wakeup(const struct dpq_conn *c)
{
	uint64_t rate = dpq_conn_pacing_rate(c), t;

	if (rate == DPQ_PACER_UNPACED || !paced_work(c))
		return UINT64_MAX;
	t = dpq_pacer_release_time(&c->pacer, rate, c->now);
	/* Not later than now: pacing is not what holds it back. */
	return t > c->now ? t : UINT64_MAX;
}

/* ---- frames ------------------------------------------------------------ */

static void
write_ack(struct dpq_conn *c, struct pkt_build *b, uint64_t now)
{
	struct dpq_ackr *a = c->b->pns[b->sp].ackr;
	struct dpq_ack_range ranges[DPQ_ACKR_MAX_RANGES];
	uint64_t delay;
	uint8_t *q, *lim;
	size_t n;

	if (b->e == DPQ_EPOCH_0RTT)
		return;
	/* A 1-RTT probe carries the ranges the peer has not seen
	 * acknowledged even when nothing arrived since our last ACK (RFC
	 * 9000 §13.2.3: older ranges guard against lost ACK frames): if
	 * our one ACK of its request was lost, the peer's retransmissions
	 * back off while our probes, which arrive, would never say so. Not
	 * in the handshake spaces: there an unacknowledged ClientHello is
	 * what the client's probes resend, the server's cue to resend its
	 * flight (RFC 9002 §6.2.3); acknowledging it from a PING probe
	 * cost handshakes (docs/recovery.md). */
	if (!dpq_ackr_has_new(a) &&
	    !(b->probe && b->sp == DPQ_PN_SPACE_APP))
		return;
	n = dpq_ackr_ranges(a, ranges, DPQ_ACKR_MAX_RANGES);
	if (n == 0)
		return;
	/* XOR-FEC: packets we rebuilt, before the ACK that covers them
	 * (docs/fec.md §7), so the peer still has them in flight. */
	if (b->sp == DPQ_PN_SPACE_APP)
		b->p = dpq_conn_fec_write_recovered(c, b->p, b->end);
	delay = b->sp == DPQ_PN_SPACE_APP ?
		dpq_ackr_ack_delay(a, now, OUR_ACK_DELAY_EXPONENT) : 0;
	/* Drop the oldest ranges until the frame fits; a probe keeps a
	 * byte for the PING that makes it ack-eliciting (RFC 9002 §6.2.4),
	 * however little room the path's credit left. */
	lim = b->probe && b->end > b->p ? b->end - 1 : b->end;
	while (n > 0) {
		q = dpq_frame_encode_ack(b->p, lim, ranges, n, delay,
				dpq_ackr_ecn(a));
		if (q != NULL) {
			b->p = q;
			rec_add(b, DPQ_SENT_REC_ACK)->ack.largest =
				ranges[0].largest;
			dpq_ackr_on_ack_sent(a);
			if (b->e == DPQ_EPOCH_1RTT)
				dpq_conn_keys_on_ack_sent(c);
			return;
		}
		n--;
	}
}

static void
write_crypto(struct dpq_conn *c, struct pkt_build *b)
{
	struct dpq_sendbuf *sb = &c->cs[b->e]->sb;

	while (room_for_rec(b) && dpq_sendbuf_pending(sb)) {
		size_t max, room = (size_t)(b->end - b->p);
		struct dpq_sent_rec *r;
		uint64_t off, len;
		bool fin;

		if (!dpq_sendbuf_next(sb, UINT64_MAX, room, &off, &len, &fin))
			return;
		if (!dpq_frame_crypto_fit(off, room, &max) || max == 0)
			return;
		if (len > max)
			len = max;
		b->p = dpq_frame_encode_crypto_hdr(b->p, b->end, off, len);
		dpq_sendbuf_copy(sb, off, b->p, len);
		b->p += len;
		dpq_sendbuf_on_sent(sb, off, len, false);
		if (b->e != DPQ_EPOCH_1RTT)
			c->spec_why |= DPQ_SPEC_HANDSHAKE;
		r = rec_add(b, DPQ_SENT_REC_CRYPTO);
		r->crypto.off = off;
		r->len = (uint32_t)len;
		b->eliciting = true;
	}
}

/* Encode a small control frame; false when it does not fit. */
static bool
put_frame(struct pkt_build *b, const struct dpq_frame *f)
{
	uint8_t *q;

	if (!room_for_rec(b))
		return false;
	q = dpq_frame_encode(b->p, b->end, f);
	if (q == NULL)
		return false;
	b->p = q;
	if (dpq_frame_is_ack_eliciting(f->type))
		b->eliciting = true;
	return true;
}

static void
write_conn_control(struct dpq_conn *c, struct pkt_build *b)
{
	struct dpq_frame f;
	struct dpq_sent_rec *r;
	uint64_t v;
	unsigned int i;
	int uni;

	if (c->handshake_done_pending) {
		f.type = DPQ_FT_HANDSHAKE_DONE;
		if (put_frame(b, &f)) {
			rec_add(b, DPQ_SENT_REC_HANDSHAKE_DONE);
			c->handshake_done_pending = false;
			c->hsdone_sent_at = c->now;
		}
	}
	if (c->nt_tx_pending) {
		f.type = DPQ_FT_NEW_TOKEN;
		f.new_token.token = c->nt_tx;
		f.new_token.len = c->nt_tx_len;
		if (put_frame(b, &f)) {
			rec_add(b, DPQ_SENT_REC_NEW_TOKEN);
			c->nt_tx_pending = false;
		}
	}
	for (i = 0; i < DPQ_CONN_LOCAL_CIDS; i++) {
		struct dpq_local_cid *l = &c->local_cids[i];

		if (!l->used || !l->announce)
			continue;
		f.type = DPQ_FT_NEW_CONNECTION_ID;
		f.new_cid.seq = l->seq;
		f.new_cid.retire_prior_to = 0;
		f.new_cid.cid_len = l->cid.len;
		f.new_cid.cid = l->cid.bytes;
		f.new_cid.reset_token = l->reset_token;
		if (!put_frame(b, &f))
			break;
		r = rec_add(b, DPQ_SENT_REC_NEW_CONNECTION_ID);
		r->new_cid.seq = l->seq;
		l->announce = false;
	}
	while (c->n_retire_pending > 0) {
		f.type = DPQ_FT_RETIRE_CONNECTION_ID;
		f.retire_cid.seq = c->retire_pending[c->n_retire_pending - 1];
		if (!put_frame(b, &f))
			break;
		rec_add(b, DPQ_SENT_REC_RETIRE_CONNECTION_ID)->retire_cid.seq =
			f.retire_cid.seq;
		c->n_retire_pending--;
	}
	if (dpq_flow_rx_due(&c->rx_fc, &v)) {
		f.type = DPQ_FT_MAX_DATA;
		f.max_data.max = v;
		if (put_frame(b, &f)) {
			rec_add(b, DPQ_SENT_REC_MAX_DATA)->max.value = v;
			dpq_flow_rx_on_sent(&c->rx_fc, v);
		}
	}
	for (uni = 0; uni < 2; uni++) {
		if (dpq_streams_rx_due(&c->streams_rx[uni], &v)) {
			f.type = uni ? DPQ_FT_MAX_STREAMS_UNI :
				DPQ_FT_MAX_STREAMS_BIDI;
			f.max_streams.max = v;
			if (put_frame(b, &f)) {
				r = rec_add(b, DPQ_SENT_REC_MAX_STREAMS);
				r->max.value = v;
				r->flags = uni ? DPQ_SENT_REC_UNI : 0;
				dpq_streams_rx_on_sent(&c->streams_rx[uni], v);
			}
		}
		if (dpq_streams_tx_blocked_due(&c->streams_tx[uni], &v)) {
			f.type = uni ? DPQ_FT_STREAMS_BLOCKED_UNI :
				DPQ_FT_STREAMS_BLOCKED_BIDI;
			f.streams_blocked.limit = v;
			if (put_frame(b, &f)) {
				r = rec_add(b, DPQ_SENT_REC_STREAMS_BLOCKED);
				r->blocked.limit = v;
				r->flags = uni ? DPQ_SENT_REC_UNI : 0;
				dpq_streams_tx_on_blocked_sent(
					&c->streams_tx[uni], v);
			}
		}
	}
	if (dpq_flow_tx_blocked_due(&c->tx_fc, &v)) {
		f.type = DPQ_FT_DATA_BLOCKED;
		f.data_blocked.limit = v;
		if (put_frame(b, &f)) {
			rec_add(b, DPQ_SENT_REC_DATA_BLOCKED)->blocked.limit = v;
			dpq_flow_tx_on_blocked_sent(&c->tx_fc, v);
		}
	}
}

/* PATH_RESPONSE owed on path p and its PATH_CHALLENGE if one is due
 * (RFC 9000 §8.2); neither is retransmitted as such (§13.3). */
static void
write_path_frames(struct dpq_conn *c, struct pkt_build *b,
		struct dpq_path *p, uint64_t now)
{
	struct dpq_sent_rec *r;
	struct dpq_frame f;

	if (p->response_due) {
		f.type = DPQ_FT_PATH_RESPONSE;
		memcpy(f.path.data, p->response, DPQ_PATH_DATA_LEN);
		if (put_frame(b, &f)) {
			r = rec_add(b, DPQ_SENT_REC_PATH_RESPONSE);
			memcpy(r->path.data, p->response, DPQ_PATH_DATA_LEN);
			p->response_due = false;
			b->path_frame = true;
		}
	}
	/* Take the challenge data only if the frame fits (1 + 8 bytes). */
	if (p->challenge_due && b->end - b->p >= 1 + DPQ_PATH_DATA_LEN &&
	    room_for_rec(b) &&
	    dpq_conn_path_take_challenge(c, p, f.path.data, now)) {
		f.type = DPQ_FT_PATH_CHALLENGE;
		if (put_frame(b, &f)) {
			r = rec_add(b, DPQ_SENT_REC_PATH_CHALLENGE);
			memcpy(r->path.data, f.path.data, DPQ_PATH_DATA_LEN);
			b->path_frame = true;
		}
	}
}

/* Control frames of one stream; returns false when the packet is full. */
static bool
write_stream_control(struct pkt_build *b, struct dpq_qstream *qs)
{
	struct dpq_stream *s = &qs->s;
	struct dpq_sent_rec *r;
	struct dpq_frame f;
	uint64_t a, v;

	if (dpq_stream_reset_due(s, &a, &v)) {
		f.type = DPQ_FT_RESET_STREAM;
		f.reset_stream.stream_id = s->id;
		f.reset_stream.app_error = a;
		f.reset_stream.final_size = v;
		if (!put_frame(b, &f))
			return false;
		r = rec_add(b, DPQ_SENT_REC_RESET_STREAM);
		r->reset_stream.id = s->id;
		r->reset_stream.error = a;
		r->reset_stream.final_size = v;
		dpq_stream_on_reset_sent(s);
	}
	if (dpq_stream_stop_due(s, &a)) {
		f.type = DPQ_FT_STOP_SENDING;
		f.stop_sending.stream_id = s->id;
		f.stop_sending.app_error = a;
		if (!put_frame(b, &f))
			return false;
		r = rec_add(b, DPQ_SENT_REC_STOP_SENDING);
		r->stop_sending.id = s->id;
		r->stop_sending.error = a;
		dpq_stream_on_stop_sent(s);
	}
	if (dpq_stream_max_data_due(s, &v)) {
		f.type = DPQ_FT_MAX_STREAM_DATA;
		f.max_stream_data.stream_id = s->id;
		f.max_stream_data.max = v;
		if (!put_frame(b, &f))
			return false;
		r = rec_add(b, DPQ_SENT_REC_MAX_STREAM_DATA);
		r->max_stream_data.id = s->id;
		r->max_stream_data.value = v;
		dpq_stream_on_max_data_sent(s, v);
	}
	if (dpq_stream_blocked_due(s, &v)) {
		f.type = DPQ_FT_STREAM_DATA_BLOCKED;
		f.stream_data_blocked.stream_id = s->id;
		f.stream_data_blocked.limit = v;
		if (!put_frame(b, &f))
			return false;
		r = rec_add(b, DPQ_SENT_REC_STREAM_DATA_BLOCKED);
		r->stream_blocked.id = s->id;
		r->stream_blocked.limit = v;
		dpq_stream_on_blocked_sent(s, v);
	}
	return true;
}

/*
 * A short tail of new data waits for more (sender-side silly window
 * avoidance, as RFC 1122 §4.2.3.4 asks of TCP): a STREAM frame that would
 * leave this packet less than half full goes later when the application
 * filled its send buffer (to within one packet) and data of the stream is
 * in flight. Its ACK frees buffer space, the application writes more, and
 * the tail leaves in a full packet; otherwise a sender limited by its
 * buffer sends each ACK's worth as full packets plus a few-byte packet
 * (a 50 MB download: half of all packets under 200 bytes). A FIN, a
 * retransmission or an application with room to write goes at once, so a
 * request or the end of a response never waits. The ACK reschedules the
 * stream (on_frames).
 */
static bool
stream_tail_waits(const struct pkt_build *b, const struct dpq_stream *s,
		uint64_t off, uint64_t len, bool fin)
{
	const struct dpq_sendbuf *sb = &s->sb;
	size_t cap = (size_t)(b->end - b->payload);
	size_t used = (size_t)(b->p - b->payload);

	return !fin && !sb->fin && off >= sb->sent_off &&
		sb->sent_off > sb->acked_off &&
		used + len < cap / 2 &&
		dpq_sendbuf_room(sb) < cap;
}

/* STREAM frames of one stream; false when the packet is full. */
static bool
write_stream_data(struct dpq_conn *c, struct pkt_build *b,
		struct dpq_qstream *qs)
{
	struct dpq_stream *s = &qs->s;

	while (room_for_rec(b)) {
		size_t max, room = (size_t)(b->end - b->p);
		uint64_t off, len, want;
		struct dpq_sent_rec *r;
		bool fin, with_len;

		if (room < 8)
			return false;
		if (!dpq_stream_next(s, &c->tx_fc, room, &off, &want, &fin))
			return true;	/* nothing more on this stream now */
		/* A frame that fills the packet needs no Length field; one
		 * that does not carries it so more frames can follow. */
		if (!dpq_frame_stream_fit(s->id, off, room, false, &max))
			return false;
		len = want;
		with_len = len < max;
		if (!with_len) {
			len = max;
		} else {
			dpq_frame_stream_fit(s->id, off, room, true, &max);
			if (len > max)
				len = max;
		}
		if (len < want)
			fin = false;	/* the FIN goes with the last byte */
		if (len == 0 && !fin)
			return false;
		if (with_len && stream_tail_waits(b, s, off, len, fin))
			return true;
		b->p = dpq_frame_encode_stream_hdr(b->p, b->end, s->id, off,
				len, fin, with_len);
		if (b->p == NULL)
			return false;
		dpq_stream_copy(s, off, b->p, len);
		b->p += len;
		b->stream_data = true;
		dpq_stream_on_data_sent(s, &c->tx_fc, off, len, fin);
		c->b->stats.stream_bytes_sent += len;
		if (b->e == DPQ_EPOCH_0RTT)
			c->b->stats.early_bytes += len;
		r = rec_add(b, DPQ_SENT_REC_STREAM);
		r->stream.id = s->id;
		r->stream.off = off;
		r->len = (uint32_t)len;
		r->flags = fin ? DPQ_SENT_REC_FIN : 0;
		b->eliciting = true;
		if (!with_len)
			return false;	/* the frame ran to the end */
	}
	return false;
}

static void
write_streams(struct dpq_conn *c, struct pkt_build *b)
{
	struct dpq_qstream *first = c->sendq, *qs, *next;
	unsigned int guard = c->nstreams + 1;

	for (qs = first; qs != NULL && guard-- > 0; qs = next) {
		bool more;

		if (!write_stream_control(b, qs))
			return;
		if (!b->cc_ok) {
			b->cc_blocked = true;
			next = qs->qnext != first ? qs->qnext : NULL;
			continue;
		}
		more = write_stream_data(c, b, qs);
		next = qs->qnext != first ? qs->qnext : NULL;
		if (!more) {
			/* Packet full: the next packet starts after this
			 * stream (round robin). */
			c->sendq = qs->qnext;
			return;
		}
		/* This stream has nothing left that it can send. */
		dpq_conn_stream_unschedule(c, qs);
		if (c->sendq == NULL)
			return;
		if (qs == first)
			first = c->sendq;
	}
}

/* ---- packets ------------------------------------------------------------ */

/* Start a packet of epoch e; 1-RTT packets go to dcid, off_path: a probe
 * on a path other than the active one (only path frames, RFC 9000 §9.1). */
static bool
begin_packet(struct dpq_conn *c, struct pkt_build *b, enum dpq_epoch e,
		uint8_t *buf, size_t room, const struct dpq_cid *dcid,
		bool off_path)
{
	uint8_t *q;

	memset(b, 0, offsetof(struct pkt_build, recs));
	b->e = e;
	b->sp = dpq_epoch_space(e);
	b->start = buf;
	b->pn = c->b->pns[b->sp].next_pn;
	b->pn_len = dpq_pkt_pn_encode_len(b->pn,
			c->b->loss.sp[b->sp].largest_acked);
	if (room < DPQ_CRYPTO_TAG_LEN + 32)
		return false;
	b->end = buf + room - DPQ_CRYPTO_TAG_LEN;
	if (e == DPQ_EPOCH_1RTT) {
		q = dpq_pkt_write_short(buf, b->end, dcid->bytes,
				dcid->len, false, c->key_phase, b->pn,
				b->pn_len);
	} else {
		struct dpq_pkt_long_desc d = {
			.type = e == DPQ_EPOCH_INITIAL ? DPQ_PKT_INITIAL :
				e == DPQ_EPOCH_0RTT ? DPQ_PKT_0RTT :
				DPQ_PKT_HANDSHAKE,
			.version = c->version,
			.dcid = c->dcid.bytes,
			.dcid_len = c->dcid.len,
			.scid = c->scid.bytes,
			.scid_len = c->scid.len,
			.pn = b->pn,
			.pn_len = b->pn_len,
		};

		if (e == DPQ_EPOCH_INITIAL && c->role == DPQ_ROLE_CLIENT) {
			d.token = c->hss->token;
			d.token_len = c->hss->token_len;
		}
		q = dpq_pkt_write_long(buf, b->end, &d, &b->len_field);
	}
	if (q == NULL)
		return false;
	b->payload = b->p = q;
	b->pn_offset = (size_t)(q - buf) - b->pn_len;
	b->off_path = off_path;
	if (e == DPQ_EPOCH_1RTT && c->fec != NULL && !off_path &&
	    c->state == DPQ_CONN_ESTABLISHED) {
		struct dpq_sent_rec *r;
		uint64_t first;
		uint32_t count;
		bool repair;

		/* XOR-FEC (docs/fec.md §6): a due REPAIR frame goes first;
		 * group members leave room for it. */
		q = dpq_conn_fec_begin_packet(c, b->pn, b->p, &b->end, &repair,
				&first, &count, c->now);
		if (q == NULL)
			return false;
		b->p = q;
		if (repair) {
			if (count > 0)
				c->spec_why |= DPQ_SPEC_REPAIR;
			r = rec_add(b, DPQ_SENT_REC_FEC_REPAIR);
			r->fec_repair.first_pn = first;
			r->fec_repair.count = count;
			b->eliciting = true;
		}
	}
	return b->end - b->p > 8;
}

/* Pad so the packet is at least min_len bytes with its tag; also the
 * header-protection sample needs 4 bytes after the pn (RFC 9001 §5.4.2). */
static void
pad_packet(struct pkt_build *b, size_t min_len)
{
	size_t len = (size_t)(b->p - b->start) + DPQ_CRYPTO_TAG_LEN;
	size_t pl = (size_t)(b->p - b->payload) + b->pn_len;
	size_t need = 0;

	if (pl < 4)
		need = 4 - pl;
	if (len + need < min_len)
		need = min_len - len;
	if (need > (size_t)(b->end - b->p))
		need = b->end - b->p;
	if (need == 0)
		return;
	b->p = dpq_frame_encode_padding(b->p, b->end, need);
	b->padded = true;
}

/* An ack-only packet: not in the sent map (see struct dpq_ack_only), but
 * loss recovery must know it was sent, or the peer's ACK of it would be
 * an "ACK of an unsent packet" (RFC 9000 §13.1). */
static void
remember_ack_only(struct dpq_conn *c, const struct pkt_build *b)
{
	struct dpq_pn_space_state *ps = &c->b->pns[b->sp];
	struct dpq_loss_space *ls = &c->b->loss.sp[b->sp];
	size_t i;

	if (ls->largest_sent == DPQ_PN_NONE || b->pn > ls->largest_sent)
		ls->largest_sent = b->pn;
	for (i = 0; i < b->nrec; i++) {
		if (b->recs[i].kind != DPQ_SENT_REC_ACK)
			continue;
		ps->ack_only[ps->ack_only_next].pn = b->pn;
		ps->ack_only[ps->ack_only_next].largest_plus1 =
			b->recs[i].ack.largest + 1;
		ps->ack_only_next = (ps->ack_only_next + 1) %
			DPQ_CONN_ACK_ONLY_TRACK;
		return;
	}
}

/* The peer acknowledged these ranges of space sp: ack-only packets among
 * them let the ACK receiver forget what they acknowledged (§13.2.4). */
void
dpq_conn_ack_only_acked(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_ack_range *r, size_t n)
{
	struct dpq_pn_space_state *ps = &c->b->pns[sp];
	unsigned int i;
	size_t k;

	for (i = 0; i < DPQ_CONN_ACK_ONLY_TRACK; i++) {
		struct dpq_ack_only *a = &ps->ack_only[i];

		if (a->largest_plus1 == 0)
			continue;
		for (k = 0; k < n; k++) {
			if (a->pn >= r[k].smallest && a->pn <= r[k].largest) {
				dpq_ackr_on_ack_acked(ps->ackr,
						a->largest_plus1 - 1);
				a->largest_plus1 = 0;
				break;
			}
		}
	}
}

/* Close the packet: Length field, seal op, recovery bookkeeping. */
static size_t
finish_packet(struct dpq_conn *c, struct pkt_build *b,
		struct dpq_seal_op *op, bool record, uint64_t now)
{
	size_t len = (size_t)(b->p - b->start);
	struct dpq_sent_pkt sp = { 0 };

	if (b->len_field != NULL)
		dpq_pkt_patch_length(b->len_field,
				len - b->pn_offset + DPQ_CRYPTO_TAG_LEN);
	memset(op, 0, sizeof(*op));
	op->key = c->tx[b->e];
	op->pkt = b->start;
	op->pn = b->pn;
	op->len = (uint16_t)len;
	op->pn_offset = (uint16_t)b->pn_offset;
	op->pn_len = (uint8_t)b->pn_len;
	c->b->pns[b->sp].next_pn++;
	if (b->e == DPQ_EPOCH_1RTT) {
		dpq_conn_keys_on_sent(c, b->pn);
		if (c->first_1rtt_pn == UINT64_MAX)
			c->first_1rtt_pn = b->pn;
	}
	if (b->e == DPQ_EPOCH_1RTT && record && !b->off_path)
		dpq_conn_fec_end_packet(c, b->pn, b->payload,
				(size_t)(b->p - b->payload), b->eliciting);
	len += DPQ_CRYPTO_TAG_LEN;
	c->b->stats.pkts_sent++;
	if (c->trace != NULL)
		dpq_conn_trace_sent(c, b->e, b->pn, (uint32_t)len, b->recs,
				b->nrec, b->padded, b->probe, !record);
	if (b->eliciting && c->b->pns[b->sp].probes > 0)
		c->b->pns[b->sp].probes--;
	if (!record)
		return len;
	if (!b->eliciting && !b->padded) {
		/* Not tracked, but the peer counts its mark (§13.4.1). */
		if (c->dgram_ecn == DPQ_ECN_CP_ECT0 && !b->off_path)
			dpq_ecnv_on_sent(&c->b->loss.ecn, b->sp, DPQ_ECN_CP_ECT0);
		remember_ack_only(c, b);
		return len;
	}
	sp.pn = b->pn;
	sp.time_sent = now;
	sp.bytes = (uint32_t)len;
	sp.flags = (b->eliciting ? DPQ_SENT_ACK_ELICITING : 0) |
		((b->eliciting || b->padded) ? DPQ_SENT_IN_FLIGHT : 0) |
		(b->probe ? DPQ_SENT_PROBE : 0);
	if (c->dgram_ecn == DPQ_ECN_CP_ECT0 && !b->off_path)
		sp.flags |= DPQ_SENT_ECT0;
	if (b->off_path)
		sp.flags = 0;	/* RFC 9000 §9.4: not for this path's CC */
	if (sp.flags & DPQ_SENT_IN_FLIGHT)
		c->dgram_in_flight = true;
	if (dpq_loss_on_sent(&c->b->loss, &c->b->cc, b->sp, &sp, b->recs, b->nrec,
			now) != 0)
		dpq_conn_close_transport(c, DPQ_TE_INTERNAL_ERROR, 0,
				"sent packet tracking full");
	return len;
}

/*
 * A handshake-space probe with no CRYPTO data left to send, after the
 * first probe of the same timeout took what dpq_conn_arm_probes put back:
 * it carries the unacknowledged data again rather than a PING (RFC 9002
 * §6.2.4: probes should carry data). Each probe datagram then stands on
 * its own: a client whose ClientHello probe is lost and whose PING probe
 * arrives would otherwise leave the server with nothing to answer (an
 * ngtcp2 server answers no PING-only Initial), and a lost server flight
 * would wait for the client to acknowledge a PING (docs/recovery.md).
 */
static void
probe_resend_crypto(struct dpq_conn *c, enum dpq_epoch e)
{
	struct dpq_sendbuf *sb = &c->cs[e]->sb;

	if (!dpq_sendbuf_pending(sb) && sb->sent_off > sb->acked_off)
		dpq_sendbuf_on_lost(sb, sb->acked_off,
				sb->sent_off - sb->acked_off, false);
}

/* The same for a 1-RTT probe with nothing to send: the oldest packets in
 * flight go again rather than a PING (dpq_conn_arm_probes put back as
 * many packets as there are probes, or fewer if fewer are in flight), up
 * to the first that has something to resend (a PING or PATH_RESPONSE
 * has not). A server's HANDSHAKE_DONE alone in flight went in one probe
 * and a PING in the other; the client, which got the PINGs, kept probing
 * with its Finished (seed 28083 of test_hs_loss, docs/recovery.md). The
 * requeue delivers no stream events: a datagram is being built. */
#define PROBE_REQUEUE_MAX	4

static void
probe_resend_app(struct dpq_conn *c)
{
	struct dpq_loss_cb cb = { .on_requeue = dpq_conn_on_requeue, .ctx = c };
	uint32_t k;

	for (k = 0; k < PROBE_REQUEUE_MAX && c->sendq == NULL &&
			!app_control_pending(c); k++)
		if (dpq_loss_requeue_from(&c->b->loss, DPQ_PN_SPACE_APP, k, 1,
				&cb) == 0)
			break;	/* no more in flight */
}

/* Build one packet of epoch e into buf (at dgram_off in its datagram);
 * returns its length or 0. */
static size_t
build_packet(struct dpq_conn *c, enum dpq_epoch e, uint8_t *buf, size_t room,
		size_t dgram_off, size_t min_len, struct dpq_seal_op *op,
		uint64_t now)
{
	struct pkt_build b;
	size_t len;

	if (!begin_packet(c, &b, e, buf, room, &c->dcid, false))
		return 0;
	b.probe = c->b->pns[b.sp].probes > 0;
	b.cc_ok = b.probe || (dpq_cc_available(&c->b->cc) > 0 && !c->pace_hold);
	if (b.probe && (e == DPQ_EPOCH_INITIAL || e == DPQ_EPOCH_HANDSHAKE))
		probe_resend_crypto(c, e);
	else if (b.probe && e == DPQ_EPOCH_1RTT)
		probe_resend_app(c);
	write_ack(c, &b, now);
	if (b.cc_ok || b.probe) {
		write_crypto(c, &b);
		if (e == DPQ_EPOCH_1RTT && dpq_conn_app_ready(c)) {
			write_path_frames(c, &b, &c->b->paths[c->active], now);
			write_conn_control(c, &b);
			write_streams(c, &b);
		} else if (e == DPQ_EPOCH_0RTT) {
			write_streams(c, &b);
		}
	}
	if ((b.probe || (e == DPQ_EPOCH_1RTT && c->ping_pending)) &&
	    !b.eliciting) {
		struct dpq_frame f = { .type = DPQ_FT_PING };

		if (put_frame(&b, &f))
			rec_add(&b, DPQ_SENT_REC_PING);
		if (e == DPQ_EPOCH_1RTT)
			c->ping_pending = false;
	}
	if (b.p == b.payload)
		return 0;	/* nothing fit */
	if (e == DPQ_EPOCH_1RTT || e == DPQ_EPOCH_0RTT)
		dpq_cc_set_app_limited(&c->b->cc, !b.cc_blocked &&
				c->sendq == NULL);
	/* RFC 9000 §8.2.1, §8.2.2: datagrams with PATH_CHALLENGE or
	 * PATH_RESPONSE are expanded to 1200 bytes (room is already cut to
	 * what the path's amplification limit allows). */
	if (b.path_frame && dgram_off + min_len < DPQ_MIN_INITIAL_DATAGRAM)
		min_len = DPQ_MIN_INITIAL_DATAGRAM - dgram_off;
	pad_packet(&b, min_len);
	len = finish_packet(c, &b, op, true, now);
	/* Nothing more to send: a transfer's tail, whose loss would cost a
	 * probe timeout; its XOR-FEC group's REPAIR goes now, and the
	 * datagram is worth a speculative copy. */
	if (e == DPQ_EPOCH_1RTT && !b.cc_blocked && c->sendq == NULL) {
		dpq_conn_fec_on_idle(c);
		if (b.stream_data)
			c->spec_why |= DPQ_SPEC_TAIL;
	}
	return len;
}

/* A probing datagram on path p, not the active one (RFC 9000 §9.1): its
 * PATH_RESPONSE and PATH_CHALLENGE, padded to 1200 bytes within p's
 * amplification limit. Returns its length or 0. */
static size_t
build_probe(struct dpq_conn *c, struct dpq_path *p, uint8_t *buf, size_t cap,
		struct dpq_seal_op *op, uint64_t now)
{
	struct pkt_build b;
	uint64_t allow;
	size_t len, limit = cap;

	if (!p->response_due && !p->challenge_due)
		return 0;
	if (!c->hs_complete || c->tx[DPQ_EPOCH_1RTT] == NULL ||
	    !dpq_conn_path_can_send(c, p))
		return 0;
	if (limit > c->max_udp_payload)
		limit = c->max_udp_payload;
	allow = dpq_conn_path_allowance(c, p);
	if (allow < limit)
		limit = (size_t)allow;
	if (limit < DPQ_CONN_MIN_DGRAM)
		return 0;
	if (!begin_packet(c, &b, DPQ_EPOCH_1RTT, buf, limit,
			dpq_conn_path_dcid(c, p), true))
		return 0;
	write_path_frames(c, &b, p, now);
	if (b.p == b.payload)
		return 0;
	pad_packet(&b, DPQ_MIN_INITIAL_DATAGRAM);
	len = finish_packet(c, &b, op, true, now);
	dpq_conn_path_on_sent(c, p, len, now);
	c->b->stats.bytes_sent += len;
	return len;
}

/* RFC 9000 §10.2.3: CONNECTION_CLOSE in every epoch the peer may be able
 * to read; an application close becomes APPLICATION_ERROR outside 1-RTT. */
static ssize_t
build_close(struct dpq_conn *c, uint8_t *buf, size_t cap,
		struct dpq_seal_op *ops, unsigned int *nops, uint64_t now)
{
	static const enum dpq_epoch order[] = { DPQ_EPOCH_INITIAL,
		DPQ_EPOCH_HANDSHAKE, DPQ_EPOCH_1RTT };
	size_t off = 0;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		enum dpq_epoch e = order[i];
		struct pkt_build b;
		struct dpq_frame f = { 0 };

		if (c->tx[e] == NULL || c->b->pns[dpq_epoch_space(e)].discarded)
			continue;
		if (e == DPQ_EPOCH_1RTT && !c->hs_complete)
			continue;
		if (!begin_packet(c, &b, e, buf + off, cap - off, &c->dcid,
				false))
			break;
		if (c->close.app && e == DPQ_EPOCH_1RTT) {
			f.type = DPQ_FT_CONNECTION_CLOSE_APP;
			f.close.error_code = c->close.error_code;
			f.close.reason = (const uint8_t *)c->close.reason;
			f.close.reason_len = strlen(c->close.reason);
		} else {
			f.type = DPQ_FT_CONNECTION_CLOSE;
			f.close.error_code = c->close.app ?
				DPQ_TE_APPLICATION_ERROR : c->close.error_code;
			f.close.frame_type = c->close.frame_type;
			if (!c->close.app) {
				f.close.reason = (const uint8_t *)c->close.reason;
				f.close.reason_len = strlen(c->close.reason);
			}
		}
		if (!put_frame(&b, &f))
			break;
		pad_packet(&b, c->role == DPQ_ROLE_CLIENT &&
				e == DPQ_EPOCH_INITIAL ?
				DPQ_MIN_INITIAL_DATAGRAM : 0);
		off += finish_packet(c, &b, &ops[(*nops)++], false, now);
	}
	c->close_pending = false;
	if (!c->close_sent_once) {
		c->close_sent_once = true;
		c->close_deadline = now + DPQ_CONN_CLOSE_PTOS * dpq_conn_pto(c);
	}
	if (off == 0)
		dpq_conn_set_state(c, DPQ_CONN_CLOSED);
	return (ssize_t)off;
}

/* The next datagram on the active path into buf; fills ops[0..*nops).
 * Returns its length or 0. */
static size_t
build_datagram(struct dpq_conn *c, uint8_t *buf, size_t cap,
		struct dpq_seal_op *ops, unsigned int *nops, uint64_t now)
{
	/* RFC 9000 §12.2: coalesced in order of encryption level. */
	static const enum dpq_epoch order[] = { DPQ_EPOCH_INITIAL,
		DPQ_EPOCH_0RTT, DPQ_EPOCH_HANDSHAKE, DPQ_EPOCH_1RTT };
	struct dpq_path *path = &c->b->paths[c->active];
	size_t limit = cap, off = 0, min_len = 0;
	bool has_initial = false, sent_handshake = false;
	uint64_t allow, rate;
	unsigned int i;

	*nops = 0;
	if (limit > c->max_udp_payload)
		limit = c->max_udp_payload;
	/* RFC 9000 §8.1, §9.3.1: to an address not yet validated, three
	 * times what it sent us. */
	allow = dpq_conn_path_allowance(c, path);
	if (allow < limit)
		limit = (size_t)allow;
	if (limit < DPQ_CONN_MIN_DGRAM)
		return 0;
	if (c->state == DPQ_CONN_CLOSING) {
		ssize_t n;

		if (!c->close_pending)
			return 0;
		c->spec_why = 0;	/* no copies of a close */
		n = build_close(c, buf, limit, ops, nops, now);
		if (n <= 0)
			return 0;
		dpq_conn_path_on_sent(c, path, (size_t)n, now);
		c->b->stats.bytes_sent += (uint64_t)n;
		return (size_t)n;
	}

	/* A speculative copy that is due goes before anything new. To an
	 * address not yet validated it must leave room for one probe
	 * datagram of 1200 bytes (RFC 9000 §8.1, §14.1): a copy that spends
	 * the last of the three-times credit leaves a server whose flight
	 * was lost unable to send its PTO probe (RFC 9002 §6.2.2.1) until
	 * the client sends again, which can be after the idle timeout. */
	off = dpq_conn_spec_take(c, buf, cap, allow == UINT64_MAX ? limit :
			allow > DPQ_MIN_INITIAL_DATAGRAM ?
			(size_t)(allow - DPQ_MIN_INITIAL_DATAGRAM) : 0,
			ops, nops, now);
	if (off > 0) {
		dpq_conn_path_on_sent(c, path, off, now);
		c->b->stats.bytes_sent += off;
		return off;
	}
	c->spec_why = 0;
	/* RFC 9000 §13.4.2: ECT(0) while ECN is tested or validated. */
	c->dgram_ecn = dpq_loss_ecn_codepoint(&c->b->loss);
	/* RFC 9002 §7.7: new data leaves at the pacing rate; ACKs and
	 * probes do not wait (the window does not hold them either). */
	rate = dpq_conn_pacing_rate(c);
	/* The controller may ask for trains (its capacity probe). */
	dpq_pacer_set_train(&c->pacer, c->b->cc.pace_train);
	if (paced_work(c)) {
		c->pace_hold = dpq_pacer_next(&c->pacer, rate, now) > now;
	} else {
		c->pace_hold = false;
		dpq_pacer_idle(&c->pacer);
	}
	c->dgram_in_flight = false;
	for (i = 0; i < 4 && *nops < DPQ_CONN_MAX_SEAL_OPS; i++) {
		enum dpq_epoch e = order[i];
		size_t n;

		if (!epoch_has_data(c, e, now, c->pace_hold))
			continue;
		/* RFC 9000 §14.1: a datagram with a client Initial (or any
		 * ack-eliciting Initial) is padded to 1200 bytes. The Initial
		 * itself carries the padding: a later packet of the datagram
		 * might turn out empty and be skipped. */
		has_initial = e == DPQ_EPOCH_INITIAL &&
			(c->role == DPQ_ROLE_CLIENT ||
			 dpq_sendbuf_pending(&c->cs[e]->sb) ||
			 c->b->pns[DPQ_PN_SPACE_INITIAL].probes > 0);
		/* §14.1 is a MUST for a server too: when the amplification
		 * credit cannot pay for 1200 bytes, its ack-eliciting
		 * Initial waits for the client's next datagram (RFC 9002
		 * §6.2.2.1) instead of leaving short. */
		if (has_initial && server_initial_blocked(c, limit))
			continue;
		min_len = has_initial && off < DPQ_MIN_INITIAL_DATAGRAM ?
			DPQ_MIN_INITIAL_DATAGRAM - off : 0;
		n = build_packet(c, e, buf + off, limit - off, off, min_len,
				&ops[*nops], now);
		if (n == 0)
			continue;
		(*nops)++;
		off += n;
		if (e == DPQ_EPOCH_HANDSHAKE)
			sent_handshake = true;
	}
	/* The client drops Initial keys once it sends a Handshake packet
	 * (RFC 9001 §4.9.1); after these packets are sealed. */
	if (sent_handshake && c->role == DPQ_ROLE_CLIENT)
		c->discard_initial_pending = true;
	dpq_conn_path_on_sent(c, path, off, now);
	if (c->dgram_in_flight)
		dpq_pacer_on_sent(&c->pacer, rate, (uint32_t)off, now);
	c->pace_hold = false;
	c->b->stats.bytes_sent += off;
	return off;
}

int
dpq_conn_build_burst(struct dpq_conn *c, struct dpq_tx_dgram *d,
		unsigned int n, struct dpq_seal_op *ops, uint64_t now)
{
	unsigned int k = 0, nops = 0, i, first = 0;
	/* Datagrams worth a speculative copy (DPQ_SPEC_*), and where their
	 * seal ops start: copied after the FEC pass filled their REPAIRs. */
	uint8_t why[DPQ_CONN_SPEC_BURST];
	unsigned int why_op[DPQ_CONN_SPEC_BURST];

	if (c == NULL || (n > 0 && (d == NULL || ops == NULL)))
		return -EINVAL;
	c->now = now;
	/* Nothing here may free keys: the seal ops of this burst point at
	 * them until the caller sealed it (deferred: dpq_conn_tx_done). */
	if (c->state == DPQ_CONN_CLOSED || c->state == DPQ_CONN_DRAINING)
		return 0;
	/* A parked connection expands its keys only to send something. */
	if (c->parked != NULL) {
		if (!dpq_conn_wants_send(c, now) || dpq_conn_unpark(c) != 0)
			return 0;
	}
	/* A key update that is due starts here (RFC 9001 §6.1); the old
	 * write keys stay until dpq_conn_tx_done(). */
	dpq_conn_keys_prepare(c);
	dpq_conn_keys_tx_check(c, now);
	/* Probes on other paths first: a PATH_RESPONSE must not wait
	 * (RFC 9000 §8.2.2). */
	for (i = 0; i < DPQ_CONN_PATHS && k < n &&
			c->state == DPQ_CONN_ESTABLISHED; i++) {
		struct dpq_path *p = &c->b->paths[i];
		size_t len;

		if (i == c->active || !p->in_use)
			continue;
		len = build_probe(c, p, d[k].buf, d[k].cap, &ops[nops], now);
		if (len == 0)
			continue;
		d[k].len = (uint16_t)len;
		d[k].nops = 1;
		d[k].ecn = 0;
		d[k].tuple = p->tuple;
		nops++;
		k++;
	}
	first = k;
	while (k < n) {
		unsigned int m = 0;
		size_t len;

		len = build_datagram(c, d[k].buf, d[k].cap, &ops[nops], &m,
				now);
		if (len == 0)
			break;
		if (k - first < DPQ_CONN_SPEC_BURST) {
			why[k - first] = c->spec_why;
			why_op[k - first] = nops;
		}
		c->spec_why = 0;
		d[k].len = (uint16_t)len;
		d[k].nops = (uint8_t)m;
		d[k].ecn = c->dgram_ecn;
		c->dgram_ecn = DPQ_ECN_CP_NOT_ECT;
		d[k].tuple = c->b->paths[c->active].tuple;
		nops += m;
		k++;
	}
	/* The burst's packets are in ops[0..nops), still plaintext: the
	 * XOR-FEC pass runs once over all of them, before the caller seals
	 * (probes on other paths take no part); then the plaintexts of the
	 * datagrams worth sending twice are kept (conn_spec.c). */
	dpq_conn_fec_pass(c);
	for (i = first; i < k && i - first < DPQ_CONN_SPEC_BURST; i++) {
		if (why[i - first] == 0)
			continue;
		c->spec_why = why[i - first];
		dpq_conn_spec_on_built(c, d[i].buf, d[i].len,
				&ops[why_op[i - first]], d[i].nops, now);
	}
	return (int)k;
}

bool
dpq_conn_wants_send(const struct dpq_conn *c, uint64_t now)
{
	struct dpq_conn_peek pk;
	unsigned int i;
	bool hold;

	if (c->state == DPQ_CONN_CLOSED || c->state == DPQ_CONN_DRAINING)
		return false;
	/* Parked: nothing owed before the timeout taken at park. */
	if (c->b == NULL) {
		if (now < dpq_conn_parked_timeout(c))
			return false;
		c = dpq_conn_peek(c, &pk);
	}
	/* Probes owed on other paths, within their own 3x limits. */
	for (i = 0; i < DPQ_CONN_PATHS && c->state == DPQ_CONN_ESTABLISHED;
			i++) {
		const struct dpq_path *p = &c->b->paths[i];

		if (i != c->active && p->in_use &&
		    (p->response_due || p->challenge_due) &&
		    dpq_conn_path_dcid(c, p) != NULL &&
		    dpq_conn_path_allowance(c, p) >= DPQ_CONN_MIN_DGRAM)
			return true;
	}
	/* As build_datagram: with less room than that, nothing goes. */
	if (dpq_conn_path_allowance(c, &c->b->paths[c->active]) <
	    DPQ_CONN_MIN_DGRAM)
		return false;
	if (c->state == DPQ_CONN_CLOSING)
		return c->close_pending;
	hold = dpq_pacer_release_time(&c->pacer, dpq_conn_pacing_rate(c),
			now) > now;
	return dpq_conn_spec_deadline(c) <= now ||
		(epoch_has_data(c, DPQ_EPOCH_INITIAL, now, hold) &&
		 !server_initial_blocked(c, dpq_conn_path_allowance(c,
				&c->b->paths[c->active]))) ||
		epoch_has_data(c, DPQ_EPOCH_HANDSHAKE, now, hold) ||
		epoch_has_data(c, DPQ_EPOCH_1RTT, now, hold);
}

ssize_t
dpq_conn_send(struct dpq_conn *c, uint8_t *buf, size_t cap,
		struct dpq_tuple *to, uint64_t now)
{
	struct dpq_seal_op ops[DPQ_CONN_MAX_SEAL_OPS];
	struct dpq_tx_dgram d = {
		.buf = buf,
		.cap = (uint16_t)(cap > UINT16_MAX ? UINT16_MAX : cap),
	};
	int n;

	n = dpq_conn_build_burst(c, &d, 1, ops, now);
	if (n <= 0)
		return n;
	if (dpq_crypto_seal_burst(c->crypto, ops, d.nops) != d.nops)
		return -EIO;
	dpq_conn_tx_done(c, now);
	if (to != NULL)
		*to = d.tuple;
	return d.len;
}

/* After a Retry the client sends its Initial CRYPTO data again. */
void
dpq_conn_resend_initial(struct dpq_conn *c)
{
	struct dpq_sendbuf *sb = &c->cs[DPQ_EPOCH_INITIAL]->sb;

	if (sb->sent_off > sb->acked_off)
		dpq_sendbuf_on_lost(sb, sb->acked_off,
				sb->sent_off - sb->acked_off, false);
}

/* ---- probes ---------------------------------------------------------- */

/*
 * RFC 9002 §6.2.4 and A.9: a probe carries unacknowledged CRYPTO data if
 * the space has any, else new data, else old data, else a PING. A client
 * whose ClientHello was lost therefore sends it again in its probe (an
 * Initial padded to 1200 bytes), and a server resends its flight without
 * waiting for the client to acknowledge a PING. The data goes back into
 * the send buffers as if lost; the packets stay in flight.
 */
void
dpq_conn_arm_probes(struct dpq_conn *c, enum dpq_pn_space sp, uint32_t n)
{
	struct dpq_loss_cb cb = { .on_requeue = dpq_conn_on_requeue, .ctx = c };
	struct dpq_pn_space_state *ps = &c->b->pns[sp];

	if (ps->discarded || n == 0)
		return;
	ps->probes += n;
	if (ps->probes > DPQ_CONN_MAX_PROBES)
		ps->probes = DPQ_CONN_MAX_PROBES;
	if (sp != DPQ_PN_SPACE_APP)
		dpq_loss_requeue(&c->b->loss, sp, UINT32_MAX, &cb);
	else if (c->sendq == NULL)
		dpq_loss_requeue(&c->b->loss, sp, n, &cb);
}

void
dpq_conn_resend_crypto_early(struct dpq_conn *c)
{
	enum dpq_pn_space sp;

	if (c->early_resends >= DPQ_CONN_EARLY_RESENDS)
		return;
	c->early_resends++;
	for (sp = DPQ_PN_SPACE_INITIAL; sp <= DPQ_PN_SPACE_HANDSHAKE; sp++)
		if (c->b->loss.sp[sp].ack_eliciting_in_flight > 0)
			dpq_conn_arm_probes(c, sp, 1);
}

/* ---- acknowledged and lost frames (loss recovery callbacks) --------- */

/* NULL for a space whose handshake-only state is gone. */
static struct dpq_crypto_stream *
crypto_of_space(struct dpq_conn *c, enum dpq_pn_space sp)
{
	return c->cs[sp == DPQ_PN_SPACE_INITIAL ? DPQ_EPOCH_INITIAL :
		sp == DPQ_PN_SPACE_HANDSHAKE ? DPQ_EPOCH_HANDSHAKE :
		DPQ_EPOCH_1RTT];
}

/* What an acknowledged or lost packet's frames mean. events: deliver the
 * streams' pending events to the application (not for a requeue, which
 * may run while a datagram is being built: no application code there). */
static void
on_frames(struct dpq_conn *c, enum dpq_pn_space sp,
		const struct dpq_sent_pkt *pkt, bool acked, bool events)
{
	const struct dpq_sent_rec *r = dpq_sent_pkt_recs(pkt);
	struct dpq_qstream *qs;
	unsigned int i;

	for (i = 0; i < pkt->nrec; i++, r++) {
		bool fin = (r->flags & DPQ_SENT_REC_FIN) != 0;
		bool uni = (r->flags & DPQ_SENT_REC_UNI) != 0;

		switch (r->kind) {
		case DPQ_SENT_REC_STREAM:
			qs = dpq_conn_stream_find(c, r->stream.id);
			if (qs == NULL)
				break;
			if (acked) {
				dpq_stream_on_data_acked(&qs->s, r->stream.off,
						r->len, fin);
				/* A tail that waited for this ACK. */
				if (dpq_sendbuf_pending(&qs->s.sb))
					dpq_conn_stream_schedule(c, qs);
			} else {
				dpq_stream_on_data_lost(&qs->s, r->stream.off,
						r->len, fin);
				dpq_conn_stream_schedule(c, qs);
			}
			if (events)
				dpq_conn_stream_events(c, qs);
			break;
		case DPQ_SENT_REC_CRYPTO:
			if (crypto_of_space(c, sp) == NULL)
				break;
			if (acked)
				dpq_sendbuf_on_acked(&crypto_of_space(c, sp)->sb,
						r->crypto.off, r->len, false);
			else
				dpq_sendbuf_on_lost(&crypto_of_space(c, sp)->sb,
						r->crypto.off, r->len, false);
			break;
		case DPQ_SENT_REC_ACK:
			if (acked && c->b->pns[sp].ackr != NULL)
				dpq_ackr_on_ack_acked(c->b->pns[sp].ackr,
						r->ack.largest);
			break;
		case DPQ_SENT_REC_HANDSHAKE_DONE:
			/* A copy may be acknowledged while the first is
			 * still out (a probe repeated it). */
			if (acked)
				c->handshake_done_acked = true;
			else if (!c->handshake_done_acked)
				c->handshake_done_pending = true;
			break;
		case DPQ_SENT_REC_NEW_TOKEN:
			/* §13.3: resent until acknowledged (the latest token:
			 * a newer one replaces it, so no copy per packet). */
			if (!acked && c->nt_tx != NULL)
				c->nt_tx_pending = true;
			break;
		case DPQ_SENT_REC_MAX_DATA:
			if (!acked)
				dpq_flow_rx_on_lost(&c->rx_fc, r->max.value);
			break;
		case DPQ_SENT_REC_MAX_STREAMS:
			if (!acked)
				dpq_streams_rx_on_lost(&c->streams_rx[uni],
						r->max.value);
			break;
		case DPQ_SENT_REC_DATA_BLOCKED:
			if (!acked)
				dpq_flow_tx_on_blocked_lost(&c->tx_fc,
						r->blocked.limit);
			break;
		case DPQ_SENT_REC_STREAMS_BLOCKED:
			if (!acked)
				dpq_streams_tx_on_blocked_lost(
					&c->streams_tx[uni], r->blocked.limit);
			break;
		case DPQ_SENT_REC_RETIRE_CONNECTION_ID:
			if (!acked)
				dpq_conn_retire_push(c, r->retire_cid.seq);
			break;
		case DPQ_SENT_REC_NEW_CONNECTION_ID:
			if (!acked)
				dpq_conn_cid_on_lost(c, r->new_cid.seq);
			break;
		case DPQ_SENT_REC_MAX_STREAM_DATA:
		case DPQ_SENT_REC_STREAM_DATA_BLOCKED:
		case DPQ_SENT_REC_RESET_STREAM:
		case DPQ_SENT_REC_STOP_SENDING:
			qs = dpq_conn_stream_find(c, r->raw[0]);
			if (qs == NULL)
				break;
			if (r->kind == DPQ_SENT_REC_MAX_STREAM_DATA && !acked)
				dpq_stream_on_max_data_lost(&qs->s,
						r->max_stream_data.value);
			else if (r->kind == DPQ_SENT_REC_STREAM_DATA_BLOCKED &&
				 !acked)
				dpq_stream_on_blocked_lost(&qs->s,
						r->stream_blocked.limit);
			else if (r->kind == DPQ_SENT_REC_RESET_STREAM)
				acked ? dpq_stream_on_reset_acked(&qs->s) :
					dpq_stream_on_reset_lost(&qs->s);
			else if (r->kind == DPQ_SENT_REC_STOP_SENDING && !acked)
				dpq_stream_on_stop_lost(&qs->s);
			if (!acked)
				dpq_conn_stream_schedule(c, qs);
			if (events)
				dpq_conn_stream_events(c, qs);
			break;
		default:
			/* PING, PATH_RESPONSE (§13.3: not retransmitted). */
			break;
		}
	}
	/* RFC 9001 §4.1.2: a client may take an acknowledged 1-RTT packet
	 * as handshake confirmation; an acknowledged 0-RTT packet (same
	 * space, lower numbers) proves nothing about the handshake. */
	if (acked && sp == DPQ_PN_SPACE_APP && c->hs_complete &&
	    c->role == DPQ_ROLE_CLIENT && !c->hs_confirmed &&
	    pkt->pn >= c->first_1rtt_pn)
		c->confirm_pending = true;	/* applied after the ACK */
}

void
dpq_conn_on_acked(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt)
{
	on_frames(ctx, space, pkt, true, true);
}

void
dpq_conn_on_lost(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt)
{
	struct dpq_conn *c = ctx;

	if (c->trace != NULL)
		dpq_conn_trace_lost(c, space, pkt);
	dpq_conn_fec_on_lost(c, space, pkt);
	on_frames(c, space, pkt, false, true);
}

/* A packet whose data goes again without the path having lost it: still
 * in flight, a probe resends its data (RFC 9002 §6.2.4), or 0-RTT the
 * server rejected goes again in 1-RTT. Its frames are queued again, but
 * no packet_lost record and no loss for the XOR-FEC meter: those come
 * once, if the packet is declared lost later (before, a packet probed
 * three times was reported lost three times and more). */
void
dpq_conn_on_requeue(void *ctx, enum dpq_pn_space space,
		const struct dpq_sent_pkt *pkt)
{
	on_frames(ctx, space, pkt, false, false);
}
