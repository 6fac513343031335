/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Paths (RFC 9000 §8.2, §9): the tuples a connection receives on and
 * sends to, their validation with PATH_CHALLENGE / PATH_RESPONSE, the 3x
 * anti-amplification limit of an unvalidated peer address (§8, §9.3.1),
 * a server following its client to a new address and returning to the
 * last validated one when that fails (§9.3, §9.3.3), a client moving to a
 * new local address (§9.2), the peer CID each path sends with (§9.5),
 * and the RTT and congestion state a new path starts with (§9.4).
 *
 * Invariant: c->dcid is the active path's peer CID (the rest of the
 * connection reads it there); paths[i].dcid holds the others'. This file
 * is the only writer of c->b->paths, c->active and c->fallback. Shard only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "dataplane/quic/conn_int.h"

/* ---- helpers --------------------------------------------------------- */

static bool
tuple_match(const struct dpq_tuple *path, const struct dpq_tuple *t)
{
	if (!dpq_netaddr_eq(&path->peer, &t->peer))
		return false;
	/* An unknown local address (family 0) on either side matches. */
	return path->local.family == 0 || t->local.family == 0 ||
		dpq_netaddr_eq(&path->local, &t->local);
}

/* A different network path, not only another port (§9.4): either IP
 * address changed. */
static bool
ip_changed(const struct dpq_tuple *a, const struct dpq_tuple *b)
{
	if (!dpq_netaddr_eq_ip(&a->peer, &b->peer))
		return true;
	return a->local.family != 0 && b->local.family != 0 &&
		!dpq_netaddr_eq_ip(&a->local, &b->local);
}

static unsigned int
path_index(const struct dpq_conn *c, const struct dpq_path *p)
{
	return (unsigned int)(p - c->b->paths);
}

/* The peer CID path p sends with, or NULL if it has none yet. */
static const struct dpq_cid *
path_cid(const struct dpq_conn *c, const struct dpq_path *p)
{
	if (p == &c->b->paths[c->active])
		return &c->dcid;
	if (c->dcid.len == 0)
		return &c->dcid;	/* zero-length CIDs: all paths alike */
	return p->dcid.len > 0 ? &p->dcid : NULL;
}

static bool
cid_on_a_path(const struct dpq_conn *c, const struct dpq_cid *cid)
{
	unsigned int i;

	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		const struct dpq_path *p = &c->b->paths[i];
		const struct dpq_cid *pc;

		if (!p->in_use)
			continue;
		pc = path_cid(c, p);
		if (pc != NULL && dpq_cid_eq(pc, cid))
			return true;
	}
	return false;
}

/* An active peer CID never sent with (§9.5: one CID per path); marked as
 * sent with. */
static bool
take_unused_cid(struct dpq_conn *c, struct dpq_cid *out)
{
	unsigned int i;

	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++) {
		struct dpq_peer_cid *pc = &c->peer_cids[i];

		if (!pc->used || pc->sent_on || cid_on_a_path(c, &pc->cid))
			continue;
		pc->sent_on = true;
		*out = pc->cid;
		return true;
	}
	return false;
}

/* §5.1.2: a peer CID that no path sends with any more is retired. */
static void
retire_if_unused(struct dpq_conn *c, const struct dpq_cid *cid)
{
	unsigned int i;

	if (cid->len == 0 || cid_on_a_path(c, cid))
		return;
	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++)
		if (c->peer_cids[i].used &&
		    dpq_cid_eq(&c->peer_cids[i].cid, cid)) {
			dpq_conn_retire_peer_cid(c, i);
			return;
		}
}

/* Give path p a peer CID if it has none: an unused one, or (§9.5) the
 * active path's when the peer kept sending to the same CID of ours, as
 * after a NAT rebinding. False if it cannot send yet. */
