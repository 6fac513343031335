/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handshakes under heavy random loss (RFC 9002 §6.2.4, RFC 9000 §13.3):
 * 30% of datagrams lost each way, many seeds; every handshake completes
 * within a bound of virtual time, because both probe datagrams of a
 * timeout carry the unacknowledged CRYPTO data of their space instead of
 * a bare PING.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conn_pair.h"
#include "dataplane/quic/trace.h"

static bool
both_confirmed(struct pair *p, void *arg)
{
	(void)arg;
	return p->server != NULL &&
		dpq_conn_handshake_confirmed(p->client) &&
		dpq_conn_handshake_confirmed(p->server);
}

/* Virtual time until both sides confirm, with the given datagrams of
 * each direction dropped (bit i = i-th datagram); UINT64_MAX if never. */
static uint64_t
time_to_confirm(uint64_t c2s_drop, uint64_t s2c_drop)
{
	struct pair p;
	uint64_t start, t = UINT64_MAX;

	pair_init(&p, 0, NULL, 10000, 0, 5);
	p.c2s.drop_mask = c2s_drop;
	p.s2c.drop_mask = s2c_drop;
	pair_start(&p);
	start = p.now;
	if (pair_run(&p, both_confirmed, NULL, 60000000))
		t = p.now - start;
	pair_free(&p);
	return t;
}

/*
 * The ClientHello is lost: the client's probe at its first PTO (about
 * 1 s with the default initial RTT of 333 ms, RFC 9002 §6.2.2) is an
 * Initial carrying the ClientHello again, not a PING, so the handshake
 * completes one PTO plus a round trip later. The same when the server's
 * whole first flight is lost: its probe carries the flight.
 */
static void
test_first_flight_lost(void **state)
{
	uint64_t t;

	(void)state;
	t = time_to_confirm(1, 0);		/* ClientHello */
	print_message("ClientHello lost: confirmed after %.3f s\n", t / 1e6);
	assert_true(t < 1100000);
	t = time_to_confirm(0, 3);		/* server's first flight */
	print_message("server flight lost: confirmed after %.3f s\n",
			t / 1e6);
	assert_true(t < 1100000);
	/* both: the client's probe reaches the server after 1 s, whose
	 * answer is lost again; the server's probe 1 s later carries it */
	t = time_to_confirm(1, 3);
	print_message("both lost: confirmed after %.3f s\n", t / 1e6);
	assert_true(t < 2100000);
	/* the ClientHello and both probe datagrams of the first PTO are
	 * lost: the next PTO, after a doubled period, carries it */
	t = time_to_confirm(7, 0);
	print_message("ClientHello and its two probes lost: %.3f s\n",
			t / 1e6);
	assert_true(t < 3100000);
}

/* HSTRACE=<seed> (with HSN): print both sides' packets for that seed,
 * one line each: what was sent, received, lost, dropped. */
static void
print_ev(void *ctx, const struct dpq_trace_ev *ev)
{
	static const char *const type[DPQ_TRACE_TYPE_COUNT] = {
		[DPQ_TRACE_PACKET_SENT] = "sent",
		[DPQ_TRACE_PACKET_RECEIVED] = "recv",
		[DPQ_TRACE_PACKET_LOST] = "lost",
		[DPQ_TRACE_PACKET_DROPPED] = "dropped",
		[DPQ_TRACE_PACKET_BUFFERED] = "buffered",
		[DPQ_TRACE_CONN_CLOSED] = "closed",
	};
	static const char *const epoch[] = { "I", "0", "H", "1" };
	static const char *const frame[DPQ_TRACE_F_COUNT] = { "PAD", "PING",
		"ACK", "CRYPTO", "STREAM", "FLOW", "SCTL", "CID", "PATH",
		"CLOSE", "HSDONE", "OTHER" };
	const char *t = ev->type < DPQ_TRACE_TYPE_COUNT ? type[ev->type] :
		NULL;
	int f;

	if (t == NULL)
		return;
	fprintf(stderr, "%10.6f %s %-8s", ev->time_us / 1e6,
			(const char *)ctx, t);
	if (ev->type == DPQ_TRACE_CONN_CLOSED) {
		fprintf(stderr, " \"%s\"\n", ev->u.close.reason);
		return;
	}
	fprintf(stderr, " %s pn %" PRIu64 " len %u%s", epoch[ev->epoch & 3],
			ev->u.pkt.pn, ev->u.pkt.len,
			ev->flags & DPQ_TRACE_EV_PROBE ? " probe" : "");
	for (f = 0; f < DPQ_TRACE_F_COUNT; f++)
		if (ev->u.pkt.frames & (1u << f))
			fprintf(stderr, " %s", frame[f]);
	fputc('\n', stderr);
}

