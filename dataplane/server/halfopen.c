/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halfopen.c: bounds on half-open connections (see halfopen.h).
 *
 * Intrusive doubly linked lists over slot numbers keep the age order:
 * of the whole shard and per source prefix, each split in two (peers
 * that proved their address and those that did not; a slot is in one of
 * each pair). Prefixes live in
 * an open-addressing table with linear probing and backward-shift
 * deletion, so it never fills with tombstones; its load stays at most one
 * half (a prefix exists only while it has a half-open connection, and
 * there are at most max_total of those).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "halfopen.h"

#define NIL	UINT32_MAX

/* A source prefix: family and the masked address bytes. */
struct pkey {
	uint8_t b[20];
};

/* List index: peers that did not prove their address yet, and those
 * that did (RFC 9000 §8.1). */
enum { UNPROVEN = 0, PROVEN = 1 };

struct pentry {
	struct pkey key;
	uint32_t count;		/* 0: free bucket */
	uint32_t head[2], tail[2];	/* oldest, newest slot of the prefix */
};

struct dpq_halfopen {
	struct dpq_halfopen_cfg cfg;
	uint32_t nslots;
	uint32_t count;
	uint32_t head[2], tail[2];	/* oldest, newest slot of the shard */
	uint32_t *gprev, *gnext;
	uint32_t *pprev, *pnext;
	struct pkey *slot_key;	/* prefix of each tracked slot */
	uint8_t *tracked;	/* 0: no; else 1 + UNPROVEN or PROVEN */
	struct pentry *tab;
	uint32_t mask;		/* table size - 1 */
	uint64_t seed[2];
	struct dpq_halfopen_stats stats;
};

void
dpq_halfopen_cfg_default(struct dpq_halfopen_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_total = DPQ_HALFOPEN_MAX_TOTAL;
	cfg->max_per_prefix = DPQ_HALFOPEN_MAX_PER_PREFIX;
	cfg->v4_prefix = DPQ_HALFOPEN_V4_PREFIX;
	cfg->v6_prefix = DPQ_HALFOPEN_V6_PREFIX;
	cfg->retry_threshold = DPQ_HALFOPEN_RETRY_THRESHOLD;
}

struct dpq_halfopen *
dpq_halfopen_create(const struct dpq_halfopen_cfg *cfg, uint32_t nslots,
		const struct dpq_rand *rnd)
{
	struct dpq_halfopen *h;
	uint32_t size = 16;

	if (cfg == NULL || rnd == NULL || rnd->fill == NULL || nslots == 0 ||
	    nslots == NIL || cfg->max_total == 0 ||
	    cfg->max_per_prefix == 0 || cfg->max_total > (1u << 24) ||
	    cfg->v4_prefix < 1 || cfg->v4_prefix > 32 ||
	    cfg->v6_prefix < 1 || cfg->v6_prefix > 128) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	h->cfg = *cfg;
	if (h->cfg.max_total > nslots)
		h->cfg.max_total = nslots;
	h->nslots = nslots;
	h->head[UNPROVEN] = h->tail[UNPROVEN] = NIL;
	h->head[PROVEN] = h->tail[PROVEN] = NIL;
	while (size < 2 * h->cfg.max_total)
		size <<= 1;
	h->mask = size - 1;
	h->gprev = malloc(nslots * sizeof(uint32_t));
	h->gnext = malloc(nslots * sizeof(uint32_t));
	h->pprev = malloc(nslots * sizeof(uint32_t));
	h->pnext = malloc(nslots * sizeof(uint32_t));
	h->slot_key = malloc(nslots * sizeof(struct pkey));
	h->tracked = calloc(nslots, 1);
	h->tab = calloc(size, sizeof(struct pentry));
	if (h->gprev == NULL || h->gnext == NULL || h->pprev == NULL ||
	    h->pnext == NULL || h->slot_key == NULL || h->tracked == NULL ||
	    h->tab == NULL) {
		dpq_halfopen_destroy(h);
		errno = ENOMEM;
		return NULL;
	}
	rnd->fill(rnd->ctx, (uint8_t *)h->seed, sizeof(h->seed));
	return h;
}

