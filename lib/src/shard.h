/* SPDX-License-Identifier: MIT */
#ifndef OR_SHARD_H
#define OR_SHARD_H

/*
 * Shard math of the Transpose AllReduce: count entries split into n shards,
 * the first count % n shards one entry longer; rank j owns shard j.
 */

#include <stddef.h>

size_t or_shard_len(size_t count, unsigned int n, unsigned int j);
size_t or_shard_off(size_t count, unsigned int n, unsigned int j);
/* Which shard holds entry i (i < count). */
unsigned int or_shard_of(size_t count, unsigned int n, size_t i);

#endif /* OR_SHARD_H */
