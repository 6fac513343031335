/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ngtcp2-hq-server: a third-party hq-interop (HTTP/0.9 over QUIC v1) file
 * server built on Debian's libngtcp2 0.12 + GnuTLS, used to check dpquic's
 * wire compatibility against code nobody in this project wrote.
 *
 * One kernel UDP socket (IPv4 or IPv6), up to HQ_MAX_CONNS connections at
 * once, demultiplexed by Destination Connection ID.  Each client-initiated
 * bidirectional stream carries "GET /path\r\n"; the reply is the file under
 * ROOT then FIN.  Paths that leave ROOT (".." components, symlinks pointing
 * out), non-regular files and malformed requests get the stream reset with
 * HQ_APP_REFUSED; missing files with HQ_APP_NOT_FOUND.
 *
 * --retry sends a Retry (RFC 9000 §8.1.2) to every Initial without a token;
 * the token (ngtcp2_crypto_generate_retry_token: AEAD-sealed original DCID,
 * client address, timestamp) is validated on the second Initial, and a bad
 * token is answered with CONNECTION_CLOSE(INVALID_TOKEN).
 *
 * Without --cert/--key an ECDSA P-256 self-signed certificate for
 * "localhost", 127.0.0.1 and ::1 is generated at start (--cert-out writes
 * it as PEM so a client can verify it).
 *
 * Single-threaded ppoll() loop; timeout = earliest connection expiry.
 * Exits 0 after --timeout or on SIGTERM/SIGINT (closing live connections
 * with NO_ERROR), 2 on usage errors, 3 on setup failures (bind, TLS).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define HQ_ALPN			"hq-interop"
#define HQ_MAX_CONNS		32
#define HQ_MAX_SCIDS		16	/* CIDs we issued, per connection */
#define HQ_MAX_REQLEN		2048	/* request line incl. "GET " and CRLF */
#define HQ_CIDLEN		18
#define HQ_RX_BUF		65536
#define HQ_TX_BUF		NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE
#define HQ_TX_BURST		64	/* packets per connection per pass */
#define HQ_RX_BURST		256
#define HQ_SOCKBUF		(8 << 20)
#define HQ_STREAM_WINDOW	(256ull << 10)	/* requests are small */
#define HQ_CONN_WINDOW		(16ull << 20)
#define HQ_MAX_STREAMS_BIDI	100
#define HQ_RETRY_TOKEN_TTL	(10 * NGTCP2_SECONDS)
#define HQ_SECRETLEN		32
/* hq-interop defines no error codes; these are ours (HTTP/3's values). */
#define HQ_APP_NO_ERROR		0x0
#define HQ_APP_REFUSED		0x10b	/* H3_REQUEST_REJECTED */
#define HQ_APP_NOT_FOUND	0x10c	/* H3_REQUEST_CANCELLED */
#define HQ_APP_INTERNAL		0x102	/* H3_INTERNAL_ERROR */

enum hq_conn_state {
	HQ_CONN_FREE = 0,
	HQ_CONN_ACTIVE,
	HQ_CONN_CLOSING,	/* we sent CONNECTION_CLOSE (RFC 9000 §10.2.1) */
	HQ_CONN_DRAINING,	/* peer sent CONNECTION_CLOSE (§10.2.2) */
};

struct hq_stream {
	int64_t sid;
	char req[HQ_MAX_REQLEN];
	size_t reqlen;
	int parsed;		/* request line handled */
	int refuse;		/* reset pending: HQ_APP_* code */
	uint64_t refuse_code;
	int responding;
	uint8_t *map;		/* file contents (mmap), kept until close */
	size_t size, sent;
	int fin_sent, blocked;
	struct hq_stream *next;
};

struct hq_server;

struct hq_conn {
	enum hq_conn_state state;
	unsigned int id;
	struct hq_server *srv;
	ngtcp2_conn *conn;
	ngtcp2_crypto_conn_ref conn_ref;
	gnutls_session_t tls;
	struct sockaddr_storage remote;
	socklen_t remotelen;
	ngtcp2_path path;
	ngtcp2_cid client_dcid;	/* DCID of the client's Initials */
	ngtcp2_cid scids[HQ_MAX_SCIDS];
	int hs_done;
	uint64_t close_deadline;
	uint8_t closebuf[HQ_TX_BUF];
	size_t closelen;
	unsigned int close_resends;
	struct hq_stream *streams;
	uint64_t bytes_sent, nreq;
	uint64_t t_start;
	/* RFC 9001 §6: updates this server started; keys ngtcp2 derived
	 * (one generation per update, whichever side started it). */
	uint64_t ku_started, ku_derived, ku_pkts;
};

struct hq_server {
	const char *addr, *port, *root, *cert, *key, *cert_out, *ciphers;
	const char *keylog_path;
	int retry, verbose;
	int resume;		/* --resume: tickets and 0-RTT */
	gnutls_datum_t ticket_key;
	gnutls_anti_replay_t ar;
	uint64_t timeout_ns, idle_ns, initial_rtt_ns;
	uint64_t key_update_pkts;	/* start a key update every N, 0 off */
	char rootreal[PATH_MAX];
	size_t rootlen;
	int fd;
	struct sockaddr_storage local;
	socklen_t locallen;
	gnutls_certificate_credentials_t cred;
	char prio[256];
	uint8_t secret[HQ_SECRETLEN];
	struct hq_conn conns[HQ_MAX_CONNS];
	unsigned int next_id;
	int busy;		/* a connection hit its TX burst cap */
	uint8_t txbuf[HQ_TX_BUF];
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
	fprintf(stderr, "ngtcp2-hq-server: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: ngtcp2-hq-server [options] ADDR PORT ROOT\n"
		"  PORT 0 picks a free port; the \"listening\" line shows it\n"
		"  --cert FILE --key FILE  PEM certificate and key "
		"(default: self-signed)\n"
		"  --cert-out FILE  write the generated certificate (PEM)\n"
		"  --retry          send Retry to every new connection\n"
		"  --ciphers C      AES-128-GCM | AES-256-GCM | CHACHA20-POLY1305\n"
		"  --keylog FILE    append SSLKEYLOGFILE lines\n"
		"  --timeout SEC    exit after SEC seconds (default 30)\n"
		"  --idle-timeout SEC  QUIC max_idle_timeout (default 30)\n"
		"  --initial-rtt MS  initial RTT estimate (default 333, RFC 9002)\n"
		"  --key-update N   start a 1-RTT key update every N packets\n"
		"  --resume         send session tickets, accept 0-RTT "
		"(anti-replay:\n"
		"                   each ClientHello once per window)\n"
		"  -v, --verbose    ngtcp2 debug log on stderr\n"
		"exit: 0 timeout/SIGTERM, 2 usage, 3 setup failure\n");
	exit(2);
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

static const char *
addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	unsigned int port;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	}
	return buf;
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

