// SPDX-License-Identifier: GPL-2.0
/*
 * What a socket knows of its own rounds as a whole: the adaptive deadline
 * its history gives under the current tunables. Read by the round path,
 * the send path (a send's default timeout), OPTIREDUCE_ESTIMATE and the
 * netlink socket dump.
 *
 * Locking: the estimator is osk->lock's (sock.h).
 */

#include <linux/minmax.h>
#include <uapi/linux/optireduce.h>

#include "estimate.h"
#include "params.h"
#include "sock.h"

/* The adaptive deadline of this socket under the current tunables. */
u32 optr_sock_deadline_us(struct optr_sock *osk, u32 *typical_us)
{
	struct optr_est_rule rule = {
		.pctl = optr_tunable_get(&optr_deadline_pctl),
		.margin_pct = optr_tunable_get(&optr_deadline_margin_pct),
		.min_us = optr_tunable_get(&optr_deadline_min_us),
		.max_us = optr_tunable_get(&optr_deadline_max_us),
	};

	lockdep_assert_held(&osk->lock);
	/* The two bounds are written separately; a reader may see a new min
	 * with an old max for a moment.
	 */
	rule.max_us = max(rule.max_us, rule.min_us);
	return optr_est_deadline(&osk->est, &rule, typical_us);
}

/* The estimate as OPTIREDUCE_ESTIMATE and the netlink dump report it. */
void optr_sock_estimate(struct optr_sock *osk, struct optireduce_estimate *est)
{
	spin_lock_bh(&osk->lock);
	est->deadline_us = optr_sock_deadline_us(osk, &est->typical_us);
	est->samples = osk->est.n;
	spin_unlock_bh(&osk->lock);
}
