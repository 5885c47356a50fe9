// SPDX-License-Identifier: GPL-2.0
/*
 * Rounds, the early-arrival backlog and source tracking: opening a round
 * with its first post, placing each fragment into its post, holding
 * fragments that came before their post, noting which senders moved on,
 * and ending rounds. Posts' buffers are post.c's, the completion queue
 * completion.c's, the round timer timers.c's.
 *
 * Data path: a fragment is copied once, from the skb into the pinned pages
 * of the buffer userspace posted, under the socket's lock in softirq
 * context. Nothing waits in kernel memory for a reader except fragments
 * that came before their post (the backlog, bounded by backlog_kb).
 *
 * Locking: rounds, the backlog, the sources seen and every round's and
 * post's counters are osk->lock's. A round ends in softirq context (last
 * byte, timer) or process context (cancel, close). Ending moves it to
 * osk->dead_rounds, where its timer may still be armed; it is freed only
 * in process context after hrtimer_cancel() (optr_rounds_reap), so the
 * timer never sees freed memory. Ended posts wait on osk->completions,
 * pages still pinned, until recvmsg hands them out: unpinning may sleep,
 * so it happens there.
 */

#include <linux/err.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "comm.h"
#include "completion.h"
#include "mem.h"
#include "netlink.h"
#include "netns.h"
#include "params.h"
#include "post.h"
#include "rate.h"
#include "round.h"
#include "skbwalk.h"
#include "sock.h"
#include "stats.h"
#include "timers.h"
#include "trace.h"

/* Serial number arithmetic (RFC 1982) on round ids. */
static bool optr_round_after(u32 a, u32 b)
{
	return (s32)(a - b) > 0;
}

static struct optr_round *optr_round_find(struct optr_sock *osk, u32 id)
{
	struct optr_round *r;

	lockdep_assert_held(&osk->lock);
	hash_for_each_possible(osk->rounds, r, hnode, id)
		if (r->id == id)
			return r;
	return NULL;
}

static void optr_post_end(struct optr_sock *osk, struct optr_post *p,
			  enum optireduce_status status, ktime_t now)
{
	struct optr_round *r = p->round;

	lockdep_assert_held(&osk->lock);
	p->done = true;
	p->status = status;
	p->elapsed_ns = ktime_to_ns(ktime_sub(now, r->opened));
	optr_completion_queue(osk, p);
	r->pending--;
	if (!p->src_done) {
		r->last_pending--;
		if (!p->started)
			r->silent--;
	}
	if (p->moved_on)
		r->moved_on--;
	p->round = NULL;
	if (status != OPTIREDUCE_CANCELLED)
		optr_rate_msg_end(osk, p->src, &p->got);
	if (p->got.covered < p->len) {
		optr_stat_sock(osk, OPTR_STAT_BYTES_LOST,
			       p->len - p->got.covered);
		r->lost_bytes += p->len - p->got.covered;
	}
}

/* Netlink events of a round that ended with bytes missing. */
static void optr_round_events(struct optr_round *r,
			      enum optireduce_status status)
{
	u32 ppm = optr_tunable_get(&optr_loss_alarm_ppm);

	if (!r->lost_bytes || status == OPTIREDUCE_CANCELLED)
		return;
	if (status == OPTIREDUCE_EXPIRED)
		optr_nl_round_event(r->osk, OPTIREDUCE_CMD_EVENT_ROUND_EXPIRED,
				    r->id, r->lost_bytes, r->posted_bytes);
	if (ppm && r->lost_bytes * 1000000 > (u64)ppm * r->posted_bytes)
		optr_nl_round_event(r->osk, OPTIREDUCE_CMD_EVENT_LOSS_ALARM,
				    r->id, r->lost_bytes, r->posted_bytes);
}

/*
 * End a round: every pending post completes with @status, the round leaves
 * the lookup table, and its duration becomes a sample of the estimator
 * (an expired round counts as its deadline, so estimates can grow).
 */
