/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ngtcp2-hq-client: a third-party hq-interop (HTTP/0.9 over QUIC v1) client
 * built on Debian's libngtcp2 0.12 + GnuTLS, used to check dpquic's wire
 * compatibility against code nobody in this project wrote.
 *
 * One connection over a kernel UDP socket (IPv4 or IPv6).  Every PATH is
 * fetched on its own client-initiated bidirectional stream ("GET /path\r\n"
 * then FIN); all requests are in flight together, as far as the peer's
 * MAX_STREAMS allows.  The response is the file's bytes then FIN.
 *
 * Single-threaded: one ppoll() loop whose timeout is the earlier of the
 * ngtcp2 expiry and the --timeout deadline, so it never busy-waits.
 *
 * Exit codes: 0 all files fetched; 1 some request failed (reset, incomplete,
 * local write error); 2 usage error; 3 connection failed (handshake or
 * transport error, peer closed with an error); 4 --timeout reached.
 *
 * The server certificate is NOT verified unless --ca FILE is given (this is
 * a test tool; --no-verify is accepted and is the default).
 *
 * --session FILE: resumption and 0-RTT (RFC 9001 §4.6). When FILE holds a
 * session from an earlier run, the handshake resumes it and, when its
 * ticket allows early data, the requests go in 0-RTT packets within the
 * server's remembered transport parameters (RFC 9000 §7.4.1); if the
 * server refuses them they are sent again after the handshake. The
 * newest NewSessionTicket and the server's parameters are written back.
 * Prints "session resumed|full early_data accepted|rejected|none".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define HQ_ALPN			"hq-interop"
#define HQ_MAX_PATHS		1024
#define HQ_MAX_PATHLEN		1024
#define HQ_CIDLEN		18
#define HQ_RX_BUF		65536
#define HQ_TX_BUF		NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE
#define HQ_TX_BURST		64	/* packets per write pass */
#define HQ_RX_BURST		256	/* datagrams per read pass */
#define HQ_SOCKBUF		(8 << 20)
#define HQ_STREAM_WINDOW	(16ull << 20)
#define HQ_CONN_WINDOW		(32ull << 20)
#define HQ_APP_NO_ERROR		0x0

enum hq_exit {
	HQ_EXIT_OK = 0,
	HQ_EXIT_REQ_FAILED = 1,
	HQ_EXIT_USAGE = 2,
	HQ_EXIT_CONN_FAILED = 3,
	HQ_EXIT_TIMEOUT = 4,
};

struct hq_req {
	const char *path;
	char line[HQ_MAX_PATHLEN + 8];	/* "GET " path "\r\n" */
	size_t linelen;
	size_t linesent;
	int64_t sid;			/* -1 until opened */
	int fin_sent;
	int blocked;
	int fin_recv;
	int reset;
	uint64_t app_error;
	int closed;
	int local_error;
	uint64_t bytes;
	int fd;				/* --out file, -1 if none */
	gnutls_hash_hd_t hash;		/* --sha256, NULL if none */
};

struct hq_client {
	/* options */
	const char *host, *port, *outdir, *ciphers, *keylog_path, *ca, *sni;
	int want_sha256;
	int verbose;
	uint64_t timeout_ns;
	uint64_t idle_ns;
	uint64_t initial_rtt_ns;
	uint64_t key_update_pkts;	/* start a key update every N, 0 off */
	uint64_t migrate_after;		/* bytes; 0: never migrate */
	int migrated;
	const char *session_path;	/* --session FILE, NULL if none */

	int fd;
	struct sockaddr_storage local, remote;
	socklen_t locallen, remotelen;
	ngtcp2_path path;

	ngtcp2_conn *conn;
	ngtcp2_crypto_conn_ref conn_ref;
	gnutls_session_t tls;
	gnutls_certificate_credentials_t cred;

	struct hq_req *reqs;
	size_t nreqs, nopened, nclosed;
	size_t rr;			/* round-robin cursor */

	int retry_seen;
	/* --session: what was loaded, what happened to 0-RTT. */
	gnutls_datum_t sess;		/* loaded session, data NULL if none */
	ngtcp2_transport_params early_tp;
	int have_early_tp;
	int early_ok;			/* streams may open before hs_done */
	int early_rejected;
	int ticket_saved;
	int hs_done;
	int conn_error;			/* connection is dead */
	int local_liberr;		/* why we closed it, 0 if the peer did */
	uint64_t t_start, t_hs, t_end;
	uint64_t total_bytes;
	/* RFC 9001 §6: updates this client started; keys ngtcp2 derived
	 * (one generation per update, whichever side started it). */
	uint64_t ku_started, ku_derived, ku_pkts;

	uint8_t txbuf[HQ_TX_BUF];
	size_t txpending;		/* bytes in txbuf awaiting POLLOUT */
};

static FILE *keylog_fp;
static volatile sig_atomic_t got_signal;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

static void
die_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ngtcp2-hq-client: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(HQ_EXIT_USAGE);
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: ngtcp2-hq-client [options] HOST PORT PATH...\n"
		"  --out DIR        write each file to DIR/<path with '/' -> '_'>\n"
		"  --sha256         print \"sha256 <hex> <path>\" per file\n"
		"  --ciphers C      AES-128-GCM | AES-256-GCM | CHACHA20-POLY1305\n"
		"  --keylog FILE    append SSLKEYLOGFILE lines\n"
		"  --no-verify      do not verify the server certificate (default)\n"
		"  --ca FILE        verify the server certificate against FILE\n"
		"  --sni NAME       TLS server name (default: HOST if not numeric)\n"
		"  --timeout SEC    give up after SEC seconds (default 30)\n"
		"  --idle-timeout SEC  QUIC max_idle_timeout (default 30)\n"
		"  --initial-rtt MS  initial RTT estimate (default 333, RFC 9002)\n"
		"  --key-update N   start a 1-RTT key update every N packets\n"
		"  --migrate-after N  once N response bytes arrived, move to a\n"
		"                   new UDP socket (new port): RFC 9000 §9.2\n"
		"  --session FILE   resume from FILE (0-RTT when allowed); "
		"save the new ticket\n"
		"  -v, --verbose    ngtcp2 debug log on stderr\n"
		"exit: 0 ok, 1 request failed, 2 usage, 3 connection failed, "
		"4 timeout\n");
	exit(HQ_EXIT_USAGE);
}

