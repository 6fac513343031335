/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rate.c: delivery-rate samples (draft-cheng-iccrg-delivery-rate-
 * estimation): a steady flow gives its true rate; the send interval
 * caps a rate inflated by ACK compression; samples shorter than min_rtt
 * are invalid; the newest packet of an ACK defines the sample; the
 * application-limited mark covers what was in flight and clears once it
 * is delivered; bytes lost since a packet left are reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/engine/rate.h"

#define MS	UINT64_C(1000)

static void
sent(struct dpq_rate *r, struct dpq_sent_pkt *p, uint64_t pn, uint32_t bytes,
		uint64_t *flight, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->pn = pn;
	p->bytes = bytes;
	p->time_sent = now;
	dpq_rate_on_sent(r, p, *flight, *flight + bytes, now);
	*flight += bytes;
}

/* 1000-byte packets every 1 ms (1 MB/s), each acked 50 ms later. */
static void
test_steady_rate(void **state)
{
	struct dpq_rate r;
	struct dpq_sent_pkt p[200];
	uint64_t flight = 0, t;
	int acked = 0;

	(void)state;
	dpq_rate_init(&r);
	for (t = 0; t < 200; t++) {
		sent(&r, &p[t], t, 1000, &flight, t * MS);
		/* acks of packets sent 50 ms ago arrive now */
		if (t >= 50) {
			struct dpq_rate_sample rs;

			dpq_rate_sample_begin(&rs);
			dpq_rate_on_acked(&r, &rs, &p[t - 50], t * MS);
			flight -= 1000;
			dpq_rate_sample_end(&r, &rs, 50 * MS);
			acked++;
			assert_true(rs.has_data);
			if (t >= 101) {
				/* a full window after the first ack */
				assert_true(rs.valid);
				assert_int_equal(rs.delivery_rate, 1000000);
				assert_int_equal(rs.tx_in_flight, 51000);
				assert_false(rs.is_app_limited);
			}
		}
	}
	assert_int_equal(r.delivered, (uint64_t)acked * 1000);
}

/* A burst of ACKs (compression): the ACK interval is short, the send
 * interval is not, and the larger one bounds the rate. */
static void
test_ack_compression(void **state)
{
	struct dpq_rate r;
	struct dpq_sent_pkt p[10];
	struct dpq_rate_sample rs;
	uint64_t flight = 0;
	int i;

	(void)state;
	dpq_rate_init(&r);
	for (i = 0; i < 10; i++)
		sent(&r, &p[i], (uint64_t)i, 1000, &flight, (uint64_t)i * 10 * MS);
	/* first ack at 200 ms: interval 200 ms, 1000 bytes */
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &p[0], 200 * MS);
	dpq_rate_sample_end(&r, &rs, 0);
	assert_true(rs.valid);
	assert_int_equal(rs.delivery_rate, UINT64_C(1000) * 1000000 / (200 * MS));
	/* the other nine acked together 1 ms later: ack_elapsed is 1 ms
	 * (since the last delivery), send_elapsed 90 ms (first_sent_time
	 * moved to p[0]'s send time): 9000 bytes / 90 ms, not / 1 ms */
	dpq_rate_sample_begin(&rs);
	for (i = 1; i < 10; i++)
		dpq_rate_on_acked(&r, &rs, &p[i], 201 * MS);
	dpq_rate_sample_end(&r, &rs, 0);
	assert_true(rs.valid);
	assert_int_equal(rs.send_elapsed, 90 * MS);
	assert_int_equal(rs.prior_delivered, 0);
	assert_int_equal(rs.delivered, 10000);
	/* prior_time is p[9]'s delivered_time = 0: ack interval 201 ms */
	assert_int_equal(rs.interval, 201 * MS);
	assert_int_equal(rs.delivery_rate, UINT64_C(10000) * 1000000 / (201 * MS));
	/* a send into an empty pipe, acked 1 ms later: with min_rtt above
	 * the interval the sample is refused */
	flight = 0;
	dpq_rate_sample_begin(&rs);
	sent(&r, &p[0], 10, 1000, &flight, 300 * MS);
	dpq_rate_on_acked(&r, &rs, &p[0], 301 * MS);
	dpq_rate_sample_end(&r, &rs, 50 * MS);
	assert_true(rs.has_data);
	assert_false(rs.valid);
	assert_int_equal(rs.delivery_rate, 0);
}

