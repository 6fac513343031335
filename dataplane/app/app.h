/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Applications a dpquic endpoint serves over its connections, picked by
 * the negotiated ALPN: "hq-interop" (HTTP/0.9 file server, hq_server.h)
 * and the benchmark apps "dpq-echo", "dpq-sink", "dpq-source"
 * (bench_apps.h).
 *
 * Ownership: one struct dpq_app_env per shard (its configuration, a
 * scratch buffer and plain, non-atomic counters: only that shard writes
 * them), one struct dpq_app_conn per connection (the connection's app
 * context). A connection created with dpq_app_server_ops and a
 * dpq_app_conn context runs exactly one app: the one its ALPN names,
 * chosen on on_established. Per-stream state is allocated when a stream
 * opens and freed when it closes; nothing is allocated per packet.
 *
 * Thread: all functions are shard only, except env create/destroy
 * (before the shard runs / after it stopped) and reading the stats.
 */
#ifndef DPQ_APP_APP_H
#define DPQ_APP_APP_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/engine/mem.h"
#include "dataplane/quic/conn.h"

/* ALPN names (RFC 7301); "hq-interop" is the QUIC interop runner's. */
#define DPQ_ALPN_HQ		"hq-interop"
#define DPQ_ALPN_ECHO		"dpq-echo"
#define DPQ_ALPN_SINK		"dpq-sink"
#define DPQ_ALPN_SOURCE		"dpq-source"

/* Every ALPN dpq_app_by_alpn() knows, for a server's TLS offer. */
extern const char *const dpq_app_alpns[];
#define DPQ_APP_ALPN_COUNT	4

/* Largest file read / source write per stream write call. */
#define DPQ_APP_CHUNK_DEFAULT	65536
#define DPQ_APP_CHUNK_MAX	(1u << 20)

struct dpq_app_env_conf {
	/* hq-interop document root (a directory); NULL: every request is
	 * answered DPQ_HQ_ERR_NOT_FOUND. */
	const char *root;
	const struct dpq_mem *mem;	/* NULL: libc */
	size_t chunk;			/* 0: DPQ_APP_CHUNK_DEFAULT */
};

/* hq-interop server counters (see hq_server.h for the codes). */
struct dpq_hq_server_stats {
	uint64_t requests;		/* complete request lines parsed */
	uint64_t responses;		/* whole file written, FIN queued */
	uint64_t bytes_served;		/* file bytes queued on streams */
	uint64_t err_bad_request;	/* DPQ_HQ_ERR_BAD_REQUEST */
	uint64_t err_forbidden;		/* DPQ_HQ_ERR_FORBIDDEN */
	uint64_t err_not_found;		/* DPQ_HQ_ERR_NOT_FOUND */
	uint64_t err_too_long;		/* DPQ_HQ_ERR_TOO_LONG */
	uint64_t err_internal;		/* DPQ_HQ_ERR_INTERNAL */
	uint64_t err_stream_refused;	/* DPQ_HQ_ERR_STREAM_CREATION */
	uint64_t peer_aborted;		/* client reset / STOP_SENDING */
};

/* Benchmark app counters, all three apps together. */
struct dpq_bench_stats {
	uint64_t streams;		/* streams served */
	uint64_t bytes_in;		/* read from streams */
	uint64_t bytes_out;		/* queued on streams */
	uint64_t errors;		/* bad requests, refused streams */
};

struct dpq_app_stats {
	struct dpq_hq_server_stats hq;
	struct dpq_bench_stats bench;
	uint64_t conns;			/* connections given an app */
	uint64_t conns_no_app;		/* ALPN with no app: closed */
};

struct dpq_app_env;
struct dpq_app_conn;

/* Create an environment: opens conf->root (O_DIRECTORY) once. Returns 0,
 * -EINVAL, -ENOMEM, or -errno from opening the root. */
int dpq_app_env_create(const struct dpq_app_env_conf *conf,
		struct dpq_app_env **out);
void dpq_app_env_destroy(struct dpq_app_env *env);
const struct dpq_app_stats *dpq_app_env_stats(const struct dpq_app_env *env);

/* Per connection context, given as the connection's app_ctx. Destroy it
 * after dpq_conn_destroy() (it frees the streams' state left over). */
struct dpq_app_conn *dpq_app_conn_create(struct dpq_app_env *env);
void dpq_app_conn_destroy(struct dpq_app_conn *ac);
/* Streams with app state on this connection (freed at close). */
unsigned int dpq_app_conn_streams(const struct dpq_app_conn *ac);
/* The same, shaped for struct dpq_shard_app (arg is the env). */
void *dpq_app_conn_ctx(void *env, struct dpq_conn *c);
void dpq_app_conn_ctx_free(void *env, struct dpq_conn *c, void *ctx);

/* The app chosen by ALPN: dispatches to dpq_app_by_alpn(alpn) on
 * on_established; an ALPN with no app closes the connection with
 * application error DPQ_HQ_ERR_INTERNAL. app_ctx: a dpq_app_conn. */
extern const struct dpq_app_ops dpq_app_server_ops;

/* The ops of the app for an ALPN, or NULL. They too expect a dpq_app_conn
 * as app_ctx, so a connection whose app is known in advance may use them
 * directly. */
const struct dpq_app_ops *dpq_app_by_alpn(const char *alpn);

#endif /* DPQ_APP_APP_H */
