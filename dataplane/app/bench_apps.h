/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark apps, one per ALPN, each on client-initiated bidirectional
 * streams (any number per connection):
 *  - "dpq-echo": every byte read is written back on the same stream, FIN
 *    after the peer's FIN. Backpressure: the app stops reading while its
 *    per-stream buffer waits for send buffer space.
 *  - "dpq-sink": reads and discards; at the peer's FIN it replies with
 *    the byte count in decimal and "\n", then FIN. A unidirectional
 *    stream is drained with no reply.
 *  - "dpq-source": the request "SEND <n>\n" (or "\r\n", or ended by FIN;
 *    n decimal, at most DPQ_BENCH_SOURCE_MAX) is answered with n bytes of
 *    dpq_bench_pattern() from offset 0, then FIN.
 * Errors reset the stream (and STOP_SENDING while the request side is
 * open) with the codes below; other unidirectional streams get
 * STOP_SENDING with DPQ_BENCH_ERR_STREAM_CREATION.
 */
#ifndef DPQ_APP_BENCH_APPS_H
#define DPQ_APP_BENCH_APPS_H

#include <stdint.h>

#include "dataplane/app/app.h"

#define DPQ_BENCH_ERR_STREAM_CREATION	0x103
#define DPQ_BENCH_ERR_BAD_REQUEST	0x400
#define DPQ_BENCH_ERR_TOO_LONG		0x414
#define DPQ_BENCH_ERR_INTERNAL		0x500

/* Longest "SEND <n>" request, line end included. */
#define DPQ_BENCH_MAX_REQUEST	64
#define DPQ_BENCH_SOURCE_MAX	(1ull << 50)
/* Echo's per-stream buffer. */
#define DPQ_BENCH_ECHO_BUF	16384

/* The source pattern repeats with this (prime) period, so a byte that
 * lands at the wrong offset shows unless it moved by a multiple of it. */
#define DPQ_BENCH_PATTERN_PERIOD	251

static inline uint8_t
dpq_bench_pattern(uint64_t off)
{
	return (uint8_t)((off % DPQ_BENCH_PATTERN_PERIOD) * 97 + 13);
}

#endif /* DPQ_APP_BENCH_APPS_H */
