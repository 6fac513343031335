/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_ctl is the daemon's control socket (DESIGN.md §6): a Unix-domain
 * stream socket, mode 0600, that accepts clients whose peer credentials
 * (SO_PEERCRED) say uid 0 or the daemon's own effective uid. The protocol
 * is one JSON object per line each way:
 *
 *   request: {"cmd":"NAME", ...arguments..., "id":optional}\n
 *   reply:   {"ok":true, ...results...}\n
 *         or {"ok":false,"error":"what went wrong"}\n
 *
 * A request's "id" (string or integer), if any, is echoed in its reply.
 * Lines end with "\n" ("\r\n" accepted); empty lines are ignored. A line
 * longer than the configured limit gets an error reply and the connection
 * is closed; invalid JSON, a non-object, a missing "cmd" or an unknown
 * command get an error reply and the connection stays usable. A partial
 * line at end of stream is discarded. Several clients are served at once;
 * each request is handled completely before the next, so handlers need no
 * locking against each other. A client that stops reading its replies is
 * not read either (back-pressure), and is closed after an idle timeout.
 *
 * Nothing blocks: the owner (the management thread: mgmt only, not
 * thread-safe) calls dpq_ctl_poll() from its loop, either with a timeout
 * as its only wait, or with timeout 0 when dpq_ctl_fd() (an epoll fd) is
 * readable in its own poll set.
 *
 * Commands are registered by name. `help` (lists commands and their help
 * text) and `ping` (replies {"ok":true,"pong":true,"pid":N}) are built in.
 *
 * Return codes: 0 on success; -EINVAL bad argument; -ENAMETOOLONG socket
 * path too long for sun_path; -EADDRINUSE another live process listens at
 * the path; -EEXIST the path exists and is not a socket (never removed);
 * -ENOSPC command table full; -EEXIST a command of that name exists;
 * -ENOMEM; other negative errno from socket calls.
 */
#ifndef DPQ_CONTROL_CTL_SOCKET_H
#define DPQ_CONTROL_CTL_SOCKET_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include "control/ctl/json.h"

/* Default socket path of dpquicd; dpquic-ctl uses it without -s. */
#define DPQ_CTL_DEFAULT_PATH		"/run/dpquic/dpquicd.sock"
#define DPQ_CTL_LINE_MAX_DEFAULT	(64u << 10)	/* request line */
#define DPQ_CTL_REPLY_MAX_DEFAULT	(1u << 20)	/* one reply */
#define DPQ_CTL_CLIENTS_DEFAULT		16
#define DPQ_CTL_IDLE_MS_DEFAULT		60000
#define DPQ_CTL_CMDS_MAX		64
#define DPQ_CTL_NAME_MAX		32	/* [a-z0-9_.-], not empty */
#define DPQ_CTL_REQ_DEPTH		4	/* request nesting limit */
#define DPQ_CTL_ERR_MAX			256	/* error message bytes */

struct dpq_ctl;

struct dpq_ctl_conf {
	const char *path;	/* socket path; its directory must exist */
	unsigned max_clients;	/* 0: DPQ_CTL_CLIENTS_DEFAULT */
	size_t line_max;	/* 0: DPQ_CTL_LINE_MAX_DEFAULT */
	size_t reply_max;	/* 0: DPQ_CTL_REPLY_MAX_DEFAULT */
	int idle_ms;		/* 0: DPQ_CTL_IDLE_MS_DEFAULT; < 0: never */
};

/* One request as a handler sees it. */
struct dpq_ctl_req {
	const char *cmd;			/* the "cmd" value */
	const json_t *args;			/* the whole request object */
	/*
	 * The reply, already opened as {"ok":true : add members (key/value
	 * pairs) only; the server closes the object. Ignored when the
	 * handler fails.
	 */
	struct dpq_json_w *reply;
	uid_t uid;				/* peer credentials */
	pid_t pid;
	char err[DPQ_CTL_ERR_MAX];		/* see dpq_ctl_req_error */
};

/*
 * A command handler: return 0 for {"ok":true,...}, or a negative errno
 * for {"ok":false,"error":...} with req->err as the message (set it with
 * dpq_ctl_req_error) or strerror() when none was set. A reply that
 * outgrows reply_max becomes {"ok":false,"error":"reply too large"}.
 */
/* handler signature: int handler(struct dpq_ctl_req *req, void *arg) */

/* Create the socket and start listening (see the return codes above). */
int dpq_ctl_create(const struct dpq_ctl_conf *conf, struct dpq_ctl **out);
/* Close all clients and the socket; unlink the path if it is still ours. */
void dpq_ctl_destroy(struct dpq_ctl *ctl);

/*
 * Add a command. name: 1..DPQ_CTL_NAME_MAX of [a-z0-9_.-]; help: one line,
 * copied. Returns 0, -EINVAL, -EEXIST, -ENOSPC, -ENOMEM.
 */
int dpq_ctl_register(struct dpq_ctl *ctl, const char *name,
		int (*handler)(struct dpq_ctl_req *req, void *arg), void *arg,
		const char *help);

/* An fd that polls readable (POLLIN) when dpq_ctl_poll() has work. */
int dpq_ctl_fd(const struct dpq_ctl *ctl);

/*
 * Do what is ready: accept, read, run handlers, write replies, close
 * finished, faulty or idle clients. Waits at most timeout_ms (0: never
 * blocks; < 0 is treated as 0 so the owner's loop is never stalled).
 * Returns the number of requests answered, or a negative errno if the
 * server itself failed (a client's failure only closes that client).
 */
int dpq_ctl_poll(struct dpq_ctl *ctl, int timeout_ms);

/* Clients connected now. */
unsigned dpq_ctl_nclients(const struct dpq_ctl *ctl);

/* Set req->err (printf format) and return -EINVAL, for `return` in handlers. */
int dpq_ctl_req_error(struct dpq_ctl_req *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* DPQ_CONTROL_CTL_SOCKET_H */
