/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hq-interop server (see hq_server.h): request parsing, opening beneath
 * the document root, and streaming a file into its stream as fast as the
 * send buffer drains (on_stream_writable), one chunk-sized pread() at a
 * time into the environment's scratch buffer. Shard only.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataplane/app/app_int.h"
#include "dataplane/app/hq_server.h"

enum hq_phase {
	HQ_REQUEST = 0,		/* collecting the request line */
	HQ_SENDING,		/* file open, writing it */
	HQ_DONE,		/* FIN queued, reset, or abandoned */
};

struct hq_stream {
	struct dpq_app_stream h;
	int fd;
	uint64_t off, size;
	enum hq_phase phase;
	bool req_done;		/* request side finished (FIN read, reset) */
	uint16_t req_len;
	uint8_t req[DPQ_HQ_MAX_REQUEST];
};

/* ---- parsing ------------------------------------------------------------- */

static int
hexval(uint8_t ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static bool
is_ctl(uint8_t ch)
{
	return ch < 0x20 || ch == 0x7f;
}

uint64_t
dpq_hq_parse_request(const uint8_t *p, const uint8_t *end, char *path,
		size_t cap)
{
	static const char method[] = "GET ";
	size_t o = 0, comp_start = 0;
	unsigned int depth = 0;

	if (path == NULL || cap == 0 || p == NULL || end < p)
		return DPQ_HQ_ERR_INTERNAL;
	path[0] = '\0';
	if ((size_t)(end - p) < sizeof(method) - 1 ||
	    memcmp(p, method, sizeof(method) - 1) != 0)
		return DPQ_HQ_ERR_BAD_REQUEST;
	p += sizeof(method) - 1;
	if (p == end || *p != '/')
		return DPQ_HQ_ERR_BAD_REQUEST;
	p++;
	/* Decode into path, checking each component as it ends. */
	for (;;) {
		bool last = p == end;
		uint8_t ch = 0;

		if (!last) {
			ch = *p++;
			if (ch == ' ')
				return DPQ_HQ_ERR_BAD_REQUEST;
			if (is_ctl(ch))
				return DPQ_HQ_ERR_FORBIDDEN;
		}
		if (last || ch == '/') {
			size_t n = o - comp_start;
			const char *comp = path + comp_start;

			if (n == 0 || (n == 1 && comp[0] == '.') ||
			    (n == 2 && comp[0] == '.' && comp[1] == '.'))
				return DPQ_HQ_ERR_FORBIDDEN;
			if (++depth > DPQ_HQ_MAX_DEPTH)
				return DPQ_HQ_ERR_FORBIDDEN;
			if (last)
				break;
			if (o + 1 >= cap)
				return DPQ_HQ_ERR_TOO_LONG;
			path[o++] = '/';
			comp_start = o;
			continue;
		}
		if (ch == '%') {
			int hi, lo;

			if (end - p < 2 || (hi = hexval(p[0])) < 0 ||
			    (lo = hexval(p[1])) < 0)
				return DPQ_HQ_ERR_BAD_REQUEST;
			p += 2;
			ch = (uint8_t)(hi << 4 | lo);
			if (ch == '/' || is_ctl(ch))
				return DPQ_HQ_ERR_FORBIDDEN;
		}
		if (o + 1 >= cap)
			return DPQ_HQ_ERR_TOO_LONG;
		path[o++] = (char)ch;
	}
	path[o] = '\0';
	return 0;
}

/* errno of a refused openat() on comp beneath dir → code. A symlink is
 * FORBIDDEN wherever it is; ENOTDIR on a plain file is just not found. */
static uint64_t
open_error(int dir, const char *comp, int err)
{
	struct stat st;

	switch (err) {
	case ENOENT:
		return DPQ_HQ_ERR_NOT_FOUND;
	case ENOTDIR:
		if (fstatat(dir, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISLNK(st.st_mode))
			return DPQ_HQ_ERR_NOT_FOUND;
		return DPQ_HQ_ERR_FORBIDDEN;
	case ELOOP:
	case EACCES:
	case EPERM:
	case ENAMETOOLONG:
	case EISDIR:
	case ENXIO:
	case ENODEV:
		return DPQ_HQ_ERR_FORBIDDEN;
	case ENOMEM:
	default:
		return DPQ_HQ_ERR_INTERNAL;
	}
}

uint64_t
dpq_hq_open(int root_fd, const char *path, int *fd, uint64_t *size)
{
	char comp[256];
	const char *p = path;
	int dir = root_fd, f;
	struct stat st;
	uint64_t rc;

	*fd = -1;
	*size = 0;
	if (root_fd < 0)
		return DPQ_HQ_ERR_NOT_FOUND;
	if (path == NULL || path[0] == '\0' || path[0] == '/')
		return DPQ_HQ_ERR_FORBIDDEN;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0 || n >= sizeof(comp)) {
			rc = DPQ_HQ_ERR_FORBIDDEN;
			goto fail;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
			rc = DPQ_HQ_ERR_FORBIDDEN;	/* callers checked */
			goto fail;
		}
		if (slash == NULL)
			break;
		f = openat(dir, comp,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (f < 0) {
			rc = open_error(dir, comp, errno);
			goto fail;
		}
		if (dir != root_fd)
			close(dir);
		dir = f;
		p = slash + 1;
	}
	f = openat(dir, comp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			O_CLOEXEC);
	if (f < 0) {
		rc = open_error(dir, comp, errno);
		goto fail;
	}
	if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(f);
		rc = DPQ_HQ_ERR_FORBIDDEN;
		goto fail;
	}
	if (dir != root_fd)
		close(dir);
	*fd = f;
	*size = (uint64_t)st.st_size;
	return 0;
fail:
	if (dir != root_fd)
		close(dir);
	return rc;
}

