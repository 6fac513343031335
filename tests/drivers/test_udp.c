/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the kernel UDP socket driver (drivers/udp/udp_socket.c): two
 * drivers on loopback exchanging datagrams (IPv4 and IPv6), UDP GSO / GRO
 * preserving datagram boundaries, mixed bursts, a full socket (EAGAIN),
 * hard send errors, ECN and source-address control messages, SO_REUSEPORT
 * queues and bad configurations.
 *
 * Socket errors that loopback never produces (EAGAIN on send, EMSGSIZE,
 * ECONNREFUSED from sendmmsg) are injected: this file defines sendmmsg(),
 * which the driver's static library binds to, and passes calls on to the
 * real one (dlsym RTLD_NEXT) unless a failure is armed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "dpquic/driver.h"

#define MAX_PKTS 512
#define RECV_TIMEOUT_MS 2000

/* ---- sendmmsg failure injection ----------------------------------------- */

static struct {
	bool armed;
	unsigned int pass;	/* messages still let through */
	unsigned int fails;	/* calls that fail after that (then disarm) */
	int err;
	unsigned int calls_failed;
} inj;

int
sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	static int (*real)(int, struct mmsghdr *, unsigned int, int);
	int r;

	if (real == NULL)
		real = (int (*)(int, struct mmsghdr *, unsigned int, int))
			dlsym(RTLD_NEXT, "sendmmsg");
	if (!inj.armed)
		return real(fd, vec, vlen, flags);
	if (inj.pass > 0) {
		r = real(fd, vec, vlen < inj.pass ? vlen : inj.pass, flags);
		if (r > 0)
			inj.pass -= (unsigned int)r;
		return r;
	}
	inj.calls_failed++;
	if (inj.fails > 0 && --inj.fails == 0)
		inj.armed = false;
	errno = inj.err;
	return -1;
}

static void
inject(unsigned int pass, unsigned int fails, int err)
{
	inj.armed = true;
	inj.pass = pass;
	inj.fails = fails;
	inj.err = err;
	inj.calls_failed = 0;
}

/* ---- helpers ------------------------------------------------------------- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct dpq_driver *
open_udp(const char *addr, uint16_t nq, bool gso, bool gro)
{
	struct dpq_udp_conf c = {
		.nb_queues = nq, .nb_mbufs = 2047, .gso = gso, .gro = gro,
		.socket_id = -1,
	};
	struct dpq_driver *d;

	assert_int_equal(dpq_addr_parse(addr, &c.local), 0);
	d = dpq_driver_udp_open(&c);
	assert_non_null(d);
	assert_int_equal(dpq_driver_start(d), 0);
	return d;
}

static struct dpq_addr
local_of(struct dpq_driver *d)
{
	struct dpq_addr a;

	assert_int_equal(dpq_driver_local_addr(d, &a), 0);
	assert_int_not_equal(a.port, 0);
	return a;
}

/* Byte j of test datagram `id`. */
static uint8_t
pattern(uint32_t id, uint32_t j)
{
	return (uint8_t)(id * 131u + j * 7u + (j >> 8));
}

/* Fill m with datagram `id` of `len` bytes (first 4 bytes: the id when the
 * datagram is long enough) addressed to peer. */
static void
fill(struct rte_mbuf *m, uint32_t id, uint32_t len, const struct dpq_addr *peer)
{
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	uint32_t j;

	assert_true(len == 0 || p != NULL);
	for (j = 0; j < len; j++)
		p[j] = pattern(id, j);
	if (len >= 4)
		memcpy(p, &id, 4);
	dpq_pkt_meta(m)->peer = *peer;
}

static void
check(struct rte_mbuf *m, uint32_t id, uint32_t len)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t j, got;

	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(m->pkt_len, len);
	assert_int_equal(m->data_len, len);
	if (len >= 4) {
		memcpy(&got, p, 4);
		assert_int_equal(got, id);
	}
	for (j = 4; j < len; j++)
		if (p[j] != pattern(id, j))
			fail_msg("datagram %u byte %u: %u != %u", id, j, p[j],
					pattern(id, j));
}

