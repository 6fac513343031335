/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tparams.c: transport parameters (RFC 9000 §7.3, §7.4, §18): round
 * trip of every parameter, the RFC 9001 A.2 client parameters, duplicates,
 * server-only parameters from a client, each range rule, value length
 * mismatches, truncation, unknown/GREASE handling and the extension hook,
 * the size bound, the §7.3 CID checks, and a random/mutation loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/tparams.h"
#include "dataplane/engine/varint.h"
#include "tests/engine/engine_test.h"

#define TPE	(DPQ_TE_ERR(DPQ_TE_TRANSPORT_PARAMETER_ERROR))

/* RFC 9001 A.2: the client's quic_transport_parameters (extension 0x39
 * body, 0x32 = 50 bytes). */
static const char a2_client_tp_hex[] =
	"0408ffffffffffffffff05048000ffff07048000ffff080110010480007530"
	"0901100f088394c8f03e51570806048000ffff";

/* Blob builder. */
struct blob {
	uint8_t b[8192];
	size_t n;
};

static void
put_raw(struct blob *bl, uint64_t id, const void *v, size_t len)
{
	uint8_t *p = bl->b + bl->n, *end = bl->b + sizeof(bl->b);

	p = dpq_varint_encode(p, end, id);
	p = dpq_varint_encode(p, end, len);
	assert_non_null(p);
	if (len != 0)
		memcpy(p, v, len);
	bl->n = (size_t)(p + len - bl->b);
}

static void
put_int(struct blob *bl, uint64_t id, uint64_t v)
{
	uint8_t tmp[8];
	uint8_t *e = dpq_varint_encode(tmp, tmp + 8, v);

	assert_non_null(e);
	put_raw(bl, id, tmp, (size_t)(e - tmp));
}

static int
decode(const struct blob *bl, enum dpq_role sender, struct dpq_tparams *tp)
{
	uint8_t *p = test_dup(bl->b, bl->n);
	int rc = dpq_tparams_decode(p, p + bl->n, sender, NULL, 0, tp);

	free(p);
	return rc;
}

static bool
tparams_equal(const struct dpq_tparams *a, const struct dpq_tparams *b)
{
	size_t i;

	if (a->present != b->present ||
	    !dpq_cid_eq(&a->original_dcid, &b->original_dcid) ||
	    a->max_idle_timeout != b->max_idle_timeout ||
	    memcmp(a->stateless_reset_token, b->stateless_reset_token, 16) ||
	    a->max_udp_payload_size != b->max_udp_payload_size ||
	    a->initial_max_data != b->initial_max_data ||
	    a->initial_max_stream_data_bidi_local !=
	    b->initial_max_stream_data_bidi_local ||
	    a->initial_max_stream_data_bidi_remote !=
	    b->initial_max_stream_data_bidi_remote ||
	    a->initial_max_stream_data_uni != b->initial_max_stream_data_uni ||
	    a->initial_max_streams_bidi != b->initial_max_streams_bidi ||
	    a->initial_max_streams_uni != b->initial_max_streams_uni ||
	    a->ack_delay_exponent != b->ack_delay_exponent ||
	    a->max_ack_delay != b->max_ack_delay ||
	    a->disable_active_migration != b->disable_active_migration ||
	    a->active_connection_id_limit != b->active_connection_id_limit ||
	    !dpq_cid_eq(&a->initial_scid, &b->initial_scid) ||
	    !dpq_cid_eq(&a->retry_scid, &b->retry_scid) ||
	    a->n_ext != b->n_ext)
		return false;
	if (a->present & DPQ_TP_BIT(DPQ_TP_PREFERRED_ADDRESS)) {
		const struct dpq_preferred_address *x = &a->preferred_address;
		const struct dpq_preferred_address *y = &b->preferred_address;

		if (memcmp(x->ipv4, y->ipv4, 4) || x->ipv4_port != y->ipv4_port ||
		    memcmp(x->ipv6, y->ipv6, 16) || x->ipv6_port != y->ipv6_port ||
		    !dpq_cid_eq(&x->cid, &y->cid) ||
		    memcmp(x->reset_token, y->reset_token, 16))
			return false;
	}
	for (i = 0; i < a->n_ext; i++)
		if (a->ext[i].id != b->ext[i].id || a->ext[i].len != b->ext[i].len ||
		    (a->ext[i].len != 0 &&
		     memcmp(a->ext[i].value, b->ext[i].value, a->ext[i].len)))
			return false;
	return true;
}

