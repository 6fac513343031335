/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regression tests for the defects of a security audit (issue 7 §1) in
 * the connection engine: each builds the hostile input with the peer's
 * keys (tests/lib/peer_seal.c) and checks what RFC 9000/9001 require.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn_pair.h"
#include "control/tls/tls.h"
#include "dataplane/crypto/retry.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/membudget.h"
#include "dataplane/engine/tparams.h"
#include "dataplane/quic/conn_int.h"
#include "tests/lib/peer_seal.h"

#define NOW 1000000ull

static int
null_hs_recv(void *hs, struct dpq_conn *c, enum dpq_epoch e,
		const uint8_t *d, size_t len)
{
	(void)hs; (void)c; (void)e; (void)d; (void)len;
	return 0;
}

static const struct dpq_hs_ops null_hs = { .recv = null_hs_recv };

/* A connection without a TLS service: the test plays the handshake. */
struct lone {
	struct dpq_crypto *cc;
	struct dpq_conn_conf conf;
	struct dpq_conn_init in;
	struct dpq_conn *c;
	struct dpq_cid server_cid;	/* client: the server's SCID */
};

static void
lone_init(struct lone *l, enum dpq_role role)
{
	memset(l, 0, sizeof(*l));
	l->cc = dpq_crypto_create();
	assert_non_null(l->cc);
	l->conf.role = role;
	l->in.conf = &l->conf;
	l->in.crypto = l->cc;
	l->in.hs_ops = &null_hs;
	l->in.scid.len = 8;
	memset(l->in.scid.bytes, 0x11, 8);
	l->in.dcid.len = 8;
	memset(l->in.dcid.bytes, 0x22, 8);
	if (role == DPQ_ROLE_SERVER) {
		l->in.peer_scid.len = 8;
		memset(l->in.peer_scid.bytes, 0x33, 8);
	}
	l->server_cid.len = 8;
	memset(l->server_cid.bytes, 0x44, 8);
	l->in.now = NOW;
	assert_int_equal(dpq_conn_create(&l->in, &l->c), 0);
}

static void
lone_free(struct lone *l)
{
	dpq_conn_destroy(l->c);
	dpq_crypto_destroy(l->cc);
}

static size_t
frame(uint8_t *p, size_t cap, const struct dpq_frame *f)
{
	uint8_t *e = dpq_frame_encode(p, p + cap, f);

	assert_non_null(e);
	return (size_t)(e - p);
}

/* ---- RFC 9000 §6.2: a VN after a Retry is discarded ------------------ */

static void
test_vn_after_retry(void **state)
{
	struct lone l;
	uint8_t buf[512], *e;
	uint8_t token[32];
	const uint32_t other = 0x1a2a3a4a;
	struct dpq_pkt_long_desc d = { 0 };
	size_t n;

	(void)state;
	lone_init(&l, DPQ_ROLE_CLIENT);
	memset(token, 0x55, sizeof(token));
	d.version = DPQ_VERSION_1;
	d.dcid = l.in.scid.bytes;
	d.dcid_len = l.in.scid.len;
	d.scid = l.server_cid.bytes;
	d.scid_len = l.server_cid.len;
	d.token = token;
	d.token_len = sizeof(token);
	e = dpq_pkt_write_retry(buf, buf + sizeof(buf), &d, 0);
	assert_non_null(e);
	assert_int_equal(dpq_retry_tag_compute(l.cc, l.in.dcid.bytes,
			l.in.dcid.len, buf, (size_t)(e - buf), e), 0);
	n = (size_t)(e - buf) + DPQ_RETRY_TAG_LEN;
	dpq_conn_recv(l.c, buf, n, NULL, NOW + 1000);
	assert_true(l.c->retry_done);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_HANDSHAKING);

	/* The Retry was a packet successfully processed: a VN that
	 * follows (an attacker's, or a late one) must not end us. */
	e = dpq_pkt_write_vn(buf, buf + sizeof(buf), 0, l.in.scid.bytes,
			l.in.scid.len, l.server_cid.bytes, l.server_cid.len,
			&other, 1);
	assert_non_null(e);
	dpq_conn_recv(l.c, buf, (size_t)(e - buf), NULL, NOW + 2000);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_HANDSHAKING);
	lone_free(&l);

	/* Without the Retry the same VN does end the attempt. */
	lone_init(&l, DPQ_ROLE_CLIENT);
	e = dpq_pkt_write_vn(buf, buf + sizeof(buf), 0, l.in.scid.bytes,
			l.in.scid.len, l.server_cid.bytes, l.server_cid.len,
			&other, 1);
	dpq_conn_recv(l.c, buf, (size_t)(e - buf), NULL, NOW + 2000);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_CLOSED);
	lone_free(&l);
}

