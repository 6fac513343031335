/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS 1.3 for QUIC on GnuTLS (RFC 9001 §4): no record layer. GnuTLS hands
 * us each handshake message it would send (handshake read hook), each
 * traffic secret (secret hook) and each alert (alert hook); we hand it the
 * CRYPTO bytes the peer sent with gnutls_handshake_write(). Transport
 * parameters travel in extension 0x39 (RFC 9001 §8.2). Mgmt thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "control/tls/tls.h"

/* RFC 9001 §8.2: missing quic_transport_parameters is fatal with 0x016d
 * (missing_extension); §8.1: no common ALPN is no_application_protocol. */
#define TLS_ALERT_UNEXPECTED_MESSAGE	10
#define TLS_ALERT_DECODE_ERROR		50
#define TLS_ALERT_INTERNAL_ERROR	80
#define TLS_ALERT_MISSING_EXTENSION	109
#define TLS_ALERT_NO_APP_PROTOCOL	120
#define QUIC_CRYPTO_ERROR_BASE		0x100

struct dpq_tls_ctx {
	enum dpq_tls_role role;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	gnutls_datum_t alpn[DPQ_TLS_ALPN_MAX];
	unsigned int alpn_count;
	char *server_name;
	bool verify;
	bool self_signed;
	FILE *keylog;
	void (*log)(void *log_arg, const char *msg);
	void *log_arg;
};

struct dpq_tls {
	struct dpq_tls_ctx *ctx;
	gnutls_session_t session;
	const struct dpq_tls_callbacks *cb;
	void *arg;
	uint8_t *local_tp;
	size_t local_tp_len;
	bool peer_tp_seen;
	bool app_read_set, app_write_set;	/* 1-RTT secrets given */
	bool complete;
	bool failed;
	uint64_t error_code;
	char alpn[256];
	/* Server tickets (RFC 8446 §4.6.1): keys until the ClientHello
	 * chose one; a NewSessionTicket once complete. */
	uint8_t stek[2][DPQ_TLS_STEK_LEN];
	bool has_stek, has_stek_prev, ticket_sent, stek_chosen;
	bool nst_early;		/* client: the last ticket allows 0-RTT */
	/* Client: the first flight is held until the ClientHello call
	 * succeeded (GnuTLS may emit it and then fail on a cached
	 * session: the retry's ClientHello must be the only one). */
	bool holding;
	struct held_out {
		uint8_t level;
		bool write, is_secret;
		uint16_t suite;
		size_t len;
		uint8_t *data;
	} held[4];
	unsigned int nheld;
	uint32_t ticket_lifetime;
	/* 1-RTT CRYPTO bytes after completion, until they make whole
	 * post-handshake messages (post_hs_recv). */
	uint8_t *ph_buf;
	size_t ph_len, ph_cap;
};

/* 0-RTT anti-replay: GnuTLS's window and freshness check, and a table of
 * the PSK binders of accepted 0-RTT ClientHellos (see tls.h). */
#define AR_GRAVEYARD	8
#define AR_KEY_PREFIX	12	/* GnuTLS: window start, then the binder */
#define AR_FP_LEN	16
struct dpq_tls_antireplay {
	gnutls_anti_replay_t ar;
	/* Replaced objects that finished handshakes may still point to;
	 * freed with this one (restarts are rare: config changes). */
	gnutls_anti_replay_t grave[AR_GRAVEYARD];
	unsigned int ngrave;
	uint8_t prefix[AR_KEY_PREFIX];	/* window the table is for */
	bool prefix_set;
	uint8_t (*fp)[AR_FP_LEN];	/* cap slots; all-zero: empty */
	uint32_t cap, count, limit;
	struct dpq_tls_antireplay_stats st;
};

/* The clock of tickets (GnuTLS's gnutls_time and the key choice below);
 * tests move it. */
static long (*tls_time_fn)(void);

static long
tls_now(void)
{
	return tls_time_fn != NULL ? tls_time_fn() : (long)time(NULL);
}

static time_t
gnutls_time_wrap(time_t *t)
{
	time_t now = (time_t)tls_now();

	if (t != NULL)
		*t = now;
	return now;
}

void
dpq_tls_set_time_function(long (*fn)(void))
{
	tls_time_fn = fn;
	gnutls_global_set_time_function(fn != NULL ? gnutls_time_wrap : time);
}

static void
ctx_log(const struct dpq_tls_ctx *ctx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->log != NULL)
		ctx->log(ctx->log_arg, msg);
	else
		fprintf(stderr, "dpquic tls: %s\n", msg);
}

static uint16_t
suite_of_cipher(gnutls_cipher_algorithm_t c)
{
	switch (c) {
	case GNUTLS_CIPHER_AES_128_GCM:
		return DPQ_TLS_AES_128_GCM_SHA256;
	case GNUTLS_CIPHER_AES_256_GCM:
		return DPQ_TLS_AES_256_GCM_SHA384;
	case GNUTLS_CIPHER_CHACHA20_POLY1305:
		return DPQ_TLS_CHACHA20_POLY1305_SHA256;
	default:
		return 0;
	}
}

/* Build the GnuTLS priority string: TLS 1.3 only, no middlebox
 * compatibility mode (RFC 9001 §8.4), the AEADs ipsec-mb runs. */
static int
build_priority(const struct dpq_tls_ctx_conf *conf, char *buf, size_t len)
{
	static const struct {
		uint16_t suite;
		const char *name;
	} names[] = {
		{ DPQ_TLS_AES_128_GCM_SHA256, "+AES-128-GCM" },
		{ DPQ_TLS_AES_256_GCM_SHA384, "+AES-256-GCM" },
		{ DPQ_TLS_CHACHA20_POLY1305_SHA256, "+CHACHA20-POLY1305" },
	};
	size_t off;
	unsigned int i, j;

	off = snprintf(buf, len, "%%DISABLE_TLS13_COMPAT_MODE:NORMAL:"
			"-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL");
	if (conf->suite_count > 3)
		return -EINVAL;
	for (i = 0; i < (conf->suite_count ? conf->suite_count : 3); i++) {
		uint16_t s = conf->suite_count ? conf->suites[i] :
				names[i].suite;

		for (j = 0; j < 3; j++)
			if (names[j].suite == s)
				break;
		if (j == 3)
			return -EINVAL;
		off += snprintf(buf + off, off < len ? len - off : 0, ":%s",
				names[j].name);
	}
	return off < len ? 0 : -EINVAL;
}

