// SPDX-License-Identifier: MIT
/*
 * optireduce_result.group_lost_ppm: OPTIREDUCE_REPORT_LAG calls after a
 * lossy call, every rank's result carries the largest fraction of its
 * expected entries that any one rank lost in it (ppm, rounded up), and
 * every rank carries the same number. Warm-up (reliable) calls and calls
 * without an earlier call that far back carry 0.
 *
 * Three ranks, Transpose AllReduce (direct_kb 0); call 5 drops a third of
 * the packets to rank 2 alone, call 9 a tenth of those to rank 0 and a
 * third of those to rank 1. The threshold is out of the way, so no call
 * falls back.
 */
#include "helpers.h"
#include "util.h"

#define N	3
#define COUNT	6000
#define CALLS	24
#define WARMUP	3

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	uint64_t seq = or_tag_seq(tag), h;

	(void)arg;
	(void)npkts;
	h = or_mix64(tag ^ (src << 8) ^ (dst << 16) ^ pkt) % 30;
	if (seq == 5)
		return dst == 2 && h < 10;
	if (seq == 9)
		return (dst == 0 && h < 3) || (dst == 1 && h < 9);
	return 0;
}

static uint32_t ppm_up(uint64_t lost, uint64_t expected)
{
	return lost ? (uint32_t)((lost * 1000000 + expected - 1) / expected) : 0;
}

int main(void)
{
	struct or_sim_loss loss = { .packet = 400, .drop = drop };
	struct optireduce_config cfg;
	static struct optireduce_result res[CALLS][N];
	static float bufs[N][COUNT];
	void *b[N];
	struct t_world w;
	int nonzero = 0;

	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.direct_kb = 0;
	cfg.loss_threshold_ppm = 900000;
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++)
		t_world_fill_sum(&w, b, COUNT, call, res[call]);
	/* The losses landed where they were aimed, and nowhere else. */
	T_ASSERT(res[5][2].lost > 0 && !res[5][0].lost && !res[5][1].lost,
		 "call 5 lost %llu/%llu/%llu",
		 (unsigned long long)res[5][0].lost,
		 (unsigned long long)res[5][1].lost,
		 (unsigned long long)res[5][2].lost);
	T_ASSERT(res[9][0].lost > 0 && res[9][1].lost > res[9][0].lost &&
		 !res[9][2].lost, "call 9 lost %llu/%llu/%llu",
		 (unsigned long long)res[9][0].lost,
		 (unsigned long long)res[9][1].lost,
		 (unsigned long long)res[9][2].lost);
	for (int call = 0; call < CALLS; call++) {
		int from = call - OPTIREDUCE_REPORT_LAG;
		uint32_t want = 0;

		if (from >= WARMUP)
			for (int r = 0; r < N; r++) {
				uint32_t p = ppm_up(res[from][r].lost,
						    res[from][r].expected);

				if (p > want)
					want = p;
			}
		nonzero += want > 0;
		for (int r = 0; r < N; r++) {
			T_ASSERT(res[call][r].seq == (uint64_t)call, "seq");
			T_ASSERT(!(res[call][r].flags & OPTIREDUCE_RES_FALLBACK),
				 "call %d fell back", call);
			T_ASSERT(res[call][r].group_lost_ppm == want,
				 "call %d rank %d: group_lost_ppm %u, want %u",
				 call, r, res[call][r].group_lost_ppm, want);
		}
	}
	/* Calls 13 and 17, and only they, told of a loss: the worst rank's
	 * fraction (rank 2's, rank 1's), not the ranks' sum. */
	T_ASSERT(nonzero == 2 && res[13][0].group_lost_ppm ==
		 ppm_up(res[5][2].lost, res[5][2].expected) &&
		 res[17][0].group_lost_ppm ==
		 ppm_up(res[9][1].lost, res[9][1].expected),
		 "calls telling of a loss: %d", nonzero);
	t_world_fini(&w);
	return 0;
}
