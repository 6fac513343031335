/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-hostile: a misbehaving QUIC v1 client over a kernel UDP socket, to
 * check that a server answers bad input the way RFC 9000 says.
 *
 *   dpq-hostile [--timeout S] [--file PATH] MODE IP:PORT
 *
 * It speaks real QUIC with dpquic's own engine (dataplane/quic, TLS in
 * this thread through control/tls) and bends the client connection's
 * internal state (conn_int.h) or crafts datagrams with the codec and the
 * crypto library. Each mode prints what it saw and exits 0 iff the server
 * behaved per RFC 9000, 1 if it did not, 2 on a usage or local error.
 *
 * Modes (expected server behaviour):
 *   garbage        datagrams that cannot be QUIC v1 (fixed bit 0, 1..20
 *                  bytes, broken long headers, stray Handshake/0-RTT):
 *                  silence; then random bytes: only VN or Stateless-Reset
 *                  shaped replies, never more bytes than were sent
 *   truncated      a valid Initial cut at many points (< 1200 bytes), and
 *                  one whose Length runs past the datagram: silence
 *   small          a valid Initial in a datagram < 1200 bytes: silence
 *                  (§14.1)
 *   badaead        a 1200-byte Initial with a corrupted AEAD tag: silence
 *   version        unknown version in >= 1200 bytes: Version Negotiation
 *                  listing 1 with the CIDs echoed (§6.1, §17.2.1); in
 *                  < 1200 bytes, or a VN sent to the server: silence
 *   sreset         short header, unknown DCID: Stateless Reset shorter than
 *                  the trigger, same token for the same DCID (§10.3); a
 *                  trigger too short for a reset: silence
 *   oversize       handshakes whose first datagram is 1472..8000 bytes:
 *                  completed or silently dropped, never a bad reply
 *   tp-*           invalid transport parameters: CONNECTION_CLOSE
 *                  TRANSPORT_PARAMETER_ERROR (§7.4, §18.2). tp-ack-exp
 *                  (ack_delay_exponent 21), tp-udp-size
 *                  (max_udp_payload_size 1000), tp-ack-delay
 *                  (max_ack_delay 2^14), tp-cid-limit
 *                  (active_connection_id_limit 1), tp-dup (a parameter
 *                  twice), tp-server-only (stateless_reset_token from a
 *                  client), tp-truncated (a length past the end)
 *   crypto-initial CRYPTO beyond the server's buffer in an Initial:
 *                  CRYPTO_BUFFER_EXCEEDED (§7.5)
 *   crypto-1rtt    the same in a 1-RTT packet after the handshake
 *   flow-stream    STREAM data past a stream's MAX_STREAM_DATA:
 *                  FLOW_CONTROL_ERROR (§4.1)
 *   flow-conn      STREAM data past the connection's MAX_DATA, every stream
 *                  within its own limit: FLOW_CONTROL_ERROR
 *   flow-engine    the engine itself writes past the limit (credit raised
 *                  in its flow-control state): FLOW_CONTROL_ERROR
 *   streams        the engine opens more bidi streams than MAX_STREAMS
 *                  allows: STREAM_LIMIT_ERROR (§4.6)
 *   silent         fetch --file, go silent mid-transfer: the server stops
 *                  sending within the idle timeout (ours: 1 s) plus slack
 *                  (§10.1)
 *   halfopen       one host opens --count (5000) handshakes with a real
 *                  ClientHello each and never finishes one: the server
 *                  sends at most 3x the bytes it got (§8.1); the script
 *                  checks that it holds few of them (half-open bound,
 *                  oldest evicted) and that a good client still connects
 *   halfopen-ping  the same with PING+PADDING Initials (the audit's flood)
 *   onpath         fetch --file while an on-path attacker copies --count
 *                  of our 1-RTT datagrams (one per 50 ms at most) and
 *                  sends each copy from --spoof IP:PORT just ahead of the
 *                  original (RFC 9000 §9.3.2, §21.5): the server may
 *                  move there, but the
 *                  fetch completes, and the spoofed address, which never
 *                  answers, receives at most 3x the bytes of the copies
 *                  (§9.3.1, §8); prints the counts for the script
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control/tls/hs_direct.h"
#include "control/tls/tls.h"
#include "dataplane/crypto/pp_key.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/packet.h"
#include "dataplane/engine/tparams.h"
#include "dataplane/engine/varint.h"
#include "dataplane/quic/conn_int.h"

#define HX_DGRAM_MAX	9216
#define HX_QUIET_MS	600	/* how long "silence" is listened for */
#define HX_IDLE_MS	1000	/* our max_idle_timeout in silent mode */

enum hx_rc {
	HX_PASS = 0,
	HX_FAIL = 1,
	HX_ERR = 2,
};

struct hx {
	int fd;
	struct dpq_crypto *cc;
	struct dpq_tls_ctx *tls;
	double timeout;
	const char *file;
	unsigned int count;	/* halfopen, spoof: Initials to send */
	unsigned int streams;	/* noread: streams to open */
	uint64_t window;	/* noread: our stream window (0: default) */
	double duration;	/* noread: how long to hold on (s) */
	struct sockaddr_in dst;	/* the server, for raw sockets */
	const char *spoof;	/* onpath: IP:PORT the copies come from */
};

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
rnd(void *p, size_t n)
{
	uint8_t *b = p;

	while (n > 0) {
		ssize_t r = getrandom(b, n, 0);

		if (r <= 0)
			abort();
		b += r;
		n -= (size_t)r;
	}
}

static int
hx_send(struct hx *h, const void *p, size_t len)
{
	if (send(h->fd, p, len, 0) != (ssize_t)len) {
		fprintf(stderr, "dpq-hostile: send %zu bytes: %s\n", len,
				strerror(errno));
		return -1;
	}
	return 0;
}

/* One datagram within wait_ms; 0 when none came. */
static ssize_t
hx_recv(struct hx *h, uint8_t *buf, size_t cap, int wait_ms)
{
	struct pollfd pfd = { .fd = h->fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, wait_ms) <= 0)
		return 0;
	n = recv(h->fd, buf, cap, MSG_DONTWAIT);
	/* ECONNREFUSED: an ICMP error from an earlier send, not a reply. */
	return n < 0 ? 0 : n;
}

/* Drain for quiet_ms; returns the number of datagrams that arrived. */
static unsigned int
hx_listen(struct hx *h, int quiet_ms, size_t *bytes)
{
	uint64_t end = now_us() + (uint64_t)quiet_ms * 1000u;
	uint8_t buf[HX_DGRAM_MAX];
	unsigned int n = 0;
	uint64_t t;

	if (bytes != NULL)
		*bytes = 0;
	while ((t = now_us()) < end) {
		ssize_t r = hx_recv(h, buf, sizeof(buf),
				(int)((end - t) / 1000u) + 1);

		if (r > 0) {
			n++;
			if (bytes != NULL)
				*bytes += (size_t)r;
		}
	}
	return n;
}

/* ---- an engine client whose state we may bend ----------------------- */

struct cli {
	struct hx *h;
	struct dpq_conn *c;
	bool established;
	bool closed;
	uint64_t bytes_in;
	uint64_t fetch_id;
	bool fetching;
	/* Our ClientHello as TLS produced it (for raw Initials). */
	uint8_t ch[4096];
	size_t ch_len;
	/* Pad the next datagram sent to this many bytes (0: no). */
	size_t pad_first_to;
	bool silent;		/* neither read nor answer the server */
	bool no_read;		/* acknowledge, but never read stream data */
	bool fin;		/* a response stream ended */
	/* onpath: a copy of a 1-RTT datagram goes first from copy_fd when
	 * copy_armed (then cleared). */
	int copy_fd;
	bool copy_armed;
	unsigned int copies;
	uint64_t copy_bytes;
};

static int
tls_on_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	struct cli *k = arg;

	return dpq_conn_hs_secret(k->c, (enum dpq_epoch)level, write, suite,
			secret, len);
}

static int
tls_on_send(void *arg, enum dpq_tls_level level, const uint8_t *data,
		size_t len)
{
	struct cli *k = arg;

	if (level == DPQ_TLS_LEVEL_INITIAL && k->ch_len + len <= sizeof(k->ch)) {
		memcpy(k->ch + k->ch_len, data, len);
		k->ch_len += len;
	}
	return dpq_conn_hs_send(k->c, (enum dpq_epoch)level, data, len);
}

static uint64_t
tls_on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	struct cli *k = arg;

	return dpq_conn_hs_peer_tparams(k->c, data, len);
}

static const struct dpq_tls_callbacks hx_tls_cb = {
	.on_secret = tls_on_secret,
	.on_send = tls_on_send,
	.on_peer_tparams = tls_on_peer_tparams,
};

