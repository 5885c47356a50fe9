// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a received skb front to back. A GSO batch is consumed datagram
 * by datagram, each header and then its payload, at rising offsets.
 * skb_copy_bits() and skb_header_pointer() find every piece from the
 * skb's start: two or three calls a datagram, each walking the frags
 * again, 5% of all samples in the transport benchmark's profile at MTU
 * 1500. The walk keeps its place (the linear head or a frag) between
 * reads, so each read starts where the last one ended. Reading behind
 * the place (a datagram delivered to a second local socket) starts over
 * from the head. An skb with a frag_list is left to skb_copy_bits().
 */

#include <linux/highmem.h>
#include <linux/minmax.h>

#include "skbwalk.h"

void optr_skb_walk_init(struct optr_skb_walk *w, struct sk_buff *skb)
{
	w->skb = skb;
	w->start = 0;
	w->len = skb_headlen(skb);
	w->i = -1;
	w->slow = skb_has_frag_list(skb);
}

/* @len bytes at offset @in of frag @f (which holds them) to @to. */
static void optr_frag_copy(void *to, const skb_frag_t *f, u32 in, u32 len)
{
	u32 pos = skb_frag_off(f) + in;

	while (len) {
		u32 poff = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - poff);

		memcpy_from_page(to, skb_frag_page(f) + (pos >> PAGE_SHIFT),
				 poff, n);
		to += n;
		pos += n;
		len -= n;
	}
}

/* Copy @len bytes at offset @off of the skb to @to: 0, or -EFAULT when
 * the skb is shorter.
 */
int optr_skb_walk_copy(struct optr_skb_walk *w, u32 off, void *to, u32 len)
{
	const struct skb_shared_info *sh = skb_shinfo(w->skb);

	if (len > w->skb->len || off > w->skb->len - len)
		return -EFAULT;
	if (w->slow)
		return skb_copy_bits(w->skb, off, to, len);
	if (off < w->start)
		optr_skb_walk_init(w, w->skb);
	while (len) {
		u32 in, n;

		while (off - w->start >= w->len) {
			/* Within skb->len, a next frag exists; unless the
			 * frags do not add up to it, which is not ours to
			 * trust blindly.
			 */
			if (w->i + 1 >= sh->nr_frags)
				return -EFAULT;
			w->start += w->len;
			w->i++;
			w->len = skb_frag_size(&sh->frags[w->i]);
		}
		in = off - w->start;
		n = min(len, w->len - in);
		if (w->i < 0)
			memcpy(to, w->skb->data + in, n);
		else
			optr_frag_copy(to, &sh->frags[w->i], in, n);
		to += n;
		off += n;
		len -= n;
	}
	return 0;
}
