// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce stats { show | reset }: the namespace's counters, and the
 * counter printer sock show -s shares.
 *
 * Nested attribute i + 1 of OPTIREDUCE_A_STATS is field i of struct
 * optireduce_stats. In text the counters are grouped by the first word of
 * their name, one line per group, so "GROUP LABEL VALUE" reads back as the
 * kernel's name GROUP_LABEL (as in /proc/net/optireduce).
 */
#include <stdio.h>
#include <string.h>

#include "print.h"
#include "tool.h"

/* In the order of struct optireduce_stats. */
static const struct {
	const char *group;
	const char *label;
} stat_desc[] = {
	{ "rounds", "opened" },
	{ "rounds", "completed" },
	{ "rounds", "expired" },
	{ "rounds", "early" },
	{ "rounds", "cancelled" },
	{ "tx", "packets" },
	{ "tx", "bytes" },
	{ "tx", "dropped" },
	{ "rx", "packets" },
	{ "rx", "bytes" },
	{ "rx", "duplicate" },
	{ "drop", "malformed" },
	{ "drop", "unknown_comm" },
	{ "drop", "foreign_source" },
	{ "drop", "stale_round" },
	{ "drop", "no_post" },
	{ "drop", "out_of_bounds" },
	{ "bytes", "lost" },
	{ "backlog", "queued" },
	{ "drop", "nomem" },
	{ "rx", "gso_batches" },
	{ "rx", "steered" },
	{ "drop", "mem_limit" },
	{ "drop", "auth" },
};

#define NSTATS	(sizeof(stat_desc) / sizeof(stat_desc[0]))
_Static_assert(NSTATS == sizeof(struct optireduce_stats) / sizeof(__u64),
	       "stat_desc out of date with struct optireduce_stats");

/* The order of the text lines. */
static const char *const stat_groups[] = {
	"rounds", "tx", "rx", "drop", "bytes", "backlog",
};

void stats_print(const struct nlattr *nest, const char *key,
		 const char *indent)
{
	static enum mnl_attr_data_type types[NSTATS + 1];
	const struct nlattr *tb[NSTATS + 1];
	unsigned int g, i;

	for (i = 1; i <= NSTATS; i++)
		types[i] = MNL_TYPE_U64;
	nl_parse_nested(nest, tb, NSTATS, types);

	print_open_object(key);
	for (g = 0; g < sizeof(stat_groups) / sizeof(stat_groups[0]); g++) {
		print_text("%s%-7s", indent, stat_groups[g]);
		for (i = 0; i < NSTATS; i++) {
			char name[64], fmt[64];

			if (strcmp(stat_desc[i].group, stat_groups[g]) ||
			    !tb[OPTIREDUCE_STAT_ATTR(i)])
				continue;
			snprintf(name, sizeof(name), "%s_%s",
				 stat_desc[i].group, stat_desc[i].label);
			snprintf(fmt, sizeof(fmt), " %s %%llu",
				 stat_desc[i].label);
			print_uint(name, fmt,
				   attr_u64(tb[OPTIREDUCE_STAT_ATTR(i)]));
		}
		print_text("\n");
	}
	print_close_object();
}

static int stats_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[OPTIREDUCE_A_MAX + 1];
	bool *seen = data;

	nl_parse(nlh, tb, OPTIREDUCE_A_MAX, optr_attr_types);
	if (!tb[OPTIREDUCE_A_STATS] || *seen)
		return MNL_CB_OK;
	*seen = true;
	stats_print(tb[OPTIREDUCE_A_STATS], NULL, "");
	return MNL_CB_OK;
}

static int stats_show(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	bool seen = false;
	int err;

	(void)argv;
	if (argc)
		return usage_error("optireduce stats", "unexpected argument '%s'",
				   argv[0]);
	if (ctx_nl(c) < 0)
		return 1;
	err = nl_request(&c->nl, nl_msg(&c->nl, buf, OPTIREDUCE_CMD_STATS_GET, 0),
			 stats_cb, &seen);
	if (err) {
		nl_perror(&c->nl, "stats show", err);
		return 1;
	}
	if (!seen) {
		fprintf(stderr, "optireduce: stats show: no counters in the reply\n");
		return 1;
	}
	return 0;
}

static int stats_reset(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	int err;

	if (argc)
		return usage_error("optireduce stats", "unexpected argument '%s'",
				   argv[0]);
	if (ctx_nl(c) < 0)
		return 1;
	err = nl_request(&c->nl,
			 nl_msg(&c->nl, buf, OPTIREDUCE_CMD_STATS_RESET, 0),
			 NULL, NULL);
	if (err) {
		nl_perror(&c->nl, "stats reset", err);
		return 1;
	}
	return 0;
}

const struct cmd stats_cmds[] = {
	{ "show", stats_show, NULL, NULL, "the namespace's counters" },
	{ "reset", stats_reset, NULL, NULL,
	  "zero the counters of the namespace and its sockets (CAP_NET_ADMIN)" },
	{}
};
