/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive path: a datagram is walked packet by packet (coalescing, RFC
 * 9000 §12.2), each packet's protection removed (RFC 9001 §5), its packet
 * number checked for duplicates and its frames dispatched (RFC 9000 §12.4,
 * §19). Frames not allowed in the packet type, or violating the protocol,
 * close the connection with the transport error the RFC names. Shard only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "dataplane/crypto/retry.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/streamid.h"
#include "dataplane/quic/conn_int.h"

/* Undecryptable packets are kept until their keys arrive (RFC 9001
 * §4.1.4, DPQ_CONN_RX_BUFFERED of them): the handshake service answers
 * asynchronously, so a Handshake packet coalesced behind the Initial that
 * carries the ServerHello arrives before its keys. */

/* Close with the transport error a callee returned (DPQ_TE_ERR(code),
 * errors.h); anything else is our own failure: INTERNAL_ERROR. */
static int
close_err(struct dpq_conn *c, int err, uint64_t ftype, const char *why)
{
	dpq_conn_close_transport(c, dpq_err_transport_code(err), ftype, why);
	return err;
}

/* Close with transport error code; returns DPQ_TE_ERR(code). */
static int
close_te(struct dpq_conn *c, enum dpq_transport_error code, uint64_t ftype,
		const char *why)
{
	return close_err(c, DPQ_TE_ERR(code), ftype, why);
}

/* ---- frames ------------------------------------------------------------ */

static int
on_ack(struct dpq_conn *c, enum dpq_pn_space sp, const struct dpq_frame *f,
		uint64_t now)
{
	struct dpq_ack_range ranges[DPQ_LOSS_MAX_ACK_RANGES];
	struct dpq_loss_cb cb = { .on_acked = dpq_conn_on_acked,
		.on_lost = dpq_conn_on_lost, .on_requeue = dpq_conn_on_requeue,
		.ctx = c };
	struct dpq_loss_ack_info info;
	uint64_t delay = 0;
	size_t n;
	int rc;

	n = dpq_loss_ack_ranges(&f->ack, ranges, DPQ_LOSS_MAX_ACK_RANGES);
	if (n == 0)
		return close_te(c, DPQ_TE_FRAME_ENCODING_ERROR, f->type,
				"bad ACK ranges");
	/* RFC 9000 §19.3: ACK Delay is scaled by the peer's exponent; Initial
	 * and Handshake ACK delays are not used (RFC 9002 §5.3). */
	if (sp == DPQ_PN_SPACE_APP)
		delay = dpq_loss_ack_delay_us(f->ack.ack_delay,
				(unsigned int)c->b->peer_tp.ack_delay_exponent);
	c->trace_loss_trigger = DPQ_TRACE_LOST_REORDERING;
	rc = dpq_loss_on_ack(&c->b->loss, &c->b->cc, sp, ranges, n, delay,
			f->type == DPQ_FT_ACK_ECN ? &f->ack.ecn : NULL, now,
			&cb, &info);
	if (rc == DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION))
		return close_err(c, rc, f->type, "ACK of an unsent packet");
	if (rc != 0)
		return close_te(c, DPQ_TE_FRAME_ENCODING_ERROR, f->type,
				"bad ACK");
	dpq_conn_ack_only_acked(c, sp, ranges, n);
	c->b->stats.pkts_acked += info.packets_acked;
	c->b->stats.pkts_lost += info.packets_lost;
	if (info.packets_acked)
		c->b->pns[sp].probes = 0;
	if (c->trace != NULL)
		dpq_conn_trace_metrics(c);
	if (sp == DPQ_PN_SPACE_APP)
		dpq_conn_keys_on_acked(c, ranges[0].largest, now);
	/* Decided inside the loss callbacks, done here: they must not call
	 * back into loss recovery. */
	if (c->confirm_pending) {
		c->confirm_pending = false;
		dpq_conn_confirm_handshake(c, now);
	}
	return 0;
}

static int
on_crypto(struct dpq_conn *c, enum dpq_epoch e, const struct dpq_frame *f,
		bool *deliver)
{
	int rc;

	if (e == DPQ_EPOCH_0RTT)	/* excluded by the frame table */
		return close_te(c, DPQ_TE_PROTOCOL_VIOLATION, f->type,
				"CRYPTO in 0-RTT");
	if (c->b->pns[dpq_epoch_space(e)].discarded)
		return 0;
	/* RFC 9002 §6.2.3: a client that sends its Initial CRYPTO data again
	 * has not seen our Initial (or its ACK): resend ours now. */
	if (c->role == DPQ_ROLE_SERVER && e == DPQ_EPOCH_INITIAL &&
	    f->crypto.offset + f->crypto.len <= c->cs[e]->rb.read_off)
		dpq_conn_resend_crypto_early(c);
	rc = dpq_recvbuf_insert(&c->cs[e]->rb, f->crypto.offset,
			f->crypto.data, f->crypto.len, false);
	if (rc < 0 && !dpq_err_is_transport(rc))
		return rc;	/* -ENOMEM...: drop the packet unacknowledged */
	if (rc == DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR))
		rc = DPQ_TE_ERR(DPQ_TE_CRYPTO_BUFFER_EXCEEDED);
	if (rc < 0)
		return close_err(c, rc, f->type,
				"CRYPTO data beyond the buffer");
	if (dpq_recvbuf_readable(&c->cs[e]->rb) > 0)
		*deliver = true;
	return 0;
}

static int
on_stream_frame(struct dpq_conn *c, const struct dpq_frame *f, uint64_t now)
{
	struct dpq_qstream *qs;
	int err = 0, rc;

	qs = dpq_conn_stream_get_peer(c, f->stream.stream_id, f->type, &err);
	if (err != 0)
		return close_err(c, err, f->type, "STREAM on a bad stream");
	if (qs == NULL)
		return 0;	/* already closed: late retransmission */
	rc = dpq_stream_on_stream(&qs->s, &c->rx_fc, f->stream.offset,
			f->stream.data, f->stream.len, f->stream.fin, now);
	if (rc < 0 && !dpq_err_is_transport(rc))
		return rc;	/* -ENOMEM...: drop the packet unacknowledged */
	if (rc < 0)
		return close_err(c, rc, f->type, "STREAM frame refused");
	c->b->stats.stream_bytes_recv += f->stream.len;
	dpq_conn_stream_events(c, qs);
	return 0;
}

