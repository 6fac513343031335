/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srvcfg.c: the server config (see srvcfg.h). Two key chains, tickets
 * and tokens, each: a secret, its rotation period, the current key
 * (secret, period) and the previous key (kept as bytes: after a rotation
 * on command it came from the old secret).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "control/mgmt/srvcfg.h"

#define KEY_MAX		DPQ_SRVCFG_STEK_LEN

struct chain {
	const char *label;		/* HKDF info prefix */
	char *file;			/* NULL: random secret */
	uint64_t rotation_s;		/* 0: no schedule */
	size_t key_len;
	uint8_t secret[DPQ_SRVCFG_SECRET_MAX];
	size_t secret_len;
	uint64_t period;		/* of the current key */
	uint8_t cur[KEY_MAX], prev[KEY_MAX];
	uint8_t cur_id, prev_id;
	bool has_prev;
};

struct dpq_srvcfg {
	struct chain tickets, tokens;
	struct dpq_srvcfg_version v;
};

void
dpq_srvcfg_conf_default(struct dpq_srvcfg_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->ticket_rotation_s = 12 * 3600;
	c->token_rotation_s = 12 * 3600;
	c->policy.ticket_lifetime_s = 12 * 3600;
	c->policy.early_data = true;
	c->policy.max_early_data = 1u << 20;
	c->policy.replay_window_ms = 600 * 1000;
	c->policy.replay_entries = 65536;
	c->policy.new_token = true;
	c->policy.token_lifetime_us = 24ull * 3600 * 1000000;
	c->policy.retry_token_lifetime_us = 10ull * 1000000;
	c->policy.token_v4_prefix = 32;
	c->policy.token_v6_prefix = 128;
}

int
dpq_srvcfg_policy_check(const struct dpq_srvcfg_policy *p, char *err,
		size_t n)
{
	const char *why = NULL;

	if (p->ticket_lifetime_s < 1 ||
	    p->ticket_lifetime_s > DPQ_SRVCFG_TICKET_LIFETIME_MAX)
		why = "ticket lifetime must be 1 s to 7 days (RFC 8446 4.6.1)";
	else if (p->replay_window_ms < 1000)
		why = "the 0-RTT replay window must be at least 1 s";
	else if (p->replay_entries < 64)
		why = "the 0-RTT replay filter needs at least 64 entries";
	else if (p->token_lifetime_us == 0 || p->retry_token_lifetime_us == 0)
		why = "token lifetimes must be above 0";
	else if (p->token_v4_prefix < 1 || p->token_v4_prefix > 32 ||
		 p->token_v6_prefix < 1 || p->token_v6_prefix > 128)
		why = "token prefixes: 1..32 (IPv4), 1..128 (IPv6)";
	if (why == NULL)
		return 0;
	snprintf(err, n, "%s", why);
	return -EINVAL;
}