/* Handshake-space probes sent by one side, and those with CRYPTO. */
struct probe_count {
	unsigned int probes, with_crypto;
};

static void
count_probes(void *ctx, const struct dpq_trace_ev *ev)
{
	struct probe_count *pc = ctx;

	if (ev->type != DPQ_TRACE_PACKET_SENT ||
	    !(ev->flags & DPQ_TRACE_EV_PROBE) || ev->epoch == DPQ_EPOCH_1RTT)
		return;
	pc->probes++;
	if (ev->u.pkt.frames & (1u << DPQ_TRACE_F_CRYPTO))
		pc->with_crypto++;
}

/*
 * Both probe datagrams of a timeout carry the unacknowledged CRYPTO data,
 * not one the data and the other a PING (RFC 9002 §6.2.4): when the one
 * with the data is lost, a PING alone gets nothing from an ngtcp2 server
 * (it keeps no state for an Initial without a ClientHello), and a client
 * that receives a PING probe from a server learns nothing of its flight.
 * Here the client's ClientHello and its first probe datagram are lost,
 * and the server's first flight (two datagrams): every handshake probe of
 * both sides carries CRYPTO data, and the handshake completes one PTO
 * after each loss.
 */
static void
test_probes_carry_crypto(void **state)
{
	struct probe_count cli = { 0 }, srv = { 0 };
	uint64_t start;
	struct pair p;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 5);
	p.c2s.drop_mask = 3;	/* the ClientHello and the first probe */
	p.s2c.drop_mask = 3;	/* the server's first flight */
	p.strace = count_probes;
	p.strace_ctx = &srv;
	pair_start(&p);
	dpq_conn_set_trace(p.client, count_probes, &cli);
	start = p.now;
	assert_true(pair_run(&p, both_confirmed, NULL, 60000000));
	print_message("confirmed after %.3f s; probes with CRYPTO: client "
			"%u/%u, server %u/%u\n", (p.now - start) / 1e6,
			cli.with_crypto, cli.probes, srv.with_crypto,
			srv.probes);
	assert_true(cli.probes >= 2);
	assert_true(srv.probes >= 2);
	assert_int_equal(cli.with_crypto, cli.probes);
	assert_int_equal(srv.with_crypto, srv.probes);
	assert_true(p.now - start < 2100000);
	pair_free(&p);
}

/* The server's HANDSHAKE_DONE, watched from its trace: the datagram of
 * the first is lost (and, with cut_client, every client datagram from
 * then on); later packets with it are counted, probes or not. */
struct hsdone_watch {
	struct pair *p;
	bool cut_client;
	unsigned int lose;	/* datagrams with HANDSHAKE_DONE to lose */
	unsigned int sent, app_probes, app_probes_hsdone, resent_early;
};

static void
watch_hsdone(void *ctx, const struct dpq_trace_ev *ev)
{
	struct hsdone_watch *w = ctx;
	bool hsdone = ev->u.pkt.frames & (1u << DPQ_TRACE_F_HANDSHAKE_DONE);
	bool probe = ev->flags & DPQ_TRACE_EV_PROBE;

	if (ev->type != DPQ_TRACE_PACKET_SENT || ev->epoch != DPQ_EPOCH_1RTT)
		return;
	if (probe) {
		w->app_probes++;
		w->app_probes_hsdone += hsdone;
	}
	if (!hsdone)
		return;
	if (w->sent++ < w->lose)
		w->p->s2c.drop_next = true;
	if (w->sent == 1 && w->cut_client)
		w->p->c2s.blackhole = true;
	else if (w->sent > 1 && !probe)
		w->resent_early++;
}

/*
 * The server's HANDSHAKE_DONE is lost, and so are its first probes. The
 * client, not confirmed, keeps probing with its Finished in Handshake
 * packets, which the server (its Handshake keys dropped at completion,
 * RFC 9001 §4.9.2) cannot read: a probe timeout after its last
 * HANDSHAKE_DONE it takes them as the sign that it did not arrive and
 * sends it again at once, not at its next PTO, which has backed off.
 */
#define HSDONE_LOST	3