/* The handshake in this thread on our own struct dpq_tls (its callbacks
 * keep the ClientHello): hs_direct's service with a bare TLS context. */
static int
hx_hs_recv(void *hs, struct dpq_conn *c, enum dpq_epoch epoch,
		const uint8_t *data, size_t len)
{
	struct dpq_tls *tls = dpq_conn_hs_ctx(c);
	bool was_complete;

	(void)hs;
	if (tls == NULL)
		return -EINVAL;
	was_complete = dpq_tls_handshake_complete(tls);
	if (dpq_tls_recv(tls, (enum dpq_tls_level)epoch, data, len) != 0) {
		dpq_conn_hs_failed(c, dpq_tls_error_code(tls));
		return 0;
	}
	if (!was_complete && dpq_tls_handshake_complete(tls))
		dpq_conn_hs_complete(c, dpq_tls_alpn(tls));
	return 0;
}

static void
hx_hs_release(void *hs, struct dpq_conn *c)
{
	(void)hs;
	dpq_tls_free(dpq_conn_hs_ctx(c));
	dpq_conn_set_hs_ctx(c, NULL);
}

static const struct dpq_hs_ops hx_hs_ops = {
	.recv = hx_hs_recv,
	.release = hx_hs_release,
};

static void
app_established(struct dpq_conn *c, const char *alpn)
{
	struct cli *k = dpq_conn_app_ctx(c);

	(void)alpn;
	k->established = true;
}

static void
app_data(struct dpq_conn *c, uint64_t id)
{
	struct cli *k = dpq_conn_app_ctx(c);
	uint8_t buf[16384];
	bool fin = false;
	ssize_t n;

	if (k->no_read)
		return;		/* the data stays; no credit is given back */
	while ((n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin)) > 0) {
		k->bytes_in += (uint64_t)n;
		if (fin)
			k->fin = true;
	}
	if (fin)
		k->fin = true;
}

static void
app_closed(struct dpq_conn *c)
{
	struct cli *k = dpq_conn_app_ctx(c);

	k->closed = true;
}

static const struct dpq_app_ops hx_app = {
	.on_established = app_established,
	.on_stream_data = app_data,
	.on_closed = app_closed,
};

/*
 * Create the connection; drop_tp removes parameters (DPQ_TP_BIT) from our
 * transport parameters and extra (raw id/len/value bytes) is appended to
 * them, so the server sees values our encoder would never write.
 */
static int
cli_start(struct hx *h, struct cli *k, const struct dpq_conn_conf *conf,
		uint32_t drop_tp, const uint8_t *extra, size_t extra_len)
{
	struct dpq_conn_init in = { 0 };
	uint8_t tp[DPQ_TPARAMS_MAX_LEN + 64];
	struct dpq_tls *tls = NULL;
	ssize_t n;

	memset(k, 0, sizeof(*k));
	k->h = h;
	k->copy_fd = -1;
	in.conf = conf;
	in.crypto = h->cc;
	in.hs_ops = &hx_hs_ops;
	in.hs = h->tls;
	in.app = &hx_app;
	in.app_ctx = k;
	in.scid.len = 8;
	rnd(in.scid.bytes, 8);
	in.dcid.len = 8;
	rnd(in.dcid.bytes, 8);
	in.now = now_us();
	if (dpq_conn_create(&in, &k->c) != 0)
		return -1;
	dpq_conn_set_app_ctx(k->c, k);
	k->c->hss->local_tp.present &= ~drop_tp;
	n = dpq_conn_local_tparams(k->c, tp, DPQ_TPARAMS_MAX_LEN);
	if (n < 0 || (size_t)n + extra_len > sizeof(tp))
		return -1;
	if (extra_len > 0)
		memcpy(tp + n, extra, extra_len);
	if (dpq_tls_new(h->tls, &hx_tls_cb, k, tp, (size_t)n + extra_len,
			&tls) != 0)
		return -1;
	dpq_conn_set_hs_ctx(k->c, tls);
	return 0;
}

static void
cli_free(struct cli *k)
{
	if (k->c != NULL)
		dpq_conn_destroy(k->c);
	k->c = NULL;
}

/* Send what the connection has to send. */
static int
cli_flush(struct cli *k)
{
	uint8_t buf[HX_DGRAM_MAX];
	ssize_t n;

	if (k->silent)
		return 0;
	while ((n = dpq_conn_send(k->c, buf, 1500, NULL, now_us())) > 0) {
		size_t len = (size_t)n;

		if (k->pad_first_to > len) {
			/* Trailing zeros: a packet with the fixed bit 0,
			 * which a receiver drops (§12.2, §17.2) while it
			 * keeps the Initial before it. */
			memset(buf + len, 0, k->pad_first_to - len);
			len = k->pad_first_to;
			k->pad_first_to = 0;
		}
		/* The attacker's copy of a short-header packet (§17.3)
		 * leaves just ahead of the original. */
		if (k->copy_armed && !(buf[0] & 0x80) &&
		    send(k->copy_fd, buf, len, 0) == (ssize_t)len) {
			k->copy_armed = false;
			k->copies++;
			k->copy_bytes += len;
		}
		if (hx_send(k->h, buf, len) != 0)
			return -1;
	}
	return 0;
}

/* Run the connection for up to wait_ms (less if a timer is due). */
static void
cli_step(struct cli *k, int wait_ms)
{
	uint8_t buf[HX_DGRAM_MAX];
	uint64_t t = now_us(), due = dpq_conn_next_timeout(k->c);
	ssize_t n;

	if (due != UINT64_MAX && due > t && (due - t) / 1000 < (uint64_t)wait_ms)
		wait_ms = (int)((due - t) / 1000);
	if (due != UINT64_MAX && due <= t)
		wait_ms = 0;
	n = hx_recv(k->h, buf, sizeof(buf), wait_ms);
	while (n > 0) {
		if (!k->silent)
			dpq_conn_recv(k->c, buf, (size_t)n, NULL, now_us());
		n = hx_recv(k->h, buf, sizeof(buf), 0);
	}
	if (k->silent)
		return;
	t = now_us();
	dpq_conn_poll(k->c, t);
	if (dpq_conn_next_timeout(k->c) <= t)
		dpq_conn_on_timeout(k->c, t);
	cli_flush(k);
}

/* Run until the handshake completes or the connection closes. */
static bool
cli_handshake(struct cli *k, double secs)
{
	uint64_t end = now_us() + (uint64_t)(secs * 1e6);

	cli_flush(k);
	while (!k->established && !k->closed && now_us() < end)
		cli_step(k, 10);
	return k->established && !k->closed;
}

/* Run until closed (by either side) or for secs. */
static void
cli_until_closed(struct cli *k, double secs)
{
	uint64_t end = now_us() + (uint64_t)(secs * 1e6);

	while (!k->closed && dpq_conn_state(k->c) < DPQ_CONN_CLOSING &&
	       now_us() < end)
		cli_step(k, 10);
}

/*
 * Did the server close with transport error want? Prints what it saw.
 */
static enum hx_rc
expect_close(struct cli *k, const char *mode, uint64_t want)
{
	const struct dpq_conn_close_info *ci;

	if (dpq_conn_state(k->c) < DPQ_CONN_CLOSING) {
		printf("%s: saw no CONNECTION_CLOSE (state %s), expected %s\n",
				mode, dpq_conn_state_str(dpq_conn_state(k->c)),
				dpq_transport_error_str(want));
		return HX_FAIL;
	}
	ci = dpq_conn_close_info(k->c);
	printf("%s: connection closed by %s: %s error 0x%lx (%s) frame 0x%lx "
		"reason \"%s\"%s\n", mode, ci->remote ? "server" : "us",
		ci->app ? "application" : "transport",
		(unsigned long)ci->error_code,
		ci->app ? "-" : dpq_transport_error_str(ci->error_code),
		(unsigned long)ci->frame_type, ci->reason,
		ci->idle ? " (idle)" : "");
	if (!ci->remote || ci->app || ci->idle || ci->error_code != want) {
		printf("%s: FAIL: expected the server's CONNECTION_CLOSE with "
			"%s (0x%lx)\n", mode, dpq_transport_error_str(want),
			(unsigned long)want);
		return HX_FAIL;
	}
	printf("%s: PASS\n", mode);
	return HX_PASS;
}

/*
 * Send one packet of our own at epoch e on the connection's keys and
 * packet numbers: frames as given, padded so the datagram is at least
 * pad_to bytes. The loss state learns the packet number, so the server's
 * ACK of it is no "ACK of an unsent packet" to our engine.
 */