/* Build n datagrams (ids id0.., sizes[i]) to peer. */
static void
build(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n,
		uint32_t id0, const uint32_t *sizes, const struct dpq_addr *peer)
{
	unsigned int i;

	assert_int_equal(dpq_driver_alloc_bulk(d, 0, pkts, n), 0);
	for (i = 0; i < n; i++)
		fill(pkts[i], id0 + i, sizes[i], peer);
}

/* Send all n (retrying while the socket is full, bounded). */
static void
send_all(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n)
{
	unsigned int done = 0;
	uint64_t end = now_ms() + RECV_TIMEOUT_MS;

	while (done < n) {
		done += dpq_driver_tx_burst(d, 0, pkts + done,
				(uint16_t)(n - done));
		if (done < n) {
			assert_true(now_ms() < end);
			usleep(100);
		}
	}
}

/* Receive until `want` datagrams arrived or the timeout; returns count.
 * burst: how many to ask for per rx_burst call. */
static unsigned int
recv_n(struct dpq_driver *d, uint16_t queue, struct rte_mbuf **out,
		unsigned int want, uint16_t burst, unsigned int timeout_ms)
{
	unsigned int got = 0;
	uint64_t end = now_ms() + timeout_ms;

	while (got < want && now_ms() < end) {
		uint16_t n = burst;
		uint16_t r;

		if (n > want - got)
			n = (uint16_t)(want - got);
		r = dpq_driver_rx_burst(d, queue, out + got, n);
		assert_true(r <= n);
		got += r;
		if (r == 0)
			usleep(100);
	}
	return got;
}

static void
free_all(struct dpq_driver *d, struct rte_mbuf **pkts, unsigned int n)
{
	if (n > 0)
		dpq_driver_free_bulk(d, pkts, n);
}

/* Does this kernel accept a UDP socket option (UDP_SEGMENT, UDP_GRO)? */
static bool
kernel_has(int opt, int val)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	bool ok;

	assert_true(fd >= 0);
	ok = setsockopt(fd, IPPROTO_UDP, opt, &val, sizeof(val)) == 0;
	close(fd);
	return ok;
}

/* ---- tests ---------------------------------------------------------------- */

/* Datagrams of many sizes (0 to 2000 bytes) both ways, with addresses. */
static void
exchange(const char *bind_addr)
{
	static const uint32_t sizes[] = { 1, 0, 4, 100, 1200, 1350, 1452,
		2000, 17, 1452 };
	const unsigned int n = RTE_DIM(sizes);
	struct dpq_driver *a = open_udp(bind_addr, 1, false, false);
	struct dpq_driver *b = open_udp(bind_addr, 1, false, false);
	struct dpq_addr la = local_of(a), lb = local_of(b);
	struct rte_mbuf *tx[MAX_PKTS], *rx[MAX_PKTS];
	struct dpq_driver_stats st;
	unsigned int i, got;
	uint64_t bytes = 0;

	for (i = 0; i < n; i++)
		bytes += sizes[i];

	/* a -> b */
	build(a, tx, n, 100, sizes, &lb);
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx, n), n);
	got = recv_n(b, 0, rx, n, 32, RECV_TIMEOUT_MS);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		const struct dpq_pkt_meta *m = dpq_pkt_meta(rx[i]);

		check(rx[i], 100 + i, sizes[i]);
		assert_true(dpq_addr_equal(&m->peer, &la));
		/* pktinfo: the header's destination and our port */
		assert_true(dpq_addr_equal(&m->local, &lb));
		assert_int_equal(m->ecn, 0);
		assert_int_not_equal(m->rx_tsc, 0);
	}

	/* b -> a, replying to where each datagram came from */
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		const struct dpq_addr src = dpq_pkt_meta(m)->peer;

		rte_pktmbuf_reset(m);
		memset(dpq_pkt_meta(m), 0, sizeof(struct dpq_pkt_meta));
		fill(m, 200 + i, sizes[n - 1 - i], &src);
	}
	assert_int_equal(dpq_driver_tx_burst(b, 0, rx, n), n);
	got = recv_n(a, 0, tx, n, 3, RECV_TIMEOUT_MS);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		check(tx[i], 200 + i, sizes[n - 1 - i]);
		assert_true(dpq_addr_equal(&dpq_pkt_meta(tx[i])->peer, &lb));
	}
	free_all(a, tx, n);

	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, n);
	assert_int_equal(st.tx_bytes, bytes);
	assert_int_equal(st.rx_pkts, n);
	assert_int_equal(st.rx_bytes, bytes);
	assert_int_equal(st.tx_dropped, 0);
	assert_int_equal(st.gso_sends, 0);
	assert_int_equal(st.gro_recvs, 0);
	dpq_driver_stats(b, &st);
	assert_int_equal(st.rx_pkts, n);
	assert_int_equal(st.tx_pkts, n);

	/* nothing else arrives */
	assert_int_equal(recv_n(a, 0, tx, 1, 1, 20), 0);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