/* TLS 1.3 only, no compat mode (RFC 9001 §8.4), QUIC v1 AEADs only. */
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

/* Self-signed ECDSA P-256 certificate, valid for a day. */
static int
make_self_signed(struct hq_server *s)
{
	static const uint8_t lo4[4] = {127, 0, 0, 1};
	static const uint8_t lo6[16] = {[15] = 1};
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t pem = {0};
	uint8_t serial[16];
	time_t t = time(NULL);
	FILE *f;
	int rv;

	if ((rv = gnutls_x509_privkey_init(&key)) != 0 ||
	    (rv = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
			GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
			0)) != 0 ||
	    (rv = gnutls_x509_crt_init(&crt)) != 0)
		goto fail;
	if ((rv = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) != 0)
		goto fail;
	serial[0] &= 0x7f;	/* positive INTEGER */
	if ((rv = gnutls_x509_crt_set_version(crt, 3)) != 0 ||
	    (rv = gnutls_x509_crt_set_serial(crt, serial,
					     sizeof(serial))) != 0 ||
	    (rv = gnutls_x509_crt_set_activation_time(crt, t - 3600)) != 0 ||
	    (rv = gnutls_x509_crt_set_expiration_time(crt, t + 86400)) != 0 ||
	    (rv = gnutls_x509_crt_set_dn_by_oid(crt,
			GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9)) != 0 ||
	    (rv = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME,
			"localhost", 9, GNUTLS_FSAN_SET)) != 0 ||
	    (rv = gnutls_x509_crt_set_subject_alt_name(crt,
			GNUTLS_SAN_IPADDRESS, lo4, sizeof(lo4),
			GNUTLS_FSAN_APPEND)) != 0 ||
	    (rv = gnutls_x509_crt_set_subject_alt_name(crt,
			GNUTLS_SAN_IPADDRESS, lo6, sizeof(lo6),
			GNUTLS_FSAN_APPEND)) != 0 ||
	    (rv = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) != 0 ||
	    (rv = gnutls_x509_crt_set_key_usage(crt,
			GNUTLS_KEY_DIGITAL_SIGNATURE)) != 0 ||
	    (rv = gnutls_x509_crt_set_key_purpose_oid(crt,
			GNUTLS_KP_TLS_WWW_SERVER, 0)) != 0 ||
	    (rv = gnutls_x509_crt_set_key(crt, key)) != 0 ||
	    (rv = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256,
					0)) != 0 ||
	    (rv = gnutls_certificate_set_x509_key(s->cred, &crt, 1, key)) < 0)
		goto fail;
	if (s->cert_out != NULL) {
		if ((rv = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM,
						  &pem)) != 0)
			goto fail;
		f = fopen(s->cert_out, "w");
		if (f == NULL || fwrite(pem.data, 1, pem.size, f) != pem.size ||
		    fclose(f) != 0) {
			fprintf(stderr, "error: write %s failed\n",
				s->cert_out);
			gnutls_free(pem.data);
			rv = -1;
			goto out;
		}
		gnutls_free(pem.data);
	}
	rv = 0;
	goto out;
fail:
	fprintf(stderr, "error: self-signed certificate: %s\n",
		gnutls_strerror(rv));
	rv = -1;
out:
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	if (key != NULL)
		gnutls_x509_privkey_deinit(key);
	return rv;
}

static int
tls_global_setup(struct hq_server *s)
{
	int rv;

	if (priority_string(s->ciphers, s->prio, sizeof(s->prio)) != 0)
		die_usage("unknown cipher suite '%s'", s->ciphers);
	if ((rv = gnutls_certificate_allocate_credentials(&s->cred)) != 0) {
		fprintf(stderr, "error: gnutls: %s\n", gnutls_strerror(rv));
		return -1;
	}
	if (s->cert != NULL) {
		rv = gnutls_certificate_set_x509_key_file(s->cred, s->cert,
							  s->key,
							  GNUTLS_X509_FMT_PEM);
		if (rv < 0) {
			fprintf(stderr, "error: load %s / %s: %s\n", s->cert,
				s->key, gnutls_strerror(rv));
			return -1;
		}
		return 0;
	}
	return make_self_signed(s);
}

static ngtcp2_conn *
get_conn(ngtcp2_crypto_conn_ref *ref)
{
	struct hq_conn *hc = ref->user_data;

	return hc->conn;
}

/* --resume: GnuTLS's 0-RTT anti-replay database (RFC 8446 §8.2); a
 * ClientHello seen before in the window is refused 0-RTT. A test tool:
 * a small table, full means no more 0-RTT. */
#define AR_MAX		1024
#define AR_KEYLEN	64
static uint8_t ar_keys[AR_MAX][AR_KEYLEN];
static unsigned int ar_n;

static int
ar_add(void *ptr, time_t exp_time, const gnutls_datum_t *key,
       const gnutls_datum_t *data)
{
	uint8_t k[AR_KEYLEN] = {0};
	unsigned int i;

	(void)ptr;
	(void)exp_time;
	(void)data;
	memcpy(k, key->data, key->size < AR_KEYLEN ? key->size : AR_KEYLEN);
	for (i = 0; i < ar_n; i++)
		if (memcmp(ar_keys[i], k, AR_KEYLEN) == 0)
			return GNUTLS_E_DB_ENTRY_EXISTS;
	if (ar_n == AR_MAX)
		return GNUTLS_E_DB_ERROR;
	memcpy(ar_keys[ar_n++], k, AR_KEYLEN);
	return 0;
}

static int
resume_setup(struct hq_server *s)
{
	if (gnutls_session_ticket_key_generate(&s->ticket_key) != 0 ||
	    gnutls_anti_replay_init(&s->ar) != 0)
		return -1;
	gnutls_anti_replay_set_add_function(s->ar, ar_add);
	return 0;
}

