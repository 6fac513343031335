/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_packet.c: packet header codec (RFC 9000 §17, RFC 8999): the RFC
 * 9001 Appendix A.2 client Initial header and A.4 Retry, coalesced packet
 * walks, truncation at every byte, CID limits, fixed and reserved bits,
 * Version Negotiation, packet number encoding and decoding (RFC 9000
 * Appendix A.2/A.3), and a random-input loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataplane/engine/packet.h"
#include "tests/engine/engine_test.h"

/* RFC 9001 A.2: unprotected client Initial header, pn = 2 in 4 bytes. */
static const char a2_hdr_hex[] = "c300000001088394c8f03e5157080000449e00000002";
static const uint8_t a2_dcid[] = { 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08 };
/* RFC 9001 A.4: Retry answering that Initial. */
static const char a4_retry_hex[] =
	"ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f"
	"0f2496ba";

/* The A.2 packet: header then zero payload up to Length (1200 bytes). */
static size_t
a2_packet(uint8_t *buf, size_t cap)
{
	size_t n = test_unhex(a2_hdr_hex, buf, cap);

	assert_int_equal(n, 22);
	memset(buf + n, 0, 1200 - n);
	return 1200;
}

static void
test_a2_initial_header(void **state)
{
	uint8_t buf[1200];
	struct dpq_pkt_hdr h;
	size_t n = a2_packet(buf, sizeof(buf));
	uint8_t *p = test_dup(buf, n);

	(void)state;
	assert_int_equal(dpq_pkt_parse(p, p + n, 8, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_INITIAL);
	assert_int_equal(h.version, DPQ_VERSION_1);
	assert_int_equal(h.dcid_len, 8);
	assert_memory_equal(h.dcid, a2_dcid, 8);
	assert_int_equal(h.scid_len, 0);
	assert_int_equal(h.token_len, 0);
	/* Length field 0x449e: a 2-byte varint of value 1182 */
	assert_int_equal(p[16], 0x44);
	assert_int_equal(p[17], 0x9e);
	assert_int_equal(h.length, 1182);
	/* 1 + 4 + 1 + 8 + 1 + 0 + 1 (token len) + 2 (Length) = 18 */
	assert_int_equal(h.pn_offset, 18);
	assert_int_equal(h.pkt_len, 1200);
	/* header is unprotected here, so the low bits are readable */
	assert_int_equal(dpq_pkt_check_reserved_bits(h.first), 0);
	assert_int_equal(dpq_pkt_pn_len(h.first), 4);
	assert_int_equal(dpq_pkt_pn_read(p + h.pn_offset, 4), 2);
	free(p);
}

static void
test_a2_initial_write(void **state)
{
	uint8_t want[32], buf[64], *len_field = NULL, *e;
	size_t n = test_unhex(a2_hdr_hex, want, sizeof(want));
	struct dpq_pkt_long_desc d = {
		.type = DPQ_PKT_INITIAL, .version = DPQ_VERSION_1,
		.dcid = a2_dcid, .dcid_len = 8, .pn = 2, .pn_len = 4,
	};

	(void)state;
	assert_int_equal(dpq_pkt_long_hdr_len(&d), n);
	e = dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &len_field);
	assert_ptr_equal(e, buf + n);
	assert_ptr_equal(len_field, buf + 16);
	assert_int_equal(dpq_pkt_patch_length(len_field, 1182), 0);
	assert_memory_equal(buf, want, n);
	/* 2-byte Length field holds at most 16383 */
	assert_int_equal(dpq_pkt_patch_length(len_field, 16383), 0);
	assert_int_equal(dpq_pkt_patch_length(len_field, 16384),
			DPQ_ERR_NOSPACE);
	/* every buffer one byte too small fails */
	for (size_t room = 0; room < n; room++)
		assert_null(dpq_pkt_write_long(buf, buf + room, &d, &len_field));
}

