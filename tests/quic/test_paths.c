/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Paths in memory (RFC 9000 §8.2, §9): a NAT rebinding of the client's
 * port or address in the middle of a download, path validation, the 3x
 * limit towards an address that a spoofer used (§9.3.1, §9.3.3), the way
 * back to the last validated path, and packets from addresses that are
 * not allowed (before handshake confirmation, from an unknown server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "conn_pair.h"

/* ---- a download: the client asks, the server sends size bytes ------- */

struct dl {
	size_t size;
	uint64_t id;
	size_t sent;		/* server side */
	size_t got;		/* client side */
	bool fin, bad, established;
};

static uint8_t
pat(size_t off)
{
	return (uint8_t)(off * 7 + (off >> 10));
}

static void
srv_write(struct dpq_conn *c, uint64_t id)
{
	struct dl *d = dpq_conn_app_ctx(c);
	uint8_t buf[4096];

	while (d->sent < d->size) {
		size_t n = d->size - d->sent;
		ssize_t w;

		if (n > sizeof(buf))
			n = sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = pat(d->sent + k);
		w = dpq_conn_stream_write(c, id, buf, n, d->sent + n ==
				d->size);
		if (w <= 0)
			return;
		d->sent += (size_t)w;
	}
}

static void
srv_data(struct dpq_conn *c, uint64_t id)
{
	uint8_t buf[64];
	bool fin = false;

	while (dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin) > 0)
		;
	if (fin)
		srv_write(c, id);
}

static const struct dpq_app_ops srv_app = {
	.on_stream_data = srv_data,
	.on_stream_writable = srv_write,
};

static void
cli_established(struct dpq_conn *c, const char *alpn)
{
	struct dl *d = dpq_conn_app_ctx(c);

	(void)alpn;
	d->established = true;
	assert_int_equal(dpq_conn_stream_open(c, false, &d->id), 0);
	assert_int_equal(dpq_conn_stream_write(c, d->id, "GET", 3, true), 3);
}

static void
cli_data(struct dpq_conn *c, uint64_t id)
{
	struct dl *d = dpq_conn_app_ctx(c);
	uint8_t buf[16384];
	bool fin = false;
	ssize_t n;

	do {
		n = dpq_conn_stream_read(c, id, buf, sizeof(buf), &fin);
		for (ssize_t k = 0; k < n; k++)
			if (buf[k] != pat(d->got + (size_t)k))
				d->bad = true;
		if (n > 0)
			d->got += (size_t)n;
	} while (n > 0 && !fin);
	if (fin)
		d->fin = true;
}

static const struct dpq_app_ops cli_app = {
	.on_established = cli_established,
	.on_stream_data = cli_data,
};

struct dl_pair {
	struct pair p;
	struct dl cd, sd;
};

static void
dl_start(struct dl_pair *x, size_t size, uint64_t delay, uint64_t seed)
{
	memset(&x->cd, 0, sizeof(x->cd));
	memset(&x->sd, 0, sizeof(x->sd));
	x->cd.size = x->sd.size = size;
	pair_init(&x->p, 0, NULL, delay, 0, seed);
	x->p.capp = &cli_app;
	x->p.capp_ctx = &x->cd;
	x->p.sapp = &srv_app;
	x->p.sapp_ctx = &x->sd;
	pair_start(&x->p);
}

static bool
got_at_least(struct pair *p, void *arg)
{
	struct dl_pair *x = (struct dl_pair *)p;

	return x->cd.got >= *(size_t *)arg;
}

static bool
dl_done(struct pair *p, void *arg)
{
	struct dl_pair *x = (struct dl_pair *)p;

	(void)arg;
	return x->cd.fin;
}

static bool
confirmed(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL && dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

static void
check_done(struct dl_pair *x)
{
	assert_true(x->cd.fin);
	assert_false(x->cd.bad);
	assert_int_equal(x->cd.got, x->cd.size);
	assert_int_equal(dpq_conn_state(x->p.client), DPQ_CONN_ESTABLISHED);
	assert_int_equal(dpq_conn_state(x->p.server), DPQ_CONN_ESTABLISHED);
}

/* ---- NAT rebinding ------------------------------------------------------- */

/* The client's NAT gives it a new source port (or address) halfway
 * through a 2 MB download. The server validates the new address, moves
 * its traffic there and the download completes on the same connection.
 * RFC 9000 §9.4: a port-only change keeps RTT and congestion state, an
 * address change resets them once validated. */
static void
run_rebinding(bool new_ip)
{
	struct dl_pair x;
	struct dpq_conn_stats st;
	size_t half = 1 << 20;
	uint64_t hs_before;

	dl_start(&x, 2 << 20, 5000, new_ip ? 51 : 50);
	assert_true(pair_run(&x.p, got_at_least, &half, 20000000));
	dpq_conn_get_stats(x.p.server, &st);
	hs_before = st.handshake_us;
	assert_int_equal(st.migrations, 0);

	x.p.nat_on = true;
	if (new_ip)
		pair_addr4(&x.p.nat, 198, 18, 7, 9, 40000);
	else
		pair_addr4(&x.p.nat, 198, 18, 0, 1, 50123);
	assert_true(pair_run(&x.p, dl_done, NULL, 60000000));
	check_done(&x);

	dpq_conn_get_stats(x.p.server, &st);
	assert_int_equal(st.handshake_us, hs_before);	/* no new handshake */
	assert_int_equal(st.migrations, 1);
	assert_true(st.paths_validated >= 1);
	assert_int_equal(st.path_reverts, 0);
	assert_int_equal(st.recovery_resets, new_ip ? 1 : 0);
	/* The server now sends to the NAT's address. */
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(x.p.server)->peer,
			&x.p.nat));
	assert_int_equal(x.p.stray_dgrams, 0);
	pair_free(&x.p);
}