/* ---- RFC 9001 §4.1.2, §5.7: HANDSHAKE_DONE before completion ---------- */

static void
give_server_tparams(struct lone *l)
{
	struct dpq_tparams tp;
	uint8_t blob[512], *end;

	dpq_tparams_init_defaults(&tp);
	tp.initial_scid = l->server_cid;
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID);
	tp.original_dcid = l->in.dcid;
	tp.present |= DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID);
	tp.initial_max_data = 1 << 20;
	tp.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_DATA);
	end = dpq_tparams_encode(blob, blob + sizeof(blob), DPQ_ROLE_SERVER,
			&tp);
	assert_non_null(end);
	assert_int_equal(dpq_conn_hs_peer_tparams(l->c, blob,
			(size_t)(end - blob)), 0);
}

static void
test_handshake_done_early(void **state)
{
	static const uint8_t secret[32] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct dpq_frame f = { 0 };
	struct peer_pkt pk = { 0 };
	struct dpq_pp_key *ik, *k1;
	uint8_t frames[64], buf[1500];
	struct lone l;
	ssize_t n;

	(void)state;
	lone_init(&l, DPQ_ROLE_CLIENT);
	/* The server's Initial (a PING) makes the client switch to the
	 * server's CID (§7.2). */
	ik = peer_key_initial(l.cc, &l.in.dcid, true);
	assert_non_null(ik);
	f.type = DPQ_FT_PING;
	pk.type = DPQ_PKT_INITIAL;
	pk.dcid = &l.in.scid;
	pk.scid = &l.server_cid;
	pk.frames = frames;
	pk.frames_len = frame(frames, sizeof(frames), &f);
	n = peer_seal(l.cc, ik, &pk, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(dpq_conn_recv(l.c, buf, (size_t)n, NULL, NOW + 1000), 1);

	/* 1-RTT read keys arrive before the client's Finished went out,
	 * and with them a 1-RTT packet carrying HANDSHAKE_DONE. */
	assert_int_equal(dpq_conn_hs_secret(l.c, DPQ_EPOCH_1RTT, false,
			DPQ_TLS_AES_128_GCM_SHA256, secret, sizeof(secret)), 0);
	k1 = peer_key_secret(l.cc, DPQ_TLS_AES_128_GCM_SHA256, secret,
			sizeof(secret));
	assert_non_null(k1);
	f.type = DPQ_FT_HANDSHAKE_DONE;
	memset(&pk, 0, sizeof(pk));
	pk.type = DPQ_PKT_1RTT;
	pk.dcid = &l.in.scid;
	pk.pn = 0;
	pk.frames = frames;
	pk.frames_len = frame(frames, sizeof(frames), &f);
	n = peer_seal(l.cc, k1, &pk, buf, sizeof(buf));
	assert_true(n > 0);
	dpq_conn_recv(l.c, buf, (size_t)n, NULL, NOW + 2000);
	/* RFC 9001 §5.7: not processed before the handshake completes, so
	 * the handshake is not confirmed (and Handshake keys stay). */
	assert_false(dpq_conn_handshake_confirmed(l.c));
	assert_false(l.c->b->pns[DPQ_PN_SPACE_HANDSHAKE].discarded);

	/* Completion; the held packet is processed then. */
	give_server_tparams(&l);
	dpq_conn_hs_complete(l.c, "hq-interop");
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_ESTABLISHED);
	dpq_conn_poll(l.c, NOW + 3000);
	assert_true(dpq_conn_handshake_confirmed(l.c));
	peer_key_free(ik);
	peer_key_free(k1);
	lone_free(&l);
}