static bool
path_get_cid(struct dpq_conn *c, struct dpq_path *p)
{
	const struct dpq_path *a = &c->b->paths[c->active];

	if (path_cid(c, p) != NULL)
		return true;
	if (take_unused_cid(c, &p->dcid))
		return true;
	if (dpq_cid_eq(&p->rx_dcid, &a->rx_dcid)) {
		p->dcid = c->dcid;
		return true;
	}
	return false;
}

static void
amp_update(struct dpq_conn *c, uint64_t now)
{
	const struct dpq_path *p = &c->b->paths[c->active];

	dpq_loss_set_amplification_limited(&c->b->loss, !p->validated &&
			p->amp_sent >= DPQ_CONN_AMP_FACTOR * p->amp_recv, now);
}

/* §9.4: RTT and congestion control back to initial values. Packets in
 * flight stay counted: their acknowledgments or losses still leave. */
static void
recovery_reset(struct dpq_conn *c, uint64_t now)
{
	struct dpq_cc_conf cf = { .max_datagram_size = c->max_udp_payload,
		.fec_reaction = c->b->cc.conf.fec_reaction,
		.paced = c->b->cc.conf.paced };
	uint64_t bif = c->b->cc.bytes_in_flight;

	c->b->stats.recovery_resets++;
	dpq_rtt_init(&c->b->loss.rtt, c->conf.initial_rtt_us ?
			c->conf.initial_rtt_us : DPQ_RTT_INITIAL_DEFAULT);
	if (dpq_cc_init(&c->b->cc, c->b->cc.ops, &cf, now) == 0)
		c->b->cc.bytes_in_flight = bif;
}

/* Three times the larger of the current PTO and one from kInitialRtt
 * (§8.2.4). */
static uint64_t
validation_timeout(const struct dpq_conn *c)
{
	uint64_t init = c->conf.initial_rtt_us ? c->conf.initial_rtt_us :
		DPQ_RTT_INITIAL_DEFAULT;
	uint64_t pto_init = init + 4 * (init / 2) + c->b->loss.max_ack_delay;
	uint64_t pto = dpq_conn_pto(c);

	return 3 * (pto > pto_init ? pto : pto_init);
}

static void
start_challenge(struct dpq_conn *c, struct dpq_path *p, uint64_t now)
{
	p->challenging = true;
	p->challenge_due = true;
	p->nchallenges = 0;
	p->validation_deadline = now + validation_timeout(c);
}

/* The fallback's saved state is no longer needed. */
static void
saved_drop(struct dpq_conn *c)
{
	dpq_mem_free(&c->mem, c->saved);
	c->saved = NULL;
}

static void
free_path(struct dpq_conn *c, struct dpq_path *p)
{
	unsigned int i = path_index(c, p);
	struct dpq_cid cid = p->dcid;

	if (i == c->active)
		return;
	memset(p, 0, sizeof(*p));
	if (c->fallback == i) {
		c->fallback = DPQ_PATH_NONE;
		saved_drop(c);
	}
	retire_if_unused(c, &cid);
}

/* Once the active path is validated, paths that are not being validated
 * and owe nothing are let go (their peer CIDs retired). */
static void
settle(struct dpq_conn *c)
{
	unsigned int i;

	if (!c->b->paths[c->active].validated ||
	    c->b->paths[c->active].challenging)
		return;
	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		struct dpq_path *p = &c->b->paths[i];

		if (i != c->active && p->in_use && !p->challenging &&
		    !p->response_due)
			free_path(c, p);
	}
}

/* Make p the active path. The old one, if validated, becomes the
 * fallback with its RTT and congestion state saved; returning to the
 * fallback restores them (§9.3.2). The saved state is allocated at the
 * first migration (half a kilobyte most connections never need); without
 * memory for it the fallback is kept and the state is not restored. */
