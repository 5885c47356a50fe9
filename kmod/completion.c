// SPDX-License-Identifier: GPL-2.0
/*
 * Completions: the queue of ended posts (osk->completions, counted by
 * osk->ncompl) and recvmsg, which hands each one out as a completion
 * record followed by the ranges still missing, then frees the post.
 *
 * Locking
 *   The queue is changed under osk->lock: posts are queued by whoever
 *   ends them (round.c, softirq or process context). osk->ncompl is also
 *   read without the lock (poll, the reader's wait), so it is written with
 *   WRITE_ONCE().
 *   recvmsg runs in process context: it takes a post off the queue under
 *   the lock, copies it to the user without the lock (the copy may fault),
 *   and unpins its pages after (that may sleep).
 */

#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/wait.h>
#include <net/sock.h>
#include <uapi/linux/optireduce.h>

#include "completion.h"
#include "post.h"
#include "round.h"
#include "sock.h"

/* An ended post joins the queue's tail. */
void optr_completion_queue(struct optr_sock *osk, struct optr_post *p)
{
	lockdep_assert_held(&osk->lock);
	list_move_tail(&p->node, &osk->completions);
	WRITE_ONCE(osk->ncompl, osk->ncompl + 1);
}

/* The socket is closing: every queued post moves to @posts, to be freed. */
void optr_completions_take(struct optr_sock *osk, struct list_head *posts)
{
	struct optr_post *p;

	lockdep_assert_held(&osk->lock);
	list_splice_init(&osk->completions, posts);
	osk->ncompl = 0;
	list_for_each_entry(p, posts, node)
		optr_post_unhash(osk, p);
}

/* Copy one ended post out as a completion record with @nr ranges. */
static int optr_completion_copy(struct optr_post *p, u32 nmissing, u32 nr,
				struct msghdr *msg)
{
	struct optireduce_completion c = {
		.rec_len = sizeof(c) + nr * sizeof(struct optireduce_range),
		.status = p->status,
		.round = p->round_id,
		.msg = p->msg,
		.src = p->src,
		.flags = (p->last_seen ? OPTIREDUCE_COMPL_LAST_SEEN : 0) |
			 (p->moved_on ? OPTIREDUCE_COMPL_MOVED_ON : 0) |
			 (p->status == OPTIREDUCE_EARLY && !p->src_done ?
			  OPTIREDUCE_COMPL_STALLED : 0) |
			 (nr < nmissing ? OPTIREDUCE_COMPL_TRUNC : 0),
		.user_data = p->user_data,
		.len = p->len,
		.received = p->got.covered,
		.nmissing = nmissing,
		.nranges = nr,
		.elapsed_ns = p->elapsed_ns,
	};
	struct optireduce_range *ranges = NULL;
	int err = 0;

	if (nr) {
		ranges = kvmalloc_array(nr, sizeof(*ranges), GFP_KERNEL);
		if (!ranges)
			return -ENOMEM;
		optr_ranges_missing(&p->got, p->len, ranges, nr);
	}
	if (copy_to_iter(&c, sizeof(c), &msg->msg_iter) != sizeof(c) ||
	    (nr && copy_to_iter(ranges, nr * sizeof(*ranges), &msg->msg_iter) !=
		   nr * sizeof(*ranges)))
		err = -EFAULT;
	kvfree(ranges);
	return err;
}

static int optr_wait_completion(struct optr_sock *osk, long *timeo)
{
	long t;

	if (READ_ONCE(osk->ncompl))
		return 0;
	if (!*timeo)
		return -EAGAIN;
	t = wait_event_interruptible_timeout(*sk_sleep(&osk->sk),
					     READ_ONCE(osk->ncompl), *timeo);
	if (t < 0)
		return sock_intr_errno(*timeo);
	if (!t)
		return -EAGAIN;
	*timeo = t;
	return 0;
}

/*
 * recvmsg: as many whole completion records as fit; the first one is
 * truncated to fit rather than never delivered.
 */
int optr_recv_completions(struct optr_sock *osk, struct msghdr *msg,
			  int flags)
{
	long timeo = sock_rcvtimeo(&osk->sk, flags & MSG_DONTWAIT);
	size_t copied = 0;
	int err;

	if (flags & (MSG_OOB | MSG_PEEK | MSG_ERRQUEUE))
		return -EOPNOTSUPP;
	if (msg_data_left(msg) < sizeof(struct optireduce_completion))
		return -EINVAL;

	/* Process context: free what ended since the last call. */
	optr_rounds_reap(osk);
	err = optr_wait_completion(osk, &timeo);
	if (err)
		return err;

	for (;;) {
		size_t room = msg_data_left(msg), need;
		struct optr_post *p;
		u32 nmissing, nr;

		spin_lock_bh(&osk->lock);
		p = list_first_entry_or_null(&osk->completions,
					     struct optr_post, node);
		if (!p) {
			spin_unlock_bh(&osk->lock);
			break;
		}
		nmissing = optr_ranges_missing(&p->got, p->len, NULL, 0);
		need = sizeof(struct optireduce_completion) +
		       (size_t)nmissing * sizeof(struct optireduce_range);
		if (need > room && copied) {
			spin_unlock_bh(&osk->lock);
			break;
		}
		nr = need > room ? (room - sizeof(struct optireduce_completion)) /
				   sizeof(struct optireduce_range) : nmissing;
		/* Off the queue, so no other reader takes it; still hashed
		 * while it is copied, so no new post takes its key (a done
		 * post is not written to: optr_place()).
		 */
		list_del(&p->node);
		WRITE_ONCE(osk->ncompl, osk->ncompl - 1);
		spin_unlock_bh(&osk->lock);

		err = optr_completion_copy(p, nmissing, nr, msg);
		spin_lock_bh(&osk->lock);
		if (err) {
			/* Keep it for the next call rather than lose it. */
			list_add(&p->node, &osk->completions);
			WRITE_ONCE(osk->ncompl, osk->ncompl + 1);
			spin_unlock_bh(&osk->lock);
			break;
		}
		optr_post_unhash(osk, p);
		spin_unlock_bh(&osk->lock);
		copied += sizeof(struct optireduce_completion) +
			  nr * sizeof(struct optireduce_range);
		optr_post_free(p);
		if (nr < nmissing) {
			msg->msg_flags |= MSG_TRUNC;
			break;
		}
	}
	if (copied)
		return copied;
	/* Another reader took what woke us. */
	return err ? err : -EAGAIN;
}
