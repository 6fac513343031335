/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the server's policy for datagrams that match no connection
 * (dataplane/server/listener.h): Version Negotiation, Initial size, Retry
 * policies and tokens (RFC 9000 §8.1), stateless reset (§10.3), rate
 * limits, and garbage input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "dataplane/crypto/crypto.h"
#include "dataplane/crypto/pp_key.h"
#include "dataplane/crypto/retry.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/packet.h"
#include "dataplane/server/listener.h"
#include "test_server_util.h"

#define SEC 1000000ull
#define T0 (100000 * SEC)

static struct dpq_crypto *cc;
static struct test_rng rng;
static struct dpq_rand rnd = { test_rng_fill, &rng };
static const uint8_t tkey1[16] = { 0x11, 0x22 };
static const uint8_t client_dcid[8] = { 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51,
	0x57, 0x08 };
static const uint8_t client_scid[5] = { 0xc1, 0xc2, 0xc3, 0xc4, 0xc5 };

static int
setup(void **state)
{
	(void)state;
	cc = dpq_crypto_create();
	return cc == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	dpq_crypto_destroy(cc);
	return 0;
}

static void
base_cfg(struct dpq_listener_cfg *cfg)
{
	dpq_listener_cfg_default(cfg);
	cfg->shard = 3;
	cfg->cid.server_id[0] = 0x5a;
	cfg->sreset_key_len = 32;
	memset(cfg->sreset_key, 0x77, 32);
}

static struct dpq_listener *
mk(const struct dpq_listener_cfg *cfg)
{
	struct dpq_listener *l;

	rng.s = 0xdecafbad;
	l = dpq_listener_create(cfg, cc, &rnd, T0);
	assert_non_null(l);
	assert_int_equal(dpq_listener_set_token_key(l, 1, tkey1), 0);
	return l;
}

static void
peer4(struct dpq_netaddr *a, uint8_t last, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = 198;
	a->ip[1] = 51;
	a->ip[2] = 100;
	a->ip[3] = last;
}

/* A client Initial (payload not encrypted: the listener does not open it)
 * filling exactly len bytes. */
static size_t
mk_initial(uint8_t *buf, size_t len, const uint8_t *dcid, size_t dcid_len,
		const uint8_t *tok, size_t tok_len)
{
	struct dpq_pkt_long_desc d;
	uint8_t *p, *lenf;

	memset(&d, 0, sizeof(d));
	d.type = DPQ_PKT_INITIAL;
	d.version = DPQ_VERSION_1;
	d.dcid = dcid;
	d.dcid_len = dcid_len;
	d.scid = client_scid;
	d.scid_len = sizeof(client_scid);
	d.token = tok;
	d.token_len = tok_len;
	d.pn = 0;
	d.pn_len = 1;
	p = dpq_pkt_write_long(buf, buf + len, &d, &lenf);
	assert_non_null(p);
	memset(p, 0xab, len - (size_t)(p - buf));
	assert_int_equal(dpq_pkt_patch_length(lenf, 1 + len - (size_t)(p -
			buf)), 0);
	return len;
}

static size_t
mk_long_version(uint8_t *buf, size_t len, uint32_t version, uint8_t type)
{
	size_t n = 0;

	buf[n++] = (uint8_t)(0xc0 | type << 4);
	buf[n++] = (uint8_t)(version >> 24);
	buf[n++] = (uint8_t)(version >> 16);
	buf[n++] = (uint8_t)(version >> 8);
	buf[n++] = (uint8_t)version;
	buf[n++] = sizeof(client_dcid);
	memcpy(buf + n, client_dcid, sizeof(client_dcid));
	n += sizeof(client_dcid);
	buf[n++] = sizeof(client_scid);
	memcpy(buf + n, client_scid, sizeof(client_scid));
	n += sizeof(client_scid);
	memset(buf + n, 0, len - n);
	if (version == DPQ_VERSION_1 && (type == DPQ_PKT_0RTT ||
			type == DPQ_PKT_HANDSHAKE)) {
		/* A well-formed Length (2-byte varint): the rest. */
		size_t rest = len - n - 2;

		buf[n] = (uint8_t)(0x40 | rest >> 8);
		buf[n + 1] = (uint8_t)rest;
	}
	return len;
}

