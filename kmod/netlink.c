// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family: what the optireduce tool reads and sets.
 * Commands and attributes are listed in uapi/linux/optireduce.h. Every
 * command sees only its own network namespace. A socket's communicator,
 * rounds and counters, and the communicators it stands for, are shown to
 * its owner and to readers with CAP_NET_ADMIN; others see its inode and
 * owner. Round events need CAP_NET_ADMIN. Changing a module-wide
 * tunable needs CAP_NET_ADMIN in the initial user namespace; resetting a
 * namespace's counters, CAP_NET_ADMIN over that namespace. Events go to
 * the "events" multicast group of the namespace where the round ended.
 */

#include <linux/module.h>
#include <linux/string.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <uapi/linux/optireduce.h>

#include "comm.h"
#include "netlink.h"
#include "netns.h"
#include "params.h"
#include "rate.h"
#include "sock.h"
#include "stats.h"

#define OPTR_PARAM_NAME_MAX	32

static struct genl_family optr_nl_family;

static const struct nla_policy optr_nl_policy[OPTIREDUCE_A_MAX + 1] = {
	[OPTIREDUCE_A_PARAM_NAME] = { .type = NLA_NUL_STRING,
				      .len = OPTR_PARAM_NAME_MAX - 1 },
	[OPTIREDUCE_A_PARAM_VALUE] = { .type = NLA_U32 },
};

static int optr_nl_put_stats(struct sk_buff *skb,
			     const struct optireduce_stats *st)
{
	const u64 *v = (const u64 *)st;
	struct nlattr *nest;
	int i;

	nest = nla_nest_start(skb, OPTIREDUCE_A_STATS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < OPTR_NSTATS; i++)
		if (nla_put_u64_64bit(skb, OPTIREDUCE_STAT_ATTR(i), v[i],
				      OPTIREDUCE_A_PAD))
			goto cancel;
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* @user_ns: the reader's, into which the owner's uid is mapped (as /proc
 * and inet_diag do).
 */
static int optr_nl_put_sock(struct sk_buff *skb, struct optr_sock *osk,
			    struct user_namespace *user_ns, bool details)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optireduce_estimate est = {};
	struct optireduce_stats st;
	struct nlattr *nest;
	u32 pace;

	optr_stats_copy_sock(osk, &st);
	optr_sock_estimate(osk, &est);
	pace = osk->pace_set ? READ_ONCE(osk->pace_mbps) :
			       optr_tunable_get(&optr_pace_mbps);

	if (nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_INODE,
			      sock_i_ino(&osk->sk), OPTIREDUCE_A_PAD) ||
	    nla_put_u32(skb, OPTIREDUCE_A_SOCK_UID,
			from_kuid_munged(user_ns, optr_sock_uid(osk))))
		return -EMSGSIZE;
	if (!details)
		return 0;
	if (nla_put_u32(skb, OPTIREDUCE_A_SOCK_PACE_MBPS, pace) ||
	    nla_put_u32(skb, OPTIREDUCE_A_SOCK_ROUNDS, READ_ONCE(osk->nrounds)) ||
	    nla_put_u32(skb, OPTIREDUCE_A_SOCK_COMPLETIONS,
			READ_ONCE(osk->ncompl)))
		return -EMSGSIZE;
	if (!comm)
		return optr_nl_put_stats(skb, &st);

	if (nla_put_u32(skb, OPTIREDUCE_A_COMM_ID, comm->id) ||
	    nla_put_u32(skb, OPTIREDUCE_A_COMM_RANK, comm->rank) ||
	    nla_put_u32(skb, OPTIREDUCE_A_COMM_NRANKS, comm->nranks) ||
	    ((comm->flags & OPTIREDUCE_JOIN_MCAST) &&
	     nla_put_be32(skb, OPTIREDUCE_A_COMM_GROUP, comm->group)))
		return -EMSGSIZE;
	nest = nla_nest_start(skb, OPTIREDUCE_A_ESTIMATE);
	if (!nest ||
	    nla_put_u32(skb, OPTIREDUCE_ESTIMATE_DEADLINE_US, est.deadline_us) ||
	    nla_put_u32(skb, OPTIREDUCE_ESTIMATE_TYPICAL_US, est.typical_us) ||
	    nla_put_u32(skb, OPTIREDUCE_ESTIMATE_SAMPLES, est.samples))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	if (optr_nl_put_stats(skb, &st))
		return -EMSGSIZE;
	return optr_rate_nl_put(skb, osk);
}

