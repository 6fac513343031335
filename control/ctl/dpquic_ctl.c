/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquic-ctl: command-line client of dpquicd's control socket.
 *
 *   dpquic-ctl [-s SOCKET] [-j|-r] [-t MS] COMMAND [key=value ...]
 *
 * Sends {"cmd":"COMMAND","key":value,...} as one line and prints the
 * reply for a person (default: aligned fields and tables, ctl_print.c),
 * as indented JSON (-j, --json) or as received, one line (-r, --raw). A value
 * that is a decimal integer becomes a JSON integer, true and false become
 * booleans, anything else a string. The socket is -s, else
 * $DPQUIC_CTL_SOCKET, else DPQ_CTL_DEFAULT_PATH (/run/dpquic/dpquicd.sock).
 * The whole exchange must finish within -t milliseconds (default 35000: longer than the daemon waits for a CPU-starved shard, 30 s).
 *
 * Exit status: 0 the daemon replied ok:true; 1 it replied ok:false;
 * 2 usage error, connection failure, timeout or a malformed reply.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control/ctl/ctl_print.h"
#include "control/ctl/ctl_socket.h"
#include "control/ctl/json.h"

#define EXIT_OK		0
#define EXIT_NOTOK	1
#define EXIT_USAGE	2

#define CTL_TIMEOUT_MS_DEFAULT	35000
#define CTL_REQ_MAX		DPQ_CTL_LINE_MAX_DEFAULT
#define CTL_PRETTY_MAX		(64u << 20)

static const char *prog = "dpquic-ctl";

static void
usage(FILE *f)
{
	fprintf(f,
"usage: %s [-s SOCKET] [-j|-r] [-t MS] COMMAND [ARG ...] [key=value ...]\n"
"\n"
"Send COMMAND to dpquicd's control socket and print the reply: fields and\n"
"tables for a person by default, JSON for programs with -j or -r.\n"
"\n"
"  -s, --socket PATH   control socket (default: $DPQUIC_CTL_SOCKET, else\n"
"                      " DPQ_CTL_DEFAULT_PATH ")\n"
"  -j, --json          print the reply as indented JSON\n"
"  -r, --raw           print the reply as received (one JSON line)\n"
"  -t, --timeout MS    give up after MS milliseconds (default %d)\n"
"  -h, --help          this text\n"
"\n"
"key=value pairs become request members, other arguments the \"args\" list\n"
"(`dpquic-ctl drain 30`, `dpquic-ctl conn ID`): decimal integers and\n"
"true/false are sent as JSON integers and booleans, other values as strings.\n"
"`%s help` lists the daemon's commands. Common ones: status, stats,\n"
"connections, conn ID, close ID, qlog ID on|off, drain [S], reload, config.\n"
"\n"
"Without -j/-r an ok:false reply is printed to stderr as \"dpquic-ctl:\n"
"COMMAND: error\". Exit status: 0 reply ok:true, 1 reply ok:false, 2 usage,\n"
"connection or protocol error.\n", prog, CTL_TIMEOUT_MS_DEFAULT, prog);
}

static void __attribute__((format(printf, 1, 2)))
errmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before the deadline (0 when past it). */
static int
left_ms(int64_t deadline)
{
	int64_t l = deadline - now_ms();

	return l > 0 ? (int)(l > INT32_MAX ? INT32_MAX : l) : 0;
}

/* A request value: integer, boolean, or string. 0, or -ERANGE. */
static int
put_value(struct dpq_json_w *w, const char *v)
{
	const char *p = v;
	bool digits = false;
	json_t *num;
	int rc;

	if (strcmp(v, "true") == 0) {
		dpq_json_w_bool(w, true);
		return 0;
	}
	if (strcmp(v, "false") == 0) {
		dpq_json_w_bool(w, false);
		return 0;
	}
	/* -?(0|[1-9][0-9]*): the JSON integer grammar, nothing looser */
	if (*p == '-')
		p++;
	if (*p == '0')
		digits = p[1] == '\0';
	else if (*p >= '1' && *p <= '9') {
		while (*p >= '0' && *p <= '9')
			p++;
		digits = *p == '\0';
	}
	if (!digits) {
		dpq_json_w_str(w, v);
		return 0;
	}
	rc = dpq_json_parse(v, strlen(v), 0, &num, NULL);
	if (rc == 0)
		dpq_json_w_val(w, num);
	json_decref(num);
	return rc == 0 ? 0 : -ERANGE;
}

