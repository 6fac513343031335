/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loss.h: loss detection for one connection (RFC 9002 §6, Appendix A):
 * the sent packets of the three packet number spaces, acknowledgment
 * processing, RTT samples, delivery-rate samples (rate.h), packet- and
 * time-threshold loss, the probe timeout and the data its probes carry,
 * persistent congestion, ECN-CE signals, and spurious losses: a packet
 * declared lost stays in the map for a while, and if every loss that
 * started a congestion episode is acknowledged after all, congestion
 * control undoes its reaction and the reordering thresholds grow.
 *
 * The module knows neither the connection nor the wire: the caller
 * passes the ranges of a received ACK frame (largest first), hears about
 * acknowledged and lost packets through callbacks that get each packet's
 * records (to re-queue lost data, RFC 9000 §13.3, or release acked data),
 * and arms one timer at dpq_loss_deadline(). Congestion control gets its
 * events directly through the struct dpq_cc passed to each call (NULL is
 * allowed: then only loss detection runs, e.g. in tests).
 *
 * Every function takes now in microseconds and all durations are in
 * microseconds. One thread (the shard that owns the connection).
 */
#ifndef DPQ_ENGINE_LOSS_H
#define DPQ_ENGINE_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/cc.h"
#include "dataplane/engine/ecn.h"
#include "dataplane/engine/frame.h"
#include "dataplane/engine/mem.h"
#include "dataplane/engine/rate.h"
#include "dataplane/engine/rtt.h"
#include "dataplane/engine/sentmap.h"

/* RFC 9000 §12.3 packet number spaces. */
enum dpq_pn_space {
	DPQ_PN_SPACE_INITIAL	= 0,
	DPQ_PN_SPACE_HANDSHAKE	= 1,
	DPQ_PN_SPACE_APP	= 2,	/* 0-RTT and 1-RTT */
	DPQ_PN_SPACE_COUNT	= 3,
};

/* RFC 9002 §6.1.1: kPacketThreshold (the starting value; spurious
 * losses raise it up to DPQ_LOSS_PACKET_THRESHOLD_MAX). */
#define DPQ_LOSS_PACKET_THRESHOLD	3
#define DPQ_LOSS_PACKET_THRESHOLD_MAX	32
/* RFC 9002 §6.1.2: kTimeThreshold 9/8 (spurious time-threshold losses
 * raise the numerator, one eighth each, up to 2). */
#define DPQ_LOSS_TIME_THRESHOLD_NUM	9
#define DPQ_LOSS_TIME_THRESHOLD_NUM_MAX	16
#define DPQ_LOSS_TIME_THRESHOLD_DEN	8
/* RFC 9002 §7.6.1: kPersistentCongestionThreshold. */
#define DPQ_LOSS_PC_THRESHOLD		3
/* Suggested size of the caller's range array for one ACK frame (ranges
 * past it, the oldest, are ignored: their packets are later declared
 * lost, as if the peer had left them out, RFC 9000 §13.2.3). */
#define DPQ_LOSS_MAX_ACK_RANGES		256
/* No timer armed. */
#define DPQ_LOSS_NO_TIMER		UINT64_MAX

struct dpq_loss_conf {
	bool is_server;
	/* The peer's max_ack_delay in us (RFC 9000 §18.2); until its
	 * transport parameters arrive, the default 25 ms. 0 = default. */
	uint64_t max_ack_delay;
	/* kInitialRtt in us; 0 = DPQ_RTT_INITIAL_DEFAULT (§6.2.2). */
	uint64_t initial_rtt;
	/* Outstanding packets per space; 0 = DPQ_SENTMAP_DEFAULT_MAX_PACKETS. */
	uint32_t max_packets;
	/* Send ECT(0) and validate ECN (RFC 9000 §13.4.2); false: never
	 * mark, ECN counts ignored. */
	bool ecn;
};

struct dpq_loss_space {
	struct dpq_sentmap sent;
	uint64_t largest_acked;		/* DPQ_PN_NONE until an ACK */
	uint64_t largest_sent;		/* DPQ_PN_NONE until a send */
	uint64_t loss_time;		/* §6.1.2; DPQ_LOSS_NO_TIMER */
	uint64_t last_ack_eliciting_time; /* time_of_last_ack_eliciting_packet */
	uint64_t in_flight_bytes;	/* this space's part of the flight */
	uint32_t ack_eliciting_in_flight;
	bool active;			/* keys not discarded (§6.4) */
};