/* ---- secrets ------------------------------------------------------------ */

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex text (whitespace ignored) into out; -1 if not hex. */
static int
from_hex(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	size_t i, n = 0;
	int hi = -1;

	for (i = 0; i < len; i++) {
		int v;

		if (isspace(in[i]))
			continue;
		v = hexval(in[i]);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? (int)n : -1;
}

int
dpq_srvcfg_read_secret(const char *path, uint8_t out[DPQ_SRVCFG_SECRET_MAX],
		char *err, size_t n)
{
	uint8_t buf[4 * DPQ_SRVCFG_SECRET_MAX + 2];
	struct stat st;
	ssize_t got;
	int fd, len;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, n, "key file %s: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, n, "key file %s is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	/* A key that others can read is no key: say so, like ssh does. */
	if (st.st_mode & 077) {
		snprintf(err, n, "key file %s is readable by others (mode %04o):"
			" chmod 600 %s", path, (unsigned)(st.st_mode & 07777),
			path);
		close(fd);
		return -EACCES;
	}
	got = read(fd, buf, sizeof(buf));
	close(fd);
	if (got < 0) {
		snprintf(err, n, "key file %s: %s", path, strerror(errno));
		return -EIO;
	}
	len = from_hex(buf, (size_t)got, out, DPQ_SRVCFG_SECRET_MAX);
	if (len < 0) {
		/* Raw bytes. */
		if ((size_t)got > DPQ_SRVCFG_SECRET_MAX) {
			len = -1;
		} else {
			memcpy(out, buf, (size_t)got);
			len = (int)got;
		}
	}
	explicit_bzero(buf, sizeof(buf));
	if (len < DPQ_SRVCFG_SECRET_MIN) {
		explicit_bzero(out, DPQ_SRVCFG_SECRET_MAX);
		snprintf(err, n, "key file %s must hold %d to %d random bytes, "
			"raw or as hex (e.g. `head -c 32 /dev/urandom > %s`)",
			path, DPQ_SRVCFG_SECRET_MIN, DPQ_SRVCFG_SECRET_MAX,
			path);
		return -EINVAL;
	}
	return len;
}

/* A secret for ch: its file, or random bytes. */
static int
load_secret(struct chain *ch, uint8_t *out, size_t *len, char *err, size_t n)
{
	int rc;

	if (ch->file == NULL) {
		if (gnutls_rnd(GNUTLS_RND_KEY, out, DPQ_SRVCFG_SECRET_MIN) < 0) {
			snprintf(err, n, "no random bytes for the %s key",
				ch->label);
			return -EIO;
		}
		*len = DPQ_SRVCFG_SECRET_MIN;
		return 0;
	}
	rc = dpq_srvcfg_read_secret(ch->file, out, err, n);
	if (rc < 0)
		return rc;
	*len = (size_t)rc;
	return 0;
}

/* ---- keys ------------------------------------------------------------------ */

/*
 * key = HKDF-Expand(HKDF-Extract("dpquic server config", secret),
 *                   label || period (8 bytes, big endian), len + 1);
 * the extra byte gives the key id. Deterministic: the servers of a fleet
 * compute the same keys.
 */
static int
derive(const struct chain *ch, const uint8_t *secret, size_t secret_len,
		uint64_t period, uint8_t *key, uint8_t *id)
{
	static const char salt_s[] = "dpquic server config";
	uint8_t prk[32], info[32 + 8], okm[KEY_MAX + 1];
	gnutls_datum_t s = { (unsigned char *)(uintptr_t)secret,
		(unsigned int)secret_len };
	gnutls_datum_t salt = { (unsigned char *)(uintptr_t)salt_s,
		sizeof(salt_s) - 1 };
	gnutls_datum_t p = { prk, sizeof(prk) }, in;
	size_t ll = strlen(ch->label);
	int i, rc = 0;

	memcpy(info, ch->label, ll);
	for (i = 0; i < 8; i++)
		info[ll + i] = (uint8_t)(period >> (56 - 8 * i));
	in.data = info;
	in.size = (unsigned int)(ll + 8);
	if (gnutls_hkdf_extract(GNUTLS_MAC_SHA256, &s, &salt, prk) < 0 ||
	    gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &p, &in, okm,
			ch->key_len + 1) < 0)
		rc = -EIO;
	if (rc == 0) {
		memcpy(key, okm, ch->key_len);
		*id = okm[ch->key_len] & 0x3f;
	}
	explicit_bzero(prk, sizeof(prk));
	explicit_bzero(okm, sizeof(okm));
	return rc;
}

static uint64_t
period_of(const struct chain *ch, uint64_t wall_s)
{
	return ch->rotation_s ? wall_s / ch->rotation_s : 0;
}

/* Current key of (secret, period p) and previous one of period p - 1. */
static int
derive_pair(struct chain *ch, uint64_t p)
{
	int rc = derive(ch, ch->secret, ch->secret_len, p, ch->cur,
			&ch->cur_id);

	ch->period = p;
	ch->has_prev = false;
	if (rc == 0 && ch->rotation_s != 0 && p > 0) {
		rc = derive(ch, ch->secret, ch->secret_len, p - 1, ch->prev,
				&ch->prev_id);
		ch->has_prev = rc == 0;
	}
	return rc;
}

/* A short public name: 4 bytes of SHA-256(key) in hex. */
static void
key_name(const uint8_t *key, size_t len, char out[9])
{
	uint8_t h[32];

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key, len, h) < 0)
		memset(h, 0, sizeof(h));
	snprintf(out, 9, "%02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
}