static void
test_long_write_invalid(void **state)
{
	uint8_t cid[21] = { 0 }, buf[128], *lf;
	struct dpq_pkt_long_desc d = {
		.type = DPQ_PKT_HANDSHAKE, .version = DPQ_VERSION_1,
		.dcid = cid, .dcid_len = 21, .scid = cid, .scid_len = 4,
		.pn = 1, .pn_len = 1,
	};

	(void)state;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.dcid_len = 20;
	d.scid_len = 21;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.scid_len = 20;
	d.pn_len = 0;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.pn_len = 5;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.pn_len = 4;
	d.type = DPQ_PKT_RETRY;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.type = DPQ_PKT_1RTT;
	assert_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
	d.type = DPQ_PKT_HANDSHAKE;
	assert_non_null(dpq_pkt_write_long(buf, buf + sizeof(buf), &d, &lf));
}

/* Write a long-header packet with a payload of plen zero bytes. */
static size_t
put_long(uint8_t *p, uint8_t *end, enum dpq_pkt_type type,
		const uint8_t *dcid, size_t dcid_len, const uint8_t *token,
		size_t token_len, uint64_t pn, size_t plen)
{
	uint8_t *lf, *e;
	struct dpq_pkt_long_desc d = {
		.type = type, .version = DPQ_VERSION_1,
		.dcid = dcid, .dcid_len = dcid_len,
		.scid = (const uint8_t *)"\x01\x02\x03", .scid_len = 3,
		.token = token, .token_len = token_len,
		.pn = pn, .pn_len = dpq_pkt_pn_encode_len(pn, DPQ_PN_NONE),
	};

	e = dpq_pkt_write_long(p, end, &d, &lf);
	assert_non_null(e);
	assert_true((size_t)(end - e) >= plen);
	memset(e, 0, plen);
	assert_int_equal(dpq_pkt_patch_length(lf, d.pn_len + plen), 0);
	return (size_t)(e - p) + plen;
}

