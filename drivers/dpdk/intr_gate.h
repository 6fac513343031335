/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interrupt gate keeps EAL's interrupt thread out of a net_memif port
 * while a poller is inside the device, and the pollers out while that thread
 * works.
 *
 * Why: DPDK 22.11's memif PMD runs its control channel on EAL's interrupt
 * thread. When the peer goes away (a disconnect message, or its socket
 * closing because it exited or was killed) memif_disconnect() clears the
 * "connected" flag, closes the queue eventfds, munmap()s the shared regions
 * and frees their descriptors right there (memif_socket.c), with nothing to
 * stop an lcore that has already passed the flag check at the top of
 * eth_memif_rx/eth_memif_tx (rte_eth_memif.c): that lcore then reads an
 * unmapped ring or a freed region and dies with SIGSEGV. The same thread maps
 * the regions when a peer connects. DPDK's rule is that the control path and
 * the bursts of a queue are not run concurrently; the PMD breaks it on its
 * own thread, so the application has to keep them apart.
 *
 * How: the gate registers an eventfd that is always readable as an interrupt
 * source, so the interrupt thread calls the gate's callback on every pass of
 * its event loop. The callback opens the gate and sleeps for a slice
 * (DPQ_GATE_SLICE_US); as callbacks run one at a time, memif's cannot run
 * meanwhile. To leave, it closes the gate, waits until no poller is inside
 * the device, and returns; the thread then handles what is pending (memif
 * connect or disconnect) and comes back. A poller marks its slot busy and
 * then reads the gate (both sequentially consistent, Dekker's pattern): the
 * thread either sees the slot busy and waits, or the poller sees the gate
 * closed and skips this rx poll (packets stay in the ring) or waits to
 * transmit. Control operations on the port (configure, start, stop, close)
 * hold the thread parked so memif_dev_stop() cannot race a disconnect either.
 *
 * Cost: one locked store and one load per device call on gated ports only;
 * the interrupt thread wakes once a slice; other interrupt sources and EAL
 * alarms wait up to one slice.
 */
#ifndef DPQ_INTR_GATE_H
#define DPQ_INTR_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>

#define DPQ_GATE_SLOTS		128	/* gated queues in the process */
#define DPQ_GATE_SLICE_US	1000	/* interrupt thread parked per pass */

/* One per gated queue, written by the queue's poller. */
struct dpq_gate_slot {
	uint32_t busy;
} __rte_cache_aligned;

/* 1 while the interrupt thread is parked in the gate. */
extern uint32_t dpq_gate_open;

/* A slot for one queue (and the interrupt source on first use), or NULL
 * with errno set. Control thread. */
struct dpq_gate_slot *dpq_gate_attach(void);
/* Give a slot back (NULL: no-op); the last one removes the source. */
void dpq_gate_detach(struct dpq_gate_slot *s);

/* Keep the interrupt thread parked (waits until it is, bounded) around a
 * control operation on a gated port; nests. No-op without users. */
void dpq_gate_hold(void);
void dpq_gate_release(void);

/* Poller: true when the device may be called now; then dpq_gate_leave()
 * after the call. */
static inline bool
dpq_gate_enter(struct dpq_gate_slot *s)
{
	__atomic_store_n(&s->busy, 1, __ATOMIC_SEQ_CST);
	if (likely(__atomic_load_n(&dpq_gate_open, __ATOMIC_SEQ_CST) != 0))
		return true;
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	return false;
}

static inline void
dpq_gate_leave(struct dpq_gate_slot *s)
{
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* Poller: wait (pausing) until the gate opens, at most max_cycles TSC
 * cycles; true when entered. */
bool dpq_gate_enter_wait(struct dpq_gate_slot *s, uint64_t max_cycles);

#endif /* DPQ_INTR_GATE_H */