/* A self-signed ECDSA P-256 certificate for name, valid a year. */
static int
make_self_signed(struct dpq_tls_ctx *ctx, const char *name)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	unsigned char serial[16];
	time_t now = time(NULL);
	int rc;

	if ((rc = gnutls_x509_privkey_init(&key)) < 0 ||
	    (rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
			GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
	    (rc = gnutls_x509_crt_init(&crt)) < 0 ||
	    (rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		goto out;
	serial[0] &= 0x7f;	/* a positive INTEGER */
	if ((rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
	    (rc = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
	    (rc = gnutls_x509_crt_set_expiration_time(crt,
			now + 365 * 86400)) < 0 ||
	    (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME,
			0, name, strlen(name))) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME,
			name, strlen(name), GNUTLS_FSAN_SET)) < 0 ||
	    (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (rc = gnutls_x509_crt_set_key_usage(crt,
			GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (rc = gnutls_certificate_set_x509_key(ctx->cred, &crt, 1, key)) < 0)
		goto out;
	ctx->self_signed = true;
	ctx_log(ctx, "no certificate given: generated a self-signed ECDSA "
			"P-256 certificate for \"%s\"", name);
out:
	if (rc < 0)
		ctx_log(ctx, "self-signed certificate: %s", gnutls_strerror(rc));
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	if (key != NULL)
		gnutls_x509_privkey_deinit(key);
	return rc < 0 ? -EIO : 0;
}

int
dpq_tls_ctx_create(const struct dpq_tls_ctx_conf *conf,
		struct dpq_tls_ctx **out)
{
	struct dpq_tls_ctx *ctx;
	char prio[256];
	const char *err_pos = NULL;
	unsigned int i;
	int rc;

	if (conf == NULL || out == NULL || conf->alpn_count == 0 ||
	    conf->alpn_count > DPQ_TLS_ALPN_MAX)
		return -EINVAL;
	if (conf->role == DPQ_TLS_SERVER &&
	    (conf->cert_file == NULL) != (conf->key_file == NULL))
		return -EINVAL;
	if (build_priority(conf, prio, sizeof(prio)) != 0)
		return -EINVAL;
	for (i = 0; i < conf->alpn_count; i++) {
		size_t l = conf->alpn[i] ? strlen(conf->alpn[i]) : 0;

		if (l == 0 || l > 255)	/* RFC 7301 §3.1 */
			return -EINVAL;
	}

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return -ENOMEM;
	ctx->role = conf->role;
	ctx->verify = conf->verify;
	ctx->log = conf->log;
	ctx->log_arg = conf->log_arg;

	for (i = 0; i < conf->alpn_count; i++) {
		ctx->alpn[i].data = (unsigned char *)strdup(conf->alpn[i]);
		if (ctx->alpn[i].data == NULL)
			goto nomem;
		ctx->alpn[i].size = strlen(conf->alpn[i]);
		ctx->alpn_count++;
	}
	if (conf->server_name != NULL) {
		ctx->server_name = strdup(conf->server_name);
		if (ctx->server_name == NULL)
			goto nomem;
	}

	rc = gnutls_priority_init(&ctx->prio, prio, &err_pos);
	if (rc < 0) {
		ctx_log(ctx, "priority \"%s\": %s", prio, gnutls_strerror(rc));
		goto fail;
	}
	rc = gnutls_certificate_allocate_credentials(&ctx->cred);
	if (rc < 0)
		goto fail;

	if (conf->role == DPQ_TLS_SERVER) {
		if (conf->cert_file != NULL) {
			rc = gnutls_certificate_set_x509_key_file(ctx->cred,
					conf->cert_file, conf->key_file,
					GNUTLS_X509_FMT_PEM);
			if (rc < 0) {
				ctx_log(ctx, "certificate %s / key %s: %s",
						conf->cert_file, conf->key_file,
						gnutls_strerror(rc));
				goto fail;
			}
		} else if (make_self_signed(ctx, conf->self_signed_name ?
				conf->self_signed_name : "localhost") != 0) {
			goto fail;
		}
	} else if (conf->verify) {
		rc = conf->ca_file != NULL ?
			gnutls_certificate_set_x509_trust_file(ctx->cred,
					conf->ca_file, GNUTLS_X509_FMT_PEM) :
			gnutls_certificate_set_x509_system_trust(ctx->cred);
		if (rc < 0) {
			ctx_log(ctx, "trust store %s: %s",
					conf->ca_file ? conf->ca_file : "(system)",
					gnutls_strerror(rc));
			goto fail;
		}
	}

	if (conf->keylog_file != NULL) {
		/* The key log decrypts every connection: owner-only from
		 * its creation whatever the umask, and never through a
		 * symbolic link someone else planted. */
		int fd = open(conf->keylog_file, O_WRONLY | O_APPEND |
				O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

		ctx->keylog = fd < 0 ? NULL : fdopen(fd, "a");
		if (ctx->keylog == NULL) {
			ctx_log(ctx, "keylog file %s: %s", conf->keylog_file,
					strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		setvbuf(ctx->keylog, NULL, _IOLBF, 0);
	}
	*out = ctx;
	return 0;

nomem:
	dpq_tls_ctx_destroy(ctx);
	return -ENOMEM;
fail:
	dpq_tls_ctx_destroy(ctx);
	return -EIO;
}

void
dpq_tls_ctx_destroy(struct dpq_tls_ctx *ctx)
{
	unsigned int i;

	if (ctx == NULL)
		return;
	for (i = 0; i < ctx->alpn_count; i++)
		free(ctx->alpn[i].data);
	if (ctx->prio != NULL)
		gnutls_priority_deinit(ctx->prio);
	if (ctx->cred != NULL)
		gnutls_certificate_free_credentials(ctx->cred);
	if (ctx->keylog != NULL)
		fclose(ctx->keylog);
	free(ctx->server_name);
	free(ctx);
}

bool
dpq_tls_ctx_self_signed(const struct dpq_tls_ctx *ctx)
{
	return ctx->self_signed;
}

/* ---- GnuTLS hooks ------------------------------------------------------ */

static void
tls_fail(struct dpq_tls *tls, uint64_t code)
{
	if (!tls->failed) {
		tls->failed = true;
		tls->error_code = code;
	}
}

/* Keep a callback's arguments while the first flight is held. */
static int
hold(struct dpq_tls *tls, bool is_secret, uint8_t level, bool write,
		uint16_t suite, const void *data, size_t len)
{
	struct held_out *h;

	if (tls->nheld == sizeof(tls->held) / sizeof(tls->held[0]))
		return -1;
	h = &tls->held[tls->nheld];
	h->data = malloc(len ? len : 1);
	if (h->data == NULL)
		return -1;
	memcpy(h->data, data, len);
	h->len = len;
	h->level = level;
	h->write = write;
	h->is_secret = is_secret;
	h->suite = suite;
	tls->nheld++;
	return 0;
}

static void
held_drop(struct dpq_tls *tls)
{
	unsigned int i;

	for (i = 0; i < tls->nheld; i++) {
		explicit_bzero(tls->held[i].data, tls->held[i].len);
		free(tls->held[i].data);
	}
	tls->nheld = 0;
	tls->holding = false;
}

/* Hand the held first flight to the owner, in order. */
static int
held_release(struct dpq_tls *tls)
{
	unsigned int i;
	int rc = 0;

	tls->holding = false;
	for (i = 0; i < tls->nheld && rc == 0; i++) {
		struct held_out *h = &tls->held[i];

		rc = h->is_secret ?
			tls->cb->on_secret(tls->arg,
				(enum dpq_tls_level)h->level, h->write,
				h->suite, h->data, h->len) :
			tls->cb->on_send(tls->arg,
				(enum dpq_tls_level)h->level, h->data, h->len);
	}
	held_drop(tls);
	return rc;
}

/* Secret hook: a new level's secrets. RFC 9001 §4.1.4: keys become
 * available in order; we pass each to the owner, who derives packet
 * protection keys. */
static int
secret_hook(gnutls_session_t s, gnutls_record_encryption_level_t level,
		const void *secret_read, const void *secret_write, size_t size)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);
	gnutls_cipher_algorithm_t c;
	uint16_t suite;

	c = level == GNUTLS_ENCRYPTION_LEVEL_EARLY ?
		gnutls_early_cipher_get(s) : gnutls_cipher_get(s);
	suite = suite_of_cipher(c);
	if (suite == 0) {
		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE + TLS_ALERT_INTERNAL_ERROR);
		return -1;
	}
	/* RFC 9001 §8.2: a server has read the ClientHello when handshake
	 * secrets appear; a client has read EncryptedExtensions when the
	 * 1-RTT secrets appear. Either without transport parameters is a
	 * missing_extension error. */
	if (!tls->peer_tp_seen &&
	    ((tls->ctx->role == DPQ_TLS_SERVER &&
	      level == GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE) ||
	     level == GNUTLS_ENCRYPTION_LEVEL_APPLICATION)) {
		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
				TLS_ALERT_MISSING_EXTENSION);
		return -1;
	}
	/* A second 1-RTT secret comes only from a TLS KeyUpdate, which QUIC
	 * forbids (RFC 9001 §6: connection error 0x010a). Refusing it here
	 * keeps the keys in use; the connection also refuses the message
	 * before it reaches TLS. */
	if (level == GNUTLS_ENCRYPTION_LEVEL_APPLICATION &&
	    ((secret_read != NULL && tls->app_read_set) ||
	     (secret_write != NULL && tls->app_write_set))) {
		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
				TLS_ALERT_UNEXPECTED_MESSAGE);
		return -1;
	}
	if (level == GNUTLS_ENCRYPTION_LEVEL_APPLICATION) {
		tls->app_read_set |= secret_read != NULL;
		tls->app_write_set |= secret_write != NULL;
	}
	if (tls->holding) {
		if ((secret_read != NULL && hold(tls, true, (uint8_t)level,
				false, suite, secret_read, size) != 0) ||
		    (secret_write != NULL && hold(tls, true, (uint8_t)level,
				true, suite, secret_write, size) != 0))
			goto cb_fail;
		return 0;
	}
	if (secret_read != NULL &&
	    tls->cb->on_secret(tls->arg, (enum dpq_tls_level)level, false,
			suite, secret_read, size) != 0)
		goto cb_fail;
	if (secret_write != NULL &&
	    tls->cb->on_secret(tls->arg, (enum dpq_tls_level)level, true,
			suite, secret_write, size) != 0)
		goto cb_fail;
	return 0;
cb_fail:
	tls_fail(tls, QUIC_CRYPTO_ERROR_BASE + TLS_ALERT_INTERNAL_ERROR);
	return -1;
}

/* Handshake hook: a message GnuTLS wants to send at level. */
static int
send_hook(gnutls_session_t s, gnutls_record_encryption_level_t level,
		gnutls_handshake_description_t htype, const void *data,
		size_t len)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);

	/* GnuTLS reports ChangeCipherSpec here too; QUIC has none (RFC 9001
	 * §8.4), and compat mode is disabled anyway. */
	if (htype == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC)
		return 0;
	if (tls->holding ? hold(tls, false, (uint8_t)level, false, 0, data,
			len) != 0 :
	    tls->cb->on_send(tls->arg, (enum dpq_tls_level)level, data,
			len) != 0) {
		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE + TLS_ALERT_INTERNAL_ERROR);
		return -1;
	}
	return 0;
}

