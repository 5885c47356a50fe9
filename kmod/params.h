/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_PARAMS_H
#define _OPTR_PARAMS_H

#include <linux/compiler.h>
#include <linux/types.h>

/*
 * A tunable: a module parameter whose writes are range-checked. A write
 * outside [min, max] fails with -EINVAL and leaves the value unchanged.
 * Readers use optr_tunable_get(); no lock is needed, a read sees either the
 * old or the new value.
 */
struct optr_tunable {
	unsigned int val;
	unsigned int min;
	unsigned int max;
};

/* No deadline or send timeout may exceed a minute. */
#define OPTR_DEADLINE_LIMIT_US	60000000U

/* Load-time identity of the family, published read-only in sysfs. */
extern int optr_family;
extern int optr_sol;
extern unsigned short optr_port;

/* Runtime tunables (0644 in sysfs, root only). */
extern struct optr_tunable optr_deadline_min_us;
extern struct optr_tunable optr_deadline_max_us;
extern struct optr_tunable optr_deadline_pctl;
extern struct optr_tunable optr_deadline_margin_pct;
extern struct optr_tunable optr_early_idle_pct;
extern struct optr_tunable optr_pace_mbps;
extern struct optr_tunable optr_tx_segs;
extern struct optr_tunable optr_max_rounds;
extern struct optr_tunable optr_backlog_kb;
extern struct optr_tunable optr_loss_alarm_ppm;
extern struct optr_tunable optr_rx_steer_kb;
extern struct optr_tunable optr_mem_max_kb;
extern struct optr_tunable optr_rate_control;
extern struct optr_tunable optr_rate_min_mbps;
extern struct optr_tunable optr_rate_max_mbps;
extern struct optr_tunable optr_rate_step_mbps;
extern struct optr_tunable optr_rate_md_pct;
extern struct optr_tunable optr_rate_knee_pct;
extern struct optr_tunable optr_rate_foreign;
extern struct optr_tunable optr_rate_drained;

struct optr_tunable_entry {
	const char *name;
	struct optr_tunable *t;
};

/* NULL-terminated. */
extern const struct optr_tunable_entry optr_tunables[];

int optr_tunable_write(struct optr_tunable *t, unsigned int v);

static inline unsigned int optr_tunable_get(const struct optr_tunable *t)
{
	return READ_ONCE(t->val);
}

#endif /* _OPTR_PARAMS_H */
