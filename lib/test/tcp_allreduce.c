// SPDX-License-Identifier: MIT
/*
 * The reliable path for real: N processes (2, 3, 4, 8) on 127.0.0.1, an
 * explicit peer list, exact sums and means of integer-valued data for
 * counts below, at and above N, every dtype, several incast values.
 */
#include <string.h>

#include "dtype.h"
#include "helpers.h"

static int ports[8];

static int rank_main(int rank, void *arg)
{
	int n = *(int *)arg;
	struct optireduce_config cfg;
	optireduce_comm *c;
	const size_t counts[] = { 1, (size_t)n - 1 ? (size_t)n - 1 : 1, (size_t)n,
				  (size_t)n + 1, 1000, 100003 };
	float *buf = malloc(100003 * 4);
	uint16_t *h = malloc(100003 * 2);
	uint64_t salt = 0;

	t_config(&cfg);
	cfg.rank = rank;
	cfg.size = n;
	cfg.peers = t_peer_list(n, ports);
	cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
	T_OK(optireduce_comm_create(&cfg, &c));
	for (unsigned int incast = 0; incast <= (n > 3 ? 2u : 0u); incast++) {
		T_OK(optireduce_comm_set_option(c, OPTIREDUCE_OPT_INCAST, incast));
		for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
		for (int op = OPTIREDUCE_SUM; op <= OPTIREDUCE_MEAN; op++) {
			size_t count = counts[ci];
			struct optireduce_result res;

			salt++;
			for (size_t i = 0; i < count; i++)
				buf[i] = t_value(rank, i, salt);
			T_OK(optireduce_allreduce(c, buf, count, OPTIREDUCE_FLOAT32, op, &res));
			T_ASSERT(res.flags & OPTIREDUCE_RES_RELIABLE, "reliable path");
			T_ASSERT(res.lost == 0 && res.count == count, "counters");
			for (size_t i = 0; i < count; i++) {
				float sum = 0;

				for (int q = 0; q < n; q++)
					sum += t_value(q, i, salt);
				if (op == OPTIREDUCE_MEAN)
					sum /= n;
				T_ASSERT(buf[i] == sum, "n %d rank %d count %zu op %d entry %zu: %g vs %g",
					 n, rank, count, op, i, buf[i], sum);
			}
			/* The same in float16 with small values. */
			if (count > 1000)
				continue;
			for (size_t i = 0; i < count; i++)
				h[i] = or_f32_to_f16(t_value(rank, i, salt) / 16);
			T_OK(optireduce_allreduce(c, h, count, OPTIREDUCE_FLOAT16, op, NULL));
			for (size_t i = 0; i < count; i++) {
				float sum = 0;

				for (int q = 0; q < n; q++)
					sum += or_f16_to_f32(or_f32_to_f16(t_value(q, i, salt) / 16));
				if (op == OPTIREDUCE_MEAN)
					sum /= n;
				T_ASSERT(h[i] == or_f32_to_f16(sum), "f16 entry %zu", i);
			}
		}
	}
	T_OK(optireduce_comm_destroy(c));
	free(buf);
	free(h);
	return 0;
}

int main(void)
{
	const int sizes[] = { 2, 3, 4, 8 };

	for (size_t i = 0; i < 4; i++) {
		int n = sizes[i];

		t_free_ports(n, ports);
		if (t_spawn(n, rank_main, &n, 60))
			T_FAIL("N = %d failed", n);
	}
	return 0;
}
