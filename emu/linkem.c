/* SPDX-License-Identifier: BSD-3-Clause */
/* See linkem.h for the model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu/linkem.h"

#define NS_PER_US	UINT64_C(1000)
#define NS_PER_S	UINT64_C(1000000000)

static const char *const fate_names[DPQ_LINKEM_FATE_COUNT] = {
	[DPQ_LINKEM_DELIVER] = "deliver",
	[DPQ_LINKEM_DROP_QUEUE] = "queue",
	[DPQ_LINKEM_DROP_LOSS] = "loss",
	[DPQ_LINKEM_DROP_BURST] = "burst",
	[DPQ_LINKEM_DROP_BLACKOUT] = "blackout",
};

const char *
dpq_linkem_fate_str(enum dpq_linkem_fate f)
{
	return (unsigned int)f < DPQ_LINKEM_FATE_COUNT ? fate_names[f] : "?";
}

/* ---- randomness: xoshiro256** seeded by splitmix64 -------------------- */

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
dpq_linkem_rand(struct dpq_linkem *le)
{
	uint64_t *s = le->rng;
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1) with 53 bits. */
static double
uniform(struct dpq_linkem *le)
{
	return (double)(dpq_linkem_rand(le) >> 11) * 0x1.0p-53;
}

/* True with probability p; p of 0 or 1 draws nothing, so an impairment
 * that is off does not consume randomness. */
static bool
chance(struct dpq_linkem *le, double p)
{
	if (p <= 0)
		return false;
	if (p >= 1)
		return true;
	return uniform(le) < p;
}

static bool
prob_ok(double p)
{
	return p >= 0 && p <= 1;	/* false for NaN too */
}

int
dpq_linkem_init(struct dpq_linkem *le, const struct dpq_linkem_conf *conf)
{
	uint64_t x = conf->seed;
	unsigned int i;

	if (!prob_ok(conf->loss) || !prob_ok(conf->ge_p) ||
	    !prob_ok(conf->ge_r) || !prob_ok(conf->ge_loss_good) ||
	    !prob_ok(conf->ge_loss_bad) || !prob_ok(conf->reorder) ||
	    !prob_ok(conf->duplicate) || !prob_ok(conf->corrupt) ||
	    conf->n_blackout > DPQ_LINKEM_BLACKOUTS ||
	    (conf->ge_bad_us != 0 && (conf->ge_good_us == 0 ||
					conf->ge_p > 0)))
		return -EINVAL;
	for (i = 0; i < conf->n_blackout; i++) {
		const struct dpq_linkem_blackout *b = &conf->blackout[i];

		if (b->end_ns <= b->start_ns ||
		    (i > 0 && b->start_ns < conf->blackout[i - 1].end_ns))
			return -EINVAL;
	}
	memset(le, 0, sizeof(*le));
	le->conf = *conf;
	for (i = 0; i < 4; i++)
		le->rng[i] = splitmix64(&x);
	le->reorder_ns = (conf->reorder_us != 0 ? conf->reorder_us :
			conf->delay_us > 1000 ? conf->delay_us : 1000) *
		NS_PER_US;
	return 0;
}

static bool
in_blackout(const struct dpq_linkem *le, uint64_t t)
{
	unsigned int i;

	for (i = 0; i < le->conf.n_blackout; i++)
		if (t >= le->conf.blackout[i].start_ns &&
		    t < le->conf.blackout[i].end_ns)
			return true;
	return false;
}

uint64_t
dpq_linkem_backlog(const struct dpq_linkem *le, uint64_t now_ns)
{
	if (le->conf.rate_bps == 0 || le->busy_until_ns <= now_ns)
		return 0;
	/* Bytes still to serialise: the queue is a FIFO at a fixed rate. */
	return (uint64_t)(((double)(le->busy_until_ns - now_ns) *
			(double)le->conf.rate_bps) / (8.0 * NS_PER_S) + 0.5);
}

static unsigned int
drop(struct dpq_linkem *le, struct dpq_linkem_verdict *v,
		enum dpq_linkem_fate why)
{
	v->fate = why;
	v->copies = 0;
	le->stats.dropped[why]++;
	return 0;
}

/* The time-correlated chain at time t: a two-state continuous-time Markov
 * chain (leaves good at rate a = 1/mean_good, bad at b = 1/mean_bad)
 * observed when a datagram reaches the wire. Its state after dt, from
 * the state last seen, is bad with probability
 *   pi + (bad - pi) * exp(-(a + b) dt),   pi = a / (a + b),
 * exact for any gap and one draw per datagram; the first datagram sees
 * the stationary state (the link was running before it). */