static void
test_exchange_v4(void **state)
{
	(void)state;
	exchange("127.0.0.1:0");
}

static void
test_exchange_v6(void **state)
{
	(void)state;
	exchange("[::1]:0");
}

/* GSO sender, GRO receiver: 40 equal datagrams plus a short tail arrive as
 * 41 datagrams, exact and in order, read in bursts smaller than one
 * coalesced receive (the driver keeps the rest for the next call). */
static void
gso_gro(const char *bind_addr, uint16_t rx_burst_size)
{
	struct dpq_driver *a = open_udp(bind_addr, 1, true, false);
	struct dpq_driver *b = open_udp(bind_addr, 1, false, true);
	struct dpq_addr la = local_of(a), lb = local_of(b);
	struct rte_mbuf *tx[64], *rx[64];
	uint32_t sizes[41];
	struct dpq_driver_stats sa, sb;
	unsigned int i, got;
	bool has_gso = kernel_has(UDP_SEGMENT, 0);
	bool has_gro = kernel_has(UDP_GRO, 1);

	for (i = 0; i < 40; i++)
		sizes[i] = 1200;
	sizes[40] = 333;
	build(a, tx, 41, 1000, sizes, &lb);
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx, 41), 41);
	got = recv_n(b, 0, rx, 41, rx_burst_size, RECV_TIMEOUT_MS);
	assert_int_equal(got, 41);
	for (i = 0; i < 41; i++) {
		check(rx[i], 1000 + i, sizes[i]);
		assert_true(dpq_addr_equal(&dpq_pkt_meta(rx[i])->peer, &la));
		assert_true(dpq_addr_equal(&dpq_pkt_meta(rx[i])->local, &lb));
	}
	free_all(b, rx, got);
	assert_int_equal(recv_n(b, 0, rx, 1, 1, 20), 0);

	dpq_driver_stats(a, &sa);
	dpq_driver_stats(b, &sb);
	assert_int_equal(sa.tx_pkts, 41);
	assert_int_equal(sa.tx_bytes, 40 * 1200 + 333);
	assert_int_equal(sb.rx_pkts, 41);
	assert_int_equal(sb.rx_bytes, 40 * 1200 + 333);
	if (has_gso && has_gro) {
		/* one sendmsg carried all 41; loopback hands the GSO packet to
		 * a GRO socket whole */
		assert_int_equal(sa.gso_sends, 1);
		assert_true(sb.gro_recvs >= 1);
	} else {
		print_message("kernel lacks UDP GSO (%d) or GRO (%d): offload "
				"counters not checked\n", has_gso, has_gro);
	}
	dpq_driver_close(a);
	dpq_driver_close(b);
}

static void
test_gso_gro_v4(void **state)
{
	(void)state;
	gso_gro("127.0.0.1:0", 32);
}

static void
test_gso_gro_v6_one_by_one(void **state)
{
	(void)state;
	gso_gro("[::1]:0", 1);
}

/* A long burst of one flow: many full GSO messages (64 datagrams each) in
 * one tx_burst, more than one sendmmsg chunk can describe. */
