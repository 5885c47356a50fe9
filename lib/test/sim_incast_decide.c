// SPDX-License-Identifier: MIT
/*
 * Dynamic incast's decisions (incast.c), driven as the engine drives them:
 * call seq runs at the limit chosen after the reports of every call up to
 * seq - OPTIREDUCE_REPORT_LAG were consumed, and each consumed lossy call
 * reports the loss a model of the network gives its limit. Eight ranks
 * (ceiling 7), 2000 calls per model:
 * - clean: the limit never moves;
 * - a steady loss between the thresholds (1%): never moves;
 * - a steady loss of a lossy link (10% at any limit): one descent, then
 *   back at the ceiling for good, no oscillation;
 * - incast (loss grows with senders beyond 2 at once): the limit settles
 *   at 2 or less, probing 3 ever more rarely: calls above 2 in the second
 *   half are fewer than in the first and under 10%, and the second half
 *   loses less than a tenth of what the fixed limit 7 loses;
 * - congestion that ends at call 1000: the limit is back at the ceiling
 *   within 600 calls.
 */
#include "helpers.h"
#include "incast.h"

#define CEIL	7
#define CALLS	2000
#define LAG	OPTIREDUCE_REPORT_LAG
#define ENTRIES	100000

/* Entries lost of ENTRIES by a call at limit i, call seq. */
typedef uint64_t (*model_fn)(unsigned int i, int seq);

static uint64_t clean(unsigned int i, int seq)
{
	(void)i;
	(void)seq;
	return 0;
}

static uint64_t between(unsigned int i, int seq)
{
	(void)i;
	(void)seq;
	return ENTRIES / 100;
}

/* A lossy link: the same loss at any limit, a little noise. */
static uint64_t link_loss(unsigned int i, int seq)
{
	(void)i;
	return ENTRIES / 10 + (seq % 7) * 100;
}

/* A port that takes two senders at once: the excess is lost. */
static uint64_t incast(unsigned int i, int seq)
{
	(void)seq;
	return i > 2 ? (uint64_t)ENTRIES * (i - 2) / i : 0;
}

static uint64_t incast_ends(unsigned int i, int seq)
{
	return seq < 1000 ? incast(i, seq) : 0;
}

struct run {
	unsigned int ran[CALLS];
	uint64_t lost[CALLS];
	unsigned int changes;
	uint64_t lowered;
};

static void drive(model_fn loss, struct run *r)
{
	struct or_incast s;

	or_incast_init(&s);
	r->changes = 0;
	for (int seq = 0; seq < CALLS; seq++) {
		if (seq >= LAG) {
			unsigned int i = r->ran[seq - LAG];

			or_incast_update(&s, i, loss(i, seq - LAG), ENTRIES,
					 CEIL);
		}
		r->ran[seq] = or_incast_choose(&s, CEIL);
		r->lost[seq] = loss(r->ran[seq], seq);
		T_ASSERT(r->ran[seq] >= 1 && r->ran[seq] <= CEIL,
			 "call %d: limit %u", seq, r->ran[seq]);
		if (seq && r->ran[seq] != r->ran[seq - 1])
			r->changes++;
	}
	r->lowered = s.lowered;
}

static int count_above(const struct run *r, int from, int to, unsigned int lim)
{
	int n = 0;

	for (int k = from; k < to; k++)
		n += r->ran[k] > lim;
	return n;
}

int main(void)
{
	static struct run r;
	uint64_t lost = 0;
	int first, second;

	drive(clean, &r);
	T_ASSERT(!r.changes && r.ran[CALLS - 1] == CEIL, "clean: %u changes",
		 r.changes);
	drive(between, &r);
	T_ASSERT(!r.changes && r.ran[CALLS - 1] == CEIL,
		 "1%% loss: %u changes", r.changes);

	drive(link_loss, &r);
	/* Down 7 -> 3 -> 1 once, then back up to stay. */
	T_ASSERT(r.changes == 3 && r.lowered == 2, "lossy link: %u changes, "
		 "%llu lowerings", r.changes, (unsigned long long)r.lowered);
	for (int k = CALLS / 4; k < CALLS; k++)
		T_ASSERT(r.ran[k] == CEIL, "lossy link: call %d at %u", k,
			 r.ran[k]);

	drive(incast, &r);
	first = count_above(&r, 0, CALLS / 2, 2);
	second = count_above(&r, CALLS / 2, CALLS, 2);
	printf("incast: %d calls above 2 in the first half, %d in the second, "
	       "%u changes, %llu lowerings\n", first, second, r.changes,
	       (unsigned long long)r.lowered);
	T_ASSERT(second < first && second * 10 < CALLS / 2,
		 "incast: %d then %d calls above 2", first, second);
	for (int k = CALLS / 2; k < CALLS; k++)
		lost += r.lost[k];
	T_ASSERT(lost * 10 < incast(CEIL, 0) * (CALLS / 2),
		 "incast: lost %llu entries in the second half",
		 (unsigned long long)lost);
	T_ASSERT(r.ran[CALLS - 1] <= 3, "incast: ends at %u",
		 r.ran[CALLS - 1]);

	drive(incast_ends, &r);
	T_ASSERT(r.ran[999] < CEIL && r.ran[1600] == CEIL &&
		 r.ran[CALLS - 1] == CEIL, "recovery: %u at 999, %u at 1600",
		 r.ran[999], r.ran[1600]);
	printf("ok\n");
	return 0;
}
