/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * End-to-end tests of dpquic-ctl (path in argv[1], from meson) against a
 * dpq_ctl server polled by a thread of this process, as dpquicd's
 * management thread will poll it.
 *
 * It is also the worked example of how the daemon plugs its statistics
 * into the control socket: stats_cmd() below is a stats provider. The
 * daemon registers the same shape of handler with
 *
 *	dpq_ctl_register(ctl, "stats", stats_cmd, &daemon_state,
 *		"per-shard counters; shard=N for one shard");
 *
 * and reads each shard's counters (written by the shard, read without
 * locks on the management thread) inside the handler; the reply is
 * {"ok":true,"shards":[{"id":0,"connections":..,...},...],"total":{...}}.
 *
 * Checked: output (indented and raw), exit codes 0/1/2, key=value typing,
 * usage errors, missing / stale / silent / misbehaving servers, the reply
 * timeout, $DPQUIC_CTL_SOCKET, the socket's 0600 mode and what a user of
 * another uid gets (needs root). Every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#define RUN_WAIT_MS	10000
#define OUT_MAX		(4u << 20)

static const char *ctl_bin;
static char dir[64], path[96], path2[96];
static struct dpq_ctl *srv;
static pthread_t srv_thread;
static atomic_bool srv_stop;

/* ---- the example stats provider ---------------------------------------- */

#define N_SHARDS 3

/* What a shard's counter block could look like (fake numbers here). */
struct fake_shard_stats {
	uint64_t connections;
	uint64_t rx_packets, tx_packets;
	uint64_t rx_bytes, tx_bytes;
	uint64_t drops;
	uint64_t ring_full;
};

static struct fake_shard_stats shards[N_SHARDS] = {
	{ 10, 1000, 900, 1200000, 1100000, 3, 0 },
	{ 20, 2000, 1900, 2400000, 2300000, 0, 7 },
	{ 0, 0, 0, 0, UINT64_MAX, 0, 0 },	/* extremes survive JSON */
};

static void
put_shard(struct dpq_json_w *w, const struct fake_shard_stats *s)
{
	dpq_json_w_ku64(w, "connections", s->connections);
	dpq_json_w_ku64(w, "rx_packets", s->rx_packets);
	dpq_json_w_ku64(w, "tx_packets", s->tx_packets);
	dpq_json_w_ku64(w, "rx_bytes", s->rx_bytes);
	dpq_json_w_ku64(w, "tx_bytes", s->tx_bytes);
	dpq_json_w_ku64(w, "drops", s->drops);
	dpq_json_w_ku64(w, "ring_full", s->ring_full);
}

/* `stats [shard=N]`: per-shard counters and their sum. mgmt only. */
static int
stats_cmd(struct dpq_ctl_req *req, void *arg)
{
	const struct fake_shard_stats *st = arg;
	struct fake_shard_stats tot = { 0 };
	uint64_t only = UINT64_MAX;
	unsigned i;
	int rc;

	rc = dpq_json_get_u64(req->args, "shard", &only);
	if (rc == -EPROTO || rc == -ERANGE)
		return dpq_ctl_req_error(req,
			"shard must be a non-negative integer");
	if (rc == 0 && only >= N_SHARDS)
		return dpq_ctl_req_error(req, "no shard %llu (shards: 0-%d)",
			(unsigned long long)only, N_SHARDS - 1);
	dpq_json_w_key(req->reply, "shards");
	dpq_json_w_arr_begin(req->reply);
	for (i = 0; i < N_SHARDS; i++) {
		if (only != UINT64_MAX && i != only)
			continue;
		dpq_json_w_obj_begin(req->reply);
		dpq_json_w_ku64(req->reply, "id", i);
		put_shard(req->reply, &st[i]);
		dpq_json_w_obj_end(req->reply);
		tot.connections += st[i].connections;
		tot.rx_packets += st[i].rx_packets;
		tot.tx_packets += st[i].tx_packets;
		tot.rx_bytes += st[i].rx_bytes;
		tot.tx_bytes += st[i].tx_bytes;	/* wraps: fake data */
		tot.drops += st[i].drops;
		tot.ring_full += st[i].ring_full;
	}
	dpq_json_w_arr_end(req->reply);
	dpq_json_w_key(req->reply, "total");
	dpq_json_w_obj_begin(req->reply);
	put_shard(req->reply, &tot);
	dpq_json_w_obj_end(req->reply);
	return 0;
}