/*
 * The namespace's sockets one message each, from the index kept in
 * cb->args[0]: @want picks the sockets, @fill puts one message's
 * attributes. One socket that does not fit an empty message is an error.
 */
static int optr_nl_dump_socks(struct sk_buff *skb, struct netlink_callback *cb,
			      u8 cmd,
			      bool (*want)(struct netlink_callback *,
					   struct optr_net *, struct optr_sock *),
			      int (*fill)(struct sk_buff *, struct netlink_callback *,
					  struct optr_net *, struct optr_sock *))
{
	struct optr_net *on = optr_net(sock_net(skb->sk));
	struct optr_sock *osk;
	long idx = 0, start = cb->args[0];
	int err = 0;

	mutex_lock(&on->lock);
	list_for_each_entry(osk, &on->socks, net_node) {
		void *hdr;

		if (!want(cb, on, osk) || idx++ < start)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &optr_nl_family,
				  NLM_F_MULTI, cmd);
		if (!hdr) {
			err = -EMSGSIZE;
			break;
		}
		err = fill(skb, cb, on, osk);
		if (err) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	mutex_unlock(&on->lock);
	if (err && idx - 1 == start)
		return err;
	cb->args[0] = err ? idx - 1 : idx;
	return skb->len;
}

/* See optr_sock_details_visible(); a dump runs in the reader's process. */
static bool optr_nl_details(struct netlink_callback *cb,
			    struct optr_sock *osk)
{
	return optr_sock_details_visible(osk, current_euid(),
					 netlink_net_capable(cb->skb,
							     CAP_NET_ADMIN));
}

static bool optr_nl_any_sock(struct netlink_callback *cb, struct optr_net *on,
			     struct optr_sock *osk)
{
	return true;
}

static int optr_nl_fill_sock(struct sk_buff *skb, struct netlink_callback *cb,
			     struct optr_net *on, struct optr_sock *osk)
{
	return optr_nl_put_sock(skb, osk, sk_user_ns(NETLINK_CB(cb->skb).sk),
				optr_nl_details(cb, osk));
}

static int optr_nl_sock_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return optr_nl_dump_socks(skb, cb, OPTIREDUCE_CMD_SOCK_GET,
				  optr_nl_any_sock, optr_nl_fill_sock);
}

/*
 * The first joined socket of each communicator stands for it; its members
 * all have one owner (comm.c), so it says whose the communicator is.
 */
static bool optr_nl_first_of_comm(struct netlink_callback *cb,
				  struct optr_net *on, struct optr_sock *osk)
{
	struct optr_sock *o;

	lockdep_assert_held(&on->lock);
	if (!osk->comm || !optr_nl_details(cb, osk))
		return false;
	list_for_each_entry(o, &on->socks, net_node) {
		if (o == osk)
			return true;
		if (o->comm && o->comm->id == osk->comm->id)
			return false;
	}
	return true;
}

static int optr_nl_fill_comm(struct sk_buff *skb, struct netlink_callback *cb,
			     struct optr_net *on, struct optr_sock *first)
{
	const struct optr_comm *comm = first->comm;
	struct optr_sock *o;
	struct nlattr *nest;

	if (nla_put_u32(skb, OPTIREDUCE_A_COMM_ID, comm->id) ||
	    nla_put_u32(skb, OPTIREDUCE_A_COMM_NRANKS, comm->nranks) ||
	    ((comm->flags & OPTIREDUCE_JOIN_MCAST) &&
	     nla_put_be32(skb, OPTIREDUCE_A_COMM_GROUP, comm->group)))
		return -EMSGSIZE;
	nest = nla_nest_start(skb, OPTIREDUCE_A_COMM_MEMBERS);
	if (!nest)
		return -EMSGSIZE;
	list_for_each_entry(o, &on->socks, net_node)
		if (o->comm && o->comm->id == comm->id &&
		    nla_put_u32(skb, OPTIREDUCE_A_COMM_RANK, o->comm->rank))
			return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int optr_nl_comm_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	return optr_nl_dump_socks(skb, cb, OPTIREDUCE_CMD_COMM_GET,
				  optr_nl_first_of_comm, optr_nl_fill_comm);
}

/* A reply of one message with the attributes @fill puts. */
static int optr_nl_reply(struct genl_info *info, u8 cmd,
			 int (*fill)(struct sk_buff *, void *), void *arg)
{
	struct sk_buff *msg;
	void *hdr;
	int err;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &optr_nl_family, 0, cmd);
	if (!hdr) {
		err = -EMSGSIZE;
		goto err;
	}
	err = fill(msg, arg);
	if (err)
		goto err;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
