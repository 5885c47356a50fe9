// SPDX-License-Identifier: GPL-2.0
/*
 * The pages the send path copies into: a small pool per socket.
 *
 * A batch's headers and payload are written into 32 KiB pages (send.c),
 * and the skbs that carry them hold page references until the receiver
 * has placed them. A single page-fragment cache, as skb_page_frag_refill()
 * keeps, can reuse its page only when every skb of it is gone; while a
 * receiver still holds the last few batches (always, for a steady sender)
 * it allocates a fresh page instead, and with init_on_alloc (Debian's
 * default) zeroes it first: a write of every byte sent, on the sender's
 * CPU, on top of the copy itself. The pool keeps up to OPTR_TX_POOL pages
 * and refills from the first one no skb refers to any more (its reference
 * count back to the pool's own), so a steady sender cycles through the
 * same pages and allocates nothing. When every pool page is still in use,
 * the oldest slot gets a fresh page and skbs keep the old one alive.
 *
 * The pool holds one reference per page; tx_frag.page points at the pool
 * page being filled and holds none of its own. Everything is under
 * osk->tx_lock; the pool is freed with the socket.
 */

#include <linux/gfp.h>
#include <linux/mm.h>
#include <net/sock.h>

#include "sock.h"
#include "txpool.h"

static struct page *optr_txpool_alloc(void)
{
	struct page *page;

	/* As skb_page_frag_refill(): a compound page if it comes cheap,
	 * else a single one.
	 */
	page = alloc_pages(GFP_KERNEL | __GFP_COMP | __GFP_NOWARN |
			   __GFP_NORETRY, SKB_FRAG_PAGE_ORDER);
	return page ?: alloc_page(GFP_KERNEL);
}

/*
 * Make room for @sz contiguous bytes in osk->tx_frag, if any page can hold
 * them (a single page may not: the caller copes with less).
 */
bool optr_txpool_refill(struct optr_sock *osk, unsigned int sz)
{
	struct page_frag *pf = &osk->tx_frag;
	unsigned int i, k, empty = OPTR_TX_POOL;
	struct page *page;

	lockdep_assert_held(&osk->tx_lock);
	if (pf->page && pf->offset + sz <= pf->size)
		return true;

	/* Oldest first: the page filled longest ago is likeliest free. */
	for (i = 0; i < OPTR_TX_POOL; i++) {
		k = (osk->tx_pool_next + i) % OPTR_TX_POOL;
		page = osk->tx_pool[k];
		if (!page) {
			if (empty == OPTR_TX_POOL)
				empty = k;
		} else if (page_ref_count(page) == 1) {
			goto use;
		}
	}
	if (empty == OPTR_TX_POOL) {
		k = osk->tx_pool_next;
		put_page(osk->tx_pool[k]);
		osk->tx_pool[k] = NULL;
		pf->page = NULL;
	} else {
		k = empty;
	}
	page = optr_txpool_alloc();
	if (!page)
		return false;
	osk->tx_pool[k] = page;
use:
	pf->page = page;
	pf->offset = 0;
	pf->size = page_size(page);
	osk->tx_pool_next = (k + 1) % OPTR_TX_POOL;
	return true;
}

void optr_txpool_free(struct optr_sock *osk)
{
	unsigned int i;

	for (i = 0; i < OPTR_TX_POOL; i++)
		if (osk->tx_pool[i])
			put_page(osk->tx_pool[i]);
	osk->tx_frag.page = NULL;
}