static struct dpq_qstream *
stream_for(struct dpq_conn *c, const struct dpq_frame *f, uint64_t id,
		int *err)
{
	*err = 0;
	return dpq_conn_stream_get_peer(c, id, f->type, err);
}

void
dpq_conn_retire_peer_cid(struct dpq_conn *c, unsigned int i)
{
	struct dpq_peer_cid *p = &c->peer_cids[i];

	dpq_conn_retire_push(c, p->seq);
	/* RFC 9000 §10.3.1: a retired CID's token no longer counts. */
	p->used = false;
	p->has_token = false;
	p->sent_on = false;
	memset(p->reset_token, 0, sizeof(p->reset_token));
}

/* RFC 9000 §19.15 and §5.1.2. */
static int
on_new_cid(struct dpq_conn *c, const struct dpq_frame *f)
{
	struct dpq_cid cid;
	unsigned int i, active = 0, slot = DPQ_CONN_PEER_CIDS;
	bool current_retired = false;

	if (c->dcid.len == 0)
		return close_te(c, DPQ_TE_PROTOCOL_VIOLATION, f->type,
				"NEW_CONNECTION_ID with zero-length CIDs");
	dpq_cid_set(&cid, f->new_cid.cid, f->new_cid.cid_len);
	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++) {
		struct dpq_peer_cid *p = &c->peer_cids[i];

		if (!p->used) {
			if (slot == DPQ_CONN_PEER_CIDS)
				slot = i;
			continue;
		}
		if (p->seq == f->new_cid.seq) {
			if (!dpq_cid_eq(&p->cid, &cid) ||
			    memcmp(p->reset_token, f->new_cid.reset_token,
				    DPQ_RESET_TOKEN_LEN) != 0)
				return close_te(c, DPQ_TE_PROTOCOL_VIOLATION,
						f->type, "CID sequence reused");
			return 0;	/* retransmission */
		}
	}
	if (f->new_cid.seq < c->peer_retire_prior_to) {
		/* Already retired: retire it again at once (§19.15). */
		if (!dpq_conn_retire_push(c, f->new_cid.seq))
			return DPQ_TE_ERR(DPQ_TE_CONNECTION_ID_LIMIT_ERROR);
		return 0;
	}
	if (f->new_cid.retire_prior_to > c->peer_retire_prior_to) {
		c->peer_retire_prior_to = f->new_cid.retire_prior_to;
		for (i = 0; i < DPQ_CONN_PEER_CIDS; i++) {
			struct dpq_peer_cid *p = &c->peer_cids[i];

			if (p->used && p->seq < c->peer_retire_prior_to) {
				if (dpq_cid_eq(&p->cid, &c->dcid))
					current_retired = true;
				dpq_conn_retire_peer_cid(c, i);
				if (slot == DPQ_CONN_PEER_CIDS)
					slot = i;
			}
		}
	}
	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++)
		active += c->peer_cids[i].used;
	if (slot == DPQ_CONN_PEER_CIDS || active >= DPQ_CONN_PEER_CIDS)
		return close_te(c, DPQ_TE_CONNECTION_ID_LIMIT_ERROR, f->type,
				"more CIDs than active_connection_id_limit");
	c->peer_cids[slot].cid = cid;
	c->peer_cids[slot].seq = f->new_cid.seq;
	c->peer_cids[slot].used = true;
	c->peer_cids[slot].has_token = true;
	c->peer_cids[slot].sent_on = false;
	memcpy(c->peer_cids[slot].reset_token, f->new_cid.reset_token,
			DPQ_RESET_TOKEN_LEN);
	if (current_retired) {
		c->dcid = cid;
		c->peer_cids[slot].sent_on = true;
	}
	return 0;
}

/* Dispatch one frame; returns 0, a transport error DPQ_TE_ERR(code)
 * (already closing), or -errno such as -ENOMEM/-ENOBUFS (drop the packet,
 * do not acknowledge). */
