/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_transfer.c: randomized property tests. A sender's buffer feeds a
 * network that loses, reorders and duplicates packets and loses or delays
 * acknowledgements (so some losses are spurious and some ranges are lost
 * and then acknowledged); the receiver must always end byte-exact and the
 * sender with everything acknowledged, for many seeds. The second test
 * runs the same through two dpq_stream objects with small flow-control
 * windows, MAX_STREAM_DATA / MAX_DATA travelling back over the lossy
 * network: the receiver must never see a flow-control violation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/recvbuf.h"
#include "dataplane/engine/sendbuf.h"
#include "dataplane/engine/stream.h"
#include "streams_test.h"

#define MAXPKT	1400

enum pkt_kind { PK_DATA, PK_MAX_STREAM_DATA, PK_MAX_DATA };

struct pkt {
	enum pkt_kind kind;
	uint64_t off;		/* data offset, or the MAX_* value */
	uint64_t len;
	bool fin;
	uint8_t data[MAXPKT];
};

/* A bag of packets; taking a random one reorders. */
struct bag {
	struct pkt *p[4096];
	size_t n;
};

static void
bag_put(struct bag *b, const struct pkt *p)
{
	struct pkt *c = malloc(sizeof(*c));

	assert_non_null(c);
	assert_true(b->n < sizeof(b->p) / sizeof(b->p[0]));
	*c = *p;
	b->p[b->n++] = c;
}

static struct pkt *
bag_take(struct bag *b, struct test_rng *r)
{
	size_t i = (size_t)test_rng_below(r, b->n);
	struct pkt *p = b->p[i];

	b->p[i] = b->p[--b->n];
	return p;
}

static void
bag_clear(struct bag *b)
{
	while (b->n)
		free(b->p[--b->n]);
}

/* Read what is readable, checking the pattern; random read sizes. */
static void
recv_read(struct dpq_recvbuf *rb, struct test_rng *r)
{
	uint8_t buf[3000];
	size_t want = 1 + (size_t)test_rng_below(r, sizeof(buf)), n, i;
	uint64_t at = rb->read_off;

	n = dpq_recvbuf_read(rb, buf, want);
	for (i = 0; i < n; i++)
		assert_int_equal(buf[i], test_pattern(at + i));
}

