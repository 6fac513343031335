/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for control/ctl/ctl_socket: a server polled in this thread and
 * clients on plain sockets. Covers the built-in commands, handlers and
 * their errors, several clients with interleaved and split lines,
 * pipelining past the per-poll budget, the line limit, garbage,
 * half lines and vanished clients, back-pressure, client and idle limits,
 * stale and live socket paths, the file mode and peer-credential checks.
 * Every wait is bounded by a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "control/ctl/ctl_socket.h"

#define WAIT_MS		30000	/* a bound, not a delay: a loaded box stalls seconds */
#define BUFSZ		(256u << 10)

static char dir[64];
static char path[96];

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/dpq-ctl-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

static struct dpq_ctl *
make_ctl(const struct dpq_ctl_conf *c)
{
	struct dpq_ctl_conf conf = { .path = path };
	struct dpq_ctl *ctl = NULL;

	if (c != NULL)
		conf = *c;
	conf.path = path;
	assert_int_equal(dpq_ctl_create(&conf, &ctl), 0);
	assert_non_null(ctl);
	return ctl;
}

static int
cli_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void
cli_send(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		assert_true(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

#define SEND(fd, s)	cli_send(fd, s, strlen(s))

/*
 * Poll the server until the client has a complete line; returns its
 * length (without "\n"), or -1 on EOF / reset. Bounded by WAIT_MS.
 */
struct cli_buf {
	char b[BUFSZ];
	size_t len;
};

static int
cli_line(struct dpq_ctl *ctl, int fd, struct cli_buf *cb, char *out,
		size_t cap)
{
	int64_t deadline = now_ms() + WAIT_MS;

	for (;;) {
		char *nl = memchr(cb->b, '\n', cb->len);
		ssize_t n;

		if (nl != NULL) {
			size_t l = (size_t)(nl - cb->b);

			assert_true(l < cap);
			memcpy(out, cb->b, l);
			out[l] = '\0';
			memmove(cb->b, nl + 1, cb->len - l - 1);
			cb->len -= l + 1;
			return (int)l;
		}
		if (now_ms() > deadline)
			fail_msg("no reply within %d ms", WAIT_MS);
		if (ctl != NULL)
			assert_true(dpq_ctl_poll(ctl, 5) >= 0);
		else
			poll(NULL, 0, 5);
		assert_true(cb->len < sizeof(cb->b));
		n = recv(fd, cb->b + cb->len, sizeof(cb->b) - cb->len,
			MSG_DONTWAIT);
		if (n > 0)
			cb->len += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
	}
}

/* Poll until the peer closed the connection (EOF after any data). */
static void
cli_wait_eof(struct dpq_ctl *ctl, int fd)
{
	int64_t deadline = now_ms() + WAIT_MS;
	char tmp[4096];

	for (;;) {
		ssize_t n;

		if (now_ms() > deadline)
			fail_msg("connection not closed within %d ms", WAIT_MS);
		assert_true(dpq_ctl_poll(ctl, 5) >= 0);
		n = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return;
	}
}

static void
poll_until_clients(struct dpq_ctl *ctl, unsigned n)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (dpq_ctl_nclients(ctl) != n) {
		if (now_ms() > deadline)
			fail_msg("%u clients, expected %u",
				dpq_ctl_nclients(ctl), n);
		assert_true(dpq_ctl_poll(ctl, 5) >= 0);
	}
}

static struct cli_buf cb1, cb2, cb3;

static char *
xfer(struct dpq_ctl *ctl, int fd, const char *req)
{
	static char out[BUFSZ];

	SEND(fd, req);
	assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) >= 0);
	return out;
}

/* ---- handlers used by the tests --------------------------------------- */

static int
h_add(struct dpq_ctl_req *req, void *arg)
{
	int64_t a, b;
	int *calls = arg;

	(*calls)++;
	if (dpq_json_get_i64(req->args, "a", &a) < 0 ||
			dpq_json_get_i64(req->args, "b", &b) < 0)
		return dpq_ctl_req_error(req, "add needs integers a and b");
	dpq_json_w_ki64(req->reply, "sum", a + b);
	return 0;
}