static int
tls_session_setup(struct hq_server *s, struct hq_conn *hc)
{
	gnutls_datum_t alpn = {
		.data = (unsigned char *)HQ_ALPN,
		.size = sizeof(HQ_ALPN) - 1,
	};
	const char *err = NULL;
	int rv;

	rv = gnutls_init(&hc->tls, GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA |
			 GNUTLS_NO_END_OF_EARLY_DATA);
	if (rv != 0)
		goto fail;
	rv = gnutls_priority_set_direct(hc->tls, s->prio, &err);
	if (rv != 0)
		goto fail;
	if (ngtcp2_crypto_gnutls_configure_server_session(hc->tls) != 0) {
		fprintf(stderr,
			"error: ngtcp2_crypto_gnutls_configure_server_session\n");
		return -1;
	}
	hc->conn_ref.get_conn = get_conn;
	hc->conn_ref.user_data = hc;
	gnutls_session_set_ptr(hc->tls, &hc->conn_ref);
	rv = gnutls_credentials_set(hc->tls, GNUTLS_CRD_CERTIFICATE, s->cred);
	if (rv != 0)
		goto fail;
	/* A client without "hq-interop" gets no_application_protocol. */
	rv = gnutls_alpn_set_protocols(hc->tls, &alpn, 1,
				       GNUTLS_ALPN_MANDATORY);
	if (rv != 0)
		goto fail;
	if (keylog_fp != NULL)
		gnutls_session_set_keylog_function(hc->tls, keylog_cb);
	if (s->resume) {
		rv = gnutls_session_ticket_enable_server(hc->tls,
							 &s->ticket_key);
		if (rv != 0)
			goto fail;
		gnutls_anti_replay_enable(hc->tls, s->ar);
		/* RFC 9001 §4.6.1: 0xffffffff in the ticket. */
		gnutls_record_set_max_early_data_size(hc->tls, 0xffffffffu);
	}
	return 0;
fail:
	fprintf(stderr, "error: gnutls session: %s\n", gnutls_strerror(rv));
	return -1;
}

/* ---- streams ----------------------------------------------------------- */

static void
stream_free(struct hq_conn *hc, struct hq_stream *st)
{
	struct hq_stream **pp;

	for (pp = &hc->streams; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	}
	if (st->map != NULL)
		munmap(st->map, st->size);
	free(st);
}

/* Refuse: mark for reset; done outside callbacks. */
static void
stream_refuse(struct hq_conn *hc, struct hq_stream *st, uint64_t code,
	      const char *why)
{
	printf("conn %u stream %" PRId64 " refused (0x%" PRIx64 "): %s\n",
	       hc->id, st->sid, code, why);
	st->refuse = 1;
	st->refuse_code = code;
	st->parsed = 1;
}