/* ---- TLS ----------------------------------------------------------- */

static int
keylog_cb(gnutls_session_t session, const char *label,
	  const gnutls_datum_t *secret)
{
	gnutls_datum_t crandom, srandom;
	unsigned int i;

	if (keylog_fp == NULL)
		return 0;
	gnutls_session_get_random(session, &crandom, &srandom);
	fprintf(keylog_fp, "%s ", label);
	for (i = 0; i < crandom.size; i++)
		fprintf(keylog_fp, "%02x", crandom.data[i]);
	fputc(' ', keylog_fp);
	for (i = 0; i < secret->size; i++)
		fprintf(keylog_fp, "%02x", secret->data[i]);
	fputc('\n', keylog_fp);
	fflush(keylog_fp);
	return 0;
}

/* GnuTLS priority for QUIC: TLS 1.3 only, no middlebox compat mode
 * (RFC 9001 §8.4), suites limited to the three QUIC v1 AEADs. */
static int
priority_string(const char *ciphers, char *buf, size_t len)
{
	const char *suite;

	if (ciphers == NULL)
		suite = "+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305";
	else if (strcmp(ciphers, "AES-128-GCM") == 0)
		suite = "+AES-128-GCM";
	else if (strcmp(ciphers, "AES-256-GCM") == 0)
		suite = "+AES-256-GCM";
	else if (strcmp(ciphers, "CHACHA20-POLY1305") == 0)
		suite = "+CHACHA20-POLY1305";
	else
		return -1;
	snprintf(buf, len, "%%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:"
		 "+VERS-TLS1.3:-CIPHER-ALL:%s", suite);
	return 0;
}

static ngtcp2_conn *
get_conn(ngtcp2_crypto_conn_ref *ref)
{
	struct hq_client *c = ref->user_data;

	return c->conn;
}

/* ---- --session FILE -------------------------------------------------- */

/* FILE: u16 length + the server's transport parameters (as its
 * EncryptedExtensions carried them), then u32 length + GnuTLS session. */
static void
session_load(struct hq_client *c)
{
	uint8_t hdr[4], tp[1024];
	size_t tplen, slen;
	FILE *f = fopen(c->session_path, "rb");

	if (f == NULL)
		return;
	if (fread(hdr, 1, 2, f) != 2 ||
	    (tplen = (size_t)hdr[0] << 8 | hdr[1]) > sizeof(tp) ||
	    fread(tp, 1, tplen, f) != tplen || fread(hdr, 1, 4, f) != 4)
		goto bad;
	slen = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
	       (size_t)hdr[2] << 8 | hdr[3];
	if (slen == 0 || slen > 65536 ||
	    (c->sess.data = malloc(slen)) == NULL ||
	    fread(c->sess.data, 1, slen, f) != slen)
		goto bad;
	c->sess.size = (unsigned int)slen;
	if (tplen > 0 && ngtcp2_decode_transport_params(&c->early_tp,
			NGTCP2_TRANSPORT_PARAMS_TYPE_ENCRYPTED_EXTENSIONS,
			tp, tplen) == 0)
		c->have_early_tp = 1;
	fclose(f);
	return;
bad:
	fprintf(stderr, "warning: --session %s unreadable: full handshake\n",
		c->session_path);
	free(c->sess.data);
	c->sess.data = NULL;
	c->sess.size = 0;
	fclose(f);
}

static void
session_save(struct hq_client *c, const gnutls_datum_t *sess)
{
	const ngtcp2_transport_params *tp;
	uint8_t buf[1024], hdr[4];
	ngtcp2_ssize n = 0;
	FILE *f;

	tp = ngtcp2_conn_get_remote_transport_params(c->conn);
	if (tp != NULL)
		n = ngtcp2_encode_transport_params(buf, sizeof(buf),
			NGTCP2_TRANSPORT_PARAMS_TYPE_ENCRYPTED_EXTENSIONS, tp);
	if (n < 0)
		n = 0;
	f = fopen(c->session_path, "wb");
	if (f == NULL) {
		fprintf(stderr, "error: --session %s: %s\n", c->session_path,
			strerror(errno));
		return;
	}
	hdr[0] = (uint8_t)(n >> 8);
	hdr[1] = (uint8_t)n;
	fwrite(hdr, 1, 2, f);
	fwrite(buf, 1, (size_t)n, f);
	hdr[0] = (uint8_t)(sess->size >> 24);
	hdr[1] = (uint8_t)(sess->size >> 16);
	hdr[2] = (uint8_t)(sess->size >> 8);
	hdr[3] = (uint8_t)sess->size;
	fwrite(hdr, 1, 4, f);
	fwrite(sess->data, 1, sess->size, f);
	if (fclose(f) == 0)
		c->ticket_saved = 1;
}

/* A NewSessionTicket arrived: the session to resume next time. */
static int
nst_hook(gnutls_session_t session, unsigned int htype, unsigned int when,
	 unsigned int incoming, const gnutls_datum_t *msg)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
	struct hq_client *c = ref->user_data;
	gnutls_datum_t d;

	(void)htype;
	(void)when;
	(void)incoming;
	(void)msg;
	if (gnutls_session_get_data2(session, &d) == 0) {
		session_save(c, &d);
		gnutls_free(d.data);
	}
	return 0;
}

