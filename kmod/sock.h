/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A socket of the family and what hangs off it.
 *
 * Locking
 *   lock_sock(sk)     serialises OPTIREDUCE_JOIN against itself.
 *   osk->tx_lock      (mutex) one sender at a time: pacing state.
 *   osk->steer.lock   (spinlock, BH) the steering queue (steer.c); never
 *                     held with osk->lock.
 *   osk->lock         (spinlock, BH) rounds, posts, completions, backlog,
 *                     estimator, socket counters. Taken by the receive path
 *                     (softirq) and the round timers (softirq), so process
 *                     context takes it with spin_lock_bh().
 *   on->lock          (mutex, netns.h) outranks osk->lock, never the reverse.
 *
 * Lifetime
 *   The receive path finds a socket under RCU in its namespace's member
 *   table; SOCK_RCU_FREE keeps the memory valid until readers are done and
 *   osk->dead (set under osk->lock by release) turns them away.
 *   comm is set once by JOIN before the socket enters the member table and
 *   freed by the socket destructor.
 *   A round is freed only in process context after hrtimer_cancel() (see
 *   round.c), so a timer never runs on freed memory.
 */
#ifndef _OPTR_SOCK_H
#define _OPTR_SOCK_H

#include <linux/hashtable.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "estimate.h"
#include "stats.h"

struct optr_net;
struct optr_comm;
struct optireduce_estimate;

/* Pages of the send path's pool (txpool.c), 32 KiB each where possible. */
#define OPTR_TX_POOL	64

/*
 * Where one send's time went and what it sent, for its tracepoint
 * (optireduce_send): a send that took long either slept for its rate,
 * waited for datagrams already sent to leave the host, or neither.
 */
struct optr_tx_tally {
	u64 bytes;	/* payload bytes that left, every copy */
	u64 unsent;	/* fragments that did not (the timeout) */
	u64 paced;	/* batches that went through the pacer */
	u64 pace_ns;	/* asleep in the pacer */
	u64 late_ns;	/* ... of which past the time it was to wake */
	u64 behind_ns;	/* behind the rate by more than it caught up */
	u64 room_ns;	/* waiting for room in the UDP send buffer */
};

struct optr_sock {
	struct sock sk;		/* must stay first: sk_alloc() sizes by proto */
	struct optr_net *on;
	struct list_head net_node;	/* on->socks, under on->lock */

	struct optr_comm *comm;		/* NULL until joined */
	struct hlist_node member_node;	/* on->members, RCU */

	spinlock_t lock;		/* see "Locking" above */
	bool dead;
	DECLARE_HASHTABLE(rounds, 6);
	DECLARE_HASHTABLE(posts, 8);
	u32 nrounds;
	u32 newest_round;		/* valid once opened_any */
	bool opened_any;
	struct list_head completions;	/* ended posts, oldest first */
	u32 ncompl;
	struct list_head dead_rounds;	/* ended, timer maybe still armed */
	struct sk_buff_head backlog;	/* fragments waiting for a post */
	u32 backlog_bytes;
	/* mem.c: charges of backlog and steer queue; innermost, BH */
	spinlock_t mem_lock;
	struct optr_estimator est;
	u64 stats[OPTR_NSTATS];

	int rx_cpu;			/* steer.c: the reader's last CPU */
	struct sk_buff_head steer;	/* steer.c: batches for that CPU */
	u32 steer_bytes;		/* under steer.lock */
	bool steer_closed;		/* under steer.lock */
	bool steer_placing;		/* the work is placing batches */
	struct work_struct steer_work;

	struct mutex tx_lock;		/* one sender at a time */
	struct page_frag tx_frag;	/* under tx_lock: the page filling */
	struct page *tx_pool[OPTR_TX_POOL];	/* under tx_lock: txpool.c */
	unsigned int tx_pool_next;
	u32 pace_mbps;
	bool pace_set;
	u32 rate_start_mbps;		/* OPTIREDUCE_RATE_START_MBPS; 0: none */
	ktime_t next_tx;
	struct optr_tx_tally tx_tally;	/* under tx_lock: the send running */
};

static inline struct optr_sock *optr_sk(const struct sock *sk)
{
	return container_of(sk, struct optr_sock, sk);
}

/*
 * The uid that created the socket. Read from the sock itself, which
 * sock_init_data() gave its inode's owner (6.16 removed sock_i_uid()).
 */
static inline kuid_t optr_sock_uid(const struct optr_sock *osk)
{
	return READ_ONCE(osk->sk.sk_uid);
}

/*
 * Whether a reader that is @reader, with CAP_NET_ADMIN over the namespace
 * or not (@admin), sees the socket's communicator, rounds and counters:
 * its owner and an administrator do; anyone else sees that it exists and
 * whose it is, as for a TCP socket, and no more.
 */
static inline bool optr_sock_details_visible(const struct optr_sock *osk,
					     kuid_t reader, bool admin)
{
	return admin || uid_eq(reader, optr_sock_uid(osk));
}

/*
 * The socket's communicator, NULL until joined. JOIN publishes it with a
 * release store once it and the namespace's UDP socket are set up
 * (optr_member_add()); the socket's own calls, which may run on other
 * CPUs, load it with acquire and so see them whole.
 */
static inline struct optr_comm *optr_sock_comm(struct optr_sock *osk)
{
	/* Pairs with smp_store_release() in optr_member_add(). */
	return smp_load_acquire(&osk->comm);
}

/* sock.c; optr_sock_deadline_us() needs osk->lock held. */
u32 optr_sock_deadline_us(struct optr_sock *osk, u32 *typical_us);
void optr_sock_estimate(struct optr_sock *osk, struct optireduce_estimate *est);

#endif /* _OPTR_SOCK_H */
