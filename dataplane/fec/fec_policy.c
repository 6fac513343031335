/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fec_policy.c: when a sender protects its packets, and with which group
 * size. FEC is judged on tail completion time, not goodput (DESIGN §4):
 * Google's XOR FEC cost more than it saved on clean paths, so adaptive
 * mode sends nothing until loss is measured and sizes groups so that a
 * group usually loses at most the one packet a repair can rebuild.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/fec/fec.h"

/* Parse a group size 2..DPQ_FEC_GROUP_LIMIT at s up to a char in stop. */
static int
parse_k(const char *s, char **endp, uint8_t *k)
{
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, endp, 10);
	if (errno != 0 || v < DPQ_FEC_MIN_GROUP || v > DPQ_FEC_GROUP_LIMIT)
		return -EINVAL;
	*k = (uint8_t)v;
	return 0;
}

int
dpq_fec_policy_parse(const char *s, struct dpq_fec_policy *out)
{
	struct dpq_fec_policy p = {
		.group = DPQ_FEC_DEFAULT_GROUP,
		.group_min = DPQ_FEC_DEFAULT_GROUP_MIN,
	};
	char *e;

	if (s == NULL)
		return -EINVAL;
	if (strcmp(s, "off") == 0) {
		p.mode = DPQ_FEC_OFF;
	} else if (strcmp(s, "fixed") == 0) {
		p.mode = DPQ_FEC_FIXED;
	} else if (strncmp(s, "fixed:", 6) == 0) {
		p.mode = DPQ_FEC_FIXED;
		if (parse_k(s + 6, &e, &p.group) != 0 || *e != '\0')
			return -EINVAL;
	} else if (strcmp(s, "adaptive") == 0) {
		p.mode = DPQ_FEC_ADAPTIVE;
	} else if (strncmp(s, "adaptive:", 9) == 0) {
		p.mode = DPQ_FEC_ADAPTIVE;
		if (parse_k(s + 9, &e, &p.group_min) != 0 || *e != '-' ||
		    parse_k(e + 1, &e, &p.group) != 0 || *e != '\0' ||
		    p.group_min > p.group)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int
dpq_fec_policy_str(const struct dpq_fec_policy *p, char *buf, size_t len)
{
	switch (p->mode) {
	case DPQ_FEC_FIXED:
		return snprintf(buf, len, "fixed:%u", p->group);
	case DPQ_FEC_ADAPTIVE:
		return snprintf(buf, len, "adaptive:%u-%u", p->group_min,
				p->group);
	default:
		return snprintf(buf, len, "off");
	}
}

void
dpq_fec_meter_init(struct dpq_fec_meter *m, uint32_t prior_ppm)
{
	memset(m, 0, sizeof(*m));
	m->rate_ppm = prior_ppm > 1000000 ? 1000000 : prior_ppm;
}

static void
window_end(struct dpq_fec_meter *m)
{
	uint64_t w = (uint64_t)m->lost * 1000000 / m->sent;

	if (w > 1000000)
		w = 1000000;
	/* EWMA, newest window weighs 1/4. */
	m->rate_ppm = (uint32_t)((3 * (uint64_t)m->rate_ppm + w) / 4);
	m->sent = 0;
	m->lost = 0;
}

void
dpq_fec_meter_on_sent(struct dpq_fec_meter *m, uint32_t n)
{
	m->total_sent += n;
	m->sent += n;
	if (m->sent >= DPQ_FEC_METER_WINDOW)
		window_end(m);
}

void
dpq_fec_meter_on_lost(struct dpq_fec_meter *m, uint32_t n)
{
	m->total_lost += n;
	m->lost += n;
}

uint32_t
dpq_fec_meter_rate_ppm(const struct dpq_fec_meter *m)
{
	/* A window's losses count once they are a whole rate's worth, so
	 * loss acts before the window ends; never over the full window. */
	uint64_t cur = (uint64_t)m->lost * 1000000 / DPQ_FEC_METER_WINDOW;

	return cur > m->rate_ppm ? (uint32_t)(cur > 1000000 ? 1000000 : cur) :
		m->rate_ppm;
}

void
dpq_fec_prior_fold(struct dpq_fec_prior *pr, uint64_t sent, uint64_t lost)
{
	if (lost > sent)
		lost = sent;
	pr->sent = pr->sent - pr->sent / 8 + sent;
	pr->lost = pr->lost - pr->lost / 8 + lost;
}

uint32_t
dpq_fec_prior_ppm(const struct dpq_fec_prior *pr)
{
	if (pr->sent < DPQ_FEC_METER_WINDOW)
		return 0;	/* not enough seen to say */
	return (uint32_t)(pr->lost * 1000000 / pr->sent);
}

uint32_t
dpq_fec_policy_group(const struct dpq_fec_policy *p,
		const struct dpq_fec_meter *m, uint32_t peer_max)
{
	uint32_t k, ppm;

	switch (p->mode) {
	case DPQ_FEC_FIXED:
		k = p->group;
		break;
	case DPQ_FEC_ADAPTIVE:
		ppm = dpq_fec_meter_rate_ppm(m);
		if (ppm < DPQ_FEC_METER_OFF_PPM)
			return 0;
		/* K = 1 / (4 p): a quarter of a loss expected per group. */
		k = 250000 / ppm;
		if (k < p->group_min)
			k = p->group_min;
		if (k > p->group)
			k = p->group;
		break;
	default:
		return 0;
	}
	if (k > peer_max)
		k = peer_max;
	return k >= DPQ_FEC_MIN_GROUP ? k : 0;
}