static int
h_fail(struct dpq_ctl_req *req, void *arg)
{
	(void)req;
	(void)arg;
	return -EBUSY;	/* no message: strerror is used */
}

static int
h_big(struct dpq_ctl_req *req, void *arg)
{
	int64_t n = 1000;
	int64_t i;

	(void)arg;
	(void)dpq_json_get_i64(req->args, "n", &n);
	dpq_json_w_key(req->reply, "v");
	dpq_json_w_arr_begin(req->reply);
	for (i = 0; i < n; i++)
		dpq_json_w_str(req->reply, "0123456789abcdef0123456789abcdef");
	dpq_json_w_arr_end(req->reply);
	return 0;
}

static int
h_broken(struct dpq_ctl_req *req, void *arg)
{
	(void)arg;
	dpq_json_w_key(req->reply, "x");
	dpq_json_w_arr_begin(req->reply);	/* left open */
	return 0;
}

static int
h_who(struct dpq_ctl_req *req, void *arg)
{
	(void)arg;
	dpq_json_w_ku64(req->reply, "uid", req->uid);
	dpq_json_w_ki64(req->reply, "pid", req->pid);
	dpq_json_w_kstr(req->reply, "cmd", req->cmd);
	return 0;
}

/* ---- tests ------------------------------------------------------------- */

static void
test_builtin_and_handlers(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	int calls = 0, fd;
	char *r, expect[128];

	(void)state;
	assert_int_equal(dpq_ctl_register(ctl, "add", h_add, &calls,
		"add a and b"), 0);
	assert_int_equal(dpq_ctl_register(ctl, "fail", h_fail, NULL, "fails"),
		0);
	assert_int_equal(dpq_ctl_register(ctl, "broken", h_broken, NULL, ""),
		0);
	assert_int_equal(dpq_ctl_register(ctl, "who", h_who, NULL, "creds"), 0);
	fd = cli_connect();

	r = xfer(ctl, fd, "{\"cmd\":\"ping\"}\n");
	snprintf(expect, sizeof(expect), "{\"ok\":true,\"pong\":true,\"pid\":%d}",
		(int)getpid());
	assert_string_equal(r, expect);

	r = xfer(ctl, fd, "{\"cmd\":\"help\"}\r\n");
	assert_string_equal(r, "{\"ok\":true,\"commands\":["
		"{\"name\":\"help\",\"help\":\"list the commands and what they do\"},"
		"{\"name\":\"ping\",\"help\":\"check that the daemon answers\"},"
		"{\"name\":\"add\",\"help\":\"add a and b\"},"
		"{\"name\":\"fail\",\"help\":\"fails\"},"
		"{\"name\":\"broken\",\"help\":\"\"},"
		"{\"name\":\"who\",\"help\":\"creds\"}]}");

	r = xfer(ctl, fd, "{\"cmd\":\"add\",\"a\":40,\"b\":2,\"id\":7}\n");
	assert_string_equal(r, "{\"ok\":true,\"id\":7,\"sum\":42}");
	r = xfer(ctl, fd, "{\"id\":\"x\\\"y\",\"cmd\":\"add\",\"a\":1}\n");
	assert_string_equal(r, "{\"ok\":false,\"id\":\"x\\\"y\","
		"\"error\":\"add needs integers a and b\"}");
	assert_int_equal(calls, 2);

	r = xfer(ctl, fd, "{\"cmd\":\"fail\"}\n");
	snprintf(expect, sizeof(expect), "{\"ok\":false,\"error\":\"fail: %s\"}",
		strerror(EBUSY));
	assert_string_equal(r, expect);

	r = xfer(ctl, fd, "{\"cmd\":\"broken\"}\n");
	assert_string_equal(r, "{\"ok\":false,\"error\":\"internal error: "
		"\\\"broken\\\" built a malformed reply\"}");

	r = xfer(ctl, fd, "{\"cmd\":\"who\"}\n");
	snprintf(expect, sizeof(expect),
		"{\"ok\":true,\"uid\":%u,\"pid\":%d,\"cmd\":\"who\"}",
		(unsigned)geteuid(), (int)getpid());
	assert_string_equal(r, expect);

	r = xfer(ctl, fd, "{\"cmd\":\"nosuch\"}\n");
	assert_string_equal(r, "{\"ok\":false,\"error\":\"unknown command "
		"\\\"nosuch\\\" (\\\"help\\\" lists commands)\"}");

	/* registration errors */
	assert_int_equal(dpq_ctl_register(ctl, "add", h_add, NULL, ""), -EEXIST);
	assert_int_equal(dpq_ctl_register(ctl, "Add", h_add, NULL, ""), -EINVAL);
	assert_int_equal(dpq_ctl_register(ctl, "", h_add, NULL, ""), -EINVAL);
	assert_int_equal(dpq_ctl_register(ctl, "a b", h_add, NULL, ""), -EINVAL);
	assert_int_equal(dpq_ctl_register(ctl,
		"x23456789012345678901234567890123", h_add, NULL, ""), -EINVAL);
	assert_int_equal(dpq_ctl_register(ctl, "nofn", NULL, NULL, ""),
		-EINVAL);

	close(fd);
	dpq_ctl_destroy(ctl);
	/* destroy removes our socket file */
	assert_int_equal(access(path, F_OK), -1);
}

