/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_srvcfg is the server config of DESIGN §1 and §5: one versioned
 * object, owned by the management thread, holding what every handshake
 * and every shard of a server must agree on, and what the servers of a
 * fleet share so that they accept each other's tickets and tokens:
 *
 *   session-ticket encryption keys (STEK, GnuTLS's 64-byte ticket key):
 *     current and previous; a ticket sealed under either resumes
 *   address-validation token keys (AES-128-GCM, token.h): current and
 *     previous, each with the 6-bit id written into tokens
 *   policies: 0-RTT on/off and its limits, ticket and token lifetimes,
 *     NEW_TOKEN issuing, and the transport parameters that 0-RTT depends
 *     on (RFC 9000 §7.4.1)
 *
 * Keys come from a secret: the bytes of a key file (32-64 random bytes,
 * raw or hex; the file must not be readable by group or others) or, with
 * no file, random bytes drawn at start. A key is never the secret itself
 * but HKDF-SHA256(secret, label, period), period = floor(unix time /
 * rotation). So servers given the same key file derive the same keys at
 * the same time without talking to each other, and rotate together on
 * the schedule (current = period p, previous = p - 1).
 *
 * Rotating on command (dpq_srvcfg_rotate, `dpquic-ctl rotate-keys`): the
 * current key becomes the previous one and a new current key is derived
 * from a new secret: the key file read again (the operator writes a new
 * secret to every server's file first: an unchanged file is refused, as
 * rotating to the same key would be a no-op), or fresh random bytes when
 * there is no file. Anything sealed under the key two rotations back is
 * refused from then on.
 *
 * Every change makes a new version (a number that only grows); the
 * management thread hands versions to the shards (token keys, NEW_TOKEN
 * policy) and uses them for new handshakes (ticket keys, 0-RTT policy).
 * early_epoch grows when a change could break a promise made to clients
 * holding tickets (0-RTT turned on again after off, a smaller limit in
 * the remembered transport parameters): tickets issued before it may
 * still resume, but without 0-RTT (RFC 9000 §7.4.1: "A server MUST
 * reject 0-RTT data if the restored values for transport parameters
 * cannot be supported").
 *
 * Thread: not thread safe; the management thread owns it (mgmt only).
 * Pure apart from reading key files: no DPDK, GnuTLS for HKDF.
 *
 * Return codes: 0 or a negative errno; err gets one line for a person.
 */
#ifndef DPQ_CONTROL_SRVCFG_H
#define DPQ_CONTROL_SRVCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DPQ_SRVCFG_STEK_LEN		64	/* GnuTLS ticket key */
#define DPQ_SRVCFG_TOKEN_KEY_LEN	16	/* DPQ_TOKEN_KEY_LEN */
#define DPQ_SRVCFG_SECRET_MIN		32
#define DPQ_SRVCFG_SECRET_MAX		64
#define DPQ_SRVCFG_ERR_MAX		256
/* RFC 8446 §4.6.1: a ticket lives at most 7 days. */
#define DPQ_SRVCFG_TICKET_LIFETIME_MAX	(7u * 86400)

/* What rotate acts on. */
#define DPQ_SRVCFG_TICKETS	0x1
#define DPQ_SRVCFG_TOKENS	0x2

/* The server's transport parameters that a client remembers for 0-RTT
 * and that must not shrink while 0-RTT is accepted (RFC 9000 §7.4.1). */
struct dpq_srvcfg_tp {
	uint64_t active_connection_id_limit;
	uint64_t initial_max_data;
	uint64_t initial_max_stream_data_bidi_local;
	uint64_t initial_max_stream_data_bidi_remote;
	uint64_t initial_max_stream_data_uni;
	uint64_t initial_max_streams_bidi;
	uint64_t initial_max_streams_uni;
};

struct dpq_srvcfg_policy {
	/* tickets and 0-RTT */
	uint32_t ticket_lifetime_s;	/* 1..DPQ_SRVCFG_TICKET_LIFETIME_MAX */
	bool early_data;		/* accept 0-RTT */
	uint64_t max_early_data;	/* 0-RTT bytes a connection takes */
	uint32_t replay_window_ms;	/* 0-RTT anti-replay window */
	uint32_t replay_entries;	/* ClientHellos remembered in it */
	/* address-validation tokens */
	bool new_token;			/* send NEW_TOKEN after handshakes */
	uint64_t token_lifetime_us;	/* NEW_TOKEN tokens */
	uint64_t retry_token_lifetime_us;
	uint8_t token_v4_prefix;	/* 1..32 */
	uint8_t token_v6_prefix;	/* 1..128 */
	struct dpq_srvcfg_tp tp;
};

struct dpq_srvcfg_conf {
	const char *ticket_key_file;	/* NULL: a random secret */
	const char *token_key_file;
	uint64_t ticket_rotation_s;	/* 0: rotate only on command */
	uint64_t token_rotation_s;
	struct dpq_srvcfg_policy policy;
};

/* One version: everything the handshakes and shards use. */
struct dpq_srvcfg_version {
	uint64_t version;		/* 1, 2, ... */
	uint64_t early_epoch;		/* see above */
	/* [0] current, [1] previous (valid when has_prev) */
	uint8_t stek[2][DPQ_SRVCFG_STEK_LEN];
	bool stek_has_prev;
	uint8_t token_key[2][DPQ_SRVCFG_TOKEN_KEY_LEN];
	uint8_t token_id[2];		/* 0..63, different */
	bool token_has_prev;
	/* Short public names of the keys, for logs and dpquic-ctl: the
	 * first bytes of a hash of the key, never key bytes. */
	char stek_name[2][9];
	char token_name[2][9];
	struct dpq_srvcfg_policy policy;
};

struct dpq_srvcfg;

/* Defaults: 12 h rotations and ticket lifetime, 0-RTT on, 1 MiB of early
 * data, a 10 min anti-replay window of 65536 ClientHellos, NEW_TOKEN on,
 * tokens for 24 h (Retry: 10 s), exact address match, zero tp. */
void dpq_srvcfg_conf_default(struct dpq_srvcfg_conf *conf);

/* Check a policy (ranges above); 0 or -EINVAL with err. */
int dpq_srvcfg_policy_check(const struct dpq_srvcfg_policy *p, char *err,
		size_t n);

/* Read the key files (or draw secrets) and build version 1 at wall_s
 * (unix seconds). */
int dpq_srvcfg_create(const struct dpq_srvcfg_conf *conf, uint64_t wall_s,
		struct dpq_srvcfg **out, char *err, size_t n);
/* Wipes every key. */
void dpq_srvcfg_destroy(struct dpq_srvcfg *cfg);

const struct dpq_srvcfg_version *dpq_srvcfg_current(
		const struct dpq_srvcfg *cfg);

/* The schedule: a new version when a rotation period ended since the
 * last call. Returns true when the version changed. */
bool dpq_srvcfg_tick(struct dpq_srvcfg *cfg, uint64_t wall_s);

/* Rotate now (what: DPQ_SRVCFG_TICKETS | DPQ_SRVCFG_TOKENS). Returns 0,
 * or -EAGAIN (key file unchanged), -EACCES / -EINVAL / -ENOENT (key file
 * unusable: the old keys stay), with err. */
int dpq_srvcfg_rotate(struct dpq_srvcfg *cfg, unsigned int what,
		uint64_t wall_s, char *err, size_t n);

/* A new policy (config reload). A new version when anything changed;
 * early_epoch grows when 0-RTT promises may break (see above). */
int dpq_srvcfg_set_policy(struct dpq_srvcfg *cfg,
		const struct dpq_srvcfg_policy *p, char *err, size_t n);

/* Could a client remembering `old` send 0-RTT that `new` cannot take
 * (any §7.4.1 limit smaller)? */
bool dpq_srvcfg_tp_shrinks(const struct dpq_srvcfg_tp *old,
		const struct dpq_srvcfg_tp *new);

/* Read a key file the way create/rotate do: 32-64 bytes, raw or hex,
 * owner-only. Returns the secret's length or a negative errno. */
int dpq_srvcfg_read_secret(const char *path,
		uint8_t out[DPQ_SRVCFG_SECRET_MAX], char *err, size_t n);

#endif /* DPQ_CONTROL_SRVCFG_H */