/* The request line is "GET <path>" followed by CRLF (or LF, or FIN). */
static void
stream_handle_request(struct hq_conn *hc, struct hq_stream *st)
{
	struct hq_server *s = hc->srv;
	char path[HQ_MAX_REQLEN], full[PATH_MAX * 2], real[PATH_MAX];
	const char *p, *e, *seg;
	struct stat sb;
	size_t len, seglen;
	int fd;

	st->parsed = 1;
	p = st->req;
	e = memchr(st->req, '\n', st->reqlen);
	if (e == NULL)
		e = st->req + st->reqlen;
	if (e > p && e[-1] == '\r')	/* CRLF; a bare LF is accepted */
		e--;
	if (e - p < 5 || memcmp(p, "GET /", 5) != 0) {
		stream_refuse(hc, st, HQ_APP_REFUSED, "not 'GET /...'");
		return;
	}
	p += 4;
	len = (size_t)(e - p);
	/* Strip an optional " HTTP/x" suffix some clients send. */
	seg = memchr(p, ' ', len);
	if (seg != NULL)
		len = (size_t)(seg - p);
	memcpy(path, p, len);
	path[len] = '\0';
	if (strlen(path) != len) {
		stream_refuse(hc, st, HQ_APP_REFUSED, "NUL in path");
		return;
	}
	/* Reject any "." or ".." component and backslashes outright. */
	for (seg = path; *seg != '\0';) {
		while (*seg == '/')
			seg++;
		seglen = strcspn(seg, "/");
		if ((seglen == 1 && seg[0] == '.') ||
		    (seglen == 2 && seg[0] == '.' && seg[1] == '.')) {
			stream_refuse(hc, st, HQ_APP_REFUSED,
				      "path traversal");
			return;
		}
		seg += seglen;
	}
	if (strchr(path, '\\') != NULL) {
		stream_refuse(hc, st, HQ_APP_REFUSED, "backslash in path");
		return;
	}
	snprintf(full, sizeof(full), "%s%s", s->rootreal, path);
	/* Symlinks may still point out of ROOT: check the resolved path. */
	if (realpath(full, real) == NULL) {
		stream_refuse(hc, st, HQ_APP_NOT_FOUND, strerror(errno));
		return;
	}
	if (strncmp(real, s->rootreal, s->rootlen) != 0 ||
	    real[s->rootlen] != '/') {
		stream_refuse(hc, st, HQ_APP_REFUSED, "outside ROOT");
		return;
	}
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		stream_refuse(hc, st, HQ_APP_NOT_FOUND, strerror(errno));
		return;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		stream_refuse(hc, st, HQ_APP_NOT_FOUND, "not a regular file");
		return;
	}
	st->size = (size_t)sb.st_size;
	if (st->size > 0) {
		st->map = mmap(NULL, st->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (st->map == MAP_FAILED) {
			st->map = NULL;
			close(fd);
			stream_refuse(hc, st, HQ_APP_INTERNAL, strerror(errno));
			return;
		}
	}
	close(fd);
	st->responding = 1;
	hc->nreq++;
	printf("conn %u stream %" PRId64 " GET %s bytes %zu\n", hc->id,
	       st->sid, path, st->size);
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
scid_add(struct hq_conn *hc, const ngtcp2_cid *cid)
{
	int i;

	for (i = 0; i < HQ_MAX_SCIDS; i++) {
		if (hc->scids[i].datalen == 0) {
			hc->scids[i] = *cid;
			return 0;
		}
	}
	return -1;
}

static int
get_new_connection_id_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
			 size_t cidlen, void *user_data)
{
	struct hq_conn *hc = user_data;

	(void)conn;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	cid->datalen = cidlen;
	if (ngtcp2_crypto_generate_stateless_reset_token(token,
			hc->srv->secret, HQ_SECRETLEN, cid) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	if (scid_add(hc, cid) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int
remove_connection_id_cb(ngtcp2_conn *conn, const ngtcp2_cid *cid,
			void *user_data)
{
	struct hq_conn *hc = user_data;
	int i;

	(void)conn;
	for (i = 0; i < HQ_MAX_SCIDS; i++)
		if (ngtcp2_cid_eq(&hc->scids[i], cid))
			hc->scids[i].datalen = 0;
	return 0;
}

static int
handshake_completed_cb(ngtcp2_conn *conn, void *user_data)
{
	struct hq_conn *hc = user_data;
	gnutls_datum_t alpn = {0};

	(void)conn;
	hc->hs_done = 1;
	gnutls_alpn_get_selected_protocol(hc->tls, &alpn);
	printf("conn %u handshake done in %.3f ms cipher %s alpn %.*s "
	       "session %s early_data %s\n",
	       hc->id, (double)(now_ns() - hc->t_start) / 1e6,
	       gnutls_cipher_get_name(gnutls_cipher_get(hc->tls)),
	       (int)alpn.size, alpn.data ? (const char *)alpn.data : "",
	       gnutls_session_is_resumed(hc->tls) ? "resumed" : "full",
	       gnutls_session_get_flags(hc->tls) & GNUTLS_SFLAGS_EARLY_DATA ?
	       "accepted" : "none");
	return 0;
}

static int
stream_open_cb(ngtcp2_conn *conn, int64_t stream_id, void *user_data)
{
	struct hq_conn *hc = user_data;
	struct hq_stream *st;

	/* hq-interop: only client-initiated bidi streams carry requests. */
	if ((stream_id & 0x3) != 0)
		return 0;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	st->sid = stream_id;
	st->next = hc->streams;
	hc->streams = st;
	ngtcp2_conn_set_stream_user_data(conn, stream_id, st);
	return 0;
}

static int
recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
		    uint64_t offset, const uint8_t *data, size_t datalen,
		    void *user_data, void *stream_user_data)
{
	struct hq_conn *hc = user_data;
	struct hq_stream *st = stream_user_data;
	size_t take;

	(void)offset;
	ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
	ngtcp2_conn_extend_max_offset(conn, datalen);
	if (st == NULL || st->parsed)
		return 0;	/* bytes after the request line are ignored */
	take = datalen;
	if (take > sizeof(st->req) - st->reqlen)
		take = sizeof(st->req) - st->reqlen;
	memcpy(st->req + st->reqlen, data, take);
	st->reqlen += take;
	if (memchr(st->req, '\n', st->reqlen) != NULL ||
	    (flags & NGTCP2_STREAM_DATA_FLAG_FIN))
		stream_handle_request(hc, st);
	else if (st->reqlen == sizeof(st->req))
		stream_refuse(hc, st, HQ_APP_REFUSED, "request too long");
	return 0;
}

static int
stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
		uint64_t app_error_code, void *user_data,
		void *stream_user_data)
{
	struct hq_conn *hc = user_data;
	struct hq_stream *st = stream_user_data;

	(void)flags;
	(void)app_error_code;
	if (st != NULL)
		stream_free(hc, st);
	/* Each closed request stream makes room for one more (§4.6). */
	if ((stream_id & 0x3) == 0)
		ngtcp2_conn_extend_max_streams_bidi(conn, 1);
	return 0;
}

static int
extend_max_stream_data_cb(ngtcp2_conn *conn, int64_t stream_id,
			  uint64_t max_data, void *user_data,
			  void *stream_user_data)
{
	struct hq_stream *st = stream_user_data;

	(void)conn;
	(void)stream_id;
	(void)max_data;
	(void)user_data;
	if (st != NULL)
		st->blocked = 0;
	return 0;
}

/* ---- connections ------------------------------------------------------ */

static void
conn_free(struct hq_conn *hc)
{
	while (hc->streams != NULL)
		stream_free(hc, hc->streams);
	if (hc->conn != NULL)
		ngtcp2_conn_del(hc->conn);
	if (hc->tls != NULL)
		gnutls_deinit(hc->tls);
	memset(hc, 0, sizeof(*hc));
}

static void
conn_done(struct hq_conn *hc, const char *why)
{
	printf("conn %u closed: %s (requests %" PRIu64 ", bytes %" PRIu64
	       ", key updates started %" PRIu64 " keys derived %" PRIu64
	       ")\n", hc->id, why, hc->nreq, hc->bytes_sent, hc->ku_started,
	       hc->ku_derived);
	conn_free(hc);
}

static int
sendto_peer(struct hq_server *s, const struct sockaddr_storage *to,
	    socklen_t tolen, const uint8_t *pkt, size_t len)
{
	ssize_t n;
	struct pollfd pfd;

	for (;;) {
		n = sendto(s->fd, pkt, len, 0, (const struct sockaddr *)to,
			   tolen);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			/* Rare on UDP: wait briefly for room, bounded. */
			pfd.fd = s->fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, 100) > 0)
				continue;
			return 0;	/* treat as loss */
		}
		if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
		    errno == ENETUNREACH || errno == EMSGSIZE)
			return 0;
		fprintf(stderr, "error: sendto: %s\n", strerror(errno));
		return -1;
	}
}

/* Enter the closing state with |ccerr| and send CONNECTION_CLOSE once. */
static void
conn_close(struct hq_conn *hc, const ngtcp2_connection_close_error *ccerr)
{
	struct hq_server *s = hc->srv;
	ngtcp2_path_storage ps;
	ngtcp2_ssize n;
	uint64_t now = now_ns();

	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_write_connection_close(hc->conn, &ps.path, NULL,
					       hc->closebuf,
					       sizeof(hc->closebuf), ccerr,
					       now);
	if (n <= 0) {
		conn_done(hc, "closed without CONNECTION_CLOSE");
		return;
	}
	hc->closelen = (size_t)n;
	(void)sendto_peer(s, &hc->remote, hc->remotelen, hc->closebuf,
			  hc->closelen);
	hc->state = HQ_CONN_CLOSING;
	hc->close_deadline = now + 3 * ngtcp2_conn_get_pto(hc->conn);
}

