/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Strict JSON reader and bounded JSON writer for the control socket
 * (RFC 8259, restricted to integers; UTF-8 rules from RFC 3629 §3-4).
 * The reader is recursive descent with an explicit depth limit, reads
 * only inside [p, end), and decodes strings into one buffer sized by the
 * input (a decoded string plus its NUL never outgrows its quoted form).
 * mgmt only (and dpquic-ctl).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl/json.h"

/* ---- UTF-8 ------------------------------------------------------------ */

/*
 * Length of the well-formed UTF-8 sequence at [p, end) (RFC 3629 §4
 * table: no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static size_t
utf8_seq_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			hi = 0x8f;	/* > U+10FFFF */
	} else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static size_t
utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* ---- reader ----------------------------------------------------------- */

struct parser {
	struct dpq_json_doc *doc;
	const char *start, *p, *end;
	char *sout;			/* next free byte in doc->strs */
	unsigned max_depth;
	const struct dpq_json_val **scratch;	/* duplicate-key check */
	size_t scratch_cap;
};

static int
fail(struct parser *ps, const char *at, int rc, const char *msg)
{
	if (ps->doc->err == NULL) {
		ps->doc->err = msg;
		ps->doc->err_off = (size_t)(at - ps->start);
	}
	return rc;
}

static void
skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
			*ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* Append one value; returns its index or a negative errno. */
static int64_t
new_val(struct parser *ps, enum dpq_json_type type)
{
	struct dpq_json_doc *doc = ps->doc;

	if (doc->n_vals == doc->cap_vals) {
		uint32_t ncap = doc->cap_vals ? doc->cap_vals * 2 : 64;
		struct dpq_json_val *nv;

		/* Every value takes at least one input byte: bounded. */
		nv = realloc(doc->vals, (size_t)ncap * sizeof(*nv));
		if (nv == NULL)
			return fail(ps, ps->p, -ENOMEM, "out of memory");
		doc->vals = nv;
		doc->cap_vals = ncap;
	}
	memset(&doc->vals[doc->n_vals], 0, sizeof(doc->vals[0]));
	doc->vals[doc->n_vals].type = type;
	doc->vals[doc->n_vals].span = 1;
	return doc->n_vals++;
}

