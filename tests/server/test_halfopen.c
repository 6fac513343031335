/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Half-open connection bounds (dataplane/server/halfopen.c) and the
 * listener's Retry switched on by them (issue 7: one host's Initials
 * filled the connection table for 30 s).
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

#include "dataplane/engine/packet.h"
#include "dataplane/server/halfopen.h"
#include "dataplane/server/listener.h"
#include "test_server_util.h"

static struct test_rng rng = { 0x1234567 };
static struct dpq_rand rnd = { test_rng_fill, &rng };

static void
v4(struct dpq_netaddr *a, uint8_t host, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->ip[0] = 198;
	a->ip[1] = 18;
	a->ip[2] = 0;
	a->ip[3] = host;
}

static void
v6(struct dpq_netaddr *a, uint8_t net, uint8_t host)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	a->port = 443;
	a->ip[0] = 0x20;
	a->ip[1] = 0x01;
	a->ip[2] = 0x0d;
	a->ip[3] = 0xb8;
	a->ip[7] = net;
	a->ip[15] = host;
}

static struct dpq_halfopen *
mk(uint32_t total, uint32_t per_prefix, uint32_t nslots)
{
	struct dpq_halfopen_cfg cfg;
	struct dpq_halfopen *h;

	dpq_halfopen_cfg_default(&cfg);
	cfg.max_total = total;
	cfg.max_per_prefix = per_prefix;
	h = dpq_halfopen_create(&cfg, nslots, &rnd);
	assert_non_null(h);
	return h;
}

/* Admit and add like a shard: evict the victim first when told to. */
static enum dpq_halfopen_verdict
open_one(struct dpq_halfopen *h, uint32_t slot, const struct dpq_netaddr *a,
		uint32_t *victim)
{
	enum dpq_halfopen_verdict v = dpq_halfopen_admit(h, a, false, victim);

	if (v == DPQ_HO_EVICT)
		dpq_halfopen_remove(h, *victim, false);
	if (v != DPQ_HO_REFUSE)
		assert_int_equal(dpq_halfopen_add(h, slot, a), 0);
	return v;
}

