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
	/* Client, optional: a NewSessionTicket arrived (after the
	 * handshake). data is what to give dpq_tls_session_opts.session to
	 * resume later (GnuTLS session data: ticket, secrets, the server's
	 * 0-RTT allowance); early_data: the ticket allows 0-RTT (RFC 9001
	 * §4.6.1). Secret: store it like a key. */
	void (*on_ticket)(void *arg, const uint8_t *data, size_t len,
			bool early_data);
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
struct dpq_tls_antireplay;

/* GnuTLS's session-ticket key (STEK) size. */
#define DPQ_TLS_STEK_LEN	64

/*
 * Resumption and 0-RTT of one handshake (RFC 8446 §2.2, §2.3, §4.6.1;
 * RFC 9001 §4.6). Server: the ticket keys (current seals new tickets,
 * both open them: the ClientHello's ticket picks the key), the ticket
 * lifetime, and 0-RTT, which needs an anti-replay recorder; a server
 * with a ticket key sends one NewSessionTicket when its handshake
 * completes. Client: a session to resume (from on_ticket) and whether
 * to offer 0-RTT with it.
 */
struct dpq_tls_session_opts {
	/* server */
	const uint8_t *stek;		/* DPQ_TLS_STEK_LEN; NULL: no tickets */
	const uint8_t *stek_prev;	/* NULL: none */
	uint32_t ticket_lifetime_s;	/* 1..604800; 0: 43200 */
	bool early_data;		/* accept 0-RTT (needs antireplay) */
	struct dpq_tls_antireplay *antireplay;
	/* client: a session from on_ticket. It carries a digest: one
	 * damaged in storage (truncated, altered) is ignored, a full
	 * handshake follows (GnuTLS does not check session data itself,
	 * and damaged data crashed it) */
	const uint8_t *session;		/* NULL: a full handshake */
	size_t session_len;
	bool offer_early_data;		/* 0-RTT if the ticket allows it */
};

/*
 * 0-RTT anti-replay (RFC 8446 §8.2 ClientHello recording with the §8.3
 * freshness check), for all handshakes of one server: GnuTLS checks that
 * the client's view of the ticket age matches its own within the window
 * and that the ticket was issued after recording started; this object
 * remembers the PSK binder of every ClientHello whose 0-RTT was
 * accepted in the current window (entries, open addressing) and refuses
 * the same binder again. A full table refuses 0-RTT (the handshake goes
 * on as a 1-RTT resumption): never a replay, at worst a round trip.
 * Recording restarts every window (GnuTLS rolls it over); restart()
 * starts it anew at once: tickets issued before that resume without
 * 0-RTT (after a change of the promises 0-RTT relies on). mgmt only.
 */
struct dpq_tls_antireplay_stats {
	uint64_t accepted, replayed, full, restarts;
};
int dpq_tls_antireplay_create(uint32_t window_ms, uint32_t entries,
		struct dpq_tls_antireplay **out);
void dpq_tls_antireplay_destroy(struct dpq_tls_antireplay *ar);
int dpq_tls_antireplay_restart(struct dpq_tls_antireplay *ar,
		uint32_t window_ms, uint32_t entries);
void dpq_tls_antireplay_get_stats(const struct dpq_tls_antireplay *ar,
		struct dpq_tls_antireplay_stats *st);

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
/* dpq_tls_new with resumption and 0-RTT options (NULL: none). */
int dpq_tls_new_opts(struct dpq_tls_ctx *ctx,
		const struct dpq_tls_callbacks *cb, void *arg,
		const uint8_t *local_tp, size_t local_tp_len,
		const struct dpq_tls_session_opts *opts, struct dpq_tls **out);
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
/* The handshake resumed a session (a ticket was accepted: no
 * certificate was sent or checked). */
bool dpq_tls_resumed(const struct dpq_tls *tls);
/* 0-RTT was accepted: server: we took the client's early data; client:
 * the server took ours (known at completion). */
bool dpq_tls_early_data_accepted(const struct dpq_tls *tls);
/* The ALPN chosen so far: a server knows it once the ClientHello is
 * read (before completion, which 0-RTT data needs), a client at
 * completion. "" if none yet. */
const char *dpq_tls_alpn_now(struct dpq_tls *tls);

/* Tests: replace the clock GnuTLS and the ticket key choice use (unix
 * seconds); NULL restores time(). Not thread safe: before handshakes. */
void dpq_tls_set_time_function(long (*fn)(void));

#endif /* DPQ_CONTROL_TLS_H */
