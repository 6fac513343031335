/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hq-interop client: fetches a list of paths over one connection, one
 * client-initiated bidirectional stream per path ("GET <path>\r\n" and
 * FIN), as many at once as max_concurrent and the peer's MAX_STREAMS
 * allow. Response bodies go to the caller's on_body; on_done reports each
 * request once with its result (status, reset code, bytes, times, and
 * SHA-256 of the body when asked).
 *
 * The connection is created with dpq_hq_client_ops and the client as its
 * app_ctx; requests start on on_established, or on on_early when the
 * connection has 0-RTT keys (they then travel in 0-RTT). A stream open refused by
 * MAX_STREAMS (-EAGAIN) is retried on the next stream event; the engine
 * raises no event when MAX_STREAMS grows, so an owner whose requests may
 * be blocked with no stream left open calls dpq_hq_client_poll() from its
 * loop (cheap when nothing waits).
 *
 * Not on the server's packet path: hashing uses GnuTLS. Thread: the
 * connection's.
 */
#ifndef DPQ_APP_HQ_CLIENT_H
#define DPQ_APP_HQ_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/engine/mem.h"
#include "dataplane/quic/conn.h"

enum dpq_hq_status {
	DPQ_HQ_OK = 0,		/* whole body and FIN received */
	DPQ_HQ_RESET,		/* server reset or stopped: app_error */
	DPQ_HQ_ABORTED,		/* connection closed first */
	DPQ_HQ_FAILED,		/* local error (stream open, write) */
};

struct dpq_hq_result {
	enum dpq_hq_status status;
	uint64_t app_error;	/* the server's code when status RESET */
	uint64_t bytes;		/* body bytes received */
	/* conf.clock() readings (us); 0 when not reached or no clock. */
	uint64_t t_start;	/* stream opened, request written */
	uint64_t t_first_byte;	/* first body byte read */
	uint64_t t_done;	/* on_done */
	bool has_sha256;	/* status OK and conf.sha256 */
	uint8_t sha256[32];
};

struct dpq_hq_client_conf {
	const char *const *paths;	/* kept by the caller until destroy */
	unsigned int npaths;
	unsigned int max_concurrent;	/* 0: only MAX_STREAMS limits */
	bool sha256;
	void (*on_body)(void *arg, unsigned int idx, const uint8_t *data,
			size_t len);
	void (*on_done)(void *arg, unsigned int idx,
			const struct dpq_hq_result *r);
	uint64_t (*clock)(void *arg);	/* us; NULL: no timing */
	void *arg;
	const struct dpq_mem *mem;	/* NULL: libc */
};

struct dpq_hq_client_stats {
	unsigned int started, ok, failed;	/* failed: any non-OK */
	unsigned int open_blocked;		/* -EAGAIN from stream open */
	uint64_t bytes;
};

struct dpq_hq_client;

/* Paths must be non-empty, without CR or LF, and fit a request of
 * DPQ_HQ_MAX_REQUEST bytes. Returns 0, -EINVAL or -ENOMEM. */
int dpq_hq_client_create(const struct dpq_hq_client_conf *conf,
		struct dpq_hq_client **out);
void dpq_hq_client_destroy(struct dpq_hq_client *cl);

extern const struct dpq_app_ops dpq_hq_client_ops;

/* Open streams for waiting requests if the connection now allows it. */
void dpq_hq_client_poll(struct dpq_hq_client *cl, struct dpq_conn *c);
/* Every request reported by on_done. */
bool dpq_hq_client_done(const struct dpq_hq_client *cl);
/* Result of request idx once on_done reported it; NULL while pending. */
const struct dpq_hq_result *dpq_hq_client_result(
		const struct dpq_hq_client *cl, unsigned int idx);
void dpq_hq_client_get_stats(const struct dpq_hq_client *cl,
		struct dpq_hq_client_stats *st);

#endif /* DPQ_APP_HQ_CLIENT_H */