/* Alert hook: GnuTLS is sending an alert; QUIC carries it as the error
 * code of CONNECTION_CLOSE (RFC 9001 §4.8), never as a TLS record. */
static int
alert_hook(gnutls_session_t s, gnutls_record_encryption_level_t level,
		gnutls_alert_level_t alert_level,
		gnutls_alert_description_t desc)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);

	(void)level;
	if (alert_level == GNUTLS_AL_FATAL || desc != GNUTLS_A_CLOSE_NOTIFY)
		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE + (uint8_t)desc);
	return 0;
}

static int
tp_send(gnutls_session_t s, gnutls_buffer_t extdata)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);

	if (gnutls_buffer_append_data(extdata, tls->local_tp,
			tls->local_tp_len) < 0)
		return GNUTLS_E_MEMORY_ERROR;
	return (int)tls->local_tp_len;
}

static int
tp_recv(gnutls_session_t s, const unsigned char *data, size_t len)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);
	uint64_t err;

	if (len > DPQ_TLS_TP_MAX) {
		tls_fail(tls, 0x08);	/* TRANSPORT_PARAMETER_ERROR */
		return GNUTLS_E_RECEIVED_ILLEGAL_EXTENSION;
	}
	err = tls->cb->on_peer_tparams(tls->arg, data, len);
	if (err != 0) {
		tls_fail(tls, err);
		return GNUTLS_E_RECEIVED_ILLEGAL_EXTENSION;
	}
	tls->peer_tp_seen = true;
	return 0;
}