static void
switch_to(struct dpq_conn *c, struct dpq_path *p, uint64_t now)
{
	unsigned int pi = path_index(c, p), oi = c->active;
	struct dpq_path *old = &c->b->paths[oi];
	bool restore = c->saved != NULL && c->fallback == pi;
	struct dpq_rtt rtt = { 0 };
	struct dpq_cc cc = { 0 };

	if (restore) {
		rtt = c->saved->rtt;
		cc = c->saved->cc;
	}
	if (old->validated) {
		if (c->saved == NULL)
			c->saved = dpq_mem_alloc(&c->mem, sizeof(*c->saved));
		if (c->saved != NULL) {
			c->saved->rtt = c->b->loss.rtt;
			c->saved->cc = c->b->cc;
		}
		c->fallback = (uint8_t)oi;
	} else if (restore) {
		saved_drop(c);
		c->fallback = DPQ_PATH_NONE;
	}
	/* c->dcid follows the active path. */
	old->dcid = c->dcid;
	c->dcid = p->dcid;
	c->active = (uint8_t)pi;
	c->b->stats.migrations++;
	if (restore) {
		uint64_t bif = c->b->cc.bytes_in_flight;

		c->b->loss.rtt = rtt;
		c->b->cc = cc;
		c->b->cc.bytes_in_flight = bif;
		p->reset_on_validate = false;
	}
	amp_update(c, now);
}

/* ---- set-up and lookup ------------------------------------------------ */

void
dpq_conn_paths_init(struct dpq_conn *c, const struct dpq_tuple *t,
		bool validated)
{
	memset(c->b->paths, 0, sizeof(c->b->paths));
	c->b->paths[0].in_use = true;
	c->b->paths[0].validated = validated;
	if (t != NULL)
		c->b->paths[0].tuple = *t;
	c->active = 0;
	c->fallback = DPQ_PATH_NONE;
	c->saved = NULL;
}

void
dpq_conn_paths_free(struct dpq_conn *c)
{
	saved_drop(c);
}

struct dpq_path *
dpq_conn_path_find(struct dpq_conn *c, const struct dpq_tuple *t)
{
	unsigned int i;

	if (t == NULL)
		return &c->b->paths[c->active];
	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		unsigned int k = (c->active + i) % DPQ_CONN_PATHS;

		if (c->b->paths[k].in_use && tuple_match(&c->b->paths[k].tuple, t))
			return &c->b->paths[k];
	}
	return NULL;
}

/* A slot for a new path: a free one, else the least recently heard
 * path that is neither active nor the fallback. */
static struct dpq_path *
path_alloc(struct dpq_conn *c)
{
	struct dpq_path *victim = NULL;
	unsigned int i;

	for (i = 0; i < DPQ_CONN_PATHS; i++)
		if (!c->b->paths[i].in_use)
			return &c->b->paths[i];
	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		struct dpq_path *p = &c->b->paths[i];

		if (i == c->active || i == c->fallback)
			continue;
		if (victim == NULL || p->last_rx < victim->last_rx)
			victim = p;
	}
	if (victim != NULL)
		free_path(c, victim);
	return victim;
}

struct dpq_path *
dpq_conn_path_for_rx(struct dpq_conn *c, const struct dpq_rx_info *ri,
		size_t dgram_len, uint64_t now)
{
	struct dpq_path *p;

	if (ri == NULL)
		return &c->b->paths[c->active];
	p = dpq_conn_path_find(c, &ri->tuple);
	if (p != NULL) {
		/* Learn our own address once the driver tells it. */
		if (p->tuple.local.family == 0)
			p->tuple.local = ri->tuple.local;
		return p;
	}
	/* §9: a client discards packets from an unknown server address;
	 * nobody migrates before the handshake is confirmed. */
	if (c->role != DPQ_ROLE_SERVER || !c->hs_confirmed)
		return NULL;
	p = path_alloc(c);
	if (p == NULL)
		return NULL;
	memset(p, 0, sizeof(*p));
	p->in_use = true;
	p->tuple = ri->tuple;
	/* This datagram is the first the new address sent (§8.1). */
	p->amp_recv = dgram_len;
	p->last_rx = now;
	return p;
}

