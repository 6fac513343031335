/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentmap.c: sent packets of one packet number space in blocks of slots.
 *
 * A block is a run of 32-byte slots filled front to back; a packet is a
 * header (DPQ_SENT_HDR_SLOTS slots) and its records. Removing a packet
 * marks its header dead and lowers the block's live count; a block whose
 * live count reaches zero is unlinked (or, if it is the tail, rewound)
 * and kept as a spare or freed. Walks skip dead headers using nrec, so
 * records are never read as headers.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/sentmap.h"

/* RFC 9000 §12.3: largest packet number. */
#define SENTMAP_PN_MAX	((UINT64_C(1) << 62) - 1)
#define SENTMAP_PN_NONE	UINT64_MAX

/* dpq_sent_pkt.state */
#define SLOT_LIVE	1
#define SLOT_DEAD	2

struct dpq_sentmap_block {
	struct dpq_sentmap_block *next;
	struct dpq_sentmap_block *prev;
	uint32_t used;		/* slots written */
	uint32_t live;		/* live packets in this block */
	union dpq_sent_slot slots[DPQ_SENTMAP_BLOCK_SLOTS];
};

/* The header starting at slot s of block b. */
static inline struct dpq_sent_pkt *
hdr_at(struct dpq_sentmap_block *b, uint32_t s)
{
	return (struct dpq_sent_pkt *)(void *)&b->slots[s];
}

int
dpq_sentmap_init(struct dpq_sentmap *sm, const struct dpq_mem *mem,
		uint32_t max_packets)
{
	if (mem == NULL || mem->alloc == NULL || mem->free == NULL)
		return -EINVAL;
	memset(sm, 0, sizeof(*sm));
	sm->mem = *mem;
	sm->max_packets = max_packets != 0 ? max_packets :
		DPQ_SENTMAP_DEFAULT_MAX_PACKETS;
	sm->largest_pn = SENTMAP_PN_NONE;
	return 0;
}

/* Put an unlinked block on the spare list, or free it if there are
 * enough spares. */
static void
block_release(struct dpq_sentmap *sm, struct dpq_sentmap_block *b)
{
	if (sm->nspare < DPQ_SENTMAP_SPARE_BLOCKS) {
		b->next = sm->spare;
		sm->spare = b;
		sm->nspare++;
	} else {
		dpq_mem_free(&sm->mem, b);
	}
}

static void
block_unlink(struct dpq_sentmap *sm, struct dpq_sentmap_block *b)
{
	if (b->prev != NULL)
		b->prev->next = b->next;
	else
		sm->head = b->next;
	if (b->next != NULL)
		b->next->prev = b->prev;
	else
		sm->tail = b->prev;
	sm->nblocks--;
}

void
dpq_sentmap_clear(struct dpq_sentmap *sm)
{
	struct dpq_sentmap_block *b, *next;

	for (b = sm->head; b != NULL; b = next) {
		next = b->next;
		block_release(sm, b);
	}
	sm->head = sm->tail = NULL;
	sm->nblocks = 0;
	sm->count = 0;
}

void
dpq_sentmap_destroy(struct dpq_sentmap *sm)
{
	struct dpq_sentmap_block *b, *next;

	dpq_sentmap_clear(sm);
	for (b = sm->spare; b != NULL; b = next) {
		next = b->next;
		dpq_mem_free(&sm->mem, b);
	}
	sm->spare = NULL;
	sm->nspare = 0;
}

void
dpq_sentmap_trim(struct dpq_sentmap *sm)
{
	struct dpq_sentmap_block *b, *next;

	for (b = sm->spare; b != NULL; b = next) {
		next = b->next;
		dpq_mem_free(&sm->mem, b);
	}
	sm->spare = NULL;
	sm->nspare = 0;
	if (sm->count != 0)
		return;
	for (b = sm->head; b != NULL; b = next) {
		next = b->next;
		dpq_mem_free(&sm->mem, b);
	}
	sm->head = sm->tail = NULL;
	sm->nblocks = 0;
}

/* A block with room for need slots at the tail, linking a new one if
 * the tail is full; NULL if the allocator fails. */