static int
on_frame(struct dpq_conn *c, enum dpq_epoch e, const struct dpq_frame *f,
		bool deliver[DPQ_EPOCH_COUNT], uint64_t now)
{
	enum dpq_pn_space sp = dpq_epoch_space(e);
	struct dpq_qstream *qs;
	int err, rc;

	if (dpq_frame_is_stream(f->type))
		return on_stream_frame(c, f, now);

	switch (f->type) {
	case DPQ_FT_PADDING:
	case DPQ_FT_PING:
		return 0;
	case DPQ_FT_ACK:
	case DPQ_FT_ACK_ECN:
		return on_ack(c, sp, f, now);
	case DPQ_FT_CRYPTO:
		return on_crypto(c, e, f, &deliver[e]);
	case DPQ_FT_NEW_TOKEN:
		/* RFC 9000 §8.1.3: a client keeps the token for a later
		 * connection (servers refuse the frame by the frame table). */
		if (f->new_token.len > DPQ_CONN_TOKEN_MAX)
			return 0;	/* not ours to use; ignore */
		if (c->nt_rx == NULL) {
			c->nt_rx = dpq_mem_alloc(&c->mem, DPQ_CONN_TOKEN_MAX);
			if (c->nt_rx == NULL)
				return -ENOMEM;
		}
		memcpy(c->nt_rx, f->new_token.token, f->new_token.len);
		c->nt_rx_len = (uint16_t)f->new_token.len;
		return 0;
	case DPQ_FT_RESET_STREAM:
		qs = stream_for(c, f, f->reset_stream.stream_id, &err);
		if (err)
			return close_err(c, err, f->type, "RESET_STREAM");
		if (qs == NULL)
			return 0;
		rc = dpq_stream_on_reset_stream(&qs->s, &c->rx_fc,
				f->reset_stream.app_error,
				f->reset_stream.final_size, now,
				dpq_conn_tune_rtt(c));
		if (rc < 0)
			return close_err(c, rc, f->type, "RESET_STREAM");
		dpq_conn_stream_events(c, qs);
		return 0;
	case DPQ_FT_STOP_SENDING:
		qs = stream_for(c, f, f->stop_sending.stream_id, &err);
		if (err)
			return close_err(c, err, f->type, "STOP_SENDING");
		if (qs == NULL)
			return 0;
		rc = dpq_stream_on_stop_sending(&qs->s,
				f->stop_sending.app_error);
		if (rc < 0)
			return close_err(c, rc, f->type, "STOP_SENDING");
		dpq_conn_stream_schedule(c, qs);
		dpq_conn_stream_events(c, qs);
		return 0;
	case DPQ_FT_MAX_DATA:
		/* Streams that waited for connection credit may go on. */
		if (dpq_flow_tx_on_max(&c->tx_fc, f->max_data.max))
			dpq_conn_streams_reschedule(c);
		return 0;
	case DPQ_FT_MAX_STREAM_DATA:
		qs = stream_for(c, f, f->max_stream_data.stream_id, &err);
		if (err)
			return close_err(c, err, f->type, "MAX_STREAM_DATA");
		if (qs == NULL)
			return 0;
		rc = dpq_stream_on_max_stream_data(&qs->s,
				f->max_stream_data.max);
		if (rc < 0)
			return close_err(c, rc, f->type, "MAX_STREAM_DATA");
		dpq_conn_stream_schedule(c, qs);
		dpq_conn_stream_events(c, qs);
		return 0;
	case DPQ_FT_MAX_STREAMS_BIDI:
	case DPQ_FT_MAX_STREAMS_UNI:
		rc = dpq_streams_tx_on_max(&c->streams_tx[f->type ==
				DPQ_FT_MAX_STREAMS_UNI], f->max_streams.max);
		if (rc < 0)
			return close_err(c, rc, f->type, "MAX_STREAMS");
		return 0;
	case DPQ_FT_DATA_BLOCKED:
		return 0;
	case DPQ_FT_STREAM_DATA_BLOCKED:
		qs = stream_for(c, f, f->stream_data_blocked.stream_id, &err);
		if (err)
			return close_err(c, err, f->type,
					"STREAM_DATA_BLOCKED");
		if (qs == NULL)
			return 0;
		rc = dpq_stream_on_stream_data_blocked(&qs->s,
				f->stream_data_blocked.limit);
		if (rc < 0)
			return close_err(c, rc, f->type,
					"STREAM_DATA_BLOCKED");
		return 0;
	case DPQ_FT_STREAMS_BLOCKED_BIDI:
	case DPQ_FT_STREAMS_BLOCKED_UNI:
		rc = dpq_streams_rx_on_blocked(&c->streams_rx[f->type ==
				DPQ_FT_STREAMS_BLOCKED_UNI],
				f->streams_blocked.limit);
		if (rc < 0)
			return close_err(c, rc, f->type, "STREAMS_BLOCKED");
		return 0;
	case DPQ_FT_NEW_CONNECTION_ID:
		rc = on_new_cid(c, f);
		if (rc == 0)
			dpq_conn_paths_cids_changed(c);
		return rc;
	case DPQ_FT_RETIRE_CONNECTION_ID:
		return dpq_conn_cid_on_retire(c, f->retire_cid.seq);
	case DPQ_FT_PATH_CHALLENGE:
		/* §8.2.2: echo in a PATH_RESPONSE on the same path. */
		dpq_conn_path_on_challenge(c, c->rx_path, f->path.data);
		return 0;
	case DPQ_FT_PATH_RESPONSE:
		dpq_conn_path_on_response(c, f->path.data, now);
		return 0;
	case DPQ_FT_CONNECTION_CLOSE:
	case DPQ_FT_CONNECTION_CLOSE_APP:
		c->close.error_code = f->close.error_code;
		c->close.frame_type = f->close.frame_type;
		c->close.app = f->type == DPQ_FT_CONNECTION_CLOSE_APP;
		c->close.remote = true;
		memset(c->close.reason, 0, sizeof(c->close.reason));
		memcpy(c->close.reason, f->close.reason,
				f->close.reason_len < sizeof(c->close.reason) ?
				f->close.reason_len :
				sizeof(c->close.reason) - 1);
		dpq_conn_enter_draining(c, now);
		return 0;
	case DPQ_FT_HANDSHAKE_DONE:
		/* RFC 9001 §4.1.2: confirms the handshake for a client
		 * (servers refuse it by the frame table). 1-RTT packets wait
		 * for completion (rx_ready), so it cannot come earlier. */
		if (c->hs_complete)
			dpq_conn_confirm_handshake(c, now);
		return 0;
	default:
		return close_te(c, DPQ_TE_FRAME_ENCODING_ERROR, f->type,
				"unknown frame");
	}
}

/* ---- packets ------------------------------------------------------------- */

/* RFC 9001 §5.8 / RFC 9000 §17.2.5: a client takes one Retry. */
static int
on_retry(struct dpq_conn *c, const uint8_t *pkt, const struct dpq_pkt_hdr *h)
{
	struct dpq_cid scid;
	int rc;

	if (c->role != DPQ_ROLE_CLIENT || c->retry_done ||
	    c->largest_rx_pn[DPQ_PN_SPACE_INITIAL] != DPQ_PN_NONE)
		return -EINVAL;
	if (dpq_retry_tag_verify(c->crypto, c->odcid.bytes, c->odcid.len,
			pkt, h->pkt_len) != 0)
		return -EBADMSG;
	if (dpq_cid_set(&scid, h->scid, h->scid_len) != 0 ||
	    dpq_cid_eq(&scid, &c->dcid))
		return -EINVAL;		/* §17.2.5.2: SCID must change */
	if (h->token_len > DPQ_CONN_TOKEN_MAX)
		return -EMSGSIZE;
	memcpy(c->hss->token, h->token, h->token_len);
	c->hss->token_len = (uint16_t)h->token_len;
	c->retry_done = true;
	c->retry_scid = scid;
	c->dcid = scid;
	/* New Initial keys from the Retry's SCID, and the ClientHello sent
	 * again in a new Initial (§17.2.5.2). */
	rc = dpq_pp_key_init_initial(c->crypto, c->rx[DPQ_EPOCH_INITIAL],
			scid.bytes, scid.len, true);
	if (rc == 0)
		rc = dpq_pp_key_init_initial(c->crypto,
				c->tx[DPQ_EPOCH_INITIAL], scid.bytes,
				scid.len, false);
	if (rc != 0)
		return rc;
	dpq_conn_resend_initial(c);
	/* Copies of the old Initial (speculative retransmission) would be
	 * sealed with the new keys under the old DCID: useless. */
	dpq_conn_spec_drop(c);
	return 0;
}

