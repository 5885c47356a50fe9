// SPDX-License-Identifier: GPL-2.0
/*
 * The receive path: a datagram (or a GSO batch of them) on the namespace's
 * UDP port, in softirq context. Validate each datagram's header, find the
 * member sockets it is for, check the source against their peer table,
 * and hand it to each (round.c). Everything that cannot be used is
 * dropped and counted; nothing is logged.
 */

#include <linux/ip.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/inet_ecn.h>
#include <net/sock.h>

#include "auth.h"
#include "comm.h"
#include "netns.h"
#include "params.h"
#include "post.h"
#include "rate.h"
#include "receive.h"
#include "round.h"
#include "skbwalk.h"
#include "sock.h"
#include "stats.h"
#include "steer.h"
#include "wire.h"

/*
 * The datagrams of a GSO batch mostly go to one socket: its lock is taken
 * once for the run of them, the clock read once (their arrival time), and
 * its reader woken once, when the run ends. They mostly continue one
 * message, too: while the last one went to a single socket's open post
 * (@post, see optr_deliver()), the next from the same sender to the same
 * rank goes to that socket without looking it up again; the batch's
 * source address is the same, so is the peer table's verdict on it.
 */
struct optr_rx_run {
	struct optr_sock *osk;		/* locked, or NULL */
	ktime_t now;			/* read after taking the lock */
	bool woke;			/* a completion was queued */
	struct optr_post *post;		/* open, of osk's rank, or NULL */
	bool ce;			/* the batch is ECN CE-marked */
};

static void optr_rx_run_end(struct optr_rx_run *run)
{
	struct optr_sock *osk = run->osk;

	if (!osk)
		return;
	spin_unlock_bh(&osk->lock);
	if (run->woke)
		osk->sk.sk_data_ready(&osk->sk);
	run->osk = NULL;
	run->woke = false;
	run->post = NULL;
}

static void optr_rx_run_lock(struct optr_rx_run *run, struct optr_sock *osk)
{
	if (run->osk == osk)
		return;
	optr_rx_run_end(run);
	spin_lock_bh(&osk->lock);
	run->osk = osk;
	/* Under the lock: a round opened before we got it is older. */
	run->now = ktime_get();
}

/*
 * The header of the datagram at @hdroff of @w's skb, @len bytes long,
 * parsed into @f. A datagram shorter than a header fails here or in
 * optr_wire_parse(), which judges it by @len.
 */
static enum optr_wire_err optr_receive_hdr(struct optr_skb_walk *w,
					   u32 hdroff, u32 len,
					   struct optr_frag *f)
{
	struct optr_wire_hdr h;

	if (optr_skb_walk_copy(w, hdroff, &h, sizeof(h)))
		return OPTR_WIRE_MALFORMED;
	return optr_wire_parse(&h, len, f);
}

/* Payload bytes per datagram of @skb: a GSO batch's segment, or all. */
static u32 optr_receive_seg(const struct sk_buff *skb)
{
	return skb_is_gso(skb) ? skb_shinfo(skb)->gso_size : skb->len;
}

/*
 * Whether @comm takes this datagram as far as authentication goes: its
 * members and the datagram agree on OPTIREDUCE_JOIN_AUTH, and with it the
 * tag is right. The tag is checked once a datagram (*@verdict: 0 not yet,
 * 1 good, -1 bad): every local member of one wire id has the same secret,
 * so the same key (comm.c refuses a join that would make it otherwise).
 */
static bool optr_receive_authentic(const struct optr_comm *comm,
				   const struct optr_skb_walk *w, u32 hdroff,
				   u32 len, const struct optr_frag *f,
				   int *verdict)
{
	bool want = comm->flags & OPTIREDUCE_JOIN_AUTH;

	if (want != !!(f->flags & OPTR_WIRE_AUTH))
		return false;
	if (!want)
		return true;
	if (!*verdict)
		*verdict = optr_auth_verify(comm->mac_key, w, hdroff, len) ?
			   1 : -1;
	return *verdict > 0;
}

/*
 * One datagram's worth of @w's skb: the OptiReduce header at @hdroff, @len
 * bytes from there to the end of the datagram; @member says whether it
 * came from a member's port (its source address is checked per
 * communicator). Called under RCU; leaves the lock of the last socket it
 * delivered to held in @run.
 */
static void optr_receive_one(struct optr_net *on, struct optr_skb_walk *w,
			     u32 hdroff, u32 len, __be32 saddr, bool member,
			     struct optr_rx_run *run)
{
	const u32 payoff = hdroff + sizeof(struct optr_wire_hdr);
	enum optr_wire_err werr;
	bool for_us = false, seen = false;
	struct optr_sock *osk;
	struct optr_frag f;
	int verdict = 0;

	werr = optr_receive_hdr(w, hdroff, len, &f);
	if (werr) {
		optr_drop(on, NULL, werr == OPTR_WIRE_OUT_OF_BOUNDS ?
			  OPTR_STAT_DROP_OUT_OF_BOUNDS :
			  OPTR_STAT_DROP_MALFORMED, NULL);
		return;
	}