static int
inject(struct cli *k, enum dpq_epoch e, const uint8_t *frames, size_t flen,
		size_t pad_to)
{
	struct dpq_conn *c = k->c;
	enum dpq_pn_space sp = dpq_epoch_space(e);
	uint8_t buf[HX_DGRAM_MAX];
	uint8_t *end = buf + sizeof(buf) - DPQ_CRYPTO_TAG_LEN;
	uint8_t *pl, *lenf = NULL, *p;
	struct dpq_seal_op op = { 0 };
	uint64_t pn;
	size_t hdr;

	if (c->tx[e] == NULL || c->tx[e]->alg == 0) {
		fprintf(stderr, "dpq-hostile: no keys at epoch %d\n", e);
		return -1;
	}
	pn = c->b->pns[sp].next_pn++;
	if (e == DPQ_EPOCH_1RTT) {
		pl = dpq_pkt_write_short(buf, end, c->dcid.bytes, c->dcid.len,
				false, c->key_phase != 0, pn, 4);
	} else {
		struct dpq_pkt_long_desc d = { 0 };

		d.type = e == DPQ_EPOCH_INITIAL ? DPQ_PKT_INITIAL :
			DPQ_PKT_HANDSHAKE;
		d.version = DPQ_VERSION_1;
		d.dcid = c->dcid.bytes;
		d.dcid_len = c->dcid.len;
		d.scid = c->scid.bytes;
		d.scid_len = c->scid.len;
		if (c->hss != NULL) {	/* gone after the handshake */
			d.token = c->hss->token;
			d.token_len = c->hss->token_len;
		}
		d.pn = pn;
		d.pn_len = 4;
		pl = dpq_pkt_write_long(buf, end, &d, &lenf);
	}
	if (pl == NULL || flen > (size_t)(end - pl))
		return -1;
	memcpy(pl, frames, flen);
	p = pl + flen;
	hdr = (size_t)(p - buf) + DPQ_CRYPTO_TAG_LEN;
	if (pad_to > hdr) {
		if (pad_to - hdr > (size_t)(end - p))
			return -1;
		memset(p, 0, pad_to - hdr);	/* PADDING frames */
		p += pad_to - hdr;
	}
	if (lenf != NULL && dpq_pkt_patch_length(lenf, (uint64_t)(p - pl) +
			4 + DPQ_CRYPTO_TAG_LEN) != 0)
		return -1;
	op.key = c->tx[e];
	op.pkt = buf;
	op.pn = pn;
	op.len = (uint16_t)(p - buf);
	op.pn_offset = (uint16_t)(pl - 4 - buf);
	op.pn_len = 4;
	if (dpq_crypto_seal_burst(c->crypto, &op, 1) != 1)
		return -1;
	if (c->b->loss.sp[sp].largest_sent == DPQ_PN_NONE ||
	    c->b->loss.sp[sp].largest_sent < pn)
		c->b->loss.sp[sp].largest_sent = pn;
	return hx_send(k->h, buf, (size_t)op.len + DPQ_CRYPTO_TAG_LEN);
}

/* ---- raw Initials ---------------------------------------------------------- */

/* A client Initial carrying ch (CRYPTO at offset 0; ch NULL: a PING) for
 * dcid, sealed; the datagram is padded to pad_to (PADDING frames).
 * Returns its length. */
static ssize_t
raw_initial(struct hx *h, const uint8_t *dcid, const uint8_t *scid,
		const uint8_t *ch, size_t ch_len, size_t pad_to,
		uint8_t *buf, size_t cap)
{
	struct dpq_pp_key *key;
	struct dpq_pkt_long_desc d = { 0 };
	struct dpq_seal_op op = { 0 };
	uint8_t *end = buf + cap - DPQ_CRYPTO_TAG_LEN, *pl, *lenf, *p;
	size_t used;
	void *mem;

	if (posix_memalign(&mem, 64, sizeof(*key)) != 0)
		return -1;
	key = mem;
	memset(key, 0, sizeof(*key));
	if (dpq_pp_key_init_initial(h->cc, key, dcid, 8, false) != 0) {
		free(key);
		return -1;
	}
	d.type = DPQ_PKT_INITIAL;
	d.version = DPQ_VERSION_1;
	d.dcid = dcid;
	d.dcid_len = 8;
	d.scid = scid;
	d.scid_len = 8;
	d.pn = 0;
	d.pn_len = 4;
	pl = dpq_pkt_write_long(buf, end, &d, &lenf);
	if (pl != NULL && ch == NULL) {
		*pl = 0x01;	/* no ClientHello: a PING */
		p = pl + 1;
	} else {
		p = pl == NULL ? NULL :
			dpq_frame_encode_crypto_hdr(pl, end, 0, ch_len);
		if (p == NULL || ch_len > (size_t)(end - p))
			goto fail;
		memcpy(p, ch, ch_len);
		p += ch_len;
	}
	if (p == NULL)
		goto fail;
	used = (size_t)(p - buf) + DPQ_CRYPTO_TAG_LEN;
	if (pad_to > used) {
		if (pad_to - used > (size_t)(end - p))
			goto fail;
		memset(p, 0, pad_to - used);
		p += pad_to - used;
	}
	if (dpq_pkt_patch_length(lenf, (uint64_t)(p - pl) + 4 +
			DPQ_CRYPTO_TAG_LEN) != 0)
		goto fail;
	op.key = key;
	op.pkt = buf;
	op.pn = 0;
	op.len = (uint16_t)(p - buf);
	op.pn_offset = (uint16_t)(pl - 4 - buf);
	op.pn_len = 4;
	if (dpq_crypto_seal_burst(h->cc, &op, 1) != 1)
		goto fail;
	dpq_pp_key_destroy(key);
	free(key);
	return (ssize_t)op.len + DPQ_CRYPTO_TAG_LEN;
fail:
	dpq_pp_key_destroy(key);
	free(key);
	return -1;
}

/* A ClientHello from a real TLS handshake (connection thrown away). */
static int
get_client_hello(struct hx *h, uint8_t *ch, size_t *ch_len)
{
	struct dpq_conn_conf conf = { .role = DPQ_ROLE_CLIENT };
	struct cli k;

	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0 || k.ch_len == 0) {
		cli_free(&k);
		return -1;
	}
	memcpy(ch, k.ch, k.ch_len);
	*ch_len = k.ch_len;
	cli_free(&k);
	return 0;
}

/* Read what arrived without waiting; adds datagrams and bytes. */
static void
hx_drain(struct hx *h, unsigned int *n, size_t *bytes)
{
	uint8_t buf[HX_DGRAM_MAX];
	ssize_t r;

	while ((r = hx_recv(h, buf, sizeof(buf), 0)) > 0) {
		(*n)++;
		*bytes += (size_t)r;
	}
}

/*
 * Half-open flood from one real host (issue 7): count Initials, each a new
 * connection (fresh DCID) carrying the same valid ClientHello, so the
 * server starts a real handshake that never completes. The server's
 * replies to our unvalidated address are at most 3x what we sent (RFC
 * 9000 §8.1); whether it kept a bounded number of them is the script's
 * check (its stats).
 */
static enum hx_rc
mode_halfopen(struct hx *h, bool ping)
{
	const char *mode = ping ? "halfopen-ping" : "halfopen";
	struct dpq_conn_conf conf = { .role = DPQ_ROLE_CLIENT };
	uint8_t dcid[8], scid[8], dg[1500];
	unsigned int i, replies = 0;
	size_t sent_bytes = 0, got_bytes = 0, extra = 0;
	uint64_t t0 = now_us();
	struct cli k;
	ssize_t n;

	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0 || k.ch_len == 0) {
		cli_free(&k);
		return HX_ERR;
	}
	/* The ClientHello's initial_source_connection_id is this SCID. */
	memcpy(scid, k.c->scid.bytes, 8);
	for (i = 0; i < h->count; i++) {
		rnd(dcid, sizeof(dcid));
		n = raw_initial(h, dcid, scid, ping ? NULL : k.ch, k.ch_len,
				1200, dg, sizeof(dg));
		if (n < 0) {
			cli_free(&k);
			return HX_ERR;
		}
		if (hx_send(h, dg, (size_t)n) == 0)
			sent_bytes += (size_t)n;
		/* Paced so the tap does not drop our own flood. */
		if (i % 32 == 31) {
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
		hx_drain(h, &replies, &got_bytes);
	}
	replies += hx_listen(h, 1500, &extra);
	got_bytes += extra;
	cli_free(&k);
	printf("%s: %u handshakes opened in %.1f s, %zu bytes sent; "
		"%u datagrams (%zu bytes) back: %.2fx\n", mode, h->count,
		(double)(now_us() - t0) / 1e6, sent_bytes, replies, got_bytes,
		sent_bytes ? (double)got_bytes / (double)sent_bytes : 0.0);
	if (got_bytes > 3 * sent_bytes) {
		printf("%s: FAIL: more than 3x to an unvalidated "
			"address (RFC 9000 §8.1)\n", mode);
		return HX_FAIL;
	}
	printf("%s: PASS\n", mode);
	return HX_PASS;
}