/* No record layer: GnuTLS must never read or write the transport. */
static ssize_t
no_pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	gnutls_session_t s = p;

	(void)buf;
	(void)len;
	gnutls_transport_set_errno(s, EAGAIN);
	return -1;
}

static ssize_t
no_push(gnutls_transport_ptr_t p, const void *buf, size_t len)
{
	gnutls_session_t s = p;

	(void)buf;
	(void)len;
	gnutls_transport_set_errno(s, EIO);
	return -1;
}

/* NSS key log line: "LABEL <client_random> <secret>". */
static int
keylog_hook(gnutls_session_t s, const char *label,
		const gnutls_datum_t *secret)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);
	gnutls_datum_t crand, srand;
	char line[512];
	size_t off, i;

	if (tls->ctx->keylog == NULL)
		return 0;
	gnutls_session_get_random(s, &crand, &srand);
	off = snprintf(line, sizeof(line), "%s ", label);
	for (i = 0; i < crand.size && off + 3 < sizeof(line); i++)
		off += snprintf(line + off, sizeof(line) - off, "%02x",
				crand.data[i]);
	off += snprintf(line + off, sizeof(line) - off, " ");
	for (i = 0; i < secret->size && off + 3 < sizeof(line); i++)
		off += snprintf(line + off, sizeof(line) - off, "%02x",
				secret->data[i]);
	fprintf(tls->ctx->keylog, "%s\n", line);
	return 0;
}

/* ---- 0-RTT anti-replay ------------------------------------------------- */

static bool
fp_empty(const uint8_t *f)
{
	static const uint8_t zero[AR_FP_LEN];

	return memcmp(f, zero, AR_FP_LEN) == 0;
}

/* GnuTLS's database add function: store the ClientHello's binder, or
 * refuse 0-RTT if it was seen in this window or there is no room. */
static int
ar_add(void *ptr, time_t exp_time, const gnutls_datum_t *key,
		const gnutls_datum_t *data)
{
	struct dpq_tls_antireplay *ar = ptr;
	const uint8_t *fp;
	uint32_t i;

	(void)exp_time;
	(void)data;
	if (key->size < AR_KEY_PREFIX + AR_FP_LEN) {
		ar->st.full++;
		return GNUTLS_E_DB_ERROR;
	}
	/* A new window: the entries of the old one no longer matter (a
	 * ticket from before the window's start gets no 0-RTT at all). */
	if (!ar->prefix_set || memcmp(ar->prefix, key->data,
			AR_KEY_PREFIX) != 0) {
		memcpy(ar->prefix, key->data, AR_KEY_PREFIX);
		ar->prefix_set = true;
		memset(ar->fp, 0, (size_t)ar->cap * AR_FP_LEN);
		ar->count = 0;
	}
	/* The binder is an HMAC: uniform bytes, usable as they are. */
	fp = key->data + AR_KEY_PREFIX;
	if (fp_empty(fp)) {
		ar->st.full++;
		return GNUTLS_E_DB_ERROR;
	}
	i = ((uint32_t)fp[0] | (uint32_t)fp[1] << 8 | (uint32_t)fp[2] << 16 |
		(uint32_t)fp[3] << 24) & (ar->cap - 1);
	for (;; i = (i + 1) & (ar->cap - 1)) {
		if (fp_empty(ar->fp[i]))
			break;
		if (memcmp(ar->fp[i], fp, AR_FP_LEN) == 0) {
			ar->st.replayed++;
			return GNUTLS_E_DB_ENTRY_EXISTS;
		}
	}
	if (ar->count >= ar->limit) {
		ar->st.full++;
		return GNUTLS_E_DB_ERROR;
	}
	memcpy(ar->fp[i], fp, AR_FP_LEN);
	ar->count++;
	ar->st.accepted++;
	return 0;
}

static int
ar_setup(struct dpq_tls_antireplay *ar, uint32_t window_ms, uint32_t entries)
{
	uint32_t cap = 64;
	void *fp;

	if (window_ms == 0 || entries == 0 || entries > (1u << 28))
		return -EINVAL;
	while (cap < 2 * entries)
		cap <<= 1;
	fp = calloc(cap, AR_FP_LEN);
	if (fp == NULL)
		return -ENOMEM;
	if (gnutls_anti_replay_init(&ar->ar) < 0) {
		free(fp);
		return -EIO;
	}
	gnutls_anti_replay_set_window(ar->ar, window_ms);
	gnutls_anti_replay_set_add_function(ar->ar, ar_add);
	gnutls_anti_replay_set_ptr(ar->ar, ar);
	free(ar->fp);
	ar->fp = fp;
	ar->cap = cap;
	ar->limit = entries;
	ar->count = 0;
	ar->prefix_set = false;
	return 0;
}

int
dpq_tls_antireplay_create(uint32_t window_ms, uint32_t entries,
		struct dpq_tls_antireplay **out)
{
	struct dpq_tls_antireplay *ar;
	int rc;

	if (out == NULL)
		return -EINVAL;
	ar = calloc(1, sizeof(*ar));
	if (ar == NULL)
		return -ENOMEM;
	rc = ar_setup(ar, window_ms, entries);
	if (rc != 0) {
		free(ar);
		return rc;
	}
	*out = ar;
	return 0;
}

int
dpq_tls_antireplay_restart(struct dpq_tls_antireplay *ar, uint32_t window_ms,
		uint32_t entries)
{
	gnutls_anti_replay_t old;
	int rc;

	if (ar == NULL)
		return -EINVAL;
	old = ar->ar;
	rc = ar_setup(ar, window_ms, entries);
	if (rc != 0)
		return rc;
	/* Sessions that checked against the old one may still hold it. */
	if (ar->ngrave == AR_GRAVEYARD) {
		gnutls_anti_replay_deinit(ar->grave[0]);
		memmove(ar->grave, ar->grave + 1,
				(AR_GRAVEYARD - 1) * sizeof(ar->grave[0]));
		ar->ngrave--;
	}
	ar->grave[ar->ngrave++] = old;
	ar->st.restarts++;
	return 0;
}

