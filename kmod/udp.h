/* SPDX-License-Identifier: GPL-2.0 */
/* The per-namespace kernel UDP socket: packets in and out. */
#ifndef _OPTR_UDP_H
#define _OPTR_UDP_H

#include <linux/ktime.h>
#include <linux/skbuff.h>

struct optr_net;
struct rtable;

int optr_udp_open(struct optr_net *on);
void optr_udp_close(struct optr_net *on);
struct sk_buff *optr_udp_alloc_skb(struct optr_net *on, unsigned int size,
				   ktime_t deadline, u64 *waited_ns, int *err);
int optr_udp_xmit(struct optr_net *on, struct rtable *rt,
		  struct sk_buff *skb, __be32 saddr, __be32 daddr, u8 ttl);

#endif /* _OPTR_UDP_H */
