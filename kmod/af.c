// SPDX-License-Identifier: GPL-2.0
/*
 * The socket family: creation and release, socket options, and the
 * sendmsg/recvmsg/poll entry points that dispatch to send.c, round.c and
 * completion.c.
 *
 * The family number is borrowed at load time (params.c), so the
 * net_proto_family cannot be const: its .family is filled in by
 * optr_af_init() before registration and never changes afterwards.
 */

#include <linux/module.h>
#include <linux/net.h>
#include <linux/poll.h>
#include <linux/socket.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <uapi/linux/optireduce.h>

#include "af.h"
#include "comm.h"
#include "completion.h"
#include "mem.h"
#include "netns.h"
#include "params.h"
#include "round.h"
#include "send.h"
#include "sock.h"
#include "steer.h"
#include "txpool.h"

static struct proto optr_proto = {
	.name = "OPTIREDUCE",
	.owner = THIS_MODULE,
	.obj_size = sizeof(struct optr_sock),
};

static void optr_destruct(struct sock *sk)
{
	struct optr_sock *osk = optr_sk(sk);

	optr_comm_free(osk->comm);
	optr_txpool_free(osk);
	mutex_destroy(&osk->tx_lock);
}

static int optr_release(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct optr_sock *osk;

	if (!sk)
		return 0;
	osk = optr_sk(sk);

	/* Leave first: from here on the receive path cannot find us. */
	optr_comm_leave(osk);
	optr_steer_close(osk);
	optr_rounds_release(osk);
	optr_mem_release(osk);
	optr_net_del_sock(osk->on, osk);

	lock_sock(sk);
	sock_orphan(sk);
	sock->sk = NULL;
	release_sock(sk);

	sock_put(sk);
	return 0;
}

/* A rate option's value: a __u32 of Mbit/s, at most OPTIREDUCE_MAX_MBPS. */
static int optr_copy_mbps(sockptr_t optval, unsigned int optlen, u32 *v)
{
	if (optlen != sizeof(*v))
		return -EINVAL;
	if (copy_from_sockptr(v, optval, sizeof(*v)))
		return -EFAULT;
	return *v > OPTIREDUCE_MAX_MBPS ? -EINVAL : 0;
}