static size_t
mk_short(uint8_t *buf, size_t len, const uint8_t *dcid, size_t dcid_len)
{
	test_rng_fill(&rng, buf, len);
	buf[0] = (uint8_t)(0x40 | (buf[0] & 0x3f));
	memcpy(buf + 1, dcid, dcid_len);
	return len;
}

static uint64_t
total(const struct dpq_listener *l)
{
	const struct dpq_listener_stats *s = dpq_listener_stats(l);
	uint64_t n = 0;
	int i;

	for (i = 0; i < DPQ_LO_COUNT; i++)
		n += s->outcome[i];
	return n;
}

/* §6.1/§5.2.2: VN for an unknown version at 1200 bytes, none at 1199. */
static void
test_version_negotiation(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	struct dpq_pkt_hdr h;
	uint8_t buf[1500];
	size_t n;

	(void)state;
	base_cfg(&cfg);
	cfg.versions[1] = 0x6b3343cf;	/* v2, listed only */
	cfg.n_versions = 2;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_long_version(buf, 1200, 0x1a2a3a4a, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_REPLY);
	assert_int_equal(r.outcome, DPQ_LO_VN);
	assert_true(r.reply_len < n);
	assert_int_equal(dpq_pkt_parse(r.reply, r.reply + r.reply_len, 0, &h),
			0);
	assert_int_equal(h.type, DPQ_PKT_VN);
	assert_int_equal(h.dcid_len, sizeof(client_scid));
	assert_memory_equal(h.dcid, client_scid, sizeof(client_scid));
	assert_int_equal(h.scid_len, sizeof(client_dcid));
	assert_memory_equal(h.scid, client_dcid, sizeof(client_dcid));
	assert_int_equal(h.vn_count, 2);
	assert_true(dpq_pkt_vn_has_version(&h, DPQ_VERSION_1));
	assert_true(dpq_pkt_vn_has_version(&h, 0x6b3343cf));
	n = mk_long_version(buf, 1199, 0x1a2a3a4a, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_VN_SMALL);
	/* A VN sent to us is never answered (§6.1). */
	n = mk_long_version(buf, 1200, 0, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_VN_RECEIVED);
	/* Long headers other than Initial for an unknown connection. */
	n = mk_long_version(buf, 1200, DPQ_VERSION_1, DPQ_PKT_HANDSHAKE);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_LONG_OTHER);
	assert_int_equal(dpq_listener_stats(l)->outcome[DPQ_LO_VN], 1);
	assert_int_equal(total(l), 4);
	dpq_listener_destroy(l);
}

/* §14.1: Initial below 1200 dropped; at 1200 accepted (Retry never) with
 * the parameters a connection needs. */
static void
test_initial_accept(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	uint8_t buf[1500], tok[16];
	size_t n;

	(void)state;
	base_cfg(&cfg);
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1199, client_dcid, 8, NULL, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_INITIAL_SMALL);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT);
	assert_int_equal(r.version, DPQ_VERSION_1);
	assert_int_equal(r.odcid.len, 8);
	assert_memory_equal(r.odcid.bytes, client_dcid, 8);
	assert_true(dpq_cid_eq(&r.odcid, &r.initial_dcid));
	assert_false(r.retried);
	assert_int_equal(r.retry_scid.len, 0);
	assert_false(r.addr_validated);
	assert_int_equal(r.client_scid.len, sizeof(client_scid));
	assert_memory_equal(r.client_scid.bytes, client_scid,
			sizeof(client_scid));
	assert_int_equal(dpq_cid_shard(&cfg.cid, r.scid.bytes, r.scid.len), 3);
	assert_int_equal(dpq_sreset_token(cfg.sreset_key, 32, r.scid.bytes,
			r.scid.len, tok), 0);
	assert_memory_equal(tok, r.sreset_token, 16);
	/* §7.2: a first DCID under 8 bytes is dropped. */
	n = mk_initial(buf, 1200, client_dcid, 7, NULL, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_DCID_SHORT);
	dpq_listener_destroy(l);
}

/* Parse a Retry reply, check its tag against odcid, return its token. */
static void
check_retry(const struct dpq_listener_result *r, const struct dpq_cid_cfg *cc_cfg,
		struct dpq_cid *scid, uint8_t *tok, size_t *tok_len)
{
	struct dpq_pkt_hdr h;

