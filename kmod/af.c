// SPDX-License-Identifier: GPL-2.0
/*
 * The socket family: creation, release and socket options.
 *
 * The family number is borrowed at load time (params.c), so the
 * net_proto_family cannot be const: its .family is filled in by
 * optr_af_init() before registration and never changes afterwards.
 */

#include <linux/module.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <uapi/linux/optireduce.h>

#include "af.h"
#include "netns.h"
#include "params.h"

static struct proto optr_proto = {
	.name = "OPTIREDUCE",
	.owner = THIS_MODULE,
	.obj_size = sizeof(struct optr_sock),
};

static int optr_release(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct optr_sock *osk;

	if (!sk)
		return 0;
	osk = optr_sk(sk);

	optr_net_del_sock(osk->on, osk);

	lock_sock(sk);
	sock_orphan(sk);
	sock->sk = NULL;
	release_sock(sk);

	sock_put(sk);
	return 0;
}

static int optr_setsockopt(struct socket *sock, int level, int optname,
			   sockptr_t optval, unsigned int optlen)
{
	if (level != optr_sol)
		return -ENOPROTOOPT;

	switch (optname) {
	case OPTIREDUCE_ABI_VERSION:
		/* Read-only. */
		return -EINVAL;
	default:
		return -ENOPROTOOPT;
	}
}

static int optr_getsockopt(struct socket *sock, int level, int optname,
			   char __user *optval, int __user *optlen)
{
	u32 abi = OPTIREDUCE_ABI;
	int len;

	if (level != optr_sol)
		return -ENOPROTOOPT;
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;

	switch (optname) {
	case OPTIREDUCE_ABI_VERSION:
		if (len < sizeof(abi))
			return -EINVAL;
		len = sizeof(abi);
		if (copy_to_user(optval, &abi, len))
			return -EFAULT;
		break;
	default:
		return -ENOPROTOOPT;
	}
	return put_user(len, optlen);
}

static const struct proto_ops optr_dgram_ops = {
	.owner = THIS_MODULE,
	.release = optr_release,
	.bind = sock_no_bind,
	.connect = sock_no_connect,
	.socketpair = sock_no_socketpair,
	.accept = sock_no_accept,
	.getname = sock_no_getname,
	.poll = datagram_poll,
	.ioctl = sock_no_ioctl,
	.listen = sock_no_listen,
	.shutdown = sock_no_shutdown,
	.setsockopt = optr_setsockopt,
	.getsockopt = optr_getsockopt,
	.sendmsg = sock_no_sendmsg,
	.recvmsg = sock_no_recvmsg,
	.mmap = sock_no_mmap,
};

static int optr_create(struct net *net, struct socket *sock, int protocol,
		       int kern)
{
	struct optr_sock *osk;
	struct sock *sk;

	if (sock->type != SOCK_DGRAM)
		return -ESOCKTNOSUPPORT;
	if (protocol)
		return -EPROTONOSUPPORT;

	sk = sk_alloc(net, optr_family, GFP_KERNEL, &optr_proto, kern);
	if (!sk)
		return -ENOMEM;

	sock->ops = &optr_dgram_ops;
	sock_init_data(sock, sk);

	osk = optr_sk(sk);
	osk->on = optr_net(net);
	optr_net_add_sock(osk->on, osk);
	return 0;
}

static struct net_proto_family optr_family_ops = {
	.create = optr_create,
	.owner = THIS_MODULE,
};

int optr_af_init(void)
{
	int err;

	err = proto_register(&optr_proto, 1);
	if (err)
		return err;

	optr_family_ops.family = optr_family;
	err = sock_register(&optr_family_ops);
	if (err)
		goto err_proto;
	return 0;

err_proto:
	proto_unregister(&optr_proto);
	return err;
}

void optr_af_exit(void)
{
	sock_unregister(optr_family);
	proto_unregister(&optr_proto);
}
