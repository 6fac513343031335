/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration table's engine (see conf.h): defaults, the file
 * (libconfig), single keys from the command line, formatting, help.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libconfig.h>

#include "control/conf/conf.h"

extern const struct dpq_conf_section dpq_conf_section_eal;
extern const struct dpq_conf_section dpq_conf_section_server;
extern const struct dpq_conf_section dpq_conf_section_port;
extern const struct dpq_conf_section dpq_conf_section_tls;
extern const struct dpq_conf_section dpq_conf_section_ctl;
extern const struct dpq_conf_section dpq_conf_section_log;
extern const struct dpq_conf_section dpq_conf_section_drain;

/* The sections, in the order --help and `dpquic-ctl config` show them.
 * A new area adds its table here (and its struct to struct dpq_conf). */
static const struct dpq_conf_section *const sections[] = {
	&dpq_conf_section_server,
	&dpq_conf_section_port,
	&dpq_conf_section_tls,
	&dpq_conf_section_recovery,
	&dpq_conf_section_fec,
	&dpq_conf_section_crypto,
	&dpq_conf_section_tickets,
	&dpq_conf_section_tokens,
	&dpq_conf_section_ctl,
	&dpq_conf_section_qlog,
	&dpq_conf_section_log,
	&dpq_conf_section_drain,
	&dpq_conf_section_eal,
};
const unsigned int dpq_conf_nsections = sizeof(sections) / sizeof(sections[0]);

