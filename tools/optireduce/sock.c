// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce sock show: one line per socket of the namespace (the dump of
 * OPTIREDUCE_CMD_SOCK_GET); -s adds the deadline estimate and counters.
 * Under each socket rate control has run for, one line per peer rank.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "print.h"
#include "tool.h"

/* The multicast group of a joined socket or communicator (be32). */
void print_group(const struct nlattr *a)
{
	char s[INET_ADDRSTRLEN];
	uint32_t be = mnl_attr_get_u32(a);

	if (inet_ntop(AF_INET, &be, s, sizeof(s)))
		print_string("group", " group %s", s);
}

static void print_estimate(const struct nlattr *nest)
{
	static const enum mnl_attr_data_type types[__OPTIREDUCE_ESTIMATE_MAX] = {
		[OPTIREDUCE_ESTIMATE_DEADLINE_US] = MNL_TYPE_U32,
		[OPTIREDUCE_ESTIMATE_TYPICAL_US] = MNL_TYPE_U32,
		[OPTIREDUCE_ESTIMATE_SAMPLES] = MNL_TYPE_U32,
	};
	const struct nlattr *tb[__OPTIREDUCE_ESTIMATE_MAX];

	nl_parse_nested(nest, tb, __OPTIREDUCE_ESTIMATE_MAX - 1, types);
	print_open_object("estimate");
	print_text("    estimate");
	if (tb[OPTIREDUCE_ESTIMATE_DEADLINE_US])
		print_uint("deadline_us", " deadline %lluus",
			   attr_u32(tb[OPTIREDUCE_ESTIMATE_DEADLINE_US]));
	if (tb[OPTIREDUCE_ESTIMATE_TYPICAL_US])
		print_uint("typical_us", " typical %lluus",
			   attr_u32(tb[OPTIREDUCE_ESTIMATE_TYPICAL_US]));
	if (tb[OPTIREDUCE_ESTIMATE_SAMPLES])
		print_uint("samples", " samples %llu",
			   attr_u32(tb[OPTIREDUCE_ESTIMATE_SAMPLES]));
	print_text("\n");
	print_close_object();
}

