/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the server config (control/mgmt/srvcfg.h): keys derived from a
 * key file are the same in two instances (a fleet), rotate on the wall
 * clock schedule (current + previous), rotate on command (file read
 * again; an unchanged file refused; random secrets without a file), key
 * files with bad contents or modes refused, policies checked, and
 * early_epoch moving only when 0-RTT promises could break.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/mgmt/srvcfg.h"

#define DAY 86400ull
#define T0 (20000 * DAY)	/* wall seconds */

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/dpq-srvcfg-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *
write_file(const char *name, const void *data, size_t len, mode_t mode)
{
	static char path[8][128];
	static int k;
	char *p = path[k++ % 8];
	int fd;

	snprintf(p, 128, "%s/%s", dir, name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
	return p;
}

static struct dpq_srvcfg *
mk(const char *tfile, const char *kfile, uint64_t rot, uint64_t wall)
{
	struct dpq_srvcfg_conf c;
	struct dpq_srvcfg *cfg = NULL;
	char err[DPQ_SRVCFG_ERR_MAX];

	dpq_srvcfg_conf_default(&c);
	c.ticket_key_file = tfile;
	c.token_key_file = kfile;
	c.ticket_rotation_s = rot;
	c.token_rotation_s = rot;
	assert_int_equal(dpq_srvcfg_create(&c, wall, &cfg, err, sizeof(err)),
			0);
	return cfg;
}

static void
test_fleet_same_keys(void **state)
{
	static const uint8_t secret[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	const char *f = write_file("fleet.key", secret, sizeof(secret), 0600);
	struct dpq_srvcfg *a = mk(f, f, 3600, T0);
	struct dpq_srvcfg *b = mk(f, f, 3600, T0 + 1800);
	struct dpq_srvcfg *c = mk(NULL, NULL, 3600, T0);
	const struct dpq_srvcfg_version *va, *vb, *vc;

	(void)state;
	va = dpq_srvcfg_current(a);
	vb = dpq_srvcfg_current(b);
	vc = dpq_srvcfg_current(c);
	/* Same file, same period: same keys, byte for byte. */
	assert_memory_equal(va->stek[0], vb->stek[0], DPQ_SRVCFG_STEK_LEN);
	assert_memory_equal(va->stek[1], vb->stek[1], DPQ_SRVCFG_STEK_LEN);
	assert_memory_equal(va->token_key[0], vb->token_key[0], 16);
	assert_int_equal(va->token_id[0], vb->token_id[0]);
	assert_string_equal(va->stek_name[0], vb->stek_name[0]);
	assert_true(va->stek_has_prev && va->token_has_prev);
	/* Keys are derived, never the secret, and differ per purpose. */
	assert_memory_not_equal(va->stek[0], secret, 32);
	assert_memory_not_equal(va->stek[0], va->token_key[0], 16);
	assert_memory_not_equal(va->stek[0], va->stek[1], DPQ_SRVCFG_STEK_LEN);
	/* No file: a random secret, different keys. */
	assert_memory_not_equal(va->stek[0], vc->stek[0], DPQ_SRVCFG_STEK_LEN);
	assert_int_equal(va->version, 1);
	assert_int_equal(va->early_epoch, 1);
	dpq_srvcfg_destroy(a);
	dpq_srvcfg_destroy(b);
	dpq_srvcfg_destroy(c);
}

static void
test_schedule(void **state)
{
	static const uint8_t secret[40] = { 0xee };
	const char *f = write_file("sched.key", secret, sizeof(secret), 0400);
	struct dpq_srvcfg *a = mk(f, f, 3600, T0);
	struct dpq_srvcfg *late = NULL;
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(a);
	uint8_t cur[DPQ_SRVCFG_STEK_LEN], tcur[16];

	(void)state;
	memcpy(cur, v->stek[0], sizeof(cur));
	memcpy(tcur, v->token_key[0], sizeof(tcur));
	assert_false(dpq_srvcfg_tick(a, T0 + 10));
	assert_false(dpq_srvcfg_tick(a, T0 - 7200));	/* clock stepped back */
	assert_true(dpq_srvcfg_tick(a, T0 + 3600));
	assert_int_equal(v->version, 2);
	assert_memory_equal(v->stek[1], cur, sizeof(cur));
	assert_memory_equal(v->token_key[1], tcur, sizeof(tcur));
	assert_memory_not_equal(v->stek[0], cur, sizeof(cur));
	/* A server started now derives what the running one rotated to. */
	late = mk(f, f, 3600, T0 + 3600);
	assert_memory_equal(dpq_srvcfg_current(late)->stek[0], v->stek[0],
			DPQ_SRVCFG_STEK_LEN);
	assert_memory_equal(dpq_srvcfg_current(late)->stek[1], v->stek[1],
			DPQ_SRVCFG_STEK_LEN);
	/* Two periods jump: both keys new, still in step with the fleet. */
	assert_true(dpq_srvcfg_tick(a, T0 + 3 * 3600));
	assert_true(dpq_srvcfg_tick(late, T0 + 3 * 3600));
	assert_memory_equal(dpq_srvcfg_current(late)->stek[1], v->stek[1],
			DPQ_SRVCFG_STEK_LEN);
	assert_memory_not_equal(v->stek[1], cur, sizeof(cur));
	dpq_srvcfg_destroy(a);
	dpq_srvcfg_destroy(late);
}

static void
test_rotate_on_command(void **state)
{
	static const uint8_t s1[32] = { 0x11 }, s2[32] = { 0x22 };
	const char *f = write_file("rot.key", s1, sizeof(s1), 0600);
	struct dpq_srvcfg *a = mk(f, NULL, 0, T0), *b;
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(a);
	uint8_t old_stek[DPQ_SRVCFG_STEK_LEN], old_tok[16];
	char err[DPQ_SRVCFG_ERR_MAX];

	(void)state;
	/* Rotation 0: no previous key, no schedule. */
	assert_false(v->stek_has_prev);
	assert_false(dpq_srvcfg_tick(a, T0 + 30 * DAY));
	memcpy(old_stek, v->stek[0], sizeof(old_stek));
	memcpy(old_tok, v->token_key[0], sizeof(old_tok));
	/* Unchanged file: refused, nothing moves. */
	assert_int_equal(dpq_srvcfg_rotate(a, DPQ_SRVCFG_TICKETS, T0, err,
			sizeof(err)), -EAGAIN);
	assert_non_null(strstr(err, "unchanged"));
	assert_int_equal(v->version, 1);
	/* Both at once: the token chain (random, no file) rotates, the
	 * ticket chain refuses: neither changes. */
	assert_int_equal(dpq_srvcfg_rotate(a, DPQ_SRVCFG_TICKETS |
			DPQ_SRVCFG_TOKENS, T0, err, sizeof(err)), -EAGAIN);
	assert_memory_equal(v->stek[0], old_stek, sizeof(old_stek));
	/* New secret in the file: current moves to previous. */
	write_file("rot.key", s2, sizeof(s2), 0600);
	assert_int_equal(dpq_srvcfg_rotate(a, DPQ_SRVCFG_TICKETS, T0, err,
			sizeof(err)), 0);
	assert_int_equal(v->version, 2);
	assert_true(v->stek_has_prev);
	assert_memory_equal(v->stek[1], old_stek, sizeof(old_stek));
	assert_memory_not_equal(v->stek[0], old_stek, sizeof(old_stek));
	assert_memory_equal(v->token_key[0], old_tok, sizeof(old_tok));
	/* A server started with the new file has the new current key. */
	b = mk(f, NULL, 0, T0);
	assert_memory_equal(dpq_srvcfg_current(b)->stek[0], v->stek[0],
			DPQ_SRVCFG_STEK_LEN);
	/* Tokens without a file: fresh random keys each time. */
	assert_int_equal(dpq_srvcfg_rotate(a, DPQ_SRVCFG_TOKENS, T0, err,
			sizeof(err)), 0);
	assert_memory_equal(v->token_key[1], old_tok, sizeof(old_tok));
	assert_memory_not_equal(v->token_key[0], old_tok, sizeof(old_tok));
	assert_int_equal(dpq_srvcfg_rotate(a, 0, T0, err, sizeof(err)),
			-EINVAL);
	/* The file gone: error, keys stay. */
	unlink(f);
	assert_int_equal(dpq_srvcfg_rotate(a, DPQ_SRVCFG_TICKETS, T0, err,
			sizeof(err)), -ENOENT);
	assert_true(v->stek_has_prev);
	dpq_srvcfg_destroy(a);
	dpq_srvcfg_destroy(b);
}

static void
test_key_files(void **state)
{
	uint8_t out[DPQ_SRVCFG_SECRET_MAX], big[100];
	char err[DPQ_SRVCFG_ERR_MAX];
	const char *hex = "00112233445566778899aabbccddeeff"
		"00112233445566778899AABBCCDDEEFF\n";
	const char *f;

	(void)state;
	f = write_file("hex.key", hex, strlen(hex), 0600);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)), 32);
	assert_int_equal(out[1], 0x11);
	assert_int_equal(out[31], 0xff);
	f = write_file("short.key", "0011", 4, 0600);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)),
			-EINVAL);
	assert_non_null(strstr(err, "32 to 64"));
	f = write_file("empty.key", "", 0, 0600);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)),
			-EINVAL);
	memset(big, 0xa5, sizeof(big));
	f = write_file("big.key", big, sizeof(big), 0600);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)),
			-EINVAL);
	f = write_file("raw.key", big, 48, 0600);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)), 48);
	/* Readable by others: refused with the fix in the message. */
	f = write_file("open.key", big, 48, 0644);
	assert_int_equal(dpq_srvcfg_read_secret(f, out, err, sizeof(err)),
			-EACCES);
	assert_non_null(strstr(err, "chmod 600"));
	assert_int_equal(dpq_srvcfg_read_secret("/nonexistent/x.key", out, err,
			sizeof(err)), -ENOENT);
	assert_int_equal(dpq_srvcfg_read_secret(dir, out, err, sizeof(err)),
			-EINVAL);
	{
		struct dpq_srvcfg_conf c;
		struct dpq_srvcfg *cfg = NULL;

		dpq_srvcfg_conf_default(&c);
		c.token_key_file = f;
		assert_int_equal(dpq_srvcfg_create(&c, T0, &cfg, err,
				sizeof(err)), -EACCES);
		assert_null(cfg);
	}
}