	assert_int_equal(r->action, DPQ_LISTEN_REPLY);
	assert_int_equal(r->outcome, DPQ_LO_RETRY);
	assert_int_equal(dpq_pkt_parse(r->reply, r->reply + r->reply_len, 0,
			&h), 0);
	assert_int_equal(h.type, DPQ_PKT_RETRY);
	assert_int_equal(h.version, DPQ_VERSION_1);
	assert_int_equal(h.pkt_len, r->reply_len);
	assert_int_equal(h.dcid_len, sizeof(client_scid));
	assert_memory_equal(h.dcid, client_scid, sizeof(client_scid));
	assert_int_equal(dpq_cid_check(cc_cfg, h.scid, h.scid_len), 0);
	/* RFC 9001 §5.8, against the client's first DCID. */
	assert_int_equal(dpq_retry_tag_verify(cc, client_dcid, 8, r->reply,
			r->reply_len), 0);
	assert_int_equal(dpq_retry_tag_verify(cc, client_scid, 5, r->reply,
			r->reply_len), -EBADMSG);
	dpq_cid_set(scid, h.scid, h.scid_len);
	assert_true(h.token_len <= DPQ_TOKEN_MAX_LEN);
	memcpy(tok, h.token, h.token_len);
	*tok_len = h.token_len;
}

/* Retry always: Retry verifies and parses; the second Initial with its
 * token is accepted with odcid and retry_scid, address validated. */
static void
test_retry_always_roundtrip(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	struct dpq_cid rscid;
	uint8_t buf[1500], tok[DPQ_TOKEN_MAX_LEN];
	size_t n, tok_len;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_ALWAYS;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	dpq_listener_on_datagram(l, buf, n, &a, T0, &r);
	check_retry(&r, &cfg.cid, &rscid, tok, &tok_len);
	assert_true(r.reply_len < 200);
	assert_int_equal(dpq_cid_shard(&cfg.cid, rscid.bytes, rscid.len), 3);

	n = mk_initial(buf, 1250, rscid.bytes, rscid.len, tok, tok_len);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a,
			T0 + 50000, &r), DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_RETRY_TOKEN);
	assert_true(r.retried);
	assert_true(r.addr_validated);
	assert_int_equal(r.odcid.len, 8);
	assert_memory_equal(r.odcid.bytes, client_dcid, 8);
	assert_true(dpq_cid_eq(&r.retry_scid, &rscid));
	assert_true(dpq_cid_eq(&r.initial_dcid, &rscid));
	assert_false(dpq_cid_eq(&r.scid, &rscid));
	assert_int_equal(dpq_cid_check(&cfg.cid, r.scid.bytes, r.scid.len), 0);
	assert_int_equal(dpq_listener_stats(l)->token_retry_ok, 1);
	dpq_listener_destroy(l);
}

