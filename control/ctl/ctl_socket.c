/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket server (see ctl_socket.h for the protocol). One epoll
 * set holds the listening socket, an eventfd that stays readable while
 * clients have unanswered buffered lines (so dpq_ctl_fd() tells the truth
 * when a per-poll budget left work), and the clients. Each client has an
 * input buffer of line_max + 1 bytes and an output buffer holding at most
 * one reply: a new line is handled only once the previous reply is fully
 * written, so a client that does not read is not read either.
 * mgmt only: nothing here is thread-safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "control/ctl/ctl_socket.h"

#define CTL_BACKLOG	16
#define CTL_EVENTS	32	/* epoll events per poll */
#define CTL_LINE_BURST	32	/* requests per client per service */
#define CTL_READ_BURST	4	/* recv calls per client per service */
#define CTL_ACCEPT_BURST 16	/* accepts per poll */
#define CTL_DRAIN_MAX	(256u << 10)	/* bytes discarded before a close */

#define TAG_LISTEN	0
#define TAG_KICK	1
#define TAG_CLIENT	2	/* + slot */

struct ctl_cmd {
	char name[DPQ_CTL_NAME_MAX + 1];
	int (*fn)(struct dpq_ctl_req *req, void *arg);
	void *arg;
	char *help;
};

struct ctl_client {
	int fd;
	unsigned slot;
	uid_t uid;
	pid_t pid;
	uint32_t events;	/* epoll interest now */
	char *in;		/* line_max + 1 bytes */
	size_t in_off, in_len;
	char *out;
	size_t out_off, out_len, out_cap;
	uint64_t last_ms;	/* last progress, for the idle timeout */
	bool rd_eof;		/* peer shut down its sending side */
	bool closing;		/* close once the output is flushed */
	bool more;		/* complete lines left by the budget */
};