static void conf_default(struct dpq_conn_conf *conf);
static int cli_request(struct cli *k, const char *path, bool fin,
		uint64_t *id);

/*
 * A client that asks and never reads (issue 7 §3): one connection opening
 * --streams requests for --file (as many as the server's MAX_STREAMS lets
 * at a time, the next ones as streams close) with a receive window of
 * --window per stream, acknowledging everything but reading nothing, for
 * --duration seconds; then it goes away without closing. The server must
 * keep its memory within its budget and serve others meanwhile (the
 * script measures that).
 */
static enum hx_rc
mode_noread(struct hx *h)
{
	struct dpq_conn_conf conf;
	unsigned int opened = 0;
	uint64_t end, id;
	struct cli k;

	conf_default(&conf);
	conf.max_stream_data = h->window;
	conf.max_data = 64u << 20;
	conf.idle_timeout_ms = 30000;
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	k.no_read = true;
	if (!cli_handshake(&k, 10.0)) {
		cli_free(&k);
		return HX_ERR;
	}
	end = now_us() + (uint64_t)(h->duration * 1e6);
	while (now_us() < end && !k.closed &&
	       dpq_conn_state(k.c) < DPQ_CONN_CLOSING) {
		while (opened < h->streams &&
		       cli_request(&k, h->file, true, &id) == 0)
			opened++;
		cli_step(&k, 20);
	}
	printf("noread: %u of %u requests for %s sent, state %s after %.1f s\n",
		opened, h->streams, h->file,
		dpq_conn_state_str(dpq_conn_state(k.c)), h->duration);
	cli_free(&k);
	return opened > 0 ? HX_PASS : HX_FAIL;
}

/* Internet checksum of one buffer (RFC 1071). */
static uint16_t
csum(const uint8_t *p, size_t n, uint32_t sum)
{
	while (n > 1) {
		sum += (uint32_t)(p[0] << 8 | p[1]);
		p += 2;
		n -= 2;
	}
	if (n)
		sum += (uint32_t)(p[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * An Initial flood from spoofed sources (issue 7 §3): --count Initials,
 * each carrying a real ClientHello under a fresh DCID, from random
 * addresses in 198.19.0.0/16 and random ports, as fast as a raw socket
 * takes them. Nothing comes back to us (the replies go to addresses that
 * do not exist); the server's own counters say what it sent them.
 */
static enum hx_rc
mode_spoof(struct hx *h)
{
	struct dpq_conn_conf conf = { .role = DPQ_ROLE_CLIENT };
	uint8_t dcid[8], scid[8], pkt[1600];
	uint64_t t0 = now_us(), sent = 0;
	struct sockaddr_in to = h->dst;
	unsigned int i;
	struct cli k;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one,
			sizeof(one)) != 0) {
		fprintf(stderr, "dpq-hostile: raw socket: %s\n",
				strerror(errno));
		if (fd >= 0)
			close(fd);
		return HX_ERR;
	}
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0 || k.ch_len == 0) {
		cli_free(&k);
		close(fd);
		return HX_ERR;
	}
	memcpy(scid, k.c->scid.bytes, 8);
	for (i = 0; i < h->count; i++) {
		uint8_t *ip = pkt, *udp = pkt + 20, r[4];
		ssize_t n;
		size_t len;
		uint32_t sum;

		rnd(dcid, sizeof(dcid));
		rnd(r, sizeof(r));
		n = raw_initial(h, dcid, scid, k.ch, k.ch_len, 1200, pkt + 28,
				sizeof(pkt) - 28);
		if (n < 0)
			break;
		len = 28 + (size_t)n;
		memset(ip, 0, 28);
		ip[0] = 0x45;
		ip[2] = (uint8_t)(len >> 8);
		ip[3] = (uint8_t)len;
		ip[6] = 0x40;		/* DF */
		ip[8] = 64;
		ip[9] = IPPROTO_UDP;
		ip[12] = 198;
		ip[13] = 19;
		ip[14] = r[0];
		ip[15] = (uint8_t)(r[1] | 1);
		memcpy(ip + 16, &to.sin_addr, 4);
		udp[0] = (uint8_t)(r[2] | 0x80);
		udp[1] = r[3];
		memcpy(udp + 2, &to.sin_port, 2);
		udp[4] = (uint8_t)((len - 20) >> 8);
		udp[5] = (uint8_t)(len - 20);
		/* Pseudo-header + UDP header + payload. */
		sum = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 |
			ip[15]) + (uint32_t)(ip[16] << 8 | ip[17]) +
			(uint32_t)(ip[18] << 8 | ip[19]) + IPPROTO_UDP +
			(uint32_t)(len - 20);
		sum = (uint16_t)~csum(udp, len - 20, sum);
		udp[6] = (uint8_t)(csum(NULL, 0, sum) >> 8);
		udp[7] = (uint8_t)csum(NULL, 0, sum);
		if (sendto(fd, pkt, len, 0, (struct sockaddr *)&to,
				sizeof(to)) == (ssize_t)len)
			sent += (uint64_t)n;
		else if (errno == ENOBUFS || errno == EAGAIN)
			i--;	/* the queue is full: that is the line rate */
	}
	printf("spoof: %u Initials (%lu bytes of UDP payload) from "
		"198.19.0.0/16 in %.2f s\n", h->count, (unsigned long)sent,
		(double)(now_us() - t0) / 1e6);
	cli_free(&k);
	close(fd);
	return HX_PASS;
}

/* Read what arrived at the spoofed address: count it, answer nothing. */
static void
spoof_drain(int fd, unsigned int *dgrams, uint64_t *bytes, size_t *largest)
{
	uint8_t buf[HX_DGRAM_MAX];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		(*dgrams)++;
		*bytes += (uint64_t)n;
		if ((size_t)n > *largest)
			*largest = (size_t)n;
	}
}

/*
 * An on-path attacker (RFC 9000 §9.3.2, §21.5): it sees our packets and
 * sends copies from an address of its choosing (a second socket bound to
 * --spoof, which stands for the victim: it reads and counts, never
 * answers) just ahead of the originals, --count times while we fetch
 * --file (again and again until the copies are out), at most one per 50 ms so that our own next packets can bring
 * the server back in between (a faster attacker could hold the connection
 * hostage, which §9.3.3 accepts). PASS: the fetches complete, and the
 * spoofed address received no more than three times the bytes of the
 * copies (§8, §9.3.1), counted until 5 s after the last copy (a path
 * validation gives up after 3 PTOs, §8.2.4).
 */
