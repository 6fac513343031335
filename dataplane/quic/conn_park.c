/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An idle connection's memory (dpq_conn_park): what can be rebuilt goes
 * back, and what cannot is kept packed.
 *
 * - The expanded 1-RTT keys: with ipsec-mb's VAES AES-GCM tables a key
 *   is 1.4 KB, and a connection holds four (read, write, and the next
 *   generation of each derived ahead for key update, RFC 9001 §6.3).
 *   Parked, it keeps the current two in their 130-byte saved form and
 *   drops the next generation.
 * - The body (struct dpq_conn_body: packet number spaces, loss recovery,
 *   congestion control, the peer's transport parameters, the paths, the
 *   counters; 3.3 KB): freed, kept as its nonzero 64-bit words (a bitmap
 *   of which, then each as a LEB128 varint). An idle connection's body
 *   is mostly zeros and small numbers: about 400 bytes. Unpacking gives
 *   back the same bytes, so a connection that wakes up is the one that
 *   parked: nothing the peer can see depends on it having slept.
 * - Empty sent-packet blocks and all but two ACK ranges.
 *
 * The first call that needs any of it (a datagram, a timer due, the
 * application, the handshake service) unparks: unpack the body, two
 * AES-GCM and HP key schedules, then the next generation by HKDF, a few
 * microseconds, paid once per idle period. Calls that only read (the
 * next timeout, statistics, the active tuple) do not unpark: the next
 * timeout is kept as it was at park (nothing can move it while the
 * connection sleeps), the others read an unpacked copy.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "dataplane/quic/conn_int.h"

#define BODY_WORDS	(sizeof(struct dpq_conn_body) / 8)
#define BODY_MAP	((BODY_WORDS + 7) / 8)
/* The packed form's worst case: every word nonzero, 10 bytes each. */
#define BODY_PACKED_MAX	(BODY_MAP + BODY_WORDS * 10)

_Static_assert(sizeof(struct dpq_conn_body) % 8 == 0,
		"the body packs as 64-bit words");

struct dpq_conn_parked {
	struct dpq_pp_key_saved rx, tx;
	/* dpq_conn_next_timeout() at park: only a call that unparks can
	 * change what it depends on. */
	uint64_t next_timeout;
	struct dpq_tuple tuple;		/* the active path's */
	uint16_t body_len;
	uint8_t body[];			/* packed struct dpq_conn_body */
};

/* Pack the body at b into out (BODY_PACKED_MAX); returns the length. */
static size_t
body_pack(const struct dpq_conn_body *b, uint8_t *out)
{
	const uint8_t *src = (const uint8_t *)b;
	uint8_t *p = out + BODY_MAP;
	size_t i;

	memset(out, 0, BODY_MAP);
	for (i = 0; i < BODY_WORDS; i++) {
		uint64_t w;

		memcpy(&w, src + i * 8, 8);
		if (w == 0)
			continue;
		out[i / 8] |= (uint8_t)(1u << (i % 8));
		while (w >= 0x80) {
			*p++ = (uint8_t)(w | 0x80);
			w >>= 7;
		}
		*p++ = (uint8_t)w;
	}
	return (size_t)(p - out);
}

/* Unpack len bytes at in into *b; -EINVAL if they do not describe a
 * body (they always do: they come from body_pack). */
static int
body_unpack(const uint8_t *in, size_t len, struct dpq_conn_body *b)
{
	uint8_t *dst = (uint8_t *)b;
	const uint8_t *p = in + BODY_MAP, *end = in + len;
	size_t i;

	if (len < BODY_MAP)
		return -EINVAL;
	for (i = 0; i < BODY_WORDS; i++) {
		uint64_t w = 0;
		unsigned int shift = 0;

		if (in[i / 8] & (1u << (i % 8))) {
			do {
				if (p == end || shift > 63)
					return -EINVAL;
				w |= (uint64_t)(*p & 0x7f) << shift;
				shift += 7;
			} while (*p++ & 0x80);
		}
		memcpy(dst + i * 8, &w, 8);
	}
	return p == end ? 0 : -EINVAL;
}

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
		c->parked == NULL && c->b != NULL && c->rx_buffered == NULL &&
		c->rx[DPQ_EPOCH_1RTT] != NULL && c->tx[DPQ_EPOCH_1RTT] != NULL &&
		k->rx_prev == NULL && k->tx_old == NULL && !k->requested &&
		/* No ACK owed (ACK-only packets received need none). */
		dpq_ackr_deadline(c->b->pns[DPQ_PN_SPACE_APP].ackr) ==
			DPQ_ACKR_NO_DEADLINE &&
		!dpq_conn_wants_send(c, c->now);
}

