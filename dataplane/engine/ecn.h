/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ecn.h: ECN validation of one path (RFC 9000 §13.4.2, Appendix A.4):
 * whether the packets we send may carry ECT(0), judged from the ECN
 * counts of the peer's ACK frames.
 *
 * Testing: the first DPQ_ECN_TESTING_PKTS packets are marked ECT(0);
 * then marking stops (UNKNOWN) until an ACK validates the counts
 * (CAPABLE: mark every packet). Validation fails (FAILED: never mark
 * again on this path) when an ACK newly acknowledges ECT(0) packets but
 * carries no ECN counts, when ECT(0) + CE rose by less than the number
 * of ECT(0) packets it newly acknowledged, when a count exceeds what we
 * sent with that codepoint (ECT(1): we send none), or when every packet
 * marked during testing was lost (a path that drops marked packets).
 *
 * The loss module drives it (it sees the acknowledged and lost packets
 * and the ACK frames' counts); the builder asks dpq_ecnv_codepoint()
 * for each datagram. Counts are kept per packet number space, as the
 * peer reports them (RFC 9000 §13.4.1). No clock. One thread.
 */
#ifndef DPQ_ENGINE_ECN_H
#define DPQ_ENGINE_ECN_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/engine/frame.h"

/* RFC 9000 §13.4.2.1: mark the first ten packets while testing. */
#define DPQ_ECN_TESTING_PKTS	10
/* IP ECN codepoints (RFC 3168 §5), as the drivers carry them. */
#define DPQ_ECN_CP_NOT_ECT	0
#define DPQ_ECN_CP_ECT1		1
#define DPQ_ECN_CP_ECT0		2
#define DPQ_ECN_CP_CE		3

enum dpq_ecn_state {
	DPQ_ECN_TESTING = 0,	/* marking the first packets */
	DPQ_ECN_UNKNOWN,	/* not marking, waiting for validation */
	DPQ_ECN_CAPABLE,	/* validated: mark every packet */
	DPQ_ECN_FAILED,		/* never mark on this path */
	DPQ_ECN_DISABLED,	/* switched off by configuration */
	DPQ_ECN_STATE_COUNT,
};

struct dpq_ecnv {
	enum dpq_ecn_state state;
	uint32_t testing_sent;		/* marked while testing */
	uint32_t testing_lost;		/* ... and declared lost */
	uint64_t sent_ect0[3];		/* per space: marked packets sent */
	struct dpq_ecn_counts peer[3];	/* per space: largest reported */
	uint64_t ce_events;		/* stats: CE increases seen */
};

/* Start testing, or stay DISABLED when enabled is false. */
void dpq_ecnv_init(struct dpq_ecnv *v, bool enabled);

/* A new path (RFC 9000 §13.4.2: validate each path): testing again,
 * even after a failure on the old one. */
void dpq_ecnv_restart(struct dpq_ecnv *v);

/* The codepoint for the next packet (DPQ_ECN_CP_ECT0 or NOT_ECT). */
static inline uint8_t
dpq_ecnv_codepoint(const struct dpq_ecnv *v)
{
	return v->state == DPQ_ECN_TESTING || v->state == DPQ_ECN_CAPABLE ?
		DPQ_ECN_CP_ECT0 : DPQ_ECN_CP_NOT_ECT;
}

/* A packet of space left with codepoint cp. */
void dpq_ecnv_on_sent(struct dpq_ecnv *v, unsigned int space, uint8_t cp);

/*
 * An ACK frame of space newly acknowledged acked_ect0 packets that were
 * sent with ECT(0); ecn: its counts (NULL: a plain ACK frame). Returns
 * the increase of the CE count (0 when validation failed or the counts
 * are not to be trusted), for congestion control.
 */
uint64_t dpq_ecnv_on_ack(struct dpq_ecnv *v, unsigned int space,
		uint64_t acked_ect0, const struct dpq_ecn_counts *ecn);

/* lost_ect0 ECT(0)-marked packets were declared lost. */
void dpq_ecnv_on_lost(struct dpq_ecnv *v, uint64_t lost_ect0);

const char *dpq_ecn_state_str(enum dpq_ecn_state s);

#endif /* DPQ_ENGINE_ECN_H */