static enum hx_rc
mode_onpath(struct hx *h)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct dpq_conn_conf conf;
	char host[64];
	const char *colon = h->spoof != NULL ? strrchr(h->spoof, ':') : NULL;
	uint64_t id, end, last_copy = 0, sp_bytes = 0;
	unsigned int sp_dgrams = 0, fetches = 0;
	size_t sp_largest = 0;
	struct cli k;
	int fd;

	if (colon == NULL || (size_t)(colon - h->spoof) >= sizeof(host)) {
		fprintf(stderr, "dpq-hostile: onpath needs --spoof IP:PORT\n");
		return HX_ERR;
	}
	memcpy(host, h->spoof, (size_t)(colon - h->spoof));
	host[colon - h->spoof] = '\0';
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    connect(fd, (struct sockaddr *)&h->dst, sizeof(h->dst)) != 0) {
		fprintf(stderr, "dpq-hostile: spoof socket %s: %s\n",
				h->spoof, strerror(errno));
		if (fd >= 0)
			close(fd);
		return HX_ERR;
	}
	conf_default(&conf);
	conf.idle_timeout_ms = 30000;
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0) {
		close(fd);
		return HX_ERR;
	}
	k.copy_fd = fd;
	if (!cli_handshake(&k, 10.0) ||
	    cli_request(&k, h->file, true, &id) != 0) {
		cli_free(&k);
		close(fd);
		return HX_ERR;
	}
	end = now_us() + (uint64_t)((h->timeout > 0 ? h->timeout : 60.0) *
			1e6);
	while (!k.closed && now_us() < end) {
		uint64_t t = now_us();

		/* Fetch again until all the copies went out. */
		if (k.fin) {
			fetches++;
			if (k.copies >= h->count)
				break;
			k.fin = false;
			if (cli_request(&k, h->file, true, &id) != 0)
				break;
		}

		/* Copies only once the handshake is confirmed (§9: no
		 * migration before) and data flows. */
		if (k.copies < h->count && !k.copy_armed &&
		    dpq_conn_handshake_confirmed(k.c) && k.bytes_in > 0 &&
		    t - last_copy >= 50000) {
			k.copy_armed = true;
			last_copy = t;
		}
		cli_step(&k, 5);
		spoof_drain(fd, &sp_dgrams, &sp_bytes, &sp_largest);
	}
	k.copy_armed = false;
	printf("onpath: fetches %u bytes %lu state %s (%s, the last one %s)\n",
		fetches, (unsigned long)k.bytes_in,
		dpq_conn_state_str(dpq_conn_state(k.c)), h->file,
		k.fin ? "complete" : "incomplete");
	/* The connection stays up (answering) while the last validation of
	 * the spoofed address runs out. */
	end = (last_copy > 0 ? last_copy : now_us()) + 5000000;
	while (now_us() < end && !k.closed) {
		cli_step(&k, 20);
		spoof_drain(fd, &sp_dgrams, &sp_bytes, &sp_largest);
	}
	spoof_drain(fd, &sp_dgrams, &sp_bytes, &sp_largest);
	if (!k.closed && dpq_conn_state(k.c) < DPQ_CONN_CLOSING) {
		dpq_conn_close(k.c, true, 0, "");
		cli_flush(&k);
	}
	printf("onpath: copies %u bytes %lu spoofed_dgrams %u spoofed_bytes "
		"%lu largest %zu\n", k.copies,
		(unsigned long)k.copy_bytes, sp_dgrams, (unsigned long)sp_bytes,
		sp_largest);
	cli_free(&k);
	close(fd);
	if (!k.fin || k.copies < h->count) {
		printf("onpath: FAIL: fetch %s, %u of %u copies sent\n",
			k.fin ? "complete" : "incomplete", k.copies, h->count);
		return HX_FAIL;
	}
	if (sp_bytes > 3 * k.copy_bytes) {
		printf("onpath: FAIL: the spoofed address got more than 3x "
			"what came from it (RFC 9000 §9.3.1)\n");
		return HX_FAIL;
	}
	printf("onpath: PASS\n");
	return HX_PASS;
}

static enum hx_rc
expect_silence(struct hx *h, const char *mode, unsigned int sent)
{
	size_t bytes;
	unsigned int n = hx_listen(h, HX_QUIET_MS, &bytes);

	if (n != 0) {
		printf("%s: FAIL: sent %u datagrams, got %u replies (%zu "
			"bytes), expected silence\n", mode, sent, n, bytes);
		return HX_FAIL;
	}
	printf("%s: sent %u datagrams, no reply in %d ms: PASS\n", mode, sent,
			HX_QUIET_MS);
	return HX_PASS;
}

/* ---- modes: raw datagrams ------------------------------------------- */

static enum hx_rc
mode_garbage(struct hx *h)
{
	uint8_t b[1500];
	unsigned int sent = 0, replies = 0, bad = 0, i;
	size_t sent_bytes = 0, got_bytes = 0;
	uint64_t end;
	enum hx_rc rc;

	/* A: nothing here can be a QUIC v1 packet or a reset trigger. */
	for (i = 0; i < 120; i++) {
		size_t len = 1 + (size_t)(i * 37 % 1400);

		rnd(b, sizeof(b));
		switch (i % 6) {
		case 0:		/* short header, fixed bit 0 */
			b[0] &= 0x3f;
			break;
		case 1:		/* v1 long header, fixed bit 0 */
			b[0] = (uint8_t)(0x80 | (b[0] & 0x3f));
			memcpy(b + 1, "\0\0\0\1", 4);
			if (len < 6)
				len = 6;
			break;
		case 2:		/* 1..20 bytes, any first byte */
			len = 1 + i % 20;
			break;
		case 3:		/* v1 Initial, DCID length 21..255 */
			b[0] = 0xc0;
			memcpy(b + 1, "\0\0\0\1", 4);
			b[5] = (uint8_t)(21 + b[5] % 235);
			len = len < 1200 ? 1200 : len;
			break;
		case 4:		/* v1 Handshake / 0-RTT for no connection */
			b[0] = (uint8_t)(0xc0 | ((i & 1) ? 0x20 : 0x10));
			memcpy(b + 1, "\0\0\0\1", 4);
			b[5] = 8;
			b[14] = 8;
			len = len < 1200 ? 1200 : len;
			break;
		default:	/* v1 long header cut inside the CIDs */
			b[0] = 0xc0;
			memcpy(b + 1, "\0\0\0\1", 4);
			b[5] = 20;
			len = 6 + i % 20;
			break;
		}
		if (hx_send(h, b, len) != 0)
			return HX_ERR;
		sent++;
	}
	rc = expect_silence(h, "garbage (not QUIC v1)", sent);

	/* B: random bytes. A server may answer a long header of another
	 * version with VN (>= 1200 bytes) and a short header with a
	 * Stateless Reset; nothing else, and never amplify (§8, §10.3.3). */
	sent = 0;
	for (i = 0; i < 200; i++) {
		size_t len = 1 + (size_t)(rnd(b, 2), (b[0] << 8 | b[1]) % 1400);

		rnd(b, len);
		if (hx_send(h, b, len) != 0)
			return HX_ERR;
		sent++;
		sent_bytes += len;
	}
	end = now_us() + HX_QUIET_MS * 1000u;
	while (now_us() < end) {
		uint8_t r[HX_DGRAM_MAX];
		struct dpq_pkt_hdr hd;
		ssize_t n = hx_recv(h, r, sizeof(r), 20);

		if (n <= 0)
			continue;
		replies++;
		got_bytes += (size_t)n;
		if (r[0] & 0x80) {
			if (dpq_pkt_parse(r, r + n, 0, &hd) != 0 ||
			    hd.type != DPQ_PKT_VN ||
			    !dpq_pkt_vn_has_version(&hd, DPQ_VERSION_1))
				bad++;
		} else if ((r[0] & 0x40) == 0 || n < 21 || n >= 1400) {
			bad++;
		}
	}
	printf("garbage (random): sent %u datagrams / %zu bytes, got %u "
		"replies / %zu bytes, %u not VN or reset shaped\n", sent,
		sent_bytes, replies, got_bytes, bad);
	if (bad != 0 || got_bytes > sent_bytes || replies > sent) {
		printf("garbage (random): FAIL\n");
		return HX_FAIL;
	}
	printf("garbage (random): PASS\n");
	return rc;
}

static enum hx_rc
mode_truncated(struct hx *h)
{
	uint8_t ch[4096], dg[1500], dcid[8], scid[8];
	unsigned int sent = 0;
	size_t ch_len, cut;
	ssize_t len;
	enum hx_rc rc;

	if (get_client_hello(h, ch, &ch_len) != 0)
		return HX_ERR;
	rnd(dcid, 8);
	rnd(scid, 8);
	len = raw_initial(h, dcid, scid, ch, ch_len, 1200, dg, sizeof(dg));
	if (len != 1200)
		return HX_ERR;
	/* Every cut of the header, then through the payload. */
	for (cut = 1; cut < (size_t)len; cut += cut < 64 ? 1 : 47) {
		if (hx_send(h, dg, cut) != 0)
			return HX_ERR;
		sent++;
	}
	if (hx_send(h, dg, 1199) != 0)
		return HX_ERR;
	sent++;
	rc = expect_silence(h, "truncated (cut below 1200)", sent);
	if (rc != HX_PASS)
		return rc;

	/* A 1250-byte datagram whose Initial claims to be longer. */
	rnd(dcid, 8);
	len = raw_initial(h, dcid, scid, ch, ch_len, 1300, dg, sizeof(dg));
	if (len != 1300 || hx_send(h, dg, 1250) != 0)
		return HX_ERR;
	return expect_silence(h, "truncated (Length past the datagram)", 1);
}

static enum hx_rc
mode_small(struct hx *h)
{
	uint8_t ch[4096], dg[1500], dcid[8], scid[8];
	static const size_t sizes[] = { 0, 600, 1000, 1199 };
	unsigned int i, sent = 0;
	size_t ch_len;
	ssize_t len;

	if (get_client_hello(h, ch, &ch_len) != 0)
		return HX_ERR;
	rnd(scid, 8);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* A fresh DCID each: every one would be a new connection. */
		rnd(dcid, 8);
		len = raw_initial(h, dcid, scid, ch, ch_len, sizes[i], dg,
				sizeof(dg));
		if (len <= 0 || len >= 1200 || hx_send(h, dg, (size_t)len) != 0)
			return HX_ERR;
		printf("small: sent a valid Initial in %zd bytes\n", len);
		sent++;
	}
	return expect_silence(h, "small", sent);
}

