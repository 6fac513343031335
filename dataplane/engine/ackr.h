/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ackr.h: the receive side of acknowledgments for one packet number
 * space (RFC 9000 §13.2): which packet numbers arrived, duplicate
 * detection (§12.3), when an ACK frame is due, and what goes in it.
 *
 * Received packet numbers are kept as disjoint ranges above a floor, in
 * an array the owner provides (DPQ_ACKR_MAX_RANGES for a space in use;
 * dpq_ackr_move() puts them in a smaller one while the space is idle, so
 * an idle connection does not hold a kilobyte of empty ranges). Everything below the floor counts as
 * already received: §13.2.3 lets a receiver drop old ranges if it keeps
 * "a minimum packet number that increases as ranges are discarded", so a
 * packet below it is treated as a duplicate and dropped (its sender will
 * have declared it lost long ago). The floor rises when the range array
 * is full (the lowest range goes) and when the peer acknowledges one of
 * our ACK frames (§13.2.4).
 *
 * Use per received packet, after it decrypted:
 *   if (dpq_ackr_is_duplicate(a, pn)) drop it (RFC 9000 §12.3);
 *   process its frames, then dpq_ackr_record(a, pn, ack_eliciting, ecn, now);
 * and per packet sent, if dpq_ackr_ack_due(a, now) (or one is being sent
 * anyway and dpq_ackr_has_new(a)), write an ACK from dpq_ackr_ranges() and
 * dpq_ackr_ack_delay(), then call dpq_ackr_on_ack_sent(). Arm a timer at
 * dpq_ackr_deadline(). Times are in microseconds. One thread.
 */
#ifndef DPQ_ENGINE_ACKR_H
#define DPQ_ENGINE_ACKR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/frame.h"

/* Ranges remembered (and so at most reported) per packet number space. */
#define DPQ_ACKR_MAX_RANGES	64
/* RFC 9000 §13.2.2: ACK after this many ack-eliciting packets. */
#define DPQ_ACKR_ACK_ELICITING_THRESHOLD 2
/* No deadline. */
#define DPQ_ACKR_NO_DEADLINE	UINT64_MAX

/* ECN codepoint of a received packet's IP header (RFC 3168 §5). */
enum dpq_ecn {
	DPQ_ECN_NOT_ECT	= 0,
	DPQ_ECN_ECT1	= 1,
	DPQ_ECN_ECT0	= 2,
	DPQ_ECN_CE	= 3,
};

struct dpq_ackr {
	/* Ascending, disjoint and non-adjacent: r[i].largest + 1 <
	 * r[i + 1].smallest. All >= floor. */
	struct dpq_ack_range *r;	/* cap entries, the owner's */
	uint32_t n;
	uint32_t cap;
	uint32_t eliciting_unacked;	/* since the last ACK sent */
	uint64_t floor;		/* pn below this count as received */
	uint64_t largest;	/* largest pn received; DPQ_PN_NONE */
	uint64_t largest_time;	/* when largest arrived (us) */
	uint64_t largest_eliciting; /* largest ack-eliciting pn; DPQ_PN_NONE */
	uint64_t max_ack_delay;	/* ours (us); 0 = acknowledge at once */
	uint64_t deadline;	/* ACK due at; DPQ_ACKR_NO_DEADLINE */
	struct dpq_ecn_counts ecn;	/* RFC 9000 §13.4.1 */
	bool ecn_seen;		/* any ECT or CE packet: send ACK_ECN */
	bool has_new;		/* a pn arrived since the last ACK sent */
};

/*
 * max_ack_delay is our own (the transport parameter we sent, in us) for
 * the application space; pass 0 for Initial and Handshake, which RFC 9000
 * §13.2.1 says to acknowledge immediately.
 */
void dpq_ackr_init(struct dpq_ackr *a, uint64_t max_ack_delay,
		struct dpq_ack_range *r, uint32_t cap);

