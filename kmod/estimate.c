// SPDX-License-Identifier: GPL-2.0
/* Adaptive round deadlines; the rule is in estimate.h. */

#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "estimate.h"

void optr_est_add(struct optr_estimator *e, u32 us)
{
	e->us[e->next] = us;
	e->next = (e->next + 1) % OPTR_EST_SAMPLES;
	if (e->n < OPTR_EST_SAMPLES)
		e->n++;
}

static int optr_est_cmp(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile; 0 without samples. */
u32 optr_est_percentile(const struct optr_estimator *e, u32 pctl)
{
	u32 sorted[OPTR_EST_SAMPLES];
	u32 rank;

	if (!e->n)
		return 0;
	memcpy(sorted, e->us, e->n * sizeof(*sorted));
	sort(sorted, e->n, sizeof(*sorted), optr_est_cmp, NULL);
	/* rank = ceil(pctl / 100 * n), 1-based */
	rank = DIV_ROUND_UP(min(pctl, 100U) * e->n, 100);
	return sorted[clamp(rank, 1U, e->n) - 1];
}

u32 optr_est_deadline(const struct optr_estimator *e,
		      const struct optr_est_rule *rule, u32 *typical)
{
	u32 p = optr_est_percentile(e, rule->pctl);
	u64 d;

	if (typical)
		*typical = p ? p : rule->max_us;
	if (!p)
		return rule->max_us;
	d = p + div_u64((u64)p * rule->margin_pct, 100);
	return clamp_t(u64, d, rule->min_us, rule->max_us);
}
