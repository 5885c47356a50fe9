// SPDX-License-Identifier: MIT
/*
 * Direct calls (cfg.direct_kb): a lossy call in which each rank receives at
 * most direct_kb KiB from its peers together is one round in which every
 * rank sends its whole buffer to all peers, as one send, and reduces what
 * arrives. Checked on the simulated fabric: the sums,
 * the messages on the wire (phase-1 tags only, each rank's whole buffer to
 * every peer), expected and lost counts, compensation, the "estimated" flag
 * a loss sets, and the sizes and incast limit that still take the
 * Transpose AllReduce.
 */
#include <math.h>
#include <string.h>

#include "helpers.h"

#define N	4

struct wire {
	int drop_src, drop_dst;		/* drop this message; -1: none */
	int64_t drop_pkt;		/* its packet; -1: all */
	unsigned int msgs[N][N];	/* first packets seen, by src, dst */
	unsigned int gather;		/* packets with a phase-2 tag */
	uint64_t npkts[N][N];		/* packets of the last message */
};

static int on_packet(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		     uint64_t npkts)
{
	struct wire *w = arg;

	if (or_tag_phase(tag) == OR_PHASE_GATHER)
		w->gather++;
	if (or_tag_phase(tag) == OR_PHASE_SCATTER && pkt == 0) {
		w->msgs[src][dst]++;
		w->npkts[src][dst] = npkts;
	}
	return src == w->drop_src && dst == w->drop_dst &&
	       (w->drop_pkt == -1 || (int64_t)pkt == w->drop_pkt);
}

/*
 * One allreduce of count floats, the same data on every rank when same,
 * with direct_kb and the given loss; check the sum on every rank against
 * what it lost.
 */
static void run(size_t count, unsigned int direct_kb, int hadamard, int same,
		struct wire *wire, struct optireduce_result res[N],
		unsigned int incast)
{
	struct or_sim_loss loss = { .packet = 400, .drop = on_packet, .arg = wire };
	struct optireduce_config cfg;
	struct t_world w;
	float *bufs[N];

	t_lossy_config(&cfg, hadamard);
	cfg.direct_kb = direct_kb;
	cfg.incast = incast;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++) {
		bufs[r] = malloc(count * 4);
		for (size_t i = 0; i < count; i++)
			bufs[r][i] = t_value(same ? 0 : r, i, 7);
	}
	t_world_allreduce(&w, (void **)bufs, count, OPTIREDUCE_FLOAT32,
			  OPTIREDUCE_SUM, res);
	for (int r = 0; r < N; r++) {
		for (size_t i = 0; i < count; i++) {
			float want = 0;

			for (int s = 0; s < N; s++)
				want += t_value(same ? 0 : s, i, 7);
			/* Without loss, or with compensation of equal data,
			 * the sum is exact up to rounding. */
			if (!res[r].lost || same)
				T_ASSERT(fabsf(bufs[r][i] - want) <=
					 1e-3f * (1 + fabsf(want)),
					 "rank %d entry %zu: %g vs %g", r, i,
					 bufs[r][i], want);
		}
		free(bufs[r]);
	}
	t_world_fini(&w);
}

