// SPDX-License-Identifier: GPL-2.0
/*
 * The per-namespace kernel UDP socket. Outgoing fragments are charged to
 * its send buffer, which is what makes a large send wait for the device
 * instead of overflowing the queues below.
 *
 * Incoming datagrams are taken in softirq context, as soon as UDP queued
 * them: our sk_data_ready dequeues and hands them to receive.c at once.
 * Not encap_rcv, as tunnels use: UDP segments every GSO batch before it
 * reaches an encap socket, one new skb per datagram, and that was most
 * of the receive cost. A plain socket that accepts UDP GSO gets a local
 * sender's batch whole (veth and bridges pass it on), and GRO builds
 * batches from a NIC's packets for it; receive.c walks their datagrams.
 * UDP has not verified the checksum of what it queued (it leaves that
 * to recvmsg), so this does.
 *
 * Only what the kernel itself exports is used (socket creation, bind,
 * ip_local_out), not the udp_tunnel module's helpers: a plain insmod on
 * a distribution kernel, where udp_tunnel is a module of its own, finds
 * every symbol it needs. net/udp_tunnel.h is included for an inline only.
 */

#include <linux/in.h>
#include <linux/net.h>
#include <linux/udp.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/sock.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "compat.h"
#include "netns.h"
#include "params.h"
#include "rate.h"
#include "receive.h"
#include "udp.h"

/* Room for fragments in flight below us, per namespace. */
#define OPTR_UDP_SNDBUF		(4 << 20)

/* Room for what arrives between two drains, and for whole GSO batches. */
#define OPTR_UDP_RCVBUF		(8 << 20)

/*
 * Datagrams one call takes off the queue at most. UDP calls sk_data_ready
 * once for every datagram it queues, on the CPU that received it, so
 * there are never fewer calls than datagrams and each call that finds the
 * queue non-empty takes at least one: nothing is left behind. Without a
 * cap one CPU's softirq would go on placing what other CPUs keep queueing
 * under a sustained burst, outside any NAPI budget; with it each CPU does
 * about the work it received.
 */
#define OPTR_UDP_DRAIN_BUDGET	64

static void optr_udp_data_ready(struct sock *sk)
{
	int budget = OPTR_UDP_DRAIN_BUDGET;
	struct optr_net *on;
	struct sk_buff *skb;
	int err;

	rcu_read_lock();
	on = rcu_dereference_sk_user_data(sk);
	/* Closing: whatever is still queued goes with the socket. */
	if (unlikely(!on))
		goto out;
	while (budget-- && (skb = skb_recv_udp(sk, MSG_DONTWAIT, &err))) {
		/* UDP kept its own scratch there (dev_scratch); the skb
		 * lives on in queues of ours, where no device is meant.
		 */
		skb->dev = NULL;
		/* Counted where UDP's own recvmsg counts it. */
		if (udp_lib_checksum_complete(skb)) {
			/* Not UDP_INC_STATS(): its arguments changed in 7.0. */
			SNMP_INC_STATS(sock_net(sk)->mib.udp_statistics,
				       UDP_MIB_CSUMERRORS);
			SNMP_INC_STATS(sock_net(sk)->mib.udp_statistics,
				       UDP_MIB_INERRORS);
			atomic_inc(&sk->sk_drops);
			kfree_skb(skb);
			continue;
		}
		optr_receive(on, skb);
	}
out:
	rcu_read_unlock();
}

/*
 * The socket serves every member of the namespace, so it is created from
 * a kernel thread: created by the first task to join, it would carry that
 * task's uid and cgroups (sock_alloc(), sk_alloc()), and every member's
 * traffic and receive memory would be charged to them and judged by their
 * cgroup's rules.
 */
struct optr_udp_create {
	struct work_struct work;
	struct net *net;
	struct socket *sock;
	int err;
};

static void optr_udp_create_work(struct work_struct *work)
{
	struct optr_udp_create *c = container_of(work, struct optr_udp_create,
						 work);
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(optr_port),
	};
	struct socket *sock;
	int err;

	err = sock_create_kern(c->net, AF_INET, SOCK_DGRAM, IPPROTO_UDP, &sock);
	if (err)
		goto out;
	/* void *: the address type kernel_bind() takes changed in 6.19. */
	err = kernel_bind(sock, (void *)&sin, sizeof(sin));
	if (err) {
		sock_release(sock);
		goto out;
	}
	c->sock = sock;
out:
	c->err = err;
}

