/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tparams.c: QUIC transport parameter codec (RFC 9000 §7.3, §7.4, §18).
 *
 * Each parameter is (id varint, length varint, value). The decoder bounds
 * every value by its length field and the blob end, checks the value
 * against its §18.2 type and range, and keeps a bitmap of the ids seen to
 * refuse duplicates (§7.4). The encoder runs the same range checks so
 * dpquic never sends what it would refuse.
 */
#include "dataplane/engine/tparams.h"

#include <stddef.h>
#include <string.h>

#include "dataplane/engine/varint.h"

#define TPE	(DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR))

/* §18.2 layout of preferred_address without the CID. */
#define PREF_ADDR_FIXED	(4 + 2 + 16 + 2 + 1 + DPQ_RESET_TOKEN_LEN)

/*
 * Integer and CID parameters: offset of their field in struct dpq_tparams.
 * 0 means "not of that kind" (offset 0 is `present`, never a parameter).
 */
#define OFF(f)	offsetof(struct dpq_tparams, f)
static const size_t int_off[DPQ_TP_COUNT] = {
	[DPQ_TP_MAX_IDLE_TIMEOUT] = OFF(max_idle_timeout),
	[DPQ_TP_MAX_UDP_PAYLOAD_SIZE] = OFF(max_udp_payload_size),
	[DPQ_TP_INITIAL_MAX_DATA] = OFF(initial_max_data),
	[DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL] =
		OFF(initial_max_stream_data_bidi_local),
	[DPQ_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE] =
		OFF(initial_max_stream_data_bidi_remote),
	[DPQ_TP_INITIAL_MAX_STREAM_DATA_UNI] = OFF(initial_max_stream_data_uni),
	[DPQ_TP_INITIAL_MAX_STREAMS_BIDI] = OFF(initial_max_streams_bidi),
	[DPQ_TP_INITIAL_MAX_STREAMS_UNI] = OFF(initial_max_streams_uni),
	[DPQ_TP_ACK_DELAY_EXPONENT] = OFF(ack_delay_exponent),
	[DPQ_TP_MAX_ACK_DELAY] = OFF(max_ack_delay),
	[DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT] = OFF(active_connection_id_limit),
};
static const size_t cid_off[DPQ_TP_COUNT] = {
	[DPQ_TP_ORIGINAL_DCID] = OFF(original_dcid),
	[DPQ_TP_INITIAL_SCID] = OFF(initial_scid),
	[DPQ_TP_RETRY_SCID] = OFF(retry_scid),
};

/* §18.2 range rules for integer parameters. */
static bool
int_value_ok(unsigned int id, uint64_t v)
{
	switch (id) {
	case DPQ_TP_MAX_UDP_PAYLOAD_SIZE:
		return v >= DPQ_TP_MIN_MAX_UDP_PAYLOAD;
	case DPQ_TP_ACK_DELAY_EXPONENT:
		return v <= DPQ_TP_MAX_ACK_DELAY_EXP;
	case DPQ_TP_MAX_ACK_DELAY:
		return v < DPQ_TP_MAX_ACK_DELAY_LIMIT;
	case DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT:
		return v >= 2;
	case DPQ_TP_INITIAL_MAX_STREAMS_BIDI:
	case DPQ_TP_INITIAL_MAX_STREAMS_UNI:
		/* §4.6, §19.11: more than 2^60 streams cannot exist. */
		return v <= DPQ_TP_MAX_STREAMS_LIMIT;
	default:
		return v <= DPQ_VARINT_MAX;
	}
}

void
dpq_tparams_init_defaults(struct dpq_tparams *tp)
{
	memset(tp, 0, sizeof(*tp));
	tp->max_udp_payload_size = DPQ_TP_DEFAULT_MAX_UDP_PAYLOAD;
	tp->ack_delay_exponent = DPQ_TP_DEFAULT_ACK_DELAY_EXP;
	tp->max_ack_delay = DPQ_TP_DEFAULT_MAX_ACK_DELAY;
	tp->active_connection_id_limit = DPQ_TP_DEFAULT_ACTIVE_CID_LIMIT;
}

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int
decode_pref_addr(const uint8_t *v, size_t len, struct dpq_preferred_address *pa)
{
	size_t cid_len;

	if (len < PREF_ADDR_FIXED)
		return TPE;
	cid_len = v[4 + 2 + 16 + 2];
	/* §18.2: a zero-length CID here is a TRANSPORT_PARAMETER_ERROR. */
	if (cid_len < 1 || cid_len > DPQ_MAX_CID_LEN ||
	    len != PREF_ADDR_FIXED + cid_len)
		return TPE;
	memcpy(pa->ipv4, v, 4);
	pa->ipv4_port = rd16(v + 4);
	memcpy(pa->ipv6, v + 6, 16);
	pa->ipv6_port = rd16(v + 22);
	dpq_cid_set(&pa->cid, v + 25, cid_len);
	memcpy(pa->reset_token, v + 25 + cid_len, DPQ_RESET_TOKEN_LEN);
	return 0;
}

