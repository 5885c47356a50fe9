// SPDX-License-Identifier: MIT
/*
 * Unbiasedness of the compensation, statistically: many calls, each with
 * its own deterministic random loss pattern (20% of packets, both phases)
 * and fresh i.i.d. data. The mean error over calls must be within 4
 * standard errors of zero; with compensation off (the authors' zero /
 * local fill) the same test must see a bias, so it has the power to.
 * Also with the Hadamard transform on (compensation in that domain).
 */
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "util.h"

#define N	4
#define COUNT	2048
#define CALLS	300

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	uint64_t h = or_mix64(tag ^ or_mix64(src * 131 + dst * 7 + pkt * 1000003));

	(void)arg;
	(void)npkts;
	return h % 100 < 20;
}

/* i.i.d. across ranks, mean 10 + small per-entry offset. */
static float sample(int r, int i, int call)
{
	uint64_t h = or_mix64(((uint64_t)call << 32) ^ (r << 20) ^ i);

	return 10.0f + (i % 7) + ((float)(h % 2001) - 1000.0f) / 250.0f;
}

/* Mean error per call across ranks and entries, then its mean and
 * standard error across calls. Returns mean / standard error. */
static double run(int hadamard, int compensate, double *mean_out)
{
	struct or_sim_loss loss = { .packet = 256, .drop = drop };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	void *b[N];
	double sum = 0, sum2 = 0, lost = 0, exp = 0;
	struct t_world w;

	t_lossy_config(&cfg, hadamard);
	cfg.hadamard_block = 256;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++) {
		b[r] = bufs[r];
		or_test_no_compensation(w.comm[r], !compensate);
	}
	for (int call = 0; call < CALLS; call++) {
		double err = 0;

		for (int r = 0; r < N; r++)
			for (int i = 0; i < COUNT; i++)
				bufs[r][i] = sample(r, i, call);
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, res);
		for (int i = 0; i < COUNT; i++) {
			double truth = 0;

			for (int r = 0; r < N; r++)
				truth += sample(r, i, call);
			for (int r = 0; r < N; r++)
				err += bufs[r][i] - truth;
		}
		for (int r = 0; r < N; r++) {
			lost += res[r].lost;
			exp += res[r].expected;
		}
		err /= (double)N * COUNT;
		sum += err;
		sum2 += err * err;
	}
	t_world_fini(&w);
	{
		double m = sum / CALLS, var = sum2 / CALLS - m * m;
		double se = sqrt(var / (CALLS - 1));

		printf("hadamard %d compensate %d: loss %.3f, mean error %.4f, "
		       "standard error %.4f\n", hadamard, compensate, lost / exp, m, se);
		/* Lost entries of the result: those of a rank's own shard
		 * (a quarter) that miss any of 3 contributions, 1 - 0.8^3,
		 * and those of the other shards that did not come, 0.2:
		 * 0.25 * 0.488 + 0.75 * 0.2 = 0.272. */
		T_ASSERT(lost / exp > 0.25 && lost / exp < 0.30, "loss rate");
		*mean_out = m;
		return fabs(m) / se;
	}
}

int main(void)
{
	double m, z;

	z = run(0, 1, &m);
	T_ASSERT(z < 4, "compensated mean error %.4f is %.1f standard errors off", m, z);
	z = run(1, 1, &m);
	T_ASSERT(z < 4, "compensated (Hadamard) mean error %.4f is %.1f SE off", m, z);
	z = run(0, 0, &m);
	T_ASSERT(z > 4 && m < 0, "uncompensated: no bias seen (%.1f SE)", z);
	z = run(1, 0, &m);
	T_ASSERT(z > 4 && m < 0, "uncompensated Hadamard: no bias seen (%.1f SE)", z);
	return 0;
}
