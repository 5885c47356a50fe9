// SPDX-License-Identifier: MIT
/*
 * Where the lossy transport's rate starts (transport.h, path_rate): four
 * ranks, WARMUP reliable calls, then lossy ones.
 *
 * - Each rank tells its lossy transport once, after the warm-up and before
 *   its first lossy send (the endpoint had sent nothing), a rate at least
 *   as fast as every warm-up call's payload over its duration (the engine
 *   takes the fastest call, timed from its start of work, which a result's
 *   duration includes), and the stats report that rate.
 * - Without a warm-up nothing is measured: no call, warmup_mbps 0.
 */
#include <pthread.h>
#include <string.h>

#include "helpers.h"

#define N	4
#define COUNT	(16 * 1024)
#define WARMUP	3
#define CALLS	6

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int told[N];
static uint64_t told_mbps[N], told_sent[N];

static void path_rate(void *arg, int rank, uint64_t mbps, uint64_t sent)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	told[rank]++;
	told_mbps[rank] = mbps;
	told_sent[rank] = sent;
	pthread_mutex_unlock(&lock);
}

static void run(unsigned int warmup)
{
	struct or_sim_loss loss = { .packet = 1024, .path_rate = path_rate };
	static struct optireduce_result res[CALLS][N];
	static float bufs[N][COUNT];
	struct optireduce_config cfg;
	struct optireduce_stats st;
	struct t_world w;
	void *b[N];

	memset(told, 0, sizeof(told));
	t_config(&cfg);
	cfg.warmup_calls = warmup;
	cfg.loss_threshold_ppm = 1000000;	/* the safeguard stays out */
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++)
		t_world_fill_sum(&w, b, COUNT, call, res[call]);
	for (int r = 0; r < N; r++) {
		double floor = 0;

		T_ASSERT(!optireduce_comm_stats(w.comm[r], &st), "stats");
		if (!warmup) {
			T_ASSERT(!told[r] && !st.warmup_mbps,
				 "no warm-up, rank %d: told %u times, stats %llu",
				 r, told[r], (unsigned long long)st.warmup_mbps);
			continue;
		}
		for (unsigned int call = 0; call < warmup; call++) {
			const struct optireduce_result *x = &res[call][r];
			double mbps = (double)x->sent_bytes * 8000.0 /
				      (double)x->duration_ns;

			T_ASSERT(x->flags & OPTIREDUCE_RES_WARMUP,
				 "call %u is a warm-up", call);
			if (mbps > floor)
				floor = mbps;
		}
		T_ASSERT(told[r] == 1, "rank %d told %u times", r, told[r]);
		T_ASSERT(!told_sent[r],
			 "rank %d: %llu bytes sent on the lossy path before", r,
			 (unsigned long long)told_sent[r]);
		T_ASSERT(told_mbps[r] > 0 && told_mbps[r] + 1 >= floor,
			 "rank %d: %llu Mbit/s, a warm-up call ran at %.0f", r,
			 (unsigned long long)told_mbps[r], floor);
		T_ASSERT(st.warmup_mbps == told_mbps[r],
			 "rank %d: stats %llu, told %llu", r,
			 (unsigned long long)st.warmup_mbps,
			 (unsigned long long)told_mbps[r]);
		T_ASSERT(st.calls_lossy == CALLS - warmup, "lossy calls %llu",
			 (unsigned long long)st.calls_lossy);
	}
	t_world_fini(&w);
}

int main(void)
{
	run(WARMUP);
	run(0);
	printf("ok\n");
	return 0;
}
