// SPDX-License-Identifier: MIT
/* Known loss patterns give exact lost / compensated counts and flags, and
 * compensation restores the sum when every rank holds the same data. */
#include <math.h>
#include <string.h>

#include "helpers.h"

#define N	4
#define COUNT	4000		/* shards of 1000 entries */

struct pattern {
	int phase, src, dst;	/* message to hit (dst -1: any) */
	int64_t pkt;		/* packet to drop, -1: all, -2: every other */
	int phase2, src2, dst2;	/* a second message, all packets (phase2 0: none) */
};

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	const struct pattern *p = arg;
	int ph = or_tag_phase(tag);

	(void)npkts;
	if (p->phase2 && ph == p->phase2 && src == p->src2 && dst == p->dst2)
		return 1;
	if (ph != p->phase || src != p->src || (p->dst >= 0 && dst != p->dst))
		return 0;
	return p->pkt == -1 || (int64_t)pkt == p->pkt || (p->pkt == -2 && pkt % 2 == 0);
}

static void run(const struct pattern *p, uint32_t packet, int hadamard,
		const uint64_t lost[N], const uint64_t comp[N], int exact)
{
	struct or_sim_loss loss = { .packet = packet, .drop = drop, .arg = (void *)p };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	struct t_world w;
	float *bufs[N];

	t_lossy_config(&cfg, hadamard);
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++) {
		bufs[r] = malloc(COUNT * 4);
		for (int i = 0; i < COUNT; i++)
			bufs[r][i] = t_value(0, i, 5);	/* the same on every rank */
	}
	t_world_allreduce(&w, (void **)bufs, COUNT, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, res);
	for (int r = 0; r < N; r++) {
		T_ASSERT(!(res[r].flags & OPTIREDUCE_RES_RELIABLE), "lossy path");
		/* Entries of the result: every one depends on peers. */
		T_ASSERT(res[r].expected == COUNT, "expected %llu",
			 (unsigned long long)res[r].expected);
		T_ASSERT(res[r].lost == lost[r], "rank %d lost %llu want %llu", r,
			 (unsigned long long)res[r].lost, (unsigned long long)lost[r]);
		T_ASSERT(res[r].compensated == comp[r], "rank %d compensated %llu want %llu",
			 r, (unsigned long long)res[r].compensated,
			 (unsigned long long)comp[r]);
		T_ASSERT(fabs(res[r].lost_fraction - lost[r] / (double)COUNT) < 1e-12, "fraction");
		for (int i = 0; i < COUNT; i++) {
			float want = 4 * t_value(0, i, 5);
			float tol = exact ? 1e-3f * (1 + fabsf(want)) : 1e30f;

			T_ASSERT(fabsf(bufs[r][i] - want) <= tol,
				 "rank %d entry %d: %g vs %g", r, i, bufs[r][i], want);
		}
		free(bufs[r]);
	}
	t_world_fini(&w);
}

int main(void)
{
	for (int h = 0; h <= 1; h++) {
		/* One phase-1 packet 1 -> 2: owner 2 rescales 100 entries. */
		struct pattern a = { OR_PHASE_SCATTER, 1, 2, 3, 0, 0, 0 };
		uint64_t la[N] = { 0, 0, 100, 0 }, ca[N] = { 0, 0, 100, 0 };
		/* One phase-2 packet of owner 0's multicast, lost at 3 only. */
		struct pattern b = { OR_PHASE_GATHER, 0, 3, 5, 0, 0, 0 };
		uint64_t lb[N] = { 0, 0, 0, 100 }, cb[N] = { 0, 0, 0, 100 };
		/* All of 1 -> 2 and 3 -> 2 in phase 1: 2000 contributions
		 * missing, but to the same 1000 entries, each rescaled: 1000
		 * entries lost, not 2000. */
		struct pattern c = { OR_PHASE_SCATTER, 1, 2, -1, OR_PHASE_SCATTER, 3, 2 };
		uint64_t lc[N] = { 0, 0, 1000, 0 }, cc[N] = { 0, 0, 1000, 0 };
		/* Both phases at once. */
		struct pattern d = { OR_PHASE_GATHER, 2, -1, 0, OR_PHASE_SCATTER, 0, 1 };
		uint64_t ld[N] = { 100, 1100, 0, 100 }, cd[N] = { 100, 1100, 0, 100 };

		run(&a, 400, h, la, ca, 1);
		run(&b, 400, h, lb, cb, 1);
		run(&c, 400, h, lc, cc, 1);
		run(&d, 400, h, ld, cd, 1);
	}
	/*
	 * 4-byte packets, every other one of 1 -> 2 lost: 500 holes but room
	 * for 256 ranges; the last range swallows the rest (conservative):
	 * 255 exact holes (0, 2 .. 508) + entries 510..998 = 744.
	 */
	{
		struct pattern e = { OR_PHASE_SCATTER, 1, 2, -2, 0, 0, 0 };
		uint64_t le[N] = { 0, 0, 744, 0 }, ce[N] = { 0, 0, 744, 0 };

		run(&e, 4, 0, le, ce, 1);
	}
	return 0;
}