/* A server's parameters with every §18.2 parameter present. */
static void
full_server_params(struct dpq_tparams *tp)
{
	static const uint8_t ext_val[] = { 0xfe, 0xc0 };
	int i;

	dpq_tparams_init_defaults(tp);
	dpq_cid_set(&tp->original_dcid, (const uint8_t *)"\x83\x94\xc8\xf0"
			"\x3e\x51\x57\x08", 8);
	tp->max_idle_timeout = 30000;
	for (i = 0; i < 16; i++)
		tp->stateless_reset_token[i] = (uint8_t)(0xa0 + i);
	tp->max_udp_payload_size = 1472;
	tp->initial_max_data = DPQ_VARINT_MAX;
	tp->initial_max_stream_data_bidi_local = 1 << 20;
	tp->initial_max_stream_data_bidi_remote = 1 << 21;
	tp->initial_max_stream_data_uni = 63;
	tp->initial_max_streams_bidi = DPQ_TP_MAX_STREAMS_LIMIT;
	tp->initial_max_streams_uni = 3;
	tp->ack_delay_exponent = 20;
	tp->max_ack_delay = 16383;
	tp->disable_active_migration = true;
	memcpy(tp->preferred_address.ipv4, "\xc0\x00\x02\x01", 4);
	tp->preferred_address.ipv4_port = 4433;
	memset(tp->preferred_address.ipv6, 0x20, 16);
	tp->preferred_address.ipv6_port = 443;
	dpq_cid_set(&tp->preferred_address.cid, (const uint8_t *)
			"0123456789abcdefghij", 20);
	memset(tp->preferred_address.reset_token, 0x77, 16);
	tp->active_connection_id_limit = 8;
	dpq_cid_set(&tp->initial_scid, (const uint8_t *)"\xf0\x67\xa5\x50", 4);
	dpq_cid_set(&tp->retry_scid, (const uint8_t *)"\x11\x22", 2);
	tp->present = DPQ_TP_BIT(DPQ_TP_COUNT) - 1;	/* all 17 */
	tp->n_ext = 1;
	tp->ext[0].id = 0xfec0;		/* a private extension */
	tp->ext[0].value = ext_val;
	tp->ext[0].len = sizeof(ext_val);
}

static void
test_roundtrip(void **state)
{
	struct dpq_tparams tp, got;
	uint8_t buf[1024], *e;
	size_t n;

	(void)state;
	full_server_params(&tp);
	e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_SERVER, &tp);
	assert_non_null(e);
	n = (size_t)(e - buf);
	uint8_t *p = test_dup(buf, n);
	assert_int_equal(dpq_tparams_decode(p, p + n, DPQ_ROLE_SERVER, NULL, 0,
			&got), 0);
	assert_true(tparams_equal(&tp, &got));
	assert_true(got.ext[0].value >= p && got.ext[0].value < p + n);
	free(p);
	/* no room: every shorter buffer fails */
	for (size_t room = 0; room < n; room++)
		assert_null(dpq_tparams_encode(buf, buf + room, DPQ_ROLE_SERVER,
				&tp));
	/* a client may not send the server-only ones */
	assert_null(dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT,
			&tp));
	tp.present &= ~DPQ_TP_SERVER_ONLY;
	e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT, &tp);
	assert_non_null(e);
	assert_int_equal(dpq_tparams_decode(buf, e, DPQ_ROLE_CLIENT, NULL, 0,
			&got), 0);
	assert_int_equal(got.present, tp.present);
	assert_int_equal(got.initial_max_data, DPQ_VARINT_MAX);
	/* nothing present: empty blob, decodes to defaults */
	dpq_tparams_init_defaults(&tp);
	e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT, &tp);
	assert_ptr_equal(e, buf);
	assert_int_equal(dpq_tparams_decode(buf, e, DPQ_ROLE_CLIENT, NULL, 0,
			&got), 0);
	assert_true(tparams_equal(&tp, &got));
}

