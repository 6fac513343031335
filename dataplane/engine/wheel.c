/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wheel.c: the hierarchical timing wheel of wheel.h.
 *
 * Invariant: a timer at level L, slot s has an expiry tick E that agrees
 * with w->tick (C) in every 6-bit group above L and has s = group L of E >
 * group L of C. So the slot is reached exactly when C becomes (the groups
 * above L, s, zeros below): its timers are then re-inserted, now at lower
 * levels, or fired when E == C. Advancing jumps from one such point to the
 * next, found in the bitmaps.
 */
#include <stddef.h>

#include "dataplane/engine/wheel.h"

#define MASK	(DPQ_WHEEL_SLOTS - 1)

static void
list_init(struct dpq_wheel_link *h)
{
	h->next = h->prev = h;
}

static void
list_add_tail(struct dpq_wheel_link *h, struct dpq_wheel_link *l)
{
	l->prev = h->prev;
	l->next = h;
	h->prev->next = l;
	h->prev = l;
}

/* Move all of from to an empty to (a local list head). */
static void
list_splice(struct dpq_wheel_link *from, struct dpq_wheel_link *to)
{
	if (from->next == from) {
		list_init(to);
		return;
	}
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	list_init(from);
}

/* Slot index of a link if it is a slot head, else -1. */
static long
slot_of(const struct dpq_wheel *w, const struct dpq_wheel_link *l)
{
	uintptr_t off = (uintptr_t)l - (uintptr_t)&w->slot[0][0];

	if (off >= sizeof(w->slot) || off % sizeof(w->slot[0][0]) != 0)
		return -1;
	return (long)(off / sizeof(w->slot[0][0]));
}

static void
unlink_node(struct dpq_wheel *w, struct dpq_wheel_node *n)
{
	struct dpq_wheel_link *prev = n->link.prev;
	long s;

	prev->next = n->link.next;
	n->link.next->prev = prev;
	n->link.next = n->link.prev = NULL;
	w->armed--;
	/* The last timer of a slot leaves: clear its bit. */
	if (prev->next == prev && (s = slot_of(w, prev)) >= 0)
		w->bitmap[s / DPQ_WHEEL_SLOTS] &=
			~(UINT64_C(1) << (s % DPQ_WHEEL_SLOTS));
}

/* Expiry tick: rounded up, so a timer never fires before its time. */
static uint64_t
expire_tick(const struct dpq_wheel *w, uint64_t expire)
{
	uint64_t t = expire >> w->tick_shift;

	return (expire & ((UINT64_C(1) << w->tick_shift) - 1)) ? t + 1 : t;
}

/* C with group `level` set to s and every lower group zero. */
static uint64_t
slot_tick(uint64_t c, unsigned int level, unsigned int s)
{
	unsigned int shift = level * DPQ_WHEEL_BITS;
	uint64_t high = shift + DPQ_WHEEL_BITS >= 64 ? 0 :
		c >> (shift + DPQ_WHEEL_BITS) << (shift + DPQ_WHEEL_BITS);

	return high | (uint64_t)s << shift;
}

/* Put n where E (its tick) belongs relative to C; E <= C goes to `late`
 * (the due list, or the caller's list of timers firing now). */
static void
insert(struct dpq_wheel *w, struct dpq_wheel_node *n, uint64_t e,
		struct dpq_wheel_link *late)
{
	unsigned int level, s;

	w->armed++;
	if (e <= w->tick) {
		list_add_tail(late, &n->link);
		return;
	}
	/* The highest 6-bit group in which E and C differ. */
	level = (63u - (unsigned int)__builtin_clzll(e ^ w->tick)) /
		DPQ_WHEEL_BITS;
	s = (unsigned int)(e >> (level * DPQ_WHEEL_BITS)) & MASK;
	list_add_tail(&w->slot[level][s], &n->link);
	w->bitmap[level] |= UINT64_C(1) << s;
	if (w->horizon > slot_tick(w->tick, level, s))
		w->horizon = slot_tick(w->tick, level, s);
}