/* ---- RFC 9000 §12.2: coalesced packets with another DCID ------------- */

static void
test_coalesced_other_dcid(void **state)
{
	struct dpq_frame f = { .type = DPQ_FT_PING };
	struct peer_pkt pk = { 0 };
	struct dpq_cid other = { .len = 8 };
	struct dpq_pp_key *ik;
	uint8_t frames[16], dgram[1500];
	struct lone l;
	ssize_t a, b;

	(void)state;
	memset(other.bytes, 0x99, 8);
	lone_init(&l, DPQ_ROLE_SERVER);
	ik = peer_key_initial(l.cc, &l.in.dcid, false);
	assert_non_null(ik);
	pk.type = DPQ_PKT_INITIAL;
	pk.dcid = &l.in.dcid;
	pk.scid = &l.in.peer_scid;
	pk.frames = frames;
	pk.frames_len = frame(frames, sizeof(frames), &f);
	pk.pn = 0;
	pk.pad_to = 1100;
	a = peer_seal(l.cc, ik, &pk, dgram, sizeof(dgram));
	assert_true(a > 0);
	/* Same keys, another DCID: the receiver must ignore it. */
	pk.dcid = &other;
	pk.pn = 1;
	pk.pad_to = 200;
	b = peer_seal(l.cc, ik, &pk, dgram + a, sizeof(dgram) - (size_t)a);
	assert_true(b > 0);
	assert_int_equal(dpq_conn_recv(l.c, dgram, (size_t)(a + b), NULL, NOW + 10),
			1);
	/* pn 1 was not taken: with the right DCID it is accepted. */
	pk.dcid = &l.in.dcid;
	pk.pad_to = 1200;
	b = peer_seal(l.cc, ik, &pk, dgram, sizeof(dgram));
	assert_true(b > 0);
	assert_int_equal(dpq_conn_recv(l.c, dgram, (size_t)b, NULL, NOW + 20), 1);
	peer_key_free(ik);
	lone_free(&l);
}

/* ---- the TLS key log: only when asked, owner-only --------------------- */

