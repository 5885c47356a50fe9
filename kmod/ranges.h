/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-exact bookkeeping of what arrived of a message: a sorted array of
 * disjoint, non-adjacent [start, end) spans. Fragments mostly arrive in
 * order, which appends to or extends the last span in O(1); a reordered or
 * duplicated fragment costs a binary search and at most one memmove.
 */
#ifndef _OPTR_RANGES_H
#define _OPTR_RANGES_H

#include <linux/gfp.h>
#include <linux/types.h>

/*
 * Most spans a message keeps. Senders send a message's fragments in order,
 * so its spans are its holes plus one; a peer that sends tiny fragments
 * backwards would otherwise grow the array (GFP_ATOMIC, in softirq) and
 * its memmove without end. Past this a fragment that would open a new
 * span is refused; one that extends or joins spans is still taken.
 */
#define OPTR_RANGES_MAX		4096

struct optireduce_range;

struct optr_span {
	u32 start;
	u32 end;
};

struct optr_ranges {
	struct optr_span *v;
	u32 n;
	u32 cap;
	u32 covered;		/* bytes in all spans */
};

int optr_ranges_init(struct optr_ranges *r, u32 cap, gfp_t gfp);
void optr_ranges_free(struct optr_ranges *r);
long optr_ranges_add(struct optr_ranges *r, u32 start, u32 end, gfp_t gfp);
u32 optr_ranges_missing(const struct optr_ranges *r, u32 total,
			struct optireduce_range *out, u32 max);

/* The end of the furthest span: bytes from 0 up to the last that came. */
static inline u32 optr_ranges_reach(const struct optr_ranges *r)
{
	return r->n ? r->v[r->n - 1].end : 0;
}

#endif /* _OPTR_RANGES_H */
