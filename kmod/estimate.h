/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The adaptive deadline. A socket remembers how long its last
 * OPTR_EST_SAMPLES rounds took (open to last byte; an expired round counts
 * as its deadline). A new adaptive round gets
 *
 *	deadline = p + p * margin / 100,  clamped to [min, max]
 *
 * where p is the pctl-th percentile (nearest rank) of those samples, and
 * before any sample the deadline is max. p is also "typical": the early
 * timeout waits early_idle_pct percent of it (of min, if p is smaller;
 * round.c applies that floor). All times in microseconds;
 * the tunables come from the caller so the rule is a pure function.
 */
#ifndef _OPTR_ESTIMATE_H
#define _OPTR_ESTIMATE_H

#include <linux/types.h>

#define OPTR_EST_SAMPLES	64

struct optr_estimator {
	u32 us[OPTR_EST_SAMPLES];
	u32 n;			/* valid samples, <= OPTR_EST_SAMPLES */
	u32 next;		/* slot the next sample overwrites */
};

struct optr_est_rule {
	u32 pctl;		/* 50..100 */
	u32 margin_pct;
	u32 min_us;
	u32 max_us;
};

void optr_est_add(struct optr_estimator *e, u32 us);
u32 optr_est_percentile(const struct optr_estimator *e, u32 pctl);
u32 optr_est_deadline(const struct optr_estimator *e,
		      const struct optr_est_rule *rule, u32 *typical);

#endif /* _OPTR_ESTIMATE_H */
