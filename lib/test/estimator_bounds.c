// SPDX-License-Identifier: MIT
/* Deadline estimation: t_B is the 95th percentile of reliable samples,
 * scales with size, borrows from the nearest class, has a floor; t_C is a
 * moving average of all calls. Agreement: the upper median of the ranks'
 * t_B replaces this rank's own for the class, under its own margin, which
 * settles where a small share of the lossy calls has late data. */
#include "estimator.h"
#include "helpers.h"

int main(void)
{
	static struct or_estimator e;
	uint64_t b;

	or_est_init(&e);
	T_ASSERT(or_est_bound(&e, 1 << 20) == OR_EST_DEFAULT_NS, "no samples");
	T_ASSERT(or_est_average(&e, 1 << 20) == 0, "no average");
	/* 20 warm-up samples of 1 MiB: 10..29 ms. p95 of 20 is the 19th. */
	for (int i = 0; i < 20; i++)
		or_est_sample(&e, 1 << 20, (10 + i) * 1000000ull, 1);
	b = or_est_bound(&e, 1 << 20);
	T_ASSERT(b == 28000000ull, "p95 %llu", (unsigned long long)b);
	/* Twice the bytes: twice the bound; smaller: the same (latency). */
	T_ASSERT(or_est_bound(&e, 2 << 20) == 56000000ull, "scaled");
	T_ASSERT(or_est_bound(&e, 1 << 10) == 28000000ull, "small borrows");
	/* Lossy samples do not move t_B but do move t_C. */
	for (int i = 0; i < 100; i++)
		or_est_sample(&e, 1 << 20, 1000000ull, 0);
	T_ASSERT(or_est_bound(&e, 1 << 20) == 28000000ull, "lossy moved t_B");
	T_ASSERT(or_est_average(&e, 1 << 20) < 1100000ull, "t_C follows");
	/* The window forgets: 32 new fast reliable samples. */
	for (int i = 0; i < OR_EST_WINDOW; i++)
		or_est_sample(&e, 1 << 20, 2000000ull, 1);
	T_ASSERT(or_est_bound(&e, 1 << 20) == 2000000ull, "window");
	/* Floor. */
	for (int i = 0; i < OR_EST_WINDOW; i++)
		or_est_sample(&e, 1 << 20, 1000, 1);
	T_ASSERT(or_est_bound(&e, 1 << 20) == OR_EST_FLOOR_NS, "floor");

	/* Agreement: five ranks, one without an estimate; upper median of
	 * 10, 40, 20, 30 ms is 30 ms. */
	or_est_init(&e);
	for (int i = 0; i < 20; i++)
		or_est_sample(&e, 1 << 16, 5000000ull, 1);
	T_ASSERT(or_est_own(&e, 1 << 16) == 5000000ull, "own t_B");
	{
		uint64_t tb[5] = { 10000000ull, 0, 40000000ull, 20000000ull,
				   30000000ull };

		or_est_agree(&e, 1 << 16, tb, 5);
	}
	T_ASSERT(or_est_bound(&e, 1 << 16) == 30000000ull, "agreed t_B");
	T_ASSERT(or_est_own(&e, 1 << 16) == 5000000ull, "own t_B kept");
	/* Same class, more bytes: scaled; another class: its own. */
	T_ASSERT(or_est_bound(&e, (1 << 16) + (1 << 15)) == 45000000ull,
		 "agreed t_B scaled");
	T_ASSERT(or_est_bound(&e, 1 << 20) == 5000000ull * 16, "other class");
	/* The margin is this rank's. A tenth late: one step of a quarter. */
	or_est_late(&e, 1000, 100);
	T_ASSERT(or_est_bound(&e, 1 << 16) ==
		 (uint64_t)(30000000ull * OR_EST_MARGIN_UP), "agreed times margin");
	/* Nobody has an estimate: nothing changes. */
	{
		uint64_t none[3] = { 0, 0, 0 };

		or_est_agree(&e, 1 << 16, none, 3);
	}
	T_ASSERT(or_est_bound(&e, 1 << 16) ==
		 (uint64_t)(30000000ull * OR_EST_MARGIN_UP), "no estimates");
	/* A peer reporting an absurd t_B: the bound stops at the ceiling,
	 * scaled up or not, instead of wrapping past UINT64_MAX. */
	{
		uint64_t huge[2] = { UINT64_MAX / 2, UINT64_MAX };

		or_est_agree(&e, 1 << 16, huge, 2);
	}
	T_ASSERT(or_est_bound(&e, 1 << 16) == OR_EST_CEIL_NS, "ceiling: %llu",
		 (unsigned long long)or_est_bound(&e, 1 << 16));
	T_ASSERT(or_est_bound(&e, (1 << 17) - 1) == OR_EST_CEIL_NS,
		 "scaled ceiling: %llu",
		 (unsigned long long)or_est_bound(&e, (1 << 17) - 1));
	/* Where the margin settles: one late call in 20 (5%, above the
	 * balance of 2.2%) widens it to the cap; one in 100 (1%) narrows it
	 * back to 1. Late: a sixth of the call's bytes, as one message of a
	 * small 4-rank call. */
	for (int i = 0; i < 2000; i++)
		or_est_late(&e, 6000, i % 20 ? 0 : 1000);
	T_ASSERT(e.margin > OR_EST_MARGIN_MAX * 0.9, "5%% late: margin %g",
		 e.margin);
	for (int i = 0; i < 2000; i++)
		or_est_late(&e, 6000, i % 100 ? 0 : 1000);
	T_ASSERT(e.margin < 1.3, "1%% late: margin %g", e.margin);
	/* A large late share widens the margin by what the deadline would
	 * have needed at the pace the data came: half late, twice the
	 * bound; a tenth late, still the 1.25 step; all late (or more than
	 * the call, counted whole), the cap; a jump stops at the cap too.
	 */
	{
		static const struct {
			double from;
			uint64_t bytes, late;
			double want;
			const char *what;
		} jump[] = {
			{ 1.0, 1000000, 500000, 2.0, "half late" },
			{ 1.0, 1000000, 100000, OR_EST_MARGIN_UP, "a tenth late" },
			{ 1.0, 1000000, 1000000, OR_EST_MARGIN_MAX, "all late" },
			{ 1.0, 1000, 5000, OR_EST_MARGIN_MAX, "over-late" },
			{ 3.0, 1000000, 500000, OR_EST_MARGIN_MAX, "jump capped" },
			{ 1.0, 0, 0, 1.0, "empty call" },
		};

		for (unsigned int i = 0; i < sizeof(jump) / sizeof(jump[0]); i++) {
			e.margin = jump[i].from;
			or_est_late(&e, jump[i].bytes, jump[i].late);
			T_ASSERT(e.margin > jump[i].want - 1e-9 &&
				 e.margin < jump[i].want + 1e-9,
				 "%s: margin %g, want %g", jump[i].what,
				 e.margin, jump[i].want);
		}
	}
	/* Late data under OR_EST_LATE_PPM of the bytes counts as on time. */
	for (int i = 0; i < 200; i++)
		or_est_late(&e, 1000000, OR_EST_LATE_PPM - 1);
	T_ASSERT(e.margin == 1.0, "late under the threshold: margin %g",
		 e.margin);
	return 0;
}
