/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A test client app that writes arbitrary bytes on streams it opens and
 * records what comes back (bytes, FIN, RESET_STREAM, STOP_SENDING), to
 * talk to the server apps without the hq client's checks.
 */
#ifndef DPQ_TESTS_RAW_CLIENT_H
#define DPQ_TESTS_RAW_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/quic/conn.h"

struct raw_stream {
	/* set by the test */
	bool uni;
	const uint8_t *out;
	size_t out_len;
	bool fin;			/* FIN after out */
	size_t stop_after;		/* >0: STOP_SENDING after that many */
	/* results */
	uint64_t id;
	bool opened;
	size_t out_sent;
	bool fin_sent;
	uint8_t *in;
	size_t in_len, in_cap;
	bool got_fin, got_reset, got_stop, closed, stopped;
	uint64_t reset_code, stop_code;
};

struct raw_client {
	struct raw_stream *s;
	unsigned int n;
	bool established;
};

extern const struct dpq_app_ops raw_client_ops;

/* Every stream finished one way or another. */
bool raw_client_done(const struct raw_client *rc);
void raw_client_free(struct raw_client *rc);

#endif
