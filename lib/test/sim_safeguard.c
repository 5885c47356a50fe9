// SPDX-License-Identifier: MIT
/*
 * Path decisions: warm-up calls go over the reliable path; a lossy call
 * whose loss (summed over all ranks) exceeds the threshold trips the
 * safeguard, and OR_REPORT_LAG (8) calls later every rank switches to the
 * reliable path for a while, then back: fallback_calls / 16 calls after a
 * first trip, twice that after a trip that follows another without a
 * clean lossy call between. Counted in stats and flagged in results,
 * identically on every rank.
 *
 * fallback_calls 32: calls 3 and 4 trip (2 then 4 reliable calls, from
 * calls 11 and 12: 11..15), clean lossy calls reset the streak, call 20
 * trips alone (2 calls: 28, 29).
 */
#include <string.h>

#include "helpers.h"
#include "util.h"

#define N	3
#define COUNT	3000
#define CALLS	32

static int bad(uint64_t seq)	/* the calls that lose 30% */
{
	return seq == 3 || seq == 4 || seq == 20;
}

static int fallback(int call)
{
	return (call >= 11 && call <= 15) || call == 28 || call == 29;
}

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	(void)arg;
	(void)npkts;
	return bad(or_tag_seq(tag)) &&
	       or_mix64(tag ^ (src << 8) ^ (dst << 16) ^ pkt) % 10 < 3;
}

int main(void)
{
	struct or_sim_loss loss = { .packet = 400, .drop = drop };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	struct optireduce_stats st;
	static float bufs[N][COUNT];
	void *b[N];
	struct t_world w;

	t_config(&cfg);
	cfg.warmup_calls = 3;
	cfg.fallback_calls = 32;
	cfg.loss_threshold_ppm = 50000;
	cfg.hadamard = OPTIREDUCE_HADAMARD_ON;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++) {
		uint32_t want;

		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, res);
		/* The transform is on for every call (ON). */
		if (call < 3)
			want = OPTIREDUCE_RES_RELIABLE | OPTIREDUCE_RES_WARMUP;
		else if (fallback(call))
			want = OPTIREDUCE_RES_RELIABLE | OPTIREDUCE_RES_FALLBACK;
		else	/* 2 x 12000 bytes: within the default direct_kb */
			want = OPTIREDUCE_RES_DIRECT;
		want |= OPTIREDUCE_RES_HADAMARD;
		for (int r = 0; r < N; r++) {
			uint32_t f = res[r].flags & ~(OPTIREDUCE_RES_LOSS_HIGH |
						      OPTIREDUCE_RES_ESTIMATED);

			T_ASSERT(res[r].seq == (uint64_t)call, "seq");
			T_ASSERT(f == want, "call %d rank %d flags %#x want %#x", call, r,
				 res[r].flags, want);
			if (bad(call))
				T_ASSERT(res[r].lost > 0, "call %d lost nothing", call);
			else
				T_ASSERT(res[r].lost == 0, "call %d lost %llu", call,
					 (unsigned long long)res[r].lost);
			if (!(want & OPTIREDUCE_RES_RELIABLE))
				T_ASSERT(res[r].deadline_ns >= 500000, "deadline %llu",
					 (unsigned long long)res[r].deadline_ns);
		}
	}
	for (int r = 0; r < N; r++) {
		T_OK(optireduce_comm_stats(w.comm[r], &st));
		T_ASSERT(st.calls == CALLS && st.calls_warmup == 3 &&
			 st.calls_fallback == 7 && st.safeguard_trips == 3 &&
			 st.calls_reliable == 10 && st.calls_lossy == CALLS - 10 &&
			 st.calls_direct == st.calls_lossy,
			 "rank %d stats: calls %llu warmup %llu fallback %llu trips %llu",
			 r, (unsigned long long)st.calls,
			 (unsigned long long)st.calls_warmup,
			 (unsigned long long)st.calls_fallback,
			 (unsigned long long)st.safeguard_trips);
		T_ASSERT(st.entries_lost > 0 && st.deadline_ns > 0, "loss/deadline stats");
	}
	t_world_fini(&w);
	return 0;
}