/* Copy the chains into the version and number it. */
static void
publish(struct dpq_srvcfg *cfg)
{
	struct dpq_srvcfg_version *v = &cfg->v;

	memcpy(v->stek[0], cfg->tickets.cur, DPQ_SRVCFG_STEK_LEN);
	memcpy(v->stek[1], cfg->tickets.prev, DPQ_SRVCFG_STEK_LEN);
	v->stek_has_prev = cfg->tickets.has_prev;
	memcpy(v->token_key[0], cfg->tokens.cur, DPQ_SRVCFG_TOKEN_KEY_LEN);
	memcpy(v->token_key[1], cfg->tokens.prev, DPQ_SRVCFG_TOKEN_KEY_LEN);
	v->token_id[0] = cfg->tokens.cur_id;
	v->token_id[1] = cfg->tokens.prev_id;
	v->token_has_prev = cfg->tokens.has_prev;
	key_name(v->stek[0], DPQ_SRVCFG_STEK_LEN, v->stek_name[0]);
	key_name(v->token_key[0], DPQ_SRVCFG_TOKEN_KEY_LEN, v->token_name[0]);
	if (v->stek_has_prev)
		key_name(v->stek[1], DPQ_SRVCFG_STEK_LEN, v->stek_name[1]);
	else
		v->stek_name[1][0] = '\0';
	if (v->token_has_prev)
		key_name(v->token_key[1], DPQ_SRVCFG_TOKEN_KEY_LEN,
				v->token_name[1]);
	else
		v->token_name[1][0] = '\0';
	v->version++;
}

static void
chain_wipe(struct chain *ch)
{
	free(ch->file);
	explicit_bzero(ch, sizeof(*ch));
}

static int
chain_init(struct chain *ch, const char *label, size_t key_len,
		const char *file, uint64_t rotation_s, uint64_t wall_s,
		char *err, size_t n)
{
	int rc;

	ch->label = label;
	ch->key_len = key_len;
	ch->rotation_s = rotation_s;
	if (file != NULL) {
		ch->file = strdup(file);
		if (ch->file == NULL)
			return -ENOMEM;
	}
	rc = load_secret(ch, ch->secret, &ch->secret_len, err, n);
	if (rc != 0)
		return rc;
	rc = derive_pair(ch, period_of(ch, wall_s));
	if (rc != 0)
		snprintf(err, n, "cannot derive the %s keys", label);
	return rc;
}

int
dpq_srvcfg_create(const struct dpq_srvcfg_conf *conf, uint64_t wall_s,
		struct dpq_srvcfg **out, char *err, size_t n)
{
	struct dpq_srvcfg *cfg;
	int rc;

	if (conf == NULL || out == NULL)
		return -EINVAL;
	rc = dpq_srvcfg_policy_check(&conf->policy, err, n);
	if (rc != 0)
		return rc;
	cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL)
		return -ENOMEM;
	rc = chain_init(&cfg->tickets, "ticket", DPQ_SRVCFG_STEK_LEN,
			conf->ticket_key_file, conf->ticket_rotation_s, wall_s,
			err, n);
	if (rc == 0)
		rc = chain_init(&cfg->tokens, "token", DPQ_SRVCFG_TOKEN_KEY_LEN,
				conf->token_key_file, conf->token_rotation_s,
				wall_s, err, n);
	if (rc != 0) {
		dpq_srvcfg_destroy(cfg);
		return rc;
	}
	cfg->v.policy = conf->policy;
	cfg->v.early_epoch = 1;
	publish(cfg);
	*out = cfg;
	return 0;
}

void
dpq_srvcfg_destroy(struct dpq_srvcfg *cfg)
{
	if (cfg == NULL)
		return;
	chain_wipe(&cfg->tickets);
	chain_wipe(&cfg->tokens);
	explicit_bzero(&cfg->v, sizeof(cfg->v));
	free(cfg);
}

const struct dpq_srvcfg_version *
dpq_srvcfg_current(const struct dpq_srvcfg *cfg)
{
	return &cfg->v;
}

static bool
chain_tick(struct chain *ch, uint64_t wall_s)
{
	uint64_t p = period_of(ch, wall_s);

	/* Never backwards: a clock stepped back keeps today's keys. */
	if (ch->rotation_s == 0 || p <= ch->period)
		return false;
	if (p == ch->period + 1) {
		memcpy(ch->prev, ch->cur, ch->key_len);
		ch->prev_id = ch->cur_id;
		ch->has_prev = true;
		ch->period = p;
		return derive(ch, ch->secret, ch->secret_len, p, ch->cur,
				&ch->cur_id) == 0;
	}
	return derive_pair(ch, p) == 0;
}

bool
dpq_srvcfg_tick(struct dpq_srvcfg *cfg, uint64_t wall_s)
{
	bool a = chain_tick(&cfg->tickets, wall_s);
	bool b = chain_tick(&cfg->tokens, wall_s);

	if (!a && !b)
		return false;
	publish(cfg);
	return true;
}