static void
test_coalesced_walk(void **state)
{
	uint8_t buf[1500], dcid[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t token[5] = { 't', 'o', 'k', 'e', 'n' };
	size_t n = 0, lens[4];
	struct dpq_pkt_hdr h;
	const uint8_t *p, *end;
	uint8_t *e;
	static const enum dpq_pkt_type want[] = { DPQ_PKT_INITIAL,
		DPQ_PKT_0RTT, DPQ_PKT_HANDSHAKE, DPQ_PKT_1RTT };
	int i;

	(void)state;
	lens[0] = put_long(buf, buf + sizeof(buf), DPQ_PKT_INITIAL, dcid, 8,
			token, 5, 0, 300);
	n += lens[0];
	lens[1] = put_long(buf + n, buf + sizeof(buf), DPQ_PKT_0RTT, dcid, 8,
			NULL, 0, 1, 40);
	n += lens[1];
	lens[2] = put_long(buf + n, buf + sizeof(buf), DPQ_PKT_HANDSHAKE, dcid,
			8, NULL, 0, 200, 20);
	n += lens[2];
	e = dpq_pkt_write_short(buf + n, buf + sizeof(buf), dcid, 8, true,
			true, 0x1234, 2);
	assert_non_null(e);
	memset(e, 0, 50);
	lens[3] = (size_t)(e - (buf + n)) + 50;
	n += lens[3];

	uint8_t *dg = test_dup(buf, n);
	p = dg;
	end = dg + n;
	for (i = 0; p < end; i++) {
		assert_true(i < 4);
		assert_int_equal(dpq_pkt_parse(p, end, 8, &h), 0);
		assert_int_equal(h.type, want[i]);
		assert_int_equal(h.pkt_len, lens[i]);
		assert_int_equal(h.dcid_len, 8);
		assert_memory_equal(h.dcid, dcid, 8);
		if (i == 0) {
			assert_int_equal(h.token_len, 5);
			assert_memory_equal(h.token, token, 5);
		}
		if (i < 3) {
			assert_int_equal(h.scid_len, 3);
			assert_int_equal(h.length, h.pkt_len - h.pn_offset);
		}
		if (i == 3) {
			assert_int_equal(h.pn_offset, 9);
			assert_int_equal(dpq_pkt_spin(h.first), 1);
			assert_int_equal(dpq_pkt_key_phase(h.first), 1);
			assert_int_equal(dpq_pkt_pn_len(h.first), 2);
			assert_int_equal(dpq_pkt_pn_read(p + h.pn_offset, 2),
					0x1234);
			assert_int_equal(dpq_pkt_check_reserved_bits(h.first), 0);
		}
		p += h.pkt_len;
	}
	assert_int_equal(i, 4);
	assert_ptr_equal(p, end);
	free(dg);
}

static void
test_truncated_every_byte(void **state)
{
	uint8_t buf[1200];
	struct dpq_pkt_hdr h;
	size_t n = a2_packet(buf, sizeof(buf)), k;
	int rc;

	(void)state;
	for (k = 0; k < n; k++) {
		uint8_t *p = test_dup(buf, k);

		rc = dpq_pkt_parse(p, p + k, 8, &h);
		assert_int_equal(rc, DPQ_ERR_TRUNCATED);
		free(p);
	}
	/* the Retry of A.4 at every prefix */
	n = test_unhex(a4_retry_hex, buf, sizeof(buf));
	for (k = 0; k < n; k++) {
		uint8_t *p = test_dup(buf, k);

		rc = dpq_pkt_parse(p, p + k, 8, &h);
		if (k <= 31) {
			/* 31: header + tag, empty token */
			assert_int_equal(rc, k == 31 ? DPQ_ERR_MALFORMED :
					DPQ_ERR_TRUNCATED);
		} else {
			/* Retry has no Length: a shorter token still parses */
			assert_int_equal(rc, 0);
			assert_int_equal(h.token_len, k - 31);
		}
		free(p);
	}
	/* a short header cut inside its DCID */
	buf[0] = 0x40;
	for (k = 0; k < 9; k++) {
		uint8_t *p = test_dup(buf, k);

		assert_int_equal(dpq_pkt_parse(p, p + k, 8, &h),
				DPQ_ERR_TRUNCATED);
		free(p);
	}
}

/* Raw long header: first, version, CIDs of the given lengths (bytes
 * 0xcc), then for v1 Handshake a Length of 32 and 32 zero bytes. */
static size_t
raw_long(uint8_t *buf, uint8_t first, uint32_t version, size_t dcid_len,
		size_t scid_len)
{
	size_t n = 0;

	buf[n++] = first;
	buf[n++] = (uint8_t)(version >> 24);
	buf[n++] = (uint8_t)(version >> 16);
	buf[n++] = (uint8_t)(version >> 8);
	buf[n++] = (uint8_t)version;
	buf[n++] = (uint8_t)dcid_len;
	memset(buf + n, 0xcc, dcid_len);
	n += dcid_len;
	buf[n++] = (uint8_t)scid_len;
	memset(buf + n, 0xcc, scid_len);
	n += scid_len;
	if (version == DPQ_VERSION_1) {
		buf[n++] = 0x40;
		buf[n++] = 32;
		memset(buf + n, 0, 32);
		n += 32;
	}
	return n;
}

static void
test_cid_limits(void **state)
{
	uint8_t buf[600];
	struct dpq_pkt_hdr h;
	size_t n;

	(void)state;
	memset(buf, 0, sizeof(buf));
	/* v1 Handshake (0xe0) with a 21-byte DCID or SCID: dropped (§17.2) */
	n = raw_long(buf, 0xe0, DPQ_VERSION_1, 21, 0);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_MALFORMED);
	n = raw_long(buf, 0xe0, DPQ_VERSION_1, 0, 21);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_MALFORMED);
	/* 20 and 20 are fine */
	n = raw_long(buf, 0xe0, DPQ_VERSION_1, 20, 20);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_HANDSHAKE);
	assert_int_equal(h.dcid_len, 20);
	assert_int_equal(h.scid_len, 20);
	assert_int_equal(h.pkt_len, n);
	/* unknown version: RFC 8999 allows up to 255, reported for VN */
	n = raw_long(buf, 0xc0, 0x1a2a3a4a, 200, 21);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_VERSION);
	assert_int_equal(h.type, DPQ_PKT_VERSION_UNKNOWN);
	assert_int_equal(h.version, 0x1a2a3a4a);
	assert_int_equal(h.dcid_len, 200);
	assert_ptr_equal(h.dcid, buf + 6);
	assert_int_equal(h.scid_len, 21);
	assert_ptr_equal(h.scid, buf + 207);
	assert_int_equal(h.pkt_len, n);
	n = raw_long(buf, 0x80, 0x1a2a3a4a, 255, 255);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_VERSION);
	assert_int_equal(h.dcid_len, 255);
	assert_int_equal(h.scid_len, 255);
	/* unknown version whose SCID runs past the end: truncated */
	assert_int_equal(dpq_pkt_parse(buf, buf + n - 1, 8, &h),
			DPQ_ERR_TRUNCATED);
	/* our own short-header CID length above 20 is refused */
	buf[0] = 0x40;
	assert_int_equal(dpq_pkt_parse(buf, buf + 100, 21, &h),
			DPQ_ERR_MALFORMED);
}

