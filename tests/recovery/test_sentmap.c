/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sentmap.c: sent-packet map: append and walk across block
 * boundaries with records intact, removal of acked/lost packets in any
 * order, block reuse in steady state (allocator calls counted), the
 * outstanding-packet cap, and every append error leaving the map as it
 * was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "dataplane/engine/sentmap.h"

struct counting {
	unsigned long allocs, frees;
	bool fail;
};

static void *
c_alloc(void *ctx, size_t n)
{
	struct counting *c = ctx;

	if (c->fail)
		return NULL;
	c->allocs++;
	return malloc(n);
}

static void
c_free(void *ctx, void *p)
{
	struct counting *c = ctx;

	c->frees++;
	free(p);
}

static struct dpq_mem
counting_mem(struct counting *c)
{
	struct dpq_mem m = { c_alloc, c_free, c };

	return m;
}

/* Packet pn carries pn % 6 STREAM records with recognisable fields. */
static int
append(struct dpq_sentmap *sm, uint64_t pn, size_t nrec)
{
	struct dpq_sent_rec recs[DPQ_SENTMAP_MAX_RECS + 1];
	struct dpq_sent_pkt p = {
		.pn = pn,
		.time_sent = pn * 10,
		.bytes = (uint32_t)(1000 + pn),
		.flags = DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT,
	};
	size_t i;

	for (i = 0; i < nrec && i < DPQ_SENTMAP_MAX_RECS + 1; i++) {
		recs[i] = (struct dpq_sent_rec){
			.kind = DPQ_SENT_REC_STREAM,
			.len = (uint32_t)i,
			.stream = { .id = pn, .off = i * 100 },
		};
	}
	return dpq_sentmap_append(sm, &p, recs, nrec);
}

static void
check_pkt(const struct dpq_sent_pkt *p, uint64_t pn, size_t nrec)
{
	const struct dpq_sent_rec *r = dpq_sent_pkt_recs(p);
	size_t i;

	assert_int_equal(p->pn, pn);
	assert_int_equal(p->time_sent, pn * 10);
	assert_int_equal(p->bytes, 1000 + pn);
	assert_int_equal(p->flags,
			DPQ_SENT_ACK_ELICITING | DPQ_SENT_IN_FLIGHT);
	assert_int_equal(p->nrec, nrec);
	for (i = 0; i < nrec; i++) {
		assert_int_equal(r[i].kind, DPQ_SENT_REC_STREAM);
		assert_int_equal(r[i].len, i);
		assert_int_equal(r[i].stream.id, pn);
		assert_int_equal(r[i].stream.off, i * 100);
	}
}

static void
test_append_walk_remove(void **state)
{
	struct counting c = { 0 };
	struct dpq_mem m = counting_mem(&c);
	struct dpq_sentmap sm;
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p;
	uint64_t pn, expect;
	const uint64_t n = 1000;

	(void)state;
	assert_int_equal(dpq_sentmap_init(&sm, &m, 0), 0);
	assert_int_equal(sm.max_packets, DPQ_SENTMAP_DEFAULT_MAX_PACKETS);
	for (pn = 0; pn < n; pn++)
		assert_int_equal(append(&sm, pn, pn % 6), 0);
	assert_int_equal(dpq_sentmap_count(&sm), n);
	assert_true(sm.nblocks > 10);	/* many block boundaries */

	/* walk all, oldest first, records intact */
	expect = 0;
	for (p = dpq_sentmap_first(&sm, &it); p != NULL;
	     p = dpq_sentmap_next(&sm, &it)) {
		check_pkt(p, expect, expect % 6);
		expect++;
	}
	assert_int_equal(expect, n);

	/* "ack" the odd ones */
	p = dpq_sentmap_first(&sm, &it);
	while (p != NULL) {
		if (p->pn & 1)
			p = dpq_sentmap_remove(&sm, &it);
		else
			p = dpq_sentmap_next(&sm, &it);
	}
	assert_int_equal(dpq_sentmap_count(&sm), n / 2);
	expect = 0;
	for (p = dpq_sentmap_first(&sm, &it); p != NULL;
	     p = dpq_sentmap_next(&sm, &it)) {
		check_pkt(p, expect, expect % 6);
		expect += 2;
	}
	assert_int_equal(expect, n);

	/* "lose" a middle stretch: the emptied blocks are released */
	{
		uint32_t before = sm.nblocks;

		p = dpq_sentmap_first(&sm, &it);
		while (p != NULL) {
			if (p->pn >= 200 && p->pn < 800)
				p = dpq_sentmap_remove(&sm, &it);
			else
				p = dpq_sentmap_next(&sm, &it);
		}
		assert_true(sm.nblocks < before);
		assert_int_equal(dpq_sentmap_count(&sm), 200);
		assert_true(sm.nspare <= DPQ_SENTMAP_SPARE_BLOCKS);
	}
	expect = 0;
	for (p = dpq_sentmap_first(&sm, &it); p != NULL;
	     p = dpq_sentmap_next(&sm, &it)) {
		check_pkt(p, expect, expect % 6);
		expect += 2;
		if (expect == 200)
			expect = 800;
	}
	assert_int_equal(expect, n);

	/* remove everything */
	p = dpq_sentmap_first(&sm, &it);
	while (p != NULL)
		p = dpq_sentmap_remove(&sm, &it);
	assert_int_equal(dpq_sentmap_count(&sm), 0);
	assert_null(dpq_sentmap_first(&sm, &it));
	assert_null(dpq_sentmap_remove(&sm, &it));
	assert_true(sm.nblocks <= 1);
	/* appending continues after the largest pn */
	assert_int_equal(append(&sm, n, 3), 0);
	p = dpq_sentmap_first(&sm, &it);
	check_pkt(p, n, 3);
	dpq_sentmap_destroy(&sm);
	assert_int_equal(c.allocs, c.frees);
}

