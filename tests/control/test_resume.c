/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of TLS resumption and 0-RTT in control/tls (RFC 8446 §2.2, §2.3,
 * §4.6.1, §8; RFC 9001 §4.6): a client and a server dpq_tls joined in
 * memory. A server with a ticket key sends one NewSessionTicket; the
 * client resumes with it (no certificate), with 0-RTT when offered and
 * allowed; the previous ticket key still opens tickets, one rotated away
 * does not; GnuTLS's own key periods are crossed; lifetimes end; 0-RTT
 * is refused by policy, by a replayed ClientHello, by a full replay
 * table and after the recording restarts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "control/tls/tls.h"

#define BUF_MAX 16384

struct side {
	uint8_t out[DPQ_TLS_LEVELS][BUF_MAX];
	size_t out_len[DPQ_TLS_LEVELS];
	bool rsecret[DPQ_TLS_LEVELS], wsecret[DPQ_TLS_LEVELS];
	uint8_t ticket[4096];
	size_t ticket_len;
	bool ticket_early;
	unsigned int tickets;
	/* ClientHello bytes, to replay */
	uint8_t ch[BUF_MAX];
	size_t ch_len;
};

static int
on_secret(void *arg, enum dpq_tls_level level, bool write, uint16_t suite,
		const uint8_t *secret, size_t len)
{
	struct side *s = arg;

	(void)suite;
	(void)secret;
	(void)len;
	if (write)
		s->wsecret[level] = true;
	else
		s->rsecret[level] = true;
	return 0;
}

static int
on_send(void *arg, enum dpq_tls_level level, const uint8_t *data, size_t len)
{
	struct side *s = arg;

	assert_true(s->out_len[level] + len <= BUF_MAX);
	memcpy(s->out[level] + s->out_len[level], data, len);
	s->out_len[level] += len;
	return 0;
}

static uint64_t
on_peer_tparams(void *arg, const uint8_t *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return 0;
}

static void
on_ticket(void *arg, const uint8_t *data, size_t len, bool early)
{
	struct side *s = arg;

	assert_true(len <= sizeof(s->ticket));
	memcpy(s->ticket, data, len);
	s->ticket_len = len;
	s->ticket_early = early;
	s->tickets++;
}

static const struct dpq_tls_callbacks cbs = {
	.on_secret = on_secret,
	.on_send = on_send,
	.on_peer_tparams = on_peer_tparams,
	.on_ticket = on_ticket,
};

static const uint8_t tp[] = { 0x04, 0x04, 0x80, 0x10, 0x00, 0x00 };
static struct dpq_tls_ctx *sctx, *cctx;
static uint8_t stek1[DPQ_TLS_STEK_LEN], stek2[DPQ_TLS_STEK_LEN],
	stek3[DPQ_TLS_STEK_LEN];
static long clock_now;
/* pump() hands the server's 1-RTT bytes (its NewSessionTicket) to the
 * client this many at a time (0: all at once). */
static size_t app_piece;

static long
test_clock(void)
{
	return clock_now;
}