static int
tls_setup(struct hq_client *c)
{
	char prio[256];
	const char *err = NULL;
	gnutls_datum_t alpn = {
		.data = (unsigned char *)HQ_ALPN,
		.size = sizeof(HQ_ALPN) - 1,
	};
	int rv;

	if (priority_string(c->ciphers, prio, sizeof(prio)) != 0)
		die_usage("unknown cipher suite '%s'", c->ciphers);
	rv = gnutls_certificate_allocate_credentials(&c->cred);
	if (rv != 0)
		goto gnutls_fail;
	if (c->ca != NULL) {
		rv = gnutls_certificate_set_x509_trust_file(c->cred, c->ca,
							   GNUTLS_X509_FMT_PEM);
		if (rv <= 0) {
			fprintf(stderr, "error: no CA loaded from %s: %s\n",
				c->ca, rv < 0 ? gnutls_strerror(rv) : "empty");
			return -1;
		}
	}
	rv = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA |
			 GNUTLS_NO_END_OF_EARLY_DATA);
	if (rv != 0)
		goto gnutls_fail;
	rv = gnutls_priority_set_direct(c->tls, prio, &err);
	if (rv != 0) {
		fprintf(stderr, "error: priority '%s' at '%s': %s\n", prio,
			err ? err : "?", gnutls_strerror(rv));
		return -1;
	}
	if (ngtcp2_crypto_gnutls_configure_client_session(c->tls) != 0) {
		fprintf(stderr,
			"error: ngtcp2_crypto_gnutls_configure_client_session\n");
		return -1;
	}
	c->conn_ref.get_conn = get_conn;
	c->conn_ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->conn_ref);
	rv = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred);
	if (rv != 0)
		goto gnutls_fail;
	rv = gnutls_alpn_set_protocols(c->tls, &alpn, 1, 0);
	if (rv != 0)
		goto gnutls_fail;
	if (c->sni != NULL) {
		rv = gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, c->sni,
					    strlen(c->sni));
		if (rv != 0)
			goto gnutls_fail;
	}
	if (c->ca != NULL)
		gnutls_session_set_verify_cert(c->tls,
					       c->sni ? c->sni : c->host, 0);
	if (keylog_fp != NULL)
		gnutls_session_set_keylog_function(c->tls, keylog_cb);
	if (c->session_path != NULL) {
		gnutls_handshake_set_hook_function(c->tls,
			GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST,
			nst_hook);
		session_load(c);
		if (c->sess.data != NULL &&
		    (rv = gnutls_session_set_data(c->tls, c->sess.data,
				c->sess.size)) != 0) {
			fprintf(stderr, "warning: session not usable: %s\n",
				gnutls_strerror(rv));
			c->have_early_tp = 0;
		}
	}
	return 0;
gnutls_fail:
	fprintf(stderr, "error: gnutls: %s\n", gnutls_strerror(rv));
	return -1;
}

/* ---- ngtcp2 callbacks -------------------------------------------------- */

static void
rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx)
{
	(void)rand_ctx;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, dest, destlen) != 0)
		memset(dest, 0x5a, destlen);
}

