// SPDX-License-Identifier: MIT
/* Shard math: every count and N, first count % N shards one longer. */
#include "helpers.h"
#include "shard.h"

static void check(size_t count, unsigned int n)
{
	size_t next = 0;

	for (unsigned int j = 0; j < n; j++) {
		size_t len = or_shard_len(count, n, j), off = or_shard_off(count, n, j);

		T_ASSERT(off == next, "count %zu n %u shard %u off %zu want %zu",
			 count, n, j, off, next);
		T_ASSERT(len == count / n + (j < count % n),
			 "count %zu n %u shard %u len %zu", count, n, j, len);
		for (size_t i = off; i < off + len && count < 5000; i++)
			T_ASSERT(or_shard_of(count, n, i) == j,
				 "count %zu n %u entry %zu in %u, want %u", count,
				 n, i, or_shard_of(count, n, i), j);
		if (len) {
			T_ASSERT(or_shard_of(count, n, off) == j, "first of shard");
			T_ASSERT(or_shard_of(count, n, off + len - 1) == j, "last of shard");
		}
		next = off + len;
	}
	T_ASSERT(next == count, "count %zu n %u covers %zu", count, n, next);
}

int main(void)
{
	for (unsigned int n = 1; n <= 64; n++)
		for (size_t count = 0; count <= 1000; count++)
			check(count, n);
	for (unsigned int n = 1; n <= 1024; n = n * 3 + 1)
		for (size_t count = (1u << 30) - 5; count <= (1u << 30); count++)
			check(count, n);
	return 0;
}
