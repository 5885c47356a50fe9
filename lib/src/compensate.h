/* SPDX-License-Identifier: MIT */
#ifndef OR_COMPENSATE_H
#define OR_COMPENSATE_H

/*
 * Loss compensation (better than the authors' zero/local fill):
 *
 * Phase 1 (owner of a shard): an entry for which m of the n contributions
 * did not arrive holds the sum of n - m of them; it is scaled by
 * n / (n - m). With losses independent of the values, the expectation over
 * which contributions were lost is the true sum: the mean stays unbiased.
 * The owner's own contribution never travels, so m <= n - 1.
 *
 * Phase 2 (every rank, for other owners' shards): an entry that did not
 * arrive gets the best estimate this rank has, its own contribution times
 * n. That is an unbiased estimate of the sum when the ranks' data are
 * identically distributed (data-parallel minibatches are), where the
 * authors' local value is biased low by a factor n. It makes this rank's
 * replica differ slightly from the others: the call is flagged
 * OPTIREDUCE_RES_ESTIMATED.
 *
 * Both run on whatever domain the engine reduces in: the Hadamard domain
 * when the transform is on, so a lost range becomes small noise spread
 * over its block instead of a hole.
 *
 * Counts, in one unit in both phases: entries of the result (gradient
 * elements). lost = entries for which something did not arrive: in phase 1
 * an entry missing any number of its contributions counts once, in phase 2
 * an entry of another owner's shard that did not arrive. compensated = the
 * entries rescaled or estimated: the same entries, also when rescaling is
 * off (apply = 0).
 */

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

struct or_comp_stats {
	uint64_t lost;
	uint64_t compensated;
};

/* One received contribution: its data and what of it is missing. */
struct or_contrib {
	const float *data;
	const struct or_range *missing;	/* byte ranges, ascending */
	uint32_t nr_missing;
};

/* Sweep scratch: room for two events per missing range. */
struct or_comp_event {
	uint64_t pos;
	int64_t delta;
};

/* Entry range [*a, *b) covering byte range r (outward), clamped to len. */
void or_range_entries(const struct or_range *r, size_t len, size_t *a,
		      size_t *b);

/* Phase 1: scale acc by n / (n - missing contributions); apply = 0 only
 * counts (the test of the tests: without rescaling the mean is biased). */
void or_comp_rescale(float *acc, size_t len, const struct or_contrib *c,
		     unsigned int nc, unsigned int n, int apply,
		     struct or_comp_event *scratch, struct or_comp_stats *st);

/* Phase 2: entries of x inside the missing ranges become this rank's own
 * contribution (own, the same shard) times factor (n, or 1 with
 * compensation off). own may be x. */
void or_comp_fill(float *x, const float *own, size_t len,
		  const struct or_range *missing, unsigned int nr_missing,
		  float factor, struct or_comp_stats *st);

#endif /* OR_COMPENSATE_H */