static int
get_new_connection_id_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
			 size_t cidlen, void *user_data)
{
	(void)conn;
	(void)user_data;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0 ||
	    gnutls_rnd(GNUTLS_RND_RANDOM, token,
		       NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	cid->datalen = cidlen;
	return 0;
}

static int
recv_retry_cb(ngtcp2_conn *conn, const ngtcp2_pkt_hd *hd, void *user_data)
{
	struct hq_client *c = user_data;

	/* ngtcp2 validated the Retry integrity tag before calling us
	 * (RFC 9001 §5.8); count it, then re-derive Initial keys. */
	c->retry_seen = 1;
	return ngtcp2_crypto_recv_retry_cb(conn, hd, user_data);
}

static int
handshake_completed_cb(ngtcp2_conn *conn, void *user_data)
{
	struct hq_client *c = user_data;

	c->hs_done = 1;
	c->t_hs = now_ns();
	/* GnuTLS says only now whether the server took our 0-RTT. */
	if (c->early_ok &&
	    !(gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_EARLY_DATA) &&
	    ngtcp2_conn_early_data_rejected(conn) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/* 0-RTT refused: ngtcp2 dropped the streams; every request starts again
 * in 1-RTT (nothing of an answer can have arrived: the server answers a
 * refused request never). */
static int
early_data_rejected_cb(ngtcp2_conn *conn, void *user_data)
{
	struct hq_client *c = user_data;
	size_t i;

	(void)conn;
	c->early_rejected = 1;
	for (i = 0; i < c->nreqs; i++) {
		struct hq_req *r = &c->reqs[i];

		r->sid = -1;
		r->linesent = 0;
		r->fin_sent = r->blocked = r->fin_recv = r->closed = 0;
		r->reset = 0;
		r->bytes = 0;
	}
	c->nopened = c->nclosed = c->rr = 0;
	return 0;
}

static int
recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
		    uint64_t offset, const uint8_t *data, size_t datalen,
		    void *user_data, void *stream_user_data)
{
	struct hq_client *c = user_data;
	struct hq_req *r = stream_user_data;
	size_t off = 0;
	ssize_t n;

	(void)offset;
	if (r != NULL && !r->local_error) {
		while (r->fd >= 0 && off < datalen) {
			n = write(r->fd, data + off, datalen - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fprintf(stderr, "error: write %s: %s\n",
					r->path, strerror(errno));
				r->local_error = 1;
				break;
			}
			off += (size_t)n;
		}
		if (r->hash != NULL && datalen > 0)
			gnutls_hash(r->hash, data, datalen);
		r->bytes += datalen;
		c->total_bytes += datalen;
		if (flags & NGTCP2_STREAM_DATA_FLAG_FIN)
			r->fin_recv = 1;
	}
	/* Data is consumed at once: give the window back (RFC 9000 §4.2). */
	ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
	ngtcp2_conn_extend_max_offset(conn, datalen);
	return 0;
}

static int
stream_reset_cb(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size,
		uint64_t app_error_code, void *user_data,
		void *stream_user_data)
{
	struct hq_req *r = stream_user_data;

	(void)conn;
	(void)stream_id;
	(void)final_size;
	(void)user_data;
	if (r != NULL) {
		r->reset = 1;
		r->app_error = app_error_code;
	}
	return 0;
}

static int
stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
		uint64_t app_error_code, void *user_data,
		void *stream_user_data)
{
	struct hq_client *c = user_data;
	struct hq_req *r = stream_user_data;

	(void)conn;
	(void)stream_id;
	if (r == NULL || r->closed)
		return 0;
	r->closed = 1;
	if (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) {
		r->reset = 1;
		r->app_error = app_error_code;
	}
	c->nclosed++;
	return 0;
}

static int
extend_max_stream_data_cb(ngtcp2_conn *conn, int64_t stream_id,
			  uint64_t max_data, void *user_data,
			  void *stream_user_data)
{
	struct hq_req *r = stream_user_data;

	(void)conn;
	(void)stream_id;
	(void)max_data;
	(void)user_data;
	if (r != NULL)
		r->blocked = 0;
	return 0;
}

static void
log_printf(void *user_data, const char *fmt, ...)
{
	va_list ap;

	(void)user_data;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- requests ------------------------------------------------------------ */

static int
req_init(struct hq_client *c, struct hq_req *r, const char *path)
{
	size_t len = strlen(path);
	char name[HQ_MAX_PATHLEN + 2];
	char file[4096];
	size_t i;
	int rv;

	if (len == 0 || len > HQ_MAX_PATHLEN)
		die_usage("bad path length: '%s'", path);
	for (i = 0; i < len; i++)
		if (path[i] == '\r' || path[i] == '\n' || path[i] == ' ' ||
		    (unsigned char)path[i] < 0x20)
			die_usage("path has a space or control char: '%s'",
				  path);
	r->path = path;
	r->sid = -1;
	r->fd = -1;
	r->linelen = (size_t)snprintf(r->line, sizeof(r->line), "GET %s%s\r\n",
				      path[0] == '/' ? "" : "/", path);
	if (c->outdir != NULL) {
		/* Flatten the path: "/a/b" -> "a_b", never leaving DIR. */
		snprintf(name, sizeof(name), "%s", path[0] == '/' ? path + 1 :
			 path);
		for (i = 0; name[i] != '\0'; i++)
			if (name[i] == '/')
				name[i] = '_';
		if (name[0] == '\0' || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0)
			die_usage("path '%s' has no file name for --out", path);
		snprintf(file, sizeof(file), "%s/%s", c->outdir, name);
		r->fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			     0644);
		if (r->fd < 0) {
			fprintf(stderr, "error: open %s: %s\n", file,
				strerror(errno));
			return -1;
		}
	}
	if (c->want_sha256) {
		rv = gnutls_hash_init(&r->hash, GNUTLS_DIG_SHA256);
		if (rv != 0) {
			fprintf(stderr, "error: gnutls_hash_init: %s\n",
				gnutls_strerror(rv));
			return -1;
		}
	}
	return 0;
}

/* Open as many request streams as the peer's MAX_STREAMS allows. */
static int
open_streams(struct hq_client *c)
{
	struct hq_req *r;
	int64_t sid;
	int rv;

	while (c->nopened < c->nreqs) {
		r = &c->reqs[c->nopened];
		rv = ngtcp2_conn_open_bidi_stream(c->conn, &sid, r);
		if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED)
			break;
		if (rv != 0) {
			fprintf(stderr, "error: ngtcp2_conn_open_bidi_stream: "
				"%s\n", ngtcp2_strerror(rv));
			return -1;
		}
		r->sid = sid;
		c->nopened++;
	}
	return 0;
}

/* Round-robin over opened requests that still have bytes (or FIN) to send. */
static struct hq_req *
next_sendable(struct hq_client *c)
{
	size_t i, k;
	struct hq_req *r;

	for (k = 0; k < c->nopened; k++) {
		i = (c->rr + k) % c->nopened;
		r = &c->reqs[i];
		if (!r->fin_sent && !r->blocked && !r->closed) {
			c->rr = (i + 1) % c->nopened;
			return r;
		}
	}
	return NULL;
}

/* ---- I/O ------------------------------------------------------------------ */

/* Returns 0 sent, 1 would block (packet kept), -1 error. */
static int
send_pkt(struct hq_client *c, const uint8_t *pkt, size_t len)
{
	ssize_t n;

	for (;;) {
		n = send(c->fd, pkt, len, 0);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (pkt != c->txbuf)
				memcpy(c->txbuf, pkt, len);
			c->txpending = len;
			return 1;
		}
		/* ICMP errors (ECONNREFUSED) are reported on the next
		 * send; treat them as loss and let ngtcp2 time out. */
		if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
		    errno == ENETUNREACH)
			return 0;
		fprintf(stderr, "error: send: %s\n", strerror(errno));
		return -1;
	}
}

static int
close_with_error(struct hq_client *c, int liberr)
{
	ngtcp2_connection_close_error ccerr;
	ngtcp2_path_storage ps;
	ngtcp2_ssize n;

	c->conn_error = 1;
	if (liberr != NGTCP2_ERR_DRAINING)
		c->local_liberr = liberr;
	if (liberr == NGTCP2_ERR_DRAINING || liberr == NGTCP2_ERR_IDLE_CLOSE ||
	    liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT ||
	    ngtcp2_conn_is_in_closing_period(c->conn) ||
	    ngtcp2_conn_is_in_draining_period(c->conn))
		return 0;
	if (liberr == NGTCP2_ERR_CRYPTO)
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
			&ccerr, ngtcp2_conn_get_tls_alert(c->conn), NULL, 0);
	else
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&ccerr, liberr, NULL, 0);
	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, NULL,
					       c->txbuf, sizeof(c->txbuf),
					       &ccerr, now_ns());
	if (n > 0)
		(void)send_pkt(c, c->txbuf, (size_t)n);
	return 0;
}

