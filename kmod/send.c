// SPDX-License-Identifier: GPL-2.0
/*
 * The send path: cut a message into fragments that fit the route's MTU and
 * send each as one UDP datagram, to one rank, to every peer one copy each
 * (interleaved batch by batch), or once to the communicator's multicast
 * group. Nothing is retransmitted.
 * Optional pacing spaces fragments to a rate; a send gives up at its
 * deadline and counts what it did not send instead of blocking longer.
 */

#include <linux/ip.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/route.h>

#include "auth.h"
#include "comm.h"
#include "netns.h"
#include "params.h"
#include "rate.h"
#include "send.h"
#include "sock.h"
#include "trace.h"
#include "txpool.h"
#include "txsrc.h"
#include "udp.h"
#include "wire.h"

/* Below this much pacing debt a sender keeps going: sleeping for a few
 * microseconds costs more than it smooths.
 */
#define OPTR_PACE_SLACK_NS	(20 * NSEC_PER_USEC)
/* The time a batch takes at the rate (optr_pace_segs()), and how far
 * behind its schedule a fast paced sender may fall and catch up.
 */
#define OPTR_PACE_BURST_NS	(200 * NSEC_PER_USEC)
/*
 * ... and a slow one: the bytes it may send back to back to catch up.
 * A sleep of the pacer ends late by the host's timer and scheduling
 * latency; forgiven, the lateness is lost. 200 us at 17 Mbit/s is less
 * than one datagram's time, and in the emulated fabric a sender woke
 * ~0.8 ms late per datagram and left at a quarter of its rate
 * (results.md, "Senders that slept too long").
 * 16 KiB, an eighth of a shallow switch port's buffer, covers over
 * 7 ms of lateness at that rate and less than 200 us from 655 Mbit/s.
 */
#define OPTR_PACE_CATCHUP_BYTES	(16 * 1024)
#define OPTR_UDP_MAX_DATA	65507	/* a UDP datagram's payload, at most */

static u32 optr_pace_rate(struct optr_sock *osk)
{
	return osk->pace_set ? osk->pace_mbps :
			       optr_tunable_get(&optr_pace_mbps);
}

/*
 * The rate of the next batch, of which @left bytes on the wire (with the
 * other copies of a fan-out) are still to leave by @deadline: the
 * socket's, or with rate control the communicator's, but never so slow
 * that they could not; *@hurried says whether the deadline, not the
 * rate, set it.
 */
static u32 optr_pace_next(struct optr_sock *osk, u64 left, ktime_t deadline,
			  bool *hurried)
{
	u32 rate = optr_rate_mbps(osk, optr_pace_rate(osk));
	u32 mbps = optr_rate_in_time(rate, left,
				     ktime_to_ns(ktime_sub(deadline,
							   ktime_get())));

	*hurried = mbps > rate;
	return mbps;
}

/* How far behind its schedule a sender at @mbps may fall and catch up. */
static u64 optr_pace_credit_ns(u32 mbps)
{
	/* bytes * 8000 / (Mbit/s) = ns */
	return max_t(u64, OPTR_PACE_BURST_NS,
		     div_u64(OPTR_PACE_CATCHUP_BYTES * 8000ULL, mbps));
}

/*
 * Wait until @wire_bytes may leave at @mbps (0: at once): a token bucket
 * that lets a sender fall up to optr_pace_credit_ns() behind, so a late
 * wake-up is made up by the following datagrams instead of being
 * forgiven. What is forgiven within a send, the sender's CPU or its send
 * buffer held it back, not the rate; rate control hears of it
 * (optr_rate_paced()). -ETIMEDOUT when the datagram could only leave
 * after @deadline.
 */
