/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc.h: congestion control, a small vtable with event structs
 * (aesthetics lesson 7), and a registry of algorithms by name:
 * "newreno" (RFC 9002 §7), "cubic" (RFC 9438) and "bbr" (BBRv3 as
 * draft-ietf-ccwg-bbr describes it; see cc_bbr.c for how close).
 *
 * struct dpq_cc is embedded in the connection. It holds what every
 * algorithm shares (cwnd, ssthresh, bytes_in_flight, max_datagram_size,
 * app_limited) and a fixed opaque area for the algorithm's own state, so
 * choosing an algorithm never allocates. The dpq_cc_on_*() wrappers keep
 * bytes_in_flight (RFC 9002 Appendix B.2) and then call the algorithm, so
 * an algorithm only decides cwnd and pacing.
 *
 * Events (driven by the loss module, loss.h):
 *   on_sent         an in-flight packet left;
 *   on_ack          packets were newly acknowledged (with a delivery-rate
 *                   sample, rate.h);
 *   on_loss         packets were declared lost, or the peer's ECN-CE
 *                   count rose (one call per ACK frame or timer);
 *   on_persistent_congestion  RFC 9002 §7.6.2;
 *   on_spurious     every packet whose loss started the current
 *                   congestion episode was acknowledged after all: undo
 *                   the reaction (optional);
 * and, not an algorithm hook but a wrapper that decides in one place
 * whether a packet the peer rebuilt with XOR-FEC is a congestion event
 * (dpq_cc_on_recovered, enum dpq_cc_fec_reaction): if it is, the
 * algorithm sees an on_loss;
 * and two questions: pacing_rate, info (phase, state and ssthresh for
 * stats and traces).
 *
 * The event structs may gain fields; callers zero them with designated
 * initialisers, so old callers stay valid. All times are in
 * microseconds, sizes in bytes, rates in bytes per second.
 */
#ifndef DPQ_ENGINE_CC_H
#define DPQ_ENGINE_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/rate.h"
#include "dataplane/engine/rtt.h"

/* Bytes reserved in struct dpq_cc for an algorithm's private state. */
#define DPQ_CC_STATE_SIZE	768
/* Longest algorithm name, with its NUL. */
#define DPQ_CC_NAME_MAX		16
/* dpq_cc_pacing_rate(): do not pace. */
#define DPQ_CC_UNPACED		UINT64_MAX

struct dpq_cc;

/*
 * How congestion control takes an in-flight packet that the peer rebuilt
 * from XOR-FEC repair data (RECOVERED frame, docs/fec.md §8): the path
 * dropped it, but no retransmission was needed. RFC 9002 §7 knows only
 * losses; a loss is a congestion signal because drop-tail queues drop
 * when full, while a path that drops at random (radio, a bad link) drops
 * whatever the sending rate. A repaired loss is still evidence, so it is
 * a congestion event whenever the path shows signs of congestion:
 *
 *   GUARDED (the default)  not a congestion event unless one of: an RTT
 *         sample shows a queue (latest_rtt above min_rtt by more than
 *         min_rtt / 8, at least kGranularity: RFC 9002 §5, the delay
 *         increase RFC 9406 §4.2 takes as a queue building), or there
 *         is no RTT sample yet, or repaired losses exceed one
 *         in DPQ_CC_FEC_PKTS_PER_FORGIVEN packets acknowledged (more than
 *         the smallest adaptive group is sized for, docs/fec.md §10).
 *         ECN-CE and the losses FEC cannot repair (declared by loss
 *         detection) are congestion events as always (RFC 9002 §7.1).
 *   LOSS  always a congestion event, as RFC 9002 §7 treats a loss.
 *   IGNORE  never (an experiment for dpq-bench-fec: not safe on a
 *         congested path, where it lets FEC hide queue overflow).
 */