static int
keep_ext(struct dpq_tparams *tp, uint64_t id, const uint8_t *v, size_t len,
		const uint64_t *keep_ids, size_t n_keep)
{
	size_t i;
	bool want = keep_ids == NULL;

	for (i = 0; !want && i < n_keep; i++)
		want = keep_ids[i] == id;
	if (!want)
		return 0;
	for (i = 0; i < tp->n_ext; i++)
		if (tp->ext[i].id == id)
			return TPE;	/* §7.4: duplicate */
	if (tp->n_ext == DPQ_TPARAMS_MAX_EXT) {
		tp->n_ext_dropped++;
		return 0;
	}
	tp->ext[tp->n_ext].id = id;
	tp->ext[tp->n_ext].value = v;
	tp->ext[tp->n_ext].len = len;
	tp->n_ext++;
	return 0;
}

int
dpq_tparams_decode(const uint8_t *p, const uint8_t *end,
		enum dpq_role sender, const uint64_t *keep_ids, size_t n_keep,
		struct dpq_tparams *tp)
{
	uint64_t id, len, x;
	const uint8_t *v, *q;
	int rc;

	dpq_tparams_init_defaults(tp);
	if (p == NULL || end < p)
		return TPE;
	if ((size_t)(end - p) > DPQ_TPARAMS_MAX_LEN)
		return TPE;
	while (p < end) {
		p = dpq_varint_decode(p, end, &id);
		if (p == NULL)
			return TPE;
		p = dpq_varint_decode(p, end, &len);
		if (p == NULL || len > (uint64_t)(end - p))
			return TPE;
		v = p;
		p += len;

		if (id >= DPQ_TP_COUNT) {
			/* §7.4.2 / §18.1: unknown and reserved ids are
			 * ignored; the extension hook may keep some. */
			if (dpq_tparams_is_reserved(id))
				continue;
			rc = keep_ext(tp, id, v, (size_t)len, keep_ids, n_keep);
			if (rc != 0)
				return rc;
			continue;
		}
		if (tp->present & DPQ_TP_BIT(id))
			return TPE;	/* §7.4: duplicate */
		/* §18.2: a server MUST refuse server-only parameters. */
		if (sender == DPQ_ROLE_CLIENT &&
		    (DPQ_TP_BIT(id) & DPQ_TP_SERVER_ONLY))
			return TPE;
		tp->present |= DPQ_TP_BIT(id);

		if (int_off[id] != 0) {
			/* The varint must fill the value exactly. */
			q = dpq_varint_decode(v, v + len, &x);
			if (q == NULL || q != v + len ||
			    !int_value_ok((unsigned int)id, x))
				return TPE;
			*(uint64_t *)((uint8_t *)tp + int_off[id]) = x;
		} else if (cid_off[id] != 0) {
			/* §18.2: CIDs of v1 are at most 20 bytes. */
			if (dpq_cid_set((struct dpq_cid *)((uint8_t *)tp +
					cid_off[id]), v, (size_t)len) != 0)
				return TPE;
		} else if (id == DPQ_TP_STATELESS_RESET_TOKEN) {
			if (len != DPQ_RESET_TOKEN_LEN)
				return TPE;
			memcpy(tp->stateless_reset_token, v, DPQ_RESET_TOKEN_LEN);
		} else if (id == DPQ_TP_DISABLE_ACTIVE_MIGRATION) {
			if (len != 0)
				return TPE;
			tp->disable_active_migration = true;
		} else {	/* DPQ_TP_PREFERRED_ADDRESS */
			rc = decode_pref_addr(v, (size_t)len,
					&tp->preferred_address);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

/* ---- encoder ---------------------------------------------------------- */

static uint8_t *
put_param(uint8_t *p, const uint8_t *end, uint64_t id, const void *val,
		size_t len)
{
	p = dpq_varint_encode(p, end, id);
	if (p != NULL)
		p = dpq_varint_encode(p, end, len);
	if (p == NULL || (size_t)(end - p) < len)
		return NULL;
	if (len != 0)
		memcpy(p, val, len);
	return p + len;
}

static uint8_t *
put_int(uint8_t *p, const uint8_t *end, uint64_t id, uint64_t v)
{
	uint8_t tmp[8];
	uint8_t *e = dpq_varint_encode(tmp, tmp + sizeof(tmp), v);

	if (e == NULL)
		return NULL;
	return put_param(p, end, id, tmp, (size_t)(e - tmp));
}

static uint8_t *
put_pref_addr(uint8_t *p, const uint8_t *end,
		const struct dpq_preferred_address *pa)
{
	uint8_t tmp[PREF_ADDR_FIXED + DPQ_MAX_CID_LEN];
	size_t n;

	if (pa->cid.len < 1 || pa->cid.len > DPQ_MAX_CID_LEN)
		return NULL;
	memcpy(tmp, pa->ipv4, 4);
	tmp[4] = (uint8_t)(pa->ipv4_port >> 8);
	tmp[5] = (uint8_t)pa->ipv4_port;
	memcpy(tmp + 6, pa->ipv6, 16);
	tmp[22] = (uint8_t)(pa->ipv6_port >> 8);
	tmp[23] = (uint8_t)pa->ipv6_port;
	tmp[24] = pa->cid.len;
	memcpy(tmp + 25, pa->cid.bytes, pa->cid.len);
	memcpy(tmp + 25 + pa->cid.len, pa->reset_token, DPQ_RESET_TOKEN_LEN);
	n = PREF_ADDR_FIXED + pa->cid.len;
	return put_param(p, end, DPQ_TP_PREFERRED_ADDRESS, tmp, n);
}

uint8_t *
dpq_tparams_encode(uint8_t *p, const uint8_t *end, enum dpq_role sender,
		const struct dpq_tparams *tp)
{
	const struct dpq_cid *cp;
	unsigned int id;
	uint64_t x;
	size_t i;

	if (p == NULL || end < p || tp->n_ext > DPQ_TPARAMS_MAX_EXT)
		return NULL;
	if ((size_t)(end - p) > DPQ_TPARAMS_MAX_LEN)
		end = p + DPQ_TPARAMS_MAX_LEN;
	if (sender == DPQ_ROLE_CLIENT && (tp->present & DPQ_TP_SERVER_ONLY))
		return NULL;
	for (id = 0; id < DPQ_TP_COUNT && p != NULL; id++) {
		if (!(tp->present & DPQ_TP_BIT(id)))
			continue;
		if (int_off[id] != 0) {
			x = *(const uint64_t *)((const uint8_t *)tp + int_off[id]);
			if (!int_value_ok(id, x))
				return NULL;
			p = put_int(p, end, id, x);
		} else if (cid_off[id] != 0) {
			cp = (const struct dpq_cid *)((const uint8_t *)tp +
					cid_off[id]);
			if (cp->len > DPQ_MAX_CID_LEN)
				return NULL;
			p = put_param(p, end, id, cp->bytes, cp->len);
		} else if (id == DPQ_TP_STATELESS_RESET_TOKEN) {
			p = put_param(p, end, id, tp->stateless_reset_token,
					DPQ_RESET_TOKEN_LEN);
		} else if (id == DPQ_TP_DISABLE_ACTIVE_MIGRATION) {
			p = put_param(p, end, id, NULL, 0);
		} else {
			p = put_pref_addr(p, end, &tp->preferred_address);
		}
	}
	for (i = 0; i < tp->n_ext && p != NULL; i++) {
		/* §7.4: never send an id twice, nor a §18.2 id as ext. */
		if (tp->ext[i].id < DPQ_TP_COUNT)
			return NULL;
		for (size_t j = 0; j < i; j++)
			if (tp->ext[j].id == tp->ext[i].id)
				return NULL;
		p = put_param(p, end, tp->ext[i].id, tp->ext[i].value,
				tp->ext[i].len);
	}
	return p;
}

int
dpq_tparams_check_cids(const struct dpq_tparams *peer, enum dpq_role local,
		const struct dpq_cid_auth *a)
{
	/* §7.3: initial_source_connection_id is mandatory both ways and
	 * must match the SCID of the peer's first Initial. */
	if (!dpq_tparams_has(peer, DPQ_TP_INITIAL_SCID) ||
	    !dpq_cid_eq(&peer->initial_scid, &a->peer_scid))
		return TPE;
	if (local == DPQ_ROLE_SERVER)
		return 0;
	if (!dpq_tparams_has(peer, DPQ_TP_ORIGINAL_DCID) ||
	    !dpq_cid_eq(&peer->original_dcid, &a->odcid))
		return TPE;
	if (a->retry) {
		if (!dpq_tparams_has(peer, DPQ_TP_RETRY_SCID) ||
		    !dpq_cid_eq(&peer->retry_scid, &a->retry_scid))
			return TPE;
	} else if (dpq_tparams_has(peer, DPQ_TP_RETRY_SCID)) {
		return TPE;
	}
	/* §18.2: a server using a zero-length CID sends no preferred
	 * address. */
	if (dpq_tparams_has(peer, DPQ_TP_PREFERRED_ADDRESS) &&
	    peer->initial_scid.len == 0)
		return TPE;
	return 0;
}