static int optr_pace(struct optr_sock *osk, u32 mbps, u32 wire_bytes,
		     ktime_t deadline)
{
	ktime_t now, when, woke, earliest;
	u64 step, behind = 0;

	lockdep_assert_held(&osk->tx_lock);
	if (!mbps)
		return 0;
	now = ktime_get();
	earliest = ktime_sub_ns(now, optr_pace_credit_ns(mbps));
	if (ktime_before(osk->next_tx, earliest)) {
		/* Before a send's first batch the socket was idle. */
		if (osk->tx_tally.paced)
			behind = ktime_to_ns(ktime_sub(earliest, osk->next_tx));
		osk->next_tx = earliest;
	}
	osk->tx_tally.paced++;
	osk->tx_tally.behind_ns += behind;
	when = osk->next_tx;
	if (ktime_after(when, deadline)) {
		optr_rate_paced(osk, false, 0, behind);
		return -ETIMEDOUT;
	}
	/* bits / (Mbit/s) = microseconds; * 1000 for ns */
	step = div_u64((u64)wire_bytes * 8000, mbps);
	osk->next_tx = ktime_add_ns(when, step);
	/* Held back: on schedule, not behind it. */
	optr_rate_paced(osk, ktime_after(when, now), step, behind);
	if (ktime_to_ns(ktime_sub(when, now)) < OPTR_PACE_SLACK_NS)
		return 0;
	/*
	 * Killable, not interruptible: io_uring's task work (completions of
	 * other requests, TIF_NOTIFY_SIGNAL) and caught signals would
	 * otherwise end the sleep early and the send with it, cutting a
	 * message its receivers already see arriving. The wait is bounded by
	 * the send's timeout anyway; a fatal signal still ends it.
	 */
	set_current_state(TASK_KILLABLE);
	schedule_hrtimeout_range(&when, OPTR_PACE_SLACK_NS / 2,
				 HRTIMER_MODE_ABS);
	woke = ktime_get();
	osk->tx_tally.pace_ns += ktime_to_ns(ktime_sub(woke, now));
	osk->tx_tally.late_ns += max_t(s64, ktime_to_ns(ktime_sub(woke, when)),
				       0);
	return fatal_signal_pending(current) ? -EINTR : 0;
}

/*
 * Segments of @seg bytes a batch paced at @mbps may carry: what the rate
 * lets leave in OPTR_PACE_BURST_NS, at least one. A batch reaches the
 * next queue at once whatever the pacing after it: at 30 Mbit/s a batch
 * of 64 segments would be a shallow switch port's whole buffer.
 */
static u32 optr_pace_segs(u32 mbps, u32 seg)
{
	if (!mbps)
		return U32_MAX;
	/* Mbit/s * ns / 8000 = bytes */
	return max_t(u64, div_u64((u64)mbps * OPTR_PACE_BURST_NS, 8000ULL * seg),
		     1);
}

/* The next @n bytes of the fragment cache become the skb's: frag @i, or
 * the growth of frag @i - 1 when they continue it (@merge).
 */
static void optr_frag_take(struct sk_buff *skb, int i, bool merge,
			   struct page_frag *pf, u32 n)
{
	if (merge) {
		skb_frag_size_add(&skb_shinfo(skb)->frags[i - 1], n);
	} else {
		skb_fill_page_desc(skb, i, pf->page, pf->offset, n);
		get_page(pf->page);
	}
	pf->offset += n;
}

/*
 * Append @len bytes to the page fragments of @skb, from @src or, if @src
 * is NULL, from @kbuf, through the socket's page fragment cache, whose
 * pages come from a pool (txpool.c) and are reused once the skbs that
 * referenced them are gone, so a steady sender neither allocates nor
 * (with init_on_alloc) zeroes a page per batch. They come from
 * alloc_pages() without __GFP_HIGHMEM, so page_address() maps them
 * whole. The caller accounts for the bytes (optr_append_done). With
 * @mac, the bytes are also fed to that tag, as they land.
 */
static int optr_append(struct optr_sock *osk, struct sk_buff *skb,
		       struct optr_txsrc *src, const void *kbuf, u32 len,
		       struct optr_blake2s_state *mac)
{
	struct page_frag *pf = &osk->tx_frag;