void
dpq_wheel_init(struct dpq_wheel *w, uint64_t now, unsigned int tick_shift)
{
	unsigned int l, s;

	w->tick_shift = tick_shift > 20 ? 20 : tick_shift;
	w->tick = now >> w->tick_shift;
	w->armed = 0;
	w->horizon = UINT64_MAX;
	list_init(&w->due);
	for (l = 0; l < DPQ_WHEEL_LEVELS; l++) {
		w->bitmap[l] = 0;
		for (s = 0; s < DPQ_WHEEL_SLOTS; s++)
			list_init(&w->slot[l][s]);
	}
}

void
dpq_wheel_arm(struct dpq_wheel *w, struct dpq_wheel_node *n, uint64_t expire)
{
	if (dpq_wheel_armed(n))
		unlink_node(w, n);
	n->expire = expire;
	if (expire == DPQ_WHEEL_NEVER)
		return;
	insert(w, n, expire_tick(w, expire), &w->due);
}

/* The next tick after C at which a slot is reached, or UINT64_MAX. */
static uint64_t
next_tick(const struct dpq_wheel *w)
{
	uint64_t best = UINT64_MAX;
	unsigned int l;

	for (l = 0; l < DPQ_WHEEL_LEVELS; l++) {
		unsigned int g = (unsigned int)(w->tick >>
				(l * DPQ_WHEEL_BITS)) & MASK;
		/* Slots after g (2 << 63 wraps to 0: none after 63). */
		uint64_t m = w->bitmap[l] & ~((UINT64_C(2) << g) - 1);
		uint64_t t;

		if (m == 0)
			continue;
		t = slot_tick(w->tick, l, (unsigned int)__builtin_ctzll(m));
		if (t < best)
			best = t;
	}
	return best;
}

static unsigned int
fire_list(struct dpq_wheel *w, struct dpq_wheel_link *h,
		dpq_wheel_fire_fn fire, void *arg)
{
	unsigned int n = 0;

	/* The callback may cancel timers still on h: take one at a time. */
	while (h->next != h) {
		struct dpq_wheel_node *t = (struct dpq_wheel_node *)h->next;

		unlink_node(w, t);
		n++;
		fire(arg, t);
	}
	return n;
}

unsigned int
dpq_wheel_advance(struct dpq_wheel *w, uint64_t now, dpq_wheel_fire_fn fire,
		void *arg)
{
	uint64_t target = now >> w->tick_shift;
	struct dpq_wheel_link expired, moving;
	unsigned int fired = 0;
	int l;

	/* Armed at or before the last advance: due now. */
	list_splice(&w->due, &expired);
	fired += fire_list(w, &expired, fire, arg);
	/* Nothing to reach yet: w->tick may lag behind now, harmless (a
	 * timer armed meanwhile lands in a slot instead of the due list
	 * and fires in the next advance that reaches it). */
	if (target < w->horizon)
		return fired;

	while (w->tick < target) {
		uint64_t next = next_tick(w);

		if (next > target) {
			w->tick = target;
			w->horizon = next;
			break;
		}
		w->tick = next;
		list_init(&expired);
		/* Higher levels first: their timers may land in a lower
		 * slot reached at this same tick. */
		for (l = DPQ_WHEEL_LEVELS - 1; l >= 0; l--) {
			unsigned int shift = (unsigned int)l * DPQ_WHEEL_BITS;
			unsigned int s;

			if (l > 0 && (next & ((UINT64_C(1) << shift) - 1)))
				continue;	/* not a boundary of level l */
			s = (unsigned int)(next >> shift) & MASK;
			if (!(w->bitmap[l] & (UINT64_C(1) << s)))
				continue;
			w->bitmap[l] &= ~(UINT64_C(1) << s);
			list_splice(&w->slot[l][s], &moving);
			while (moving.next != &moving) {
				struct dpq_wheel_node *t =
					(struct dpq_wheel_node *)moving.next;

				unlink_node(w, t);
				insert(w, t, expire_tick(w, t->expire),
						&expired);
			}
		}
		fired += fire_list(w, &expired, fire, arg);
	}
	return fired;
}

uint64_t
dpq_wheel_next_event(const struct dpq_wheel *w)
{
	uint64_t t;

	if (w->armed == 0)
		return DPQ_WHEEL_NEVER;
	if (w->due.next != &w->due)
		return w->tick << w->tick_shift;
	t = next_tick(w);
	if (t == UINT64_MAX || t > (UINT64_MAX >> w->tick_shift))
		return DPQ_WHEEL_NEVER;
	return t << w->tick_shift;
}
