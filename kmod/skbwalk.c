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
 * The datagram tag's check (auth.c) reads the same way, without copying.
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

/*
 * Move @w to the piece that holds offset @off (which the caller checked
 * is inside the skb): 0, or -EFAULT when the frags do not add up to the
 * skb's length, which is not ours to trust blindly.
 */
static int optr_skb_walk_seek(struct optr_skb_walk *w, u32 off)
{
	const struct skb_shared_info *sh = skb_shinfo(w->skb);

	if (off < w->start)
		optr_skb_walk_init(w, w->skb);
	while (off - w->start >= w->len) {
		if (w->i + 1 >= sh->nr_frags)
			return -EFAULT;
		w->start += w->len;
		w->i++;
		w->len = skb_frag_size(&sh->frags[w->i]);
	}
	return 0;
}

static bool optr_skb_walk_fits(const struct optr_skb_walk *w, u32 off,
			       u32 len)
{
	return len <= w->skb->len && off <= w->skb->len - len;
}

/* Copy @len bytes at offset @off of the skb to @to: 0, or -EFAULT when
 * the skb is shorter.
 */
int optr_skb_walk_copy(struct optr_skb_walk *w, u32 off, void *to, u32 len)
{
	const struct skb_shared_info *sh = skb_shinfo(w->skb);

	if (!optr_skb_walk_fits(w, off, len))
		return -EFAULT;
	if (w->slow)
		return skb_copy_bits(w->skb, off, to, len);
	while (len) {
		u32 in, n;

		if (optr_skb_walk_seek(w, off))
			return -EFAULT;
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

/* Feed @len bytes at offset @in of frag @f (which holds them) to @st. */
static void optr_frag_mac(struct optr_blake2s_state *st, const skb_frag_t *f,
			  u32 in, u32 len)
{
	u32 pos = skb_frag_off(f) + in;

	while (len) {
		u32 poff = offset_in_page(pos);
		u32 n = min_t(u32, len, PAGE_SIZE - poff);
		u8 *p = kmap_local_page(skb_frag_page(f) + (pos >> PAGE_SHIFT));

		blake2s_update(st, p + poff, n);
		kunmap_local(p);
		pos += n;
		len -= n;
	}
}

/*
 * Feed @len bytes at offset @off of the skb to the keyed hash @st, where
 * they lie (no copy): 0, or -EFAULT when the skb is shorter. A frag_list
 * skb goes through a small bounce buffer.
 */
int optr_skb_walk_mac(struct optr_skb_walk *w, u32 off, u32 len,
		      struct optr_blake2s_state *st)
{
	const struct skb_shared_info *sh = skb_shinfo(w->skb);
	u8 bounce[64];

	if (!optr_skb_walk_fits(w, off, len))
		return -EFAULT;
	while (len) {
		u32 in, n;

		if (w->slow) {
			n = min_t(u32, len, sizeof(bounce));
			if (skb_copy_bits(w->skb, off, bounce, n))
				return -EFAULT;
			blake2s_update(st, bounce, n);
		} else {
			if (optr_skb_walk_seek(w, off))
				return -EFAULT;
			in = off - w->start;
			n = min(len, w->len - in);
			if (w->i < 0)
				blake2s_update(st, w->skb->data + in, n);
			else
				optr_frag_mac(st, &sh->frags[w->i], in, n);
		}
		off += n;
		len -= n;
	}
	return 0;
}
