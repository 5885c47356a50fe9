// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce param { show [NAME] | set NAME VALUE }: the module's
 * parameters through OPTIREDUCE_CMD_PARAM_GET/SET. The load-time ones
 * (family, sol, port) are listed read-only; the tunables with their range.
 * The kernel validates a new value exactly as a write to its sysfs file.
 */
#include <stdio.h>
#include <string.h>

#include "print.h"
#include "tool.h"

static int param_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[OPTIREDUCE_A_MAX + 1];
	bool writable;
	unsigned int *n = data;

	nl_parse(nlh, tb, OPTIREDUCE_A_MAX, optr_attr_types);
	if (!tb[OPTIREDUCE_A_PARAM_NAME] || !tb[OPTIREDUCE_A_PARAM_VALUE])
		return MNL_CB_OK;
	(*n)++;
	writable = tb[OPTIREDUCE_A_PARAM_WRITABLE];
	print_open_object(NULL);
	print_string("name", "%-20s",
		     mnl_attr_get_str(tb[OPTIREDUCE_A_PARAM_NAME]));
	print_uint("value", " %-10llu",
		   attr_u32(tb[OPTIREDUCE_A_PARAM_VALUE]));
	if (tb[OPTIREDUCE_A_PARAM_MIN])
		print_uint("min", writable ? " min %llu" : NULL,
			   attr_u32(tb[OPTIREDUCE_A_PARAM_MIN]));
	if (tb[OPTIREDUCE_A_PARAM_MAX])
		print_uint("max", writable ? " max %llu" : NULL,
			   attr_u32(tb[OPTIREDUCE_A_PARAM_MAX]));
	print_bool("writable", " rw\n", " ro\n", writable);
	print_close_object();
	return MNL_CB_OK;
}

static int param_show(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	unsigned int n = 0;
	int err;

	if (argc > 1)
		return usage_error("optireduce param", "unexpected argument '%s'",
				   argv[1]);
	if (ctx_nl(c) < 0)
		return 1;
	if (argc) {
		nlh = nl_msg(&c->nl, buf, OPTIREDUCE_CMD_PARAM_GET, 0);
		if (!mnl_attr_put_strz_check(nlh, sizeof(buf),
					     OPTIREDUCE_A_PARAM_NAME, argv[0]))
			return usage_error("optireduce param", "name too long");
	} else {
		nlh = nl_msg(&c->nl, buf, OPTIREDUCE_CMD_PARAM_GET, NLM_F_DUMP);
	}
	print_open_array(NULL);
	err = nl_request(&c->nl, nlh, param_cb, &n);
	print_close_array();
	if (err) {
		char what[96];

		snprintf(what, sizeof(what), "param show%s%.64s",
			 argc ? " " : "", argc ? argv[0] : "");
		nl_perror(&c->nl, what, err);
		return 1;
	}
	return 0;
}

static int param_set(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	char what[96];
	uint32_t v;
	int err;

	if (argc != 2)
		return usage_error("optireduce param", argc < 2 ?
				   "param set needs NAME and VALUE" :
				   "param set takes NAME and VALUE only");
	if (parse_u32(argv[1], &v) < 0)
		return usage_error("optireduce param",
				   "invalid value '%s': not an unsigned 32-bit number",
				   argv[1]);
	if (ctx_nl(c) < 0)
		return 1;
	nlh = nl_msg(&c->nl, buf, OPTIREDUCE_CMD_PARAM_SET, 0);
	if (!mnl_attr_put_strz_check(nlh, sizeof(buf), OPTIREDUCE_A_PARAM_NAME,
				     argv[0]))
		return usage_error("optireduce param", "name too long");
	mnl_attr_put_u32(nlh, OPTIREDUCE_A_PARAM_VALUE, v);
	err = nl_request(&c->nl, nlh, NULL, NULL);
	if (err) {
		snprintf(what, sizeof(what), "param set %.64s %s", argv[0],
			 argv[1]);
		nl_perror(&c->nl, what, err);
		return 1;
	}
	return 0;
}

const struct cmd param_cmds[] = {
	{ "show", param_show, NULL, "[NAME]",
	  "list parameters: value, and for tunables min, max (rw or ro)" },
	{ "set", param_set, NULL, "NAME VALUE",
	  "change a tunable; the kernel checks the range (CAP_NET_ADMIN)" },
	{}
};
