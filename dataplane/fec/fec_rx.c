/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec_rx.c: the receiver side of XOR-FEC (docs/fec.md §7). Groups are
 * known before their members arrive: announced by the previous REPAIR
 * frame's Next fields, or, when that REPAIR was lost, predicted as the
 * same size again right after it. Each received member's plaintext is
 * XORed into its group's accumulator (batched per burst); a REPAIR XORs
 * its data in as well, after which the accumulator of a group missing
 * exactly one member is that member's payload.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/fec/fec.h"
#include "dataplane/fec/xor.h"

void
dpq_fec_rx_init(struct dpq_fec_rx *rx, const struct dpq_mem *mem, size_t cap,
		uint32_t max_group, dpq_fec_recovered_fn fn, void *ctx)
{
	memset(rx, 0, sizeof(*rx));
	rx->mem = *mem;
	rx->cap = cap < DPQ_FEC_PAYLOAD_LIMIT ? cap : DPQ_FEC_PAYLOAD_LIMIT;
	rx->max_group = max_group > DPQ_FEC_GROUP_LIMIT ?
		DPQ_FEC_GROUP_LIMIT : max_group;
	rx->on_recovered = fn;
	rx->ctx = ctx;
}

void
dpq_fec_rx_destroy(struct dpq_fec_rx *rx)
{
	unsigned int i;

	for (i = 0; i < DPQ_FEC_RX_GROUPS; i++) {
		dpq_mem_free(&rx->mem, rx->g[i].acc);
		rx->g[i].acc = NULL;
		rx->g[i].used = false;
	}
	rx->nq = 0;
}

static void
group_free(struct dpq_fec_rx_group *g)
{
	if (g->acc != NULL && g->max_len > 0)
		memset(g->acc, 0, g->max_len);
	g->max_len = 0;
	g->used = false;
}

static unsigned int
missing(const struct dpq_fec_rx_group *g)
{
	return g->size - (unsigned int)__builtin_popcountll(g->have);
}

static struct dpq_fec_rx_group *
group_find(struct dpq_fec_rx *rx, uint64_t first)
{
	unsigned int i;

	for (i = 0; i < DPQ_FEC_RX_GROUPS; i++)
		if (rx->g[i].used && rx->g[i].first == first)
			return &rx->g[i];
	return NULL;
}

static struct dpq_fec_rx_group *
group_of(struct dpq_fec_rx *rx, uint64_t pn)
{
	unsigned int i;

	for (i = 0; i < DPQ_FEC_RX_GROUPS; i++) {
		struct dpq_fec_rx_group *g = &rx->g[i];

		if (g->used && pn >= g->first && pn - g->first < g->size)
			return g;
	}
	return NULL;
}

/* A slot for a new group: a free one, else the oldest (whose group is
 * then unrecoverable if its REPAIR did not rebuild it). */
static struct dpq_fec_rx_group *
group_new(struct dpq_fec_rx *rx, uint64_t first, uint32_t size)
{
	struct dpq_fec_rx_group *g = NULL;
	unsigned int i;

	for (i = 0; i < DPQ_FEC_RX_GROUPS; i++) {
		struct dpq_fec_rx_group *c = &rx->g[i];

		if (!c->used) {
			g = c;
			break;
		}
		if (g == NULL || c->first < g->first)
			g = c;
	}
	if (g->used) {
		if (g->repaired && missing(g) > 1)
			rx->stats.unrecoverable++;
		group_free(g);
	}
	if (g->acc == NULL) {
		g->acc = dpq_mem_alloc(&rx->mem, rx->cap);
		if (g->acc == NULL)
			return NULL;
		memset(g->acc, 0, rx->cap);
	}
	g->first = first;
	g->size = size;
	g->have = 0;
	g->max_len = 0;
	g->len_xor = 0;
	g->used = true;
	g->predicted = false;
	g->repaired = false;
	g->broken = false;
	return g;
}

/* Keep report[] ascending and without duplicates (RECOVERED lists
 * strictly descending packet numbers). */
