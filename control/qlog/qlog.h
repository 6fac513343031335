/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qlog writer: turns a connection's trace records (dataplane/quic/trace.h)
 * into qlog 0.3 JSON-SEQ (draft-ietf-quic-qlog-main-schema, the QUIC and
 * recovery events of draft-ietf-quic-qlog-quic-events): one RS (0x1e),
 * one JSON object, one LF per record. qvis reads these files (.sqlog).
 *
 * Off the hot path: the shard copies records into a ring and the
 * management thread formats them; in the emulator, formatting happens
 * in the trace callback. Formatting is pure (caller's buffer); the FILE
 * helpers are a convenience on top.
 *
 * metrics_updated carries only the values that changed since the last
 * one written, as qlog asks; the state for that is in struct dpq_qlog.
 */
#ifndef DPQ_CONTROL_QLOG_H
#define DPQ_CONTROL_QLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dataplane/quic/trace.h"

/* Room one formatted event needs at most. */
#define DPQ_QLOG_EVENT_MAX	1024

struct dpq_qlog_conf {
	const char *title;	/* NULL: "dpquic" */
	bool server;		/* vantage point: server or client */
	/* Hex of the original destination CID (qlog group_id); NULL:
	 * none. Only [0-9a-f] are written. */
	const char *odcid_hex;
	/* Connection time (us) of time 0 in the file: record times are
	 * written as ms since then. */
	uint64_t reference_us;
};

struct dpq_qlog {
	uint64_t reference_us;
	struct dpq_trace_metrics last;	/* last values written */
	uint32_t last_pto;
	bool have_last;
};

/* Start a log: state and the header record. Returns the header's length
 * or -ENOSPC (buf too small; 512 bytes always suffice). */
int dpq_qlog_start(struct dpq_qlog *q, const struct dpq_qlog_conf *conf,
		char *buf, size_t cap);

/* Format one record. Returns its length, 0 when there is nothing to
 * write (metrics unchanged), -EINVAL for an unknown record type, or
 * -ENOSPC (DPQ_QLOG_EVENT_MAX always suffices). */
int dpq_qlog_format(struct dpq_qlog *q, const struct dpq_trace_ev *ev,
		char *buf, size_t cap);

/* The same, written to f. Return 0 or a negative errno. */
int dpq_qlog_write_start(struct dpq_qlog *q,
		const struct dpq_qlog_conf *conf, FILE *f);
int dpq_qlog_write(struct dpq_qlog *q, const struct dpq_trace_ev *ev,
		FILE *f);

#endif /* DPQ_CONTROL_QLOG_H */