/* ---- streams ------------------------------------------------------------- */

static struct dpq_hq_server_stats *
hq_stats(struct dpq_app_conn *ac)
{
	return &ac->env->stats.hq;
}

static void
count_error(struct dpq_app_conn *ac, uint64_t code)
{
	struct dpq_hq_server_stats *st = hq_stats(ac);

	switch (code) {
	case DPQ_HQ_ERR_BAD_REQUEST: st->err_bad_request++; break;
	case DPQ_HQ_ERR_FORBIDDEN: st->err_forbidden++; break;
	case DPQ_HQ_ERR_NOT_FOUND: st->err_not_found++; break;
	case DPQ_HQ_ERR_TOO_LONG: st->err_too_long++; break;
	case DPQ_HQ_ERR_STREAM_CREATION: st->err_stream_refused++; break;
	case DPQ_HQ_ERR_CANCELLED: st->peer_aborted++; break;
	default: st->err_internal++; break;
	}
}

static void
close_file(struct hq_stream *s)
{
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
}

/* Refuse the request: abandon both directions with code. s is held. */
static void
fail(struct dpq_conn *c, struct hq_stream *s, uint64_t code)
{
	struct dpq_app_conn *ac = app_conn(c);

	count_error(ac, code);
	close_file(s);
	s->phase = HQ_DONE;
	if (!s->req_done) {
		s->req_done = true;
		(void)dpq_conn_stream_stop(c, s->h.id, code);
	}
	if (!s->h.dead)
		(void)dpq_conn_stream_reset(c, s->h.id, code);
}

/* Write file bytes until the send buffer refuses some. s is held. */
static void
send_more(struct dpq_conn *c, struct hq_stream *s)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct dpq_app_env *env = ac->env;

	while (s->phase == HQ_SENDING && !s->h.dead) {
		uint64_t left = s->size - s->off;
		size_t n = left < env->chunk ? (size_t)left : env->chunk;
		ssize_t r = 0, w;
		bool fin;

		if (n > 0) {
			r = pread(s->fd, env->scratch, n, (off_t)s->off);
			if (r <= 0) {
				/* Read error, or the file shrank under us. */
				fail(c, s, DPQ_HQ_ERR_INTERNAL);
				return;
			}
		}
		fin = s->off + (uint64_t)r == s->size;
		w = dpq_conn_stream_write(c, s->h.id, env->scratch, (size_t)r,
				fin);
		if (w < 0) {
			/* The peer stopped us (-EPIPE), or the connection is
			 * closing: nothing more to send. */
			close_file(s);
			s->phase = HQ_DONE;
			return;
		}
		s->off += (uint64_t)w;
		hq_stats(ac)->bytes_served += (uint64_t)w;
		if (w < r)
			return;		/* on_stream_writable follows */
		if (fin) {
			hq_stats(ac)->responses++;
			close_file(s);
			s->phase = HQ_DONE;
		}
	}
}

/* The request line is complete: [req, req + len) without line end. */
static void
handle_request(struct dpq_conn *c, struct hq_stream *s, size_t len)
{
	struct dpq_app_conn *ac = app_conn(c);
	char path[DPQ_HQ_MAX_REQUEST];
	uint64_t code;

	hq_stats(ac)->requests++;
	code = dpq_hq_parse_request(s->req, s->req + len, path, sizeof(path));
	if (code == 0)
		code = dpq_hq_open(ac->env->root_fd, path, &s->fd, &s->size);
	if (code != 0) {
		fail(c, s, code);
		return;
	}
	s->phase = HQ_SENDING;
	s->off = 0;
	send_more(c, s);
}