static void
test_policy(void **state)
{
	struct dpq_srvcfg *a = mk(NULL, NULL, 3600, T0);
	const struct dpq_srvcfg_version *v = dpq_srvcfg_current(a);
	struct dpq_srvcfg_policy p = v->policy;
	char err[DPQ_SRVCFG_ERR_MAX];

	(void)state;
	p.tp.initial_max_data = 1 << 20;
	p.tp.initial_max_streams_bidi = 100;
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)), 0);
	assert_int_equal(v->version, 2);
	assert_int_equal(v->early_epoch, 1);	/* larger: no promise broken */
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)), 0);
	assert_int_equal(v->version, 2);	/* unchanged: no version */
	p.early_data = false;
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)), 0);
	assert_int_equal(v->version, 3);
	assert_int_equal(v->early_epoch, 1);
	p.tp.initial_max_streams_bidi = 10;	/* shrinks: 0-RTT must stop */
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)), 0);
	assert_int_equal(v->early_epoch, 2);
	p.ticket_lifetime_s = 8 * 86400;
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)),
			-EINVAL);
	assert_non_null(strstr(err, "7 days"));
	assert_int_equal(v->version, 4);
	p.ticket_lifetime_s = 60;
	p.token_v4_prefix = 0;
	assert_int_equal(dpq_srvcfg_set_policy(a, &p, err, sizeof(err)),
			-EINVAL);
	dpq_srvcfg_destroy(a);
	dpq_srvcfg_destroy(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fleet_same_keys),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_rotate_on_command),
		cmocka_unit_test(test_key_files),
		cmocka_unit_test(test_policy),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