static void
conn_fail(struct hq_conn *hc, int liberr)
{
	ngtcp2_connection_close_error ccerr;

	if (liberr == NGTCP2_ERR_DRAINING) {
		hc->state = HQ_CONN_DRAINING;
		hc->close_deadline = now_ns() +
				     3 * ngtcp2_conn_get_pto(hc->conn);
		return;
	}
	if (liberr == NGTCP2_ERR_DROP_CONN || liberr == NGTCP2_ERR_RETRY ||
	    liberr == NGTCP2_ERR_IDLE_CLOSE ||
	    liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
		conn_done(hc, ngtcp2_strerror(liberr));
		return;
	}
	fprintf(stderr, "conn %u error: %s\n", hc->id, ngtcp2_strerror(liberr));
	if (liberr == NGTCP2_ERR_CRYPTO)
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
			&ccerr, ngtcp2_conn_get_tls_alert(hc->conn), NULL, 0);
	else
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&ccerr, liberr, NULL, 0);
	conn_close(hc, &ccerr);
}

static struct hq_stream *
next_sendable(struct hq_conn *hc, struct hq_stream *after)
{
	struct hq_stream *st;

	for (st = after ? after->next : hc->streams; st != NULL; st = st->next)
		if (st->responding && !st->fin_sent && !st->blocked)
			return st;
	if (after == NULL)
		return NULL;
	for (st = hc->streams; st != NULL && st != after->next; st = st->next)
		if (st->responding && !st->fin_sent && !st->blocked)
			return st;
	return NULL;
}

/* --key-update N: ask for an update every N packets sent; ngtcp2 refuses
 * (NGTCP2_ERR_INVALID_STATE) until the previous one is confirmed. */
static void
maybe_key_update(struct hq_conn *hc, uint64_t ts)
{
	if (hc->srv->key_update_pkts == 0 || !hc->hs_done ||
	    hc->ku_pkts < hc->srv->key_update_pkts)
		return;
	if (ngtcp2_conn_initiate_key_update(hc->conn, ts) == 0) {
		hc->ku_started++;
		hc->ku_pkts = 0;
	}
}

/* Write up to HQ_TX_BURST packets for |hc|.  Returns 0, or -1 if the
 * connection was closed. */
static int
conn_write(struct hq_conn *hc)
{
	struct hq_server *s = hc->srv;
	struct hq_stream *st, *last = NULL;
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n, ndatalen;
	ngtcp2_vec v;
	uint64_t ts = now_ns();
	uint32_t flags;
	int64_t sid;
	size_t npkts = 0, spins = 0;
	int rv;

	for (st = hc->streams; st != NULL; st = st->next) {
		st->blocked = 0;
		if (st->refuse) {
			st->refuse = 0;
			st->responding = 0;
			rv = ngtcp2_conn_shutdown_stream(hc->conn, st->sid,
							 st->refuse_code);
			if (rv != 0)
				fprintf(stderr, "conn %u shutdown_stream: %s\n",
					hc->id, ngtcp2_strerror(rv));
		}
	}
	ngtcp2_path_storage_zero(&ps);
	while (npkts < HQ_TX_BURST && spins++ < 4 * HQ_TX_BURST + 256) {
		st = hc->hs_done ? next_sendable(hc, last) : NULL;
		sid = -1;
		flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
		if (st != NULL) {
			last = st;
			sid = st->sid;
			v.base = st->map != NULL ? st->map + st->sent : NULL;
			v.len = st->size - st->sent;
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		}
		n = ngtcp2_conn_writev_stream(hc->conn, &ps.path, &pi,
					      s->txbuf, sizeof(s->txbuf),
					      &ndatalen, flags, sid, &v,
					      st ? 1 : 0, ts);
		if (n < 0) {
			if (st != NULL && n == NGTCP2_ERR_WRITE_MORE) {
				st->sent += (size_t)ndatalen;
				hc->bytes_sent += (uint64_t)ndatalen;
				if (st->sent == st->size)
					st->fin_sent = 1;
				continue;
			}
			if (st != NULL && n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
				st->blocked = 1;
				continue;
			}
			if (st != NULL && (n == NGTCP2_ERR_STREAM_SHUT_WR ||
					   n == NGTCP2_ERR_STREAM_NOT_FOUND)) {
				st->fin_sent = 1;	/* reset by peer */
				continue;
			}
			fprintf(stderr, "conn %u ngtcp2_conn_writev_stream: "
				"%s\n", hc->id, ngtcp2_strerror((int)n));
			conn_fail(hc, (int)n);
			return -1;
		}
		if (st != NULL && ndatalen >= 0) {
			st->sent += (size_t)ndatalen;
			hc->bytes_sent += (uint64_t)ndatalen;
			if (st->sent == st->size)
				st->fin_sent = 1;
		}
		if (n == 0)
			break;
		/* Where ngtcp2 sends it: a migrated client's new address,
		 * or a path being validated. */
		if (sendto_peer(s, (const struct sockaddr_storage *)
				ps.path.remote.addr, ps.path.remote.addrlen,
				s->txbuf, (size_t)n) != 0)
			break;
		npkts++;
		hc->ku_pkts++;
		maybe_key_update(hc, ts);
	}
	if (npkts == HQ_TX_BURST)
		s->busy = 1;
	ngtcp2_conn_update_pkt_tx_time(hc->conn, ts);
	return 0;
}

static struct hq_conn *
conn_find(struct hq_server *s, const uint8_t *dcid, size_t dcidlen)
{
	struct hq_conn *hc;
	int i, j;

	for (i = 0; i < HQ_MAX_CONNS; i++) {
		hc = &s->conns[i];
		if (hc->state == HQ_CONN_FREE)
			continue;
		if (hc->client_dcid.datalen == dcidlen &&
		    memcmp(hc->client_dcid.data, dcid, dcidlen) == 0)
			return hc;
		for (j = 0; j < HQ_MAX_SCIDS; j++)
			if (hc->scids[j].datalen == dcidlen &&
			    memcmp(hc->scids[j].data, dcid, dcidlen) == 0)
				return hc;
	}
	return NULL;
}

