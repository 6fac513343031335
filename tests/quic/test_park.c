/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A parked connection (dpq_conn_park: keys in saved form, the body
 * packed, conn_park.c) is the same connection when it wakes up: what it
 * packed comes back byte for byte, and a transfer, a key update, a
 * migration, a stateless reset, its PTO and its idle timeout after the
 * park behave as without it. White box (conn_int.h): the tests compare
 * the body's bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn_pair.h"
#include "dataplane/quic/conn_int.h"

/* ---- an echo: the client sends size patterned bytes, the server sends
 * them back ------------------------------------------------------------ */

struct echo {
	size_t size;
	uint64_t id;
	size_t sent, got;	/* client */
	bool fin, bad;
	/* server: bytes read and not yet written back */
	uint8_t *held;
	size_t held_len, cap;
	bool held_fin;
};

struct park_pair {
	struct pair p;
	struct echo ce, se;
};

static uint8_t
pat(size_t off, size_t round)
{
	return (uint8_t)(off * 13 + (off >> 9) + round * 101);
}

static size_t round_no;

static void
srv_flush(struct dpq_conn *c, uint64_t id)
{
	struct echo *e = dpq_conn_app_ctx(c);

	while (e->held_len > 0) {
		ssize_t w = dpq_conn_stream_write(c, id, e->held,
				e->held_len, e->held_fin);

		if (w <= 0)
			return;
		memmove(e->held, e->held + w, e->held_len - (size_t)w);
		e->held_len -= (size_t)w;
	}
}

static void
srv_data(struct dpq_conn *c, uint64_t id)
{
	struct echo *e = dpq_conn_app_ctx(c);
	bool fin = false;
	ssize_t n;

	for (;;) {
		if (e->cap - e->held_len < 4096) {
			e->cap = e->cap ? 2 * e->cap : 65536;
			e->held = realloc(e->held, e->cap);
			assert_non_null(e->held);
		}
		n = dpq_conn_stream_read(c, id, e->held + e->held_len,
				e->cap - e->held_len, &fin);
		if (n <= 0)
			break;
		e->held_len += (size_t)n;
	}
	if (fin)
		e->held_fin = true;
	srv_flush(c, id);
}

static const struct dpq_app_ops srv_app = {
	.on_stream_data = srv_data,
	.on_stream_writable = srv_flush,
};

static void
cli_write(struct dpq_conn *c, uint64_t id)
{
	struct echo *e = dpq_conn_app_ctx(c);
	uint8_t buf[4096];

	while (e->sent < e->size) {
		size_t n = e->size - e->sent;
		ssize_t w;

		if (n > sizeof(buf))
			n = sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = pat(e->sent + k, round_no);
		w = dpq_conn_stream_write(c, id, buf, n,
				e->sent + n == e->size);
		if (w <= 0)
			return;
		e->sent += (size_t)w;
	}
}

static void
cli_data(struct dpq_conn *c, uint64_t id)
{
	struct echo *e = dpq_conn_app_ctx(c);
	uint8_t buf[16384];
	bool fin = false;
	ssize_t n;

	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		for (ssize_t k = 0; k < n; k++)
			if (buf[k] != pat(e->got + (size_t)k, round_no))
				e->bad = true;
		if (n > 0)
			e->got += (size_t)n;
	} while (n > 0 && !fin);
	if (fin)
		e->fin = true;
}

static const struct dpq_app_ops cli_app = {
	.on_stream_data = cli_data,
	.on_stream_writable = cli_write,
};

