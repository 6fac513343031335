/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 1-RTT key update (RFC 9001 §6) and AEAD usage limits (§6.6).
 *
 * Generation n of the 1-RTT keys has key phase n & 1. The connection
 * holds the current keys in rx[1RTT]/tx[1RTT] and here the next ones,
 * derived ahead with "quic ku" (§6.1) so that opening a packet of a new
 * phase takes no longer than any other (§6.3, §9.5), and the previous
 * read keys for about three PTOs after the peer moved on (§6.5), for
 * reordered packets. A packet's key is chosen from its key phase bit and
 * its packet number against the lowest one opened with the current keys
 * (§6.5); the choice is noted in the open op (key_tag, the generation's
 * low byte) because a shard opens a whole burst before processing it,
 * and a packet processed earlier in the burst may have moved the keys on.
 *
 * Either side starts an update: we do when asked (dpq_conn_key_update),
 * every conf.key_update_pkts packets, or before the confidentiality
 * limit; the peer does when a packet opens with the next keys, and we
 * follow with our write keys (§6.2). Neither side may start another
 * before the previous one was acknowledged (§6.1): we wait for an ACK of
 * a packet sealed with the current keys plus three PTOs (§6.5), and at
 * least conf.key_update_gap_us (a peer's PTO may be far longer than ours:
 * libngtcp2 with a deep receive queue dropped our new phase for seconds
 * after three of our PTOs); a peer that moves on again before we
 * acknowledged its last move gets KEY_UPDATE_ERROR. Shard only.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/engine/errors.h"
#include "dataplane/quic/conn_int.h"

/* RFC 9001 §6.6 limits, in packets. AES-GCM: 2^23 sealed, 2^52 failed;
 * ChaCha20-Poly1305: no confidentiality limit within 2^62, 2^36 failed. */
#define GCM_CONF_LIMIT		(UINT64_C(1) << 23)
#define GCM_INTEG_LIMIT		(UINT64_C(1) << 52)
#define CHACHA_INTEG_LIMIT	(UINT64_C(1) << 36)

/* Three PTOs: how long old read keys stay (§6.5), and the pause after a
 * confirmed update before the next one (§6.5: the peer may need that
 * long to drop its old keys and derive new ones). */
#define KU_PTOS			3
/* conf.key_update_gap_us default: see conn.h. */
#define KU_GAP_DEFAULT_US	1000000

void
dpq_conn_keys_init(struct dpq_conn *c)
{
	struct dpq_conn_keys *k = &c->ku;

	memset(k, 0, sizeof(*k));
	k->rx_first_pn = DPQ_PN_NONE;
	k->rx_largest_pn = DPQ_PN_NONE;
	k->tx_first_pn = DPQ_PN_NONE;
	k->rx_prev_deadline = UINT64_MAX;
	k->confirmed_at = UINT64_MAX;
	/* Initial packets use AES-128-GCM until the suite is known. */
	k->conf_limit = c->conf.aead_conf_limit ? c->conf.aead_conf_limit :
		GCM_CONF_LIMIT;
	k->integ_limit = c->conf.aead_integ_limit ?
		c->conf.aead_integ_limit : GCM_INTEG_LIMIT;
}

void
dpq_conn_keys_free(struct dpq_conn *c)
{
	dpq_conn_key_free(c, &c->ku.rx_prev);
	dpq_conn_key_free(c, &c->ku.rx_next);
	dpq_conn_key_free(c, &c->ku.tx_next);
	dpq_conn_key_free(c, &c->ku.tx_old);
}

/* The limits of the AEAD negotiated (§6.6); conf values override. */
static void
set_limits(struct dpq_conn *c, const struct dpq_pp_key *k)
{
	bool chacha = k->alg == DPQ_AEAD_CHACHA20_POLY1305;

	c->ku.conf_limit = c->conf.aead_conf_limit ? c->conf.aead_conf_limit :
		chacha ? UINT64_MAX : GCM_CONF_LIMIT;
	c->ku.integ_limit = c->conf.aead_integ_limit ?
		c->conf.aead_integ_limit :
		chacha ? CHACHA_INTEG_LIMIT : GCM_INTEG_LIMIT;
}

/* next := "quic ku" of cur (§6.1). */
static int
derive(struct dpq_conn *c, struct dpq_pp_key **next,
		const struct dpq_pp_key *cur)
{
	int rc;

	*next = dpq_conn_key_alloc(c);
	if (*next == NULL)
		return -ENOMEM;
	rc = dpq_pp_key_update(c->crypto, *next, cur);
	if (rc != 0)
		dpq_conn_key_free(c, next);
	return rc;
}

void
dpq_conn_keys_prepare(struct dpq_conn *c)
{
	struct dpq_conn_keys *k = &c->ku;
	struct dpq_pp_key *rx = c->rx[DPQ_EPOCH_1RTT];
	struct dpq_pp_key *tx = c->tx[DPQ_EPOCH_1RTT];

	if (rx == NULL || tx == NULL || dpq_conn_is_closing(c) ||
	    (k->rx_next != NULL && k->tx_next != NULL))
		return;
	if (k->rx_gen == 0 && k->tx_gen == 0 && k->rx_next == NULL &&
	    k->tx_next == NULL)
		set_limits(c, tx);
	/* Without memory the keys stay as they are: a peer's update then
	 * fails to open and it will retransmit; ours waits. */
	if (k->rx_next == NULL)
		derive(c, &k->rx_next, rx);
	if (k->tx_next == NULL)
		derive(c, &k->tx_next, tx);
}