static int
build_request(struct dpq_json_w *w, const char *cmd, int argc, char **argv)
{
	int i, j, npos = 0;

	dpq_json_w_obj_begin(w);
	dpq_json_w_kstr(w, "cmd", cmd);
	/* Positional arguments (`drain 30`, `conn ID`) go into "args". */
	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == argv[i]) {
			errmsg("argument \"%s\" has no key before '='",
				argv[i]);
			return -EINVAL;
		}
		if (eq != NULL)
			continue;
		if (npos++ == 0) {
			dpq_json_w_key(w, "args");
			dpq_json_w_arr_begin(w);
		}
		if (put_value(w, argv[i]) < 0) {
			errmsg("argument \"%s\" is outside the signed 64-bit "
				"integer range", argv[i]);
			return -ERANGE;
		}
	}
	if (npos > 0)
		dpq_json_w_arr_end(w);
	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		size_t klen;

		if (eq == NULL || eq == argv[i])
			continue;
		klen = (size_t)(eq - argv[i]);
		if ((klen == 3 && memcmp(argv[i], "cmd", 3) == 0) ||
		    (klen == 4 && memcmp(argv[i], "args", 4) == 0)) {
			errmsg("\"%.*s\" is reserved", (int)klen, argv[i]);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (strncmp(argv[j], argv[i], klen + 1) == 0) {
				errmsg("key \"%.*s\" given twice", (int)klen,
					argv[i]);
				return -EINVAL;
			}
		*eq = '\0';
		dpq_json_w_key(w, argv[i]);
		*eq = '=';
		if (put_value(w, eq + 1) < 0) {
			errmsg("value of \"%.*s\" is outside the signed 64-bit "
				"integer range", (int)klen, argv[i]);
			return -ERANGE;
		}
	}
	dpq_json_w_obj_end(w);
	return 0;
}

static int
connect_ctl(const char *path, int64_t deadline)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errmsg("socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		errmsg("socket: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		const char *hint = "";

		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		if (errno == EINTR)
			continue;
		/* a Unix socket says EAGAIN when the listen backlog is full */
		if (errno == EAGAIN && left_ms(deadline) > 0) {
			poll(NULL, 0, 10);
			continue;
		}
		if (errno == ENOENT)
			hint = " (is dpquicd running? -s sets the socket path)";
		else if (errno == ECONNREFUSED)
			hint = " (nothing listens there: dpquicd is not running)";
		else if (errno == EACCES || errno == EPERM)
			hint = " (the socket is for root and dpquicd's user)";
		else if (errno == EAGAIN)
			hint = " (timed out: the daemon is not accepting)";
		errmsg("cannot connect to %s: %s%s", path, strerror(errno),
			hint);
		close(fd);
		return -1;
	}
}

/* 0: sent; 1: the peer closed (EPIPE); -1: failed (reported). */
static int
send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return 1;	/* the daemon hung up: maybe it said why */
		if (n < 0 && errno != EAGAIN) {
			errmsg("sending the request: %s", strerror(errno));
			return -1;
		}
		if (poll(&pfd, 1, left_ms(deadline)) == 0) {
			errmsg("timed out sending the request");
			return -1;
		}
	}
	return 0;
}

/*
 * Read one line (without "\n") into a malloc'd buffer. Also called after
 * the peer hung up on our request: a reply saying why may be waiting.
 */
