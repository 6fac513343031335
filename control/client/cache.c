/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cache.c: the client's server-config cache file (see cache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "control/client/cache.h"

/* Longest line: four names and numbers, three blobs in hex, the sum. */
#define LINE_MAX_LEN	(256 + 2 * (DPQ_CACHE_TICKET_MAX + \
		DPQ_CACHE_TOKEN_MAX + DPQ_CACHE_TP_MAX) + 64 + 16)
/* Largest file read: the most entries of the longest lines. */
#define FILE_MAX	((size_t)DPQ_CACHE_ENTRIES_MAX * LINE_MAX_LEN)

struct dpq_cache {
	struct dpq_cache_entry *e;	/* n used of DPQ_CACHE_ENTRIES_MAX */
	unsigned int n;
};

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "-" or lowercase hex of at most cap bytes into out; -1 if neither. */
static int
unhex(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(s), i;

	*len = 0;
	if (strcmp(s, "-") == 0)
		return 0;
	if (n == 0 || n % 2 != 0 || n / 2 > cap)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*len = n / 2;
	return 0;
}

static void
put_hex(FILE *f, const uint8_t *p, size_t n)
{
	size_t i;

	if (n == 0) {
		fputc('-', f);
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static void
sum_hex(const char *s, size_t n, char out[65])
{
	uint8_t h[32];
	int i;

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, s, n, h) < 0)
		memset(h, 0, sizeof(h));
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static bool
name_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	return n > 0 && n < cap && strpbrk(s, " \t\r\n") == NULL;
}

/* One line (NUL-terminated, no newline) into e; false if damaged. */
static bool
parse_line(char *line, struct dpq_cache_entry *e)
{
	char *f[9], *save = NULL, *last, sum[65];
	unsigned long long saved;
	unsigned int flags;
	char *end;
	int k = 0;

	/* The sum covers the line up to the space before it. */
	last = strrchr(line, ' ');
	if (last == NULL || strlen(last + 1) != 64)
		return false;
	sum_hex(line, (size_t)(last - line), sum);
	if (memcmp(sum, last + 1, 64) != 0)
		return false;
	for (char *t = strtok_r(line, " ", &save); t != NULL && k < 9;
	     t = strtok_r(NULL, " ", &save))
		f[k++] = t;
	if (k != 9 || strcmp(f[0], "dpq1") != 0)
		return false;
	memset(e, 0, sizeof(*e));
	if (!name_ok(f[1], sizeof(e->server)) ||
	    !name_ok(f[2], sizeof(e->alpn)))
		return false;
	strcpy(e->server, f[1]);
	strcpy(e->alpn, f[2]);
	errno = 0;
	saved = strtoull(f[3], &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	e->saved = saved;
	flags = (unsigned int)strtoul(f[4], &end, 16);
	if (*end != '\0')
		return false;
	e->early = flags & 1;
	return unhex(f[5], e->ticket, sizeof(e->ticket), &e->ticket_len) == 0 &&
		unhex(f[6], e->token, sizeof(e->token), &e->token_len) == 0 &&
		unhex(f[7], e->tp, sizeof(e->tp), &e->tp_len) == 0;
}

int
dpq_cache_load(const char *path, uint64_t now, struct dpq_cache **out,
		struct dpq_cache_stats *st)
{
	struct dpq_cache_stats dummy;
	struct dpq_cache_entry *tmp;
	struct dpq_cache *c;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f;

	if (st == NULL)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->e = calloc(DPQ_CACHE_ENTRIES_MAX, sizeof(*c->e));
	tmp = malloc(sizeof(*tmp));
	if (c->e == NULL || tmp == NULL) {
		free(tmp);
		dpq_cache_free(c);
		return -ENOMEM;
	}
	*out = c;
	f = fopen(path, "re");
	if (f == NULL) {
		int e = errno;

		free(tmp);
		if (e == ENOENT)
			return 0;	/* first use: an empty cache */
		dpq_cache_free(c);
		*out = NULL;
		return -e;
	}
	buf = malloc(FILE_MAX + 1);
	if (buf != NULL)
		len = fread(buf, 1, FILE_MAX, f);
	fclose(f);
	if (buf == NULL) {
		free(tmp);
		return 0;
	}
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!parse_line(line, tmp)) {
			st->damaged++;
			continue;
		}
		if (tmp->saved + DPQ_CACHE_MAX_AGE < now ||
		    tmp->saved > now + 86400) {
			st->expired++;
			continue;
		}
		if (dpq_cache_put(c, tmp) != 0)
			st->damaged++;
	}
	st->loaded = c->n;
	explicit_bzero(buf, len);
	free(buf);
	explicit_bzero(tmp, sizeof(*tmp));
	free(tmp);
	return 0;
}