void
dpq_tls_antireplay_destroy(struct dpq_tls_antireplay *ar)
{
	unsigned int i;

	if (ar == NULL)
		return;
	gnutls_anti_replay_deinit(ar->ar);
	for (i = 0; i < ar->ngrave; i++)
		gnutls_anti_replay_deinit(ar->grave[i]);
	free(ar->fp);
	free(ar);
}

void
dpq_tls_antireplay_get_stats(const struct dpq_tls_antireplay *ar,
		struct dpq_tls_antireplay_stats *st)
{
	*st = ar->st;
}

/* ---- ticket keys ----------------------------------------------------------- */

/*
 * GnuTLS 3.7 does not seal tickets under the key it is given but under
 * SHA3-512(T || key), T = unix time / (3 * expire_time) (its own STEK
 * rotation, lib/stek.c), and with one session per handshake it tries
 * only the current T. The ticket's first 16 bytes name the key used. So
 * before GnuTLS reads the ClientHello we compute those names for our
 * current and previous keys and this T and the one before, and give the
 * session the key (and an expire_time that makes GnuTLS land on the same
 * T) that sealed the client's ticket. A ticket of neither key gets the
 * current key: GnuTLS then ignores it (a full handshake).
 */
#define STEK_NAME_LEN	16

static void
stek_name(const uint8_t *stek, uint64_t t, uint8_t out[STEK_NAME_LEN])
{
	uint8_t tb[8], h[64];
	gnutls_hash_hd_t hd;
	int i;

	for (i = 0; i < 8; i++)
		tb[i] = (uint8_t)(t >> (56 - 8 * i));
	memset(out, 0, STEK_NAME_LEN);
	if (gnutls_hash_init(&hd, GNUTLS_DIG_SHA3_512) < 0)
		return;
	gnutls_hash(hd, tb, sizeof(tb));
	gnutls_hash(hd, stek, DPQ_TLS_STEK_LEN);
	gnutls_hash_deinit(hd, h);
	memcpy(out, h, STEK_NAME_LEN);
	explicit_bzero(h, sizeof(h));
}

/* The first PSK identity of a ClientHello body, or NULL (RFC 8446
 * §4.1.2, §4.2.11: pre_shared_key is the last extension). */
static const uint8_t *
ch_first_identity(const uint8_t *p, size_t n, size_t *len)
{
	const uint8_t *end = p + n, *ext_end;

	if (n < 2 + 32 + 1)
		return NULL;
	p += 2 + 32;				/* version, random */
	if ((size_t)(end - p) < 1u + p[0])
		return NULL;
	p += 1 + p[0];				/* session id */
	if (end - p < 2 || (size_t)(end - p) < 2u + (p[0] << 8 | p[1]))
		return NULL;
	p += 2 + (p[0] << 8 | p[1]);		/* cipher suites */
	if (end - p < 1 || (size_t)(end - p) < 1u + p[0])
		return NULL;
	p += 1 + p[0];				/* compression */
	if (end - p < 2)
		return NULL;
	ext_end = p + 2 + (p[0] << 8 | p[1]);
	if (ext_end > end)
		return NULL;
	p += 2;
	while (ext_end - p >= 4) {
		unsigned int type = p[0] << 8 | p[1], l = p[2] << 8 | p[3];

		if ((size_t)(ext_end - p - 4) < l)
			return NULL;
		if (type == 41 && l >= 4) {	/* pre_shared_key */
			const uint8_t *q = p + 4;
			size_t il = (size_t)(q[2] << 8 | q[3]);

			if (l < 4 + il)
				return NULL;
			*len = il;
			return q + 4;
		}
		p += 4 + l;
	}
	return NULL;
}

static int
ch_hook(gnutls_session_t s, unsigned int htype, unsigned int when,
		unsigned int incoming, const gnutls_datum_t *msg)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);
	uint64_t now = (uint64_t)tls_now(), period, t;
	uint32_t expire = tls->ticket_lifetime;
	const uint8_t *id;
	uint8_t name[STEK_NAME_LEN];
	gnutls_datum_t key;
	size_t id_len = 0;
	int k = 0, dt;

	(void)htype;
	(void)when;
	(void)incoming;
	/* Once: a second ClientHello (after HelloRetryRequest) carries the
	 * same ticket and must not move the expire_time chosen. */
	if (!tls->has_stek || tls->stek_chosen)
		return 0;
	tls->stek_chosen = true;
	period = 3ull * tls->ticket_lifetime;
	id = ch_first_identity(msg->data, msg->size, &id_len);
	if (id != NULL && id_len >= STEK_NAME_LEN) {
		for (dt = 0; dt < 2; dt++) {
			t = now / period - (uint64_t)dt;
			for (k = 0; k < 1 + tls->has_stek_prev; k++) {
				stek_name(tls->stek[k], t, name);
				if (memcmp(name, id, STEK_NAME_LEN) == 0)
					goto found;
			}
		}
	}
	k = 0;
	goto enable;
found:
	/* Sealed in the GnuTLS period before this one: an expire_time
	 * for which now falls in that period (only a little longer than
	 * the lifetime: T is large). */
	if (dt == 1 && t > 0)
		expire = (uint32_t)(now / (3 * t));
enable:
	gnutls_db_set_cache_expiration(s, (int)expire);
	key.data = tls->stek[k];
	key.size = DPQ_TLS_STEK_LEN;
	gnutls_session_ticket_enable_server(s, &key);
	explicit_bzero(tls->stek, sizeof(tls->stek));
	tls->has_stek_prev = false;
	return 0;
}

/* Does a NewSessionTicket body carry the early_data extension (RFC 8446
 * §4.6.1: the server allows 0-RTT with this ticket)? */
static bool
nst_allows_early(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n, *ext_end;

	if (n < 9)
		return false;
	p += 8;					/* lifetime, age_add */
	if ((size_t)(end - p) < 1u + p[0])
		return false;
	p += 1 + p[0];				/* nonce */
	if (end - p < 2 || (size_t)(end - p) < 2u + (p[0] << 8 | p[1]))
		return false;
	p += 2 + (p[0] << 8 | p[1]);		/* ticket */
	if (end - p < 2)
		return false;
	ext_end = p + 2 + (p[0] << 8 | p[1]);
	if (ext_end > end)
		return false;
	for (p += 2; ext_end - p >= 4; p += 4 + (p[2] << 8 | p[3]))
		if ((p[0] << 8 | p[1]) == 42)	/* early_data */
			return true;
	return false;
}

