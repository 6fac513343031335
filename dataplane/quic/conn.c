/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection life cycle: creation with Initial keys (RFC 9001 §5.2), the
 * state machine and its one writer, keys arriving from the handshake
 * service and their discarding (RFC 9001 §4.9), the handshake's outcome,
 * timers (loss detection, ACK delay, idle timeout §10.1, closing and
 * draining §10.2) and the public getters. Shard only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/engine/errors.h"
#include "dataplane/quic/conn_int.h"

static const char *const state_names[DPQ_CONN_STATE_COUNT] = {
	[DPQ_CONN_HANDSHAKING] = "handshaking",
	[DPQ_CONN_ESTABLISHED] = "established",
	[DPQ_CONN_CLOSING] = "closing",
	[DPQ_CONN_DRAINING] = "draining",
	[DPQ_CONN_CLOSED] = "closed",
};

/* Legal transitions: closing may still become draining when the peer's
 * CONNECTION_CLOSE arrives (§10.2.2), never the other way. */
static const bool state_ok[DPQ_CONN_STATE_COUNT][DPQ_CONN_STATE_COUNT] = {
	[DPQ_CONN_HANDSHAKING] = {
		[DPQ_CONN_ESTABLISHED] = true, [DPQ_CONN_CLOSING] = true,
		[DPQ_CONN_DRAINING] = true, [DPQ_CONN_CLOSED] = true },
	[DPQ_CONN_ESTABLISHED] = {
		[DPQ_CONN_CLOSING] = true, [DPQ_CONN_DRAINING] = true,
		[DPQ_CONN_CLOSED] = true },
	[DPQ_CONN_CLOSING] = {
		[DPQ_CONN_DRAINING] = true, [DPQ_CONN_CLOSED] = true },
	[DPQ_CONN_DRAINING] = { [DPQ_CONN_CLOSED] = true },
};

const char *
dpq_conn_state_str(enum dpq_conn_state s)
{
	return (unsigned int)s < DPQ_CONN_STATE_COUNT ? state_names[s] : "?";
}

void
dpq_conn_set_state(struct dpq_conn *c, enum dpq_conn_state to)
{
	enum dpq_conn_state from = c->state;

	if (from == to || !state_ok[from][to])
		return;
	c->state = to;
	/* One CONN_CLOSED per connection, when it starts to end. */
	if (from < DPQ_CONN_CLOSING && to >= DPQ_CONN_CLOSING &&
	    c->trace != NULL)
		dpq_conn_trace_closed(c, NULL);
	if (to >= DPQ_CONN_CLOSING && c->app != NULL &&
	    c->app->on_closed != NULL)
		c->app->on_closed(c);
}

static void
conf_defaults(struct dpq_conn_conf *d, const struct dpq_conn_conf *s)
{
	*d = *s;
#define DEF(f, v) do { if (d->f == 0) d->f = (v); } while (0)
	DEF(version, DPQ_VERSION_1);
	DEF(idle_timeout_ms, 30000);
	/* The deadline guards a server's slot against half-open
	 * connections (RFC 9000 §21.6); a client holds no one's slot, and
	 * one that gave up after 10 s gave up a handshake still going on
	 * a lossy path (dpquic-client, 30% loss each way: 1 of 12 in a
	 * run). It waits for the idle timeout (RFC 9000 §10.1) instead. */
	if (d->handshake_timeout_ms == 0)
		d->handshake_timeout_ms = d->role == DPQ_ROLE_CLIENT ?
			d->idle_timeout_ms : DPQ_CONN_HANDSHAKE_TIMEOUT_MS;
	DEF(max_data, 1 << 20);
	DEF(max_data_max, 64 << 20);
	DEF(max_stream_data, 256 << 10);
	DEF(max_stream_data_max, 16 << 20);
	DEF(max_streams_bidi, 100);
	DEF(max_streams_uni, 100);
	DEF(send_buffer, 4 << 20);
	DEF(max_udp_payload, 1452);
	DEF(max_ack_delay_ms, 25);
	DEF(scid_len, 8);
	DEF(max_early_data, 1 << 20);
#undef DEF
	if (d->max_data_max < d->max_data)
		d->max_data_max = d->max_data;
	if (d->max_stream_data_max < d->max_stream_data)
		d->max_stream_data_max = d->max_stream_data;
	/* Keep ms * 1000 inside 64 bits (a year is plenty). */
	if (d->idle_timeout_ms > 365ull * 86400 * 1000)
		d->idle_timeout_ms = 365ull * 86400 * 1000;
	if (d->handshake_timeout_ms > d->idle_timeout_ms)
		d->handshake_timeout_ms = d->idle_timeout_ms;
	if (d->max_udp_payload < DPQ_MIN_INITIAL_DATAGRAM)
		d->max_udp_payload = DPQ_MIN_INITIAL_DATAGRAM;
}

/*
 * The allocator of received stream data (issue 7): out-of-order frames
 * (one byte per 4 KiB chunk, thousands of holes per stream, over many
 * streams) pinned megabytes for kilobytes of flow-control credit. What
 * the streams' receive buffers hold, chunks and hole tracking alike, is
 * charged here and bounded by the connection's receive window (the credit
 * it may give, auto-tuned) plus DPQ_CONN_RX_MEM_SLACK. A refusal drops the
 * packet unacknowledged.
 */
struct rx_blk {
	uint64_t size;
	uint64_t pad;		/* keeps the data 16-byte aligned */
};

static void *
rx_alloc(void *ctx, size_t size)
{
	struct dpq_conn *c = ctx;
	uint64_t need = size + sizeof(struct rx_blk);
	struct rx_blk *b;

	if (c->rx_mem_used + need > c->rx_fc.window + DPQ_CONN_RX_MEM_SLACK) {
		c->rx_mem_refused++;
		return NULL;
	}
	b = dpq_mem_alloc(&c->buf_mem, need);
	if (b == NULL)
		return NULL;
	b->size = need;
	c->rx_mem_used += need;
	return b + 1;
}

static void
rx_free(void *ctx, void *p)
{
	struct dpq_conn *c = ctx;
	struct rx_blk *b;

	if (p == NULL)
		return;
	b = (struct rx_blk *)p - 1;
	c->rx_mem_used -= b->size;
	dpq_mem_free(&c->buf_mem, b);
}

void
dpq_conn_conf_fill(struct dpq_conn_conf *out, const struct dpq_conn_conf *in)
{
	conf_defaults(out, in);
}

