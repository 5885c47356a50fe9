// SPDX-License-Identifier: GPL-2.0
/*
 * Posted receive buffers: pinning the user's pages, copying a fragment's
 * bytes into them, unpinning, and the socket's post table.
 *
 * Locking
 *   optr_post_new() and optr_post_free() run in process context with no
 *   lock held: pinning and unpinning may sleep.
 *   optr_post_copy() runs under osk->lock (softirq or process context); it
 *   only maps pages that stay pinned while the post is in the table.
 *   The post table (osk->posts) is read and changed under osk->lock.
 */

#include <linux/err.h>
#include <linux/highmem.h>
#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "compat.h"
#include "post.h"
#include "skbwalk.h"
#include "sock.h"

static u32 optr_post_key(u32 round, u32 src, u32 msg)
{
	return jhash_3words(round, src, msg, 0);
}

struct optr_post *optr_post_find(struct optr_sock *osk, u32 round, u32 src,
				 u32 msg)
{
	struct optr_post *p;

	lockdep_assert_held(&osk->lock);
	hash_for_each_possible(osk->posts, p, hnode,
			       optr_post_key(round, src, msg))
		if (p->round_id == round && p->src == src && p->msg == msg)
			return p;
	return NULL;
}

void optr_post_hash(struct optr_sock *osk, struct optr_post *p)
{
	lockdep_assert_held(&osk->lock);
	hash_add(osk->posts, &p->hnode,
		 optr_post_key(p->round_id, p->src, p->msg));
}

void optr_post_unhash(struct optr_sock *osk, struct optr_post *p)
{
	lockdep_assert_held(&osk->lock);
	hash_del(&p->hnode);
}

/* Also frees a post that optr_post_new() left half made. */
void optr_post_free(struct optr_post *p)
{
	if (p->npages)
		unpin_user_pages_dirty_lock(p->pages, p->npages, true);
	mm_unaccount_pinned_pages(&p->mmp);
	kvfree(p->pages);
	optr_ranges_free(&p->got);
	kfree(p);
}

/* Copy @len bytes at @dataoff of @w's skb to offset @off of the posted
 * buffer.
 */
int optr_post_copy(struct optr_post *p, struct optr_skb_walk *w,
		   u32 dataoff, u32 off, u32 len)
{
	u64 pos = (u64)p->pgoff + off;

	while (len) {
		struct page *page = p->pages[pos >> PAGE_SHIFT];
		unsigned int poff = offset_in_page(pos);
		unsigned int n = min_t(u32, len, PAGE_SIZE - poff);
		void *addr = kmap_local_page(page);
		int err = optr_skb_walk_copy(w, dataoff, addr + poff, n);

		kunmap_local(addr);
		if (err)
			return err;
		flush_dcache_page(page);
		pos += n;
		dataoff += n;
		len -= n;
	}
	return 0;
}

/*
 * Pin the user buffer the iterator describes (one segment, writable).
 * Long-term: the pin lasts until userspace reads the post's completion,
 * so pages are first moved out of movable zones and CMA, and file
 * mappings that writeback could race with are refused. Pages a user
 * keeps pinned are memory it has locked: they count against its
 * RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, as MSG_ZEROCOPY's do
 * (optr_post_free() gives them back), so that an unprivileged user
 * cannot pin the machine's memory by posting and never reading.
 */
static int optr_post_pin(struct optr_post *p, struct iov_iter *iter)
{
	unsigned long uaddr = optr_iter_single_uaddr(iter);
	unsigned int npages;
	int pinned;

	if (!uaddr)
		return -EINVAL;
	if (mm_account_pinned_pages(&p->mmp, p->len))
		return -ENOMEM;
	p->pgoff = offset_in_page(uaddr);
	npages = DIV_ROUND_UP((u64)p->pgoff + p->len, PAGE_SIZE);
	p->pages = kvmalloc_array(npages, sizeof(*p->pages),
				  GFP_KERNEL_ACCOUNT);
	if (!p->pages)
		return -ENOMEM;
	pinned = pin_user_pages_fast(uaddr & PAGE_MASK, npages,
				     FOLL_WRITE | FOLL_LONGTERM, p->pages);
	if (pinned != npages) {
		if (pinned > 0)
			unpin_user_pages(p->pages, pinned);
		return pinned < 0 ? pinned : -EFAULT;
	}
	p->npages = npages;
	return 0;
}

/*
 * A post for @req over the buffer @iter describes, its pages pinned; not
 * yet in any table or round. The caller has checked @req.
 */
struct optr_post *optr_post_new(const struct optireduce_post *req,
				struct iov_iter *iter)
{
	struct optr_post *p;
	int err;

	might_sleep();
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->round_id = req->round;
	p->src = req->src;
	p->msg = req->msg;
	p->user_data = req->user_data;
	p->len = iov_iter_count(iter);
	err = optr_ranges_init(&p->got, 4, GFP_KERNEL);
	if (err)
		goto err_free;
	err = optr_post_pin(p, iter);
	if (err)
		goto err_free;
	return p;

err_free:
	optr_post_free(p);
	return ERR_PTR(err);
}