static void
ge_time_step(struct dpq_linkem *le, uint64_t t)
{
	double a = 1.0 / (double)le->conf.ge_good_us;
	double b = 1.0 / (double)le->conf.ge_bad_us;
	double pi = a / (a + b), pb = pi;

	if (le->ge_started) {
		double dt_us = t > le->ge_at_ns ?
			(double)(t - le->ge_at_ns) / (double)NS_PER_US : 0;

		pb = pi + ((le->ge_bad ? 1.0 : 0.0) - pi) *
			exp(-(a + b) * dt_us);
	}
	le->ge_started = true;
	le->ge_at_ns = t;
	le->ge_bad = chance(le, pb);
}

unsigned int
dpq_linkem_send(struct dpq_linkem *le, uint64_t now_ns, uint32_t len,
		struct dpq_linkem_verdict *v)
{
	const struct dpq_linkem_conf *cf = &le->conf;
	uint64_t depart = now_ns, at;
	unsigned int i;

	memset(v, 0, sizeof(*v));
	le->stats.offered++;
	le->stats.offered_bytes += len;
	if (in_blackout(le, now_ns))
		return drop(le, v, DPQ_LINKEM_DROP_BLACKOUT);

	/* The bottleneck: FIFO at rate_bps behind a drop-tail queue. */
	if (cf->rate_bps != 0) {
		uint64_t backlog = dpq_linkem_backlog(le, now_ns);
		uint64_t start = le->busy_until_ns > now_ns ?
			le->busy_until_ns : now_ns;

		if (cf->queue_bytes != 0 && backlog + len > cf->queue_bytes)
			return drop(le, v, DPQ_LINKEM_DROP_QUEUE);
		depart = start + (uint64_t)((double)len * 8.0 * NS_PER_S /
				(double)cf->rate_bps + 0.5);
		le->busy_until_ns = depart;
		if (backlog + len > le->stats.max_backlog_bytes)
			le->stats.max_backlog_bytes = backlog + len;
	}

	/* The wire: random loss, then the Gilbert-Elliott chain. */
	if (chance(le, cf->loss))
		return drop(le, v, DPQ_LINKEM_DROP_LOSS);
	if (cf->ge_p > 0 || cf->ge_bad_us != 0) {
		if (cf->ge_bad_us != 0)
			ge_time_step(le, depart);
		else if (le->ge_bad)
			le->ge_bad = !chance(le, cf->ge_r);
		else
			le->ge_bad = chance(le, cf->ge_p);
		if (chance(le, le->ge_bad ? cf->ge_loss_bad :
				cf->ge_loss_good))
			return drop(le, v, DPQ_LINKEM_DROP_BURST);
	}

	v->fate = DPQ_LINKEM_DELIVER;
	v->copies = chance(le, cf->duplicate) ? 2 : 1;
	if (v->copies == 2)
		le->stats.duplicated++;
	for (i = 0; i < v->copies; i++) {
		if (chance(le, cf->corrupt) && len > 0) {
			v->flip[i] = (uint32_t)(dpq_linkem_rand(le) %
					((uint64_t)len * 8)) + 1;
			le->stats.corrupted++;
		}
	}

	/* Propagation; jitter never reorders (see linkem.h). */
	at = depart + cf->delay_us * NS_PER_US;
	if (cf->jitter_us != 0)
		at += dpq_linkem_rand(le) % (cf->jitter_us * NS_PER_US + 1);
	if (chance(le, cf->reorder)) {
		v->reordered = true;
		le->stats.reordered++;
		at += le->reorder_ns;
	} else {
		if (at < le->last_at_ns)
			at = le->last_at_ns;
		le->last_at_ns = at;
	}
	v->at_ns[0] = v->at_ns[1] = at;
	le->stats.delivered += v->copies;
	le->stats.delivered_bytes += (uint64_t)v->copies * len;
	return v->copies;
}