/* --key-update N: ask for an update every N packets sent; ngtcp2 refuses
 * (NGTCP2_ERR_INVALID_STATE) until the previous one is confirmed. */
static void
maybe_key_update(struct hq_client *c, uint64_t ts)
{
	if (c->key_update_pkts == 0 || !c->hs_done ||
	    c->ku_pkts < c->key_update_pkts)
		return;
	if (ngtcp2_conn_initiate_key_update(c->conn, ts) == 0) {
		c->ku_started++;
		c->ku_pkts = 0;
	}
}

static int
write_pkts(struct hq_client *c)
{
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n, ndatalen;
	struct hq_req *r;
	ngtcp2_vec v;
	uint64_t ts = now_ns();
	uint32_t flags;
	int64_t sid;
	size_t npkts = 0, spins = 0, i;
	int rv;

	if (c->txpending > 0) {
		rv = send_pkt(c, c->txbuf, c->txpending);
		if (rv != 0)
			return rv < 0 ? -1 : 0;
		c->txpending = 0;
	}
	/* Forget stale flow-control blocks; ngtcp2 re-reports them. */
	for (i = 0; i < c->nopened; i++)
		c->reqs[i].blocked = 0;
	ngtcp2_path_storage_zero(&ps);
	while (npkts < HQ_TX_BURST && spins++ < HQ_TX_BURST * 4 + c->nreqs) {
		r = c->hs_done || c->early_ok ? next_sendable(c) : NULL;
		sid = -1;
		flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
		if (r != NULL) {
			sid = r->sid;
			v.base = (uint8_t *)r->line + r->linesent;
			v.len = r->linelen - r->linesent;
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		}
		n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, c->txbuf,
					      sizeof(c->txbuf), &ndatalen,
					      flags, sid, &v, r ? 1 : 0, ts);
		if (n < 0) {
			switch (n) {
			case NGTCP2_ERR_WRITE_MORE:
				if (r == NULL)
					continue;
				r->linesent += (size_t)ndatalen;
				if (r->linesent == r->linelen)
					r->fin_sent = 1;
				continue;
			case NGTCP2_ERR_STREAM_DATA_BLOCKED:
				if (r != NULL)
					r->blocked = 1;
				continue;
			case NGTCP2_ERR_STREAM_SHUT_WR:
			case NGTCP2_ERR_STREAM_NOT_FOUND:
				if (r != NULL)
					r->fin_sent = 1;
				continue;
			default:
				fprintf(stderr, "error: ngtcp2_conn_writev_stream: "
					"%s\n", ngtcp2_strerror((int)n));
				close_with_error(c, (int)n);
				return -1;
			}
		}
		if (r != NULL && ndatalen >= 0) {
			r->linesent += (size_t)ndatalen;
			if (r->linesent == r->linelen)
				r->fin_sent = 1;
		}
		if (n == 0)
			break;
		rv = send_pkt(c, c->txbuf, (size_t)n);
		if (rv < 0)
			return -1;
		npkts++;
		c->ku_pkts++;
		maybe_key_update(c, ts);
		if (rv > 0)
			break;
	}
	ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
	return 0;
}

static int
read_pkts(struct hq_client *c)
{
	static uint8_t buf[HQ_RX_BUF];
	ngtcp2_pkt_info pi = {0};
	ssize_t n;
	int i, rv;

	for (i = 0; i < HQ_RX_BURST; i++) {
		n = recv(c->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == ECONNREFUSED)
				return 0;
			fprintf(stderr, "error: recv: %s\n", strerror(errno));
			return -1;
		}
		rv = ngtcp2_conn_read_pkt(c->conn, &c->path, &pi, buf,
					  (size_t)n, now_ns());
		if (rv != 0) {
			if (rv == NGTCP2_ERR_DISCARD_PKT)
				continue;
			if (rv != NGTCP2_ERR_DRAINING)
				fprintf(stderr, "error: ngtcp2_conn_read_pkt: "
					"%s\n", ngtcp2_strerror(rv));
			close_with_error(c, rv);
			return -1;
		}
	}
	return 0;
}

/* ---- setup ----------------------------------------------------------------- */

static int
socket_setup(struct hq_client *c)
{
	struct addrinfo hints = {0}, *res, *ai;
	int rv, fd = -1, sz = HQ_SOCKBUF;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	rv = getaddrinfo(c->host, c->port, &hints, &res);
	if (rv != 0) {
		fprintf(stderr, "error: resolve %s %s: %s\n", c->host, c->port,
			gai_strerror(rv));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
			    SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			memcpy(&c->remote, ai->ai_addr, ai->ai_addrlen);
			c->remotelen = ai->ai_addrlen;
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "error: cannot connect a UDP socket to %s %s\n",
			c->host, c->port);
		return -1;
	}
	/* Large buffers: loopback drops on a full receive queue. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	c->locallen = sizeof(c->local);
	if (getsockname(fd, (struct sockaddr *)&c->local, &c->locallen) != 0) {
		fprintf(stderr, "error: getsockname: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	c->fd = fd;
	c->path.local.addr = (ngtcp2_sockaddr *)&c->local;
	c->path.local.addrlen = c->locallen;
	c->path.remote.addr = (ngtcp2_sockaddr *)&c->remote;
	c->path.remote.addrlen = c->remotelen;
	return 0;
}

/* RFC 9000 §9.2: a new socket (the same local address, a new port) and
 * ngtcp2's immediate migration to it. Returns 0, 1 (not possible yet:
 * no spare connection ID) or -1. */