static void
test_rfc9001_client_params(void **state)
{
	struct blob bl;
	struct dpq_tparams tp;
	static const uint8_t cid[] = { 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51,
		0x57, 0x08 };

	(void)state;
	bl.n = test_unhex(a2_client_tp_hex, bl.b, sizeof(bl.b));
	assert_int_equal(bl.n, 0x32);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	assert_int_equal(tp.initial_max_data, DPQ_VARINT_MAX);
	assert_int_equal(tp.initial_max_stream_data_bidi_local, 0xffff);
	assert_int_equal(tp.initial_max_stream_data_bidi_remote, 0xffff);
	assert_int_equal(tp.initial_max_stream_data_uni, 0xffff);
	assert_int_equal(tp.initial_max_streams_bidi, 16);
	assert_int_equal(tp.initial_max_streams_uni, 16);
	assert_int_equal(tp.max_idle_timeout, 30000);
	assert_int_equal(tp.initial_scid.len, 8);
	assert_memory_equal(tp.initial_scid.bytes, cid, 8);
	/* absent ones keep their §18.2 defaults */
	assert_false(dpq_tparams_has(&tp, DPQ_TP_MAX_UDP_PAYLOAD_SIZE));
	assert_int_equal(tp.max_udp_payload_size, 65527);
	assert_int_equal(tp.ack_delay_exponent, 3);
	assert_int_equal(tp.max_ack_delay, 25);
	assert_int_equal(tp.active_connection_id_limit, 2);
	assert_false(tp.disable_active_migration);
	/* the server authenticates the client's SCID (§7.3) */
	struct dpq_cid_auth a = { 0 };
	dpq_cid_set(&a.peer_scid, cid, 8);
	assert_int_equal(dpq_tparams_check_cids(&tp, DPQ_ROLE_SERVER, &a), 0);
}

static void
test_duplicates(void **state)
{
	struct blob bl = { .n = 0 };
	struct dpq_tparams tp;

	(void)state;
	put_int(&bl, DPQ_TP_INITIAL_MAX_DATA, 10);
	put_int(&bl, DPQ_TP_MAX_IDLE_TIMEOUT, 10);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	put_int(&bl, DPQ_TP_INITIAL_MAX_DATA, 10);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* zero-length one twice */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_DISABLE_ACTIVE_MIGRATION, NULL, 0);
	put_raw(&bl, DPQ_TP_DISABLE_ACTIVE_MIGRATION, NULL, 0);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* a kept extension twice */
	bl.n = 0;
	put_raw(&bl, 0xfec0, "a", 1);
	put_raw(&bl, 0xfec0, "b", 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* GREASE ids repeat harmlessly: they are ignored */
	bl.n = 0;
	put_raw(&bl, 27, "x", 1);
	put_raw(&bl, 27, "y", 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	assert_int_equal(tp.present, 0);
	assert_int_equal(tp.n_ext, 0);
}

static void
test_server_only_from_client(void **state)
{
	struct blob bl;
	struct dpq_tparams tp, full;
	uint8_t buf[1024], *e;
	static const unsigned int ids[] = { DPQ_TP_ORIGINAL_DCID,
		DPQ_TP_STATELESS_RESET_TOKEN, DPQ_TP_PREFERRED_ADDRESS,
		DPQ_TP_RETRY_SCID };

	(void)state;
	full_server_params(&full);
	full.n_ext = 0;
	for (size_t i = 0; i < 4; i++) {
		/* each server-only parameter alone, as the server encodes it */
		full.present = DPQ_TP_BIT(ids[i]);
		e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_SERVER,
				&full);
		assert_non_null(e);
		bl.n = (size_t)(e - buf);
		memcpy(bl.b, buf, bl.n);
		assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), 0);
		assert_true(dpq_tparams_has(&tp, ids[i]));
		/* §18.2: from a client it is a TRANSPORT_PARAMETER_ERROR */
		assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	}
}