static void
report_add(struct dpq_fec_rx *rx, uint64_t pn)
{
	unsigned int i;

	if (rx->nreport == DPQ_FEC_RX_REPORT) {
		/* Drop the oldest: the most likely to be acknowledged
		 * already, so its report matters least. */
		memmove(rx->report, rx->report + 1,
				(DPQ_FEC_RX_REPORT - 1) * sizeof(rx->report[0]));
		rx->nreport--;
	}
	i = rx->nreport;
	while (i > 0 && rx->report[i - 1] > pn)
		i--;
	if (i > 0 && rx->report[i - 1] == pn)
		return;
	memmove(rx->report + i + 1, rx->report + i,
			(rx->nreport - i) * sizeof(rx->report[0]));
	rx->report[i] = pn;
	rx->nreport++;
}

/* Rebuild the one missing member of a repaired group, if it checks. */
static void
try_recover(struct dpq_fec_rx *rx, struct dpq_fec_rx_group *g)
{
	unsigned int idx;
	uint32_t len, i;
	uint64_t pn;

	if (!g->repaired || missing(g) != 1)
		return;
	idx = (unsigned int)__builtin_ctzll(~g->have);
	pn = g->first + idx;
	len = g->len_xor;
	/* What the XOR left past the member's length must be the zeros it
	 * was padded with; anything else means the group was not what we
	 * accumulated (e.g. a wrong prediction): do not use it. */
	if (len == 0 || len > g->max_len) {
		rx->stats.unrecoverable++;
		group_free(g);
		return;
	}
	for (i = len; i < g->max_len; i++)
		if (g->acc[i] != 0) {
			rx->stats.unrecoverable++;
			group_free(g);
			return;
		}
	g->have |= UINT64_C(1) << idx;
	rx->stats.recovered++;
	report_add(rx, pn);
	/* The slot is freed after the callback: the payload lives in it. */
	rx->in_recovery = true;
	if (rx->on_recovered != NULL)
		rx->on_recovered(rx->ctx, pn, g->acc, len);
	rx->in_recovery = false;
	group_free(g);
}

/* The group pn falls in, opening a predicted one after the newest group
 * if its announcement (the newest group's REPAIR) has not arrived. */
static struct dpq_fec_rx_group *
group_for(struct dpq_fec_rx *rx, uint64_t pn)
{
	struct dpq_fec_rx_group *g = group_of(rx, pn), *newest = NULL;
	uint64_t first;
	unsigned int i;

	if (g != NULL)
		return g;
	for (i = 0; i < DPQ_FEC_RX_GROUPS; i++)
		if (rx->g[i].used &&
		    (newest == NULL || rx->g[i].first > newest->first))
			newest = &rx->g[i];
	/* Predict only from an announced group whose REPAIR is missing:
	 * the next group starts after one repair packet, same size. */
	if (newest == NULL || newest->predicted || newest->repaired)
		return NULL;
	first = newest->first + newest->size + 1;
	if (pn < first || pn - first >= newest->size)
		return NULL;
	g = group_new(rx, first, newest->size);
	if (g != NULL) {
		g->predicted = true;
		rx->stats.predicted++;
	}
	return g;
}

void
dpq_fec_rx_flush(struct dpq_fec_rx *rx)
{
	const uint8_t *src[DPQ_FEC_RX_QUEUE];
	uint16_t len[DPQ_FEC_RX_QUEUE];
	unsigned int i, j, n = rx->nq;

	rx->nq = 0;
	for (i = 0; i < n; i++) {
		struct dpq_fec_rx_item *it = &rx->q[i];
		struct dpq_fec_rx_group *g;
		uint64_t bit;
		unsigned int m = 0;

		if (it->payload == NULL)
			continue;	/* taken by an earlier run */
		g = group_for(rx, it->pn);
		if (g == NULL)
			continue;
		/* This item and the later ones of the same group, in one
		 * XOR pass over the group's accumulator. */
		for (j = i; j < n; j++) {
			struct dpq_fec_rx_item *x = &rx->q[j];

			if (x->payload == NULL || x->pn < g->first ||
			    x->pn - g->first >= g->size)
				continue;
			bit = UINT64_C(1) << (x->pn - g->first);
			if (!(g->have & bit)) {
				g->have |= bit;
				if (x->len > rx->cap) {
					g->broken = true;
				} else {
					g->len_xor ^= x->len;
					if (x->len > g->max_len)
						g->max_len = x->len;
					src[m] = x->payload;
					len[m++] = x->len;
				}
			}
			x->payload = NULL;
		}
		dpq_xor_burst(g->acc, src, len, m);
		if (g->broken)
			group_free(g);
		else
			try_recover(rx, g);
	}
}