int main(void)
{
	struct optireduce_result res[N];

	for (int h = 0; h <= 1; h++) {
		/* 1000 floats (4000 bytes, 12000 from three peers) with
		 * direct_kb 12: one round, each rank's whole buffer once to
		 * each peer (10 packets of 400), nothing with a phase-2 tag;
		 * no loss. */
		struct wire w = { .drop_src = -1, .drop_dst = -1 };

		run(1000, 12, h, 0, &w, res, 0);
		T_ASSERT(!w.gather, "%u phase-2 packets in a direct call",
			 w.gather);
		for (int s = 0; s < N; s++)
			for (int d = 0; d < N; d++)
				T_ASSERT(s == d ? !w.msgs[s][d] :
					 w.msgs[s][d] == 1 && w.npkts[s][d] == 10,
					 "%d -> %d: %u messages of %llu packets",
					 s, d, w.msgs[s][d],
					 (unsigned long long)w.npkts[s][d]);
		for (int r = 0; r < N; r++) {
			T_ASSERT(!(res[r].flags & OPTIREDUCE_RES_RELIABLE),
				 "rank %d: lossy path", r);
			T_ASSERT(res[r].expected == 1000 && !res[r].lost &&
				 !res[r].compensated,
				 "rank %d: expected %llu lost %llu", r,
				 (unsigned long long)res[r].expected,
				 (unsigned long long)res[r].lost);
			T_ASSERT(!(res[r].flags & OPTIREDUCE_RES_ESTIMATED),
				 "rank %d: estimated without a loss", r);
			T_ASSERT(res[r].flags & OPTIREDUCE_RES_DIRECT,
				 "rank %d: not flagged direct", r);
		}
	}
	for (int h = 0; h <= 1; h++) {
		/* One packet of 1 -> 2 lost: rank 2 alone misses 100 entries
		 * and rescales them; its result is estimated, the others'
		 * are exact. Equal data on every rank: compensation restores
		 * the sum. */
		struct wire w = { .drop_src = 1, .drop_dst = 2, .drop_pkt = 3 };

		run(1000, 12, h, 1, &w, res, 0);
		for (int r = 0; r < N; r++) {
			uint64_t want = r == 2 ? 100 : 0;

			T_ASSERT(res[r].lost == want && res[r].compensated == want,
				 "rank %d lost %llu compensated %llu, want %llu",
				 r, (unsigned long long)res[r].lost,
				 (unsigned long long)res[r].compensated,
				 (unsigned long long)want);
			T_ASSERT(!!(res[r].flags & OPTIREDUCE_RES_ESTIMATED) ==
				 (r == 2), "rank %d: estimated flag", r);
		}
	}
	{
		/* All of 3 -> 0: rank 0 lost the 1000 entries of one peer. */
		struct wire w = { .drop_src = 3, .drop_dst = 0, .drop_pkt = -1 };

		run(1000, 12, 0, 1, &w, res, 0);
		T_ASSERT(res[0].lost == 1000 && res[0].compensated == 1000,
			 "rank 0 lost %llu compensated %llu",
			 (unsigned long long)res[0].lost,
			 (unsigned long long)res[0].compensated);
		for (int r = 1; r < N; r++)
			T_ASSERT(!res[r].lost, "rank %d lost %llu", r,
				 (unsigned long long)res[r].lost);
	}
	{
		/* 1025 floats, 12300 bytes from three peers, is past 12 KiB:
		 * the Transpose AllReduce, with
		 * its phase 2 and shards (257 + 3 x 256 = 1025). */
		struct wire w = { .drop_src = -1, .drop_dst = -1 };

		run(1025, 12, 0, 0, &w, res, 0);
		T_ASSERT(w.gather, "no phase 2 past direct_kb");
		T_ASSERT(w.msgs[1][0] == 1 && w.npkts[1][0] == 3,
			 "1 -> 0 in phase 1: %u messages of %llu packets",
			 w.msgs[1][0], (unsigned long long)w.npkts[1][0]);
		T_ASSERT(res[0].expected == 1025,
			 "expected %llu", (unsigned long long)res[0].expected);
		T_ASSERT(!(res[0].flags & OPTIREDUCE_RES_DIRECT),
			 "flagged direct past direct_kb");
	}
	{
		/* direct_kb 0: never direct, even for 16 bytes. */
		struct wire w = { .drop_src = -1, .drop_dst = -1 };

		run(4, 0, 0, 0, &w, res, 0);
		T_ASSERT(w.gather, "direct with direct_kb 0");
	}
	{
		/* An incast limit (two senders per receiver) holds: the
		 * Transpose AllReduce, in rounds. */
		struct wire w = { .drop_src = -1, .drop_dst = -1 };

		run(1000, 12, 0, 0, &w, res, 2);
		T_ASSERT(w.gather && res[0].expected == 1000,
			 "direct under an incast limit (expected %llu)",
			 (unsigned long long)res[0].expected);
	}
	return 0;
}