static void
run_buffers(uint64_t seed, uint64_t total)
{
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct test_rng r = { seed };
	struct dpq_sendbuf sb;
	struct dpq_recvbuf rb;
	static struct bag net, dups, late;
	uint64_t woff = 0, steps = 0;
	uint8_t src[8192];
	struct pkt pk, *p;

	dpq_sendbuf_init(&sb, &m, 256 * 1024);
	dpq_recvbuf_init(&rb, &m, UINT64_C(1) << 40);
	while (!dpq_sendbuf_all_acked(&sb) || !dpq_recvbuf_all_read(&rb)) {
		assert_true(++steps < 50u * 1000 * 1000);
		/* Application writes as room allows. */
		while (!sb.fin && dpq_sendbuf_room(&sb) > 0) {
			size_t n = sizeof(src);
			ssize_t got;

			if (n > total - woff)
				n = (size_t)(total - woff);
			test_fill_pattern(src, woff, n);
			got = dpq_sendbuf_append(&sb, src, n, woff + n == total);
			assert_true(got > 0 || n == 0);
			woff += (uint64_t)got;
		}
		/* Sender fills a flight of up to 64 packets. */
		while (net.n < 64 && dpq_sendbuf_next(&sb, UINT64_MAX,
		    1 + test_rng_below(&r, MAXPKT), &pk.off, &pk.len,
		    &pk.fin)) {
			pk.kind = PK_DATA;
			dpq_sendbuf_copy(&sb, pk.off, pk.data, (size_t)pk.len);
			assert_int_equal(dpq_sendbuf_on_sent(&sb, pk.off,
					pk.len, pk.fin), 0);
			bag_put(&net, &pk);
		}
		if (net.n > 0) {
			uint64_t x = test_rng_below(&r, 100);

			p = bag_take(&net, &r);
			if (x < 10) {
				/* Lost on the way. */
				assert_int_equal(dpq_sendbuf_on_lost(&sb,
						p->off, p->len, p->fin), 0);
			} else {
				assert_int_equal(dpq_recvbuf_insert(&rb, p->off,
						p->data, (size_t)p->len,
						p->fin), 0);
				if (test_rng_below(&r, 10) == 0)
					bag_put(&dups, p);
				x = test_rng_below(&r, 100);
				if (x < 10) {
					/* ACK lost: a spurious loss. */
					assert_int_equal(dpq_sendbuf_on_lost(
						&sb, p->off, p->len, p->fin), 0);
				} else if (x < 15) {
					/* Declared lost, then acked late. */
					assert_int_equal(dpq_sendbuf_on_lost(
						&sb, p->off, p->len, p->fin), 0);
					bag_put(&late, p);
				} else {
					assert_int_equal(dpq_sendbuf_on_acked(
						&sb, p->off, p->len, p->fin), 0);
				}
			}
			free(p);
		}
		if (dups.n && test_rng_below(&r, 5) == 0) {
			p = bag_take(&dups, &r);
			assert_int_equal(dpq_recvbuf_insert(&rb, p->off, p->data,
					(size_t)p->len, p->fin), 0);
			free(p);
		}
		if (late.n && (test_rng_below(&r, 5) == 0 || net.n == 0)) {
			p = bag_take(&late, &r);
			assert_int_equal(dpq_sendbuf_on_acked(&sb, p->off,
					p->len, p->fin), 0);
			free(p);
		}
		if (test_rng_below(&r, 3) == 0)
			recv_read(&rb, &r);
	}
	assert_int_equal(rb.read_off, total);
	assert_int_equal(sb.acked_off, total);
	/* Stragglers change nothing. */
	while (dups.n) {
		p = bag_take(&dups, &r);
		assert_int_equal(dpq_recvbuf_insert(&rb, p->off, p->data,
				(size_t)p->len, p->fin), 0);
		free(p);
	}
	while (late.n) {
		p = bag_take(&late, &r);
		assert_int_equal(dpq_sendbuf_on_acked(&sb, p->off, p->len,
				p->fin), 0);
		free(p);
	}
	assert_int_equal(dpq_recvbuf_readable(&rb), 0);
	assert_false(dpq_sendbuf_pending(&sb));
	dpq_sendbuf_free(&sb);
	dpq_recvbuf_free(&rb);
	assert_int_equal(ta.live, 0);
	bag_clear(&net);
}

static void
test_buffers_lossy_property(void **state)
{
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= 30; seed++)
		run_buffers(seed * 0x9e3779b9u, 100000 + seed * 20011);
	run_buffers(777, 3u * 1000 * 1000);
	run_buffers(778, 0);	/* empty stream: FIN only */
}