static bool
established(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL && dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

static void
test_keylog(void **state)
{
	char dir[] = "/tmp/dpq-keylog-XXXXXX", env[64], asked[64], link[64],
	     target[64], line[256];
	struct dpq_tls_ctx_conf tc = { 0 };
	struct dpq_tls_ctx *ctx = NULL;
	struct stat st;
	struct pair p;
	mode_t old;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(env, sizeof(env), "%s/env.txt", dir);
	snprintf(asked, sizeof(asked), "%s/asked.txt", dir);
	snprintf(link, sizeof(link), "%s/link.txt", dir);
	snprintf(target, sizeof(target), "%s/target.txt", dir);
	/* GnuTLS's default hook writes to SSLKEYLOGFILE, world-readable
	 * under the usual umask. */
	setenv("SSLKEYLOGFILE", env, 1);
	old = umask(022);
	pair_init(&p, 0, NULL, 1000, 0, 40);
	p.server_keylog = asked;
	pair_start(&p);
	assert_true(pair_run(&p, established, NULL, 5000000));
	pair_free(&p);
	unsetenv("SSLKEYLOGFILE");
	umask(old);
	/* Nothing went to the environment's file. */
	assert_int_equal(stat(env, &st), -1);
	/* The file asked for holds the secrets and is owner-only. */
	assert_int_equal(stat(asked, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	f = fopen(asked, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, "TRAFFIC_SECRET"));
	fclose(f);
	/* Never through a symbolic link. */
	assert_int_equal(symlink(target, link), 0);
	tc.role = DPQ_TLS_SERVER;
	tc.alpn[0] = "hq-interop";
	tc.alpn_count = 1;
	tc.self_signed_name = "dpquic.test";
	tc.keylog_file = link;
	tc.log = NULL;
	assert_true(dpq_tls_ctx_create(&tc, &ctx) != 0);
	assert_int_equal(stat(target, &st), -1);
	unlink(link);
	unlink(asked);
	rmdir(dir);
}

/* ---- ack-only packets do not pin the sent-packet map ------------------ */

/* One 1-RTT packet from the client with the given frames, sealed with
 * the client's keys at packet number pn, into the server. */
static void
client_says(struct pair *p, uint64_t pn, const uint8_t *frames, size_t len)
{
	struct dpq_conn *cl = p->client;
	struct peer_pkt pk = { 0 };
	uint8_t buf[1500];
	ssize_t n;

	pk.type = DPQ_PKT_1RTT;
	pk.dcid = &cl->dcid;
	pk.pn = pn;
	pk.key_phase = cl->key_phase != 0;
	pk.frames = frames;
	pk.frames_len = len;
	n = peer_seal(p->crypto, cl->tx[DPQ_EPOCH_1RTT], &pk, buf,
			sizeof(buf));
	assert_true(n > 0);
	dpq_conn_recv(p->server, buf, (size_t)n, NULL, p->now);
}

/* Everything the server sends goes nowhere. */
static void
server_drain(struct pair *p)
{
	uint8_t out[1500];

	dpq_conn_poll(p->server, p->now);
	while (dpq_conn_send(p->server, out, sizeof(out), NULL, p->now) > 0)
		;
}

static void
test_ack_only_untracked(void **state)
{
	struct dpq_frame f = { .type = DPQ_FT_PING };
	struct dpq_ack_range r;
	struct dpq_conn *sv;
	uint8_t frames[64];
	size_t flen;
	uint64_t pn;
	struct pair p;
	int i;

	(void)state;
	pair_init(&p, 0, NULL, 1000, 0, 41);
	pair_start(&p);
	assert_true(pair_run(&p, established, NULL, 5000000));
	pair_run(&p, NULL, NULL, 200000);	/* settle */
	sv = p.server;
	flen = frame(frames, sizeof(frames), &f);
	/* A client that sends PINGs (every other packet number, so the
	 * server's ACKs have many ranges) and never acknowledges: each
	 * pair of them gets an ack-only packet back. */
	pn = p.client->b->pns[DPQ_PN_SPACE_APP].next_pn;
	for (i = 0; i < 40000; i++) {
		client_says(&p, pn, frames, flen);
		pn += 2;
		p.now += 50;
		server_drain(&p);
	}
	assert_int_equal(dpq_conn_state(sv), DPQ_CONN_ESTABLISHED);
	/* The map holds what is in flight, not one entry per ACK sent. */
	assert_true(dpq_sentmap_count(&sv->b->loss.sp[DPQ_PN_SPACE_APP].sent) <
			64);
	assert_true(sv->b->pns[DPQ_PN_SPACE_APP].ackr->n > 32);
	/* The client acknowledges everything the server sent: the server
	 * stops reporting what its acknowledged ACK frames covered
	 * (RFC 9000 §13.2.4). */
	r.smallest = 0;
	r.largest = sv->b->loss.sp[DPQ_PN_SPACE_APP].largest_sent;
	flen = (size_t)(dpq_frame_encode_ack(frames, frames + sizeof(frames),
			&r, 1, 0, NULL) - frames);
	client_says(&p, pn, frames, flen);
	assert_int_equal(dpq_conn_state(sv), DPQ_CONN_ESTABLISHED);
	assert_true(sv->b->pns[DPQ_PN_SPACE_APP].ackr->n <= 2);
	pair_free(&p);
}

/* ---- a handshake deadline much shorter than the idle timeout ---------- */

static void
test_handshake_deadline(void **state)
{
	struct lone l;
	struct pair p;

	(void)state;
	/* A server connection whose client never goes on holds its slot
	 * for the handshake deadline, not the 30 s idle timeout. */
	lone_init(&l, DPQ_ROLE_SERVER);
	assert_true(dpq_conn_next_timeout(l.c) <=
			NOW + DPQ_CONN_HANDSHAKE_TIMEOUT_MS * 1000);
	dpq_conn_on_timeout(l.c, NOW + DPQ_CONN_HANDSHAKE_TIMEOUT_MS * 1000);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_CLOSED);
	assert_true(dpq_conn_close_info(l.c)->handshake_timeout);
	assert_false(dpq_conn_close_info(l.c)->idle);
	lone_free(&l);
	/* Configurable, and never beyond the idle timeout. */
	memset(&l, 0, sizeof(l));
	lone_init(&l, DPQ_ROLE_SERVER);
	dpq_conn_destroy(l.c);
	l.conf.handshake_timeout_ms = 60000;
	l.conf.idle_timeout_ms = 5000;
	assert_int_equal(dpq_conn_create(&l.in, &l.c), 0);
	dpq_conn_on_timeout(l.c, NOW + 5000 * 1000);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_CLOSED);
	lone_free(&l);

	/* A client holds no server's slot: its handshake, still going on
	 * a lossy path, is not cut at 10 s but at the idle timeout
	 * (failed before: "handshake timeout" at 10 s). */
	memset(&l, 0, sizeof(l));
	lone_init(&l, DPQ_ROLE_CLIENT);
	dpq_conn_on_timeout(l.c, NOW + DPQ_CONN_HANDSHAKE_TIMEOUT_MS * 1000);
	assert_int_not_equal(dpq_conn_state(l.c), DPQ_CONN_CLOSED);
	assert_true(dpq_conn_next_timeout(l.c) >
			NOW + DPQ_CONN_HANDSHAKE_TIMEOUT_MS * 1000);
	dpq_conn_on_timeout(l.c, NOW + 30000 * 1000ull);
	assert_int_equal(dpq_conn_state(l.c), DPQ_CONN_CLOSED);
	lone_free(&l);

	/* A completed handshake is not affected: quiet for 20 s, less than
	 * the idle timeout, the connection stays. */
	pair_init(&p, 0, NULL, 5000, 0, 42);
	pair_start(&p);
	assert_true(pair_run(&p, established, NULL, 5000000));
	pair_run(&p, NULL, NULL, 20000000);
	assert_int_equal(dpq_conn_state(p.server), DPQ_CONN_ESTABLISHED);
	assert_int_equal(dpq_conn_state(p.client), DPQ_CONN_ESTABLISHED);
	pair_free(&p);
}