/* One rank's rate control state (OPTIREDUCE_PEERS_PEER). */
static void print_peer(const struct nlattr *nest)
{
	static const enum mnl_attr_data_type types[__OPTIREDUCE_PEER_MAX] = {
		[OPTIREDUCE_PEER_RANK] = MNL_TYPE_U32,
		[OPTIREDUCE_PEER_RATE_MBPS] = MNL_TYPE_U32,
		[OPTIREDUCE_PEER_REPORTS] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_DECREASES] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_INCREASES] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_LOSS_PPM] = MNL_TYPE_U32,
		[OPTIREDUCE_PEER_CE_PPM] = MNL_TYPE_U32,
		[OPTIREDUCE_PEER_CE_RX] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_EARLY] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_STALE] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_FOREIGN] = MNL_TYPE_U64,
		[OPTIREDUCE_PEER_DRAINED] = MNL_TYPE_U64,
	};
	const struct nlattr *tb[__OPTIREDUCE_PEER_MAX];

	nl_parse_nested(nest, tb, __OPTIREDUCE_PEER_MAX - 1, types);
	if (!tb[OPTIREDUCE_PEER_RANK])
		return;
	print_open_object(NULL);
	print_uint("rank", "    peer %llu", attr_u32(tb[OPTIREDUCE_PEER_RANK]));
	if (tb[OPTIREDUCE_PEER_RATE_MBPS])
		print_uint("rate_mbps", " rate %lluMbit",
			   attr_u32(tb[OPTIREDUCE_PEER_RATE_MBPS]));
	if (tb[OPTIREDUCE_PEER_REPORTS])
		print_uint("reports", " reports %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_REPORTS]));
	if (tb[OPTIREDUCE_PEER_DECREASES])
		print_uint("decreases", " decreases %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_DECREASES]));
	if (tb[OPTIREDUCE_PEER_INCREASES])
		print_uint("increases", " increases %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_INCREASES]));
	if (tb[OPTIREDUCE_PEER_LOSS_PPM])
		print_uint("loss_ppm", " loss %lluppm",
			   attr_u32(tb[OPTIREDUCE_PEER_LOSS_PPM]));
	if (tb[OPTIREDUCE_PEER_CE_PPM])
		print_uint("ce_ppm", " ce %lluppm",
			   attr_u32(tb[OPTIREDUCE_PEER_CE_PPM]));
	if (tb[OPTIREDUCE_PEER_CE_RX])
		print_uint("ce_rx", " ce_rx %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_CE_RX]));
	if (tb[OPTIREDUCE_PEER_EARLY])
		print_uint("reports_early", " early %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_EARLY]));
	if (tb[OPTIREDUCE_PEER_STALE])
		print_uint("reports_stale", " stale %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_STALE]));
	if (tb[OPTIREDUCE_PEER_FOREIGN])
		print_uint("reports_foreign", " foreign %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_FOREIGN]));
	if (tb[OPTIREDUCE_PEER_DRAINED])
		print_uint("reports_drained", " drained %llu",
			   attr_u64(tb[OPTIREDUCE_PEER_DRAINED]));
	print_text("\n");
	print_close_object();
}

static void print_peers(const struct nlattr *nest)
{
	const struct nlattr *m;

	print_open_array("peers");
	mnl_attr_for_each_nested(m, nest) {
		if (mnl_attr_get_type(m) == OPTIREDUCE_PEERS_PEER &&
		    mnl_attr_validate(m, MNL_TYPE_NESTED) >= 0)
			print_peer(m);
	}
	print_close_array();
}

static int sock_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[OPTIREDUCE_A_MAX + 1];
	const struct ctx *c = data;

	nl_parse(nlh, tb, OPTIREDUCE_A_MAX, optr_attr_types);
	print_open_object(NULL);
	print_text("sock");
	if (tb[OPTIREDUCE_A_SOCK_INODE])
		print_uint("inode", " ino %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_INODE]));
	if (tb[OPTIREDUCE_A_SOCK_UID])
		print_uint("uid", " uid %llu", attr_u32(tb[OPTIREDUCE_A_SOCK_UID]));
	if (tb[OPTIREDUCE_A_COMM_ID]) {
		print_uint("comm", " comm %llu", attr_u32(tb[OPTIREDUCE_A_COMM_ID]));
		if (tb[OPTIREDUCE_A_COMM_RANK])
			print_uint("rank", " rank %llu",
				   attr_u32(tb[OPTIREDUCE_A_COMM_RANK]));
		if (tb[OPTIREDUCE_A_COMM_NRANKS])
			print_uint("nranks", " nranks %llu",
				   attr_u32(tb[OPTIREDUCE_A_COMM_NRANKS]));
		if (tb[OPTIREDUCE_A_COMM_GROUP])
			print_group(tb[OPTIREDUCE_A_COMM_GROUP]);
	} else if (tb[OPTIREDUCE_A_SOCK_ROUNDS]) {
		/* Without details (another user's socket) nothing is known. */
		print_text(" unjoined");
	}
	if (tb[OPTIREDUCE_A_SOCK_ROUNDS])
		print_uint("rounds", " rounds %llu",
			   attr_u32(tb[OPTIREDUCE_A_SOCK_ROUNDS]));
	if (tb[OPTIREDUCE_A_SOCK_COMPLETIONS])
		print_uint("completions", " completions %llu",
			   attr_u32(tb[OPTIREDUCE_A_SOCK_COMPLETIONS]));
	if (tb[OPTIREDUCE_A_SOCK_PACE_MBPS]) {
		unsigned long long pace = attr_u32(tb[OPTIREDUCE_A_SOCK_PACE_MBPS]);

		print_uint("pace_mbps", pace ? " pace %lluMbit" : " pace off",
			   pace);
	}
	if (tb[OPTIREDUCE_A_SOCK_RATE_MBPS])
		print_uint("rate_mbps", " rate %lluMbit",
			   attr_u32(tb[OPTIREDUCE_A_SOCK_RATE_MBPS]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_KNEE_MBPS])
		print_uint("rate_knee_mbps", " knee %lluMbit",
			   attr_u32(tb[OPTIREDUCE_A_SOCK_RATE_KNEE_MBPS]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_CUTS])
		print_uint("rate_cuts", " cuts %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_CUTS]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_RAISES])
		print_uint("rate_raises", " raises %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_RAISES]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_HOLDS])
		print_uint("rate_holds", " holds %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_HOLDS]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_UNREACHED])
		print_uint("rate_unreached", " unreached %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_UNREACHED]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_FOREIGN])
		print_uint("rate_foreign", " foreign %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_FOREIGN]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_UPLINK])
		print_uint("rate_uplink", " uplink %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_UPLINK]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_FOREIGN_LOSS])
		print_uint("rate_foreign_loss", " foreign-loss %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_FOREIGN_LOSS]));
	if (tb[OPTIREDUCE_A_SOCK_RATE_DRAINED])
		print_uint("rate_drained", " drained %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_RATE_DRAINED]));
	if (tb[OPTIREDUCE_A_SOCK_QUEUE_DROPS])
		print_uint("queue_drops", " queue_drops %llu",
			   attr_u64(tb[OPTIREDUCE_A_SOCK_QUEUE_DROPS]));
	print_text("\n");
	if (tb[OPTIREDUCE_A_SOCK_PEERS])
		print_peers(tb[OPTIREDUCE_A_SOCK_PEERS]);
	if (c->stats) {
		if (tb[OPTIREDUCE_A_ESTIMATE])
			print_estimate(tb[OPTIREDUCE_A_ESTIMATE]);
		if (tb[OPTIREDUCE_A_STATS])
			stats_print(tb[OPTIREDUCE_A_STATS], "stats", "    ");
	}
	print_close_object();
	return MNL_CB_OK;
}

static int sock_show(struct ctx *c, int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	int err;

	if (argc)
		return usage_error("optireduce sock", "unexpected argument '%s'",
				   argv[0]);
	if (ctx_nl(c) < 0)
		return 1;
	print_open_array(NULL);
	err = nl_request(&c->nl, nl_msg(&c->nl, buf, OPTIREDUCE_CMD_SOCK_GET,
					NLM_F_DUMP), sock_cb, c);
	print_close_array();
	if (err) {
		nl_perror(&c->nl, "sock show", err);
		return 1;
	}
	return 0;
}

const struct cmd sock_cmds[] = {
	{ "show", sock_show, NULL, NULL,
	  "list sockets: communicator, rank, open rounds, queued completions, pace, per-peer rates" },
	{}
};