static void
test_register_full(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	char name[32];
	int i;

	(void)state;
	for (i = 2; i < DPQ_CTL_CMDS_MAX; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		assert_int_equal(dpq_ctl_register(ctl, name, h_fail, NULL,
			"x"), 0);
	}
	assert_int_equal(dpq_ctl_register(ctl, "one-more", h_fail, NULL, "x"),
		-ENOSPC);
	dpq_ctl_destroy(ctl);
}

static void
test_bad_requests(void **state)
{
	static const char *const bad[][2] = {
		{ "hello\n", "invalid JSON at byte 4: invalid token" },
		{ "{\"cmd\":\"ping\"\n", "invalid JSON at byte 12: "
			"'}' expected" },
		{ "[1,2]\n", "a request must be a JSON object" },
		{ "\"ping\"\n", "a request must be a JSON object" },
		{ "{}\n", "a request needs a \\\"cmd\\\" string" },
		{ "{\"cmd\":5}\n", "a request needs a \\\"cmd\\\" string" },
		{ "{\"cmd\":\"ping\",\"id\":[1]}\n",
			"\\\"id\\\" must be a string or an integer" },
		{ "{\"cmd\":\"ping\",\"cmd\":\"help\"}\n",
			"invalid JSON at byte 18: duplicate object key" },
		{ "{\"cmd\":\"p\xffng\"}\n",
			"invalid JSON at byte 8: unable to decode byte 0xff" },
		{ "{\"cmd\":\"ping\",\"x\":{\"a\":{\"b\":{\"c\":{}}}}}\n",
			"request refused: nested deeper than 4 levels" },
		{ "{\"cmd\":\"ping\",\"n\":1.5}\n", "request refused: "
			"fractions and exponents are not part of the protocol "
			"(integers only)" },
		{ "\x01\x02\x03\n", "invalid JSON at byte 0: "
			"invalid token" },
	};
	struct dpq_ctl *ctl = make_ctl(NULL);
	char want[512];
	size_t i;
	int fd = cli_connect();

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *r = xfer(ctl, fd, bad[i][0]);

		/* jansson's message continues with the text near the error */
		snprintf(want, sizeof(want), "{\"ok\":false,\"error\":\"%s",
			bad[i][1]);
		if (strncmp(r, want, strlen(want)) != 0)
			fail_msg("case %zu: got %s want %s", i, r, want);
	}
	/* blank lines are ignored; the connection still works */
	SEND(fd, "\n\r\n  \n");
	snprintf(want, sizeof(want),
		"{\"ok\":true,\"id\":1,\"pong\":true,\"pid\":%d}",
		(int)getpid());
	assert_string_equal(xfer(ctl, fd, "{\"cmd\":\"ping\",\"id\":1}\n"),
		want);
	close(fd);
	dpq_ctl_destroy(ctl);
}