static void
test_ranges(void **state)
{
	static const struct {
		unsigned int id;
		uint64_t v;
		bool ok;
	} cases[] = {
		{ DPQ_TP_MAX_UDP_PAYLOAD_SIZE, 1199, false },
		{ DPQ_TP_MAX_UDP_PAYLOAD_SIZE, 0, false },
		{ DPQ_TP_MAX_UDP_PAYLOAD_SIZE, 1200, true },
		{ DPQ_TP_MAX_UDP_PAYLOAD_SIZE, 65527, true },
		{ DPQ_TP_MAX_UDP_PAYLOAD_SIZE, 70000, true },
		{ DPQ_TP_ACK_DELAY_EXPONENT, 20, true },
		{ DPQ_TP_ACK_DELAY_EXPONENT, 21, false },
		{ DPQ_TP_MAX_ACK_DELAY, 16383, true },
		{ DPQ_TP_MAX_ACK_DELAY, 16384, false },
		{ DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT, 0, false },
		{ DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT, 1, false },
		{ DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT, 2, true },
		{ DPQ_TP_INITIAL_MAX_STREAMS_BIDI, UINT64_C(1) << 60, true },
		{ DPQ_TP_INITIAL_MAX_STREAMS_BIDI, (UINT64_C(1) << 60) + 1, false },
		{ DPQ_TP_INITIAL_MAX_STREAMS_UNI, UINT64_C(1) << 60, true },
		{ DPQ_TP_INITIAL_MAX_STREAMS_UNI, DPQ_VARINT_MAX, false },
		{ DPQ_TP_MAX_IDLE_TIMEOUT, DPQ_VARINT_MAX, true },
		{ DPQ_TP_INITIAL_MAX_DATA, 0, true },
	};
	struct blob bl;
	struct dpq_tparams tp;
	uint8_t buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bl.n = 0;
		put_int(&bl, cases[i].id, cases[i].v);
		assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp),
				cases[i].ok ? 0 : TPE);
		/* the encoder applies the same rule */
		dpq_tparams_init_defaults(&tp);
		tp.present = DPQ_TP_BIT(cases[i].id);
		switch (cases[i].id) {
		case DPQ_TP_MAX_UDP_PAYLOAD_SIZE:
			tp.max_udp_payload_size = cases[i].v; break;
		case DPQ_TP_ACK_DELAY_EXPONENT:
			tp.ack_delay_exponent = cases[i].v; break;
		case DPQ_TP_MAX_ACK_DELAY:
			tp.max_ack_delay = cases[i].v; break;
		case DPQ_TP_ACTIVE_CONNECTION_ID_LIMIT:
			tp.active_connection_id_limit = cases[i].v; break;
		case DPQ_TP_INITIAL_MAX_STREAMS_BIDI:
			tp.initial_max_streams_bidi = cases[i].v; break;
		case DPQ_TP_INITIAL_MAX_STREAMS_UNI:
			tp.initial_max_streams_uni = cases[i].v; break;
		case DPQ_TP_MAX_IDLE_TIMEOUT:
			tp.max_idle_timeout = cases[i].v; break;
		default:
			tp.initial_max_data = cases[i].v; break;
		}
		uint8_t *e = dpq_tparams_encode(buf, buf + 64, DPQ_ROLE_SERVER,
				&tp);
		if (cases[i].ok)
			assert_non_null(e);
		else
			assert_null(e);
	}
	/* an integer above 2^62-1 cannot be encoded */
	dpq_tparams_init_defaults(&tp);
	tp.present = DPQ_TP_BIT(DPQ_TP_INITIAL_MAX_DATA);
	tp.initial_max_data = DPQ_VARINT_MAX + 1;
	assert_null(dpq_tparams_encode(buf, buf + 64, DPQ_ROLE_SERVER, &tp));
}