void optr_round_end(struct optr_round *r, enum optireduce_status status)
{
	struct optr_sock *osk = r->osk;
	struct optr_post *p, *tmp;
	ktime_t now = ktime_get(), end = now;
	enum optr_stat stat;

	lockdep_assert_held(&osk->lock);
	list_for_each_entry_safe(p, tmp, &r->posts, node)
		optr_post_end(osk, p, status, now);
	r->ended = true;
	hash_del(&r->hnode);
	osk->nrounds--;
	list_add_tail(&r->node, &osk->dead_rounds);

	switch (status) {
	case OPTIREDUCE_COMPLETE:
		stat = OPTR_STAT_ROUNDS_COMPLETED;
		break;
	case OPTIREDUCE_EXPIRED:
		stat = OPTR_STAT_ROUNDS_EXPIRED;
		end = r->deadline;
		break;
	case OPTIREDUCE_EARLY:
		stat = OPTR_STAT_ROUNDS_EARLY;
		end = r->last_rx;
		break;
	default:
		stat = OPTR_STAT_ROUNDS_CANCELLED;
		break;
	}
	optr_stat_sock(osk, stat, 1);
	if (status != OPTIREDUCE_CANCELLED) {
		u64 us = ktime_to_us(ktime_sub(end, r->opened));

		optr_est_add(&osk->est, min_t(u64, max_t(u64, us, 1), U32_MAX));
	}
	trace_optireduce_round_end(osk->comm->id, osk->comm->rank, r->id,
				   status,
				   ktime_to_us(ktime_sub(now, r->opened)));
	optr_round_events(r, status);
}

/*
 * Place one fragment into its post; @now is when it arrived (one reading
 * serves a run of datagrams, taken under the lock, so never before the
 * round opened). Returns true when that queued a completion (the caller
 * wakes the reader after dropping the lock).
 */
static bool optr_place(struct optr_sock *osk, struct optr_post *p,
		       struct optr_skb_walk *w, u32 dataoff,
		       const struct optr_frag *f, ktime_t now)
{
	struct optr_round *r = p->round;
	long added;

	lockdep_assert_held(&osk->lock);
	if (p->done) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_STALE_ROUND, f);
		return false;
	}
	if (f->total != p->len) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_OUT_OF_BOUNDS, f);
		return false;
	}
	/* Copy before recording: bytes are only ever reported received once
	 * they are in the buffer.
	 */
	if (optr_post_copy(p, w, dataoff, f->offset, f->len)) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_MALFORMED, f);
		return false;
	}
	added = optr_ranges_add(&p->got, f->offset, f->offset + f->len,
				GFP_ATOMIC);
	if (added < 0) {
		/* Out of memory, or of spans (ranges.h): the bytes may be
		 * in the buffer, but they count as missing.
		 */
		optr_drop(osk->on, osk, OPTR_STAT_DROP_NOMEM, f);
		return false;
	}
	r->last_rx = now;
	if (!added) {
		optr_stat_sock(osk, OPTR_STAT_RX_DUPLICATE, 1);
		return false;
	}
	optr_stat_sock(osk, OPTR_STAT_RX_PACKETS, 1);
	optr_stat_sock(osk, OPTR_STAT_RX_BYTES, added);
	if (!p->started) {
		p->started = true;
		if (!p->src_done)
			r->silent--;
	}
	if ((f->flags & OPTR_WIRE_LAST) && !p->last_seen) {
		p->last_seen = true;
		if (p->moved_on) {
			p->moved_on = false;
			r->moved_on--;
		} else {
			p->src_done = true;
			r->last_pending--;
		}
		/* Every tail known now: the window is back to its short self. */
		if (!r->moved_on && !r->last_pending)
			optr_round_early_rearm(r);
	}
	if (p->got.covered == p->len) {
		optr_post_end(osk, p, OPTIREDUCE_COMPLETE, r->last_rx);
		if (!r->pending && r->sealed)
			optr_round_end(r, OPTIREDUCE_COMPLETE);
		return true;
	}
	optr_round_maybe_arm_early(r);
	return false;
}

static void optr_backlog_unlink(struct optr_sock *osk, struct sk_buff *skb)
{
	__skb_unlink(skb, &osk->backlog);
	osk->backlog_bytes -= skb->truesize;
	optr_mem_uncharge(osk, skb);
}

/*
 * Hand held fragments to a new post @p (may be NULL), and drop those that
 * can no longer be placed: their round went stale, or it is sealed and has
 * no post for them. Returns true if a completion was queued.
 */
