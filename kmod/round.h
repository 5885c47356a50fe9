/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rounds: what a set of posts with one round id waits for, and when it
 * gives up.
 *
 * A round is opened by its first post and ends when every post completed
 * (the last one posted without OPTIREDUCE_POST_MORE), at its deadline
 * (set by that post, moved by OPTIREDUCE_CMSG_DEADLINE), by
 * the early timeout, by OPTIREDUCE_CMSG_CANCEL, or when the socket closes.
 * Ending it completes every post still pending and queues the completions
 * (completion.h). Posts themselves are post.h's.
 */
#ifndef _OPTR_ROUND_H
#define _OPTR_ROUND_H

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <uapi/linux/optireduce.h>

#include "wire.h"

struct optr_post;
struct optr_skb_walk;
struct optr_sock;

struct optr_round {
	struct hlist_node hnode;	/* osk->rounds while open */
	struct list_head node;		/* osk->dead_rounds once ended */
	struct list_head posts;		/* pending posts */
	struct optr_sock *osk;
	struct hrtimer timer;
	u32 id;
	u32 pending;			/* posts not yet complete */
	u32 last_pending;		/* posts whose sender may still send */
	u32 silent;			/* ... of which nothing came yet */
	bool sealed;			/* a post without POST_MORE came */
	bool early_armed;
	bool ended;
	ktime_t opened;
	ktime_t deadline;
	ktime_t last_rx;
	u64 idle_ns;			/* early timeout window; 0 = off */
	u64 typical_ns;			/* the window while a tail is unknown */
	u32 moved_on;			/* pending posts done by moving on */
	u64 posted_bytes;		/* all posts' lengths */
	u64 lost_bytes;			/* missing when their posts ended */
};

/* What the receive path stores in skb->cb for a backlogged fragment. */
struct optr_skb_cb {
	struct optr_frag f;
	u32 dataoff;
};

static inline struct optr_skb_cb *optr_skb_cb(struct sk_buff *skb)
{
	return (struct optr_skb_cb *)skb->cb;
}

int optr_post(struct optr_sock *osk, const struct optireduce_post *p,
	      struct iov_iter *iter);
int optr_cancel(struct optr_sock *osk, const struct optireduce_cancel *c);
int optr_retime(struct optr_sock *osk, const struct optireduce_deadline *d);
bool optr_deliver(struct optr_sock *osk, struct optr_skb_walk *w,
		  u32 dataoff, const struct optr_frag *f, ktime_t now,
		  struct optr_post **last);
void optr_round_end(struct optr_round *r, enum optireduce_status status);
void optr_rounds_release(struct optr_sock *osk);
void optr_rounds_reap(struct optr_sock *osk);

#endif /* _OPTR_ROUND_H */