static void
test_cid_and_fixed_lengths(void **state)
{
	uint8_t cid[21], pa[25 + 21 + 16];
	struct blob bl;
	struct dpq_tparams tp;
	static const unsigned int ids[] = { DPQ_TP_ORIGINAL_DCID,
		DPQ_TP_INITIAL_SCID, DPQ_TP_RETRY_SCID };

	(void)state;
	memset(cid, 0x42, sizeof(cid));
	for (size_t i = 0; i < 3; i++) {
		bl.n = 0;
		put_raw(&bl, ids[i], cid, 21);
		assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
		bl.n = 0;
		put_raw(&bl, ids[i], cid, 20);
		assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), 0);
		bl.n = 0;
		put_raw(&bl, ids[i], cid, 0);	/* zero-length CIDs exist */
		assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), 0);
		assert_true(dpq_tparams_has(&tp, ids[i]));
	}
	/* stateless_reset_token is exactly 16 bytes */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_STATELESS_RESET_TOKEN, cid, 15);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	bl.n = 0;
	put_raw(&bl, DPQ_TP_STATELESS_RESET_TOKEN, cid, 17);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	/* disable_active_migration carries no value */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_DISABLE_ACTIVE_MIGRATION, cid, 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);

	/* preferred_address: 4+2+16+2+1+cid+16 */
	memset(pa, 0, sizeof(pa));
	pa[0] = 192;
	pa[4] = 0x11;
	pa[5] = 0x51;
	pa[22] = 0x01;
	pa[23] = 0xbb;
	pa[24] = 4;
	memcpy(pa + 25, "\xc1\xc2\xc3\xc4", 4);
	memset(pa + 29, 0x99, 16);
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 45);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), 0);
	assert_int_equal(tp.preferred_address.ipv4[0], 192);
	assert_int_equal(tp.preferred_address.ipv4_port, 0x1151);
	assert_int_equal(tp.preferred_address.ipv6_port, 443);
	assert_int_equal(tp.preferred_address.cid.len, 4);
	assert_memory_equal(tp.preferred_address.cid.bytes, "\xc1\xc2\xc3\xc4", 4);
	assert_int_equal(tp.preferred_address.reset_token[15], 0x99);
	/* length one short / one long of what the CID length implies */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 44);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 46);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 24);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	/* zero-length CID (§18.2) */
	pa[24] = 0;
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 41);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	/* CID length 21 */
	pa[24] = 21;
	bl.n = 0;
	put_raw(&bl, DPQ_TP_PREFERRED_ADDRESS, pa, 25 + 21 + 16);
	assert_int_equal(decode(&bl, DPQ_ROLE_SERVER, &tp), TPE);
	/* the encoder refuses a zero-length preferred CID */
	dpq_tparams_init_defaults(&tp);
	tp.present = DPQ_TP_BIT(DPQ_TP_PREFERRED_ADDRESS);
	uint8_t buf[128];
	assert_null(dpq_tparams_encode(buf, buf + 128, DPQ_ROLE_SERVER, &tp));
}

static void
test_int_length_mismatch(void **state)
{
	struct blob bl;
	struct dpq_tparams tp;

	(void)state;
	/* a 1-byte varint in a 2-byte value */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_INITIAL_MAX_DATA, "\x05\x00", 2);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* a 2-byte varint cut to 1 byte */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_INITIAL_MAX_DATA, "\x40", 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* empty value */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_MAX_ACK_DELAY, NULL, 0);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* a longer-than-needed varint that fills the length is fine */
	bl.n = 0;
	put_raw(&bl, DPQ_TP_INITIAL_MAX_DATA, "\x40\x05", 2);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	assert_int_equal(tp.initial_max_data, 5);
}