void
dpq_conn_path_credit(struct dpq_conn *c, struct dpq_path *p, size_t bytes,
		uint64_t now)
{
	p->last_rx = now;
	if (p->validated)
		return;
	p->amp_recv += bytes;
	if (p == &c->b->paths[c->active])
		amp_update(c, now);
}

uint64_t
dpq_conn_path_allowance(const struct dpq_conn *c, const struct dpq_path *p)
{
	uint64_t allow;

	(void)c;
	if (p->validated)
		return UINT64_MAX;
	allow = DPQ_CONN_AMP_FACTOR * p->amp_recv;
	return allow > p->amp_sent ? allow - p->amp_sent : 0;
}

void
dpq_conn_path_on_sent(struct dpq_conn *c, struct dpq_path *p, size_t bytes,
		uint64_t now)
{
	if (p->validated)
		return;
	p->amp_sent += bytes;
	if (p == &c->b->paths[c->active])
		amp_update(c, now);
}

const struct dpq_tuple *
dpq_conn_active_tuple(const struct dpq_conn *c)
{
	if (c->b == NULL)
		return dpq_conn_parked_tuple(c);
	return &c->b->paths[c->active].tuple;
}

/* ---- validation ------------------------------------------------------- */

void
dpq_conn_path_validated(struct dpq_conn *c, struct dpq_path *p, uint64_t now)
{
	bool was = p->validated;

	p->validated = true;
	if (p == &c->b->paths[c->active]) {
		if (!was)
			amp_update(c, now);
		/* §9.4: a new peer address gets fresh RTT and congestion
		 * state once its owner is confirmed (port-only changes keep
		 * theirs). */
		if (p->reset_on_validate) {
			p->reset_on_validate = false;
			recovery_reset(c, now);
		}
	}
}

void
dpq_conn_path_on_challenge(struct dpq_conn *c, struct dpq_path *p,
		const uint8_t *data)
{
	/* §8.2.2: one PATH_RESPONSE per PATH_CHALLENGE, on its path; the
	 * newest challenge replaces an unanswered older one. */
	memcpy(p->response, data, DPQ_PATH_DATA_LEN);
	p->response_due = true;
	/* §9.3.3: a challenge on the active path is answered with a
	 * non-probing packet too, so that a path through an attacker that
	 * forwarded our packets loses to the direct one. */
	if (p == &c->b->paths[c->active])
		c->ping_pending = true;
}

void
dpq_conn_path_on_response(struct dpq_conn *c, const uint8_t *data,
		uint64_t now)
{
	unsigned int i, k;

	/* §8.2.3: a response on any path validates the path the
	 * challenge was sent on. An unmatched one is ignored. */
	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		struct dpq_path *p = &c->b->paths[i];
		unsigned int n = p->nchallenges < DPQ_PATH_CHALLENGES ?
			p->nchallenges : DPQ_PATH_CHALLENGES;

		if (!p->in_use || !p->challenging)
			continue;
		for (k = 0; k < n; k++) {
			if (memcmp(p->challenge[k], data,
					DPQ_PATH_DATA_LEN) != 0)
				continue;
			p->challenging = false;
			p->challenge_due = false;
			c->b->stats.paths_validated++;
			dpq_conn_path_validated(c, p, now);
			settle(c);
			return;
		}
	}
}

bool
dpq_conn_path_take_challenge(struct dpq_conn *c, struct dpq_path *p,
		uint8_t *data, uint64_t now)
{
	uint64_t wait;

	if (!p->challenge_due)
		return false;
	/* §8.2.1: unpredictable data in every PATH_CHALLENGE. */
	if (gnutls_rnd(GNUTLS_RND_NONCE, data, DPQ_PATH_DATA_LEN) != 0)
		return false;
	memcpy(p->challenge[p->nchallenges % DPQ_PATH_CHALLENGES], data,
			DPQ_PATH_DATA_LEN);
	/* No more often than Initial packets (§8.2.1): one PTO, doubled
	 * for each resend. */
	wait = dpq_conn_pto(c) << (p->nchallenges < 6 ? p->nchallenges : 6);
	p->nchallenges++;
	p->challenge_due = false;
	p->challenge_retry = now + wait;
	return true;
}