/* Keep the ranges in r (cap >= 1 entries) from now on; if they do not
 * fit, the lowest are forgotten and the floor rises past them, as when
 * the array fills (§13.2.3). The old array is the caller's again. */
void dpq_ackr_move(struct dpq_ackr *a, struct dpq_ack_range *r, uint32_t cap);

/* RFC 9000 §12.3: was pn already received (or is it below the floor)? */
bool dpq_ackr_is_duplicate(const struct dpq_ackr *a, uint64_t pn);

/*
 * Record a received, processed packet. ack_eliciting: it held an
 * ack-eliciting frame (§13.2); ecn: its IP ECN codepoint. Updates the
 * ACK schedule:
 *   - immediately (deadline = now) if it is ack-eliciting and out of
 *     order (below the largest ack-eliciting pn) or leaves a gap above
 *     it (§13.2.1), if it is CE-marked (§13.2.1), if the space has no
 *     max_ack_delay, or once DPQ_ACKR_ACK_ELICITING_THRESHOLD
 *     ack-eliciting packets are unacknowledged (§13.2.2);
 *   - else, for an ack-eliciting packet, within max_ack_delay;
 *   - a non-ack-eliciting packet never makes an ACK due (§13.2.1).
 * Returns 0, -EALREADY for a duplicate (nothing changes), or -EINVAL if
 * pn > 2^62-1.
 */
int dpq_ackr_record(struct dpq_ackr *a, uint64_t pn, bool ack_eliciting,
		enum dpq_ecn ecn, uint64_t now);

/* Time by which an ACK must be sent (<= now when due at once), or
 * DPQ_ACKR_NO_DEADLINE. */
static inline uint64_t
dpq_ackr_deadline(const struct dpq_ackr *a)
{
	return a->deadline;
}

static inline bool
dpq_ackr_ack_due(const struct dpq_ackr *a, uint64_t now)
{
	return a->deadline != DPQ_ACKR_NO_DEADLINE && now >= a->deadline;
}

/* Something arrived since the last ACK: worth adding an ACK frame to a
 * packet that is sent anyway (§13.2). */
static inline bool
dpq_ackr_has_new(const struct dpq_ackr *a)
{
	return a->has_new && a->n != 0;
}

/* Largest pn received, DPQ_PN_NONE if none: the base for packet number
 * decoding, kept even when all ranges are gone (§13.2.3). */
static inline uint64_t
dpq_ackr_largest(const struct dpq_ackr *a)
{
	return a->largest;
}

/*
 * Copy up to max ranges, largest first, into out (the form
 * dpq_frame_encode_ack() takes): if there are more, the oldest are left
 * out (§13.2.3). Returns the count; 0 if there is nothing to acknowledge.
 */
size_t dpq_ackr_ranges(const struct dpq_ackr *a, struct dpq_ack_range *out,
		size_t max);

/*
 * ACK Delay field for an ACK sent at now: the time since the largest pn
 * arrived, in us, shifted right by exponent (our ack_delay_exponent,
 * RFC 9000 §19.3, §18.2). Saturates at 2^62-1.
 */
uint64_t dpq_ackr_ack_delay(const struct dpq_ackr *a, uint64_t now,
		unsigned int exponent);

/* ECN counts for ACK_ECN, or NULL if no ECT/CE packet arrived (send a
 * plain ACK then). */
static inline const struct dpq_ecn_counts *
dpq_ackr_ecn(const struct dpq_ackr *a)
{
	return a->ecn_seen ? &a->ecn : NULL;
}

/* An ACK frame was sent: clears the schedule until the next packet. */
void dpq_ackr_on_ack_sent(struct dpq_ackr *a);

/*
 * The peer acknowledged a packet that carried our ACK frame whose
 * Largest Acknowledged was largest: stop acknowledging packets <= largest
 * (RFC 9000 §13.2.4). The floor rises to largest + 1.
 */
void dpq_ackr_on_ack_acked(struct dpq_ackr *a, uint64_t largest);

#endif /* DPQ_ENGINE_ACKR_H */
