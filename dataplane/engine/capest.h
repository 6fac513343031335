/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capest.h: the bottleneck's capacity from packet-train dispersion, for
 * the first slow start of a paced loss-based controller (docs/recovery.md
 * "Pacing behind a shallow buffer").
 *
 * A paced slow start never sends faster than the path delivers until the
 * round that first exceeds the bottleneck rate, and that round overflows
 * a shallow queue an RTT before any ACK can show it. The capacity must be
 * known before: a train of datagrams sent back to back leaves the
 * bottleneck spaced at its rate, and the peer acknowledges every second
 * one at once (RFC 9000 §13.2.1), so the ACKs of the train come back
 * spaced at that rate too. Bytes acknowledged between the train's first
 * and last ACK over the time between them is one sample of the capacity.
 *
 * Trains are runs of datagrams sent at most DPQ_CAPEST_GAP_US apart
 * (the pacer sends them, pacer.h dpq_pacer_set_train); runs shorter than
 * DPQ_CAPEST_MIN_PKTS are ignored. A train's ACKs are those whose newest
 * newly acknowledged packet was sent within the train (ACKs arrive in
 * send order; one that acknowledges a later packet ends the train's).
 * A sample is discarded when:
 *   - fewer than three of its ACKs came back (one interval is all noise);
 *   - something was declared lost meanwhile;
 *   - the ACKs were not spread out at least DPQ_CAPEST_SPREAD times the
 *     train's own send span (the path did not space them: a lower bound
 *     of the capacity, not a measure of it).
 * The estimate is the median of the last DPQ_CAPEST_SAMPLES samples,
 * given only once there are that many and the middle ones agree: the
 * second smallest and the second largest lie within [median * 3/4,
 * median * 5/4]. ACK compression (a middlebox or a receiver that batches
 * ACKs) makes samples too high and scattered: the estimate stays unknown
 * and the caller behaves as without it. Jitter of the order of the
 * trains' dispersion does not scatter them so much as stretch them all
 * (a FIFO with jitter delivers a train's last datagram late more often
 * than its first): so the path's jitter, the spread of the trains' head
 * RTTs (their first ACK, which waited behind nothing of the train; the
 * second largest minus the smallest), must also stay below
 * DPQ_CAPEST_JITTER_NUM / DEN of the median ACK span. Once given, an
 * estimate stays until the samples agree on another.
 *
 * Pure: no clock (times come in), one connection, no allocation.
 */
#ifndef DPQ_ENGINE_CAPEST_H
#define DPQ_ENGINE_CAPEST_H

#include <stdbool.h>
#include <stdint.h>

/* Datagrams a train is asked to hold: small enough for any sane queue
 * (the 15 kB of the bench's shallow buffer holds ten). */
#define DPQ_CAPEST_TRAIN_PKTS	8
/* Fewer datagrams back to back are not a train. */
#define DPQ_CAPEST_MIN_PKTS	6
/* Sends at most this far apart (us) belong to one run. */
#define DPQ_CAPEST_GAP_US	2
/* Trains waiting for their ACKs. */
#define DPQ_CAPEST_PENDING	8
/* Samples the estimate is the median of. */
#define DPQ_CAPEST_SAMPLES	7
/* Largest head-RTT spread, as a part of the median ACK span. */
#define DPQ_CAPEST_JITTER_NUM	1
#define DPQ_CAPEST_JITTER_DEN	2
/* ACK span over send span below which a train says nothing. */
#define DPQ_CAPEST_SPREAD	4

/* A train sent, until its ACKs are in (times in us, offsets from
 * first_sent; bytes delivered as offsets from d1). */
struct dpq_capest_train {
	uint64_t first_sent;
	uint64_t d1;			/* delivered after its first ACK */
	uint32_t send_span;		/* last send - first_sent */
	uint32_t t1, tn;		/* its first and latest ACK */
	uint32_t dn;			/* delivered after the latest - d1 */
	uint8_t pkts;
	uint8_t acks;
	bool bad;			/* something was lost meanwhile */
};

struct dpq_capest {
	/* The run being sent. */
	uint64_t run_first;		/* us */
	uint32_t run_span;		/* us, last send - run_first */
	uint16_t run_pkts;
	/* Trains sent, oldest at head. */
	uint8_t pend_head, pend_n;
	struct dpq_capest_train pend[DPQ_CAPEST_PENDING];
	uint64_t lost;			/* the connection's, at the last ACK */
	/* Samples, bytes/s (a ring; UINT32_MAX at most: 34 Gbit/s), the
	 * ACK span each was measured over and the RTT of its train's head
	 * (us). */
	uint32_t sample[DPQ_CAPEST_SAMPLES];
	uint32_t span[DPQ_CAPEST_SAMPLES];
	uint32_t head_rtt[DPQ_CAPEST_SAMPLES];
	uint8_t sample_pos, sample_n;
	uint64_t estimate;		/* bytes/s; 0: unknown */
	uint64_t low;			/* its lower bound, bytes/s */
	/* Stats. */
	uint32_t trains, samples, rejected;
};

void dpq_capest_init(struct dpq_capest *e);

/* A datagram of bytes left at now. */
void dpq_capest_on_sent(struct dpq_capest *e, uint32_t bytes, uint64_t now);

/*
 * An ACK arrived at now; the newest in-flight packet it newly
 * acknowledged was sent at largest_sent; delivered and lost are the
 * connection's totals after it (struct dpq_cc_ack).
 */
void dpq_capest_on_ack(struct dpq_capest *e, uint64_t now,
		uint64_t largest_sent, uint64_t delivered, uint64_t lost);

/* The capacity in bytes/s; 0 while unknown. */
static inline uint64_t
dpq_capest_get(const struct dpq_capest *e)
{
	return e->estimate;
}

/* What it is at least, allowing for the samples' scatter: the median
 * minus half the distance between the second smallest and the second
 * largest sample (so at least 3/4 of it); 0 while unknown. Exact
 * samples give the estimate itself. */
static inline uint64_t
dpq_capest_low(const struct dpq_capest *e)
{
	return e->low;
}

#endif /* DPQ_ENGINE_CAPEST_H */