/*
 * Sessions leave as an envelope: "DPQS", version 1, reserved (2 bytes),
 * SHA-256 of the GnuTLS session data, the data. GnuTLS does not check
 * session data it is given, and truncated or altered data crashed it
 * here; the digest turns any damage done in storage into a full
 * handshake. (Not a MAC: whoever may write the client's cache may also
 * replace it.)
 */
#define SESS_MAGIC	"DPQS"
#define SESS_HDR	(4 + 2 + 2 + 32)

static uint8_t *
sess_wrap(const gnutls_datum_t *d, size_t *len)
{
	uint8_t *p = malloc(SESS_HDR + d->size);

	if (p == NULL)
		return NULL;
	memcpy(p, SESS_MAGIC, 4);
	p[4] = 0;
	p[5] = 1;
	p[6] = p[7] = 0;
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, d->data, d->size, p + 8) < 0) {
		free(p);
		return NULL;
	}
	memcpy(p + SESS_HDR, d->data, d->size);
	*len = SESS_HDR + d->size;
	return p;
}

/* The GnuTLS data inside an envelope, or -1 if it is not intact. */
static int
sess_open(const uint8_t *p, size_t n, gnutls_datum_t *d)
{
	uint8_t h[32];

	if (n <= SESS_HDR || memcmp(p, SESS_MAGIC, 4) != 0 || p[4] != 0 ||
	    p[5] != 1 || n - SESS_HDR > UINT32_MAX ||
	    gnutls_hash_fast(GNUTLS_DIG_SHA256, p + SESS_HDR, n - SESS_HDR,
			h) < 0 || gnutls_memcmp(h, p + 8, 32) != 0)
		return -1;
	d->data = (unsigned char *)(uintptr_t)(p + SESS_HDR);
	d->size = (unsigned int)(n - SESS_HDR);
	return 0;
}

/* Client: a NewSessionTicket. Before GnuTLS reads it: whether it allows
 * 0-RTT (GnuTLS reports a default size for tickets without the
 * extension); after: hand the session to the owner. */
static int
nst_hook(gnutls_session_t s, unsigned int htype, unsigned int when,
		unsigned int incoming, const gnutls_datum_t *msg)
{
	struct dpq_tls *tls = gnutls_session_get_ptr(s);
	gnutls_datum_t d = { NULL, 0 };

	(void)htype;
	(void)incoming;
	if (when == GNUTLS_HOOK_PRE) {
		tls->nst_early = msg != NULL &&
			nst_allows_early(msg->data, msg->size);
		return 0;
	}
	if (tls->cb->on_ticket == NULL ||
	    gnutls_session_get_data2(s, &d) < 0)
		return 0;
	{
		size_t len = 0;
		uint8_t *w = sess_wrap(&d, &len);

		if (w != NULL) {
			tls->cb->on_ticket(tls->arg, w, len, tls->nst_early);
			explicit_bzero(w, len);
			free(w);
		}
	}
	gnutls_memset(d.data, 0, d.size);
	gnutls_free(d.data);
	return 0;
}

/* ---- handshakes -------------------------------------------------------- */

/* Run the state machine as far as the input allows. */
static int
advance(struct dpq_tls *tls)
{
	int rc;

	if (tls->complete)
		return 0;
	rc = gnutls_handshake(tls->session);
	if (rc == 0) {
		gnutls_datum_t p;

		tls->complete = true;
		if (gnutls_alpn_get_selected_protocol(tls->session, &p) == 0 &&
		    p.size < sizeof(tls->alpn)) {
			memcpy(tls->alpn, p.data, p.size);
			tls->alpn[p.size] = '\0';
		} else {
			/* RFC 9001 §8.1: ALPN is mandatory. */
			tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
					TLS_ALERT_NO_APP_PROTOCOL);
			return -EPROTO;
		}
		/* One ticket for the client's next connection (RFC 8446
		 * §4.6.1), in 1-RTT CRYPTO data. Failing to make one costs
		 * the next connection a full handshake, nothing more. */
		if (tls->ctx->role == DPQ_TLS_SERVER && tls->has_stek &&
		    !tls->ticket_sent) {
			tls->ticket_sent = true;
			rc = gnutls_session_ticket_send(tls->session, 1, 0);
			if (rc < 0)
				ctx_log(tls->ctx, "NewSessionTicket: %s",
						gnutls_strerror(rc));
			if (tls->failed)
				return -EPROTO;
		}
		return 0;
	}
	if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED)
		return tls->failed ? -EPROTO : 0;
	if (!tls->failed) {
		gnutls_alert_level_t lvl;
		int alert = gnutls_error_to_alert(rc, (int *)&lvl);

		tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
				(uint8_t)(alert >= 0 ? alert :
					TLS_ALERT_INTERNAL_ERROR));
	}
	return -EPROTO;
}

int
dpq_tls_new(struct dpq_tls_ctx *ctx, const struct dpq_tls_callbacks *cb,
		void *arg, const uint8_t *local_tp, size_t local_tp_len,
		struct dpq_tls **out)
{
	return dpq_tls_new_opts(ctx, cb, arg, local_tp, local_tp_len, NULL,
			out);
}

/* Server: tickets and 0-RTT; client: the session to resume. Before the
 * first gnutls_handshake(). */
