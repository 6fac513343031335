/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control protocol's JSON on libjansson (see json.h): limits and typed
 * lookups around json_loadb(), and the handlers' streaming writer around a
 * json_t tree printed by json_dumpb().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl/json.h"

/* ---- reader --------------------------------------------------------- */

static void
set_err(struct dpq_json_err *err, size_t off, const char *msg)
{
	if (err == NULL)
		return;
	err->off = off;
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
}

/*
 * What jansson accepts but the protocol does not: reals, and nesting past
 * max_depth. Recursion stops one level past the limit, so its depth is
 * bounded by the caller's limit, not by the input.
 */
static int
check_tree(const json_t *v, unsigned depth, unsigned max_depth,
		struct dpq_json_err *err)
{
	const json_t *m;
	const char *k;
	size_t i;
	int rc;

	switch (json_typeof(v)) {
	case JSON_REAL:
		set_err(err, DPQ_JSON_OFF_NONE, "fractions and exponents "
			"are not part of the protocol (integers only)");
		return -EINVAL;
	case JSON_OBJECT:
	case JSON_ARRAY:
		if (depth >= max_depth) {
			char msg[64];

			snprintf(msg, sizeof(msg), "nested deeper than %u "
				"levels", max_depth);
			set_err(err, DPQ_JSON_OFF_NONE, msg);
			return -EINVAL;
		}
		if (json_is_array(v)) {
			json_array_foreach(v, i, m)
				if ((rc = check_tree(m, depth + 1, max_depth,
						err)) < 0)
					return rc;
		} else {
			json_object_foreach((json_t *)v, k, m)
				if ((rc = check_tree(m, depth + 1, max_depth,
						err)) < 0)
					return rc;
		}
		return 0;
	default:
		return 0;
	}
}

int
dpq_json_parse(const char *p, size_t len, unsigned max_depth, json_t **out,
		struct dpq_json_err *err)
{
	json_error_t je;
	json_t *root;
	int rc;

	if (out == NULL || (p == NULL && len > 0) ||
			max_depth > DPQ_JSON_DEPTH_MAX) {
		set_err(err, 0, "bad argument");
		return -EINVAL;
	}
	*out = NULL;
	if (len > DPQ_JSON_INPUT_MAX) {
		set_err(err, DPQ_JSON_INPUT_MAX, "input too long");
		return -E2BIG;
	}
	root = json_loadb(p != NULL ? p : "", len,
		JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root == NULL) {
		/* jansson's position counts bytes read, error included */
		size_t off = je.position > 0 ? (size_t)je.position - 1 : 0;

		set_err(err, off < len ? off : len, je.text);
		switch (json_error_code(&je)) {
		case json_error_numeric_overflow:
			return -ERANGE;
		case json_error_out_of_memory:
			return -ENOMEM;
		default:
			return -EINVAL;
		}
	}
	rc = check_tree(root, 0, max_depth, err);
	if (rc < 0) {
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}

const json_t *
dpq_json_get(const json_t *obj, const char *key)
{
	if (obj == NULL || key == NULL || !json_is_object(obj))
		return NULL;
	return json_object_get(obj, key);
}

int
dpq_json_val_i64(const json_t *v, int64_t *out)
{
	if (!json_is_integer(v))
		return -EPROTO;
	*out = (int64_t)json_integer_value(v);
	return 0;
}

int
dpq_json_val_u64(const json_t *v, uint64_t *out)
{
	json_int_t i;

	if (!json_is_integer(v))
		return -EPROTO;
	i = json_integer_value(v);
	if (i < 0)
		return -ERANGE;
	*out = (uint64_t)i;
	return 0;
}

int
dpq_json_get_str(const json_t *obj, const char *key, const char **s,
		size_t *len)
{
	const json_t *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!json_is_string(v))
		return -EPROTO;
	if (s != NULL)
		*s = json_string_value(v);
	if (len != NULL)
		*len = json_string_length(v);
	return 0;
}

int
dpq_json_get_i64(const json_t *obj, const char *key, int64_t *out)
{
	const json_t *v = dpq_json_get(obj, key);

	return v == NULL ? -ENOENT : dpq_json_val_i64(v, out);
}