/* `wide`: a list with more columns than a row table shows. */
static int
wide_cmd(struct dpq_ctl_req *req, void *arg)
{
	char k[8];
	int e, i;

	(void)arg;
	dpq_json_w_key(req->reply, "items");
	dpq_json_w_arr_begin(req->reply);
	for (e = 0; e < 2; e++) {
		dpq_json_w_obj_begin(req->reply);
		dpq_json_w_kstr(req->reply, "id", e ? "b" : "a");
		for (i = 0; i < 8; i++) {
			snprintf(k, sizeof(k), "f%d", i);
			dpq_json_w_ki64(req->reply, k, e * 10 + i);
		}
		dpq_json_w_key(req->reply, "g");
		dpq_json_w_obj_begin(req->reply);
		if (e == 0)
			dpq_json_w_kstr(req->reply, "name", "x");
		dpq_json_w_kbool(req->reply, "on", e == 1);
		dpq_json_w_obj_end(req->reply);
		dpq_json_w_obj_end(req->reply);
	}
	dpq_json_w_arr_end(req->reply);
	return 0;
}

/* `connections`: what dpquicd lists (fields as control/dpquicd/cmds.c). */
static int
conns_cmd(struct dpq_ctl_req *req, void *arg)
{
	struct dpq_json_w *w = req->reply;

	(void)arg;
	dpq_json_w_ku64(w, "total", 1);
	dpq_json_w_key(w, "connections");
	dpq_json_w_arr_begin(w);
	dpq_json_w_obj_begin(w);
	dpq_json_w_kstr(w, "id", "100000000");
	dpq_json_w_ku64(w, "shard", 0);
	dpq_json_w_kstr(w, "peer", "198.18.0.1:50000");
	dpq_json_w_kstr(w, "scid", "0102030405060708");
	dpq_json_w_kstr(w, "dcid", "a1a2a3a4");
	dpq_json_w_kstr(w, "state", "established");
	dpq_json_w_ku64(w, "age_ms", 1500);
	dpq_json_w_ku64(w, "srtt_us", 2100);
	dpq_json_w_ku64(w, "min_rtt_us", 900);
	dpq_json_w_ku64(w, "cwnd", 14720);
	dpq_json_w_ku64(w, "bytes_sent", 1048576);
	dpq_json_w_ku64(w, "bytes_recv", 1200);
	dpq_json_w_ku64(w, "streams", 1);
	dpq_json_w_kstr(w, "cipher", "TLS_AES_128_GCM_SHA256");
	dpq_json_w_kstr(w, "alpn", "hq-interop");
	dpq_json_w_obj_end(w);
	dpq_json_w_arr_end(w);
	return 0;
}

/* `echo ...`: the request back, to check how dpquic-ctl typed values. */
static int
echo_cmd(struct dpq_ctl_req *req, void *arg)
{
	(void)arg;
	dpq_json_w_key(req->reply, "req");
	dpq_json_w_val(req->reply, req->args);
	return 0;
}

static int
big_cmd(struct dpq_ctl_req *req, void *arg)
{
	uint64_t n = 0, i;

	(void)arg;
	(void)dpq_json_get_u64(req->args, "n", &n);
	dpq_json_w_key(req->reply, "v");
	dpq_json_w_arr_begin(req->reply);
	for (i = 0; i < n; i++)
		dpq_json_w_u64(req->reply, 1000000000 + i);
	dpq_json_w_arr_end(req->reply);
	return 0;
}

static void *
srv_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&srv_stop))
		if (dpq_ctl_poll(srv, 20) < 0)
			break;
	return NULL;
}