int
dpq_conn_park(struct dpq_conn *c)
{
	uint8_t packed[BODY_PACKED_MAX];
	struct dpq_conn_parked *p;
	size_t len;

	if (!can_park(c))
		return -EBUSY;
	dpq_loss_trim(&c->b->loss);
	c->rx_path = NULL;		/* per packet; points into the body */
	len = body_pack(c->b, packed);
	p = dpq_mem_alloc(&c->mem, sizeof(*p) + len);
	if (p == NULL)
		return -ENOMEM;
	if (dpq_pp_key_save(c->rx[DPQ_EPOCH_1RTT], &p->rx) != 0 ||
	    dpq_pp_key_save(c->tx[DPQ_EPOCH_1RTT], &p->tx) != 0) {
		gnutls_memset(p, 0, sizeof(*p));
		dpq_mem_free(&c->mem, p);
		return -EINVAL;
	}
	p->next_timeout = dpq_conn_next_timeout(c);
	p->tuple = dpq_conn_active_path(c)->tuple;
	p->body_len = (uint16_t)len;
	memcpy(p->body, packed, len);
	dpq_conn_key_free(c, &c->rx[DPQ_EPOCH_1RTT]);
	dpq_conn_key_free(c, &c->tx[DPQ_EPOCH_1RTT]);
	dpq_conn_key_free(c, &c->ku.rx_next);
	dpq_conn_key_free(c, &c->ku.tx_next);
	/* The application space's ACK ranges: no ACK is owed now, and an
	 * ACK of our ACK (RFC 9000 §13.2.4) has usually left one range;
	 * older ones may be forgotten (§13.2.3: the floor rises, a packet
	 * below it counts as a duplicate). */
	dpq_ackr_move(&c->ackr_app, c->ackr_app_idle,
			DPQ_CONN_PARKED_RANGES);
	dpq_mem_free(&c->mem, c->ackr_app_r);
	c->ackr_app_r = NULL;
	dpq_mem_free(&c->mem, c->b);
	c->b = NULL;
	c->parked = p;
	return 0;
}

static void
parked_free(struct dpq_conn *c)
{
	gnutls_memset(c->parked, 0, sizeof(*c->parked) + c->parked->body_len);
	dpq_mem_free(&c->mem, c->parked);
	c->parked = NULL;
}

int
dpq_conn_unpark(struct dpq_conn *c)
{
	struct dpq_conn_body *b;
	struct dpq_pp_key *rx, *tx;

	if (c->parked == NULL)
		return 0;
	b = dpq_mem_alloc(&c->mem, sizeof(*b));
	rx = dpq_conn_key_alloc(c);
	tx = dpq_conn_key_alloc(c);
	c->ackr_app_r = dpq_mem_alloc(&c->mem, DPQ_ACKR_MAX_RANGES *
			sizeof(*c->ackr_app_r));
	if (b == NULL || rx == NULL || tx == NULL || c->ackr_app_r == NULL ||
	    body_unpack(c->parked->body, c->parked->body_len, b) != 0 ||
	    dpq_pp_key_restore(c->crypto, rx, &c->parked->rx) != 0 ||
	    dpq_pp_key_restore(c->crypto, tx, &c->parked->tx) != 0) {
		/* Without its state it can neither send nor receive: it
		 * ends, as at an idle timeout (no CONNECTION_CLOSE). It
		 * stays parked: dpq_conn_destroy() frees the packed body
		 * with what it points to. */
		dpq_conn_key_free(c, &rx);
		dpq_conn_key_free(c, &tx);
		dpq_mem_free(&c->mem, b);
		dpq_mem_free(&c->mem, c->ackr_app_r);
		c->ackr_app_r = NULL;
		c->close.error_code = DPQ_TE_INTERNAL_ERROR;
		snprintf(c->close.reason, sizeof(c->close.reason),
				"out of memory to resume");
		dpq_conn_set_state(c, DPQ_CONN_CLOSED);
		return -ENOMEM;
	}
	dpq_ackr_move(&c->ackr_app, c->ackr_app_r, DPQ_ACKR_MAX_RANGES);
	c->b = b;
	c->rx[DPQ_EPOCH_1RTT] = rx;
	c->tx[DPQ_EPOCH_1RTT] = tx;
	parked_free(c);
	/* The next generation, ready before a packet might need it. */
	dpq_conn_keys_prepare(c);
	return 0;
}

const struct dpq_conn *
dpq_conn_peek(const struct dpq_conn *c, struct dpq_conn_peek *pk)
{
	if (c->b != NULL)
		return c;
	pk->c = *c;
	pk->c.b = &pk->b;
	/* Cannot fail: the bytes come from body_pack(). */
	if (body_unpack(c->parked->body, c->parked->body_len, &pk->b) != 0)
		memset(&pk->b, 0, sizeof(pk->b));
	return &pk->c;
}

uint64_t
dpq_conn_parked_timeout(const struct dpq_conn *c)
{
	return c->parked->next_timeout;
}

const struct dpq_tuple *
dpq_conn_parked_tuple(const struct dpq_conn *c)
{
	return &c->parked->tuple;
}

void
dpq_conn_park_free(struct dpq_conn *c)
{
	if (c->parked != NULL)
		parked_free(c);
}
