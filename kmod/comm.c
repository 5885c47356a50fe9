// SPDX-License-Identifier: GPL-2.0
/*
 * OPTIREDUCE_JOIN: validate a communicator's description, publish the
 * socket in its namespace's member table (opening the namespace's UDP
 * socket for the first member) and join the multicast group if it has one.
 * Leaving undoes the same steps in reverse.
 */

#include <linux/igmp.h>
#include <linux/in.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/sock.h>
#include <uapi/linux/optireduce.h>

#include "auth.h"
#include "comm.h"
#include "netns.h"
#include "rate.h"
#include "sock.h"
#include "steer.h"
#include "udp.h"

/* A multicast group joined on the namespace's UDP socket, shared by every
 * member that uses it.
 */
struct optr_group {
	struct list_head node;
	__be32 addr;
	int ifindex;		/* as members asked: 0 lets the route decide */
	int dev_ifindex;	/* the device the join took */
	unsigned int refs;
};

static bool optr_addr_tail_zero(const struct optireduce_addr *a)
{
	return !memchr_inv(a->addr + 4, 0, sizeof(a->addr) - 4);
}

static int optr_peer_valid(const struct optireduce_addr *a)
{
	__be32 ip;

	if (a->family != AF_INET || a->reserved || a->ifindex ||
	    !optr_addr_tail_zero(a))
		return -EINVAL;
	memcpy(&ip, a->addr, sizeof(ip));
	if (ipv4_is_multicast(ip) || ipv4_is_zeronet(ip) ||
	    ipv4_is_lbcast(ip))
		return -EINVAL;
	return 0;
}

/*
 * Join on the device members asked for, or the one the route to the
 * group picks; leave from the device the join took. The route may have
 * changed meanwhile, and asking it again would leave nothing (the
 * membership stays, and a later join on that device is EADDRINUSE).
 */
static int optr_mreq(struct optr_net *on, struct optr_group *g, bool join)
{
	struct ip_mreqn mreq = {
		.imr_multiaddr.s_addr = g->addr,
		.imr_ifindex = join ? g->ifindex : g->dev_ifindex,
	};
	struct sock *sk = on->udp->sk;
	int err;

	rtnl_lock();
	lock_sock(sk);
	err = join ? ip_mc_join_group(sk, &mreq) : ip_mc_leave_group(sk, &mreq);
	release_sock(sk);
	rtnl_unlock();
	/* The join wrote the device it resolved into mreq. */
	if (join && !err)
		g->dev_ifindex = mreq.imr_ifindex;
	return err;
}