static void
test_gso_long_burst(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, true, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, true);
	struct dpq_addr lb = local_of(b);
	static struct rte_mbuf *tx[1000], *rx[1000];
	static uint32_t sizes[1000];
	struct dpq_driver_stats st;
	unsigned int i, got;

	(void)state;
	for (i = 0; i < 1000; i++)
		sizes[i] = 1000;
	build(a, tx, 1000, 0, sizes, &lb);
	send_all(a, tx, 1000);
	got = recv_n(b, 0, rx, 1000, 64, RECV_TIMEOUT_MS);
	/* 1 MB fits the receiver's socket buffer: no loss on loopback */
	assert_int_equal(got, 1000);
	for (i = 0; i < got; i++)
		check(rx[i], i, 1000);
	free_all(b, rx, got);
	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, 1000);
	if (kernel_has(UDP_SEGMENT, 0))
		assert_int_equal(st.gso_sends, (1000 + 63) / 64);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

/* GSO sender to a receiver without GRO: the kernel segments, the receiver
 * sees the same datagrams. And a GRO receiver of single datagrams. */
static void
test_gso_to_plain_and_plain_to_gro(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, true, true);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr la = local_of(a), lb = local_of(b);
	struct rte_mbuf *tx[64], *rx[64];
	/* groups: [1000 x3, 700] [1000 x2] [64] [1 x3] */
	static const uint32_t sizes[] = { 1000, 1000, 1000, 700, 1000, 1000,
		64, 1, 1, 1 };
	const unsigned int n = RTE_DIM(sizes);
	struct dpq_driver_stats st;
	unsigned int i;

	(void)state;
	build(a, tx, n, 50, sizes, &lb);
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx, n), n);
	assert_int_equal(recv_n(b, 0, rx, n, 32, RECV_TIMEOUT_MS), n);
	for (i = 0; i < n; i++)
		check(rx[i], 50 + i, sizes[i]);
	dpq_driver_stats(a, &st);
	if (kernel_has(UDP_SEGMENT, 0))
		assert_int_equal(st.gso_sends, 3);

	/* b (no GSO) -> a (GRO): datagrams stay datagrams */
	for (i = 0; i < n; i++) {
		rte_pktmbuf_reset(rx[i]);
		memset(dpq_pkt_meta(rx[i]), 0, sizeof(struct dpq_pkt_meta));
		fill(rx[i], 70 + i, sizes[i], &la);
	}
	assert_int_equal(dpq_driver_tx_burst(b, 0, rx, n), n);
	assert_int_equal(recv_n(a, 0, tx, n, 32, RECV_TIMEOUT_MS), n);
	for (i = 0; i < n; i++)
		check(tx[i], 70 + i, sizes[i]);
	free_all(a, tx, n);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

/* One burst to two destinations with varying sizes, plus datagrams the
 * driver must refuse (wrong family, no peer): each receiver gets its own
 * datagrams in order, the refused ones are counted, the burst completes. */
static void
test_mixed_burst(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, true, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, true);
	struct dpq_driver *c = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr lb = local_of(b), lc = local_of(c), v6, none;
	struct rte_mbuf *tx[200], *rx[200];
	struct dpq_driver_stats st;
	unsigned int i, nb = 0, nc = 0, bad = 0, got;
	uint32_t bid[200], cid[200], bsz[200], csz[200];
	const unsigned int n = 150;

	(void)state;
	assert_int_equal(dpq_addr_parse("[::1]:9", &v6), 0);
	memset(&none, 0, sizeof(none));
	assert_int_equal(dpq_driver_alloc_bulk(a, 0, tx, n), 0);
	for (i = 0; i < n; i++) {
		/* runs of same-destination, same-size datagrams of varying
		 * length broken by destination and size changes */
		uint32_t size = 200 + (i / 7) % 5 * 250 + (i % 11 == 10 ? 3 : 0);
		const struct dpq_addr *to = (i / 5) % 3 == 2 ? &lc : &lb;

		if (i == 17 || i == 90) {
			fill(tx[i], i, 100, i == 17 ? &v6 : &none);
			bad++;
			continue;
		}
		fill(tx[i], i, size, to);
		if (to == &lb) {
			bid[nb] = i;
			bsz[nb++] = size;
		} else {
			cid[nc] = i;
			csz[nc++] = size;
		}
	}
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx, n), n);
	got = recv_n(b, 0, rx, nb, 32, RECV_TIMEOUT_MS);
	assert_int_equal(got, nb);
	for (i = 0; i < nb; i++)
		check(rx[i], bid[i], bsz[i]);
	free_all(b, rx, got);
	got = recv_n(c, 0, rx, nc, 32, RECV_TIMEOUT_MS);
	assert_int_equal(got, nc);
	for (i = 0; i < nc; i++)
		check(rx[i], cid[i], csz[i]);
	free_all(c, rx, got);

	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, n - bad);
	assert_int_equal(st.tx_dropped, bad);
	if (kernel_has(UDP_SEGMENT, 0))
		assert_true(st.gso_sends > 0);
	dpq_driver_close(a);
	dpq_driver_close(b);
	dpq_driver_close(c);
}