static enum hx_rc
mode_badaead(struct hx *h)
{
	uint8_t ch[4096], dg[1500], dcid[8], scid[8];
	unsigned int i;
	size_t ch_len;
	ssize_t len;

	if (get_client_hello(h, ch, &ch_len) != 0)
		return HX_ERR;
	rnd(scid, 8);
	for (i = 0; i < 3; i++) {
		rnd(dcid, 8);
		len = raw_initial(h, dcid, scid, ch, ch_len, 1200, dg,
				sizeof(dg));
		if (len != 1200)
			return HX_ERR;
		dg[len - 1 - i] ^= 0x5a;	/* in the AEAD tag */
		if (hx_send(h, dg, (size_t)len) != 0)
			return HX_ERR;
	}
	return expect_silence(h, "badaead", 3);
}

static enum hx_rc
mode_version(struct hx *h)
{
	uint8_t b[1500], r[HX_DGRAM_MAX];
	static const uint32_t versions[] = { 0x1a2a3a4a, 0xff00001d, 2 };
	struct dpq_pkt_hdr hd;
	unsigned int i;
	enum hx_rc rc = HX_PASS;

	for (i = 0; i < 3; i++) {
		uint32_t v = versions[i];
		ssize_t n;

		rnd(b, sizeof(b));
		b[0] = 0xc0;
		b[1] = (uint8_t)(v >> 24);
		b[2] = (uint8_t)(v >> 16);
		b[3] = (uint8_t)(v >> 8);
		b[4] = (uint8_t)v;
		b[5] = 8;		/* DCID b[6..14) */
		b[14] = 8;		/* SCID b[15..23) */
		if (hx_send(h, b, 1200) != 0)
			return HX_ERR;
		n = hx_recv(h, r, sizeof(r), 1000);
		if (n <= 0) {
			printf("version 0x%08x: FAIL: no Version Negotiation\n",
					v);
			rc = HX_FAIL;
			continue;
		}
		if (dpq_pkt_parse(r, r + n, 0, &hd) != 0 ||
		    hd.type != DPQ_PKT_VN || (r[0] & 0x80) == 0) {
			printf("version 0x%08x: FAIL: reply of %zd bytes is "
				"not a VN packet\n", v, n);
			rc = HX_FAIL;
			continue;
		}
		printf("version 0x%08x: VN of %zd bytes, %zu version(s):", v, n,
				hd.vn_count);
		for (size_t k = 0; k < hd.vn_count; k++)
			printf(" 0x%08x", dpq_pkt_vn_version(&hd, k));
		printf("\n");
		/* §17.2.1: DCID = our SCID, SCID = our DCID. */
		if (!dpq_pkt_vn_has_version(&hd, DPQ_VERSION_1) ||
		    hd.dcid_len != 8 || memcmp(hd.dcid, b + 15, 8) != 0 ||
		    hd.scid_len != 8 || memcmp(hd.scid, b + 6, 8) != 0 ||
		    n >= 1200) {
			printf("version 0x%08x: FAIL: VN must list 1 and echo "
				"the CIDs swapped\n", v);
			rc = HX_FAIL;
		}
	}
	if (rc == HX_PASS)
		printf("version (>= 1200 bytes): PASS\n");

	/* §5.2.2: below 1200 bytes, no VN. */
	b[1] = 0x1a;
	if (hx_send(h, b, 1199) != 0 || hx_send(h, b, 100) != 0)
		return HX_ERR;
	if (expect_silence(h, "version (< 1200 bytes)", 2) != HX_PASS)
		rc = HX_FAIL;
	/* §6.1: never answer a VN packet (its version list a whole
	 * number of 4-byte versions, so it parses as one). */
	memset(b + 1, 0, 4);
	if (hx_send(h, b, 1203) != 0)
		return HX_ERR;
	if (expect_silence(h, "version (a VN sent to the server)", 1) !=
			HX_PASS)
		rc = HX_FAIL;
	return rc;
}

static enum hx_rc
mode_sreset(struct hx *h)
{
	uint8_t b[1500], r[2][HX_DGRAM_MAX];
	ssize_t n[2];
	unsigned int i;

	rnd(b, sizeof(b));
	b[0] = (uint8_t)(0x40 | (b[0] & 0x3f));
	for (i = 0; i < 2; i++) {
		if (hx_send(h, b, 200) != 0)
			return HX_ERR;
		n[i] = hx_recv(h, r[i], sizeof(r[i]), 1000);
		if (n[i] <= 0) {
			printf("sreset: FAIL: no Stateless Reset for a 200-byte "
				"short header with an unknown DCID\n");
			return HX_FAIL;
		}
		printf("sreset: reply of %zd bytes, first byte 0x%02x\n", n[i],
				r[i][0]);
		/* §10.3: looks like a short header, >= 21 bytes (5 random +
		 * 16 token), shorter than its trigger (§10.3.3). */
		if ((r[i][0] & 0xc0) != 0x40 || n[i] < 21 || n[i] >= 200) {
			printf("sreset: FAIL: not a Stateless Reset\n");
			return HX_FAIL;
		}
	}
	/* §10.3.2: the token is a function of the CID. */
	if (memcmp(r[0] + n[0] - 16, r[1] + n[1] - 16, 16) != 0) {
		printf("sreset: FAIL: two resets for one DCID carry different "
			"tokens\n");
		return HX_FAIL;
	}
	printf("sreset: same token for the same DCID: PASS\n");
	/* Too short to answer without amplifying or revealing the token
	 * (§10.3.3: a reset must be smaller than its trigger, >= 21). */
	b[0] = 0x41;
	if (hx_send(h, b, 21) != 0 || hx_send(h, b, 12) != 0)
		return HX_ERR;
	return expect_silence(h, "sreset (trigger too short)", 2);
}

/* ---- modes: the engine, bent ------------------------------------------ */

static void
conf_default(struct dpq_conn_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->role = DPQ_ROLE_CLIENT;
	conf->idle_timeout_ms = 10000;
}

/* Open a bidi stream and ask for path (no FIN unless fin). */
static int
cli_request(struct cli *k, const char *path, bool fin, uint64_t *id)
{
	char req[512];
	int n = snprintf(req, sizeof(req), "GET %s\r\n", path);

	if (dpq_conn_stream_open(k->c, false, id) != 0)
		return -1;
	if (dpq_conn_stream_write(k->c, *id, req, (size_t)n, fin) != n)
		return -1;
	return cli_flush(k);
}

static enum hx_rc
mode_oversize(struct hx *h)
{
	static const size_t sizes[] = { 1472, 1500, 2000, 4000, 8000 };
	enum hx_rc rc = HX_PASS;
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct dpq_conn_conf conf;
		struct cli k;
		bool ok;

		conf_default(&conf);
		if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
			return HX_ERR;
		k.pad_first_to = sizes[i];
		ok = cli_handshake(&k, 4.0);
		if (ok) {
			printf("oversize %zu: handshake completed\n",
					sizes[i]);
			dpq_conn_close(k.c, true, 0, "");
			cli_flush(&k);
		} else if (k.closed ||
			   dpq_conn_state(k.c) >= DPQ_CONN_CLOSING) {
			const struct dpq_conn_close_info *ci =
				dpq_conn_close_info(k.c);

			printf("oversize %zu: FAIL: connection closed, error "
				"0x%lx (%s, %s)\n", sizes[i],
				(unsigned long)ci->error_code,
				dpq_transport_error_str(ci->error_code),
				ci->remote ? "server" : "us");
			rc = HX_FAIL;
		} else if (k.c->b->stats.pkts_recv == 0) {
			printf("oversize %zu: dropped silently\n", sizes[i]);
		} else {
			printf("oversize %zu: FAIL: the server answered but "
				"the handshake did not complete\n", sizes[i]);
			rc = HX_FAIL;
		}
		cli_free(&k);
	}
	printf("oversize: %s\n", rc == HX_PASS ? "PASS" : "FAIL");
	return rc;
}

struct tp_case {
	const char *mode;
	uint32_t drop;		/* our parameters to leave out */
	uint8_t extra[32];	/* raw id, length, value */
	size_t extra_len;
};

