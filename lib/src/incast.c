// SPDX-License-Identifier: MIT
/*
 * Dynamic incast: the limit of senders per receiver follows reported loss
 * (incast.h).
 *
 * Constants, and why:
 * - OR_INCAST_LOSS_HIGH 2%: overflowing a switch port loses whole bursts,
 *   tens of percent of a call (Documentation/results.md, "Fabric"); a
 *   link's random loss of 0.1% per packet costs a call of 8 ranks about
 *   0.7% of its entries (an entry is lost when any of its 7 contributions
 *   is), below the threshold.
 * - OR_INCAST_LOSS_LOW 0.5%: a window is clean below it; between the two
 *   nothing moves (hysteresis: a loss near one threshold cannot flip the
 *   limit back and forth).
 * - Not incast when even one sender at a time keeps 3/4 of the loss the
 *   descent began with: incast loss falls steeply with fewer senders, a
 *   lossy link's does not fall at all; the quarter leaves room for the
 *   noise of one window against another.
 * - OR_INCAST_WINDOW 4 calls: one call's loss is noisy (one late peer,
 *   one burst); a window's total is not, and four calls keep the reaction
 *   within a few calls of the OR_REPORT_LAG the reports already cost.
 * - OR_INCAST_NEED_MAX 16 windows: a limit that congested again is
 *   probed at most every 64 calls once it is known to be bad, so probing
 *   costs a few percent of the calls, and recovery after the congestion
 *   is gone takes at most that long per step.
 */
#include "incast.h"

#define OR_INCAST_LOSS_HIGH	0.02
#define OR_INCAST_LOSS_LOW	0.005
#define OR_INCAST_WINDOW	4
#define OR_INCAST_NEED_MAX	16

void or_incast_init(struct or_incast *s)
{
	*s = (struct or_incast){ .need = 1 };
}

unsigned int or_incast_ceiling(unsigned int option, unsigned int n)
{
	if (n <= 1)
		return 0;
	return option == 0 || option > n - 1 ? n - 1 : option;
}

unsigned int or_incast_choose(const struct or_incast *s, unsigned int ceiling)
{
	return s->cur && s->cur < ceiling ? s->cur : ceiling;
}

static void halve(struct or_incast *s, unsigned int at, double loss)
{
	if (s->raised && s->need < OR_INCAST_NEED_MAX)
		s->need *= 2;
	if (!s->top) {
		s->top = at;
		s->top_loss = loss;
	}
	s->cur = at / 2;
	s->raised = 0;
	s->lowered++;
}

/* A window at limit at ended with loss. */
static void window_end(struct or_incast *s, unsigned int at, double loss,
		       unsigned int ceiling)
{
	if (loss > OR_INCAST_LOSS_HIGH) {
		s->clean = 0;
		if (s->insensitive)
			return;
		if (at > 1) {
			halve(s, at, loss);
			return;
		}
		if (s->top && loss * 4 >= s->top_loss * 3) {
			/* One sender at a time lost about as much: not
			 * incast. */
			s->cur = s->top;
			s->insensitive = 1;
		}
		s->top = 0;
		return;
	}
	s->top = 0;
	if (loss >= OR_INCAST_LOSS_LOW) {
		s->clean = 0;
		return;
	}
	s->insensitive = 0;
	if (at >= ceiling) {
		s->need = 1;
		s->clean = 0;
		return;
	}
	if (++s->clean < s->need)
		return;
	s->clean = 0;
	s->cur = at + 1;
	s->raised = 1;
}

void or_incast_update(struct or_incast *s, unsigned int ran, uint64_t lost,
		      uint64_t expected, unsigned int ceiling)
{
	unsigned int at = or_incast_choose(s, ceiling);

	if (!ceiling || ran != at) {
		/* Evidence of another limit (a change not yet seen by the
		 * calls reported): the window starts over. */
		s->calls = 0;
		s->lost = s->expected = 0;
		return;
	}
	s->lost += lost;
	s->expected += expected;
	if (++s->calls < OR_INCAST_WINDOW)
		return;
	window_end(s, at, s->expected ?
		   (double)s->lost / (double)s->expected : 0, ceiling);
	s->calls = 0;
	s->lost = s->expected = 0;
}