int optr_udp_open(struct optr_net *on)
{
	struct optr_udp_create c = { .net = on->net };
	struct socket *sock;
	struct sock *sk;
	int err;

	lockdep_assert_held(&on->lock);
	INIT_WORK_ONSTACK(&c.work, optr_udp_create_work);
	queue_work(system_unbound_wq, &c.work);
	flush_work(&c.work);
	destroy_work_on_stack(&c.work);
	err = c.err;
	if (err)
		return err;
	sock = c.sock;
	sk = sock->sk;
	sk->sk_userlocks |= SOCK_SNDBUF_LOCK | SOCK_RCVBUF_LOCK;
	WRITE_ONCE(sk->sk_sndbuf, OPTR_UDP_SNDBUF);
	WRITE_ONCE(sk->sk_rcvbuf, OPTR_UDP_RCVBUF);
	optr_udp_accept_gso(sk);
	/* GRO looks the socket of a datagram up (and so sees that it
	 * takes batches) only once some socket enabled UDP encapsulation;
	 * this one's release drops that again (udp_destroy_sock()).
	 */
	udp_tunnel_encap_enable(sk);
	rcu_assign_sk_user_data(sk, on);
	/* What arrived since the socket was bound is placed along with the
	 * next datagram (each call drains several). Not drained here: the
	 * namespace's first member is still joining, and no member socket
	 * would take it yet.
	 */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = optr_udp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	on->udp = sock;
	return 0;
}

void optr_udp_close(struct optr_net *on)
{
	lockdep_assert_held(&on->lock);
	if (!on->udp)
		return;
	/* No new reader finds the namespace; wait for those that did. */
	rcu_assign_sk_user_data(on->udp->sk, NULL);
	synchronize_rcu();
	kernel_sock_shutdown(on->udp, SHUT_RDWR);
	sock_release(on->udp);
	on->udp = NULL;
}

/*
 * Send @skb (our header and payload, a UDP GSO batch or one datagram)
 * from the namespace's socket to @daddr over @rt, whose reference the skb
 * takes. The caller holds a reference of its own on @rt and has softirqs
 * off, as the IP output path expects of a sender that is not a socket's
 * sendmsg. Returns ip_local_out()'s verdict: NET_XMIT_DROP or
 * NET_XMIT_CN when the device's queue dropped the batch (or all of it
 * that a shaper split), a negative errno when something before it did.
 */
int optr_udp_xmit(struct optr_net *on, struct rtable *rt,
		  struct sk_buff *skb, __be32 saddr, __be32 daddr, u8 ttl)
{
	struct sock *sk = on->udp->sk;
	struct net *net = sock_net(sk);
	__be16 port = htons(optr_port);
	struct udphdr *uh;
	struct iphdr *iph;

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = port;
	uh->dest = port;
	uh->len = htons(skb->len);
	udp_set_csum(false, skb, saddr, daddr, skb->len);

	skb_dst_set(skb, &rt->dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = optr_rate_tos();
	iph->frag_off = 0;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = saddr;
	iph->daddr = daddr;
	iph->ttl = ttl;
	/* One id per datagram a GSO batch becomes. ip_local_out() fills
	 * in the length and the header checksum.
	 */
	__ip_select_ident(net, iph, skb_shinfo(skb)->gso_segs ?: 1);
	return ip_local_out(net, sk, skb);
}

/*
 * An skb charged to the UDP socket with @size bytes of linear room (page
 * fragments are added by the caller, and charged as they are). Waits
 * while datagrams already sent fill the socket's send buffer, but never
 * past @deadline; the time waited is added to *@waited_ns.
 */
struct sk_buff *optr_udp_alloc_skb(struct optr_net *on, unsigned int size,
				   ktime_t deadline, u64 *waited_ns, int *err)
{
	struct sock *sk = on->udp->sk;

	for (;;) {
		struct sk_buff *skb;
		ktime_t now, left;
		long ret;

		skb = sock_alloc_send_skb(sk, size, 1, err);
		if (skb) {
			/* It may leave an error code behind on success. */
			*err = 0;
			return skb;
		}
		if (*err != -EAGAIN)
			return NULL;
		now = ktime_get();
		left = ktime_sub(deadline, now);
		if (left <= 0) {
			*err = -ETIMEDOUT;
			return NULL;
		}
		/* Killable, as the pacer's sleep (send.c, optr_pace()):
		 * io_uring's task work must not cut a message short. There
		 * is no wait_event_killable_hrtimeout().
		 */
		ret = __wait_event_hrtimeout(*sk_sleep(sk), sock_writeable(sk),
					     left, TASK_KILLABLE);
		*waited_ns += ktime_to_ns(ktime_sub(ktime_get(), now));
		if (ret == -ERESTARTSYS) {
			*err = -EINTR;
			return NULL;
		}
	}
}