	lockdep_assert_held(&osk->tx_lock);
	while (len) {
		int i = skb_shinfo(skb)->nr_frags;
		u32 n;
		void *addr;
		bool merge;

		if (!optr_txpool_refill(osk, 32U))
			return -ENOMEM;
		n = min_t(u32, len, pf->size - pf->offset);
		merge = skb_can_coalesce(skb, i, pf->page, pf->offset);
		if (!merge && i >= MAX_SKB_FRAGS)
			return -EMSGSIZE;
		addr = page_address(pf->page) + pf->offset;
		if (src) {
			if (optr_txsrc_copy(src, addr, n))
				return -EFAULT;
		} else {
			memcpy(addr, kbuf, n);
			kbuf += n;
		}
		if (mac)
			blake2s_update(mac, addr, n);
		optr_frag_take(skb, i, merge, pf, n);
		len -= n;
	}
	return 0;
}

/*
 * optr_append_seg() where the page has no room for the whole segment:
 * header, payload and (with @key) tag, piecewise, the tag computed as the
 * bytes land.
 */
static int optr_append_pieces(struct optr_sock *osk, struct sk_buff *skb,
			      const struct optr_wire_hdr *h,
			      struct optr_txsrc *src, u32 len, const u8 *key)
{
	struct optr_blake2s_state st, *mac = NULL;
	u8 tag[OPTR_WIRE_TAG_LEN];
	int err;

	if (key) {
		mac = &st;
		optr_auth_mac_init(mac, key);
	}
	err = optr_append(osk, skb, NULL, h, sizeof(*h), mac);
	if (!err)
		err = optr_append(osk, skb, src, NULL, len, mac);
	if (!mac)
		return err;
	if (err) {
		memzero_explicit(&st, sizeof(st));
		return err;
	}
	blake2s_final(mac, tag);
	return optr_append(osk, skb, NULL, tag, sizeof(tag), NULL);
}

/*
 * One segment of a batch, header @h, then @len bytes from @src, then with
 * @key (authenticated datagrams) their tag, as one stretch of the page
 * fragment cache: one refill check, and one frag that grows
 * (skb_can_coalesce) while the batch stays in the same page, which it
 * mostly does. Where the page has no room for the whole segment (a
 * fallback to a single page), it goes piecewise (optr_append_pieces).
 */
static int optr_append_seg(struct optr_sock *osk, struct sk_buff *skb,
			   const struct optr_wire_hdr *h,
			   struct optr_txsrc *src, u32 len, const u8 *key)
{
	struct page_frag *pf = &osk->tx_frag;
	u32 body = sizeof(*h) + len;
	u32 sz = body + (key ? OPTR_WIRE_TAG_LEN : 0);
	int i = skb_shinfo(skb)->nr_frags;
	void *addr;
	bool merge;

	lockdep_assert_held(&osk->tx_lock);
	if (!optr_txpool_refill(osk, sz))
		return -ENOMEM;
	if (pf->size - pf->offset < sz)
		return optr_append_pieces(osk, skb, h, src, len, key);
	merge = skb_can_coalesce(skb, i, pf->page, pf->offset);
	if (!merge && i >= MAX_SKB_FRAGS)
		return -EMSGSIZE;
	addr = page_address(pf->page) + pf->offset;
	memcpy(addr, h, sizeof(*h));
	if (optr_txsrc_copy(src, addr + sizeof(*h), len))
		return -EFAULT;
	if (key)
		optr_auth_tag(key, addr, body, addr + body);
	optr_frag_take(skb, i, merge, pf, sz);
	return 0;
}

/* The @len bytes optr_append() attached: the skb's length and its charge
 * to the UDP socket's send buffer, once per skb.
 */
static void optr_append_done(struct optr_sock *osk, struct sk_buff *skb,
			     u32 len)
{
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	refcount_add(len, &osk->on->udp->sk->sk_wmem_alloc);
}

/*
 * Page fragments one more segment of @seg bytes may add to a batch: one
 * per page it touches. Pool pages are 32 KiB, so a batch mostly grows one
 * fragment per page; when the pool had to fall back to single pages
 * (txpool.c), a 1500-byte MTU's 44 segments would need about 22, more
 * than an skb has.
 */