/* Open an INVALID_TOKEN close as the client would and check the frame. */
static void
check_invalid_token_close(const struct dpq_listener_result *r,
		const uint8_t *dcid, size_t dcid_len)
{
	struct dpq_pp_key *key = NULL;
	struct dpq_open_op op;
	struct dpq_pkt_hdr h;
	struct dpq_frame f;
	uint8_t pkt[DPQ_LISTENER_REPLY_MAX];
	const uint8_t *pl;
	ssize_t fl;

	assert_int_equal(r->action, DPQ_LISTEN_REPLY);
	assert_int_equal(r->outcome, DPQ_LO_CLOSE_INVALID_TOKEN);
	memcpy(pkt, r->reply, r->reply_len);
	assert_int_equal(dpq_pkt_parse(pkt, pkt + r->reply_len, 0, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_INITIAL);
	assert_int_equal(h.pkt_len, r->reply_len);
	assert_memory_equal(h.dcid, client_scid, sizeof(client_scid));
	assert_int_equal(h.scid_len, dcid_len);
	assert_int_equal(h.token_len, 0);
	assert_int_equal(posix_memalign((void **)&key, 64, sizeof(*key)), 0);
	memset(key, 0, sizeof(*key));
	/* RFC 9001 §5.2: server Initial keys from the client's DCID. */
	assert_int_equal(dpq_pp_key_init_initial(cc, key, dcid, dcid_len,
			true), 0);
	memset(&op, 0, sizeof(op));
	op.key = key;
	op.pkt = pkt;
	op.largest_pn = DPQ_PN_NONE;
	op.len = (uint16_t)h.pkt_len;
	op.pn_offset = (uint16_t)h.pn_offset;
	assert_int_equal(dpq_crypto_unprotect_hp_burst(cc, &op, 1), 1);
	assert_int_equal(dpq_pkt_check_reserved_bits(op.first_byte), 0);
	assert_int_equal(op.pn, 0);
	assert_int_equal(dpq_crypto_open_burst(cc, &op, 1), 1);
	pl = pkt + h.pn_offset + op.pn_len;
	fl = dpq_frame_decode(pl, pkt + h.pkt_len - 16, &f);
	assert_true(fl > 0);
	assert_int_equal(f.type, DPQ_FT_CONNECTION_CLOSE);
	assert_int_equal(f.close.error_code, DPQ_TE_INVALID_TOKEN);
	dpq_pp_key_destroy(key);
	free(key);
}

/* §8.1.2: a Retry token that fails (other port, expired, forged, for
 * another DCID) gets CONNECTION_CLOSE(INVALID_TOKEN), never another Retry.
 * Those replies are rate limited. */
static void
test_bad_retry_token(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a, b;
	struct dpq_cid rscid;
	uint8_t buf[1500], tok[DPQ_TOKEN_MAX_LEN], forged[DPQ_TOKEN_MAX_LEN];
	uint8_t other[8];
	size_t n, tok_len;
	int i;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_ALWAYS;
	cfg.reply_burst = 5;
	cfg.reply_rate = 1;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	dpq_listener_on_datagram(l, buf, n, &a, T0, &r);
	check_retry(&r, &cfg.cid, &rscid, tok, &tok_len);

	/* NAT rebinding to another port. */
	peer4(&b, 1, 5001);
	n = mk_initial(buf, 1200, rscid.bytes, rscid.len, tok, tok_len);
	dpq_listener_on_datagram(l, buf, n, &b, T0, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	/* Expired: 10 s default. */
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 10 * SEC, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	/* Valid token, but the client's DCID is not the Retry SCID. */
	memset(other, 0x42, sizeof(other));
	n = mk_initial(buf, 1200, other, sizeof(other), tok, tok_len);
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 10 * SEC, &r);
	check_invalid_token_close(&r, other, sizeof(other));
	/* Forged: random bytes labelled Retry. */
	test_rng_fill(&rng, forged, sizeof(forged));
	forged[0] = (uint8_t)(DPQ_TOKEN_RETRY << 6 | 1);
	n = mk_initial(buf, 1200, rscid.bytes, rscid.len, forged, 60);
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 10 * SEC, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	/* Truncated Retry token. */
	n = mk_initial(buf, 1200, rscid.bytes, rscid.len, tok, tok_len - 1);
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 10 * SEC, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	/* The bucket refilled to its burst (5) at T0 + 10 s and four
	 * closes went since: one more, then drops until 1 s later. */
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 10 * SEC, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	for (i = 0; i < 3; i++) {
		assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a,
				T0 + 10 * SEC, &r), DPQ_LISTEN_DROP);
		assert_int_equal(r.outcome, DPQ_LO_DROP_REPLY_RATE);
	}
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 11 * SEC, &r);
	check_invalid_token_close(&r, rscid.bytes, rscid.len);
	assert_int_equal(dpq_listener_stats(l)->outcome[DPQ_LO_RETRY], 1);
	assert_int_equal(dpq_listener_stats(l)->
			outcome[DPQ_LO_CLOSE_INVALID_TOKEN], 7);
	assert_int_equal(dpq_listener_stats(l)->token_retry_bad, 10);
	dpq_listener_destroy(l);
}

/* §8.1.3: a valid NEW_TOKEN token skips Retry; an invalid one is treated
 * as no token (Retry under "always", accept under "never"). */