static void
test_handshake_done_resent(void **state)
{
	struct hsdone_watch w = { 0 };
	struct pair p;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 5);
	w.p = &p;
	w.lose = HSDONE_LOST;
	p.strace = watch_hsdone;
	p.strace_ctx = &w;
	pair_start(&p);
	assert_true(pair_run(&p, both_confirmed, NULL, 10000000));
	print_message("HANDSHAKE_DONE sent %u times, %u of them on the "
			"client's Handshake packets\n", w.sent, w.resent_early);
	assert_true(w.sent >= 2);
	assert_true(w.resent_early >= 1);
	pair_free(&p);
}

static bool
four_app_probes(struct pair *p, void *arg)
{
	const struct hsdone_watch *w = arg;

	(void)p;
	return w->app_probes >= 4;
}

/*
 * 1-RTT probes carry data too: with the server's HANDSHAKE_DONE, its only
 * packet in flight, lost and nothing of the client's arriving, each of
 * the server's probes carries HANDSHAKE_DONE, none is a bare PING (the
 * client would answer a PING with an ACK and go on probing with its
 * Finished: seed 28083 at 30% loss never completed).
 */
static void
test_app_probes_carry_data(void **state)
{
	struct hsdone_watch w = { 0 };
	struct pair p;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 5);
	w.p = &p;
	w.cut_client = true;
	w.lose = 1;
	p.strace = watch_hsdone;
	p.strace_ctx = &w;
	pair_start(&p);
	assert_true(pair_run(&p, four_app_probes, &w, 30000000));
	print_message("server's 1-RTT probes: %u, with HANDSHAKE_DONE %u\n",
			w.app_probes, w.app_probes_hsdone);
	assert_int_equal(w.app_probes_hsdone, w.app_probes);
	p.c2s.blackhole = false;
	assert_true(pair_run(&p, both_confirmed, NULL, 30000000));
	pair_free(&p);
}

/* Initial CRYPTO data sent at the instant a packet arrived (or was held
 * for want of keys): answers, not timer-driven probes. */
struct answer_watch {
	uint64_t rx_at;
	unsigned int answers;
};

static void
watch_answers(void *ctx, const struct dpq_trace_ev *ev)
{
	struct answer_watch *w = ctx;

	if (ev->type == DPQ_TRACE_PACKET_RECEIVED ||
	    ev->type == DPQ_TRACE_PACKET_BUFFERED) {
		w->rx_at = ev->time_us;
	} else if (ev->type == DPQ_TRACE_PACKET_SENT &&
		   ev->epoch == DPQ_EPOCH_INITIAL &&
		   (ev->u.pkt.frames & (1u << DPQ_TRACE_F_CRYPTO)) &&
		   ev->time_us == w->rx_at) {
		w->answers++;
		w->rx_at = UINT64_MAX;
	}
}

/*
 * RFC 9002 §6.2.3: every server datagram of 1,000 bytes or more is lost
 * for 2 s, each Initial with the ServerHello (padded to 1200), and the
 * smaller Handshake ones arrive. The client, holding Handshake packets it
 * cannot read, sends its ClientHello again at once; the server, seeing a
 * duplicate ClientHello, sends its Initial again at once. Each does so
 * DPQ_CONN_EARLY_RESENDS (4) times, then waits for its PTO: the two do
 * not ping-pong for as long as the loss lasts. Four, not two: at 30% loss
 * 3 of 5 handshakes that failed in 100,000 seeds had used their two and
 * then had the server's PTO come after its half-open deadline.
 */
static void
test_early_resends(void **state)
{
	struct answer_watch cli = { 0 }, srv = { 0 };
	struct pair p;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 5);
	p.s2c.drop_from_len = 1000;
	p.strace = watch_answers;
	p.strace_ctx = &srv;
	pair_start(&p);
	dpq_conn_set_trace(p.client, watch_answers, &cli);
	pair_run(&p, NULL, NULL, 2000000);
	print_message("answered at once: client %u, server %u (its first "
			"flight included)\n", cli.answers, srv.answers);
	assert_int_equal(cli.answers, 4);
	assert_int_equal(srv.answers, 1 + 4);
	p.s2c.drop_from_len = 0;
	assert_true(pair_run(&p, both_confirmed, NULL, 30000000));
	pair_free(&p);
}

/* packet_lost records per packet (epoch, packet number < 512). */
struct lost_watch {
	uint8_t times[DPQ_EPOCH_COUNT][512];
	unsigned int records, repeats, requeue_probes;
};

