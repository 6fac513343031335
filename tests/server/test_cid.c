/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of QUIC-LB plaintext server connection IDs (dataplane/server/cid.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/server/cid.h"
#include "test_server_util.h"

/* Every layout: rotation 0..6, server id 1..15 bytes, every legal length,
 * length encoded or not, several shards: decoding gives back what went in. */
static void
test_roundtrip_all_lengths(void **state)
{
	static const uint8_t shards[] = { 0, 1, 0x7f, 0x80, 0xff };
	struct test_rng rng = { .s = 0x1234567 };
	struct dpq_rand rnd = { test_rng_fill, &rng };
	struct dpq_cid_cfg cfg;
	struct dpq_cid c;
	uint8_t sid[DPQ_CID_SERVER_ID_MAX];
	unsigned int cr, sl, len, enc, i, n = 0;

	(void)state;
	for (cr = 0; cr <= DPQ_CID_CR_MAX; cr++)
	for (sl = 1; sl <= DPQ_CID_SERVER_ID_MAX; sl++)
	for (len = sl + DPQ_CID_OVERHEAD; len <= DPQ_MAX_CID_LEN; len++)
	for (enc = 0; enc < 2; enc++)
	for (i = 0; i < sizeof(shards); i++) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.config_rotation = (uint8_t)cr;
		cfg.server_id_len = (uint8_t)sl;
		cfg.len = (uint8_t)len;
		cfg.encode_len = enc;
		test_rng_fill(&rng, cfg.server_id, sl);
		assert_int_equal(dpq_cid_cfg_check(&cfg), 0);
		assert_int_equal(dpq_cid_gen(&cfg, shards[i], &rnd, &c), 0);
		assert_int_equal(c.len, len);
		assert_int_equal(dpq_cid_config_rotation(c.bytes, c.len), cr);
		if (enc)
			assert_int_equal(c.bytes[0] & DPQ_CID_LEN_MASK,
					len - 1);
		assert_int_equal(dpq_cid_check(&cfg, c.bytes, c.len), 0);
		assert_int_equal(dpq_cid_shard(&cfg, c.bytes, c.len),
				shards[i]);
		assert_int_equal(dpq_cid_server_id(&cfg, c.bytes, c.len, sid),
				sl);
		assert_memory_equal(sid, cfg.server_id, sl);
		n++;
	}
	assert_true(n > 1000);
}

/* Nonces differ between CIDs, and come from the caller's source. */
static void
test_nonce_random(void **state)
{
	struct test_rng rng = { .s = 99 };
	struct dpq_rand rnd = { test_rng_fill, &rng };
	struct dpq_cid_cfg cfg;
	struct dpq_cid a, b;

	(void)state;
	dpq_cid_cfg_default(&cfg);
	assert_int_equal(cfg.len, DPQ_CID_LEN_DEFAULT);
	assert_int_equal(dpq_cid_gen(&cfg, 3, &rnd, &a), 0);
	assert_int_equal(dpq_cid_gen(&cfg, 3, &rnd, &b), 0);
	assert_memory_equal(a.bytes, b.bytes, 3);	/* octet, sid, shard */
	assert_memory_not_equal(a.bytes + 3, b.bytes + 3, 5);
	/* Same seed, same CID: deterministic for tests. */
	rng.s = 99;
	assert_int_equal(dpq_cid_gen(&cfg, 3, &rnd, &b), 0);
	assert_memory_equal(a.bytes, b.bytes, a.len);
	/* The system source works too. */
	assert_int_equal(dpq_cid_gen(&cfg, 9, &dpq_rand_system, &b), 0);
	assert_int_equal(dpq_cid_shard(&cfg, b.bytes, b.len), 9);
}

/* Draft "Load Balancer Test Vectors", unencrypted, first line: cr 0,
 * sid c4605e, nonce 4504cc4f -> 07c4605e4504cc4f. Here the nonce's first
 * byte is our shard (0x45), the rest random. (The draft's second line has
 * an odd number of nonce hex digits and cannot be used.) */
static void
test_quic_lb_vector(void **state)
{
	static const uint8_t rest[] = { 0x04, 0xcc, 0x4f };
	struct test_fixed fx = { rest, sizeof(rest) };
	struct dpq_rand rnd = { test_fixed_fill, &fx };
	struct dpq_cid_cfg cfg;
	struct dpq_cid c;
	uint8_t want[8];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.config_rotation = 0;
	cfg.server_id_len = 3;
	cfg.len = 8;
	cfg.encode_len = true;
	test_unhex("c4605e", cfg.server_id, 3);
	assert_int_equal(dpq_cid_gen(&cfg, 0x45, &rnd, &c), 0);
	test_unhex("07c4605e4504cc4f", want, sizeof(want));
	assert_int_equal(c.len, 8);
	assert_memory_equal(c.bytes, want, 8);
	assert_int_equal(dpq_cid_shard(&cfg, want, 8), 0x45);
}