/*
 * Callbacks with a packet and its records (dpq_sent_pkt_recs()), valid
 * only during the call; they must not call back into this struct
 * dpq_loss. Any may be NULL.
 *   on_acked   newly acknowledged: release its data. Also for a packet
 *              declared lost before (flag DPQ_SENT_LOST): the loss was
 *              spurious, the data arrived.
 *   on_lost    declared lost: queue its data again (RFC 9000 §13.3).
 *   on_requeue still in flight, but a probe should carry its data
 *              (dpq_loss_requeue(), RFC 9002 §6.2.4); queue it again
 *              like a loss, without any congestion signal.
 */
struct dpq_loss_cb {
	void (*on_acked)(void *ctx, enum dpq_pn_space space,
			const struct dpq_sent_pkt *pkt);
	void (*on_lost)(void *ctx, enum dpq_pn_space space,
			const struct dpq_sent_pkt *pkt);
	void (*on_requeue)(void *ctx, enum dpq_pn_space space,
			const struct dpq_sent_pkt *pkt);
	void *ctx;
};

/* What one ACK frame did (for stats, qlog and tests). */
struct dpq_loss_ack_info {
	uint32_t packets_acked;
	uint32_t packets_lost;
	uint64_t bytes_acked;		/* in-flight bytes */
	uint64_t bytes_lost;		/* in-flight bytes */
	uint32_t packets_spurious;	/* acked after declared lost */
	bool rtt_sampled;
	bool ecn_ce;			/* CE count rose: congestion event */
	bool persistent_congestion;
	bool undone;			/* spurious episode undone in cc */
};

/* What the caller must do when the loss timer fires (§6.2.4, A.9). */
enum dpq_loss_action {
	DPQ_LOSS_ACT_NONE = 0,	/* early or spurious wake-up: re-arm only */
	DPQ_LOSS_ACT_LOST,	/* time threshold declared packets lost
				 * (reported through on_lost) */
	DPQ_LOSS_ACT_PTO,	/* send one or two ack-eliciting probe
				 * packets in space carrying unacknowledged
				 * CRYPTO data, else new data, else old data
				 * (dpq_loss_requeue()), else PING; and one
				 * in each space of `also`; probes bypass
				 * cwnd (A.9, §6.2.4) */
	DPQ_LOSS_ACT_ANTI_DEADLOCK, /* client (§6.2.2.1): send one
				 * ack-eliciting packet in space: Handshake
				 * if it has the keys, else an Initial padded
				 * to 1200 bytes */
};

struct dpq_loss_timeout {
	enum dpq_loss_action action;
	enum dpq_pn_space space;
	uint32_t probes;	/* packets to send for PTO / anti-deadlock */
	/* PTO: other spaces with ack-eliciting packets in flight, as bits
	 * (1 << space): §6.2.4 says to probe them too, coalesced. */
	uint8_t also;
	struct dpq_loss_ack_info lost;	/* for DPQ_LOSS_ACT_LOST */
};

/* Counters for stats. */
struct dpq_loss_stats {
	uint64_t ptos;			/* probe timeouts fired */
	uint64_t spurious;		/* packets acked after declared lost */
	uint64_t undos;			/* episodes found spurious, undone */
	uint64_t persistent;		/* persistent congestion declared */
	uint64_t requeued;		/* packets whose data a probe resent */
	uint64_t recovered;		/* reported rebuilt by the peer's FEC */
};

