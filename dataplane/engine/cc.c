/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc.c: the congestion-control registry and the wrappers that keep
 * bytes_in_flight for every algorithm (RFC 9002 §7, Appendix B).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dataplane/engine/cc.h"
#include "dataplane/engine/cc_bbr.h"
#include "dataplane/engine/cc_cubic.h"
#include "dataplane/engine/cc_newreno.h"

/* RFC 9000 §14: smallest max datagram size a QUIC path supports. */
#define CC_MIN_DATAGRAM	1200
/* RFC 9002 §7.2: initial window cap in bytes. */
#define CC_IW_BYTES	14720
#define US_PER_S	UINT64_C(1000000)

/* Algorithms by name; the first is the default. */
static const struct dpq_cc_ops *const cc_registry[] = {
	&dpq_cc_newreno_ops,
	&dpq_cc_cubic_ops,
	&dpq_cc_bbr_ops,
};

#define CC_REGISTRY_LEN (sizeof(cc_registry) / sizeof(cc_registry[0]))

uint64_t
dpq_cc_initial_window(uint32_t mds)
{
	uint64_t lo = 10 * (uint64_t)mds;
	uint64_t hi = 2 * (uint64_t)mds;

	if (hi < CC_IW_BYTES)
		hi = CC_IW_BYTES;
	return lo < hi ? lo : hi;
}

int
dpq_cc_init(struct dpq_cc *cc, const struct dpq_cc_ops *ops,
		const struct dpq_cc_conf *conf, uint64_t now)
{
	if (ops == NULL || ops->init == NULL || ops->on_ack == NULL ||
	    ops->on_loss == NULL || ops->on_persistent_congestion == NULL ||
	    conf == NULL || conf->max_datagram_size < CC_MIN_DATAGRAM)
		return -EINVAL;
	memset(cc, 0, sizeof(*cc));
	cc->ops = ops;
	cc->conf = *conf;
	cc->max_datagram_size = conf->max_datagram_size;
	cc->ssthresh = UINT64_MAX;
	/* GUARDED starts with one repaired loss to forgive: a new
	 * connection has acknowledged nothing yet, and a random loss in its
	 * first window is what sets a short transfer's completion time
	 * (halving a window of 10 packets). The RTT and ECN guards hold
	 * from the start. */
	cc->fec_credit = DPQ_CC_FEC_PKTS_PER_FORGIVEN;
	ops->init(cc, conf, now);
	return 0;
}

void
dpq_cc_reset(struct dpq_cc *cc, uint64_t now)
{
	uint64_t flight = cc->bytes_in_flight;
	uint32_t mds = cc->max_datagram_size;
	struct dpq_cc_conf conf = cc->conf;
	const struct dpq_cc_ops *ops = cc->ops;
	uint64_t ev = cc->congestion_events, sp = cc->spurious_undos;
	uint64_t pc = cc->persistent_congestions;
	uint64_t fc = cc->fec_congestion, ff = cc->fec_forgiven;

	/* The datagram size may have grown since init (transport
	 * parameters): keep the current one. */
	conf.max_datagram_size = mds;
	(void)dpq_cc_init(cc, ops, &conf, now);
	cc->bytes_in_flight = flight;
	cc->congestion_events = ev;
	cc->spurious_undos = sp;
	cc->persistent_congestions = pc;
	cc->fec_congestion = fc;
	cc->fec_forgiven = ff;
}

const struct dpq_cc_ops *
dpq_cc_find(const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < CC_REGISTRY_LEN; i++)
		if (strcmp(cc_registry[i]->name, name) == 0)
			return cc_registry[i];
	return NULL;
}

const struct dpq_cc_ops *
dpq_cc_get(size_t i)
{
	return i < CC_REGISTRY_LEN ? cc_registry[i] : NULL;
}

size_t
dpq_cc_names(char *buf, size_t len, const char *sep)
{
	size_t i, need = 0;
	int n;

	if (len > 0)
		buf[0] = '\0';
	for (i = 0; i < CC_REGISTRY_LEN; i++) {
		n = snprintf(need < len ? buf + need : NULL,
				need < len ? len - need : 0, "%s%s",
				i > 0 ? sep : "", cc_registry[i]->name);
		if (n > 0)
			need += (size_t)n;
	}
	return need;
}

/* bytes_in_flight never goes negative: a mismatch would be a caller bug,
 * and clamping keeps the window usable rather than wrapping. */
static void
cc_flight_sub(struct dpq_cc *cc, uint64_t bytes)
{
	cc->bytes_in_flight = bytes < cc->bytes_in_flight ?
		cc->bytes_in_flight - bytes : 0;
}

void
dpq_cc_on_sent(struct dpq_cc *cc, uint32_t bytes, uint64_t now)
{
	cc->bytes_in_flight += bytes;
	if (cc->ops->on_sent != NULL)
		cc->ops->on_sent(cc, bytes, now);
}

void
dpq_cc_on_ack(struct dpq_cc *cc, const struct dpq_cc_ack *ev)
{
	const uint64_t cap = DPQ_CC_FEC_PKTS_PER_FORGIVEN *
		DPQ_CC_FEC_CREDIT_MAX;

	cc_flight_sub(cc, ev->bytes_acked);
	cc->fec_credit += ev->packets_acked;
	if (cc->fec_credit > cap)
		cc->fec_credit = cap;
	cc->ops->on_ack(cc, ev);
}

void
dpq_cc_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	cc_flight_sub(cc, ev->bytes_lost);
	cc->congestion_events++;
	cc->ops->on_loss(cc, ev);
}

