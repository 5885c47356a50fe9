/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_TXSRC_H
#define _OPTR_TXSRC_H

#include <linux/mm_types.h>
#include <linux/uio.h>

/* Pages of a batch's payload: 64 KiB at most, at any alignment. */
#define OPTR_TXSRC_PAGES	(DIV_ROUND_UP(65536, PAGE_SIZE) + 1)

/*
 * One batch's source bytes: the pages of the next stretch of the sender's
 * iterator, taken a stretch at a time. Lives on the stack of one sendmsg.
 */
struct optr_txsrc {
	struct iov_iter *iter;
	size_t want;		/* bytes of the batch not yet taken */
	size_t off;		/* of the next byte, from pages[0]'s start */
	size_t left;		/* bytes taken, not yet copied */
	unsigned int npages;
	bool held;		/* pages[] pinned or referenced by us */
	bool copy_iter;		/* the iterator gave no pages: copy from it */
	struct page *pages[OPTR_TXSRC_PAGES];
};

void optr_txsrc_init(struct optr_txsrc *s, struct iov_iter *iter, size_t len);
int optr_txsrc_copy(struct optr_txsrc *s, void *dst, size_t len);
void optr_txsrc_unread(struct optr_txsrc *s);
void optr_txsrc_release(struct optr_txsrc *s);

#endif /* _OPTR_TXSRC_H */
