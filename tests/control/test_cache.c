/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of dpquic-client's cache file (control/client/cache.h): entries
 * survive a save and a load byte for byte; the file is created 0600; a
 * damaged line (a flipped byte, a truncated file, garbage) is dropped and
 * counted while the others load; old entries expire; a full cache drops
 * the oldest; a missing file is an empty cache.
 */
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

#include "control/client/cache.h"

#define NOW 1900000000ull

static char dir[64], path[128];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/dpq-cache-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/cache", dir);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
entry(struct dpq_cache_entry *e, const char *server, uint64_t saved, int seed)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->server, sizeof(e->server), "%s", server);
	snprintf(e->alpn, sizeof(e->alpn), "hq-interop");
	e->saved = saved;
	e->early = seed & 1;
	e->ticket_len = 300 + (size_t)seed;
	for (size_t i = 0; i < e->ticket_len; i++)
		e->ticket[i] = (uint8_t)(i * 31 + (size_t)seed);
	e->token_len = seed % 3 ? 60 : 0;
	memset(e->token, 0x40 + seed, e->token_len);
	e->tp_len = 40;
	memset(e->tp, seed, e->tp_len);
}

static void
test_roundtrip(void **state)
{
	static struct dpq_cache_entry a, b;
	struct dpq_cache *c;
	struct dpq_cache_stats st;
	const struct dpq_cache_entry *g;
	struct stat sb;

	(void)state;
	unlink(path);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 0);
	assert_null(dpq_cache_find(c, "198.18.0.2:443", "hq-interop"));
	entry(&a, "198.18.0.2:443", NOW, 1);
	entry(&b, "[2001:db8::2]:443", NOW - 10, 2);
	assert_int_equal(dpq_cache_put(c, &a), 0);
	assert_int_equal(dpq_cache_put(c, &b), 0);
	/* Names with spaces would break the format: refused. */
	entry(&b, "bad name", NOW, 3);
	assert_int_equal(dpq_cache_put(c, &b), -EINVAL);
	umask(0);	/* even so, the file is private */
	assert_int_equal(dpq_cache_save(c, path), 0);
	umask(022);
	dpq_cache_free(c);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 2);
	assert_int_equal(st.damaged, 0);
	g = dpq_cache_find(c, "198.18.0.2:443", "hq-interop");
	assert_non_null(g);
	assert_memory_equal(g, &a, sizeof(a));
	entry(&b, "[2001:db8::2]:443", NOW - 10, 2);
	g = dpq_cache_find(c, "[2001:db8::2]:443", "hq-interop");
	assert_non_null(g);
	assert_int_equal(g->token_len, b.token_len);
	assert_memory_equal(g->ticket, b.ticket, b.ticket_len);
	assert_null(dpq_cache_find(c, "198.18.0.2:443", "other"));
	/* Replace, then forget. */
	a.early = false;
	assert_int_equal(dpq_cache_put(c, &a), 0);
	assert_false(dpq_cache_find(c, a.server, a.alpn)->early);
	dpq_cache_drop(c, a.server, a.alpn);
	assert_null(dpq_cache_find(c, a.server, a.alpn));
	dpq_cache_free(c);
}

static char *
slurp(size_t *n)
{
	FILE *f = fopen(path, "r");
	char *b = malloc(1 << 20);

	assert_non_null(f);
	*n = fread(b, 1, 1 << 20, f);
	fclose(f);
	return b;
}

static void
spill(const char *b, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void
test_damaged(void **state)
{
	static struct dpq_cache_entry e;
	struct dpq_cache *c;
	struct dpq_cache_stats st;
	char *b, *second, orig;
	size_t n;

	(void)state;
	unlink(path);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	for (int i = 0; i < 3; i++) {
		char s[32];

		snprintf(s, sizeof(s), "198.18.0.%d:443", i + 1);
		entry(&e, s, NOW, i);
		assert_int_equal(dpq_cache_put(c, &e), 0);
	}
	assert_int_equal(dpq_cache_save(c, path), 0);
	dpq_cache_free(c);
	b = slurp(&n);
	/* One byte flipped inside the second entry's ticket. */
	second = strstr(b, "198.18.0.2:443");
	assert_non_null(second);
	orig = second[200];
	second[200] = orig == 'a' ? 'b' : 'a';
	spill(b, n);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 2);
	assert_int_equal(st.damaged, 1);
	assert_null(dpq_cache_find(c, "198.18.0.2:443", "hq-interop"));
	assert_non_null(dpq_cache_find(c, "198.18.0.3:443", "hq-interop"));
	dpq_cache_free(c);
	/* Truncated in the middle of the last line. */
	second[200] = orig;
	spill(b, n - 100);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 2);
	assert_int_equal(st.damaged, 1);
	assert_null(dpq_cache_find(c, "198.18.0.3:443", "hq-interop"));
	dpq_cache_free(c);
	/* Garbage, binary and empty files: empty caches, no crash. */
	{
		static const char junk[] = "\x01\x02\xff garbage\n\n dpq1 x y\n";

		spill(junk, sizeof(junk) - 1);
	}
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 0);
	assert_true(st.damaged >= 2);
	dpq_cache_free(c);
	spill("", 0);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 0);
	dpq_cache_free(c);
	/* A directory where the file should be: an error, or an empty
	 * cache (fopen of a directory succeeds, its read fails), no crash. */
	if (dpq_cache_load(dir, NOW, &c, &st) == 0) {
		assert_int_equal(st.loaded, 0);
		dpq_cache_free(c);
	}
	free(b);
}

static void
test_expiry_and_full(void **state)
{
	static struct dpq_cache_entry e;
	struct dpq_cache *c;
	struct dpq_cache_stats st;
	char s[32];

	(void)state;
	unlink(path);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	entry(&e, "198.18.0.9:443", NOW - DPQ_CACHE_MAX_AGE - 1, 1);
	assert_int_equal(dpq_cache_put(c, &e), 0);
	entry(&e, "198.18.0.8:443", NOW - 3600, 1);
	assert_int_equal(dpq_cache_put(c, &e), 0);
	assert_int_equal(dpq_cache_save(c, path), 0);
	dpq_cache_free(c);
	assert_int_equal(dpq_cache_load(path, NOW, &c, &st), 0);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(st.expired, 1);
	/* Full: the oldest entry gives way. */
	for (int i = 0; i < DPQ_CACHE_ENTRIES_MAX; i++) {
		snprintf(s, sizeof(s), "198.19.%d.%d:443", i / 250, i % 250);
		entry(&e, s, NOW + (uint64_t)i, 2);
		assert_int_equal(dpq_cache_put(c, &e), 0);
	}
	assert_null(dpq_cache_find(c, "198.18.0.8:443", "hq-interop"));
	assert_non_null(dpq_cache_find(c, s, "hq-interop"));
	dpq_cache_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_expiry_and_full),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