static void
test_new_token(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a, b;
	struct dpq_token_info ti;
	struct dpq_cid rscid;
	uint8_t buf[1500], tok[DPQ_TOKEN_MAX_LEN], rtok[DPQ_TOKEN_MAX_LEN];
	size_t n, rtok_len;
	ssize_t tl;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_ALWAYS;
	cfg.token.new_v4_prefix = 24;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	memset(&ti, 0, sizeof(ti));
	ti.type = DPQ_TOKEN_NEW;
	ti.issued = T0 - 3600 * SEC;
	ti.addr = a;
	tl = dpq_token_seal(dpq_listener_tokens(l), &ti, &rnd, tok,
			sizeof(tok));
	assert_true(tl > 0);
	/* Same IP, new port: accepted, validated. */
	peer4(&b, 1, 6000);
	n = mk_initial(buf, 1200, client_dcid, 8, tok, (size_t)tl);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &b, T0, &r),
			DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_NEW_TOKEN);
	assert_true(r.addr_validated);
	assert_false(r.retried);
	assert_memory_equal(r.odcid.bytes, client_dcid, 8);
	/* Same /24: accepted without Retry, but not validated (§8.1.3:
	 * the amplification limit still holds). */
	peer4(&b, 99, 6000);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &b, T0, &r),
			DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_NEW_TOKEN);
	assert_false(r.addr_validated);
	assert_int_equal(dpq_listener_stats(l)->token_new_prefix, 1);
	/* Another /24: treated as no token -> Retry. */
	b.ip[2] = 101;
	dpq_listener_on_datagram(l, buf, n, &b, T0, &r);
	check_retry(&r, &cfg.cid, &rscid, rtok, &rtok_len);
	/* Expired (24 h): Retry. */
	dpq_listener_on_datagram(l, buf, n, &a, ti.issued + 24 * 3600 * SEC,
			&r);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	/* Garbage token of unknown type: Retry too. */
	memset(tok, 0xff, 40);
	n = mk_initial(buf, 1200, client_dcid, 8, tok, 40);
	dpq_listener_on_datagram(l, buf, n, &a, T0, &r);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	assert_int_equal(dpq_listener_stats(l)->token_new_bad, 3);
	dpq_listener_destroy(l);

	/* Under "never", an invalid NEW_TOKEN token still gets a connection
	 * (unvalidated), not a drop. */
	base_cfg(&cfg);
	l = mk(&cfg);
	tok[0] = (uint8_t)(DPQ_TOKEN_NEW << 6 | 1);
	n = mk_initial(buf, 1200, client_dcid, 8, tok, 40);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT);
	assert_false(r.addr_validated);
	dpq_listener_destroy(l);
}

/* §8.1.4: a NEW_TOKEN token serves one connection. The listener's own
 * dpq_listener_new_token() output is accepted once; the same token again
 * is handled as no token (Retry under "always"), and with no filter it
 * would be accepted again. */
static void
test_new_token_single_use(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_tokfilter *f;
	struct dpq_netaddr a;
	uint8_t buf[1500], tok[DPQ_TOKEN_MAX_LEN];
	size_t n;
	ssize_t tl;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_ALWAYS;
	l = mk(&cfg);
	f = dpq_tokfilter_create(64, T0);
	assert_non_null(f);
	dpq_listener_set_token_filter(l, f);
	peer4(&a, 7, 5000);
	tl = dpq_listener_new_token(l, &a, T0, tok, sizeof(tok));
	assert_true(tl > 0);
	assert_int_equal(dpq_token_peek_type(tok, (size_t)tl), DPQ_TOKEN_NEW);
	assert_int_equal(dpq_listener_stats(l)->token_new_issued, 1);
	n = mk_initial(buf, 1200, client_dcid, 8, tok, (size_t)tl);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + SEC,
			&r), DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_NEW_TOKEN);
	assert_true(r.addr_validated);
	/* Replayed: Retry, counted. */
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + 2 * SEC,
			&r), DPQ_LISTEN_REPLY);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	assert_int_equal(dpq_listener_stats(l)->token_new_replay, 1);
	/* A second token for the same client is a new token. */
	tl = dpq_listener_new_token(l, &a, T0 + 3 * SEC, tok, sizeof(tok));
	n = mk_initial(buf, 1200, client_dcid, 8, tok, (size_t)tl);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + 4 * SEC,
			&r), DPQ_LISTEN_ACCEPT);
	/* Without the filter the replay would pass: the filter is what
	 * refuses it. */
	dpq_listener_set_token_filter(l, NULL);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + 5 * SEC,
			&r), DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_NEW_TOKEN);
	dpq_listener_destroy(l);
	dpq_tokfilter_destroy(f);
}

