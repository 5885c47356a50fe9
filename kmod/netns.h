/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_NETNS_H
#define _OPTR_NETNS_H

#include <linux/atomic.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <net/net_namespace.h>

#include "stats.h"

struct optr_sock;
struct socket;

/*
 * Per network namespace state. The UDP socket exists while at least one
 * socket of the namespace is joined to a communicator (nmembers > 0), so
 * an idle namespace holds no port.
 */
struct optr_net {
	struct net *net;
	/* Protects socks, nsocks, members (writers), nmembers, udp, groups. */
	struct mutex lock;
	struct list_head socks;
	unsigned int nsocks;
	DECLARE_HASHTABLE(members, 8);	/* joined sockets by comm id; RCU */
	unsigned int nmembers;
	struct socket *udp;
	struct list_head groups;	/* struct optr_group */
	atomic64_t stats[OPTR_NSTATS];
};

struct optr_net *optr_net(const struct net *net);
void optr_net_add_sock(struct optr_net *on, struct optr_sock *osk);
void optr_net_del_sock(struct optr_net *on, struct optr_sock *osk);

int optr_netns_init(void);
void optr_netns_exit(void);

#endif /* _OPTR_NETNS_H */