static void
watch_lost(void *ctx, const struct dpq_trace_ev *ev)
{
	struct lost_watch *w = ctx;

	if (ev->type == DPQ_TRACE_PACKET_SENT &&
	    (ev->flags & DPQ_TRACE_EV_PROBE))
		w->requeue_probes++;
	if (ev->type != DPQ_TRACE_PACKET_LOST || ev->u.pkt.pn >= 512)
		return;
	w->records++;
	if (w->times[ev->epoch & 3][ev->u.pkt.pn]++ > 0)
		w->repeats++;
}

/*
 * A probe puts the data of packets still in flight back in the send
 * buffers; those packets are not lost (RFC 9002 §6.2.4: a PTO declares
 * nothing lost), and the trace reports each lost packet once, when it is
 * declared lost. Before, every probe timeout reported its packets lost
 * again (qlog's packet_lost read three times for one packet).
 */
static void
test_lost_once(void **state)
{
	struct lost_watch *w = calloc(2, sizeof(*w));
	unsigned int seed;

	(void)state;
	assert_non_null(w);
	for (seed = 1; seed <= 20; seed++) {
		struct pair p;

		pair_init(&p, 0, NULL, 10000, 0.30, seed * 7919);
		p.strace = watch_lost;
		p.strace_ctx = &w[1];
		pair_start(&p);
		dpq_conn_set_trace(p.client, watch_lost, &w[0]);
		pair_run(&p, both_confirmed, NULL, 60000000);
		pair_free(&p);
		memset(w[0].times, 0, sizeof(w[0].times));
		memset(w[1].times, 0, sizeof(w[1].times));
	}
	print_message("20 handshakes at 30%% loss: %u probes, %u packet_lost "
			"records, %u repeated\n", w[0].requeue_probes +
			w[1].requeue_probes, w[0].records + w[1].records,
			w[0].repeats + w[1].repeats);
	assert_true(w[0].requeue_probes + w[1].requeue_probes > 20);
	assert_true(w[0].records + w[1].records > 0);
	assert_int_equal(w[0].repeats + w[1].repeats, 0);
	free(w);
}

/*
 * A handshake that moves, slowly: the server's first six datagrams and
 * the client's 4th to 11th are lost, so the client's Finished gets
 * through just after the 10 s handshake deadline (DPQ_CONN_HANDSHAKE_
 * TIMEOUT_MS) of both sides. Each side received Handshake packets before
 * that: the peer is there and answers, so the deadline (meant for
 * half-open connections) moves back instead of closing both (before, the
 * server dropped a connection its client had completed: through dpquicd
 * at 30% loss the ngtcp2 client got a stateless reset for its request).
 */
static void
test_slow_handshake_not_cut(void **state)
{
	uint64_t c2s = ((1ull << 11) - 1) & ~((1ull << 3) - 1);
	uint64_t t;

	(void)state;
	t = time_to_confirm(c2s, (1ull << 6) - 1);
	print_message("confirmed after %.2f s\n", t == UINT64_MAX ? -1.0 :
			t / 1e6);
	assert_true(t != UINT64_MAX);
	assert_true(t > DPQ_CONN_HANDSHAKE_TIMEOUT_MS * 1000ull);
	assert_true(t < 30000000);
}

/* The server received a Handshake packet: from then on nothing of the
 * client's arrives (until the test lets it). */
static void
cut_client_after_handshake_pkt(void *ctx, const struct dpq_trace_ev *ev)
{
	struct pair *p = ctx;

	if (ev->type == DPQ_TRACE_PACKET_RECEIVED &&
	    ev->epoch == DPQ_EPOCH_HANDSHAKE)
		p->c2s.blackhole = true;
}

/*
 * dpquicd's 10 s deadline is for half-open connections. One whose client
 * sent a Handshake packet has a peer, whose probes back off: it keeps
 * the connection for the idle timeout from its creation (30 s), not 10 s
 * from that packet. Here the client gets the ServerHello and none of the
 * server's Handshake packets; its probe (a Handshake PING, RFC 9002
 * §6.2.2.1) reaches the server, and nothing else of the client's arrives
 * for 12 s. Then the path heals and the handshake completes (before, the
 * server closed at 11 s, 10 s after that PING).
 */
