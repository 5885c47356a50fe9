// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "estimator.h"
#include "util.h"

static unsigned int size_class(uint64_t bytes)
{
	unsigned int c = bytes ? 63 - __builtin_clzll(bytes) : 0;

	return c < OR_EST_CLASSES ? c : OR_EST_CLASSES - 1;
}

void or_est_init(struct or_estimator *e)
{
	memset(e, 0, sizeof(*e));
	e->margin = 1.0;
}

void or_est_late(struct or_estimator *e, uint64_t bytes, uint64_t late)
{
	double f = bytes ? (double)late / bytes : 0;

	e->late_bytes += late;
	if (f * 1e6 <= OR_EST_LATE_PPM)
		e->margin *= OR_EST_MARGIN_DOWN;
	else	/* Data arriving at an even pace until a deadline that cut a
		 * share f of it short needed the deadline over (1 - f). */
		e->margin *= f < 1 ? OR_MAX(OR_EST_MARGIN_UP, 1 / (1 - f)) :
				     OR_EST_MARGIN_MAX;
	if (e->margin > OR_EST_MARGIN_MAX)
		e->margin = OR_EST_MARGIN_MAX;
	if (e->margin < 1.0)
		e->margin = 1.0;
}

void or_est_sample(struct or_estimator *e, uint64_t bytes, uint64_t ns,
		   int reliable)
{
	struct or_est_class *c = &e->cls[size_class(bytes)];

	c->avg_ns = c->avg_ns ? c->avg_ns + ((double)ns - c->avg_ns) / 8 : ns;
	if (!reliable)
		return;
	c->ns[c->head] = ns;
	c->bytes[c->head] = bytes;
	c->head = (c->head + 1) % OR_EST_WINDOW;
	if (c->n < OR_EST_WINDOW)
		c->n++;
}

/* The class nearest to want with samples (window or average). */
static struct or_est_class *nearest(struct or_estimator *e, unsigned int want,
				    int need_window)
{
	for (unsigned int d = 0; d < OR_EST_CLASSES; d++) {
		for (int s = -1; s <= 1; s += 2) {
			int k = (int)want + s * (int)d;
			struct or_est_class *c;

			if (k < 0 || k >= OR_EST_CLASSES)
				continue;
			c = &e->cls[k];
			if (need_window ? c->n > 0 : c->avg_ns > 0)
				return c;
		}
	}
	return NULL;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* Bandwidth-bound scaling: t for b bytes counts as t * bytes / b. */
static uint64_t scaled(uint64_t t, uint64_t b, uint64_t bytes)
{
	double s = bytes > b && b ? (double)t * bytes / b : (double)t;

	return s >= OR_EST_CEIL_NS ? OR_EST_CEIL_NS : (uint64_t)s;
}

uint64_t or_est_own(struct or_estimator *e, uint64_t bytes)
{
	struct or_est_class *c = nearest(e, size_class(bytes), 1);
	uint64_t v[OR_EST_WINDOW];
	unsigned int idx;

	if (!c)
		return 0;
	for (unsigned int i = 0; i < c->n; i++)
		v[i] = scaled(c->ns[i], c->bytes[i], bytes);
	qsort(v, c->n, sizeof(v[0]), cmp_u64);
	/* Nearest-rank percentile. */
	idx = (c->n * OR_EST_PERCENTILE + 99) / 100;
	return v[idx ? idx - 1 : 0];
}

void or_est_agree(struct or_estimator *e, uint64_t bytes, uint64_t *tb,
		  unsigned int n)
{
	struct or_est_class *c = &e->cls[size_class(bytes)];
	unsigned int k = 0;

	qsort(tb, n, sizeof(tb[0]), cmp_u64);
	while (k < n && !tb[k])
		k++;		/* ranks without an estimate */
	if (k == n)
		return;
	c->agreed_ns = tb[k + (n - k) / 2];
	c->agreed_bytes = bytes;
}

uint64_t or_est_bound(struct or_estimator *e, uint64_t bytes)
{
	struct or_est_class *c = &e->cls[size_class(bytes)];
	uint64_t tb, bound;

	tb = c->agreed_ns ? scaled(c->agreed_ns, c->agreed_bytes, bytes) :
			    or_est_own(e, bytes);
	if (!tb)
		return e->last_bound_ns = OR_EST_DEFAULT_NS;
	bound = tb * e->margin >= OR_EST_CEIL_NS ? OR_EST_CEIL_NS :
		(uint64_t)(tb * e->margin);
	if (bound < OR_EST_FLOOR_NS)
		bound = OR_EST_FLOOR_NS;
	return e->last_bound_ns = bound;
}

uint64_t or_est_average(struct or_estimator *e, uint64_t bytes)
{
	struct or_est_class *c = nearest(e, size_class(bytes), 0);

	return e->last_avg_ns = c ? (uint64_t)c->avg_ns : 0;
}
