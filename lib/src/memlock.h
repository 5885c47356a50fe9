/* SPDX-License-Identifier: MIT */
#ifndef OR_MEMLOCK_H
#define OR_MEMLOCK_H

/*
 * Locked memory for lossy receives, in KiB (memlock.c).
 *
 * Implementation notes
 * - The budget is agreed over the TCP mesh's hellos (the smallest among
 *   the ranks), so every rank sends a call too large for it over the
 *   reliable path alike (engine.c).
 */

#include <stddef.h>
#include <stdint.h>

#include "optireduce.h"

#define OR_MEMLOCK_UNLIMITED	UINT32_MAX

/* This rank's budget: its RLIMIT_MEMLOCK shared among the ranks on its
 * host; unlimited with CAP_IPC_LOCK; OPTIREDUCE_MEMLOCK_KB overrides.
 * -EINVAL (said on stderr) when that variable is malformed. */
int or_memlock_budget_kb(const struct optireduce_config *cfg, uint32_t *kb);
/* What the lossy receives of one call of count entries keep pinned. */
uint64_t or_memlock_call_kb(size_t count, int n, int direct);

#endif /* OR_MEMLOCK_H */