static void
test_fixed_and_reserved_bits(void **state)
{
	uint8_t buf[1200];
	struct dpq_pkt_hdr h;
	size_t n = a2_packet(buf, sizeof(buf));

	(void)state;
	buf[0] &= (uint8_t)~DPQ_PKT_FIXED_BIT;
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_FIXED_BIT);
	/* short header with fixed bit 0 */
	buf[0] = 0x00;
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), DPQ_ERR_FIXED_BIT);
	/* reserved bits after HP removal */
	assert_int_equal(dpq_pkt_check_reserved_bits(0xc3), 0);
	assert_int_equal(dpq_pkt_check_reserved_bits(0xc0 | 0x04),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
	assert_int_equal(dpq_pkt_check_reserved_bits(0xc0 | 0x08),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
	assert_int_equal(dpq_pkt_check_reserved_bits(0x40 | 0x27), 0);
	assert_int_equal(dpq_pkt_check_reserved_bits(0x40 | 0x08),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
	assert_int_equal(dpq_pkt_check_reserved_bits(0x40 | 0x10),
			DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION));
}

static void
test_too_short_for_sample(void **state)
{
	uint8_t buf[64], dcid[4] = { 9, 9, 9, 9 }, *e;
	struct dpq_pkt_hdr h;
	size_t n;

	(void)state;
	/* long header whose Length is 19 < 4 + 16 (RFC 9001 §5.4.2) */
	n = put_long(buf, buf + sizeof(buf), DPQ_PKT_HANDSHAKE, dcid, 4, NULL,
			0, 0, 18);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 4, &h), DPQ_ERR_MALFORMED);
	n = put_long(buf, buf + sizeof(buf), DPQ_PKT_HANDSHAKE, dcid, 4, NULL,
			0, 0, 19);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 4, &h), 0);
	/* short header: 19 bytes after pn_offset is too few, 20 enough */
	e = dpq_pkt_write_short(buf, buf + sizeof(buf), dcid, 4, false, false,
			7, 1);
	memset(e, 0, 20);
	assert_int_equal(dpq_pkt_parse(buf, buf + 5 + 19, 4, &h),
			DPQ_ERR_MALFORMED);
	assert_int_equal(dpq_pkt_parse(buf, buf + 5 + 20, 4, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_1RTT);
	assert_int_equal(dpq_pkt_spin(h.first), 0);
	assert_int_equal(dpq_pkt_key_phase(h.first), 0);
	/* short writer argument checks */
	assert_null(dpq_pkt_write_short(buf, buf + 64, dcid, 21, 0, 0, 1, 1));
	assert_null(dpq_pkt_write_short(buf, buf + 64, dcid, 4, 0, 0, 1, 5));
	assert_null(dpq_pkt_write_short(buf, buf + 5, dcid, 4, 0, 0, 1, 1));
}