static u32 optr_seg_frags(u32 seg)
{
	return DIV_ROUND_UP(seg, PAGE_SIZE) + 1;
}

/*
 * One skb carrying up to *@nseg fragments of @maxp payload bytes each (the
 * last may be shorter), each behind its own header; *@nseg is set to how
 * many it took, fewer only when the skb ran out of page fragments. With
 * more than one it is a UDP GSO packet (SKB_GSO_UDP_L4, segment = header +
 * fragment [+ tag]): the IP layer and the device path run once for the
 * batch, and it is cut into datagrams only where it has to be, as
 * UDP_SEGMENT sockets do. Its bytes live in page fragments (optr_append),
 * copied from the pages under @iter (txsrc.c); a single datagram is
 * linear, copied from @iter. With @key every datagram ends in its tag.
 */
static struct sk_buff *optr_build(struct optr_sock *osk, struct optr_frag *f,
				  u32 *nseg, u32 maxp, u32 hroom,
				  struct iov_iter *iter, const u8 *key,
				  ktime_t deadline, int *err)
{
	const u32 tag = key ? OPTR_WIRE_TAG_LEN : 0;
	const u32 framing = sizeof(struct optr_wire_hdr) + tag;
	const u32 seg = framing + maxp;
	u32 data = min_t(u32, *nseg * maxp, f->total - f->offset);
	u32 wire = *nseg * framing + data;
	const bool paged = *nseg > 1;
	u32 start = f->offset;
	struct optr_txsrc src;
	struct sk_buff *skb;
	u32 i;

	/* Waits for room in the send buffer, never past the deadline. */
	skb = optr_udp_alloc_skb(osk->on, hroom + (paged ? 0 : wire),
				 deadline, &osk->tx_tally.room_ns, err);
	if (!skb)
		return NULL;
	skb_reserve(skb, hroom);
	optr_txsrc_init(&src, iter, data);
	for (i = 0; i < *nseg; i++) {
		u32 n = min(maxp, f->total - f->offset);
		struct optr_wire_hdr h;

		if (paged && i && skb_shinfo(skb)->nr_frags +
				  optr_seg_frags(seg) > MAX_SKB_FRAGS)
			break;
		f->flags = (f->flags & (OPTR_WIRE_MCAST | OPTR_WIRE_AUTH)) |
			   (f->offset + n == f->total ? OPTR_WIRE_LAST : 0);
		optr_wire_build(&h, f);
		if (!paged) {
			u8 *p = skb_put(skb, sizeof(h) + n);

			memcpy(p, &h, sizeof(h));
			*err = copy_from_iter(p + sizeof(h), n, iter) == n ?
			       0 : -EFAULT;
			if (!*err && key)
				optr_auth_tag(key, p, sizeof(h) + n,
					      skb_put(skb, tag));
		} else {
			*err = optr_append_seg(osk, skb, &h, &src, n, key);
		}
		if (*err) {
			/* None of this batch leaves: the caller counts
			 * its fragments as dropped.
			 */
			f->offset = start;
			optr_txsrc_release(&src);
			kfree_skb(skb);
			return NULL;
		}
		f->offset += n;
	}
	if (i < *nseg)
		optr_txsrc_unread(&src);
	optr_txsrc_release(&src);
	*nseg = i;
	if (paged)
		optr_append_done(osk, skb, i * framing + f->offset - start);
	/* Cut to one segment, it is a plain datagram: the tunnel sets up
	 * its checksum as for a linear one. A partial checksum here would
	 * make it take this for an inner one and write a wrong sum.
	 */
	if (paged && i > 1) {
		skb_shinfo(skb)->gso_size = seg;
		skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
		skb_shinfo(skb)->gso_segs = i;
		/* The UDP header goes right in front of the data. */
		skb->ip_summed = CHECKSUM_PARTIAL;
		skb->csum_start = skb_headroom(skb) - sizeof(struct udphdr);
		skb->csum_offset = offsetof(struct udphdr, check);
	}
	return skb;
}