static void
test_nat_rebinding_port(void **state)
{
	(void)state;
	run_rebinding(false);
}

static void
test_nat_rebinding_address(void **state)
{
	(void)state;
	run_rebinding(true);
}

/* ---- spoofed source addresses ---------------------------------------------- */

/* The newest 1-RTT datagram the client has in flight to the server. */
static const struct pair_dgram *
newest_c2s(struct pair *p)
{
	unsigned int i;

	for (i = p->c2s.tail; i != p->c2s.head; i--) {
		const struct pair_dgram *g = &p->c2s.q[(i - 1) % PAIR_QUEUE];

		if (!(g->data[0] & 0x80))
			return g;
	}
	return NULL;
}

/* RFC 9000 §9.3.3: an on-path attacker copies the client's packets and
 * forwards them from another address ahead of the originals, over and
 * over during a download. The server may move to that address, but it
 * never sends it more than three times what arrived from it (§9.3.1),
 * its validation fails (the attacker has no keys), and the client's own
 * packets bring the server back. The download completes. */
static void
test_spoofed_copies(void **state)
{
	struct dl_pair x;
	struct dpq_netaddr spoof;
	struct dpq_conn_stats st;
	size_t start = 200000;
	uint64_t injected = 0;
	int copies = 0;

	(void)state;
	pair_addr4(&spoof, 198, 18, 66, 6, 6666);
	dl_start(&x, 8 << 20, 5000, 52);
	assert_true(pair_run(&x.p, got_at_least, &start, 20000000));
	/* A copy every three round trips: the client's next packets win
	 * the server back in between (a faster attacker holds the
	 * connection hostage, which the RFC accepts). */
	for (int i = 0, last = -15; i < 1000 && copies < 20 && !x.cd.fin;
			i++) {
		const struct pair_dgram *g = newest_c2s(&x.p);

		if (g != NULL && i - last >= 15) {
			pair_inject_to_server(&x.p, g->data, g->len, &spoof);
			injected += g->len;
			copies++;
			last = i;
		}
		pair_run(&x.p, NULL, NULL, 2000);
	}
	assert_int_equal(copies, 20);
	assert_true(pair_run(&x.p, dl_done, NULL, 60000000));
	check_done(&x);
	dpq_conn_get_stats(x.p.server, &st);
	/* It was tempted at least once, and always came back. */
	assert_true(st.migrations >= 2);
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(x.p.server)->peer,
			&x.p.caddr));
	assert_true(x.p.stray_dgrams > 0);
	assert_true(dpq_netaddr_eq(&x.p.stray_last, &spoof));
	assert_true(x.p.stray_bytes <= 3 * injected);
	pair_free(&x.p);
}

/* A spoofed copy arrives while the client cannot reach the server: the
 * server moves to the spoofed address, validation fails after three PTOs
 * (the attacker cannot answer), and it returns to the client's validated
 * address (§9.3.3) with its RTT and congestion state; the download then
 * completes. */
static void
test_failed_validation_reverts(void **state)
{
	struct dl_pair x;
	struct dpq_netaddr spoof;
	struct dpq_conn_stats st;
	const struct pair_dgram *g;
	size_t start = 100000;

	(void)state;
	pair_addr4(&spoof, 198, 18, 66, 7, 7777);
	dl_start(&x, 1 << 20, 5000, 53);
	assert_true(pair_run(&x.p, got_at_least, &start, 20000000));
	g = newest_c2s(&x.p);
	assert_non_null(g);
	pair_inject_to_server(&x.p, g->data, g->len, &spoof);
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(x.p.server)->peer,
			&spoof));
	/* The client's packets are lost for 10 s. */
	x.p.c2s.blackhole = true;
	pair_run(&x.p, NULL, NULL, 10000000);
	dpq_conn_get_stats(x.p.server, &st);
	assert_true(st.paths_failed >= 1);
	assert_int_equal(st.path_reverts, 1);
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(x.p.server)->peer,
			&x.p.caddr));
	assert_true(x.p.stray_bytes <= 3 * g->len);
	x.p.c2s.blackhole = false;
	assert_true(pair_run(&x.p, dl_done, NULL, 60000000));
	check_done(&x);
	pair_free(&x.p);
}

