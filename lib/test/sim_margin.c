// SPDX-License-Identifier: MIT
/*
 * The deadline margin follows late data, not loss. Rank 2 gets a straggler
 * in every call for a while (data that comes after its deadline): a
 * quarter of what it receives, so its margin widens by 1 / (1 - 1/4) per
 * call up to 4x, its bound with it, and the late
 * bytes are counted. Then the stragglers stop and packets are dropped on
 * the wire instead: the margin narrows again call by call, and the rank
 * that loses packets keeps a margin of 1, since no deadline would have
 * saved them. Ranks that never see late data never widen.
 */
#include <string.h>

#include "helpers.h"

#define N		3
#define COUNT		3000		/* shards of 1000 entries */
#define WARMUP		4
#define LATE_CALLS	8		/* (4/3)^5 > 4: reaches the cap */
#define DROP_CALLS	10

static int late(void *arg, int src, int dst, uint64_t tag)
{
	uint64_t seq = or_tag_seq(tag);

	(void)arg;
	return seq >= WARMUP && seq < WARMUP + LATE_CALLS &&
	       or_tag_phase(tag) == OR_PHASE_SCATTER && src == 1 && dst == 2;
}

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	(void)arg;
	(void)npkts;
	return or_tag_seq(tag) >= WARMUP + LATE_CALLS &&
	       or_tag_phase(tag) == OR_PHASE_SCATTER && src == 0 && dst == 1 &&
	       pkt == 0;
}

static struct optireduce_stats stats(struct t_world *w, int r)
{
	struct optireduce_stats st;

	T_OK(optireduce_comm_stats(w->comm[r], &st));
	return st;
}

int main(void)
{
	struct or_sim_loss loss = { .packet = 1000, .late = late, .drop = drop };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	uint64_t prev_margin = 0, prev_bound = 0;
	void *b[N];
	struct t_world w;

	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.direct_kb = 0;	/* the Transpose AllReduce, round by round */
	cfg.loss_threshold_ppm = 1000000;	/* no safeguard */
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < WARMUP + LATE_CALLS + DROP_CALLS; call++) {
		struct optireduce_stats st2, st1, st0;

		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32,
				  OPTIREDUCE_SUM, res);
		st0 = stats(&w, 0);
		st1 = stats(&w, 1);
		st2 = stats(&w, 2);
		T_ASSERT(st0.margin_pct == 100 && st0.late_bytes == 0,
			 "call %d: rank 0 margin %llu late %llu", call,
			 (unsigned long long)st0.margin_pct,
			 (unsigned long long)st0.late_bytes);
		/* Rank 1 loses packets from call WARMUP + LATE_CALLS on, but
		 * they were dropped, not late. */
		T_ASSERT(st1.margin_pct == 100 && st1.late_bytes == 0,
			 "call %d: rank 1 margin %llu late %llu", call,
			 (unsigned long long)st1.margin_pct,
			 (unsigned long long)st1.late_bytes);
		if (call >= WARMUP + LATE_CALLS)
			T_ASSERT(res[1].lost > 0, "call %d: no drop", call);
		if (call < WARMUP) {
			T_ASSERT(st2.margin_pct == 100, "warm-up moved the margin");
		} else if (call < WARMUP + LATE_CALLS) {
			int k = call - WARMUP + 1;	/* late calls so far */
			double want = 100;

			/* Late: 1000 of the 4000 entries rank 2 receives
			 * (two 1000-entry shards in each phase). */
			for (int i = 0; i < k; i++)
				want *= 4.0 / 3;
			if (want > 400)
				want = 400;
			T_ASSERT(st2.margin_pct >= (uint64_t)want - 1 &&
				 st2.margin_pct <= (uint64_t)want + 1,
				 "call %d: margin %llu, want %.0f", call,
				 (unsigned long long)st2.margin_pct, want);
			T_ASSERT(st2.late_bytes == (uint64_t)k * 4000,
				 "call %d: late bytes %llu", call,
				 (unsigned long long)st2.late_bytes);
			T_ASSERT(res[2].lost == 1000, "call %d: rank 2 lost %llu",
				 call, (unsigned long long)res[2].lost);
			/* The bound given to the next call grows with it
			 * (from the second: the first lossy call moves from
			 * this rank's own t_B to the agreed one). */
			T_ASSERT(k == 1 || st2.deadline_ns >= prev_bound,
				 "call %d: bound shrank %llu -> %llu", call,
				 (unsigned long long)prev_bound,
				 (unsigned long long)st2.deadline_ns);
		} else {
			T_ASSERT(st2.margin_pct < prev_margin && st2.margin_pct > 100,
				 "call %d: margin %llu after %llu", call,
				 (unsigned long long)st2.margin_pct,
				 (unsigned long long)prev_margin);
			T_ASSERT(st2.late_bytes == LATE_CALLS * 4000,
				 "late bytes grew without stragglers");
		}
		prev_margin = st2.margin_pct;
		prev_bound = st2.deadline_ns;
	}
	printf("rank 2: margin %llu%% after %d late and %d clean calls\n",
	       (unsigned long long)prev_margin, LATE_CALLS, DROP_CALLS);
	t_world_fini(&w);
	return 0;
}