static int optr_setsockopt(struct socket *sock, int level, int optname,
			   sockptr_t optval, unsigned int optlen)
{
	struct optr_sock *osk = optr_sk(sock->sk);
	int err;
	u32 v;

	if (level != optr_sol)
		return -ENOPROTOOPT;

	switch (optname) {
	case OPTIREDUCE_ABI_VERSION:
	case OPTIREDUCE_SEND_FLAGS:
	case OPTIREDUCE_STATS:
	case OPTIREDUCE_ESTIMATE:
		/* Read-only. */
		return -EINVAL;
	case OPTIREDUCE_JOIN:
		return optr_comm_join(osk, optval, optlen);
	case OPTIREDUCE_PACE_MBPS:
		err = optr_copy_mbps(optval, optlen, &v);
		if (err)
			return err;
		/* A paced send holds tx_lock for as long as it takes. */
		err = mutex_lock_interruptible(&osk->tx_lock);
		if (err)
			return err;
		osk->pace_mbps = v;
		osk->pace_set = true;
		optr_tx_unlock(osk);
		return 0;
	case OPTIREDUCE_RATE_START_MBPS:
		err = optr_copy_mbps(optval, optlen, &v);
		if (err)
			return err;
		/* Read locklessly by rate.c: one word. */
		WRITE_ONCE(osk->rate_start_mbps, v);
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

static int optr_getsockopt(struct socket *sock, int level, int optname,
			   char __user *optval, int __user *optlen)
{
	struct optr_sock *osk = optr_sk(sock->sk);
	union {
		u32 v;
		struct optireduce_stats stats;
		struct optireduce_estimate est;
	} u = {};
	int len, size;

	if (level != optr_sol)
		return -ENOPROTOOPT;
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;

	switch (optname) {
	case OPTIREDUCE_ABI_VERSION:
		u.v = OPTIREDUCE_ABI;
		size = sizeof(u.v);
		break;
	case OPTIREDUCE_SEND_FLAGS:
		u.v = OPTR_SEND_FLAGS;
		size = sizeof(u.v);
		break;
	case OPTIREDUCE_PACE_MBPS:
		if (mutex_lock_interruptible(&osk->tx_lock))
			return -EINTR;
		u.v = osk->pace_set ? osk->pace_mbps :
				      optr_tunable_get(&optr_pace_mbps);
		optr_tx_unlock(osk);
		size = sizeof(u.v);
		break;
	case OPTIREDUCE_RATE_START_MBPS:
		u.v = READ_ONCE(osk->rate_start_mbps);
		size = sizeof(u.v);
		break;
	case OPTIREDUCE_STATS:
		optr_stats_copy_sock(osk, &u.stats);
		size = sizeof(u.stats);
		break;
	case OPTIREDUCE_ESTIMATE:
		optr_sock_estimate(osk, &u.est);
		size = sizeof(u.est);
		break;
	case OPTIREDUCE_JOIN: {
		int err = optr_comm_get(osk, optval, &len);

		return err ? err : put_user(len, optlen);
	}
	default:
		return -ENOPROTOOPT;
	}
	if (len < size)
		return -EINVAL;
	if (copy_to_user(optval, &u, size))
		return -EFAULT;
	return put_user(size, optlen);
}

/* Exactly one control message of our level, of the size its type needs. */
static int optr_cmsg(struct msghdr *msg, int *type, void *buf, size_t max,
		     size_t *size)
{
	struct cmsghdr *cmsg;
	int n = 0;

	if (msg->msg_control_is_user)
		return -EINVAL;
	for_each_cmsghdr(cmsg, msg) {
		if (!CMSG_OK(msg, cmsg) || cmsg->cmsg_level != optr_sol ||
		    ++n > 1)
			return -EINVAL;
		*size = cmsg->cmsg_len - CMSG_LEN(0);
		if (*size > max)
			return -EINVAL;
		*type = cmsg->cmsg_type;
		memcpy(buf, CMSG_DATA(cmsg), *size);
	}
	return n ? 0 : -EINVAL;
}

static int optr_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	struct optr_sock *osk = optr_sk(sock->sk);
	union {
		struct optireduce_send send;
		struct optireduce_post post;
		struct optireduce_cancel cancel;
		struct optireduce_deadline deadline;
	} u;
	size_t size;
	int type, err;

	/* Destinations are ranks, named in the control message. */
	if (msg->msg_name || msg->msg_namelen)
		return -EINVAL;
	if (msg->msg_flags & MSG_OOB)
		return -EOPNOTSUPP;
	err = optr_cmsg(msg, &type, &u, sizeof(u), &size);
	if (err)
		return err;

	switch (type) {
	case OPTIREDUCE_CMSG_SEND:
		if (size != sizeof(u.send))
			return -EINVAL;
		return optr_send(osk, &u.send, msg);
	case OPTIREDUCE_CMSG_POST:
		if (size != sizeof(u.post))
			return -EINVAL;
		optr_steer_note_cpu(osk);
		return optr_post(osk, &u.post, &msg->msg_iter);
	case OPTIREDUCE_CMSG_CANCEL:
		if (size != sizeof(u.cancel) || msg_data_left(msg))
			return -EINVAL;
		return optr_cancel(osk, &u.cancel);
	case OPTIREDUCE_CMSG_DEADLINE:
		if (size != sizeof(u.deadline) || msg_data_left(msg))
			return -EINVAL;
		return optr_retime(osk, &u.deadline);
	default:
		return -EINVAL;
	}
}

static int optr_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
			int flags)
{
	if (msg->msg_name)
		msg->msg_namelen = 0;
	optr_steer_note_cpu(optr_sk(sock->sk));
	return optr_recv_completions(optr_sk(sock->sk), msg, flags);
}

/*
 * Readable while a completion is queued. Writable while no send holds the
 * socket's send lock (send.c: a send may still wait for pacing and buffer
 * room, bounded by its timeout).
 */
static __poll_t optr_poll(struct file *file, struct socket *sock,
			  poll_table *wait)
{
	struct optr_sock *osk = optr_sk(sock->sk);
	__poll_t mask = 0;

	sock_poll_wait(file, sock, wait);
	if (READ_ONCE(osk->ncompl))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (optr_tx_writable(osk))
		mask |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
	return mask;
}

static const struct proto_ops optr_dgram_ops = {
	.owner = THIS_MODULE,
	.release = optr_release,
	.bind = sock_no_bind,
	.connect = sock_no_connect,
	.socketpair = sock_no_socketpair,
	.accept = sock_no_accept,
	.getname = sock_no_getname,
	.poll = optr_poll,
	.ioctl = sock_no_ioctl,
	.listen = sock_no_listen,
	.shutdown = sock_no_shutdown,
	.setsockopt = optr_setsockopt,
	.getsockopt = optr_getsockopt,
	.sendmsg = optr_sendmsg,
	.recvmsg = optr_recvmsg,
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
	/* The receive path finds sockets under RCU only. */
	sock_set_flag(sk, SOCK_RCU_FREE);
	sk->sk_destruct = optr_destruct;

	osk = optr_sk(sk);
	osk->on = optr_net(net);
	spin_lock_init(&osk->lock);
	spin_lock_init(&osk->mem_lock);
	hash_init(osk->rounds);
	hash_init(osk->posts);
	INIT_LIST_HEAD(&osk->completions);
	INIT_LIST_HEAD(&osk->dead_rounds);
	__skb_queue_head_init(&osk->backlog);
	mutex_init(&osk->tx_lock);
	optr_steer_init(osk);
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

	optr_mem_proto_init(&optr_proto);
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
