// SPDX-License-Identifier: GPL-2.0
/* libmnl helpers; see nl.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/optireduce.h>

#include "nl.h"

static char rxbuf[NL_BUFSIZE] __attribute__((aligned(8)));

/* What the callbacks of one request share. */
struct nl_call {
	struct nl *nl;
	mnl_cb_t cb;
	void *data;
};

struct nl_parse_ctx {
	const struct nlattr **tb;
	unsigned int max;
	const enum mnl_attr_data_type *types;
};

static int nl_attr_cb(const struct nlattr *a, void *data)
{
	const struct nl_parse_ctx *p = data;
	unsigned int type = mnl_attr_get_type(a);

	if (type > p->max)
		return MNL_CB_OK;	/* newer kernel: not ours to know */
	if (p->types[type] != MNL_TYPE_UNSPEC &&
	    mnl_attr_validate(a, p->types[type]) < 0)
		return MNL_CB_OK;	/* malformed: as if absent */
	p->tb[type] = a;
	return MNL_CB_OK;
}

void nl_parse(const struct nlmsghdr *nlh, const struct nlattr **tb,
	      unsigned int max, const enum mnl_attr_data_type *types)
{
	struct nl_parse_ctx p = { tb, max, types };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), nl_attr_cb, &p);
}

void nl_parse_nested(const struct nlattr *nest, const struct nlattr **tb,
		     unsigned int max, const enum mnl_attr_data_type *types)
{
	struct nl_parse_ctx p = { tb, max, types };

	memset(tb, 0, (max + 1) * sizeof(*tb));
	mnl_attr_parse_nested(nest, nl_attr_cb, &p);
}

/* The NLMSGERR_ATTR_MSG of an error or done message, @off bytes into its
 * payload, into nl->extack.
 */
static void nl_save_extack(struct nl *nl, const struct nlmsghdr *nlh,
			   size_t off)
{
	static const enum mnl_attr_data_type types[NLMSGERR_ATTR_MAX + 1] = {
		[NLMSGERR_ATTR_MSG] = MNL_TYPE_NUL_STRING,
	};
	const struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct nl_parse_ctx p = { tb, NLMSGERR_ATTR_MAX, types };

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) ||
	    MNL_ALIGN(off) > mnl_nlmsg_get_payload_len(nlh))
		return;
	memset(tb, 0, sizeof(tb));
	mnl_attr_parse(nlh, off, nl_attr_cb, &p);
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(nl->extack, sizeof(nl->extack), "%s",
			 mnl_attr_get_str(tb[NLMSGERR_ATTR_MSG]));
}

static int nl_error_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nl_call *call = data;
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t off = sizeof(*err);

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*err))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += mnl_nlmsg_get_payload_len(&err->msg);
	nl_save_extack(call->nl, nlh, off);
	if (err->error == 0)
		return MNL_CB_STOP;	/* the ack */
	errno = err->error < 0 ? -err->error : err->error;
	return MNL_CB_ERROR;
}

/* The end of a dump; it carries the dump's error, if it failed midway. */
static int nl_done_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nl_call *call = data;
	int error = 0;

	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(error))
		memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(error));
	nl_save_extack(call->nl, nlh, sizeof(error));
	if (error == 0)
		return MNL_CB_STOP;
	errno = error < 0 ? -error : error;
	return MNL_CB_ERROR;
}

static int nl_data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nl_call *call = data;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(struct genlmsghdr)))
		return MNL_CB_OK;
	return call->cb ? call->cb(nlh, call->data) : MNL_CB_OK;
}

/* Not const: mnl_cb_run2() takes a plain pointer. */
static mnl_cb_t nl_ctl_cbs[NLMSG_MIN_TYPE] = {
	[NLMSG_ERROR] = nl_error_cb,
	[NLMSG_DONE] = nl_done_cb,
};

struct nlmsghdr *nl_msg(struct nl *nl, void *buf, uint8_t cmd, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *genl;

	nlh->nlmsg_type = nl->family;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++nl->seq;
	genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
	genl->cmd = cmd;
	genl->version = nl->family == GENL_ID_CTRL ? 1 : OPTIREDUCE_GENL_VERSION;
	return nlh;
}

