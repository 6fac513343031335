/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The app environment, per-connection contexts with their stream tables,
 * and the ALPN dispatch (dpq_app_server_ops). See app.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/app/app_int.h"
#include "dataplane/app/bench_apps.h"
#include "dataplane/app/hq_server.h"

#define TAB_INITIAL	16

/* TLS alert no_application_protocol as a QUIC transport error
 * (CRYPTO_ERROR range, RFC 9001 §4.8). */
#define APP_TE_NO_APP	0x178

const char *const dpq_app_alpns[] = {
	DPQ_ALPN_HQ, DPQ_ALPN_ECHO, DPQ_ALPN_SINK, DPQ_ALPN_SOURCE, NULL,
};

static const struct dpq_app_proto *const protos[] = {
	&dpq_hq_server_proto,
	&dpq_bench_echo_proto,
	&dpq_bench_sink_proto,
	&dpq_bench_source_proto,
};

/* ---- environment -------------------------------------------------------- */

int
dpq_app_env_create(const struct dpq_app_env_conf *conf,
		struct dpq_app_env **out)
{
	struct dpq_mem mem = conf && conf->mem ? *conf->mem : DPQ_MEM_LIBC;
	struct dpq_app_env *env;
	size_t i;

	if (conf == NULL || out == NULL || conf->chunk > DPQ_APP_CHUNK_MAX)
		return -EINVAL;
	env = dpq_mem_alloc(&mem, sizeof(*env));
	if (env == NULL)
		return -ENOMEM;
	memset(env, 0, sizeof(*env));
	env->mem = mem;
	env->root_fd = -1;
	env->chunk = conf->chunk ? conf->chunk : DPQ_APP_CHUNK_DEFAULT;
	env->scratch = dpq_mem_alloc(&mem, env->chunk);
	env->pattern = dpq_mem_alloc(&mem,
			env->chunk + DPQ_BENCH_PATTERN_PERIOD);
	if (env->scratch == NULL || env->pattern == NULL) {
		dpq_app_env_destroy(env);
		return -ENOMEM;
	}
	for (i = 0; i < env->chunk + DPQ_BENCH_PATTERN_PERIOD; i++)
		env->pattern[i] = dpq_bench_pattern(i);
	if (conf->root != NULL) {
		env->root_fd = open(conf->root,
				O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (env->root_fd < 0) {
			int err = -errno;

			dpq_app_env_destroy(env);
			return err;
		}
	}
	*out = env;
	return 0;
}

void
dpq_app_env_destroy(struct dpq_app_env *env)
{
	struct dpq_mem mem;

	if (env == NULL)
		return;
	mem = env->mem;
	if (env->root_fd >= 0)
		close(env->root_fd);
	dpq_mem_free(&mem, env->scratch);
	dpq_mem_free(&mem, env->pattern);
	dpq_mem_free(&mem, env);
}

const struct dpq_app_stats *
dpq_app_env_stats(const struct dpq_app_env *env)
{
	return &env->stats;
}

/* ---- per-connection context --------------------------------------------- */

struct dpq_app_conn *
dpq_app_conn_create(struct dpq_app_env *env)
{
	struct dpq_app_conn *ac;

	if (env == NULL)
		return NULL;
	ac = dpq_mem_alloc(&env->mem, sizeof(*ac));
	if (ac == NULL)
		return NULL;
	memset(ac, 0, sizeof(*ac));
	ac->env = env;
	ac->tab_size = TAB_INITIAL;
	ac->tab = dpq_mem_alloc(&env->mem, TAB_INITIAL * sizeof(*ac->tab));
	if (ac->tab == NULL) {
		dpq_mem_free(&env->mem, ac);
		return NULL;
	}
	memset(ac->tab, 0, TAB_INITIAL * sizeof(*ac->tab));
	return ac;
}

void
dpq_app_conn_destroy(struct dpq_app_conn *ac)
{
	if (ac == NULL)
		return;
	app_streams_free(ac);
	dpq_mem_free(&ac->env->mem, ac->tab);
	dpq_mem_free(&ac->env->mem, ac);
}

unsigned int
dpq_app_conn_streams(const struct dpq_app_conn *ac)
{
	return ac->count;
}

void *
dpq_app_conn_ctx(void *env, struct dpq_conn *c)
{
	(void)c;
	return dpq_app_conn_create(env);
}

void
dpq_app_conn_ctx_free(void *env, struct dpq_conn *c, void *ctx)
{
	(void)env;
	(void)c;
	dpq_app_conn_destroy(ctx);
}

/* ---- stream table ------------------------------------------------------- */

static uint32_t
slot_of(const struct dpq_app_conn *ac, uint64_t id)
{
	uint64_t h = (id >> 2) * 0x9e3779b97f4a7c15ull + (id & 3);

	return (uint32_t)(h >> 32) & (ac->tab_size - 1);
}

static int
tab_grow(struct dpq_app_conn *ac)
{
	struct dpq_app_stream **old = ac->tab, **nt;
	uint32_t old_size = ac->tab_size, i;

	nt = dpq_mem_alloc(&ac->env->mem, 2 * (size_t)old_size * sizeof(*nt));
	if (nt == NULL)
		return -ENOMEM;
	memset(nt, 0, 2 * (size_t)old_size * sizeof(*nt));
	ac->tab = nt;
	ac->tab_size = 2 * old_size;
	for (i = 0; i < old_size; i++) {
		struct dpq_app_stream *s = old[i], *next;

		for (; s != NULL; s = next) {
			uint32_t k = slot_of(ac, s->id);

			next = s->next;
			s->next = nt[k];
			nt[k] = s;
		}
	}
	dpq_mem_free(&ac->env->mem, old);
	return 0;
}

struct dpq_app_stream *
app_stream_new(struct dpq_app_conn *ac, uint64_t id, size_t size)
{
	struct dpq_app_stream *s;
	uint32_t k;

	if (ac->count + 1 > ac->tab_size && tab_grow(ac) != 0)
		return NULL;
	s = dpq_mem_alloc(&ac->env->mem, size);
	if (s == NULL)
		return NULL;
	memset(s, 0, size);
	s->id = id;
	k = slot_of(ac, id);
	s->next = ac->tab[k];
	ac->tab[k] = s;
	ac->count++;
	return s;
}

struct dpq_app_stream *
app_stream_find(struct dpq_app_conn *ac, uint64_t id)
{
	struct dpq_app_stream *s;

	for (s = ac->tab[slot_of(ac, id)]; s != NULL; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void
stream_unlink(struct dpq_app_conn *ac, struct dpq_app_stream *s)
{
	struct dpq_app_stream **pp = &ac->tab[slot_of(ac, s->id)];

	while (*pp != NULL && *pp != s)
		pp = &(*pp)->next;
	if (*pp == s) {
		*pp = s->next;
		ac->count--;
	}
	s->next = NULL;
}

static void
stream_free(struct dpq_app_conn *ac, struct dpq_app_stream *s)
{
	if (ac->proto != NULL && ac->proto->stream_free != NULL)
		ac->proto->stream_free(ac, s);
	dpq_mem_free(&ac->env->mem, s);
}

void
app_stream_closed(struct dpq_app_conn *ac, uint64_t id)
{
	struct dpq_app_stream *s = app_stream_find(ac, id);

	if (s == NULL)
		return;
	stream_unlink(ac, s);
	if (s->hold > 0)
		s->dead = true;
	else
		stream_free(ac, s);
}

bool
app_stream_release(struct dpq_app_conn *ac, struct dpq_app_stream *s)
{
	if (--s->hold > 0 || !s->dead)
		return false;
	stream_free(ac, s);
	return true;
}

void
app_streams_free(struct dpq_app_conn *ac)
{
	uint32_t i;

	for (i = 0; i < ac->tab_size; i++) {
		struct dpq_app_stream *s = ac->tab[i], *next;

		for (; s != NULL; s = next) {
			next = s->next;
			s->next = NULL;
			ac->count--;
			/* A held stream is freed by its handler's release. */
			if (s->hold > 0)
				s->dead = true;
			else
				stream_free(ac, s);
		}
		ac->tab[i] = NULL;
	}
}

void
app_conn_bind(struct dpq_conn *c, const struct dpq_app_proto *proto)
{
	struct dpq_app_conn *ac = app_conn(c);

	if (ac->proto == NULL) {
		ac->proto = proto;
		ac->env->stats.conns++;
	}
}

/* ---- ALPN dispatch ------------------------------------------------------ */

const struct dpq_app_ops *
dpq_app_by_alpn(const char *alpn)
{
	size_t i;

	if (alpn == NULL)
		return NULL;
	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (strcmp(protos[i]->alpn, alpn) == 0)
			return protos[i]->ops;
	return NULL;
}

static const struct dpq_app_ops *
ops_of(struct dpq_conn *c)
{
	struct dpq_app_conn *ac = app_conn(c);

	return ac != NULL && ac->proto != NULL ? ac->proto->ops : NULL;
}

static void
mux_established(struct dpq_conn *c, const char *alpn)
{
	struct dpq_app_conn *ac = app_conn(c);
	const struct dpq_app_ops *ops = dpq_app_by_alpn(alpn);

	/* Bound already when 0-RTT was accepted (mux_early). */
	if (ac == NULL || ac->proto != NULL)
		return;
	if (ops == NULL || ops->on_established == NULL) {
		ac->env->stats.conns_no_app++;
		dpq_conn_close(c, false, APP_TE_NO_APP, "no app for ALPN");
		return;
	}
	ops->on_established(c, alpn);
}

static void
mux_stream_open(struct dpq_conn *c, uint64_t id)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_stream_open != NULL)
		ops->on_stream_open(c, id);
	else if (ops == NULL)	/* before the handshake completed */
		(void)dpq_conn_stream_stop(c, id, DPQ_HQ_ERR_STREAM_CREATION);
}

static void
mux_stream_data(struct dpq_conn *c, uint64_t id)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_stream_data != NULL)
		ops->on_stream_data(c, id);
}