struct dpq_loss {
	struct dpq_rtt rtt;
	struct dpq_rate rate;		/* delivery state, all spaces */
	struct dpq_ecnv ecn;		/* ECN validation of the path */
	struct dpq_loss_space sp[DPQ_PN_SPACE_COUNT];
	uint64_t max_ack_delay;		/* peer's, us */
	uint64_t timer;			/* DPQ_LOSS_NO_TIMER */
	uint32_t pto_count;
	uint32_t pkt_threshold;		/* §6.1.1, adaptive */
	uint32_t time_threshold_num;	/* §6.1.2, over ..._DEN */
	uint64_t time_slack;		/* added to the §6.1.2 delay, us */
	/* The current loss episode: the congestion event that started a
	 * recovery period (§7.3.2) and the packets declared lost in it. */
	uint32_t episode;		/* id; 0 = none yet */
	uint32_t episode_lost;		/* in-flight packets lost in it */
	uint32_t episode_spurious;	/* of those, acknowledged later */
	uint64_t episode_start;		/* us */
	bool episode_undoable;		/* loss only: no CE, no persistent */
	struct dpq_loss_stats stats;
	bool is_server;
	bool handshake_confirmed;	/* RFC 9001 §4.1.2 */
	bool has_handshake_keys;
	bool peer_validated;		/* client: got a Handshake ACK */
	bool amplification_limited;	/* server at the 3x limit */
};

/*
 * Initialise all three spaces with sentmaps on *mem. Returns 0, or
 * -EINVAL if conf or mem is NULL or mem lacks alloc/free.
 */
int dpq_loss_init(struct dpq_loss *l, const struct dpq_loss_conf *conf,
		const struct dpq_mem *mem);

/* Release every block of every space. */
void dpq_loss_destroy(struct dpq_loss *l);

/*
 * A packet was sent in space at now (RFC 9002 A.5). pkt gives pn, bytes
 * and flags (DPQ_SENT_ACK_ELICITING, DPQ_SENT_IN_FLIGHT, DPQ_SENT_PROBE,
 * DPQ_SENT_ECT0 when its IP header carried dpq_loss_ecn_codepoint());
 * time_sent and the delivery-rate fields are filled in here (an
 * in-flight packet sent while cc->app_limited is marked so). recs/nrec describe what it
 * carried. In-flight packets are added to cc's flight. Returns 0, or the
 * dpq_sentmap_append() errors (-ENOBUFS: too many outstanding; -E2BIG;
 * -ENOMEM; -EINVAL: pn not increasing), or -EINVAL if the space was
 * discarded. Nothing changes on error: the caller must not send it.
 */
int dpq_loss_on_sent(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_sent_pkt *pkt,
		const struct dpq_sent_rec *recs, size_t nrec, uint64_t now);

/*
 * An ACK frame arrived in space (RFC 9002 §6, A.7). ranges: n >= 1
 * ranges, largest first, disjoint and descending (as dpq_ack_iter_next()
 * yields them; see dpq_loss_ack_ranges()). ack_delay: the ACK Delay field
 * scaled by the peer's ack_delay_exponent, in us (ignored in the Initial
 * space, §5.3). ecn: counts of an ACK_ECN frame, or NULL: they validate
 * ECN (RFC 9000 §13.4.2) and a CE increase is a congestion event.
 *
 * Newly acknowledged packets go to cb->on_acked (oldest first), then the
 * RTT is sampled if the largest acknowledged is newly acknowledged and
 * ack-eliciting (§5.1), an ECN-CE increase becomes a congestion event
 * (§7.1), packet- and time-threshold losses go to cb->on_lost (§6.1) and
 * to cc with a persistent-congestion check (§7.6), cc gets the ack with
 * a delivery-rate sample, and the timer is re-armed. Packets acked after
 * they were declared lost count as spurious; when all the losses of the
 * current episode are, cc undoes its reaction (dpq_cc_on_spurious).
 * info (may be NULL) reports what happened.
 *
 * Returns 0; DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION) if it acknowledges a
 * packet number never sent in this space (RFC 9000 §13.1: close the connection
 * with that error); -EINVAL if ranges are malformed. An ACK in a
 * discarded space is ignored (0).
 */
int dpq_loss_on_ack(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_ack_range *ranges,
		size_t n, uint64_t ack_delay, const struct dpq_ecn_counts *ecn,
		uint64_t now, const struct dpq_loss_cb *cb,
		struct dpq_loss_ack_info *info);

/* Collect up to max ranges of a decoded ACK frame, largest first.
 * Returns the count (>= 1 for a frame from dpq_frame_decode()). */