static int
chain_rotate(struct chain *ch, uint64_t wall_s, char *err, size_t n)
{
	uint8_t s[DPQ_SRVCFG_SECRET_MAX], key[KEY_MAX], id;
	size_t len = 0;
	uint64_t p;
	int rc;

	rc = load_secret(ch, s, &len, err, n);
	if (rc != 0)
		return rc;
	if (ch->file != NULL && len == ch->secret_len &&
	    memcmp(s, ch->secret, len) == 0) {
		explicit_bzero(s, sizeof(s));
		snprintf(err, n, "%s key file %s is unchanged: write a new "
			"secret to it (on every server sharing it), then "
			"rotate", ch->label, ch->file);
		return -EAGAIN;
	}
	p = period_of(ch, wall_s);
	if (p < ch->period)
		p = ch->period;
	rc = derive(ch, s, len, p, key, &id);
	if (rc != 0) {
		explicit_bzero(s, sizeof(s));
		snprintf(err, n, "cannot derive the %s keys", ch->label);
		return rc;
	}
	memcpy(ch->prev, ch->cur, ch->key_len);
	ch->prev_id = ch->cur_id;
	ch->has_prev = true;
	memcpy(ch->cur, key, ch->key_len);
	ch->cur_id = id;
	memcpy(ch->secret, s, len);
	ch->secret_len = len;
	ch->period = p;
	explicit_bzero(s, sizeof(s));
	explicit_bzero(key, sizeof(key));
	return 0;
}

int
dpq_srvcfg_rotate(struct dpq_srvcfg *cfg, unsigned int what, uint64_t wall_s,
		char *err, size_t n)
{
	struct chain save;
	int rc = 0;

	if (what == 0 || (what & ~(DPQ_SRVCFG_TICKETS | DPQ_SRVCFG_TOKENS))) {
		snprintf(err, n, "nothing to rotate");
		return -EINVAL;
	}
	/* Both or neither: keep the ticket chain to undo it if the token
	 * file turns out unusable. */
	save = cfg->tickets;
	if (what & DPQ_SRVCFG_TICKETS)
		rc = chain_rotate(&cfg->tickets, wall_s, err, n);
	if (rc == 0 && (what & DPQ_SRVCFG_TOKENS)) {
		rc = chain_rotate(&cfg->tokens, wall_s, err, n);
		if (rc != 0)
			cfg->tickets = save;
	}
	explicit_bzero(&save, sizeof(save));
	if (rc != 0)
		return rc;
	publish(cfg);
	return 0;
}

bool
dpq_srvcfg_tp_shrinks(const struct dpq_srvcfg_tp *o,
		const struct dpq_srvcfg_tp *n)
{
	return n->active_connection_id_limit < o->active_connection_id_limit ||
		n->initial_max_data < o->initial_max_data ||
		n->initial_max_stream_data_bidi_local <
			o->initial_max_stream_data_bidi_local ||
		n->initial_max_stream_data_bidi_remote <
			o->initial_max_stream_data_bidi_remote ||
		n->initial_max_stream_data_uni <
			o->initial_max_stream_data_uni ||
		n->initial_max_streams_bidi < o->initial_max_streams_bidi ||
		n->initial_max_streams_uni < o->initial_max_streams_uni;
}

static bool
tp_eq(const struct dpq_srvcfg_tp *a, const struct dpq_srvcfg_tp *b)
{
	return !dpq_srvcfg_tp_shrinks(a, b) && !dpq_srvcfg_tp_shrinks(b, a);
}

static bool
policy_eq(const struct dpq_srvcfg_policy *a, const struct dpq_srvcfg_policy *b)
{
	return a->ticket_lifetime_s == b->ticket_lifetime_s &&
		a->early_data == b->early_data &&
		a->max_early_data == b->max_early_data &&
		a->replay_window_ms == b->replay_window_ms &&
		a->replay_entries == b->replay_entries &&
		a->new_token == b->new_token &&
		a->token_lifetime_us == b->token_lifetime_us &&
		a->retry_token_lifetime_us == b->retry_token_lifetime_us &&
		a->token_v4_prefix == b->token_v4_prefix &&
		a->token_v6_prefix == b->token_v6_prefix &&
		tp_eq(&a->tp, &b->tp);
}

int
dpq_srvcfg_set_policy(struct dpq_srvcfg *cfg,
		const struct dpq_srvcfg_policy *p, char *err, size_t n)
{
	int rc = dpq_srvcfg_policy_check(p, err, n);

	if (rc != 0)
		return rc;
	if (policy_eq(p, &cfg->v.policy))
		return 0;
	if (dpq_srvcfg_tp_shrinks(&cfg->v.policy.tp, &p->tp))
		cfg->v.early_epoch++;
	cfg->v.policy = *p;
	publish(cfg);
	return 0;
}