static void __attribute__((format(printf, 3, 4)))
seterr(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || n == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/* ---- strict scalar parsers ------------------------------------------- */

int
dpq_conf_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	for (; *p != '\0'; p++) {
		unsigned int d;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		d = (unsigned int)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int
dpq_conf_parse_seconds(const char *s, double *out)
{
	const char *p;
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	/* Plain decimal only: strtod would also take "inf", "nan", hex
	 * floats and leading blanks. */
	for (p = s; *p != '\0'; p++)
		if (strchr("0123456789.eE+-", *p) == NULL)
			return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
		return -EINVAL;
	if (v < 0)
		return -ERANGE;
	*out = v;
	return 0;
}

static int
parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int
dpq_conf_parse_log_level(const char *s, uint32_t *level)
{
	static const char *const names[] = { "emerg", "alert", "crit",
		"error", "warning", "notice", "info", "debug" };
	uint64_t v;
	unsigned int i;

	for (i = 0; i < 8; i++)
		if (strcasecmp(s, names[i]) == 0) {
			*level = i + 1;	/* RTE_LOG_EMERG is 1 */
			return 0;
		}
	if (strcasecmp(s, "err") == 0) {
		*level = 4;
		return 0;
	}
	if (dpq_conf_parse_u64(s, &v) == 0 && v >= 1 && v <= 8) {
		*level = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

int
dpq_conf_check_retry(const char *val, char *err, size_t n)
{
	uint64_t rate;

	if (strcmp(val, "auto") == 0 || strcmp(val, "never") == 0 ||
	    strcmp(val, "always") == 0)
		return 0;
	if (strncmp(val, "rate:", 5) == 0 &&
	    dpq_conf_parse_u64(val + 5, &rate) == 0 && rate >= 1 &&
	    rate <= UINT32_MAX)
		return 0;
	seterr(err, n, "expected auto, never, always or rate:N (N new "
		"connections per second before Retry, 1..%u)", UINT32_MAX);
	return -EINVAL;
}

/* ---- the table --------------------------------------------------------- */

static void *
field(const struct dpq_conf *c, const struct dpq_conf_key *k)
{
	return (char *)c + k->off;
}

static int
key_index(const struct dpq_conf_key *key)
{
	unsigned int s, i;
	int idx = 0;

	for (s = 0; s < dpq_conf_nsections; s++)
		for (i = 0; i < sections[s]->nkeys; i++, idx++)
			if (&sections[s]->keys[i] == key)
				return idx < DPQ_CONF_KEYS_MAX ? idx : -1;
	return -1;
}

static void
strv_clear(struct dpq_conf_strv *v)
{
	unsigned int i;

	for (i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

static int
strv_add(struct dpq_conf_strv *v, const char *s)
{
	char **nv = realloc(v->v, (v->n + 1) * sizeof(*nv));

	if (nv == NULL)
		return -ENOMEM;
	v->v = nv;
	v->v[v->n] = strdup(s);
	if (v->v[v->n] == NULL)
		return -ENOMEM;
	v->n++;
	return 0;
}

static const char *
type_expect(const struct dpq_conf_key *k, char *buf, size_t n)
{
	switch (k->type) {
	case DPQ_CONF_BOOL:
		return "expected true or false";
	case DPQ_CONF_UINT:
		snprintf(buf, n, "expected an integer %llu..%llu",
			(unsigned long long)k->min,
			(unsigned long long)k->max);
		return buf;
	case DPQ_CONF_SECONDS:
		snprintf(buf, n, "expected a number of seconds %g..%g",
			k->dmin, k->dmax);
		return buf;
	case DPQ_CONF_ADDR:
		return "expected IP:PORT, e.g. 198.18.0.2:443 or "
			"[2001:db8::2]:443";
	case DPQ_CONF_IP:
		return "expected an IP address without a port";
	default:
		return "expected a non-empty string";
	}
}

/*
 * Parse val into key k's field. For lists, append. On error err gets
 * "what is wrong (what is allowed)" without a location.
 */
static int
parse_into(struct dpq_conf *c, const struct dpq_conf_key *k, const char *val,
		char *err, size_t n)
{
	void *f = field(c, k);
	char why[DPQ_CONF_ERR_MAX] = "";
	char buf[128];
	struct dpq_addr a;
	uint64_t u;
	double d;
	bool b;
	int rc;

	switch (k->type) {
	case DPQ_CONF_BOOL:
		if (parse_bool(val, &b) != 0)
			goto bad;
		*(bool *)f = b;
		return 0;
	case DPQ_CONF_UINT:
		if (dpq_conf_parse_u64(val, &u) != 0 || u < k->min ||
		    u > k->max)
			goto bad;
		*(uint64_t *)f = u;
		return 0;
	case DPQ_CONF_SECONDS:
		if (dpq_conf_parse_seconds(val, &d) != 0 || d < k->dmin ||
		    d > k->dmax)
			goto bad;
		*(double *)f = d;
		return 0;
	case DPQ_CONF_ADDR:
	case DPQ_CONF_IP:
		if (dpq_addr_parse(val, &a) != 0 ||
		    (k->type == DPQ_CONF_ADDR) != (a.port != 0))
			goto bad;
		*(struct dpq_addr *)f = a;
		return 0;
	case DPQ_CONF_STR:
	case DPQ_CONF_STRV:
		if (val[0] == '\0' && k->check == NULL)
			goto bad;
		if (k->check != NULL && k->check(val, why, sizeof(why)) != 0) {
			seterr(err, n, "\"%s\": %s", val, why);
			return -EINVAL;
		}
		if (k->type == DPQ_CONF_STRV)
			return strv_add(f, val);
		{
			char *s = strdup(val);

			if (s == NULL)
				return -ENOMEM;
			free(*(char **)f);
			*(char **)f = s;
		}
		return 0;
	}
bad:
	rc = -EINVAL;
	seterr(err, n, "\"%s\": %s", val, type_expect(k, buf, sizeof(buf)));
	return rc;
}

static void
mark(struct dpq_conf *c, const struct dpq_conf_key *k,
		enum dpq_conf_origin o, unsigned int line)
{
	int i = key_index(k);

	if (i >= 0) {
		c->src[i].origin = o;
		c->src[i].line = line;
	}
}

int
dpq_conf_init(struct dpq_conf *c)
{
	char err[DPQ_CONF_ERR_MAX];
	unsigned int s, i;
	int rc;

	memset(c, 0, sizeof(*c));
	for (s = 0; s < dpq_conf_nsections; s++) {
		for (i = 0; i < sections[s]->nkeys; i++) {
			const struct dpq_conf_key *k = &sections[s]->keys[i];

			if (key_index(k) < 0)
				return -ENOSPC;	/* raise DPQ_CONF_KEYS_MAX */
			if (k->def == NULL)
				continue;
			rc = parse_into(c, k, k->def, err, sizeof(err));
			if (rc != 0)
				return rc;	/* a bad default: a bug */
		}
	}
	return 0;
}

void
dpq_conf_free(struct dpq_conf *c)
{
	unsigned int s, i;

	if (c == NULL)
		return;
	for (s = 0; s < dpq_conf_nsections; s++) {
		for (i = 0; i < sections[s]->nkeys; i++) {
			const struct dpq_conf_key *k = &sections[s]->keys[i];

			if (k->type == DPQ_CONF_STR) {
				free(*(char **)field(c, k));
				*(char **)field(c, k) = NULL;
			} else if (k->type == DPQ_CONF_STRV) {
				strv_clear(field(c, k));
			}
		}
	}
	free(c->file);
	c->file = NULL;
}

static const struct dpq_conf_section *
find_section(const char *name)
{
	unsigned int s;

	for (s = 0; s < dpq_conf_nsections; s++)
		if (strcmp(sections[s]->name, name) == 0)
			return sections[s];
	return NULL;
}

static const struct dpq_conf_key *
find_key(const struct dpq_conf_section *sec, const char *name)
{
	unsigned int i;

	for (i = 0; i < sec->nkeys; i++)
		if (strcmp(sec->keys[i].name, name) == 0)
			return &sec->keys[i];
	return NULL;
}

const struct dpq_conf_key *
dpq_conf_find(const char *dotted, const struct dpq_conf_section **secp)
{
	const struct dpq_conf_section *sec;
	const char *dot = strchr(dotted, '.');
	char name[64];

	if (dot == NULL || (size_t)(dot - dotted) >= sizeof(name))
		return NULL;
	memcpy(name, dotted, (size_t)(dot - dotted));
	name[dot - dotted] = '\0';
	sec = find_section(name);
	if (sec == NULL)
		return NULL;
	if (secp != NULL)
		*secp = sec;
	return find_key(sec, dot + 1);
}

const struct dpq_conf_key *
dpq_conf_find_opt(const char *opt, const struct dpq_conf_section **secp)
{
	unsigned int s, i;

	for (s = 0; s < dpq_conf_nsections; s++)
		for (i = 0; i < sections[s]->nkeys; i++)
			if (sections[s]->keys[i].opt != NULL &&
			    strcmp(sections[s]->keys[i].opt, opt) == 0) {
				if (secp != NULL)
					*secp = sections[s];
				return &sections[s]->keys[i];
			}
	return NULL;
}

bool
dpq_conf_is_set(const struct dpq_conf *c, const char *dotted)
{
	const struct dpq_conf_key *k = dpq_conf_find(dotted, NULL);
	int i = k != NULL ? key_index(k) : -1;

	return i >= 0 && c->src[i].origin != DPQ_CONF_DEFAULT;
}

int
dpq_conf_set(struct dpq_conf *c, const char *dotted, const char *val,
		enum dpq_conf_origin origin, char *err, size_t n)
{
	const struct dpq_conf_section *sec = NULL;
	const struct dpq_conf_key *k = dpq_conf_find(dotted, &sec);
	char why[DPQ_CONF_ERR_MAX];
	int rc;

	if (k == NULL) {
		seterr(err, n, "%s: no such key (dpquicd --help lists them "
			"as section.key)", dotted);
		return -EINVAL;
	}
	if (k->type == DPQ_CONF_STRV && origin != DPQ_CONF_CLI)
		strv_clear(field(c, k));
	rc = parse_into(c, k, val, why, sizeof(why));
	if (rc != 0) {
		if (k->opt != NULL)
			seterr(err, n, "--%s %s", k->opt, why);
		else
			seterr(err, n, "%s.%s: %s", sec->name, k->name, why);
		return rc;
	}
	mark(c, k, origin, 0);
	return 0;
}

/* ---- the file ---------------------------------------------------------- */

/* Edit distance small enough to be a typo (for "did you mean"). */
static bool
near(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned int d[33][33];

	if (la > 32 || lb > 32)
		return false;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned int)j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			unsigned int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1,
				z = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			x = x < y ? x : y;
			d[i][j] = x < z ? x : z;
		}
	return d[la][lb] <= 2;
}

static void
suggest_key(const struct dpq_conf_section *sec, const char *name, char *buf,
		size_t n)
{
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < sec->nkeys; i++)
		if (near(name, sec->keys[i].name)) {
			snprintf(buf, n, "; did you mean %s?",
				sec->keys[i].name);
			return;
		}
}

/*
 * libconfig 1.5 wraps integer literals that do not fit 32 bits (Debian
 * bookworm ships 1.5: "5000000000" reads as 705032704). Find the literal
 * after "name =" on the setting's source line and check that it says what
 * libconfig read. 0: same, or the line has another layout (nothing to
 * check); -ERANGE: it does not.
 */
static int
check_int_literal(const char *file, unsigned int line, const char *name,
		long long got)
{
	char buf[4096];
	unsigned int ln = 0;
	size_t nl = strlen(name);
	FILE *f;
	int rc = 0;

	if (file == NULL || line == 0 || (f = fopen(file, "r")) == NULL)
		return 0;
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (++ln == line)
			break;
	fclose(f);
	if (ln != line)
		return 0;
	for (char *p = strstr(buf, name); p != NULL;
	     p = strstr(p + 1, name)) {
		char *q = p + nl, *end;
		long long v;

		if (p > buf && (p[-1] == '_' || p[-1] == '-' ||
		    (p[-1] >= 'a' && p[-1] <= 'z') ||
		    (p[-1] >= 'A' && p[-1] <= 'Z')))
			continue;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '=' && *q != ':')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		errno = 0;
		v = strtoll(q, &end, 0);
		if (end == q)
			continue;
		if (errno == ERANGE || v != got)
			rc = -ERANGE;
		break;
	}
	return rc;
}

/* A scalar setting as text; -EINVAL for groups, arrays, lists. */
static int
setting_text(const config_setting_t *st, const char *file, char *buf,
		size_t n)
{
	switch (config_setting_type(st)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: {
		long long v = config_setting_get_int64(st);

		if (config_setting_name(st) != NULL &&
		    check_int_literal(file, config_setting_source_line(st),
				config_setting_name(st), v) != 0) {
			snprintf(buf, n, "(an integer beyond 64 bits)");
			return -ERANGE;
		}
		snprintf(buf, n, "%lld", v);
		return 0;
	}
	case CONFIG_TYPE_FLOAT:
		snprintf(buf, n, "%.17g", config_setting_get_float(st));
		return 0;
	case CONFIG_TYPE_BOOL:
		snprintf(buf, n, "%s", config_setting_get_bool(st) ? "true" :
			"false");
		return 0;
	case CONFIG_TYPE_STRING:
		if (strlen(config_setting_get_string(st)) >= n)
			return -E2BIG;
		snprintf(buf, n, "%s", config_setting_get_string(st));
		return 0;
	default:
		return -EINVAL;
	}
}

static const char *
setting_file(const config_setting_t *st, const char *path)
{
	const char *f = config_setting_source_file(st);

	return f != NULL ? f : path;
}

static int
load_key(struct dpq_conf *c, const char *path,
		const struct dpq_conf_section *sec,
		const struct dpq_conf_key *k, const config_setting_t *st,
		char *err, size_t n)
{
	const char *file = setting_file(st, path);
	unsigned int line = config_setting_source_line(st);
	char val[4096], why[DPQ_CONF_ERR_MAX];
	int rc, i, len;

	if (k->type == DPQ_CONF_STRV) {
		if (config_setting_is_aggregate(st) &&
		    !config_setting_is_group(st)) {
			strv_clear(field(c, k));
			len = config_setting_length(st);
			for (i = 0; i < len; i++) {
				const config_setting_t *e =
					config_setting_get_elem(st,
						(unsigned int)i);

				rc = setting_text(e, file, val, sizeof(val));
				if (rc == 0)
					rc = parse_into(c, k, val, why,
						sizeof(why));
				else
					snprintf(why, sizeof(why), "element "
						"%d: expected a string", i + 1);
				if (rc != 0) {
					seterr(err, n, "%s:%u: %s.%s: %s",
						file, line, sec->name,
						k->name, why);
					return -EINVAL;
				}
			}
			mark(c, k, DPQ_CONF_FILE, line);
			return 0;
		}
		/* A single string stands for a list of one. */
		strv_clear(field(c, k));
	}
	rc = setting_text(st, file, val, sizeof(val));
	if (rc == -ERANGE) {
		seterr(err, n, "%s:%u: %s.%s: integer out of range (%s)", file,
			line, sec->name, k->name,
			type_expect(k, why, sizeof(why)));
		return -EINVAL;
	}
	if (rc == -E2BIG) {
		seterr(err, n, "%s:%u: %s.%s: value longer than %zu bytes",
			file, line, sec->name, k->name, sizeof(val) - 1);
		return -EINVAL;
	}
	if (rc != 0) {
		seterr(err, n, "%s:%u: %s.%s: expected a single value%s, not "
			"a group or list", file, line, sec->name, k->name,
			k->type == DPQ_CONF_STRV ? " or a [ list ]" : "");
		return -EINVAL;
	}
	rc = parse_into(c, k, val, why, sizeof(why));
	if (rc != 0) {
		seterr(err, n, "%s:%u: %s.%s: %s", file, line, sec->name,
			k->name, why);
		return rc;
	}
	mark(c, k, DPQ_CONF_FILE, line);
	return 0;
}

static int
load_section(struct dpq_conf *c, const char *path,
		const struct dpq_conf_section *sec, const config_setting_t *g,
		char *err, size_t n)
{
	int i, len = config_setting_length(g), rc;

	for (i = 0; i < len; i++) {
		const config_setting_t *st = config_setting_get_elem(g,
				(unsigned int)i);
		const char *name = config_setting_name(st);
		const struct dpq_conf_key *k = find_key(sec, name);
		char hint[96];

		if (k == NULL) {
			suggest_key(sec, name, hint, sizeof(hint));
			seterr(err, n, "%s:%u: %s.%s: unknown key in section "
				"%s%s", setting_file(st, path),
				config_setting_source_line(st), sec->name,
				name, sec->name, hint);
			return -EINVAL;
		}
		rc = load_key(c, path, sec, k, st, err, n);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A top-level name that is not a section: say where it belongs. */
static void
where_is(const char *name, char *buf, size_t n)
{
	unsigned int s;

	buf[0] = '\0';
	for (s = 0; s < dpq_conf_nsections; s++) {
		if (find_key(sections[s], name) != NULL) {
			snprintf(buf, n, "; %s is a key of section %s: "
				"%s = { %s = ...; };", name, sections[s]->name,
				sections[s]->name, name);
			return;
		}
		if (near(name, sections[s]->name)) {
			snprintf(buf, n, "; did you mean %s?",
				sections[s]->name);
			return;
		}
	}
}

int
dpq_conf_load_file(struct dpq_conf *c, const char *path, char *err, size_t n)
{
	config_setting_t *root;
	config_t cf;
	FILE *f;
	int i, len, rc = 0;

	/* libconfig says only "file I/O error": open it here first so the
	 * message can say why. */
	f = fopen(path, "r");
	if (f == NULL) {
		rc = -errno;
		seterr(err, n, "%s: cannot read the config file: %s", path,
			strerror(errno));
		return rc;
	}
	fclose(f);
	config_init(&cf);
	if (config_read_file(&cf, path) != CONFIG_TRUE) {
		seterr(err, n, "%s:%d: %s (libconfig syntax: section = { key "
			"= value; ... };, strings in double quotes)",
			config_error_file(&cf) ? config_error_file(&cf) : path,
			config_error_line(&cf), config_error_text(&cf));
		config_destroy(&cf);
		return -EINVAL;
	}
	root = config_root_setting(&cf);
	len = config_setting_length(root);
	for (i = 0; i < len && rc == 0; i++) {
		const config_setting_t *g = config_setting_get_elem(root,
				(unsigned int)i);
		const char *name = config_setting_name(g);
		const struct dpq_conf_section *sec = find_section(name);
		char hint[160];

		if (sec == NULL) {
			where_is(name, hint, sizeof(hint));
			seterr(err, n, "%s:%u: %s: unknown section%s",
				setting_file(g, path),
				config_setting_source_line(g), name, hint);
			rc = -EINVAL;
		} else if (!config_setting_is_group(g)) {
			seterr(err, n, "%s:%u: %s: a section is a group: "
				"%s = { key = value; ... };",
				setting_file(g, path),
				config_setting_source_line(g), name, name);
			rc = -EINVAL;
		} else {
			rc = load_section(c, path, sec, g, err, n);
		}
	}
	config_destroy(&cf);
	if (rc == 0) {
		free(c->file);
		c->file = strdup(path);
		if (c->file == NULL)
			rc = -ENOMEM;
	}
	return rc;
}

/* "FILE:LINE: " when dotted's value came from the file, else "": an
 * error across keys still names the line to fix. */
static const char *
where(const struct dpq_conf *c, const char *dotted, char *buf, size_t n)
{
	const struct dpq_conf_key *k = dpq_conf_find(dotted, NULL);
	char o[300];
	int i;

	buf[0] = '\0';
	i = k != NULL ? key_index(k) : -1;
	if (i >= 0 && c->src[i].origin == DPQ_CONF_FILE)
		snprintf(buf, n, "%s: ",
			dpq_conf_origin_str(c, k, o, sizeof(o)));
	return buf;
}

int
dpq_conf_check(const struct dpq_conf *c, char *err, size_t n)
{
	char w[320];

	if (c->server.addr.family == 0) {
		seterr(err, n, "no address to serve on: give --addr IP:PORT "
			"or server.addr in the config file (-c FILE)");
		return -EINVAL;
	}
	if (c->server.root == NULL) {
		seterr(err, n, "no directory to serve: give --root DIR or "
			"server.root in the config file (-c FILE)");
		return -EINVAL;
	}
	if ((c->tls.cert == NULL) != (c->tls.key == NULL)) {
		seterr(err, n, "%stls.cert (--cert) and tls.key (--key) go "
			"together: give both, or neither for a self-signed "
			"certificate", where(c, c->tls.cert != NULL ?
				"tls.cert" : "tls.key", w, sizeof(w)));
		return -EINVAL;
	}
	if (c->port.gateway.family != 0 &&
	    c->port.gateway.family != c->server.addr.family) {
		seterr(err, n, "%sport.gateway (--gateway) and server.addr "
			"(--addr) must be of the same IP version",
			where(c, "port.gateway", w, sizeof(w)));
		return -EINVAL;
	}
	return 0;
}

static size_t
field_size(const struct dpq_conf_key *k)
{
	switch (k->type) {
	case DPQ_CONF_BOOL: return sizeof(bool);
	case DPQ_CONF_UINT: return sizeof(uint64_t);
	case DPQ_CONF_SECONDS: return sizeof(double);
	case DPQ_CONF_STR: return sizeof(char *);
	case DPQ_CONF_STRV: return sizeof(struct dpq_conf_strv);
	default: return sizeof(struct dpq_addr);
	}
}

void
dpq_conf_swap(struct dpq_conf *a, struct dpq_conf *b,
		const struct dpq_conf_key *k)
{
	unsigned char tmp[sizeof(struct dpq_conf_strv) +
		sizeof(struct dpq_addr)];
	size_t n = field_size(k);
	int i = key_index(k);
	struct dpq_conf_src t;

	memcpy(tmp, field(a, k), n);
	memcpy(field(a, k), field(b, k), n);
	memcpy(field(b, k), tmp, n);
	if (i >= 0) {
		t = a->src[i];
		a->src[i] = b->src[i];
		b->src[i] = t;
	}
}

/* ---- output -------------------------------------------------------------- */

int
dpq_conf_format(const struct dpq_conf *c, const struct dpq_conf_key *k,
		char *buf, size_t n)
{
	const void *f = field(c, k);
	size_t off = 0;
	unsigned int i;

	buf[0] = '\0';
	switch (k->type) {
	case DPQ_CONF_BOOL:
		snprintf(buf, n, "%s", *(const bool *)f ? "true" : "false");
		break;
	case DPQ_CONF_UINT:
		snprintf(buf, n, "%llu",
			(unsigned long long)*(const uint64_t *)f);
		break;
	case DPQ_CONF_SECONDS:
		snprintf(buf, n, "%g", *(const double *)f);
		break;
	case DPQ_CONF_ADDR:
	case DPQ_CONF_IP:
		if (((const struct dpq_addr *)f)->family != 0)
			dpq_addr_format(f, buf, n);
		if (k->type == DPQ_CONF_IP) {
			/* formatted with ":0" or "[..]:0": strip the port */
			char *colon = strrchr(buf, ':');

			if (colon != NULL)
				*colon = '\0';
			if (buf[0] == '[') {
				memmove(buf, buf + 1, strlen(buf));
				buf[strlen(buf) - 1] = '\0';
			}
		}
		break;
	case DPQ_CONF_STR:
		if (*(char *const *)f != NULL)
			snprintf(buf, n, "%s", *(char *const *)f);
		break;
	case DPQ_CONF_STRV: {
		const struct dpq_conf_strv *v = f;

		for (i = 0; i < v->n && off < n; i++)
			off += (size_t)snprintf(buf + off, n - off, "%s%s",
				i ? "," : "", v->v[i]);
		break;
	}
	}
	return 0;
}

const char *
dpq_conf_origin_str(const struct dpq_conf *c, const struct dpq_conf_key *k,
		char *buf, size_t n)
{
	int i = key_index(k);

	if (i < 0 || c->src[i].origin == DPQ_CONF_DEFAULT)
		return "default";
	if (c->src[i].origin == DPQ_CONF_CLI)
		return "command line";
	snprintf(buf, n, "%s:%u", c->file ? c->file : "?", c->src[i].line);
	return buf;
}

void
dpq_conf_foreach(void (*fn)(void *arg, const struct dpq_conf_section *s,
		const struct dpq_conf_key *k), void *arg)
{
	unsigned int s, i;

	for (s = 0; s < dpq_conf_nsections; s++)
		for (i = 0; i < sections[s]->nkeys; i++)
			fn(arg, sections[s], &sections[s]->keys[i]);
}

void
dpq_conf_print_options(FILE *f)
{
	unsigned int s, i;

	for (s = 0; s < dpq_conf_nsections; s++) {
		const struct dpq_conf_section *sec = sections[s];
		bool any = false;

		for (i = 0; i < sec->nkeys; i++)
			any |= sec->keys[i].opt != NULL;
		if (!any)
			continue;
		fprintf(f, "\n%s (config file section \"%s\"):\n", sec->help,
			sec->name);
		for (i = 0; i < sec->nkeys; i++) {
			const struct dpq_conf_key *k = &sec->keys[i];
			char lhs[64];

			if (k->opt == NULL)
				continue;
			snprintf(lhs, sizeof(lhs), "--%s%s%s", k->opt,
				k->flags & DPQ_CONF_F_FLAG ? "" : " ",
				k->flags & DPQ_CONF_F_FLAG ? "" : k->arg);
			fprintf(f, "  %-22s %s", lhs, k->help);
			if (k->def != NULL && !(k->flags & DPQ_CONF_F_FLAG))
				fprintf(f, " (%s)", k->def);
			fprintf(f, "\n");
		}
	}
}
