/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour table of the DPDK driver: see neigh.h for the concurrency rules.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "neigh.h"

static inline uint64_t
pack(const uint8_t mac[6], enum dpq_neigh_state st)
{
	uint64_t v = (uint64_t)st << 56;
	unsigned int i;

	for (i = 0; i < 6; i++)
		v |= (uint64_t)mac[i] << (8 * i);
	return v;
}

static inline enum dpq_neigh_state
unpack(uint64_t v, uint8_t mac[6])
{
	unsigned int i;

	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 * i));
	return (enum dpq_neigh_state)(v >> 56);
}

static inline unsigned int
slot_of(const struct dpq_neigh *t, const uint8_t *ip)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	unsigned int i;

	for (i = 0; i < t->alen; i++)
		h = (h ^ ip[i]) * 16777619u;
	return h & (DPQ_NEIGH_MAX - 1);
}

void
dpq_neigh_init(struct dpq_neigh *t, int family, uint64_t tsc_hz)
{
	memset(t, 0, sizeof(*t));
	rte_spinlock_init(&t->lock);
	t->alen = family == AF_INET ? 4 : 16;
	t->retry_tsc = tsc_hz * DPQ_NEIGH_RETRY_MS / 1000;
	t->next_deadline = UINT64_MAX;
}

/* Entry for ip, or NULL. Lock-free. */
static struct dpq_neigh_entry *
find(const struct dpq_neigh *t, const uint8_t *ip)
{
	unsigned int i = slot_of(t, ip), n;

	for (n = 0; n < DPQ_NEIGH_MAX; n++) {
		const struct dpq_neigh_entry *e = &t->e[i];

		if (!__atomic_load_n(&e->used, __ATOMIC_ACQUIRE))
			return NULL;	/* end of the probe chain */
		if (memcmp(e->ip, ip, t->alen) == 0)
			return (struct dpq_neigh_entry *)(uintptr_t)e;
		i = (i + 1) & (DPQ_NEIGH_MAX - 1);
	}
	return NULL;
}

/* Entry for ip, inserted when absent; NULL when full. Lock held. */
static struct dpq_neigh_entry *
find_or_insert(struct dpq_neigh *t, const uint8_t *ip)
{
	unsigned int i = slot_of(t, ip), n;

	for (n = 0; n < DPQ_NEIGH_MAX; n++) {
		struct dpq_neigh_entry *e = &t->e[i];

		if (!e->used) {
			if (t->n_used >= DPQ_NEIGH_MAX - 1)
				return NULL;	/* keep one hole: bounded probes */
			memcpy(e->ip, ip, t->alen);
			e->mac_state = 0;
			e->n_pending = 0;
			e->probes = 0;
			__atomic_store_n(&e->used, 1, __ATOMIC_RELEASE);
			t->n_used++;
			return e;
		}
		if (memcmp(e->ip, ip, t->alen) == 0)
			return e;
		i = (i + 1) & (DPQ_NEIGH_MAX - 1);
	}
	return NULL;
}

bool
dpq_neigh_lookup(const struct dpq_neigh *t, const uint8_t *ip,
		uint8_t mac[6])
{
	const struct dpq_neigh_entry *e = find(t, ip);

	if (e == NULL)
		return false;
	return unpack(__atomic_load_n(&e->mac_state, __ATOMIC_ACQUIRE),
			mac) == DPQ_NEIGH_REACHABLE;
}

static void
arm(struct dpq_neigh *t, uint64_t deadline)
{
	if (deadline < __atomic_load_n(&t->next_deadline, __ATOMIC_RELAXED))
		__atomic_store_n(&t->next_deadline, deadline,
				__ATOMIC_RELAXED);
}

