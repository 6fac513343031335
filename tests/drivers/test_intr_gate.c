/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interrupt gate (drivers/dpdk/intr_gate.c): while a poller is inside
 * the gate, no other callback runs on EAL's interrupt thread, which is what
 * keeps memif's disconnect handler from unmapping rings under a burst; a
 * hold keeps every other callback waiting; the pollers still get in.
 *
 * A second interrupt source (an eventfd written every 100 us by a thread)
 * stands for memif's control channel: its callback records whether a poller
 * was inside when it ran.
 *
 * One EAL init per binary, --no-huge, no PCI, no shared config.
 */
#define ALLOW_EXPERIMENTAL_API	/* rte_intr_instance_* (22.11) */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_interrupts.h>
#include <rte_pause.h>

#include "drivers/dpdk/intr_gate.h"

static struct {
	int efd;
	struct rte_intr_handle *ih;
	uint32_t inside;	/* a poller is between enter and leave */
	uint32_t stop;
	uint64_t calls, overlaps, entries;
	struct dpq_gate_slot *slot;
} t;

/* Stands for memif's handler: must never run with a poller inside. */
static void
other_cb(void *arg)
{
	uint64_t v;

	(void)arg;
	if (read(t.efd, &v, sizeof(v)) < 0)
		return;
	if (__atomic_load_n(&t.inside, __ATOMIC_SEQ_CST) != 0)
		__atomic_fetch_add(&t.overlaps, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t.calls, 1, __ATOMIC_RELEASE);
}

static void *
poller(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&t.stop, __ATOMIC_ACQUIRE)) {
		if (!dpq_gate_enter(t.slot)) {
			rte_pause();
			continue;
		}
		__atomic_store_n(&t.inside, 1, __ATOMIC_SEQ_CST);
		rte_delay_us_block(5);	/* a burst's worth of work */
		__atomic_store_n(&t.inside, 0, __ATOMIC_SEQ_CST);
		dpq_gate_leave(t.slot);
		t.entries++;
	}
	return NULL;
}

static void *
kicker(void *arg)
{
	const uint64_t one = 1;
	struct timespec ts = { 0, 100 * 1000 };

	(void)arg;
	while (!__atomic_load_n(&t.stop, __ATOMIC_ACQUIRE)) {
		if (write(t.efd, &one, sizeof(one)) < 0)
			break;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static uint64_t
calls(void)
{
	return __atomic_load_n(&t.calls, __ATOMIC_ACQUIRE);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void
test_no_callback_inside(void **state)
{
	pthread_t p, k;
	uint64_t before, deadline;

	(void)state;
	t.slot = dpq_gate_attach();
	assert_non_null(t.slot);
	t.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(t.efd >= 0);
	t.ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	assert_non_null(t.ih);
	assert_int_equal(rte_intr_fd_set(t.ih, t.efd), 0);
	assert_int_equal(rte_intr_type_set(t.ih, RTE_INTR_HANDLE_EXT), 0);
	assert_int_equal(rte_intr_callback_register(t.ih, other_cb, NULL), 0);

	assert_int_equal(pthread_create(&p, NULL, poller, NULL), 0);
	assert_int_equal(pthread_create(&k, NULL, kicker, NULL), 0);

	/* both sides make progress, never at the same time */
	deadline = rte_get_tsc_cycles() + 10 * rte_get_tsc_hz();
	while ((calls() < 100 || t.entries < 1000) &&
			rte_get_tsc_cycles() < deadline)
		sleep_ms(10);
	assert_true(calls() >= 100);

	/* a hold keeps the other callback out; the poller still enters */
	dpq_gate_hold();
	sleep_ms(5);	/* a call that had started when the hold came */
	before = calls();
	sleep_ms(50);
	assert_int_equal(calls(), before);
	dpq_gate_release();
	deadline = rte_get_tsc_cycles() + 2 * rte_get_tsc_hz();
	while (calls() == before && rte_get_tsc_cycles() < deadline)
		sleep_ms(1);
	assert_true(calls() > before);

	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(p, NULL);
	pthread_join(k, NULL);
	print_message("other callback %" PRIu64 " times, poller %" PRIu64
			" entries\n", calls(), t.entries);
	assert_true(t.entries >= 1000);
	assert_int_equal(t.overlaps, 0);

	while (rte_intr_callback_unregister(t.ih, other_cb, NULL) == -EAGAIN)
		rte_pause();
	rte_intr_instance_free(t.ih);
	close(t.efd);
	dpq_gate_detach(t.slot);
}

/* The last detach removes the source; a new attach brings it back. */
static void
test_attach_again(void **state)
{
	struct dpq_gate_slot *a, *b;
	uint64_t deadline;

	(void)state;
	a = dpq_gate_attach();
	b = dpq_gate_attach();
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	deadline = rte_get_tsc_cycles() + 2 * rte_get_tsc_hz();
	while (!dpq_gate_enter(a) && rte_get_tsc_cycles() < deadline)
		rte_pause();
	dpq_gate_leave(a);
	dpq_gate_detach(a);
	dpq_gate_detach(b);
	assert_int_equal(__atomic_load_n(&dpq_gate_open, __ATOMIC_ACQUIRE),
			0);
	a = dpq_gate_attach();
	assert_non_null(a);
	assert_true(dpq_gate_enter_wait(a, 2 * rte_get_tsc_hz()));
	dpq_gate_leave(a);
	dpq_gate_detach(a);
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "64", "--no-pci",
			"--no-shconf", "-l", "0", "--log-level=error" };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_callback_inside),
		cmocka_unit_test(test_attach_again),
	};

	(void)argc;
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