static void
run_streams(uint64_t seed, uint64_t total)
{
	static const struct dpq_stream_params sp = {
		.recv_window = 16384,
		.recv_window_max = 256 * 1024,
		.send_max = 16384,
		.send_buffer = 64 * 1024,
	};
	const uint64_t srtt = 10000;
	struct test_alloc ta;
	struct dpq_mem m = test_mem(&ta);
	struct test_rng r = { seed };
	struct dpq_stream snd, rcv;
	struct dpq_flow_tx c_tx;	/* sender's connection credit */
	struct dpq_flow_rx c_rx;	/* receiver's connection credit */
	static struct bag fwd, back;
	uint64_t woff = 0, now = 0, steps = 0, v;
	uint8_t src[8192];
	struct pkt pk, *p;

	dpq_stream_init(&snd, &m, 0, false, &sp, 0);
	dpq_stream_init(&rcv, &m, 0, true, &sp, 0);
	dpq_flow_tx_init(&c_tx, 32768);
	dpq_flow_rx_init(&c_rx, 32768, 512 * 1024, 0);
	while (snd.send_state != DPQ_SEND_DATA_RECVD ||
	    rcv.recv_state != DPQ_RECV_DATA_READ) {
		assert_true(++steps < 20u * 1000 * 1000);
		now += 100;
		while (woff < total || (woff == total && !snd.sb.fin)) {
			size_t n = sizeof(src);
			ssize_t got;

			if (n > total - woff)
				n = (size_t)(total - woff);
			test_fill_pattern(src, woff, n);
			got = dpq_stream_write(&snd, src, n, woff + n == total);
			assert_true(got >= 0);
			woff += (uint64_t)got;
			if ((size_t)got < n || n == 0)
				break;
		}
		while (fwd.n < 32 && dpq_stream_next(&snd, &c_tx,
		    1 + test_rng_below(&r, MAXPKT), &pk.off, &pk.len,
		    &pk.fin)) {
			pk.kind = PK_DATA;
			dpq_stream_copy(&snd, pk.off, pk.data, (size_t)pk.len);
			assert_int_equal(dpq_stream_on_data_sent(&snd, &c_tx,
					pk.off, pk.len, pk.fin), 0);
			bag_put(&fwd, &pk);
		}
		/* Receiver's credit updates go back. */
		if (dpq_stream_max_data_due(&rcv, &v)) {
			pk.kind = PK_MAX_STREAM_DATA;
			pk.off = v;
			dpq_stream_on_max_data_sent(&rcv, v);
			bag_put(&back, &pk);
		}
		if (dpq_flow_rx_due(&c_rx, &v)) {
			pk.kind = PK_MAX_DATA;
			pk.off = v;
			dpq_flow_rx_on_sent(&c_rx, v);
			bag_put(&back, &pk);
		}
		if (fwd.n > 0) {
			p = bag_take(&fwd, &r);
			if (test_rng_below(&r, 100) < 10) {
				assert_int_equal(dpq_stream_on_data_lost(&snd,
						p->off, p->len, p->fin), 0);
			} else {
				/* Never a flow-control or final-size error. */
				assert_int_equal(dpq_stream_on_stream(&rcv,
						&c_rx, p->off, p->data,
						(size_t)p->len, p->fin, now), 0);
				if (test_rng_below(&r, 10) == 0)
					assert_int_equal(dpq_stream_on_data_lost(
						&snd, p->off, p->len, p->fin), 0);
				else
					assert_int_equal(dpq_stream_on_data_acked(
						&snd, p->off, p->len, p->fin), 0);
			}
			free(p);
		}
		if (back.n > 0 && test_rng_below(&r, 2) == 0) {
			p = bag_take(&back, &r);
			if (test_rng_below(&r, 100) < 10) {
				if (p->kind == PK_MAX_STREAM_DATA)
					dpq_stream_on_max_data_lost(&rcv, p->off);
				else
					dpq_flow_rx_on_lost(&c_rx, p->off);
			} else if (p->kind == PK_MAX_STREAM_DATA) {
				assert_int_equal(dpq_stream_on_max_stream_data(
						&snd, p->off), 0);
			} else {
				(void)dpq_flow_tx_on_max(&c_tx, p->off);
			}
			free(p);
		}
		if (test_rng_below(&r, 2) == 0) {
			const uint8_t *d;
			bool fin;
			size_t n = dpq_stream_peek(&rcv, &d, &fin), i;

			for (i = 0; i < n; i++)
				assert_int_equal(d[i],
						test_pattern(rcv.rb.read_off + i));
			if (n > 0 || fin)
				dpq_stream_consume(&rcv, &c_rx, n, now, srtt);
		}
		(void)dpq_stream_take_events(&snd);
		(void)dpq_stream_take_events(&rcv);
	}
	assert_int_equal(rcv.rb.read_off, total);
	assert_int_equal(c_rx.consumed, total);
	assert_true(c_tx.sent == total);
	assert_true(rcv.rx_fc.window <= sp.recv_window_max);
	if (total >= 1000000)
		print_message("streams: %llu bytes in %llu steps, stream window "
		    "%llu, conn window %llu\n", (unsigned long long)total,
		    (unsigned long long)steps,
		    (unsigned long long)rcv.rx_fc.window,
		    (unsigned long long)c_rx.window);
	dpq_stream_free(&snd);
	dpq_stream_free(&rcv);
	assert_int_equal(ta.live, 0);
	bag_clear(&fwd);
	bag_clear(&back);
}

static void
test_streams_flow_controlled_property(void **state)
{
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= 10; seed++)
		run_streams(seed * 0x51ed27u, 50000 + seed * 30011);
	run_streams(4242, 2u * 1000 * 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffers_lossy_property),
		cmocka_unit_test(test_streams_flow_controlled_property),
	};

	return cmocka_run_group_tests_name("streams_transfer", tests, NULL,
			NULL);
}
