/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * listener.c: the server's policy for datagrams that match no connection
 * (see listener.h). Shard only.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dataplane/crypto/pp_key.h"
#include "dataplane/crypto/retry.h"
#include "dataplane/engine/frame.h"
#include "listener.h"

#define MICRO	1000000ull

struct dpq_listener {
	/* First: the Initial key used to seal INVALID_TOKEN closes
	 * (64-byte aligned, see struct dpq_pp_key). */
	struct dpq_pp_key close_key;
	struct dpq_listener_cfg cfg;
	struct dpq_crypto *cc;
	struct dpq_rand rnd;
	struct dpq_tokens *tokens;
	struct dpq_halfopen *halfopen;	/* NULL until set_slots */
	struct dpq_tokfilter *token_filter;	/* shared, not owned */
	struct dpq_bucket retry_bucket;
	struct dpq_bucket reply_bucket;
	struct dpq_bucket retry_reply_bucket;
	struct dpq_listener_stats stats;
	bool refuse;			/* new connections get CONNECTION_REFUSED */
	char refuse_reason[DPQ_LISTENER_REASON_MAX + 1];
	uint8_t reply[DPQ_LISTENER_REPLY_MAX];
};

/* ---- token bucket ------------------------------------------------------- */

void
dpq_bucket_init(struct dpq_bucket *b, uint64_t rate, uint64_t burst,
		uint64_t now)
{
	b->rate = rate;
	/* Bounded so level (burst * 1e6) cannot overflow. */
	b->burst = burst > UINT32_MAX ? UINT32_MAX : burst;
	b->level = b->burst * MICRO;
	b->last = now;
}

bool
dpq_bucket_take(struct dpq_bucket *b, uint64_t now)
{
	uint64_t cap = b->burst * MICRO, dt;

	if (now > b->last) {
		dt = now - b->last;
		/* Add dt * rate micro-events without overflow: a gap long
		 * enough to fill the bucket just fills it. */
		if (b->rate != 0 && dt >= cap / b->rate + 1)
			b->level = cap;
		else if (b->level + dt * b->rate > cap)
			b->level = cap;
		else
			b->level += dt * b->rate;
		b->last = now;
	}
	if (b->level < MICRO)
		return false;
	b->level -= MICRO;
	return true;
}

/* ---- setup -------------------------------------------------------------- */

void
dpq_listener_cfg_default(struct dpq_listener_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	dpq_cid_cfg_default(&cfg->cid);
	cfg->shard = 0;
	cfg->retry = DPQ_RETRY_AUTO;
	cfg->retry_rate = 1000;
	cfg->retry_burst = 100;
	cfg->stateless_reset = true;
	cfg->reply_rate = 100;
	cfg->reply_burst = 10;
	cfg->retry_reply_rate = DPQ_LISTENER_RETRY_RATE;
	cfg->retry_reply_burst = DPQ_LISTENER_RETRY_RATE / 10;
	cfg->versions[0] = DPQ_VERSION_1;
	cfg->n_versions = 1;
	dpq_token_cfg_default(&cfg->token);
	dpq_halfopen_cfg_default(&cfg->halfopen);
}

static const char *const outcome_names[DPQ_LO_COUNT] = {
	[DPQ_LO_ACCEPT] = "accept",
	[DPQ_LO_ACCEPT_RETRY_TOKEN] = "accept_retry_token",
	[DPQ_LO_ACCEPT_NEW_TOKEN] = "accept_new_token",
	[DPQ_LO_VN] = "version_negotiation",
	[DPQ_LO_RETRY] = "retry",
	[DPQ_LO_CLOSE_INVALID_TOKEN] = "close_invalid_token",
	[DPQ_LO_CLOSE_REFUSED] = "close_refused",
	[DPQ_LO_SRESET] = "stateless_reset",
	[DPQ_LO_DROP_MALFORMED] = "drop_malformed",
	[DPQ_LO_DROP_VN_SMALL] = "drop_vn_small",
	[DPQ_LO_DROP_VN_RECEIVED] = "drop_vn_received",
	[DPQ_LO_DROP_INITIAL_SMALL] = "drop_initial_small",
	[DPQ_LO_DROP_DCID_SHORT] = "drop_dcid_short",
	[DPQ_LO_DROP_LONG_OTHER] = "drop_long_other",
	[DPQ_LO_DROP_SRESET_OFF] = "drop_sreset_off",
	[DPQ_LO_DROP_SRESET_SMALL] = "drop_sreset_small",
	[DPQ_LO_DROP_REPLY_RATE] = "drop_reply_rate",
	[DPQ_LO_DROP_INTERNAL] = "drop_internal",
};

