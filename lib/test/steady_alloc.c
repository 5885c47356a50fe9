// SPDX-License-Identifier: MIT
/*
 * No heap allocation per call in steady state: with a repeating pattern of
 * bucket sizes (what DDP does every iteration), several calls in flight,
 * allocations stop: 20 iterations in a row (120 calls) allocate nothing,
 * within 300 iterations. Not "after exactly N": a buffer for data that
 * arrives before its receive is posted is added whenever a peer runs
 * further ahead than ever before, which timing decides. Two ranks in one
 * process over TCP; malloc and friends are counted by interposition.
 */
#include <string.h>

#include "alloc_count.h"
#include "helpers.h"

#define BUCKETS 6
static const size_t sizes[BUCKETS] = { 100000, 100000, 37, 5000, 100000, 999 };
static float bufs[2][BUCKETS][100000];

static void iteration(struct t_pair *a)
{
	optireduce_handle h[2][BUCKETS];

	for (int b = 0; b < BUCKETS; b++)
		for (int r = 0; r < 2; r++)
			T_OK(optireduce_allreduce_start(a[r].c, bufs[r][b], sizes[b],
							OPTIREDUCE_FLOAT32,
							OPTIREDUCE_MEAN, &h[r][b]));
	for (int b = 0; b < BUCKETS; b++)
		for (int r = 0; r < 2; r++)
			T_OK(optireduce_allreduce_wait(a[r].c, h[r][b], NULL));
}

int main(void)
{
	struct t_pair a[2];
	long before;

	t_pair_init(a);
	t_pair_create(a);
	for (int r = 0; r < 2; r++)
		T_OK(a[r].rc);
	int quiet = 0, it;

	iteration(a);
	T_ASSERT(allocs > 0, "malloc is not interposed: the test proves nothing");
	for (it = 1; it < 300 && quiet < 20; it++) {
		before = allocs;
		iteration(a);
		quiet = allocs == before ? quiet + 1 : 0;
	}
	printf("allocation-free from iteration %d on\n", it - quiet);
	T_ASSERT(quiet >= 20, "still allocating after %d iterations", it);
	for (int r = 0; r < 2; r++)
		T_OK(optireduce_comm_destroy(a[r].c));
	return 0;
}
