/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_frame.c: frame codec (RFC 9000 §19) and frame table (§12.4):
 * every frame type round-trips, truncation at every byte is rejected,
 * encoders refuse buffers one byte short, hostile values give the
 * transport error §19 names, ACK ranges iterate, the builder helpers are
 * exact, and a deterministic random/mutation loop runs every decoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "dataplane/engine/frame.h"
#include "tests/engine/engine_test.h"

#define FEE	(DPQ_TE_ERR(DPQ_TE_FRAME_ENCODING_ERROR))
#define PV	(DPQ_TE_ERR(DPQ_TE_PROTOCOL_VIOLATION))

static const uint8_t data300[300] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t cid20[20] = { 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5 };
static const uint8_t token16[16] = { 0x70, 0x71, 0x72, 0x73, 0x74 };
static uint8_t ack_buf[64], ack_ecn_buf[64];

static bool
bytes_eq(const uint8_t *a, const uint8_t *b, uint64_t n)
{
	return n == 0 || memcmp(a, b, (size_t)n) == 0;
}

static bool
frames_equal(const struct dpq_frame *a, const struct dpq_frame *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case DPQ_FT_PADDING:
		return a->padding.len == b->padding.len;
	case DPQ_FT_PING:
	case DPQ_FT_HANDSHAKE_DONE:
		return true;
	case DPQ_FT_ACK:
	case DPQ_FT_ACK_ECN:
		return a->ack.largest == b->ack.largest &&
			a->ack.ack_delay == b->ack.ack_delay &&
			a->ack.first_range == b->ack.first_range &&
			a->ack.range_count == b->ack.range_count &&
			a->ack.ranges_end - a->ack.ranges ==
			b->ack.ranges_end - b->ack.ranges &&
			bytes_eq(a->ack.ranges, b->ack.ranges,
				(uint64_t)(a->ack.ranges_end - a->ack.ranges)) &&
			a->ack.ecn.ect0 == b->ack.ecn.ect0 &&
			a->ack.ecn.ect1 == b->ack.ecn.ect1 &&
			a->ack.ecn.ce == b->ack.ecn.ce;
	case DPQ_FT_RESET_STREAM:
		return a->reset_stream.stream_id == b->reset_stream.stream_id &&
			a->reset_stream.app_error == b->reset_stream.app_error &&
			a->reset_stream.final_size == b->reset_stream.final_size;
	case DPQ_FT_STOP_SENDING:
		return a->stop_sending.stream_id == b->stop_sending.stream_id &&
			a->stop_sending.app_error == b->stop_sending.app_error;
	case DPQ_FT_CRYPTO:
		return a->crypto.offset == b->crypto.offset &&
			a->crypto.len == b->crypto.len &&
			bytes_eq(a->crypto.data, b->crypto.data, a->crypto.len);
	case DPQ_FT_NEW_TOKEN:
		return a->new_token.len == b->new_token.len &&
			bytes_eq(a->new_token.token, b->new_token.token,
				a->new_token.len);
	case DPQ_FT_MAX_DATA:
		return a->max_data.max == b->max_data.max;
	case DPQ_FT_MAX_STREAM_DATA:
		return a->max_stream_data.stream_id ==
			b->max_stream_data.stream_id &&
			a->max_stream_data.max == b->max_stream_data.max;
	case DPQ_FT_MAX_STREAMS_BIDI:
	case DPQ_FT_MAX_STREAMS_UNI:
		return a->max_streams.max == b->max_streams.max;
	case DPQ_FT_DATA_BLOCKED:
		return a->data_blocked.limit == b->data_blocked.limit;
	case DPQ_FT_STREAM_DATA_BLOCKED:
		return a->stream_data_blocked.stream_id ==
			b->stream_data_blocked.stream_id &&
			a->stream_data_blocked.limit ==
			b->stream_data_blocked.limit;
	case DPQ_FT_STREAMS_BLOCKED_BIDI:
	case DPQ_FT_STREAMS_BLOCKED_UNI:
		return a->streams_blocked.limit == b->streams_blocked.limit;
	case DPQ_FT_NEW_CONNECTION_ID:
		return a->new_cid.seq == b->new_cid.seq &&
			a->new_cid.retire_prior_to == b->new_cid.retire_prior_to &&
			a->new_cid.cid_len == b->new_cid.cid_len &&
			bytes_eq(a->new_cid.cid, b->new_cid.cid,
				a->new_cid.cid_len) &&
			bytes_eq(a->new_cid.reset_token, b->new_cid.reset_token,
				16);
	case DPQ_FT_RETIRE_CONNECTION_ID:
		return a->retire_cid.seq == b->retire_cid.seq;
	case DPQ_FT_PATH_CHALLENGE:
	case DPQ_FT_PATH_RESPONSE:
		return memcmp(a->path.data, b->path.data, 8) == 0;
	case DPQ_FT_CONNECTION_CLOSE:
	case DPQ_FT_CONNECTION_CLOSE_APP:
		return a->close.error_code == b->close.error_code &&
			a->close.frame_type == b->close.frame_type &&
			a->close.reason_len == b->close.reason_len &&
			bytes_eq(a->close.reason, b->close.reason,
				a->close.reason_len);
	default:
		return dpq_frame_is_stream(a->type) &&
			a->stream.stream_id == b->stream.stream_id &&
			a->stream.offset == b->stream.offset &&
			a->stream.len == b->stream.len &&
			a->stream.fin == b->stream.fin &&
			bytes_eq(a->stream.data, b->stream.data, a->stream.len);
	}
}

