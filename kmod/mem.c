// SPDX-License-Identifier: GPL-2.0
/*
 * Receive memory accounting. Every skb the module holds for a socket
 * between its arrival and its placement (early arrivals in the backlog,
 * batches waiting to be steered) is charged the way UDP charges its
 * receive queue:
 *
 *   - to the socket: sk_rmem_alloc may not pass sk_rcvbuf, which starts at
 *     net.core.rmem_default and is set with SO_RCVBUF (up to
 *     net.core.rmem_max) or, with CAP_NET_ADMIN, SO_RCVBUFFORCE;
 *   - to its memory cgroup, through the socket memory accounting of the
 *     proto (sk_memcg, charged in pages as sk_forward_alloc grows). The
 *     charge is made in softirq, where the memory controller cannot
 *     reclaim and lets it pass its limit as it does UDP's: the cgroup
 *     pays (its own tasks reclaim, or its OOM killer picks among them),
 *     and once it signals socket pressure no socket of it grows;
 *   - to the module: the proto's memory_allocated may not pass mem_max_kb.
 *
 * A packet that does not fit is not held: the caller drops and counts it
 * (drop_mem_limit) or, for steering, places it at once. Charging happens
 * before anything is queued and uncharging when it leaves the queue, so
 * the sum held never exceeds what was charged.
 *
 * sk_forward_alloc has no lock of its own: the backlog is osk->lock's and
 * the steering queue steer.lock's, so osk->mem_lock (BH, innermost)
 * serialises every charge and uncharge of the socket.
 */

#include <linux/percpu.h>
#include <linux/skbuff.h>
#include <net/sock.h>

#include "compat.h"
#include "mem.h"
#include "params.h"
#include "sock.h"

static atomic_long_t optr_memory_allocated;
static DEFINE_PER_CPU(int, optr_memory_per_cpu_fw_alloc);
/*
 * The global cap is mem_max_kb, checked in optr_mem_charge(); the proto's
 * own limits (pages) are set out of its way so that the core's pressure
 * logic never decides for it.
 */
static long optr_sysctl_mem[3] = { LONG_MAX / 4, LONG_MAX / 4, LONG_MAX / 4 };
/* What the core grants a socket under pressure regardless: nothing. */
static int optr_sysctl_rmem_min;
/*
 * Never set by the module itself: having it makes sk_under_memory_pressure()
 * report the memory cgroup's socket pressure (set when reclaim in the
 * cgroup struggles), under which a socket takes no new pages.
 */
static unsigned long optr_memory_pressure;

void optr_mem_proto_init(struct proto *prot)
{
	prot->memory_allocated = &optr_memory_allocated;
	prot->per_cpu_fw_alloc = &optr_memory_per_cpu_fw_alloc;
	prot->memory_pressure = &optr_memory_pressure;
	prot->sysctl_mem = optr_sysctl_mem;
	prot->sysctl_rmem = &optr_sysctl_rmem_min;
	prot->sysctl_wmem = &optr_sysctl_rmem_min;
}

/*
 * Account @skb to @osk before holding it; false if it does not fit the
 * socket's receive buffer, the module's cap or the memory cgroup.
 */
bool optr_mem_charge(struct optr_sock *osk, const struct sk_buff *skb)
{
	long cap = (long)optr_tunable_get(&optr_mem_max_kb) >> (PAGE_SHIFT - 10);
	struct sock *sk = &osk->sk;
	int size = skb->truesize;
	bool ok = false;

	spin_lock_bh(&osk->mem_lock);
	if (atomic_read(&sk->sk_rmem_alloc) + size > READ_ONCE(sk->sk_rcvbuf))
		goto out;
	/* Per-CPU reserves make memory_allocated lag by up to about 1 MiB
	 * per CPU: the cap is that approximate, never more.
	 */
	if (size <= sk->sk_forward_alloc ||
	    (!sk_under_memory_pressure(sk) &&
	     atomic_long_read(&optr_memory_allocated) + sk_mem_pages(size) <=
	     cap && __sk_mem_schedule(sk, size, SK_MEM_RECV))) {
		sk_mem_charge(sk, size);
		atomic_add(size, &sk->sk_rmem_alloc);
		ok = true;
	}
out:
	spin_unlock_bh(&osk->mem_lock);
	return ok;
}

/* @skb, charged by optr_mem_charge(), left its queue. */
void optr_mem_uncharge(struct optr_sock *osk, const struct sk_buff *skb)
{
	struct sock *sk = &osk->sk;

	spin_lock_bh(&osk->mem_lock);
	atomic_sub(skb->truesize, &sk->sk_rmem_alloc);
	/* Gives whole pages back to the module and the cgroup. */
	sk_mem_uncharge(sk, skb->truesize);
	spin_unlock_bh(&osk->mem_lock);
}

/* The socket closed and its queues are empty: return the last pages. */
void optr_mem_release(struct optr_sock *osk)
{
	struct sock *sk = &osk->sk;

	spin_lock_bh(&osk->mem_lock);
	WARN_ON_ONCE(atomic_read(&sk->sk_rmem_alloc));
	if (sk->sk_forward_alloc > 0)
		__sk_mem_reclaim(sk, sk->sk_forward_alloc);
	spin_unlock_bh(&osk->mem_lock);
}
