// SPDX-License-Identifier: MIT
/* The Transpose AllReduce at many in-process ranks over the simulated
 * transport (Hadamard off, lossy path from the first call): exact sums
 * with nothing lost; then rank 0's phase-1 messages all dropped, which
 * every rank reports exactly: owners 1..n-1 lost (and compensated) rank
 * 0's part of their shard, PER_RANK entries each; rank 0 lost nothing
 * (phase 2 intact). Sizes: the arguments, else 64 and 256 (make check);
 * make check-cluster runs 1024 (minutes). Prints what each size
 * cost: setup, a call, the resident memory of a communicator, for
 * Documentation/design.md ("Rank count"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "transport_sim.h"

#define PER_RANK	4	/* entries of each rank's shard */

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every phase-1 message of rank 0 (to each owner of a shard). */
static int drop_rank0(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		      uint64_t npkts)
{
	(void)arg, (void)dst, (void)pkt, (void)npkts;
	return src == 0 && or_tag_phase(tag) == 1;
}

/* One call on every rank at once; res[r] its result. */
static double call(optireduce_comm **comm, int n, float **bufs, size_t count,
		   uint64_t salt, struct optireduce_result *res,
		   optireduce_handle *h)
{
	double t0;

	for (int r = 0; r < n; r++)
		for (size_t i = 0; i < count; i++)
			bufs[r][i] = t_value(r, i, salt);
	t0 = now_s();
	for (int r = 0; r < n; r++)
		T_OK(optireduce_allreduce_start(comm[r], bufs[r], count,
						OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &h[r]));
	for (int r = 0; r < n; r++)
		T_OK(optireduce_allreduce_wait(comm[r], h[r], &res[r]));
	return now_s() - t0;
}

static void run(int n)
{
	struct or_sim_loss loss = { .packet = 512, .drop = drop_rank0 };
	struct or_sim_loss none = { .packet = 512 };
	struct or_sim_fabric *rel, *lossy_none, *lossy_drop;
	size_t count = (size_t)n * PER_RANK;
	optireduce_comm **comm = calloc(n, sizeof(*comm));
	optireduce_comm **dcomm = calloc(n, sizeof(*dcomm));
	struct optireduce_result *res = calloc(n, sizeof(*res));
	optireduce_handle *h = calloc(n, sizeof(*h));
	float **bufs = calloc(n, sizeof(*bufs));
	struct optireduce_config cfg;
	long rss0 = rss_kb(), rss1;
	double t_exact, t_lossy, t_setup = now_s();
	char what[64];

	T_ASSERT(comm && dcomm && res && h && bufs, "allocations");
	t_lossy_config(&cfg, 0);
	rel = or_sim_fabric_create(n, NULL);
	lossy_none = or_sim_fabric_create(n, &none);
	lossy_drop = or_sim_fabric_create(n, &loss);
	T_ASSERT(rel && lossy_none && lossy_drop, "fabrics of %d", n);
	for (int r = 0; r < n; r++) {
		struct or_transport *tr, *tl;

		cfg.rank = r;
		cfg.size = n;
		T_ASSERT((bufs[r] = malloc(count * sizeof(float))), "buffer");
		T_OK(or_sim_transport_create(rel, r, &tr));
		T_OK(or_sim_transport_create(lossy_none, r, &tl));
		T_OK(or_comm_create_with(&cfg, tr, tl, OPTIREDUCE_TRANSPORT_KERNEL,
					 &comm[r]));
	}
	t_setup = now_s() - t_setup;
	rss1 = rss_kb();

	t_exact = call(comm, n, bufs, count, 11, res, h);
	for (int r = 0; r < n; r++) {
		snprintf(what, sizeof(what), "n=%d rank %d", n, r);
		T_ASSERT(res[r].lost == 0 && res[r].expected == count &&
			 !(res[r].flags & OPTIREDUCE_RES_RELIABLE),
			 "%s: lost %llu of %llu, flags %#x", what,
			 (unsigned long long)res[r].lost,
			 (unsigned long long)res[r].expected, res[r].flags);
		t_check_sum(bufs[r], n, count, 11, what);
	}
	for (int r = 0; r < n; r++)
		T_OK(optireduce_comm_destroy(comm[r]));

	/* The same world on a fabric that drops rank 0's phase 1; the
	 * first one's gone, so the process holds one at a time. */
	for (int r = 0; r < n; r++) {
		struct or_transport *tr, *tl;

		cfg.rank = r;
		T_OK(or_sim_transport_create(rel, r, &tr));
		T_OK(or_sim_transport_create(lossy_drop, r, &tl));
		T_OK(or_comm_create_with(&cfg, tr, tl, OPTIREDUCE_TRANSPORT_KERNEL,
					 &dcomm[r]));
	}
	t_lossy = call(dcomm, n, bufs, count, 12, res, h);
	for (int r = 0; r < n; r++) {
		/* Owners 1..n-1 each miss rank 0's part of their shard; rank
		 * 0's own shard lacks nothing, and it takes the others'
		 * reduced shards as they are. Everyone holds the same
		 * compensated entries: those of shards 1..n-1. */
		uint64_t want = r ? PER_RANK : 0;

		T_ASSERT(res[r].lost == want && res[r].compensated == want,
			 "n=%d rank %d: lost %llu, compensated %llu, want %llu",
			 n, r, (unsigned long long)res[r].lost,
			 (unsigned long long)res[r].compensated,
			 (unsigned long long)want);
	}
	for (int r = 0; r < n; r++) {
		T_OK(optireduce_comm_destroy(dcomm[r]));
		free(bufs[r]);
	}
	or_sim_fabric_destroy(rel);
	or_sim_fabric_destroy(lossy_none);
	or_sim_fabric_destroy(lossy_drop);
	printf("# sim n=%d: setup %.2f s, exact call %.3f s, lossy call %.3f s, "
	       "%ld KiB a communicator (resident), %llu messages a phase\n",
	       n, t_setup, t_exact, t_lossy, (rss1 - rss0) / n,
	       (unsigned long long)n * (n - 1));
	free(comm);
	free(dcomm);
	free(res);
	free(h);
	free(bufs);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		run(64);
		run(256);
	}
	for (int k = 1; k < argc; k++) {
		int n = atoi(argv[k]);

		T_ASSERT(n >= 2, "size %s", argv[k]);
		run(n);
	}
	return 0;
}