static void
test_truncated(void **state)
{
	struct dpq_tparams tp, full;
	uint8_t buf[1024], *e;
	size_t n, k, bounds[64], nb = 0;
	const uint8_t *q;
	uint64_t id, len = 0;

	(void)state;
	full_server_params(&full);
	e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_SERVER, &full);
	n = (size_t)(e - buf);
	/* parameter boundaries */
	for (q = buf; q < e;) {
		bounds[nb++] = (size_t)(q - buf);
		q = dpq_varint_decode(q, e, &id);
		q = dpq_varint_decode(q, e, &len);
		q += len;
	}
	for (k = 0; k < n; k++) {
		bool boundary = false;

		for (size_t i = 0; i < nb; i++)
			boundary |= bounds[i] == k;
		uint8_t *p = test_dup(buf, k);
		int rc = dpq_tparams_decode(p, p + k, DPQ_ROLE_SERVER, NULL, 0,
				&tp);
		/* a prefix ending between parameters is a valid, smaller blob */
		assert_int_equal(rc, boundary ? 0 : TPE);
		free(p);
	}
	/* value length past the end */
	struct blob bl = { .n = 0 };
	put_raw(&bl, DPQ_TP_INITIAL_SCID, "\x01\x02\x03\x04", 4);
	bl.n--;
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	bl.n = 0;
	put_raw(&bl, 0x142, "\x01\x02", 2);	/* 41 42 02 01 02 */
	bl.b[2] = 0x03;	/* claim 3 bytes */
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	assert_int_equal(dpq_tparams_decode(NULL, NULL, DPQ_ROLE_CLIENT, NULL,
			0, &tp), TPE);
}

static void
test_unknown_and_grease(void **state)
{
	struct blob bl = { .n = 0 };
	struct dpq_tparams tp, again;
	uint8_t buf[512], *e;
	uint64_t keep = 0x20;
	size_t i;

	(void)state;
	put_raw(&bl, 27, "grease", 6);
	put_raw(&bl, 27 + 31 * 1000, "g", 1);
	put_raw(&bl, 0x11, "\x00\x00\x00\x01", 4);	/* version_information */
	put_int(&bl, DPQ_TP_MAX_IDLE_TIMEOUT, 5);
	put_raw(&bl, 0x20, "fec", 3);
	put_raw(&bl, 27 + 31 * 5, NULL, 0);
	assert_true(dpq_tparams_is_reserved(27 + 31 * 5));
	assert_false(dpq_tparams_is_reserved(0x20));
	/* keep every unknown non-reserved id */
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	assert_int_equal(tp.present, DPQ_TP_BIT(DPQ_TP_MAX_IDLE_TIMEOUT));
	assert_int_equal(tp.max_idle_timeout, 5);
	assert_int_equal(tp.n_ext, 2);
	assert_int_equal(tp.ext[0].id, 0x11);
	assert_int_equal(tp.ext[1].id, 0x20);
	assert_int_equal(tp.ext[1].len, 3);
	assert_memory_equal(tp.ext[1].value, "fec", 3);
	/* keep only the listed id */
	assert_int_equal(dpq_tparams_decode(bl.b, bl.b + bl.n, DPQ_ROLE_CLIENT,
			&keep, 1, &tp), 0);
	assert_int_equal(tp.n_ext, 1);
	assert_int_equal(tp.ext[0].id, 0x20);
	/* keep none */
	assert_int_equal(dpq_tparams_decode(bl.b, bl.b + bl.n, DPQ_ROLE_CLIENT,
			&keep, 0, &tp), 0);
	assert_int_equal(tp.n_ext, 0);
	/* kept extensions re-encode */
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	uint8_t *copy = test_dup(bl.b, bl.n);
	assert_int_equal(dpq_tparams_decode(copy, copy + bl.n, DPQ_ROLE_CLIENT,
			NULL, 0, &tp), 0);
	e = dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT, &tp);
	assert_non_null(e);
	assert_int_equal(dpq_tparams_decode(buf, e, DPQ_ROLE_CLIENT, NULL, 0,
			&again), 0);
	assert_true(tparams_equal(&tp, &again));
	free(copy);
	/* more unknown ids than slots: extra ones counted, not kept */
	bl.n = 0;
	for (i = 0; i < DPQ_TPARAMS_MAX_EXT + 3; i++)
		put_raw(&bl, 0x100 + i, "v", 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	assert_int_equal(tp.n_ext, DPQ_TPARAMS_MAX_EXT);
	assert_int_equal(tp.n_ext_dropped, 3);
	/* nor be sent twice */
	dpq_tparams_init_defaults(&tp);
	tp.n_ext = 2;
	tp.ext[0].id = tp.ext[1].id = 0x100;
	tp.ext[0].value = tp.ext[1].value = (const uint8_t *)"\x01";
	tp.ext[0].len = tp.ext[1].len = 1;
	assert_null(dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT,
			&tp));
	/* an ext entry may not reuse a §18.2 id */
	dpq_tparams_init_defaults(&tp);
	tp.n_ext = 1;
	tp.ext[0].id = DPQ_TP_INITIAL_MAX_DATA;
	tp.ext[0].value = (const uint8_t *)"\x01";
	tp.ext[0].len = 1;
	assert_null(dpq_tparams_encode(buf, buf + sizeof(buf), DPQ_ROLE_CLIENT,
			&tp));
}

