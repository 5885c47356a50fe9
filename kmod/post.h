/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A posted receive buffer: its pinned pages, the bytes received into them,
 * and its place in the socket's post table (keyed by round, sender and
 * message). post.c owns the buffer (pin, copy in, unpin) and the table;
 * round.c owns what a post means to its round; completion.c hands an ended
 * post back to userspace.
 */
#ifndef _OPTR_POST_H
#define _OPTR_POST_H

#include <linux/list.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <uapi/linux/optireduce.h>

#include "ranges.h"

struct optr_round;
struct optr_skb_walk;
struct optr_sock;

struct optr_post {
	struct hlist_node hnode;	/* osk->posts until read by recvmsg */
	struct list_head node;		/* round->posts, then osk->completions */
	struct optr_round *round;	/* NULL once ended */
	u32 round_id;
	u32 src;
	u32 msg;
	u64 user_data;
	u32 len;
	unsigned int pgoff;		/* of the buffer in pages[0] */
	unsigned int npages;
	struct page **pages;		/* pinned while posted */
	struct mmpin mmp;		/* ... and charged to the poster */
	struct optr_ranges got;
	bool started;			/* a fragment was placed */
	bool last_seen;
	bool src_done;			/* last_seen, or the sender moved on */
	bool moved_on;			/* src_done without last_seen */
	bool done;
	u32 status;			/* enum optireduce_status, once done */
	u64 elapsed_ns;
};

struct optr_post *optr_post_new(const struct optireduce_post *req,
				struct iov_iter *iter);
void optr_post_free(struct optr_post *p);
int optr_post_copy(struct optr_post *p, struct optr_skb_walk *w,
		   u32 dataoff, u32 off, u32 len);
struct optr_post *optr_post_find(struct optr_sock *osk, u32 round, u32 src,
				 u32 msg);
void optr_post_hash(struct optr_sock *osk, struct optr_post *p);
void optr_post_unhash(struct optr_sock *osk, struct optr_post *p);

#endif /* _OPTR_POST_H */
