/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpq_json is the small, strict JSON (RFC 8259) reader and writer of the
 * control socket. It belongs to the management thread and to dpquic-ctl;
 * nothing here runs on a shard.
 *
 * Reader: dpq_json_parse() turns one bounded text into a flat array of
 * values (a pre-order tree: a container is followed by its members, an
 * object member is a key value followed by its value). Accepted: objects,
 * arrays, strings, integers, true, false, null. Refused, each with an error
 * offset and a message: fractions and exponents (the protocol has no
 * fractional quantities), integers outside [-2^63, 2^64-1], leading zeros,
 * invalid UTF-8 (overlong forms, surrogates, > U+10FFFF, RFC 3629 §3),
 * raw control characters in strings, bad escapes, lone UTF-16 surrogates,
 * \u0000 (strings are handed out NUL-terminated), duplicate object keys,
 * nesting deeper than the caller's limit, trailing non-whitespace, and
 * input longer than DPQ_JSON_INPUT_MAX.
 *
 * Writer: struct dpq_json_w builds compact or indented JSON into a bounded
 * buffer (the caller's, or a heap buffer growing up to a limit). Commas
 * and key/value order are tracked for the caller; errors are sticky and
 * reported once by dpq_json_w_finish(). Strings are escaped (quote,
 * backslash, all control characters, DEL) and invalid UTF-8 in them is
 * replaced by U+FFFD, so the output is always valid JSON.
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

/* Largest text dpq_json_parse() accepts (replies may carry many shards). */
#define DPQ_JSON_INPUT_MAX	(4u << 20)
/* Deepest nesting any caller may ask for; requests use much less. */
#define DPQ_JSON_DEPTH_MAX	32
/* Nesting depth of the writer's bookkeeping. */
#define DPQ_JSON_W_DEPTH_MAX	32

enum dpq_json_type {
	DPQ_JSON_NULL = 0,
	DPQ_JSON_BOOL,
	DPQ_JSON_INT,
	DPQ_JSON_STRING,
	DPQ_JSON_ARRAY,
	DPQ_JSON_OBJECT,
};

/*
 * One parsed value. Values live in the document's array; the members of a
 * container follow it, and v + v->span is the value after v's subtree.
 */
struct dpq_json_val {
	enum dpq_json_type type;
	uint32_t span;		/* values in this subtree, itself included */
	uint32_t count;		/* array elements or object members */
	union {
		bool b;
		struct {
			const char *s;	/* UTF-8, NUL-terminated, no NUL inside */
			size_t len;
		} str;
		struct {
			uint64_t mag;	/* magnitude */
			bool neg;	/* value is -mag (mag <= 2^63) */
		} num;
	} u;
};

struct dpq_json_doc {
	struct dpq_json_val *vals;	/* vals[0] is the root */
	uint32_t n_vals, cap_vals;
	char *strs;			/* decoded strings */
	size_t err_off;			/* byte offset of the first error */
	const char *err;		/* static message, NULL if none */
};

/*
 * Parse [p, end) as exactly one JSON value surrounded by optional
 * whitespace; containers may nest max_depth deep (1: a flat object, at
 * most DPQ_JSON_DEPTH_MAX). On error doc->err and doc->err_off say what
 * and where; the doc needs dpq_json_doc_free() in every case.
 * Returns 0, -EINVAL (invalid JSON, or bad argument), -E2BIG (input too
 * long), -ERANGE (integer out of range), -ENOMEM.
 */
int dpq_json_parse(struct dpq_json_doc *doc, const char *p, const char *end,
		unsigned max_depth);
void dpq_json_doc_free(struct dpq_json_doc *doc);

static inline const struct dpq_json_val *
dpq_json_root(const struct dpq_json_doc *doc)
{
	return doc->n_vals ? &doc->vals[0] : NULL;
}

/* Walks the members of an array (key is NULL) or an object. */
struct dpq_json_iter {
	const struct dpq_json_val *cur;
	uint32_t left;
	bool obj;
};
void dpq_json_iter_init(struct dpq_json_iter *it, const struct dpq_json_val *c);
/* Returns false when no member is left. key may be NULL. */
bool dpq_json_iter_next(struct dpq_json_iter *it,
		const struct dpq_json_val **key, const struct dpq_json_val **val);

/* Member `key` of object obj, or NULL (absent, or obj not an object). */
const struct dpq_json_val *dpq_json_get(const struct dpq_json_val *obj,
		const char *key);

/*
 * Typed lookups in an object: 0, -ENOENT (absent), -EPROTO (other type),
 * -ERANGE (integer does not fit the result).
 */
int dpq_json_get_str(const struct dpq_json_val *obj, const char *key,
		const char **s, size_t *len);
int dpq_json_get_i64(const struct dpq_json_val *obj, const char *key,
		int64_t *out);
int dpq_json_get_u64(const struct dpq_json_val *obj, const char *key,
		uint64_t *out);
int dpq_json_get_bool(const struct dpq_json_val *obj, const char *key,
		bool *out);
/* The same conversions on a value: 0, -EPROTO, -ERANGE. */
int dpq_json_val_i64(const struct dpq_json_val *v, int64_t *out);
int dpq_json_val_u64(const struct dpq_json_val *v, uint64_t *out);

/* ---- writer --------------------------------------------------------- */

struct dpq_json_w {
	char *buf;
	size_t len, cap, max;	/* max: growth limit of an owned buffer */
	bool owned;		/* buf is malloc'd by the writer */
	int err;		/* first error, sticky */
	unsigned indent;	/* 0: compact, else spaces per level */
	unsigned depth;
	/* per level: bit 0 container is an object, bit 1 has members */
	uint8_t lvl[DPQ_JSON_W_DEPTH_MAX];
	bool want_val;		/* a key was written, its value is due */
	bool done;		/* a complete top-level value was written */
};

/* Write into the caller's buf of cap bytes (the text stays NUL-terminated). */
void dpq_json_w_init(struct dpq_json_w *w, char *buf, size_t cap);
/* Write into a heap buffer growing up to max bytes; free with _w_free. */
int dpq_json_w_init_dyn(struct dpq_json_w *w, size_t max);
void dpq_json_w_free(struct dpq_json_w *w);
/* Indent nested values by n spaces, one member a line (0: compact). */
void dpq_json_w_set_indent(struct dpq_json_w *w, unsigned n);
/* Forget everything written (keeps buffer, indent and the error-free state). */
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
void dpq_json_w_val(struct dpq_json_w *w, const struct dpq_json_val *v);

/* Key + value in one call. */
void dpq_json_w_kstr(struct dpq_json_w *w, const char *key, const char *s);
void dpq_json_w_ki64(struct dpq_json_w *w, const char *key, int64_t v);
void dpq_json_w_ku64(struct dpq_json_w *w, const char *key, uint64_t v);
void dpq_json_w_kbool(struct dpq_json_w *w, const char *key, bool v);

/*
 * Length of the complete text in w->buf (NUL-terminated), or the first
 * error: -ENOSPC (out of room), -EINVAL (misuse: value without key in an
 * object, key in an array, unbalanced or missing value), -ENOMEM.
 */
int dpq_json_w_finish(const struct dpq_json_w *w);

#endif /* DPQ_CONTROL_CTL_JSON_H */