void
dpq_conn_keys_select(struct dpq_conn *c, struct dpq_open_op *op)
{
	struct dpq_conn_keys *k = &c->ku;
	uint8_t gen = (uint8_t)k->rx_gen;

	if (dpq_pkt_key_phase(op->first_byte) == (k->rx_gen & 1)) {
		op->key = c->rx[DPQ_EPOCH_1RTT];
		op->key_tag = gen;
	} else if (k->rx_prev != NULL && op->pn < k->rx_first_pn) {
		/* Older than anything of the current phase: the previous
		 * keys (§6.5). */
		op->key = k->rx_prev;
		op->key_tag = (uint8_t)(gen - 1);
	} else if (k->rx_next != NULL) {
		op->key = k->rx_next;
		op->key_tag = (uint8_t)(gen + 1);
	} else {
		/* No key for that phase: still run an AEAD with the keys
		 * at hand, which fails, so that timing does not tell the
		 * key phase (§6.3); the tag matches no generation. */
		op->key = k->rx_prev != NULL ? k->rx_prev :
			c->rx[DPQ_EPOCH_1RTT];
		op->key_tag = (uint8_t)(gen + 128);
	}
}

static void
key_update_error(struct dpq_conn *c, const char *why)
{
	dpq_conn_close_transport(c, DPQ_TE_KEY_UPDATE_ERROR, 0, why);
}

/* Write keys move to the next generation. Seal ops of this burst may
 * still point at the old ones: they go at dpq_conn_tx_done(). */
static int
rotate_tx(struct dpq_conn *c)
{
	struct dpq_conn_keys *k = &c->ku;

	if (k->tx_next == NULL &&
	    derive(c, &k->tx_next, c->tx[DPQ_EPOCH_1RTT]) != 0)
		return -ENOMEM;
	dpq_conn_key_free(c, &k->tx_old);
	k->tx_old = c->tx[DPQ_EPOCH_1RTT];
	c->tx[DPQ_EPOCH_1RTT] = k->tx_next;
	k->tx_next = NULL;
	k->tx_gen++;
	c->key_phase = (uint8_t)(k->tx_gen & 1);
	k->tx_pkts = 0;
	k->tx_first_pn = DPQ_PN_NONE;
	k->confirmed_at = UINT64_MAX;
	return 0;
}

/* A packet with number pn opened with the next read keys: they become
 * current. Opening is over for the whole burst, so the previous keys
 * can go now. */
static int
rotate_rx(struct dpq_conn *c, uint64_t pn, uint64_t now)
{
	struct dpq_conn_keys *k = &c->ku;

	dpq_conn_key_free(c, &k->rx_prev);
	k->rx_prev = c->rx[DPQ_EPOCH_1RTT];
	c->rx[DPQ_EPOCH_1RTT] = k->rx_next;
	k->rx_next = NULL;
	k->rx_gen++;
	k->rx_first_pn = pn;
	k->rx_largest_pn = pn;
	k->rx_prev_deadline = now + KU_PTOS * dpq_conn_pto(c);
	k->rx_unacked = true;
	if (k->tx_gen < k->rx_gen) {
		/* The peer started it: follow before sending anything,
		 * acknowledgments included (§6.2). */
		if (rotate_tx(c) != 0) {
			dpq_conn_close_transport(c, DPQ_TE_INTERNAL_ERROR, 0,
					"no memory for a key update");
			return DPQ_TE_ERR(DPQ_TE_INTERNAL_ERROR);
		}
		c->b->stats.key_updates_peer++;
	}
	return 0;
}

int
dpq_conn_keys_on_open(struct dpq_conn *c, const struct dpq_open_op *op,
		uint64_t now)
{
	struct dpq_conn_keys *k = &c->ku;
	uint64_t pn = op->pn;

	switch ((uint8_t)(op->key_tag - (uint8_t)k->rx_gen)) {
	case 0:		/* current keys */
		if (k->rx_first_pn == DPQ_PN_NONE || pn < k->rx_first_pn)
			k->rx_first_pn = pn;
		if (k->rx_largest_pn == DPQ_PN_NONE || pn > k->rx_largest_pn)
			k->rx_largest_pn = pn;
		return 0;
	case 0xff:	/* previous keys */
		/* §6.4: a higher packet number than one already sent with
		 * newer keys. */
		if (pn > k->rx_first_pn) {
			key_update_error(c, "old keys after newer ones");
			return DPQ_TE_ERR(DPQ_TE_KEY_UPDATE_ERROR);
		}
		return 0;
	case 1:		/* next keys: the peer moved on */
		/* §6.5: a peer that starts an update (rather than follow
		 * ours) must wait until we acknowledged its previous move. */
		if (k->tx_gen == k->rx_gen && k->rx_unacked) {
			key_update_error(c, "key update before the previous "
					"one was acknowledged");
			return DPQ_TE_ERR(DPQ_TE_KEY_UPDATE_ERROR);
		}
		/* §6.4: newer keys on a lower packet number. */
		if (k->rx_largest_pn != DPQ_PN_NONE && pn < k->rx_largest_pn) {
			key_update_error(c, "new keys below a packet number "
					"of the old ones");
			return DPQ_TE_ERR(DPQ_TE_KEY_UPDATE_ERROR);
		}
		return rotate_rx(c, pn, now);
	default:
		return -ENOKEY;
	}
}