static int optr_group_get(struct optr_net *on, __be32 addr, int ifindex)
{
	struct optr_group *g;
	int err;

	lockdep_assert_held(&on->lock);
	list_for_each_entry(g, &on->groups, node) {
		if (g->addr == addr && g->ifindex == ifindex) {
			g->refs++;
			return 0;
		}
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->addr = addr;
	g->ifindex = ifindex;
	err = optr_mreq(on, g, true);
	if (err) {
		kfree(g);
		return err;
	}
	g->refs = 1;
	list_add(&g->node, &on->groups);
	return 0;
}

static void optr_group_put(struct optr_net *on, __be32 addr, int ifindex)
{
	struct optr_group *g;

	lockdep_assert_held(&on->lock);
	list_for_each_entry(g, &on->groups, node) {
		if (g->addr != addr || g->ifindex != ifindex)
			continue;
		if (--g->refs)
			return;
		optr_mreq(on, g, false);
		list_del(&g->node);
		kfree(g);
		return;
	}
}

static struct optr_comm *optr_comm_parse(sockptr_t optval,
					 unsigned int optlen)
{
	struct optireduce_addr a;
	struct optireduce_join j;
	struct optr_comm *comm;
	u32 i;

	if (optlen < sizeof(j))
		return ERR_PTR(-EINVAL);
	if (copy_from_sockptr(&j, optval, sizeof(j)))
		return ERR_PTR(-EFAULT);
	if (j.nranks < 2 || j.nranks > OPTIREDUCE_MAX_RANKS ||
	    j.rank >= j.nranks || (j.flags & ~OPTIREDUCE_JOIN_FLAGS) ||
	    j.reserved ||
	    optlen != sizeof(j) + (size_t)j.nranks * sizeof(a))
		return ERR_PTR(-EINVAL);
	/* A tag keyed with a secret anyone may guess proves nothing. */
	if ((j.flags & OPTIREDUCE_JOIN_AUTH) &&
	    !memchr_inv(j.secret, 0, sizeof(j.secret)))
		return ERR_PTR(-EINVAL);
	if (j.flags & OPTIREDUCE_JOIN_MCAST) {
		__be32 g;

		memcpy(&g, j.group.addr, sizeof(g));
		if (j.group.family != AF_INET || j.group.reserved ||
		    !optr_addr_tail_zero(&j.group) || !ipv4_is_multicast(g) ||
		    j.mcast_ttl > 255 || j.group.ifindex > INT_MAX)
			return ERR_PTR(-EINVAL);
	} else if (memchr_inv(&j.group, 0, sizeof(j.group)) || j.mcast_ttl) {
		return ERR_PTR(-EINVAL);
	}

	/* addr[] and seen[] in one allocation: both 4-byte aligned. */
	comm = kvzalloc(size_add(struct_size(comm, addr, j.nranks),
				 array_size(j.nranks, sizeof(*comm->seen))),
			GFP_KERNEL);
	if (!comm)
		return ERR_PTR(-ENOMEM);
	comm->seen = (struct optr_src_seen *)&comm->addr[j.nranks];
	for (i = 0; i < j.nranks; i++) {
		if (copy_from_sockptr_offset(&a, optval,
					     sizeof(j) + i * sizeof(a),
					     sizeof(a))) {
			kvfree(comm);
			return ERR_PTR(-EFAULT);
		}
		if (optr_peer_valid(&a)) {
			kvfree(comm);
			return ERR_PTR(-EINVAL);
		}
		memcpy(&comm->addr[i], a.addr, sizeof(comm->addr[i]));
	}
	comm->id = optr_auth_wire_id(j.comm, j.secret);
	comm->rank = j.rank;
	comm->nranks = j.nranks;
	comm->flags = j.flags;
	memcpy(&comm->group, j.group.addr, sizeof(comm->group));
	comm->group_ifindex = j.group.ifindex;
	comm->ttl = j.mcast_ttl ? j.mcast_ttl : 1;
	/* The secret is the members' alone: nothing reads it back. */
	memcpy(comm->secret, j.secret, sizeof(comm->secret));
	if (j.flags & OPTIREDUCE_JOIN_AUTH)
		optr_auth_key(comm->mac_key, j.secret);
	memzero_explicit(j.secret, sizeof(j.secret));
	comm->join = j;
	return comm;
}

static int optr_member_add(struct optr_net *on, struct optr_sock *osk,
			   struct optr_comm *comm)
{
	struct optr_sock *o;
	int err;

	mutex_lock(&on->lock);
	/*
	 * The rank is taken, or the communicator is another user's, or
	 * another communicator's wire id collides with it: the same errno,
	 * so that a join learns nothing about one that is not its own.
	 */
	hash_for_each_possible(on->members, o, member_node, comm->id) {
		if (o->comm->id == comm->id &&
		    (o->comm->rank == comm->rank ||
		     !uid_eq(optr_sock_uid(o), optr_sock_uid(osk)) ||
		     !optr_auth_same_secret(o->comm->secret, comm->secret))) {
			err = -EADDRINUSE;
			goto unlock;
		}
	}
	if (!on->nmembers) {
		err = optr_udp_open(on);
		if (err)
			goto unlock;
	}
	if (comm->flags & OPTIREDUCE_JOIN_MCAST) {
		err = optr_group_get(on, comm->group, comm->group_ifindex);
		if (err)
			goto err_udp;
	}
	/* comm is complete before the socket becomes visible to receivers,
	 * and comm and on->udp before its own calls on other CPUs see it:
	 * pairs with smp_load_acquire() in optr_sock_comm().
	 */
	smp_store_release(&osk->comm, comm);
	hash_add_rcu(on->members, &osk->member_node, comm->id);
	on->nmembers++;
	optr_steer_join();
	mutex_unlock(&on->lock);
	return 0;

err_udp:
	if (!on->nmembers)
		optr_udp_close(on);
unlock:
	mutex_unlock(&on->lock);
	return err;
}

int optr_comm_join(struct optr_sock *osk, sockptr_t optval,
		   unsigned int optlen)
{
	struct optr_comm *comm;
	int err;

	comm = optr_comm_parse(optval, optlen);
	if (IS_ERR(comm))
		return PTR_ERR(comm);
	comm->rate = optr_rate_alloc(comm->nranks);
	if (!comm->rate) {
		optr_comm_free(comm);
		return -ENOMEM;
	}

	lock_sock(&osk->sk);
	if (osk->comm)
		err = -EISCONN;
	else
		err = optr_member_add(osk->on, osk, comm);
	release_sock(&osk->sk);
	if (err)
		optr_comm_free(comm);
	return err;
}

/* getsockopt(OPTIREDUCE_JOIN): the join as given, with its peer table. */
int optr_comm_get(struct optr_sock *osk, char __user *optval, int *len)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optireduce_addr a = { .family = AF_INET };
	size_t need;
	u32 i;

	if (!comm)
		return -ENOTCONN;
	need = sizeof(comm->join) + (size_t)comm->nranks * sizeof(a);
	if (*len < need)
		return -EINVAL;
	if (copy_to_user(optval, &comm->join, sizeof(comm->join)))
		return -EFAULT;
	for (i = 0; i < comm->nranks; i++) {
		memcpy(a.addr, &comm->addr[i], sizeof(comm->addr[i]));
		if (copy_to_user(optval + sizeof(comm->join) + i * sizeof(a),
				 &a, sizeof(a)))
			return -EFAULT;
	}
	*len = need;
	return 0;
}

/* Called by release; the socket stops being found by the receive path. */
void optr_comm_leave(struct optr_sock *osk)
{
	struct optr_comm *comm = osk->comm;
	struct optr_net *on = osk->on;

	if (!comm)
		return;
	mutex_lock(&on->lock);
	hash_del_rcu(&osk->member_node);
	if (comm->flags & OPTIREDUCE_JOIN_MCAST)
		optr_group_put(on, comm->group, comm->group_ifindex);
	if (!--on->nmembers)
		optr_udp_close(on);
	optr_steer_leave();
	mutex_unlock(&on->lock);
}

void optr_comm_free(struct optr_comm *comm)
{
	if (comm) {
		memzero_explicit(comm->secret, sizeof(comm->secret));
		memzero_explicit(comm->mac_key, sizeof(comm->mac_key));
		optr_rate_free(comm->rate);
	}
	kvfree(comm);
}