#define MAX_SAMPLES 48

/* One or more samples of every frame type, including all 8 STREAM
 * variants and values needing each varint length. */
static size_t
samples(struct dpq_frame *s)
{
	static const struct dpq_ack_range r[] = {
		{ 990, 1000 }, { 983, 986 }, { 100, 500 }, { 0, 0 },
	};
	static const struct dpq_ecn_counts ecn = { 7, 70000, UINT64_C(1) << 40 };
	size_t n = 0;
	uint64_t t;
	struct dpq_frame f;

	memset(s, 0, sizeof(*s) * MAX_SAMPLES);
	s[n].type = DPQ_FT_PADDING;
	s[n++].padding.len = 3;
	s[n++].type = DPQ_FT_PING;
	/* ACK and ACK_ECN: take the encoded ranges from the encoder */
	assert_non_null(dpq_frame_encode_ack(ack_buf, ack_buf + 64, r, 4,
			1234, NULL));
	assert_true(dpq_frame_decode(ack_buf, ack_buf + 64, &f) > 0);
	s[n++] = f;
	assert_non_null(dpq_frame_encode_ack(ack_ecn_buf, ack_ecn_buf + 64, r,
			1, 0, &ecn));
	assert_true(dpq_frame_decode(ack_ecn_buf, ack_ecn_buf + 64, &f) > 0);
	s[n++] = f;
	s[n].type = DPQ_FT_RESET_STREAM;
	s[n].reset_stream.stream_id = 4;
	s[n].reset_stream.app_error = 0x1234;
	s[n++].reset_stream.final_size = UINT64_C(1) << 33;
	s[n].type = DPQ_FT_STOP_SENDING;
	s[n].stop_sending.stream_id = DPQ_VARINT_MAX;
	s[n++].stop_sending.app_error = 77;
	s[n].type = DPQ_FT_CRYPTO;
	s[n].crypto.offset = 70000;
	s[n].crypto.len = 100;
	s[n++].crypto.data = data300;
	s[n].type = DPQ_FT_NEW_TOKEN;
	s[n].new_token.len = 16;
	s[n++].new_token.token = token16;
	for (t = DPQ_FT_STREAM; t <= DPQ_FT_STREAM_LAST; t++) {
		s[n].type = t;
		s[n].stream.stream_id = 0x3ff;
		s[n].stream.offset = (t & DPQ_STREAM_FLAG_OFF) ? 123456 : 0;
		s[n].stream.len = (t & 1) ? 0 : 200;
		s[n].stream.data = data300;
		s[n++].stream.fin = (t & DPQ_STREAM_FLAG_FIN) != 0;
	}
	s[n].type = DPQ_FT_MAX_DATA;
	s[n++].max_data.max = 1 << 20;
	s[n].type = DPQ_FT_MAX_STREAM_DATA;
	s[n].max_stream_data.stream_id = 9;
	s[n++].max_stream_data.max = 65;
	s[n].type = DPQ_FT_MAX_STREAMS_BIDI;
	s[n++].max_streams.max = DPQ_MAX_STREAMS_LIMIT;
	s[n].type = DPQ_FT_MAX_STREAMS_UNI;
	s[n++].max_streams.max = 3;
	s[n].type = DPQ_FT_DATA_BLOCKED;
	s[n++].data_blocked.limit = 16384;
	s[n].type = DPQ_FT_STREAM_DATA_BLOCKED;
	s[n].stream_data_blocked.stream_id = 2;
	s[n++].stream_data_blocked.limit = 1;
	s[n].type = DPQ_FT_STREAMS_BLOCKED_BIDI;
	s[n++].streams_blocked.limit = 100;
	s[n].type = DPQ_FT_STREAMS_BLOCKED_UNI;
	s[n++].streams_blocked.limit = DPQ_MAX_STREAMS_LIMIT;
	s[n].type = DPQ_FT_NEW_CONNECTION_ID;
	s[n].new_cid.seq = 5;
	s[n].new_cid.retire_prior_to = 5;
	s[n].new_cid.cid_len = 20;
	s[n].new_cid.cid = cid20;
	s[n++].new_cid.reset_token = token16;
	s[n].type = DPQ_FT_NEW_CONNECTION_ID;
	s[n].new_cid.seq = 1;
	s[n].new_cid.cid_len = 1;
	s[n].new_cid.cid = cid20;
	s[n++].new_cid.reset_token = token16;
	s[n].type = DPQ_FT_RETIRE_CONNECTION_ID;
	s[n++].retire_cid.seq = 3;
	s[n].type = DPQ_FT_PATH_CHALLENGE;
	memcpy(s[n++].path.data, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	s[n].type = DPQ_FT_PATH_RESPONSE;
	memcpy(s[n++].path.data, "\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8", 8);
	s[n].type = DPQ_FT_CONNECTION_CLOSE;
	s[n].close.error_code = DPQ_TE_FRAME_ENCODING_ERROR;
	s[n].close.frame_type = DPQ_FT_STREAM;
	s[n].close.reason_len = 9;
	s[n++].close.reason = (const uint8_t *)"bad frame";
	s[n].type = DPQ_FT_CONNECTION_CLOSE_APP;
	s[n].close.error_code = 0x100;
	s[n++].close.reason_len = 0;
	s[n++].type = DPQ_FT_HANDSHAKE_DONE;
	assert_true(n <= MAX_SAMPLES);
	return n;
}

/* Is every byte prefix of this frame still a valid (shorter) frame? */
static bool
open_ended(const struct dpq_frame *f)
{
	return f->type == DPQ_FT_PADDING ||
		(dpq_frame_is_stream(f->type) &&
		 !(f->type & DPQ_STREAM_FLAG_LEN));
}

static void
test_roundtrip_all_types(void **state)
{
	struct dpq_frame s[MAX_SAMPLES], d;
	uint8_t buf[512];
	size_t n = samples(s), i;
	bool seen[DPQ_FT_COUNT] = { false };

	(void)state;
	for (i = 0; i < n; i++) {
		uint8_t *e = dpq_frame_encode(buf, buf + sizeof(buf), &s[i]);
		size_t len;

		assert_non_null(e);
		len = (size_t)(e - buf);
		uint8_t *p = test_dup(buf, len);
		ssize_t rc = dpq_frame_decode(p, p + len, &d);

		assert_int_equal(rc, (ssize_t)len);
		assert_true(frames_equal(&s[i], &d));
		seen[s[i].type] = true;
		free(p);
	}
	for (i = 0; i < DPQ_FT_COUNT; i++)
		assert_true(seen[i]);
}

static void
test_truncation_every_byte(void **state)
{
	struct dpq_frame s[MAX_SAMPLES], d;
	uint8_t buf[512];
	size_t n = samples(s), i, k, len;

	(void)state;
	for (i = 0; i < n; i++) {
		len = (size_t)(dpq_frame_encode(buf, buf + sizeof(buf), &s[i]) - buf);
		for (k = 0; k < len; k++) {
			uint8_t *p = test_dup(buf, k);
			ssize_t rc = dpq_frame_decode(p, p + k, &d);

			if (!open_ended(&s[i])) {
				assert_int_equal(rc, FEE);
			} else if (rc > 0) {
				/* a shorter run of padding / shorter data */
				assert_int_equal(rc, (ssize_t)k);
				if (s[i].type != DPQ_FT_PADDING)
					assert_true(d.stream.len < s[i].stream.len);
			} else {
				assert_int_equal(rc, FEE);
			}
			free(p);
		}
	}
}

static void
test_encode_no_room(void **state)
{
	struct dpq_frame s[MAX_SAMPLES];
	uint8_t buf[512];
	size_t n = samples(s), i, room, len;

	(void)state;
	for (i = 0; i < n; i++) {
		len = (size_t)(dpq_frame_encode(buf, buf + sizeof(buf), &s[i]) - buf);
		for (room = 0; room < len; room++)
			assert_null(dpq_frame_encode(buf, buf + room, &s[i]));
	}
}

/* Decode hex bytes from an exact-size heap copy. */
static ssize_t
dec_hex(const char *hex, struct dpq_frame *f)
{
	uint8_t buf[256];
	size_t n = test_unhex(hex, buf, sizeof(buf));
	uint8_t *p = test_dup(buf, n);
	ssize_t rc = dpq_frame_decode(p, p + n, f);

	free(p);
	return rc;
}

static void
test_type_encoding(void **state)
{
	struct dpq_frame f;

	(void)state;
	/* §12.4: shortest encoding required; longer ones rejected */
	assert_int_equal(dec_hex("4001", &f), PV);		/* PING */
	assert_int_equal(dec_hex("80000001", &f), PV);
	assert_int_equal(dec_hex("c000000000000001", &f), PV);
	assert_int_equal(dec_hex("4000", &f), PV);		/* PADDING */
	assert_int_equal(dec_hex("401e", &f), PV);		/* HANDSHAKE_DONE */
	/* unknown types: FRAME_ENCODING_ERROR */
	assert_int_equal(dec_hex("1f", &f), FEE);
	assert_int_equal(dec_hex("21", &f), FEE);
	assert_int_equal(dec_hex("3f", &f), FEE);
	assert_int_equal(dec_hex("4040", &f), FEE);
	assert_int_equal(dec_hex("80012345", &f), FEE);
	/* truncated type varint, empty input */
	assert_int_equal(dec_hex("40", &f), FEE);
	assert_int_equal(dec_hex("", &f), FEE);
	assert_int_equal(dpq_frame_decode(NULL, NULL, &f), FEE);
}

static void
test_padding_run(void **state)
{
	struct dpq_frame f;
	uint8_t buf[] = { 0, 0, 0, 0, 1, 0 };

	(void)state;
	assert_int_equal(dpq_frame_decode(buf, buf + 6, &f), 4);
	assert_int_equal(f.type, DPQ_FT_PADDING);
	assert_int_equal(f.padding.len, 4);
	assert_int_equal(dpq_frame_decode(buf + 4, buf + 6, &f), 1);
	assert_int_equal(f.type, DPQ_FT_PING);
	assert_int_equal(dpq_frame_decode(buf + 5, buf + 6, &f), 1);
	assert_int_equal(f.padding.len, 1);
	assert_null(dpq_frame_encode_padding(buf, buf + 6, 0));
	assert_null(dpq_frame_encode_padding(buf, buf + 6, 7));
	assert_ptr_equal(dpq_frame_encode_padding(buf, buf + 6, 6), buf + 6);
}

static void
test_ack_ranges(void **state)
{
	static const struct dpq_ack_range r[] = {
		{ 90, 100 }, { 50, 80 }, { 48, 48 }, { 0, 10 },
	};
	struct dpq_ack_range got;
	struct dpq_ack_iter it;
	struct dpq_frame f;
	uint8_t buf[64], *e;
	size_t i = 0;

	(void)state;
	e = dpq_frame_encode_ack(buf, buf + sizeof(buf), r, 4, 25, NULL);
	assert_non_null(e);
	assert_int_equal(dpq_frame_decode(buf, e, &f), e - buf);
	assert_int_equal(f.type, DPQ_FT_ACK);
	assert_int_equal(f.ack.largest, 100);
	assert_int_equal(f.ack.ack_delay, 25);
	assert_int_equal(f.ack.range_count, 3);
	dpq_ack_iter_init(&it, &f.ack);
	while (dpq_ack_iter_next(&it, &got)) {
		assert_true(i < 4);
		assert_int_equal(got.smallest, r[i].smallest);
		assert_int_equal(got.largest, r[i].largest);
		i++;
	}
	assert_int_equal(i, 4);
	assert_false(dpq_ack_iter_next(&it, &got));

	/* invalid range lists are refused by the encoder */
	struct dpq_ack_range adj[] = { { 10, 20 }, { 5, 9 } };	/* no gap */
	assert_null(dpq_frame_encode_ack(buf, buf + 64, adj, 2, 0, NULL));
	struct dpq_ack_range ovl[] = { { 10, 20 }, { 5, 15 } };
	assert_null(dpq_frame_encode_ack(buf, buf + 64, ovl, 2, 0, NULL));
	struct dpq_ack_range inv[] = { { 20, 10 } };
	assert_null(dpq_frame_encode_ack(buf, buf + 64, inv, 1, 0, NULL));
	struct dpq_ack_range big[] = { { 0, DPQ_VARINT_MAX + 1 } };
	assert_null(dpq_frame_encode_ack(buf, buf + 64, big, 1, 0, NULL));
	assert_null(dpq_frame_encode_ack(buf, buf + 64, r, 0, 0, NULL));
	/* gap of exactly one missing packet number */
	struct dpq_ack_range one[] = { { 10, 20 }, { 5, 8 } };
	e = dpq_frame_encode_ack(buf, buf + 64, one, 2, 0, NULL);
	assert_non_null(e);
	assert_true(dpq_frame_decode(buf, e, &f) > 0);
	dpq_ack_iter_init(&it, &f.ack);
	assert_true(dpq_ack_iter_next(&it, &got));
	assert_true(dpq_ack_iter_next(&it, &got));
	assert_int_equal(got.largest, 8);
	assert_int_equal(got.smallest, 5);

	/* an ACK struct not from decode with bad ranges stops the iterator */
	struct dpq_frame_ack bad = { .largest = 3, .first_range = 4 };
	dpq_ack_iter_init(&it, &bad);
	assert_false(dpq_ack_iter_next(&it, &got));
}

static void
test_ack_hostile(void **state)
{
	struct dpq_frame f;

	(void)state;
	/* ACK: largest, delay, count, first_range, (gap, len)... */
	assert_int_equal(dec_hex("02 05 00 00 05", &f), 5);	/* [0,5] ok */
	assert_int_equal(dec_hex("02 05 00 00 06", &f), FEE);	/* first < 0 */
	/* [8,10], gap 6 -> largest 0, len 0 -> [0,0] ok */
	assert_int_equal(dec_hex("02 0a 00 01 02 06 00", &f), 7);
	/* gap 7 -> largest -1 */
	assert_int_equal(dec_hex("02 0a 00 01 02 07 00", &f), FEE);
	/* gap 6 -> largest 0, len 1 -> smallest -1 */
	assert_int_equal(dec_hex("02 0a 00 01 02 06 01", &f), FEE);
	/* smallest 1: even gap 0 underflows (next largest = -1) */
	assert_int_equal(dec_hex("02 0a 00 01 09 00 00", &f), FEE);
	/* range count larger than the ranges present */
	assert_int_equal(dec_hex("02 0a 00 05 02 00 00", &f), FEE);
	assert_int_equal(dec_hex("02 0a 00 bfffffff 02 00 00", &f), FEE);
	/* ACK_ECN missing its counts */
	assert_int_equal(dec_hex("03 0a 00 00 02 01 01", &f), FEE);
	assert_int_equal(dec_hex("03 0a 00 00 02 01 01 01", &f), 8);
	/* varint running past the end */
	assert_int_equal(dec_hex("02 c0 00 00", &f), FEE);
}

static void
test_stream_hostile(void **state)
{
	struct dpq_frame f;

	(void)state;
	/* 0x0e: OFF|LEN; offset 2^62-1, len 1 -> past 2^62-1 (§19.8) */
	assert_int_equal(dec_hex("0e 00 ffffffffffffffff 01 aa", &f), FEE);
	/* offset 2^62-2, len 1: exactly at the limit, fine */
	assert_int_equal(dec_hex("0e 00 fffffffffffffffe 01 aa", &f), 12);
	assert_int_equal(f.stream.offset + f.stream.len, DPQ_VARINT_MAX);
	/* 0x0c: OFF, no LEN: offset 2^62-1 with one data byte to the end */
	assert_int_equal(dec_hex("0c 00 ffffffffffffffff aa", &f), FEE);
	assert_int_equal(dec_hex("0c 00 ffffffffffffffff", &f), 10);
	assert_int_equal(f.stream.len, 0);
	/* LEN past the end of the packet */
	assert_int_equal(dec_hex("0a 04 05 01 02 03 04", &f), FEE);
	assert_int_equal(dec_hex("0a 04 05 01 02 03 04 05", &f), 8);
	assert_true(f.stream.data != NULL);
	/* huge length */
	assert_int_equal(dec_hex("0a 04 bfffffff 00", &f), FEE);
	/* stream id truncated */
	assert_int_equal(dec_hex("08 40", &f), FEE);
	/* CRYPTO: length past end, offset + length past 2^62-1 (§19.6) */
	assert_int_equal(dec_hex("06 00 05 01 02", &f), FEE);
	assert_int_equal(dec_hex("06 ffffffffffffffff 01 aa", &f), FEE);
	assert_int_equal(dec_hex("06 ffffffffffffffff 00", &f), 10);
	/* encoders refuse the same */
	uint8_t buf[32];
	assert_null(dpq_frame_encode_stream_hdr(buf, buf + 32, 0,
			DPQ_VARINT_MAX, 1, false, true));
	assert_null(dpq_frame_encode_crypto_hdr(buf, buf + 32,
			DPQ_VARINT_MAX, 1));
}

static void
test_limits_hostile(void **state)
{
	struct dpq_frame f;

	(void)state;
	/* MAX_STREAMS / STREAMS_BLOCKED: 2^60 ok, 2^60 + 1 not (§19.11,
	 * §19.14) */
	assert_int_equal(dec_hex("12 d000000000000000", &f), 9);
	assert_int_equal(dec_hex("12 d000000000000001", &f), FEE);
	assert_int_equal(dec_hex("13 ffffffffffffffff", &f), FEE);
	assert_int_equal(dec_hex("16 d000000000000001", &f), FEE);
	assert_int_equal(dec_hex("17 d000000000000001", &f), FEE);
	assert_int_equal(dec_hex("17 d000000000000000", &f), 9);
	/* NEW_TOKEN: empty (§19.7), past end */
	assert_int_equal(dec_hex("07 00", &f), FEE);
	assert_int_equal(dec_hex("07 03 aa bb", &f), FEE);
	/* CONNECTION_CLOSE reason past end */
	assert_int_equal(dec_hex("1c 07 08 05 61 62 63", &f), FEE);
	assert_int_equal(dec_hex("1d 07 05 61 62 63", &f), FEE);
	assert_int_equal(dec_hex("1d 07 03 61 62 63", &f), 6);
	uint8_t cc[] = { 0x1d, 0x07, 0x03, 'a', 'b', 'c' };
	assert_int_equal(dpq_frame_decode(cc, cc + 6, &f), 6);
	assert_int_equal(f.close.error_code, 7);
	assert_int_equal(f.close.frame_type, 0);
	assert_int_equal(f.close.reason_len, 3);
	assert_ptr_equal(f.close.reason, cc + 3);
	/* PATH_CHALLENGE short */
	assert_int_equal(dec_hex("1a 01 02 03 04 05 06 07", &f), FEE);
	/* encoders refuse invalid values */
	uint8_t buf[64];
	struct dpq_frame g = { .type = DPQ_FT_MAX_STREAMS_BIDI };
	g.max_streams.max = DPQ_MAX_STREAMS_LIMIT + 1;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
	g.type = DPQ_FT_NEW_TOKEN;
	g.new_token.len = 0;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
	g.type = 0x1f;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
}

static void
test_new_cid_hostile(void **state)
{
	struct dpq_frame f;
	char hex[256];

	(void)state;
	/* seq 2, retire 1, len 8, cid, 16-byte token: ok */
	assert_int_equal(dec_hex("18 02 01 08 0102030405060708"
			"000102030405060708090a0b0c0d0e0f", &f), 28);
	assert_int_equal(f.new_cid.cid_len, 8);
	/* length 0 and 21 (§19.15) */
	assert_int_equal(dec_hex("18 02 01 00 000102030405060708090a0b0c0d0e0f",
			&f), FEE);
	snprintf(hex, sizeof(hex), "18 02 01 15 %s %s",
			"0102030405060708090a0b0c0d0e0f101112131415",
			"000102030405060708090a0b0c0d0e0f");
	assert_int_equal(dec_hex(hex, &f), FEE);
	/* retire_prior_to > seq */
	assert_int_equal(dec_hex("18 02 03 08 0102030405060708"
			"000102030405060708090a0b0c0d0e0f", &f), FEE);
	/* reset token one byte short, CID past end */
	assert_int_equal(dec_hex("18 02 01 08 0102030405060708"
			"000102030405060708090a0b0c0d0e", &f), FEE);
	assert_int_equal(dec_hex("18 02 01 08 01020304", &f), FEE);
	assert_int_equal(dec_hex("18 02 01", &f), FEE);
	/* encoder refuses bad lengths and retire_prior_to > seq */
	uint8_t buf[64];
	struct dpq_frame g = { .type = DPQ_FT_NEW_CONNECTION_ID };
	g.new_cid.cid = cid20;
	g.new_cid.reset_token = token16;
	g.new_cid.cid_len = 0;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
	g.new_cid.cid_len = 21;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
	g.new_cid.cid_len = 4;
	g.new_cid.retire_prior_to = 1;
	assert_null(dpq_frame_encode(buf, buf + 64, &g));
}

static void
test_rfc9001_crypto_frame(void **state)
{
	/* RFC 9001 A.2: the client Initial's CRYPTO frame header */
	uint8_t buf[4 + 241];
	struct dpq_frame f;

	(void)state;
	test_unhex("060040f1", buf, 4);
	memset(buf + 4, 0xab, 241);
	assert_int_equal(dpq_frame_decode(buf, buf + sizeof(buf), &f), 245);
	assert_int_equal(f.type, DPQ_FT_CRYPTO);
	assert_int_equal(f.crypto.offset, 0);
	assert_int_equal(f.crypto.len, 241);
	assert_ptr_equal(f.crypto.data, buf + 4);
	assert_int_equal(dpq_frame_crypto_hdr_len(0, 241), 4);
}

static void
test_builder_helpers(void **state)
{
	struct test_rng rng = { 7 };
	uint8_t buf[64];
	size_t d, room;
	int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		uint64_t id = test_rng_next(&rng) >> (2 + test_rng_next(&rng) % 62);
		uint64_t off = (i % 3 == 0) ? 0 :
			test_rng_next(&rng) >> (2 + test_rng_next(&rng) % 62);
		bool with_len = i & 1;

		room = (size_t)(test_rng_next(&rng) % 40000);
		if (!dpq_frame_stream_fit(id, off, room, with_len, &d)) {
			assert_int_equal(d, 0);
			assert_true(dpq_frame_stream_hdr_len(id, off, 0,
					with_len) > room);
			continue;
		}
		/* it fits, and one more byte would not (unless capped) */
		assert_true(dpq_frame_stream_hdr_len(id, off, d, with_len) + d
				<= room);
		if (off + d < DPQ_VARINT_MAX)
			assert_true(dpq_frame_stream_hdr_len(id, off, d + 1,
					with_len) + d + 1 > room);
		/* header writer agrees with the length helper */
		uint8_t *e = dpq_frame_encode_stream_hdr(buf, buf + 64, id, off,
				d, i & 2, with_len);
		assert_non_null(e);
		assert_int_equal((size_t)(e - buf),
				dpq_frame_stream_hdr_len(id, off, d, with_len));
		/* CRYPTO likewise */
		if (dpq_frame_crypto_fit(off, room, &d)) {
			assert_true(dpq_frame_crypto_hdr_len(off, d) + d <= room);
			if (off + d < DPQ_VARINT_MAX)
				assert_true(dpq_frame_crypto_hdr_len(off, d + 1) +
						d + 1 > room);
			e = dpq_frame_encode_crypto_hdr(buf, buf + 64, off, d);
			assert_int_equal((size_t)(e - buf),
					dpq_frame_crypto_hdr_len(off, d));
		}
	}
	/* the 63/64 edge for stream 0 at offset 0 with LEN: 63 bytes need
	 * 1 + 1 + 1 + 63 = 66; 64 bytes need a 2-byte length, 68 */
	assert_true(dpq_frame_stream_fit(0, 0, 66, true, &d));
	assert_int_equal(d, 63);
	assert_true(dpq_frame_stream_fit(0, 0, 67, true, &d));
	assert_int_equal(d, 63);
	assert_true(dpq_frame_stream_fit(0, 0, 68, true, &d));
	assert_int_equal(d, 64);
	assert_true(dpq_frame_stream_fit(0, 0, 2, false, &d));
	assert_int_equal(d, 0);
	assert_false(dpq_frame_stream_fit(0, 0, 2, true, &d));
	/* capped by 2^62-1 */
	assert_true(dpq_frame_stream_fit(0, DPQ_VARINT_MAX - 3, 100, true, &d));
	assert_int_equal(d, 3);
	assert_false(dpq_frame_crypto_fit(0, 2, &d));
	assert_true(dpq_frame_crypto_fit(0, 3, &d));
	assert_int_equal(d, 0);
}

