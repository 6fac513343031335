/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc.c: the congestion-control registry and the wrappers that keep
 * bytes_in_flight for every algorithm (RFC 9002 §7, Appendix B).
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/cc.h"
#include "dataplane/engine/cc_newreno.h"

/* RFC 9000 §14: smallest max datagram size a QUIC path supports. */
#define CC_MIN_DATAGRAM	1200
/* RFC 9002 §7.2: initial window cap in bytes. */
#define CC_IW_BYTES	14720

/* Algorithms by name; CUBIC and BBR are added here. */
static const struct dpq_cc_ops *const cc_registry[] = {
	&dpq_cc_newreno_ops,
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
	cc->max_datagram_size = conf->max_datagram_size;
	ops->init(cc, conf, now);
	return 0;
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
	cc_flight_sub(cc, ev->bytes_acked);
	cc->ops->on_ack(cc, ev);
}

void
dpq_cc_on_loss(struct dpq_cc *cc, const struct dpq_cc_loss *ev)
{
	cc_flight_sub(cc, ev->bytes_lost);
	cc->ops->on_loss(cc, ev);
}

void
dpq_cc_on_persistent_congestion(struct dpq_cc *cc, uint64_t now)
{
	cc->ops->on_persistent_congestion(cc, now);
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
		return UINT64_MAX;
	return cc->ops->pacing_rate(cc, rtt);
}

void
dpq_cc_get_info(const struct dpq_cc *cc, struct dpq_cc_info *out)
{
	out->phase = DPQ_CC_PHASE_OTHER;
	out->ssthresh = UINT64_MAX;
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
