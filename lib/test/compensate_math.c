// SPDX-License-Identifier: MIT
/* Compensation arithmetic on hand-made patterns: exact rescale factors,
 * exact lost/compensated counts, overlapping and unaligned ranges. */
#include <math.h>
#include <string.h>

#include "compensate.h"
#include "helpers.h"
#include "tar.h"

#define LEN 100

static struct or_comp_event ev[1024];

int main(void)
{
	float acc[LEN], d1[LEN], d2[LEN], d3[LEN];
	struct or_range m1[] = { { 0, 40 } },		/* entries 0..9 */
			m2[] = { { 20, 60 }, { 60, 81 } },	/* 5..14, 15..20 (touch) */
			m3[] = { { 398, 400 } };		/* entry 99, partly */
	struct or_contrib c[3] = {
		{ d1, m1, 1 }, { d2, m2, 2 }, { d3, m3, 1 },
	};
	struct or_comp_stats st = { 0 };

	for (int i = 0; i < LEN; i++) {
		acc[i] = 1;
		d1[i] = d2[i] = d3[i] = 1;
	}
	/* n = 4: own + 3 contributions, each entry's true sum is 4. */
	or_tar_reduce(acc, LEN, c, 3, 4, 1, ev, &st);
	for (int i = 0; i < LEN; i++)
		T_ASSERT(fabsf(acc[i] - 4) < 1e-6, "entry %d = %g", i, acc[i]);
	/* Missing contributions: c1 0..9 (10), c2 5..20 (16), c3 99 (1) = 27;
	 * lost counts entries, not contributions: 0..20 and 99 = 22, the
	 * entries rescaled. */
	T_ASSERT(st.lost == 22, "lost %llu", (unsigned long long)st.lost);
	T_ASSERT(st.compensated == 22, "compensated %llu",
		 (unsigned long long)st.compensated);

	/* Without rescaling the holes stay short: the authors' behaviour. */
	memset(&st, 0, sizeof(st));
	for (int i = 0; i < LEN; i++)
		acc[i] = 1;
	or_tar_reduce(acc, LEN, c, 3, 4, 0, ev, &st);
	T_ASSERT(acc[7] == 2 && acc[3] == 3 && acc[50] == 4 && acc[99] == 3,
		 "uncompensated values %g %g %g %g", acc[7], acc[3], acc[50], acc[99]);
	T_ASSERT(st.lost == 22 && st.compensated == 22, "counts without rescale");

	/* Every contribution lost: the own value times n. */
	memset(&st, 0, sizeof(st));
	{
		struct or_range all[] = { { 0, LEN * 4 } };
		struct or_contrib c2[3] = { { d1, all, 1 }, { d2, all, 1 }, { d3, all, 1 } };

		for (int i = 0; i < LEN; i++)
			acc[i] = 2.5f;
		or_tar_reduce(acc, LEN, c2, 3, 4, 1, ev, &st);
		for (int i = 0; i < LEN; i++)
			T_ASSERT(acc[i] == 10, "all lost: %g", acc[i]);
		/* 300 contributions, 100 entries. */
		T_ASSERT(st.lost == 100 && st.compensated == 100, "all-lost counts");
	}

	/* Phase-2 fill: the local value times n, counted once per entry;
	 * what arrived is kept. */
	{
		float x[LEN], own[LEN];
		struct or_range m[] = { { 4, 12 }, { 10, 16 }, { 396, 400 } };

		memset(&st, 0, sizeof(st));
		for (int i = 0; i < LEN; i++) {
			x[i] = 7.0f;	/* what arrived, or stale in holes */
			own[i] = 1.5f;
		}
		or_comp_fill(x, own, LEN, m, 3, 8, &st);
		for (int i = 0; i < LEN; i++) {
			int hole = (i >= 1 && i < 4) || i == 99;

			T_ASSERT(x[i] == (hole ? 12 : 7.0f), "fill entry %d = %g", i, x[i]);
		}
		T_ASSERT(st.lost == 4 && st.compensated == 4, "fill counts %llu",
			 (unsigned long long)st.lost);
	}
	return 0;
}