/* Garbage from a new address (it does not decrypt) creates no path and
 * gets no answer. */
static void
test_unauthenticated_new_address(void **state)
{
	struct dl_pair x;
	struct dpq_netaddr spoof;
	struct dpq_conn_stats st;
	uint8_t junk[1200];

	(void)state;
	pair_addr4(&spoof, 198, 18, 66, 8, 8888);
	dl_start(&x, 1000, 5000, 54);
	assert_true(pair_run(&x.p, confirmed, NULL, 5000000));
	memset(junk, 0x5a, sizeof(junk));
	junk[0] = 0x40;
	memcpy(junk + 1, dpq_conn_scid(x.p.server)->bytes, 8);
	for (int i = 0; i < 10; i++)
		pair_inject_to_server(&x.p, junk, sizeof(junk), &spoof);
	assert_true(pair_run(&x.p, dl_done, NULL, 10000000));
	dpq_conn_get_stats(x.p.server, &st);
	assert_int_equal(st.migrations, 0);
	assert_int_equal(x.p.stray_dgrams, 0);
	pair_free(&x.p);
}

/* RFC 9000 §9: no migration before the handshake is confirmed: the
 * server drops packets of the connection that come from another address
 * until then. */
static void
test_no_migration_before_confirmed(void **state)
{
	struct pair p;
	struct dpq_netaddr other;
	struct dpq_conn_stats st;
	int injected = 0;

	(void)state;
	pair_addr4(&other, 198, 18, 0, 1, 40001);
	pair_init(&p, 0, NULL, 5000, 0, 55);
	p.server_hs_delay_us = 1000;	/* the server completes later */
	pair_start(&p);
	/* Copies of the client's datagrams (its Finished among them) reach
	 * the server from another address ahead of the originals. */
	for (int i = 0; i < 200 && !confirmed(&p, NULL); i++) {
		pair_run(&p, NULL, NULL, 500);
		if (p.server == NULL || dpq_conn_handshake_confirmed(p.server))
			continue;
		for (unsigned int k = p.c2s.head; k != p.c2s.tail; k++) {
			const struct pair_dgram *g = &p.c2s.q[k % PAIR_QUEUE];

			if (g->at <= p.now + 100)
				continue;	/* arrives first */
			pair_inject_to_server(&p, g->data, g->len, &other);
			injected++;
		}
	}
	assert_true(injected > 0);
	assert_true(pair_run(&p, confirmed, NULL, 5000000));
	dpq_conn_get_stats(p.server, &st);
	assert_true(st.rx_unknown_path > 0);
	assert_int_equal(st.migrations, 0);
	assert_true(dpq_netaddr_eq(&dpq_conn_active_tuple(p.server)->peer,
			&p.caddr));
	pair_free(&p);
}

/* RFC 9000 §9: a client discards packets from an unknown server
 * address. */
static void
test_client_ignores_unknown_server(void **state)
{
	struct pair p;
	struct dpq_conn_stats before, after;
	struct dpq_rx_info ri = { 0 };
	uint8_t buf[PAIR_MTU];
	ssize_t n;

	(void)state;
	pair_init(&p, 0, NULL, 5000, 0, 56);
	pair_start(&p);
	assert_true(pair_run(&p, confirmed, NULL, 5000000));
	/* A genuine server packet, delivered as if from elsewhere. */
	dpq_conn_stream_open(p.server, true, &(uint64_t){ 0 });
	assert_int_equal(dpq_conn_stream_write(p.server, 3, "hi", 2, true), 2);
	n = dpq_conn_send(p.server, buf, sizeof(buf), NULL, p.now);
	assert_true(n > 0);
	ri.tuple.local = p.caddr;
	pair_addr4(&ri.tuple.peer, 198, 18, 0, 3, 4433);
	dpq_conn_get_stats(p.client, &before);
	assert_int_equal(dpq_conn_recv(p.client, buf, (size_t)n, &ri, p.now),
			0);
	dpq_conn_get_stats(p.client, &after);
	assert_int_equal(after.rx_unknown_path, before.rx_unknown_path + 1);
	assert_int_equal(after.pkts_recv, before.pkts_recv);
	pair_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nat_rebinding_port),
		cmocka_unit_test(test_nat_rebinding_address),
		cmocka_unit_test(test_spoofed_copies),
		cmocka_unit_test(test_failed_validation_reverts),
		cmocka_unit_test(test_unauthenticated_new_address),
		cmocka_unit_test(test_no_migration_before_confirmed),
		cmocka_unit_test(test_client_ignores_unknown_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