/* Look for the line end in the request bytes read so far. */
static void
scan_request(struct dpq_conn *c, struct hq_stream *s, size_t from, bool fin)
{
	uint8_t *nl = memchr(s->req + from, '\n', s->req_len - from);
	size_t len;

	if (nl != NULL) {
		len = (size_t)(nl - s->req);
		if (len > 0 && s->req[len - 1] == '\r')
			len--;
	} else if (fin) {
		len = s->req_len;	/* HTTP/0.9 request ended by FIN */
		if (len > 0 && s->req[len - 1] == '\r')
			len--;
	} else {
		if (s->req_len >= sizeof(s->req))
			fail(c, s, DPQ_HQ_ERR_TOO_LONG);
		return;
	}
	handle_request(c, s, len);
}

static void
hq_established(struct dpq_conn *c, const char *alpn)
{
	(void)alpn;
	app_conn_bind(c, &dpq_hq_server_proto);
}

static void
hq_stream_open(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct hq_stream *s;

	if (!app_id_client_bidi(id)) {
		/* hq uses no unidirectional streams. */
		count_error(ac, DPQ_HQ_ERR_STREAM_CREATION);
		(void)dpq_conn_stream_stop(c, id, DPQ_HQ_ERR_STREAM_CREATION);
		return;
	}
	s = (struct hq_stream *)app_stream_new(ac, id, sizeof(*s));
	if (s == NULL) {
		count_error(ac, DPQ_HQ_ERR_INTERNAL);
		(void)dpq_conn_stream_stop(c, id, DPQ_HQ_ERR_INTERNAL);
		(void)dpq_conn_stream_reset(c, id, DPQ_HQ_ERR_INTERNAL);
		return;
	}
	s->fd = -1;
}

static void
hq_stream_data(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct hq_stream *s = (struct hq_stream *)app_stream_hold(ac, id);
	ssize_t n;
	bool fin = false;

	if (s == NULL)
		return;
	while (!s->h.dead && !s->req_done) {
		if (s->phase == HQ_REQUEST) {
			size_t from = s->req_len;

			n = dpq_conn_stream_read(c, id, s->req + s->req_len,
					sizeof(s->req) - s->req_len, &fin);
			if (n < 0)
				break;
			s->req_len += (uint16_t)n;
			if (fin)
				s->req_done = true;
			if (n == 0 && !fin)
				break;
			scan_request(c, s, from, fin);
		} else {
			/* Bytes after the request line: HTTP/0.9 has none
			 * we use; drain them so the stream can finish. */
			n = dpq_conn_stream_read(c, id, ac->env->scratch,
					ac->env->chunk, &fin);
			if (fin)
				s->req_done = true;
			if (n <= 0)
				break;
		}
	}
	app_stream_release(ac, &s->h);
}

static void
hq_stream_writable(struct dpq_conn *c, uint64_t id)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct hq_stream *s = (struct hq_stream *)app_stream_hold(ac, id);

	if (s == NULL)
		return;
	send_more(c, s);
	app_stream_release(ac, &s->h);
}

static void
hq_stream_reset(struct dpq_conn *c, uint64_t id, uint64_t app_error,
		bool stop)
{
	struct dpq_app_conn *ac = app_conn(c);
	struct hq_stream *s = (struct hq_stream *)app_stream_hold(ac, id);

	(void)app_error;
	if (s == NULL)
		return;
	if (stop) {
		/* STOP_SENDING: the engine already queued RESET_STREAM. */
		if (s->phase != HQ_DONE)
			hq_stats(ac)->peer_aborted++;
		close_file(s);
		s->phase = HQ_DONE;
	} else {
		s->req_done = true;
		if (s->phase == HQ_REQUEST) {
			/* The request will never be complete. */
			s->phase = HQ_DONE;
			hq_stats(ac)->peer_aborted++;
			(void)dpq_conn_stream_reset(c, id,
					DPQ_HQ_ERR_CANCELLED);
		}
	}
	app_stream_release(ac, &s->h);
}

static void
hq_stream_closed(struct dpq_conn *c, uint64_t id)
{
	app_stream_closed(app_conn(c), id);
}

static void
hq_closed(struct dpq_conn *c)
{
	struct dpq_app_conn *ac = app_conn(c);

	app_streams_free(ac);
	ac->closed = true;
}

static void
hq_stream_free(struct dpq_app_conn *ac, struct dpq_app_stream *h)
{
	(void)ac;
	close_file((struct hq_stream *)h);
}

static const struct dpq_app_ops hq_ops = {
	.on_established = hq_established,
	.on_stream_open = hq_stream_open,
	.on_stream_data = hq_stream_data,
	.on_stream_writable = hq_stream_writable,
	.on_stream_reset = hq_stream_reset,
	.on_stream_closed = hq_stream_closed,
	.on_closed = hq_closed,
};

const struct dpq_app_proto dpq_hq_server_proto = {
	.alpn = DPQ_ALPN_HQ,
	.ops = &hq_ops,
	.stream_free = hq_stream_free,
};
