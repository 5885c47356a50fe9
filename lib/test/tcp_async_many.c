// SPDX-License-Identifier: MIT
/*
 * Asynchronous calls over TCP: 64 in flight at once (one per "bucket", of
 * different sizes), a 65th refused with -EBUSY, completion collected out
 * of order with wait and test; then 300 calls through a sliding window.
 * Handles are single use (-ESRCH afterwards). N = 3 and 4 processes.
 */
#include <errno.h>
#include <string.h>

#include "helpers.h"

#define INFLIGHT 64

static int ports[8];

static size_t bucket_len(int b)
{
	return 1 + (size_t)b * 997 % 5000;
}

static void fill(float *buf, int rank, int b, uint64_t salt)
{
	for (size_t i = 0; i < bucket_len(b); i++)
		buf[i] = t_value(rank, i, salt * 1000 + b);
}

static void check(const float *buf, int n, int b, uint64_t salt)
{
	for (size_t i = 0; i < bucket_len(b); i++) {
		float sum = 0;

		for (int q = 0; q < n; q++)
			sum += t_value(q, i, salt * 1000 + b);
		T_ASSERT(buf[i] == sum, "bucket %d entry %zu: %g vs %g", b, i, buf[i], sum);
	}
}

static int rank_main(int rank, void *arg)
{
	int n = *(int *)arg;
	struct optireduce_config cfg;
	optireduce_handle h[INFLIGHT], extra;
	struct optireduce_result res;
	optireduce_comm *c;
	float *bufs[INFLIGHT], tmp[4];
	int done[INFLIGHT] = { 0 }, left = INFLIGHT;

	t_config(&cfg);
	cfg.rank = rank;
	cfg.size = n;
	cfg.peers = t_peer_list(n, ports);
	cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
	cfg.max_inflight = INFLIGHT;
	T_OK(optireduce_comm_create(&cfg, &c));
	for (int b = 0; b < INFLIGHT; b++) {
		bufs[b] = malloc(bucket_len(b) * 4);
		fill(bufs[b], rank, b, 1);
		T_OK(optireduce_allreduce_start(c, bufs[b], bucket_len(b),
						OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, &h[b]));
	}
	T_ASSERT(optireduce_allreduce_start(c, tmp, 4, OPTIREDUCE_FLOAT32,
					    OPTIREDUCE_SUM, &extra) == -EBUSY, "65th");
	/* Collect from the back: later calls finish later (FIFO), so test()
	 * mostly says -EAGAIN; wait() for the front ones. */
	while (left) {
		for (int b = INFLIGHT - 1; b >= 0; b--) {
			int rc;

			if (done[b])
				continue;
			rc = b % 2 ? optireduce_allreduce_test(c, h[b], &res) :
				     optireduce_allreduce_wait(c, h[b], &res);
			if (rc == -EAGAIN)
				continue;
			T_OK(rc);
			T_ASSERT(res.seq == (uint64_t)b, "seq %llu for bucket %d",
				 (unsigned long long)res.seq, b);
			check(bufs[b], n, b, 1);
			T_ASSERT(optireduce_allreduce_test(c, h[b], &res) == -ESRCH, "reuse");
			T_ASSERT(optireduce_allreduce_wait(c, h[b], &res) == -ESRCH, "reuse");
			done[b] = 1;
			left--;
		}
	}
	/* Sliding window: 300 calls, at most 64 outstanding. */
	for (int k = 0; k < 300 + INFLIGHT; k++) {
		int b = k % INFLIGHT;

		if (k >= INFLIGHT) {
			T_OK(optireduce_allreduce_wait(c, h[b], &res));
			check(bufs[b], n, b, 2 + (k - INFLIGHT) / INFLIGHT);
		}
		if (k < 300) {
			fill(bufs[b], rank, b, 2 + k / INFLIGHT);
			T_OK(optireduce_allreduce_start(c, bufs[b], bucket_len(b),
							OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, &h[b]));
		}
	}
	T_OK(optireduce_comm_destroy(c));
	for (int b = 0; b < INFLIGHT; b++)
		free(bufs[b]);
	return 0;
}

int main(void)
{
	for (int n = 3; n <= 4; n++) {
		t_free_ports(n, ports);
		if (t_spawn(n, rank_main, &n, 60))
			T_FAIL("N = %d failed", n);
	}
	return 0;
}
