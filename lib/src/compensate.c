// SPDX-License-Identifier: MIT
#include <stdlib.h>

#include "compensate.h"

void or_range_entries(const struct or_range *r, size_t len, size_t *a,
		      size_t *b)
{
	size_t s = r->start / sizeof(float);
	size_t e = (r->end + sizeof(float) - 1) / sizeof(float);

	/* A partly missing entry is a missing entry. */
	*a = s < len ? s : len;
	*b = e < len ? e : len;
	if (*b < *a)
		*b = *a;
}

static int event_cmp(const void *pa, const void *pb)
{
	const struct or_comp_event *a = pa, *b = pb;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void add_events(struct or_comp_event *ev, size_t *nev, size_t a,
		       size_t b)
{
	if (b <= a)
		return;
	ev[(*nev)++] = (struct or_comp_event){ a, 1 };
	ev[(*nev)++] = (struct or_comp_event){ b, -1 };
}

void or_comp_rescale(float *acc, size_t len, const struct or_contrib *c,
		     unsigned int nc, unsigned int n, int apply,
		     struct or_comp_event *scratch, struct or_comp_stats *st)
{
	size_t nev = 0, prev = 0;
	int64_t cur = 0;

	for (unsigned int k = 0; k < nc; k++) {
		size_t open_a = 0, open_b = 0;

		/* Merge ranges that touch once rounded to entries, so one
		 * contribution never counts twice for the same entry. */
		for (uint32_t i = 0; i < c[k].nr_missing; i++) {
			size_t a, b;

			or_range_entries(&c[k].missing[i], len, &a, &b);
			if (a <= open_b && open_b > open_a) {
				if (b > open_b)
					open_b = b;
				continue;
			}
			add_events(scratch, &nev, open_a, open_b);
			open_a = a;
			open_b = b;
		}
		add_events(scratch, &nev, open_a, open_b);
	}
	if (!nev)
		return;
	qsort(scratch, nev, sizeof(*scratch), event_cmp);
	for (size_t i = 0; i < nev; i++) {
		size_t pos = scratch[i].pos;

		if (cur > 0 && pos > prev) {
			float f = (float)n / (float)(n - cur);

			/* Entries, not contributions: an entry m of whose
			 * contributions are missing is one entry lost. */
			st->lost += pos - prev;
			st->compensated += pos - prev;
			if (apply)
				for (size_t j = prev; j < pos; j++)
					acc[j] *= f;
		}
		cur += scratch[i].delta;
		prev = pos;
	}
}

void or_comp_fill(float *x, const float *own, size_t len,
		  const struct or_range *missing, unsigned int nr_missing,
		  float factor, struct or_comp_stats *st)
{
	size_t done = 0;	/* ranges may touch once rounded */

	for (unsigned int i = 0; i < nr_missing; i++) {
		size_t a, b;

		or_range_entries(&missing[i], len, &a, &b);
		if (a < done)
			a = done;
		for (size_t j = a; j < b; j++)
			x[j] = own[j] * factor;
		if (b > a) {
			st->lost += b - a;
			st->compensated += b - a;
			done = b;
		}
	}
}
