// SPDX-License-Identifier: GPL-2.0
/*
 * Round timers. Every timer of the module is here:
 *
 *   round->timer (hrtimer, CLOCK_MONOTONIC, absolute, softirq)
 *     armed by:   optr_round_open() for the round's deadline;
 *                 optr_retime() for a deadline moved by the caller;
 *                 optr_round_maybe_arm_early() once every expected sender
 *                 has been heard from (a fragment of its message, or of a
 *                 later round), for last_rx + idle window
 *                 (optr_round_idle_ns());
 *                 optr_round_early_rearm() when the window shrinks (the
 *                 last missing LAST fragment came);
 *                 its own callback, to re-arm for a later time.
 *     does:       at the deadline, ends the round EXPIRED; when the armed
 *                 round has been idle for the window, ends it EARLY;
 *                 otherwise re-arms for the nearer of the two.
 *     stopped by: optr_rounds_reap() (hrtimer_cancel, process context) before
 *                 the round is freed. A callback that finds its round ended
 *                 does nothing and does not re-arm.
 *
 * All arming happens with the socket's lock held, so the callback (which
 * takes the lock) and the receive path agree on what is armed.
 */

#include <linux/hrtimer.h>

#include "compat.h"
#include "round.h"
#include "sock.h"
#include "timers.h"

static enum hrtimer_restart optr_round_timer_fn(struct hrtimer *t)
{
	struct optr_round *r = container_of(t, struct optr_round, timer);
	struct optr_sock *osk = r->osk;
	ktime_t now = ktime_get();
	bool woke = false;

	spin_lock_bh(&osk->lock);
	if (r->ended) {
		/* Ended by its last byte, a cancel or close: nothing to do. */
	} else if (ktime_compare(now, r->deadline) >= 0) {
		optr_round_end(r, OPTIREDUCE_EXPIRED);
		woke = true;
	} else if (r->early_armed) {
		ktime_t idle_end = ktime_add_ns(r->last_rx,
						optr_round_idle_ns(r));

		if (ktime_compare(now, idle_end) >= 0) {
			optr_round_end(r, OPTIREDUCE_EARLY);
			woke = true;
		} else {
			optr_round_timer_arm(r, ktime_before(idle_end, r->deadline) ?
						idle_end : r->deadline);
		}
	} else {
		optr_round_timer_arm(r, r->deadline);
	}
	spin_unlock_bh(&osk->lock);

	if (woke)
		osk->sk.sk_data_ready(&osk->sk);
	return HRTIMER_NORESTART;
}

void optr_round_timer_init(struct optr_round *r)
{
	optr_hrtimer_setup(&r->timer, optr_round_timer_fn, CLOCK_MONOTONIC,
			   HRTIMER_MODE_ABS_SOFT);
}

void optr_round_timer_arm(struct optr_round *r, ktime_t when)
{
	lockdep_assert_held(&r->osk->lock);
	hrtimer_start(&r->timer, when, HRTIMER_MODE_ABS_SOFT);
}

/*
 * The early timeout's idle window: early_idle_pct of the typical round
 * once every pending post's last fragment came, the whole typical round
 * while some post's last fragment has not: its sender moved on to a later
 * round (on a path that reorders, the rest may still be on the way), or it
 * is still sending as far as this socket knows. A message's fragments
 * leave back to back, so a round of silence in the middle of one means its
 * tail was lost; waiting for the deadline instead held the receiver, and
 * through it every peer's next call, for a whole deadline whenever a
 * message's LAST fragment was dropped. 0: the early timeout is off.
 */
u64 optr_round_idle_ns(const struct optr_round *r)
{
	if (!r->idle_ns)
		return 0;
	return r->moved_on || r->last_pending ?
		max(r->idle_ns, r->typical_ns) : r->idle_ns;
}

/* The idle window changed: re-arm an armed early timeout for it. */
void optr_round_early_rearm(struct optr_round *r)
{
	ktime_t when;

	lockdep_assert_held(&r->osk->lock);
	if (!r->early_armed || r->ended)
		return;
	when = ktime_add_ns(r->last_rx, optr_round_idle_ns(r));
	optr_round_timer_arm(r, ktime_before(when, r->deadline) ? when :
					r->deadline);
}

/*
 * Early timeout: once the round is sealed and every pending post has heard
 * from its sender (a fragment of its own, or the sender moved on), the
 * round need not wait for its deadline: it ends after it has been idle for
 * the window, and what is still missing then is lost. A post that heard
 * nothing keeps the round on its deadline: its sender may be late to
 * start (a longer computation), which is what deadlines are for. Called
 * whenever that condition may have become true.
 */
void optr_round_maybe_arm_early(struct optr_round *r)
{
	ktime_t when;

	lockdep_assert_held(&r->osk->lock);
	if (r->early_armed || r->ended || !r->sealed || r->silent ||
	    !r->pending || !r->idle_ns)
		return;
	r->early_armed = true;
	when = ktime_add_ns(r->last_rx, optr_round_idle_ns(r));
	optr_round_timer_arm(r, ktime_before(when, r->deadline) ? when :
					r->deadline);
}