static bool optr_backlog_drain(struct optr_sock *osk, struct optr_post *p)
{
	struct sk_buff *skb, *tmp;
	ktime_t now = ktime_get();
	bool woke = false;

	lockdep_assert_held(&osk->lock);
	skb_queue_walk_safe(&osk->backlog, skb, tmp) {
		struct optr_skb_cb *cb = optr_skb_cb(skb);
		const struct optr_frag *f = &cb->f;
		struct optr_round *r;

		if (p && f->round == p->round_id && f->src == p->src &&
		    f->msg == p->msg) {
			struct optr_skb_walk w;

			optr_backlog_unlink(osk, skb);
			optr_skb_walk_init(&w, skb);
			woke |= optr_place(osk, p, &w, cb->dataoff, f, now);
			consume_skb(skb);
			continue;
		}
		r = optr_round_find(osk, f->round);
		if (!r && !optr_round_after(f->round, osk->newest_round)) {
			optr_backlog_unlink(osk, skb);
			optr_drop(osk->on, osk, OPTR_STAT_DROP_STALE_ROUND, f);
			kfree_skb(skb);
		} else if (r && r->sealed &&
			   !optr_post_find(osk, f->round, f->src, f->msg)) {
			optr_backlog_unlink(osk, skb);
			optr_drop(osk->on, osk, OPTR_STAT_DROP_NO_POST, f);
			kfree_skb(skb);
		}
	}
	return woke;
}

/*
 * What the backlog keeps of one fragment at *@dataoff: a clone of a single
 * datagram, but a copy of the fragment's @len bytes out of a GSO batch,
 * whose clone would hold (and be charged for) the whole batch.
 */
static struct sk_buff *optr_backlog_hold(struct optr_skb_walk *w,
					 u32 *dataoff, u32 len)
{
	struct sk_buff *held;

	/* A failure is counted (drop_nomem), not logged: packets cause it. */
	if (!skb_is_gso(w->skb))
		return skb_clone(w->skb, GFP_ATOMIC | __GFP_NOWARN);
	held = alloc_skb(len, GFP_ATOMIC | __GFP_NOWARN);
	if (!held)
		return NULL;
	if (optr_skb_walk_copy(w, *dataoff, skb_put(held, len), len)) {
		kfree_skb(held);
		return NULL;
	}
	*dataoff = 0;
	return held;
}

/* Has rank src sent us a fragment of a round after round? */
static bool optr_src_moved_on(struct optr_sock *osk, u32 src, u32 round)
{
	const struct optr_src_seen *s = &osk->comm->seen[src];

	lockdep_assert_held(&osk->lock);
	return s->valid && optr_round_after(s->round, round);
}

/*
 * A sender sends its rounds in order: once a fragment of a later round
 * comes from it, it has sent all it will of every earlier round (what is
 * missing of those is lost, and its LAST fragment may be what was lost).
 * Its posts in earlier rounds then count as if their last fragment had
 * come, so the early timeout can end those rounds instead of their
 * deadline, though only after a whole typical round of quiet (see
 * optr_round_idle_ns()): a path that reorders may still deliver the rest.
 * Done once per sender and round, not per fragment.
 */
static void optr_note_source(struct optr_sock *osk, const struct optr_frag *f)
{
	struct optr_src_seen *s = &osk->comm->seen[f->src];
	struct optr_round *r;
	struct optr_post *p;
	int bkt;

	lockdep_assert_held(&osk->lock);
	if (s->valid && !optr_round_after(f->round, s->round))
		return;
	s->round = f->round;
	s->valid = 1;
	hash_for_each(osk->rounds, bkt, r, hnode) {
		bool changed = false;

		if (r->ended || !optr_round_after(f->round, r->id))
			continue;
		list_for_each_entry(p, &r->posts, node) {
			if (p->src != f->src || p->src_done)
				continue;
			p->src_done = true;
			p->moved_on = true;
			r->last_pending--;
			if (!p->started)
				r->silent--;
			r->moved_on++;
			changed = true;
		}
		if (changed)
			optr_round_maybe_arm_early(r);
	}
}

/*
 * The receive path's entry, socket lock held: place the fragment, or hold
 * it for a post that has not come yet, or drop it. @now: see optr_place.
 * Returns true when a completion was queued.
 *
 * *@last is the post the previous fragment went to, or NULL; on return,
 * the post this one went to if it is still open. The datagrams of a batch
 * mostly continue one message, and the caller holds the lock from one to
 * the next, so the post cannot end or go away in between: the lookup and
 * the sender's bookkeeping (done for that round and sender already) are
 * skipped.
 */
bool optr_deliver(struct optr_sock *osk, struct optr_skb_walk *w,
		  u32 dataoff, const struct optr_frag *f, ktime_t now,
		  struct optr_post **last)
{
	struct optr_post *p = *last;
	struct optr_round *r;
	struct sk_buff *clone;
	bool woke;
	u32 limit;

	lockdep_assert_held(&osk->lock);
	*last = NULL;
	if (!p || p->round_id != f->round || p->src != f->src ||
	    p->msg != f->msg) {
		optr_note_source(osk, f);
		p = optr_post_find(osk, f->round, f->src, f->msg);
	}
	if (p) {
		woke = optr_place(osk, p, w, dataoff, f, now);
		if (!p->done)
			*last = p;
		return woke;
	}