static void
test_multi_clients(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	int calls = 0, a, b, c;
	char out[512];

	(void)state;
	assert_int_equal(dpq_ctl_register(ctl, "add", h_add, &calls, ""), 0);
	a = cli_connect();
	b = cli_connect();
	c = cli_connect();
	poll_until_clients(ctl, 3);

	/* interleaved halves: each client's line is put together on its own */
	SEND(a, "{\"cmd\":\"add\",\"a\":1,");
	SEND(b, "{\"cmd\":\"add\",");
	assert_int_equal(dpq_ctl_poll(ctl, 10), 0);
	SEND(c, "{\"cmd\":\"add\",\"a\":3,\"b\":3}\n");
	SEND(b, "\"a\":2,\"b\":2}\n");
	SEND(a, "\"b\":1}\n{\"cmd\":\"add\",\"a\":10,\"b\":10}\n");
	cb1.len = cb2.len = cb3.len = 0;
	assert_int_equal(cli_line(ctl, c, &cb3, out, sizeof(out)) > 0, 1);
	assert_string_equal(out, "{\"ok\":true,\"sum\":6}");
	assert_int_equal(cli_line(ctl, b, &cb2, out, sizeof(out)) > 0, 1);
	assert_string_equal(out, "{\"ok\":true,\"sum\":4}");
	assert_int_equal(cli_line(ctl, a, &cb1, out, sizeof(out)) > 0, 1);
	assert_string_equal(out, "{\"ok\":true,\"sum\":2}");
	assert_int_equal(cli_line(ctl, a, &cb1, out, sizeof(out)) > 0, 1);
	assert_string_equal(out, "{\"ok\":true,\"sum\":20}");
	assert_int_equal(calls, 4);

	close(b);
	poll_until_clients(ctl, 2);
	close(a);
	close(c);
	poll_until_clients(ctl, 0);
	dpq_ctl_destroy(ctl);
}

/* More requests in one write than one poll answers: all come back in order. */
static void
test_pipelined_backlog(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	char *reqs = malloc(200 * 40), out[256], want[256];
	size_t len = 0;
	int fd, i, answered = 0, first;
	struct pollfd pfd;
	int64_t deadline;

	(void)state;
	assert_non_null(reqs);
	for (i = 0; i < 200; i++)
		len += (size_t)sprintf(reqs + len,
			"{\"cmd\":\"ping\",\"id\":%d}\n", i);
	fd = cli_connect();
	cli_send(fd, reqs, len);
	free(reqs);

	/* wait until the first poll answers something */
	deadline = now_ms() + WAIT_MS;
	do {
		first = dpq_ctl_poll(ctl, 10);
		assert_true(first >= 0);
		assert_true(now_ms() < deadline);
	} while (first == 0);
	answered = first;
	/* a budget caps one poll; the fd stays readable while work waits */
	assert_true(first < 200);
	pfd.fd = dpq_ctl_fd(ctl);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 1);

	cb1.len = 0;
	for (i = 0; i < 200; i++) {
		assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) > 0);
		snprintf(want, sizeof(want),
			"{\"ok\":true,\"id\":%d,\"pong\":true,\"pid\":%d}", i,
			(int)getpid());
		assert_string_equal(out, want);
	}
	(void)answered;
	/* nothing left: the fd is quiet again after one more poll */
	assert_int_equal(dpq_ctl_poll(ctl, 0), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	close(fd);
	dpq_ctl_destroy(ctl);
}