/* The newest packet acknowledged defines the sample, whatever the
 * order the caller reports them in. */
static void
test_newest_defines(void **state)
{
	struct dpq_rate r;
	struct dpq_sent_pkt a, b, c;
	struct dpq_rate_sample rs;
	uint64_t flight = 0;

	(void)state;
	dpq_rate_init(&r);
	sent(&r, &a, 0, 1000, &flight, 0);
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &a, 10 * MS);	/* delivered 1000 */
	flight -= 1000;
	dpq_rate_sample_end(&r, &rs, 0);
	sent(&r, &b, 1, 1000, &flight, 11 * MS);	/* delivered 1000 */
	sent(&r, &c, 2, 1000, &flight, 12 * MS);
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &c, 30 * MS);
	dpq_rate_on_acked(&r, &rs, &b, 30 * MS);
	dpq_rate_sample_end(&r, &rs, 0);
	/* c: same delivered as b but sent later */
	assert_int_equal(rs.newest_sent, 12 * MS);
	assert_int_equal(rs.prior_delivered, 1000);
	assert_int_equal(rs.delivered, 2000);
}

static void
test_app_limited(void **state)
{
	struct dpq_rate r;
	struct dpq_sent_pkt p[4];
	struct dpq_rate_sample rs;
	uint64_t flight = 0;

	(void)state;
	dpq_rate_init(&r);
	sent(&r, &p[0], 0, 1000, &flight, 0);
	/* nothing more to send with room in the window */
	dpq_rate_on_app_limited(&r, flight);
	assert_int_equal(r.app_limited, 1000);
	sent(&r, &p[1], 1, 1000, &flight, 5 * MS);
	assert_true(p[1].flags & DPQ_SENT_APP_LIMITED);
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &p[0], 20 * MS);
	flight -= 1000;
	dpq_rate_sample_end(&r, &rs, 0);
	assert_false(rs.is_app_limited);
	/* delivered (1000) is not above the mark yet */
	assert_int_equal(r.app_limited, 1000);
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &p[1], 25 * MS);
	flight -= 1000;
	dpq_rate_sample_end(&r, &rs, 0);
	assert_true(rs.is_app_limited);
	/* the limited data is delivered: the phase is over */
	assert_int_equal(r.app_limited, 0);
	sent(&r, &p[2], 2, 1000, &flight, 30 * MS);
	assert_false(p[2].flags & DPQ_SENT_APP_LIMITED);
	/* an empty pipe: the mark is still non-zero */
	dpq_rate_init(&r);
	dpq_rate_on_app_limited(&r, 0);
	assert_int_equal(r.app_limited, 1);
}

static void
test_lost_since_sent(void **state)
{
	struct dpq_rate r;
	struct dpq_sent_pkt a, b;
	struct dpq_rate_sample rs;
	uint64_t flight = 0;

	(void)state;
	dpq_rate_init(&r);
	sent(&r, &a, 0, 1000, &flight, 0);
	sent(&r, &b, 1, 1200, &flight, 1 * MS);
	assert_int_equal(b.tx_in_flight, 2200);
	/* a is lost; b is acked: 1000 bytes lost while b was out */
	dpq_rate_on_lost(&r, 1000);
	dpq_rate_sample_begin(&rs);
	dpq_rate_on_acked(&r, &rs, &b, 40 * MS);
	dpq_rate_sample_end(&r, &rs, 0);
	assert_int_equal(rs.lost, 1000);
	assert_int_equal(rs.tx_in_flight, 2200);
	assert_int_equal(r.lost, 1000);
	/* an ACK that acknowledges nothing makes no sample */
	dpq_rate_sample_begin(&rs);
	dpq_rate_sample_end(&r, &rs, 0);
	assert_false(rs.has_data);
	assert_false(rs.valid);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_rate),
		cmocka_unit_test(test_ack_compression),
		cmocka_unit_test(test_newest_defines),
		cmocka_unit_test(test_app_limited),
		cmocka_unit_test(test_lost_since_sent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