static int
group_setup(void **state)
{
	struct dpq_ctl_conf conf = { 0 };

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/dpq-ctle-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/dpquicd.sock", dir);
	snprintf(path2, sizeof(path2), "%s/other.sock", dir);
	conf.path = path;
	if (dpq_ctl_create(&conf, &srv) < 0)
		return -1;
	if (dpq_ctl_register(srv, "stats", stats_cmd, shards,
			"per-shard counters; shard=N for one shard") < 0 ||
			dpq_ctl_register(srv, "echo", echo_cmd, NULL,
			"the request back") < 0 ||
			dpq_ctl_register(srv, "big", big_cmd, NULL,
			"n=N integers") < 0 ||
			dpq_ctl_register(srv, "wide", wide_cmd, NULL,
			"a wide list") < 0 ||
			dpq_ctl_register(srv, "connections", conns_cmd, NULL,
			"one fake connection") < 0)
		return -1;
	atomic_store(&srv_stop, false);
	if (pthread_create(&srv_thread, NULL, srv_loop, NULL) != 0)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	atomic_store(&srv_stop, true);
	pthread_join(srv_thread, NULL);
	dpq_ctl_destroy(srv);
	unlink(path2);
	rmdir(dir);
	return 0;
}

/* ---- running dpquic-ctl ---------------------------------------------------- */

struct run {
	pid_t pid;
	int ofd, efd;
	char *out, *err;
	size_t olen, elen;
	int status;		/* exit code, or -1 */
	int64_t ms;		/* wall time */
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Start dpquic-ctl with args (NULL-terminated); uid != 0 drops to it. */
static void
run_start(struct run *r, uid_t uid, const char *env_sock,
		const char *const *args)
{
	int o[2], e[2];
	const char *argv[32];
	int i, n = 0;

	memset(r, 0, sizeof(*r));
	r->ms = now_ms();
	argv[n++] = ctl_bin;
	for (i = 0; args[i] != NULL && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	assert_int_equal(pipe(o), 0);
	assert_int_equal(pipe(e), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		close(o[1]);
		close(e[1]);
		if (env_sock != NULL)
			setenv("DPQUIC_CTL_SOCKET", env_sock, 1);
		else
			unsetenv("DPQUIC_CTL_SOCKET");
		if (uid != 0 && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(99);
		execv(ctl_bin, (char *const *)argv);
		_exit(98);
	}
	close(o[1]);
	close(e[1]);
	r->ofd = o[0];
	r->efd = e[0];
}

static void
drain(int *fd, char **buf, size_t *len)
{
	char tmp[65536];
	ssize_t n = read(*fd, tmp, sizeof(tmp));

	if (n > 0) {
		assert_true(*len + (size_t)n < OUT_MAX);
		*buf = realloc(*buf, *len + (size_t)n + 1);
		assert_non_null(*buf);
		memcpy(*buf + *len, tmp, (size_t)n);
		*len += (size_t)n;
		(*buf)[*len] = '\0';
	} else if (n == 0 || errno != EINTR) {
		close(*fd);
		*fd = -1;
	}
}

/* Collect output and the exit code; kill the child after RUN_WAIT_MS. */
static int
run_finish(struct run *r)
{
	int64_t deadline = now_ms() + RUN_WAIT_MS;
	int st;

	while (r->ofd >= 0 || r->efd >= 0) {
		struct pollfd p[2];
		int np = 0;

		if (r->ofd >= 0)
			p[np++] = (struct pollfd){ .fd = r->ofd, .events = POLLIN };
		if (r->efd >= 0)
			p[np++] = (struct pollfd){ .fd = r->efd, .events = POLLIN };
		if (now_ms() > deadline) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			fail_msg("dpquic-ctl did not finish in %d ms",
				RUN_WAIT_MS);
		}
		if (poll(p, (nfds_t)np, 50) <= 0)
			continue;
		for (int i = 0; i < np; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (p[i].fd == r->ofd)
				drain(&r->ofd, &r->out, &r->olen);
			else
				drain(&r->efd, &r->err, &r->elen);
		}
	}
	assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
	r->ms = now_ms() - r->ms;
	if (r->out == NULL)
		r->out = strdup("");
	if (r->err == NULL)
		r->err = strdup("");
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r->status;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

#define RUN(r, ...) do {						\
	const char *const a_[] = { __VA_ARGS__, NULL };			\
	run_start(r, 0, NULL, a_);					\
	run_finish(r);							\
} while (0)

/* ---- tests ------------------------------------------------------------------ */

static void
test_ping_and_formats(void **state)
{
	struct run r;
	char want[256];

	(void)state;
	/* default: for a person */
	RUN(&r, "-s", path, "ping");
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "pong  yes\npid   %d\n", (int)getpid());
	assert_string_equal(r.out, want);
	assert_string_equal(r.err, "");
	run_free(&r);

	RUN(&r, "-j", "-s", path, "ping");
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want),
		"{\n  \"ok\": true,\n  \"pong\": true,\n  \"pid\": %d\n}\n",
		(int)getpid());
	assert_string_equal(r.out, want);
	assert_string_equal(r.err, "");
	run_free(&r);

	RUN(&r, "-r", "-s", path, "ping");
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want),
		"{\"ok\":true,\"pong\":true,\"pid\":%d}\n", (int)getpid());
	assert_string_equal(r.out, want);
	run_free(&r);

	RUN(&r, "--raw", "--socket", path, "--timeout", "2000", "help");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "{\"name\":\"stats\",\"help\":"
		"\"per-shard counters; shard=N for one shard\"}"));
	run_free(&r);

	/* the socket from the environment when -s is absent */
	{
		const char *const a[] = { "ping", NULL };

		run_start(&r, 0, path, a);
		assert_int_equal(run_finish(&r), 0);
		assert_non_null(strstr(r.out, "pong  yes"));
		run_free(&r);
	}
}