enum dpq_neigh_hold_result
dpq_neigh_hold(struct dpq_neigh *t, const uint8_t *ip, struct rte_mbuf *m,
		uint64_t now, uint8_t mac[6], bool *probe)
{
	struct dpq_neigh_entry *e;
	enum dpq_neigh_hold_result res;
	enum dpq_neigh_state st;

	*probe = false;
	rte_spinlock_lock(&t->lock);
	e = find_or_insert(t, ip);
	if (e == NULL) {
		res = DPQ_NEIGH_DROPPED;
		goto out;
	}
	st = unpack(e->mac_state, mac);
	if (st == DPQ_NEIGH_REACHABLE) {
		/* resolved between the caller's lookup and now */
		res = DPQ_NEIGH_RESOLVED;
		goto out;
	}
	if (st != DPQ_NEIGH_INCOMPLETE) {
		static const uint8_t zero[6];

		__atomic_store_n(&e->mac_state,
				pack(zero, DPQ_NEIGH_INCOMPLETE),
				__ATOMIC_RELEASE);
		e->probes = 1;
		e->deadline = now + t->retry_tsc;
		arm(t, e->deadline);
		*probe = true;
	}
	if (e->n_pending >= DPQ_NEIGH_PENDING) {
		res = DPQ_NEIGH_DROPPED;
		goto out;
	}
	e->pending[e->n_pending++] = m;
	res = DPQ_NEIGH_HELD;
out:
	rte_spinlock_unlock(&t->lock);
	return res;
}

int
dpq_neigh_learn(struct dpq_neigh *t, const uint8_t *ip,
		const uint8_t mac[6], bool create, struct rte_mbuf **flush,
		unsigned int *n_flush)
{
	struct dpq_neigh_entry *e;
	int rc = 0;

	*n_flush = 0;
	rte_spinlock_lock(&t->lock);
	e = create ? find_or_insert(t, ip) : find(t, ip);
	if (e == NULL) {
		rc = create ? -ENOSPC : -ENOENT;
		goto out;
	}
	__atomic_store_n(&e->mac_state, pack(mac, DPQ_NEIGH_REACHABLE),
			__ATOMIC_RELEASE);
	e->probes = 0;
	memcpy(flush, e->pending, e->n_pending * sizeof(e->pending[0]));
	*n_flush = e->n_pending;
	e->n_pending = 0;
out:
	rte_spinlock_unlock(&t->lock);
	return rc;
}

unsigned int
dpq_neigh_tick(struct dpq_neigh *t, uint64_t now, uint8_t probe_ips[][16],
		unsigned int *n_dropped)
{
	uint64_t next = UINT64_MAX;
	unsigned int i, n_probe = 0;
	uint8_t mac[6];

	*n_dropped = 0;
	if (now < __atomic_load_n(&t->next_deadline, __ATOMIC_RELAXED))
		return 0;
	if (!rte_spinlock_trylock(&t->lock))
		return 0;	/* another queue is doing it */
	for (i = 0; i < DPQ_NEIGH_MAX; i++) {
		struct dpq_neigh_entry *e = &t->e[i];

		if (!e->used || unpack(e->mac_state, mac) !=
				DPQ_NEIGH_INCOMPLETE)
			continue;
		if (e->deadline <= now) {
			if (e->probes < DPQ_NEIGH_MAX_PROBES &&
					n_probe < DPQ_NEIGH_TICK_PROBES) {
				e->probes++;
				e->deadline = now + t->retry_tsc;
				memcpy(probe_ips[n_probe++], e->ip, t->alen);
			} else if (e->probes >= DPQ_NEIGH_MAX_PROBES) {
				unsigned int k;

				for (k = 0; k < e->n_pending; k++)
					rte_pktmbuf_free(e->pending[k]);
				*n_dropped += e->n_pending;
				e->n_pending = 0;
				__atomic_store_n(&e->mac_state,
						pack(mac, DPQ_NEIGH_FAILED),
						__ATOMIC_RELEASE);
				continue;
			}
		}
		if (e->deadline < next)
			next = e->deadline;
	}
	__atomic_store_n(&t->next_deadline, next, __ATOMIC_RELAXED);
	rte_spinlock_unlock(&t->lock);
	return n_probe;
}

unsigned int
dpq_neigh_flush_all(struct dpq_neigh *t)
{
	unsigned int i, k, n = 0;

	rte_spinlock_lock(&t->lock);
	for (i = 0; i < DPQ_NEIGH_MAX; i++) {
		struct dpq_neigh_entry *e = &t->e[i];

		for (k = 0; k < e->n_pending; k++)
			rte_pktmbuf_free(e->pending[k]);
		n += e->n_pending;
		e->n_pending = 0;
	}
	rte_spinlock_unlock(&t->lock);
	return n;
}