int
dpq_json_get_u64(const json_t *obj, const char *key, uint64_t *out)
{
	const json_t *v = dpq_json_get(obj, key);

	return v == NULL ? -ENOENT : dpq_json_val_u64(v, out);
}

int
dpq_json_get_bool(const json_t *obj, const char *key, bool *out)
{
	const json_t *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!json_is_boolean(v))
		return -EPROTO;
	*out = json_is_true(v);
	return 0;
}

/* ---- writer --------------------------------------------------------- */

static void
w_clear(struct dpq_json_w *w)
{
	json_decref(w->root);
	w->root = NULL;
	free(w->key);
	w->key = NULL;
	w->depth = 0;
	w->est = 0;
	w->printed = false;
	w->len = 0;
	if (w->buf != NULL && w->cap > 0)
		w->buf[0] = '\0';
}

void
dpq_json_w_init(struct dpq_json_w *w, char *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	w->max = cap > 0 ? cap - 1 : 0;	/* room for the NUL */
	if (buf == NULL || cap == 0)
		w->err = -EINVAL;
	else
		buf[0] = '\0';
}

int
dpq_json_w_init_dyn(struct dpq_json_w *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	if (max == 0) {
		w->err = -EINVAL;
		return -EINVAL;
	}
	w->cap = max < 4096 ? max + 1 : 4096;
	w->buf = malloc(w->cap);
	if (w->buf == NULL) {
		w->err = -ENOMEM;
		return -ENOMEM;
	}
	w->buf[0] = '\0';
	w->max = max;
	w->owned = true;
	return 0;
}

void
dpq_json_w_free(struct dpq_json_w *w)
{
	json_decref(w->root);
	w->root = NULL;
	free(w->key);
	w->key = NULL;
	if (w->owned)
		free(w->buf);
	w->buf = NULL;
	w->cap = w->len = 0;
	w->owned = false;
}

void
dpq_json_w_set_indent(struct dpq_json_w *w, unsigned n)
{
	w->indent = n > 16 ? 16 : n;
}

void
dpq_json_w_reset(struct dpq_json_w *w)
{
	w_clear(w);
	if (w->buf != NULL && w->cap > 0)
		w->err = 0;
}

static void
w_fail(struct dpq_json_w *w, int err)
{
	if (w->err == 0)
		w->err = err;
}

/* Count est bytes of compact text; false once past the limit. */
static bool
w_room(struct dpq_json_w *w, size_t n)
{
	w->est += n;
	if (w->est > w->max) {
		w_fail(w, -ENOSPC);
		return false;
	}
	return true;
}

/*
 * Attach v (a new reference, consumed) where the writer stands: as the
 * root, after the pending key, or at the end of the open array.
 * Returns false (and drops v) when it cannot.
 */
static bool
w_add(struct dpq_json_w *w, json_t *v, size_t text_len)
{
	json_t *top;

	if (v == NULL) {
		w_fail(w, -ENOMEM);
		return false;
	}
	if (w->err != 0)
		goto drop;
	if (w->printed || (w->depth == 0 && w->root != NULL)) {
		w_fail(w, -EINVAL);		/* a second top-level value */
		goto drop;
	}
	if (w->depth == 0) {
		if (!w_room(w, text_len))
			goto drop;
		w->root = v;
		return true;
	}
	top = w->stack[w->depth - 1];
	if (json_is_object(top)) {
		if (w->key == NULL) {
			w_fail(w, -EINVAL);	/* value without a key */
			goto drop;
		}
		/* "key": and a comma */
		if (!w_room(w, text_len + strlen(w->key) + 4))
			goto drop;
		if (json_object_set_new(top, w->key, v) < 0) {
			w_fail(w, -ENOMEM);
			free(w->key);
			w->key = NULL;
			return false;
		}
		free(w->key);
		w->key = NULL;
		return true;
	}
	if (!w_room(w, text_len + 1))
		goto drop;
	if (json_array_append_new(top, v) < 0) {
		w_fail(w, -ENOMEM);
		return false;
	}
	return true;
drop:
	json_decref(v);
	return false;
}

