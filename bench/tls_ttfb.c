/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq-tls-ttfb: the kernel TCP + TLS 1.3 (GnuTLS) side of bench/bench_ttfb.sh,
 * the baseline a QUIC request is measured against.
 *
 *   dpq-tls-ttfb serve ADDR PORT ROOT
 *       accept TCP connections one at a time, TLS 1.3 handshake (a
 *       self-signed ECDSA P-256 certificate made at start), read one line
 *       "GET /PATH", send ROOT/PATH, close.
 *   dpq-tls-ttfb fetch ADDR PORT PATH [RUNS]
 *       RUNS times (1): connect, handshake, send the request once the
 *       handshake is done (TLS 1.3: with the client's Finished), read the
 *       answer to its end. One line per run:
 *         tcp_tls connect_ms C handshake_ms H first_byte_ms F bytes N
 *       all from the start of connect(). Exit 0 if every run got bytes.
 *   dpq-tls-ttfb mkcert rsa|ecdsa CERT KEY
 *       write a self-signed RSA-2048 or ECDSA P-256 certificate and its
 *       key (PEM), e.g. for dpquicd --cert/--key.
 *
 * TCP_NODELAY on both ends: the request and the answer's first bytes go
 * at once, as in the QUIC runs. No session resumption (TLS 1.3 resumption
 * over TCP still costs the TCP round trip, and the bench compares full
 * handshakes against full).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#define PRIO "NORMAL:-VERS-ALL:+VERS-TLS1.3"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
addr_of(const char *ip, const char *port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

static int
write_pem(const char *path, const gnutls_datum_t *d)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fwrite(d->data, 1, d->size, f) != d->size) {
		perror(path);
		if (f != NULL)
			fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* A self-signed certificate: ECDSA P-256 (what dpquicd makes by default)
 * or RSA-2048; into cred, or with cert_out/key_out into PEM files. */
static int
self_signed_as(gnutls_certificate_credentials_t cred, bool rsa,
		const char *cert_out, const char *key_out)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	unsigned char serial[8] = { 1 };
	time_t now = time(NULL);
	int rc;

	if ((rc = gnutls_x509_privkey_init(&key)) < 0 ||
	    (rc = gnutls_x509_privkey_generate(key, rsa ? GNUTLS_PK_RSA :
			GNUTLS_PK_ECDSA, rsa ? 2048 :
			GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
	    (rc = gnutls_x509_crt_init(&crt)) < 0 ||
	    (rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
	    (rc = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
	    (rc = gnutls_x509_crt_set_expiration_time(crt, now + 86400)) < 0 ||
	    (rc = gnutls_x509_crt_set_dn_by_oid(crt,
			GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9)) < 0 ||
	    (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256,
			0)) < 0)
		goto out;
	if (cred != NULL) {
		rc = gnutls_certificate_set_x509_key(cred, &crt, 1, key);
	} else {
		gnutls_datum_t c = { NULL, 0 }, k = { NULL, 0 };

		rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c);
		if (rc >= 0)
			rc = gnutls_x509_privkey_export2(key,
					GNUTLS_X509_FMT_PEM, &k);
		if (rc >= 0 && (write_pem(cert_out, &c) != 0 ||
				write_pem(key_out, &k) != 0))
			rc = GNUTLS_E_FILE_ERROR;
		gnutls_free(c.data);
		gnutls_free(k.data);
	}
out:
	if (rc < 0)
		fprintf(stderr, "dpq-tls-ttfb: certificate: %s\n",
			gnutls_strerror(rc));
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	if (key != NULL)
		gnutls_x509_privkey_deinit(key);
	return rc < 0 ? -1 : 0;
}

static int
send_all(gnutls_session_t s, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n > 0) {
		w = gnutls_record_send(s, b, n);
		if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w < 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One request: "GET /PATH\r\n" -> the file (hq-interop's form). */
static void
serve_one(gnutls_certificate_credentials_t cred, int fd, const char *root)
{
	gnutls_session_t s;
	char req[512], path[1024], buf[16384];
	size_t got = 0;
	ssize_t r;
	FILE *f;
	int rc;

	if (gnutls_init(&s, GNUTLS_SERVER) < 0)
		return;
	gnutls_priority_set_direct(s, PRIO, NULL);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 10000);
	do
		rc = gnutls_handshake(s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc < 0)
		goto out;
	while (got < sizeof(req) - 1 && memchr(req, '\n', got) == NULL) {
		r = gnutls_record_recv(s, req + got, sizeof(req) - 1 - got);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	req[got] = 0;
	req[strcspn(req, "\r\n")] = 0;
	if (strncmp(req, "GET /", 5) != 0 || strstr(req, "..") != NULL)
		goto out;
	snprintf(path, sizeof(path), "%s/%s", root, req + 5);
	f = fopen(path, "rb");
	if (f == NULL)
		goto out;
	while ((r = (ssize_t)fread(buf, 1, sizeof(buf), f)) > 0)
		if (send_all(s, buf, (size_t)r) != 0)
			break;
	fclose(f);
	gnutls_bye(s, GNUTLS_SHUT_WR);
out:
	gnutls_deinit(s);
}

static int
serve(const char *ip, const char *port, const char *root)
{
	gnutls_certificate_credentials_t cred;
	struct sockaddr_in sa;
	int ls, fd, one = 1;

	if (addr_of(ip, port, &sa) != 0)
		return 2;
	if (gnutls_certificate_allocate_credentials(&cred) < 0 ||
	    self_signed_as(cred, false, NULL, NULL) != 0)
		return 1;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(ls, 16) != 0) {
		perror("dpq-tls-ttfb: listen");
		return 1;
	}
	printf("listening on %s port %s\n", ip, port);
	fflush(stdout);
	for (;;) {
		fd = accept(ls, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perror("dpq-tls-ttfb: accept");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		serve_one(cred, fd, root);
		close(fd);
	}
}

static int
fetch_one(gnutls_certificate_credentials_t cred, const struct sockaddr_in *sa,
		const char *path)
{
	double t0, t_conn, t_hs, t_first = 0;
	gnutls_session_t s = NULL;
	char req[1100], buf[16384];
	uint64_t bytes = 0;
	ssize_t r;
	int fd, rc, one = 1;

	t0 = now_ms();
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)sa,
			sizeof(*sa)) != 0) {
		perror("dpq-tls-ttfb: connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	t_conn = now_ms();
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (gnutls_init(&s, GNUTLS_CLIENT) < 0)
		goto fail;
	gnutls_priority_set_direct(s, PRIO, NULL);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 10000);
	do
		rc = gnutls_handshake(s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc < 0) {
		fprintf(stderr, "dpq-tls-ttfb: handshake: %s\n",
			gnutls_strerror(rc));
		goto fail;
	}
	t_hs = now_ms();
	snprintf(req, sizeof(req), "GET %s\r\n", path);
	if (send_all(s, req, strlen(req)) != 0)
		goto fail;
	for (;;) {
		r = gnutls_record_recv(s, buf, sizeof(buf));
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r <= 0)
			break;
		if (bytes == 0)
			t_first = now_ms();
		bytes += (uint64_t)r;
	}
	printf("tcp_tls connect_ms %.3f handshake_ms %.3f first_byte_ms %.3f "
		"bytes %llu\n", t_conn - t0, t_hs - t0,
		bytes ? t_first - t0 : 0.0, (unsigned long long)bytes);
	gnutls_deinit(s);
	close(fd);
	return bytes > 0 ? 0 : -1;
fail:
	if (s != NULL)
		gnutls_deinit(s);
	close(fd);
	return -1;
}

int
main(int argc, char **argv)
{
	gnutls_certificate_credentials_t cred;
	struct sockaddr_in sa;
	int i, runs, bad = 0;

	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "mkcert") == 0)
		return self_signed_as(NULL, strcmp(argv[2], "rsa") == 0,
				argv[3], argv[4]) == 0 ? 0 : 1;
	if ((argc != 5 && argc != 6) || strcmp(argv[1], "fetch") != 0 ||
	    addr_of(argv[2], argv[3], &sa) != 0) {
		fprintf(stderr, "usage: dpq-tls-ttfb serve ADDR PORT ROOT\n"
			"       dpq-tls-ttfb fetch ADDR PORT PATH [RUNS]\n"
			"       dpq-tls-ttfb mkcert rsa|ecdsa CERT KEY\n");
		return 2;
	}
	runs = argc == 6 ? atoi(argv[5]) : 1;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return 1;
	for (i = 0; i < runs; i++)
		bad += fetch_one(cred, &sa, argv[4]) != 0;
	gnutls_certificate_free_credentials(cred);
	return bad ? 1 : 0;
}