/* ---- migration ----------------------------------------------------------- */

void
dpq_conn_path_on_packet(struct dpq_conn *c, struct dpq_path *p,
		const uint8_t *dcid, size_t dcid_len, bool non_probing,
		bool newest, uint64_t now)
{
	struct dpq_path *old = &c->b->paths[c->active];

	dpq_cid_set(&p->rx_dcid, dcid, dcid_len);
	/* §9.3: only the highest-numbered non-probing packet moves a
	 * server to its client's new address; clients move only on their
	 * own (dpq_conn_migrate), servers never (§9). */
	if (p == old || !non_probing || !newest ||
	    c->role != DPQ_ROLE_SERVER || dpq_conn_is_closing(c))
		return;
	if (!path_get_cid(c, p))
		return;	/* §9.5: no CID for it yet; stay until one comes */
	if (!p->validated)
		p->reset_on_validate = ip_changed(&old->tuple, &p->tuple);
	switch_to(c, p, now);
	if (!p->validated && !p->challenging)
		start_challenge(c, p, now);
	/* §9.3.3: validate the previous path as well: if the new address
	 * was an attacker forwarding copies, the client's next packets on
	 * the old path bring us back. */
	if (old->validated && !old->challenging)
		start_challenge(c, old, now);
}

int
dpq_conn_migrate_check(const struct dpq_conn *c)
{
	struct dpq_conn_peek pk;
	unsigned int i;

	if (c == NULL || c->role != DPQ_ROLE_CLIENT)
		return -EINVAL;
	c = dpq_conn_peek(c, &pk);
	if (dpq_conn_is_closing(c))
		return -EPIPE;
	if (!c->hs_confirmed)
		return -EAGAIN;		/* §9: not before confirmation */
	if (c->peer_tp_set && c->b->peer_tp.disable_active_migration)
		return -EPERM;		/* §18.2 */
	if (c->dcid.len == 0)
		return 0;
	for (i = 0; i < DPQ_CONN_PEER_CIDS; i++)
		if (c->peer_cids[i].used && !c->peer_cids[i].sent_on &&
		    !cid_on_a_path(c, &c->peer_cids[i].cid))
			return 0;
	return -EAGAIN;			/* §9.5: no unused CID yet */
}

int
dpq_conn_migrate(struct dpq_conn *c, const struct dpq_tuple *t, uint64_t now)
{
	struct dpq_path *p, *old;
	bool fresh = false;
	int rc;

	if (t == NULL)
		return -EINVAL;
	if (c != NULL && !dpq_conn_awake(c))
		return -ENOMEM;
	rc = dpq_conn_migrate_check(c);
	if (rc != 0 && rc != -EAGAIN)
		return rc;
	if (rc == -EAGAIN && !c->hs_confirmed)
		return rc;
	c->now = now;
	old = &c->b->paths[c->active];
	p = dpq_conn_path_find(c, t);
	if (p == old && dpq_netaddr_eq(&p->tuple.local, &t->local))
		return 0;
	if (p == NULL || p == old) {
		p = path_alloc(c);
		if (p == NULL)
			return -EAGAIN;
		memset(p, 0, sizeof(*p));
		fresh = true;
	}
	/* §9.5: a new local address never reuses a CID. */
	if (path_cid(c, p) == NULL && !take_unused_cid(c, &p->dcid)) {
		if (fresh)
			memset(p, 0, sizeof(*p));
		return -EAGAIN;
	}
	p->in_use = true;
	p->tuple = *t;
	/* The server's address was validated by the handshake: no limit,
	 * but the new path's reachability is checked (§9.2). */
	p->validated = true;
	p->last_rx = now;
	switch_to(c, p, now);
	if (ip_changed(&old->tuple, t))
		recovery_reset(c, now);
	start_challenge(c, p, now);
	dpq_conn_wake(c);	/* called from outside the owner's calls */
	return 0;
}