/* Client: a Version Negotiation packet (RFC 9000 §6.2). */
static void
on_version_negotiation(struct dpq_conn *c, const struct dpq_pkt_hdr *h)
{
	/* §6.2: discard a VN once any other packet was processed, a Retry
	 * included (a forged VN after it must not end the attempt). */
	if (c->role != DPQ_ROLE_CLIENT || c->retry_done ||
	    c->largest_rx_pn[DPQ_PN_SPACE_INITIAL] != DPQ_PN_NONE ||
	    c->largest_rx_pn[DPQ_PN_SPACE_HANDSHAKE] != DPQ_PN_NONE ||
	    dpq_pkt_vn_has_version(h, c->version))
		return;		/* ignore (§6.2) */
	c->close.error_code = DPQ_TE_NO_ERROR;
	snprintf(c->close.reason, sizeof(c->close.reason),
			"server supports no common version");
	c->close.remote = true;
	c->close.version_mismatch = true;
	dpq_conn_set_state(c, DPQ_CONN_CLOSED);
}

/* 0-RTT packets may wait for their key in at most this many slots: the
 * others keep room for the client's Handshake packets. */
#define RX_BUFFERED_0RTT	(DPQ_CONN_RX_BUFFERED / 2)

static int
buffer_packet(struct dpq_conn *c, const uint8_t *pkt, size_t len,
		size_t dgram_len, const struct dpq_rx_info *ri)
{
	struct dpq_rx_buffered *b;
	unsigned int i, early = 0;

	if (c->n_rx_buffered >= DPQ_CONN_RX_BUFFERED ||
	    len > sizeof(b->data))
		return -ENOBUFS;
	if ((pkt[0] & 0xb0) == 0x90) {	/* long header, type 0-RTT */
		for (i = 0; i < c->n_rx_buffered; i++)
			early += (c->rx_buffered[i].data[0] & 0xb0) == 0x90;
		if (early >= RX_BUFFERED_0RTT)
			return -ENOBUFS;
	}
	/* Memory only while packets wait (most connections: never). */
	if (c->rx_buffered == NULL) {
		c->rx_buffered = dpq_mem_alloc(&c->mem, DPQ_CONN_RX_BUFFERED *
				sizeof(*c->rx_buffered));
		if (c->rx_buffered == NULL)
			return -ENOMEM;
	}
	b = &c->rx_buffered[c->n_rx_buffered++];
	memcpy(b->data, pkt, len);
	b->len = (uint16_t)len;
	b->dgram_len = (uint16_t)dgram_len;
	/* Held packets arrive before the handshake is confirmed, so on
	 * the one path there is: without ri, that path's tuple. */
	b->ri.tuple = ri ? ri->tuple : *dpq_conn_active_tuple(c);
	b->ri.ecn = ri ? ri->ecn : 0;
	return 0;
}

/* Can packets of epoch e be processed now? RFC 9001 §5.7: endpoints in
 * either role holding 1-RTT keys still must not process 1-RTT packets
 * before their handshake completes, so they wait with the packets whose
 * keys have not arrived. For a client this also keeps a HANDSHAKE_DONE
 * from confirming (and dropping Handshake keys) before its own Finished
 * is sent (§4.1.2). */
static bool
rx_ready(const struct dpq_conn *c, enum dpq_epoch e)
{
	if (c->rx[e] == NULL)
		return false;
	/* 0-RTT: once the service said it accepted it (and for which
	 * application): the read key may come first. */
	if (e == DPQ_EPOCH_0RTT)
		return c->early_ready;
	return !(e == DPQ_EPOCH_1RTT && !c->hs_complete);
}

/* A 0-RTT packet no key will ever open: a client's (servers send none),
 * or a server's once its handshake completed without accepting 0-RTT,
 * or after the 0-RTT key went (RFC 9001 §4.9.3). */
static bool
early_dead(const struct dpq_conn *c)
{
	return c->role == DPQ_ROLE_CLIENT ||
		(c->hs_complete && c->rx[DPQ_EPOCH_0RTT] == NULL) ||
		(c->hs_complete && !c->early_ready);
}

int
dpq_conn_rx_prepare(struct dpq_conn *c, uint8_t *pkt, size_t len,
		struct dpq_pkt_hdr *h, struct dpq_open_op *op)
{
	enum dpq_epoch e;
	int rc;

	/* Key work between packets, never while one is opened (§9.5). */
	if (dpq_conn_unpark(c) != 0)
		return -ENOMEM;
	dpq_conn_keys_prepare(c);
	rc = dpq_pkt_parse(pkt, pkt + len, c->scid.len, h);
	if (rc != 0)
		return rc;
	if (h->type == DPQ_PKT_VN || h->type == DPQ_PKT_RETRY ||
	    h->type == DPQ_PKT_VERSION_UNKNOWN)
		return DPQ_CONN_RX_UNPROTECTED;	/* handled by dpq_conn_recv */
	if (h->type != DPQ_PKT_1RTT && h->version != c->version)
		return -EPROTO;
	e = dpq_pkt_type_epoch(h->type);
	if (e == DPQ_EPOCH_0RTT && early_dead(c))
		return -ENOKEY;		/* no 0-RTT: drop (§12.5) */
	if (c->b->pns[dpq_epoch_space(e)].discarded) {
		/* A client still sending Handshake packets a probe timeout
		 * after our HANDSHAKE_DONE has not received it (RFC 9001
		 * §4.9.2: it would have dropped its Handshake keys): send it
		 * again now rather than at our next PTO, which may have
		 * backed off to seconds, a bounded number of times (as RFC
		 * 9002 §6.2.3 does for CRYPTO data). Not sooner: what the
		 * client sent before HANDSHAKE_DONE reached it (its ACKs of
		 * our flight) arrives up to a round trip and an ACK delay
		 * later, and a round trip was not enough on a clean path
		 * (e2e_tshark_capture saw two). The packet cannot be
		 * authenticated (our keys are gone): at worst a forger
		 * spends the bound, on the validated path, within the
		 * congestion window. */
		if (e == DPQ_EPOCH_HANDSHAKE && c->role == DPQ_ROLE_SERVER &&
		    c->hs_complete && !c->handshake_done_acked &&
		    !c->handshake_done_pending &&
		    c->now - c->hsdone_sent_at >= dpq_conn_pto(c) &&
		    c->hsdone_resends < DPQ_CONN_EARLY_RESENDS) {
			c->hsdone_resends++;
			c->handshake_done_pending = true;
		}
		return -ENOKEY;
	}
	if (!rx_ready(c, e))
		return DPQ_CONN_RX_HELD;	/* keys not here yet: buffer */
	memset(op, 0, sizeof(*op));
	op->key = c->rx[e];
	op->pkt = pkt;
	op->len = (uint16_t)h->pkt_len;
	op->pn_offset = (uint16_t)h->pn_offset;
	op->largest_pn = c->largest_rx_pn[dpq_epoch_space(e)];
	return 0;
}