/* Retry by rate: 10/s, burst 5. */
static void
test_retry_rate(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	uint8_t buf[1500];
	size_t n;
	int i;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_RATE;
	cfg.retry_rate = 10;
	cfg.retry_burst = 5;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0,
				&r), DPQ_LISTEN_ACCEPT);
	dpq_listener_on_datagram(l, buf, n, &a, T0, &r);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	/* 99.999 ms: not yet one token; 100 ms: one. */
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 99999, &r);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 100000, &r);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT);
	dpq_listener_on_datagram(l, buf, n, &a, T0 + 100000, &r);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	/* A long pause refills to the burst, not more. */
	for (i = 0; i < 7; i++)
		dpq_listener_on_datagram(l, buf, n, &a, T0 + 3600 * SEC, &r);
	assert_int_equal(dpq_listener_stats(l)->outcome[DPQ_LO_ACCEPT], 11);
	assert_int_equal(dpq_listener_stats(l)->outcome[DPQ_LO_RETRY], 5);
	dpq_listener_destroy(l);
}

/* Retry never: Initials accepted regardless of rate. */
static void
test_retry_never(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	uint8_t buf[1500];
	size_t n;
	int i;

	(void)state;
	base_cfg(&cfg);
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0,
				&r), DPQ_LISTEN_ACCEPT);
	dpq_listener_destroy(l);
}

/* §10.3: short headers get a Stateless Reset shorter than the trigger,
 * >= 21 bytes, ending in HMAC(key, DCID)[0..16]; rate limited. */
static void
test_stateless_reset(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	struct dpq_cid cid;
	uint8_t buf[1500], tok[16];
	size_t n, len;
	int i;

	(void)state;
	base_cfg(&cfg);
	cfg.reply_rate = 1000;
	cfg.reply_burst = 2000;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	assert_int_equal(dpq_cid_gen(&cfg.cid, 1, &rnd, &cid), 0);
	assert_int_equal(dpq_sreset_token(cfg.sreset_key, 32, cid.bytes, 8,
			tok), 0);
	for (len = 1; len <= 1500; len++) {
		n = mk_short(buf, len, cid.bytes, len < 9 ? len - 1 : 8);
		dpq_listener_on_datagram(l, buf, n, &a, T0, &r);
		/* 1 + 8 + 20 (RFC 9001 §5.4.2 sample) is the smallest
		 * short header for our CID length. */
		if (len < 29) {
			assert_int_equal(r.action, DPQ_LISTEN_DROP);
			continue;
		}
		assert_int_equal(r.action, DPQ_LISTEN_REPLY);
		assert_int_equal(r.outcome, DPQ_LO_SRESET);
		assert_true(r.reply_len < len);
		assert_true(r.reply_len >= 21);
		assert_int_equal(r.reply[0] & 0xc0, 0x40);
		assert_memory_equal(r.reply + r.reply_len - 16, tok, 16);
	}
	dpq_listener_destroy(l);

	/* Rate: burst 10, 100/s. */
	base_cfg(&cfg);
	l = mk(&cfg);
	n = mk_short(buf, 100, cid.bytes, 8);
	for (i = 0; i < 10; i++)
		assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0,
				&r), DPQ_LISTEN_REPLY);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_REPLY_RATE);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + 9999,
			&r), DPQ_LISTEN_DROP);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0 + 10000,
			&r), DPQ_LISTEN_REPLY);
	dpq_listener_destroy(l);

	/* Disabled. */
	base_cfg(&cfg);
	cfg.stateless_reset = false;
	l = mk(&cfg);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_SRESET_OFF);
	dpq_listener_destroy(l);
}

static void
test_bucket(void **state)
{
	struct dpq_bucket b;
	int i, got = 0;

	(void)state;
	dpq_bucket_init(&b, 3, 2, 100);
	assert_true(dpq_bucket_take(&b, 100));
	assert_true(dpq_bucket_take(&b, 100));
	assert_false(dpq_bucket_take(&b, 100));
	/* 1/3 s per event: 333333 us is not enough, 333334 is. */
	assert_false(dpq_bucket_take(&b, 100 + 333333));
	assert_true(dpq_bucket_take(&b, 100 + 333334));
	/* A clock stepping back refills nothing. */
	assert_false(dpq_bucket_take(&b, 50));
	/* Huge gaps neither overflow nor overfill. */
	assert_true(dpq_bucket_take(&b, UINT64_MAX - 1));
	assert_true(dpq_bucket_take(&b, UINT64_MAX - 1));
	assert_false(dpq_bucket_take(&b, UINT64_MAX - 1));
	dpq_bucket_init(&b, UINT32_MAX, UINT64_MAX, 0);
	for (i = 0; i < 1000; i++)
		got += dpq_bucket_take(&b, (uint64_t)i * 1000000000);
	assert_int_equal(got, 1000);
	dpq_bucket_init(&b, 0, 1, 0);
	assert_true(dpq_bucket_take(&b, 0));
	assert_false(dpq_bucket_take(&b, 1000 * SEC));
}