	r = optr_round_find(osk, f->round);
	if (r && r->sealed) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_NO_POST, f);
		return false;
	}
	if (!r && osk->opened_any &&
	    !optr_round_after(f->round, osk->newest_round)) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_STALE_ROUND, f);
		return false;
	}

	/* A peer is ahead of us: keep the fragment until the post. */
	limit = optr_tunable_get(&optr_backlog_kb) * 1024;
	clone = optr_backlog_hold(w, &dataoff, f->len);
	if (!clone) {
		optr_drop(osk->on, osk, OPTR_STAT_DROP_NOMEM, f);
		return false;
	}
	if (osk->backlog_bytes + clone->truesize > limit) {
		kfree_skb(clone);
		optr_drop(osk->on, osk, OPTR_STAT_DROP_NO_POST, f);
		return false;
	}
	if (!optr_mem_charge(osk, clone)) {
		kfree_skb(clone);
		optr_drop(osk->on, osk, OPTR_STAT_DROP_MEM_LIMIT, f);
		return false;
	}
	optr_skb_cb(clone)->f = *f;
	optr_skb_cb(clone)->dataoff = dataoff;
	__skb_queue_tail(&osk->backlog, clone);
	osk->backlog_bytes += clone->truesize;
	optr_stat_sock(osk, OPTR_STAT_BACKLOG_QUEUED, 1);
	return false;
}

static void optr_round_open(struct optr_sock *osk, struct optr_round *r,
			    u32 id, u32 deadline_us, u32 early_us)
{
	u32 typical = U32_MAX, d = 0;

	lockdep_assert_held(&osk->lock);
	/* The socket's history fills in only what the caller left out:
	 * reading it sorts up to 64 durations, here under the lock, and the
	 * library gives both on every round.
	 */
	if (!deadline_us || !early_us)
		d = optr_sock_deadline_us(osk, &typical);
	if (deadline_us) {
		d = deadline_us;
		typical = min(typical, d);
	}
	/* The caller knows its rounds better than this socket's history. */
	if (early_us)
		typical = min(early_us, d);
	INIT_LIST_HEAD(&r->posts);
	r->osk = osk;
	r->id = id;
	r->opened = ktime_get();
	r->deadline = ktime_add_us(r->opened, d);
	r->last_rx = r->opened;
	/* The idle window scales with the typical round, but never below
	 * the same share of the deadline floor: a round of a few hundred
	 * microseconds must not end on a scheduling hiccup.
	 */
	typical = max(typical, optr_tunable_get(&optr_deadline_min_us));
	r->idle_ns = div_u64((u64)typical * NSEC_PER_USEC *
			     optr_tunable_get(&optr_early_idle_pct), 100);
	r->typical_ns = (u64)typical * NSEC_PER_USEC;
	optr_round_timer_init(r);
	hash_add(osk->rounds, &r->hnode, id);
	osk->nrounds++;
	osk->newest_round = id;
	osk->opened_any = true;
	optr_stat_sock(osk, OPTR_STAT_ROUNDS_OPENED, 1);
	trace_optireduce_round_open(osk->comm->id, osk->comm->rank, id, d,
				    typical);
	optr_round_timer_arm(r, r->deadline);
}

