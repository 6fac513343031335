/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_bbr.h: BBR congestion control, version 3 as draft-ietf-ccwg-bbr
 * describes it, registered as "bbr". See cc_bbr.c for how close to the
 * draft it is.
 */
#ifndef DPQ_ENGINE_CC_BBR_H
#define DPQ_ENGINE_CC_BBR_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/engine/cc.h"

extern const struct dpq_cc_ops dpq_cc_bbr_ops;

/* draft-ietf-ccwg-bbr §4.1.1 states. */
enum dpq_bbr_state {
	DPQ_BBR_STARTUP = 0,
	DPQ_BBR_DRAIN,
	DPQ_BBR_PROBE_BW_DOWN,
	DPQ_BBR_PROBE_BW_CRUISE,
	DPQ_BBR_PROBE_BW_REFILL,
	DPQ_BBR_PROBE_BW_UP,
	DPQ_BBR_PROBE_RTT,
	DPQ_BBR_STATE_COUNT,
};

/* The model, for tests and stats. cc must run BBR. */
struct dpq_bbr_view {
	enum dpq_bbr_state state;
	uint64_t max_bw;	/* bytes/s, windowed max over 2 cycles */
	uint64_t bw;		/* min(max_bw, bw_lo) */
	uint64_t bw_lo;		/* UINT64_MAX: unset */
	uint64_t min_rtt;	/* us; UINT64_MAX: no sample */
	uint64_t inflight_hi;	/* bytes; UINT64_MAX: unset */
	uint64_t inflight_lo;
	uint64_t pacing_rate;	/* bytes/s */
	uint32_t pacing_gain;	/* percent */
	uint32_t cwnd_gain;	/* percent */
	uint64_t round_count;
	bool full_bw_reached;
};
void dpq_cc_bbr_view(const struct dpq_cc *cc, struct dpq_bbr_view *v);

const char *dpq_bbr_state_str(enum dpq_bbr_state s);

#endif /* DPQ_ENGINE_CC_BBR_H */