static int
hex4(const char *p, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* ps->p is at the opening quote. RFC 8259 §7. */
static int
parse_string(struct parser *ps)
{
	const char *p = ps->p + 1, *end = ps->end;
	char *o = ps->sout, *s0 = ps->sout;
	int64_t idx;

	for (;;) {
		unsigned char c;

		if (p >= end)
			return fail(ps, p, -EINVAL, "unterminated string");
		c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(ps, p, -EINVAL,
				"control character in string");
		if (c == '\\') {
			uint32_t cp, lo;

			if (end - p < 2)
				return fail(ps, p, -EINVAL, "unterminated string");
			switch (p[1]) {
			case '"': *o++ = '"'; p += 2; continue;
			case '\\': *o++ = '\\'; p += 2; continue;
			case '/': *o++ = '/'; p += 2; continue;
			case 'b': *o++ = '\b'; p += 2; continue;
			case 'f': *o++ = '\f'; p += 2; continue;
			case 'n': *o++ = '\n'; p += 2; continue;
			case 'r': *o++ = '\r'; p += 2; continue;
			case 't': *o++ = '\t'; p += 2; continue;
			case 'u': break;
			default:
				return fail(ps, p, -EINVAL, "invalid escape");
			}
			if (end - p < 6 || hex4(p + 2, &cp) < 0)
				return fail(ps, p, -EINVAL, "invalid \\u escape");
			if (cp == 0)
				return fail(ps, p, -EINVAL,
					"\\u0000 is not allowed in strings");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(ps, p, -EINVAL,
					"unpaired UTF-16 low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				/* RFC 8259 §7: a pair as two escapes. */
				if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
						hex4(p + 8, &lo) < 0 ||
						lo < 0xdc00 || lo > 0xdfff)
					return fail(ps, p, -EINVAL,
						"unpaired UTF-16 high surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) +
					(lo - 0xdc00);
				p += 6;
			}
			o += utf8_put(o, cp);
			p += 6;
			continue;
		}
		if (c < 0x80) {
			*o++ = (char)c;
			p++;
		} else {
			size_t n = utf8_seq_len((const unsigned char *)p,
					(const unsigned char *)end);

			if (n == 0)
				return fail(ps, p, -EINVAL, "invalid UTF-8");
			memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	*o++ = '\0';
	idx = new_val(ps, DPQ_JSON_STRING);
	if (idx < 0)
		return (int)idx;
	ps->doc->vals[idx].u.str.s = s0;
	ps->doc->vals[idx].u.str.len = (size_t)(o - s0 - 1);
	ps->sout = o;
	ps->p = p + 1;
	return 0;
}

static int
parse_number(struct parser *ps)
{
	const char *p = ps->p, *end = ps->end, *num = ps->p;
	uint64_t mag = 0;
	bool neg = false, range = false;
	int64_t idx;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return fail(ps, num, -EINVAL, "invalid number");
	if (*p == '0') {
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return fail(ps, num, -EINVAL,
				"leading zeros are not allowed");
	} else {
		while (p < end && *p >= '0' && *p <= '9') {
			unsigned d = (unsigned)(*p - '0');

			if (mag > (UINT64_MAX - d) / 10)
				range = true;
			else
				mag = mag * 10 + d;
			p++;
		}
	}
	if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
		return fail(ps, num, -EINVAL,
			"only integers are supported (no fraction or exponent)");
	if (range || (neg && mag > (uint64_t)INT64_MAX + 1))
		return fail(ps, num, -ERANGE, "integer out of range");
	idx = new_val(ps, DPQ_JSON_INT);
	if (idx < 0)
		return (int)idx;
	ps->doc->vals[idx].u.num.mag = mag;
	ps->doc->vals[idx].u.num.neg = neg && mag != 0;
	ps->p = p;
	return 0;
}

static int
parse_literal(struct parser *ps, const char *lit, enum dpq_json_type type,
		bool b)
{
	size_t n = strlen(lit);
	int64_t idx;

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n) != 0)
		return fail(ps, ps->p, -EINVAL, "invalid literal");
	idx = new_val(ps, type);
	if (idx < 0)
		return (int)idx;
	ps->doc->vals[idx].u.b = b;
	ps->p += n;
	return 0;
}

static int
key_cmp(const void *a, const void *b)
{
	const struct dpq_json_val *x = *(const struct dpq_json_val *const *)a;
	const struct dpq_json_val *y = *(const struct dpq_json_val *const *)b;

	if (x->u.str.len != y->u.str.len)
		return x->u.str.len < y->u.str.len ? -1 : 1;
	return memcmp(x->u.str.s, y->u.str.s, x->u.str.len);
}

/* Sort the keys of the object at idx and refuse a repeated one: O(n log n). */
static int
check_dup_keys(struct parser *ps, uint32_t idx, const char *obj_at)
{
	const struct dpq_json_val *o = &ps->doc->vals[idx];
	const struct dpq_json_val *k;
	uint32_t i;

	if (o->count < 2)
		return 0;
	if (ps->scratch_cap < o->count) {
		const struct dpq_json_val **ns;

		ns = realloc(ps->scratch, o->count * sizeof(*ns));
		if (ns == NULL)
			return fail(ps, obj_at, -ENOMEM, "out of memory");
		ps->scratch = ns;
		ps->scratch_cap = o->count;
	}
	k = o + 1;
	for (i = 0; i < o->count; i++) {
		ps->scratch[i] = k;
		k = k + 1 + k[1].span;
	}
	qsort(ps->scratch, o->count, sizeof(ps->scratch[0]), key_cmp);
	for (i = 1; i < o->count; i++)
		if (key_cmp(&ps->scratch[i - 1], &ps->scratch[i]) == 0)
			return fail(ps, obj_at, -EINVAL, "duplicate key in object");
	return 0;
}

static int parse_value(struct parser *ps, unsigned depth);

/* RFC 8259 §4-5; ps->p is at '{' or '['. */
static int
parse_container(struct parser *ps, unsigned depth)
{
	bool obj = *ps->p == '{';
	char close = obj ? '}' : ']';
	const char *at = ps->p;
	int64_t idx;
	uint32_t count = 0;
	int rc;

	if (depth >= ps->max_depth)
		return fail(ps, at, -EINVAL, "nesting too deep");
	idx = new_val(ps, obj ? DPQ_JSON_OBJECT : DPQ_JSON_ARRAY);
	if (idx < 0)
		return (int)idx;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		if (obj) {
			if (ps->p >= ps->end)
				return fail(ps, ps->p, -EINVAL, "truncated object");
			if (*ps->p != '"')
				return fail(ps, ps->p, -EINVAL,
					"expected a string key");
			rc = parse_string(ps);
			if (rc < 0)
				return rc;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, ps->p, -EINVAL, "expected ':'");
			ps->p++;
		}
		rc = parse_value(ps, depth + 1);
		if (rc < 0)
			return rc;
		count++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, ps->p, -EINVAL,
				obj ? "truncated object" : "truncated array");
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			break;
		}
		return fail(ps, ps->p, -EINVAL,
			obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	ps->doc->vals[idx].count = count;
	ps->doc->vals[idx].span = ps->doc->n_vals - (uint32_t)idx;
	if (obj)
		return check_dup_keys(ps, (uint32_t)idx, at);
	return 0;
}