static void
send_retry(struct hq_server *s, const ngtcp2_pkt_hd *hd,
	   const struct sockaddr_storage *from, socklen_t fromlen)
{
	uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
	ngtcp2_ssize tokenlen, n;
	ngtcp2_cid scid;
	char ab[64];

	scid.datalen = HQ_CIDLEN;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0)
		return;
	tokenlen = ngtcp2_crypto_generate_retry_token(token, s->secret,
			HQ_SECRETLEN, hd->version,
			(const ngtcp2_sockaddr *)from, fromlen, &scid,
			&hd->dcid, now_ns());
	if (tokenlen < 0) {
		fprintf(stderr, "error: ngtcp2_crypto_generate_retry_token\n");
		return;
	}
	n = ngtcp2_crypto_write_retry(s->txbuf, sizeof(s->txbuf), hd->version,
				      &hd->scid, &scid, &hd->dcid, token,
				      (size_t)tokenlen);
	if (n < 0) {
		fprintf(stderr, "error: ngtcp2_crypto_write_retry: %s\n",
			ngtcp2_strerror((int)n));
		return;
	}
	printf("retry sent to %s\n", addr_str(from, ab, sizeof(ab)));
	(void)sendto_peer(s, from, fromlen, s->txbuf, (size_t)n);
}

static void
send_invalid_token_close(struct hq_server *s, const ngtcp2_pkt_hd *hd,
			 const struct sockaddr_storage *from,
			 socklen_t fromlen)
{
	ngtcp2_ssize n;

	n = ngtcp2_crypto_write_connection_close(s->txbuf, sizeof(s->txbuf),
			hd->version, &hd->scid, &hd->dcid,
			NGTCP2_INVALID_TOKEN, NULL, 0);
	if (n > 0)
		(void)sendto_peer(s, from, fromlen, s->txbuf, (size_t)n);
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
	struct hq_conn *hc = user_data;

	hc->ku_derived++;
	return ngtcp2_crypto_update_key_cb(conn, rx_secret, tx_secret,
			rx_aead_ctx, rx_iv, tx_aead_ctx, tx_iv,
			current_rx_secret, current_tx_secret, secretlen,
			user_data);
}

static struct hq_conn *
conn_accept(struct hq_server *s, const uint8_t *pkt, size_t len,
	    const struct sockaddr_storage *from, socklen_t fromlen)
{
	ngtcp2_callbacks cb = {
		.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
		.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
		.encrypt = ngtcp2_crypto_encrypt_cb,
		.decrypt = ngtcp2_crypto_decrypt_cb,
		.hp_mask = ngtcp2_crypto_hp_mask_cb,
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
		.remove_connection_id = remove_connection_id_cb,
		.handshake_completed = handshake_completed_cb,
		.stream_open = stream_open_cb,
		.recv_stream_data = recv_stream_data_cb,
		.stream_close = stream_close_cb,
		.extend_max_stream_data = extend_max_stream_data_cb,
	};
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	ngtcp2_pkt_hd hd;
	ngtcp2_cid scid, odcid;
	struct hq_conn *hc = NULL;
	int i, rv, validated = 0;
	char ab[64];

	rv = ngtcp2_accept(&hd, pkt, len);
	if (rv != 0)
		return NULL;	/* not a valid first Initial: drop */
	if (hd.token.len > 0 &&
	    hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
		if (ngtcp2_crypto_verify_retry_token(&odcid, hd.token.base,
				hd.token.len, s->secret, HQ_SECRETLEN,
				hd.version, (const ngtcp2_sockaddr *)from,
				fromlen, &hd.dcid, HQ_RETRY_TOKEN_TTL,
				now_ns()) != 0) {
			printf("invalid retry token from %s\n",
			       addr_str(from, ab, sizeof(ab)));
			send_invalid_token_close(s, &hd, from, fromlen);
			return NULL;
		}
		validated = 1;
	} else if (s->retry) {
		send_retry(s, &hd, from, fromlen);
		return NULL;
	}
	for (i = 0; i < HQ_MAX_CONNS; i++) {
		if (s->conns[i].state == HQ_CONN_FREE) {
			hc = &s->conns[i];
			break;
		}
	}
	if (hc == NULL) {
		fprintf(stderr, "connection table full: dropping Initial\n");
		return NULL;
	}
	memset(hc, 0, sizeof(*hc));
	hc->srv = s;
	hc->id = ++s->next_id;
	hc->t_start = now_ns();
	memcpy(&hc->remote, from, fromlen);
	hc->remotelen = fromlen;
	hc->path.local.addr = (ngtcp2_sockaddr *)&s->local;
	hc->path.local.addrlen = s->locallen;
	hc->path.remote.addr = (ngtcp2_sockaddr *)&hc->remote;
	hc->path.remote.addrlen = hc->remotelen;
	hc->client_dcid = hd.dcid;

	scid.datalen = HQ_CIDLEN;
	if (gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0)
		return NULL;
	scid_add(hc, &scid);

	ngtcp2_settings_default(&settings);
	settings.initial_ts = hc->t_start;
	settings.initial_rtt = s->initial_rtt_ns;
	/* ngtcp2 gives up a handshake after 10 s by default: a slow one
	 * through heavy loss (test_handshake_loss.sh, 30% each way) that
	 * still moves was cut by the peer, not by the client under test.
	 * As long as the idle timeout, as dpquicd does. */
	settings.handshake_timeout = s->idle_ns;
	if (s->verbose)
		settings.log_printf = log_printf;
	if (validated)
		settings.token = hd.token;
	ngtcp2_transport_params_default(&params);
	params.initial_max_stream_data_bidi_remote = HQ_STREAM_WINDOW;
	params.initial_max_stream_data_bidi_local = HQ_STREAM_WINDOW;
	params.initial_max_data = HQ_CONN_WINDOW;
	params.initial_max_streams_bidi = HQ_MAX_STREAMS_BIDI;
	params.initial_max_streams_uni = 0;
	params.max_idle_timeout = s->idle_ns;
	params.stateless_reset_token_present = 1;
	if (ngtcp2_crypto_generate_stateless_reset_token(
			params.stateless_reset_token, s->secret, HQ_SECRETLEN,
			&scid) != 0)
		return NULL;
	if (validated) {
		/* RFC 9000 §7.3: echo both CIDs so the client can check. */
		params.original_dcid = odcid;
		params.retry_scid = hd.dcid;
		params.retry_scid_present = 1;
	} else {
		params.original_dcid = hd.dcid;
	}
	rv = ngtcp2_conn_server_new(&hc->conn, &hd.scid, &scid, &hc->path,
				    hd.version, &cb, &settings, &params, NULL,
				    hc);
	if (rv != 0) {
		fprintf(stderr, "error: ngtcp2_conn_server_new: %s\n",
			ngtcp2_strerror(rv));
		memset(hc, 0, sizeof(*hc));
		return NULL;
	}
	hc->state = HQ_CONN_ACTIVE;
	if (tls_session_setup(s, hc) != 0) {
		conn_free(hc);
		return NULL;
	}
	ngtcp2_conn_set_tls_native_handle(hc->conn, hc->tls);
	printf("conn %u new from %s%s\n", hc->id,
	       addr_str(from, ab, sizeof(ab)),
	       validated ? " (retry token valid)" : "");
	return hc;
}

