// SPDX-License-Identifier: MIT
/*
 * Calls too large for the ranks' locked memory take the reliable path.
 * The kernel charges a posted receive to RLIMIT_MEMLOCK (its pages plus
 * two); the ranks agree on the smallest budget among them when the mesh
 * connects. Here every rank's budget is what a small call needs exactly:
 * small calls stay lossy, calls four times larger go over TCP on every
 * rank, flagged as fallbacks, and every sum is exact. Also the charge
 * itself for 4 KiB pages: a 16 KiB call of 4 ranks posts 6 shards of
 * 4 KiB (3 pages each) or, direct, 3 buffers of 16 KiB (6 pages each).
 */
#include <unistd.h>

#include "comm.h"
#include "memlock.h"
#include "helpers.h"

#define N	4
#define SMALL	4096
#define BIG	(4 * SMALL)
#define WARMUP	2
#define CALLS	10

int main(void)
{
	struct or_sim_loss loss = { .packet = 1000 };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][BIG];
	uint32_t budget = (uint32_t)or_memlock_call_kb(SMALL, N, 0);
	char what[64];
	void *b[N];
	struct t_world w;

	if (sysconf(_SC_PAGESIZE) == 4096) {
		T_ASSERT(or_memlock_call_kb(SMALL, N, 0) == 6 * 12,
			 "Transpose AllReduce: %llu KiB",
			 (unsigned long long)or_memlock_call_kb(SMALL, N, 0));
		T_ASSERT(or_memlock_call_kb(SMALL, N, 1) == 3 * 24,
			 "direct: %llu KiB",
			 (unsigned long long)or_memlock_call_kb(SMALL, N, 1));
	}
	T_ASSERT(or_memlock_call_kb(BIG, N, 0) > budget, "big call fits");
	t_lossy_config(&cfg, 0);
	cfg.warmup_calls = WARMUP;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++) {
		b[r] = bufs[r];
		pthread_mutex_lock(&w.comm[r]->lock);
		w.comm[r]->memlock_kb = budget;
		pthread_mutex_unlock(&w.comm[r]->lock);
	}
	for (int call = 0; call < CALLS; call++) {
		size_t count = call >= WARMUP && call % 2 ? BIG : SMALL;
		int big = count == BIG;

		t_world_fill(&w, b, count, call);
		t_world_allreduce(&w, b, count, OPTIREDUCE_FLOAT32,
				  OPTIREDUCE_SUM, res);
		for (int r = 0; r < N; r++) {
			unsigned int f = res[r].flags;

			if (call >= WARMUP)
				T_ASSERT(big ? (f & OPTIREDUCE_RES_RELIABLE) &&
					       (f & OPTIREDUCE_RES_FALLBACK) :
					       !(f & OPTIREDUCE_RES_RELIABLE),
					 "call %d (%zu entries) rank %d: flags %#x",
					 call, count, r, f);
			snprintf(what, sizeof(what), "call %d rank %d", call, r);
			t_check_sum(bufs[r], N, count, call, what);
		}
	}
	printf("# budget %u KiB: %d-entry calls lossy, %d-entry calls reliable\n",
	       budget, SMALL, BIG);
	t_world_fini(&w);
	return 0;
}