static void
test_frame_table(void **state)
{
	(void)state;
	/* §12.4 Table 3 spot checks */
	assert_true(dpq_frame_allowed(DPQ_FT_CRYPTO, DPQ_PKT_INITIAL));
	assert_true(dpq_frame_allowed(DPQ_FT_CRYPTO, DPQ_PKT_HANDSHAKE));
	assert_false(dpq_frame_allowed(DPQ_FT_CRYPTO, DPQ_PKT_0RTT));
	assert_true(dpq_frame_allowed(DPQ_FT_CRYPTO, DPQ_PKT_1RTT));
	assert_false(dpq_frame_allowed(DPQ_FT_ACK, DPQ_PKT_0RTT));
	assert_true(dpq_frame_allowed(DPQ_FT_ACK_ECN, DPQ_PKT_INITIAL));
	for (uint64_t t = DPQ_FT_STREAM; t <= DPQ_FT_STREAM_LAST; t++) {
		assert_false(dpq_frame_allowed(t, DPQ_PKT_INITIAL));
		assert_false(dpq_frame_allowed(t, DPQ_PKT_HANDSHAKE));
		assert_true(dpq_frame_allowed(t, DPQ_PKT_0RTT));
		assert_true(dpq_frame_allowed(t, DPQ_PKT_1RTT));
	}
	assert_true(dpq_frame_allowed(DPQ_FT_CONNECTION_CLOSE, DPQ_PKT_INITIAL));
	assert_false(dpq_frame_allowed(DPQ_FT_CONNECTION_CLOSE_APP,
			DPQ_PKT_INITIAL));
	assert_false(dpq_frame_allowed(DPQ_FT_CONNECTION_CLOSE_APP,
			DPQ_PKT_HANDSHAKE));
	assert_true(dpq_frame_allowed(DPQ_FT_CONNECTION_CLOSE_APP, DPQ_PKT_0RTT));
	assert_false(dpq_frame_allowed(DPQ_FT_NEW_TOKEN, DPQ_PKT_0RTT));
	assert_false(dpq_frame_allowed(DPQ_FT_HANDSHAKE_DONE, DPQ_PKT_0RTT));
	assert_false(dpq_frame_allowed(DPQ_FT_PATH_RESPONSE, DPQ_PKT_0RTT));
	assert_true(dpq_frame_allowed(DPQ_FT_PATH_CHALLENGE, DPQ_PKT_0RTT));
	assert_true(dpq_frame_allowed(DPQ_FT_PADDING, DPQ_PKT_HANDSHAKE));
	assert_false(dpq_frame_allowed(DPQ_FT_PING, DPQ_PKT_RETRY));
	assert_false(dpq_frame_allowed(DPQ_FT_PING, DPQ_PKT_VN));
	assert_false(dpq_frame_allowed(DPQ_FT_PING, DPQ_PKT_VERSION_UNKNOWN));
	assert_false(dpq_frame_allowed(0x1f, DPQ_PKT_1RTT));
	/* every known type is allowed in 1-RTT (Table 3 note) */
	for (uint64_t t = 0; t < DPQ_FT_COUNT; t++)
		assert_true(dpq_frame_allowed(t, DPQ_PKT_1RTT));
	/* N / P / S markings */
	assert_false(dpq_frame_is_ack_eliciting(DPQ_FT_ACK));
	assert_false(dpq_frame_is_ack_eliciting(DPQ_FT_PADDING));
	assert_false(dpq_frame_is_ack_eliciting(DPQ_FT_CONNECTION_CLOSE));
	assert_true(dpq_frame_is_ack_eliciting(DPQ_FT_PING));
	assert_true(dpq_frame_is_ack_eliciting(DPQ_FT_STREAM));
	assert_false(dpq_frame_is_ack_eliciting(0x40));
	assert_true(dpq_frame_is_probing(DPQ_FT_PADDING));
	assert_true(dpq_frame_is_probing(DPQ_FT_NEW_CONNECTION_ID));
	assert_true(dpq_frame_is_probing(DPQ_FT_PATH_CHALLENGE));
	assert_true(dpq_frame_is_probing(DPQ_FT_PATH_RESPONSE));
	assert_false(dpq_frame_is_probing(DPQ_FT_PING));
	assert_true(dpq_frame_info(DPQ_FT_ACK)->flags & DPQ_FTF_NOT_IN_FLIGHT);
	assert_true(dpq_frame_info(0x0b)->flags & DPQ_FTF_FLOW_CONTROLLED);
	assert_true(dpq_frame_info(DPQ_FT_NEW_TOKEN)->flags &
			DPQ_FTF_SERVER_ONLY);
	assert_true(dpq_frame_info(DPQ_FT_HANDSHAKE_DONE)->flags &
			DPQ_FTF_SERVER_ONLY);
	assert_null(dpq_frame_info(DPQ_FT_COUNT));
	assert_string_equal(dpq_frame_type_str(0x0d), "STREAM");
	assert_string_equal(dpq_frame_type_str(0x99), "UNKNOWN");
	assert_string_equal(dpq_transport_error_str(DPQ_TE_NO_VIABLE_PATH),
			"NO_VIABLE_PATH");
	assert_string_equal(dpq_transport_error_str(DPQ_TE_CRYPTO(0x28)),
			"CRYPTO_ERROR");
	assert_string_equal(dpq_transport_error_str(0x200), "UNKNOWN");
}