void
dpq_halfopen_destroy(struct dpq_halfopen *h)
{
	if (h == NULL)
		return;
	free(h->gprev);
	free(h->gnext);
	free(h->pprev);
	free(h->pnext);
	free(h->slot_key);
	free(h->tracked);
	free(h->tab);
	free(h);
}

/* ---- prefixes ------------------------------------------------------------ */

static void
prefix_of(const struct dpq_halfopen *h, const struct dpq_netaddr *a,
		struct pkey *k)
{
	unsigned int bits, len, i;

	memset(k, 0, sizeof(*k));
	if (a->family == AF_INET) {
		bits = h->cfg.v4_prefix;
		len = 4;
	} else {
		bits = h->cfg.v6_prefix;
		len = 16;
	}
	k->b[0] = a->family;
	for (i = 0; i < len && bits > 0; i++) {
		uint8_t m = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

		k->b[1 + i] = a->ip[i] & m;
		bits = bits >= 8 ? bits - 8 : 0;
	}
}

static uint32_t
hash(const struct dpq_halfopen *h, const struct pkey *k)
{
	uint64_t x = h->seed[0], w;
	unsigned int i;

	for (i = 0; i < sizeof(k->b); i += 4) {
		uint32_t v;

		memcpy(&v, k->b + i, 4);
		w = (v ^ h->seed[1]) * 0x9e3779b97f4a7c15ull;
		x = (x ^ w ^ (w >> 29)) * 0xbf58476d1ce4e5b9ull;
	}
	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 32;
	return (uint32_t)x;
}

/* The bucket of k, or of the free bucket where it would go. */
static uint32_t
find(const struct dpq_halfopen *h, const struct pkey *k)
{
	uint32_t i = hash(h, k) & h->mask;

	while (h->tab[i].count != 0 &&
	       memcmp(&h->tab[i].key, k, sizeof(*k)) != 0)
		i = (i + 1) & h->mask;
	return i;
}

/* Free bucket i, moving later members of its probe run back so every
 * key stays reachable from its home bucket. */
static void
bucket_free(struct dpq_halfopen *h, uint32_t i)
{
	uint32_t j = i;

	h->tab[i].count = 0;
	for (;;) {
		uint32_t home;

		j = (j + 1) & h->mask;
		if (h->tab[j].count == 0)
			return;
		home = hash(h, &h->tab[j].key) & h->mask;
		/* j may move to i unless its home lies cyclically in
		 * (i, j]. */
		if ((i <= j) ? (home > i && home <= j) :
				(home > i || home <= j))
			continue;
		h->tab[i] = h->tab[j];
		h->tab[j].count = 0;
		i = j;
	}
}

/* ---- lists ------------------------------------------------------------------ */

static void
list_append(uint32_t *prev, uint32_t *next, uint32_t *head, uint32_t *tail,
		uint32_t s)
{
	prev[s] = *tail;
	next[s] = NIL;
	if (*tail != NIL)
		next[*tail] = s;
	else
		*head = s;
	*tail = s;
}

static void
list_unlink(uint32_t *prev, uint32_t *next, uint32_t *head, uint32_t *tail,
		uint32_t s)
{
	if (prev[s] != NIL)
		next[prev[s]] = next[s];
	else
		*head = next[s];
	if (next[s] != NIL)
		prev[next[s]] = prev[s];
	else
		*tail = prev[s];
}

/* ---- policy ----------------------------------------------------------------- */

enum dpq_halfopen_verdict
dpq_halfopen_admit(struct dpq_halfopen *h, const struct dpq_netaddr *peer,
		bool table_full, uint32_t *victim)
{
	struct pkey k;
	uint32_t i;

	prefix_of(h, peer, &k);
	i = find(h, &k);
	if (h->tab[i].count >= h->cfg.max_per_prefix) {
		const struct pentry *e = &h->tab[i];

		*victim = e->head[UNPROVEN] != NIL ? e->head[UNPROVEN] :
			e->head[PROVEN];
		h->stats.evicted_prefix++;
		return DPQ_HO_EVICT;
	}
	if (h->count >= h->cfg.max_total || table_full) {
		if (h->count == 0) {
			h->stats.refused++;
			return DPQ_HO_REFUSE;
		}
		*victim = h->head[UNPROVEN] != NIL ? h->head[UNPROVEN] :
			h->head[PROVEN];
		h->stats.evicted_total++;
		return DPQ_HO_EVICT;
	}
	return DPQ_HO_ADMIT;
}