static void
test_oversized(void **state)
{
	static uint8_t big[DPQ_TPARAMS_MAX_LEN + 16];
	struct blob bl;
	struct dpq_tparams tp;
	size_t val;
	uint8_t *out = malloc(DPQ_TPARAMS_MAX_LEN * 2);

	(void)state;
	/* one GREASE parameter padding the blob to exactly the bound:
	 * id 27 (1 byte) + 2-byte length + value */
	val = DPQ_TPARAMS_MAX_LEN - 3;
	bl.n = 0;
	put_raw(&bl, 27, big, val);
	assert_int_equal(bl.n, DPQ_TPARAMS_MAX_LEN);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), 0);
	bl.n = 0;
	put_raw(&bl, 27, big, val + 1);
	assert_int_equal(decode(&bl, DPQ_ROLE_CLIENT, &tp), TPE);
	/* the encoder stops at the bound too */
	dpq_tparams_init_defaults(&tp);
	tp.n_ext = 1;
	tp.ext[0].id = 0x40;
	tp.ext[0].value = big;
	tp.ext[0].len = DPQ_TPARAMS_MAX_LEN;
	assert_null(dpq_tparams_encode(out, out + DPQ_TPARAMS_MAX_LEN * 2,
			DPQ_ROLE_CLIENT, &tp));
	tp.ext[0].len = DPQ_TPARAMS_MAX_LEN - 4;	/* 2-byte id + len */
	assert_ptr_equal(dpq_tparams_encode(out, out + DPQ_TPARAMS_MAX_LEN * 2,
			DPQ_ROLE_CLIENT, &tp), out + DPQ_TPARAMS_MAX_LEN);
	free(out);
}