size_t dpq_loss_ack_ranges(const struct dpq_frame_ack *f,
		struct dpq_ack_range *out, size_t max);

/* ACK Delay field scaled by 2^exponent (RFC 9000 §19.3), saturating. */
static inline uint64_t
dpq_loss_ack_delay_us(uint64_t field, unsigned int exponent)
{
	if (exponent >= 64 || field > (UINT64_MAX >> exponent))
		return UINT64_MAX;
	return field << exponent;
}

/* When the loss timer must fire (us), or DPQ_LOSS_NO_TIMER. */
static inline uint64_t
dpq_loss_deadline(const struct dpq_loss *l)
{
	return l->timer;
}

/*
 * The loss timer fired (RFC 9002 §6.2, A.9). Fills *out with the action
 * to take; packets declared lost go to cb->on_lost and cc. Calling it
 * before the deadline is harmless (DPQ_LOSS_ACT_NONE). After a PTO or
 * anti-deadlock action the caller sends the probes with dpq_loss_on_sent()
 * (flag DPQ_SENT_PROBE), even beyond the congestion window.
 */
void dpq_loss_on_timeout(struct dpq_loss *l, struct dpq_cc *cc,
		uint64_t now, const struct dpq_loss_cb *cb,
		struct dpq_loss_timeout *out);

/*
 * PTO probes carry data (RFC 9002 §6.2.4, A.9; RFC 9000 §13.3): give the
 * records of up to max_pkts of the oldest ack-eliciting in-flight packets
 * of space to cb->on_requeue, so their data (CRYPTO first) is sent again
 * in the probes. The packets stay in flight: no congestion signal, and an
 * acknowledgment of either copy releases the data. Returns the number of
 * packets requeued.
 */
uint32_t dpq_loss_requeue(struct dpq_loss *l, enum dpq_pn_space space,
		uint32_t max_pkts, const struct dpq_loss_cb *cb);
/* The same, past the skip oldest such packets (a probe that found
 * nothing to resend in those). */
uint32_t dpq_loss_requeue_from(struct dpq_loss *l, enum dpq_pn_space space,
		uint32_t skip, uint32_t max_pkts, const struct dpq_loss_cb *cb);

/* Give back sent-packet memory not in use (dpq_sentmap_trim() of every
 * space): for a connection going idle. */
void dpq_loss_trim(struct dpq_loss *l);

/*
 * Keys of space were discarded (RFC 9002 §6.4, A.11; RFC 9001 §4.9): its
 * packets leave the map and cc's flight without being reported as acked
 * or lost, its timers stop and pto_count resets. Returns 0, or -EINVAL
 * for the application space (never discarded this way).
 */
int dpq_loss_discard_space(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, uint64_t now);

/*
 * Every packet of space is gone without an acknowledgment (the peer
 * rejected 0-RTT, RFC 9001 §4.6.2): the data of ack-eliciting ones goes
 * to cb->on_requeue to be sent again, then all leave the map and cc's
 * flight with no congestion signal (the path lost nothing). The space
 * stays usable (later packet numbers continue). Returns the number of
 * packets whose data was requeued.
 */
uint32_t dpq_loss_forget_space(struct dpq_loss *l, struct dpq_cc *cc,
		enum dpq_pn_space space, const struct dpq_loss_cb *cb,
		uint64_t now);

/* The handshake is confirmed (RFC 9001 §4.1.2): PTO may now run for the
 * application space and ack delays are capped at max_ack_delay. */
void dpq_loss_set_handshake_confirmed(struct dpq_loss *l, uint64_t now);

/* Client: Handshake keys are available (anti-deadlock probes then use
 * the Handshake space, §6.2.2.1). */
void dpq_loss_set_handshake_keys(struct dpq_loss *l, uint64_t now);

/* The peer's max_ack_delay transport parameter, in us. */
void dpq_loss_set_max_ack_delay(struct dpq_loss *l, uint64_t max_ack_delay,
		uint64_t now);

/*
 * Server: whether the anti-amplification limit (RFC 9000 §8.1) blocks
 * sending; while it does no timer is armed (§6.2.2.1). When a datagram
 * lifts it, call with false and, if dpq_loss_deadline() <= now, call
 * dpq_loss_on_timeout() (A.6).
 */
