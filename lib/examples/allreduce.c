// SPDX-License-Identifier: MIT
/*
 * A small trainer-like loop: every rank averages a few "gradient buckets"
 * per iteration, asynchronously, while it would be computing the next
 * ones, and prints what each call reports.
 *
 * Launch (torchrun style; here two ranks on this host):
 *   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./allreduce &
 *   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./allreduce
 * or with an explicit list: OPTIREDUCE_PEERS=127.0.0.1:7001,127.0.0.1:7002
 * plus OPTIREDUCE_RANK / OPTIREDUCE_SIZE.
 */
#include <stdio.h>
#include <stdlib.h>

#include <optireduce.h>

#define BUCKETS	4
#define ENTRIES	(1 << 20)	/* 4 MiB of float32 per bucket */
#define ITERS	3

int main(void)
{
	optireduce_comm *comm;
	optireduce_handle h[BUCKETS];
	struct optireduce_result res;
	struct optireduce_stats st;
	int64_t rank, size;
	float *grad[BUCKETS];
	int rc;

	rc = optireduce_comm_create_from_env(NULL, &comm);
	if (rc) {
		fprintf(stderr, "optireduce_comm_create_from_env: %s\n",
			optireduce_strerror(rc));
		return 1;
	}
	optireduce_comm_get_option(comm, OPTIREDUCE_OPT_RANK, &rank);
	optireduce_comm_get_option(comm, OPTIREDUCE_OPT_SIZE, &size);
	for (int b = 0; b < BUCKETS; b++)
		grad[b] = malloc(ENTRIES * sizeof(float));

	for (int it = 0; it < ITERS; it++) {
		/* "Backward": each bucket is ready in turn and starts at once. */
		for (int b = 0; b < BUCKETS; b++) {
			for (int i = 0; i < ENTRIES; i++)
				grad[b][i] = (float)(rank + 1) * (i % 10);
			rc = optireduce_allreduce_start(comm, grad[b], ENTRIES,
							OPTIREDUCE_FLOAT32,
							OPTIREDUCE_MEAN, &h[b]);
			if (rc)
				goto fail;
		}
		/* "Optimizer step": needs every bucket. */
		for (int b = 0; b < BUCKETS; b++) {
			rc = optireduce_allreduce_wait(comm, h[b], &res);
			if (rc)
				goto fail;
			if (rank == 0)
				printf("iter %d bucket %d: %.3f ms, lost %.4f%%, %s%s, "
				       "grad[7] = %g\n", it, b, res.duration_ns / 1e6,
				       100 * res.lost_fraction,
				       res.flags & OPTIREDUCE_RES_RELIABLE ?
				       "reliable" : "lossy",
				       res.flags & OPTIREDUCE_RES_WARMUP ? " (warm-up)" : "",
				       grad[b][7]);
		}
	}
	optireduce_comm_stats(comm, &st);
	if (rank == 0)
		printf("%llu calls on %lld ranks, %llu entries lost\n",
		       (unsigned long long)st.calls, (long long)size,
		       (unsigned long long)st.entries_lost);
	optireduce_comm_destroy(comm);
	for (int b = 0; b < BUCKETS; b++)
		free(grad[b]);
	return 0;
fail:
	fprintf(stderr, "rank %lld: %s\n", (long long)rank, optireduce_strerror(rc));
	optireduce_comm_destroy(comm);
	return 1;
}