static void
test_vn_roundtrip(void **state)
{
	static const uint32_t versions[] = { 0x00000001, 0x0a1a2a3a,
		0xff00001d };
	uint8_t buf[600], dcid[255], scid[255], *e;
	struct dpq_pkt_hdr h;
	size_t n;

	(void)state;
	memset(dcid, 0xd1, sizeof(dcid));
	memset(scid, 0x5c, sizeof(scid));
	e = dpq_pkt_write_vn(buf, buf + sizeof(buf), 0x7f, dcid, 5, scid, 8,
			versions, 3);
	assert_non_null(e);
	n = (size_t)(e - buf);
	assert_int_equal(n, 7 + 5 + 8 + 12);
	assert_true(buf[0] & DPQ_PKT_FORM_LONG);
	assert_true(buf[0] & DPQ_PKT_FIXED_BIT);
	uint8_t *p = test_dup(buf, n);
	assert_int_equal(dpq_pkt_parse(p, p + n, 8, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_VN);
	assert_int_equal(h.version, 0);
	assert_int_equal(h.dcid_len, 5);
	assert_int_equal(h.scid_len, 8);
	assert_int_equal(h.vn_count, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(dpq_pkt_vn_version(&h, i), versions[i]);
	assert_int_equal(dpq_pkt_vn_version(&h, 3), 0);
	/* a client whose version is listed must discard the VN (§6.2) */
	assert_true(dpq_pkt_vn_has_version(&h, DPQ_VERSION_1));
	assert_false(dpq_pkt_vn_has_version(&h, 2));
	assert_int_equal(h.pkt_len, n);
	/* VN is never answered with VN */
	assert_false(dpq_pkt_vn_should_send(&h, 1500));
	/* a payload that is not a multiple of 4 is malformed */
	assert_int_equal(dpq_pkt_parse(p, p + n - 1, 8, &h), DPQ_ERR_MALFORMED);
	free(p);

	/* 255-byte CIDs (RFC 8999) round trip */
	e = dpq_pkt_write_vn(buf, buf + sizeof(buf), 0, dcid, 255, scid, 255,
			versions, 1);
	assert_non_null(e);
	n = (size_t)(e - buf);
	assert_int_equal(dpq_pkt_parse(buf, buf + n, 8, &h), 0);
	assert_int_equal(h.dcid_len, 255);
	assert_int_equal(h.scid_len, 255);
	assert_int_equal(h.vn_count, 1);
	/* no room / no versions */
	for (size_t room = 0; room < n; room++)
		assert_null(dpq_pkt_write_vn(buf, buf + room, 0, dcid, 255,
				scid, 255, versions, 1));
	assert_null(dpq_pkt_write_vn(buf, buf + sizeof(buf), 0, dcid, 1, scid,
			1, versions, 0));
}

static void
test_vn_should_send(void **state)
{
	uint8_t buf[1300];
	struct dpq_pkt_hdr h;

	(void)state;
	memset(buf, 0, sizeof(buf));
	buf[0] = 0xc0;
	buf[1] = 0xba;
	buf[2] = 0xba;
	buf[3] = 0xba;
	buf[4] = 0xba;
	buf[5] = 8;
	buf[14] = 8;
	assert_int_equal(dpq_pkt_parse(buf, buf + 1200, 8, &h), DPQ_ERR_VERSION);
	/* RFC 9000 §5.2.2: answer only datagrams of >= 1200 bytes */
	assert_true(dpq_pkt_vn_should_send(&h, 1200));
	assert_false(dpq_pkt_vn_should_send(&h, 1199));
	/* a supported version never triggers VN */
	buf[1] = 0;
	buf[2] = 0;
	buf[3] = 0;
	buf[4] = 1;
	buf[23] = 0;		/* token length */
	buf[24] = 0x40;		/* Length 100 */
	buf[25] = 100;
	assert_int_equal(dpq_pkt_parse(buf, buf + 1200, 8, &h), 0);
	assert_false(dpq_pkt_vn_should_send(&h, 1200));
}

static void
test_retry_a4(void **state)
{
	uint8_t raw[64], buf[64], pseudo[128], *e;
	static const uint8_t scid[] = { 0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42,
		0x62, 0xb5 };
	static const uint8_t tag[] = { 0x04, 0xa2, 0x65, 0xba, 0x2e, 0xff,
		0x4d, 0x82, 0x90, 0x58, 0xfb, 0x3f, 0x0f, 0x24, 0x96, 0xba };
	struct dpq_pkt_hdr h;
	size_t n = test_unhex(a4_retry_hex, raw, sizeof(raw));

	(void)state;
	assert_int_equal(n, 36);
	uint8_t *p = test_dup(raw, n);
	assert_int_equal(dpq_pkt_parse(p, p + n, 8, &h), 0);
	assert_int_equal(h.type, DPQ_PKT_RETRY);
	assert_int_equal(h.version, 1);
	assert_int_equal(h.dcid_len, 0);
	assert_int_equal(h.scid_len, 8);
	assert_memory_equal(h.scid, scid, 8);
	assert_int_equal(h.token_len, 5);
	assert_memory_equal(h.token, "token", 5);
	assert_ptr_equal(h.retry_tag, p + n - 16);
	assert_memory_equal(h.retry_tag, tag, 16);
	assert_int_equal(h.pkt_len, n);

	/* writer reproduces the bytes before the tag */
	struct dpq_pkt_long_desc d = {
		.version = DPQ_VERSION_1, .scid = scid, .scid_len = 8,
		.token = (const uint8_t *)"token", .token_len = 5,
	};
	e = dpq_pkt_write_retry(buf, buf + sizeof(buf), &d, 0x0f);
	assert_ptr_equal(e, buf + n - 16);
	assert_memory_equal(buf, raw, n - 16);
	for (size_t room = 0; room < n - 16; room++)
		assert_null(dpq_pkt_write_retry(buf, buf + room, &d, 0x0f));
	d.token_len = 0;
	assert_null(dpq_pkt_write_retry(buf, buf + sizeof(buf), &d, 0));

	/* RFC 9001 §5.8 pseudo-packet: ODCID len, ODCID, Retry sans tag */
	e = dpq_pkt_retry_pseudo(pseudo, pseudo + sizeof(pseudo), a2_dcid, 8,
			p, h.pkt_len - DPQ_RETRY_TAG_LEN);
	assert_ptr_equal(e, pseudo + 1 + 8 + 20);
	assert_int_equal(pseudo[0], 8);
	assert_memory_equal(pseudo + 1, a2_dcid, 8);
	assert_memory_equal(pseudo + 9, raw, 20);
	for (size_t room = 0; room < 29; room++)
		assert_null(dpq_pkt_retry_pseudo(pseudo, pseudo + room,
				a2_dcid, 8, p, 20));
	assert_null(dpq_pkt_retry_pseudo(pseudo, pseudo + sizeof(pseudo),
			raw, 21, p, 20));

	/* empty token (§17.2.5.2) and shorter than a tag */
	assert_int_equal(dpq_pkt_parse(p, p + 15 + 16, 8, &h) , DPQ_ERR_MALFORMED);
	free(p);
	memcpy(buf, raw, 15);
	memcpy(buf + 15, tag, 16);
	p = test_dup(buf, 31);
	assert_int_equal(dpq_pkt_parse(p, p + 31, 8, &h), DPQ_ERR_MALFORMED);
	assert_int_equal(dpq_pkt_parse(p, p + 30, 8, &h), DPQ_ERR_TRUNCATED);
	free(p);
}

static void
test_pn_encode_len(void **state)
{
	(void)state;
	/* RFC 9000 Appendix A.2 */
	assert_int_equal(dpq_pkt_pn_encode_len(0xac5c02, 0xabe8b3), 2);
	assert_int_equal(dpq_pkt_pn_encode_len(0xace8fe, 0xabe8b3), 3);
	/* nothing acknowledged yet */
	assert_int_equal(dpq_pkt_pn_encode_len(0, DPQ_PN_NONE), 1);
	assert_int_equal(dpq_pkt_pn_encode_len(127, DPQ_PN_NONE), 1);
	assert_int_equal(dpq_pkt_pn_encode_len(128, DPQ_PN_NONE), 2);
	/* boundaries: distance 2^(8n-1) still fits n bytes */
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + 128, 1000), 1);
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + 129, 1000), 2);
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + 32768, 1000), 2);
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + 32769, 1000), 3);
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + (1 << 23), 1000), 3);
	assert_int_equal(dpq_pkt_pn_encode_len(1000 + (1 << 23) + 1, 1000), 4);
	assert_int_equal(dpq_pkt_pn_encode_len(DPQ_PN_MAX, 0), 4);
	assert_int_equal(dpq_pkt_pn_encode_len(DPQ_PN_MAX, DPQ_PN_MAX - 1), 1);
}