/* Decode a whole payload; on each success check bounds, then re-encode
 * the frame and decode it again: the two decodes must agree. */
static void
decode_all(const uint8_t *p, const uint8_t *end)
{
	struct dpq_frame f, g;
	uint8_t enc[2048];
	int guard = 0;

	while (p < end && guard++ < 4096) {
		ssize_t rc = dpq_frame_decode(p, end, &f);

		if (rc < 0) {
			assert_true(rc == FEE || rc == PV);
			return;
		}
		assert_true(rc > 0 && rc <= end - p);
		if (f.type == DPQ_FT_ACK || f.type == DPQ_FT_ACK_ECN) {
			struct dpq_ack_iter it;
			struct dpq_ack_range r;
			uint64_t cnt = 0, prev_small = UINT64_MAX;

			dpq_ack_iter_init(&it, &f.ack);
			while (dpq_ack_iter_next(&it, &r)) {
				assert_true(r.smallest <= r.largest);
				assert_true(prev_small == UINT64_MAX ||
						r.largest + 2 <= prev_small);
				prev_small = r.smallest;
				cnt++;
			}
			assert_int_equal(cnt, f.ack.range_count + 1);
		}
		uint8_t *e = dpq_frame_encode(enc, enc + sizeof(enc), &f);
		if (e != NULL) {
			ssize_t rc2 = dpq_frame_decode(enc, e, &g);

			assert_int_equal(rc2, e - enc);
			assert_true(frames_equal(&f, &g));
		} else {
			/* only an oversized frame may fail to re-encode */
			assert_true(rc > 1000);
		}
		p += rc;
	}
}