static void
test_long_line(void **state)
{
	struct dpq_ctl_conf conf = { .line_max = 1024 };
	struct dpq_ctl *ctl = make_ctl(&conf);
	char line[3000], out[512];
	int fd, n;

	(void)state;
	/* exactly line_max bytes before "\n" is accepted */
	n = snprintf(line, sizeof(line), "{\"cmd\":\"ping\",\"pad\":\"");
	memset(line + n, 'x', 1024 - (size_t)n - 2);
	memcpy(line + 1024 - 2, "\"}\n", 4);
	assert_int_equal(strlen(line), 1025);
	fd = cli_connect();
	cb1.len = 0;
	SEND(fd, line);
	assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "\"ok\":true"));

	/* one more byte: error reply, then the server closes */
	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = '\0';
	SEND(fd, line);
	assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) > 0);
	assert_string_equal(out, "{\"ok\":false,\"error\":\"request line too "
		"long (limit 1024 bytes)\"}");
	cli_wait_eof(ctl, fd);
	poll_until_clients(ctl, 0);
	close(fd);

	/* a 1025-byte line with its newline: same (the limit excludes "\n") */
	fd = cli_connect();
	memset(line, ' ', 1025);
	line[1025] = '\n';
	line[1026] = '\0';
	SEND(fd, line);
	assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "too long"));
	cli_wait_eof(ctl, fd);
	close(fd);
	dpq_ctl_destroy(ctl);
}

/* Half a line then gone; a reply nobody reads; SIGPIPE never fires. */
static void
test_vanishing_clients(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	int fd, i;

	(void)state;
	signal(SIGPIPE, SIG_DFL);	/* a SIGPIPE would kill the test */
	fd = cli_connect();
	SEND(fd, "{\"cmd\":\"pi");
	assert_int_equal(dpq_ctl_poll(ctl, 10), 0);
	close(fd);
	poll_until_clients(ctl, 0);

	/* shut down after a complete request: it is still answered */
	fd = cli_connect();
	SEND(fd, "{\"cmd\":\"ping\"}\n{\"cmd\":\"pi");
	shutdown(fd, SHUT_WR);
	cb1.len = 0;
	{
		char out[256];

		assert_true(cli_line(ctl, fd, &cb1, out, sizeof(out)) > 0);
		assert_non_null(strstr(out, "\"pong\":true"));
	}
	cli_wait_eof(ctl, fd);	/* the partial second line is dropped */
	close(fd);

	/* many requests, then close without reading any reply */
	for (i = 0; i < 20; i++) {
		fd = cli_connect();
		SEND(fd, "{\"cmd\":\"ping\"}\n{\"cmd\":\"help\"}\n"
			"{\"cmd\":\"ping\"}\n");
		if (i % 2)
			assert_true(dpq_ctl_poll(ctl, 5) >= 0);
		close(fd);
	}
	poll_until_clients(ctl, 0);

	fd = cli_connect();
	cb1.len = 0;
	assert_non_null(strstr(xfer(ctl, fd, "{\"cmd\":\"ping\"}\n"), "pong"));
	close(fd);
	dpq_ctl_destroy(ctl);
}

/*
 * A client that sends but does not read: the server stops reading it
 * (no unbounded buffering), stays responsive to others, and delivers
 * everything once the client reads.
 */
static void
test_backpressure(void **state)
{
	struct dpq_ctl *ctl = make_ctl(NULL);
	int slow, other, i, n = 64, got = 0;
	char *out = malloc(BUFSZ);
	static struct cli_buf big;

	(void)state;
	assert_non_null(out);
	assert_int_equal(dpq_ctl_register(ctl, "big", h_big, NULL, ""), 0);
	slow = cli_connect();
	other = cli_connect();
	/* each reply ~35 KiB: 64 of them overflow the socket buffers */
	for (i = 0; i < n; i++)
		SEND(slow, "{\"cmd\":\"big\"}\n");
	for (i = 0; i < 50; i++)
		assert_true(dpq_ctl_poll(ctl, 1) >= 0);
	/* the server is not stuck on the slow client */
	cb1.len = 0;
	assert_non_null(strstr(xfer(ctl, other, "{\"cmd\":\"ping\"}\n"),
		"pong"));
	big.len = 0;
	for (i = 0; i < n; i++) {
		int l = cli_line(ctl, slow, &big, out, BUFSZ);

		assert_true(l > 35000);
		assert_memory_equal(out, "{\"ok\":true,\"v\":[", 16);
		got++;
	}
	assert_int_equal(got, n);
	close(slow);
	close(other);
	free(out);
	dpq_ctl_destroy(ctl);
}