static void
test_pn_decode(void **state)
{
	const uint64_t top = UINT64_C(1) << 62;

	(void)state;
	/* RFC 9000 Appendix A.3 */
	assert_int_equal(dpq_pkt_pn_decode(0xa82f30ea, 0x9b32, 2), 0xa82f9b32);
	/* first packet */
	assert_int_equal(dpq_pkt_pn_decode(DPQ_PN_NONE, 0, 1), 0);
	assert_int_equal(dpq_pkt_pn_decode(DPQ_PN_NONE, 5, 4), 5);
	/* near 0: no wrap below zero */
	assert_int_equal(dpq_pkt_pn_decode(0, 0xff, 1), 255);
	assert_int_equal(dpq_pkt_pn_decode(3, 0x00, 1), 0);
	/* window edges around expected = 301 (hwin 128) */
	assert_int_equal(dpq_pkt_pn_decode(300, 0x2c, 1), 300);
	assert_int_equal(dpq_pkt_pn_decode(300, 0xad, 1), 429);
	assert_int_equal(dpq_pkt_pn_decode(300, 0xae, 1), 174);
	assert_int_equal(dpq_pkt_pn_decode(300, 0x2d, 1), 301);
	assert_int_equal(dpq_pkt_pn_decode(400, 0x11, 1), 0x211);
	/* near 2^62: never return more than 2^62-1 by adding a window */
	assert_int_equal(dpq_pkt_pn_decode(top - 2, 0xff, 1), top - 1);
	assert_int_equal(dpq_pkt_pn_decode(top - 2, 0x00, 1), top - 256);
	assert_int_equal(dpq_pkt_pn_decode(top - 200, 0x10, 1), top - 256 + 0x10);
	/* round trip: encode length from largest_acked, decode at receiver
	 * that has seen anything between largest_acked and pn - 1 */
	struct test_rng rng = { 42 };
	for (int i = 0; i < 100000; i++) {
		uint64_t acked = test_rng_next(&rng) >> (2 + test_rng_next(&rng) % 62);
		uint64_t pn = acked + 1 + test_rng_next(&rng) % 100000;
		size_t len = dpq_pkt_pn_encode_len(pn, acked);
		uint64_t rx = acked + test_rng_next(&rng) % (pn - acked);
		uint64_t trunc = pn & ((UINT64_C(1) << (8 * len)) - 1);

		if (pn > DPQ_PN_MAX)
			continue;
		assert_int_equal(dpq_pkt_pn_decode(rx, trunc, len), pn);
	}
}