enum dpq_cc_fec_reaction {
	DPQ_CC_FEC_GUARDED = 0,
	DPQ_CC_FEC_LOSS,
	DPQ_CC_FEC_IGNORE,
	DPQ_CC_FEC_REACTION_COUNT,
};

/* GUARDED: at most one repaired loss forgiven per this many packets
 * acknowledged (6.25%: the adaptive policy's smallest group, 4, is sized
 * for a quarter of a loss per group). */
#define DPQ_CC_FEC_PKTS_PER_FORGIVEN	16
/* ... with credit for this many forgiven losses saved up at most. */
#define DPQ_CC_FEC_CREDIT_MAX		2

struct dpq_cc_conf {
	/* RFC 9002 §7.2: the sender's max datagram size, >= 1200. */
	uint32_t max_datagram_size;
	/* Initial window in bytes; 0 = the RFC 9002 §7.2 default
	 * min(10 * mds, max(14720, 2 * mds)). */
	uint64_t initial_window;
	/* Packets the peer rebuilt with XOR-FEC (dpq_cc_on_recovered). */
	enum dpq_cc_fec_reaction fec_reaction;
	/* The sender paces at pacing_rate (RFC 9002 §7.7): HyStart++ also
	 * takes RTT rises below RFC 9406's floor (hystart.h). */
	bool paced;
};

/* Newly acknowledged packets of one ACK frame (RFC 9002 §7, B.5). */
struct dpq_cc_ack {
	uint64_t now;
	uint64_t bytes_acked;	/* in-flight bytes newly acknowledged */
	uint32_t packets_acked;	/* in-flight packets newly acknowledged */
	/* Send time of the newest newly acked in-flight packet: the
	 * recovery period ends when a packet sent after its start is acked
	 * (§7.3.2). */
	uint64_t largest_sent_time;
	uint64_t bytes_in_flight_before; /* before this ACK was applied */
	const struct dpq_rtt *rtt;	/* after this ACK's sample */
	bool rtt_sampled;	/* this ACK produced an RTT sample */
	/* Delivery-rate sample of this ACK (BBR); NULL if none. */
	const struct dpq_rate_sample *rs;
	uint64_t delivered;	/* bytes delivered in total, after this */
	uint64_t lost;		/* bytes lost in total */
};

/* A congestion event: in-flight packets declared lost, or an increase of
 * the peer's ECN-CE count (RFC 9002 §7.1, B.6, B.8). */
struct dpq_cc_loss {
	uint64_t now;
	uint64_t bytes_lost;	/* in-flight bytes declared lost; 0 for CE */
	uint32_t packets_lost;
	/* Newest send time among the lost in-flight packets (for CE: of
	 * the largest acknowledged packet). A new recovery period starts
	 * only if this is after the current one started (§7.3.2). */
	uint64_t largest_sent_time;
	const struct dpq_rtt *rtt;
	bool ecn_ce;		/* signalled by ECN-CE, nothing was lost */
	/* The newest lost packet's delivery state (BBR's loss-rate check,
	 * draft-ietf-ccwg-bbr "IsInflightTooHigh"): bytes in flight when
	 * it left, and bytes lost since then, this loss included. */
	uint64_t tx_in_flight;
	uint64_t lost_since_sent;
	bool app_limited;
	uint64_t delivered;	/* bytes delivered in total */
	uint64_t lost;		/* bytes lost in total */
};

/* Phases a controller reports (qlog congestion_state_updated). */
enum dpq_cc_phase {
	DPQ_CC_PHASE_SLOW_START = 0,
	DPQ_CC_PHASE_AVOIDANCE,
	DPQ_CC_PHASE_RECOVERY,
	DPQ_CC_PHASE_APP_LIMITED,
	DPQ_CC_PHASE_OTHER,		/* algorithm-specific (e.g. BBR) */
	DPQ_CC_PHASE_COUNT,
};