static void
test_deadline_after_handshake_pkt(void **state)
{
	uint64_t start;
	struct pair p;

	(void)state;
	pair_init(&p, 0, NULL, 10000, 0, 5);
	p.s2c.drop_mask = ~1ull;	/* all but the server's first datagram */
	p.strace = cut_client_after_handshake_pkt;
	p.strace_ctx = &p;
	pair_start(&p);
	start = p.now;
	pair_run(&p, NULL, NULL, 13000000);
	assert_true(p.c2s.blackhole);
	assert_false(dpq_conn_handshake_confirmed(p.client));
	dpq_conn_set_trace(p.server, NULL, NULL);
	p.c2s.blackhole = false;
	p.s2c.drop_mask = 0;
	assert_true(pair_run(&p, both_confirmed, NULL, 20000000));
	print_message("confirmed after %.2f s\n", (p.now - start) / 1e6);
	assert_true(p.now - start > 13000000);
	pair_free(&p);
}

static void
test_handshake_30pct(void **state)
{
	/* HSN=100000 runs more seeds by hand (2.5 min) and prints how
	 * many complete, without the all-complete check of the 200 in CI:
	 * 2 of 100,000 do not, both chance (docs/recovery.md; before this
	 * session's fixes 4 of 3,000, e.g. seed 364, whose client's probes
	 * each lost the datagram with the ClientHello and delivered the
	 * PING). HSTRACE=<seed> prints that seed's packets. */
	const char *hsn = getenv("HSN"), *hst = getenv("HSTRACE");
	unsigned int seed, ok = 0, n = 200, trace_seed = 0;
	char *end;

	if (hsn != NULL) {
		unsigned long v = strtoul(hsn, &end, 10);

		if (*end != '\0' || v < 1 || v > 100000)
			fail_msg("HSN wants 1..100000, not \"%s\"", hsn);
		n = (unsigned int)v;
	}
	if (hsn != NULL && hst != NULL) {
		unsigned long v = strtoul(hst, &end, 10);

		if (*end != '\0' || v < 1 || v > n)
			fail_msg("HSTRACE wants a seed 1..HSN, not \"%s\"",
					hst);
		trace_seed = (unsigned int)v;
	}
	uint64_t worst = 0, total = 0;
	unsigned int respawns = 0;

	(void)state;
	for (seed = 1; seed <= n; seed++) {
		struct pair p;
		uint64_t start;

		if (trace_seed != 0 && seed != trace_seed)
			continue;
		pair_init(&p, 0, NULL, 10000, 0.30, seed * 7919);
		p.server_respawn = true;
		if (trace_seed != 0) {
			p.strace = print_ev;
			p.strace_ctx = "server";
		}
		pair_start(&p);
		if (trace_seed != 0)
			dpq_conn_set_trace(p.client, print_ev, "client");
		start = p.now;
		if (pair_run(&p, both_confirmed, NULL, 60000000)) {
			ok++;
			total += p.now - start;
			if (p.now - start > worst)
				worst = p.now - start;
		} else {
			const struct dpq_conn_close_info *cc =
				dpq_conn_close_info(p.client);

			print_message("seed %u: not done at %.2f s (client %s: "
			    "0x%llx %s%s \"%s\", server %s)\n", seed,
			    (p.now - start) / 1e6,
			    dpq_conn_state_str(dpq_conn_state(p.client)),
			    (unsigned long long)cc->error_code,
			    cc->remote ? "by the peer" : "by us",
			    cc->idle ? " idle" : cc->handshake_timeout ?
			    " handshake timeout" : "", cc->reason,
			    p.server ? dpq_conn_state_str(
				    dpq_conn_state(p.server)) : "none");
		}
		respawns += p.server_respawns;
		pair_free(&p);
	}
	print_message("30%% loss each way: %u/%u handshakes completed, "
			"mean %.2f s, worst %.2f s (virtual time); %u server "
			"connection(s) timed out and made again\n", ok, n,
			ok ? total / 1e6 / ok : 0, worst / 1e6, respawns);
	if (hsn != NULL)
		return;
	assert_int_equal(ok, n);
	/* The 200 seeds complete with their first server connection: one
	 * made again would hide a handshake that failed. */
	assert_int_equal(respawns, 0);
	/* Bounded: a handful of doubled PTOs, far from the idle timeout. */
	assert_true(worst < 20000000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_flight_lost),
		cmocka_unit_test(test_probes_carry_crypto),
		cmocka_unit_test(test_handshake_done_resent),
		cmocka_unit_test(test_app_probes_carry_data),
		cmocka_unit_test(test_early_resends),
		cmocka_unit_test(test_lost_once),
		cmocka_unit_test(test_slow_handshake_not_cut),
		cmocka_unit_test(test_deadline_after_handshake_pkt),
		cmocka_unit_test(test_handshake_30pct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
