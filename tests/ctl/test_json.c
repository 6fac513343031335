/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for control/ctl/json (libjansson plus the protocol's limits): the
 * strict reader on valid and hostile input (truncated at every byte,
 * oversized, depth bombs, bad UTF-8 and escapes, integers out of range,
 * fractions, duplicate keys, trailing garbage), the bounded writer
 * (escaping, limits, misuse) and round trips between them. Every input is
 * parsed from an exactly-sized heap copy so ASan catches a read past the
 * end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/ctl/json.h"

/* Parse an exact heap copy of [s, s+n) (ASan sees a read past the end). */
static int
parse_n(json_t **out, const char *s, size_t n, unsigned depth,
		struct dpq_json_err *err)
{
	char *copy = malloc(n ? n : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, s, n);
	rc = dpq_json_parse(copy, n, depth, out, err);
	free(copy);
	if (rc < 0)
		assert_null(*out);
	else
		assert_non_null(*out);
	return rc;
}

static int
parse_rc(const char *s, size_t n, unsigned depth)
{
	struct dpq_json_err err = { 0 };
	json_t *v = NULL;
	int rc = parse_n(&v, s, n, depth, &err);

	if (rc < 0) {
		assert_true(err.msg[0] != '\0');
		assert_true(err.off <= n || err.off == DPQ_JSON_OFF_NONE);
	}
	json_decref(v);
	return rc;
}

#define PARSE(s)	parse_rc(s, sizeof(s) - 1, 8)

static void
test_parse_valid(void **state)
{
	static const char in[] =
		" {\"cmd\":\"stats\",\"shard\":3,\"neg\":-42,\"on\":true,"
		"\"off\":false,\"none\":null,\"nest\":{\"a\":[1,2,{}],"
		"\"b\":[]},\"s\":\"\"}\r\n\t";
	const json_t *nest, *a, *v;
	json_t *root;
	const char *s, *k;
	size_t len, i;
	int64_t i64;
	uint64_t u64;
	bool b;
	int n;

	(void)state;
	assert_int_equal(parse_n(&root, in, sizeof(in) - 1, 8, NULL), 0);
	assert_true(json_is_object(root));
	assert_int_equal(json_object_size(root), 8);

	assert_int_equal(dpq_json_get_str(root, "cmd", &s, &len), 0);
	assert_string_equal(s, "stats");
	assert_int_equal(len, 5);
	assert_int_equal(dpq_json_get_i64(root, "shard", &i64), 0);
	assert_int_equal(i64, 3);
	assert_int_equal(dpq_json_get_u64(root, "shard", &u64), 0);
	assert_int_equal(u64, 3);
	assert_int_equal(dpq_json_get_i64(root, "neg", &i64), 0);
	assert_int_equal(i64, -42);
	assert_int_equal(dpq_json_get_u64(root, "neg", &u64), -ERANGE);
	assert_int_equal(dpq_json_get_bool(root, "on", &b), 0);
	assert_true(b);
	assert_int_equal(dpq_json_get_bool(root, "off", &b), 0);
	assert_false(b);
	assert_true(json_is_null(dpq_json_get(root, "none")));
	assert_int_equal(dpq_json_get_str(root, "s", &s, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(s, "");

	/* typed lookups say what is wrong */
	assert_int_equal(dpq_json_get_str(root, "shard", &s, NULL), -EPROTO);
	assert_int_equal(dpq_json_get_i64(root, "cmd", &i64), -EPROTO);
	assert_int_equal(dpq_json_get_bool(root, "none", &b), -EPROTO);
	assert_int_equal(dpq_json_get_i64(root, "absent", &i64), -ENOENT);
	assert_null(dpq_json_get(root, "sta"));	/* no prefix match */
	assert_null(dpq_json_get(dpq_json_get(root, "shard"), "x"));
	assert_null(dpq_json_get(NULL, "x"));

	nest = dpq_json_get(root, "nest");
	assert_non_null(nest);
	assert_int_equal(json_object_size(nest), 2);
	a = dpq_json_get(nest, "a");
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 3);
	json_array_foreach(a, i, v) {
		if (i < 2) {
			assert_int_equal(dpq_json_val_i64(v, &i64), 0);
			assert_int_equal(i64, i + 1);
		} else {
			assert_true(json_is_object(v));
			assert_int_equal(json_object_size(v), 0);
		}
	}
	assert_int_equal(json_array_size(dpq_json_get(nest, "b")), 0);

	/* members keep their order (replies are read by people too) */
	n = 0;
	json_object_foreach(root, k, v) {
		if (++n == 8)
			assert_string_equal(k, "s");
	}
	assert_int_equal(n, 8);
	json_decref(root);

	/* scalars at top level */
	assert_int_equal(PARSE("0"), 0);
	assert_int_equal(PARSE("\"x\""), 0);
	assert_int_equal(PARSE(" null "), 0);
	assert_int_equal(PARSE("[]"), 0);
}

static void
check_string(const char *json, const char *want, size_t want_len)
{
	json_t *v;

	assert_int_equal(parse_n(&v, json, strlen(json), 1, NULL), 0);
	assert_true(json_is_string(v));
	assert_int_equal(json_string_length(v), want_len);
	assert_memory_equal(json_string_value(v), want, want_len);
	assert_int_equal(json_string_value(v)[want_len], '\0');
	json_decref(v);
}

static void
test_parse_strings(void **state)
{
	(void)state;
	check_string("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
		"a\"b\\c/d\b\f\n\r\t", 12);
	/* \u escapes to UTF-8: 1, 2, 3 bytes, and a surrogate pair */
	check_string("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6);
	check_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4);
	check_string("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);
	/* raw UTF-8 of every length passes through */
	check_string("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
		"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
	check_string("\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"",
		"\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7);
}

static void
test_parse_bad_strings(void **state)
{
	static const char *const bad[] = {
		"\"abc",			/* unterminated */
		"\"abc\\",
		"\"abc\\\"",
		"\"a\x01\"",			/* raw control */
		"\"a\nb\"",
		"\"\\x41\"",			/* unknown escape */
		"\"\\'\"",
		"\"\\u12\"",			/* short \u */
		"\"\\u12",
		"\"\\uZZZZ\"",
		"\"\\u00g0\"",
		"\"\\u0000\"",			/* NUL refused */
		"\"\\ud800\"",			/* lone high surrogate */
		"\"\\ud800x\"",
		"\"\\ud800\\u0041\"",		/* high + non-low */
		"\"\\ud800\\ud800\"",
		"\"\\udc00\"",			/* lone low surrogate */
		"\"\xc0\x80\"",			/* overlong NUL */
		"\"\xc1\xbf\"",			/* overlong */
		"\"\xe0\x80\xaf\"",		/* overlong 3-byte */
		"\"\xf0\x8f\xbf\xbf\"",		/* overlong 4-byte */
		"\"\xed\xa0\x80\"",		/* UTF-8 encoded surrogate */
		"\"\xf4\x90\x80\x80\"",		/* > U+10FFFF */
		"\"\xf5\x80\x80\x80\"",
		"\"\xff\"",
		"\"\x80\"",			/* lone continuation */
		"\"\xc3\"",			/* truncated sequences */
		"\"\xe2\x82\"",
		"\"\xf0\x9f\x98\"",
		"\"\xc3\x28\"",			/* bad continuation */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse_rc(bad[i], strlen(bad[i]), 4);

		if (rc != -EINVAL)
			fail_msg("case %zu accepted or wrong rc %d", i, rc);
	}
	/* a sequence cut by the end of the input, not just the string */
	assert_int_equal(parse_rc("\"\xe2\x82", 3, 4), -EINVAL);
	assert_int_equal(parse_rc("\"\xf0", 2, 4), -EINVAL);
}

static void
check_int(const char *json, int64_t want)
{
	json_t *v;
	int64_t got;

	assert_int_equal(parse_n(&v, json, strlen(json), 1, NULL), 0);
	assert_int_equal(dpq_json_val_i64(v, &got), 0);
	assert_true(got == want);
	json_decref(v);
}

static void
test_parse_numbers(void **state)
{
	static const char rng[] = "{\"a\":9223372036854775807,"
		"\"b\":-9223372036854775808}";
	json_t *root;
	int64_t i64;
	uint64_t u64;

	(void)state;
	check_int("0", 0);
	check_int("-0", 0);
	check_int("7", 7);
	check_int("-9223372036854775808", INT64_MIN);
	check_int("9223372036854775807", INT64_MAX);

	/* jansson's integers are int64: past that is out of range */
	assert_int_equal(PARSE("9223372036854775808"), -ERANGE);
	assert_int_equal(PARSE("18446744073709551615"), -ERANGE);
	assert_int_equal(PARSE("99999999999999999999999"), -ERANGE);
	assert_int_equal(PARSE("-9223372036854775809"), -ERANGE);
	assert_int_equal(PARSE("[1,-18446744073709551615]"), -ERANGE);

	/* the protocol has no fractional quantities */
	assert_int_equal(PARSE("1.5"), -EINVAL);
	assert_int_equal(PARSE("1e3"), -EINVAL);
	assert_int_equal(PARSE("1E3"), -EINVAL);
	assert_int_equal(PARSE("0.0"), -EINVAL);
	assert_int_equal(PARSE("{\"a\":[0,{\"b\":2.5}]}"), -EINVAL);
	assert_int_equal(PARSE("1e999"), -ERANGE);	/* real overflow */
	assert_int_equal(PARSE("01"), -EINVAL);
	assert_int_equal(PARSE("-01"), -EINVAL);
	assert_int_equal(PARSE("-"), -EINVAL);
	assert_int_equal(PARSE("--1"), -EINVAL);
	assert_int_equal(PARSE("+1"), -EINVAL);
	assert_int_equal(PARSE("0x10"), -EINVAL);
	assert_int_equal(PARSE("1a"), -EINVAL);
	assert_int_equal(PARSE("Infinity"), -EINVAL);
	assert_int_equal(PARSE("NaN"), -EINVAL);

	/* conversions to the C types check the range */
	assert_int_equal(parse_n(&root, rng, sizeof(rng) - 1, 1, NULL), 0);
	assert_int_equal(dpq_json_get_u64(root, "a", &u64), 0);
	assert_true(u64 == INT64_MAX);
	assert_int_equal(dpq_json_get_i64(root, "b", &i64), 0);
	assert_true(i64 == INT64_MIN);
	assert_int_equal(dpq_json_get_u64(root, "b", &u64), -ERANGE);
	json_decref(root);
}

static void
test_parse_structure_errors(void **state)
{
	(void)state;
	assert_int_equal(PARSE(""), -EINVAL);
	assert_int_equal(PARSE("   "), -EINVAL);
	assert_int_equal(PARSE("{"), -EINVAL);
	assert_int_equal(PARSE("}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\"}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\":}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\":1,}"), -EINVAL);
	assert_int_equal(PARSE("{,}"), -EINVAL);
	assert_int_equal(PARSE("{a:1}"), -EINVAL);
	assert_int_equal(PARSE("{'a':1}"), -EINVAL);
	assert_int_equal(PARSE("{1:1}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\" 1}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\":1 \"b\":2}"), -EINVAL);
	assert_int_equal(PARSE("[1,]"), -EINVAL);
	assert_int_equal(PARSE("[,1]"), -EINVAL);
	assert_int_equal(PARSE("[1 2]"), -EINVAL);
	assert_int_equal(PARSE("[1}"), -EINVAL);
	assert_int_equal(PARSE("tru"), -EINVAL);
	assert_int_equal(PARSE("nul"), -EINVAL);
	assert_int_equal(PARSE("True"), -EINVAL);
	assert_int_equal(PARSE("truex"), -EINVAL);
	assert_int_equal(PARSE("[true false]"), -EINVAL);
	/* trailing garbage */
	assert_int_equal(PARSE("{} x"), -EINVAL);
	assert_int_equal(PARSE("{}{}"), -EINVAL);
	assert_int_equal(PARSE("1 2"), -EINVAL);
	assert_int_equal(PARSE("{}\n{}"), -EINVAL);
	assert_int_equal(PARSE("{}\0"), -EINVAL);
	/* only JSON whitespace */
	assert_int_equal(PARSE("\v{}"), -EINVAL);
	assert_int_equal(PARSE("{}\f"), -EINVAL);
	/* duplicate keys, at any position; same key in sibling objects is fine */
	assert_int_equal(PARSE("{\"a\":1,\"a\":2}"), -EINVAL);
	assert_int_equal(PARSE("{\"a\":1,\"b\":2,\"c\":3,\"b\":4}"), -EINVAL);
	assert_int_equal(PARSE("{\"\\u0061\":1,\"a\":2}"), -EINVAL);
	assert_int_equal(PARSE("{\"x\":{\"a\":1},\"y\":{\"a\":1}}"), 0);
	assert_int_equal(PARSE("{\"a\":1,\"ab\":2,\"b\":3}"), 0);

	/* the error says where */
	{
		struct dpq_json_err err;
		json_t *v;

		assert_int_equal(parse_n(&v, "{\"a\":1,}", 8, 4, &err),
			-EINVAL);
		assert_int_equal(err.off, 7);
		assert_true(err.msg[0] != '\0');
		assert_int_equal(parse_n(&v, "{\"ab\":\"\xff\"}", 10, 4,
			&err), -EINVAL);
		assert_true(err.off >= 6 && err.off <= 8);
		assert_non_null(strstr(err.msg, "0xff"));
		assert_int_equal(parse_n(&v, "[1.5]", 5, 4, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "integers only"));
		assert_true(err.off == DPQ_JSON_OFF_NONE);

		/* bad arguments */
		assert_int_equal(dpq_json_parse(NULL, 1, 4, &v, &err), -EINVAL);
		assert_int_equal(dpq_json_parse("{}", 2, 4, NULL, &err),
			-EINVAL);
		assert_int_equal(dpq_json_parse("{}", 2,
			DPQ_JSON_DEPTH_MAX + 1, &v, NULL), -EINVAL);
	}
}

/* Every proper prefix of a valid document is an error, never a crash. */
static void
test_parse_truncated(void **state)
{
	static const char in[] =
		"{\"cmd\":\"x\\u00e9\\ud83d\\ude00\\n\",\"n\":-123,"
		"\"a\":[true,false,null,{\"k\":\"\xe2\x82\xac\"}],\"z\":{}}";
	size_t n;

	(void)state;
	assert_int_equal(parse_rc(in, sizeof(in) - 1, 8), 0);
	for (n = 0; n < sizeof(in) - 1; n++) {
		int rc = parse_rc(in, n, 8);

		if (rc != -EINVAL)
			fail_msg("prefix of %zu bytes gave %d", n, rc);
	}
}

static void
test_parse_depth_and_size(void **state)
{
	size_t big = 200000, i;
	char *s;

	(void)state;
	/* depth counts containers: 1 allows a flat object only */
	assert_int_equal(parse_rc("{\"a\":1}", 7, 1), 0);
	assert_int_equal(parse_rc("{\"a\":{}}", 8, 1), -EINVAL);
	assert_int_equal(parse_rc("{\"a\":{}}", 8, 2), 0);
	assert_int_equal(parse_rc("[[[[]]]]", 8, 4), 0);
	assert_int_equal(parse_rc("[[[[]]]]", 8, 3), -EINVAL);
	assert_int_equal(parse_rc("1", 1, 0), 0);
	assert_int_equal(parse_rc("[]", 2, 0), -EINVAL);

	/* hostile nesting is cut at the limit without deep recursion */
	s = malloc(big);
	assert_non_null(s);
	memset(s, '[', big);
	assert_int_equal(parse_rc(s, big, DPQ_JSON_DEPTH_MAX), -EINVAL);
	for (i = 0; i < big; i += 2)
		memcpy(s + i, "{\"", 2);
	assert_int_equal(parse_rc(s, big, DPQ_JSON_DEPTH_MAX), -EINVAL);
	free(s);

	/* oversized input is refused before any work */
	s = malloc(DPQ_JSON_INPUT_MAX + 1);
	assert_non_null(s);
	memset(s, ' ', DPQ_JSON_INPUT_MAX + 1);
	s[0] = '1';
	assert_int_equal(parse_rc(s, DPQ_JSON_INPUT_MAX + 1, 1), -E2BIG);
	assert_int_equal(parse_rc(s, DPQ_JSON_INPUT_MAX, 1), 0);
	free(s);
}

static void
test_parse_many_values(void **state)
{
	size_t n = 50000, i, len = 0;
	char *s = malloc(n * 8 + 2);
	const json_t *v;
	json_t *root;
	int64_t x;

	(void)state;
	assert_non_null(s);
	s[len++] = '[';
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "%s%zu", i ? "," : "", i);
	s[len++] = ']';
	assert_int_equal(parse_n(&root, s, len, 1, NULL), 0);
	assert_int_equal(json_array_size(root), n);
	json_array_foreach(root, i, v) {
		assert_int_equal(dpq_json_val_i64(v, &x), 0);
		assert_int_equal(x, i);
	}
	json_decref(root);

	/* a large object: duplicate detection stays correct */
	len = 0;
	s[len++] = '{';
	for (i = 0; i < 20000; i++)
		len += (size_t)sprintf(s + len, "%s\"k%zu\":0", i ? "," : "", i);
	s[len++] = '}';
	assert_int_equal(parse_rc(s, len, 1), 0);
	memcpy(s + len - 1, ",\"k777\":1}", 10);
	assert_int_equal(parse_rc(s, len + 9, 1), -EINVAL);
	free(s);
}

/* ---- writer ---------------------------------------------------------- */

static void
test_writer_basic(void **state)
{
	char buf[512];
	struct dpq_json_w w;
	int n;

	(void)state;
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kbool(&w, "ok", true);
	dpq_json_w_kstr(&w, "s", "hi");
	dpq_json_w_ki64(&w, "min", INT64_MIN);
	dpq_json_w_ku64(&w, "max", UINT64_MAX);
	dpq_json_w_key(&w, "n");
	dpq_json_w_null(&w);
	dpq_json_w_key(&w, "a");
	dpq_json_w_arr_begin(&w);
	dpq_json_w_i64(&w, -1);
	dpq_json_w_obj_begin(&w);
	dpq_json_w_obj_end(&w);
	dpq_json_w_arr_begin(&w);
	dpq_json_w_arr_end(&w);
	dpq_json_w_bool(&w, false);
	dpq_json_w_arr_end(&w);
	dpq_json_w_obj_end(&w);
	n = dpq_json_w_finish(&w);
	assert_true(n > 0);
	assert_string_equal(buf, "{\"ok\":true,\"s\":\"hi\","
		"\"min\":-9223372036854775808,\"max\":9223372036854775807,"
		"\"n\":null,\"a\":[-1,{},[],false]}");
	assert_int_equal(n, strlen(buf));

	/* indented */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_set_indent(&w, 2);
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kbool(&w, "ok", true);
	dpq_json_w_key(&w, "a");
	dpq_json_w_arr_begin(&w);
	dpq_json_w_i64(&w, 1);
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kstr(&w, "k", "v");
	dpq_json_w_obj_end(&w);
	dpq_json_w_arr_end(&w);
	dpq_json_w_key(&w, "e");
	dpq_json_w_obj_begin(&w);
	dpq_json_w_obj_end(&w);
	dpq_json_w_obj_end(&w);
	assert_true(dpq_json_w_finish(&w) > 0);
	assert_string_equal(buf,
		"{\n"
		"  \"ok\": true,\n"
		"  \"a\": [\n"
		"    1,\n"
		"    {\n"
		"      \"k\": \"v\"\n"
		"    }\n"
		"  ],\n"
		"  \"e\": {}\n"
		"}");
}

static void
test_writer_escaping(void **state)
{
	char buf[256];
	struct dpq_json_w w;

	(void)state;
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_strn(&w, "q\"b\\n\nr\rt\tb\bf\f\x01\x1f/", 17);
	assert_true(dpq_json_w_finish(&w) > 0);
	assert_string_equal(buf, "\"q\\\"b\\\\n\\nr\\rt\\tb\\bf\\f\\u0001"
		"\\u001F/\"");

	/* valid UTF-8 passes through; invalid bytes become U+FFFD */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_str(&w, "\xc3\xa9\xf0\x9f\x98\x80|\xff|\xc0\x80|\xed\xa0\x80"
		"|\xe2\x82");
	assert_true(dpq_json_w_finish(&w) > 0);
#define FFFD "\xef\xbf\xbd"
	assert_string_equal(buf, "\"\xc3\xa9\xf0\x9f\x98\x80|" FFFD "|"
		FFFD FFFD "|" FFFD FFFD FFFD "|" FFFD FFFD "\"");
#undef FFFD

	/* a NUL inside a counted string is escaped, not a terminator */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_strn(&w, "a\0b", 3);
	assert_true(dpq_json_w_finish(&w) > 0);
	assert_string_equal(buf, "\"a\\u0000b\"");

	/* keys are escaped too */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kstr(&w, "k\"\n", "");
	dpq_json_w_obj_end(&w);
	assert_true(dpq_json_w_finish(&w) > 0);
	assert_string_equal(buf, "{\"k\\\"\\n\":\"\"}");
}

static void
test_writer_limits_and_misuse(void **state)
{
	char buf[16], big[128];
	struct dpq_json_w w;
	int i;

	(void)state;
	/* out of room: sticky -ENOSPC, the buffer stays NUL-terminated */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_kstr(&w, "key", "a long value here");
	dpq_json_w_obj_end(&w);
	assert_int_equal(dpq_json_w_finish(&w), -ENOSPC);
	assert_true(memchr(buf, '\0', sizeof(buf)) != NULL);
	/* exactly full: 15 characters + NUL fit */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_str(&w, "0123456789abc");
	assert_int_equal(dpq_json_w_finish(&w), 15);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_str(&w, "0123456789abcd");
	assert_int_equal(dpq_json_w_finish(&w), -ENOSPC);

	/* misuse */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_i64(&w, 1);		/* value without key */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_arr_begin(&w);
	dpq_json_w_key(&w, "k");	/* key in an array */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_key(&w, "k");
	dpq_json_w_key(&w, "l");	/* key after key */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_obj_begin(&w);
	dpq_json_w_key(&w, "k");
	dpq_json_w_obj_end(&w);		/* key without value */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_arr_begin(&w);
	dpq_json_w_obj_end(&w);		/* mismatched */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_arr_begin(&w);	/* unbalanced */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);	/* empty */
	dpq_json_w_init(&w, buf, sizeof(buf));
	dpq_json_w_i64(&w, 1);
	dpq_json_w_i64(&w, 2);		/* two top-level values */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, big, sizeof(big));
	for (i = 0; i < DPQ_JSON_W_DEPTH_MAX; i++)
		dpq_json_w_arr_begin(&w);
	for (i = 0; i < DPQ_JSON_W_DEPTH_MAX; i++)
		dpq_json_w_arr_end(&w);
	assert_int_equal(dpq_json_w_finish(&w), 2 * DPQ_JSON_W_DEPTH_MAX);
	dpq_json_w_init(&w, big, sizeof(big));
	for (i = 0; i < DPQ_JSON_W_DEPTH_MAX + 1; i++)
		dpq_json_w_arr_begin(&w);	/* too deep */
	assert_int_equal(dpq_json_w_finish(&w), -EINVAL);
	dpq_json_w_init(&w, buf, sizeof(buf));

	/* reset recovers */
	dpq_json_w_reset(&w);
	dpq_json_w_bool(&w, true);
	assert_int_equal(dpq_json_w_finish(&w), 4);
	assert_string_equal(buf, "true");
}

static void
test_writer_dynamic(void **state)
{
	struct dpq_json_w w;
	int i, n;

	(void)state;
	assert_int_equal(dpq_json_w_init_dyn(&w, 100000), 0);
	dpq_json_w_arr_begin(&w);
	for (i = 0; i < 10000; i++)
		dpq_json_w_i64(&w, 1000000 + i);	/* 8 bytes each */
	dpq_json_w_arr_end(&w);
	n = dpq_json_w_finish(&w);
	assert_int_equal(n, 10000 * 8 + 1);
	assert_int_equal(strlen(w.buf), (size_t)n);
	dpq_json_w_free(&w);

	/* growth stops at the limit */
	assert_int_equal(dpq_json_w_init_dyn(&w, 10000), 0);
	dpq_json_w_arr_begin(&w);
	for (i = 0; i < 10000; i++)
		dpq_json_w_i64(&w, 1000000 + i);
	dpq_json_w_arr_end(&w);
	assert_int_equal(dpq_json_w_finish(&w), -ENOSPC);
	assert_true(w.cap <= 10000);
	dpq_json_w_free(&w);
}

/* ---- round trips ------------------------------------------------------- */

static void
roundtrip_exact(const char *compact)
{
	struct dpq_json_w w;
	json_t *v;
	int n;

	assert_int_equal(parse_n(&v, compact, strlen(compact), 16, NULL), 0);
	assert_int_equal(dpq_json_w_init_dyn(&w, 1 << 20), 0);
	dpq_json_w_val(&w, v);
	n = dpq_json_w_finish(&w);
	assert_true(n >= 0);
	assert_string_equal(w.buf, compact);
	dpq_json_w_free(&w);
	json_decref(v);
}

static void
test_roundtrip(void **state)
{
	struct dpq_json_w w;
	json_t *doc, *doc2;
	const json_t *v;
	char raw[256];
	int i, n;

	(void)state;
	roundtrip_exact("{\"ok\":true,\"shards\":[{\"id\":0,\"conns\":12,"
		"\"drops\":{\"ring_full\":0,\"bad\":9223372036854775807}},"
		"{\"id\":1,\"neg\":-9223372036854775808}],\"n\":null,"
		"\"s\":\"\xc3\xa9\\\"\\\\\\n\\u0001\"}");
	roundtrip_exact("[[],{},\"\",0,false]");
	roundtrip_exact("\"\xf0\x9f\x98\x80\"");

	/* every byte value except NUL through writer then reader */
	for (i = 1; i < 256; i++)
		raw[i - 1] = (char)i;
	assert_int_equal(dpq_json_w_init_dyn(&w, 1 << 16), 0);
	dpq_json_w_obj_begin(&w);
	dpq_json_w_key(&w, "bytes");
	dpq_json_w_strn(&w, raw, 127);		/* ASCII: exact */
	dpq_json_w_key(&w, "high");
	dpq_json_w_strn(&w, raw + 127, 128);	/* invalid UTF-8 alone */
	dpq_json_w_obj_end(&w);
	n = dpq_json_w_finish(&w);
	assert_true(n > 0);
	assert_int_equal(parse_n(&doc, w.buf, (size_t)n, 2, NULL), 0);
	v = dpq_json_get(doc, "bytes");
	assert_int_equal(json_string_length(v), 127);
	assert_memory_equal(json_string_value(v), raw, 127);
	v = dpq_json_get(doc, "high");
	assert_int_equal(json_string_length(v), 128 * 3);	/* U+FFFD each */

	/* indented output parses to the same value */
	dpq_json_w_reset(&w);
	dpq_json_w_set_indent(&w, 4);
	dpq_json_w_val(&w, doc);
	n = dpq_json_w_finish(&w);
	assert_true(n > 0);
	assert_non_null(strchr(w.buf, '\n'));
	assert_int_equal(parse_n(&doc2, w.buf, (size_t)n, 2, NULL), 0);
	assert_true(json_equal(doc, doc2));
	json_decref(doc2);
	json_decref(doc);
	dpq_json_w_free(&w);
}

/*
 * Random mutations of a valid document: the reader never crashes or reads
 * out of bounds (ASan), and whatever it accepts the writer reproduces as
 * text it accepts again as an equal value.
 */
static void
test_mutations(void **state)
{
	static const char seed[] =
		"{\"cmd\":\"set\",\"k\":[1,-2,{\"x\":\"\\u00e9\\n\"}],"
		"\"b\":true,\"n\":null,\"s\":\"\xe2\x82\xac\"}";
	static const char alphabet[] = "{}[],:\"\\u0123456789-+.eEtrufalsn "
		"\x80\xc3\xe2\xf0\xff\x01";
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	char buf[sizeof(seed) + 8];
	unsigned iter, accepted = 0;

	(void)state;
	for (iter = 0; iter < 30000; iter++) {
		size_t len = sizeof(seed) - 1, k, nmut;
		struct dpq_json_w w;
		json_t *doc, *doc2;
		int n;

		memcpy(buf, seed, len);
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		nmut = 1 + rng % 3;
		for (k = 0; k < nmut; k++) {
			size_t pos;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			pos = (rng >> 8) % len;
			switch (rng % 3) {
			case 0:	/* replace */
				buf[pos] = alphabet[(rng >> 24) %
					(sizeof(alphabet) - 1)];
				break;
			case 1:	/* delete */
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
				break;
			default: /* truncate */
				len = pos;
				break;
			}
			if (len == 0)
				break;
		}
		if (parse_n(&doc, buf, len, 8, NULL) == 0) {
			accepted++;
			assert_int_equal(dpq_json_w_init_dyn(&w, 1 << 16), 0);
			dpq_json_w_val(&w, doc);
			n = dpq_json_w_finish(&w);
			assert_true(n > 0);
			assert_int_equal(parse_n(&doc2, w.buf, (size_t)n, 8,
				NULL), 0);
			assert_true(json_equal(doc, doc2));
			json_decref(doc2);
			dpq_json_w_free(&w);
			json_decref(doc);
		}
	}
	/* some mutations (inside strings, digits) stay valid */
	assert_true(accepted > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_strings),
		cmocka_unit_test(test_parse_bad_strings),
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_parse_structure_errors),
		cmocka_unit_test(test_parse_truncated),
		cmocka_unit_test(test_parse_depth_and_size),
		cmocka_unit_test(test_parse_many_values),
		cmocka_unit_test(test_writer_basic),
		cmocka_unit_test(test_writer_escaping),
		cmocka_unit_test(test_writer_limits_and_misuse),
		cmocka_unit_test(test_writer_dynamic),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
