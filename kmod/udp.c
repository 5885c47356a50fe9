// SPDX-License-Identifier: GPL-2.0
/*
 * The per-namespace kernel UDP socket. Incoming datagrams on the port are
 * taken before UDP queues them (encap_rcv, as tunnels do); outgoing
 * fragments are charged to this socket's send buffer, which is what makes a
 * large send wait for the device instead of overflowing the queues below.
 */

#include <linux/net.h>
#include <linux/udp.h>
#include <linux/wait.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>

#include "netns.h"
#include "params.h"
#include "receive.h"
#include "udp.h"

/* Room for fragments in flight below us, per namespace. */
#define OPTR_UDP_SNDBUF		(4 << 20)

static int optr_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct optr_net *on = rcu_dereference_sk_user_data(sk);

	if (unlikely(!on)) {
		kfree_skb(skb);
		return 0;
	}
	optr_receive(on, skb);
	return 0;
}

int optr_udp_open(struct optr_net *on)
{
	struct udp_port_cfg cfg = {
		.family = AF_INET,
		.local_ip.s_addr = htonl(INADDR_ANY),
		.local_udp_port = htons(optr_port),
		.use_udp_checksums = true,
	};
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = on,
		.encap_type = 1,
		.encap_rcv = optr_udp_encap_rcv,
	};
	struct socket *sock;
	int err;

	lockdep_assert_held(&on->lock);
	err = udp_sock_create(on->net, &cfg, &sock);
	if (err)
		return err;
	sock->sk->sk_userlocks |= SOCK_SNDBUF_LOCK;
	WRITE_ONCE(sock->sk->sk_sndbuf, OPTR_UDP_SNDBUF);
	setup_udp_tunnel_sock(on->net, sock, &tcfg);
	on->udp = sock;
	return 0;
}

void optr_udp_close(struct optr_net *on)
{
	lockdep_assert_held(&on->lock);
	if (!on->udp)
		return;
	/* Clears sk_user_data and waits for readers before releasing. */
	udp_tunnel_sock_release(on->udp);
	on->udp = NULL;
}

/*
 * An skb charged to the UDP socket: @size bytes of linear room and
 * @data_len bytes in page fragments. Waits while datagrams already sent
 * fill the socket's send buffer, but never past @deadline.
 */
struct sk_buff *optr_udp_alloc_skb(struct optr_net *on, unsigned int size,
				   unsigned int data_len, ktime_t deadline,
				   int *err)
{
	struct sock *sk = on->udp->sk;

	for (;;) {
		struct sk_buff *skb;
		ktime_t left;
		long ret;

		skb = sock_alloc_send_pskb(sk, size, data_len, 1, err,
					   PAGE_ALLOC_COSTLY_ORDER);
		if (skb) {
			/* It may leave an error code behind on success. */
			*err = 0;
			return skb;
		}
		if (*err != -EAGAIN)
			return NULL;
		left = ktime_sub(deadline, ktime_get());
		if (left <= 0) {
			*err = -ETIMEDOUT;
			return NULL;
		}
		ret = wait_event_interruptible_hrtimeout(*sk_sleep(sk),
							 sock_writeable(sk),
							 left);
		if (ret == -ERESTARTSYS) {
			*err = -EINTR;
			return NULL;
		}
	}
}