struct dpq_ctl {
	int lfd, epfd, kickfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	uid_t euid;
	unsigned max_clients, nclients;
	size_t line_max, reply_max;
	int idle_ms;
	bool backlog;
	struct ctl_client **clients;	/* max_clients slots */
	struct ctl_cmd cmds[DPQ_CTL_CMDS_MAX];
	unsigned ncmds;
	struct dpq_json_w reply;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
dpq_ctl_req_error(struct dpq_ctl_req *req, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(req->err, sizeof(req->err), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- built-in commands -------------------------------------------------- */

static int
cmd_help(struct dpq_ctl_req *req, void *arg)
{
	struct dpq_ctl *ctl = arg;
	unsigned i;

	dpq_json_w_key(req->reply, "commands");
	dpq_json_w_arr_begin(req->reply);
	for (i = 0; i < ctl->ncmds; i++) {
		dpq_json_w_obj_begin(req->reply);
		dpq_json_w_kstr(req->reply, "name", ctl->cmds[i].name);
		dpq_json_w_kstr(req->reply, "help", ctl->cmds[i].help);
		dpq_json_w_obj_end(req->reply);
	}
	dpq_json_w_arr_end(req->reply);
	return 0;
}

static int
cmd_ping(struct dpq_ctl_req *req, void *arg)
{
	(void)arg;
	dpq_json_w_kbool(req->reply, "pong", true);
	dpq_json_w_ki64(req->reply, "pid", (int64_t)getpid());
	return 0;
}

static bool
valid_name(const char *name)
{
	size_t i, n;

	if (name == NULL)
		return false;
	n = strlen(name);
	if (n == 0 || n > DPQ_CTL_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int
dpq_ctl_register(struct dpq_ctl *ctl, const char *name,
		int (*handler)(struct dpq_ctl_req *req, void *arg), void *arg,
		const char *help)
{
	struct ctl_cmd *c;
	unsigned i;

	if (ctl == NULL || handler == NULL || !valid_name(name))
		return -EINVAL;
	for (i = 0; i < ctl->ncmds; i++)
		if (strcmp(ctl->cmds[i].name, name) == 0)
			return -EEXIST;
	if (ctl->ncmds == DPQ_CTL_CMDS_MAX)
		return -ENOSPC;
	c = &ctl->cmds[ctl->ncmds];
	c->help = strdup(help != NULL ? help : "");
	if (c->help == NULL)
		return -ENOMEM;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->fn = handler;
	c->arg = arg;
	ctl->ncmds++;
	return 0;
}

static const struct ctl_cmd *
find_cmd(const struct dpq_ctl *ctl, const char *name)
{
	unsigned i;

	for (i = 0; i < ctl->ncmds; i++)
		if (strcmp(ctl->cmds[i].name, name) == 0)
			return &ctl->cmds[i];
	return NULL;
}

/* ---- socket setup ------------------------------------------------------- */

/*
 * A socket file already at the path: if something accepts connections
 * there it belongs to a live daemon (refuse); if nobody listens it is left
 * over from a crash (remove it). The probe is non-blocking so a live
 * server with a full backlog (EAGAIN) cannot stall us.
 */
static int
clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int s, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	rc = connect(s, (const struct sockaddr *)sa, sizeof(*sa));
	if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		close(s);
		return -EADDRINUSE;
	}
	rc = errno;
	close(s);
	if (rc != ECONNREFUSED)
		return -rc;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int
ep_add(int epfd, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int
dpq_ctl_create(const struct dpq_ctl_conf *conf, struct dpq_ctl **out)
{
	struct sockaddr_un sa;
	struct dpq_ctl *ctl;
	struct stat st;
	mode_t old_mask;
	int rc;

	if (conf == NULL || out == NULL || conf->path == NULL ||
			conf->path[0] == '\0')
		return -EINVAL;
	*out = NULL;
	if (strlen(conf->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return -ENOMEM;
	ctl->lfd = ctl->epfd = ctl->kickfd = -1;
	snprintf(ctl->path, sizeof(ctl->path), "%s", conf->path);
	ctl->euid = geteuid();
	ctl->max_clients = conf->max_clients ? conf->max_clients :
		DPQ_CTL_CLIENTS_DEFAULT;
	ctl->line_max = conf->line_max ? conf->line_max :
		DPQ_CTL_LINE_MAX_DEFAULT;
	ctl->reply_max = conf->reply_max ? conf->reply_max :
		DPQ_CTL_REPLY_MAX_DEFAULT;
	ctl->idle_ms = conf->idle_ms ? conf->idle_ms : DPQ_CTL_IDLE_MS_DEFAULT;
	if (ctl->line_max > DPQ_JSON_INPUT_MAX ||
			ctl->reply_max > DPQ_JSON_INPUT_MAX ||
			ctl->reply_max < 256 || ctl->max_clients > 4096) {
		free(ctl);
		return -EINVAL;
	}
	ctl->clients = calloc(ctl->max_clients, sizeof(ctl->clients[0]));
	if (ctl->clients == NULL) {
		free(ctl);
		return -ENOMEM;
	}
	rc = dpq_json_w_init_dyn(&ctl->reply, ctl->reply_max);
	if (rc < 0)
		goto fail;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, ctl->path, strlen(ctl->path));

	rc = clear_stale(ctl->path, &sa);
	if (rc < 0)
		goto fail;
	ctl->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		0);
	if (ctl->lfd < 0) {
		rc = -errno;
		goto fail;
	}
	/*
	 * Create the file 0600 from the start (no window in which others
	 * could connect). umask is process-wide: this runs at startup on
	 * the management thread, before other threads create files.
	 */
	old_mask = umask(0177);
	rc = bind(ctl->lfd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc < 0)
		rc = -errno;
	umask(old_mask);
	if (rc < 0)
		goto fail;
	if (chmod(ctl->path, 0600) < 0 || stat(ctl->path, &st) < 0) {
		rc = -errno;
		unlink(ctl->path);
		goto fail;
	}
	ctl->dev = st.st_dev;
	ctl->ino = st.st_ino;
	if (listen(ctl->lfd, CTL_BACKLOG) < 0) {
		rc = -errno;
		unlink(ctl->path);
		goto fail;
	}

	ctl->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctl->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctl->epfd < 0 || ctl->kickfd < 0) {
		rc = -errno;
		unlink(ctl->path);
		goto fail;
	}
	rc = ep_add(ctl->epfd, ctl->lfd, EPOLLIN, TAG_LISTEN);
	if (rc == 0)
		rc = ep_add(ctl->epfd, ctl->kickfd, EPOLLIN, TAG_KICK);
	if (rc == 0)
		rc = dpq_ctl_register(ctl, "help", cmd_help, ctl,
			"list the commands and what they do");
	if (rc == 0)
		rc = dpq_ctl_register(ctl, "ping", cmd_ping, ctl,
			"check that the daemon answers");
	if (rc < 0) {
		unlink(ctl->path);
		goto fail;
	}
	*out = ctl;
	return 0;
fail:
	if (ctl->lfd >= 0)
		close(ctl->lfd);
	if (ctl->epfd >= 0)
		close(ctl->epfd);
	if (ctl->kickfd >= 0)
		close(ctl->kickfd);
	for (unsigned i = 0; i < ctl->ncmds; i++)
		free(ctl->cmds[i].help);
	dpq_json_w_free(&ctl->reply);
	free(ctl->clients);
	free(ctl);
	return rc;
}

int
dpq_ctl_fd(const struct dpq_ctl *ctl)
{
	return ctl ? ctl->epfd : -EINVAL;
}

unsigned
dpq_ctl_nclients(const struct dpq_ctl *ctl)
{
	return ctl ? ctl->nclients : 0;
}

/* ---- clients -------------------------------------------------------------- */

static void
client_close(struct dpq_ctl *ctl, struct ctl_client *c)
{
	epoll_ctl(ctl->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	ctl->clients[c->slot] = NULL;
	ctl->nclients--;
	free(c->in);
	free(c->out);
	free(c);
}

/* Best-effort one-line reply on a socket we are about to close. */
static void
reject(int fd, const char *msg)
{
	char buf[DPQ_CTL_ERR_MAX + 64];
	struct dpq_json_w w;
	int n;

	dpq_json_w_init(&w, buf, sizeof(buf) - 1);
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kbool(&w, "ok", false);
	dpq_json_w_kstr(&w, "error", msg);
	dpq_json_w_obj_end(&w);
	n = dpq_json_w_finish(&w);
	if (n > 0) {
		buf[n++] = '\n';
		if (send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* nothing more to do for this peer */
		}
	}
	close(fd);
}

static void
accept_all(struct dpq_ctl *ctl)
{
	unsigned n;

	for (n = 0; n < CTL_ACCEPT_BURST; n++) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct ctl_client *c;
		char msg[DPQ_CTL_ERR_MAX];
		unsigned slot;
		int fd;

		fd = accept4(ctl->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;	/* EAGAIN, or a transient error: retry later */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			reject(fd, "cannot read peer credentials");
			continue;
		}
		if (cred.uid != 0 && cred.uid != ctl->euid) {
			snprintf(msg, sizeof(msg),
				"permission denied: uid %u may not use this "
				"socket (root or uid %u only)",
				(unsigned)cred.uid, (unsigned)ctl->euid);
			reject(fd, msg);
			continue;
		}
		if (ctl->nclients >= ctl->max_clients) {
			snprintf(msg, sizeof(msg),
				"too many clients (limit %u)", ctl->max_clients);
			reject(fd, msg);
			continue;
		}
		for (slot = 0; slot < ctl->max_clients; slot++)
			if (ctl->clients[slot] == NULL)
				break;
		c = calloc(1, sizeof(*c));
		if (c != NULL)
			c->in = malloc(ctl->line_max + 1);
		if (c == NULL || c->in == NULL) {
			free(c);
			reject(fd, "out of memory");
			continue;
		}
		c->fd = fd;
		c->slot = slot;
		c->uid = cred.uid;
		c->pid = cred.pid;
		c->events = EPOLLIN;
		c->last_ms = now_ms();
		if (ep_add(ctl->epfd, fd, EPOLLIN,
				TAG_CLIENT + (uint64_t)slot) < 0) {
			free(c->in);
			free(c);
			reject(fd, "internal error");
			continue;
		}
		ctl->clients[slot] = c;
		ctl->nclients++;
	}
}

static void
set_interest(struct dpq_ctl *ctl, struct ctl_client *c, uint32_t events)
{
	struct epoll_event ev = {
		.events = events,
		.data.u64 = TAG_CLIENT + (uint64_t)c->slot,
	};

	if (c->events == events)
		return;
	if (epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = events;
}

/* Append text + "\n" to the client's output. */
static int
client_queue(struct ctl_client *c, const char *s, size_t n)
{
	size_t need = c->out_len + n + 1;

	if (need > c->out_cap) {
		char *nb = realloc(c->out, need);

		if (nb == NULL)
			return -ENOMEM;
		c->out = nb;
		c->out_cap = need;
	}
	memcpy(c->out + c->out_len, s, n);
	c->out[c->out_len + n] = '\n';
	c->out_len += n + 1;
	return 0;
}

static bool
client_pending(const struct ctl_client *c)
{
	return c->out_off < c->out_len;
}

/* 0: all written; 1: some left (socket full); < 0: the peer is gone. */
static int
client_flush(struct ctl_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
			c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			c->out_off += (size_t)n;
			c->last_ms = now_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		return -EPIPE;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

static void
write_error(struct dpq_json_w *w, const json_t *id,
		const char *msg)
{
	dpq_json_w_reset(w);
	dpq_json_w_obj_begin(w);
	dpq_json_w_kbool(w, "ok", false);
	if (id != NULL) {
		dpq_json_w_key(w, "id");
		dpq_json_w_val(w, id);
	}
	dpq_json_w_kstr(w, "error", msg);
	dpq_json_w_obj_end(w);
}

/* Answer one request line into ctl->reply. */
static void
handle_line(struct dpq_ctl *ctl, struct ctl_client *c, const char *line,
		size_t len)
{
	struct dpq_json_w *w = &ctl->reply;
	const json_t *id = NULL;
	const struct ctl_cmd *cmd;
	struct dpq_json_err jerr;
	json_t *root = NULL;
	struct dpq_ctl_req req;
	char msg[DPQ_CTL_ERR_MAX];
	const char *name;
	int rc;

	rc = dpq_json_parse(line, len, DPQ_CTL_REQ_DEPTH, &root, &jerr);
	if (rc < 0) {
		if (jerr.off == DPQ_JSON_OFF_NONE)
			snprintf(msg, sizeof(msg), "request refused: %s",
				jerr.msg);
		else
			snprintf(msg, sizeof(msg), "invalid JSON at byte %zu: "
				"%s", jerr.off, jerr.msg);
		write_error(w, NULL, msg);
		goto out;
	}
	if (!json_is_object(root)) {
		write_error(w, NULL, "a request must be a JSON object");
		goto out;
	}
	id = dpq_json_get(root, "id");
	if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
		write_error(w, NULL, "\"id\" must be a string or an integer");
		goto out;
	}
	if (dpq_json_get_str(root, "cmd", &name, NULL) < 0) {
		write_error(w, id, "a request needs a \"cmd\" string");
		goto out;
	}
	cmd = find_cmd(ctl, name);
	if (cmd == NULL) {
		snprintf(msg, sizeof(msg),
			"unknown command \"%.64s\" (\"help\" lists commands)",
			name);
		write_error(w, id, msg);
		goto out;
	}

	memset(&req, 0, sizeof(req));
	req.cmd = cmd->name;
	req.args = root;
	req.reply = w;
	req.uid = c->uid;
	req.pid = c->pid;
	dpq_json_w_reset(w);
	dpq_json_w_obj_begin(w);
	dpq_json_w_kbool(w, "ok", true);
	if (id != NULL) {
		dpq_json_w_key(w, "id");
		dpq_json_w_val(w, id);
	}
	rc = cmd->fn(&req, cmd->arg);
	if (rc < 0) {
		if (req.err[0] == '\0')
			snprintf(req.err, sizeof(req.err), "%s: %s", cmd->name,
				strerror(-rc));
		write_error(w, id, req.err);
		goto out;
	}
	dpq_json_w_obj_end(w);
	rc = dpq_json_w_finish(w);
	if (rc == -ENOSPC || rc == -ENOMEM) {
		snprintf(msg, sizeof(msg), "reply too large (limit %zu bytes)",
			ctl->reply_max);
		write_error(w, id, msg);
	} else if (rc < 0) {
		snprintf(msg, sizeof(msg),
			"internal error: \"%s\" built a malformed reply",
			cmd->name);
		write_error(w, id, msg);
	}
out:
	json_decref(root);
}

static bool
blank(const char *s, size_t n)
{
	while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r')) {
		s++;
		n--;
	}
	return n == 0;
}

/*
 * Make all the progress one client allows: flush, answer complete lines
 * (at most CTL_LINE_BURST), read (at most CTL_READ_BURST times), close when
 * done or broken. Returns requests answered.
 */
static int
client_service(struct dpq_ctl *ctl, struct ctl_client *c)
{
	unsigned budget = CTL_LINE_BURST, reads = 0;
	int answered = 0;

	c->more = false;
	for (;;) {
		size_t avail = c->in_len - c->in_off;
		char *line = c->in + c->in_off, *nl;
		ssize_t n;
		int rc;

		rc = client_flush(c);
		if (rc < 0)
			goto close;
		if (rc > 0) {
			/* back-pressure: no reading until the peer reads */
			set_interest(ctl, c, EPOLLOUT);
			return answered;
		}
		if (c->closing) {
			/*
			 * Read what the peer already sent before closing, so
			 * that Linux does not turn our close into ECONNRESET
			 * on the peer ahead of the error reply it must see.
			 */
			size_t drained = 0;

			shutdown(c->fd, SHUT_WR);
			while (drained < CTL_DRAIN_MAX) {
				n = recv(c->fd, c->in, ctl->line_max + 1,
					MSG_DONTWAIT);
				if (n <= 0)
					break;
				drained += (size_t)n;
			}
			goto close;
		}
		nl = avail ? memchr(line, '\n', avail) : NULL;
		if (nl != NULL) {
			size_t len = (size_t)(nl - line);

			if (budget == 0) {
				/* Replies of this round may still be queued:
				 * keep waiting for writability too, or a peer
				 * that waits for them before sending more
				 * would stall until the idle timeout. */
				c->more = true;
				set_interest(ctl, c, EPOLLIN |
					(client_pending(c) ? EPOLLOUT : 0));
				return answered;
			}
			c->in_off += len + 1;
			if (len > 0 && line[len - 1] == '\r')
				len--;
			if (blank(line, len))
				continue;
			budget--;
			handle_line(ctl, c, line, len);
			rc = dpq_json_w_finish(&ctl->reply);
			if (rc < 0 || client_queue(c, ctl->reply.buf,
					(size_t)rc) < 0)
				goto close;
			answered++;
			continue;
		}
		if (c->rd_eof)
			goto close;	/* a partial last line is discarded */
		if (avail == ctl->line_max + 1) {
			char msg[DPQ_CTL_ERR_MAX];

			snprintf(msg, sizeof(msg),
				"request line too long (limit %zu bytes)",
				ctl->line_max);
			write_error(&ctl->reply, NULL, msg);
			rc = dpq_json_w_finish(&ctl->reply);
			if (rc < 0 || client_queue(c, ctl->reply.buf,
					(size_t)rc) < 0)
				goto close;
			c->closing = true;
			answered++;
			continue;
		}
		if (reads == CTL_READ_BURST) {
			/* data may wait in the socket: epoll (level) says so */
			set_interest(ctl, c, EPOLLIN);
			return answered;
		}
		if (c->in_off > 0) {
			memmove(c->in, c->in + c->in_off, avail);
			c->in_off = 0;
			c->in_len = avail;
		}
		n = recv(c->fd, c->in + c->in_len,
			ctl->line_max + 1 - c->in_len, MSG_DONTWAIT);
		if (n > 0) {
			c->in_len += (size_t)n;
			c->last_ms = now_ms();
			reads++;
			continue;
		}
		if (n == 0) {
			c->rd_eof = true;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			set_interest(ctl, c, EPOLLIN);
			return answered;
		}
		goto close;
	}
close:
	client_close(ctl, c);
	return answered;
}

int
dpq_ctl_poll(struct dpq_ctl *ctl, int timeout_ms)
{
	struct epoll_event evs[CTL_EVENTS];
	int n, i, answered = 0;
	unsigned s;
	uint64_t now;

	if (ctl == NULL)
		return -EINVAL;
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (ctl->backlog) {
		uint64_t v;

		ctl->backlog = false;
		if (read(ctl->kickfd, &v, sizeof(v)) < 0) {
			/* already clear */
		}
		for (s = 0; s < ctl->max_clients; s++)
			if (ctl->clients[s] != NULL && ctl->clients[s]->more)
				answered += client_service(ctl,
					ctl->clients[s]);
		timeout_ms = 0;
	}
	n = epoll_wait(ctl->epfd, evs, CTL_EVENTS, timeout_ms);
	if (n < 0) {
		if (errno != EINTR)
			return -errno;
		n = 0;
	}
	for (i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;

		if (tag == TAG_LISTEN) {
			accept_all(ctl);
		} else if (tag >= TAG_CLIENT) {
			s = (unsigned)(tag - TAG_CLIENT);
			/* a slot closed earlier in this batch may be empty */
			if (s < ctl->max_clients && ctl->clients[s] != NULL)
				answered += client_service(ctl,
					ctl->clients[s]);
		}
		/* TAG_KICK: handled through ctl->backlog */
	}

	now = now_ms();
	for (s = 0; s < ctl->max_clients; s++) {
		struct ctl_client *c = ctl->clients[s];

		if (c == NULL)
			continue;
		if (ctl->idle_ms > 0 && !c->more &&
				now - c->last_ms > (uint64_t)ctl->idle_ms) {
			client_close(ctl, c);
			continue;
		}
		if (c->more)
			ctl->backlog = true;
	}
	if (ctl->backlog) {
		uint64_t one = 1;

		/* keep dpq_ctl_fd() readable while work is buffered */
		if (write(ctl->kickfd, &one, sizeof(one)) < 0) {
			/* counter saturated: still readable */
		}
	}
	return answered;
}

void
dpq_ctl_destroy(struct dpq_ctl *ctl)
{
	struct stat st;
	unsigned i;

	if (ctl == NULL)
		return;
	for (i = 0; i < ctl->max_clients; i++)
		if (ctl->clients[i] != NULL)
			client_close(ctl, ctl->clients[i]);
	/* Remove the path only if it is still our socket. */
	if (stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev &&
			st.st_ino == ctl->ino)
		unlink(ctl->path);
	close(ctl->lfd);
	close(ctl->epfd);
	close(ctl->kickfd);
	for (i = 0; i < ctl->ncmds; i++)
		free(ctl->cmds[i].help);
	dpq_json_w_free(&ctl->reply);
	free(ctl->clients);
	free(ctl);
}
