// SPDX-License-Identifier: MIT
/*
 * With the Hadamard transform on, a lost packet becomes small noise spread
 * over its block instead of a hole: the worst entry error is much smaller
 * than without, for the same losses and data (compensation on in both).
 */
#include <math.h>
#include <string.h>

#include "helpers.h"
#include "util.h"

#define N	4
#define COUNT	16384

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	int ph = or_tag_phase(tag);

	(void)arg;
	(void)npkts;
	return (ph == OR_PHASE_SCATTER && src == 1 && dst == 2 && pkt == 3) ||
	       (ph == OR_PHASE_GATHER && src == 0 && dst == 3 && pkt == 5);
}

static double run(int hadamard, double *rms)
{
	struct or_sim_loss loss = { .packet = 256, .drop = drop };
	struct optireduce_config cfg;
	static float bufs[N][COUNT];
	void *b[N];
	double worst = 0, sq = 0;
	struct t_world w;

	t_lossy_config(&cfg, hadamard);
	cfg.hadamard_block = 4096;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++) {
		b[r] = bufs[r];
		for (int i = 0; i < COUNT; i++)
			bufs[r][i] = t_value(r, i, 9) / 64.0f;
	}
	t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL);
	for (int r = 0; r < N; r++)
		for (int i = 0; i < COUNT; i++) {
			double truth = 0, e;

			for (int q = 0; q < N; q++)
				truth += t_value(q, i, 9) / 64.0f;
			e = fabs(bufs[r][i] - truth);
			worst = fmax(worst, e);
			sq += e * e;
		}
	t_world_fini(&w);
	*rms = sqrt(sq / (N * COUNT));
	return worst;
}

int main(void)
{
	double rms_off, rms_on;
	double off = run(0, &rms_off), on = run(1, &rms_on);

	printf("max abs error: %.4f without, %.4f with Hadamard (rms %.5f, %.5f)\n",
	       off, on, rms_off, rms_on);
	T_ASSERT(off > 1, "the losses should hurt without the transform");
	T_ASSERT(on < off / 4, "Hadamard did not spread the loss: %.4f vs %.4f", on, off);
	return 0;
}
