/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate.h: delivery-rate estimation for one connection, as in
 * draft-cheng-iccrg-delivery-rate-estimation (also §4.5 of
 * draft-ietf-ccwg-bbr): every sent packet records the connection's
 * delivery state (the "P." fields in struct dpq_sent_pkt); when packets
 * are acknowledged, the newest of them gives a rate sample: bytes
 * delivered since it was sent over the longer of its send and ACK
 * intervals, flagged when the sender was application limited.
 *
 * The loss module drives it (sent, acked, lost); congestion controllers
 * read the sample through struct dpq_cc_ack. No clock, no connection:
 * times come in as now (us). One thread.
 */
#ifndef DPQ_ENGINE_RATE_H
#define DPQ_ENGINE_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/engine/sentmap.h"

/* The connection's delivery state ("C." in the draft). */
struct dpq_rate {
	uint64_t delivered;	/* bytes acknowledged, in total */
	uint64_t delivered_time; /* when delivered last grew (us) */
	uint64_t first_sent_time; /* send time of the newest packet acked */
	uint64_t lost;		/* bytes declared lost, in total */
	/* Application-limited mark: the delivered count at which the
	 * current app-limited phase ends; 0 = not app limited. */
	uint64_t app_limited;
};

/* One rate sample ("rs." in the draft), built over one ACK frame. */
struct dpq_rate_sample {
	uint64_t delivery_rate;	/* bytes per second; 0 if invalid */
	uint64_t delivered;	/* bytes delivered over interval */
	uint64_t interval;	/* us: max(send_elapsed, ack_elapsed) */
	uint64_t send_elapsed;
	uint64_t ack_elapsed;
	uint64_t prior_delivered; /* C.delivered when the packet left */
	uint64_t prior_time;	/* C.delivered_time then */
	uint64_t tx_in_flight;	/* bytes in flight after it left */
	uint64_t lost;		/* bytes lost since it left */
	uint64_t newest_sent;	/* its send time */
	bool is_app_limited;	/* sent while application limited */
	bool has_data;		/* some packet was acknowledged */
	bool valid;		/* delivery_rate is meaningful */
};

void dpq_rate_init(struct dpq_rate *r);

/*
 * Fill p's delivery fields as it is sent (draft §3.2 "upon sending").
 * flight_before: bytes in flight before this packet; after: with it.
 */
void dpq_rate_on_sent(struct dpq_rate *r, struct dpq_sent_pkt *p,
		uint64_t flight_before, uint64_t flight_after, uint64_t now);

/*
 * The sender has no data to send while the window would allow more
 * (draft §3.4): samples taken until what is in flight now is delivered
 * are marked application limited.
 */
void dpq_rate_on_app_limited(struct dpq_rate *r, uint64_t bytes_in_flight);

/* Start a sample for one ACK frame. */
void dpq_rate_sample_begin(struct dpq_rate_sample *rs);

/* Packet p was newly acknowledged at now (draft §3.3, per packet). */
void dpq_rate_on_acked(struct dpq_rate *r, struct dpq_rate_sample *rs,
		const struct dpq_sent_pkt *p, uint64_t now);

/* bytes of in-flight packets were declared lost. */
static inline void
dpq_rate_on_lost(struct dpq_rate *r, uint64_t bytes)
{
	r->lost += bytes;
}

/*
 * Finish the sample (draft §3.3 "upon receiving ACK"): compute the rate,
 * invalid when nothing was acknowledged or the interval is shorter than
 * min_rtt (us; 0 = unknown, then any interval > 0 is taken), which
 * guards against ACK compression.
 */
void dpq_rate_sample_end(struct dpq_rate *r, struct dpq_rate_sample *rs,
		uint64_t min_rtt);

#endif /* DPQ_ENGINE_RATE_H */