static void
w_begin(struct dpq_json_w *w, json_t *c)
{
	if (w->err == 0 && w->depth == DPQ_JSON_W_DEPTH_MAX) {
		w_fail(w, -EINVAL);
		json_decref(c);
		return;
	}
	json_incref(c);		/* one reference for the stack's pointer */
	if (!w_add(w, c, 2)) {
		json_decref(c);
		return;
	}
	w->stack[w->depth++] = c;
	json_decref(c);		/* the parent (or root) keeps it alive */
}

static void
w_end(struct dpq_json_w *w, bool obj)
{
	json_t *top;

	if (w->err != 0)
		return;
	if (w->depth == 0 || w->key != NULL) {
		w_fail(w, -EINVAL);
		return;
	}
	top = w->stack[w->depth - 1];
	if (json_is_object(top) != obj) {
		w_fail(w, -EINVAL);
		return;
	}
	w->depth--;
}

void
dpq_json_w_obj_begin(struct dpq_json_w *w)
{
	w_begin(w, json_object());
}

void
dpq_json_w_obj_end(struct dpq_json_w *w)
{
	w_end(w, true);
}

void
dpq_json_w_arr_begin(struct dpq_json_w *w)
{
	w_begin(w, json_array());
}

void
dpq_json_w_arr_end(struct dpq_json_w *w)
{
	w_end(w, false);
}

/* Length of the valid UTF-8 sequence at p (RFC 3629 §4), 0 if invalid. */
static size_t
utf8_len(const unsigned char *p, size_t left)
{
	unsigned char c = p[0];
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (left < n)
		return 0;
	for (i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) ||	/* overlong */
	    (c == 0xed && p[1] >= 0xa0) ||	/* surrogates */
	    (c == 0xf0 && p[1] < 0x90) ||	/* overlong */
	    (c == 0xf4 && p[1] >= 0x90))	/* > U+10FFFF */
		return 0;
	return n;
}

/*
 * A json string of [s, s + len) with U+FFFD for each byte that is not
 * valid UTF-8 (jansson refuses such strings), or NULL (no memory).
 */
static json_t *
w_string(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, o = 0, n;
	json_t *v;
	char *fix;

	v = json_stringn(s, len);
	if (v != NULL || len > SIZE_MAX / 3)
		return v;
	fix = malloc(len * 3 + 1);
	if (fix == NULL)
		return NULL;
	for (i = 0; i < len; i += n) {
		n = utf8_len(u + i, len - i);
		if (n == 0) {
			memcpy(fix + o, "\xef\xbf\xbd", 3);
			o += 3;
			n = 1;
		} else {
			memcpy(fix + o, s + i, n);
			o += n;
		}
	}
	v = json_stringn(fix, o);
	free(fix);
	return v;
}

void
dpq_json_w_key(struct dpq_json_w *w, const char *key)
{
	json_t *k;

	if (w->err != 0)
		return;
	if (key == NULL || w->depth == 0 || w->key != NULL ||
			!json_is_object(w->stack[w->depth - 1])) {
		w_fail(w, -EINVAL);	/* key outside an object, or twice */
		return;
	}
	/* keys go through the same UTF-8 repair as values */
	k = w_string(key, strlen(key));
	if (k == NULL) {
		w_fail(w, -ENOMEM);
		return;
	}
	w->key = strdup(json_string_value(k));
	json_decref(k);
	if (w->key == NULL)
		w_fail(w, -ENOMEM);
}

void
dpq_json_w_strn(struct dpq_json_w *w, const char *s, size_t len)
{
	if (s == NULL) {
		w_fail(w, -EINVAL);
		return;
	}
	if (w->err != 0)
		return;
	w_add(w, w_string(s, len), len + 2);
}

void
dpq_json_w_str(struct dpq_json_w *w, const char *s)
{
	dpq_json_w_strn(w, s, s != NULL ? strlen(s) : 0);
}

static size_t
digits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