int nl_request(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct nl_call call = { nl, cb, data };
	unsigned int seq = nlh->nlmsg_seq;
	int ret;

	nl->extack[0] = '\0';
	/* A dump ends with NLMSG_DONE, anything else with an ack. */
	if (!(nlh->nlmsg_flags & NLM_F_DUMP))
		nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t n = mnl_socket_recvfrom(nl->sock, rxbuf, sizeof(rxbuf));

		if (n < 0)
			return -errno;
		ret = mnl_cb_run2(rxbuf, n, seq, nl->portid, nl_data_cb, &call,
				  nl_ctl_cbs, NLMSG_MIN_TYPE);
	} while (ret > MNL_CB_STOP);
	return ret == MNL_CB_ERROR ? -(errno ? errno : EIO) : 0;
}

void nl_perror(const struct nl *nl, const char *what, int err)
{
	if (err < 0)
		err = -err;
	if (nl && nl->extack[0])
		fprintf(stderr, "optireduce: %s: %s (%s)\n", what, nl->extack,
			strerror(err));
	else if (err == EPERM)
		fprintf(stderr, "optireduce: %s: %s (needs CAP_NET_ADMIN)\n",
			what, strerror(err));
	else
		fprintf(stderr, "optireduce: %s: %s\n", what, strerror(err));
}

/* --- family resolution ---------------------------------------------- */

static int nl_grp_cb(const struct nlattr *grp, struct nl *nl)
{
	static const enum mnl_attr_data_type types[CTRL_ATTR_MCAST_GRP_MAX + 1] = {
		[CTRL_ATTR_MCAST_GRP_NAME] = MNL_TYPE_NUL_STRING,
		[CTRL_ATTR_MCAST_GRP_ID] = MNL_TYPE_U32,
	};
	const struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1];

	nl_parse_nested(grp, tb, CTRL_ATTR_MCAST_GRP_MAX, types);
	if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
	    !strcmp(mnl_attr_get_str(tb[CTRL_ATTR_MCAST_GRP_NAME]),
		    OPTIREDUCE_GENL_MCGRP_EVENTS))
		nl->events = mnl_attr_get_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
	return MNL_CB_OK;
}

static int nl_family_cb(const struct nlmsghdr *nlh, void *data)
{
	static const enum mnl_attr_data_type types[CTRL_ATTR_MAX + 1] = {
		[CTRL_ATTR_FAMILY_ID] = MNL_TYPE_U16,
		[CTRL_ATTR_MCAST_GROUPS] = MNL_TYPE_NESTED,
	};
	const struct nlattr *tb[CTRL_ATTR_MAX + 1], *grp;
	struct nl *nl = data;

	nl_parse(nlh, tb, CTRL_ATTR_MAX, types);
	if (tb[CTRL_ATTR_FAMILY_ID])
		nl->family = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (tb[CTRL_ATTR_MCAST_GROUPS])
		mnl_attr_for_each_nested(grp, tb[CTRL_ATTR_MCAST_GROUPS])
			nl_grp_cb(grp, nl);
	return MNL_CB_OK;
}

int nl_open(struct nl *nl)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	int one = 1, err;

	memset(nl, 0, sizeof(*nl));
	nl->seq = time(NULL);
	nl->sock = mnl_socket_open(NETLINK_GENERIC);
	if (!nl->sock || mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		fprintf(stderr, "optireduce: generic netlink socket: %s\n",
			strerror(errno));
		nl_close(nl);
		return -1;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	/* Best effort: older kernels have no extended acks. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));

	nl->family = GENL_ID_CTRL;
	nlh = nl_msg(nl, buf, CTRL_CMD_GETFAMILY, 0);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, OPTIREDUCE_GENL_NAME);
	nl->family = 0;
	err = nl_request(nl, nlh, nl_family_cb, nl);
	if (err == -ENOENT || (!err && !nl->family)) {
		fprintf(stderr, "optireduce: the optireduce module is not loaded "
			"(load it with 'insmod optireduce.ko', "
			"or 'modprobe optireduce' after dkms install)\n");
		nl_close(nl);
		return -1;
	}
	if (err) {
		nl_perror(nl, "resolving the generic netlink family", err);
		nl_close(nl);
		return -1;
	}
	return 0;
}

void nl_close(struct nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}

int nl_subscribe(struct nl *nl)
{
	if (!nl->events) {
		fprintf(stderr, "optireduce: the module has no \"%s\" group\n",
			OPTIREDUCE_GENL_MCGRP_EVENTS);
		return -1;
	}
	if (mnl_socket_setsockopt(nl->sock, NETLINK_ADD_MEMBERSHIP,
				  &nl->events, sizeof(nl->events)) < 0) {
		fprintf(stderr, "optireduce: joining the events group: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}