int
dpq_conn_rx_select_key(struct dpq_conn *c, const struct dpq_pkt_hdr *h,
		struct dpq_open_op *op)
{
	if (op->status != 0)
		return op->status;
	if (!dpq_conn_awake(c))
		return -ENOMEM;
	/* RFC 9001 §6: the key phase bit and packet number choose among
	 * the previous, current and next 1-RTT keys. */
	if (h->type == DPQ_PKT_1RTT)
		dpq_conn_keys_select(c, op);
	return 0;
}

/* RFC 9000 §9.1: frames that do not by themselves move a connection. */
static bool
is_probing_frame(uint64_t type)
{
	return type == DPQ_FT_PADDING || type == DPQ_FT_PATH_CHALLENGE ||
		type == DPQ_FT_PATH_RESPONSE ||
		type == DPQ_FT_NEW_CONNECTION_ID;
}

/* The frames of a packet of pkt_type, [p, end). Returns 0, or the error
 * of a frame that closed the connection or must drop the packet. */
static int
rx_frames(struct dpq_conn *c, enum dpq_pkt_type pkt_type, const uint8_t *p,
		const uint8_t *end, bool deliver[DPQ_EPOCH_COUNT],
		bool *eliciting, bool *non_probing, struct dpq_trace_pkt *tp,
		uint64_t now)
{
	enum dpq_epoch e = dpq_pkt_type_epoch(pkt_type);
	struct dpq_frame f;
	uint64_t xt;
	int rc;

	while (p < end) {
		const struct dpq_frame_info *fi;
		ssize_t n;

		/* The XOR-FEC extension's frames (docs/fec.md). */
		if (dpq_conn_fec_is_frame(c, p, end, &xt)) {
			n = dpq_conn_fec_on_frame(c, pkt_type, p, end, now);
			if (n < 0) {
				close_err(c, (int)n, xt, "XOR-FEC frame");
				return (int)n;
			}
			if (xt == DPQ_FEC_FT_REPAIR)
				*eliciting = true;
			*non_probing = true;
			p += n;
			continue;
		}
		n = dpq_frame_decode(p, end, &f);
		if (n < 0) {
			close_err(c, (int)n, 0, "frame encoding");
			return (int)n;
		}
		fi = dpq_frame_info(f.type);
		if (!dpq_frame_allowed(f.type, pkt_type) ||
		    (c->role == DPQ_ROLE_SERVER && fi != NULL &&
		     (fi->flags & DPQ_FTF_SERVER_ONLY))) {
			close_te(c, DPQ_TE_PROTOCOL_VIOLATION, f.type,
					"frame not allowed here");
			return -EPROTO;
		}
		if (dpq_frame_is_ack_eliciting(f.type))
			*eliciting = true;
		if (c->trace != NULL)
			dpq_conn_trace_frame(tp, &f);
		if (!is_probing_frame(f.type))
			*non_probing = true;
		rc = on_frame(c, e, &f, deliver, now);
		if (rc != 0)
			return rc;
		if (c->state >= DPQ_CONN_DRAINING)
			break;
		p += n;
	}
	return 0;
}