void
dpq_json_w_i64(struct dpq_json_w *w, int64_t v)
{
	if (w->err != 0)
		return;
	w_add(w, json_integer((json_int_t)v),
		v < 0 ? 1 + digits(-(uint64_t)v) : digits((uint64_t)v));
}

void
dpq_json_w_u64(struct dpq_json_w *w, uint64_t v)
{
	/*
	 * jansson's integers are int64: saturate. No counter gets to 2^63,
	 * and a sentinel such as UINT64_MAX ("none yet") still reads as
	 * huge instead of failing the whole reply.
	 */
	dpq_json_w_i64(w, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

void
dpq_json_w_bool(struct dpq_json_w *w, bool v)
{
	if (w->err != 0)
		return;
	w_add(w, json_boolean(v), v ? 4 : 5);
}

void
dpq_json_w_null(struct dpq_json_w *w)
{
	if (w->err != 0)
		return;
	w_add(w, json_null(), 4);
}

void
dpq_json_w_val(struct dpq_json_w *w, const json_t *v)
{
	json_t *copy;
	size_t n;

	if (v == NULL) {
		w_fail(w, -EINVAL);
		return;
	}
	if (w->err != 0)
		return;
	/* the printed length is the honest size of a copied subtree */
	n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	if (n == 0) {
		w_fail(w, -ENOMEM);
		return;
	}
	if (w->est + n > w->max) {
		w_fail(w, -ENOSPC);
		return;
	}
	copy = json_deep_copy(v);
	w_add(w, copy, n);
}

void
dpq_json_w_kstr(struct dpq_json_w *w, const char *key, const char *s)
{
	dpq_json_w_key(w, key);
	dpq_json_w_str(w, s);
}

void
dpq_json_w_ki64(struct dpq_json_w *w, const char *key, int64_t v)
{
	dpq_json_w_key(w, key);
	dpq_json_w_i64(w, v);
}

void
dpq_json_w_ku64(struct dpq_json_w *w, const char *key, uint64_t v)
{
	dpq_json_w_key(w, key);
	dpq_json_w_u64(w, v);
}

void
dpq_json_w_kbool(struct dpq_json_w *w, const char *key, bool v)
{
	dpq_json_w_key(w, key);
	dpq_json_w_bool(w, v);
}

static int
w_finish(struct dpq_json_w *w)
{
	size_t flags, n;

	if (w->err != 0)
		return w->err;
	if (w->printed)
		return (int)w->len;
	if (w->root == NULL || w->depth != 0 || w->key != NULL) {
		w->err = -EINVAL;	/* nothing written, or left open */
		return w->err;
	}
	flags = JSON_ENCODE_ANY | (w->indent > 0 ?
		JSON_INDENT(w->indent) : JSON_COMPACT);
	n = json_dumpb(w->root, NULL, 0, flags);
	if (n == 0) {
		w->err = -ENOMEM;
		return w->err;
	}
	if (n > w->max || n > INT32_MAX) {
		w->err = -ENOSPC;
		return w->err;
	}
	if (n + 1 > w->cap) {
		char *nb;

		if (!w->owned) {
			w->err = -ENOSPC;
			return w->err;
		}
		nb = realloc(w->buf, n + 1);
		if (nb == NULL) {
			w->err = -ENOMEM;
			return w->err;
		}
		w->buf = nb;
		w->cap = n + 1;
	}
	json_dumpb(w->root, w->buf, n, flags);
	w->buf[n] = '\0';
	w->len = n;
	w->printed = true;
	/* the text is all a caller reads from here on */
	json_decref(w->root);
	w->root = NULL;
	return (int)n;
}

/*
 * A failed finish releases the tree as a successful one does: a writer
 * on a caller's buffer then holds nothing to free whatever happened (the
 * text or the error is all a caller reads from here on).
 */
int
dpq_json_w_finish(struct dpq_json_w *w)
{
	int rc = w_finish(w);

	if (rc < 0) {
		json_decref(w->root);
		w->root = NULL;
		free(w->key);
		w->key = NULL;
		w->depth = 0;
	}
	return rc;
}