int optr_post(struct optr_sock *osk, const struct optireduce_post *req,
	      struct iov_iter *iter)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_round *fresh = NULL, *r;
	struct optr_post *p;
	size_t len = iov_iter_count(iter);
	bool woke;
	int err;

	if (!comm)
		return -ENOTCONN;
	if ((req->flags & ~OPTIREDUCE_POST_MORE) ||
	    req->src >= comm->nranks || req->src == comm->rank ||
	    req->deadline_us > OPTR_DEADLINE_LIMIT_US ||
	    req->early_us > OPTR_DEADLINE_LIMIT_US || !len)
		return -EINVAL;
	if (len > OPTIREDUCE_MAX_MSG)
		return -EMSGSIZE;

	p = optr_post_new(req, iter);
	if (IS_ERR(p))
		return PTR_ERR(p);
	/* Allocated ahead: opening a round happens under the spinlock. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh) {
		err = -ENOMEM;
		goto err_free;
	}

	optr_rounds_reap(osk);
	spin_lock_bh(&osk->lock);
	r = optr_round_find(osk, req->round);
	if (!r) {
		if (osk->opened_any &&
		    !optr_round_after(req->round, osk->newest_round)) {
			err = -ESTALE;
			goto err_unlock;
		}
		if (osk->nrounds >= optr_tunable_get(&optr_max_rounds)) {
			err = -ENOBUFS;
			goto err_unlock;
		}
		r = fresh;
		fresh = NULL;
		optr_round_open(osk, r, req->round, req->deadline_us,
				req->early_us);
	} else if (r->sealed) {
		err = -EINVAL;
		goto err_unlock;
	} else if (optr_post_find(osk, req->round, req->src, req->msg)) {
		err = -EEXIST;
		goto err_unlock;
	}

	optr_post_hash(osk, p);
	list_add_tail(&p->node, &r->posts);
	p->round = r;
	r->posted_bytes += p->len;
	r->pending++;
	/* Its sender may have moved on already (optr_note_source()). */
	p->src_done = optr_src_moved_on(osk, p->src, p->round_id);
	p->moved_on = p->src_done;
	if (p->moved_on) {
		r->moved_on++;
	} else {
		r->last_pending++;
		r->silent++;
	}
	if (!(req->flags & OPTIREDUCE_POST_MORE))
		r->sealed = true;
	woke = optr_backlog_drain(osk, p);
	if (!r->ended)
		optr_round_maybe_arm_early(r);
	spin_unlock_bh(&osk->lock);

	kfree(fresh);
	if (woke)
		osk->sk.sk_data_ready(&osk->sk);
	return 0;

err_unlock:
	spin_unlock_bh(&osk->lock);
err_free:
	kfree(fresh);
	optr_post_free(p);
	return err;
}

int optr_cancel(struct optr_sock *osk, const struct optireduce_cancel *c)
{
	struct optr_round *r;

	if (c->reserved)
		return -EINVAL;
	if (!optr_sock_comm(osk))
		return -ENOTCONN;
	spin_lock_bh(&osk->lock);
	r = optr_round_find(osk, c->round);
	if (r) {
		optr_round_end(r, OPTIREDUCE_CANCELLED);
		optr_backlog_drain(osk, NULL);
	}
	spin_unlock_bh(&osk->lock);
	if (!r)
		return -ENOENT;
	osk->sk.sk_data_ready(&osk->sk);
	return 0;
}

/*
 * A new deadline for an open round, from now. The library opens a round
 * before it knows when its senders start (a rank still computing starts
 * late, through no fault of the network) and moves the deadline once they
 * have. An armed early timeout keeps its idle window; the timer is re-armed
 * for whichever comes first.
 */
int optr_retime(struct optr_sock *osk, const struct optireduce_deadline *d)
{
	struct optr_round *r;

	if (!d->deadline_us || d->deadline_us > OPTR_DEADLINE_LIMIT_US)
		return -EINVAL;
	if (!optr_sock_comm(osk))
		return -ENOTCONN;
	spin_lock_bh(&osk->lock);
	r = optr_round_find(osk, d->round);
	if (r) {
		r->deadline = ktime_add_us(ktime_get(), d->deadline_us);
		if (r->early_armed)
			optr_round_early_rearm(r);
		else
			optr_round_timer_arm(r, r->deadline);
	}
	spin_unlock_bh(&osk->lock);
	return r ? 0 : -ENOENT;
}

/* Free ended rounds; process context, no lock held. */
void optr_rounds_reap(struct optr_sock *osk)
{
	struct optr_round *r, *tmp;
	LIST_HEAD(dead);

	might_sleep();
	spin_lock_bh(&osk->lock);
	list_splice_init(&osk->dead_rounds, &dead);
	spin_unlock_bh(&osk->lock);
	list_for_each_entry_safe(r, tmp, &dead, node) {
		hrtimer_cancel(&r->timer);
		kfree(r);
	}
}

/* The socket is closing: end every round, free every post and fragment. */
void optr_rounds_release(struct optr_sock *osk)
{
	struct optr_round *r;
	struct optr_post *p, *ptmp;
	struct hlist_node *tmp;
	struct sk_buff *skb;
	LIST_HEAD(posts);
	int bkt;

	spin_lock_bh(&osk->lock);
	osk->dead = true;
	hash_for_each_safe(osk->rounds, bkt, tmp, r, hnode)
		optr_round_end(r, OPTIREDUCE_CANCELLED);
	optr_completions_take(osk, &posts);
	while ((skb = skb_peek(&osk->backlog))) {
		optr_backlog_unlink(osk, skb);
		kfree_skb(skb);
	}
	spin_unlock_bh(&osk->lock);

	optr_rounds_reap(osk);
	list_for_each_entry_safe(p, ptmp, &posts, node)
		optr_post_free(p);
}
