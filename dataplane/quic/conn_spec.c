/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Speculative retransmission (docs/fec.md §11): a datagram worth more
 * than its bytes (a handshake flight, the last datagram of a transfer, a
 * REPAIR) is sent a second time, a little later, so that one loss (or a
 * short burst) does not cost a probe timeout.
 *
 * The copy is the same datagram bit for bit: its plaintext is kept when it
 * is built and sealed again, with the same keys and packet numbers, when
 * it is due; AEAD and header protection are deterministic, so it equals
 * the first on the wire, and the peer drops whichever arrives second as a
 * duplicate (RFC 9000 §12.3). Loss recovery and congestion control know
 * the packet once (it has one number); the copy is counted in the stats.
 * A copy whose keys have changed or been discarded since is dropped; one
 * the amplification limit does not allow yet waits for the peer's next
 * datagram, a few spacings at most. Shard only.
 */
#include <errno.h>
#include <string.h>

#include "dataplane/quic/conn_int.h"

int
dpq_conn_spec_parse(const char *s, uint8_t *flags)
{
	static const struct {
		const char *name;
		uint8_t flag;
	} names[] = {
		{ "handshake", DPQ_SPEC_HANDSHAKE },
		{ "tail", DPQ_SPEC_TAIL },
		{ "repair", DPQ_SPEC_REPAIR },
		{ "all", DPQ_SPEC_HANDSHAKE | DPQ_SPEC_TAIL | DPQ_SPEC_REPAIR },
	};
	uint8_t f = 0;
	size_t i, n;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (strcmp(s, "off") == 0) {
		*flags = 0;
		return 0;
	}
	while (*s != '\0') {
		n = strcspn(s, ",");
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n &&
			    strncmp(s, names[i].name, n) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -EINVAL;
		f |= names[i].flag;
		s += n;
		if (*s == ',' && *++s == '\0')
			return -EINVAL;	/* trailing comma */
	}
	*flags = f;
	return 0;
}

void
dpq_conn_spec_drop(struct dpq_conn *c)
{
	if (c->spec != NULL) {
		c->b->stats.spec_dropped += c->spec->n;
		c->spec->n = 0;
	}
}

void
dpq_conn_spec_destroy(struct dpq_conn *c)
{
	dpq_mem_free(&c->mem, c->spec);
	c->spec = NULL;
}

/* How long after the original its copy goes: past the losses that come
 * in short bursts, well within a round trip. */
static uint64_t
spacing(const struct dpq_conn *c)
{
	uint64_t s;

	if (c->conf.spec_spacing_us != 0)
		return c->conf.spec_spacing_us;
	if (c->b->loss.rtt.latest == 0)
		return DPQ_CONN_SPEC_SPACING_FIRST;
	s = c->b->loss.rtt.smoothed / 4;
	if (s < DPQ_CONN_SPEC_SPACING_MIN)
		s = DPQ_CONN_SPEC_SPACING_MIN;
	if (s > DPQ_CONN_SPEC_SPACING_MAX)
		s = DPQ_CONN_SPEC_SPACING_MAX;
	return s;
}

void
dpq_conn_spec_on_built(struct dpq_conn *c, const uint8_t *buf, size_t len,
		const struct dpq_seal_op *ops, unsigned int nops, uint64_t now)
{
	struct dpq_conn_spec *sp;
	struct dpq_spec_copy *k;
	unsigned int i;
	uint8_t why = c->spec_why & c->conf.spec_retx;

	c->spec_why = 0;
	if (why == 0 || len == 0 || len > DPQ_CONN_SPEC_MTU ||
	    nops > DPQ_CONN_MAX_SEAL_OPS)
		return;
	if (c->spec == NULL) {
		c->spec = dpq_mem_alloc(&c->mem, sizeof(*c->spec));
		if (c->spec == NULL)
			return;
		memset(c->spec, 0, sizeof(*c->spec));
	}
	sp = c->spec;
	if (sp->n == DPQ_CONN_SPEC_MAX) {
		c->b->stats.spec_dropped++;	/* the queue is full: skip */
		return;
	}
	k = &sp->q[sp->n++];
	k->due = now + spacing(c);
	k->len = (uint16_t)len;
	k->nops = (uint8_t)nops;
	k->why = why;
	memcpy(k->data, buf, len);
	for (i = 0; i < nops; i++) {
		k->ops[i] = ops[i];
		k->off[i] = (uint16_t)(ops[i].pkt - buf);
		k->epoch[i] = (uint8_t)(ops[i].key == c->tx[DPQ_EPOCH_INITIAL] ?
			DPQ_EPOCH_INITIAL : ops[i].key ==
			c->tx[DPQ_EPOCH_HANDSHAKE] ? DPQ_EPOCH_HANDSHAKE :
			DPQ_EPOCH_1RTT);
	}
}

