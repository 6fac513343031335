/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flow.c: flow-control and stream-count credit (flow.h, RFC 9000 §4).
 */
#include "dataplane/engine/flow.h"
#include "dataplane/engine/errors.h"
#include "dataplane/engine/varint.h"

#include <errno.h>

#define NO_LIMIT	UINT64_MAX

/* --- receive side ------------------------------------------------------ */

void
dpq_flow_rx_init(struct dpq_flow_rx *fc, uint64_t window,
		uint64_t window_max, uint64_t now)
{
	if (window > DPQ_VARINT_MAX)
		window = DPQ_VARINT_MAX;
	if (window_max < window)
		window_max = window;
	fc->max = window;
	fc->recvd = 0;
	fc->consumed = 0;
	fc->window = window;
	fc->window_max = window_max;
	fc->last_update = now;
	fc->pending = false;
}

int
dpq_flow_rx_check(const struct dpq_flow_rx *fc, uint64_t new_recvd)
{
	/* §4.1: a receiver MUST close with FLOW_CONTROL_ERROR if the
	 * sender violates the advertised limits. */
	return new_recvd > fc->max ? DPQ_TE_ERR(DPQ_TE_FLOW_CONTROL_ERROR) : 0;
}

int
dpq_flow_rx_on_recv(struct dpq_flow_rx *fc, uint64_t new_recvd)
{
	int rc = dpq_flow_rx_check(fc, new_recvd);

	if (rc == 0 && new_recvd > fc->recvd)
		fc->recvd = new_recvd;
	return rc;
}

void
dpq_flow_rx_consume(struct dpq_flow_rx *fc, uint64_t n, uint64_t now,
		uint64_t srtt)
{
	uint64_t nmax;

	fc->consumed += n;
	/* Raise once less than half a window of credit is left. */
	if (fc->consumed <= fc->max && fc->max - fc->consumed > fc->window / 2)
		return;
	if (srtt > 0 && now - fc->last_update < 2 * srtt &&
	    fc->window < fc->window_max) {
		fc->window = fc->window > fc->window_max / 2 ?
		    fc->window_max : fc->window * 2;
	}
	nmax = fc->consumed + fc->window;
	if (nmax > DPQ_VARINT_MAX)
		nmax = DPQ_VARINT_MAX;
	if (nmax > fc->max) {
		fc->max = nmax;
		fc->pending = true;
	}
	fc->last_update = now;
}

bool
dpq_flow_rx_due(const struct dpq_flow_rx *fc, uint64_t *value)
{
	if (!fc->pending)
		return false;
	*value = fc->max;
	return true;
}

void
dpq_flow_rx_on_sent(struct dpq_flow_rx *fc, uint64_t value)
{
	if (value == fc->max)
		fc->pending = false;
}

void
dpq_flow_rx_on_lost(struct dpq_flow_rx *fc, uint64_t value)
{
	/* A larger value sent since supersedes the lost one. */
	if (value == fc->max)
		fc->pending = true;
}

/* --- send side --------------------------------------------------------- */

void
dpq_flow_tx_init(struct dpq_flow_tx *fc, uint64_t initial_max)
{
	fc->max = initial_max;
	fc->sent = 0;
	fc->blocked_at = NO_LIMIT;
	fc->blocked_pending = false;
}

bool
dpq_flow_tx_on_max(struct dpq_flow_tx *fc, uint64_t max)
{
	if (max <= fc->max)
		return false;
	fc->max = max;
	fc->blocked_pending = false;
	return true;
}

void
dpq_flow_tx_add_sent(struct dpq_flow_tx *fc, uint64_t n)
{
	fc->sent += n;
}

void
dpq_flow_tx_note_blocked(struct dpq_flow_tx *fc)
{
	if (fc->sent < fc->max || fc->blocked_at == fc->max)
		return;
	fc->blocked_at = fc->max;
	fc->blocked_pending = true;
}

bool
dpq_flow_tx_blocked_due(const struct dpq_flow_tx *fc, uint64_t *limit)
{
	if (!fc->blocked_pending)
		return false;
	*limit = fc->max;
	return true;
}

void
dpq_flow_tx_on_blocked_sent(struct dpq_flow_tx *fc, uint64_t limit)
{
	if (limit == fc->max)
		fc->blocked_pending = false;
}