static int
rx_process(struct dpq_conn *c, const struct dpq_pkt_hdr *h,
		const struct dpq_open_op *op, size_t dgram_len,
		const struct dpq_rx_info *ri, uint64_t now)
{
	bool deliver[DPQ_EPOCH_COUNT] = { false };
	enum dpq_epoch e = dpq_pkt_type_epoch(h->type);
	enum dpq_pn_space sp = dpq_epoch_space(e);
	const uint8_t *p, *end;
	bool eliciting = false, non_probing = false, newest;
	struct dpq_trace_pkt tp;
	struct dpq_path *path;
	int rc, i;

	if (op->status != 0)
		return op->status;
	/* RFC 9000 §14.1: a server discards Initial packets in datagrams
	 * smaller than 1200 bytes. */
	if (c->role == DPQ_ROLE_SERVER && h->type == DPQ_PKT_INITIAL &&
	    dgram_len < DPQ_MIN_INITIAL_DATAGRAM)
		return -EMSGSIZE;
	if (c->state == DPQ_CONN_DRAINING || c->state == DPQ_CONN_CLOSED)
		return -EPIPE;
	if (c->state == DPQ_CONN_CLOSING) {
		/* §10.2.1: answer with CONNECTION_CLOSE again, not to every
		 * packet: 1, 2, 4, 8... */
		c->close_rx_count++;
		if ((c->close_rx_count & (c->close_rx_count - 1)) == 0)
			c->close_pending = true;
		return -EPIPE;
	}
	/* §17.2, §17.3.1: reserved bits after removing protection. */
	if (dpq_pkt_check_reserved_bits(op->first_byte) != 0) {
		close_te(c, DPQ_TE_PROTOCOL_VIOLATION, 0,
				"reserved bits set");
		return -EPROTO;
	}
	if (dpq_ackr_is_duplicate(c->b->pns[sp].ackr, op->pn))
		return -EALREADY;	/* §12.3 */
	if (e == DPQ_EPOCH_0RTT) {
		/* The server's cap on 0-RTT work: a packet over it is
		 * dropped unacknowledged, its data comes again in 1-RTT. */
		if (c->early_rx_bytes + op->len > c->conf.max_early_data) {
			c->b->stats.early_dropped++;
			return -ENOBUFS;
		}
		c->early_rx_bytes += op->len;
	}
	/* The path it came on; a new one only for an authenticated packet
	 * (§9.3), and none before the handshake is confirmed (§9). */
	path = dpq_conn_path_for_rx(c, ri, dgram_len, now);
	if (path == NULL) {
		c->b->stats.rx_unknown_path++;
		return -ENETUNREACH;
	}
	newest = c->largest_rx_pn[sp] == DPQ_PN_NONE ||
		op->pn > c->largest_rx_pn[sp];
	if (e == DPQ_EPOCH_1RTT) {
		rc = dpq_conn_keys_on_open(c, op, now);
		if (rc != 0)
			return rc;
	}

	if (c->role == DPQ_ROLE_CLIENT && h->type == DPQ_PKT_INITIAL) {
		struct dpq_cid scid;

		dpq_cid_set(&scid, h->scid, h->scid_len);
		if (!c->peer_scid_known) {
			/* §7.2: switch to the server's chosen CID. */
			c->peer_scid_known = true;
			c->peer_initial_scid = scid;
			c->dcid = scid;
		} else if (!dpq_cid_eq(&scid, &c->peer_initial_scid)) {
			return -EINVAL;	/* §7.2: discard */
		}
	}

	p = op->pkt + op->pn_offset + op->pn_len;
	end = op->pkt + op->len - DPQ_CRYPTO_TAG_LEN;
	if (p >= end) {
		/* §12.4: a packet without frames. */
		close_te(c, DPQ_TE_PROTOCOL_VIOLATION, 0, "empty packet");
		return -EPROTO;
	}
	/* RFC 9000 §8.1: a packet protected with Handshake keys proves the
	 * client's address; RFC 9001 §4.9.1: the server then drops its
	 * Initial keys. Done once the packet is authenticated, before its
	 * frames: a frame dropped for want of buffer memory (the shard's
	 * budget, engine/membudget.h) leaves the packet unacknowledged, and
	 * the Initial state freed here is what lets its retransmission in. */
	if (c->role == DPQ_ROLE_SERVER && h->type == DPQ_PKT_HANDSHAKE) {
		dpq_conn_path_validated(c, path, now);
		dpq_conn_discard_epoch(c, DPQ_EPOCH_INITIAL, now);
	}
	memset(&tp, 0, sizeof(tp));
	if (c->fec != NULL)
		c->fec->rx_has_repair = false;
	c->rx_path = path;
	dpq_cid_set(&c->rx_pkt_dcid, h->dcid, h->dcid_len);
	rc = rx_frames(c, h->type, p, end, deliver, &eliciting, &non_probing,
			&tp, now);
	if (rc != 0)
		return rc;

	/* RFC 9000 §13.4.1: count the IP ECN codepoint of each packet. */
	if (sp == DPQ_PN_SPACE_APP)
		c->rx_last_ecn = ri != NULL ? (uint8_t)(ri->ecn & 3) : 0;
	if (dpq_ackr_record(c->b->pns[sp].ackr, op->pn, eliciting,
			ri != NULL ? (enum dpq_ecn)(ri->ecn & 3) :
			DPQ_ECN_NOT_ECT, now) == 0 &&
	    (c->largest_rx_pn[sp] == DPQ_PN_NONE ||
	     op->pn > c->largest_rx_pn[sp]))
		c->largest_rx_pn[sp] = op->pn;
	/* XOR-FEC: the plaintext joins its group while it is still here. */
	if (e == DPQ_EPOCH_1RTT && c->fec != NULL)
		dpq_conn_fec_on_rx(c, op->pn, p, (size_t)(end - p), now);
	c->b->stats.pkts_recv++;
	if (c->trace != NULL)
		dpq_conn_trace_received(c, e, op->pn,
				(uint32_t)op->len, &tp);
	dpq_conn_on_peer_activity(c, now);
	if (h->type == DPQ_PKT_HANDSHAKE)
		dpq_conn_on_handshake_packet(c);

	if (h->type == DPQ_PKT_1RTT)
		dpq_conn_path_on_packet(c, path, h->dcid, h->dcid_len,
				non_probing, newest, now);
	for (i = 0; i < DPQ_EPOCH_COUNT; i++)
		if (deliver[i])
			dpq_conn_deliver_crypto(c, (enum dpq_epoch)i);
	return 0;
}

/* Count a datagram's bytes to the path it came on, if that is known
 * (a new path is credited once it exists, dpq_conn_path_for_rx). */
static void
credit_dgram(struct dpq_conn *c, const struct dpq_rx_info *ri, size_t len,
		uint64_t now)
{
	struct dpq_path *p = dpq_conn_path_find(c, ri ? &ri->tuple : NULL);

	if (p != NULL)
		dpq_conn_path_credit(c, p, len, now);
}

static int
rx_process_outer(struct dpq_conn *c, const struct dpq_pkt_hdr *h,
		const struct dpq_open_op *op, size_t dgram_len,
		const struct dpq_rx_info *ri, uint64_t now)
{
	bool outer = !c->in_rx;
	int rc;

	c->in_rx = true;
	rc = rx_process(c, h, op, dgram_len, ri, now);
	if (rc != 0 && c->trace != NULL)
		dpq_conn_trace_dropped(c, DPQ_TRACE_PACKET_DROPPED, op->pkt,
				op->len, op->status == 0 ? op->pn : UINT64_MAX,
				dpq_conn_drop_trigger(rc));
	if (outer) {
		c->in_rx = false;
		/* Keys that this packet's CRYPTO data made the handshake
		 * service install at once (in-thread TLS) may release held
		 * packets. */
		dpq_conn_replay_buffered(c, now);
	}
	return rc;
}

int
dpq_conn_rx_process(struct dpq_conn *c, const struct dpq_pkt_hdr *h,
		const struct dpq_open_op *op, size_t dgram_len,
		const struct dpq_rx_info *ri, uint64_t now)
{
	if (!dpq_conn_awake(c))
		return -ENOMEM;
	c->now = now;
	c->b->stats.bytes_recv += dgram_len;
	credit_dgram(c, ri, dgram_len, now);
	return rx_process_outer(c, h, op, dgram_len, ri, now);
}

/* A 1-RTT packet the XOR-FEC receiver rebuilt (docs/fec.md §7): its
 * frames go through the normal handlers and it is acknowledged, as if it
 * had arrived. */
