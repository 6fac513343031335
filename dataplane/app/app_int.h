/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the server-side apps: the environment, the
 * per-connection context and its stream table. Not a public header.
 *
 * Re-entrancy: dpq_conn_stream_read() and dpq_conn_stream_reset() may run
 * on_stream_closed before they return (the stream finished inside the
 * call). Handlers therefore hold a stream with app_stream_hold() and let
 * go with app_stream_release(): a stream closed while held is only
 * unlinked, and freed on release.
 */
#ifndef DPQ_APP_APP_INT_H
#define DPQ_APP_APP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/app/app.h"

struct dpq_app_env {
	struct dpq_mem mem;
	int root_fd;			/* -1: no document root */
	size_t chunk;
	uint8_t *scratch;		/* chunk bytes: file reads, echo */
	/* The source pattern, DPQ_BENCH_PATTERN_PERIOD bytes longer than
	 * chunk so any offset's run is one memcpy away. */
	uint8_t *pattern;
	struct dpq_app_stats stats;
};

/* Head of every app's per-stream state. */
struct dpq_app_stream {
	uint64_t id;
	struct dpq_app_stream *next;	/* hash chain */
	uint32_t hold;			/* handlers running on it */
	bool dead;			/* closed while held: free on release */
};

struct dpq_app_conn;

/* What the app chosen for a connection plugs into its context. */
struct dpq_app_proto {
	const char *alpn;
	const struct dpq_app_ops *ops;
	void (*stream_free)(struct dpq_app_conn *ac, struct dpq_app_stream *s);
};

struct dpq_app_conn {
	struct dpq_app_env *env;
	const struct dpq_app_proto *proto;	/* NULL until established */
	struct dpq_app_stream **tab;		/* chained hash by stream id */
	uint32_t tab_size, count;
	bool closed;				/* on_closed ran */
};

static inline struct dpq_app_conn *
app_conn(struct dpq_conn *c)
{
	return dpq_conn_app_ctx(c);
}

/* Stream table: allocate size bytes (>= sizeof(struct dpq_app_stream),
 * zeroed) for stream id and link it. NULL: out of memory. */
struct dpq_app_stream *app_stream_new(struct dpq_app_conn *ac, uint64_t id,
		size_t size);
struct dpq_app_stream *app_stream_find(struct dpq_app_conn *ac, uint64_t id);
/* on_stream_closed: unlink and free now, or at release if held. */
void app_stream_closed(struct dpq_app_conn *ac, uint64_t id);
/* Free every stream (connection closed or context destroyed). */
void app_streams_free(struct dpq_app_conn *ac);

static inline struct dpq_app_stream *
app_stream_hold(struct dpq_app_conn *ac, uint64_t id)
{
	struct dpq_app_stream *s = app_stream_find(ac, id);

	if (s != NULL)
		s->hold++;
	return s;
}

/* Returns true if s was freed (it must not be touched any more). */
bool app_stream_release(struct dpq_app_conn *ac, struct dpq_app_stream *s);

/* Every stream the peer opens: client-initiated bidirectional? */
static inline bool
app_id_client_bidi(uint64_t id)
{
	return (id & 3) == 0;	/* RFC 9000 §2.1 */
}

extern const struct dpq_app_proto dpq_hq_server_proto;
extern const struct dpq_app_proto dpq_bench_echo_proto;
extern const struct dpq_app_proto dpq_bench_sink_proto;
extern const struct dpq_app_proto dpq_bench_source_proto;

/* Shared by the apps' on_established: bind the connection to proto. */
void app_conn_bind(struct dpq_conn *c, const struct dpq_app_proto *proto);

#endif /* DPQ_APP_APP_INT_H */
