/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_tls runs the TLS 1.3 handshake of one QUIC connection (RFC 9001 §4)
 * on GnuTLS's QUIC interfaces, with no TLS record layer: the owner feeds
 * the CRYPTO stream bytes it received per encryption level, and receives
 * through callbacks the handshake bytes to send per level, the traffic
 * secrets as they become available (the shard derives packet keys from
 * them, RFC 9001 §5.1), the peer's transport parameters (RFC 9001 §8.2,
 * extension 0x39) and the alert that ends a failed handshake.
 *
 * A struct dpq_tls_ctx holds what all handshakes of a role share:
 * credentials, ALPN list, cipher suites. It is built once and read-only
 * after that. A struct dpq_tls is one handshake. Both belong to the
 * management thread (mgmt only): public-key work never runs on a shard.
 *
 * Return codes: 0 on success; -EINVAL bad argument; -ENOMEM; -EIO a GnuTLS
 * failure at setup (logged through the ctx's log callback);
 * -EPROTO the handshake failed: dpq_tls_error_code() gives the QUIC error
 * to close with: CRYPTO_ERROR 0x100 + TLS alert (RFC 9001 §4.8), or the
 * transport error the owner's on_peer_tparams returned.
 */
#ifndef DPQ_CONTROL_TLS_H
#define DPQ_CONTROL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Encryption levels (RFC 9001 §4.1.3), numbered as GnuTLS does. */
enum dpq_tls_level {
	DPQ_TLS_LEVEL_INITIAL = 0,
	DPQ_TLS_LEVEL_EARLY = 1,	/* 0-RTT */
	DPQ_TLS_LEVEL_HANDSHAKE = 2,
	DPQ_TLS_LEVEL_APP = 3,		/* 1-RTT */
};
#define DPQ_TLS_LEVELS 4

/* TLS 1.3 cipher suites (DPQ_TLS_*): dataplane/crypto/suites.h */
#include "dataplane/crypto/suites.h"

/* QUIC transport parameters TLS extension (RFC 9001 §8.2). */
#define DPQ_TLS_EXT_QUIC_TP	0x39
/* Largest transport-parameter blob accepted from a peer. */
#define DPQ_TLS_TP_MAX		4096
/* Largest ALPN list (protocols) in a ctx. */
#define DPQ_TLS_ALPN_MAX	8

enum dpq_tls_role {
	DPQ_TLS_CLIENT,
	DPQ_TLS_SERVER,
};

/* Callbacks to the handshake's owner; arg is given to dpq_tls_new(). A
 * non-zero return from on_secret or on_send fails the handshake with
 * internal_error. */
struct dpq_tls_callbacks {
	/* A secret is ready. read: the key for packets we receive at level;
	 * write: for packets we send. cipher_suite is one of DPQ_TLS_*. */
	int (*on_secret)(void *arg, enum dpq_tls_level level, bool write,
			uint16_t cipher_suite, const uint8_t *secret,
			size_t len);
	/* Handshake bytes to send in CRYPTO frames at level, in order. */
	int (*on_send)(void *arg, enum dpq_tls_level level,
			const uint8_t *data, size_t len);
	/* The peer's transport parameters, raw (decode with dpq_tparams).
	 * Return 0 to accept, or the QUIC transport error to close with
	 * (TRANSPORT_PARAMETER_ERROR, RFC 9000 §7.4). */
	uint64_t (*on_peer_tparams)(void *arg, const uint8_t *data,
			size_t len);
};

struct dpq_tls_ctx_conf {
	enum dpq_tls_role role;
	/* ALPN protocol names in preference order (RFC 9001 §8.1 makes ALPN
	 * mandatory: a handshake without a common one fails with
	 * no_application_protocol). */
	const char *alpn[DPQ_TLS_ALPN_MAX];
	unsigned int alpn_count;
	/* Cipher suites to offer/accept (DPQ_TLS_*; 0 count: all three). */
	uint16_t suites[3];
	unsigned int suite_count;
	/* Server: PEM certificate chain and key files. NULL for both:
	 * generate a self-signed ECDSA P-256 certificate for
	 * self_signed_name (and say so through log). */
	const char *cert_file;
	const char *key_file;
	const char *self_signed_name;
	/* Client: SNI and the name checked in the certificate. */
	const char *server_name;
	/* Client: CA file to verify against (NULL: system trust store).
	 * verify false accepts any certificate (tests, demos). */
	const char *ca_file;
	bool verify;
	/* Append NSS key log lines here (Wireshark's format); NULL: off,
	 * whatever the environment says (GnuTLS's own SSLKEYLOGFILE writer
	 * is replaced). Opened at ctx creation in append mode, created
	 * 0600, never through a symbolic link. */
	const char *keylog_file;
	/* Diagnostics; NULL: stderr. */
	void (*log)(void *log_arg, const char *msg);
	void *log_arg;
};

struct dpq_tls_ctx;
struct dpq_tls;

/* Build a shared context. Returns 0 and *out, or a negative errno. */
int dpq_tls_ctx_create(const struct dpq_tls_ctx_conf *conf,
		struct dpq_tls_ctx **out);
void dpq_tls_ctx_destroy(struct dpq_tls_ctx *ctx);
/* True when the server certificate was generated, not loaded. */
bool dpq_tls_ctx_self_signed(const struct dpq_tls_ctx *ctx);

/* Start a handshake. local_tp is our encoded transport parameters (copied).
 * A client sends its ClientHello (through on_send) in this call. */
int dpq_tls_new(struct dpq_tls_ctx *ctx, const struct dpq_tls_callbacks *cb,
		void *arg, const uint8_t *local_tp, size_t local_tp_len,
		struct dpq_tls **out);
void dpq_tls_free(struct dpq_tls *tls);

/* Feed CRYPTO bytes received at level, in stream order, and advance the
 * handshake. Returns 0 (possibly still waiting for more) or -EPROTO. */
int dpq_tls_recv(struct dpq_tls *tls, enum dpq_tls_level level,
		const uint8_t *data, size_t len);

bool dpq_tls_handshake_complete(const struct dpq_tls *tls);
/* The QUIC error code that failed the handshake (0 when none): 0x100 +
 * TLS alert, or the transport error from on_peer_tparams. */
uint64_t dpq_tls_error_code(const struct dpq_tls *tls);
/* Negotiated ALPN (NUL-terminated; "" before it is known). */
const char *dpq_tls_alpn(const struct dpq_tls *tls);
/* Negotiated cipher suite (DPQ_TLS_*; 0 before it is known). */
uint16_t dpq_tls_cipher_suite(const struct dpq_tls *tls);

#endif /* DPQ_CONTROL_TLS_H */
