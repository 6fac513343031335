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
};

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
	if (tls->cb->on_send(tls->arg, (enum dpq_tls_level)level, data,
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

	/* RFC 9001 §8.3: no EndOfEarlyData in QUIC. */
	flags = (ctx->role == DPQ_TLS_SERVER ? GNUTLS_SERVER : GNUTLS_CLIENT) |
		GNUTLS_NO_END_OF_EARLY_DATA;
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

	/* A client's first gnutls_handshake() emits the ClientHello. */
	if (ctx->role == DPQ_TLS_CLIENT && advance(tls) != 0) {
		ctx_log(ctx, "ClientHello: error 0x%llx",
				(unsigned long long)tls->error_code);
		dpq_tls_free(tls);
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
	free(tls->local_tp);
	free(tls);
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
	if (len > 0) {
		/* After completion this also processes post-handshake
		 * messages (NewSessionTicket) at the 1-RTT level. */
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