static void
test_pn_write_read(void **state)
{
	uint8_t buf[4];

	(void)state;
	assert_ptr_equal(dpq_pkt_pn_write(buf, buf + 4, 0x11223344, 3), buf + 3);
	assert_int_equal(buf[0], 0x22);
	assert_int_equal(buf[2], 0x44);
	assert_int_equal(dpq_pkt_pn_read(buf, 3), 0x223344);
	assert_null(dpq_pkt_pn_write(buf, buf + 2, 1, 3));
	assert_null(dpq_pkt_pn_write(buf, buf + 4, 1, 0));
	assert_null(dpq_pkt_pn_write(buf, buf + 4, 1, 5));
}

/* Random bytes and mutated valid packets through the parser. */
static void
test_random_inputs(void **state)
{
	struct test_rng rng = { UINT64_C(0x1234567890abcdef) };
	uint8_t seed[1200], buf[1300];
	struct dpq_pkt_hdr h;
	size_t seed_len = a2_packet(seed, sizeof(seed));
	size_t a4_len, n;
	uint8_t a4[64];
	int i, rc;

	(void)state;
	a4_len = test_unhex(a4_retry_hex, a4, sizeof(a4));
	for (i = 0; i < 200000; i++) {
		switch (i % 4) {
		case 0:	/* pure noise, short */
			n = test_rng_next(&rng) % 80;
			test_rng_fill(&rng, buf, n);
			break;
		case 1:	/* mutated A.2 Initial header */
			n = 22 + test_rng_next(&rng) % 60;
			memcpy(buf, seed, n);
			for (int k = 0; k < 3; k++)
				buf[test_rng_next(&rng) % 22] ^=
					(uint8_t)test_rng_next(&rng);
			break;
		case 2:	/* mutated Retry */
			n = test_rng_next(&rng) % (a4_len + 1);
			memcpy(buf, a4, n);
			if (n != 0)
				buf[test_rng_next(&rng) % n] ^=
					(uint8_t)test_rng_next(&rng);
			break;
		default:	/* noise with plausible long-header start */
			n = test_rng_next(&rng) % 300;
			test_rng_fill(&rng, buf, n);
			if (n > 5) {
				buf[0] |= 0xc0;
				buf[1] = buf[2] = buf[3] = 0;
				buf[4] = (i & 8) ? 1 : 0;
			}
			break;
		}
		uint8_t *p = test_dup(buf, n);
		const uint8_t *q = p, *end = p + n;
		int guard = 0;

		/* walk like a receiver: stop at the first bad packet */
		while (q < end && guard++ < 64) {
			rc = dpq_pkt_parse(q, end, (size_t)(i % 21), &h);
			if (rc != 0)
				break;
			assert_true(h.pkt_len >= 1);
			assert_true(h.pkt_len <= (size_t)(end - q));
			if (h.type != DPQ_PKT_VN && h.type != DPQ_PKT_RETRY) {
				assert_true(h.pn_offset + 20 <= h.pkt_len);
				(void)dpq_pkt_pn_read(q + h.pn_offset, 4);
			}
			if (h.type == DPQ_PKT_VN)
				(void)dpq_pkt_vn_has_version(&h, 1);
			q += h.pkt_len;
		}
		free(p);
	}
	(void)seed_len;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a2_initial_header),
		cmocka_unit_test(test_a2_initial_write),
		cmocka_unit_test(test_long_write_invalid),
		cmocka_unit_test(test_coalesced_walk),
		cmocka_unit_test(test_truncated_every_byte),
		cmocka_unit_test(test_cid_limits),
		cmocka_unit_test(test_fixed_and_reserved_bits),
		cmocka_unit_test(test_too_short_for_sample),
		cmocka_unit_test(test_vn_roundtrip),
		cmocka_unit_test(test_vn_should_send),
		cmocka_unit_test(test_retry_a4),
		cmocka_unit_test(test_pn_encode_len),
		cmocka_unit_test(test_pn_decode),
		cmocka_unit_test(test_pn_write_read),
		cmocka_unit_test(test_random_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