static void
test_bad_config(void **state)
{
	struct dpq_listener_cfg cfg;

	(void)state;
	base_cfg(&cfg);
	cfg.sreset_key_len = 0;
	assert_null(dpq_listener_create(&cfg, cc, &rnd, 0));
	base_cfg(&cfg);
	cfg.n_versions = 0;
	assert_null(dpq_listener_create(&cfg, cc, &rnd, 0));
	base_cfg(&cfg);
	cfg.cid.len = 3;
	assert_null(dpq_listener_create(&cfg, cc, &rnd, 0));
	base_cfg(&cfg);
	assert_null(dpq_listener_create(&cfg, NULL, &rnd, 0));
	assert_null(dpq_listener_create(&cfg, cc, NULL, 0));
	assert_string_equal(dpq_listen_outcome_str(DPQ_LO_RETRY), "retry");
	assert_string_equal(dpq_listen_outcome_str(DPQ_LO_COUNT), "unknown");
	dpq_listener_destroy(NULL);
}

/* No token key installed: Retry cannot be made; counted, not a crash. */
static void
test_no_token_key(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	uint8_t buf[1500];
	size_t n;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_ALWAYS;
	l = dpq_listener_create(&cfg, cc, &rnd, 0);
	assert_non_null(l);
	peer4(&a, 1, 5000);
	n = mk_initial(buf, 1200, client_dcid, 8, NULL, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, T0, &r),
			DPQ_LISTEN_DROP);
	assert_int_equal(r.outcome, DPQ_LO_DROP_INTERNAL);
	dpq_listener_destroy(l);
}

/*
 * Garbage: random datagrams and mutations (bit flips, truncations) of
 * valid Initials, short headers and unknown versions, each in an
 * exact-size heap buffer so ASan catches any read past the end. Every
 * reply is smaller than its trigger; every datagram is counted once.
 */
static void
test_garbage(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_listener_result r;
	struct dpq_netaddr a;
	struct dpq_cid cid;
	struct test_rng g = { .s = 0x5eed };
	uint8_t base[3][1500], tok[DPQ_TOKEN_MAX_LEN], *d;
	size_t blen[3], len, k, tok_len;
	struct dpq_token_info ti;
	int iter, kind, flips;
	uint64_t now = T0, count = 0;
	enum dpq_listen_action act;

	(void)state;
	base_cfg(&cfg);
	cfg.retry = DPQ_RETRY_RATE;
	cfg.retry_rate = 50;
	cfg.reply_rate = 100000;
	cfg.reply_burst = 100000;
	l = mk(&cfg);
	peer4(&a, 1, 5000);
	memset(&ti, 0, sizeof(ti));
	ti.type = DPQ_TOKEN_RETRY;
	ti.issued = T0;
	ti.addr = a;
	dpq_cid_gen(&cfg.cid, 3, &rnd, &cid);
	ti.retry_scid = cid;
	dpq_cid_set(&ti.odcid, client_dcid, 8);
	tok_len = (size_t)dpq_token_seal(dpq_listener_tokens(l), &ti, &rnd,
			tok, sizeof(tok));
	blen[0] = mk_initial(base[0], 1300, cid.bytes, cid.len, tok, tok_len);
	blen[1] = mk_short(base[1], 200, cid.bytes, cid.len);
	blen[2] = mk_long_version(base[2], 1250, 0xff00001d, 0);
	for (iter = 0; iter < 200000; iter++) {
		kind = (int)(test_rng_next(&g) % 4);
		if (kind == 3) {
			len = test_rng_next(&g) % 1501;
			d = malloc(len ? len : 1);
			test_rng_fill(&g, d, len);
		} else {
			len = blen[kind];
			if (test_rng_next(&g) % 2)
				len = test_rng_next(&g) % (len + 1);
			d = malloc(len ? len : 1);
			memcpy(d, base[kind], len);
			for (flips = (int)(test_rng_next(&g) % 4);
					flips > 0 && len > 0; flips--) {
				k = test_rng_next(&g) % len;
				d[k] ^= (uint8_t)(1u << (test_rng_next(&g) % 8));
			}
		}
		now += test_rng_next(&g) % 2000;
		act = dpq_listener_on_datagram(l, d, len, &a, now, &r);
		count++;
		assert_true(act == DPQ_LISTEN_DROP || act == DPQ_LISTEN_REPLY ||
				act == DPQ_LISTEN_ACCEPT);
		assert_int_equal(act, r.action);
		assert_true((unsigned int)r.outcome < DPQ_LO_COUNT);
		if (act == DPQ_LISTEN_REPLY) {
			assert_non_null(r.reply);
			assert_true(r.reply_len > 0);
			assert_true(r.reply_len < len);
		} else {
			assert_int_equal(r.reply_len, 0);
		}
		free(d);
	}
	assert_int_equal(total(l), count);
	/* The mutations reached the interesting paths. */
	assert_true(dpq_listener_stats(l)->outcome[DPQ_LO_ACCEPT_RETRY_TOKEN]
			> 0);
	assert_true(dpq_listener_stats(l)->outcome[DPQ_LO_CLOSE_INVALID_TOKEN]
			> 0);
	assert_true(dpq_listener_stats(l)->outcome[DPQ_LO_SRESET] > 0);
	assert_true(dpq_listener_stats(l)->outcome[DPQ_LO_VN] > 0);
	assert_true(dpq_listener_stats(l)->outcome[DPQ_LO_DROP_MALFORMED] > 0);
	dpq_listener_destroy(l);
}