void
dpq_conn_keys_on_auth_fail(struct dpq_conn *c)
{
	/* §6.6: past the integrity limit, stop at once. */
	if (++c->ku.auth_failures > c->ku.integ_limit &&
	    !dpq_conn_is_closing(c))
		dpq_conn_close_transport(c, DPQ_TE_AEAD_LIMIT_REACHED, 0,
				"too many packets failed authentication");
}

void
dpq_conn_keys_on_sent(struct dpq_conn *c, uint64_t pn)
{
	if (c->ku.tx_first_pn == DPQ_PN_NONE)
		c->ku.tx_first_pn = pn;
	c->ku.tx_pkts++;
}

void
dpq_conn_keys_on_ack_sent(struct dpq_conn *c)
{
	c->ku.rx_unacked = false;
}

void
dpq_conn_keys_on_acked(struct dpq_conn *c, uint64_t largest, uint64_t now)
{
	struct dpq_conn_keys *k = &c->ku;

	/* §6.1: the peer has our current keys once it acknowledged a
	 * packet sealed with them. */
	if (k->confirmed_at == UINT64_MAX && k->tx_first_pn != DPQ_PN_NONE &&
	    largest >= k->tx_first_pn)
		k->confirmed_at = now;
}

static bool
can_start(const struct dpq_conn *c, uint64_t now)
{
	const struct dpq_conn_keys *k = &c->ku;
	uint64_t wait = KU_PTOS * dpq_conn_pto(c), gap;

	gap = c->conf.key_update_gap_us ? c->conf.key_update_gap_us :
		KU_GAP_DEFAULT_US;
	if (k->tx_gen == 0)
		gap = 0;	/* the first update: nothing to wait for */
	if (wait < gap)
		wait = gap;
	return c->hs_confirmed && k->tx_gen == k->rx_gen &&
		k->rx_next != NULL && k->tx_next != NULL &&
		k->tx_old == NULL && k->confirmed_at != UINT64_MAX &&
		now >= k->confirmed_at + wait;
}

void
dpq_conn_keys_tx_check(struct dpq_conn *c, uint64_t now)
{
	struct dpq_conn_keys *k = &c->ku;
	uint64_t soft, hard;
	bool want;

	if (c->tx[DPQ_EPOCH_1RTT] == NULL || dpq_conn_is_closing(c))
		return;
	/* §6.6: update well before the confidentiality limit; if that
	 * cannot happen (a peer that never acknowledges), close before
	 * it, leaving room for the CONNECTION_CLOSE packets. */
	soft = k->conf_limit - k->conf_limit / 4;
	hard = k->conf_limit - k->conf_limit / 64;
	want = k->requested || k->tx_pkts >= soft ||
		(c->conf.key_update_pkts != 0 &&
		 k->tx_pkts >= c->conf.key_update_pkts);
	if (want && can_start(c, now) && rotate_tx(c) == 0) {
		k->requested = false;
		c->b->stats.key_updates++;
		return;
	}
	if (k->tx_pkts >= hard)
		dpq_conn_close_transport(c, DPQ_TE_AEAD_LIMIT_REACHED, 0,
				"confidentiality limit without a key update");
}

void
dpq_conn_keys_tx_done(struct dpq_conn *c)
{
	dpq_conn_key_free(c, &c->ku.tx_old);
}

uint64_t
dpq_conn_keys_deadline(const struct dpq_conn *c)
{
	return c->ku.rx_prev != NULL ? c->ku.rx_prev_deadline : UINT64_MAX;
}

void
dpq_conn_keys_on_timeout(struct dpq_conn *c, uint64_t now)
{
	/* §6.5: old read keys go three PTOs after the peer moved on. */
	if (c->ku.rx_prev != NULL && now >= c->ku.rx_prev_deadline) {
		dpq_conn_key_free(c, &c->ku.rx_prev);
		c->ku.rx_prev_deadline = UINT64_MAX;
	}
}

int
dpq_conn_key_update(struct dpq_conn *c)
{
	if (dpq_conn_is_closing(c))
		return -EPIPE;
	if (dpq_conn_unpark(c) != 0)
		return -ENOMEM;
	if (c->tx[DPQ_EPOCH_1RTT] == NULL || !c->hs_confirmed)
		return -EAGAIN;
	c->ku.requested = true;
	dpq_conn_wake(c);	/* from outside the owner's calls */
	return 0;
}
