/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * byterange.c: sorted set of disjoint byte ranges (see byterange.h).
 *
 * Inserting or removing costs a bisection plus one memmove of the tail:
 * the sets stay small (holes in flight), so an array beats a tree here
 * and allocates only when the count of holes reaches a new high.
 */
#include "dataplane/engine/byterange.h"
#include "dataplane/engine/mem.h"

#include <errno.h>
#include <string.h>

#define BYTERANGE_INIT_CAP	8

void
dpq_byterange_init(struct dpq_byterange_set *s, const struct dpq_mem *mem,
		uint32_t max)
{
	s->r = NULL;
	s->mem = mem;
	s->n = 0;
	s->cap = 0;
	s->max = max;
}

void
dpq_byterange_free(struct dpq_byterange_set *s)
{
	if (s->r != NULL)
		dpq_mem_free(s->mem, s->r);
	s->r = NULL;
	s->n = 0;
	s->cap = 0;
}

/* Make room for n + extra ranges. */
static int
reserve(struct dpq_byterange_set *s, uint32_t extra)
{
	struct dpq_byterange *nr;
	uint64_t want = (uint64_t)s->n + extra;
	uint32_t ncap;

	if (want <= s->cap)
		return 0;
	if (want > s->max)
		return -ENOBUFS;
	ncap = s->cap ? s->cap : BYTERANGE_INIT_CAP;
	while (ncap < want)
		ncap *= 2;
	if (ncap > s->max)
		ncap = s->max;
	nr = dpq_mem_alloc(s->mem, (size_t)ncap * sizeof(*nr));
	if (nr == NULL)
		return -ENOMEM;
	if (s->n)
		memcpy(nr, s->r, (size_t)s->n * sizeof(*nr));
	if (s->r != NULL)
		dpq_mem_free(s->mem, s->r);
	s->r = nr;
	s->cap = ncap;
	return 0;
}

uint32_t
dpq_byterange_lower(const struct dpq_byterange_set *s, uint64_t off)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
dpq_byterange_add(struct dpq_byterange_set *s, uint64_t start, uint64_t end)
{
	uint32_t i, j;
	int rc;

	if (start >= end)
		return 0;
	/* First range that ends at or after start: it touches or follows. */
	i = start == 0 ? 0 : dpq_byterange_lower(s, start - 1);
	/* j: one past the last range starting at or before end. */
	j = i;
	while (j < s->n && s->r[j].start <= end)
		j++;
	if (i == j) {
		/* Touches nothing: insert at i. */
		rc = reserve(s, 1);
		if (rc != 0)
			return rc;
		memmove(&s->r[i + 1], &s->r[i],
			(size_t)(s->n - i) * sizeof(s->r[0]));
		s->r[i].start = start;
		s->r[i].end = end;
		s->n++;
		return 0;
	}
	/* Merge ranges i..j-1 with [start, end) into slot i. */
	if (s->r[i].start < start)
		start = s->r[i].start;
	if (s->r[j - 1].end > end)
		end = s->r[j - 1].end;
	s->r[i].start = start;
	s->r[i].end = end;
	if (j - i > 1) {
		memmove(&s->r[i + 1], &s->r[j],
			(size_t)(s->n - j) * sizeof(s->r[0]));
		s->n -= j - i - 1;
	}
	return 0;
}

int
dpq_byterange_remove(struct dpq_byterange_set *s, uint64_t start,
		uint64_t end)
{
	uint32_t i, j;
	int rc;

	if (start >= end)
		return 0;
	i = dpq_byterange_lower(s, start);
	if (i == s->n || s->r[i].start >= end)
		return 0;
	if (s->r[i].start < start && s->r[i].end > end) {
		/* Punch a hole inside one range: split it. */
		rc = reserve(s, 1);
		if (rc != 0)
			return rc;
		memmove(&s->r[i + 1], &s->r[i],
			(size_t)(s->n - i) * sizeof(s->r[0]));
		s->n++;
		s->r[i].end = start;
		s->r[i + 1].start = end;
		return 0;
	}
	if (s->r[i].start < start) {
		/* Trim the tail of the first range, keep it. */
		s->r[i].end = start;
		i++;
	}
	j = i;
	while (j < s->n && s->r[j].end <= end)
		j++;
	/* Ranges i..j-1 vanish; range j may lose its head. */
	if (j < s->n && s->r[j].start < end)
		s->r[j].start = end;
	if (j > i) {
		memmove(&s->r[i], &s->r[j],
			(size_t)(s->n - j) * sizeof(s->r[0]));
		s->n -= j - i;
	}
	return 0;
}

bool
dpq_byterange_contains(const struct dpq_byterange_set *s, uint64_t start,
		uint64_t end)
{
	uint32_t i;

	if (start >= end)
		return true;
	i = dpq_byterange_lower(s, start);
	return i < s->n && s->r[i].start <= start && s->r[i].end >= end;
}

bool
dpq_byterange_next_gap(const struct dpq_byterange_set *s, uint64_t *cur,
		uint64_t end, uint64_t *gs, uint64_t *ge)
{
	uint32_t i;

	while (*cur < end) {
		i = dpq_byterange_lower(s, *cur);
		if (i < s->n && s->r[i].start <= *cur) {
			/* Inside a range: skip past it. */
			*cur = s->r[i].end;
			continue;
		}
		*gs = *cur;
		*ge = (i < s->n && s->r[i].start < end) ? s->r[i].start : end;
		*cur = *ge;
		return true;
	}
	return false;
}