static void
test_check_cids(void **state)
{
	struct dpq_tparams srv, cli;
	struct dpq_cid_auth a = { 0 };

	(void)state;
	/* server checking the client's parameters */
	dpq_tparams_init_defaults(&cli);
	dpq_cid_set(&a.peer_scid, (const uint8_t *)"\x01\x02\x03", 3);
	assert_int_equal(dpq_tparams_check_cids(&cli, DPQ_ROLE_SERVER, &a), TPE);
	cli.present |= DPQ_TP_BIT(DPQ_TP_INITIAL_SCID);
	dpq_cid_set(&cli.initial_scid, (const uint8_t *)"\x01\x02\x04", 3);
	assert_int_equal(dpq_tparams_check_cids(&cli, DPQ_ROLE_SERVER, &a), TPE);
	dpq_cid_set(&cli.initial_scid, (const uint8_t *)"\x01\x02\x03", 3);
	assert_int_equal(dpq_tparams_check_cids(&cli, DPQ_ROLE_SERVER, &a), 0);
	/* zero-length SCIDs compare equal */
	dpq_cid_set(&cli.initial_scid, NULL, 0);
	dpq_cid_set(&a.peer_scid, NULL, 0);
	assert_int_equal(dpq_tparams_check_cids(&cli, DPQ_ROLE_SERVER, &a), 0);

	/* client checking the server's parameters, no Retry */
	memset(&a, 0, sizeof(a));
	dpq_cid_set(&a.peer_scid, (const uint8_t *)"\xaa\xbb", 2);
	dpq_cid_set(&a.odcid, (const uint8_t *)"\x83\x94\xc8\xf0\x3e\x51\x57\x08", 8);
	dpq_tparams_init_defaults(&srv);
	srv.present = DPQ_TP_BIT(DPQ_TP_INITIAL_SCID);
	dpq_cid_set(&srv.initial_scid, (const uint8_t *)"\xaa\xbb", 2);
	/* original_destination_connection_id missing */
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	srv.present |= DPQ_TP_BIT(DPQ_TP_ORIGINAL_DCID);
	dpq_cid_set(&srv.original_dcid, a.odcid.bytes, 7);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	dpq_cid_set(&srv.original_dcid, a.odcid.bytes, 8);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), 0);
	/* retry_source_connection_id without a Retry */
	srv.present |= DPQ_TP_BIT(DPQ_TP_RETRY_SCID);
	dpq_cid_set(&srv.retry_scid, (const uint8_t *)"\xf0\x67", 2);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	/* with a Retry: must be present and equal */
	a.retry = true;
	dpq_cid_set(&a.retry_scid, (const uint8_t *)"\xf0\x67", 2);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), 0);
	dpq_cid_set(&a.retry_scid, (const uint8_t *)"\xf0\x68", 2);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	srv.present &= ~DPQ_TP_BIT(DPQ_TP_RETRY_SCID);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	/* server initial_source_connection_id mismatch */
	a.retry = false;
	dpq_cid_set(&a.peer_scid, (const uint8_t *)"\xaa\xbc", 2);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
	/* preferred_address from a server with a zero-length CID */
	dpq_cid_set(&a.peer_scid, NULL, 0);
	dpq_cid_set(&srv.initial_scid, NULL, 0);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), 0);
	srv.present |= DPQ_TP_BIT(DPQ_TP_PREFERRED_ADDRESS);
	assert_int_equal(dpq_tparams_check_cids(&srv, DPQ_ROLE_CLIENT, &a), TPE);
}

static void
test_random_inputs(void **state)
{
	struct test_rng rng = { UINT64_C(0x0123456789abcdef) };
	struct dpq_tparams full, tp, again;
	uint8_t seed[1024], buf[1100], enc[DPQ_TPARAMS_MAX_LEN], *e;
	size_t seed_len, n;
	int it, rc;

	(void)state;
	full_server_params(&full);
	e = dpq_tparams_encode(seed, seed + sizeof(seed), DPQ_ROLE_SERVER, &full);
	seed_len = (size_t)(e - seed);
	for (it = 0; it < 200000; it++) {
		if (it % 2 == 0) {
			n = test_rng_next(&rng) % 96;
			test_rng_fill(&rng, buf, n);
			/* keep ids small half the time so known ids are hit */
			for (size_t k = 0; (it & 2) && k < n; k += 1 +
					test_rng_next(&rng) % 8)
				buf[k] &= 0x1f;
		} else {
			memcpy(buf, seed, seed_len);
			n = seed_len;
			int flips = 1 + (int)(test_rng_next(&rng) % 4);
			for (int k = 0; k < flips; k++)
				buf[test_rng_next(&rng) % n] ^=
					(uint8_t)(1 + test_rng_next(&rng) % 255);
			if (it & 4)
				n = (size_t)(test_rng_next(&rng) % (n + 1));
		}
		enum dpq_role role = (it & 8) ? DPQ_ROLE_SERVER : DPQ_ROLE_CLIENT;
		uint8_t *p = test_dup(buf, n);

		rc = dpq_tparams_decode(p, p + n, role, NULL, 0, &tp);
		assert_true(rc == 0 || rc == TPE);
		if (rc == 0) {
			/* what we accept, we can send back and re-read */
			e = dpq_tparams_encode(enc, enc + sizeof(enc), role, &tp);
			assert_non_null(e);
			assert_true((size_t)(e - enc) <= n);
			assert_int_equal(dpq_tparams_decode(enc, e, role, NULL,
					0, &again), 0);
			assert_true(tparams_equal(&tp, &again));
		}
		free(p);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_rfc9001_client_params),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_server_only_from_client),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_cid_and_fixed_lengths),
		cmocka_unit_test(test_int_length_mismatch),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unknown_and_grease),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_check_cids),
		cmocka_unit_test(test_random_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