static int
parse_value(struct parser *ps, unsigned depth)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, ps->p, -EINVAL, "truncated input");
	switch (*ps->p) {
	case '{':
	case '[':
		return parse_container(ps, depth);
	case '"':
		return parse_string(ps);
	case 't':
		return parse_literal(ps, "true", DPQ_JSON_BOOL, true);
	case 'f':
		return parse_literal(ps, "false", DPQ_JSON_BOOL, false);
	case 'n':
		return parse_literal(ps, "null", DPQ_JSON_NULL, false);
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps);
		return fail(ps, ps->p, -EINVAL, "unexpected character");
	}
}

int
dpq_json_parse(struct dpq_json_doc *doc, const char *p, const char *end,
		unsigned max_depth)
{
	struct parser ps;
	size_t len;
	int rc;

	if (doc == NULL)
		return -EINVAL;
	memset(doc, 0, sizeof(*doc));
	if (p == NULL || end < p || max_depth > DPQ_JSON_DEPTH_MAX) {
		doc->err = "bad argument";
		return -EINVAL;
	}
	len = (size_t)(end - p);
	if (len > DPQ_JSON_INPUT_MAX) {
		doc->err = "input too long";
		doc->err_off = DPQ_JSON_INPUT_MAX;
		return -E2BIG;
	}
	doc->strs = malloc(len + 1);
	if (doc->strs == NULL) {
		doc->err = "out of memory";
		return -ENOMEM;
	}
	memset(&ps, 0, sizeof(ps));
	ps.doc = doc;
	ps.start = ps.p = p;
	ps.end = end;
	ps.sout = doc->strs;
	/* depth counts containers: max_depth 1 allows {"a":1} only. */
	ps.max_depth = max_depth;
	rc = parse_value(&ps, 0);
	if (rc == 0) {
		skip_ws(&ps);
		if (ps.p != ps.end)
			rc = fail(&ps, ps.p, -EINVAL,
				"trailing characters after the value");
	}
	free(ps.scratch);
	return rc;
}

void
dpq_json_doc_free(struct dpq_json_doc *doc)
{
	if (doc == NULL)
		return;
	free(doc->vals);
	free(doc->strs);
	doc->vals = NULL;
	doc->strs = NULL;
	doc->n_vals = doc->cap_vals = 0;
}

void
dpq_json_iter_init(struct dpq_json_iter *it, const struct dpq_json_val *c)
{
	it->obj = c != NULL && c->type == DPQ_JSON_OBJECT;
	if (c == NULL || (c->type != DPQ_JSON_OBJECT &&
			c->type != DPQ_JSON_ARRAY) || c->count == 0) {
		it->cur = NULL;
		it->left = 0;
		return;
	}
	it->cur = c + 1;
	it->left = c->count;
}

