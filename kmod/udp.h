/* SPDX-License-Identifier: GPL-2.0 */
/* The per-namespace kernel UDP socket: packets in and out. */
#ifndef _OPTR_UDP_H
#define _OPTR_UDP_H

#include <linux/ktime.h>
#include <linux/skbuff.h>

struct optr_net;

int optr_udp_open(struct optr_net *on);
void optr_udp_close(struct optr_net *on);
struct sk_buff *optr_udp_alloc_skb(struct optr_net *on, unsigned int size,
				   ktime_t deadline, int *err);

#endif /* _OPTR_UDP_H */