static struct dpq_sentmap_block *
tail_with_room(struct dpq_sentmap *sm, uint32_t need)
{
	struct dpq_sentmap_block *b = sm->tail;

	if (b != NULL && b->used + need <= DPQ_SENTMAP_BLOCK_SLOTS)
		return b;
	if (sm->spare != NULL) {
		b = sm->spare;
		sm->spare = b->next;
		sm->nspare--;
	} else {
		b = dpq_mem_alloc(&sm->mem, sizeof(*b));
		if (b == NULL)
			return NULL;
	}
	b->used = 0;
	b->live = 0;
	b->next = NULL;
	b->prev = sm->tail;
	if (sm->tail != NULL)
		sm->tail->next = b;
	else
		sm->head = b;
	sm->tail = b;
	sm->nblocks++;
	return b;
}

int
dpq_sentmap_append(struct dpq_sentmap *sm, const struct dpq_sent_pkt *pkt,
		const struct dpq_sent_rec *recs, size_t nrec)
{
	struct dpq_sentmap_block *b;
	struct dpq_sent_pkt *h;

	if (pkt->pn > SENTMAP_PN_MAX ||
	    (sm->largest_pn != SENTMAP_PN_NONE && pkt->pn <= sm->largest_pn) ||
	    (recs == NULL && nrec != 0))
		return -EINVAL;
	if (nrec > DPQ_SENTMAP_MAX_RECS)
		return -E2BIG;
	if (sm->count >= sm->max_packets)
		return -ENOBUFS;
	b = tail_with_room(sm, DPQ_SENT_HDR_SLOTS + (uint32_t)nrec);
	if (b == NULL)
		return -ENOMEM;

	h = hdr_at(b, b->used);
	*h = *pkt;
	h->flags &= DPQ_SENT_USER_MASK | DPQ_SENT_APP_LIMITED;
	h->nrec = (uint16_t)nrec;
	h->state = SLOT_LIVE;
	if (nrec != 0)
		memcpy(&b->slots[b->used + DPQ_SENT_HDR_SLOTS], recs,
				nrec * sizeof(*recs));
	b->used += DPQ_SENT_HDR_SLOTS + (uint32_t)nrec;
	b->live++;
	sm->count++;
	sm->largest_pn = pkt->pn;
	return 0;
}

/* From (blk, slot), inclusive, the first live header; NULL at the end. */
static struct dpq_sent_pkt *
seek_live(struct dpq_sentmap *sm, struct dpq_sentmap_iter *it)
{
	struct dpq_sentmap_block *b = it->blk;
	uint32_t s = it->slot;

	(void)sm;
	while (b != NULL) {
		while (s < b->used) {
			struct dpq_sent_pkt *h = hdr_at(b, s);

			if (h->state == SLOT_LIVE) {
				it->blk = b;
				it->slot = s;
				return h;
			}
			s += DPQ_SENT_HDR_SLOTS + h->nrec;
		}
		b = b->next;
		s = 0;
	}
	it->blk = NULL;
	it->slot = 0;
	return NULL;
}

struct dpq_sent_pkt *
dpq_sentmap_first(struct dpq_sentmap *sm, struct dpq_sentmap_iter *it)
{
	it->blk = sm->head;
	it->slot = 0;
	return seek_live(sm, it);
}

struct dpq_sent_pkt *
dpq_sentmap_next(struct dpq_sentmap *sm, struct dpq_sentmap_iter *it)
{
	if (it->blk == NULL)
		return NULL;
	it->slot += DPQ_SENT_HDR_SLOTS + hdr_at(it->blk, it->slot)->nrec;
	return seek_live(sm, it);
}

struct dpq_sent_pkt *
dpq_sentmap_remove(struct dpq_sentmap *sm, struct dpq_sentmap_iter *it)
{
	struct dpq_sentmap_block *b = it->blk;
	struct dpq_sent_pkt *h, *next;

	if (b == NULL)
		return NULL;
	h = hdr_at(b, it->slot);
	h->state = SLOT_DEAD;
	b->live--;
	sm->count--;
	/* Move on first: the block may go away below, and it has no live
	 * packet left to return to if it does. */
	next = dpq_sentmap_next(sm, it);
	if (b->live == 0) {
		if (b == sm->tail) {
			b->used = 0;	/* rewind in place, appends reuse it */
		} else {
			block_unlink(sm, b);
			block_release(sm, b);
		}
	}
	return next;
}
