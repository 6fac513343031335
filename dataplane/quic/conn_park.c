/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An idle connection's memory (dpq_conn_park): what can be rebuilt goes
 * back. The expanded 1-RTT keys are most of it: with ipsec-mb's VAES
 * AES-GCM tables a key is 1.4 KB, and a connection holds four (read,
 * write, and the next generation of each derived ahead for key update,
 * RFC 9001 §6.3). Parked, it keeps the current two in their 130-byte
 * saved form and drops the next generation; empty sent-packet blocks go
 * too. The first call that sends or receives expands the keys again
 * (dpq_conn_unpark): two AES-GCM and HP key schedules, then the next
 * generation by HKDF, a few microseconds, paid once per idle period.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "dataplane/quic/conn_int.h"

struct dpq_conn_parked {
	struct dpq_pp_key_saved rx, tx;
};

bool
dpq_conn_parked(const struct dpq_conn *c)
{
	return c->parked != NULL;
}

/* Nothing may need the expanded keys or the handshake state now. */
static bool
can_park(const struct dpq_conn *c)
{
	const struct dpq_conn_keys *k = &c->ku;

	return c->state == DPQ_CONN_ESTABLISHED && c->hss == NULL &&
		c->parked == NULL && c->rx_buffered == NULL &&
		c->rx[DPQ_EPOCH_1RTT] != NULL && c->tx[DPQ_EPOCH_1RTT] != NULL &&
		k->rx_prev == NULL && k->tx_old == NULL && !k->requested &&
		/* No ACK owed (ACK-only packets received need none). */
		dpq_ackr_deadline(c->pns[DPQ_PN_SPACE_APP].ackr) ==
			DPQ_ACKR_NO_DEADLINE &&
		!dpq_conn_wants_send(c, c->now);
}

int
dpq_conn_park(struct dpq_conn *c)
{
	struct dpq_conn_parked *p;

	if (!can_park(c))
		return -EBUSY;
	p = dpq_mem_alloc(&c->mem, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	if (dpq_pp_key_save(c->rx[DPQ_EPOCH_1RTT], &p->rx) != 0 ||
	    dpq_pp_key_save(c->tx[DPQ_EPOCH_1RTT], &p->tx) != 0) {
		gnutls_memset(p, 0, sizeof(*p));
		dpq_mem_free(&c->mem, p);
		return -EINVAL;
	}
	dpq_conn_key_free(c, &c->rx[DPQ_EPOCH_1RTT]);
	dpq_conn_key_free(c, &c->tx[DPQ_EPOCH_1RTT]);
	dpq_conn_key_free(c, &c->ku.rx_next);
	dpq_conn_key_free(c, &c->ku.tx_next);
	dpq_loss_trim(&c->loss);
	/* The application space's ACK ranges: no ACK is owed now, and an
	 * ACK of our ACK (RFC 9000 §13.2.4) has usually left one range;
	 * older ones may be forgotten (§13.2.3: the floor rises, a packet
	 * below it counts as a duplicate). */
	dpq_ackr_move(&c->ackr_app, c->ackr_app_idle,
			DPQ_CONN_PARKED_RANGES);
	dpq_mem_free(&c->mem, c->ackr_app_r);
	c->ackr_app_r = NULL;
	c->parked = p;
	return 0;
}

static void
parked_free(struct dpq_conn *c)
{
	gnutls_memset(c->parked, 0, sizeof(*c->parked));
	dpq_mem_free(&c->mem, c->parked);
	c->parked = NULL;
}

int
dpq_conn_unpark(struct dpq_conn *c)
{
	struct dpq_pp_key *rx, *tx;

	if (c->parked == NULL)
		return 0;
	rx = dpq_conn_key_alloc(c);
	tx = dpq_conn_key_alloc(c);
	c->ackr_app_r = dpq_mem_alloc(&c->mem, DPQ_ACKR_MAX_RANGES *
			sizeof(*c->ackr_app_r));
	if (c->ackr_app_r != NULL)
		dpq_ackr_move(&c->ackr_app, c->ackr_app_r,
				DPQ_ACKR_MAX_RANGES);
	if (rx == NULL || tx == NULL || c->ackr_app_r == NULL ||
	    dpq_pp_key_restore(c->crypto, rx, &c->parked->rx) != 0 ||
	    dpq_pp_key_restore(c->crypto, tx, &c->parked->tx) != 0) {
		/* Without its keys it can neither send nor receive: it
		 * ends, as at an idle timeout (no CONNECTION_CLOSE). */
		dpq_conn_key_free(c, &rx);
		dpq_conn_key_free(c, &tx);
		parked_free(c);
		c->close.error_code = DPQ_TE_INTERNAL_ERROR;
		snprintf(c->close.reason, sizeof(c->close.reason),
				"out of memory for keys");
		dpq_conn_set_state(c, DPQ_CONN_CLOSED);
		return -ENOMEM;
	}
	c->rx[DPQ_EPOCH_1RTT] = rx;
	c->tx[DPQ_EPOCH_1RTT] = tx;
	parked_free(c);
	/* The next generation, ready before a packet might need it. */
	dpq_conn_keys_prepare(c);
	return 0;
}

void
dpq_conn_park_free(struct dpq_conn *c)
{
	if (c->parked != NULL)
		parked_free(c);
}