/* The CIDs a shard issues in NEW_CONNECTION_ID (RFC 9000 §5.1.1) carry
 * the QUIC-LB layout with that shard's id, so a packet sent to any of
 * them after a migration is routed (or handed over) to the owning
 * shard; each has the stateless reset token derived from it (§10.3.2).
 * The unroutable configuration issues none (draft: "Configuration
 * Failover"). */
static void
test_new_cid(void **state)
{
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_cid c[8];
	uint8_t tok[DPQ_RESET_TOKEN_LEN], want[DPQ_RESET_TOKEN_LEN];
	unsigned int i, j;

	(void)state;
	base_cfg(&cfg);
	l = mk(&cfg);
	for (i = 0; i < 8; i++) {
		assert_int_equal(dpq_listener_new_cid(l, &c[i], tok), 0);
		assert_int_equal(c[i].len, cfg.cid.len);
		assert_int_equal(dpq_cid_check(&cfg.cid, c[i].bytes,
				c[i].len), 0);
		assert_int_equal(dpq_cid_shard(&cfg.cid, c[i].bytes,
				c[i].len), 3);
		assert_int_equal(c[i].bytes[1], 0x5a);	/* server id */
		assert_int_equal(dpq_sreset_token(cfg.sreset_key, 32,
				c[i].bytes, c[i].len, want), 0);
		assert_memory_equal(tok, want, sizeof(tok));
		for (j = 0; j < i; j++)
			assert_false(dpq_cid_eq(&c[i], &c[j]));
	}
	assert_int_equal(dpq_listener_new_cid(l, NULL, tok), -EINVAL);
	dpq_listener_destroy(l);

	base_cfg(&cfg);
	cfg.cid.config_rotation = DPQ_CID_CR_UNROUTABLE;
	cfg.cid.server_id_len = 0;
	cfg.cid.encode_len = true;
	l = mk(&cfg);
	assert_int_equal(dpq_listener_new_cid(l, &c[0], tok), -ENOTSUP);
	dpq_listener_destroy(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_negotiation),
		cmocka_unit_test(test_initial_accept),
		cmocka_unit_test(test_retry_always_roundtrip),
		cmocka_unit_test(test_bad_retry_token),
		cmocka_unit_test(test_new_token),
		cmocka_unit_test(test_new_token_single_use),
		cmocka_unit_test(test_retry_rate),
		cmocka_unit_test(test_retry_never),
		cmocka_unit_test(test_stateless_reset),
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_no_token_key),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_new_cid),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