int
dpq_conn_rx_rebuilt(struct dpq_conn *c, uint64_t pn, const uint8_t *payload,
		size_t len, uint64_t now)
{
	bool deliver[DPQ_EPOCH_COUNT] = { false };
	struct dpq_ackr *a = c->b->pns[DPQ_PN_SPACE_APP].ackr;
	bool eliciting = false, non_probing = false;
	struct dpq_trace_pkt tp;
	int rc, i;

	/* It may have arrived after all, before its group was known. */
	if (c->state != DPQ_CONN_ESTABLISHED ||
	    dpq_ackr_is_duplicate(a, pn))
		return -EALREADY;
	memset(&tp, 0, sizeof(tp));
	/* Its path and DCID are unknown: path frames answer on the active
	 * path. */
	c->rx_path = &c->b->paths[c->active];
	c->rx_pkt_dcid.len = 0;
	rc = rx_frames(c, DPQ_PKT_1RTT, payload, payload + len, deliver,
			&eliciting, &non_probing, &tp, now);
	if (rc != 0)
		return rc;
	/* Its IP header is gone: count it with the codepoint the peer's
	 * packets carry now, or the peer's ECN validation (RFC 9000
	 * §13.4.2.1) would see a marked packet acknowledged uncounted. */
	if (dpq_ackr_record(a, pn, eliciting, (enum dpq_ecn)c->rx_last_ecn,
			now) == 0 &&
	    (c->largest_rx_pn[DPQ_PN_SPACE_APP] == DPQ_PN_NONE ||
	     pn > c->largest_rx_pn[DPQ_PN_SPACE_APP]))
		c->largest_rx_pn[DPQ_PN_SPACE_APP] = pn;
	c->b->stats.pkts_recv++;
	if (c->trace != NULL)
		dpq_conn_trace_received(c, DPQ_EPOCH_1RTT, pn, (uint32_t)len,
				&tp);
	for (i = 0; i < DPQ_EPOCH_COUNT; i++)
		if (deliver[i])
			dpq_conn_deliver_crypto(c, (enum dpq_epoch)i);
	return 0;
}

/* RFC 9000 §10.3.1: does this datagram end with a token of the peer's?
 * Only the tokens of CIDs we sent with and did not retire count, and the
 * comparison must not leak the token through timing: every slot is
 * compared in constant time (gnutls_memcmp), with no early exit. */
static bool
is_stateless_reset(const struct dpq_conn *c, const uint8_t *d, size_t len)
{
	const uint8_t *tail = d + len - DPQ_RESET_TOKEN_LEN;
	unsigned int i, match = 0;

	if (len < 21)
		return false;
	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++) {
		const struct dpq_peer_cid *p = &c->peer_cids[i];
		unsigned int eq = gnutls_memcmp(p->reset_token, tail,
				DPQ_RESET_TOKEN_LEN) == 0;

		match |= eq & (p->used & p->has_token & p->sent_on);
	}
	return match != 0;
}

void
dpq_conn_rx_failed(struct dpq_conn *c, const uint8_t *pkt, size_t len,
		uint64_t now)
{
	if (dpq_conn_is_closing(c) || !dpq_conn_awake(c))
		return;
	if (now > c->now)
		c->now = now;	/* the first call on it in a shard's batch */
	if (c->trace != NULL)
		dpq_conn_trace_dropped(c, DPQ_TRACE_PACKET_DROPPED, pkt,
				(uint32_t)len, UINT64_MAX,
				DPQ_TRACE_DROP_DECRYPTION_FAILURE);
	/* A 0-RTT packet: neither a stateless reset nor a 1-RTT key's
	 * integrity failure (RFC 9001 §6.6). */
	if (len == 0 || (pkt[0] & 0x80))
		return;
	dpq_conn_keys_on_auth_fail(c);
	if (dpq_conn_is_closing(c) || !is_stateless_reset(c, pkt, len))
		return;
	c->close.remote = true;
	c->close.stateless_reset = true;
	snprintf(c->close.reason, sizeof(c->close.reason), "stateless reset");
	dpq_conn_enter_draining(c, now);
}

enum rx_outcome {
	RX_DROPPED = 0,
	RX_ACCEPTED,
	RX_HELD,	/* kept until its keys or the handshake are ready */
};

/* Unprotect and process one packet. */
static enum rx_outcome
recv_one(struct dpq_conn *c, uint8_t *pkt, size_t left, size_t dgram_len,
		const struct dpq_rx_info *ri, struct dpq_pkt_hdr *h,
		uint64_t now, bool *stop)
{
	struct dpq_open_op op;
	int rc;

	rc = dpq_conn_rx_prepare(c, pkt, left, h, &op);
	if (rc == DPQ_CONN_RX_UNPROTECTED) {
		if (h->type == DPQ_PKT_RETRY) {
			on_retry(c, pkt, h);
		} else if (h->type == DPQ_PKT_VN) {
			on_version_negotiation(c, h);
		}
		*stop = true;
		return RX_DROPPED;
	}
	if (rc == DPQ_CONN_RX_HELD) {
		/* RFC 9002 §6.2.3: Handshake packets before any Initial from
		 * the server mean its Initial was lost: our ClientHello may
		 * not have arrived either. */
		if (c->role == DPQ_ROLE_CLIENT && h->type == DPQ_PKT_HANDSHAKE &&
		    c->largest_rx_pn[DPQ_PN_SPACE_INITIAL] == DPQ_PN_NONE)
			dpq_conn_resend_crypto_early(c);
		rc = buffer_packet(c, pkt, h->pkt_len, dgram_len, ri);
		if (c->trace != NULL)
			dpq_conn_trace_dropped(c, rc == 0 ?
				DPQ_TRACE_PACKET_BUFFERED :
				DPQ_TRACE_PACKET_DROPPED, pkt,
				(uint32_t)h->pkt_len, UINT64_MAX,
				rc == 0 ? DPQ_TRACE_DROP_GENERAL :
				DPQ_TRACE_DROP_DOS_PREVENTION);
		return rc == 0 ? RX_HELD : RX_DROPPED;
	}
	if (rc != 0) {
		if (c->trace != NULL)
			dpq_conn_trace_dropped(c, DPQ_TRACE_PACKET_DROPPED,
				pkt, (uint32_t)(h->pkt_len ? h->pkt_len : left),
				UINT64_MAX, dpq_conn_drop_trigger(rc));
		/* Without a parsed header the rest of the datagram is lost
		 * (§12.2); other refusals skip just this packet. */
		if (dpq_err_is_codec(rc))
			*stop = true;
		return RX_DROPPED;
	}
	dpq_crypto_unprotect_hp_burst(c->crypto, &op, 1);
	dpq_conn_rx_select_key(c, h, &op);
	if (op.status == 0)
		dpq_crypto_open_burst(c->crypto, &op, 1);
	if (op.status != 0) {
		if (h->type == DPQ_PKT_1RTT) {
			dpq_conn_rx_failed(c, pkt, left, now);
			*stop = c->state >= DPQ_CONN_DRAINING;
		} else {
			if (c->trace != NULL)
				dpq_conn_trace_dropped(c,
					DPQ_TRACE_PACKET_DROPPED, pkt,
					(uint32_t)h->pkt_len, UINT64_MAX,
					dpq_conn_drop_trigger(op.status));
			if (op.status == -EBADMSG)
				dpq_conn_keys_on_auth_fail(c);
		}
		return RX_DROPPED;
	}
	return rx_process_outer(c, h, &op, dgram_len, ri, now) == 0 ?
		RX_ACCEPTED : RX_DROPPED;
}