/* A receiver that does not read: the sender keeps sending bursts; each
 * tx_burst returns at most what it was given, the caller keeps the rest;
 * the receiver later drains what its socket held, intact, and traffic
 * flows normally afterwards. */
static void
test_receiver_not_reading(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, true, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr lb = local_of(b);
	struct rte_mbuf *tx[32], *rx[64];
	uint32_t sizes[32];
	unsigned int i, round, sent = 0, got = 0, r;
	struct dpq_driver_stats st;
	uint32_t last = 0;
	bool first = true;

	(void)state;
	for (i = 0; i < 32; i++)
		sizes[i] = 1400;
	for (round = 0; round < 400; round++) {
		uint16_t k;

		build(a, tx, 32, round * 32, sizes, &lb);
		k = dpq_driver_tx_burst(a, 0, tx, 32);
		assert_true(k <= 32);
		sent += k;
		if (k < 32)
			dpq_driver_free_bulk(a, tx + k, 32 - k);
	}
	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, sent);
	/* 12800 x 1400 bytes is more than the receiver's socket holds */
	do {
		r = recv_n(b, 0, rx, 64, 64, 50);
		for (i = 0; i < r; i++) {
			uint32_t id;

			memcpy(&id, rte_pktmbuf_mtod(rx[i], void *), 4);
			check(rx[i], id, 1400);
			/* loss but no reordering on loopback */
			assert_true(first || id > last);
			first = false;
			last = id;
		}
		free_all(b, rx, r);
		got += r;
	} while (r > 0);
	assert_true(got > 0);
	assert_true(got <= sent);
	print_message("sent %u, receiver socket kept %u\n", sent, got);

	/* afterwards, traffic flows */
	build(a, tx, 8, 777777, sizes, &lb);
	send_all(a, tx, 8);
	assert_int_equal(recv_n(b, 0, rx, 8, 32, RECV_TIMEOUT_MS), 8);
	for (i = 0; i < 8; i++)
		check(rx[i], 777777 + i, 1400);
	free_all(b, rx, 8);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

/* sendmmsg says EAGAIN (or ENOBUFS) after some messages: tx_burst returns
 * exactly the datagrams sent, the caller still owns the rest, and sending
 * them later delivers everything once, in order. */
static void
eagain(int err, bool gso)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, gso, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr lb = local_of(b);
	struct rte_mbuf *tx[40], *rx[64];
	uint32_t sizes[40];
	unsigned int i, k, expect;
	struct dpq_driver_stats st;

	for (i = 0; i < 40; i++)
		sizes[i] = (i % 4 == 3) ? 500 : 900; /* GSO groups of 4 */
	build(a, tx, 40, 0, sizes, &lb);
	inject(3, 0, err);	/* 3 messages pass, then the socket is full */
	k = dpq_driver_tx_burst(a, 0, tx, 40);
	expect = gso && kernel_has(UDP_SEGMENT, 0) ? 12 : 3;
	assert_int_equal(k, expect);
	assert_true(inj.calls_failed >= 1);
	/* still full: nothing taken */
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx + k, 40 - k), 0);
	inj.armed = false;
	/* the caller's mbufs are intact: send them now */
	send_all(a, tx + k, 40 - k);
	assert_int_equal(recv_n(b, 0, rx, 40, 64, RECV_TIMEOUT_MS), 40);
	for (i = 0; i < 40; i++)
		check(rx[i], i, sizes[i]);
	free_all(b, rx, 40);
	assert_int_equal(recv_n(b, 0, rx, 1, 1, 20), 0);
	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, 40);
	assert_int_equal(st.tx_dropped, 0);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