static void
test_stats_example(void **state)
{
	const json_t *sh, *s1, *tot;
	json_t *root;
	struct run r;
	uint64_t v;

	(void)state;
	RUN(&r, "-r", "-s", path, "stats");
	assert_int_equal(r.status, 0);
	assert_int_equal(dpq_json_parse(r.out, r.olen - 1, 8, &root, NULL), 0);
	sh = dpq_json_get(root, "shards");
	assert_non_null(sh);
	assert_int_equal(json_array_size(sh), N_SHARDS);
	s1 = json_array_get(sh, 1);
	assert_int_equal(dpq_json_get_u64(s1, "id", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(dpq_json_get_u64(s1, "ring_full", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(dpq_json_get_u64(s1, "rx_bytes", &v), 0);
	assert_int_equal(v, 2400000);
	tot = dpq_json_get(root, "total");
	assert_int_equal(dpq_json_get_u64(tot, "connections", &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(dpq_json_get_u64(tot, "drops", &v), 0);
	assert_int_equal(v, 3);
	json_decref(root);
	/* jansson's integers are int64: the writer saturates */
	assert_non_null(strstr(r.out, "\"tx_bytes\":9223372036854775807"));
	run_free(&r);

	/* for a person: a table per list, fields aligned */
	RUN(&r, "-s", path, "stats");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out,
		"shards (3):\n"
		"  id  connections  rx_packets  tx_packets  rx_bytes  "
		"           tx_bytes  drops  ring_full\n"
		"   0           10        1000         900   1200000  "
		"            1100000      3          0\n"
		"   1           20        2000        1900   2400000  "
		"            2300000      0          7\n"
		"   2            0           0           0         0  "
		"9223372036854775807      0          0\n"
		"total:\n"
		"  connections  30\n"
		"  rx_packets   3000\n"
		"  tx_packets   2800\n"
		"  rx_bytes     3600000\n"
		"  tx_bytes     3399999\n"	/* the fake sum wraps */
		"  drops        3\n"
		"  ring_full    7\n");
	run_free(&r);

	/* many columns: one row per field, one column per element */
	RUN(&r, "-s", path, "wide");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out,
		"items (2):\n"
		"  id       a    b\n"
		"  f0       0   10\n"
		"  f1       1   11\n"
		"  f2       2   12\n"
		"  f3       3   13\n"
		"  f4       4   14\n"
		"  f5       5   15\n"
		"  f6       6   16\n"
		"  f7       7   17\n"
		"  g.name   x    -\n"
		"  g.on    no  yes\n");
	run_free(&r);

	/* connections: the columns an operator scans, not all 20 */
	RUN(&r, "-s", path, "connections");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out,
		"total  1\n"
		"connections (1):\n"
		"  id         shard  peer              state        age_ms  "
		"srtt_us   cwnd  bytes_sent  bytes_recv  streams  cipher"
		"                  alpn\n"
		"  100000000      0  198.18.0.1:50000  established    1500  "
		"   2100  14720     1048576        1200        1  "
		"TLS_AES_128_GCM_SHA256  hq-interop\n"
		"  (more fields: dpquic-ctl -j)\n");
	run_free(&r);

	/* indented JSON */
	RUN(&r, "-j", "-s", path, "stats", "shard=1");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out,
		"{\n"
		"  \"ok\": true,\n"
		"  \"shards\": [\n"
		"    {\n"
		"      \"id\": 1,\n"
		"      \"connections\": 20,\n"
		"      \"rx_packets\": 2000,\n"
		"      \"tx_packets\": 1900,\n"
		"      \"rx_bytes\": 2400000,\n"
		"      \"tx_bytes\": 2300000,\n"
		"      \"drops\": 0,\n"
		"      \"ring_full\": 7\n"
		"    }\n"
		"  ],\n"
		"  \"total\": {\n"
		"    \"connections\": 20,\n"
		"    \"rx_packets\": 2000,\n"
		"    \"tx_packets\": 1900,\n"
		"    \"rx_bytes\": 2400000,\n"
		"    \"tx_bytes\": 2300000,\n"
		"    \"drops\": 0,\n"
		"    \"ring_full\": 7\n"
		"  }\n"
		"}\n");
	run_free(&r);

	/* handler errors: ok:false, exit 1 */
	RUN(&r, "-r", "-s", path, "stats", "shard=9");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "{\"ok\":false,\"error\":\"no shard 9 "
		"(shards: 0-2)\"}\n");
	run_free(&r);
	RUN(&r, "-r", "-s", path, "stats", "shard=one");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "shard must be a non-negative integer"));
	run_free(&r);
	RUN(&r, "-r", "-s", path, "stats", "shard=-1");
	assert_int_equal(r.status, 1);
	run_free(&r);
}