static bool
confirmed(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL && dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

static bool
echoed(struct pair *p, void *arg)
{
	struct park_pair *x = (struct park_pair *)p;

	(void)arg;
	return x->ce.fin;
}

static void
start(struct park_pair *x, uint64_t seed, uint64_t idle_ms)
{
	memset(&x->ce, 0, sizeof(x->ce));
	memset(&x->se, 0, sizeof(x->se));
	pair_init(&x->p, 0, NULL, 5000, 0, seed);
	x->p.capp = &cli_app;
	x->p.capp_ctx = &x->ce;
	x->p.sapp = &srv_app;
	x->p.sapp_ctx = &x->se;
	if (idle_ms != 0)
		x->p.cconf.idle_timeout_ms = x->p.sconf.idle_timeout_ms =
			idle_ms;
	pair_start(&x->p);
	assert_true(pair_run(&x->p, confirmed, NULL, 5000000));
}

/* One echo of size bytes on a new stream, byte-exact. */
static void
echo(struct park_pair *x, size_t size)
{
	round_no++;
	free(x->se.held);
	memset(&x->se, 0, sizeof(x->se));
	memset(&x->ce, 0, sizeof(x->ce));
	x->ce.size = size;
	assert_int_equal(dpq_conn_stream_open(x->p.client, false, &x->ce.id),
			0);
	cli_write(x->p.client, x->ce.id);
	assert_true(pair_run(&x->p, echoed, NULL, 60000000));
	assert_false(x->ce.bad);
	assert_int_equal(x->ce.got, size);
}

/* Quiet: every ACK sent, nothing owed. */
static void
settle(struct park_pair *x)
{
	pair_run(&x->p, NULL, NULL, 300000);
}

static void
finish(struct park_pair *x)
{
	free(x->se.held);
	pair_free(&x->p);
}

/* What a parked connection answers without waking: the same as before
 * the park; what it packed comes back byte for byte. */
static void
park_checked(struct dpq_conn *c)
{
	static struct dpq_conn_body before;
	struct dpq_conn_stats st0, st1;
	struct dpq_conn_peek pk;
	struct dpq_tuple t0;
	uint64_t to0;
	const struct dpq_conn *v;

	dpq_conn_poll(c, c->now);	/* as a shard: hands off the
					 * handshake state */
	/* Counters the packed form must carry whole: a 10-byte varint,
	 * the top bit alone. */
	c->b->stats.early_dropped = UINT64_MAX;
	c->b->stats.spec_dropped = (1ull << 63) | 1;
	dpq_loss_trim(&c->b->loss);	/* park frees empty blocks first */
	memcpy(&before, c->b, sizeof(before));
	dpq_conn_get_stats(c, &st0);
	to0 = dpq_conn_next_timeout(c);
	t0 = *dpq_conn_active_tuple(c);
	assert_int_equal(dpq_conn_park(c), 0);
	assert_true(dpq_conn_parked(c));
	assert_null(c->b);
	assert_null(c->rx[DPQ_EPOCH_1RTT]);
	assert_int_equal(dpq_conn_park(c), -EBUSY);
	assert_int_equal(dpq_conn_next_timeout(c), to0);
	assert_false(dpq_conn_wants_send(c, c->now));
	assert_memory_equal(dpq_conn_active_tuple(c), &t0, sizeof(t0));
	dpq_conn_get_stats(c, &st1);
	assert_memory_equal(&st0, &st1, sizeof(st0));
	v = dpq_conn_peek(c, &pk);
	assert_ptr_equal(v, &pk.c);
	assert_memory_equal(v->b, &before, sizeof(before));
	assert_null(c->b);		/* reading did not wake it */
}

/* Parked on both sides, then echoes: byte-exact, and both woke up. */
static void
test_park_resume(void **state)
{
	struct park_pair x;

	(void)state;
	start(&x, 301, 0);
	echo(&x, 100000);
	settle(&x);
	park_checked(x.p.client);
	park_checked(x.p.server);
	/* A second of silence: nothing wakes them. */
	pair_run(&x.p, NULL, NULL, 1000000);
	assert_true(dpq_conn_parked(x.p.client));
	assert_true(dpq_conn_parked(x.p.server));
	echo(&x, 1 << 20);
	assert_false(dpq_conn_parked(x.p.client));
	assert_false(dpq_conn_parked(x.p.server));
	assert_int_equal(x.p.client->b->stats.early_dropped, UINT64_MAX);
	assert_int_equal(x.p.server->b->stats.spec_dropped,
			(1ull << 63) | 1);
	/* Parked and woken again, several times. */
	for (int i = 0; i < 3; i++) {
		settle(&x);
		park_checked(x.p.server);
		echo(&x, 30000);
	}
	finish(&x);
}

/* A key update started by either side right after it woke up. */
static void
test_park_key_update(void **state)
{
	struct park_pair x;
	struct dpq_conn_stats cs, ss;

	(void)state;
	start(&x, 302, 0);
	echo(&x, 50000);
	settle(&x);
	park_checked(x.p.client);
	park_checked(x.p.server);
	assert_int_equal(dpq_conn_key_update(x.p.client), 0);
	assert_false(dpq_conn_parked(x.p.client));
	echo(&x, 300000);
	dpq_conn_get_stats(x.p.client, &cs);
	dpq_conn_get_stats(x.p.server, &ss);
	assert_int_equal(cs.key_updates, 1);
	assert_int_equal(ss.key_updates_peer, 1);

	pair_run(&x.p, NULL, NULL, 2000000);	/* old keys gone (§6.5) */
	park_checked(x.p.client);
	park_checked(x.p.server);
	assert_int_equal(dpq_conn_key_update(x.p.server), 0);
	echo(&x, 300000);
	dpq_conn_get_stats(x.p.server, &ss);
	dpq_conn_get_stats(x.p.client, &cs);
	assert_int_equal(ss.key_updates, 1);
	assert_int_equal(cs.key_updates_peer, 1);
	assert_int_equal(x.p.client->ku.rx_gen, 2);
	finish(&x);
}

/* The client moves to a new port while both are parked: the server
 * validates the new path (RFC 9000 §8.2, §9) and the echo completes. */
static void
test_park_migration(void **state)
{
	struct park_pair x;
	struct dpq_conn_stats cs, ss;
	struct dpq_tuple t;

	(void)state;
	start(&x, 303, 0);
	echo(&x, 50000);
	settle(&x);
	park_checked(x.p.client);
	park_checked(x.p.server);
	t.peer = x.p.saddr;
	pair_addr4(&t.local, 198, 18, 0, 1, 41999);
	x.p.caddr = t.local;
	assert_int_equal(dpq_conn_migrate(x.p.client, &t, x.p.now), 0);
	echo(&x, 500000);
	dpq_conn_get_stats(x.p.client, &cs);
	dpq_conn_get_stats(x.p.server, &ss);
	assert_int_equal(cs.migrations, 1);
	assert_int_equal(ss.migrations, 1);
	assert_true(ss.paths_validated >= 1);
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(x.p.server)->peer,
			&t.local));
	finish(&x);
}

