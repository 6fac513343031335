/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpquic-ctl's human-readable output (see ctl_print.h). Only dpquic-ctl
 * links this; a reply is small (at most the server's reply limit), so
 * simple quadratic column bookkeeping is fine.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "control/ctl/ctl_print.h"

#define COLS_MAX	128
#define CELL_MAX	96

/* Columns of known lists, in the order an operator scans them. */
static const char *const conn_cols[] = {
	"id", "shard", "peer", "state", "age_ms", "srtt_us", "cwnd",
	"bytes_sent", "bytes_recv", "streams", "cipher", "alpn", "qlog", NULL,
};

static const struct {
	const char *list;
	const char *const *cols;
} known[] = {
	{ "connections", conn_cols },
};

static bool
is_scalar(const json_t *v)
{
	return !json_is_object(v) && !json_is_array(v);
}

/* A scalar (or anything else, compact and cut) as table text. */
static void
cell(const json_t *v, char *buf, size_t n)
{
	char *s;

	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, n, "%s", json_string_length(v) ?
			json_string_value(v) : "-");
		return;
	case JSON_INTEGER:
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT,
			json_integer_value(v));
		return;
	case JSON_TRUE:
		snprintf(buf, n, "yes");
		return;
	case JSON_FALSE:
		snprintf(buf, n, "no");
		return;
	case JSON_NULL:
		snprintf(buf, n, "-");
		return;
	default:
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, n, "%s", s != NULL ? s : "?");
		free(s);
		return;
	}
}

static void
pad(FILE *f, unsigned n)
{
	while (n-- > 0)
		fputc(' ', f);
}

/* ---- tables ----------------------------------------------------------- */

struct table {
	char *name[COLS_MAX];
	unsigned ncols;
	bool cut;		/* some columns were left out */
};

static int
col_find(const struct table *t, const char *name)
{
	unsigned i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->name[i], name) == 0)
			return (int)i;
	return -1;
}

static void
col_add(struct table *t, const char *name)
{
	if (col_find(t, name) >= 0)
		return;
	if (t->ncols == COLS_MAX) {
		t->cut = true;
		return;
	}
	t->name[t->ncols] = strdup(name);
	if (t->name[t->ncols] != NULL)
		t->ncols++;
}

/* Every scalar of o, nested objects flattened as "a.b". */
static void
cols_collect(struct table *t, const json_t *o, const char *prefix)
{
	const json_t *v;
	const char *k;
	char name[128];

	json_object_foreach((json_t *)o, k, v) {
		snprintf(name, sizeof(name), "%s%s%s", prefix,
			prefix[0] ? "." : "", k);
		if (json_is_object(v))
			cols_collect(t, v, name);
		else
			col_add(t, name);
	}
}

/* Member at a dotted path, or NULL. */
static const json_t *
path_get(const json_t *o, const char *path)
{
	char buf[128], *p, *dot;

	snprintf(buf, sizeof(buf), "%s", path);
	p = buf;
	while ((dot = strchr(p, '.')) != NULL) {
		*dot = '\0';
		o = json_object_get(o, p);
		if (!json_is_object(o))
			return NULL;
		p = dot + 1;
	}
	return json_object_get(o, p);
}

static void
table_free(struct table *t)
{
	unsigned i;

	for (i = 0; i < t->ncols; i++)
		free(t->name[i]);
	t->ncols = 0;
}

/* One row per element; numeric columns right-aligned. */
static void
print_rows(FILE *f, const json_t *arr, const struct table *t, unsigned ind)
{
	size_t n = json_array_size(arr), r;
	char buf[CELL_MAX];
	bool *num;
	unsigned *w, c;

	w = calloc(t->ncols, sizeof(*w));
	num = calloc(t->ncols, sizeof(*num));
	if (w == NULL || num == NULL)
		goto out;
	for (c = 0; c < t->ncols; c++) {
		w[c] = (unsigned)strlen(t->name[c]);
		num[c] = true;
		for (r = 0; r < n; r++) {
			const json_t *v = path_get(json_array_get(arr, r),
				t->name[c]);

			if (v != NULL && !json_is_integer(v))
				num[c] = false;
			cell(v != NULL ? v : json_null(), buf, sizeof(buf));
			if (strlen(buf) > w[c])
				w[c] = (unsigned)strlen(buf);
		}
	}
	for (r = 0; r <= n; r++) {
		pad(f, ind);
		for (c = 0; c < t->ncols; c++) {
			const char *txt = t->name[c];
			bool last = c + 1 == t->ncols;

			if (r > 0) {
				const json_t *v = path_get(
					json_array_get(arr, r - 1),
					t->name[c]);

				cell(v != NULL ? v : json_null(), buf,
					sizeof(buf));
				txt = buf;
			}
			if (num[c])
				fprintf(f, "%*s", (int)w[c], txt);
			else
				fprintf(f, "%-*s", last ? 0 : (int)w[c], txt);
			fputs(last ? "\n" : "  ", f);
		}
	}
out:
	free(num);
	free(w);
}