static void
test_unknown_command(void **state)
{
	struct run r;

	(void)state;
	/* for a person: the error on stderr, named after the command */
	RUN(&r, "-s", path, "frobnicate");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "dpquic-ctl: frobnicate: unknown command "
		"\"frobnicate\" (\"help\" lists commands)\n");
	run_free(&r);
	RUN(&r, "-j", "-s", path, "frobnicate");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "{\n  \"ok\": false,\n  \"error\": "
		"\"unknown command \\\"frobnicate\\\" (\\\"help\\\" lists "
		"commands)\"\n}\n");
	run_free(&r);
	/* a name the server cannot have is still sent, and refused there */
	RUN(&r, "-r", "-s", path, "Bad Name\n\"x");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "unknown command \\\"Bad Name\\n\\\"x"));
	run_free(&r);
}

static void
test_value_typing(void **state)
{
	struct run r;

	(void)state;
	RUN(&r, "-r", "-s", path, "echo", "a=1", "b=true", "c=false", "d=-5",
		"e=hello", "f=007", "g=9223372036854775807", "h=", "i=x=y",
		"j=1.5", "k=-9223372036854775808", "l=null", "m=\xc3\xa9\t");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "{\"ok\":true,\"req\":{\"cmd\":\"echo\","
		"\"a\":1,\"b\":true,\"c\":false,\"d\":-5,\"e\":\"hello\","
		"\"f\":\"007\",\"g\":9223372036854775807,\"h\":\"\","
		"\"i\":\"x=y\",\"j\":\"1.5\",\"k\":-9223372036854775808,"
		"\"l\":\"null\",\"m\":\"\xc3\xa9\\t\"}}\n");
	run_free(&r);

	/* past int64 (jansson's integers): refused before sending */
	RUN(&r, "-r", "-s", path, "echo", "g=9223372036854775808");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "outside the signed 64-bit integer range"));
	run_free(&r);

	/* values that look like options after COMMAND are values */
	RUN(&r, "-r", "-s", path, "echo", "n=-r");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"n\":\"-r\""));
	run_free(&r);
}

