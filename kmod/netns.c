// SPDX-License-Identifier: GPL-2.0
/*
 * Per network namespace state and /proc/net/optireduce.
 *
 * Every socket holds a reference on its namespace (sk_alloc() with kern=0),
 * so a namespace is never torn down under a live socket; the exit hook only
 * has to find its list empty.
 */

#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "af.h"
#include "netns.h"

static unsigned int optr_net_id __read_mostly;

struct optr_net *optr_net(const struct net *net)
{
	return net_generic(net, optr_net_id);
}

void optr_net_add_sock(struct optr_net *on, struct optr_sock *osk)
{
	mutex_lock(&on->lock);
	list_add_tail(&osk->net_node, &on->socks);
	on->nsocks++;
	mutex_unlock(&on->lock);
}

void optr_net_del_sock(struct optr_net *on, struct optr_sock *osk)
{
	mutex_lock(&on->lock);
	list_del(&osk->net_node);
	on->nsocks--;
	mutex_unlock(&on->lock);
}

static int optr_proc_show(struct seq_file *seq, void *v)
{
	struct optr_net *on = optr_net(seq_file_single_net(seq));
	struct optr_sock *osk;

	mutex_lock(&on->lock);
	seq_printf(seq, "sockets %u\n", on->nsocks);
	list_for_each_entry(osk, &on->socks, net_node)
		seq_printf(seq, "sock ino %lu uid %u\n", sock_i_ino(&osk->sk),
			   from_kuid_munged(seq_user_ns(seq),
					    sock_i_uid(&osk->sk)));
	mutex_unlock(&on->lock);
	return 0;
}

static int __net_init optr_net_init(struct net *net)
{
	struct optr_net *on = optr_net(net);

	on->net = net;
	mutex_init(&on->lock);
	INIT_LIST_HEAD(&on->socks);

	if (!proc_create_net_single("optireduce", 0444, net->proc_net,
				    optr_proc_show, NULL))
		return -ENOMEM;
	return 0;
}

static void __net_exit optr_net_exit(struct net *net)
{
	struct optr_net *on = optr_net(net);

	remove_proc_entry("optireduce", net->proc_net);
	WARN_ON_ONCE(!list_empty(&on->socks));
	mutex_destroy(&on->lock);
}

static struct pernet_operations optr_net_ops = {
	.init = optr_net_init,
	.exit = optr_net_exit,
	.id = &optr_net_id,
	.size = sizeof(struct optr_net),
};

int optr_netns_init(void)
{
	return register_pernet_subsys(&optr_net_ops);
}

void optr_netns_exit(void)
{
	unregister_pernet_subsys(&optr_net_ops);
}