static int
session_opts(struct dpq_tls *tls, const struct dpq_tls_session_opts *o)
{
	gnutls_session_t s = tls->session;
	int rc;

	if (tls->ctx->role == DPQ_TLS_SERVER) {
		if (o == NULL || o->stek == NULL)
			return 0;
		memcpy(tls->stek[0], o->stek, DPQ_TLS_STEK_LEN);
		if (o->stek_prev != NULL) {
			memcpy(tls->stek[1], o->stek_prev, DPQ_TLS_STEK_LEN);
			tls->has_stek_prev = true;
		}
		tls->has_stek = true;
		tls->ticket_lifetime = o->ticket_lifetime_s ?
			o->ticket_lifetime_s : 43200;
		if (tls->ticket_lifetime > 604800)	/* RFC 8446 §4.6.1 */
			tls->ticket_lifetime = 604800;
		gnutls_db_set_cache_expiration(s, (int)tls->ticket_lifetime);
		gnutls_handshake_set_hook_function(s,
				GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE,
				ch_hook);
		if (o->early_data && o->antireplay != NULL) {
			gnutls_anti_replay_enable(s, o->antireplay->ar);
			/* RFC 9001 §4.6.1: 0xffffffff in the ticket. */
			gnutls_record_set_max_early_data_size(s, 0xffffffffu);
		}
		return 0;
	}
	if (tls->cb->on_ticket != NULL)
		gnutls_handshake_set_hook_function(s,
				GNUTLS_HANDSHAKE_NEW_SESSION_TICKET,
				GNUTLS_HOOK_BOTH, nst_hook);
	if (o == NULL || o->session == NULL || o->session_len == 0)
		return 0;
	{
		gnutls_datum_t d;

		if (sess_open(o->session, o->session_len, &d) != 0) {
			ctx_log(tls->ctx, "cached session damaged: ignored");
			return 0;
		}
		rc = gnutls_session_set_data(s, d.data, d.size);
	}
	if (rc < 0) {
		/* A cached session GnuTLS does not take (corrupt, another
		 * version): a full handshake instead. */
		ctx_log(tls->ctx, "cached session not usable: %s",
				gnutls_strerror(rc));
	}
	return 0;
}

int
dpq_tls_new_opts(struct dpq_tls_ctx *ctx, const struct dpq_tls_callbacks *cb,
		void *arg, const uint8_t *local_tp, size_t local_tp_len,
		const struct dpq_tls_session_opts *opts, struct dpq_tls **out)
{
	struct dpq_tls *tls;
	unsigned int flags;
	int rc;

	if (ctx == NULL || cb == NULL || cb->on_secret == NULL ||
	    cb->on_send == NULL || cb->on_peer_tparams == NULL ||
	    out == NULL || local_tp_len > DPQ_TLS_TP_MAX ||
	    (local_tp == NULL && local_tp_len != 0))
		return -EINVAL;
	tls = calloc(1, sizeof(*tls));
	if (tls == NULL)
		return -ENOMEM;
	tls->ctx = ctx;
	tls->cb = cb;
	tls->arg = arg;
	tls->local_tp = malloc(local_tp_len ? local_tp_len : 1);
	if (tls->local_tp == NULL) {
		free(tls);
		return -ENOMEM;
	}
	if (local_tp_len != 0)
		memcpy(tls->local_tp, local_tp, local_tp_len);
	tls->local_tp_len = local_tp_len;

	/* RFC 9001 §8.3: no EndOfEarlyData in QUIC. Tickets are sent by
	 * advance() at completion, not by GnuTLS on its own. */
	flags = (ctx->role == DPQ_TLS_SERVER ? GNUTLS_SERVER |
		GNUTLS_NO_AUTO_SEND_TICKET : GNUTLS_CLIENT) |
		GNUTLS_NO_END_OF_EARLY_DATA;
	if (ctx->role == DPQ_TLS_SERVER && (opts == NULL || opts->stek == NULL))
		flags |= GNUTLS_NO_TICKETS;
	if (opts != NULL && ((ctx->role == DPQ_TLS_SERVER && opts->stek &&
			opts->early_data && opts->antireplay != NULL) ||
			(ctx->role == DPQ_TLS_CLIENT &&
			 opts->offer_early_data)))
		flags |= GNUTLS_ENABLE_EARLY_DATA;
	rc = gnutls_init(&tls->session, flags);
	if (rc < 0)
		goto fail;
	gnutls_session_set_ptr(tls->session, tls);
	if ((rc = gnutls_priority_set(tls->session, ctx->prio)) < 0 ||
	    (rc = gnutls_credentials_set(tls->session, GNUTLS_CRD_CERTIFICATE,
			ctx->cred)) < 0 ||
	    (rc = gnutls_alpn_set_protocols(tls->session, ctx->alpn,
			ctx->alpn_count, GNUTLS_ALPN_MANDATORY)) < 0)
		goto fail;
	if (ctx->role == DPQ_TLS_CLIENT && ctx->server_name != NULL) {
		rc = gnutls_server_name_set(tls->session, GNUTLS_NAME_DNS,
				ctx->server_name, strlen(ctx->server_name));
		if (rc < 0)
			goto fail;
	}
	if (ctx->role == DPQ_TLS_CLIENT && ctx->verify)
		gnutls_session_set_verify_cert(tls->session, ctx->server_name,
				0);
	gnutls_handshake_set_secret_function(tls->session, secret_hook);
	gnutls_handshake_set_read_function(tls->session, send_hook);
	gnutls_alert_set_read_function(tls->session, alert_hook);
	rc = gnutls_session_ext_register(tls->session,
			"quic_transport_parameters", DPQ_TLS_EXT_QUIC_TP,
			GNUTLS_EXT_TLS, tp_recv, tp_send, NULL, NULL, NULL,
			GNUTLS_EXT_FLAG_TLS | GNUTLS_EXT_FLAG_CLIENT_HELLO |
			GNUTLS_EXT_FLAG_EE);
	if (rc < 0)
		goto fail;
	gnutls_transport_set_ptr(tls->session, tls->session);
	gnutls_transport_set_pull_function(tls->session, no_pull);
	gnutls_transport_set_push_function(tls->session, no_push);
	/* Always our hook: GnuTLS's default one writes the secrets to the
	 * file named by SSLKEYLOGFILE, which keys must never reach unless
	 * the configuration asks (keylog_file). */
	gnutls_session_set_keylog_function(tls->session, keylog_hook);
	rc = session_opts(tls, opts);
	if (rc < 0)
		goto fail;

	/* A client's first gnutls_handshake() emits the ClientHello, held
	 * until the call succeeded. */
	tls->holding = ctx->role == DPQ_TLS_CLIENT;
	if (ctx->role == DPQ_TLS_CLIENT &&
	    (advance(tls) != 0 || held_release(tls) != 0)) {
		uint64_t code = tls->error_code;

		dpq_tls_free(tls);
		/* GnuTLS refuses some cached sessions only here (an expired
		 * ticket: internal_error): a full handshake instead. */
		if (opts != NULL && opts->session != NULL) {
			struct dpq_tls_session_opts o = *opts;

			ctx_log(ctx, "cached session refused: full handshake");
			o.session = NULL;
			o.session_len = 0;
			o.offer_early_data = false;
			return dpq_tls_new_opts(ctx, cb, arg, local_tp,
					local_tp_len, &o, out);
		}
		ctx_log(ctx, "ClientHello: error 0x%llx",
				(unsigned long long)code);
		return -EPROTO;
	}
	*out = tls;
	return 0;
fail:
	ctx_log(ctx, "session setup: %s", gnutls_strerror(rc));
	dpq_tls_free(tls);
	return -EIO;
}