static void
test_usage_errors(void **state)
{
	struct run r;

	(void)state;
	RUN(&r, "-s", path);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no command given"));
	assert_non_null(strstr(r.err, "usage:"));
	assert_string_equal(r.out, "");
	run_free(&r);

	/* Positional arguments become the "args" list. */
	RUN(&r, "-r", "-s", path, "echo", "novalue", "7", "k=v");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"args\":[\"novalue\",7]"));
	assert_non_null(strstr(r.out, "\"k\":\"v\""));
	run_free(&r);
	RUN(&r, "-s", path, "echo", "=1");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no key before '='"));
	run_free(&r);
	RUN(&r, "-s", path, "echo", "args=1");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "reserved"));
	run_free(&r);
	RUN(&r, "-s", path, "echo", "cmd=ping");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "reserved"));
	run_free(&r);
	RUN(&r, "-s", path, "echo", "a=1", "a=2");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "given twice"));
	run_free(&r);
	RUN(&r, "-s", path, "echo", "a=18446744073709551616");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "outside the signed 64-bit integer range"));
	run_free(&r);
	RUN(&r, "-s", path, "-t", "0", "ping");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "bad timeout"));
	run_free(&r);
	RUN(&r, "-s", path, "-x", "ping");
	assert_int_equal(r.status, 2);
	run_free(&r);
	RUN(&r, "-s", path, "");
	assert_int_equal(r.status, 2);
	run_free(&r);
	RUN(&r, "-h");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "/run/dpquic/dpquicd.sock"));
	run_free(&r);
}

static void
test_connection_errors(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct run r;
	int s;

	(void)state;
	RUN(&r, "-s", "/nonexistent-dpq/dpquicd.sock", "ping");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "cannot connect to "
		"/nonexistent-dpq/dpquicd.sock: No such file or directory"));
	assert_string_equal(r.out, "");
	run_free(&r);

	/* stale socket file: nobody listens */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path2);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	RUN(&r, "-s", path2, "ping");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "Connection refused"));
	run_free(&r);
	unlink(path2);
}