/* What a controller tells stats and traces (dataplane/quic/trace.h). */
struct dpq_cc_info {
	enum dpq_cc_phase phase;
	uint64_t ssthresh;		/* UINT64_MAX: none / infinite */
	/* The algorithm's own state name ("probe_bw_up"), a static string;
	 * NULL: the phase's name. */
	const char *state;
};

struct dpq_cc_ops {
	const char *name;
	/* Set cwnd, ssthresh and the private state; cc->max_datagram_size
	 * is set. */
	void (*init)(struct dpq_cc *cc, const struct dpq_cc_conf *conf,
			uint64_t now);
	/* An in-flight packet of bytes was sent (optional, may be NULL);
	 * cc->bytes_in_flight already includes it. */
	void (*on_sent)(struct dpq_cc *cc, uint32_t bytes, uint64_t now);
	void (*on_ack)(struct dpq_cc *cc, const struct dpq_cc_ack *ev);
	void (*on_loss)(struct dpq_cc *cc, const struct dpq_cc_loss *ev);
	/* RFC 9002 §7.6.2: collapse to the minimum window. */
	void (*on_persistent_congestion)(struct dpq_cc *cc, uint64_t now);
	/* The losses that started the current episode were spurious:
	 * restore the state saved when it started (optional). */
	void (*on_spurious)(struct dpq_cc *cc, uint64_t now);
	/* Pacing rate in bytes per second; DPQ_CC_UNPACED = unpaced. */
	uint64_t (*pacing_rate)(const struct dpq_cc *cc,
			const struct dpq_rtt *rtt);
	/* Phase, state name and slow-start threshold for stats and traces
	 * (optional, may be NULL: phase OTHER, or APP_LIMITED; ssthresh
	 * from struct dpq_cc). */
	void (*info)(const struct dpq_cc *cc, struct dpq_cc_info *out);
};

struct dpq_cc {
	const struct dpq_cc_ops *ops;
	uint64_t cwnd;			/* congestion window, bytes */
	uint64_t ssthresh;		/* UINT64_MAX until the first event */
	uint64_t bytes_in_flight;	/* RFC 9002 Appendix B.2 */
	uint32_t max_datagram_size;
	/* Set by the sender (dpq_cc_set_app_limited): it has no more data
	 * to send while the window allows more (§7.8). */
	bool app_limited;
	/* Set by the algorithm: the pacer should release datagrams in
	 * trains of this many (pacer.h dpq_pacer_set_train); 0: one at a
	 * time. */
	uint32_t pace_train;
	struct dpq_cc_conf conf;	/* for dpq_cc_reset() */
	/* Counters for stats (the wrappers keep them). */
	uint64_t congestion_events;	/* on_loss calls */
	uint64_t spurious_undos;	/* on_spurious calls */
	uint64_t persistent_congestions;
	/* dpq_cc_on_recovered: repaired losses taken as congestion events
	 * and forgiven; the GUARDED credit in packets acknowledged. */
	uint64_t fec_congestion;
	uint64_t fec_forgiven;
	uint64_t fec_credit;
	_Alignas(8) uint8_t state[DPQ_CC_STATE_SIZE];
};

/* RFC 9002 §7.2: the default initial window for a max datagram size. */
uint64_t dpq_cc_initial_window(uint32_t max_datagram_size);

/*
 * Start congestion control with algorithm ops. Returns 0, or -EINVAL if
 * ops is NULL or incomplete or conf->max_datagram_size < 1200.
 */
int dpq_cc_init(struct dpq_cc *cc, const struct dpq_cc_ops *ops,
		const struct dpq_cc_conf *conf, uint64_t now);

/*
 * Start over with the same algorithm and configuration (RFC 9000 §9.4:
 * a new path gets a new congestion controller). bytes_in_flight is kept:
 * packets sent on the old path still leave the flight when acknowledged
 * or lost.
 */
void dpq_cc_reset(struct dpq_cc *cc, uint64_t now);

/* Algorithm registered under name ("newreno", "cubic", "bbr"), or NULL. */
const struct dpq_cc_ops *dpq_cc_find(const char *name);