void
dpq_tls_free(struct dpq_tls *tls)
{
	if (tls == NULL)
		return;
	if (tls->session != NULL)
		gnutls_deinit(tls->session);
	held_drop(tls);
	free(tls->local_tp);
	free(tls->ph_buf);
	explicit_bzero(tls->stek, sizeof(tls->stek));
	free(tls);
}

/* A TLS handshake message's length (RFC 8446 §4: type, uint24 length)
 * beyond which a post-handshake message is refused: a NewSessionTicket
 * carries a ticket of at most 2^16-1 bytes, a nonce of at most 255 and a
 * few extensions. */
#define POST_HS_MAX	(70u << 10)

/*
 * Post-handshake messages (NewSessionTicket) at the 1-RTT level, given
 * to GnuTLS one whole message at a time. GnuTLS (3.7) takes such a
 * message only whole: handed the first part of a ticket it fails with an
 * internal error (tests/control/test_resume.c test_ticket_in_pieces),
 * and QUIC delivers CRYPTO bytes as they arrive: a ticket split over two
 * packets, one lost and sent again, reached dpquic-client in two parts
 * and it closed the connection with internal_error (fec_daemon, 3% loss,
 * 1 run in about 50). RFC 9001 §4.1.3: CRYPTO data is a byte stream, so
 * the receiver reassembles messages, not the sender's packets.
 */
static int
post_hs_recv(struct dpq_tls *tls, const uint8_t *data, size_t len)
{
	size_t need, off = 0;
	int rc;

	if (tls->ph_len + len > tls->ph_cap) {
		size_t cap = tls->ph_cap ? tls->ph_cap : 512;
		uint8_t *b;

		while (cap < tls->ph_len + len)
			cap *= 2;
		if (cap > POST_HS_MAX + 4)
			cap = POST_HS_MAX + 4;
		if (cap < tls->ph_len + len) {
			tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
					TLS_ALERT_DECODE_ERROR);
			return -EPROTO;
		}
		b = realloc(tls->ph_buf, cap);
		if (b == NULL)
			return -ENOMEM;
		tls->ph_buf = b;
		tls->ph_cap = cap;
	}
	memcpy(tls->ph_buf + tls->ph_len, data, len);
	tls->ph_len += len;
	while (tls->ph_len - off >= 4) {
		const uint8_t *m = tls->ph_buf + off;

		need = (size_t)m[1] << 16 | (size_t)m[2] << 8 | m[3];
		if (need > POST_HS_MAX) {
			tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
					TLS_ALERT_DECODE_ERROR);
			return -EPROTO;
		}
		need += 4;
		if (tls->ph_len - off < need)
			break;
		rc = gnutls_handshake_write(tls->session,
				GNUTLS_ENCRYPTION_LEVEL_APPLICATION, m, need);
		if (rc < 0) {
			int alert = gnutls_error_to_alert(rc, NULL);

			tls_fail(tls, QUIC_CRYPTO_ERROR_BASE + (uint8_t)(
					alert >= 0 ? alert :
					TLS_ALERT_INTERNAL_ERROR));
			return -EPROTO;
		}
		off += need;
	}
	memmove(tls->ph_buf, tls->ph_buf + off, tls->ph_len - off);
	tls->ph_len -= off;
	return tls->failed ? -EPROTO : 0;
}

int
dpq_tls_recv(struct dpq_tls *tls, enum dpq_tls_level level,
		const uint8_t *data, size_t len)
{
	int rc;

	if (tls == NULL || (unsigned int)level >= DPQ_TLS_LEVELS ||
	    (data == NULL && len != 0))
		return -EINVAL;
	if (tls->failed)
		return -EPROTO;
	if (len > 0 && tls->complete && level == DPQ_TLS_LEVEL_APP)
		return post_hs_recv(tls, data, len);
	if (len > 0) {
		rc = gnutls_handshake_write(tls->session,
				(gnutls_record_encryption_level_t)level,
				data, len);
		if (rc < 0) {
			if (!tls->failed) {
				int alert = gnutls_error_to_alert(rc, NULL);

				tls_fail(tls, QUIC_CRYPTO_ERROR_BASE +
					(uint8_t)(alert >= 0 ? alert :
						TLS_ALERT_INTERNAL_ERROR));
			}
			return -EPROTO;
		}
	}
	return advance(tls);
}

bool
dpq_tls_handshake_complete(const struct dpq_tls *tls)
{
	return tls->complete && !tls->failed;
}

uint64_t
dpq_tls_error_code(const struct dpq_tls *tls)
{
	return tls->failed ? tls->error_code : 0;
}

const char *
dpq_tls_alpn(const struct dpq_tls *tls)
{
	return tls->alpn;
}

uint16_t
dpq_tls_cipher_suite(const struct dpq_tls *tls)
{
	return suite_of_cipher(gnutls_cipher_get(tls->session));
}

bool
dpq_tls_resumed(const struct dpq_tls *tls)
{
	return gnutls_session_is_resumed(tls->session) != 0;
}

bool
dpq_tls_early_data_accepted(const struct dpq_tls *tls)
{
	return (gnutls_session_get_flags(tls->session) &
		GNUTLS_SFLAGS_EARLY_DATA) != 0;
}

const char *
dpq_tls_alpn_now(struct dpq_tls *tls)
{
	gnutls_datum_t p;

	if (tls->alpn[0] == '\0' &&
	    gnutls_alpn_get_selected_protocol(tls->session, &p) == 0 &&
	    p.size < sizeof(tls->alpn)) {
		memcpy(tls->alpn, p.data, p.size);
		tls->alpn[p.size] = '\0';
	}
	return tls->alpn;
}