/* ---- out-of-order data cannot pin memory beyond the credit ------------ */

/* STREAM frames of one byte at off, off + gap, ... on stream id into as
 * few client packets as they fit. */
static void
scatter(struct pair *p, uint64_t *pn, uint64_t id, uint64_t off,
		uint64_t gap, unsigned int count)
{
	uint8_t frames[1200], *q = frames, *e = frames + sizeof(frames);
	static const uint8_t byte = 0x5a;
	unsigned int i;

	for (i = 0; i < count; i++, off += gap) {
		uint8_t *n = dpq_frame_encode_stream_hdr(q, e, id, off, 1,
				false, true);

		if (n == NULL || n + 1 > e) {
			client_says(p, (*pn)++, frames, (size_t)(q - frames));
			q = frames;
			n = dpq_frame_encode_stream_hdr(q, e, id, off, 1,
					false, true);
			assert_non_null(n);
		}
		*n++ = byte;
		q = n;
	}
	if (q > frames)
		client_says(p, (*pn)++, frames, (size_t)(q - frames));
}

static void
run_scatter(uint64_t gap, unsigned int per_stream, uint64_t max_pinned)
{
	struct dpq_membudget counted;
	struct pair p;
	uint64_t pn, base;
	unsigned int sid;

	dpq_membudget_init(&counted, NULL, 0);
	pair_init(&p, 0, NULL, 1000, 0, 43);
	p.server_budget = &counted;	/* counts what the server allocates */
	pair_start(&p);		/* the server application never reads */
	assert_true(pair_run(&p, established, NULL, 5000000));
	pair_run(&p, NULL, NULL, 200000);
	base = counted.used;
	pn = p.client->b->pns[DPQ_PN_SPACE_APP].next_pn;
	/* 100 streams (the server's limit), offset 0 never sent so nothing
	 * becomes readable. */
	for (sid = 0; sid < 100; sid++)
		scatter(&p, &pn, 4 * sid, 1, gap, per_stream);
	server_drain(&p);
	/* Within flow control: the connection carries on (refused packets
	 * are dropped unacknowledged, RFC 9000 §13.1 style backpressure). */
	assert_int_equal(dpq_conn_state(p.server), DPQ_CONN_ESTABLISHED);
	printf("      gap %" PRIu64 ": %u B of credit used, %" PRIu64
		" B pinned (peak %" PRIu64 ")\n", gap,
		100 * (unsigned int)(1 + gap * (per_stream - 1)),
		counted.used - base, counted.peak - base);
	assert_true(counted.peak - base <= max_pinned);
	pair_free(&p);
}

