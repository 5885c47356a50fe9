// SPDX-License-Identifier: MIT
/*
 * The first lossy call already runs on the bound the ranks agreed on.
 * Rank 2 starts every warm-up call SKEW_MS after its peers, so it measures
 * short calls and they long ones: its own t_B is far below theirs. The
 * warm-up reports carry every rank's t_B, and the first lossy call waits
 * for them, so on every rank it gets the upper median of the three, the
 * long one, and not a bound of its own.
 */
#include "helpers.h"

#define N	3
#define COUNT	3000
#define WARMUP	8		/* two whole report batches */
#define SKEW_MS	30

int main(void)
{
	struct or_sim_loss loss = { .packet = 1000 };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	void *b[N];
	struct t_world w;

	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.loss_threshold_ppm = 1000000;
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call <= WARMUP; call++) {
		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce_late(&w, b, COUNT, OPTIREDUCE_FLOAT32,
				       OPTIREDUCE_SUM, res,
				       call < WARMUP ? SKEW_MS : 0);
	}
	for (int r = 0; r < N; r++) {
		T_ASSERT(!(res[r].flags & OPTIREDUCE_RES_RELIABLE),
			 "rank %d: call %d went over the reliable path", r, WARMUP);
		printf("# rank %d: first lossy call's bound %.3f ms\n", r,
		       res[r].deadline_ns / 1e6);
	}
	for (int r = 1; r < N; r++)
		T_ASSERT(res[r].deadline_ns == res[0].deadline_ns,
			 "rank %d's bound %llu ns, rank 0's %llu ns", r,
			 (unsigned long long)res[r].deadline_ns,
			 (unsigned long long)res[0].deadline_ns);
	/* The peers' long calls, not the late rank's short ones. */
	T_ASSERT(res[0].deadline_ns >= SKEW_MS * 1000000ull * 3 / 4,
		 "agreed bound %llu ns is the late rank's",
		 (unsigned long long)res[0].deadline_ns);
	t_world_fini(&w);
	return 0;
}