const char *
dpq_listen_outcome_str(enum dpq_listen_outcome o)
{
	if ((unsigned int)o >= DPQ_LO_COUNT)
		return "unknown";
	return outcome_names[o];
}

struct dpq_listener *
dpq_listener_create(const struct dpq_listener_cfg *cfg, struct dpq_crypto *cc,
		const struct dpq_rand *rnd, uint64_t now)
{
	struct dpq_listener *l;
	void *mem;

	if (cfg == NULL || cc == NULL || rnd == NULL || rnd->fill == NULL ||
			dpq_cid_cfg_check(&cfg->cid) != 0 ||
			cfg->retry > DPQ_RETRY_AUTO ||
			cfg->sreset_key_len < DPQ_SRESET_KEY_MIN ||
			cfg->sreset_key_len > DPQ_SRESET_KEY_MAX ||
			cfg->n_versions < 1 ||
			cfg->n_versions > DPQ_LISTENER_MAX_VERSIONS) {
		errno = EINVAL;
		return NULL;
	}
	if (posix_memalign(&mem, 64, sizeof(*l)) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	l = mem;
	memset(l, 0, sizeof(*l));
	l->tokens = dpq_tokens_create(&cfg->token);
	if (l->tokens == NULL) {
		free(l);
		return NULL;
	}
	l->cfg = *cfg;
	l->cc = cc;
	l->rnd = *rnd;
	dpq_bucket_init(&l->retry_bucket, cfg->retry_rate, cfg->retry_burst,
			now);
	dpq_bucket_init(&l->retry_reply_bucket, cfg->retry_reply_rate,
			cfg->retry_reply_burst, now);
	dpq_bucket_init(&l->reply_bucket, cfg->reply_rate, cfg->reply_burst,
			now);
	return l;
}

void
dpq_listener_destroy(struct dpq_listener *l)
{
	if (l == NULL)
		return;
	dpq_tokens_destroy(l->tokens);
	dpq_halfopen_destroy(l->halfopen);
	explicit_bzero(l->cfg.sreset_key, sizeof(l->cfg.sreset_key));
	dpq_pp_key_destroy(&l->close_key);
	free(l);
}

int
dpq_listener_set_token_key(struct dpq_listener *l, uint8_t key_id,
		const uint8_t key[DPQ_TOKEN_KEY_LEN])
{
	if (l == NULL)
		return -EINVAL;
	return dpq_tokens_set_key(l->tokens, key_id, key);
}

int
dpq_listener_set_slots(struct dpq_listener *l, uint32_t nslots)
{
	struct dpq_halfopen *h;

	if (l == NULL)
		return -EINVAL;
	h = dpq_halfopen_create(&l->cfg.halfopen, nslots, &l->rnd);
	if (h == NULL)
		return -errno;
	dpq_halfopen_destroy(l->halfopen);
	l->halfopen = h;
	return 0;
}

struct dpq_halfopen *
dpq_listener_halfopen(struct dpq_listener *l)
{
	return l == NULL ? NULL : l->halfopen;
}

struct dpq_tokens *
dpq_listener_tokens(struct dpq_listener *l)
{
	return l == NULL ? NULL : l->tokens;
}

int
dpq_listener_new_cid(struct dpq_listener *l, struct dpq_cid *cid,
		uint8_t token[DPQ_RESET_TOKEN_LEN])
{
	if (l == NULL || cid == NULL || token == NULL)
		return -EINVAL;
	if (l->cfg.cid.config_rotation == DPQ_CID_CR_UNROUTABLE)
		return -ENOTSUP;
	if (dpq_cid_gen(&l->cfg.cid, l->cfg.shard, &l->rnd, cid) != 0 ||
	    dpq_sreset_token(l->cfg.sreset_key, l->cfg.sreset_key_len,
			cid->bytes, cid->len, token) != 0)
		return -EINVAL;
	return 0;
}

void
dpq_listener_set_token_filter(struct dpq_listener *l,
		struct dpq_tokfilter *f)
{
	l->token_filter = f;
}

ssize_t
dpq_listener_new_token(struct dpq_listener *l, const struct dpq_netaddr *peer,
		uint64_t now, uint8_t *out, size_t out_len)
{
	struct dpq_token_info ti;
	ssize_t n;

	if (l == NULL || peer == NULL)
		return -EINVAL;
	memset(&ti, 0, sizeof(ti));
	ti.type = DPQ_TOKEN_NEW;
	ti.issued = now;
	ti.addr = *peer;
	n = dpq_token_seal(l->tokens, &ti, &l->rnd, out, out_len);
	if (n > 0)
		l->stats.token_new_issued++;
	return n;
}

/* §8.1.4: a NEW_TOKEN token is good for one connection. */
static bool
token_first_use(struct dpq_listener *l, const struct dpq_pkt_hdr *h,
		const struct dpq_token_info *ti, uint64_t now)
{
	const uint8_t *nonce = dpq_token_nonce(h->token, h->token_len);

	if (l->token_filter == NULL)
		return true;
	return dpq_tokfilter_use(l->token_filter, nonce, DPQ_TOKEN_NONCE_LEN,
			ti->issued + dpq_tokens_cfg(l->tokens)->new_lifetime,
			now) == DPQ_TOKFILTER_FIRST;
}

const struct dpq_listener_stats *
dpq_listener_stats(const struct dpq_listener *l)
{
	return &l->stats;
}

/* ---- outcomes ----------------------------------------------------------- */

static enum dpq_listen_action
finish(struct dpq_listener *l, struct dpq_listener_result *out,
		enum dpq_listen_action a, enum dpq_listen_outcome o)
{
	out->action = a;
	out->outcome = o;
	l->stats.outcome[o]++;
	return a;
}

static enum dpq_listen_action
drop(struct dpq_listener *l, struct dpq_listener_result *out,
		enum dpq_listen_outcome o)
{
	return finish(l, out, DPQ_LISTEN_DROP, o);
}

static uint8_t
rand_byte(struct dpq_listener *l)
{
	uint8_t b;

	l->rnd.fill(l->rnd.ctx, &b, 1);
	return b;
}

/* RFC 9000 §6.1, §17.2.1: VN echoing the client's CIDs swapped. */
static enum dpq_listen_action
send_vn(struct dpq_listener *l, const struct dpq_pkt_hdr *h,
		struct dpq_listener_result *out)
{
	uint8_t *e;

	e = dpq_pkt_write_vn(l->reply, l->reply + sizeof(l->reply),
			rand_byte(l), h->scid, h->scid_len, h->dcid,
			h->dcid_len, l->cfg.versions, l->cfg.n_versions);
	if (e == NULL)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	out->reply = l->reply;
	out->reply_len = (size_t)(e - l->reply);
	return finish(l, out, DPQ_LISTEN_REPLY, DPQ_LO_VN);
}

/* RFC 9000 §8.1.2, §17.2.5: Retry with a new SCID of ours and a token
 * binding the client's address, its first DCID and that SCID; integrity
 * tag per RFC 9001 §5.8. */
static enum dpq_listen_action
send_retry(struct dpq_listener *l, const struct dpq_pkt_hdr *h,
		const struct dpq_netaddr *peer, uint64_t now,
		struct dpq_listener_result *out)
{
	uint8_t tok[DPQ_TOKEN_MAX_LEN];
	struct dpq_token_info ti;
	struct dpq_pkt_long_desc d;
	struct dpq_cid scid;
	ssize_t tlen;
	uint8_t *e;

	if (l->cfg.retry_reply_rate != 0 &&
	    !dpq_bucket_take(&l->retry_reply_bucket, now))
		return drop(l, out, DPQ_LO_DROP_REPLY_RATE);
	if (dpq_cid_gen(&l->cfg.cid, l->cfg.shard, &l->rnd, &scid) != 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	memset(&ti, 0, sizeof(ti));
	ti.type = DPQ_TOKEN_RETRY;
	ti.issued = now;
	ti.addr = *peer;
	dpq_cid_set(&ti.odcid, h->dcid, h->dcid_len);
	ti.retry_scid = scid;
	tlen = dpq_token_seal(l->tokens, &ti, &l->rnd, tok, sizeof(tok));
	if (tlen <= 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	memset(&d, 0, sizeof(d));
	d.type = DPQ_PKT_RETRY;
	d.version = h->version;
	d.dcid = h->scid;
	d.dcid_len = h->scid_len;
	d.scid = scid.bytes;
	d.scid_len = scid.len;
	d.token = tok;
	d.token_len = (size_t)tlen;
	e = dpq_pkt_write_retry(l->reply, l->reply + sizeof(l->reply), &d,
			rand_byte(l) & 0x0f);
	if (e == NULL || (size_t)(l->reply + sizeof(l->reply) - e) <
			DPQ_RETRY_TAG_LEN ||
			dpq_retry_tag_compute(l->cc, h->dcid, h->dcid_len,
				l->reply, (size_t)(e - l->reply), e) != 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	out->reply = l->reply;
	out->reply_len = (size_t)(e - l->reply) + DPQ_RETRY_TAG_LEN;
	return finish(l, out, DPQ_LISTEN_REPLY, DPQ_LO_RETRY);
}

/*
 * An immediate close (RFC 9000 §10.2.3) in an Initial packet protected
 * with the keys of the client's DCID (RFC 9001 §5.2), with error code
 * and reason: INVALID_TOKEN for an invalid Retry token (§8.1.2), or
 * CONNECTION_REFUSED while the server refuses new connections (§20.1).
 * No state is kept, so no closing period.
 */
static enum dpq_listen_action
send_close(struct dpq_listener *l, const struct dpq_pkt_hdr *h,
		uint64_t now, uint64_t code, const char *reason,
		enum dpq_listen_outcome outcome,
		struct dpq_listener_result *out)
{
	struct dpq_pkt_long_desc d;
	struct dpq_seal_op op;
	struct dpq_frame f;
	uint8_t *p, *lenf, *end = l->reply + sizeof(l->reply);
	uint8_t *pl;

	if (!dpq_bucket_take(&l->reply_bucket, now))
		return drop(l, out, DPQ_LO_DROP_REPLY_RATE);
	if (dpq_pp_key_init_initial(l->cc, &l->close_key, h->dcid, h->dcid_len,
			true) != 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	memset(&d, 0, sizeof(d));
	d.type = DPQ_PKT_INITIAL;
	d.version = h->version;
	d.dcid = h->scid;
	d.dcid_len = h->scid_len;
	d.scid = h->dcid;
	d.scid_len = h->dcid_len;
	d.pn = 0;
	d.pn_len = 1;
	pl = dpq_pkt_write_long(l->reply, end - DPQ_CRYPTO_TAG_LEN, &d, &lenf);
	if (pl == NULL)
		goto fail;
	memset(&f, 0, sizeof(f));
	f.type = DPQ_FT_CONNECTION_CLOSE;
	f.close.error_code = code;
	f.close.frame_type = 0;
	f.close.reason = (const uint8_t *)reason;
	f.close.reason_len = strlen(reason);
	p = dpq_frame_encode(pl, end - DPQ_CRYPTO_TAG_LEN, &f);
	/* RFC 9001 §5.4.2: 20 bytes from the packet number for the HP
	 * sample: pad the payload to at least 3 bytes (it is 4 already). */
	if (p == NULL || dpq_pkt_patch_length(lenf, (uint64_t)(p - pl) + 1 +
			DPQ_CRYPTO_TAG_LEN) != 0)
		goto fail;
	memset(&op, 0, sizeof(op));
	op.key = &l->close_key;
	op.pkt = l->reply;
	op.pn = 0;
	op.len = (uint16_t)(p - l->reply);
	op.pn_offset = (uint16_t)(pl - 1 - l->reply);
	op.pn_len = 1;
	if (dpq_crypto_seal_burst(l->cc, &op, 1) != 1)
		goto fail;
	dpq_pp_key_destroy(&l->close_key);
	out->reply = l->reply;
	out->reply_len = (size_t)op.len + DPQ_CRYPTO_TAG_LEN;
	return finish(l, out, DPQ_LISTEN_REPLY, outcome);
fail:
	dpq_pp_key_destroy(&l->close_key);
	return drop(l, out, DPQ_LO_DROP_INTERNAL);
}

static enum dpq_listen_action
accept_conn(struct dpq_listener *l, const struct dpq_pkt_hdr *h,
		const struct dpq_token_info *ti, enum dpq_listen_outcome o,
		struct dpq_listener_result *out)
{
	out->version = h->version;
	dpq_cid_set(&out->client_scid, h->scid, h->scid_len);
	dpq_cid_set(&out->initial_dcid, h->dcid, h->dcid_len);
	if (o == DPQ_LO_ACCEPT_RETRY_TOKEN) {
		out->odcid = ti->odcid;
		out->retry_scid = ti->retry_scid;
		out->retried = true;
	} else {
		out->odcid = out->initial_dcid;
	}
	out->addr_validated = ti != NULL && ti->addr_exact;
	if (dpq_cid_gen(&l->cfg.cid, l->cfg.shard, &l->rnd, &out->scid) != 0 ||
			dpq_sreset_token(l->cfg.sreset_key,
				l->cfg.sreset_key_len, out->scid.bytes,
				out->scid.len, out->sreset_token) != 0) {
		memset(out, 0, sizeof(*out));
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	}
	return finish(l, out, DPQ_LISTEN_ACCEPT, o);
}

static enum dpq_listen_action
on_initial(struct dpq_listener *l, const struct dpq_pkt_hdr *h, size_t len,
		const struct dpq_netaddr *peer, uint64_t now,
		struct dpq_listener_result *out)
{
	struct dpq_token_info ti;
	enum dpq_token_type claimed;
	int rc;

	/* §14.1: a server MUST discard an Initial in a datagram < 1200. */
	if (len < DPQ_MIN_INITIAL_DATAGRAM)
		return drop(l, out, DPQ_LO_DROP_INITIAL_SMALL);
	claimed = h->token_len != 0 ?
			dpq_token_peek_type(h->token, h->token_len) :
			DPQ_TOKEN_ANY;
	if (claimed == DPQ_TOKEN_RETRY) {
		rc = dpq_token_open(l->tokens, h->token, h->token_len,
				DPQ_TOKEN_RETRY, peer, now, &ti);
		/* The client must use the Retry's SCID as its DCID
		 * (§17.2.5.2); else the token was not issued for this. */
		if (rc == 0 && ti.retry_scid.len == h->dcid_len &&
				memcmp(ti.retry_scid.bytes, h->dcid,
					h->dcid_len) == 0) {
			l->stats.token_retry_ok++;
			return accept_conn(l, h, &ti,
					DPQ_LO_ACCEPT_RETRY_TOKEN, out);
		}
		/* §8.1.2: the client will not take another Retry. */
		l->stats.token_retry_bad++;
		return send_close(l, h, now, DPQ_TE_INVALID_TOKEN, "",
				DPQ_LO_CLOSE_INVALID_TOKEN, out);
	}
	if (claimed == DPQ_TOKEN_NEW) {
		rc = dpq_token_open(l->tokens, h->token, h->token_len,
				DPQ_TOKEN_NEW, peer, now, &ti);
		if (rc == 0 && !token_first_use(l, h, &ti, now)) {
			l->stats.token_new_replay++;
			rc = -EALREADY;
		}
		if (rc == 0) {
			/* §8.1.3: a NEW_TOKEN token lets us skip Retry even
			 * if the address changed within the prefix; only an
			 * exact match lifts the amplification limit. */
			l->stats.token_new_ok++;
			if (!ti.addr_exact)
				l->stats.token_new_prefix++;
			return accept_conn(l, h, &ti, DPQ_LO_ACCEPT_NEW_TOKEN,
					out);
		}
	}
	/* §8.1.3: an invalid (or unrecognisable) token: proceed as if the
	 * client had none, which may mean a Retry. */
	if (h->token_len != 0)
		l->stats.token_new_bad++;
	/* §7.2: a client's first DCID is at least 8 bytes. */
	if (h->dcid_len < DPQ_LISTENER_MIN_CLIENT_DCID)
		return drop(l, out, DPQ_LO_DROP_DCID_SHORT);
	/* Draining or shutting down: say so rather than stay silent, so
	 * the client reports it at once instead of timing out. */
	if (l->refuse)
		return send_close(l, h, now, DPQ_TE_CONNECTION_REFUSED,
				l->refuse_reason, DPQ_LO_CLOSE_REFUSED, out);
	switch (l->cfg.retry) {
	case DPQ_RETRY_ALWAYS:
		return send_retry(l, h, peer, now, out);
	case DPQ_RETRY_RATE:
	case DPQ_RETRY_AUTO:
		/* Many half-open connections: new clients prove their
		 * address first (§8.1.2), which a spoofed flood cannot. */
		if (l->halfopen != NULL &&
		    dpq_halfopen_retry_wanted(l->halfopen)) {
			l->stats.retry_halfopen++;
			return send_retry(l, h, peer, now, out);
		}
		if (l->cfg.retry == DPQ_RETRY_RATE &&
		    !dpq_bucket_take(&l->retry_bucket, now))
			return send_retry(l, h, peer, now, out);
		break;
	case DPQ_RETRY_NEVER:
	default:
		break;
	}
	return accept_conn(l, h, NULL, DPQ_LO_ACCEPT, out);
}

/* RFC 9000 §10.3: a short header we cannot attribute to a connection. */
static enum dpq_listen_action
on_short(struct dpq_listener *l, const struct dpq_pkt_hdr *h, size_t len,
		uint64_t now, struct dpq_listener_result *out)
{
	uint8_t token[DPQ_RESET_TOKEN_LEN];
	ssize_t n;

	if (!l->cfg.stateless_reset)
		return drop(l, out, DPQ_LO_DROP_SRESET_OFF);
	/* §10.3.3: the reset must be shorter than the trigger and at least
	 * 21 bytes; checked before the bucket so tiny packets cost none. */
	if (len < DPQ_SRESET_MIN_TRIGGER || h->dcid_len == 0)
		return drop(l, out, DPQ_LO_DROP_SRESET_SMALL);
	/* §10.3.3: limit the resets we send (one bucket for all peers). */
	if (!dpq_bucket_take(&l->reply_bucket, now))
		return drop(l, out, DPQ_LO_DROP_REPLY_RATE);
	if (dpq_sreset_token(l->cfg.sreset_key, l->cfg.sreset_key_len, h->dcid,
			h->dcid_len, token) != 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	n = dpq_sreset_build(token, len, &l->rnd, l->reply, sizeof(l->reply));
	if (n <= 0)
		return drop(l, out, DPQ_LO_DROP_INTERNAL);
	out->reply = l->reply;
	out->reply_len = (size_t)n;
	return finish(l, out, DPQ_LISTEN_REPLY, DPQ_LO_SRESET);
}

enum dpq_listen_action
dpq_listener_on_datagram(struct dpq_listener *l, const uint8_t *dgram,
		size_t len, const struct dpq_netaddr *peer, uint64_t now,
		struct dpq_listener_result *out)
{
	struct dpq_pkt_hdr h;
	int rc;

	memset(out, 0, sizeof(*out));
	if (dgram == NULL || len == 0 || peer == NULL)
		return drop(l, out, DPQ_LO_DROP_MALFORMED);
	rc = dpq_pkt_parse(dgram, dgram + len, l->cfg.cid.len, &h);
	if (rc == DPQ_ERR_VERSION) {
		if (dpq_pkt_vn_should_send(&h, len))
			return send_vn(l, &h, out);
		return drop(l, out, DPQ_LO_DROP_VN_SMALL);
	}
	if (rc != 0)
		return drop(l, out, DPQ_LO_DROP_MALFORMED);
	switch (h.type) {
	case DPQ_PKT_INITIAL:
		return on_initial(l, &h, len, peer, now, out);
	case DPQ_PKT_1RTT:
		return on_short(l, &h, len, now, out);
	case DPQ_PKT_VN:
		/* §6.1: never answer a Version Negotiation packet. */
		return drop(l, out, DPQ_LO_DROP_VN_RECEIVED);
	default:
		/* 0-RTT that overtook its Initial, a stray Handshake or a
		 * Retry sent to a server: nothing to attach it to (§10.3
		 * allows a reset for long headers but it is ineffective). */
		return drop(l, out, DPQ_LO_DROP_LONG_OTHER);
	}
}

void
dpq_listener_set_refuse(struct dpq_listener *l, bool refuse,
		const char *reason)
{
	l->refuse = refuse;
	snprintf(l->refuse_reason, sizeof(l->refuse_reason), "%s",
			reason != NULL ? reason : "");
}

void
dpq_listener_set_retry(struct dpq_listener *l, enum dpq_retry_policy retry,
		uint32_t rate, uint64_t now)
{
	l->cfg.retry = retry;
	if (retry == DPQ_RETRY_RATE && rate != 0) {
		l->cfg.retry_rate = rate;
		dpq_bucket_init(&l->retry_bucket, rate, l->cfg.retry_burst,
				now);
	}
}
