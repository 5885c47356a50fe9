// SPDX-License-Identifier: GPL-2.0
/* Received byte ranges of a message; see ranges.h. */

#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <uapi/linux/optireduce.h>

#include "ranges.h"

int optr_ranges_init(struct optr_ranges *r, u32 cap, gfp_t gfp)
{
	r->v = kmalloc_array(cap, sizeof(*r->v), gfp);
	if (!r->v)
		return -ENOMEM;
	r->n = 0;
	r->cap = cap;
	r->covered = 0;
	return 0;
}

void optr_ranges_free(struct optr_ranges *r)
{
	kfree(r->v);
	r->v = NULL;
	r->n = 0;
	r->cap = 0;
}

/* Index of the first span that ends at or after @start (may touch it). */
static u32 optr_ranges_first(const struct optr_ranges *r, u32 start)
{
	u32 lo = 0, hi = r->n;

	/* The common case: in-order arrival lands at the end. */
	if (!r->n || r->v[r->n - 1].end < start)
		return r->n;
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (r->v[mid].end < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Record [start, end) as received. Returns the number of bytes that were
 * not already covered (0 for a pure duplicate), -ENOSPC when a new span
 * was needed and the message has OPTR_RANGES_MAX, or -ENOMEM when the
 * array could not grow; on an error nothing changed.
 */
long optr_ranges_add(struct optr_ranges *r, u32 start, u32 end, gfp_t gfp)
{
	u32 i, j, lo = start, hi = end, overlap = 0;

	if (start >= end)
		return 0;

	i = optr_ranges_first(r, start);
	for (j = i; j < r->n && r->v[j].start <= end; j++) {
		u32 s = max(r->v[j].start, start), e = min(r->v[j].end, end);

		if (e > s)
			overlap += e - s;
		lo = min(lo, r->v[j].start);
		hi = max(hi, r->v[j].end);
	}

	if (j == i) {
		/* Touches nothing: a new span at i. */
		if (r->n >= OPTR_RANGES_MAX)
			return -ENOSPC;
		if (r->n == r->cap) {
			u32 cap = min_t(u32, r->cap ? r->cap * 2 : 4,
					OPTR_RANGES_MAX);
			struct optr_span *v;

			v = krealloc_array(r->v, cap, sizeof(*v),
					   gfp | __GFP_NOWARN);
			if (!v)
				return -ENOMEM;
			r->v = v;
			r->cap = cap;
		}
		memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
		r->n++;
	} else if (j - i > 1) {
		/* Spans i..j-1 merge into i. */
		memmove(&r->v[i + 1], &r->v[j], (r->n - j) * sizeof(*r->v));
		r->n -= j - i - 1;
	}
	r->v[i].start = lo;
	r->v[i].end = hi;
	r->covered += (end - start) - overlap;
	return (end - start) - overlap;
}

/*
 * The gaps of [0, total) not covered, ascending. Writes at most @max of
 * them to @out (which may be NULL when @max is 0) and returns how many
 * there are in all.
 */
u32 optr_ranges_missing(const struct optr_ranges *r, u32 total,
			struct optireduce_range *out, u32 max)
{
	u32 i, pos = 0, n = 0;

	for (i = 0; i <= r->n; i++) {
		u32 next = i < r->n ? min(r->v[i].start, total) : total;

		if (next > pos) {
			if (n < max) {
				out[n].offset = pos;
				out[n].len = next - pos;
			}
			n++;
		}
		if (i < r->n)
			pos = max(pos, r->v[i].end);
		if (pos >= total)
			break;
	}
	return n;
}
