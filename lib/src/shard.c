// SPDX-License-Identifier: MIT
#include "shard.h"

size_t or_shard_len(size_t count, unsigned int n, unsigned int j)
{
	return count / n + (j < count % n);
}

size_t or_shard_off(size_t count, unsigned int n, unsigned int j)
{
	size_t q = count / n, r = count % n;

	return j * q + (j < r ? j : r);
}

unsigned int or_shard_of(size_t count, unsigned int n, size_t i)
{
	size_t q = count / n, r = count % n;

	/* The first r shards have q + 1 entries, the rest q. */
	if (i < r * (q + 1))
		return i / (q + 1);
	return r + (i - r * (q + 1)) / q;
}