static void
test_scatter_memory(void **state)
{
	(void)state;
	/* The audit's case: 4,095 one-byte frames two bytes apart on each
	 * of 100 streams, 0.8 MB of credit, pinned 7.5 MB. (Chunk rounding
	 * alone cannot do that: connection credit counts each stream's
	 * highest offset, so chunks stay within it.) */
	run_scatter(2, 4095, 2u << 20);
}

/* ---- receive windows grow only while the memory budget allows --------- */

static void
sink_data(struct dpq_conn *c, uint64_t id)
{
	uint64_t *got = dpq_conn_app_ctx(c);
	uint8_t buf[16384];
	bool fin = false;
	ssize_t n;

	while ((n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin)) > 0)
		*got += (uint64_t)n;
}

static const struct dpq_app_ops sink_app = { .on_stream_data = sink_data };

struct upload {
	uint64_t *got;
	uint64_t want;
};

static bool
uploaded(struct pair *p, void *arg)
{
	struct upload *u = arg;

	(void)p;
	return *u->got >= u->want;
}

/* Upload size bytes on one stream; returns the server's connection
 * receive window at the end. */
static uint64_t
upload_window(struct dpq_membudget *b, size_t size)
{
	static uint8_t chunk[65536];
	struct upload u;
	uint64_t got = 0, id, window;
	size_t sent = 0;
	struct pair p;

	pair_init(&p, 0, NULL, 2000, 0, 44);
	p.server_budget = b;
	p.sapp = &sink_app;
	p.sapp_ctx = &got;
	pair_start(&p);
	assert_true(pair_run(&p, established, NULL, 5000000));
	assert_int_equal(dpq_conn_stream_open(p.client, false, &id), 0);
	u.got = &got;
	u.want = size;
	while (got < size) {
		while (sent < size) {
			ssize_t w = dpq_conn_stream_write(p.client, id, chunk,
					size - sent < sizeof(chunk) ?
					size - sent : sizeof(chunk), false);

			if (w <= 0)
				break;
			sent += (size_t)w;
		}
		if (pair_run(&p, uploaded, &u, 50000))
			break;
		assert_int_equal(dpq_conn_state(p.server),
				DPQ_CONN_ESTABLISHED);
	}
	assert_int_equal(got, size);
	window = p.server->rx_fc.window;
	pair_free(&p);
	return window;
}

