/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_neigh is the DPDK driver's neighbour table (ARP for IPv4, Neighbor
 * Discovery for IPv6): IP address -> MAC of the next hops the dataplane talks
 * to, plus the packets waiting for an unresolved one.
 *
 * Fixed size (DPQ_NEIGH_MAX entries, open addressing, no deletion: a failed
 * entry is reused for the same address). Reads on the per-packet path are
 * lock-free: an entry's key is written once before it is published, and its
 * MAC and state live in one 64-bit word stored atomically. Writers (learning,
 * holding a packet, timers) take a spinlock; they are rare.
 *
 * Timers run on the TSC from the queues' rx/tx polls (dpq_neigh_tick): an
 * unresolved entry is probed again every DPQ_NEIGH_RETRY_MS, at most
 * DPQ_NEIGH_MAX_PROBES times, then its held packets are dropped. Resolved
 * entries do not expire: they are refreshed by any ARP / NA from the peer.
 */
#ifndef DPQ_NEIGH_H
#define DPQ_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_spinlock.h>

#define DPQ_NEIGH_MAX		256	/* entries, power of two */
#define DPQ_NEIGH_PENDING	8	/* held packets per unresolved neighbour */
#define DPQ_NEIGH_RETRY_MS	200	/* between ARP requests / NS */
#define DPQ_NEIGH_MAX_PROBES	5	/* requests before giving up */
#define DPQ_NEIGH_TICK_PROBES	16	/* probes one tick may ask for */

enum dpq_neigh_state {
	DPQ_NEIGH_FREE = 0,
	DPQ_NEIGH_INCOMPLETE,	/* probing, packets may be held */
	DPQ_NEIGH_REACHABLE,	/* MAC known */
	DPQ_NEIGH_FAILED,	/* gave up; the next packet probes again */
};

struct dpq_neigh_entry {
	uint64_t mac_state;	/* atomic: MAC bytes 0-5 in bits 0-47, state 56-63 */
	uint8_t used;		/* atomic: ip is valid */
	uint8_t probes;
	uint16_t n_pending;
	uint8_t ip[16];
	uint64_t deadline;	/* TSC of the next probe or give-up */
	struct rte_mbuf *pending[DPQ_NEIGH_PENDING];
};

struct dpq_neigh {
	rte_spinlock_t lock;
	uint8_t alen;		/* 4 or 16 */
	unsigned int n_used;
	uint64_t retry_tsc;
	uint64_t next_deadline;	/* atomic: earliest deadline, UINT64_MAX: none */
	struct dpq_neigh_entry e[DPQ_NEIGH_MAX];
};

enum dpq_neigh_hold_result {
	DPQ_NEIGH_RESOLVED,	/* mac filled: send now */
	DPQ_NEIGH_HELD,		/* queued until resolution */
	DPQ_NEIGH_DROPPED,	/* pending queue or table full: caller frees */
};

/* family AF_INET / AF_INET6; tsc_hz from rte_get_tsc_hz(). */
void dpq_neigh_init(struct dpq_neigh *t, int family, uint64_t tsc_hz);

/* Lock-free: true and mac filled when ip is resolved. Any thread. */
bool dpq_neigh_lookup(const struct dpq_neigh *t, const uint8_t *ip,
		uint8_t mac[6]);

/* Hold m until ip resolves. *probe is set when the caller must send the
 * first ARP request / NS now. */
enum dpq_neigh_hold_result dpq_neigh_hold(struct dpq_neigh *t,
		const uint8_t *ip, struct rte_mbuf *m, uint64_t now,
		uint8_t mac[6], bool *probe);

/* Record ip -> mac. When create is false only an existing entry is updated
 * (RFC 826 "merge"; RFC 4861 §7.2.5). Packets that were held move to flush
 * (room for DPQ_NEIGH_PENDING), their count in *n_flush. Returns 0, -ENOENT
 * (absent and !create) or -ENOSPC (table full). */
int dpq_neigh_learn(struct dpq_neigh *t, const uint8_t *ip,
		const uint8_t mac[6], bool create, struct rte_mbuf **flush,
		unsigned int *n_flush);

/* Run due timers: fills probe_ips (up to DPQ_NEIGH_TICK_PROBES addresses of
 * 16 bytes) with neighbours to probe again and returns their count; packets
 * of neighbours that gave up are freed and counted in *n_dropped. Cheap
 * when nothing is due (one atomic load). */
unsigned int dpq_neigh_tick(struct dpq_neigh *t, uint64_t now,
		uint8_t probe_ips[][16], unsigned int *n_dropped);

/* Free every held packet (close). Returns how many. */
unsigned int dpq_neigh_flush_all(struct dpq_neigh *t);

#endif /* DPQ_NEIGH_H */