/*
 * One destination of a send: its route, and its copy of the message's
 * fragment state (offset, dst, feedback word) and of the iterator over
 * its bytes. A fan-out keeps one per peer for as long as it sends; it is
 * sending while it holds its route.
 */
struct optr_tx_path {
	struct optr_frag f;
	struct iov_iter iter;
	struct rtable *rt;
	__be32 saddr;
	__be32 daddr;
	u32 maxp;	/* payload bytes per fragment */
	u32 ovh;	/* bytes on the wire per fragment besides them */
	u32 hroom;
	u32 segs_max;	/* fragments per batch */
	u64 packets;
	u64 bytes;
	u8 ttl;
	bool forced;	/* some batch left faster than the rate */
};

/*
 * Route the copy of @f (the bytes under @iter) to @daddr and size its
 * fragments. On an error the path has no route and the whole copy counts
 * as dropped when it closes.
 */
static int optr_path_open(struct optr_sock *osk, struct optr_tx_path *p,
			  const struct optr_frag *f,
			  const struct iov_iter *iter, __be32 daddr, int oif,
			  u8 ttl, const u8 *key)
{
	const u32 framing = sizeof(struct optr_wire_hdr) +
			    (key ? OPTR_WIRE_TAG_LEN : 0);
	struct sock *usk = osk->on->udp->sk;
	__be16 port = htons(optr_port);
	struct flowi4 fl4 = {};
	struct rtable *rt;

	*p = (struct optr_tx_path){
		.f = *f,
		.iter = *iter,
		.daddr = daddr,
		.maxp = 1400,
		.ovh = sizeof(struct iphdr) + sizeof(struct udphdr) + framing,
	};
	p->f.offset = 0;
	p->f.feedback = optr_rate_tx_begin(osk, f->dst);
	fl4.daddr = daddr;
	fl4.flowi4_oif = oif;
	fl4.flowi4_proto = IPPROTO_UDP;
	fl4.fl4_sport = port;
	fl4.fl4_dport = port;
	rt = ip_route_output_key(sock_net(usk), &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	if (dst_mtu(&rt->dst) <= p->ovh + 64) {
		ip_rt_put(rt);
		return -EMSGSIZE;
	}
	p->rt = rt;
	p->saddr = fl4.saddr;
	p->maxp = min_t(u32, dst_mtu(&rt->dst) - p->ovh,
			OPTR_UDP_MAX_DATA - framing);
	p->hroom = LL_RESERVED_SPACE(rt->dst.dev) + rt->dst.header_len +
		   sizeof(struct iphdr) + sizeof(struct udphdr);
	p->ttl = ttl ? ttl : ip4_dst_hoplimit(&rt->dst);
	/* A batch must fit one IP datagram's length field. */
	p->segs_max = min3(optr_tunable_get(&optr_tx_segs),
			   (u32)UDP_MAX_SEGMENTS,
			   (u32)((65535 - sizeof(struct iphdr) -
				  sizeof(struct udphdr)) / (framing + p->maxp)));
	return 0;
}

/* Bytes of @p's copy still to leave. */
static u32 optr_path_left(const struct optr_tx_path *p)
{
	return p->f.total - p->f.offset;
}

/*
 * The next batch of @p's copy; with @key each fragment carries its tag.
 * @left payload bytes of the send (this copy's and the others') are still
 * to leave by @deadline.
 */
static int optr_path_batch(struct optr_sock *osk, struct optr_tx_path *p,
			   const u8 *key, ktime_t deadline, u64 left)
{
	u32 mbps, nseg, start = p->f.offset;
	struct sk_buff *skb;
	bool hurried;
	int err, xmit;

	mbps = optr_pace_next(osk, left + DIV_ROUND_UP_ULL(left, p->maxp) *
				   p->ovh, deadline, &hurried);
	nseg = min3(max(p->segs_max, 1U),
		    DIV_ROUND_UP(optr_path_left(p), p->maxp),
		    optr_pace_segs(mbps, p->ovh + p->maxp));
	err = optr_pace(osk, mbps, nseg * p->ovh +
			min_t(u32, nseg * p->maxp, optr_path_left(p)),
			deadline);
	if (err)
		return err;
	/* A report published since the last batch leaves with this one. */
	if (start)
		p->f.feedback = optr_rate_tx_word(osk, p->f.dst);
	skb = optr_build(osk, &p->f, &nseg, p->maxp, p->hroom, &p->iter, key,
			 deadline, &err);
	if (!skb)
		return err;
	/* Each skb takes its own reference on the route. The IP output
	 * path expects softirqs off of a sender that is not a socket's
	 * sendmsg, as a device's ndo_start_xmit has them.
	 */
	dst_hold(&p->rt->dst);
	local_bh_disable();
	xmit = optr_udp_xmit(osk->on, p->rt, skb, p->saddr, p->daddr, p->ttl);
	local_bh_enable();
	/* Our own queue is full: we send faster than our link. */
	if (xmit == NET_XMIT_DROP || xmit == NET_XMIT_CN)
		optr_rate_queue_drop(osk, p->f.dst, hurried);
	p->forced |= hurried;
	p->packets += nseg;
	p->bytes += p->f.offset - start;
	return 0;
}

/* @p is done with, @err how its copy ended: count what left and what not. */
static void optr_path_close(struct optr_sock *osk, struct optr_tx_path *p,
			    int err)
{
	u32 unsent;

	lockdep_assert_held(&osk->tx_lock);
	if (p->rt)
		ip_rt_put(p->rt);
	p->rt = NULL;
	/* What the receiver reports of it says little of the rate. */
	if (p->forced || err == -ETIMEDOUT)
		optr_rate_tx_forced(osk, p->f.dst);
	unsent = DIV_ROUND_UP(optr_path_left(p), p->maxp);
	osk->tx_tally.bytes += p->bytes;
	osk->tx_tally.unsent += unsent;
	spin_lock_bh(&osk->lock);
	optr_stat_sock(osk, OPTR_STAT_TX_PACKETS, p->packets);
	optr_stat_sock(osk, OPTR_STAT_TX_BYTES, p->bytes);
	if (unsent)
		optr_stat_sock(osk, OPTR_STAT_TX_DROPPED, unsent);
	spin_unlock_bh(&osk->lock);
}

/* Send the whole message in @iter to one IPv4 destination (a rank, or the
 * multicast group); with @key each fragment carries its tag.
 */
static int optr_send_to(struct optr_sock *osk, __be32 daddr, int oif, u8 ttl,
			const struct optr_frag *f, struct iov_iter *iter,
			const u8 *key, ktime_t deadline)
{
	struct optr_tx_path p;
	int err;

	err = optr_path_open(osk, &p, f, iter, daddr, oif, ttl, key);
	if (err == -EMSGSIZE)
		return err;
	while (!err && optr_path_left(&p))
		err = optr_path_batch(osk, &p, key, deadline,
				      optr_path_left(&p));
	optr_path_close(osk, &p, err);
	return err;
}

/*
 * One copy of the message in @iter to every peer, or with @parts (a
 * scatter send) its own part of it to each, interleaved batch by
 * batch round the ring from the ranks after ours: each peer receives
 * from this sender at the nth part of its rate, all of them at once, so
 * the owners of a phase fanning out together load every receiver's port
 * alike, however far apart they started. Whole copies one after the
 * other would send each peer everything at full rate in turn, and owners
 * out of step would meet at one receiver's port (found in the congested
 * fabric: the receivers' ports, not the uplinks, dropped most).
 */
static int optr_send_fanout(struct optr_sock *osk, struct optr_comm *comm,
			    struct optr_frag *f, const struct iov_iter *iter,
			    const struct iovec *parts, const u8 *key,
			    ktime_t deadline)
{
	u32 n = comm->nranks - 1, i, active = 0;
	struct optr_tx_path *paths;
	u64 left = 0;
	int stop = 0;	/* the error that ends every copy */
	int err = 0;

	paths = kvmalloc_array(n, sizeof(*paths), GFP_KERNEL);
	if (!paths)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct optr_tx_path *p = &paths[i];
		struct iov_iter part;
		int e;

		f->dst = (comm->rank + 1 + i) % comm->nranks;
		if (parts) {
			/* Its own part, or nothing for this peer. */
			p->rt = NULL;
			f->total = parts[f->dst].iov_len;
			if (!f->total)
				continue;
			iov_iter_ubuf(&part, ITER_SOURCE,
				      parts[f->dst].iov_base, f->total);
		}
		/* Else every copy starts from the same bytes. */
		e = optr_path_open(osk, p, f, parts ? &part : iter,
				   comm->addr[f->dst], 0, 0, key);
		if (e && !err)
			err = e;
		if (e == -EMSGSIZE)
			continue;
		if (e) {
			optr_path_close(osk, p, e);
			continue;
		}
		active++;
		left += optr_path_left(p);
	}
	while (active && !stop) {
		for (i = 0; i < n && !stop; i++) {
			struct optr_tx_path *p = &paths[i];
			u32 before = optr_path_left(p);
			int e;

			if (!p->rt)
				continue;	/* this copy ended */
			e = optr_path_batch(osk, p, key, deadline, left);
			left -= before - optr_path_left(p);
			if (!e && optr_path_left(p))
				continue;
			left -= optr_path_left(p);
			active--;
			optr_path_close(osk, p, e);
			if (e && !err)
				err = e;
			/*
			 * A peer we cannot reach does not stop the others. A
			 * fault or a signal does, and so does the deadline,
			 * which the rate shared by all copies reached.
			 */
			if (e == -EFAULT || e == -EINTR || e == -ETIMEDOUT)
				stop = e;
		}
	}
	for (i = 0; i < n; i++)
		if (paths[i].rt)
			optr_path_close(osk, &paths[i], stop);
	kvfree(paths);
	return err;
}

