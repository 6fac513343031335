/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_cubic.h: CUBIC congestion control (RFC 9438) for QUIC, registered
 * as "cubic".
 */
#ifndef DPQ_ENGINE_CC_CUBIC_H
#define DPQ_ENGINE_CC_CUBIC_H

#include "dataplane/engine/cc.h"

/* RFC 9438 §4.1 constants, as used here. */
#define DPQ_CUBIC_C		0.4	/* segments / s^3 */
#define DPQ_CUBIC_BETA		0.7	/* multiplicative decrease */

extern const struct dpq_cc_ops dpq_cc_cubic_ops;

/* Internal values for tests and stats. cc must run CUBIC. */
struct dpq_cubic_view {
	double w_max;		/* bytes, before the last reduction */
	double k;		/* seconds to reach w_max again */
	double w_est;		/* Reno-friendly estimate, bytes */
	double cwnd_prior;	/* bytes, at the last reduction */
	uint64_t epoch_start;	/* us; 0 = no epoch */
	bool reno_friendly;	/* last update took W_est */
};
void dpq_cc_cubic_view(const struct dpq_cc *cc, struct dpq_cubic_view *v);

/* RFC 9438 eq. 1, W_cubic(t) in bytes for t seconds into the epoch. */
double dpq_cubic_w(double w_max, double k, double t, uint32_t mss);

/* RFC 9438 eq. 2, K in seconds for W_max and cwnd at the epoch start,
 * in bytes (0 when cwnd_epoch >= w_max). */
double dpq_cubic_k(double w_max, double cwnd_epoch, uint32_t mss);

#endif /* DPQ_ENGINE_CC_CUBIC_H */