static void
test_budget_autotune(void **state)
{
	struct dpq_membudget free_b, tight_b;
	uint64_t w_free, w_tight;
	struct dpq_mem other;
	void *others;

	(void)state;
	dpq_membudget_init(&free_b, NULL, 0);
	dpq_membudget_init(&tight_b, NULL, 4u << 20);
	/* Other connections of the shard hold 2.5 MiB of the 4 MiB. */
	other = dpq_membudget_state_mem(&tight_b);
	others = dpq_mem_alloc(&other, 5u << 19);
	assert_non_null(others);
	w_free = upload_window(&free_b, 24u << 20);
	w_tight = upload_window(&tight_b, 24u << 20);
	dpq_mem_free(&other, others);
	printf("      connection window after 24 MiB: %" PRIu64 " without a "
		"budget, %" PRIu64 " with 4 MiB, 2.5 used (peak %" PRIu64 " B, %"
		PRIu64 " refusals)\n", w_free, w_tight, tight_b.peak,
		tight_b.refused);
	/* Auto-tuning grows the window on a fast path... */
	assert_true(w_free > (1u << 20));
	/* ... but not once half the budget is in use, and the buffers never
	 * pass the budget. */
	assert_int_equal(w_tight, 1u << 20);
	assert_true(tight_b.peak <= (4u << 20) + (256u << 10));
	assert_int_equal(tight_b.used, 0);	/* all given back */
}

/* ---- a slow reader pins little send buffer under memory pressure ------ */

static ssize_t
server_writes(struct dpq_membudget *b, size_t want)
{
	static uint8_t big[4u << 20];
	struct dpq_frame f = { 0 };
	uint8_t frames[64];
	struct pair p;
	ssize_t w;

	pair_init(&p, 0, NULL, 1000, 0, 45);
	p.server_budget = b;
	pair_start(&p);
	assert_true(pair_run(&p, established, NULL, 5000000));
	/* The client opens stream 0 (a request, no FIN) and reads nothing:
	 * its credit stays at the initial 256 KiB. */
	f.type = DPQ_FT_STREAM | 0x02;
	f.stream.stream_id = 0;
	f.stream.len = 1;
	f.stream.data = (const uint8_t *)"x";
	client_says(&p, p.client->b->pns[DPQ_PN_SPACE_APP].next_pn++, frames,
			(size_t)(dpq_frame_encode(frames, frames + sizeof(frames),
				&f) - frames));
	w = dpq_conn_stream_write(p.server, 0, big, want, false);
	pair_free(&p);
	return w;
}

static void
test_slow_reader_send_cap(void **state)
{
	struct dpq_membudget free_b, roomy_b, tight_b;
	struct dpq_mem other;
	void *others;
	ssize_t w_free, w_roomy, w_tight;

	(void)state;
	dpq_membudget_init(&free_b, NULL, 0);
	dpq_membudget_init(&roomy_b, NULL, 256u << 20);
	dpq_membudget_init(&tight_b, NULL, 4u << 20);
	other = dpq_membudget_state_mem(&tight_b);
	others = dpq_mem_alloc(&other, 5u << 19);
	assert_non_null(others);
	w_free = server_writes(&free_b, 4u << 20);
	w_roomy = server_writes(&roomy_b, 4u << 20);
	w_tight = server_writes(&tight_b, 4u << 20);
	dpq_mem_free(&other, others);
	/* No budget: the whole 4 MiB send buffer. A budget with room: the
	 * client's credit (256 KiB) + DPQ_STREAM_SEND_AHEAD (was the whole
	 * buffer: slow readers filled half the budget unchecked). Half the
	 * budget in use: the credit + a sixteenth of that. */
	assert_int_equal(w_free, 4u << 20);
	assert_int_equal(w_roomy, (256u << 10) + DPQ_STREAM_SEND_AHEAD);
	assert_int_equal(w_tight, (256u << 10) + DPQ_STREAM_SEND_AHEAD / 16);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vn_after_retry),
		cmocka_unit_test(test_handshake_done_early),
		cmocka_unit_test(test_coalesced_other_dcid),
		cmocka_unit_test(test_keylog),
		cmocka_unit_test(test_ack_only_untracked),
		cmocka_unit_test(test_handshake_deadline),
		cmocka_unit_test(test_scatter_memory),
		cmocka_unit_test(test_budget_autotune),
		cmocka_unit_test(test_slow_reader_send_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
