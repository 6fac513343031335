/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wheel.h: a hierarchical timing wheel (Varghese and Lauck) for a shard's
 * connection timers.
 *
 * A shard holds one timer per connection, re-armed at the connection's
 * next_timeout after every touch (ACK deadlines, loss and PTO timers, pacing
 * releases, idle timeouts). With 100,000 mostly idle connections the cost
 * must not grow with the idle ones: arming and cancelling are O(1), and
 * advancing costs O(levels) per step plus O(1) per timer that fires or
 * moves down a level; a timer moves down at most once per level, and a
 * 30-second idle timer a handful of times in its life, never once per
 * poll.
 *
 * Why not DPDK's rte_timer: it reads the TSC itself (the protocol engine's
 * rule is that time comes from the caller, so tests run in virtual time),
 * it keeps a skiplist (O(log n) arming) of 120-byte timers with atomic
 * status updates meant for timers shared between lcores, which a shard's
 * own connections never are. This wheel is 24 bytes per timer, no atomics,
 * pure C (no DPDK, no clock), and unit-tested against a reference model.
 *
 * Layout: time is counted in ticks of 2^tick_shift microseconds. Level L
 * has 64 slots of 64^L ticks; a timer sits at the level of the highest
 * 6-bit group in which its expiry tick and the wheel's tick differ, and
 * moves down as time approaches it.
 * Eleven levels cover all 64-bit tick values: no overflow list. A bitmap
 * per level finds the next non-empty slot without visiting empty ones, so
 * a long jump in time (a shard that slept, a test's virtual time) costs
 * no more than its events.
 *
 * Semantics: a timer armed at expire (us) fires in the first
 * dpq_wheel_advance() whose now has reached expire rounded up to a tick,
 * never before expire, at most one tick after it. One owner thread.
 */
#ifndef DPQ_ENGINE_WHEEL_H
#define DPQ_ENGINE_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

#define DPQ_WHEEL_BITS		6
#define DPQ_WHEEL_SLOTS		(1u << DPQ_WHEEL_BITS)
#define DPQ_WHEEL_LEVELS	11	/* 11 * 6 >= 64 bits of ticks */
/* Not armed. */
#define DPQ_WHEEL_NEVER		UINT64_MAX

struct dpq_wheel_link {
	struct dpq_wheel_link *next, *prev;
};

/* One timer, embedded in its owner's object (container_of to get back). */
struct dpq_wheel_node {
	struct dpq_wheel_link link;	/* first: a link is its node */
	uint64_t expire;		/* us; DPQ_WHEEL_NEVER: not armed */
};

struct dpq_wheel {
	uint64_t tick;			/* every timer up to it has fired */
	unsigned int tick_shift;	/* tick = 2^tick_shift us */
	uint64_t armed;			/* timers armed */
	/* No slot is reached before this tick: an advance short of it
	 * (most polls) costs a comparison. */
	uint64_t horizon;
	uint64_t bitmap[DPQ_WHEEL_LEVELS];	/* non-empty slots */
	struct dpq_wheel_link due;	/* armed at or before tick */
	struct dpq_wheel_link slot[DPQ_WHEEL_LEVELS][DPQ_WHEEL_SLOTS];
};

/* Called for each timer that fires, unarmed already: it may re-arm it or
 * arm and cancel others (one re-armed at or before the tick being
 * processed fires in the next advance, never in a loop in this one). */
typedef void (*dpq_wheel_fire_fn)(void *arg, struct dpq_wheel_node *n);

/* An empty wheel at now (us) with ticks of 2^tick_shift us (<= 20). */
void dpq_wheel_init(struct dpq_wheel *w, uint64_t now, unsigned int tick_shift);

/* A timer that is not armed (before its first dpq_wheel_arm). */
static inline void
dpq_wheel_node_init(struct dpq_wheel_node *n)
{
	n->link.next = n->link.prev = NULL;
	n->expire = DPQ_WHEEL_NEVER;
}

static inline bool
dpq_wheel_armed(const struct dpq_wheel_node *n)
{
	return n->link.next != NULL;
}

/* (Re-)arm n to fire at expire (us); DPQ_WHEEL_NEVER cancels. O(1). */
void dpq_wheel_arm(struct dpq_wheel *w, struct dpq_wheel_node *n,
		uint64_t expire);

static inline void
dpq_wheel_cancel(struct dpq_wheel *w, struct dpq_wheel_node *n)
{
	dpq_wheel_arm(w, n, DPQ_WHEEL_NEVER);
}

/* Advance to now (us; earlier than the last now: no-op) and fire every
 * timer due. Returns the number fired. */
unsigned int dpq_wheel_advance(struct dpq_wheel *w, uint64_t now,
		dpq_wheel_fire_fn fire, void *arg);

/* A time (us) no later than the earliest time a timer fires (its expiry
 * rounded up to a tick), or DPQ_WHEEL_NEVER when nothing is armed: a
 * caller may sleep until then. */
uint64_t dpq_wheel_next_event(const struct dpq_wheel *w);

#endif /* DPQ_ENGINE_WHEEL_H */
