/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The round timer (timers.c): a round's deadline and its early timeout.
 * Every function but optr_round_timer_init() and optr_round_idle_ns()
 * needs the round's socket lock held.
 */
#ifndef _OPTR_TIMERS_H
#define _OPTR_TIMERS_H

#include <linux/ktime.h>
#include <linux/types.h>

struct optr_round;

void optr_round_timer_init(struct optr_round *r);
void optr_round_timer_arm(struct optr_round *r, ktime_t when);
void optr_round_maybe_arm_early(struct optr_round *r);
u64 optr_round_idle_ns(const struct optr_round *r);
void optr_round_early_rearm(struct optr_round *r);

#endif /* _OPTR_TIMERS_H */