err:
	nlmsg_free(msg);
	return err;
}

static int optr_nl_fill_stats(struct sk_buff *skb, void *arg)
{
	struct optireduce_stats st;

	optr_stats_copy_net(arg, &st);
	return optr_nl_put_stats(skb, &st);
}

static int optr_nl_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	return optr_nl_reply(info, OPTIREDUCE_CMD_STATS_GET, optr_nl_fill_stats,
			     optr_net(genl_info_net(info)));
}

static int optr_nl_stats_reset(struct sk_buff *skb, struct genl_info *info)
{
	struct optr_net *on = optr_net(genl_info_net(info));
	struct optr_sock *osk;
	int i;

	mutex_lock(&on->lock);
	for (i = 0; i < OPTR_NSTATS; i++)
		atomic64_set(&on->stats[i], 0);
	list_for_each_entry(osk, &on->socks, net_node) {
		spin_lock_bh(&osk->lock);
		memset(osk->stats, 0, sizeof(osk->stats));
		spin_unlock_bh(&osk->lock);
	}
	mutex_unlock(&on->lock);
	return 0;
}

/* Read-only parameters are listed too, with their load-time value. */
struct optr_nl_param {
	const char *name;
	u32 value, min, max;
	bool writable;
};

static bool optr_nl_param_at(unsigned int i, struct optr_nl_param *p)
{
	static const char *const fixed[] = { "family", "sol", "port" };
	const struct optr_tunable_entry *e;

	if (i < ARRAY_SIZE(fixed)) {
		*p = (struct optr_nl_param) {
			.name = fixed[i],
			.value = i == 0 ? optr_family : i == 1 ? optr_sol :
			      optr_port,
		};
		p->min = p->value;
		p->max = p->value;
		return true;
	}
	for (e = optr_tunables, i -= ARRAY_SIZE(fixed); e->name && i; e++, i--)
		;
	if (!e->name)
		return false;
	*p = (struct optr_nl_param) {
		.name = e->name, .value = optr_tunable_get(e->t),
		.min = e->t->min, .max = e->t->max, .writable = true,
	};
	return true;
}

static int optr_nl_put_param(struct sk_buff *skb, void *arg)
{
	const struct optr_nl_param *p = arg;

	if (nla_put_string(skb, OPTIREDUCE_A_PARAM_NAME, p->name) ||
	    nla_put_u32(skb, OPTIREDUCE_A_PARAM_VALUE, p->value) ||
	    nla_put_u32(skb, OPTIREDUCE_A_PARAM_MIN, p->min) ||
	    nla_put_u32(skb, OPTIREDUCE_A_PARAM_MAX, p->max) ||
	    (p->writable && nla_put_flag(skb, OPTIREDUCE_A_PARAM_WRITABLE)))
		return -EMSGSIZE;
	return 0;
}

static int optr_nl_param_find(struct genl_info *info, struct optr_nl_param *p,
			      unsigned int *idx)
{
	unsigned int i;

	if (!info->attrs[OPTIREDUCE_A_PARAM_NAME]) {
		GENL_SET_ERR_MSG(info, "parameter name missing");
		return -EINVAL;
	}
	for (i = 0; optr_nl_param_at(i, p); i++) {
		if (!nla_strcmp(info->attrs[OPTIREDUCE_A_PARAM_NAME], p->name)) {
			*idx = i;
			return 0;
		}
	}
	GENL_SET_ERR_MSG(info, "no such parameter");
	return -ENOENT;
}

static int optr_nl_param_get(struct sk_buff *skb, struct genl_info *info)
{
	struct optr_nl_param p;
	unsigned int i;
	int err;

	err = optr_nl_param_find(info, &p, &i);
	if (err)
		return err;
	return optr_nl_reply(info, OPTIREDUCE_CMD_PARAM_GET, optr_nl_put_param,
			     &p);
}

static int optr_nl_param_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct optr_nl_param p;
	unsigned int i;

	for (i = cb->args[0]; optr_nl_param_at(i, &p); i++) {
		void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, &optr_nl_family,
					NLM_F_MULTI, OPTIREDUCE_CMD_PARAM_GET);

		if (!hdr)
			break;
		if (optr_nl_put_param(skb, &p)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = i;
	return skb->len;
}