bool
dpq_json_iter_next(struct dpq_json_iter *it,
		const struct dpq_json_val **key, const struct dpq_json_val **val)
{
	const struct dpq_json_val *k = NULL, *v;

	if (it->left == 0)
		return false;
	v = it->cur;
	if (it->obj) {
		k = v;
		v = k + 1;
	}
	it->cur = v + v->span;
	it->left--;
	if (key != NULL)
		*key = k;
	if (val != NULL)
		*val = v;
	return true;
}

const struct dpq_json_val *
dpq_json_get(const struct dpq_json_val *obj, const char *key)
{
	struct dpq_json_iter it;
	const struct dpq_json_val *k, *v;
	size_t klen;

	if (obj == NULL || key == NULL || obj->type != DPQ_JSON_OBJECT)
		return NULL;
	klen = strlen(key);
	dpq_json_iter_init(&it, obj);
	while (dpq_json_iter_next(&it, &k, &v))
		if (k->u.str.len == klen && memcmp(k->u.str.s, key, klen) == 0)
			return v;
	return NULL;
}

int
dpq_json_val_i64(const struct dpq_json_val *v, int64_t *out)
{
	if (v == NULL || v->type != DPQ_JSON_INT)
		return -EPROTO;
	if (v->u.num.neg) {
		if (v->u.num.mag > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		/* -(2^63) fits; negate in unsigned to stay defined. */
		*out = (int64_t)(0 - v->u.num.mag);
		return 0;
	}
	if (v->u.num.mag > (uint64_t)INT64_MAX)
		return -ERANGE;
	*out = (int64_t)v->u.num.mag;
	return 0;
}

int
dpq_json_val_u64(const struct dpq_json_val *v, uint64_t *out)
{
	if (v == NULL || v->type != DPQ_JSON_INT)
		return -EPROTO;
	if (v->u.num.neg)
		return -ERANGE;
	*out = v->u.num.mag;
	return 0;
}

int
dpq_json_get_str(const struct dpq_json_val *obj, const char *key,
		const char **s, size_t *len)
{
	const struct dpq_json_val *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (v->type != DPQ_JSON_STRING)
		return -EPROTO;
	*s = v->u.str.s;
	if (len != NULL)
		*len = v->u.str.len;
	return 0;
}

int
dpq_json_get_i64(const struct dpq_json_val *obj, const char *key,
		int64_t *out)
{
	const struct dpq_json_val *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	return dpq_json_val_i64(v, out);
}

int
dpq_json_get_u64(const struct dpq_json_val *obj, const char *key,
		uint64_t *out)
{
	const struct dpq_json_val *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	return dpq_json_val_u64(v, out);
}

int
dpq_json_get_bool(const struct dpq_json_val *obj, const char *key, bool *out)
{
	const struct dpq_json_val *v = dpq_json_get(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (v->type != DPQ_JSON_BOOL)
		return -EPROTO;
	*out = v->u.b;
	return 0;
}

/* ---- writer ----------------------------------------------------------- */

#define LVL_OBJ		0x1
#define LVL_MEMBERS	0x2

void
dpq_json_w_init(struct dpq_json_w *w, char *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	w->max = cap;
	if (buf == NULL || cap == 0)
		w->err = -EINVAL;
	else
		buf[0] = '\0';
}

int
dpq_json_w_init_dyn(struct dpq_json_w *w, size_t max)
{
	size_t cap = max < 4096 ? max : 4096;

	memset(w, 0, sizeof(*w));
	if (max == 0) {
		w->err = -EINVAL;
		return -EINVAL;
	}
	w->buf = malloc(cap);
	if (w->buf == NULL) {
		w->err = -ENOMEM;
		return -ENOMEM;
	}
	w->buf[0] = '\0';
	w->cap = cap;
	w->max = max;
	w->owned = true;
	return 0;
}

void
dpq_json_w_free(struct dpq_json_w *w)
{
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
	w->len = 0;
	if (w->buf != NULL && w->cap > 0) {
		w->buf[0] = '\0';
		w->err = 0;
	}
	w->depth = 0;
	w->want_val = false;
	w->done = false;
}

/* Make room for n more bytes plus the NUL. */
static bool
reserve(struct dpq_json_w *w, size_t n)
{
	size_t need, ncap;
	char *nb;

	if (w->err)
		return false;
	need = w->len + n + 1;
	if (need <= w->cap)
		return true;
	if (!w->owned || need > w->max) {
		w->err = -ENOSPC;
		return false;
	}
	ncap = w->cap;
	while (ncap < need)
		ncap = ncap > w->max / 2 ? w->max : ncap * 2;
	nb = realloc(w->buf, ncap);
	if (nb == NULL) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = nb;
	w->cap = ncap;
	return true;
}

static void
put(struct dpq_json_w *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void
put_newline(struct dpq_json_w *w)
{
	unsigned i, n;

	if (w->indent == 0)
		return;
	n = w->depth * w->indent;
	if (!reserve(w, n + 1))
		return;
	w->buf[w->len++] = '\n';
	for (i = 0; i < n; i++)
		w->buf[w->len++] = ' ';
	w->buf[w->len] = '\0';
}

/* Separator and checks before a value; false if nothing may be written. */
static bool
pre_value(struct dpq_json_w *w)
{
	uint8_t *l;

	if (w->err)
		return false;
	if (w->depth == 0) {
		if (w->done) {
			w->err = -EINVAL;	/* a second top-level value */
			return false;
		}
		return true;
	}
	l = &w->lvl[w->depth - 1];
	if (*l & LVL_OBJ) {
		if (!w->want_val) {
			w->err = -EINVAL;	/* value without a key */
			return false;
		}
		w->want_val = false;
		return true;
	}
	if (*l & LVL_MEMBERS)
		put(w, ",", 1);
	*l |= LVL_MEMBERS;
	put_newline(w);
	return w->err == 0;
}

static void
post_value(struct dpq_json_w *w)
{
	if (w->depth == 0)
		w->done = true;
}

static void
begin(struct dpq_json_w *w, bool obj)
{
	if (!pre_value(w))
		return;
	if (w->depth >= DPQ_JSON_W_DEPTH_MAX) {
		w->err = -EINVAL;
		return;
	}
	put(w, obj ? "{" : "[", 1);
	w->lvl[w->depth++] = obj ? LVL_OBJ : 0;
}

static void
finish_container(struct dpq_json_w *w, bool obj)
{
	uint8_t l;

	if (w->err)
		return;
	if (w->depth == 0 || !(w->lvl[w->depth - 1] & LVL_OBJ) != !obj ||
			w->want_val) {
		w->err = -EINVAL;
		return;
	}
	l = w->lvl[--w->depth];
	if (l & LVL_MEMBERS)
		put_newline(w);
	put(w, obj ? "}" : "]", 1);
	post_value(w);
}

void
dpq_json_w_obj_begin(struct dpq_json_w *w)
{
	begin(w, true);
}

void
dpq_json_w_obj_end(struct dpq_json_w *w)
{
	finish_container(w, true);
}

void
dpq_json_w_arr_begin(struct dpq_json_w *w)
{
	begin(w, false);
}

void
dpq_json_w_arr_end(struct dpq_json_w *w)
{
	finish_container(w, false);
}

/* A quoted, escaped string; invalid UTF-8 becomes U+FFFD. */
static void
put_string(struct dpq_json_w *w, const char *s, size_t len)
{
	static const char hexd[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	put(w, "\"", 1);
	while (p < end && w->err == 0) {
		const unsigned char *run = p;
		char esc[6];

		while (p < end && *p >= 0x20 && *p < 0x7f && *p != '"' &&
				*p != '\\')
			p++;
		if (p > run)
			put(w, (const char *)run, (size_t)(p - run));
		if (p >= end)
			break;
		if (*p >= 0x80) {
			size_t n = utf8_seq_len(p, end);

			if (n == 0) {
				put(w, "\\ufffd", 6);
				p++;
			} else {
				put(w, (const char *)p, n);
				p += n;
			}
			continue;
		}
		esc[0] = '\\';
		switch (*p) {
		case '"': esc[1] = '"'; put(w, esc, 2); break;
		case '\\': esc[1] = '\\'; put(w, esc, 2); break;
		case '\n': esc[1] = 'n'; put(w, esc, 2); break;
		case '\r': esc[1] = 'r'; put(w, esc, 2); break;
		case '\t': esc[1] = 't'; put(w, esc, 2); break;
		case '\b': esc[1] = 'b'; put(w, esc, 2); break;
		case '\f': esc[1] = 'f'; put(w, esc, 2); break;
		default:
			/* other controls and DEL */
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hexd[*p >> 4];
			esc[5] = hexd[*p & 0xf];
			put(w, esc, 6);
			break;
		}
		p++;
	}
	put(w, "\"", 1);
}

void
dpq_json_w_key(struct dpq_json_w *w, const char *key)
{
	uint8_t *l;

	if (w->err)
		return;
	if (key == NULL || w->depth == 0 || w->want_val ||
			!(w->lvl[w->depth - 1] & LVL_OBJ)) {
		w->err = -EINVAL;
		return;
	}
	l = &w->lvl[w->depth - 1];
	if (*l & LVL_MEMBERS)
		put(w, ",", 1);
	*l |= LVL_MEMBERS;
	put_newline(w);
	put_string(w, key, strlen(key));
	put(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
	w->want_val = true;
}

void
dpq_json_w_strn(struct dpq_json_w *w, const char *s, size_t len)
{
	if (s == NULL && len != 0) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	if (!pre_value(w))
		return;
	put_string(w, s ? s : "", len);
	post_value(w);
}

void
dpq_json_w_str(struct dpq_json_w *w, const char *s)
{
	dpq_json_w_strn(w, s, s ? strlen(s) : 0);
}

static void
put_num(struct dpq_json_w *w, bool neg, uint64_t mag)
{
	char tmp[24];
	int n;

	if (!pre_value(w))
		return;
	n = snprintf(tmp, sizeof(tmp), "%s%llu", neg ? "-" : "",
		(unsigned long long)mag);
	put(w, tmp, (size_t)n);
	post_value(w);
}

void
dpq_json_w_i64(struct dpq_json_w *w, int64_t v)
{
	if (v < 0)
		put_num(w, true, 0 - (uint64_t)v);
	else
		put_num(w, false, (uint64_t)v);
}

void
dpq_json_w_u64(struct dpq_json_w *w, uint64_t v)
{
	put_num(w, false, v);
}

void
dpq_json_w_bool(struct dpq_json_w *w, bool v)
{
	if (!pre_value(w))
		return;
	put(w, v ? "true" : "false", v ? 4 : 5);
	post_value(w);
}

void
dpq_json_w_null(struct dpq_json_w *w)
{
	if (!pre_value(w))
		return;
	put(w, "null", 4);
	post_value(w);
}

void
dpq_json_w_val(struct dpq_json_w *w, const struct dpq_json_val *v)
{
	struct dpq_json_iter it;
	const struct dpq_json_val *k, *m;

	if (v == NULL) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	switch (v->type) {
	case DPQ_JSON_NULL:
		dpq_json_w_null(w);
		break;
	case DPQ_JSON_BOOL:
		dpq_json_w_bool(w, v->u.b);
		break;
	case DPQ_JSON_INT:
		put_num(w, v->u.num.neg, v->u.num.mag);
		break;
	case DPQ_JSON_STRING:
		dpq_json_w_strn(w, v->u.str.s, v->u.str.len);
		break;
	case DPQ_JSON_ARRAY:
	case DPQ_JSON_OBJECT:
		begin(w, v->type == DPQ_JSON_OBJECT);
		dpq_json_iter_init(&it, v);
		while (w->err == 0 && dpq_json_iter_next(&it, &k, &m)) {
			if (k != NULL)
				dpq_json_w_key(w, k->u.str.s);
			dpq_json_w_val(w, m);
		}
		finish_container(w, v->type == DPQ_JSON_OBJECT);
		break;
	}
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

int
dpq_json_w_finish(const struct dpq_json_w *w)
{
	if (w->err)
		return w->err;
	if (w->depth != 0 || w->want_val || !w->done)
		return -EINVAL;
	if (w->len > (size_t)INT32_MAX)
		return -ENOSPC;
	return (int)w->len;
}