void
dpq_linkem_corrupt(uint8_t *data, uint32_t len, uint32_t flip)
{
	uint32_t bit;

	if (flip == 0)
		return;
	bit = flip - 1;
	if (bit / 8 < len)
		data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

void
dpq_linkem_conf_burst(struct dpq_linkem_conf *conf, double loss,
		double mean_burst)
{
	if (mean_burst < 1)
		mean_burst = 1;
	conf->ge_bad_us = conf->ge_good_us = 0;
	if (loss <= 0) {
		conf->ge_p = 0;
		return;
	}
	if (loss > 0.99)
		loss = 0.99;
	/* Stationary P(bad) = p / (p + r) = loss; mean bad run = 1 / r. */
	conf->ge_r = 1.0 / mean_burst;
	conf->ge_p = loss * conf->ge_r / (1.0 - loss);
	if (conf->ge_p > 1)
		conf->ge_p = 1;
	conf->ge_loss_good = 0;
	conf->ge_loss_bad = 1;
}

void
dpq_linkem_conf_burst_time(struct dpq_linkem_conf *conf, double loss,
		uint64_t mean_bad_us)
{
	conf->ge_p = 0;
	if (loss <= 0 || mean_bad_us == 0) {
		conf->ge_bad_us = conf->ge_good_us = 0;
		return;
	}
	if (loss > 0.99)
		loss = 0.99;
	/* Fraction of time bad = bad / (bad + good) = loss. */
	conf->ge_bad_us = mean_bad_us;
	conf->ge_good_us = (uint64_t)((double)mean_bad_us * (1.0 - loss) /
			loss + 0.5);
	if (conf->ge_good_us == 0)
		conf->ge_good_us = 1;
	conf->ge_loss_good = 0;
	conf->ge_loss_bad = 1;
}

/* ---- "key=value,..." -------------------------------------------------- */

static int
perr(char *err, unsigned int errlen, const char *fmt, const char *what)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

/* A number with a unit suffix from units[] (NULL-terminated name/scale
 * pairs); a bare number takes def_scale. */
static bool
parse_scaled(const char *s, size_t n, const char *const *units,
		const double *scales, double def_scale, double *out)
{
	char buf[64], *end;
	double v;
	unsigned int i;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (end == buf || errno != 0 || !isfinite(v) || v < 0)
		return false;
	if (*end == '\0') {
		*out = v * def_scale;
		return true;
	}
	for (i = 0; units[i] != NULL; i++) {
		if (strcasecmp(end, units[i]) == 0) {
			*out = v * scales[i];
			return true;
		}
	}
	return false;
}

static const char *const time_units[] = { "us", "ms", "s", NULL };
static const double time_scales[] = { 1, 1e3, 1e6 };	/* to us */
static const char *const rate_units[] = { "bit", "kbit", "mbit", "gbit",
	"bps", "kbps", "mbps", "gbps", NULL };
static const double rate_scales[] = { 1, 1e3, 1e6, 1e9, 1, 1e3, 1e6, 1e9 };
static const char *const size_units[] = { "b", "kb", "mb", "k", "m", NULL };
static const double size_scales[] = { 1, 1024, 1048576, 1024, 1048576 };
static const char *const prob_units[] = { "%", NULL };
static const double prob_scales[] = { 0.01 };

static bool
parse_time(const char *s, size_t n, uint64_t *us)
{
	double v;

	if (!parse_scaled(s, n, time_units, time_scales, 1e3, &v) || v > 1e15)
		return false;	/* bare numbers are milliseconds */
	*us = (uint64_t)(v + 0.5);
	return true;
}

static bool
parse_prob(const char *s, size_t n, double *p)
{
	return parse_scaled(s, n, prob_units, prob_scales, 1, p) && *p <= 1;
}

static int
set_key(struct dpq_linkem_conf *c, const char *k, size_t kn, const char *v,
		size_t vn, char *err, unsigned int errlen)
{
	char key[32];
	const char *sep;
	double d, d2;
	uint64_t t, t2;

	if (kn == 0 || kn >= sizeof(key))
		return perr(err, errlen, "bad option near '%s'", k);
	memcpy(key, k, kn);
	key[kn] = '\0';
#define IS(name) (strcmp(key, name) == 0)
	if (IS("delay") || IS("jitter") || IS("reorder_delay")) {
		if (!parse_time(v, vn, &t))
			return perr(err, errlen,
				"%s: want a time such as 25ms, 500us or 2s", key);
		if (IS("delay"))
			c->delay_us = t;
		else if (IS("jitter"))
			c->jitter_us = t;
		else
			c->reorder_us = t;
	} else if (IS("rate")) {
		if (!parse_scaled(v, vn, rate_units, rate_scales, 1, &d) ||
		    d > 1e13)
			return perr(err, errlen,
				"%s: want a rate such as 100mbit or 1gbit", key);
		c->rate_bps = (uint64_t)d;
	} else if (IS("queue")) {
		if (!parse_scaled(v, vn, size_units, size_scales, 1, &d) ||
		    d > 1e12)
			return perr(err, errlen,
				"%s: want a size in bytes such as 64kb", key);
		c->queue_bytes = (uint64_t)d;
	} else if (IS("loss") || IS("reorder") || IS("dup") ||
			IS("corrupt")) {
		if (!parse_prob(v, vn, &d))
			return perr(err, errlen,
				"%s: want a probability such as 1%% or 0.01",
				key);
		if (IS("loss"))
			c->loss = d;
		else if (IS("reorder"))
			c->reorder = d;
		else if (IS("dup"))
			c->duplicate = d;
		else
			c->corrupt = d;
	} else if (IS("burst")) {
		/* RATE/LEN: average loss rate, mean burst length in
		 * datagrams, or in time when LEN has a time unit */
		size_t ln;

		sep = memchr(v, '/', vn);
		ln = sep != NULL ? vn - (size_t)(sep - v) - 1 : 0;
		if (sep == NULL || !parse_prob(v, (size_t)(sep - v), &d))
			return perr(err, errlen,
				"%s: want RATE/LENGTH such as 2%%/4 or 2%%/1ms",
				key);
		if (ln > 0 && (sep[ln] == 's' || sep[ln] == 'S')) {
			if (!parse_time(sep + 1, ln, &t) || t == 0)
				return perr(err, errlen, "%s: want RATE/TIME "
					"such as 2%%/1ms (at least 1us)", key);
			dpq_linkem_conf_burst_time(c, d, t);
		} else {
			if (!parse_scaled(sep + 1, ln, prob_units,
					prob_scales, 1, &d2) || d2 < 1)
				return perr(err, errlen, "%s: want RATE/LENGTH "
					"such as 2%%/4 or 2%%/1ms", key);
			dpq_linkem_conf_burst(c, d, d2);
		}
	} else if (IS("blackout")) {
		/* START+LENGTH */
		sep = memchr(v, '+', vn);
		if (sep == NULL || !parse_time(v, (size_t)(sep - v), &t) ||
		    !parse_time(sep + 1, vn - (size_t)(sep - v) - 1, &t2) ||
		    t2 == 0)
			return perr(err, errlen,
				"%s: want START+LENGTH such as 2s+2s", key);
		if (c->n_blackout >= DPQ_LINKEM_BLACKOUTS)
			return perr(err, errlen, "%s: too many intervals", key);
		c->blackout[c->n_blackout].start_ns = t * NS_PER_US;
		c->blackout[c->n_blackout].end_ns = (t + t2) * NS_PER_US;
		c->n_blackout++;
	} else if (IS("seed")) {
		char buf[32], *end;

		if (vn == 0 || vn >= sizeof(buf))
			return perr(err, errlen, "%s: want a number", key);
		memcpy(buf, v, vn);
		buf[vn] = '\0';
		errno = 0;
		c->seed = strtoull(buf, &end, 0);
		if (*end != '\0' || errno != 0)
			return perr(err, errlen, "%s: want a number", key);
	} else {
		return perr(err, errlen,
			"unknown option '%s' (delay, jitter, rate, queue, loss, "
			"burst, reorder, reorder_delay, dup, corrupt, blackout, "
			"seed)", key);
	}
#undef IS
	return 0;
}

int
dpq_linkem_conf_parse(struct dpq_linkem_conf *conf, const char *spec,
		char *err, unsigned int errlen)
{
	const char *p = spec;
	int rc;

	if (spec == NULL || *spec == '\0')
		return 0;
	while (p != NULL) {
		const char *end = strchr(p, ',');
		const char *eq;
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', n);
		if (eq == NULL) {
			char item[48];

			snprintf(item, sizeof(item), "%.*s", (int)n, p);
			return perr(err, errlen, "'%s': want key=value", item);
		}
		rc = set_key(conf, p, (size_t)(eq - p), eq + 1,
				n - (size_t)(eq - p) - 1, err, errlen);
		if (rc != 0)
			return rc;
		p = end != NULL ? end + 1 : NULL;
	}
	return 0;
}
