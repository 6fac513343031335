/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interrupt gate: why and how in intr_gate.h. Here the interrupt thread's
 * side (park_cb), the slots and the hold used by the control thread.
 */
/* Since 21.11 an interrupt handle can only be made through
 * rte_intr_instance_alloc() and its setters, experimental in 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_interrupts.h>
#include <rte_log.h>
#include <rte_pause.h>

#include "drivers/dpdk/intr_gate.h"

extern int dpq_logtype_driver;	/* ethdev.c */
#define LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, dpq_logtype_driver, "dpq_gate: " fmt "\n", \
		##__VA_ARGS__)

#define HOLD_WAIT_MS	2000	/* a hold gives up waiting after this */

uint32_t dpq_gate_open;
static struct dpq_gate_slot slots[DPQ_GATE_SLOTS];

static unsigned int holds;	/* control operations in progress */

static struct {
	pthread_mutex_t lock;	/* attach / detach */
	bool used[DPQ_GATE_SLOTS];
	unsigned int users;	/* attached slots */
	bool closing;		/* park_cb returns at once */
	int efd;
	struct rte_intr_handle *ih;
} gate = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1 };

static void
sleep_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

	nanosleep(&ts, NULL);
}

/* Interrupt thread, once per pass of its event loop (the eventfd is never
 * read, so it stays ready): park with the gate open, then close it and wait
 * for the pollers before memif's callbacks may run. Closing the gate before
 * reading `holds` pairs with dpq_gate_hold() raising it before reading the
 * gate: either this thread sees the hold and stays, or the holder sees the
 * gate closed and waits for the next park. */
static void
park_cb(void *arg)
{
	unsigned int i;

	RTE_SET_USED(arg);
	if (__atomic_load_n(&gate.closing, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&dpq_gate_open, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		sleep_us(DPQ_GATE_SLICE_US);
		__atomic_store_n(&dpq_gate_open, 0, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&gate.closing, __ATOMIC_ACQUIRE))
			return;		/* no gated port left */
		if (__atomic_load_n(&holds, __ATOMIC_SEQ_CST) == 0)
			break;
		__atomic_store_n(&dpq_gate_open, 1, __ATOMIC_SEQ_CST);
	}
	for (i = 0; i < DPQ_GATE_SLOTS; i++)
		while (__atomic_load_n(&slots[i].busy, __ATOMIC_SEQ_CST) != 0)
			rte_pause();
}

static int
source_add(void)
{
	int rc;

	gate.efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	if (gate.efd < 0)
		return -errno;
	gate.ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (gate.ih == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if (rte_intr_fd_set(gate.ih, gate.efd) != 0 ||
			rte_intr_type_set(gate.ih, RTE_INTR_HANDLE_EXT) != 0) {
		rc = -EINVAL;
		goto fail;
	}
	__atomic_store_n(&gate.closing, false, __ATOMIC_RELEASE);
	rc = rte_intr_callback_register(gate.ih, park_cb, NULL);
	if (rc == 0)
		return 0;
fail:
	LOG(ERR, "cannot add the interrupt source: %s", strerror(-rc));
	rte_intr_instance_free(gate.ih);
	gate.ih = NULL;
	close(gate.efd);
	gate.efd = -1;
	return rc;
}

/* Lock held, no gated port left. park_cb may be running: it sees closing
 * once its slice ends, and the drained eventfd stops further calls. */
static void
source_remove(void)
{
	uint64_t v;

	__atomic_store_n(&gate.closing, true, __ATOMIC_RELEASE);
	if (read(gate.efd, &v, sizeof(v)) < 0)
		LOG(WARNING, "eventfd read: %s", strerror(errno));
	if (rte_intr_callback_unregister_sync(gate.ih, park_cb, NULL) < 0)
		LOG(WARNING, "cannot remove the interrupt source");
	rte_intr_instance_free(gate.ih);
	gate.ih = NULL;
	close(gate.efd);
	gate.efd = -1;
}

struct dpq_gate_slot *
dpq_gate_attach(void)
{
	struct dpq_gate_slot *s = NULL;
	unsigned int i;
	int rc = 0;

	pthread_mutex_lock(&gate.lock);
	for (i = 0; i < DPQ_GATE_SLOTS && gate.used[i]; i++)
		;
	if (i == DPQ_GATE_SLOTS) {
		LOG(ERR, "all %u gate slots in use", DPQ_GATE_SLOTS);
		rc = -ENOSPC;
	} else if (gate.users == 0) {
		rc = source_add();
	}
	if (rc == 0) {
		gate.used[i] = true;
		__atomic_store_n(&gate.users, gate.users + 1,
				__ATOMIC_RELEASE);
		s = &slots[i];
	}
	pthread_mutex_unlock(&gate.lock);
	if (s == NULL)
		errno = -rc;
	return s;
}

void
dpq_gate_detach(struct dpq_gate_slot *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&gate.lock);
	gate.used[s - slots] = false;
	__atomic_store_n(&gate.users, gate.users - 1, __ATOMIC_RELEASE);
	if (gate.users == 0)
		source_remove();
	pthread_mutex_unlock(&gate.lock);
}

void
dpq_gate_hold(void)
{
	uint64_t until;

	__atomic_fetch_add(&holds, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&gate.users, __ATOMIC_ACQUIRE) == 0)
		return;
	/* seen open after the hold was raised: parked until released */
	until = rte_get_tsc_cycles() + rte_get_tsc_hz() * HOLD_WAIT_MS / 1000;
	while (__atomic_load_n(&dpq_gate_open, __ATOMIC_SEQ_CST) == 0) {
		if (rte_get_tsc_cycles() > until) {
			LOG(WARNING, "interrupt thread not parked after %u ms",
					HOLD_WAIT_MS);
			return;
		}
		sleep_us(100);
	}
}

void
dpq_gate_release(void)
{
	__atomic_fetch_sub(&holds, 1, __ATOMIC_SEQ_CST);
}

bool
dpq_gate_enter_wait(struct dpq_gate_slot *s, uint64_t max_cycles)
{
	uint64_t until = 0;

	while (!dpq_gate_enter(s)) {
		uint64_t now = rte_get_tsc_cycles();

		if (until == 0)
			until = now + max_cycles;
		else if (now > until)
			return false;
		rte_pause();
	}
	return true;
}