void dpq_loss_set_amplification_limited(struct dpq_loss *l, bool limited,
		uint64_t now);

/*
 * Current probe timeout for space, backoff included (§6.2.1):
 * (smoothed_rtt + max(4 * rttvar, kGranularity)) * 2^pto_count, plus
 * max_ack_delay * 2^pto_count for the application space. Also the base
 * of the idle and closing timeouts (RFC 9000 §10.1, §10.2: 3 * PTO).
 */
uint64_t dpq_loss_pto(const struct dpq_loss *l, enum dpq_pn_space space);

/* What dpq_loss_on_recovered() found. */
enum dpq_loss_recovered {
	DPQ_LOSS_REC_UNKNOWN = 0,	/* acknowledged already, or never sent */
	DPQ_LOSS_REC_CONGESTION,	/* outstanding: a congestion event */
	DPQ_LOSS_REC_WAS_LOST,		/* declared lost before: forgotten */
	/* outstanding, and cc judged it no congestion event (cc.h enum
	 * dpq_cc_fec_reaction); still a loss on the path */
	DPQ_LOSS_REC_FORGIVEN,
};

/*
 * The peer rebuilt packet pn of space from XOR-FEC repair data instead of
 * receiving it (RECOVERED frame, docs/fec.md §5, §8): the path dropped
 * it. If it is still outstanding, it stays in flight and its frames are
 * not re-queued (the peer acknowledges it), and dpq_cc_on_recovered()
 * decides whether congestion control reacts as to a loss of a packet sent
 * then (a congestion event, one reduction per recovery period, RFC 9002
 * §7.3.2; cc NULL: never). If loss detection had declared it
 * lost already (the reaction happened then), it is forgotten, so that the
 * acknowledgment that follows is not taken for a spurious loss and the
 * reaction undone.
 */
enum dpq_loss_recovered dpq_loss_on_recovered(struct dpq_loss *l,
		struct dpq_cc *cc, enum dpq_pn_space space, uint64_t pn,
		uint64_t now);

/*
 * Raise the packet reordering threshold (RFC 9002 §6.1.1) to at least n
 * (capped at DPQ_LOSS_PACKET_THRESHOLD_MAX): an XOR-FEC sender whose
 * groups have K members lets the group's REPAIR arrive (K + 2) before a
 * missing member is condemned and sent again.
 */
void dpq_loss_raise_pkt_threshold(struct dpq_loss *l, uint32_t n);

/*
 * Time (us) added to the time threshold's loss delay (RFC 9002 §6.1.2
 * allows adaptive thresholds), at most one smoothed RTT: an XOR-FEC
 * sender's REPAIR leaves up to a group's sending time after a member, so
 * a missing member is not condemned (re-sent, a congestion event) while
 * its repair is on its way. 0: the plain threshold.
 */
void dpq_loss_set_time_slack(struct dpq_loss *l, uint64_t us);

/*
 * The path changed (RFC 9000 §9.4): RTT estimate back to initial_rtt (us,
 * 0 = the default), delivery-rate state, ECN validation (RFC 9000
 * §13.4.2) and loss episode restarted,
 * backoff cleared, and cc (if not NULL) reset to its initial window.
 * Packets in flight stay tracked.
 */
void dpq_loss_on_path_change(struct dpq_loss *l, struct dpq_cc *cc,
		uint64_t initial_rtt, uint64_t now);

/* The ECN codepoint for the next packet: ECT(0) while ECN is being
 * tested or validated, else not-ECT (RFC 9000 §13.4.2). */
static inline uint8_t
dpq_loss_ecn_codepoint(const struct dpq_loss *l)
{
	return dpq_ecnv_codepoint(&l->ecn);
}

/* Ack-eliciting packets in flight in all spaces. */
uint32_t dpq_loss_ack_eliciting_in_flight(const struct dpq_loss *l);

/* RFC 9002 A.4 PeerCompletedAddressValidation(). */
bool dpq_loss_peer_completed_address_validation(const struct dpq_loss *l);

#endif /* DPQ_ENGINE_LOSS_H */
