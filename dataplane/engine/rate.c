/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate.c: delivery-rate samples (draft-cheng-iccrg-delivery-rate-
 * estimation §3). The sample of an ACK is taken from the newest packet it
 * acknowledges, the one with the largest delivered count at send time, so
 * that it spans the most recent flight; the send interval guards against
 * ACK compression inflating the rate, the ACK interval against bursts of
 * sends doing so.
 */
#include <string.h>

#include "dataplane/engine/rate.h"

#define US_PER_S	UINT64_C(1000000)

void
dpq_rate_init(struct dpq_rate *r)
{
	memset(r, 0, sizeof(*r));
}

void
dpq_rate_on_sent(struct dpq_rate *r, struct dpq_sent_pkt *p,
		uint64_t flight_before, uint64_t flight_after, uint64_t now)
{
	/* §3.2: a send into an empty pipe starts a new interval. */
	if (flight_before == 0) {
		r->first_sent_time = now;
		r->delivered_time = now;
	}
	p->first_sent_time = r->first_sent_time;
	p->delivered_time = r->delivered_time;
	p->delivered = r->delivered;
	p->lost = r->lost;
	p->tx_in_flight = flight_after > UINT32_MAX ? UINT32_MAX :
		(uint32_t)flight_after;
	if (r->app_limited != 0)
		p->flags |= DPQ_SENT_APP_LIMITED;
	else
		p->flags &= (uint8_t)~DPQ_SENT_APP_LIMITED;
}

void
dpq_rate_on_app_limited(struct dpq_rate *r, uint64_t bytes_in_flight)
{
	uint64_t mark = r->delivered + bytes_in_flight;

	/* §3.4: 0 means "not limited", so the mark is at least 1. */
	r->app_limited = mark != 0 ? mark : 1;
}

void
dpq_rate_sample_begin(struct dpq_rate_sample *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void
dpq_rate_on_acked(struct dpq_rate *r, struct dpq_rate_sample *rs,
		const struct dpq_sent_pkt *p, uint64_t now)
{
	r->delivered += p->bytes;
	r->delivered_time = now;
	/* §3.3: the newest packet (largest delivered at send time, ties to
	 * the later send) defines the sample. */
	if (rs->has_data && (p->delivered < rs->prior_delivered ||
	    (p->delivered == rs->prior_delivered &&
	     p->time_sent < rs->newest_sent)))
		return;
	rs->has_data = true;
	rs->prior_delivered = p->delivered;
	rs->prior_time = p->delivered_time;
	rs->is_app_limited = (p->flags & DPQ_SENT_APP_LIMITED) != 0;
	rs->send_elapsed = p->time_sent > p->first_sent_time ?
		p->time_sent - p->first_sent_time : 0;
	rs->ack_elapsed = now > p->delivered_time ?
		now - p->delivered_time : 0;
	rs->tx_in_flight = p->tx_in_flight;
	rs->lost = r->lost > p->lost ? r->lost - p->lost : 0;
	rs->newest_sent = p->time_sent;
	r->first_sent_time = p->time_sent;
}

void
dpq_rate_sample_end(struct dpq_rate *r, struct dpq_rate_sample *rs,
		uint64_t min_rtt)
{
	/* §3.4: the app-limited phase ends once its data is delivered. */
	if (r->app_limited != 0 && r->delivered > r->app_limited)
		r->app_limited = 0;
	if (!rs->has_data)
		return;
	rs->delivered = r->delivered - rs->prior_delivered;
	rs->interval = rs->send_elapsed > rs->ack_elapsed ?
		rs->send_elapsed : rs->ack_elapsed;
	/* §3.3: an interval shorter than min_rtt is likely compressed. */
	if (rs->interval == 0 || rs->interval < min_rtt)
		return;
	rs->valid = true;
	if (rs->delivered > UINT64_MAX / US_PER_S)
		rs->delivery_rate = rs->delivered / rs->interval * US_PER_S;
	else
		rs->delivery_rate = rs->delivered * US_PER_S / rs->interval;
}