static void
test_reply_too_large(void **state)
{
	struct dpq_ctl_conf conf = { .reply_max = 4096 };
	struct dpq_ctl *ctl = make_ctl(&conf);
	int fd;

	(void)state;
	assert_int_equal(dpq_ctl_register(ctl, "big", h_big, NULL, ""), 0);
	fd = cli_connect();
	cb1.len = 0;
	assert_string_equal(xfer(ctl, fd, "{\"cmd\":\"big\",\"n\":200}\n"),
		"{\"ok\":false,\"error\":\"reply too large (limit 4096 "
		"bytes)\"}");
	/* a reply that fits still works on the same connection */
	assert_non_null(strstr(xfer(ctl, fd, "{\"cmd\":\"big\",\"n\":2}\n"),
		"\"ok\":true"));
	close(fd);
	dpq_ctl_destroy(ctl);
}

static void
test_client_limit(void **state)
{
	/* no idle timeout in this one: a loaded machine may stall this
	 * process for longer than any short idle limit */
	struct dpq_ctl_conf conf = { .max_clients = 2, .idle_ms = 600000 };
	struct dpq_ctl *ctl = make_ctl(&conf);
	int a, b, c;
	char out[256];

	(void)state;
	a = cli_connect();
	b = cli_connect();
	poll_until_clients(ctl, 2);
	c = cli_connect();
	cb3.len = 0;
	assert_true(cli_line(ctl, c, &cb3, out, sizeof(out)) > 0);
	assert_string_equal(out, "{\"ok\":false,\"error\":\"too many clients "
		"(limit 2)\"}");
	assert_true(cli_line(ctl, c, &cb3, out, sizeof(out)) < 0);	/* EOF */
	close(c);
	assert_int_equal(dpq_ctl_nclients(ctl), 2);
	close(a);
	close(b);
	dpq_ctl_destroy(ctl);
}

/* Idle clients are closed after idle_ms; an active one is kept. Bounded
 * by WAIT_MS, not by a fixed 400 ms: the process may be stalled for
 * longer than idle_ms between two pings (then the server, at its next
 * poll, first reads the pending ping: a stays), or after the last one
 * (then a idles out too: so the count is read while a is still active). */
static void
test_client_idle(void **state)
{
	struct dpq_ctl_conf conf = { .max_clients = 2, .idle_ms = 200 };
	struct dpq_ctl *ctl = make_ctl(&conf);
	int64_t tb, deadline;
	int a, b;
	char out[256];

	(void)state;
	a = cli_connect();
	tb = now_ms();	/* b cannot have been accepted before */
	b = cli_connect();
	poll_until_clients(ctl, 2);
	deadline = now_ms() + WAIT_MS;
	cb1.len = 0;
	do {
		assert_true(now_ms() < deadline);
		assert_non_null(strstr(xfer(ctl, a, "{\"cmd\":\"ping\"}\n"),
			"pong"));
		poll(NULL, 0, 20);
	} while (dpq_ctl_nclients(ctl) == 2);
	/* b went, not before idle_ms; a, still active, stays */
	assert_true(now_ms() - tb > 200);
	assert_int_equal(dpq_ctl_nclients(ctl), 1);
	assert_non_null(strstr(xfer(ctl, a, "{\"cmd\":\"ping\"}\n"), "pong"));
	cb2.len = 0;
	assert_true(cli_line(ctl, b, &cb2, out, sizeof(out)) < 0);
	close(a);
	close(b);
	dpq_ctl_destroy(ctl);
}