/* One host at its cap evicts its own oldest, never another host's. */
static void
test_prefix_cap(void **state)
{
	struct dpq_halfopen *h = mk(16, 4, 32);
	struct dpq_netaddr a, b;
	uint32_t victim = 99, s;

	(void)state;
	v4(&a, 1, 1000);
	v4(&b, 2, 1000);
	assert_int_equal(open_one(h, 10, &b, &victim), DPQ_HO_ADMIT);
	for (s = 0; s < 4; s++) {
		a.port = (uint16_t)(1000 + s);	/* ports do not matter */
		assert_int_equal(open_one(h, s, &a, &victim), DPQ_HO_ADMIT);
	}
	assert_int_equal(dpq_halfopen_count_prefix(h, &a), 4);
	assert_int_equal(open_one(h, 4, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 0);
	assert_int_equal(open_one(h, 5, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 1);
	assert_int_equal(dpq_halfopen_count_prefix(h, &a), 4);
	/* The other host kept its connection and may open more. */
	assert_true(dpq_halfopen_tracked(h, 10));
	assert_int_equal(open_one(h, 11, &b, &victim), DPQ_HO_ADMIT);
	assert_int_equal(dpq_halfopen_count(h), 6);
	assert_int_equal(dpq_halfopen_stats(h)->evicted_prefix, 2);
	dpq_halfopen_destroy(h);
}

/* The shard at its cap, or its table full: the oldest goes; a table
 * full of established connections refuses. */
static void
test_total_cap(void **state)
{
	struct dpq_halfopen *h = mk(8, 8, 32);
	struct dpq_netaddr a;
	uint32_t victim = 99, s;

	(void)state;
	for (s = 0; s < 8; s++) {
		v4(&a, (uint8_t)(10 + s), 443);
		assert_int_equal(open_one(h, s, &a, &victim), DPQ_HO_ADMIT);
	}
	v4(&a, 100, 443);
	assert_int_equal(open_one(h, 8, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 0);
	/* Completed handshakes leave the tracker. */
	dpq_halfopen_remove(h, 3, true);
	dpq_halfopen_remove(h, 3, true);	/* twice: ignored */
	assert_int_equal(dpq_halfopen_count(h), 7);
	assert_int_equal(dpq_halfopen_stats(h)->completed, 1);
	/* Table full: the oldest left (slot 1) goes. */
	v4(&a, 101, 443);
	assert_int_equal(dpq_halfopen_admit(h, &a, true, &victim),
			DPQ_HO_EVICT);
	assert_int_equal(victim, 1);
	/* Nothing half-open and the table full: refused. */
	for (s = 0; s < 9; s++)
		dpq_halfopen_remove(h, s, true);
	assert_int_equal(dpq_halfopen_count(h), 0);
	assert_int_equal(dpq_halfopen_admit(h, &a, true, &victim),
			DPQ_HO_REFUSE);
	assert_int_equal(dpq_halfopen_admit(h, &a, false, &victim),
			DPQ_HO_ADMIT);
	/* Misuse: out of range, twice, or past the cap without admit. */
	assert_int_equal(dpq_halfopen_add(h, 32, &a), -EINVAL);
	assert_int_equal(dpq_halfopen_add(h, 0, &a), 0);
	assert_int_equal(dpq_halfopen_add(h, 0, &a), -EINVAL);
	dpq_halfopen_destroy(h);
}

/* A peer that proved its address (RFC 9000 §8.1) is evicted only when no
 * unproven one is left: of the shard, and of its own prefix. */
static void
test_proven_last(void **state)
{
	struct dpq_halfopen *h = mk(4, 3, 32);
	struct dpq_netaddr a;
	uint32_t victim = 99, s;

	(void)state;
	for (s = 0; s < 4; s++) {
		v4(&a, (uint8_t)(10 + s), 443);
		assert_int_equal(open_one(h, s, &a, &victim), DPQ_HO_ADMIT);
	}
	dpq_halfopen_proven(h, 0);
	dpq_halfopen_proven(h, 0);	/* twice: once */
	dpq_halfopen_proven(h, 2);
	dpq_halfopen_proven(h, 20);	/* not tracked: ignored */
	dpq_halfopen_proven(h, 99);	/* out of range: ignored */
	assert_int_equal(dpq_halfopen_stats(h)->proven, 2);
	/* The shard at its cap: the oldest unproven go first (1, 3, 4). */
	v4(&a, 50, 443);
	assert_int_equal(open_one(h, 4, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 1);
	v4(&a, 51, 443);
	assert_int_equal(open_one(h, 5, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 3);
	v4(&a, 52, 443);
	assert_int_equal(open_one(h, 6, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 4);
	/* Only proven ones and the newest: it goes, then the oldest proven
	 * in the order they proved it. */
	dpq_halfopen_proven(h, 2);	/* already: keeps its place */
	v4(&a, 53, 443);
	assert_int_equal(open_one(h, 7, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 5);
	dpq_halfopen_proven(h, 6);
	dpq_halfopen_proven(h, 7);
	v4(&a, 54, 443);
	assert_int_equal(open_one(h, 8, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 0);
	assert_true(dpq_halfopen_tracked(h, 2));
	assert_int_equal(dpq_halfopen_count(h), 4);
	/* A proven one that completes or goes leaves the tracker. */
	dpq_halfopen_remove(h, 2, true);
	dpq_halfopen_remove(h, 6, false);
	assert_int_equal(dpq_halfopen_count(h), 2);
	dpq_halfopen_destroy(h);

	/* One host at its cap (a NAT: a real client behind the same
	 * address as a flood) keeps its proven handshake. */
	h = mk(16, 3, 32);
	v4(&a, 1, 443);
	for (s = 0; s < 3; s++)
		assert_int_equal(open_one(h, s, &a, &victim), DPQ_HO_ADMIT);
	dpq_halfopen_proven(h, 0);
	for (s = 3; s < 10; s++) {
		assert_int_equal(open_one(h, s, &a, &victim), DPQ_HO_EVICT);
		assert_true(victim != 0);
	}
	assert_true(dpq_halfopen_tracked(h, 0));
	assert_int_equal(dpq_halfopen_count_prefix(h, &a), 3);
	dpq_halfopen_destroy(h);
}

/* IPv6 sources are grouped by /64: a host cannot escape its cap by
 * walking its interface identifier. */
static void
test_ipv6_prefix(void **state)
{
	struct dpq_halfopen *h = mk(64, 2, 64);
	struct dpq_netaddr a;
	uint32_t victim;

	(void)state;
	v6(&a, 1, 1);
	assert_int_equal(open_one(h, 0, &a, &victim), DPQ_HO_ADMIT);
	v6(&a, 1, 2);
	assert_int_equal(open_one(h, 1, &a, &victim), DPQ_HO_ADMIT);
	v6(&a, 1, 3);
	assert_int_equal(open_one(h, 2, &a, &victim), DPQ_HO_EVICT);
	assert_int_equal(victim, 0);
	v6(&a, 2, 1);		/* another /64 */
	assert_int_equal(open_one(h, 3, &a, &victim), DPQ_HO_ADMIT);
	dpq_halfopen_destroy(h);
}

/* Random churn against a reference model: the prefix table (linear
 * probing, backward-shift deletion) never loses or confuses a prefix. */
static void
test_churn_model(void **state)
{
	enum { NS = 512, HOSTS = 300 };
	struct dpq_halfopen *h = mk(NS, 3, NS);
	static uint16_t host_of[NS];
	static uint32_t count[HOSTS];
	static bool live[NS], proven[NS];
	struct test_rng r = { 99 };
	struct dpq_netaddr a;
	uint32_t victim;
	int i;

	(void)state;
	for (i = 0; i < 200000; i++) {
		uint32_t s = (uint32_t)(test_rng_next(&r) % NS);
		uint32_t host = (uint32_t)(test_rng_next(&r) % HOSTS);

		if (live[s] && !proven[s] && test_rng_next(&r) % 4 == 0) {
			dpq_halfopen_proven(h, s);
			proven[s] = true;
			continue;
		}
		if (live[s]) {
			dpq_halfopen_remove(h, s, (i & 1) != 0);
			live[s] = false;
			proven[s] = false;
			count[host_of[s]]--;
			continue;
		}
		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		a.ip[0] = 10;
		a.ip[2] = (uint8_t)(host >> 8);
		a.ip[3] = (uint8_t)host;
		switch (dpq_halfopen_admit(h, &a, false, &victim)) {
		case DPQ_HO_EVICT:
			assert_true(live[victim]);
			/* Same host when the host is at its cap, and a
			 * proven one only when all of them are. */
			if (count[host] == 3) {
				assert_int_equal(host_of[victim], host);
				for (uint32_t k = 0; proven[victim] && k < NS;
				     k++)
					assert_false(live[k] && !proven[k] &&
						host_of[k] == host);
			}
			dpq_halfopen_remove(h, victim, false);
			live[victim] = false;
			proven[victim] = false;
			count[host_of[victim]]--;
			break;
		case DPQ_HO_ADMIT:
			assert_true(count[host] < 3);
			break;
		default:
			fail();
		}
		assert_int_equal(dpq_halfopen_add(h, s, &a), 0);
		live[s] = true;
		host_of[s] = (uint16_t)host;
		count[host]++;
		assert_int_equal(dpq_halfopen_count_prefix(h, &a), count[host]);
	}
	for (i = 0; i < HOSTS; i++) {
		memset(&a, 0, sizeof(a));
		a.family = AF_INET;
		a.ip[0] = 10;
		a.ip[2] = (uint8_t)(i >> 8);
		a.ip[3] = (uint8_t)i;
		assert_int_equal(dpq_halfopen_count_prefix(h, &a), count[i]);
	}
	dpq_halfopen_destroy(h);
}

static void
test_bad_config(void **state)
{
	struct dpq_halfopen_cfg cfg;

	(void)state;
	dpq_halfopen_cfg_default(&cfg);
	assert_null(dpq_halfopen_create(&cfg, 0, &rnd));
	cfg.v4_prefix = 33;
	assert_null(dpq_halfopen_create(&cfg, 16, &rnd));
	dpq_halfopen_cfg_default(&cfg);
	cfg.max_per_prefix = 0;
	assert_null(dpq_halfopen_create(&cfg, 16, &rnd));
	assert_int_equal(errno, EINVAL);
}

/* ---- the listener: Retry while half-open connections are many ------- */

static size_t
mk_initial(uint8_t *buf, size_t len, const uint8_t *tok, size_t tok_len)
{
	static const uint8_t dcid[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t scid[4] = { 9, 9, 9, 9 };
	struct dpq_pkt_long_desc d = { 0 };
	uint8_t *p, *lenf;

	d.type = DPQ_PKT_INITIAL;
	d.version = DPQ_VERSION_1;
	d.dcid = dcid;
	d.dcid_len = sizeof(dcid);
	d.scid = scid;
	d.scid_len = sizeof(scid);
	d.token = tok;
	d.token_len = tok_len;
	d.pn_len = 1;
	p = dpq_pkt_write_long(buf, buf + len, &d, &lenf);
	assert_non_null(p);
	memset(p, 0xab, len - (size_t)(p - buf));
	assert_int_equal(dpq_pkt_patch_length(lenf, 1 + len - (size_t)(p -
			buf)), 0);
	return len;
}

static void
test_listener_auto_retry(void **state)
{
	static const uint8_t tkey[16] = { 7 };
	struct dpq_crypto *cc = dpq_crypto_create();
	struct dpq_listener_result r;
	struct dpq_listener_cfg cfg;
	struct dpq_listener *l;
	struct dpq_halfopen *h;
	struct dpq_netaddr a;
	struct dpq_pkt_hdr ph;
	uint8_t buf[1500], tok[256], retry[256];
	size_t n, tlen;
	uint32_t s;

	(void)state;
	assert_non_null(cc);
	dpq_listener_cfg_default(&cfg);
	assert_int_equal(cfg.retry, DPQ_RETRY_AUTO);	/* the default */
	cfg.sreset_key_len = 32;
	cfg.halfopen.retry_threshold = 3;
	l = dpq_listener_create(&cfg, cc, &rnd, 1000000);
	assert_non_null(l);
	assert_int_equal(dpq_listener_set_token_key(l, 1, tkey), 0);
	assert_int_equal(dpq_listener_set_slots(l, 64), 0);
	h = dpq_listener_halfopen(l);
	assert_non_null(h);
	v4(&a, 5, 4433);
	n = mk_initial(buf, 1200, NULL, 0);
	for (s = 0; s < 3; s++) {
		assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a,
				1000000, &r), DPQ_LISTEN_ACCEPT);
		assert_int_equal(dpq_halfopen_add(h, s, &a), 0);
	}
	/* Three half-open: the next client must prove its address. */
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, 1000000, &r),
			DPQ_LISTEN_REPLY);
	assert_int_equal(r.outcome, DPQ_LO_RETRY);
	assert_int_equal(dpq_listener_stats(l)->retry_halfopen, 1);
	/* ... which it does with the Retry's token. */
	memcpy(retry, r.reply, r.reply_len);
	assert_int_equal(dpq_pkt_parse(retry, retry + r.reply_len, 8, &ph), 0);
	tlen = ph.token_len;
	memcpy(tok, ph.token, tlen);
	n = mk_initial(buf, 1200, tok, tlen);
	/* The client's new DCID is the Retry's SCID. */
	memcpy(buf + 6, ph.scid, 8);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, 1000000, &r),
			DPQ_LISTEN_ACCEPT);
	assert_int_equal(r.outcome, DPQ_LO_ACCEPT_RETRY_TOKEN);
	/* A handshake completes: below the threshold, no Retry again. */
	dpq_halfopen_remove(h, 0, true);
	n = mk_initial(buf, 1200, NULL, 0);
	assert_int_equal(dpq_listener_on_datagram(l, buf, n, &a, 1000000, &r),
			DPQ_LISTEN_ACCEPT);
	dpq_listener_destroy(l);
	dpq_crypto_destroy(cc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_cap),
		cmocka_unit_test(test_total_cap),
		cmocka_unit_test(test_proven_last),
		cmocka_unit_test(test_ipv6_prefix),
		cmocka_unit_test(test_churn_model),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_listener_auto_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