static void
mux_stream_writable(struct dpq_conn *c, uint64_t id)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_stream_writable != NULL)
		ops->on_stream_writable(c, id);
}

static void
mux_stream_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error,
		bool stop)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_stream_reset != NULL)
		ops->on_stream_reset(c, id, app_error, stop);
}

static void
mux_stream_closed(struct dpq_conn *c, uint64_t id)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_stream_closed != NULL)
		ops->on_stream_closed(c, id);
}

static void
mux_closed(struct dpq_conn *c)
{
	const struct dpq_app_ops *ops = ops_of(c);

	if (ops != NULL && ops->on_closed != NULL)
		ops->on_closed(c);
}

/* 0-RTT accepted (RFC 9001 §4.6.1): the ALPN is known, requests may
 * arrive and be answered before the handshake completes. */
static void
mux_early(struct dpq_conn *c, const char *alpn)
{
	mux_established(c, alpn);
}

const struct dpq_app_ops dpq_app_server_ops = {
	.on_established = mux_established,
	.on_early = mux_early,
	.on_stream_open = mux_stream_open,
	.on_stream_data = mux_stream_data,
	.on_stream_writable = mux_stream_writable,
	.on_stream_reset = mux_stream_reset,
	.on_stream_closed = mux_stream_closed,
	.on_closed = mux_closed,
};
