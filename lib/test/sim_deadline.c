// SPDX-License-Identifier: MIT
/*
 * Deadlines: after warm-up the library bounds each lossy call by t_B from
 * the reliable calls it measured. A message that never comes (a straggler)
 * ends at its round's deadline; the call completes in bounded time with
 * the loss counted and compensated, instead of waiting.
 */
#include <math.h>
#include <string.h>

#include "helpers.h"

#define N	3
#define COUNT	3000
#define WARMUP	4

static int late(void *arg, int src, int dst, uint64_t tag)
{
	int ph = or_tag_phase(tag);

	(void)arg;
	if (or_tag_seq(tag) < WARMUP)
		return 0;
	/* call 4: 1 -> 2 in phase 1; call 5: owner 0 -> 1 in phase 2 */
	return (or_tag_seq(tag) == WARMUP && ph == OR_PHASE_SCATTER && src == 1 && dst == 2) ||
	       (or_tag_seq(tag) == WARMUP + 1 && ph == OR_PHASE_GATHER && src == 0 && dst == 1);
}

int main(void)
{
	struct or_sim_loss loss = { .packet = 1000, .late = late };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	void *b[N];
	struct t_world w;

	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.direct_kb = 0;	/* the Transpose AllReduce, round by round */
	cfg.loss_threshold_ppm = 1000000;
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < WARMUP + 3; call++) {
		for (int r = 0; r < N; r++)
			for (int i = 0; i < COUNT; i++)
				bufs[r][i] = t_value(0, i, call);	/* same everywhere */
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, res);
		for (int r = 0; r < N; r++) {
			int hit = (call == WARMUP && r == 2) || (call == WARMUP + 1 && r == 1);

			T_ASSERT(res[r].lost == (hit ? 1000u : 0u), "call %d rank %d lost %llu",
				 call, r, (unsigned long long)res[r].lost);
			if (call >= WARMUP) {
				T_ASSERT(res[r].deadline_ns > 0, "no deadline");
				/* Bounded: the deadline plus scheduling slack. */
				T_ASSERT(res[r].duration_ns < res[r].deadline_ns + 2000000000ull,
					 "call %d took %llu ns, bound %llu", call,
					 (unsigned long long)res[r].duration_ns,
					 (unsigned long long)res[r].deadline_ns);
			}
			if (hit)
				T_ASSERT(res[r].duration_ns >= res[r].deadline_ns / 2,
					 "a straggler call ended before its deadline");
			for (int i = 0; i < COUNT; i++) {
				float want = 3 * t_value(0, i, call);

				T_ASSERT(fabsf(bufs[r][i] - want) <= 1e-3f * (1 + fabsf(want)),
					 "call %d rank %d entry %d %g vs %g", call, r, i,
					 bufs[r][i], want);
			}
		}
	}
	t_world_fini(&w);
	return 0;
}
