// SPDX-License-Identifier: MIT
/*
 * Locked memory for lossy receives. The kernel pins a posted receive
 * buffer until its completion is read and charges it to the poster's
 * RLIMIT_MEMLOCK (exempt: CAP_IPC_LOCK, an unlimited limit). A lossy call
 * keeps about twice its buffer posted, so a call too large for the limit
 * would lose its messages (OR_CQE_UNPOSTED) call after call. Ranks
 * therefore agree, over the TCP mesh's hellos, on the smallest budget
 * among them, and calls that need more take the reliable path on every
 * rank (engine.c, choose_path()).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memlock.h"
#include "util.h"

static int has_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return 0;
	return !!(d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
		  CAP_TO_MASK(CAP_IPC_LOCK));
}

/* Length of the host part of "host:port" / "[host]:port". */
static size_t host_len(const char *s)
{
	const char *c = strrchr(s, ':');

	return c ? (size_t)(c - s) : strlen(s);
}

/*
 * Ranks whose address names the same host as ours, spelled the same: the
 * same user's processes there share one locked-memory account. (Other
 * spellings of the same host count as other hosts; a receive that then
 * finds the account spent is lost, not an error.)
 */
static unsigned int ranks_here(const struct optireduce_config *cfg)
{
	const char *me = cfg->peers[cfg->rank];
	size_t ml = host_len(me);
	unsigned int n = 0;

	for (int r = 0; r < cfg->size; r++)
		n += host_len(cfg->peers[r]) == ml &&
		     !memcmp(cfg->peers[r], me, ml);
	return n ? n : 1;
}

static uint32_t clamp_kb(uint64_t kb)
{
	return kb < OR_MEMLOCK_UNLIMITED ? (uint32_t)kb : OR_MEMLOCK_UNLIMITED;
}

int or_memlock_budget_kb(const struct optireduce_config *cfg, uint32_t *kb)
{
	const char *v = getenv("OPTIREDUCE_MEMLOCK_KB");
	struct rlimit rl;

	if (v) {
		uint64_t n;

		if (!strcmp(v, "unlimited")) {
			*kb = OR_MEMLOCK_UNLIMITED;
			return 0;
		}
		if (or_parse_u64(v, &n)) {
			or_log(cfg->flags & OPTIREDUCE_CFG_QUIET,
			       "OPTIREDUCE_MEMLOCK_KB=\"%s\" is neither a number "
			       "of KiB nor \"unlimited\"", v);
			return -EINVAL;
		}
		*kb = clamp_kb(n);
		return 0;
	}
	if (has_ipc_lock() || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		*kb = OR_MEMLOCK_UNLIMITED;
	else
		*kb = clamp_kb(rl.rlim_cur / 1024 / ranks_here(cfg));
	return 0;
}

/*
 * Locked memory (KiB) the lossy receives of a call of count entries keep
 * posted at once, as the kernel charges it: each post its length in pages
 * plus two. A direct call posts the whole buffer from each peer; the
 * Transpose AllReduce a shard from each peer in each phase (the largest
 * shard: alike on every rank).
 */
uint64_t or_memlock_call_kb(size_t count, int n, int direct)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t len = direct ? count * sizeof(float) :
		       OR_DIV_ROUND_UP(count, (size_t)n) * sizeof(float);
	uint64_t posts = (uint64_t)(n - 1) * (direct ? 1 : 2);

	return posts * ((len / page + 2) * page / 1024);
}