void
dpq_conn_paths_cids_changed(struct dpq_conn *c)
{
	unsigned int i, k;

	/* Paths whose peer CID was retired (Retire Prior To) pick another
	 * when they next send. */
	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		struct dpq_path *p = &c->b->paths[i];
		bool active = false;

		if (!p->in_use || i == c->active || p->dcid.len == 0)
			continue;
		for (k = 0; k < DPQ_CONN_PEER_CIDS; k++)
			if (c->peer_cids[k].used &&
			    dpq_cid_eq(&c->peer_cids[k].cid, &p->dcid))
				active = true;
		if (!active && !dpq_cid_eq(&p->dcid, &c->dcid))
			p->dcid.len = 0;
	}
}

bool
dpq_conn_path_can_send(struct dpq_conn *c, struct dpq_path *p)
{
	return path_get_cid(c, p);
}

const struct dpq_cid *
dpq_conn_path_dcid(const struct dpq_conn *c, const struct dpq_path *p)
{
	return path_cid(c, p);
}

/* ---- timers -------------------------------------------------------------- */

uint64_t
dpq_conn_paths_next_timeout(const struct dpq_conn *c)
{
	uint64_t t = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < DPQ_CONN_PATHS; i++) {
		const struct dpq_path *p = &c->b->paths[i];

		if (!p->in_use || !p->challenging)
			continue;
		if (p->validation_deadline < t)
			t = p->validation_deadline;
		if (!p->challenge_due && p->challenge_retry < t)
			t = p->challenge_retry;
	}
	return t;
}

/* §8.2.4: validation abandoned. */
static void
path_failed(struct dpq_conn *c, struct dpq_path *p, uint64_t now)
{
	p->challenging = false;
	p->challenge_due = false;
	c->b->stats.paths_failed++;
	if (p != &c->b->paths[c->active]) {
		/* The last validated path stays the way back while the
		 * active one is not validated (§9.3.3): an attacker that
		 * also drops packets must not leave us with no path. */
		if (path_index(c, p) != c->fallback ||
		    c->b->paths[c->active].validated)
			free_path(c, p);
		settle(c);
		return;
	}
	/* A validated path we use again (a server returned to it, or a
	 * client checks the path it moved to) stays ours when its challenge
	 * goes unanswered: it is the last validated peer address, the one
	 * a failed migration returns to (§9.3.2), and the idle timeout decides
	 * whether it still works. This happens when both validations of a
	 * migration fail together (the old path was challenged against
	 * off-path forwarding, §9.3.3, and is gone after a NAT rebinding):
	 * the new path's failure returns to the old one, whose own expired
	 * challenge must not then close the connection as "no validated
	 * path left". */
	if (p->validated || c->role == DPQ_ROLE_CLIENT)
		return;
	if (c->fallback != DPQ_PATH_NONE && c->b->paths[c->fallback].in_use) {
		/* §9.3.3: back to the last validated address. */
		c->b->stats.path_reverts++;
		switch_to(c, &c->b->paths[c->fallback], now);
		free_path(c, p);
		settle(c);
		return;
	}
	/* §9.3.3: no validated address left: close silently. */
	c->close.error_code = DPQ_TE_NO_VIABLE_PATH;
	snprintf(c->close.reason, sizeof(c->close.reason),
			"path validation failed, no validated path left");
	dpq_conn_set_state(c, DPQ_CONN_CLOSED);
}

void
dpq_conn_paths_on_timeout(struct dpq_conn *c, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < DPQ_CONN_PATHS && c->state != DPQ_CONN_CLOSED; i++) {
		struct dpq_path *p = &c->b->paths[i];

		if (!p->in_use || !p->challenging)
			continue;
		if (now >= p->validation_deadline)
			path_failed(c, p, now);
		else if (!p->challenge_due && now >= p->challenge_retry)
			p->challenge_due = true;
	}
}