struct dpq_pp_key *
dpq_conn_key_alloc(struct dpq_conn *c)
{
	/* Keys hold 64-byte aligned ipsec-mb tables; dpq_mem promises only
	 * malloc alignment, so over-allocate and keep the raw pointer in
	 * front of the aligned one. */
	uint8_t *raw = dpq_mem_alloc(&c->mem, sizeof(struct dpq_pp_key) + 64 +
			sizeof(void *));
	uintptr_t a;

	if (raw == NULL)
		return NULL;
	a = ((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63;
	((void **)a)[-1] = raw;
	memset((void *)a, 0, sizeof(struct dpq_pp_key));
	return (struct dpq_pp_key *)a;
}

void
dpq_conn_key_free(struct dpq_conn *c, struct dpq_pp_key **kp)
{
	if (*kp == NULL)
		return;
	dpq_pp_key_destroy(*kp);
	dpq_mem_free(&c->mem, ((void **)*kp)[-1]);
	*kp = NULL;
}

/* RFC 9000 §7.4.1: the limits a client may use in 0-RTT, which a server
 * that accepts 0-RTT must not lower. */
static void
early_limits(const struct dpq_tparams *tp, uint64_t v[7])
{
	v[0] = tp->active_connection_id_limit;
	v[1] = tp->initial_max_data;
	v[2] = tp->initial_max_stream_data_bidi_local;
	v[3] = tp->initial_max_stream_data_bidi_remote;
	v[4] = tp->initial_max_stream_data_uni;
	v[5] = tp->initial_max_streams_bidi;
	v[6] = tp->initial_max_streams_uni;
}

/* Client: the server's remembered parameters (a blob that decodes as a
 * server's) give the flow-control credit of 0-RTT (§7.4.1); the others
 * (ack_delay_exponent, max_ack_delay, CIDs, reset token) are not used. A
 * blob that does not decode means no 0-RTT, never an error. */
static void
early_remember(struct dpq_conn *c, const uint8_t *blob, size_t len)
{
	struct dpq_tparams tp;

	if (dpq_tparams_decode(blob, blob + len, DPQ_ROLE_SERVER, NULL, 0,
			&tp) != 0)
		return;
	early_limits(&tp, c->early_limit);
	c->b->peer_tp.initial_max_data = tp.initial_max_data;
	c->b->peer_tp.initial_max_stream_data_bidi_local =
		tp.initial_max_stream_data_bidi_local;
	c->b->peer_tp.initial_max_stream_data_bidi_remote =
		tp.initial_max_stream_data_bidi_remote;
	c->b->peer_tp.initial_max_stream_data_uni =
		tp.initial_max_stream_data_uni;
	c->b->peer_tp.initial_max_streams_bidi = tp.initial_max_streams_bidi;
	c->b->peer_tp.initial_max_streams_uni = tp.initial_max_streams_uni;
	c->b->peer_tp.active_connection_id_limit = tp.active_connection_id_limit;
	c->early_tp = true;
}

/* Flow control from the peer's parameters (remembered or real). */
static void
apply_peer_limits(struct dpq_conn *c)
{
	dpq_flow_tx_on_max(&c->tx_fc, c->b->peer_tp.initial_max_data);
	dpq_streams_tx_on_max(&c->streams_tx[0],
			c->b->peer_tp.initial_max_streams_bidi);
	dpq_streams_tx_on_max(&c->streams_tx[1],
			c->b->peer_tp.initial_max_streams_uni);
}

static void
build_local_tparams(struct dpq_conn *c, const struct dpq_conn_init *in)
{
	struct dpq_tparams *tp = &c->hss->local_tp;

	dpq_tparams_init_defaults(tp);
#define SET(id, field, v) do { tp->field = (v); \
	tp->present |= DPQ_TP_BIT(id); } while (0)
	SET(DPQ_TP_MAX_IDLE_TIMEOUT, max_idle_timeout, c->conf.idle_timeout_ms);
	SET(DPQ_TP_MAX_UDP_PAYLOAD_SIZE, max_udp_payload_size,
			c->conf.max_udp_payload);
	SET(DPQ_TP_INITIAL_MAX_DATA, initial_max_data, c->conf.max_data);
	SET(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
			initial_max_stream_data_bidi_local,
			c->conf.max_stream_data);
	SET(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
			initial_max_stream_data_bidi_remote,
			c->conf.max_stream_data);
	SET(DPQ_TP_INITIAL_MAX_STREAM_DATA_UNI, initial_max_stream_data_uni,
			c->conf.max_stream_data);
	SET(DPQ_TP_INITIAL_MAX_STREAMS_BIDI, initial_max_streams_bidi,
			c->conf.max_streams_bidi);
	SET(DPQ_TP_INITIAL_MAX_STREAMS_UNI, initial_max_streams_uni,
			c->conf.max_streams_uni);
	SET(DPQ_TP_MAX_ACK_DELAY, max_ack_delay, c->conf.max_ack_delay_ms);
	SET(DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT, active_connection_id_limit,
			DPQ_CONN_PEER_CIDS);
	SET(DPQ_TP_INITIAL_SCID, initial_scid, c->scid);
	if (c->role == DPQ_ROLE_SERVER) {
		/* RFC 9000 §7.3: the server echoes the client's first DCID,
		 * and after a Retry names the Retry's SCID. */
		SET(DPQ_TP_ORIGINAL_DCID, original_dcid,
				in->after_retry ? in->odcid : in->dcid);
		if (in->after_retry)
			SET(DPQ_TP_RETRY_SCID, retry_scid, in->dcid);
		memcpy(tp->stateless_reset_token, in->reset_token,
				DPQ_RESET_TOKEN_LEN);
		tp->present |= DPQ_TP_BIT(DPQ_TP_STATELESS_RESET_TOKEN);
	}
#undef SET
}

int
dpq_conn_create(const struct dpq_conn_init *in, struct dpq_conn **out)
{
	static const struct dpq_mem libc = DPQ_MEM_LIBC;
	const struct dpq_mem *mem;
	struct dpq_loss_conf lc = { 0 };
	struct dpq_cc_conf ccc = { 0 };
	const struct dpq_cc_ops *cc_ops;
	struct dpq_conn *c;
	bool server;
	int i, rc;

	if (in == NULL || out == NULL || in->conf == NULL ||
	    in->crypto == NULL || in->hs_ops == NULL ||
	    in->scid.len > DPQ_MAX_CID_LEN || in->dcid.len > DPQ_MAX_CID_LEN)
		return -EINVAL;
	/* RFC 9000 §7.2: a client's first DCID is at least 8 bytes. */
	if (in->conf->role == DPQ_ROLE_CLIENT && in->dcid.len < 8)
		return -EINVAL;
	if ((unsigned int)in->conf->fec_cc >= DPQ_CC_FEC_REACTION_COUNT)
		return -EINVAL;
	cc_ops = dpq_cc_find(in->conf->cc_name ? in->conf->cc_name :
			"newreno");
	if (cc_ops == NULL)
		return -EINVAL;
	mem = in->mem ? in->mem : &libc;
	c = dpq_mem_alloc(mem, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->mem = *mem;
	c->buf_mem = in->buf_mem != NULL ? *in->buf_mem : *mem;
	c->rx_mem = (struct dpq_mem){ rx_alloc, rx_free, c };
	c->budget = in->budget;
	c->b = dpq_mem_alloc(mem, sizeof(*c->b));
	c->hss = dpq_mem_alloc(mem, sizeof(*c->hss));
	if (c->b == NULL || c->hss == NULL) {
		dpq_mem_free(mem, c->hss);
		dpq_mem_free(mem, c->b);
		dpq_mem_free(mem, c);
		return -ENOMEM;
	}
	memset(c->b, 0, sizeof(*c->b));
	memset(c->hss, 0, sizeof(*c->hss));
	c->b->pns[DPQ_PN_SPACE_INITIAL].ackr = &c->hss->ackr[0];
	c->b->pns[DPQ_PN_SPACE_HANDSHAKE].ackr = &c->hss->ackr[1];
	c->b->pns[DPQ_PN_SPACE_APP].ackr = &c->ackr_app;
	c->cs[DPQ_EPOCH_INITIAL] = &c->hss->cs[0];
	c->cs[DPQ_EPOCH_0RTT] = &c->hss->cs[1];
	c->cs[DPQ_EPOCH_HANDSHAKE] = &c->hss->cs[2];
	c->cs[DPQ_EPOCH_1RTT] = &c->cs_1rtt;
	conf_defaults(&c->conf, in->conf);
	dpq_conn_keys_init(c);
	c->role = in->conf->role;
	server = c->role == DPQ_ROLE_SERVER;
	c->version = c->conf.version;
	c->crypto = in->crypto;
	c->hs_ops = in->hs_ops;
	c->hs = in->hs;
	c->app = in->app;
	c->app_ctx = in->app_ctx;
	c->wake = in->wake;
	c->wake_arg = in->wake_arg;
	c->scid = in->scid;
	c->created = in->now;
	c->now = in->now;
	c->first_1rtt_pn = UINT64_MAX;
	c->max_udp_payload = DPQ_MIN_INITIAL_DATAGRAM;
	memcpy(c->reset_token, in->reset_token, DPQ_RESET_TOKEN_LEN);
	if (server) {
		c->dcid = in->peer_scid;
		c->peer_initial_scid = in->peer_scid;
		c->odcid = in->after_retry ? in->odcid : in->dcid;
		c->retry_done = in->after_retry;
	} else {
		c->dcid = in->dcid;
		c->odcid = in->dcid;
		if (in->token != NULL && in->token_len > 0 &&
		    in->token_len <= DPQ_CONN_TOKEN_MAX) {
			memcpy(c->hss->token, in->token, in->token_len);
			c->hss->token_len = in->token_len;
		}
	}
	/* A client that echoes our Retry token proved its address (RFC
	 * 9000 §8.1.2); a client knows its server's. */
	dpq_conn_paths_init(c, &in->tuple, !server || in->after_retry);
	dpq_conn_cids_init(c, in);
	build_local_tparams(c, in);
	dpq_conn_fec_init(c);
	if (!server && in->remembered_tp != NULL && in->remembered_tp_len > 0)
		early_remember(c, in->remembered_tp, in->remembered_tp_len);

	/* Initial keys from the DCID of the client's Initial (RFC 9001
	 * §5.2); for a server after Retry that is the Retry's SCID. */
	c->rx[DPQ_EPOCH_INITIAL] = dpq_conn_key_alloc(c);
	c->tx[DPQ_EPOCH_INITIAL] = dpq_conn_key_alloc(c);
	if (c->rx[DPQ_EPOCH_INITIAL] == NULL ||
	    c->tx[DPQ_EPOCH_INITIAL] == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = dpq_pp_key_init_initial(c->crypto, c->rx[DPQ_EPOCH_INITIAL],
			in->dcid.bytes, in->dcid.len, !server);
	if (rc == 0)
		rc = dpq_pp_key_init_initial(c->crypto,
				c->tx[DPQ_EPOCH_INITIAL], in->dcid.bytes,
				in->dcid.len, server);
	if (rc != 0)
		goto fail;

	c->ackr_app_r = dpq_mem_alloc(&c->mem, DPQ_ACKR_MAX_RANGES *
			sizeof(*c->ackr_app_r));
	if (c->ackr_app_r == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
		/* Initial and Handshake packets are acknowledged at once
		 * (RFC 9000 §13.2.1); 1-RTT after max_ack_delay. */
		dpq_ackr_init(c->b->pns[i].ackr, i == DPQ_PN_SPACE_APP ?
				c->conf.max_ack_delay_ms * 1000 : 0,
				i == DPQ_PN_SPACE_APP ? c->ackr_app_r :
				c->hss->ackr_r[i], DPQ_ACKR_MAX_RANGES);
		c->largest_rx_pn[i] = DPQ_PN_NONE;
	}
	for (i = 0; i < DPQ_EPOCH_COUNT; i++) {
		dpq_recvbuf_init_crypto(&c->cs[i]->rb, &c->buf_mem);
		dpq_sendbuf_init(&c->cs[i]->sb, &c->buf_mem,
				DPQ_CONN_CRYPTO_SEND_MAX);
	}
	lc.is_server = server;
	lc.initial_rtt = c->conf.initial_rtt_us;
	lc.ecn = !c->conf.no_ecn;
	rc = dpq_loss_init(&c->b->loss, &lc, &c->mem);
	if (rc != 0)
		goto fail_bufs;
	ccc.max_datagram_size = c->max_udp_payload;
	ccc.fec_reaction = in->conf->fec_cc;
	ccc.paced = !in->conf->no_pacing && !in->conf->hystart_rfc;
	rc = dpq_cc_init(&c->b->cc, cc_ops, &ccc, in->now);
	if (rc != 0)
		goto fail_loss;
	dpq_pacer_init(&c->pacer, c->max_udp_payload, in->now);
	dpq_loss_set_amplification_limited(&c->b->loss,
			!c->b->paths[c->active].validated, in->now);

	dpq_flow_rx_init(&c->rx_fc, c->conf.max_data, c->conf.max_data_max,
			in->now);
	dpq_flow_tx_init(&c->tx_fc, 0);
	dpq_streams_rx_init(&c->streams_rx[0], c->conf.max_streams_bidi);
	dpq_streams_rx_init(&c->streams_rx[1], c->conf.max_streams_uni);
	dpq_streams_tx_init(&c->streams_tx[0], 0);
	dpq_streams_tx_init(&c->streams_tx[1], 0);
	if (c->early_tp)
		apply_peer_limits(c);
	rc = dpq_conn_streams_init(c);
	if (rc != 0)
		goto fail_loss;

	c->idle_timeout_us = c->conf.idle_timeout_ms * 1000;
	c->idle_deadline = in->now + c->idle_timeout_us;
	c->hs_deadline = in->now + c->conf.handshake_timeout_ms * 1000;
	c->close_deadline = UINT64_MAX;
	*out = c;
	return 0;

fail_loss:
	dpq_loss_destroy(&c->b->loss);
fail_bufs:
	for (i = 0; i < DPQ_EPOCH_COUNT; i++) {
		dpq_recvbuf_free(&c->cs[i]->rb);
		dpq_sendbuf_free(&c->cs[i]->sb);
	}
fail:
	dpq_conn_key_free(c, &c->rx[DPQ_EPOCH_INITIAL]);
	dpq_conn_key_free(c, &c->tx[DPQ_EPOCH_INITIAL]);
	dpq_mem_free(mem, c->ackr_app_r);
	dpq_mem_free(mem, c->hss);
	dpq_mem_free(mem, c->b);
	dpq_mem_free(mem, c);
	return rc;
}

void
dpq_conn_destroy(struct dpq_conn *c)
{
	struct dpq_conn_peek pk;
	struct dpq_mem mem;
	int i;

	if (c == NULL)
		return;
	/* Parked: its body unpacked on the stack, for what it points to
	 * (sent-packet blocks, the fallback path's state). */
	if (c->b == NULL) {
		(void)dpq_conn_peek(c, &pk);
		c->b = &pk.b;
	}
	if (c->hs_ops != NULL && c->hs_ops->release != NULL)
		c->hs_ops->release(c->hs, c);
	dpq_conn_streams_free(c);
	dpq_conn_fec_destroy(c);
	dpq_conn_spec_destroy(c);
	dpq_loss_destroy(&c->b->loss);
	dpq_conn_keys_free(c);
	dpq_mem_free(&c->mem, c->nt_tx);
	dpq_mem_free(&c->mem, c->nt_rx);
	for (i = 0; i < DPQ_EPOCH_COUNT; i++) {
		if (c->cs[i] != NULL) {
			dpq_recvbuf_free(&c->cs[i]->rb);
			dpq_sendbuf_free(&c->cs[i]->sb);
		}
		dpq_conn_key_free(c, &c->rx[i]);
		dpq_conn_key_free(c, &c->tx[i]);
	}
	dpq_conn_park_free(c);
	dpq_conn_paths_free(c);
	mem = c->mem;
	dpq_mem_free(&mem, c->rx_buffered);
	dpq_mem_free(&mem, c->ackr_app_r);
	dpq_mem_free(&mem, c->hss);
	if (c->b != &pk.b)
		dpq_mem_free(&mem, c->b);
	dpq_mem_free(&mem, c);
}

ssize_t
dpq_conn_local_tparams(const struct dpq_conn *c, uint8_t *buf, size_t len)
{
	uint8_t *end;

	if (c->hss == NULL)
		return -ENOENT;		/* the handshake is over */
	end = dpq_tparams_encode(buf, buf + len, c->role, &c->hss->local_tp);
	return end == NULL ? -ENOSPC : end - buf;
}

/* ---- handshake service ------------------------------------------------ */

static bool early_complete(struct dpq_conn *c);

int
dpq_conn_hs_send(struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	ssize_t n;

	dpq_conn_wake(c);
	if (!dpq_conn_awake(c))
		return -ENOMEM;
	if ((unsigned int)epoch >= DPQ_EPOCH_COUNT ||
	    epoch == DPQ_EPOCH_0RTT)
		return -EINVAL;
	/* Closing, or bytes for a level whose state is gone. */
	if (dpq_conn_is_closing(c) || c->cs[epoch] == NULL)
		return 0;
	n = dpq_sendbuf_append(&c->cs[epoch]->sb, data, len, false);
	if (n < 0 || (size_t)n != len) {
		dpq_conn_close_transport(c, DPQ_TE_INTERNAL_ERROR, 0,
				"handshake data exceeds the CRYPTO buffer");
		return -ENOBUFS;
	}
	return 0;
}

int
dpq_conn_hs_secret(struct dpq_conn *c, enum dpq_epoch epoch, bool write,
		uint16_t suite, const uint8_t *secret, size_t len)
{
	struct dpq_pp_key **kp;
	enum dpq_aead alg;
	int rc;

	dpq_conn_wake(c);
	if (!dpq_conn_awake(c))
		return -ENOMEM;
	if ((unsigned int)epoch >= DPQ_EPOCH_COUNT ||
	    epoch == DPQ_EPOCH_INITIAL)
		return -EINVAL;
	if (dpq_aead_from_tls_suite(suite, &alg) != 0)
		return -ENOTSUP;
	/* RFC 9001 §4.6: 0-RTT keys are a client's to write and a server's
	 * to read; a client without remembered limits cannot use them. */
	if (epoch == DPQ_EPOCH_0RTT &&
	    (write != (c->role == DPQ_ROLE_CLIENT) ||
	     (write && !c->early_tp) || c->hs_complete))
		return 0;
	kp = write ? &c->tx[epoch] : &c->rx[epoch];
	/* 1-RTT secrets come once; later ones only from a TLS KeyUpdate,
	 * which QUIC forbids (RFC 9001 §6): never swap the keys in use. */
	if (epoch == DPQ_EPOCH_1RTT && *kp != NULL)
		return -EALREADY;
	dpq_conn_key_free(c, kp);
	*kp = dpq_conn_key_alloc(c);
	if (*kp == NULL)
		return -ENOMEM;
	rc = dpq_pp_key_init(c->crypto, *kp, alg, secret, len);
	if (rc != 0) {
		dpq_conn_key_free(c, kp);
		return rc;
	}
	if (epoch != DPQ_EPOCH_0RTT)
		c->cipher_suite = suite;
	if (epoch == DPQ_EPOCH_HANDSHAKE && write)
		dpq_loss_set_handshake_keys(&c->b->loss, c->now);
	if (epoch == DPQ_EPOCH_0RTT && write) {
		/* The application may write its requests now. */
		dpq_conn_set_early(c, DPQ_EARLY_SENT);
		if (c->app != NULL && c->app->on_early != NULL)
			c->app->on_early(c, NULL);
		return 0;
	}
	if (!write)	/* packets held for this key (RFC 9001 §4.1.4) */
		dpq_conn_replay_buffered(c, c->now);
	return 0;
}

uint64_t
dpq_conn_hs_peer_tparams(struct dpq_conn *c, const uint8_t *data, size_t len)
{
	enum dpq_role peer = c->role == DPQ_ROLE_SERVER ? DPQ_ROLE_CLIENT :
		DPQ_ROLE_SERVER;
	/* Extension parameters we read (the others are ignored). */
	static const uint64_t keep[] = { DPQ_FEC_TP_ID };
	struct dpq_cid_auth auth = { 0 };
	struct dpq_tparams *tp;
	uint64_t te;
	int rc;

	if (!dpq_conn_awake(c))
		return DPQ_TE_INTERNAL_ERROR;
	tp = &c->b->peer_tp;

	rc = dpq_tparams_decode(data, data + len, peer, keep,
			sizeof(keep) / sizeof(keep[0]), tp);
	if (rc != 0)
		return DPQ_TE_TRANSPORT_PARAMETER_ERROR;
	auth.peer_scid = c->peer_initial_scid;
	auth.odcid = c->odcid;
	auth.retry = c->retry_done;
	auth.retry_scid = c->retry_scid;
	rc = dpq_tparams_check_cids(tp, c->role, &auth);
	if (rc != 0)
		return dpq_err_transport_code(rc);
	te = dpq_conn_fec_peer_tparams(c, tp);
	if (te != 0)
		return te;
	c->peer_tp_set = true;

	/* RFC 9000 §10.1: the idle timeout is the smaller non-zero one.
	 * Compared in ms: a peer's huge value (up to 2^62-1) times 1000
	 * would wrap, possibly to 0 = no timeout at all. */
	if (tp->max_idle_timeout != 0 &&
	    (c->idle_timeout_us == 0 ||
	     tp->max_idle_timeout < c->idle_timeout_us / 1000))
		c->idle_timeout_us = tp->max_idle_timeout * 1000;
	c->max_udp_payload = tp->max_udp_payload_size < c->conf.max_udp_payload ?
		(uint16_t)tp->max_udp_payload_size : c->conf.max_udp_payload;
	c->b->cc.max_datagram_size = c->max_udp_payload;
	dpq_pacer_set_mtu(&c->pacer, c->max_udp_payload);
	dpq_loss_set_max_ack_delay(&c->b->loss, tp->max_ack_delay * 1000, c->now);
	apply_peer_limits(c);
	/* §7.4.1: streams opened in 0-RTT take the server's new stream
	 * limits (a larger one raises them; a smaller one is checked at
	 * completion). */
	if (c->early_tp)
		dpq_conn_streams_raise_send_max(c);
	/* The peer's CID with sequence 0 (RFC 9000 §5.1.1), so a later
	 * retire_prior_to retires it; a server's comes with its reset
	 * token. */
	c->peer_cids[0].cid = c->dcid;
	c->peer_cids[0].seq = 0;
	c->peer_cids[0].used = true;
	c->peer_cids[0].sent_on = true;
	if (c->role == DPQ_ROLE_CLIENT &&
	    dpq_tparams_has(tp, DPQ_TP_STATELESS_RESET_TOKEN)) {
		c->peer_cids[0].has_token = true;
		memcpy(c->peer_cids[0].reset_token, tp->stateless_reset_token,
				DPQ_RESET_TOKEN_LEN);
	}
	return 0;
}

void
dpq_conn_hs_complete(struct dpq_conn *c, const char *alpn)
{
	dpq_conn_wake(c);
	if (!dpq_conn_awake(c) || c->hs_complete || dpq_conn_is_closing(c))
		return;
	if (!c->peer_tp_set) {
		/* RFC 9001 §8.2: missing_extension. */
		dpq_conn_close_transport(c, DPQ_TE_CRYPTO(109), 0,
				"no transport parameters");
		return;
	}
	c->hs_complete = true;
	c->b->stats.handshake_us = c->now > c->created ? c->now - c->created : 1;
	if (!early_complete(c))
		return;
	snprintf(c->alpn, sizeof(c->alpn), "%s", alpn ? alpn : "");
	dpq_conn_set_state(c, DPQ_CONN_ESTABLISHED);
	if (c->role == DPQ_ROLE_SERVER) {
		/* RFC 9001 §4.1.2: complete means confirmed for a server,
		 * which sends HANDSHAKE_DONE (RFC 9000 §19.20) and drops its
		 * Handshake keys (§4.9.2). */
		c->handshake_done_pending = true;
		dpq_conn_confirm_handshake(c, c->now);
	}
	if (c->app != NULL && c->app->on_established != NULL)
		c->app->on_established(c, c->alpn);
	/* RFC 9001 §5.7: the 1-RTT packets a server held until now (the
	 * client's first request, coalesced with its Finished) are
	 * processed now, not when the client retransmits them. */
	dpq_conn_replay_buffered(c, c->now);
}

void
dpq_conn_set_early(struct dpq_conn *c, enum dpq_conn_early e)
{
	c->early = e;
}

void
dpq_conn_hs_early(struct dpq_conn *c, const char *alpn)
{
	if (!dpq_conn_awake(c) || c->role != DPQ_ROLE_SERVER || c->rx[DPQ_EPOCH_0RTT] == NULL ||
	    c->early_ready || dpq_conn_is_closing(c))
		return;
	c->early_ready = true;
	dpq_conn_set_early(c, DPQ_EARLY_ACCEPTED);
	snprintf(c->alpn, sizeof(c->alpn), "%s", alpn ? alpn : "");
	if (c->app != NULL && c->app->on_early != NULL)
		c->app->on_early(c, c->alpn);
	/* 0-RTT packets held for this (RFC 9001 §4.1.4). */
	dpq_conn_replay_buffered(c, c->now);
}

void
dpq_conn_hs_resumption(struct dpq_conn *c, bool resumed, bool early_accepted)
{
	if (!dpq_conn_awake(c))
		return;
	c->resumed = resumed;
	if (c->role == DPQ_ROLE_CLIENT && c->early == DPQ_EARLY_SENT)
		dpq_conn_set_early(c, early_accepted ? DPQ_EARLY_ACCEPTED :
				DPQ_EARLY_REJECTED);
}

/* Would data already sent break the peer's new limits? */
static bool
early_over_limits(const struct dpq_conn *c)
{
	return c->tx_fc.sent > c->b->peer_tp.initial_max_data ||
		c->streams_tx[0].opened > c->b->peer_tp.initial_max_streams_bidi ||
		c->streams_tx[1].opened > c->b->peer_tp.initial_max_streams_uni ||
		dpq_conn_streams_over_send_max(c);
}

/*
 * The handshake is complete: the fate of 0-RTT. Client: keys go (RFC
 * 9001 §4.9.3); accepted: the server must not have lowered what 0-RTT
 * relied on (RFC 9000 §7.4.1); rejected: everything sent in 0-RTT counts
 * as lost and goes again in 1-RTT (RFC 9001 §4.6.2), unless the server's
 * new limits are below what was already sent (the data could not be
 * resent without breaking them: the connection closes). Server: the
 * 0-RTT read key stays a while for reordered packets (§4.9.3). Returns
 * false when the connection closed.
 */
static bool
early_complete(struct dpq_conn *c)
{
	uint64_t now_tp[7];
	int i;

	if (c->role == DPQ_ROLE_SERVER) {
		if (c->rx[DPQ_EPOCH_0RTT] != NULL)
			c->early_discard_at = c->now + 3 * dpq_conn_pto(c);
		return true;
	}
	if (c->tx[DPQ_EPOCH_0RTT] != NULL)
		c->discard_0rtt_pending = true;
	if (c->early == DPQ_EARLY_ACCEPTED) {
		early_limits(&c->b->peer_tp, now_tp);
		for (i = 0; i < 7; i++)
			if (now_tp[i] < c->early_limit[i]) {
				dpq_conn_close_transport(c,
					DPQ_TE_PROTOCOL_VIOLATION, 0,
					"0-RTT accepted with lower limits");
				return false;
			}
	} else if (c->early == DPQ_EARLY_REJECTED) {
		struct dpq_loss_cb cb = { .on_requeue = dpq_conn_on_requeue,
			.ctx = c };

		dpq_loss_forget_space(&c->b->loss, &c->b->cc, DPQ_PN_SPACE_APP, &cb,
				c->now);
		if (early_over_limits(c)) {
			dpq_conn_close_transport(c, DPQ_TE_INTERNAL_ERROR, 0,
				"0-RTT rejected and the new limits are below "
				"the data already sent");
			return false;
		}
	}
	return true;
}

void
dpq_conn_hs_failed(struct dpq_conn *c, uint64_t error_code)
{
	dpq_conn_wake(c);
	if (!dpq_conn_awake(c))
		return;
	c->hs_failed = true;
	dpq_conn_close_transport(c, error_code ? error_code :
			DPQ_TE_CRYPTO(80), 0, "handshake failed");
}

/* TLS handshake message type key_update (RFC 8446 §4). */
#define TLS_HS_KEY_UPDATE	24
/* TLS alert unexpected_message (RFC 8446 §6). */
#define TLS_ALERT_UNEXPECTED_MESSAGE 10

/* Walk the TLS message headers in 1-RTT CRYPTO bytes (in stream order).
 * Returns false at a KeyUpdate: QUIC replaces it with its own key update
 * and a peer's TLS KeyUpdate is the connection error 0x010a (RFC 9001
 * §6). Handing it to TLS would let TLS install new 1-RTT secrets under
 * the packet protection in use. */
static bool
tls_1rtt_scan(struct dpq_conn *c, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		if (c->tls_1rtt.body_left > 0) {
			size_t take = n - i < c->tls_1rtt.body_left ?
				n - i : c->tls_1rtt.body_left;

			c->tls_1rtt.body_left -= (uint32_t)take;
			i += take;
			continue;
		}
		c->tls_1rtt.hdr[c->tls_1rtt.hdr_len++] = p[i++];
		if (c->tls_1rtt.hdr[0] == TLS_HS_KEY_UPDATE)
			return false;
		if (c->tls_1rtt.hdr_len == 4) {
			c->tls_1rtt.body_left =
				(uint32_t)c->tls_1rtt.hdr[1] << 16 |
				(uint32_t)c->tls_1rtt.hdr[2] << 8 |
				c->tls_1rtt.hdr[3];
			c->tls_1rtt.hdr_len = 0;
		}
	}
	return true;
}

/* Feed the contiguous CRYPTO bytes of epoch to the handshake service. */
void
dpq_conn_deliver_crypto(struct dpq_conn *c, enum dpq_epoch e)
{
	struct dpq_recvbuf *rb = &c->cs[e]->rb;
	const uint8_t *p;
	size_t n;

	while (!dpq_conn_is_closing(c) && (n = dpq_recvbuf_peek(rb, &p)) > 0) {
		if (e == DPQ_EPOCH_1RTT && !tls_1rtt_scan(c, p, n)) {
			dpq_conn_close_transport(c,
					DPQ_TE_CRYPTO(TLS_ALERT_UNEXPECTED_MESSAGE),
					DPQ_FT_CRYPTO, "TLS KeyUpdate in QUIC");
			return;
		}
		if (c->hs_ops->recv(c->hs, c, e, p, n) != 0) {
			dpq_conn_close_transport(c, DPQ_TE_INTERNAL_ERROR, 0,
					"handshake service refused data");
			return;
		}
		dpq_recvbuf_consume(rb, n);
	}
}

/* RFC 9001 §4.9: keys of a finished epoch go, with its recovery state. */
void
dpq_conn_discard_epoch(struct dpq_conn *c, enum dpq_epoch e, uint64_t now)
{
	enum dpq_pn_space sp = dpq_epoch_space(e);

	if (c->b->pns[sp].discarded || e == DPQ_EPOCH_1RTT)
		return;
	c->b->pns[sp].discarded = true;
	c->b->pns[sp].probes = 0;
	dpq_conn_key_free(c, &c->rx[e]);
	dpq_conn_key_free(c, &c->tx[e]);
	dpq_loss_discard_space(&c->b->loss, &c->b->cc, sp, now);
	dpq_sendbuf_discard(&c->cs[e]->sb);
	dpq_recvbuf_discard(&c->cs[e]->rb);
}

void
dpq_conn_confirm_handshake(struct dpq_conn *c, uint64_t now)
{
	if (c->hs_confirmed)
		return;
	c->hs_confirmed = true;
	dpq_loss_set_handshake_confirmed(&c->b->loss, now);
	/* RFC 9001 §4.9.2: Handshake keys go once confirmed. */
	dpq_conn_discard_epoch(c, DPQ_EPOCH_HANDSHAKE, now);
	/* RFC 9000 §5.1.1: CIDs for the peer's new paths (§9.5). */
	dpq_conn_cids_replenish(c);
}

void
dpq_conn_on_peer_activity(struct dpq_conn *c, uint64_t now)
{
	/* RFC 9000 §10.1: restart the idle timer on every packet that
	 * was processed; the deadline is at least 3 PTO away. */
	uint64_t t = c->idle_timeout_us, pto3 = 3 * dpq_conn_pto(c);

	if (t == 0)
		return;
	c->idle_deadline = now + (t > pto3 ? t : pto3);
}

/* A Handshake packet arrived: the peer has handshake keys and answers,
 * so the handshake moves, only slowly (its flights cross a lossy path:
 * at 30% loss each way 5 of 3,000 seeded handshakes took over 10 s).
 * The deadline is for half-open connections, whose peer never gets that
 * far: this one gets the idle timeout from its creation, what a live
 * peer could hold a slot for anyway. Not a deadline from this packet:
 * the peer's probes back off (RFC 9002 §6.2.1), and after a few lost
 * ones their gaps pass 10 s (in memory at 30% loss, seed 11318: a
 * client sent its Finished at 8.0 s and again at 11.9, 19.5 and 34.9 s;
 * the server, whose last packet from it came at 4.8 s, closed at 14.8 s
 * when the deadline was 10 s from the last Handshake packet). */
void
dpq_conn_on_handshake_packet(struct dpq_conn *c)
{
	uint64_t hto = c->conf.handshake_timeout_ms * 1000;
	uint64_t t = c->created + (c->conf.idle_timeout_ms * 1000 > hto ?
			c->conf.idle_timeout_ms * 1000 : hto);

	if (!c->hs_complete && t > c->hs_deadline)
		c->hs_deadline = t;
}

uint64_t
dpq_conn_pto(const struct dpq_conn *c)
{
	return dpq_rtt_pto_base(&c->b->loss.rtt) + c->b->loss.max_ack_delay;
}

/* ---- closing -------------------------------------------------------------- */

static void
start_close(struct dpq_conn *c, bool app, uint64_t error, uint64_t ftype,
		const char *reason)
{
	if (dpq_conn_is_closing(c))
		return;
	c->close.error_code = error;
	c->close.frame_type = ftype;
	c->close.app = app;
	c->close.remote = false;
	snprintf(c->close.reason, sizeof(c->close.reason), "%s",
			reason ? reason : "");
	c->close_pending = true;
	/* Three PTOs from now (RFC 9000 §10.2), refreshed when the
	 * CONNECTION_CLOSE goes out; set here too so a connection that
	 * cannot send (amplification limit) still ends. */
	c->close_deadline = c->now + DPQ_CONN_CLOSE_PTOS * dpq_conn_pto(c);
	dpq_conn_set_state(c, DPQ_CONN_CLOSING);
}

void
dpq_conn_close_transport(struct dpq_conn *c, uint64_t error,
		uint64_t frame_type, const char *reason)
{
	start_close(c, false, error, frame_type, reason);
}

void
dpq_conn_close(struct dpq_conn *c, bool app, uint64_t error_code,
		const char *reason)
{
	dpq_conn_wake(c);
	if (!dpq_conn_awake(c) || dpq_conn_is_closing(c))
		return;
	start_close(c, app, error_code, 0, reason);
	c->close_unanchored = true;
}

/* The closing period of a close started from outside begins now: a
 * quiet connection's own clock may be long past, and a deadline counted
 * from it would end the connection before its CONNECTION_CLOSE left. */
static void
anchor_close(struct dpq_conn *c, uint64_t now)
{
	if (!c->close_unanchored)
		return;
	c->close_unanchored = false;
	if (!c->close_sent_once)
		c->close_deadline = now + DPQ_CONN_CLOSE_PTOS *
			dpq_conn_pto(c);
}

void
dpq_conn_enter_draining(struct dpq_conn *c, uint64_t now)
{
	if (c->state == DPQ_CONN_DRAINING || c->state == DPQ_CONN_CLOSED)
		return;
	c->close_pending = false;
	c->close_deadline = now + DPQ_CONN_CLOSE_PTOS * dpq_conn_pto(c);
	dpq_conn_set_state(c, DPQ_CONN_DRAINING);
}

/* ---- timers ---------------------------------------------------------------- */

uint64_t
dpq_conn_next_timeout(const struct dpq_conn *c)
{
	uint64_t t = UINT64_MAX;
	int i;

	if (c->state == DPQ_CONN_CLOSED)
		return UINT64_MAX;
	if (dpq_conn_is_closing(c))
		return c->close_deadline;
	if (c->b == NULL)
		return dpq_conn_parked_timeout(c);
	if (c->idle_timeout_us != 0)
		t = c->idle_deadline;
	if (!c->hs_complete && c->hs_deadline < t)
		t = c->hs_deadline;
	if (dpq_loss_deadline(&c->b->loss) < t)
		t = dpq_loss_deadline(&c->b->loss);
	if (dpq_conn_keys_deadline(c) < t)
		t = dpq_conn_keys_deadline(c);
	if (c->early_discard_at != 0 && c->early_discard_at < t)
		t = c->early_discard_at;
	if (dpq_conn_paths_next_timeout(c) < t)
		t = dpq_conn_paths_next_timeout(c);
	/* Data that waits only for the pacer (RFC 9002 §7.7). */
	if (dpq_conn_pacing_wakeup(c) < t)
		t = dpq_conn_pacing_wakeup(c);
	/* ACK deadlines and speculative copies the builder can act on:
	 * not without the space's write key nor while the amplification
	 * limit blocks every send, which only a received datagram lifts
	 * (the owner would be woken for nothing, again and again). */
	if (dpq_conn_path_allowance(c, &c->b->paths[c->active]) <
	    DPQ_CONN_MIN_DGRAM)
		return t;
	if (dpq_conn_spec_deadline(c) < t)
		t = dpq_conn_spec_deadline(c);
	/* An XOR-FEC group's REPAIR at a pause in sending (conn_fec.c). */
	if (dpq_conn_fec_deadline(c) < t)
		t = dpq_conn_fec_deadline(c);
	for (i = 0; i < DPQ_PN_SPACE_COUNT; i++) {
		static const enum dpq_epoch key_of[DPQ_PN_SPACE_COUNT] = {
			DPQ_EPOCH_INITIAL, DPQ_EPOCH_HANDSHAKE, DPQ_EPOCH_1RTT,
		};
		uint64_t d;

		if (c->b->pns[i].discarded ||
		    !dpq_conn_has_tx_key(c, key_of[i]) ||
		    !dpq_ackr_has_new(c->b->pns[i].ackr))
			continue;
		d = dpq_ackr_deadline(c->b->pns[i].ackr);
		if (d < t)
			t = d;
	}
	return t;
}

void
dpq_conn_on_timeout(struct dpq_conn *c, uint64_t now)
{
	struct dpq_loss_cb cb = { .on_acked = dpq_conn_on_acked,
		.on_lost = dpq_conn_on_lost, .on_requeue = dpq_conn_on_requeue,
		.ctx = c };
	struct dpq_loss_timeout to;
	int i;

	c->now = now;
	if (c->state == DPQ_CONN_CLOSED)
		return;
	/* Parked: nothing is due before the timeout taken at park. */
	if (c->b == NULL && (now < dpq_conn_parked_timeout(c) ||
	    !dpq_conn_awake(c)))
		return;
	anchor_close(c, now);
	if (dpq_conn_is_closing(c)) {
		if (now >= c->close_deadline)
			dpq_conn_set_state(c, DPQ_CONN_CLOSED);
		return;
	}
	if (c->idle_timeout_us != 0 && now >= c->idle_deadline) {
		/* RFC 9000 §10.1: silently close. */
		c->close.idle = true;
		c->close.error_code = DPQ_TE_NO_ERROR;
		snprintf(c->close.reason, sizeof(c->close.reason),
				"idle timeout");
		dpq_conn_set_state(c, DPQ_CONN_CLOSED);
		return;
	}
	if (!c->hs_complete && now >= c->hs_deadline) {
		/* Like an idle timeout: the peer gets no frame (a half-open
		 * connection's peer may not even exist, RFC 9000 §21.1). */
		c->close.handshake_timeout = true;
		c->close.error_code = DPQ_TE_NO_ERROR;
		snprintf(c->close.reason, sizeof(c->close.reason),
				"handshake timeout");
		dpq_conn_set_state(c, DPQ_CONN_CLOSED);
		return;
	}
	if (now >= dpq_loss_deadline(&c->b->loss)) {
		c->trace_loss_trigger = DPQ_TRACE_LOST_TIME;
		dpq_loss_on_timeout(&c->b->loss, &c->b->cc, now, &cb, &to);
		if (to.action == DPQ_LOSS_ACT_PTO ||
		    to.action == DPQ_LOSS_ACT_ANTI_DEADLOCK)
			dpq_conn_arm_probes(c, to.space, to.probes);
		for (i = 0; i < DPQ_PN_SPACE_COUNT; i++)
			if (to.also & (1u << i))
				dpq_conn_arm_probes(c, (enum dpq_pn_space)i, 1);
		c->b->stats.pkts_lost += to.lost.packets_lost;
		if (c->trace != NULL)
			dpq_conn_trace_metrics(c);
	}
	dpq_conn_keys_on_timeout(c, now);
	/* Path validation: resend PATH_CHALLENGE, or give up (§8.2.4). */
	dpq_conn_paths_on_timeout(c, now);
	if (c->early_discard_at != 0 && now >= c->early_discard_at) {
		c->early_discard_at = 0;
		dpq_conn_key_free(c, &c->rx[DPQ_EPOCH_0RTT]);
	}
	/* ACK deadlines need no action here: the builder sends what is
	 * due once now passes them. */
}

void
dpq_conn_tx_done(struct dpq_conn *c, uint64_t now)
{
	if (c->b == NULL)
		return;			/* parked: nothing was built */
	if (c->discard_initial_pending) {
		c->discard_initial_pending = false;
		dpq_conn_discard_epoch(c, DPQ_EPOCH_INITIAL, now);
	}
	if (c->discard_0rtt_pending) {
		c->discard_0rtt_pending = false;
		dpq_conn_key_free(c, &c->tx[DPQ_EPOCH_0RTT]);
	}
	dpq_conn_keys_tx_done(c);
}

/* The handshake-only state goes once nothing can use it: the handshake
 * is confirmed and the Initial and Handshake spaces are discarded (RFC
 * 9001 §4.9). Here, between bursts, because a discard happens in the
 * middle of processing a packet whose frames may still be walked. */
static void
hs_state_release(struct dpq_conn *c)
{
	static const enum dpq_epoch gone[] = { DPQ_EPOCH_INITIAL,
		DPQ_EPOCH_0RTT, DPQ_EPOCH_HANDSHAKE };
	unsigned int i;

	if (c->hss == NULL || !c->hs_confirmed ||
	    !c->b->pns[DPQ_PN_SPACE_INITIAL].discarded ||
	    !c->b->pns[DPQ_PN_SPACE_HANDSHAKE].discarded)
		return;
	for (i = 0; i < 3; i++) {
		dpq_recvbuf_free(&c->cs[gone[i]]->rb);
		dpq_sendbuf_free(&c->cs[gone[i]]->sb);
		c->cs[gone[i]] = NULL;
	}
	c->b->pns[DPQ_PN_SPACE_INITIAL].ackr = NULL;
	c->b->pns[DPQ_PN_SPACE_HANDSHAKE].ackr = NULL;
	dpq_mem_free(&c->mem, c->hss);
	c->hss = NULL;
}

void
dpq_conn_poll(struct dpq_conn *c, uint64_t now)
{
	c->now = now;
	/* Parked (no deferred work: see can_park()), until a timer. */
	if (c->b == NULL && (now < dpq_conn_parked_timeout(c) ||
	    !dpq_conn_awake(c)))
		return;
	anchor_close(c, now);
	dpq_conn_tx_done(c, now);
	dpq_conn_replay_buffered(c, now);
	if (now >= dpq_conn_next_timeout(c))
		dpq_conn_on_timeout(c, now);
	dpq_conn_keys_prepare(c);
	hs_state_release(c);
}

int
dpq_conn_send_new_token(struct dpq_conn *c, const uint8_t *tok, size_t len)
{
	if (c->role != DPQ_ROLE_SERVER || tok == NULL || len == 0 ||
	    len > DPQ_CONN_TOKEN_MAX)
		return -EINVAL;
	if (dpq_conn_is_closing(c))
		return -EPIPE;
	if (!dpq_conn_awake(c))
		return -ENOMEM;
	if (c->nt_tx == NULL) {
		c->nt_tx = dpq_mem_alloc(&c->mem, DPQ_CONN_TOKEN_MAX);
		if (c->nt_tx == NULL)
			return -ENOMEM;
	}
	memcpy(c->nt_tx, tok, len);
	c->nt_tx_len = (uint16_t)len;
	c->nt_tx_pending = true;
	return 0;
}

size_t
dpq_conn_new_token(const struct dpq_conn *c, const uint8_t **tok)
{
	*tok = c->nt_rx;
	return c->nt_rx != NULL ? c->nt_rx_len : 0;
}

void *
dpq_conn_owner(const struct dpq_conn *c)
{
	return c->owner;
}

void
dpq_conn_set_owner(struct dpq_conn *c, void *owner)
{
	c->owner = owner;
}

/* ---- getters ---------------------------------------------------------------- */

enum dpq_conn_state
dpq_conn_state(const struct dpq_conn *c)
{
	return c->state;
}

bool
dpq_conn_is_server(const struct dpq_conn *c)
{
	return c->role == DPQ_ROLE_SERVER;
}

bool
dpq_conn_handshake_confirmed(const struct dpq_conn *c)
{
	return c->hs_confirmed;
}

bool
dpq_conn_peer_validated(const struct dpq_conn *c)
{
	struct dpq_conn_peek pk;

	c = dpq_conn_peek(c, &pk);
	return c->b->paths[c->active].validated;
}

const char *
dpq_conn_alpn(const struct dpq_conn *c)
{
	return c->alpn;
}

void *
dpq_conn_app_ctx(const struct dpq_conn *c)
{
	return c->app_ctx;
}

void
dpq_conn_set_app_ctx(struct dpq_conn *c, void *ctx)
{
	c->app_ctx = ctx;
}

void *
dpq_conn_hs_ctx(const struct dpq_conn *c)
{
	return c->hs_ctx;
}

void
dpq_conn_set_hs_ctx(struct dpq_conn *c, void *ctx)
{
	c->hs_ctx = ctx;
}

const struct dpq_cid *
dpq_conn_scid(const struct dpq_conn *c)
{
	return &c->scid;
}

const struct dpq_cid *
dpq_conn_dcid(const struct dpq_conn *c)
{
	return &c->dcid;
}

const struct dpq_conn_close_info *
dpq_conn_close_info(const struct dpq_conn *c)
{
	return &c->close;
}

void
dpq_conn_trace_abandon(struct dpq_conn *c, const char *why, uint64_t now)
{
	if (c->trace == NULL || c->state >= DPQ_CONN_CLOSING)
		return;
	if (now > c->now)
		c->now = now;
	dpq_conn_trace_closed(c, why);
}

void
dpq_conn_get_stats(const struct dpq_conn *c, struct dpq_conn_stats *st)
{
	struct dpq_conn_peek pk;

	c = dpq_conn_peek(c, &pk);
	*st = c->b->stats;
	st->srtt_us = c->b->loss.rtt.smoothed;
	st->min_rtt_us = c->b->loss.rtt.min;
	st->cwnd = c->b->cc.cwnd;
	st->bytes_in_flight = c->b->cc.bytes_in_flight;
	st->cipher_suite = c->cipher_suite;
	st->unvalidated_rx = 0;
	st->unvalidated_tx = 0;
	for (unsigned int i = 0; i < DPQ_CONN_PATHS; i++) {
		if (!c->b->paths[i].in_use)
			continue;
		st->unvalidated_rx += c->b->paths[i].amp_recv;
		st->unvalidated_tx += c->b->paths[i].amp_sent;
	}
	st->auth_failures = c->ku.auth_failures;
	st->created_us = c->created;
	st->streams = c->nstreams;
	st->fec_loss_ppm = dpq_fec_meter_rate_ppm(&c->fec_meter);
	if (c->fec != NULL) {
		st->fec_groups = c->fec->tx.stats.groups;
		st->fec_repair_bytes = c->fec->tx.stats.repair_bytes;
		st->fec_protected = c->fec->tx.stats.members;
		st->fec_recovered = c->fec->rx.stats.recovered;
		st->fec_unrecoverable = c->fec->rx.stats.unrecoverable;
	}
	snprintf(st->cc, sizeof(st->cc), "%s", c->b->cc.ops->name);
	snprintf(st->cc_state, sizeof(st->cc_state), "%s",
			dpq_cc_state_name(&c->b->cc));
	st->ssthresh = c->b->cc.ssthresh;
	st->pacing_rate = dpq_conn_pacing_rate(c);
	if (st->pacing_rate == DPQ_PACER_UNPACED)
		st->pacing_rate = 0;
	st->pacer_held = c->pacer.held;
	st->ptos = c->b->loss.stats.ptos;
	st->spurious_losses = c->b->loss.stats.spurious;
	st->cc_undos = c->b->cc.spurious_undos;
	st->persistent_congestions = c->b->cc.persistent_congestions;
	st->congestion_events = c->b->cc.congestion_events;
	st->fec_cc_congestion = c->b->cc.fec_congestion;
	st->fec_cc_forgiven = c->b->cc.fec_forgiven;
	st->reorder_threshold = c->b->loss.pkt_threshold;
	snprintf(st->ecn, sizeof(st->ecn), "%s",
			dpq_ecn_state_str(c->b->loss.ecn.state));
	st->ecn_ce = c->b->loss.ecn.ce_events;
	st->resumed = c->resumed;
	st->early = (uint8_t)c->early;
	if (c->role == DPQ_ROLE_SERVER)
		st->early_bytes = c->early_rx_bytes;
}

ssize_t
dpq_conn_remembered_tparams(const struct dpq_conn *c, uint8_t *buf,
		size_t len)
{
	struct dpq_conn_peek pk;
	const struct dpq_tparams *p;
	struct dpq_tparams tp;
	uint8_t *end;

	c = dpq_conn_peek(c, &pk);
	p = &c->b->peer_tp;
	if (c->role != DPQ_ROLE_CLIENT || !c->peer_tp_set)
		return -EAGAIN;
	dpq_tparams_init_defaults(&tp);
#define KEEP(id, f) do { tp.f = p->f; tp.present |= DPQ_TP_BIT(id); } while (0)
	KEEP(DPQ_TP_MAX_IDLE_TIMEOUT, max_idle_timeout);
	KEEP(DPQ_TP_MAX_UDP_PAYLOAD_SIZE, max_udp_payload_size);
	KEEP(DPQ_TP_INITIAL_MAX_DATA, initial_max_data);
	KEEP(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
			initial_max_stream_data_bidi_local);
	KEEP(DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
			initial_max_stream_data_bidi_remote);
	KEEP(DPQ_TP_INITIAL_MAX_STREAM_DATA_UNI, initial_max_stream_data_uni);
	KEEP(DPQ_TP_INITIAL_MAX_STREAMS_BIDI, initial_max_streams_bidi);
	KEEP(DPQ_TP_INITIAL_MAX_STREAMS_UNI, initial_max_streams_uni);
	KEEP(DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT, active_connection_id_limit);
#undef KEEP
	if (p->disable_active_migration) {
		tp.disable_active_migration = true;
		tp.present |= DPQ_TP_BIT(DPQ_TP_DISABLE_ACTIVE_MIGRATION);
	}
	end = dpq_tparams_encode(buf, buf + len, DPQ_ROLE_SERVER, &tp);
	return end == NULL ? -ENOSPC : end - buf;
}
