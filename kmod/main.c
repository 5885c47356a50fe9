// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce.ko: a lossy, time-bounded datagram transport for gradient
 * allreduce, exposed as a socket family.
 *
 * Init order: per-namespace state, then the netlink family (which reads it),
 * then the socket family last, so that no socket can be created before the
 * state it needs exists. Exit undoes the steps in exact reverse.
 */

#include <linux/module.h>

#include "af.h"
#include "netlink.h"
#include "netns.h"
#include "params.h"

static int __init optr_init(void)
{
	int err;

	err = optr_netns_init();
	if (err)
		return err;

	err = optr_netlink_init();
	if (err)
		goto err_netns;

	err = optr_af_init();
	if (err)
		goto err_netlink;

	pr_info("optireduce: family %d, option level %d, port %u\n",
		optr_family, optr_sol, optr_port);
	return 0;

err_netlink:
	optr_netlink_exit();
err_netns:
	optr_netns_exit();
	return err;
}

static void __exit optr_exit(void)
{
	optr_af_exit();
	optr_netlink_exit();
	optr_netns_exit();
}

module_init(optr_init);
module_exit(optr_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("OptiReduce: lossy, time-bounded transport for allreduce");
MODULE_AUTHOR("OptiReduce for Linux developers");
MODULE_VERSION("0.1");