/* A peer that listens but answers badly: silent, closing, or garbage. */
static void
test_bad_servers(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *const a[] = { "-t", "300", "-s", path2, "ping", NULL };
	struct run r;
	struct pollfd p;
	int s, c;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path2);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 4), 0);

	/* never answers: the timeout ends it */
	run_start(&r, 0, NULL, a);
	assert_int_equal(run_finish(&r), 2);
	assert_non_null(strstr(r.err, "timed out waiting for the reply"));
	assert_true(r.ms >= 250 && r.ms < 5000);
	run_free(&r);
	c = accept(s, NULL, NULL);	/* the backlog entry of that run */
	if (c >= 0)
		close(c);

	/* accepts, reads, closes without a reply */
	run_start(&r, 0, NULL, a + 2);
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	assert_int_equal(poll(&p, 1, RUN_WAIT_MS), 1);
	c = accept(s, NULL, NULL);
	assert_true(c >= 0);
	{
		struct pollfd pc = { .fd = c, .events = POLLIN };
		char req[64];

		assert_int_equal(poll(&pc, 1, RUN_WAIT_MS), 1);
		assert_int_equal(recv(c, req, sizeof(req), 0), 15);
		assert_memory_equal(req, "{\"cmd\":\"ping\"}\n", 15);
	}
	close(c);
	assert_int_equal(run_finish(&r), 2);
	assert_non_null(strstr(r.err, "without a complete reply"));
	run_free(&r);

	/* accepts and closes at once: the send fails, still a clear error */
	run_start(&r, 0, NULL, a + 2);
	assert_int_equal(poll(&p, 1, RUN_WAIT_MS), 1);
	c = accept(s, NULL, NULL);
	assert_true(c >= 0);
	close(c);
	assert_int_equal(run_finish(&r), 2);
	assert_non_null(strstr(r.err, "closed the connection"));
	run_free(&r);

	/* replies with something that is not a reply */
	{
		static const char *const junk[] = {
			"not json\n", "[1,2]\n", "{\"okay\":true}\n",
			"{\"ok\":1}\n",
		};
		unsigned i;

		for (i = 0; i < 4; i++) {
			run_start(&r, 0, NULL, a + 2);
			assert_int_equal(poll(&p, 1, RUN_WAIT_MS), 1);
			c = accept(s, NULL, NULL);
			assert_true(c >= 0);
			assert_true(write(c, junk[i], strlen(junk[i])) > 0);
			assert_int_equal(run_finish(&r), 2);
			assert_non_null(strstr(r.err, "malformed reply"));
			assert_string_equal(r.out, "");
			close(c);
			run_free(&r);
		}
	}
	close(s);
	unlink(path2);
}

static void
test_large_reply(void **state)
{
	json_t *root;
	struct run r;

	(void)state;
	/* ~550 KB on one line */
	RUN(&r, "-r", "-s", path, "big", "n=50000");
	assert_int_equal(r.status, 0);
	assert_true(r.olen > 500000);
	assert_int_equal(dpq_json_parse(r.out, r.olen - 1, 4, &root, NULL), 0);
	assert_int_equal(json_array_size(dpq_json_get(root, "v")), 50000);
	json_decref(root);
	run_free(&r);
	/* past the server's reply limit (1 MiB): a clear error */
	RUN(&r, "-r", "-s", path, "big", "n=200000");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "{\"ok\":false,\"error\":\"reply too large "
		"(limit 1048576 bytes)\"}\n");
	run_free(&r);
}

/*
 * The socket is 0600: another user cannot even connect. With the mode
 * opened up, SO_PEERCRED still turns that user away. Needs root.
 */
static void
test_permissions(void **state)
{
	const char *const a[] = { "-r", "-s", path, "ping", NULL };
	struct stat st;
	struct run r;

	(void)state;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	if (geteuid() != 0)
		skip();

	assert_int_equal(chmod(dir, 0711), 0);
	run_start(&r, 65534, NULL, a);
	assert_int_equal(run_finish(&r), 2);
	assert_non_null(strstr(r.err, "Permission denied"));
	run_free(&r);

	assert_int_equal(chmod(path, 0666), 0);
	run_start(&r, 65534, NULL, a);
	assert_int_equal(run_finish(&r), 1);
	assert_string_equal(r.out, "{\"ok\":false,\"error\":\"permission "
		"denied: uid 65534 may not use this socket (root or uid 0 "
		"only)\"}\n");
	run_free(&r);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(chmod(dir, 0700), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_and_formats),
		cmocka_unit_test(test_stats_example),
		cmocka_unit_test(test_unknown_command),
		cmocka_unit_test(test_value_typing),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_connection_errors),
		cmocka_unit_test(test_bad_servers),
		cmocka_unit_test(test_large_reply),
		cmocka_unit_test(test_permissions),
	};

	if (argc < 2 || access(argv[1], X_OK) != 0) {
		/* meson passes it: a missing binary is a build error */
		fprintf(stderr, "usage: %s PATH-TO-dpquic-ctl\n", argv[0]);
		return 1;
	}
	ctl_bin = argv[1];
	alarm(240);	/* last-resort bound on the whole binary */
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