/* What a copy may spend of the active path's amplification credit (RFC
 * 9000 §8.1): all of it but one probe datagram of 1200 bytes (see
 * build_datagram); UINT64_MAX once the address is validated. */
static uint64_t
copy_credit(const struct dpq_conn *c)
{
	uint64_t a = dpq_conn_path_allowance(c, &c->b->paths[c->active]);

	if (a == UINT64_MAX)
		return a;
	return a > DPQ_MIN_INITIAL_DATAGRAM ? a - DPQ_MIN_INITIAL_DATAGRAM : 0;
}

/* How long a copy the credit holds back may still go: a server's flight
 * is copied 5 ms after the original, when the client's own copy of its
 * Initial (the credit that pays for ours) is just arriving. */
static uint64_t
expiry(const struct dpq_conn *c)
{
	return 4 * spacing(c);
}

uint64_t
dpq_conn_spec_deadline(const struct dpq_conn *c)
{
	const struct dpq_spec_copy *k;

	if (c->spec == NULL || c->spec->n == 0)
		return UINT64_MAX;
	k = &c->spec->q[0];
	/* Waiting for credit: only a datagram from the peer brings it, and
	 * the owner offers us to send after each (no timer to spin on). */
	if (k->len > copy_credit(c))
		return UINT64_MAX;
	return k->due;
}

/* The first packet from which on every packet's keys are still the ones
 * in use (k->nops: none). A coalesced datagram whose Initial or Handshake
 * keys are gone since still has a 1-RTT packet worth sending: it is the
 * last one (RFC 9000 §12.2), so the copy can start there. */
static unsigned int
first_current(const struct dpq_conn *c, const struct dpq_spec_copy *k)
{
	unsigned int i, first = 0;

	for (i = 0; i < k->nops; i++) {
		enum dpq_epoch e = (enum dpq_epoch)k->epoch[i];

		if (k->ops[i].key != c->tx[e] ||
		    c->b->pns[dpq_epoch_space(e)].discarded)
			first = i + 1;
	}
	return first;
}

static void
pop(struct dpq_conn_spec *sp)
{
	memmove(&sp->q[0], &sp->q[1], (sp->n - 1) * sizeof(sp->q[0]));
	sp->n--;
}

size_t
dpq_conn_spec_take(struct dpq_conn *c, uint8_t *buf, size_t cap,
		size_t allow, struct dpq_seal_op *ops, unsigned int *nops,
		uint64_t now)
{
	struct dpq_conn_spec *sp = c->spec;
	struct dpq_spec_copy *k;
	unsigned int i, f;
	size_t len, from;

	while (sp != NULL && sp->n > 0 && sp->q[0].due <= now) {
		k = &sp->q[0];
		f = first_current(c, k);
		from = f < k->nops ? k->off[f] : k->len;
		len = k->len - from;	/* tags included, as built */
		if (f < k->nops && len <= cap && len > allow &&
		    !c->b->paths[c->active].validated &&
		    now <= k->due + expiry(c)) {
			/* Not enough amplification credit yet: wait for the
			 * peer's next datagram rather than lose the copy (a
			 * server's lost flight would then cost the client's
			 * retransmission and a congestion event before the
			 * first byte of data). */
			return 0;
		}
		/* Too late to be worth its bytes (held back by the credit
		 * until the address was validated, say), or unsendable. */
		if (f == k->nops || len > cap || len > allow ||
		    now > k->due + expiry(c)) {
			c->b->stats.spec_dropped++;
			pop(sp);
			continue;
		}
		memcpy(buf, k->data + from, len);
		for (i = f; i < k->nops; i++) {
			ops[i - f] = k->ops[i];
			ops[i - f].pkt = buf + (k->off[i] - from);
			ops[i - f].status = 0;
		}
		*nops = k->nops - f;
		c->b->stats.spec_sent++;
		pop(sp);
		return len;
	}
	return 0;
}
