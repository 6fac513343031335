/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_json: the control protocol's JSON, on libjansson (Debian's
 * libjansson-dev, already a dependency of DPDK's telemetry). jansson does
 * the lexing, UTF-8 checks, escaping and printing; this file adds what the
 * protocol wants on top: limits and typed lookups. It belongs to the
 * management thread and to dpquic-ctl; nothing here runs on a shard.
 *
 * Reader: dpq_json_parse() is json_loadb() with duplicate keys refused,
 * then a walk that refuses what the protocol has no use for and bounds
 * what it does: fractions and exponents (no fractional quantities), and
 * nesting deeper than the caller's limit. jansson itself refuses invalid
 * UTF-8, lone surrogates, \u0000, raw control characters in strings,
 * leading zeros, integers outside int64, trailing non-whitespace. Input
 * longer than DPQ_JSON_INPUT_MAX is refused before jansson sees it.
 * Values are jansson's json_t; the typed lookups below check types and
 * ranges and say which way a value was wrong.
 *
 * Writer: struct dpq_json_w keeps the streaming interface the command
 * handlers write replies with (begin/key/value/end, errors sticky until
 * dpq_json_w_finish), builds a json_t tree and prints it with
 * json_dumpb(), compact or indented, into the caller's buffer or a heap
 * buffer growing up to a limit. A running lower bound of the text's size
 * stops a handler that writes too much before the tree grows large.
 * Strings with invalid UTF-8 are written with U+FFFD in place of each bad
 * byte, so the output is always valid JSON. Integers are int64 (jansson's
 * json_int_t): dpq_json_w_u64() saturates at INT64_MAX.
 *
 * Return codes: 0 (or a length) on success; -EINVAL bad argument, invalid
 * JSON or writer misuse; -E2BIG input too long; -ERANGE integer out of
 * range; -ENOENT key absent; -EPROTO value of the wrong type;
 * -ENOSPC writer out of room; -ENOMEM.
 */
#ifndef DPQ_CONTROL_CTL_JSON_H
#define DPQ_CONTROL_CTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Largest text dpq_json_parse() accepts (replies may carry many shards). */
#define DPQ_JSON_INPUT_MAX	(4u << 20)
/* Deepest nesting any caller may ask for; requests use much less. */
#define DPQ_JSON_DEPTH_MAX	32
/* Nesting depth of the writer. */
#define DPQ_JSON_W_DEPTH_MAX	32

/* Where and why a parse failed. */
#define DPQ_JSON_OFF_NONE	SIZE_MAX	/* valid JSON, refused as a whole */
struct dpq_json_err {
	size_t off;		/* byte offset in the input, or _OFF_NONE */
	char msg[160];		/* jansson's text, or ours */
};

/*
 * Parse [p, p + len) as exactly one JSON value surrounded by optional
 * whitespace; containers may nest max_depth deep (0: a scalar only,
 * 1: a flat object or array, at most DPQ_JSON_DEPTH_MAX). On success *out
 * holds a new reference (json_decref it). err may be NULL.
 * Returns 0, -EINVAL (invalid JSON, or bad argument), -E2BIG (input too
 * long), -ERANGE (integer out of range), -ENOMEM.
 */
int dpq_json_parse(const char *p, size_t len, unsigned max_depth,
		json_t **out, struct dpq_json_err *err);

/* Member `key` of object obj, or NULL (absent, or obj not an object). */
const json_t *dpq_json_get(const json_t *obj, const char *key);

/*
 * Typed lookups in an object: 0, -ENOENT (absent), -EPROTO (other type),
 * -ERANGE (integer does not fit the result). *s stays valid as long as obj.
 */
int dpq_json_get_str(const json_t *obj, const char *key,
		const char **s, size_t *len);
int dpq_json_get_i64(const json_t *obj, const char *key, int64_t *out);
int dpq_json_get_u64(const json_t *obj, const char *key, uint64_t *out);
int dpq_json_get_bool(const json_t *obj, const char *key, bool *out);
/* The same conversions on a value: 0, -EPROTO, -ERANGE. */
int dpq_json_val_i64(const json_t *v, int64_t *out);
int dpq_json_val_u64(const json_t *v, uint64_t *out);

/* ---- writer --------------------------------------------------------- */

struct dpq_json_w {
	char *buf;		/* the text, after dpq_json_w_finish() */
	size_t len, cap, max;	/* max: growth limit of an owned buffer */
	bool owned;		/* buf is malloc'd by the writer */
	int err;		/* first error, sticky */
	unsigned indent;	/* 0: compact, else spaces per level */
	size_t est;		/* lower bound of the compact text's length */
	json_t *root;		/* the value being built */
	json_t *stack[DPQ_JSON_W_DEPTH_MAX];	/* open containers */
	unsigned depth;
	bool printed;		/* buf holds root's text */
	char *key;		/* the key written last, its value due */
};

/* Write into the caller's buf of cap bytes (the text stays NUL-terminated). */
void dpq_json_w_init(struct dpq_json_w *w, char *buf, size_t cap);
/* Write into a heap buffer growing up to max bytes; free with _w_free. */
int dpq_json_w_init_dyn(struct dpq_json_w *w, size_t max);
/* Release the tree (if not finished) and an owned buffer. */
void dpq_json_w_free(struct dpq_json_w *w);
/* Indent nested values by n spaces, one member a line (0: compact). */
void dpq_json_w_set_indent(struct dpq_json_w *w, unsigned n);
/* Forget everything written (keeps buffer and indent, clears the error). */
void dpq_json_w_reset(struct dpq_json_w *w);

void dpq_json_w_obj_begin(struct dpq_json_w *w);
void dpq_json_w_obj_end(struct dpq_json_w *w);
void dpq_json_w_arr_begin(struct dpq_json_w *w);
void dpq_json_w_arr_end(struct dpq_json_w *w);
void dpq_json_w_key(struct dpq_json_w *w, const char *key);
void dpq_json_w_str(struct dpq_json_w *w, const char *s);
void dpq_json_w_strn(struct dpq_json_w *w, const char *s, size_t len);
void dpq_json_w_i64(struct dpq_json_w *w, int64_t v);
void dpq_json_w_u64(struct dpq_json_w *w, uint64_t v);
void dpq_json_w_bool(struct dpq_json_w *w, bool v);
void dpq_json_w_null(struct dpq_json_w *w);
/* Copy a parsed value (and its subtree). */
void dpq_json_w_val(struct dpq_json_w *w, const json_t *v);

/* Key + value in one call. */
void dpq_json_w_kstr(struct dpq_json_w *w, const char *key, const char *s);
void dpq_json_w_ki64(struct dpq_json_w *w, const char *key, int64_t v);
void dpq_json_w_ku64(struct dpq_json_w *w, const char *key, uint64_t v);
void dpq_json_w_kbool(struct dpq_json_w *w, const char *key, bool v);

/*
 * Print the value into w->buf (NUL-terminated) and return its length, or
 * the first error: -ENOSPC (out of room), -EINVAL (misuse: value without
 * key in an object, key in an array, unbalanced or missing value),
 * -ENOMEM. Further calls without
 * writes return the same.
 */
int dpq_json_w_finish(struct dpq_json_w *w);

#endif /* DPQ_CONTROL_CTL_JSON_H */
