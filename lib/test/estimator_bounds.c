// SPDX-License-Identifier: MIT
/* Deadline estimation: t_B is the 95th percentile of reliable samples,
 * scales with size, borrows from the nearest class, has a floor; t_C is a
 * moving average of all calls. */
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
	return 0;
}