static void
send_version_negotiation(struct hq_server *s, const ngtcp2_version_cid *vc,
			 const struct sockaddr_storage *from,
			 socklen_t fromlen)
{
	const uint32_t sv[] = {NGTCP2_PROTO_VER_V1};
	uint8_t unused;
	ngtcp2_ssize n;

	if (gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1) != 0)
		unused = 0;
	/* Our DCID/SCID are the client's SCID/DCID (RFC 8999 §6). */
	n = ngtcp2_pkt_write_version_negotiation(s->txbuf, sizeof(s->txbuf),
			unused, vc->scid, vc->scidlen, vc->dcid, vc->dcidlen,
			sv, 1);
	if (n > 0)
		(void)sendto_peer(s, from, fromlen, s->txbuf, (size_t)n);
}

static void
handle_datagram(struct hq_server *s, const uint8_t *pkt, size_t len,
		const struct sockaddr_storage *from, socklen_t fromlen)
{
	ngtcp2_version_cid vc;
	struct hq_conn *hc;
	ngtcp2_path path;
	int rv, fresh = 0;

	rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, HQ_CIDLEN);
	if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
		/* RFC 9000 §6.1: only for datagrams of at least 1200 bytes. */
		if (len >= 1200)
			send_version_negotiation(s, &vc, from, fromlen);
		return;
	}
	if (rv != 0)
		return;
	hc = conn_find(s, vc.dcid, vc.dcidlen);
	if (hc == NULL) {
		if (vc.version == 0)
			return;	/* short header, unknown CID: drop */
		hc = conn_accept(s, pkt, len, from, fromlen);
		if (hc == NULL)
			return;
		fresh = 1;
	}
	switch (hc->state) {
	case HQ_CONN_CLOSING:
		/* Answer with our CONNECTION_CLOSE, bounded (§10.2.1). */
		if (hc->close_resends++ < 32)
			(void)sendto_peer(s, &hc->remote, hc->remotelen,
					  hc->closebuf, hc->closelen);
		return;
	case HQ_CONN_DRAINING:
		return;
	default:
		break;
	}
	/* The path it arrived on: ngtcp2 validates a new client address
	 * and migrates (RFC 9000 §9) when it changes. */
	path = hc->path;
	path.remote.addr = (ngtcp2_sockaddr *)from;
	path.remote.addrlen = fromlen;
	rv = ngtcp2_conn_read_pkt(hc->conn, &path, NULL, pkt, len,
				  now_ns());
	if (fresh && (rv == NGTCP2_ERR_DISCARD_PKT ||
		      rv == NGTCP2_ERR_DROP_CONN)) {
		/* A first Initial that does not decrypt is junk: free the
		 * slot silently instead of holding it until the timeout.
		 * TLS failures (ERR_CRYPTO) still get CONNECTION_CLOSE. */
		conn_done(hc, "first packet rejected");
		return;
	}
	if (rv != 0 && rv != NGTCP2_ERR_DISCARD_PKT) {
		if (rv == NGTCP2_ERR_DRAINING) {
			ngtcp2_connection_close_error ccerr;

			ngtcp2_conn_get_connection_close_error(hc->conn,
							       &ccerr);
			printf("conn %u peer closed: error 0x%" PRIx64
			       " reason '%.*s'\n", hc->id, ccerr.error_code,
			       (int)ccerr.reasonlen,
			       ccerr.reason ? (const char *)ccerr.reason : "");
		}
		conn_fail(hc, rv);
	}
}

/* ---- main loop ----------------------------------------------------------- */