/* i-th registered algorithm (for listings), or NULL past the end. */
const struct dpq_cc_ops *dpq_cc_get(size_t i);

/*
 * The registered names separated by sep ("newreno, cubic, bbr") into buf
 * (always NUL-terminated when len > 0), for option checks and messages.
 * Returns the length the full list needs (snprintf-like).
 */
size_t dpq_cc_names(char *buf, size_t len, const char *sep);

/* An in-flight packet of bytes was sent: adds to bytes_in_flight. */
void dpq_cc_on_sent(struct dpq_cc *cc, uint32_t bytes, uint64_t now);

/* Newly acked packets: removes ev->bytes_acked from flight, then the
 * algorithm grows the window. */
void dpq_cc_on_ack(struct dpq_cc *cc, const struct dpq_cc_ack *ev);

/* Congestion event: removes ev->bytes_lost from flight, then the
 * algorithm reacts. */
void dpq_cc_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev);

/*
 * The peer rebuilt an in-flight packet from XOR-FEC repair data
 * (docs/fec.md §8). ev describes it as a loss of one packet (bytes_lost
 * 0: it stays in flight until acknowledged; rtt: after the latest
 * sample). Decides by cc->conf.fec_reaction whether it is a congestion
 * event and, if so, passes it to the algorithm's on_loss. Returns true
 * if it was one.
 */
bool dpq_cc_on_recovered(struct dpq_cc *cc, const struct dpq_cc_loss *ev);

/* "guarded", "loss", "ignore"; and back (-1: unknown name). */
const char *dpq_cc_fec_reaction_str(enum dpq_cc_fec_reaction r);
int dpq_cc_fec_reaction_parse(const char *s, enum dpq_cc_fec_reaction *out);

void dpq_cc_on_persistent_congestion(struct dpq_cc *cc, uint64_t now);

/* The current congestion episode was spurious (see on_spurious). */
void dpq_cc_on_spurious(struct dpq_cc *cc, uint64_t now);

/* Packets of a discarded packet number space leave the flight without
 * an ack or loss signal (RFC 9002 §6.4, B.9). */
void dpq_cc_on_discard(struct dpq_cc *cc, uint64_t bytes);

/* Pacing rate in bytes per second; DPQ_CC_UNPACED means do not pace. */
uint64_t dpq_cc_pacing_rate(const struct dpq_cc *cc,
		const struct dpq_rtt *rtt);

/* Phase, state and ssthresh for stats and traces (see ops.info). */
void dpq_cc_get_info(const struct dpq_cc *cc, struct dpq_cc_info *out);

/* "slow_start", "congestion_avoidance", ... as qlog names them. */
const char *dpq_cc_phase_str(enum dpq_cc_phase p);

/* The algorithm's state name ("slow_start", "probe_bw_up", ...). */
const char *dpq_cc_state_name(const struct dpq_cc *cc);

static inline void
dpq_cc_set_app_limited(struct dpq_cc *cc, bool app_limited)
{
	cc->app_limited = app_limited;
}

/* Bytes the window allows to send now (0 when full). */
static inline uint64_t
dpq_cc_available(const struct dpq_cc *cc)
{
	return cc->cwnd > cc->bytes_in_flight ?
		cc->cwnd - cc->bytes_in_flight : 0;
}

/* Helpers for algorithms. */

/* RFC 9002 §7.2 kMinimumWindow: 2 * max_datagram_size. */
static inline uint64_t
dpq_cc_min_window(const struct dpq_cc *cc)
{
	return 2 * (uint64_t)cc->max_datagram_size;
}

/* §7.7 pacing: gain_num/gain_den * cwnd / smoothed_rtt, bytes/s. */
uint64_t dpq_cc_rate_from_cwnd(uint64_t cwnd, const struct dpq_rtt *rtt,
		uint64_t gain_num, uint64_t gain_den);

#endif /* DPQ_ENGINE_CC_H */
