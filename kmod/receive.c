// SPDX-License-Identifier: GPL-2.0
/*
 * The receive path: a datagram on the namespace's UDP port, in softirq
 * context. Validate the header, find the member sockets it is for, check
 * the source against their peer table, and hand it to each (round.c).
 * Everything that cannot be used is dropped and counted; nothing is logged.
 */

#include <linux/ip.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/sock.h>

#include "comm.h"
#include "netns.h"
#include "receive.h"
#include "round.h"
#include "sock.h"
#include "stats.h"
#include "wire.h"

static void optr_rx_sock(struct optr_sock *osk, struct sk_buff *skb,
			 u32 dataoff, const struct optr_frag *f)
{
	bool woke = false;

	spin_lock_bh(&osk->lock);
	if (!osk->dead)
		woke = optr_deliver(osk, skb, dataoff, f);
	spin_unlock_bh(&osk->lock);
	if (woke)
		osk->sk.sk_data_ready(&osk->sk);
}

/* Consumes @skb, whose data starts at its UDP header. */
void optr_receive(struct optr_net *on, struct sk_buff *skb)
{
	const u32 hdroff = sizeof(struct udphdr);
	const struct optr_wire_hdr *h;
	struct optr_wire_hdr hbuf;
	enum optr_wire_err werr;
	bool for_us = false, seen = false;
	struct optr_sock *osk;
	struct optr_frag f;
	__be32 saddr;

	if (skb->protocol != htons(ETH_P_IP) || skb->len < hdroff) {
		optr_drop(on, NULL, OPTR_STAT_DROP_MALFORMED, NULL);
		goto out;
	}
	h = skb_header_pointer(skb, hdroff, sizeof(hbuf), &hbuf);
	if (!h) {
		optr_drop(on, NULL, OPTR_STAT_DROP_MALFORMED, NULL);
		goto out;
	}
	werr = optr_wire_parse(h, skb->len - hdroff, &f);
	if (werr) {
		optr_drop(on, NULL, werr == OPTR_WIRE_OUT_OF_BOUNDS ?
			  OPTR_STAT_DROP_OUT_OF_BOUNDS :
			  OPTR_STAT_DROP_MALFORMED, NULL);
		goto out;
	}
	saddr = ip_hdr(skb)->saddr;

	rcu_read_lock();
	hash_for_each_possible_rcu(on->members, osk, member_node, f.comm) {
		const struct optr_comm *comm = osk->comm;

		if (comm->id != f.comm)
			continue;
		seen = true;
		if (f.dst != OPTR_WIRE_DST_ALL && f.dst != comm->rank)
			continue;
		/* Our own multicast, looped back to the namespace. */
		if (f.src == comm->rank)
			continue;
		for_us = true;
		if (f.src >= comm->nranks || comm->addr[f.src] != saddr) {
			spin_lock_bh(&osk->lock);
			optr_drop(on, osk, OPTR_STAT_DROP_FOREIGN_SOURCE, &f);
			spin_unlock_bh(&osk->lock);
			continue;
		}
		optr_rx_sock(osk, skb, hdroff + sizeof(*h), &f);
	}
	rcu_read_unlock();

	/* No member of that communicator (for that rank) lives here. A
	 * multicast whose only local member is its sender is not a drop.
	 */
	if (!for_us && !(seen && f.dst == OPTR_WIRE_DST_ALL))
		optr_drop(on, NULL, OPTR_STAT_DROP_UNKNOWN_COMM, &f);
out:
	consume_skb(skb);
}
