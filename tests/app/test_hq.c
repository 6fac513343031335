/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hq-interop server and client end to end over two dpq_conn in memory:
 * byte-exact fetches checked against SHA-256 computed here, concurrency
 * and MAX_STREAMS, path traversal refusals, malformed and oversized
 * requests, unidirectional streams, peer aborts, a lossy link; plus the
 * request parser and dpq_hq_open() on their own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/crypto.h>

#include "conn_pair.h"
#include "dataplane/app/app.h"
#include "dataplane/app/hq_client.h"
#include "dataplane/app/hq_server.h"
#include "raw_client.h"

/* ---- temp document root ------------------------------------------------ */

static char tmpdir[64];	/* <tmp>/www is the root, <tmp>/secret outside */
static char rootdir[96];

static uint8_t *
rand_bytes(size_t n, uint64_t seed)
{
	uint8_t *b = malloc(n ? n : 1);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)(x >> 24);
	}
	return b;
}

static void
put_file(const char *rel, const uint8_t *data, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", rootdir, rel);
	f = fopen(path, "wb");
	assert_non_null(f);
	if (n > 0)
		assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static const size_t sizes[] = { 0, 1024, 1 << 20, 5 << 20 };
static uint8_t *content[4];

static int
setup_root(void **state)
{
	char p[256], q[256];

	(void)state;
	strcpy(tmpdir, "/tmp/dpq-app-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(rootdir, sizeof(rootdir), "%s/www", tmpdir);
	assert_int_equal(mkdir(rootdir, 0755), 0);
	snprintf(p, sizeof(p), "%s/secret", tmpdir);
	{
		FILE *f = fopen(p, "w");

		assert_non_null(f);
		fputs("SECRET", f);
		fclose(f);
	}
	for (int i = 0; i < 4; i++) {
		char name[32];

		content[i] = rand_bytes(sizes[i], (uint64_t)i + 1);
		snprintf(name, sizeof(name), "f%d", i);
		put_file(name, content[i], sizes[i]);
	}
	put_file("hello", (const uint8_t *)"hello world\n", 12);
	snprintf(p, sizeof(p), "%s/sub", rootdir);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file("sub/inner", (const uint8_t *)"inner", 5);
	/* Absolute symlinks escaping the root: to a file and a directory. */
	snprintf(p, sizeof(p), "%s/secret", tmpdir);
	snprintf(q, sizeof(q), "%s/escape", rootdir);
	assert_int_equal(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/escdir", rootdir);
	assert_int_equal(symlink(tmpdir, q), 0);
	/* A symlink that stays inside is refused too (policy). */
	snprintf(q, sizeof(q), "%s/inlink", rootdir);
	assert_int_equal(symlink("hello", q), 0);
	snprintf(q, sizeof(q), "%s/fifo", rootdir);
	assert_int_equal(mkfifo(q, 0644), 0);
	return 0;
}

static void
rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char p[512];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static int
teardown_root(void **state)
{
	(void)state;
	rm_tree(tmpdir);
	for (int i = 0; i < 4; i++)
		free(content[i]);
	return 0;
}

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/* ---- parser and open ----------------------------------------------------- */

static uint64_t
parse(const char *req, size_t len, char *out, size_t cap)
{
	return dpq_hq_parse_request((const uint8_t *)req,
			(const uint8_t *)req + len, out, cap);
}

#define PARSE(s, out) parse(s, sizeof(s) - 1, out, sizeof(out))

static void
test_parse_request(void **state)
{
	char out[256];
	char deep[200];
	size_t o = 4;

	(void)state;
	assert_int_equal(PARSE("GET /a/b.txt", out), 0);
	assert_string_equal(out, "a/b.txt");
	assert_int_equal(PARSE("GET /%41b%7e", out), 0);
	assert_string_equal(out, "Ab~");
	assert_int_equal(PARSE("GET /..x/y..", out), 0);
	assert_string_equal(out, "..x/y..");
	/* traversal and odd components */
	assert_int_equal(PARSE("GET /", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /../etc/passwd", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a/../../x", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a/..", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /%2e%2e/x", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /%2E%2e", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /.%2e/x", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /%2e", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a%2fb", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a%2F..%2Fb", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a%00b", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a\0b", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a\tb", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a\x7f", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a%0a", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET //etc/passwd", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a//b", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /a/", out), DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(PARSE("GET /./a", out), DPQ_HQ_ERR_FORBIDDEN);
	/* malformed */
	assert_int_equal(PARSE("", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET ", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("get /a", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("POST /a", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET a", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET  /a", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET /a HTTP/1.0", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET /a%4", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET /a%", out), DPQ_HQ_ERR_BAD_REQUEST);
	assert_int_equal(PARSE("GET /a%zz", out), DPQ_HQ_ERR_BAD_REQUEST);
	/* output bound */
	{
		char small[4];

		assert_int_equal(PARSE("GET /abc", small), 0);
		assert_int_equal(PARSE("GET /abcd", small),
				DPQ_HQ_ERR_TOO_LONG);
	}
	/* depth: 32 components pass, 33 do not */
	memcpy(deep, "GET ", 4);
	for (int i = 0; i < 33; i++) {
		deep[o++] = '/';
		deep[o++] = 'd';
	}
	assert_int_equal(parse(deep, o - 2, out, sizeof(out)), 0);
	assert_int_equal(parse(deep, o, out, sizeof(out)),
			DPQ_HQ_ERR_FORBIDDEN);
	/* Every truncation of a valid request parses without reading past
	 * end (ASan watches the heap copy). */
	{
		static const char req[] = "GET /sub/%41nner";
		size_t n = sizeof(req) - 1;

		for (size_t k = 0; k <= n; k++) {
			char *h = malloc(k ? k : 1);

			memcpy(h, req, k);
			(void)dpq_hq_parse_request((uint8_t *)h,
					(uint8_t *)h + k, out, sizeof(out));
			free(h);
		}
		assert_int_equal(PARSE("GET /sub/%41nner", out), 0);
		assert_string_equal(out, "sub/Anner");
	}
}

static void
test_open(void **state)
{
	int root = open(rootdir, O_RDONLY | O_DIRECTORY);
	int fds = count_fds();
	uint64_t size;
	int fd;

	(void)state;
	assert_true(root >= 0);
	assert_int_equal(dpq_hq_open(root, "hello", &fd, &size), 0);
	assert_true(fd >= 0);
	assert_int_equal(size, 12);
	close(fd);
	assert_int_equal(dpq_hq_open(root, "sub/inner", &fd, &size), 0);
	assert_int_equal(size, 5);
	close(fd);
	assert_int_equal(dpq_hq_open(root, "nope", &fd, &size),
			DPQ_HQ_ERR_NOT_FOUND);
	assert_int_equal(fd, -1);
	assert_int_equal(dpq_hq_open(root, "sub/nope", &fd, &size),
			DPQ_HQ_ERR_NOT_FOUND);
	assert_int_equal(dpq_hq_open(root, "hello/x", &fd, &size),
			DPQ_HQ_ERR_NOT_FOUND);
	assert_int_equal(dpq_hq_open(root, "sub", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "escape", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "escdir/secret", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "escdir/www/hello", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "inlink", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	/* A FIFO is refused and the open does not block. */
	assert_int_equal(dpq_hq_open(root, "fifo", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "..", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "/etc/passwd", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(root, "", &fd, &size),
			DPQ_HQ_ERR_FORBIDDEN);
	assert_int_equal(dpq_hq_open(-1, "hello", &fd, &size),
			DPQ_HQ_ERR_NOT_FOUND);
	assert_int_equal(count_fds(), fds);	/* nothing leaked */
	close(root);
}

/* ---- fetch harness ------------------------------------------------------- */

#define MAX_PATHS 32

struct fetch {
	struct pair p;
	struct dpq_app_env *env;
	struct dpq_app_conn *ac;
	struct dpq_hq_client *cl;
	uint8_t *body[MAX_PATHS];
	size_t len[MAX_PATHS], cap[MAX_PATHS];
	unsigned int done_calls[MAX_PATHS];
	unsigned int order[MAX_PATHS], ndone;
};

static uint64_t
vclock(void *arg)
{
	struct fetch *f = arg;

	return f->p.now;
}

static void
on_body(void *arg, unsigned int idx, const uint8_t *d, size_t n)
{
	struct fetch *f = arg;

	if (f->len[idx] + n > f->cap[idx]) {
		f->cap[idx] = (f->len[idx] + n) * 2;
		f->body[idx] = realloc(f->body[idx], f->cap[idx]);
		assert_non_null(f->body[idx]);
	}
	memcpy(f->body[idx] + f->len[idx], d, n);
	f->len[idx] += n;
}

static void
on_done(void *arg, unsigned int idx, const struct dpq_hq_result *r)
{
	struct fetch *f = arg;

	(void)r;
	f->done_calls[idx]++;
	f->order[f->ndone++] = idx;
}

static bool
fetch_done(struct pair *p, void *arg)
{
	struct fetch *f = arg;

	dpq_hq_client_poll(f->cl, p->client);
	return dpq_hq_client_done(f->cl);
}

static void
fetch_setup(struct fetch *f, const char *root, const char *const *paths,
		unsigned int n, unsigned int max_conc, double loss)
{
	struct dpq_app_env_conf ec = { .root = root };
	struct dpq_hq_client_conf cc = {
		.paths = paths, .npaths = n, .max_concurrent = max_conc,
		.sha256 = true, .on_body = on_body, .on_done = on_done,
		.clock = vclock,
	};

	memset(f, 0, sizeof(*f));
	assert_true(n <= MAX_PATHS);
	cc.arg = f;
	assert_int_equal(dpq_app_env_create(&ec, &f->env), 0);
	f->ac = dpq_app_conn_create(f->env);
	assert_non_null(f->ac);
	assert_int_equal(dpq_hq_client_create(&cc, &f->cl), 0);
	pair_init(&f->p, 0, DPQ_ALPN_HQ, 10000, loss, 42);
	f->p.capp = &dpq_hq_client_ops;
	f->p.capp_ctx = f->cl;
	f->p.sapp = &dpq_app_server_ops;
	f->p.sapp_ctx = f->ac;
}

static void
fetch_run(struct fetch *f)
{
	f->p.server_alpns = dpq_app_alpns;
	pair_start(&f->p);
	assert_true(pair_run(&f->p, fetch_done, f, 600000000ull));
}

static void
fetch_free(struct fetch *f)
{
	pair_free(&f->p);
	dpq_app_conn_destroy(f->ac);
	dpq_hq_client_destroy(f->cl);
	dpq_app_env_destroy(f->env);
	for (int i = 0; i < MAX_PATHS; i++)
		free(f->body[i]);
}

/* Body idx equals data, SHA-256 by the client equals ours. */
static void
check_body(struct fetch *f, unsigned int idx, const uint8_t *data, size_t n)
{
	const struct dpq_hq_result *r = dpq_hq_client_result(f->cl, idx);
	uint8_t want[32];

	if (r->status != DPQ_HQ_OK)
		print_error("idx %u status %d code 0x%lx bytes %lu\n", idx,
			(int)r->status, (unsigned long)r->app_error,
			(unsigned long)r->bytes);
	assert_int_equal(r->status, DPQ_HQ_OK);
	assert_int_equal(f->done_calls[idx], 1);
	assert_int_equal(r->bytes, n);
	assert_int_equal(f->len[idx], n);
	if (n > 0)
		assert_memory_equal(f->body[idx], data, n);
	assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, data, n, want), 0);
	assert_true(r->has_sha256);
	assert_memory_equal(r->sha256, want, 32);
	assert_true(r->t_start > 0);
	assert_true(r->t_done >= r->t_start);
	if (n > 0)
		assert_true(r->t_first_byte >= r->t_start &&
				r->t_first_byte <= r->t_done);
}

static void
check_refused(struct fetch *f, unsigned int idx, uint64_t code)
{
	const struct dpq_hq_result *r = dpq_hq_client_result(f->cl, idx);

	assert_int_equal(f->done_calls[idx], 1);
	assert_int_equal(r->status, DPQ_HQ_RESET);
	assert_int_equal(r->app_error, code);
	assert_int_equal(r->bytes, 0);
	assert_false(r->has_sha256);
}

/* ---- fetch tests --------------------------------------------------------- */

static void
test_fetch_sizes(void **state)
{
	static const char *const paths[] = { "/f0", "/f1", "/f2", "/f3" };
	struct fetch f;
	int fds = count_fds();
	const struct dpq_app_stats *st;

	(void)state;
	/* One at a time: completion order is request order. */
	fetch_setup(&f, rootdir, paths, 4, 1, 0);
	fetch_run(&f);
	for (unsigned int i = 0; i < 4; i++) {
		check_body(&f, i, content[i], sizes[i]);
		print_message("  %zu bytes: ttfb %lu us, done %lu us (virtual, "
			"10 ms one-way)\n", sizes[i],
			(unsigned long)(sizes[i] == 0 ? 0 :
			dpq_hq_client_result(f.cl, i)->t_first_byte -
			dpq_hq_client_result(f.cl, i)->t_start),
			(unsigned long)(dpq_hq_client_result(f.cl, i)->t_done -
			dpq_hq_client_result(f.cl, i)->t_start));
		assert_int_equal(f.order[i], i);
		if (i > 0)
			assert_true(dpq_hq_client_result(f.cl, i)->t_start >=
				dpq_hq_client_result(f.cl, i - 1)->t_done);
	}
	st = dpq_app_env_stats(f.env);
	assert_int_equal(st->conns, 1);
	assert_int_equal(st->hq.requests, 4);
	assert_int_equal(st->hq.responses, 4);
	assert_int_equal(st->hq.bytes_served,
			sizes[0] + sizes[1] + sizes[2] + sizes[3]);
	assert_int_equal(st->hq.err_not_found + st->hq.err_forbidden +
			st->hq.err_internal + st->hq.err_bad_request, 0);
	fetch_free(&f);
	assert_int_equal(count_fds(), fds);
}

static void
test_fetch_concurrent(void **state)
{
	static char names[20][16];
	const char *paths[20];
	uint8_t *data[20];
	size_t len[20];
	struct fetch f;
	struct dpq_hq_client_stats cs;

	(void)state;
	for (int i = 0; i < 20; i++) {
		len[i] = (size_t)i * 7919 + (i % 3 ? 0 : 100000);
		data[i] = rand_bytes(len[i], 100 + (uint64_t)i);
		snprintf(names[i], sizeof(names[i]), "c%02d", i);
		put_file(names[i], data[i], len[i]);
		snprintf(names[i], sizeof(names[i]), "/c%02d", i);
		paths[i] = names[i];
	}
	fetch_setup(&f, rootdir, paths, 20, 0, 0);
	fetch_run(&f);
	for (unsigned int i = 0; i < 20; i++)
		check_body(&f, i, data[i], len[i]);
	dpq_hq_client_get_stats(f.cl, &cs);
	assert_int_equal(cs.started, 20);
	assert_int_equal(cs.ok, 20);
	assert_int_equal(cs.open_blocked, 0);
	/* All 20 were in flight together: every one started before the
	 * first finished. */
	for (unsigned int i = 0; i < 20; i++)
		assert_true(dpq_hq_client_result(f.cl, i)->t_start <=
			dpq_hq_client_result(f.cl, f.order[0])->t_done);
	fetch_free(&f);

	/* The server allows 4 streams at a time: the client waits for
	 * MAX_STREAMS and still gets all 20. */
	fetch_setup(&f, rootdir, paths, 20, 0, 0);
	f.p.sconf.max_streams_bidi = 4;
	fetch_run(&f);
	for (unsigned int i = 0; i < 20; i++)
		check_body(&f, i, data[i], len[i]);
	dpq_hq_client_get_stats(f.cl, &cs);
	assert_true(cs.open_blocked > 0);
	fetch_free(&f);
	for (int i = 0; i < 20; i++)
		free(data[i]);
}

static void
test_traversal(void **state)
{
	static const char *const paths[] = {
		"/../etc/passwd", "/a/../../x", "/escape", "/escdir/secret",
		"/%2e%2e/secret", "/%2e%2e%2fsecret", "/..%2fsecret",
		"/a%00b", "//etc/passwd", "/sub", "/inlink", "/fifo",
		"/sub/../hello", "/./hello", "/escdir/www/hello",
	};
	const unsigned int n = sizeof(paths) / sizeof(paths[0]);
	struct fetch f;
	const struct dpq_app_stats *st;
	int fds = count_fds();

	(void)state;
	fetch_setup(&f, rootdir, paths, n, 0, 0);
	fetch_run(&f);
	for (unsigned int i = 0; i < n; i++)
		check_refused(&f, i, DPQ_HQ_ERR_FORBIDDEN);
	st = dpq_app_env_stats(f.env);
	assert_int_equal(st->hq.err_forbidden, n);
	assert_int_equal(st->hq.responses, 0);
	assert_int_equal(st->hq.bytes_served, 0);
	fetch_free(&f);
	assert_int_equal(count_fds(), fds);
}

static void
test_missing(void **state)
{
	static const char *const paths[] = { "/nope", "/sub/nope",
		"/hello/x", "/hello" };
	struct fetch f;

	(void)state;
	fetch_setup(&f, rootdir, paths, 4, 0, 0);
	fetch_run(&f);
	check_refused(&f, 0, DPQ_HQ_ERR_NOT_FOUND);
	check_refused(&f, 1, DPQ_HQ_ERR_NOT_FOUND);
	check_refused(&f, 2, DPQ_HQ_ERR_NOT_FOUND);
	check_body(&f, 3, (const uint8_t *)"hello world\n", 12);
	assert_int_equal(dpq_app_env_stats(f.env)->hq.err_not_found, 3);
	fetch_free(&f);

	/* No document root: everything is not found. */
	fetch_setup(&f, NULL, paths + 3, 1, 0, 0);
	fetch_run(&f);
	check_refused(&f, 0, DPQ_HQ_ERR_NOT_FOUND);
	fetch_free(&f);
}

static void
test_lossy(void **state)
{
	static const char *const paths[] = { "/f2", "/f1", "/hello", "/f0",
		"/f3" };
	struct fetch f;
	struct dpq_conn_stats cst;

	(void)state;
	fetch_setup(&f, rootdir, paths, 5, 0, 0.05);
	fetch_run(&f);
	check_body(&f, 0, content[2], sizes[2]);
	check_body(&f, 1, content[1], sizes[1]);
	check_body(&f, 2, (const uint8_t *)"hello world\n", 12);
	check_body(&f, 3, content[0], sizes[0]);
	check_body(&f, 4, content[3], sizes[3]);
	dpq_conn_get_stats(f.p.server, &cst);
	assert_true(cst.pkts_lost > 0);		/* losses really happened */
	assert_true(f.p.s2c.dropped > 0 && f.p.c2s.dropped > 0);
	fetch_free(&f);
}

/* The connection closes in the middle of a transfer: every request is
 * reported once (ABORTED), the server's files get closed. */
static bool
abort_mid(struct pair *p, void *arg)
{
	struct fetch *f = arg;

	if (f->len[0] > 100000 && dpq_conn_state(p->client) ==
	    DPQ_CONN_ESTABLISHED)
		dpq_conn_close(p->client, true, 0x10c, "enough");
	return dpq_hq_client_done(f->cl);
}

static void
test_conn_abort(void **state)
{
	static const char *const paths[] = { "/f3", "/f2", "/hello" };
	struct fetch f;
	int fds = count_fds();

	(void)state;
	fetch_setup(&f, rootdir, paths, 3, 2, 0);
	f.p.server_alpns = dpq_app_alpns;
	pair_start(&f.p);
	assert_true(pair_run(&f.p, abort_mid, &f, 600000000ull));
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(f.done_calls[i], 1);
		assert_int_equal(dpq_hq_client_result(f.cl, i)->status,
				DPQ_HQ_ABORTED);
	}
	/* Let the server see the close; its on_closed frees the streams. */
	pair_run(&f.p, NULL, NULL, 10000000ull);
	assert_int_equal(dpq_app_conn_streams(f.ac), 0);
	assert_true(dpq_app_env_stats(f.env)->hq.bytes_served <
			sizes[3] + sizes[2]);
	fetch_free(&f);
	assert_int_equal(count_fds(), fds);
}

/* ---- raw requests -------------------------------------------------------- */

struct raw {
	struct pair p;
	struct dpq_app_env *env;
	struct dpq_app_conn *ac;
	struct raw_client rc;
};

static bool
raw_done(struct pair *p, void *arg)
{
	(void)p;
	return raw_client_done(arg);
}

static void
raw_run(struct raw *r, const char *alpn, struct raw_stream *s, unsigned int n)
{
	struct dpq_app_env_conf ec = { .root = rootdir };

	memset(r, 0, sizeof(*r));
	assert_int_equal(dpq_app_env_create(&ec, &r->env), 0);
	r->ac = dpq_app_conn_create(r->env);
	assert_non_null(r->ac);
	r->rc.s = s;
	r->rc.n = n;
	pair_init(&r->p, 0, alpn, 10000, 0, 7);
	r->p.capp = &raw_client_ops;
	r->p.capp_ctx = &r->rc;
	r->p.sapp = &dpq_app_server_ops;
	r->p.sapp_ctx = r->ac;
	r->p.server_alpns = dpq_app_alpns;
	pair_start(&r->p);
	assert_true(pair_run(&r->p, raw_done, &r->rc, 60000000ull));
	/* let closes and acks settle */
	pair_run(&r->p, NULL, NULL, 1000000ull);
}

static void
raw_free(struct raw *r)
{
	pair_free(&r->p);
	dpq_app_conn_destroy(r->ac);
	dpq_app_env_destroy(r->env);
	raw_client_free(&r->rc);
}

#define REQ(str) .out = (const uint8_t *)(str), .out_len = sizeof(str) - 1

static void
expect_body(const struct raw_stream *s, const char *body)
{
	assert_true(s->got_fin);
	assert_false(s->got_reset);
	assert_int_equal(s->in_len, strlen(body));
	assert_memory_equal(s->in, body, s->in_len);
}

static void
expect_reset(const struct raw_stream *s, uint64_t code)
{
	assert_true(s->got_reset);
	assert_int_equal(s->reset_code, code);
	assert_false(s->got_fin);
	assert_int_equal(s->in_len, 0);
}

static void
test_raw_requests(void **state)
{
	static uint8_t longreq[5000], longline[4200];
	struct raw_stream s[] = {
		{ REQ("GET /hello\r\n"), .fin = true },		/* 0 */
		{ REQ("GET /hello\n"), .fin = true },		/* 1 */
		{ REQ("GET /hello"), .fin = true },		/* 2 */
		{ REQ("GET /hello\r\n"), .fin = false },	/* 3 no FIN */
		{ REQ("GET /hello\r\nextra"), .fin = true },	/* 4 */
		{ .out = longreq, .out_len = sizeof(longreq) },	/* 5 */
		{ .out = longline, .out_len = sizeof(longline),
		  .fin = true },				/* 6 */
		{ REQ("PUT /hello\r\n"), .fin = true },		/* 7 */
		{ REQ("GET hello\r\n"), .fin = true },		/* 8 */
		{ .fin = true },				/* 9 empty */
		{ REQ("GET /hello extra\r\n"), .fin = true },	/* 10 */
		{ REQ("GET /hel\0lo\r\n"), .fin = true },	/* 11 */
		{ REQ("GET /hello\0/../../secret\r\n"),
		  .fin = true },				/* 12 */
		{ REQ("GET /%zz\r\n"), .fin = true },		/* 13 */
		{ REQ("GET /hello\r\n"), .fin = true,
		  .uni = true },				/* 14 */
		{ REQ("GET /f3\r\n"), .fin = true,
		  .stop_after = 200000 },			/* 15 */
		{ REQ("GET /f2\r\n"), .fin = true },		/* 16 */
	};
	const unsigned int n = sizeof(s) / sizeof(s[0]);
	const struct dpq_app_stats *st;
	struct raw r;
	int fds = count_fds();

	(void)state;
	memset(longreq, 'A', sizeof(longreq));
	memcpy(longline, "GET /", 5);
	memset(longline + 5, 'a', sizeof(longline) - 7);
	memcpy(longline + sizeof(longline) - 2, "\r\n", 2);
	raw_run(&r, DPQ_ALPN_HQ, s, n);
	expect_body(&s[0], "hello world\n");
	expect_body(&s[1], "hello world\n");
	expect_body(&s[2], "hello world\n");
	expect_body(&s[3], "hello world\n");
	expect_body(&s[4], "hello world\n");
	expect_reset(&s[5], DPQ_HQ_ERR_TOO_LONG);
	assert_true(s[5].got_stop);
	assert_int_equal(s[5].stop_code, DPQ_HQ_ERR_TOO_LONG);
	expect_reset(&s[6], DPQ_HQ_ERR_TOO_LONG);
	expect_reset(&s[7], DPQ_HQ_ERR_BAD_REQUEST);
	expect_reset(&s[8], DPQ_HQ_ERR_BAD_REQUEST);
	expect_reset(&s[9], DPQ_HQ_ERR_BAD_REQUEST);
	expect_reset(&s[10], DPQ_HQ_ERR_BAD_REQUEST);
	expect_reset(&s[11], DPQ_HQ_ERR_FORBIDDEN);
	expect_reset(&s[12], DPQ_HQ_ERR_FORBIDDEN);
	expect_reset(&s[13], DPQ_HQ_ERR_BAD_REQUEST);
	/* unidirectional: STOP_SENDING with STREAM_CREATION (the client
	 * may see it, or its stream may be fully acked and gone first) */
	assert_true(s[14].got_stop || s[14].closed);
	if (s[14].got_stop)
		assert_int_equal(s[14].stop_code, DPQ_HQ_ERR_STREAM_CREATION);
	/* the client stopped reading: the server reset with its code */
	/* the client stopped reading: the server abandoned the response
	 * (its RESET_STREAM ends the stream; the engine does not report a
	 * reset to an app that stopped reading) */
	assert_true(s[15].stopped);
	assert_true(s[15].closed);
	assert_false(s[15].got_fin);
	assert_true(s[15].in_len < sizes[3]);
	assert_memory_equal(s[15].in, content[3], s[15].in_len);
	/* and the connection still serves */
	assert_true(s[16].got_fin);
	assert_int_equal(s[16].in_len, sizes[2]);
	assert_memory_equal(s[16].in, content[2], sizes[2]);
	st = dpq_app_env_stats(r.env);
	assert_int_equal(st->hq.err_too_long, 2);
	assert_int_equal(st->hq.err_bad_request, 5);
	assert_int_equal(st->hq.err_forbidden, 2);
	assert_int_equal(st->hq.err_stream_refused, 1);
	assert_int_equal(st->hq.peer_aborted, 1);
	assert_int_equal(st->hq.responses, 6);
	/* every stream but the one without FIN closed and was freed */
	assert_true(dpq_app_conn_streams(r.ac) <= 1);
	raw_free(&r);
	assert_int_equal(count_fds(), fds);
}

static void
test_alpn_lookup(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < DPQ_APP_ALPN_COUNT; i++)
		assert_non_null(dpq_app_by_alpn(dpq_app_alpns[i]));
	assert_null(dpq_app_alpns[DPQ_APP_ALPN_COUNT]);
	assert_null(dpq_app_by_alpn("h3"));
	assert_null(dpq_app_by_alpn(""));
	assert_null(dpq_app_by_alpn(NULL));
	assert_ptr_not_equal(dpq_app_by_alpn(DPQ_ALPN_HQ),
			dpq_app_by_alpn(DPQ_ALPN_ECHO));
}

static void
test_bad_conf(void **state)
{
	const char *bad1[] = { "/a\r\nGET /b" };
	const char *bad2[] = { "" };
	const char *bad3[] = { NULL };
	struct dpq_hq_client_conf cc = { .npaths = 1 };
	struct dpq_app_env_conf ec = { .root = "/nonexistent/dpq" };
	struct dpq_hq_client *cl;
	struct dpq_app_env *env;

	(void)state;
	cc.paths = bad1;
	assert_int_equal(dpq_hq_client_create(&cc, &cl), -EINVAL);
	cc.paths = bad2;
	assert_int_equal(dpq_hq_client_create(&cc, &cl), -EINVAL);
	cc.paths = bad3;
	assert_int_equal(dpq_hq_client_create(&cc, &cl), -EINVAL);
	assert_int_equal(dpq_app_env_create(&ec, &env), -ENOENT);
	assert_int_equal(dpq_app_env_create(NULL, &env), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_request),
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_alpn_lookup),
		cmocka_unit_test(test_bad_conf),
		cmocka_unit_test(test_fetch_sizes),
		cmocka_unit_test(test_fetch_concurrent),
		cmocka_unit_test(test_traversal),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_raw_requests),
		cmocka_unit_test(test_conn_abort),
		cmocka_unit_test(test_lossy),
	};

	return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