static int
migrate(struct hq_client *c)
{
	struct sockaddr_storage local;
	socklen_t locallen = sizeof(local);
	ngtcp2_path path;
	char host[64], port[16];
	int fd, rv, sz = HQ_SOCKBUF;

	fd = socket(c->remote.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&c->remote,
			c->remotelen) != 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &locallen) != 0) {
		fprintf(stderr, "error: migrate: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	path = c->path;
	path.local.addr = (ngtcp2_sockaddr *)&local;
	path.local.addrlen = locallen;
	rv = ngtcp2_conn_initiate_immediate_migration(c->conn, &path,
			now_ns());
	if (rv != 0) {
		close(fd);
		/* No spare CID yet, or not confirmed yet: later. */
		if (rv == NGTCP2_ERR_CONN_ID_BLOCKED ||
		    rv == NGTCP2_ERR_INVALID_STATE)
			return 1;
		fprintf(stderr, "error: migrate: %s\n", ngtcp2_strerror(rv));
		return -1;
	}
	close(c->fd);
	c->fd = fd;
	c->local = local;
	c->locallen = locallen;
	c->path.local.addr = (ngtcp2_sockaddr *)&c->local;
	c->path.local.addrlen = c->locallen;
	c->txpending = 0;
	if (getnameinfo((struct sockaddr *)&local, locallen, host,
			sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		printf("migrated to %s port %s\n", host, port);
	return 0;
}

/* ngtcp2 derives the next 1-RTT keys here after each key update (RFC
 * 9001 §6), whichever side started it: count them. */
static int
update_key_cb(ngtcp2_conn *conn, uint8_t *rx_secret, uint8_t *tx_secret,
	      ngtcp2_crypto_aead_ctx *rx_aead_ctx, uint8_t *rx_iv,
	      ngtcp2_crypto_aead_ctx *tx_aead_ctx, uint8_t *tx_iv,
	      const uint8_t *current_rx_secret,
	      const uint8_t *current_tx_secret, size_t secretlen,
	      void *user_data)
{
	struct hq_client *c = user_data;

	c->ku_derived++;
	return ngtcp2_crypto_update_key_cb(conn, rx_secret, tx_secret,
			rx_aead_ctx, rx_iv, tx_aead_ctx, tx_iv,
			current_rx_secret, current_tx_secret, secretlen,
			user_data);
}

static int
conn_setup(struct hq_client *c)
{
	ngtcp2_callbacks cb = {
		.client_initial = ngtcp2_crypto_client_initial_cb,
		.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
		.encrypt = ngtcp2_crypto_encrypt_cb,
		.decrypt = ngtcp2_crypto_decrypt_cb,
		.hp_mask = ngtcp2_crypto_hp_mask_cb,
		.recv_retry = recv_retry_cb,
		.update_key = update_key_cb,
		.delete_crypto_aead_ctx =
			ngtcp2_crypto_delete_crypto_aead_ctx_cb,
		.delete_crypto_cipher_ctx =
			ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
		.get_path_challenge_data =
			ngtcp2_crypto_get_path_challenge_data_cb,
		.version_negotiation = ngtcp2_crypto_version_negotiation_cb,
		.rand = rand_cb,
		.get_new_connection_id = get_new_connection_id_cb,
		.handshake_completed = handshake_completed_cb,
		.early_data_rejected = early_data_rejected_cb,
		.recv_stream_data = recv_stream_data_cb,
		.stream_reset = stream_reset_cb,
		.stream_close = stream_close_cb,
		.extend_max_stream_data = extend_max_stream_data_cb,
	};
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	ngtcp2_cid dcid, scid;
	int rv;

	dcid.datalen = HQ_CIDLEN;
	scid.datalen = HQ_CIDLEN;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen) != 0 ||
	    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0)
		return -1;
	ngtcp2_settings_default(&settings);
	settings.initial_ts = now_ns();
	settings.initial_rtt = c->initial_rtt_ns;
	settings.handshake_timeout = c->timeout_ns;
	settings.max_window = 4 * HQ_CONN_WINDOW;
	settings.max_stream_window = 4 * HQ_STREAM_WINDOW;
	if (c->verbose)
		settings.log_printf = log_printf;
	ngtcp2_transport_params_default(&params);
	params.initial_max_stream_data_bidi_local = HQ_STREAM_WINDOW;
	params.initial_max_stream_data_bidi_remote = HQ_STREAM_WINDOW;
	params.initial_max_stream_data_uni = HQ_STREAM_WINDOW;
	params.initial_max_data = HQ_CONN_WINDOW;
	params.initial_max_streams_bidi = 0;	/* hq: server opens none */
	params.initial_max_streams_uni = 0;
	params.max_idle_timeout = c->idle_ns;
	rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &c->path,
				    NGTCP2_PROTO_VER_V1, &cb, &settings,
				    &params, NULL, c);
	if (rv != 0) {
		fprintf(stderr, "error: ngtcp2_conn_client_new: %s\n",
			ngtcp2_strerror(rv));
		return -1;
	}
	ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
	/* RFC 9000 §7.4.1: 0-RTT within the remembered limits. */
	if (c->have_early_tp &&
	    gnutls_record_get_max_early_data_size(c->tls) > 0) {
		ngtcp2_conn_set_early_remote_transport_params(c->conn,
							      &c->early_tp);
		c->early_ok = 1;
	}
	return 0;
}

static int
is_numeric_host(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, host, &a4) == 1 ||
	       inet_pton(AF_INET6, host, &a6) == 1;
}

static void
on_signal(int sig)
{
	got_signal = sig;
}

