/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capest.c: capacity from packet-train dispersion, see capest.h.
 */
#include <string.h>

#include "dataplane/engine/capest.h"

#define US_PER_S	UINT64_C(1000000)

void
dpq_capest_init(struct dpq_capest *e)
{
	memset(e, 0, sizeof(*e));
}

static void
sort(uint32_t *v, const uint32_t *in, unsigned int n)
{
	unsigned int i, j;
	uint32_t x;

	for (i = 0; i < n; i++) {
		x = in[i];
		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static void
add_sample(struct dpq_capest *e, uint64_t rate, uint64_t span,
		uint64_t head_rtt)
{
	uint32_t v[DPQ_CAPEST_SAMPLES], sp[DPQ_CAPEST_SAMPLES];
	uint32_t hr[DPQ_CAPEST_SAMPLES];
	const unsigned int n = DPQ_CAPEST_SAMPLES;
	uint64_t m;

	e->samples++;
	e->sample[e->sample_pos] = rate > UINT32_MAX ? UINT32_MAX :
		(uint32_t)rate;
	e->span[e->sample_pos] = (uint32_t)span;
	e->head_rtt[e->sample_pos] = (uint32_t)head_rtt;
	e->sample_pos = (uint8_t)((e->sample_pos + 1) % DPQ_CAPEST_SAMPLES);
	if (e->sample_n < DPQ_CAPEST_SAMPLES)
		e->sample_n++;
	if (e->sample_n < DPQ_CAPEST_SAMPLES)
		return;
	sort(v, e->sample, n);
	sort(sp, e->span, n);
	sort(hr, e->head_rtt, n);
	m = v[n / 2];
	/* capest.h: the middle samples must agree, else jitter or ACK
	 * compression decides them ... (a consistent estimate is kept
	 * until the next consistent one: the window a slow start ended at,
	 * or the pacing ceiling, must not flap) */
	if ((uint64_t)v[1] * 4 < m * 3 || (uint64_t)v[n - 2] * 4 > m * 5)
		return;
	/* ... and the path's jitter must be small beside the spans. */
	if ((uint64_t)(hr[n - 1] - hr[0]) * DPQ_CAPEST_JITTER_DEN >
	    (uint64_t)sp[n / 2] * DPQ_CAPEST_JITTER_NUM)
		return;
	e->estimate = m;
	e->low = m - (v[n - 2] - v[1]) / 2;
}

/* The oldest pending train has all the ACKs it will get. */
static void
finish(struct dpq_capest *e)
{
	const struct dpq_capest_train *t = &e->pend[e->pend_head];
	uint64_t span = t->tn - t->t1;

	e->pend_head = (uint8_t)((e->pend_head + 1) % DPQ_CAPEST_PENDING);
	e->pend_n--;
	if (t->acks < 3 || t->bad || t->tn <= t->t1 || t->dn == 0 ||
	    span < (uint64_t)DPQ_CAPEST_SPREAD * t->send_span) {
		e->rejected++;
		return;
	}
	add_sample(e, (uint64_t)t->dn * US_PER_S / span, span, t->t1);
}

/* The run just sent is over: keep it if it is a train. With no room
 * the train is not followed (its ACKs come an RTT later, after those of
 * the ones that are). */
static void
close_run(struct dpq_capest *e)
{
	struct dpq_capest_train *t;

	if (e->run_pkts >= DPQ_CAPEST_MIN_PKTS &&
	    e->pend_n < DPQ_CAPEST_PENDING) {
		t = &e->pend[(e->pend_head + e->pend_n) % DPQ_CAPEST_PENDING];
		memset(t, 0, sizeof(*t));
		t->first_sent = e->run_first;
		t->send_span = e->run_span;
		t->pkts = e->run_pkts > UINT8_MAX ? UINT8_MAX :
			(uint8_t)e->run_pkts;
		e->pend_n++;
		e->trains++;
	}
	e->run_pkts = 0;
}

void
dpq_capest_on_sent(struct dpq_capest *e, uint32_t bytes, uint64_t now)
{
	uint64_t last = e->run_first + e->run_span;

	(void)bytes;
	if (e->run_pkts != 0 && now >= last &&
	    now - last <= DPQ_CAPEST_GAP_US) {
		e->run_span = (uint32_t)(now - e->run_first);
		if (e->run_pkts < UINT16_MAX)
			e->run_pkts++;
		return;
	}
	close_run(e);
	e->run_first = now;
	e->run_span = 0;
	e->run_pkts = 1;
}

void
dpq_capest_on_ack(struct dpq_capest *e, uint64_t now, uint64_t largest_sent,
		uint64_t delivered, uint64_t lost)
{
	struct dpq_capest_train *t;
	uint64_t off;
	unsigned int i;

	/* A run nothing followed is over once an ACK comes. */
	if (e->run_pkts != 0 &&
	    now > e->run_first + e->run_span + DPQ_CAPEST_GAP_US)
		close_run(e);
	/* A loss spoils the trains whose ACKs are coming in. */
	if (lost != e->lost) {
		e->lost = lost;
		for (i = 0; i < e->pend_n; i++) {
			t = &e->pend[(e->pend_head + i) % DPQ_CAPEST_PENDING];
			if (t->acks > 0)
				t->bad = true;
		}
	}
	while (e->pend_n > 0) {
		t = &e->pend[e->pend_head];
		if (largest_sent < t->first_sent)
			return;		/* older packets */
		if (largest_sent > t->first_sent + t->send_span) {
			finish(e);	/* a later packet: the train is done */
			continue;
		}
		off = now > t->first_sent ? now - t->first_sent : 0;
		if (off > UINT32_MAX) {
			t->bad = true;	/* absurdly late */
			off = UINT32_MAX;
		}
		if (t->acks == 0) {
			t->t1 = (uint32_t)off;
			t->d1 = delivered;
		} else {
			t->tn = (uint32_t)off;
			t->dn = delivered - t->d1 > UINT32_MAX ? 0 :
				(uint32_t)(delivered - t->d1);
		}
		if (t->acks < UINT8_MAX)
			t->acks++;
		return;
	}
}
