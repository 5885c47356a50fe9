// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce comm show: one line per communicator with a member in the
 * namespace (the dump of OPTIREDUCE_CMD_COMM_GET): size, multicast group,
 * the ranks that live here.
 */
#include <stdio.h>

#include "print.h"
#include "tool.h"

static int comm_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[OPTIREDUCE_A_MAX + 1], *m;

	(void)data;
	nl_parse(nlh, tb, OPTIREDUCE_A_MAX, optr_attr_types);
	print_open_object(NULL);
	print_text("comm");
	if (tb[OPTIREDUCE_A_COMM_ID])
		print_uint("comm", " %llu", attr_u32(tb[OPTIREDUCE_A_COMM_ID]));
	if (tb[OPTIREDUCE_A_COMM_NRANKS])
		print_uint("nranks", " nranks %llu",
			   attr_u32(tb[OPTIREDUCE_A_COMM_NRANKS]));
	if (tb[OPTIREDUCE_A_COMM_GROUP])
		print_group(tb[OPTIREDUCE_A_COMM_GROUP]);
	print_open_array("members");
	print_text(" members");
	if (tb[OPTIREDUCE_A_COMM_MEMBERS]) {
		mnl_attr_for_each_nested(m, tb[OPTIREDUCE_A_COMM_MEMBERS]) {
			if (mnl_attr_get_type(m) != OPTIREDUCE_A_COMM_RANK ||
			    mnl_attr_validate(m, MNL_TYPE_U32) < 0)
				continue;
			print_uint("rank", " %llu", mnl_attr_get_u32(m));
		}
	}
	print_close_array();
	print_text("\n");
	print_close_object();
	return MNL_CB_OK;
}

static int comm_show(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	int err;

	if (argc)
		return usage_error("optireduce comm", "unexpected argument '%s'",
				   argv[0]);
	if (ctx_nl(c) < 0)
		return 1;
	print_open_array(NULL);
	err = nl_request(&c->nl, nl_msg(&c->nl, buf, OPTIREDUCE_CMD_COMM_GET,
					NLM_F_DUMP), comm_cb, NULL);
	print_close_array();
	if (err) {
		nl_perror(&c->nl, "comm show", err);
		return 1;
	}
	return 0;
}

const struct cmd comm_cmds[] = {
	{ "show", comm_show, NULL, NULL,
	  "list communicators: size, multicast group, local member ranks" },
	{}
};