static double
ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* ---- main -------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"out", required_argument, NULL, 'o'},
		{"sha256", no_argument, NULL, 's'},
		{"ciphers", required_argument, NULL, 'c'},
		{"keylog", required_argument, NULL, 'k'},
		{"no-verify", no_argument, NULL, 'n'},
		{"ca", required_argument, NULL, 'a'},
		{"sni", required_argument, NULL, 'S'},
		{"timeout", required_argument, NULL, 't'},
		{"idle-timeout", required_argument, NULL, 'i'},
		{"initial-rtt", required_argument, NULL, 'R'},
		{"key-update", required_argument, NULL, 'U'},
		{"migrate-after", required_argument, NULL, 'M'},
		{"session", required_argument, NULL, 'e'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct hq_client cl;
	struct hq_client *c = &cl;
	struct sigaction sa = {0};
	struct pollfd pfd;
	struct timespec tmo;
	ngtcp2_connection_close_error ccerr;
	ngtcp2_path_storage ps;
	uint64_t deadline, expiry, now, wake;
	uint8_t digest[32];
	char *end;
	double secs;
	int opt, rv, exit_code = HQ_EXIT_OK, timed_out = 0;
	size_t i, nok = 0;
	unsigned int j;
	ngtcp2_ssize n;

	c->timeout_ns = 30 * NGTCP2_SECONDS;
	c->idle_ns = 30 * NGTCP2_SECONDS;
	c->initial_rtt_ns = NGTCP2_DEFAULT_INITIAL_RTT;
	c->fd = -1;
	while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o': c->outdir = optarg; break;
		case 's': c->want_sha256 = 1; break;
		case 'c': c->ciphers = optarg; break;
		case 'k': c->keylog_path = optarg; break;
		case 'n': break;
		case 'a': c->ca = optarg; break;
		case 'S': c->sni = optarg; break;
		case 'v': c->verbose = 1; break;
		case 'e': c->session_path = optarg; break;
		case 'R':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs > 0) || secs > 10000)
				die_usage("bad --initial-rtt '%s'", optarg);
			c->initial_rtt_ns = (uint64_t)(secs * 1e6);
			break;
		case 'U':
			c->key_update_pkts = strtoull(optarg, &end, 10);
			if (*end != '\0' || c->key_update_pkts == 0 ||
			    optarg[0] == '-')
				die_usage("bad --key-update '%s'", optarg);
			break;
		case 'M':
			c->migrate_after = strtoull(optarg, &end, 10);
			if (*end != '\0' || c->migrate_after == 0 ||
			    optarg[0] == '-')
				die_usage("bad --migrate-after '%s'", optarg);
			break;
		case 't':
		case 'i':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs > 0) || secs > 86400)
				die_usage("bad seconds value '%s'", optarg);
			if (opt == 't')
				c->timeout_ns = (uint64_t)(secs * 1e9);
			else
				c->idle_ns = (uint64_t)(secs * 1e9);
			break;
		default: usage();
		}
	}
	if (argc - optind < 3)
		usage();
	c->host = argv[optind];
	c->port = argv[optind + 1];
	c->nreqs = (size_t)(argc - optind - 2);
	if (c->nreqs > HQ_MAX_PATHS)
		die_usage("too many paths (max %d)", HQ_MAX_PATHS);
	if (c->sni == NULL && !is_numeric_host(c->host))
		c->sni = c->host;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (c->keylog_path != NULL) {
		keylog_fp = fopen(c->keylog_path, "a");
		if (keylog_fp == NULL) {
			fprintf(stderr, "error: open %s: %s\n", c->keylog_path,
				strerror(errno));
			return HQ_EXIT_USAGE;
		}
	}
	c->reqs = calloc(c->nreqs, sizeof(*c->reqs));
	if (c->reqs == NULL)
		return HQ_EXIT_CONN_FAILED;
	for (i = 0; i < c->nreqs; i++)
		if (req_init(c, &c->reqs[i], argv[optind + 2 + i]) != 0)
			return HQ_EXIT_USAGE;

	c->t_start = now_ns();
	deadline = c->t_start + c->timeout_ns;
	if (socket_setup(c) != 0 || tls_setup(c) != 0 || conn_setup(c) != 0)
		return HQ_EXIT_CONN_FAILED;

	/* With --session, wait a little for the ticket if the answers came
	 * first (it follows the handshake, RFC 8446 §4.6.1). */
	while (!c->conn_error && (c->nclosed < c->nreqs ||
	       (c->session_path != NULL && !c->ticket_saved && c->hs_done &&
		now_ns() < c->t_hs + 2 * NGTCP2_SECONDS))) {
		now = now_ns();
		if (got_signal || now >= deadline) {
			timed_out = 1;
			break;
		}
		expiry = ngtcp2_conn_get_expiry(c->conn);
		if (expiry <= now) {
			rv = ngtcp2_conn_handle_expiry(c->conn, now);
			if (rv != 0) {
				fprintf(stderr, "error: ngtcp2_conn_handle_expiry:"
					" %s\n", ngtcp2_strerror(rv));
				close_with_error(c, rv);
				break;
			}
		}
		if ((c->hs_done || c->early_ok) && open_streams(c) != 0) {
			close_with_error(c, NGTCP2_ERR_INTERNAL);
			break;
		}
		if (c->migrate_after != 0 && !c->migrated &&
		    c->total_bytes >= c->migrate_after &&
		    ngtcp2_conn_get_handshake_completed(c->conn)) {
			rv = migrate(c);
			if (rv < 0) {
				close_with_error(c, NGTCP2_ERR_INTERNAL);
				break;
			}
			c->migrated = rv == 0;
		}
		if (write_pkts(c) != 0)
			break;
		expiry = ngtcp2_conn_get_expiry(c->conn);
		wake = expiry < deadline ? expiry : deadline;
		now = now_ns();
		wake = wake > now ? wake - now : 0;
		if (c->nclosed >= c->nreqs && wake > NGTCP2_SECONDS / 20)
			wake = NGTCP2_SECONDS / 20;	/* waiting for a ticket */
		tmo.tv_sec = (time_t)(wake / NGTCP2_SECONDS);
		tmo.tv_nsec = (long)(wake % NGTCP2_SECONDS);
		pfd.fd = c->fd;
		pfd.events = POLLIN | (c->txpending ? POLLOUT : 0);
		pfd.revents = 0;
		rv = ppoll(&pfd, 1, &tmo, NULL);
		if (rv < 0 && errno != EINTR) {
			fprintf(stderr, "error: poll: %s\n", strerror(errno));
			break;
		}
		if (rv > 0 && (pfd.revents & (POLLIN | POLLERR)) &&
		    read_pkts(c) != 0)
			break;
	}
	c->t_end = now_ns();

	if (c->conn_error && c->local_liberr != 0) {
		fprintf(stderr, "connection closed locally: %s (tls alert %u)\n",
			ngtcp2_strerror(c->local_liberr),
			ngtcp2_conn_get_tls_alert(c->conn));
	} else if (c->conn_error) {
		ngtcp2_conn_get_connection_close_error(c->conn, &ccerr);
		fprintf(stderr, "connection closed by peer: %s error 0x%"
			PRIx64 " frame 0x%" PRIx64 " reason '%.*s'\n",
			ccerr.type ==
			NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ?
			"application" : "transport", ccerr.error_code,
			ccerr.frame_type, (int)ccerr.reasonlen,
			ccerr.reason ? (const char *)ccerr.reason : "");
	} else if (!timed_out || c->hs_done) {
		/* Graceful close (RFC 9000 §10.2) with application NO_ERROR. */
		ngtcp2_connection_close_error_default(&ccerr);
		ngtcp2_connection_close_error_set_application_error(
			&ccerr, HQ_APP_NO_ERROR, NULL, 0);
		ngtcp2_path_storage_zero(&ps);
		n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, NULL,
						       c->txbuf,
						       sizeof(c->txbuf),
						       &ccerr, now_ns());
		if (n > 0)
			(void)send_pkt(c, c->txbuf, (size_t)n);
		else if (n < 0)
			fprintf(stderr, "warning: write_connection_close: %s\n",
				ngtcp2_strerror((int)n));
	}

	for (i = 0; i < c->nreqs; i++) {
		struct hq_req *r = &c->reqs[i];
		int ok = r->closed && r->fin_recv && !r->reset &&
			 !r->local_error;

		if (r->hash != NULL) {
			gnutls_hash_deinit(r->hash, digest);
			r->hash = NULL;
			if (ok) {
				printf("sha256 ");
				for (j = 0; j < sizeof(digest); j++)
					printf("%02x", digest[j]);
				printf(" %s\n", r->path);
			}
		}
		if (r->fd >= 0 && close(r->fd) != 0)
			ok = 0;
		if (ok) {
			nok++;
			printf("file %s bytes %" PRIu64 " ok\n", r->path,
			       r->bytes);
		} else if (r->reset) {
			printf("file %s bytes %" PRIu64 " reset 0x%" PRIx64 "\n",
			       r->path, r->bytes, r->app_error);
		} else {
			printf("file %s bytes %" PRIu64 " %s\n", r->path,
			       r->bytes, r->local_error ? "write-error" :
			       "incomplete");
		}
	}
	printf("retry %s\n", c->retry_seen ? "yes" : "no");
	if (c->session_path != NULL)
		printf("session %s early_data %s ticket %s\n",
		       c->hs_done && gnutls_session_is_resumed(c->tls) ?
		       "resumed" : "full",
		       !c->early_ok ? "none" : c->early_rejected ?
		       "rejected" : "accepted",
		       c->ticket_saved ? "saved" : "none");
	printf("key_updates started %" PRIu64 " keys_derived %" PRIu64 "\n",
	       c->ku_started, c->ku_derived);
	if (c->hs_done) {
		char *alpn_s = NULL;
		gnutls_datum_t alpn;

		if (gnutls_alpn_get_selected_protocol(c->tls, &alpn) == 0)
			alpn_s = strndup((const char *)alpn.data, alpn.size);
		printf("handshake_ms %.3f\n", ms(c->t_hs - c->t_start));
		printf("cipher %s\n",
		       gnutls_cipher_get_name(gnutls_cipher_get(c->tls)));
		printf("alpn %s\n", alpn_s ? alpn_s : "(none)");
		free(alpn_s);
		printf("total_bytes %" PRIu64 " transfer_ms %.3f goodput_mbps "
		       "%.1f\n", c->total_bytes, ms(c->t_end - c->t_hs),
		       c->t_end > c->t_hs ? (double)c->total_bytes * 8.0 /
		       ((double)(c->t_end - c->t_hs) / 1e9) / 1e6 : 0.0);
	} else {
		printf("handshake failed\n");
	}
	printf("files_ok %zu/%zu elapsed_ms %.3f\n", nok, c->nreqs,
	       ms(c->t_end - c->t_start));

	if (!c->hs_done || c->conn_error)
		exit_code = HQ_EXIT_CONN_FAILED;
	else if (timed_out)
		exit_code = HQ_EXIT_TIMEOUT;
	else if (nok != c->nreqs)
		exit_code = HQ_EXIT_REQ_FAILED;
	if (timed_out && !c->hs_done)
		exit_code = HQ_EXIT_TIMEOUT;
	if (timed_out)
		fprintf(stderr, "error: %s after %.1f s\n",
			got_signal ? "interrupted" : "timeout",
			ms(c->t_end - c->t_start) / 1e3);

	ngtcp2_conn_del(c->conn);
	gnutls_deinit(c->tls);
	gnutls_certificate_free_credentials(c->cred);
	if (c->fd >= 0)
		close(c->fd);
	if (keylog_fp != NULL)
		fclose(keylog_fp);
	free(c->reqs);
	free(c->sess.data);
	return exit_code;
}