/*
 * The socket's send lock: one sender at a time, and the pacing state. A
 * caller that must not wait (MSG_DONTWAIT, O_NONBLOCK, io_uring's inline
 * attempt) gets -EAGAIN while another send holds it, and poll reports the
 * socket writable again once it is released: io_uring then retries the
 * send from its poll wake-up instead of blocking its submitter behind a
 * long send. A send that has the lock may still wait for pacing and for
 * room in the UDP send buffer, bounded by its timeout: stopping there
 * would cut a message that receivers already see arriving.
 */
int optr_tx_lock(struct optr_sock *osk, bool nonblock)
{
	if (nonblock)
		return mutex_trylock(&osk->tx_lock) ? 0 : -EAGAIN;
	/* Killable, as every wait of a send (optr_pace()). */
	return mutex_lock_killable(&osk->tx_lock) ? -EINTR : 0;
}

/*
 * Writable: no send holds the lock. Otherwise the socket is marked
 * SOCK_NOSPACE, so that the unlock wakes the poller; the check after the
 * mark (and the barrier in sock_poll_wait() before it) pairs with the
 * unlock's barrier, so a release between the two is never missed.
 */
bool optr_tx_writable(struct optr_sock *osk)
{
	struct socket *sock = osk->sk.sk_socket;

	if (!mutex_is_locked(&osk->tx_lock))
		return true;
	set_bit(SOCK_NOSPACE, &sock->flags);
	/* The mark before the second look; pairs with optr_tx_unlock(). */
	smp_mb__after_atomic();
	return !mutex_is_locked(&osk->tx_lock);
}