static void
test_full_block_of_records(void **state)
{
	struct dpq_mem m = DPQ_MEM_LIBC;
	struct dpq_sentmap sm;
	struct dpq_sentmap_iter it;
	struct dpq_sent_pkt *p;

	(void)state;
	assert_int_equal(dpq_sentmap_init(&sm, &m, 0), 0);
	/* 2 slots used, then a packet that needs a whole block */
	assert_int_equal(append(&sm, 1, 1), 0);
	assert_int_equal(append(&sm, 2, DPQ_SENTMAP_MAX_RECS), 0);
	assert_int_equal(sm.nblocks, 2);
	assert_int_equal(append(&sm, 3, 0), 0);
	assert_int_equal(sm.nblocks, 3);
	p = dpq_sentmap_first(&sm, &it);
	check_pkt(p, 1, 1);
	p = dpq_sentmap_next(&sm, &it);
	check_pkt(p, 2, DPQ_SENTMAP_MAX_RECS);
	p = dpq_sentmap_next(&sm, &it);
	check_pkt(p, 3, 0);
	assert_null(dpq_sentmap_next(&sm, &it));
	assert_null(dpq_sentmap_next(&sm, &it));
	dpq_sentmap_destroy(&sm);
}

static void
test_errors(void **state)
{
	struct counting c = { 0 };
	struct dpq_mem m = counting_mem(&c);
	struct dpq_mem bad = { NULL, NULL, NULL };
	struct dpq_sentmap sm;
	struct dpq_sent_pkt p = { .pn = 1 };

	(void)state;
	assert_int_equal(dpq_sentmap_init(&sm, &bad, 0), -EINVAL);
	assert_int_equal(dpq_sentmap_init(&sm, NULL, 0), -EINVAL);
	assert_int_equal(dpq_sentmap_init(&sm, &m, 0), 0);

	/* allocator failure: nothing recorded, and the pn stays free */
	c.fail = true;
	assert_int_equal(append(&sm, 5, 1), -ENOMEM);
	assert_int_equal(dpq_sentmap_count(&sm), 0);
	c.fail = false;
	assert_int_equal(append(&sm, 5, 1), 0);
	/* packet numbers must increase */
	assert_int_equal(append(&sm, 5, 0), -EINVAL);
	assert_int_equal(append(&sm, 4, 0), -EINVAL);
	/* RFC 9000 §12.3: at most 2^62-1 */
	assert_int_equal(append(&sm, UINT64_C(1) << 62, 0), -EINVAL);
	assert_int_equal(append(&sm, (UINT64_C(1) << 62) - 1, 0), 0);
	/* too many records for one packet */
	sm.largest_pn = 10;
	assert_int_equal(append(&sm, 11, DPQ_SENTMAP_MAX_RECS + 1), -E2BIG);
	/* records missing */
	assert_int_equal(dpq_sentmap_append(&sm, &p, NULL, 2), -EINVAL);
	assert_int_equal(dpq_sentmap_count(&sm), 2);
	dpq_sentmap_destroy(&sm);
	assert_int_equal(c.allocs, c.frees);
}

static void
test_cap(void **state)
{
	struct dpq_mem m = DPQ_MEM_LIBC;
	struct dpq_sentmap sm;
	struct dpq_sentmap_iter it;
	uint64_t pn;

	(void)state;
	assert_int_equal(dpq_sentmap_init(&sm, &m, 100), 0);
	for (pn = 0; pn < 100; pn++)
		assert_int_equal(append(&sm, pn, 1), 0);
	assert_int_equal(append(&sm, 100, 0), -ENOBUFS);
	assert_int_equal(dpq_sentmap_count(&sm), 100);
	/* one acked: room for one more */
	dpq_sentmap_first(&sm, &it);
	dpq_sentmap_remove(&sm, &it);
	assert_int_equal(append(&sm, 100, 0), 0);
	assert_int_equal(append(&sm, 101, 0), -ENOBUFS);
	dpq_sentmap_destroy(&sm);
}

static void
test_steady_state_reuse(void **state)
{
	struct counting c = { 0 };
	struct dpq_mem m = counting_mem(&c);
	struct dpq_sentmap sm;
	struct dpq_sentmap_iter it;
	uint64_t pn;

	(void)state;
	assert_int_equal(dpq_sentmap_init(&sm, &m, 0), 0);
	/* a window of 200 packets sliding over 100000 */
	for (pn = 0; pn < 100000; pn++) {
		assert_int_equal(append(&sm, pn, pn % 4), 0);
		if (pn >= 200) {
			struct dpq_sent_pkt *p = dpq_sentmap_first(&sm, &it);

			assert_int_equal(p->pn, pn - 200);
			dpq_sentmap_remove(&sm, &it);
		}
	}
	assert_int_equal(dpq_sentmap_count(&sm), 200);
	/* blocks came back from the spare list, not the allocator */
	assert_true(c.allocs < 40);
	dpq_sentmap_clear(&sm);
	assert_int_equal(dpq_sentmap_count(&sm), 0);
	assert_int_equal(sm.nblocks, 0);
	dpq_sentmap_destroy(&sm);
	assert_int_equal(c.allocs, c.frees);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_walk_remove),
		cmocka_unit_test(test_full_block_of_records),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_steady_state_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