static void
test_socket_path(void **state)
{
	struct dpq_ctl_conf conf = { .path = path };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dpq_ctl *ctl, *ctl2;
	struct stat st;
	char longp[200];
	mode_t old;
	int s, fd;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);

	/* the socket is 0600 even under a permissive umask, which is kept */
	old = umask(0);
	ctl = make_ctl(NULL);
	assert_int_equal(umask(old), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);

	/* a second server on a live path is refused; the first keeps working */
	assert_int_equal(dpq_ctl_create(&conf, &ctl2), -EADDRINUSE);
	assert_null(ctl2);
	fd = cli_connect();
	cb1.len = 0;
	assert_non_null(strstr(xfer(ctl, fd, "{\"cmd\":\"ping\"}\n"), "pong"));
	close(fd);
	dpq_ctl_destroy(ctl);
	assert_int_equal(access(path, F_OK), -1);

	/* a live socket of someone else (not a dpq_ctl) is refused and kept */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 4), 0);
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -EADDRINUSE);
	assert_int_equal(access(path, F_OK), 0);
	close(s);

	/* now nobody listens: stale, removed and replaced */
	assert_int_equal(dpq_ctl_create(&conf, &ctl), 0);
	fd = cli_connect();
	assert_non_null(strstr(xfer(ctl, fd, "{\"cmd\":\"ping\"}\n"), "pong"));
	close(fd);
	dpq_ctl_destroy(ctl);

	/* a stale socket file from a crashed process (bound, never listened) */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	assert_int_equal(dpq_ctl_create(&conf, &ctl), 0);
	dpq_ctl_destroy(ctl);

	/* a regular file is never removed */
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -EEXIST);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);

	/* destroy leaves a path alone that is no longer ours */
	ctl = make_ctl(NULL);
	unlink(path);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	close(fd);
	dpq_ctl_destroy(ctl);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);

	/* bad paths and configurations */
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	conf.path = longp;
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -ENAMETOOLONG);
	conf.path = "";
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -EINVAL);
	assert_int_equal(dpq_ctl_create(NULL, &ctl), -EINVAL);
	conf.path = "/nonexistent-dir-dpq/ctl.sock";
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -ENOENT);
	conf.path = path;
	conf.reply_max = 16;
	assert_int_equal(dpq_ctl_create(&conf, &ctl), -EINVAL);
	assert_int_equal(access(path, F_OK), -1);
}

/*
 * SO_PEERCRED: a client of another uid gets an error reply and is closed
 * (the socket file is made world-accessible here so that the kernel lets
 * it connect at all). Needs root to switch uid.
 */
static void
test_peer_credentials(void **state)
{
	struct dpq_ctl *ctl;
	int pfd[2], status;
	char out[512];
	ssize_t n;
	size_t len = 0;
	pid_t pid;
	int64_t deadline;

	(void)state;
	if (geteuid() != 0)
		skip();
	ctl = make_ctl(NULL);
	assert_int_equal(chmod(dir, 0711), 0);	/* mkdtemp made it 0700 */
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char buf[512];
		ssize_t r;
		int fd;

		close(pfd[0]);
		alarm(60);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(4);
		if (send(fd, "{\"cmd\":\"ping\"}\n", 15, MSG_NOSIGNAL) < 0) {
			/* may be closed already: the reply still waits */
		}
		while ((r = recv(fd, buf, sizeof(buf), 0)) > 0)
			if (write(pfd[1], buf, (size_t)r) != r)
				_exit(5);
		_exit(0);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	deadline = now_ms() + WAIT_MS;
	for (;;) {
		assert_true(now_ms() < deadline);
		assert_true(dpq_ctl_poll(ctl, 5) >= 0);
		n = read(pfd[0], out + len, sizeof(out) - 1 - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0)
			break;
	}
	out[len] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(out, "{\"ok\":false,\"error\":\"permission denied: "
		"uid 65534 may not use this socket (root or uid 0 only)\"}\n");
	assert_int_equal(dpq_ctl_nclients(ctl), 0);
	close(pfd[0]);
	dpq_ctl_destroy(ctl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_builtin_and_handlers,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_register_full,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_clients,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_backlog,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanishing_clients,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_too_large,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_limit,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_idle,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_path,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_credentials,
			setup, teardown),
	};

	alarm(120);	/* last-resort bound on the whole binary */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
