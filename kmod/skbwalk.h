/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_SKBWALK_H
#define _OPTR_SKBWALK_H

#include <linux/skbuff.h>

#include "compat.h"

/*
 * A place in a received skb's bytes, kept between reads: see skbwalk.c.
 * Lives on the stack of the receive path, for one skb.
 */
struct optr_skb_walk {
	struct sk_buff *skb;
	u32 start;		/* skb offset of the current piece */
	u32 len;		/* its length */
	int i;			/* -1: the linear head, else frags[i] */
	bool slow;		/* a frag_list: leave it to skb_copy_bits() */
};

void optr_skb_walk_init(struct optr_skb_walk *w, struct sk_buff *skb);
int optr_skb_walk_copy(struct optr_skb_walk *w, u32 off, void *to, u32 len);
int optr_skb_walk_mac(struct optr_skb_walk *w, u32 off, u32 len,
		      struct optr_blake2s_state *st);

#endif /* _OPTR_SKBWALK_H */