void
dpq_cache_free(struct dpq_cache *c)
{
	if (c == NULL)
		return;
	if (c->e != NULL)
		explicit_bzero(c->e, (size_t)DPQ_CACHE_ENTRIES_MAX *
				sizeof(*c->e));
	free(c->e);
	free(c);
}

static int
find(const struct dpq_cache *c, const char *server, const char *alpn)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->e[i].server, server) == 0 &&
		    strcmp(c->e[i].alpn, alpn) == 0)
			return (int)i;
	return -1;
}

const struct dpq_cache_entry *
dpq_cache_find(const struct dpq_cache *c, const char *server,
		const char *alpn)
{
	int i = find(c, server, alpn);

	return i < 0 ? NULL : &c->e[i];
}

int
dpq_cache_put(struct dpq_cache *c, const struct dpq_cache_entry *e)
{
	unsigned int i, oldest = 0;
	int k;

	if (!name_ok(e->server, sizeof(e->server)) ||
	    !name_ok(e->alpn, sizeof(e->alpn)) ||
	    e->ticket_len > sizeof(e->ticket) ||
	    e->token_len > sizeof(e->token) || e->tp_len > sizeof(e->tp))
		return -EINVAL;
	k = find(c, e->server, e->alpn);
	if (k < 0 && c->n < DPQ_CACHE_ENTRIES_MAX) {
		k = (int)c->n++;
	} else if (k < 0) {
		for (i = 1; i < c->n; i++)
			if (c->e[i].saved < c->e[oldest].saved)
				oldest = i;
		k = (int)oldest;
	}
	if (&c->e[k] != e)
		memcpy(&c->e[k], e, sizeof(*e));
	return 0;
}

void
dpq_cache_drop(struct dpq_cache *c, const char *server, const char *alpn)
{
	int k = find(c, server, alpn);

	if (k < 0)
		return;
	c->e[k] = c->e[--c->n];
	explicit_bzero(&c->e[c->n], sizeof(c->e[c->n]));
}

/* One entry's line, sum included. */
static int
write_line(FILE *f, const struct dpq_cache_entry *e)
{
	char *text = NULL, sum[65];
	size_t n = 0;
	FILE *m = open_memstream(&text, &n);

	if (m == NULL)
		return -ENOMEM;
	fprintf(m, "dpq1 %s %s %llu %x ", e->server, e->alpn,
			(unsigned long long)e->saved, e->early ? 1u : 0u);
	put_hex(m, e->ticket, e->ticket_len);
	fputc(' ', m);
	put_hex(m, e->token, e->token_len);
	fputc(' ', m);
	put_hex(m, e->tp, e->tp_len);
	if (fclose(m) != 0) {
		free(text);
		return -ENOMEM;
	}
	sum_hex(text, n, sum);
	fprintf(f, "%s %s\n", text, sum);
	explicit_bzero(text, n);
	free(text);
	return 0;
}

int
dpq_cache_save(const struct dpq_cache *c, const char *path)
{
	char tmp[4096];
	unsigned int i;
	FILE *f;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* mkstemp creates 0600 whatever the umask. */
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (f == NULL) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	fprintf(f, "# dpquic-client cache: session tickets, tokens and "
		"transport parameters per server.\n# Secrets: keep it "
		"private (0600). Damaged lines are ignored.\n");
	for (i = 0; i < c->n && rc == 0; i++)
		rc = write_line(f, &c->e[i]);
	if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}