static void
quiet_log(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* Deliver everything until both sides are quiet; 0 or -1 on failure. */
static int
pump(struct dpq_tls *c, struct side *cs, struct dpq_tls *s, struct side *ss)
{
	int progress = 1, rounds = 0;

	while (progress && rounds++ < 20) {
		progress = 0;
		for (int l = 0; l < DPQ_TLS_LEVELS; l++) {
			if (cs->out_len[l]) {
				size_t n = cs->out_len[l];

				cs->out_len[l] = 0;
				progress = 1;
				if (dpq_tls_recv(s, l, cs->out[l], n) != 0)
					return -1;
			}
			if (ss->out_len[l]) {
				size_t n = ss->out_len[l], k, step = n;

				ss->out_len[l] = 0;
				progress = 1;
				if (l == DPQ_TLS_LEVEL_APP && app_piece != 0)
					step = app_piece;
				for (k = 0; k < n; k += step)
					if (dpq_tls_recv(c, l, ss->out[l] + k,
							n - k < step ? n - k :
							step) != 0)
						return -1;
			}
		}
	}
	return 0;
}

struct run {
	/* server */
	const uint8_t *stek, *stek_prev;
	bool early_data;
	uint32_t lifetime;
	struct dpq_tls_antireplay *ar;
	/* client */
	const struct side *resume;	/* its ticket */
	bool offer_early;
	/* results */
	bool resumed, early_accepted, client_early_key, server_early_key;
	bool cert_sent;
};

/* One handshake; fills the results and the client side (its ticket). */
static void
handshake(struct run *r, struct side *cs, struct side *ss)
{
	struct dpq_tls_session_opts so = { 0 }, co = { 0 };
	struct dpq_tls *c = NULL, *s = NULL;

	memset(cs, 0, sizeof(*cs));
	memset(ss, 0, sizeof(*ss));
	so.stek = r->stek;
	so.stek_prev = r->stek_prev;
	so.ticket_lifetime_s = r->lifetime;
	so.early_data = r->early_data;
	so.antireplay = r->ar;
	if (r->resume != NULL) {
		co.session = r->resume->ticket;
		co.session_len = r->resume->ticket_len;
	}
	co.offer_early_data = r->offer_early;
	assert_int_equal(dpq_tls_new_opts(sctx, &cbs, ss, tp, sizeof(tp), &so,
			&s), 0);
	assert_int_equal(dpq_tls_new_opts(cctx, &cbs, cs, tp, sizeof(tp), &co,
			&c), 0);
	memcpy(cs->ch, cs->out[0], cs->out_len[0]);
	cs->ch_len = cs->out_len[0];
	r->client_early_key = cs->wsecret[DPQ_TLS_LEVEL_EARLY];
	assert_int_equal(pump(c, cs, s, ss), 0);
	assert_true(dpq_tls_handshake_complete(c));
	assert_true(dpq_tls_handshake_complete(s));
	r->resumed = dpq_tls_resumed(c);
	assert_int_equal(dpq_tls_resumed(s), r->resumed);
	r->early_accepted = dpq_tls_early_data_accepted(c);
	assert_int_equal(dpq_tls_early_data_accepted(s), r->early_accepted);
	r->server_early_key = ss->rsecret[DPQ_TLS_LEVEL_EARLY];
	/* RFC 8446 §2.2: a resumption has no Certificate; the server's
	 * Handshake flight is then a fraction of a full one. */
	r->cert_sent = !r->resumed;
	dpq_tls_free(c);
	dpq_tls_free(s);
}

/* A first connection: full handshake, one ticket (0-RTT allowed when
 * early). ar: the server's recorder (0-RTT is accepted only for tickets
 * issued after recording started, RFC 8446 §8.2). */
static void
first(struct side *cs, struct side *ss, const uint8_t *stek, bool early,
		struct dpq_tls_antireplay *ar)
{
	struct run r = { .stek = stek, .early_data = early, .lifetime = 3600,
		.ar = ar };

	handshake(&r, cs, ss);
	assert_false(r.resumed);
	assert_int_equal(cs->tickets, 1);
	assert_int_equal(cs->ticket_early, early);
}

static void
test_resume_0rtt(void **state)
{
	struct side *cs = calloc(1, sizeof(*cs)), *ss = calloc(1, sizeof(*ss));
	struct side *t = calloc(1, sizeof(*t));
	struct dpq_tls_antireplay *ar = NULL;
	struct dpq_tls_antireplay_stats st;
	struct run r;

	(void)state;
	assert_int_equal(dpq_tls_antireplay_create(10000, 64, &ar), 0);
	first(cs, ss, stek1, true, ar);
	*t = *cs;
	/* Resume with 0-RTT: both sides have the 0-RTT key, no cert. */
	memset(&r, 0, sizeof(r));
	r.stek = stek1;
	r.early_data = true;
	r.lifetime = 3600;
	r.ar = ar;
	r.resume = t;
	r.offer_early = true;
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	assert_true(r.client_early_key);
	assert_true(r.server_early_key);
	assert_true(r.early_accepted);
	/* A resumed session issues a new ticket too. */
	assert_int_equal(cs->tickets, 1);
	/* Resume without offering 0-RTT: resumed, no early key. */
	r.offer_early = false;
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	assert_false(r.client_early_key);
	assert_false(r.early_accepted);
	dpq_tls_antireplay_get_stats(ar, &st);
	assert_int_equal(st.accepted, 1);
	dpq_tls_antireplay_destroy(ar);
	/* No ticket key on the server: no ticket at all. */
	memset(&r, 0, sizeof(r));
	handshake(&r, cs, ss);
	assert_int_equal(cs->tickets, 0);
	free(cs);
	free(ss);
	free(t);
}

/* Current and previous keys open tickets; one rotated away does not. */
static void
test_key_rotation(void **state)
{
	struct side *cs = calloc(1, sizeof(*cs)), *ss = calloc(1, sizeof(*ss));
	struct side *t = calloc(1, sizeof(*t));
	struct run r;

	(void)state;
	first(cs, ss, stek1, false, NULL);
	*t = *cs;
	memset(&r, 0, sizeof(r));
	r.lifetime = 3600;
	r.resume = t;
	/* Rotated once: stek1 is previous. */
	r.stek = stek2;
	r.stek_prev = stek1;
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	/* That session's new ticket: GnuTLS seals it under the key that
	 * opened the client's ticket (stek1), so it lives until stek1 is
	 * rotated away: it resumes while stek1 is previous. */
	{
		struct side *t2 = calloc(1, sizeof(*t2));

		*t2 = *cs;
		r.resume = t2;
		handshake(&r, cs, ss);
		assert_true(r.resumed);
		free(t2);
	}
	/* Rotated twice: stek1 is gone, a full handshake follows. */
	r.resume = t;
	r.stek = stek3;
	r.stek_prev = stek2;
	handshake(&r, cs, ss);
	assert_false(r.resumed);
	assert_true(r.cert_sent);
	free(cs);
	free(ss);
	free(t);
}

/* GnuTLS derives its ticket key per period of 3 lifetimes: a ticket from
 * the period before still resumes (the key choice follows it), and an
 * expired ticket does not. */
static void
test_periods_and_expiry(void **state)
{
	struct side *cs = calloc(1, sizeof(*cs)), *ss = calloc(1, sizeof(*ss));
	struct side *t = calloc(1, sizeof(*t));
	struct run r;
	long start;

	(void)state;
	/* Just before a period boundary (period = 3 * 3600 s). */
	start = (1900000000L / 10800 + 1) * 10800 - 60;
	clock_now = start;
	dpq_tls_set_time_function(test_clock);
	first(cs, ss, stek1, false, NULL);
	*t = *cs;
	memset(&r, 0, sizeof(r));
	r.stek = stek1;
	r.lifetime = 3600;
	r.resume = t;
	clock_now = start + 120;	/* across the boundary */
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	clock_now = start + 3700;	/* past the ticket's lifetime */
	handshake(&r, cs, ss);
	assert_false(r.resumed);
	dpq_tls_set_time_function(NULL);
	free(cs);
	free(ss);
	free(t);
}

/* 0-RTT refused while the resumption goes on: by policy, by a replayed
 * ClientHello, by a full table, after a restart of the recording. */
static void
test_0rtt_refused(void **state)
{
	struct side *cs = calloc(1, sizeof(*cs)), *ss = calloc(1, sizeof(*ss));
	struct side *t = calloc(1, sizeof(*t));
	struct dpq_tls_session_opts so = { 0 };
	struct dpq_tls_antireplay *ar = NULL;
	struct dpq_tls_antireplay_stats st;
	struct dpq_tls *s;
	struct run r;

	(void)state;
	assert_int_equal(dpq_tls_antireplay_create(10000, 64, &ar), 0);
	first(cs, ss, stek1, true, ar);
	*t = *cs;
	memset(&r, 0, sizeof(r));
	r.stek = stek1;
	r.lifetime = 3600;
	r.resume = t;
	r.offer_early = true;
	r.ar = ar;
	/* Policy: 0-RTT off on the server. */
	r.early_data = false;
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	assert_true(r.client_early_key);	/* the client tried */
	assert_false(r.server_early_key);
	assert_false(r.early_accepted);
	/* Accepted once... */
	r.early_data = true;
	handshake(&r, cs, ss);
	assert_true(r.early_accepted);
	/* ...and the very same ClientHello again (an attacker's copy) to
	 * a new server session: 0-RTT refused (RFC 8446 §8.2). */
	so.stek = stek1;
	so.ticket_lifetime_s = 3600;
	so.early_data = true;
	so.antireplay = ar;
	memset(ss, 0, sizeof(*ss));
	assert_int_equal(dpq_tls_new_opts(sctx, &cbs, ss, tp, sizeof(tp), &so,
			&s), 0);
	assert_int_equal(dpq_tls_recv(s, DPQ_TLS_LEVEL_INITIAL, cs->ch,
			cs->ch_len), 0);
	assert_false(ss->rsecret[DPQ_TLS_LEVEL_EARLY]);
	assert_true(ss->wsecret[DPQ_TLS_LEVEL_HANDSHAKE]);
	dpq_tls_free(s);
	dpq_tls_antireplay_get_stats(ar, &st);
	assert_int_equal(st.replayed, 1);
	/* Restarted recording: the ticket predates it, no 0-RTT. */
	assert_int_equal(dpq_tls_antireplay_restart(ar, 10000, 64), 0);
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	assert_false(r.early_accepted);
	dpq_tls_antireplay_destroy(ar);
	/* A table of one entry: the second ClientHello finds it full. */
	assert_int_equal(dpq_tls_antireplay_create(10000, 1, &ar), 0);
	first(cs, ss, stek1, true, ar);
	*t = *cs;
	r.ar = ar;
	handshake(&r, cs, ss);
	assert_true(r.early_accepted);
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	assert_false(r.early_accepted);
	dpq_tls_antireplay_get_stats(ar, &st);
	assert_int_equal(st.full, 1);
	dpq_tls_antireplay_destroy(ar);
	free(cs);
	free(ss);
	free(t);
}

/* A truncated or altered cached session: a full handshake, no error. */
/* The ticket reaches the client in pieces, as 1-RTT CRYPTO frames split
 * over packets arrive (one lost and sent again): the client gets it
 * whole. GnuTLS takes a post-handshake message only whole; before
 * control/tls/tls.c assembled them, the first byte alone failed the
 * connection with internal_error (0x150). */
static void
test_ticket_in_pieces(void **state)
{
	static const size_t pieces[] = { 1, 3, 4, 5, 100 };
	struct side cs, ss;
	struct run r = { .stek = stek1, .lifetime = 3600 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		app_piece = pieces[i];
		handshake(&r, &cs, &ss);
		app_piece = 0;
		assert_int_equal(cs.tickets, 1);
		assert_true(cs.ticket_len > 0);
		/* ... and a working one: it resumes. */
		struct run again = { .stek = stek1, .lifetime = 3600,
			.resume = &cs };
		struct side cs2, ss2;

		handshake(&again, &cs2, &ss2);
		assert_true(again.resumed);
	}
}

static void
test_bad_session(void **state)
{
	struct side *cs = calloc(1, sizeof(*cs)), *ss = calloc(1, sizeof(*ss));
	struct side *t = calloc(1, sizeof(*t));
	struct dpq_tls_antireplay *ar = NULL;
	struct run r;

	(void)state;
	assert_int_equal(dpq_tls_antireplay_create(10000, 64, &ar), 0);
	first(cs, ss, stek1, true, ar);
	*t = *cs;
	t->ticket_len /= 2;
	memset(&r, 0, sizeof(r));
	r.stek = stek1;
	r.lifetime = 3600;
	r.resume = t;
	r.offer_early = true;
	r.ar = ar;
	r.early_data = true;
	handshake(&r, cs, ss);
	assert_false(r.resumed);
	assert_false(r.client_early_key);
	/* One bit flipped in the middle (GnuTLS itself would crash on
	 * some such data: dpq_tls checks the session's digest). */
	for (size_t at = 0; at < cs->ticket_len; at += cs->ticket_len / 7) {
		*t = *cs;
		t->ticket[at] ^= 0x10;
		r.resume = t;
		handshake(&r, cs, ss);
		assert_false(r.resumed);
	}
	/* The intact one resumes. */
	*t = *cs;
	r.resume = t;
	handshake(&r, cs, ss);
	assert_true(r.resumed);
	dpq_tls_antireplay_destroy(ar);
	free(cs);
	free(ss);
	free(t);
}

int
main(void)
{
	struct dpq_tls_ctx_conf sconf = {
		.role = DPQ_TLS_SERVER, .alpn = { "hq-interop" },
		.alpn_count = 1, .self_signed_name = "dpquic.test",
		.log = quiet_log,
	};
	struct dpq_tls_ctx_conf cconf = {
		.role = DPQ_TLS_CLIENT, .alpn = { "hq-interop" },
		.alpn_count = 1, .server_name = "dpquic.test",
		.log = quiet_log,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resume_0rtt),
		cmocka_unit_test(test_key_rotation),
		cmocka_unit_test(test_periods_and_expiry),
		cmocka_unit_test(test_0rtt_refused),
		cmocka_unit_test(test_bad_session),
		cmocka_unit_test(test_ticket_in_pieces),
	};
	int rc;

	for (int i = 0; i < DPQ_TLS_STEK_LEN; i++) {
		stek1[i] = (uint8_t)i;
		stek2[i] = (uint8_t)(0x80 + i);
		stek3[i] = (uint8_t)(0x40 ^ i);
	}
	if (dpq_tls_ctx_create(&sconf, &sctx) != 0 ||
	    dpq_tls_ctx_create(&cconf, &cctx) != 0)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	dpq_tls_ctx_destroy(sctx);
	dpq_tls_ctx_destroy(cctx);
	return rc;
}
