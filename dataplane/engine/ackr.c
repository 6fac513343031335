/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ackr.c: received packet numbers of one space and the ACK schedule
 * (RFC 9000 §13.2). Ranges are kept ascending in the owner's array: new
 * packets usually extend the top range, so the common insert touches the
 * last element; a new gap appends; only reordering deep in the past or
 * eviction moves elements (at most the array's capacity).
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/ackr.h"

void
dpq_ackr_init(struct dpq_ackr *a, uint64_t max_ack_delay,
		struct dpq_ack_range *r, uint32_t cap)
{
	memset(a, 0, sizeof(*a));
	a->r = r;
	a->cap = cap;
	a->largest = DPQ_PN_NONE;
	a->largest_eliciting = DPQ_PN_NONE;
	a->max_ack_delay = max_ack_delay;
	a->deadline = DPQ_ACKR_NO_DEADLINE;
}

void
dpq_ackr_move(struct dpq_ackr *a, struct dpq_ack_range *r, uint32_t cap)
{
	uint32_t drop = a->n > cap ? a->n - cap : 0;

	if (drop != 0) {
		a->floor = a->r[drop - 1].largest + 1;
		a->n -= drop;
	}
	memmove(r, &a->r[drop], a->n * sizeof(*r));
	a->r = r;
	a->cap = cap;
}

/* Index of the highest range whose smallest is <= pn, or -1. */
static int
range_at_or_below(const struct dpq_ackr *a, uint64_t pn)
{
	int i;

	for (i = (int)a->n - 1; i >= 0; i--)
		if (a->r[i].smallest <= pn)
			return i;
	return -1;
}

bool
dpq_ackr_is_duplicate(const struct dpq_ackr *a, uint64_t pn)
{
	int i;

	if (pn < a->floor)
		return true;
	i = range_at_or_below(a, pn);
	return i >= 0 && pn <= a->r[i].largest;
}

static void
remove_range(struct dpq_ackr *a, uint32_t i)
{
	memmove(&a->r[i], &a->r[i + 1], (a->n - i - 1) * sizeof(a->r[0]));
	a->n--;
}

/* Insert [pn, pn] as a new range at index pos, evicting the lowest range
 * when the array is full (§13.2.3) and raising the floor past it. */
static void
insert_range(struct dpq_ackr *a, uint32_t pos, uint64_t pn)
{
	if (a->n >= a->cap) {
		if (pos == 0) {
			/* The new range would be the lowest of all: it is the
			 * one to forget. The packet was processed; it is
			 * simply never acknowledged. */
			a->floor = pn + 1;
			return;
		}
		a->floor = a->r[0].largest + 1;
		remove_range(a, 0);
		pos--;
	}
	memmove(&a->r[pos + 1], &a->r[pos], (a->n - pos) * sizeof(a->r[0]));
	a->r[pos].smallest = pn;
	a->r[pos].largest = pn;
	a->n++;
}

/* Add pn (not a duplicate) to the ranges; returns the smallest pn of the
 * range that now holds it (pn + 1 if it was evicted at once). */
static uint64_t
add_pn(struct dpq_ackr *a, uint64_t pn)
{
	int i = range_at_or_below(a, pn);
	uint32_t up = (uint32_t)(i + 1);	/* range above pn, if < n */

	if (i >= 0 && a->r[i].largest + 1 == pn) {
		a->r[i].largest = pn;
		if (up < a->n && a->r[up].smallest == pn + 1) {
			a->r[i].largest = a->r[up].largest;
			remove_range(a, up);
		}
		return a->r[i].smallest;
	}
	if (up < a->n && a->r[up].smallest == pn + 1) {
		a->r[up].smallest = pn;
		return pn;
	}
	insert_range(a, up, pn);
	return pn < a->floor ? pn + 1 : pn;
}

int
dpq_ackr_record(struct dpq_ackr *a, uint64_t pn, bool ack_eliciting,
		enum dpq_ecn ecn, uint64_t now)
{
	uint64_t lo, run_start;
	bool now_due = false;

	if (pn > DPQ_PN_MAX)
		return -EINVAL;
	if (dpq_ackr_is_duplicate(a, pn))
		return -EALREADY;

	run_start = add_pn(a, pn);
	if (a->largest == DPQ_PN_NONE || pn > a->largest) {
		a->largest = pn;
		a->largest_time = now;
	}
	a->has_new = true;

	/* §13.4.1: count each processed packet's ECN codepoint. */
	switch (ecn) {
	case DPQ_ECN_ECT0:
		a->ecn.ect0++;
		a->ecn_seen = true;
		break;
	case DPQ_ECN_ECT1:
		a->ecn.ect1++;
		a->ecn_seen = true;
		break;
	case DPQ_ECN_CE:
		a->ecn.ce++;
		a->ecn_seen = true;
		now_due = true;		/* §13.2.1: CE is acked at once */
		break;
	default:
		break;
	}

	if (!ack_eliciting) {
		/* §13.2.1: never ACK only because of a non-ack-eliciting
		 * packet, but a CE mark still speeds up a pending ACK. */
		if (now_due && a->deadline != DPQ_ACKR_NO_DEADLINE &&
		    a->deadline > now)
			a->deadline = now;
		return 0;
	}

	if (a->max_ack_delay == 0)
		now_due = true;		/* Initial, Handshake: §13.2.1 */
	if (a->largest_eliciting != DPQ_PN_NONE) {
		if (pn < a->largest_eliciting) {
			now_due = true;	/* §13.2.1: out of order */
		} else {
			/* §13.2.1: missing packets between the largest
			 * ack-eliciting one and this one. */
			lo = a->largest_eliciting + 1;
			if (lo < a->floor)
				lo = a->floor;
			if (run_start > lo)
				now_due = true;
		}
	}
	if (a->largest_eliciting == DPQ_PN_NONE || pn > a->largest_eliciting)
		a->largest_eliciting = pn;
	if (++a->eliciting_unacked >= DPQ_ACKR_ACK_ELICITING_THRESHOLD)
		now_due = true;		/* §13.2.2 */

	if (now_due) {
		if (a->deadline > now)
			a->deadline = now;
	} else if (a->deadline == DPQ_ACKR_NO_DEADLINE) {
		a->deadline = now + a->max_ack_delay;
	}
	return 0;
}

size_t
dpq_ackr_ranges(const struct dpq_ackr *a, struct dpq_ack_range *out,
		size_t max)
{
	size_t k;

	for (k = 0; k < max && k < a->n; k++)
		out[k] = a->r[a->n - 1 - k];
	return k;
}

uint64_t
dpq_ackr_ack_delay(const struct dpq_ackr *a, uint64_t now,
		unsigned int exponent)
{
	uint64_t d;

	if (a->largest == DPQ_PN_NONE || now <= a->largest_time ||
	    exponent >= 64)
		return 0;
	d = (now - a->largest_time) >> exponent;
	return d > DPQ_VARINT_MAX ? DPQ_VARINT_MAX : d;
}

void
dpq_ackr_on_ack_sent(struct dpq_ackr *a)
{
	a->deadline = DPQ_ACKR_NO_DEADLINE;
	a->eliciting_unacked = 0;
	a->has_new = false;
}

void
dpq_ackr_on_ack_acked(struct dpq_ackr *a, uint64_t largest)
{
	uint32_t drop = 0;

	if (largest > DPQ_PN_MAX || largest < a->floor)
		return;
	a->floor = largest + 1;
	while (drop < a->n && a->r[drop].largest < a->floor)
		drop++;
	if (drop != 0) {
		memmove(&a->r[0], &a->r[drop], (a->n - drop) * sizeof(a->r[0]));
		a->n -= drop;
	}
	if (a->n != 0 && a->r[0].smallest < a->floor)
		a->r[0].smallest = a->floor;
}