static int
socket_setup(struct hq_server *s)
{
	struct addrinfo hints = {0}, *res;
	int rv, on = 1, sz = HQ_SOCKBUF;
	char ab[64];

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	rv = getaddrinfo(s->addr, s->port, &hints, &res);
	if (rv != 0) {
		fprintf(stderr, "error: address %s port %s: %s\n", s->addr,
			s->port, gai_strerror(rv));
		return -1;
	}
	s->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK |
		       SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		fprintf(stderr, "error: socket: %s\n", strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	if (res->ai_family == AF_INET6)
		(void)setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &on,
				 sizeof(on));
	if (setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		(void)setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(s->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		(void)setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bind(s->fd, res->ai_addr, res->ai_addrlen) != 0) {
		fprintf(stderr, "error: bind %s %s: %s\n", s->addr, s->port,
			strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	/* The bound address is the local side of every path; with a
	 * wildcard ADDR the kernel picks the reply source address. */
	s->locallen = sizeof(s->local);
	if (getsockname(s->fd, (struct sockaddr *)&s->local,
			&s->locallen) != 0) {
		fprintf(stderr, "error: getsockname: %s\n", strerror(errno));
		return -1;
	}
	printf("listening on %s port %u\n", addr_str(&s->local, ab,
	       sizeof(ab)), s->local.ss_family == AF_INET6 ?
	       ntohs(((struct sockaddr_in6 *)&s->local)->sin6_port) :
	       ntohs(((struct sockaddr_in *)&s->local)->sin_port));
	return 0;
}

static void
on_signal(int sig)
{
	got_signal = sig;
}

static void
shutdown_all(struct hq_server *s)
{
	ngtcp2_connection_close_error ccerr;
	struct hq_conn *hc;
	int i;

	for (i = 0; i < HQ_MAX_CONNS; i++) {
		hc = &s->conns[i];
		if (hc->state == HQ_CONN_FREE)
			continue;
		if (hc->state == HQ_CONN_ACTIVE) {
			ngtcp2_connection_close_error_default(&ccerr);
			if (hc->hs_done)
				ngtcp2_connection_close_error_set_application_error(
					&ccerr, HQ_APP_NO_ERROR, NULL, 0);
			conn_close(hc, &ccerr);
		}
		if (hc->state != HQ_CONN_FREE)
			conn_done(hc, "server shutdown");
	}
}

static void
run(struct hq_server *s)
{
	static uint8_t buf[HQ_RX_BUF];
	struct sockaddr_storage from;
	socklen_t fromlen;
	struct pollfd pfd;
	struct timespec tmo;
	struct hq_conn *hc;
	uint64_t deadline = now_ns() + s->timeout_ns, now, wake, exp;
	ssize_t n;
	int i, k, rv;

	while (!got_signal) {
		now = now_ns();
		if (now >= deadline)
			break;
		s->busy = 0;
		wake = deadline;
		for (i = 0; i < HQ_MAX_CONNS; i++) {
			hc = &s->conns[i];
			if (hc->state == HQ_CONN_CLOSING ||
			    hc->state == HQ_CONN_DRAINING) {
				if (now >= hc->close_deadline)
					conn_done(hc, hc->state ==
						  HQ_CONN_DRAINING ?
						  "drained" : "closed");
				else if (hc->close_deadline < wake)
					wake = hc->close_deadline;
				continue;
			}
			if (hc->state != HQ_CONN_ACTIVE)
				continue;
			if (ngtcp2_conn_get_expiry(hc->conn) <= now) {
				rv = ngtcp2_conn_handle_expiry(hc->conn, now);
				if (rv != 0) {
					conn_fail(hc, rv);
					continue;
				}
			}
			if (conn_write(hc) != 0 ||
			    hc->state != HQ_CONN_ACTIVE)
				continue;
			exp = ngtcp2_conn_get_expiry(hc->conn);
			if (exp < wake)
				wake = exp;
		}
		now = now_ns();
		wake = s->busy ? 0 : (wake > now ? wake - now : 0);
		tmo.tv_sec = (time_t)(wake / NGTCP2_SECONDS);
		tmo.tv_nsec = (long)(wake % NGTCP2_SECONDS);
		pfd.fd = s->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rv = ppoll(&pfd, 1, &tmo, NULL);
		if (rv < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "error: poll: %s\n", strerror(errno));
			break;
		}
		if (rv == 0)
			continue;
		for (k = 0; k < HQ_RX_BURST; k++) {
			fromlen = sizeof(from);
			n = recvfrom(s->fd, buf, sizeof(buf), 0,
				     (struct sockaddr *)&from, &fromlen);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK &&
				    errno != ECONNREFUSED)
					fprintf(stderr, "error: recvfrom: %s\n",
						strerror(errno));
				break;
			}
			handle_datagram(s, buf, (size_t)n, &from, fromlen);
		}
	}
	printf("server exiting: %s\n", got_signal ? "signal" : "timeout");
	shutdown_all(s);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"cert", required_argument, NULL, 'c'},
		{"key", required_argument, NULL, 'k'},
		{"cert-out", required_argument, NULL, 'O'},
		{"retry", no_argument, NULL, 'r'},
		{"ciphers", required_argument, NULL, 'C'},
		{"keylog", required_argument, NULL, 'K'},
		{"timeout", required_argument, NULL, 't'},
		{"idle-timeout", required_argument, NULL, 'i'},
		{"initial-rtt", required_argument, NULL, 'R'},
		{"key-update", required_argument, NULL, 'U'},
		{"resume", no_argument, NULL, 'e'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct hq_server srv;
	struct hq_server *s = &srv;
	struct sigaction sa = {0};
	double secs;
	char *end;
	int opt;

	s->timeout_ns = 30 * NGTCP2_SECONDS;
	s->idle_ns = 30 * NGTCP2_SECONDS;
	s->initial_rtt_ns = NGTCP2_DEFAULT_INITIAL_RTT;
	s->fd = -1;
	while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': s->cert = optarg; break;
		case 'k': s->key = optarg; break;
		case 'O': s->cert_out = optarg; break;
		case 'r': s->retry = 1; break;
		case 'e': s->resume = 1; break;
		case 'C': s->ciphers = optarg; break;
		case 'K': s->keylog_path = optarg; break;
		case 'v': s->verbose = 1; break;
		case 'R':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs > 0) || secs > 10000)
				die_usage("bad --initial-rtt '%s'", optarg);
			s->initial_rtt_ns = (uint64_t)(secs * 1e6);
			break;
		case 'U':
			s->key_update_pkts = strtoull(optarg, &end, 10);
			if (*end != '\0' || s->key_update_pkts == 0 ||
			    optarg[0] == '-')
				die_usage("bad --key-update '%s'", optarg);
			break;
		case 't':
		case 'i':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs > 0) || secs > 86400)
				die_usage("bad seconds value '%s'", optarg);
			if (opt == 't')
				s->timeout_ns = (uint64_t)(secs * 1e9);
			else
				s->idle_ns = (uint64_t)(secs * 1e9);
			break;
		default: usage();
		}
	}
	if (argc - optind != 3)
		usage();
	if ((s->cert == NULL) != (s->key == NULL))
		die_usage("--cert and --key go together");
	s->addr = argv[optind];
	s->port = argv[optind + 1];
	s->root = argv[optind + 2];
	if (realpath(s->root, s->rootreal) == NULL)
		die_usage("ROOT %s: %s", s->root, strerror(errno));
	s->rootlen = strlen(s->rootreal);
	if (s->rootlen == 1)	/* ROOT "/": the prefix check needs no '/' */
		s->rootlen = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (s->keylog_path != NULL) {
		keylog_fp = fopen(s->keylog_path, "a");
		if (keylog_fp == NULL)
			die_usage("open %s: %s", s->keylog_path,
				  strerror(errno));
	}
	if (gnutls_rnd(GNUTLS_RND_KEY, s->secret, sizeof(s->secret)) != 0 ||
	    tls_global_setup(s) != 0 || socket_setup(s) != 0 ||
	    (s->resume && resume_setup(s) != 0))
		return 3;
	run(s);
	gnutls_certificate_free_credentials(s->cred);
	close(s->fd);
	if (keylog_fp != NULL)
		fclose(keylog_fp);
	return 0;
}
