// SPDX-License-Identifier: GPL-2.0
/*
 * Per network namespace state and /proc/net/optireduce.
 *
 * Every socket holds a reference on its namespace (sk_alloc() with kern=0),
 * so a namespace is never torn down under a live socket: by the time the
 * exit hook runs, every socket has left, and with the last member the UDP
 * socket and group memberships went too.
 */

#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "comm.h"
#include "netns.h"
#include "sock.h"
#include "stats.h"

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

/*
 * "sockets N", "members N", the namespace's counters as "net NAME VALUE",
 * then one "sock" line per socket: inode, owner, and if joined its
 * communicator, rank, size, open rounds and queued completions (those
 * only for the reader's own sockets, or every socket for a reader with
 * CAP_NET_ADMIN).
 */
static int optr_proc_show(struct seq_file *seq, void *v)
{
	struct net *net = seq_file_single_net(seq);
	struct optr_net *on = optr_net(net);
	/* The opener's credentials, as for any /proc/net file. */
	bool admin = file_ns_capable(seq->file, net->user_ns, CAP_NET_ADMIN);
	kuid_t reader = seq->file->f_cred->euid;
	struct optireduce_stats st;
	struct optr_sock *osk;

	optr_stats_copy_net(on, &st);
	mutex_lock(&on->lock);
	seq_printf(seq, "sockets %u\nmembers %u\n", on->nsocks, on->nmembers);
	optr_stats_show(seq, "net ", &st);
	list_for_each_entry(osk, &on->socks, net_node) {
		struct optr_comm *comm = optr_sock_comm(osk);

		seq_printf(seq, "sock ino %llu uid %u", (u64)sock_i_ino(&osk->sk),
			   from_kuid_munged(seq_user_ns(seq),
					    optr_sock_uid(osk)));
		if (comm && optr_sock_details_visible(osk, reader, admin))
			seq_printf(seq, " comm %u rank %u nranks %u rounds %u completions %u",
				   comm->id, comm->rank, comm->nranks,
				   READ_ONCE(osk->nrounds),
				   READ_ONCE(osk->ncompl));
		seq_putc(seq, '\n');
	}
	mutex_unlock(&on->lock);
	return 0;
}

static int __net_init optr_net_init(struct net *net)
{
	struct optr_net *on = optr_net(net);

	on->net = net;
	mutex_init(&on->lock);
	INIT_LIST_HEAD(&on->socks);
	INIT_LIST_HEAD(&on->groups);
	hash_init(on->members);

	if (!proc_create_net_single("optireduce", 0444, net->proc_net,
				    optr_proc_show, NULL))
		return -ENOMEM;
	return 0;
}

static void __net_exit optr_net_exit(struct net *net)
{
	struct optr_net *on = optr_net(net);

	remove_proc_entry("optireduce", net->proc_net);
	mutex_lock(&on->lock);
	WARN_ON_ONCE(!list_empty(&on->socks) || on->nmembers || on->udp);
	mutex_unlock(&on->lock);
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