static const struct tp_case tp_cases[] = {
	{ "tp-ack-exp", DPQ_TP_BIT(DPQ_TP_ACK_DELAY_EXPONENT),
		{ 0x0a, 0x01, 21 }, 3 },
	{ "tp-udp-size", DPQ_TP_BIT(DPQ_TP_MAX_UDP_PAYLOAD_SIZE),
		{ 0x03, 0x02, 0x43, 0xe8 }, 4 },		/* 1000 */
	{ "tp-ack-delay", DPQ_TP_BIT(DPQ_TP_MAX_ACK_DELAY),
		{ 0x0b, 0x04, 0x80, 0x00, 0x40, 0x00 }, 6 },	/* 2^14 */
	{ "tp-cid-limit", DPQ_TP_BIT(DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT),
		{ 0x0e, 0x01, 0x01 }, 3 },
	{ "tp-dup", 0,
		{ 0x04, 0x01, 0x00, 0x04, 0x01, 0x00 }, 6 },	/* max_data */
	{ "tp-server-only", 0,
		{ 0x02, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
		  15, 16 }, 18 },			/* reset token */
	{ "tp-truncated", 0, { 0x21, 0x10, 0x01 }, 3 },	/* len past end */
};

static enum hx_rc
mode_tp(struct hx *h, const struct tp_case *tc)
{
	struct dpq_conn_conf conf;
	struct cli k;
	enum hx_rc rc;

	conf_default(&conf);
	if (cli_start(h, &k, &conf, tc->drop, tc->extra, tc->extra_len) != 0)
		return HX_ERR;
	if (cli_handshake(&k, 10.0))
		printf("%s: the handshake completed\n", tc->mode);
	cli_until_closed(&k, 1.0);
	rc = expect_close(&k, tc->mode, DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	cli_free(&k);
	return rc;
}

/* CRYPTO frame at an offset far past the receive buffer (§7.5). */
static size_t
crypto_far(uint8_t *buf, size_t cap)
{
	static const uint8_t junk[64];
	uint8_t *p = dpq_frame_encode_crypto_hdr(buf, buf + cap,
			4 * DPQ_RECVBUF_CRYPTO_MAX, sizeof(junk));

	if (p == NULL || (size_t)(buf + cap - p) < sizeof(junk))
		return 0;
	memcpy(p, junk, sizeof(junk));
	return (size_t)(p - buf) + sizeof(junk);
}

static enum hx_rc
mode_crypto(struct hx *h, bool initial)
{
	const char *mode = initial ? "crypto-initial" : "crypto-1rtt";
	struct dpq_conn_conf conf;
	uint8_t fr[256];
	size_t n = crypto_far(fr, sizeof(fr));
	struct cli k;
	enum hx_rc rc;

	conf_default(&conf);
	if (n == 0 || cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	if (initial) {
		/* Right behind our ClientHello, before the server's reply. */
		if (cli_flush(&k) != 0 ||
		    inject(&k, DPQ_EPOCH_INITIAL, fr, n, 1200) != 0)
			return HX_ERR;
	} else {
		if (!cli_handshake(&k, 10.0)) {
			printf("%s: handshake failed\n", mode);
			cli_free(&k);
			return HX_ERR;
		}
		cli_until_closed(&k, 0.05);
		if (inject(&k, DPQ_EPOCH_1RTT, fr, n, 0) != 0)
			return HX_ERR;
	}
	cli_until_closed(&k, 2.0);
	rc = expect_close(&k, mode, DPQ_TE_CRYPTO_BUFFER_EXCEEDED);
	cli_free(&k);
	return rc;
}

/* STREAM frames with data at [off, off + len) on streams ids[0..n). */
static size_t
stream_frames(uint8_t *buf, size_t cap, const uint64_t *ids, unsigned int n,
		uint64_t off, size_t len)
{
	static const uint8_t data[64];
	uint8_t *p = buf, *end = buf + cap;
	unsigned int i;

	for (i = 0; i < n; i++) {
		p = dpq_frame_encode_stream_hdr(p, end, ids[i], off, len, false,
				true);
		if (p == NULL || (size_t)(end - p) < len || len > sizeof(data))
			return 0;
		memcpy(p, data, len);
		p += len;
	}
	return (size_t)(p - buf);
}

static enum hx_rc
mode_flow(struct hx *h, bool conn_level)
{
	const char *mode = conn_level ? "flow-conn" : "flow-stream";
	struct dpq_conn_conf conf;
	uint8_t fr[512];
	uint64_t ids[8], max_sd, max_d, off;
	unsigned int i, n;
	size_t len;
	struct cli k;
	enum hx_rc rc;

	conf_default(&conf);
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	if (!cli_handshake(&k, 10.0)) {
		printf("%s: handshake failed\n", mode);
		cli_free(&k);
		return HX_ERR;
	}
	max_sd = k.c->b->peer_tp.initial_max_stream_data_bidi_remote;
	max_d = k.c->b->peer_tp.initial_max_data;
	printf("%s: server initial_max_stream_data_bidi_remote %lu, "
		"initial_max_data %lu\n", mode, (unsigned long)max_sd,
		(unsigned long)max_d);
	if (!conn_level) {
		/* One byte past the stream's limit, first frame on it. */
		ids[0] = 0;
		n = 1;
		off = max_sd;
		len = 1;
	} else {
		/* Streams each within max_sd, together past max_d: the
		 * connection counts the highest offset of each (§4.1). */
		if (max_sd == 0 || max_sd > max_d) {
			printf("%s: cannot split the limit\n", mode);
			cli_free(&k);
			return HX_ERR;
		}
		n = (unsigned int)(max_d / max_sd) + 1;
		if (n > 8) {
			cli_free(&k);
			return HX_ERR;
		}
		for (i = 0; i < n; i++)
			ids[i] = 4u * i;
		len = 16;
		off = max_sd - len;
	}
	len = stream_frames(fr, sizeof(fr), ids, n, off, len);
	/* Let the handshake settle (HANDSHAKE_DONE, ACKs) first. */
	cli_until_closed(&k, 0.05);
	if (len == 0 || inject(&k, DPQ_EPOCH_1RTT, fr, len, 0) != 0) {
		cli_free(&k);
		return HX_ERR;
	}
	cli_until_closed(&k, 2.0);
	rc = expect_close(&k, mode, DPQ_TE_FLOW_CONTROL_ERROR);
	cli_free(&k);
	return rc;
}

/* The engine's own STREAM frames past the limit: credit raised. */
static enum hx_rc
mode_flow_engine(struct hx *h)
{
	static uint8_t junk[64 * 1024];
	struct dpq_conn_conf conf;
	struct dpq_qstream *qs;
	uint64_t id, total = 0, target;
	struct cli k;
	enum hx_rc rc;

	conf_default(&conf);
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	if (!cli_handshake(&k, 10.0)) {
		cli_free(&k);
		return HX_ERR;
	}
	if (dpq_conn_stream_open(k.c, false, &id) != 0 ||
	    (qs = dpq_conn_stream_find(k.c, id)) == NULL) {
		cli_free(&k);
		return HX_ERR;
	}
	/* No line end: hq keeps reading the request line (it never
	 * completes), then refuses it; the violation comes first as our
	 * window below covers the whole limit at once. */
	memset(junk, 'x', sizeof(junk));
	target = 2 * k.c->b->peer_tp.initial_max_stream_data_bidi_remote +
		sizeof(junk);
	qs->s.tx_fc.max = UINT64_C(1) << 40;
	k.c->tx_fc.max = UINT64_C(1) << 40;
	k.c->b->cc.cwnd = 16u << 20;
	printf("flow-engine: writing %lu bytes on stream %lu, server's "
		"stream limit %lu\n", (unsigned long)target, (unsigned long)id,
		(unsigned long)k.c->b->peer_tp.initial_max_stream_data_bidi_remote);
	while (total < target && !k.closed &&
	       dpq_conn_state(k.c) < DPQ_CONN_CLOSING) {
		ssize_t w = dpq_conn_stream_write(k.c, id, junk, sizeof(junk),
				false);

		if (w < 0)
			break;
		total += (uint64_t)w;
		cli_flush(&k);
		if (w == 0)
			cli_step(&k, 1);
	}
	cli_until_closed(&k, 3.0);
	rc = expect_close(&k, "flow-engine", DPQ_TE_FLOW_CONTROL_ERROR);
	cli_free(&k);
	return rc;
}

static enum hx_rc
mode_streams(struct hx *h)
{
	struct dpq_conn_conf conf;
	uint64_t limit, id, i;
	struct cli k;
	enum hx_rc rc;

	conf_default(&conf);
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	if (!cli_handshake(&k, 10.0)) {
		cli_free(&k);
		return HX_ERR;
	}
	limit = k.c->b->peer_tp.initial_max_streams_bidi;
	printf("streams: server initial_max_streams_bidi %lu, opening %lu\n",
			(unsigned long)limit, (unsigned long)(limit + 5));
	/* Our view of the peer's MAX_STREAMS, raised. */
	k.c->streams_tx[0].max = limit + 100;
	for (i = 0; i < limit + 5; i++) {
		/* One byte, no line end, no FIN: no stream can finish and
		 * give the credit back. */
		if (dpq_conn_stream_open(k.c, false, &id) != 0 ||
		    dpq_conn_stream_write(k.c, id, "G", 1, false) != 1) {
			printf("streams: could not open stream %lu\n",
					(unsigned long)i);
			cli_free(&k);
			return HX_ERR;
		}
	}
	cli_flush(&k);
	cli_until_closed(&k, 2.0);
	rc = expect_close(&k, "streams", DPQ_TE_STREAM_LIMIT_ERROR);
	cli_free(&k);
	return rc;
}

static enum hx_rc
mode_silent(struct hx *h)
{
	struct dpq_conn_conf conf;
	uint64_t id, t_silent, t_last, end;
	unsigned int after = 0;
	struct cli k;

	conf_default(&conf);
	conf.idle_timeout_ms = HX_IDLE_MS;
	if (cli_start(h, &k, &conf, 0, NULL, 0) != 0)
		return HX_ERR;
	if (!cli_handshake(&k, 10.0) ||
	    cli_request(&k, h->file, true, &id) != 0) {
		cli_free(&k);
		return HX_ERR;
	}
	end = now_us() + 3000000;
	while (k.bytes_in < 200 * 1024 && !k.closed && now_us() < end)
		cli_step(&k, 10);
	if (k.bytes_in < 200 * 1024) {
		printf("silent: only %lu bytes of %s arrived\n",
				(unsigned long)k.bytes_in, h->file);
		cli_free(&k);
		return HX_ERR;
	}
	printf("silent: %lu bytes of %s received, going silent\n",
			(unsigned long)k.bytes_in, h->file);
	k.silent = true;
	t_silent = t_last = now_us();
	/* The server may send for a while (PTO probes) but must give up
	 * after the idle timeout: §10.1, the smaller of both sides' values
	 * (ours: HX_IDLE_MS), at least 3 PTO. */
	end = t_silent + (uint64_t)(HX_IDLE_MS + 9000) * 1000u;
	while (now_us() < end) {
		uint8_t buf[HX_DGRAM_MAX];

		if (hx_recv(h, buf, sizeof(buf), 50) > 0) {
			t_last = now_us();
			after++;
		}
		if (now_us() - t_last > 3000000)
			break;
	}
	printf("silent: the server sent %u datagrams after we went silent, "
		"the last %.3f s in\n", after, (double)(t_last - t_silent) / 1e6);
	cli_free(&k);
	if (now_us() - t_last <= 3000000) {
		printf("silent: FAIL: still sending %.1f s after we went "
			"silent (idle timeout %d ms)\n",
			(double)(now_us() - t_silent) / 1e6, HX_IDLE_MS);
		return HX_FAIL;
	}
	printf("silent: PASS (the server's side is checked in its stats)\n");
	return HX_PASS;
}

/* ---- main ------------------------------------------------------------ */

static void
usage(void)
{
	fprintf(stderr, "usage: dpq-hostile [--file PATH] [--count N] "
		"[--streams N] [--window B] [--duration S] [--from IP] "
		"[--spoof IP:PORT] [--timeout S] MODE IP:PORT\n"
		"modes: garbage truncated small badaead version sreset "
		"oversize\n       tp-ack-exp tp-udp-size tp-ack-delay "
		"tp-cid-limit tp-dup tp-server-only\n       tp-truncated "
		"crypto-initial crypto-1rtt flow-stream flow-conn\n"
		"       flow-engine streams silent halfopen halfopen-ping "
		"noread spoof onpath\n");
}

static int
open_socket(const char *addr, const char *from)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(addr, ':');
	int fd;

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (from != NULL && inet_pton(AF_INET, from, &src.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -1;
	/* --from: attack from an address of our own, so that a good client
	 * elsewhere in the namespace is not this host for the server's
	 * per-source limits. */
	if (from != NULL &&
	    bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
		close(fd);
		return -1;
	}
	/* Big datagrams leave whole or not at all (oversize mode). */
	{
		int v = IP_PMTUDISC_DONT;

		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
		v = 4 << 20;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
main(int argc, char **argv)
{
	struct dpq_tls_ctx_conf tc = { 0 };
	struct hx h = { .fd = -1, .file = "/big", .count = 5000,
		.streams = 100, .duration = 10 };
	const char *mode, *from = NULL;
	enum hx_rc rc = HX_ERR;
	int i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (i < argc && strncmp(argv[i], "--", 2) == 0) {
		if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
			h.file = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc &&
			   atoi(argv[i + 1]) > 0) {
			h.count = (unsigned int)atoi(argv[i + 1]);
			i += 2;
		} else if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc &&
			   atoi(argv[i + 1]) > 0) {
			h.streams = (unsigned int)atoi(argv[i + 1]);
			i += 2;
		} else if (strcmp(argv[i], "--spoof") == 0 && i + 1 < argc) {
			h.spoof = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc &&
			   atof(argv[i + 1]) > 0) {
			h.timeout = atof(argv[i + 1]);
			i += 2;
		} else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc) {
			from = argv[i + 1];
			i += 2;
		} else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
			h.window = strtoull(argv[i + 1], NULL, 0);
			i += 2;
		} else if (strcmp(argv[i], "--duration") == 0 && i + 1 < argc &&
			   atof(argv[i + 1]) > 0) {
			h.duration = atof(argv[i + 1]);
			i += 2;
		} else {
			usage();
			return HX_ERR;
		}
	}
	if (argc - i != 2) {
		usage();
		return HX_ERR;
	}
	mode = argv[i];
	h.fd = open_socket(argv[i + 1], from);
	if (h.fd < 0) {
		fprintf(stderr, "dpq-hostile: bad address %s (or --from %s)\n",
			argv[i + 1], from != NULL ? from : "-");
		return HX_ERR;
	}
	{
		socklen_t sl = sizeof(h.dst);

		getpeername(h.fd, (struct sockaddr *)&h.dst, &sl);
	}
	h.cc = dpq_crypto_create();
	tc.role = DPQ_TLS_CLIENT;
	tc.alpn[0] = "hq-interop";
	tc.alpn_count = 1;
	tc.server_name = "dpquicd";
	if (h.cc == NULL || dpq_tls_ctx_create(&tc, &h.tls) != 0) {
		fprintf(stderr, "dpq-hostile: crypto/TLS setup failed\n");
		goto out;
	}

	if (strcmp(mode, "garbage") == 0)
		rc = mode_garbage(&h);
	else if (strcmp(mode, "truncated") == 0)
		rc = mode_truncated(&h);
	else if (strcmp(mode, "small") == 0)
		rc = mode_small(&h);
	else if (strcmp(mode, "badaead") == 0)
		rc = mode_badaead(&h);
	else if (strcmp(mode, "version") == 0)
		rc = mode_version(&h);
	else if (strcmp(mode, "sreset") == 0)
		rc = mode_sreset(&h);
	else if (strcmp(mode, "oversize") == 0)
		rc = mode_oversize(&h);
	else if (strcmp(mode, "crypto-initial") == 0)
		rc = mode_crypto(&h, true);
	else if (strcmp(mode, "crypto-1rtt") == 0)
		rc = mode_crypto(&h, false);
	else if (strcmp(mode, "flow-stream") == 0)
		rc = mode_flow(&h, false);
	else if (strcmp(mode, "flow-conn") == 0)
		rc = mode_flow(&h, true);
	else if (strcmp(mode, "flow-engine") == 0)
		rc = mode_flow_engine(&h);
	else if (strcmp(mode, "streams") == 0)
		rc = mode_streams(&h);
	else if (strcmp(mode, "silent") == 0)
		rc = mode_silent(&h);
	else if (strcmp(mode, "halfopen") == 0)
		rc = mode_halfopen(&h, false);
	else if (strcmp(mode, "halfopen-ping") == 0)
		rc = mode_halfopen(&h, true);
	else if (strcmp(mode, "noread") == 0)
		rc = mode_noread(&h);
	else if (strcmp(mode, "spoof") == 0)
		rc = mode_spoof(&h);
	else if (strcmp(mode, "onpath") == 0)
		rc = mode_onpath(&h);
	else {
		size_t k;

		for (k = 0; k < sizeof(tp_cases) / sizeof(tp_cases[0]); k++)
			if (strcmp(mode, tp_cases[k].mode) == 0)
				break;
		if (k == sizeof(tp_cases) / sizeof(tp_cases[0])) {
			usage();
			goto out;
		}
		rc = mode_tp(&h, &tp_cases[k]);
	}
	if (rc == HX_ERR)
		fprintf(stderr, "dpq-hostile: %s: could not run the test\n",
				mode);
out:
	dpq_tls_ctx_destroy(h.tls);
	dpq_crypto_destroy(h.cc);
	if (h.fd >= 0)
		close(h.fd);
	return (int)rc;
}