static int optr_nl_param_set(struct sk_buff *skb, struct genl_info *info)
{
	const struct optr_tunable_entry *e;
	struct optr_nl_param p;
	unsigned int i;
	u32 v;
	int err;

	if (!info->attrs[OPTIREDUCE_A_PARAM_VALUE]) {
		GENL_SET_ERR_MSG(info, "value missing");
		return -EINVAL;
	}
	err = optr_nl_param_find(info, &p, &i);
	if (err)
		return err;
	if (!p.writable) {
		GENL_SET_ERR_MSG(info, "parameter is fixed at load time");
		return -EPERM;
	}
	for (e = optr_tunables; strcmp(e->name, p.name); e++)
		;
	v = nla_get_u32(info->attrs[OPTIREDUCE_A_PARAM_VALUE]);
	err = optr_tunable_write(e->t, v);
	if (err && v >= e->t->min && v <= e->t->max)
		GENL_SET_ERR_MSG(info,
				 "deadline_min_us may not exceed deadline_max_us");
	else if (err)
		GENL_SET_ERR_MSG(info, "value out of range");
	return err;
}

static const struct genl_ops optr_nl_ops[] = {
	{
		.cmd = OPTIREDUCE_CMD_SOCK_GET,
		.dumpit = optr_nl_sock_dump,
	},
	{
		.cmd = OPTIREDUCE_CMD_COMM_GET,
		.dumpit = optr_nl_comm_dump,
	},
	{
		.cmd = OPTIREDUCE_CMD_STATS_GET,
		.doit = optr_nl_stats_get,
	},
	{
		.cmd = OPTIREDUCE_CMD_STATS_RESET,
		.doit = optr_nl_stats_reset,
		/* The namespace's own counters: its owner may reset them. */
		.flags = GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd = OPTIREDUCE_CMD_PARAM_GET,
		.doit = optr_nl_param_get,
		.dumpit = optr_nl_param_dump,
	},
	{
		.cmd = OPTIREDUCE_CMD_PARAM_SET,
		.doit = optr_nl_param_set,
		.flags = GENL_ADMIN_PERM,
	},
};

/* Events name every user's communicators: an administrator's to read. */
static const struct genl_multicast_group optr_nl_mcgrps[] = {
	{ .name = OPTIREDUCE_GENL_MCGRP_EVENTS,
	  .flags = GENL_MCAST_CAP_NET_ADMIN },
};

static struct genl_family optr_nl_family __ro_after_init = {
	.name = OPTIREDUCE_GENL_NAME,
	.version = OPTIREDUCE_GENL_VERSION,
	.maxattr = OPTIREDUCE_A_MAX,
	.policy = optr_nl_policy,
	.netnsok = true,
	.module = THIS_MODULE,
	.ops = optr_nl_ops,
	.n_ops = ARRAY_SIZE(optr_nl_ops),
	.mcgrps = optr_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(optr_nl_mcgrps),
	/* Strict validation of every command. */
	.resv_start_op = OPTIREDUCE_CMD_SOCK_GET,
};

/*
 * Tell listeners of @osk's namespace about a round that ended with bytes
 * missing. Called from softirq context with the socket's lock held, so
 * nothing here may sleep; without listeners it costs one check.
 */
void optr_nl_round_event(struct optr_sock *osk, u8 cmd, u32 round, u64 lost,
			 u64 expected)
{
	struct net *net = sock_net(&osk->sk);
	struct sk_buff *msg;
	void *hdr;

	lockdep_assert_held(&osk->lock);
	if (!genl_has_listeners(&optr_nl_family, net, 0))
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_ATOMIC);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &optr_nl_family, 0, cmd);
	if (!hdr ||
	    nla_put_u32(msg, OPTIREDUCE_A_COMM_ID, osk->comm->id) ||
	    nla_put_u32(msg, OPTIREDUCE_A_COMM_RANK, osk->comm->rank) ||
	    nla_put_u32(msg, OPTIREDUCE_A_EVENT_ROUND, round) ||
	    nla_put_u64_64bit(msg, OPTIREDUCE_A_EVENT_LOST, lost,
			      OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(msg, OPTIREDUCE_A_EVENT_EXPECTED, expected,
			      OPTIREDUCE_A_PAD)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast_netns(&optr_nl_family, net, msg, 0, 0, GFP_ATOMIC);
}

/*
 * A genetlink lookup of the family by name (CTRL_CMD_GETFAMILY, as the
 * optireduce tool and libmnl clients do) asks for this alias when no such
 * family is registered, so the lookup loads the module.
 */
MODULE_ALIAS_GENL_FAMILY(OPTIREDUCE_GENL_NAME);

int optr_netlink_init(void)
{
	return genl_register_family(&optr_nl_family);
}

void optr_netlink_exit(void)
{
	genl_unregister_family(&optr_nl_family);
}