static void
test_eagain(void **state)
{
	(void)state;
	eagain(EAGAIN, false);
	eagain(ENOBUFS, false);
	eagain(EAGAIN, true);
}

/* A hard error on one message (EMSGSIZE, ECONNREFUSED) drops that datagram
 * only; on a GSO message (EIO: no checksum offload) the driver resends its
 * datagrams one by one. */
static void
test_hard_errors(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_driver *g = open_udp("127.0.0.1:0", 1, true, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr lb = local_of(b);
	struct rte_mbuf *tx[20], *rx[64];
	uint32_t sizes[20];
	unsigned int i, j;
	struct dpq_driver_stats st;
	static const int errs[] = { EMSGSIZE, ECONNREFUSED, EPERM };

	(void)state;
	for (i = 0; i < 20; i++)
		sizes[i] = 300;
	for (j = 0; j < RTE_DIM(errs); j++) {
		build(a, tx, 10, 10 * j, sizes, &lb);
		inject(4, 1, errs[j]);	/* message 4 fails once */
		assert_int_equal(dpq_driver_tx_burst(a, 0, tx, 10), 10);
		assert_false(inj.armed);
		assert_int_equal(recv_n(b, 0, rx, 10, 64, 200), 9);
		for (i = 0; i < 9; i++)
			check(rx[i], 10 * j + (i < 4 ? i : i + 1), 300);
		free_all(b, rx, 9);
	}
	dpq_driver_stats(a, &st);
	assert_int_equal(st.tx_pkts, 27);
	assert_int_equal(st.tx_dropped, 3);

	if (kernel_has(UDP_SEGMENT, 0)) {
		/* two GSO messages of 10 (the first ends with a short one);
		 * the second is refused once */
		sizes[9] = 200;
		build(g, tx, 20, 500, sizes, &lb);
		inject(1, 1, EIO);
		assert_int_equal(dpq_driver_tx_burst(g, 0, tx, 20), 20);
		assert_int_equal(recv_n(b, 0, rx, 20, 64, RECV_TIMEOUT_MS),
				20);
		for (i = 0; i < 20; i++)
			check(rx[i], 500 + i, sizes[i]);
		free_all(b, rx, 20);
		dpq_driver_stats(g, &st);
		assert_int_equal(st.tx_pkts, 20);
		assert_int_equal(st.tx_dropped, 0);
		assert_int_equal(st.gso_sends, 1);
	}
	inj.armed = false;
	dpq_driver_close(a);
	dpq_driver_close(g);
	dpq_driver_close(b);
}

/* Datagrams to a closed port (the kernel answers ICMP port unreachable)
 * mixed with datagrams to a live receiver, over several bursts: nothing
 * sticks, every datagram to the receiver arrives. */
static void
test_closed_port(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, true, false);
	struct dpq_driver *b = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_driver *gone = open_udp("127.0.0.1:0", 1, false, false);
	struct dpq_addr lb = local_of(b), lg = local_of(gone);
	struct rte_mbuf *tx[16], *rx[64];
	unsigned int round, i, n;
	uint32_t sizes[16];

	(void)state;
	dpq_driver_close(gone);	/* lg is now a closed port */
	for (i = 0; i < 16; i++)
		sizes[i] = 600;
	for (round = 0; round < 5; round++) {
		build(a, tx, 16, round * 16, sizes, &lb);
		for (i = 0; i < 16; i += 3)
			dpq_pkt_meta(tx[i])->peer = lg;
		assert_int_equal(dpq_driver_tx_burst(a, 0, tx, 16), 16);
		n = recv_n(b, 0, rx, 10, 64, RECV_TIMEOUT_MS);
		assert_int_equal(n, 10);	/* 16 minus i = 0,3,..,15 */
		for (i = 0; i < n; i++) {
			uint32_t k = i + i / 2 + 1; /* skip multiples of 3 */

			check(rx[i], round * 16 + k, 600);
		}
		free_all(b, rx, n);
		usleep(2000);	/* let the ICMP errors come back */
	}
	dpq_driver_close(a);
	dpq_driver_close(b);
}