/* Rotation 7: no QUIC-LB config, unroutable, length encoded, no sid. */
static void
test_unroutable(void **state)
{
	struct test_rng rng = { .s = 5 };
	struct dpq_rand rnd = { test_rng_fill, &rng };
	struct dpq_cid_cfg cfg;
	struct dpq_cid c;
	uint8_t sid[DPQ_CID_SERVER_ID_MAX];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.config_rotation = DPQ_CID_CR_UNROUTABLE;
	cfg.len = 8;
	cfg.encode_len = true;
	assert_int_equal(dpq_cid_gen(&cfg, 200, &rnd, &c), 0);
	assert_int_equal(c.bytes[0], 0xe7);
	assert_int_equal(dpq_cid_shard(&cfg, c.bytes, c.len), 200);
	assert_int_equal(dpq_cid_server_id(&cfg, c.bytes, c.len, sid), 0);
	cfg.encode_len = false;
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	cfg.encode_len = true;
	cfg.server_id_len = 1;
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
}

static void
test_bad_cfg(void **state)
{
	struct dpq_rand rnd = { test_rng_fill, NULL };
	struct dpq_cid_cfg cfg;
	struct dpq_cid c;

	(void)state;
	dpq_cid_cfg_default(&cfg);
	assert_int_equal(dpq_cid_cfg_check(&cfg), 0);
	assert_int_equal(dpq_cid_cfg_check(NULL), -EINVAL);
	cfg.config_rotation = 8;
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	dpq_cid_cfg_default(&cfg);
	cfg.server_id_len = 0;		/* a config needs a server id */
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	dpq_cid_cfg_default(&cfg);
	cfg.len = 5;			/* 1 + 1 + 4 needed */
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	cfg.len = 6;
	assert_int_equal(dpq_cid_cfg_check(&cfg), 0);
	cfg.len = 21;
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	dpq_cid_cfg_default(&cfg);
	cfg.server_id_len = DPQ_CID_SERVER_ID_MAX + 1;
	cfg.len = 20;
	assert_int_equal(dpq_cid_cfg_check(&cfg), -EINVAL);
	assert_int_equal(dpq_cid_gen(&cfg, 0, &rnd, &c), -EINVAL);
	dpq_cid_cfg_default(&cfg);
	assert_int_equal(dpq_cid_gen(&cfg, 0, NULL, &c), -EINVAL);
	assert_int_equal(dpq_cid_gen(&cfg, 0, &rnd, NULL), -EINVAL);
}

/* A CID of another length, rotation or self-described length is refused
 * with a distinct error. */
static void
test_check_rejects(void **state)
{
	struct test_rng rng = { .s = 77 };
	struct dpq_rand rnd = { test_rng_fill, &rng };
	struct dpq_cid_cfg cfg, other;
	struct dpq_cid c;
	uint8_t sid[DPQ_CID_SERVER_ID_MAX];
	unsigned int cr;

	(void)state;
	dpq_cid_cfg_default(&cfg);
	cfg.config_rotation = 2;
	assert_int_equal(dpq_cid_gen(&cfg, 1, &rnd, &c), 0);
	assert_int_equal(dpq_cid_check(&cfg, c.bytes, c.len - 1), -EMSGSIZE);
	assert_int_equal(dpq_cid_check(&cfg, c.bytes, 0), -EMSGSIZE);
	assert_int_equal(dpq_cid_shard(&cfg, c.bytes, 20), -EMSGSIZE);
	for (cr = 0; cr <= 7; cr++) {
		c.bytes[0] = (uint8_t)(cr << 5 | (c.len - 1));
		assert_int_equal(dpq_cid_check(&cfg, c.bytes, c.len),
				cr == 2 ? 0 : -ESTALE);
		assert_int_equal(dpq_cid_shard(&cfg, c.bytes, c.len),
				cr == 2 ? 1 : -ESTALE);
		assert_int_equal(dpq_cid_server_id(&cfg, c.bytes, c.len, sid),
				cr == 2 ? 1 : -ESTALE);
	}
	c.bytes[0] = (uint8_t)(2 << 5 | 3);
	assert_int_equal(dpq_cid_check(&cfg, c.bytes, c.len), -EBADMSG);
	/* Without length encoding the low bits are random: accepted. */
	other = cfg;
	other.encode_len = false;
	assert_int_equal(dpq_cid_check(&other, c.bytes, c.len), 0);
	assert_int_equal(dpq_cid_check(&cfg, NULL, 8), -EINVAL);
	assert_int_equal(dpq_cid_server_id(&cfg, c.bytes, c.len, NULL),
			-EBADMSG);
	c.bytes[0] = (uint8_t)(2 << 5 | 7);
	assert_int_equal(dpq_cid_server_id(&cfg, c.bytes, c.len, NULL),
			-EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_lengths),
		cmocka_unit_test(test_nonce_random),
		cmocka_unit_test(test_quic_lb_vector),
		cmocka_unit_test(test_unroutable),
		cmocka_unit_test(test_bad_cfg),
		cmocka_unit_test(test_check_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
