/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_NETNS_H
#define _OPTR_NETNS_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <net/net_namespace.h>

struct optr_sock;

/* Per network namespace state. */
struct optr_net {
	struct net *net;
	/* Protects socks and nsocks. */
	struct mutex lock;
	struct list_head socks;
	unsigned int nsocks;
};

struct optr_net *optr_net(const struct net *net);
void optr_net_add_sock(struct optr_net *on, struct optr_sock *osk);
void optr_net_del_sock(struct optr_net *on, struct optr_sock *osk);

int optr_netns_init(void);
void optr_netns_exit(void);

#endif /* _OPTR_NETNS_H */