/* ECN bits survive both ways; a wildcard-bound sender picks its source
 * address per datagram with meta.local (IP_PKTINFO / IPV6_PKTINFO). */
static void
ecn_src(const char *wild, const char *dst, const char *src)
{
	struct dpq_driver *a = open_udp(wild, 1, true, false);
	struct dpq_driver *b = open_udp(dst, 1, false, true);
	struct dpq_addr la = local_of(a), lb = local_of(b), s;
	struct rte_mbuf *tx[8], *rx[8];
	uint32_t sizes[8] = { 100, 100, 100, 100, 100, 100, 100, 100 };
	unsigned int i;

	assert_int_equal(dpq_addr_parse(src, &s), 0);
	build(a, tx, 8, 0, sizes, &lb);
	for (i = 0; i < 8; i++) {
		dpq_pkt_meta(tx[i])->ecn = (uint8_t)(i & 3);
		if (i >= 4)
			dpq_pkt_meta(tx[i])->local = s;
	}
	assert_int_equal(dpq_driver_tx_burst(a, 0, tx, 8), 8);
	assert_int_equal(recv_n(b, 0, rx, 8, 8, RECV_TIMEOUT_MS), 8);
	for (i = 0; i < 8; i++) {
		const struct dpq_pkt_meta *m = dpq_pkt_meta(rx[i]);

		check(rx[i], i, 100);
		assert_int_equal(m->ecn, i & 3);
		assert_int_equal(m->peer.port, la.port);
		if (i >= 4)
			assert_memory_equal(m->peer.bytes, s.bytes, 16);
	}
	free_all(b, rx, 8);
	dpq_driver_close(a);
	dpq_driver_close(b);
}

static void
test_ecn_and_source(void **state)
{
	(void)state;
	ecn_src("0.0.0.0:0", "127.0.0.1:0", "127.0.0.2");
	ecn_src("[::]:0", "[::1]:0", "::1");
}

/* Several queues share one port (SO_REUSEPORT): every flow's datagrams
 * arrive, each flow on one queue, in order. */
static void
test_multiqueue(void **state)
{
	struct dpq_driver *r = open_udp("127.0.0.1:0", 2, false, true);
	struct dpq_driver *src[8];
	struct dpq_addr lr = local_of(r);
	struct rte_mbuf *tx[8], *rx[128];
	uint32_t sizes[8] = { 64, 64, 64, 64, 64, 64, 64, 64 };
	unsigned int i, q, got[2] = { 0, 0 }, total = 0;
	uint64_t end;
	int flow_q[8];

	(void)state;
	assert_int_equal(r->nb_queues, 2);
	for (i = 0; i < 8; i++) {
		src[i] = open_udp("127.0.0.1:0", 1, false, false);
		build(src[i], tx, 8, i * 100, sizes, &lr);
		assert_int_equal(dpq_driver_tx_burst(src[i], 0, tx, 8), 8);
		flow_q[i] = -1;
	}
	end = now_ms() + RECV_TIMEOUT_MS;
	while (total < 64 && now_ms() < end) {
		for (q = 0; q < 2; q++) {
			uint16_t n = dpq_driver_rx_burst(r, (uint16_t)q, rx, 128);

			for (i = 0; i < n; i++) {
				uint32_t id;
				unsigned int f;

				memcpy(&id, rte_pktmbuf_mtod(rx[i], void *), 4);
				f = id / 100;
				assert_true(f < 8);
				check(rx[i], id, 64);
				if (flow_q[f] < 0)
					flow_q[f] = (int)q;
				assert_int_equal(flow_q[f], q);
			}
			free_all(r, rx, n);
			got[q] += n;
			total += n;
		}
	}
	assert_int_equal(total, 64);
	print_message("queue 0: %u, queue 1: %u\n", got[0], got[1]);
	/* a queue id past the last is refused */
	assert_int_equal(dpq_driver_rx_burst(r, 2, rx, 8), 0);
	assert_int_equal(dpq_driver_alloc_bulk(r, 2, rx, 1), -EINVAL);
	for (i = 0; i < 8; i++)
		dpq_driver_close(src[i]);
	dpq_driver_close(r);
}

