// SPDX-License-Identifier: GPL-2.0
/*
 * Where the send path's bytes come from: the pages under the sender's
 * iterator, a batch at a time.
 *
 * A batch is cut into datagrams of the path MTU, each behind its own
 * header, so its payload lands in the send pages (txpool.c) in pieces of
 * about 1.4 KiB at MTU 1500. Copied straight from the iterator, every
 * piece is a usercopy call of its own: access checks, SMAP toggling and
 * the hardened-usercopy bounds check, which together cost the sender more
 * than a sixth of its CPU in a profile of 4 MiB messages. TCP copies 32
 * KiB a call and does not pay it. So the batch's user pages are taken
 * once (pinned, as for direct I/O) and every piece is a plain memcpy from
 * them. An iterator that gives no pages, or a fault while taking them,
 * falls back to copying from the iterator, which reports the fault.
 */

#include <linux/highmem.h>
#include <linux/minmax.h>

#include "compat.h"
#include "txsrc.h"

/* @len bytes of @iter are the batch's payload. */
void optr_txsrc_init(struct optr_txsrc *s, struct iov_iter *iter, size_t len)
{
	s->iter = iter;
	s->want = len;
	s->off = 0;
	s->left = 0;
	s->npages = 0;
	s->held = false;
	s->copy_iter = false;
}

void optr_txsrc_release(struct optr_txsrc *s)
{
	if (s->held && s->npages)
		optr_iter_put_pages(s->pages, s->npages);
	s->npages = 0;
	s->held = false;
	s->left = 0;
}

/*
 * The batch ends before its payload did (send.c, out of page fragments):
 * what was taken from the iterator but not copied goes back to it, for
 * the next batch.
 */
void optr_txsrc_unread(struct optr_txsrc *s)
{
	if (!s->copy_iter && s->left) {
		iov_iter_revert(s->iter, s->left);
		s->left = 0;
	}
}

/* The pages under the next stretch of the batch; false if none. */
static bool optr_txsrc_take(struct optr_txsrc *s)
{
	ssize_t got;
	size_t off;
	bool held;

	optr_txsrc_release(s);
	got = optr_iter_get_pages(s->iter, s->pages, s->want, OPTR_TXSRC_PAGES,
				  &off, &held);
	if (got <= 0)
		return false;
	s->want -= got;
	s->off = off;
	s->left = got;
	s->npages = DIV_ROUND_UP(off + got, PAGE_SIZE);
	s->held = held;
	return true;
}

/* The next @len bytes of the batch to @dst: 0, or -EFAULT. */
int optr_txsrc_copy(struct optr_txsrc *s, void *dst, size_t len)
{
	while (len) {
		struct page *page;
		size_t n, poff;

		if (!s->left && !s->copy_iter && !optr_txsrc_take(s))
			s->copy_iter = true;
		if (s->copy_iter) {
			return copy_from_iter(dst, len, s->iter) == len ?
			       0 : -EFAULT;
		}
		page = s->pages[s->off >> PAGE_SHIFT];
		poff = offset_in_page(s->off);
		n = min3(len, s->left, PAGE_SIZE - poff);
		memcpy_from_page(dst, page, poff, n);
		dst += n;
		len -= n;
		s->off += n;
		s->left -= n;
	}
	return 0;
}