/*
 * GUARDED (cc.h): is there a sign that the path's queue, not chance,
 * dropped the packet? An RTT sample above min_rtt by the RFC 9406 §4.2
 * fraction (min_rtt / 8; kGranularity at least, RFC 9002 §6.1.2) means a
 * queue holds our packets, and a full drop-tail queue is what drops them.
 * latest_rtt is the raw sample (ack delay included): a delayed ACK can
 * only make the guard react more, never less.
 */
static bool
fec_guard_congested(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	const struct dpq_rtt *r = ev->rtt;
	uint64_t thresh;

	if (ev->ecn_ce || r == NULL || !r->has_sample || r->min == 0)
		return true;
	thresh = r->min / 8;
	if (thresh < DPQ_RTT_GRANULARITY)
		thresh = DPQ_RTT_GRANULARITY;
	if (r->latest > r->min + thresh)
		return true;
	/* More repaired losses than random loss FEC is sized for. */
	if (cc->fec_credit < DPQ_CC_FEC_PKTS_PER_FORGIVEN)
		return true;
	cc->fec_credit -= DPQ_CC_FEC_PKTS_PER_FORGIVEN;
	return false;
}

bool
dpq_cc_on_recovered(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	bool congested;

	switch (cc->conf.fec_reaction) {
	case DPQ_CC_FEC_LOSS:
		congested = true;
		break;
	case DPQ_CC_FEC_IGNORE:
		congested = false;
		break;
	default:
		congested = fec_guard_congested(cc, ev);
		break;
	}
	if (!congested) {
		cc->fec_forgiven++;
		return false;
	}
	cc->fec_congestion++;
	dpq_cc_on_loss(cc, ev);
	return true;
}

static const char *const fec_reaction_names[DPQ_CC_FEC_REACTION_COUNT] = {
	[DPQ_CC_FEC_GUARDED] = "guarded",
	[DPQ_CC_FEC_LOSS] = "loss",
	[DPQ_CC_FEC_IGNORE] = "ignore",
};

const char *
dpq_cc_fec_reaction_str(enum dpq_cc_fec_reaction r)
{
	return (unsigned int)r < DPQ_CC_FEC_REACTION_COUNT ?
		fec_reaction_names[r] : "?";
}

int
dpq_cc_fec_reaction_parse(const char *s, enum dpq_cc_fec_reaction *out)
{
	unsigned int i;

	for (i = 0; s != NULL && i < DPQ_CC_FEC_REACTION_COUNT; i++)
		if (strcmp(s, fec_reaction_names[i]) == 0) {
			*out = (enum dpq_cc_fec_reaction)i;
			return 0;
		}
	return -1;
}

void
dpq_cc_on_persistent_congestion(struct dpq_cc *cc, uint64_t now)
{
	cc->persistent_congestions++;
	cc->ops->on_persistent_congestion(cc, now);
}

void
dpq_cc_on_spurious(struct dpq_cc *cc, uint64_t now)
{
	if (cc->ops->on_spurious == NULL)
		return;
	cc->spurious_undos++;
	cc->ops->on_spurious(cc, now);
}

void
dpq_cc_on_discard(struct dpq_cc *cc, uint64_t bytes)
{
	cc_flight_sub(cc, bytes);
}

uint64_t
dpq_cc_pacing_rate(const struct dpq_cc *cc, const struct dpq_rtt *rtt)
{
	if (cc->ops->pacing_rate == NULL)
		return DPQ_CC_UNPACED;
	return cc->ops->pacing_rate(cc, rtt);
}

void
dpq_cc_get_info(const struct dpq_cc *cc, struct dpq_cc_info *out)
{
	out->phase = DPQ_CC_PHASE_OTHER;
	out->ssthresh = cc->ssthresh;
	out->state = NULL;
	if (cc->ops->info != NULL)
		cc->ops->info(cc, out);
	/* §7.8: whatever the algorithm's phase, an application-limited
	 * sender does not grow the window. */
	if (cc->app_limited && out->phase != DPQ_CC_PHASE_RECOVERY)
		out->phase = DPQ_CC_PHASE_APP_LIMITED;
}

const char *
dpq_cc_phase_str(enum dpq_cc_phase p)
{
	static const char *const names[DPQ_CC_PHASE_COUNT] = {
		[DPQ_CC_PHASE_SLOW_START] = "slow_start",
		[DPQ_CC_PHASE_AVOIDANCE] = "congestion_avoidance",
		[DPQ_CC_PHASE_RECOVERY] = "recovery",
		[DPQ_CC_PHASE_APP_LIMITED] = "application_limited",
		[DPQ_CC_PHASE_OTHER] = "other",
	};

	return (unsigned int)p < DPQ_CC_PHASE_COUNT ? names[p] : "other";
}

const char *
dpq_cc_state_name(const struct dpq_cc *cc)
{
	struct dpq_cc_info in;

	dpq_cc_get_info(cc, &in);
	if (in.state != NULL && in.phase != DPQ_CC_PHASE_APP_LIMITED)
		return in.state;
	return dpq_cc_phase_str(in.phase);
}

uint64_t
dpq_cc_rate_from_cwnd(uint64_t cwnd, const struct dpq_rtt *rtt,
		uint64_t gain_num, uint64_t gain_den)
{
	uint64_t srtt = rtt != NULL ? rtt->smoothed : 0;
	uint64_t mul = gain_num * US_PER_S / gain_den;

	if (srtt == 0)
		return DPQ_CC_UNPACED;
	if (cwnd > UINT64_MAX / mul)
		return cwnd / srtt * mul;
	return cwnd * mul / srtt;
}
