/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ecn.c: ECN validation (RFC 9000 §13.4.2, A.4). See ecn.h.
 */
#include <string.h>

#include "dataplane/engine/ecn.h"

static const char *const state_names[DPQ_ECN_STATE_COUNT] = {
	[DPQ_ECN_TESTING] = "testing",
	[DPQ_ECN_UNKNOWN] = "unknown",
	[DPQ_ECN_CAPABLE] = "capable",
	[DPQ_ECN_FAILED] = "failed",
	[DPQ_ECN_DISABLED] = "disabled",
};

const char *
dpq_ecn_state_str(enum dpq_ecn_state s)
{
	return (unsigned int)s < DPQ_ECN_STATE_COUNT ? state_names[s] : "?";
}

void
dpq_ecnv_init(struct dpq_ecnv *v, bool enabled)
{
	memset(v, 0, sizeof(*v));
	v->state = enabled ? DPQ_ECN_TESTING : DPQ_ECN_DISABLED;
}

void
dpq_ecnv_on_sent(struct dpq_ecnv *v, unsigned int space, uint8_t cp)
{
	if (space >= 3 || cp != DPQ_ECN_CP_ECT0 ||
	    v->state == DPQ_ECN_DISABLED)
		return;
	/* Counted whatever the state: the packets of a datagram marked
	 * just before testing ended are counted by the peer too. */
	v->sent_ect0[space]++;
	if (v->state == DPQ_ECN_TESTING &&
	    ++v->testing_sent >= DPQ_ECN_TESTING_PKTS)
		v->state = DPQ_ECN_UNKNOWN;
}

void
dpq_ecnv_restart(struct dpq_ecnv *v)
{
	if (v->state == DPQ_ECN_DISABLED)
		return;
	/* The counts stay: the peer's are per packet number space, for
	 * the whole connection. */
	v->state = DPQ_ECN_TESTING;
	v->testing_sent = 0;
	v->testing_lost = 0;
}

static void
fail(struct dpq_ecnv *v)
{
	v->state = DPQ_ECN_FAILED;
}

uint64_t
dpq_ecnv_on_ack(struct dpq_ecnv *v, unsigned int space, uint64_t acked_ect0,
		const struct dpq_ecn_counts *ecn)
{
	struct dpq_ecn_counts *p;
	uint64_t d_ect0, d_ect1, d_ce;

	if (space >= 3 || v->state == DPQ_ECN_FAILED ||
	    v->state == DPQ_ECN_DISABLED)
		return 0;
	p = &v->peer[space];
	if (ecn == NULL) {
		/* §13.4.2.1: marked packets acknowledged without counts: the
		 * path or the peer erases or ignores the marks. */
		if (acked_ect0 != 0)
			fail(v);
		return 0;
	}
	/* Counts only grow; an older ACK frame arriving late (reordered)
	 * carries smaller ones: ignore it. */
	if (ecn->ect0 < p->ect0 || ecn->ect1 < p->ect1 || ecn->ce < p->ce)
		return 0;
	d_ect0 = ecn->ect0 - p->ect0;
	d_ect1 = ecn->ect1 - p->ect1;
	d_ce = ecn->ce - p->ce;
	*p = *ecn;
	/* §13.4.2.1: more reported than we ever sent with a codepoint (we
	 * send no ECT(1)), or fewer ECT(0)+CE than newly acknowledged
	 * marked packets: the marks are rewritten or dropped. */
	if (ecn->ect1 != 0 || ecn->ect0 + ecn->ce > v->sent_ect0[space] ||
	    d_ect0 + d_ce < acked_ect0) {
		fail(v);
		return 0;
	}
	(void)d_ect1;
	if (acked_ect0 != 0 && v->state == DPQ_ECN_UNKNOWN)
		v->state = DPQ_ECN_CAPABLE;
	if (d_ce != 0)
		v->ce_events++;
	return d_ce;
}

void
dpq_ecnv_on_lost(struct dpq_ecnv *v, uint64_t lost_ect0)
{
	if (v->state != DPQ_ECN_TESTING && v->state != DPQ_ECN_UNKNOWN)
		return;
	v->testing_lost += (uint32_t)lost_ect0;
	/* §13.4.2.1: every marked packet lost: the marking may be the
	 * cause (a network element that drops ECT packets). */
	if (v->testing_sent >= DPQ_ECN_TESTING_PKTS &&
	    v->testing_lost >= v->testing_sent)
		fail(v);
}