static char *
recv_line(int fd, int64_t deadline, size_t *len_out)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);

	if (buf == NULL) {
		errmsg("out of memory");
		return NULL;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char *nl;
		ssize_t n;
		int rc;

		if (len == cap) {
			char *nb;

			if (cap >= DPQ_JSON_INPUT_MAX) {
				errmsg("reply longer than %u bytes",
					DPQ_JSON_INPUT_MAX);
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				errmsg("out of memory");
				break;
			}
			buf = nb;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n > 0) {
			nl = memchr(buf + len, '\n', (size_t)n);
			len += (size_t)n;
			if (nl != NULL) {
				*len_out = (size_t)(nl - buf);
				return buf;
			}
			continue;
		}
		/* Linux resets when the daemon closes with our data unread */
		if (n == 0 || errno == ECONNRESET) {
			errmsg("the daemon closed the connection without a "
				"complete reply");
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			errmsg("reading the reply: %s", strerror(errno));
			break;
		}
		rc = poll(&pfd, 1, left_ms(deadline));
		if (rc == 0) {
			errmsg("timed out waiting for the reply");
			break;
		}
	}
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "raw", no_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = getenv("DPQUIC_CTL_SOCKET");
	long timeout_ms = CTL_TIMEOUT_MS_DEFAULT;
	struct dpq_json_err jerr;
	json_t *root = NULL;
	struct dpq_json_w w;
	enum { OUT_HUMAN, OUT_JSON, OUT_RAW } out = OUT_HUMAN;
	bool ok;
	int64_t deadline;
	char *reply, *end;
	size_t rlen;
	int opt, fd, n, rc;

	if (path == NULL || path[0] == '\0')
		path = DPQ_CTL_DEFAULT_PATH;
	/* '+': stop at COMMAND, so values like -5 are not options */
	while ((opt = getopt_long(argc, argv, "+s:jrt:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'j':
			out = OUT_JSON;
			break;
		case 'r':
			out = OUT_RAW;
			break;
		case 't':
			errno = 0;
			timeout_ms = strtol(optarg, &end, 10);
			if (errno || *end != '\0' || end == optarg ||
					timeout_ms <= 0 || timeout_ms > 3600000) {
				errmsg("bad timeout \"%s\" (1..3600000 ms)",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		errmsg("no command given");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (argv[optind][0] == '\0' || strchr(argv[optind], '=') != NULL) {
		errmsg("\"%s\" is not a command name", argv[optind]);
		return EXIT_USAGE;
	}

	if (dpq_json_w_init_dyn(&w, CTL_REQ_MAX) < 0) {
		errmsg("out of memory");
		return EXIT_USAGE;
	}
	rc = build_request(&w, argv[optind], argc - optind - 1,
		argv + optind + 1);
	n = dpq_json_w_finish(&w);
	if (rc < 0 || n < 0) {
		if (rc == 0)
			errmsg("request longer than %u bytes", CTL_REQ_MAX);
		dpq_json_w_free(&w);
		return EXIT_USAGE;
	}
	w.buf[n] = '\n';	/* finish() left room for the NUL */

	deadline = now_ms() + timeout_ms;
	fd = connect_ctl(path, deadline);
	if (fd < 0) {
		dpq_json_w_free(&w);
		return EXIT_USAGE;
	}
	rc = send_all(fd, w.buf, (size_t)n + 1, deadline);
	dpq_json_w_free(&w);
	if (rc < 0) {
		close(fd);
		return EXIT_USAGE;
	}
	reply = recv_line(fd, deadline, &rlen);
	close(fd);
	if (reply == NULL)
		return EXIT_USAGE;

	rc = dpq_json_parse(reply, rlen, DPQ_JSON_DEPTH_MAX, &root, &jerr);
	if (rc < 0 || dpq_json_get_bool(root, "ok", &ok) < 0) {
		if (rc < 0)
			errmsg("malformed reply (%s)", jerr.msg);
		else
			errmsg("malformed reply (no boolean \"ok\")");
		json_decref(root);
		free(reply);
		return EXIT_USAGE;
	}
	n = -1;
	if (out == OUT_HUMAN) {
		const char *e = NULL;

		if (ok) {
			dpq_ctl_print_human(stdout, root);
			if (json_object_size(root) <= 1 + (dpq_json_get(root,
					"id") != NULL))
				printf("ok\n");
		} else {
			dpq_json_get_str(root, "error", &e, NULL);
			errmsg("%s: %s", argv[optind], e != NULL ? e :
				"failed (no reason given)");
		}
		n = 0;
	} else if (out == OUT_JSON &&
			dpq_json_w_init_dyn(&w, CTL_PRETTY_MAX) == 0) {
		dpq_json_w_set_indent(&w, 2);
		dpq_json_w_val(&w, root);
		n = dpq_json_w_finish(&w);
		if (n >= 0)
			printf("%s\n", w.buf);
		dpq_json_w_free(&w);
	}
	if (n < 0) {
		/* -r, or (out of memory) as received */
		fwrite(reply, 1, rlen, stdout);
		fputc('\n', stdout);
	}
	json_decref(root);
	free(reply);
	if (fflush(stdout) != 0) {
		errmsg("writing the reply: %s", strerror(errno));
		return EXIT_USAGE;
	}
	return ok ? EXIT_OK : EXIT_NOTOK;
}