void optr_tx_unlock(struct optr_sock *osk)
{
	struct sock *sk = &osk->sk;
	struct socket_wq *wq;

	mutex_unlock(&osk->tx_lock);
	/* test_and_clear_bit() is fully ordered: the release above is
	 * visible before the mark is read (see optr_tx_writable()).
	 */
	if (!sk->sk_socket ||
	    !test_and_clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags))
		return;
	rcu_read_lock();
	wq = rcu_dereference(sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, EPOLLOUT | EPOLLWRNORM |
						      EPOLLWRBAND);
	rcu_read_unlock();
}

/*
 * A scatter send's parts, one iovec per rank (OPTIREDUCE_SEND_SCATTER),
 * or an ERR_PTR: the message must come as exactly @nranks iovecs.
 */
static const struct iovec *optr_send_parts(const struct msghdr *msg,
					   u32 nranks)
{
	const struct iov_iter *it = &msg->msg_iter;
	const struct iovec *parts;
	u32 r;

	if (!iter_is_iovec(it) || it->nr_segs != nranks || it->iov_offset)
		return ERR_PTR(-EINVAL);
	parts = optr_iter_iovecs(it);
	for (r = 0; r < nranks; r++)
		if (parts[r].iov_len > OPTIREDUCE_MAX_MSG)
			return ERR_PTR(-EMSGSIZE);
	return parts;
}

