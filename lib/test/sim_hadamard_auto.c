// SPDX-License-Identifier: MIT
/*
 * HADAMARD_AUTO follows the loss the ranks report: the transform is on for
 * a lossy call once the moving average (1/4) of the lost fraction of the
 * lossy calls whose reports are in (OR_REPORT_LAG = 8 calls back) reaches
 * 1%, and off again under 0.25%. Every rank makes the same choice for
 * every call. Calls 12..27 lose about 10% of their packets, the others
 * nothing: the transform is off at first, comes on during the loss and
 * goes off again after it. ON and OFF ignore the loss.
 */
#include <string.h>

#include "helpers.h"
#include "util.h"

#define N	3
#define COUNT	3000
#define CALLS	60
#define WARMUP	2
#define LAG	8

static int bad(uint64_t seq)
{
	return seq >= 12 && seq < 28;
}

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	(void)arg;
	(void)npkts;
	return bad(or_tag_seq(tag)) &&
	       or_mix64(tag ^ (src << 8) ^ (dst << 16) ^ pkt) % 10 == 0;
}

static void run(unsigned int mode)
{
	struct or_sim_loss loss = { .packet = 400, .drop = drop };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	double frac[CALLS] = { 0 }, avg = 0;
	int on = 0, seen_on = 0, seen_off_after = 0;
	void *b[N];
	struct t_world w;

	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.loss_threshold_ppm = 1000000;	/* no safeguard trips */
	cfg.hadamard = mode;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++) {
		uint64_t lost = 0, expected = 0;
		int want;

		/* The report of call - LAG is consumed before this call. */
		if (call - LAG >= WARMUP) {
			avg += (frac[call - LAG] - avg) / 4;
			if (avg >= 0.01)
				on = 1;
			else if (avg < 0.0025)
				on = 0;
		}
		want = mode == OPTIREDUCE_HADAMARD_ON ||
		       (mode == OPTIREDUCE_HADAMARD_AUTO && call >= WARMUP && on);
		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32,
				  OPTIREDUCE_SUM, res);
		for (int r = 0; r < N; r++) {
			int got = !!(res[r].flags & OPTIREDUCE_RES_HADAMARD);

			T_ASSERT(got == want, "mode %u call %d rank %d: transform %d, want %d (average loss %.4f)",
				 mode, call, r, got, want, avg);
			lost += res[r].lost;
			expected += res[r].expected;
		}
		T_ASSERT(!bad(call) == !lost, "call %d lost %llu", call,
			 (unsigned long long)lost);
		frac[call] = expected ? (double)lost / expected : 0;
		seen_on |= want;
		seen_off_after |= seen_on && !want;
	}
	if (mode == OPTIREDUCE_HADAMARD_AUTO)
		T_ASSERT(seen_on && seen_off_after, "AUTO never went on and off");
	t_world_fini(&w);
}

int main(void)
{
	run(OPTIREDUCE_HADAMARD_AUTO);
	run(OPTIREDUCE_HADAMARD_ON);
	run(OPTIREDUCE_HADAMARD_OFF);
	return 0;
}