/* alloc_bulk: zeroed metadata, empty mbufs with headroom; all or nothing. */
static void
test_alloc(void **state)
{
	struct dpq_driver *a = open_udp("127.0.0.1:0", 1, false, false);
	struct rte_mbuf *p[4096];
	struct dpq_driver_stats st;
	static const uint8_t zero[sizeof(struct dpq_pkt_meta)];
	unsigned int i;

	(void)state;
	assert_int_equal(dpq_driver_alloc_bulk(a, 0, p, 64), 0);
	for (i = 0; i < 64; i++) {
		assert_int_equal(p[i]->pkt_len, 0);
		assert_true(rte_pktmbuf_headroom(p[i]) >= 64);
		assert_true(rte_pktmbuf_tailroom(p[i]) >= 1500);
		assert_memory_equal(dpq_pkt_meta(p[i]), zero, sizeof(zero));
		memset(dpq_pkt_meta(p[i]), 0xab, sizeof(zero));
	}
	dpq_driver_free_bulk(a, p, 64);
	/* recycled mbufs come back with zeroed meta */
	assert_int_equal(dpq_driver_alloc_bulk(a, 0, p, 64), 0);
	for (i = 0; i < 64; i++)
		assert_memory_equal(dpq_pkt_meta(p[i]), zero, sizeof(zero));
	dpq_driver_free_bulk(a, p, 64);
	/* more than the pool (2047) holds */
	assert_int_equal(dpq_driver_alloc_bulk(a, 0, p, 4096), -ENOMEM);
	dpq_driver_stats(a, &st);
	assert_int_equal(st.alloc_fail, 1);
	dpq_driver_close(a);
}

static void
test_bad_conf(void **state)
{
	struct dpq_udp_conf c = { .nb_queues = 1, .socket_id = -1 };
	struct dpq_driver *a;
	struct dpq_addr la;

	(void)state;
	errno = 0;
	assert_null(dpq_driver_udp_open(NULL));
	assert_int_equal(errno, EINVAL);

	errno = 0;	/* family unset */
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EINVAL);

	c.local.family = AF_UNIX;
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EINVAL);

	assert_int_equal(dpq_addr_parse("127.0.0.1:0", &c.local), 0);
	c.nb_queues = 1000;
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EINVAL);
	c.nb_queues = 1;

	c.nb_mbufs = 10;	/* fewer than one burst */
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EINVAL);
	c.nb_mbufs = 0;

	/* port in use */
	a = open_udp("127.0.0.1:0", 1, false, false);
	la = local_of(a);
	c.local = la;
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EADDRINUSE);
	/* several queues (SO_REUSEPORT) do not steal a port bound without */
	c.nb_queues = 2;
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EADDRINUSE);
	c.nb_queues = 1;
	dpq_driver_close(a);

	/* an address this host does not have */
	assert_int_equal(dpq_addr_parse("198.18.0.77:0", &c.local), 0);
	errno = 0;
	assert_null(dpq_driver_udp_open(&c));
	assert_int_equal(errno, EADDRNOTAVAIL);
}

int
main(void)
{
	char *eal_argv[] = {
		"test_udp", "--no-huge", "--no-shconf", "--no-pci", "-l", "0",
		"-m", "256", "--log-level=error", NULL,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exchange_v4),
		cmocka_unit_test(test_exchange_v6),
		cmocka_unit_test(test_gso_gro_v4),
		cmocka_unit_test(test_gso_gro_v6_one_by_one),
		cmocka_unit_test(test_gso_to_plain_and_plain_to_gro),
		cmocka_unit_test(test_gso_long_burst),
		cmocka_unit_test(test_mixed_burst),
		cmocka_unit_test(test_receiver_not_reading),
		cmocka_unit_test(test_eagain),
		cmocka_unit_test(test_hard_errors),
		cmocka_unit_test(test_closed_port),
		cmocka_unit_test(test_ecn_and_source),
		cmocka_unit_test(test_multiqueue),
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_bad_conf),
	};
	int rc;

	if (rte_eal_init((int)RTE_DIM(eal_argv) - 1, eal_argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	rc = cmocka_run_group_tests_name("udp_driver", tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