int optr_send(struct optr_sock *osk, const struct optireduce_send *req,
	      struct msghdr *msg)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	size_t len = msg_data_left(msg);
	const struct iovec *parts = NULL;
	const u8 *key = NULL;
	struct optr_frag f = {};
	ktime_t deadline, start, locked;
	u32 timeout_us;
	int err = 0;

	if (!comm)
		return -ENOTCONN;
	if ((req->flags & ~OPTR_SEND_FLAGS) || req->reserved || !len ||
	    req->timeout_us > OPTR_DEADLINE_LIMIT_US ||
	    (req->dst != OPTIREDUCE_DST_ALL &&
	     (req->dst >= comm->nranks || req->dst == comm->rank)) ||
	    ((req->flags & OPTIREDUCE_SEND_SCATTER) &&
	     req->dst != OPTIREDUCE_DST_ALL))
		return -EINVAL;
	if (req->flags & OPTIREDUCE_SEND_SCATTER) {
		parts = optr_send_parts(msg, comm->nranks);
		if (IS_ERR(parts))
			return PTR_ERR(parts);
	} else if (len > OPTIREDUCE_MAX_MSG) {
		return -EMSGSIZE;
	}

	timeout_us = req->timeout_us;
	if (!timeout_us) {
		spin_lock_bh(&osk->lock);
		timeout_us = optr_sock_deadline_us(osk, NULL);
		spin_unlock_bh(&osk->lock);
	}
	deadline = ktime_add_us(ktime_get(), timeout_us);

	f.comm = comm->id;
	f.round = req->round;
	f.msg = req->msg;
	f.src = comm->rank;
	f.total = len;
	f.hint_us = timeout_us;
	if (comm->flags & OPTIREDUCE_JOIN_AUTH) {
		key = comm->mac_key;
		f.flags = OPTR_WIRE_AUTH;
	}

	start = ktime_get();
	err = optr_tx_lock(osk, msg->msg_flags & MSG_DONTWAIT);
	if (err)
		return err;
	locked = ktime_get();
	osk->tx_tally = (struct optr_tx_tally){};
	if (req->dst == OPTIREDUCE_DST_ALL && !parts &&
	    (comm->flags & OPTIREDUCE_JOIN_MCAST)) {
		f.dst = OPTR_WIRE_DST_ALL;
		f.flags |= OPTR_WIRE_MCAST;
		err = optr_send_to(osk, comm->group, comm->group_ifindex,
				   comm->ttl, &f, &msg->msg_iter, key,
				   deadline);
	} else if (req->dst == OPTIREDUCE_DST_ALL) {
		err = optr_send_fanout(osk, comm, &f, &msg->msg_iter, parts,
				       key, deadline);
	} else {
		f.dst = req->dst;
		err = optr_send_to(osk, comm->addr[req->dst], 0, 0, &f,
				   &msg->msg_iter, key, deadline);
	}
	trace_optireduce_send(comm->id, comm->rank, req->dst, req->round,
			      &osk->tx_tally,
			      ktime_us_delta(ktime_get(), start),
			      ktime_us_delta(locked, start), err);
	optr_tx_unlock(osk);
	return err ? err : len;
}