void
dpq_fec_rx_on_packet(struct dpq_fec_rx *rx, uint64_t pn,
		const uint8_t *payload, size_t len)
{
	struct dpq_fec_rx_item *it;

	if (rx->in_recovery || len == 0)
		return;		/* a rebuilt packet is already counted */
	if (rx->nq == DPQ_FEC_RX_QUEUE)
		dpq_fec_rx_flush(rx);
	it = &rx->q[rx->nq++];
	it->pn = pn;
	it->payload = payload;
	it->len = len > UINT16_MAX ? UINT16_MAX : (uint16_t)len;
}

/* Apply a REPAIR to the group it names. */
static void
apply_repair(struct dpq_fec_rx *rx, const struct dpq_fec_repair *r)
{
	struct dpq_fec_rx_group *g = group_find(rx, r->first_pn);

	rx->stats.repairs++;
	/* The group must be what we accumulated: no member past the
	 * repair's size (a group may end early, never late). */
	if (g == NULL || g->repaired || r->size > g->size ||
	    (r->size < 64 && (g->have >> r->size) != 0) ||
	    r->data_len > rx->cap) {
		if (g == NULL || g->repaired)
			rx->stats.unknown++;
		else {
			rx->stats.unrecoverable++;
			group_free(g);
		}
		return;
	}
	g->size = (uint32_t)r->size;
	g->predicted = false;
	if (missing(g) == 0) {
		rx->stats.complete++;
		group_free(g);
		return;
	}
	dpq_xor_into(g->acc, r->data, r->data_len);
	if (r->data_len > g->max_len)
		g->max_len = (uint32_t)r->data_len;
	g->len_xor ^= (uint32_t)r->len_xor;
	g->repaired = true;
	try_recover(rx, g);
}

int
dpq_fec_rx_on_repair(struct dpq_fec_rx *rx, const struct dpq_fec_repair *r)
{
	struct dpq_fec_rx_group *g;
	uint64_t next;

	if (rx->in_recovery)
		return 0;	/* never nested (docs/fec.md §7) */
	dpq_fec_rx_flush(rx);
	if (r->size > 0)
		apply_repair(rx, r);
	if (r->next_size == 0)
		return 0;
	next = r->first_pn + r->size + r->next_delta;
	g = group_find(rx, next);
	if (g != NULL) {
		/* Predicted right, or announced twice (a duplicate): keep
		 * what it holds if it fits the announced size. */
		if (r->next_size < 64 && (g->have >> r->next_size) != 0) {
			group_free(g);
			g = NULL;
		} else {
			g->size = (uint32_t)r->next_size;
			g->predicted = false;
			return 0;
		}
	}
	/* A group overlapping the announced one was mispredicted. */
	while ((g = group_of(rx, next)) != NULL)
		group_free(g);
	g = group_new(rx, next, (uint32_t)r->next_size);
	return g == NULL ? -ENOMEM : 0;
}

size_t
dpq_fec_rx_take_report(struct dpq_fec_rx *rx, uint64_t *pn, size_t max)
{
	size_t n = rx->nreport < max ? rx->nreport : max, i;

	/* Largest first; the ones not taken stay for the next frame. */
	for (i = 0; i < n; i++)
		pn[i] = rx->report[rx->nreport - 1 - i];
	rx->nreport -= (unsigned int)n;
	return n;
}