void
dpq_flow_tx_on_blocked_lost(struct dpq_flow_tx *fc, uint64_t limit)
{
	if (limit == fc->max && fc->sent >= fc->max)
		fc->blocked_pending = true;
}

/* --- stream counts the peer may open ----------------------------------- */

void
dpq_streams_rx_init(struct dpq_streams_rx *s, uint64_t window)
{
	if (window > DPQ_STREAMS_MAX)
		window = DPQ_STREAMS_MAX;
	s->max = window;
	s->opened = 0;
	s->closed = 0;
	s->window = window;
	s->pending = false;
}

int64_t
dpq_streams_rx_open(struct dpq_streams_rx *s, uint64_t index,
		uint64_t *first)
{
	/* §4.6: a stream id beyond the limit we sent. */
	if (index >= s->max)
		return DPQ_TE_ERR(DPQ_TE_STREAM_LIMIT_ERROR);
	if (index < s->opened)
		return 0;
	*first = s->opened;
	s->opened = index + 1;
	return (int64_t)(s->opened - *first);
}

void
dpq_streams_rx_on_closed(struct dpq_streams_rx *s)
{
	uint64_t nmax, step;

	if (s->closed < s->opened)
		s->closed++;
	nmax = s->closed + s->window;
	if (nmax > DPQ_STREAMS_MAX)
		nmax = DPQ_STREAMS_MAX;
	step = s->window / 2 ? s->window / 2 : 1;
	if (nmax >= s->max + step || (nmax == DPQ_STREAMS_MAX &&
	    nmax > s->max)) {
		s->max = nmax;
		s->pending = true;
	}
}

int
dpq_streams_rx_on_blocked(struct dpq_streams_rx *s, uint64_t limit)
{
	(void)s;
	return limit > DPQ_STREAMS_MAX ?
	    DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR) : 0;
}

bool
dpq_streams_rx_due(const struct dpq_streams_rx *s, uint64_t *value)
{
	if (!s->pending)
		return false;
	*value = s->max;
	return true;
}

void
dpq_streams_rx_on_sent(struct dpq_streams_rx *s, uint64_t value)
{
	if (value == s->max)
		s->pending = false;
}

void
dpq_streams_rx_on_lost(struct dpq_streams_rx *s, uint64_t value)
{
	if (value == s->max)
		s->pending = true;
}

/* --- stream counts we may open ----------------------------------------- */

int
dpq_streams_tx_init(struct dpq_streams_tx *s, uint64_t initial_max)
{
	s->max = 0;
	s->opened = 0;
	s->blocked_at = NO_LIMIT;
	s->blocked_pending = false;
	/* §18.2: initial_max_streams_* above 2^60 is a
	 * TRANSPORT_PARAMETER_ERROR. */
	if (initial_max > DPQ_STREAMS_MAX)
		return DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR);
	s->max = initial_max;
	return 0;
}

int
dpq_streams_tx_on_max(struct dpq_streams_tx *s, uint64_t max)
{
	/* §19.11: above 2^60 is a FRAME_ENCODING_ERROR; a value that
	 * does not raise the limit is ignored. */
	if (max > DPQ_STREAMS_MAX)
		return DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR);
	if (max <= s->max)
		return 0;
	s->max = max;
	s->blocked_pending = false;
	return 1;
}

int
dpq_streams_tx_open(struct dpq_streams_tx *s, uint64_t *index)
{
	if (s->opened >= s->max) {
		/* §4.6, §19.14: say so once per limit. */
		if (s->blocked_at != s->max) {
			s->blocked_at = s->max;
			s->blocked_pending = true;
		}
		return -EAGAIN;
	}
	*index = s->opened++;
	return 0;
}

bool
dpq_streams_tx_blocked_due(const struct dpq_streams_tx *s, uint64_t *limit)
{
	if (!s->blocked_pending)
		return false;
	*limit = s->max;
	return true;
}

void
dpq_streams_tx_on_blocked_sent(struct dpq_streams_tx *s, uint64_t limit)
{
	if (limit == s->max)
		s->blocked_pending = false;
}

void
dpq_streams_tx_on_blocked_lost(struct dpq_streams_tx *s, uint64_t limit)
{
	if (limit == s->max && s->opened >= s->max)
		s->blocked_pending = true;
}