	if (run->post && f.comm == run->osk->comm->id &&
	    f.dst == run->osk->comm->rank && f.src == run->post->src) {
		/* run->osk is locked and not dead. */
		if (!optr_receive_authentic(run->osk->comm, w, hdroff, len,
					    &f, &verdict)) {
			optr_drop(on, run->osk, OPTR_STAT_DROP_AUTH, &f);
			return;
		}
		optr_rate_rx(run->osk, &f, run->ce);
		run->woke |= optr_deliver(run->osk, w, payoff, &f, run->now,
					  &run->post);
		return;
	}
	run->post = NULL;

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
		optr_rx_run_lock(run, osk);
		if (!member || f.src >= comm->nranks ||
		    comm->addr[f.src] != saddr) {
			optr_drop(on, osk, OPTR_STAT_DROP_FOREIGN_SOURCE, &f);
		} else if (!optr_receive_authentic(comm, w, hdroff, len, &f,
						   &verdict)) {
			optr_drop(on, osk, OPTR_STAT_DROP_AUTH, &f);
		} else if (!osk->dead) {
			struct optr_post *post = NULL;

			optr_rate_rx(osk, &f, run->ce);
			run->woke |= optr_deliver(osk, w, payoff, &f, run->now,
						  &post);
			/* Only one socket can be the target of the next. */
			if (f.dst != OPTR_WIRE_DST_ALL)
				run->post = post;
		}
	}

	/* No member of that communicator (for that rank) lives here. A
	 * multicast whose only local member is its sender is not a drop.
	 */
	if (!for_us && !(seen && f.dst == OPTR_WIRE_DST_ALL))
		optr_drop(on, NULL, OPTR_STAT_DROP_UNKNOWN_COMM, &f);
}

/*
 * Consumes @skb, whose data starts at its UDP payload. It is one datagram,
 * or a UDP GSO batch of them (see udp.c): every gso_size bytes of payload
 * is one datagram with its own header, the last one possibly shorter.
 * Called from the softirq, or from steer.c's work with BHs disabled.
 */
void optr_receive_here(struct optr_net *on, struct sk_buff *skb)
{
	struct optr_rx_run run = {};
	struct optr_skb_walk w;
	u32 seg, off = 0;
	__be32 saddr;
	bool member;

	if (skb->protocol != htons(ETH_P_IP)) {
		optr_drop(on, NULL, OPTR_STAT_DROP_MALFORMED, NULL);
		goto out;
	}
	saddr = ip_hdr(skb)->saddr;
	run.ce = INET_ECN_is_ce(ip_hdr(skb)->tos);
	/* Members send from the module's port, which the kernel socket
	 * holds in their namespace: another source port is some other
	 * program on a member's host, however well it knows the format.
	 */
	member = udp_hdr(skb)->source == htons(optr_port);
	seg = optr_receive_seg(skb);
	optr_skb_walk_init(&w, skb);
	if (skb_is_gso(skb))
		optr_stat_net(on, OPTR_STAT_RX_GSO_BATCHES, 1);
	/* Sockets found stay valid while a run holds one's lock. */
	rcu_read_lock();
	/* An empty datagram is still one (malformed) datagram. */
	do {
		u32 len = min(seg, skb->len - off);

		optr_receive_one(on, &w, off, len, saddr, member, &run);
		off += len;
	} while (off < skb->len);
	optr_rx_run_end(&run);
	rcu_read_unlock();
out:
	consume_skb(skb);
}

/*
 * The socket that @skb's first datagram is for, if it is addressed to one
 * rank (not to all) and a member for that rank lives here. A batch comes
 * from one sender's sendmsg, so its datagrams share that address. Under
 * RCU; what this cannot judge is left to optr_receive_here().
 */
static struct optr_sock *optr_receive_owner(struct optr_net *on,
					    struct sk_buff *skb)
{
	u32 len = min(optr_receive_seg(skb), skb->len);
	struct optr_skb_walk w;
	struct optr_sock *osk;
	struct optr_frag f;

	optr_skb_walk_init(&w, skb);
	if (skb->protocol != htons(ETH_P_IP) ||
	    optr_receive_hdr(&w, 0, len, &f) || f.dst == OPTR_WIRE_DST_ALL)
		return NULL;
	hash_for_each_possible_rcu(on->members, osk, member_node, f.comm) {
		if (osk->comm->id == f.comm && osk->comm->rank == f.dst)
			return osk;
	}
	return NULL;
}

/*
 * Consumes @skb (as optr_receive_here()), in softirq context: places it
 * here, or hands it to the CPU its socket's reader runs on (steer.c).
 */
void optr_receive(struct optr_net *on, struct sk_buff *skb)
{
	struct optr_sock *osk;
	bool steered;

	rcu_read_lock();
	osk = optr_receive_owner(on, skb);
	steered = osk && optr_steer(osk, skb);
	rcu_read_unlock();
	if (!steered)
		optr_receive_here(on, skb);
}