static void
test_random_inputs(void **state)
{
	struct test_rng rng = { UINT64_C(0xdeadbeefcafef00d) };
	struct dpq_frame s[MAX_SAMPLES];
	uint8_t enc[MAX_SAMPLES][512], buf[600];
	size_t elen[MAX_SAMPLES], ns = samples(s), i, n;
	int it;

	(void)state;
	for (i = 0; i < ns; i++)
		elen[i] = (size_t)(dpq_frame_encode(enc[i], enc[i] + 512,
				&s[i]) - enc[i]);
	for (it = 0; it < 200000; it++) {
		if (it % 2 == 0) {
			/* noise; bias the first byte to known types */
			n = test_rng_next(&rng) % 64;
			test_rng_fill(&rng, buf, n);
			if (n != 0 && (it & 2))
				buf[0] %= 0x20;
		} else {
			/* mutate a valid frame, maybe two concatenated */
			size_t a = test_rng_next(&rng) % ns;
			size_t b = test_rng_next(&rng) % ns;

			memcpy(buf, enc[a], elen[a]);
			n = elen[a];
			if (it & 2) {
				memcpy(buf + n, enc[b], elen[b]);
				n += elen[b];
			}
			int flips = 1 + (int)(test_rng_next(&rng) % 3);
			for (int k = 0; k < flips; k++)
				buf[test_rng_next(&rng) % n] ^=
					(uint8_t)(1 + test_rng_next(&rng) % 255);
			if (it & 4)
				n = (size_t)(test_rng_next(&rng) % (n + 1));
		}
		uint8_t *p = test_dup(buf, n);

		decode_all(p, p + n);
		free(p);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_types),
		cmocka_unit_test(test_truncation_every_byte),
		cmocka_unit_test(test_encode_no_room),
		cmocka_unit_test(test_type_encoding),
		cmocka_unit_test(test_padding_run),
		cmocka_unit_test(test_ack_ranges),
		cmocka_unit_test(test_ack_hostile),
		cmocka_unit_test(test_stream_hostile),
		cmocka_unit_test(test_limits_hostile),
		cmocka_unit_test(test_new_cid_hostile),
		cmocka_unit_test(test_rfc9001_crypto_frame),
		cmocka_unit_test(test_builder_helpers),
		cmocka_unit_test(test_frame_table),
		cmocka_unit_test(test_random_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
