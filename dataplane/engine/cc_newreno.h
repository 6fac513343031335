/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc_newreno.h: NewReno congestion control as RFC 9002 §7 and Appendix B
 * describe it, registered as "newreno".
 */
#ifndef DPQ_ENGINE_CC_NEWRENO_H
#define DPQ_ENGINE_CC_NEWRENO_H

#include <stdint.h>

#include "dataplane/engine/cc.h"

extern const struct dpq_cc_ops dpq_cc_newreno_ops;

/* Slow-start threshold in bytes (UINT64_MAX until the first congestion
 * event); for tests and stats. cc must run NewReno. */
uint64_t dpq_cc_newreno_ssthresh(const struct dpq_cc *cc);

#endif /* DPQ_ENGINE_CC_NEWRENO_H */