int
dpq_halfopen_add(struct dpq_halfopen *h, uint32_t slot,
		const struct dpq_netaddr *peer)
{
	struct pentry *e;
	uint32_t i;

	if (slot >= h->nslots || h->tracked[slot])
		return -EINVAL;
	if (h->count >= h->cfg.max_total)
		return -ENOSPC;
	prefix_of(h, peer, &h->slot_key[slot]);
	i = find(h, &h->slot_key[slot]);
	e = &h->tab[i];
	if (e->count >= h->cfg.max_per_prefix)
		return -ENOSPC;
	if (e->count == 0) {
		e->key = h->slot_key[slot];
		e->head[UNPROVEN] = e->tail[UNPROVEN] = NIL;
		e->head[PROVEN] = e->tail[PROVEN] = NIL;
	}
	e->count++;
	list_append(h->pprev, h->pnext, &e->head[UNPROVEN],
			&e->tail[UNPROVEN], slot);
	list_append(h->gprev, h->gnext, &h->head[UNPROVEN],
			&h->tail[UNPROVEN], slot);
	h->tracked[slot] = 1 + UNPROVEN;
	h->count++;
	h->stats.admitted++;
	return 0;
}

void
dpq_halfopen_remove(struct dpq_halfopen *h, uint32_t slot, bool completed)
{
	struct pentry *e;
	uint32_t i, k;

	if (h == NULL || slot >= h->nslots || !h->tracked[slot])
		return;
	k = h->tracked[slot] - 1;
	i = find(h, &h->slot_key[slot]);
	e = &h->tab[i];
	list_unlink(h->pprev, h->pnext, &e->head[k], &e->tail[k], slot);
	if (--e->count == 0)
		bucket_free(h, i);
	list_unlink(h->gprev, h->gnext, &h->head[k], &h->tail[k], slot);
	h->tracked[slot] = 0;
	h->count--;
	if (completed)
		h->stats.completed++;
}

void
dpq_halfopen_proven(struct dpq_halfopen *h, uint32_t slot)
{
	struct pentry *e;

	if (h == NULL || slot >= h->nslots ||
	    h->tracked[slot] != 1 + UNPROVEN)
		return;
	/* The proven are in the order they proved it. */
	e = &h->tab[find(h, &h->slot_key[slot])];
	list_unlink(h->pprev, h->pnext, &e->head[UNPROVEN],
			&e->tail[UNPROVEN], slot);
	list_append(h->pprev, h->pnext, &e->head[PROVEN], &e->tail[PROVEN],
			slot);
	list_unlink(h->gprev, h->gnext, &h->head[UNPROVEN],
			&h->tail[UNPROVEN], slot);
	list_append(h->gprev, h->gnext, &h->head[PROVEN], &h->tail[PROVEN],
			slot);
	h->tracked[slot] = 1 + PROVEN;
	h->stats.proven++;
}

bool
dpq_halfopen_tracked(const struct dpq_halfopen *h, uint32_t slot)
{
	return slot < h->nslots && h->tracked[slot];
}

uint32_t
dpq_halfopen_count(const struct dpq_halfopen *h)
{
	return h->count;
}

uint32_t
dpq_halfopen_count_prefix(const struct dpq_halfopen *h,
		const struct dpq_netaddr *peer)
{
	struct pkey k;

	prefix_of(h, peer, &k);
	return h->tab[find(h, &k)].count;
}

bool
dpq_halfopen_retry_wanted(const struct dpq_halfopen *h)
{
	return h->count >= h->cfg.retry_threshold;
}

const struct dpq_halfopen_stats *
dpq_halfopen_stats(const struct dpq_halfopen *h)
{
	return &h->stats;
}