/* One pass over the held packets: those whose keys have arrived, or
 * (server) whose handshake has completed since, are processed in arrival
 * order; the others stay held. Returns how many were taken. */
static unsigned int
replay_pass(struct dpq_conn *c, uint64_t now)
{
	struct dpq_rx_buffered tmp[DPQ_CONN_RX_BUFFERED];
	unsigned int i, n = c->n_rx_buffered, kept = 0, ready = 0;
	bool batch;
	bool take[DPQ_CONN_RX_BUFFERED];

	for (i = 0; i < n; i++) {
		struct dpq_rx_buffered *b = &c->rx_buffered[i];
		struct dpq_pkt_hdr h;
		enum dpq_epoch e;

		take[i] = true;	/* unparsable or keys discarded: drop */
		if (dpq_pkt_parse(b->data, b->data + b->len, c->scid.len,
				&h) == 0) {
			e = dpq_pkt_type_epoch(h.type);
			take[i] = rx_ready(c, e) ||
				c->b->pns[dpq_epoch_space(e)].discarded ||
				(e == DPQ_EPOCH_0RTT && early_dead(c));
		}
		ready += take[i];
	}
	if (ready == 0)
		return 0;
	ready = 0;
	for (i = 0; i < n; i++) {
		if (take[i])
			tmp[ready++] = c->rx_buffered[i];
		else
			c->rx_buffered[kept++] = c->rx_buffered[i];
	}
	c->n_rx_buffered = kept;
	if (kept == 0) {
		dpq_mem_free(&c->mem, c->rx_buffered);
		c->rx_buffered = NULL;
	}
	/* tmp[] is gone when we return: XOR-FEC accumulates these now,
	 * even inside a caller's batch (dpq_conn_rx_begin). */
	batch = c->fec != NULL && c->fec->rx_batch;
	if (batch)
		dpq_conn_rx_end(c);
	for (i = 0; i < ready && c->state < DPQ_CONN_DRAINING; i++) {
		struct dpq_pkt_hdr h;
		bool stop = false;

		memset(&h, 0, sizeof(h));
		if (recv_one(c, tmp[i].data, tmp[i].len, tmp[i].dgram_len,
				&tmp[i].ri, &h, now, &stop) == RX_DROPPED)
			c->b->stats.pkts_dropped++;
	}
	if (batch)
		dpq_conn_rx_begin(c);
	return ready;
}

/* Held packets whose keys or handshake are ready now (RFC 9001 §4.1.4,
 * §5.7). A replayed packet can itself complete the handshake and so
 * release the others: passes repeat while they make progress. Not
 * re-entered from the packets it processes. */
void
dpq_conn_replay_buffered(struct dpq_conn *c, uint64_t now)
{
	if (c->n_rx_buffered == 0 || c->in_rx)
		return;
	c->in_rx = true;
	while (c->n_rx_buffered > 0 && replay_pass(c, now) > 0)
		;
	c->in_rx = false;
}

int
dpq_conn_recv(struct dpq_conn *c, uint8_t *dgram, size_t len,
		const struct dpq_rx_info *ri, uint64_t now)
{
	const uint8_t *first_dcid = NULL;
	size_t off = 0, first_dcid_len = 0;
	int accepted = 0;
	bool stop = false;

	if (c->state == DPQ_CONN_CLOSED || !dpq_conn_awake(c))
		return 0;
	c->now = now;
	dpq_conn_replay_buffered(c, now);
	c->b->stats.bytes_recv += len;
	/* RFC 9000 §8.1: bytes received on a path earn it 3x to send. */
	credit_dgram(c, ri, len, now);
	while (off < len && !stop) {
		struct dpq_pkt_hdr h;
		enum rx_outcome r;

		memset(&h, 0, sizeof(h));
		if (off > 0 && (dpq_pkt_parse(dgram + off, dgram + len,
				c->scid.len, &h) != 0 ||
				h.dcid_len != first_dcid_len ||
				memcmp(h.dcid, first_dcid, h.dcid_len) != 0)) {
			/* RFC 9000 §12.2: ignore a coalesced packet whose
			 * DCID differs from the first packet's (and stop at
			 * one that does not parse). */
			c->b->stats.pkts_dropped++;
			if (c->trace != NULL)
				dpq_conn_trace_dropped(c,
					DPQ_TRACE_PACKET_DROPPED, dgram + off,
					(uint32_t)(h.pkt_len ? h.pkt_len :
						len - off), UINT64_MAX,
					DPQ_TRACE_DROP_UNKNOWN_CID);
			if (h.pkt_len == 0)
				break;
			off += h.pkt_len;
			continue;
		}
		r = recv_one(c, dgram + off, len - off, len, ri, &h, now,
				&stop);
		if (off == 0) {
			/* Decryption leaves the DCID bytes as they were. */
			first_dcid = h.dcid;
			first_dcid_len = h.dcid_len;
		}
		accepted += r == RX_ACCEPTED;
		if (r == RX_DROPPED)
			c->b->stats.pkts_dropped++;
		if (h.pkt_len == 0)
			break;
		off += h.pkt_len;
	}
	return accepted;
}