/* One row per field, one column per element (labelled by "id"). */
static void
print_transposed(FILE *f, const json_t *arr, const struct table *t,
		unsigned ind)
{
	size_t n = json_array_size(arr), r;
	unsigned kw = 0, *w, c;
	char buf[CELL_MAX];

	w = calloc(n ? n : 1, sizeof(*w));
	if (w == NULL)
		return;
	for (c = 0; c < t->ncols; c++)
		if (strlen(t->name[c]) > kw)
			kw = (unsigned)strlen(t->name[c]);
	for (r = 0; r < n; r++) {
		const json_t *e = json_array_get(arr, r);
		const json_t *id = json_object_get(e, "id");

		if (id != NULL)
			cell(id, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%zu", r);
		w[r] = (unsigned)strlen(buf);
		for (c = 0; c < t->ncols; c++) {
			const json_t *v = path_get(e, t->name[c]);

			cell(v != NULL ? v : json_null(), buf, sizeof(buf));
			if (strlen(buf) > w[r])
				w[r] = (unsigned)strlen(buf);
		}
	}
	pad(f, ind);
	fprintf(f, "%-*s", (int)kw, "id");
	for (r = 0; r < n; r++) {
		const json_t *id = json_object_get(json_array_get(arr, r),
			"id");

		if (id != NULL)
			cell(id, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%zu", r);
		fprintf(f, "  %*s", (int)w[r], buf);
	}
	fputc('\n', f);
	for (c = 0; c < t->ncols; c++) {
		if (strcmp(t->name[c], "id") == 0)
			continue;
		pad(f, ind);
		fprintf(f, "%-*s", (int)kw, t->name[c]);
		for (r = 0; r < n; r++) {
			const json_t *v = path_get(json_array_get(arr, r),
				t->name[c]);

			cell(v != NULL ? v : json_null(), buf, sizeof(buf));
			fprintf(f, "  %*s", (int)w[r], buf);
		}
		fputc('\n', f);
	}
	free(w);
}

static void
print_table(FILE *f, const char *key, const json_t *arr, unsigned ind)
{
	const char *const *pref = NULL;
	struct table t = { .ncols = 0 };
	const json_t *e;
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].list, key) == 0)
			pref = known[i].cols;
	json_array_foreach(arr, i, e)
		cols_collect(&t, e, "");
	if (pref != NULL) {
		/* the preferred columns that occur, in their order */
		struct table p = { .ncols = 0 };
		unsigned c;

		for (c = 0; pref[c] != NULL; c++)
			if (col_find(&t, pref[c]) >= 0)
				col_add(&p, pref[c]);
		p.cut = p.ncols < t.ncols;
		table_free(&t);
		t = p;
	}
	if (pref != NULL || t.ncols <= DPQ_CTL_PRINT_WIDE)
		print_rows(f, arr, &t, ind);
	else
		print_transposed(f, arr, &t, ind);
	if (t.cut) {
		pad(f, ind);
		fprintf(f, "(more fields: dpquic-ctl -j)\n");
	}
	table_free(&t);
}

/* ---- objects ------------------------------------------------------------ */

static bool
all_objects(const json_t *arr)
{
	const json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (!json_is_object(e))
			return false;
	return json_array_size(arr) > 0;
}

static void
print_obj(FILE *f, const json_t *o, unsigned ind, bool top)
{
	unsigned kw = 0;
	const json_t *v;
	const char *k;
	char buf[CELL_MAX * 4];

	json_object_foreach((json_t *)o, k, v)
		if (is_scalar(v) && strlen(k) > kw &&
		    !(top && (!strcmp(k, "ok") || !strcmp(k, "id"))))
			kw = (unsigned)strlen(k);
	/* scalars first, aligned */
	json_object_foreach((json_t *)o, k, v) {
		if (!is_scalar(v) ||
		    (top && (!strcmp(k, "ok") || !strcmp(k, "id"))))
			continue;
		cell(v, buf, sizeof(buf));
		pad(f, ind);
		fprintf(f, "%-*s  %s\n", (int)kw, k, buf);
	}
	json_object_foreach((json_t *)o, k, v) {
		size_t i, n;
		const json_t *e;

		if (is_scalar(v))
			continue;
		pad(f, ind);
		if (json_is_object(v)) {
			fprintf(f, "%s:\n", k);
			print_obj(f, v, ind + 2, false);
			continue;
		}
		n = json_array_size(v);
		if (n == 0) {
			fprintf(f, "%s: (none)\n", k);
		} else if (all_objects(v)) {
			fprintf(f, "%s (%zu):\n", k, n);
			print_table(f, k, v, ind + 2);
		} else {
			fprintf(f, "%s: ", k);
			json_array_foreach(v, i, e) {
				cell(e, buf, sizeof(buf));
				fprintf(f, "%s%s", i ? ", " : "", buf);
			}
			fputc('\n', f);
		}
	}
}

void
dpq_ctl_print_human(FILE *f, const json_t *reply)
{
	if (json_is_object(reply))
		print_obj(f, reply, 0, true);
}