/* A stateless reset (RFC 9000 §10.3) for a parked connection: a wrong
 * token leaves it established, the right one ends it. */
static void
test_park_stateless_reset(void **state)
{
	struct park_pair x;
	uint8_t d[43];

	(void)state;
	start(&x, 304, 0);
	echo(&x, 20000);
	settle(&x);
	park_checked(x.p.client);
	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 37 + 11);
	d[0] = 0x40 | (d[0] & 0x3f);
	memcpy(d + sizeof(d) - DPQ_RESET_TOKEN_LEN, x.p.server->reset_token,
			DPQ_RESET_TOKEN_LEN);
	d[sizeof(d) - 1] ^= 1;
	dpq_conn_recv(x.p.client, d, sizeof(d), NULL, x.p.now);
	assert_int_equal(dpq_conn_state(x.p.client), DPQ_CONN_ESTABLISHED);
	settle(&x);
	park_checked(x.p.client);
	d[sizeof(d) - 1] ^= 1;
	dpq_conn_recv(x.p.client, d, sizeof(d), NULL, x.p.now);
	assert_int_equal(dpq_conn_state(x.p.client), DPQ_CONN_DRAINING);
	assert_string_equal(dpq_conn_close_info(x.p.client)->reason,
			"stateless reset");
	finish(&x);
}

/* Timers of a parked connection: the idle timeout fires when it would
 * have without the park (RFC 9000 §10.1), silently. */
static void
test_park_idle_timeout(void **state)
{
	struct park_pair x;
	uint64_t deadline;

	(void)state;
	start(&x, 305, 3000);
	echo(&x, 20000);
	settle(&x);
	deadline = x.p.server->idle_deadline;
	park_checked(x.p.client);
	park_checked(x.p.server);
	assert_int_equal(dpq_conn_next_timeout(x.p.server), deadline);
	pair_run(&x.p, NULL, NULL, 10000000);
	assert_int_equal(dpq_conn_state(x.p.server), DPQ_CONN_CLOSED);
	assert_int_equal(dpq_conn_state(x.p.client), DPQ_CONN_CLOSED);
	assert_true(dpq_conn_close_info(x.p.server)->idle);
	assert_true(dpq_conn_close_info(x.p.client)->idle);
	assert_int_equal(x.p.server->now, deadline);
	finish(&x);
}

/* Parked with a packet in flight that the peer never gets: the PTO
 * (RFC 9002 §6.2) wakes it, it probes, and once the path works again
 * the data arrives. */
static void
test_park_pto(void **state)
{
	struct park_pair x;
	struct dpq_conn_stats st;
	uint64_t sent;

	(void)state;
	start(&x, 306, 0);
	echo(&x, 20000);
	settle(&x);
	round_no++;
	free(x.se.held);
	memset(&x.se, 0, sizeof(x.se));
	memset(&x.ce, 0, sizeof(x.ce));
	x.ce.size = 1000;
	x.p.c2s.blackhole = true;
	assert_int_equal(dpq_conn_stream_open(x.p.client, false, &x.ce.id),
			0);
	cli_write(x.p.client, x.ce.id);
	sent = x.p.c2s.sent;
	pair_run(&x.p, NULL, NULL, 1000);	/* sent, not acknowledged */
	assert_true(x.p.c2s.sent > sent);
	assert_true(x.p.client->b->cc.bytes_in_flight > 0);
	park_checked(x.p.client);
	sent = x.p.c2s.sent;
	pair_run(&x.p, NULL, NULL, 400000);
	assert_false(dpq_conn_parked(x.p.client));
	dpq_conn_get_stats(x.p.client, &st);
	assert_true(st.ptos >= 1);
	assert_true(x.p.c2s.sent > sent);	/* the probes */
	x.p.c2s.blackhole = false;
	assert_true(pair_run(&x.p, echoed, NULL, 60000000));
	assert_false(x.ce.bad);
	assert_int_equal(x.ce.got, 1000);
	finish(&x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_park_resume),
		cmocka_unit_test(test_park_key_update),
		cmocka_unit_test(test_park_migration),
		cmocka_unit_test(test_park_stateless_reset),
		cmocka_unit_test(test_park_idle_timeout),
		cmocka_unit_test(test_park_pto),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
