/* SPDX-License-Identifier: MIT */
#ifndef OR_INCAST_H
#define OR_INCAST_H

/*
 * Dynamic incast (incast.c): the incast limit I, senders per receiver at
 * once in phase 1, follows the loss the ranks report. reports.c feeds it
 * each consumed lossy call's outcome, in call order and from the same
 * numbers on every rank, and the engine asks it for each call's limit, so
 * every rank runs the same schedule without a message of its own.
 *
 * Decisions are taken per window of OR_INCAST_WINDOW lossy calls that ran
 * at the current limit (calls still at an earlier limit, up to
 * OR_REPORT_LAG of them after a change, are not its evidence):
 * - a window losing more than OR_INCAST_LOSS_HIGH of its entries halves I,
 *   down to 1 while the loss lasts; when even 1 did not cut the loss of
 *   the limit the descent began at by a quarter, the loss is not incast (a
 *   lossy link loses as much at any I): I goes back there and stays while
 *   the loss lasts;
 * - after `need` windows under OR_INCAST_LOSS_LOW, I grows by one;
 *   need doubles (up to OR_INCAST_NEED_MAX) each time a raised limit lost
 *   again, so a limit that keeps congesting is probed ever more rarely;
 * - in between, nothing changes.
 *
 * Progress thread only (reports.c, engine.c): no lock.
 */

#include <stdint.h>

struct or_incast {
	unsigned int cur;	/* the limit now; 0: the ceiling */
	unsigned int top;	/* where the descent began; 0: none */
	double top_loss;	/* ... and the loss there */
	int raised;		/* cur was reached by a step up */
	int insensitive;	/* halving did not help: hold while lossy */
	unsigned int need;	/* clean windows before a step up */
	unsigned int clean;	/* clean windows in a row at cur */
	unsigned int calls;	/* calls in the open window */
	uint64_t lost, expected; /* ... their entries */
	uint64_t lowered;	/* halvings so far */
};

void or_incast_init(struct or_incast *s);
/* The ceiling: the option (0: every peer) within 1 .. n-1. */
unsigned int or_incast_ceiling(unsigned int option, unsigned int n);
/* The limit of a call with this ceiling. */
unsigned int or_incast_choose(const struct or_incast *s,
			      unsigned int ceiling);
/* A consumed lossy call, run at limit ran, that lost lost of expected
 * entries over all ranks. */
void or_incast_update(struct or_incast *s, unsigned int ran, uint64_t lost,
		      uint64_t expected, unsigned int ceiling);

#endif /* OR_INCAST_H */
