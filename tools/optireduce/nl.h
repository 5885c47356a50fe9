/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Generic netlink through libmnl: resolve the "optireduce" family and its
 * "events" group (nlctrl CTRL_CMD_GETFAMILY), send one request and run a
 * callback on every reply message, keep the kernel's extended ack message.
 */
#ifndef OPTIREDUCE_NL_H
#define OPTIREDUCE_NL_H

#include <stdbool.h>
#include <stdint.h>

#include <libmnl/libmnl.h>

/* Room for the largest dump skb the kernel builds for a reader (32 KiB). */
#define NL_BUFSIZE	65536

struct nl {
	struct mnl_socket *sock;
	unsigned int portid;
	unsigned int seq;
	uint16_t family;	/* id of OPTIREDUCE_GENL_NAME */
	uint32_t events;	/* id of its events group; 0 if absent */
	char extack[256];	/* message of the last error, "" if none */
};

/*
 * Open a socket and resolve the family. On failure a one-line message is
 * printed (the module not being loaded is said so) and -1 returned.
 */
int nl_open(struct nl *nl);
void nl_close(struct nl *nl);

/* A request of @cmd in @buf (NL_BUFSIZE bytes): header filled, no attrs. */
struct nlmsghdr *nl_msg(struct nl *nl, void *buf, uint8_t cmd, uint16_t flags);

/*
 * Send @nlh and run @cb on every reply until the ack or the end of the dump.
 * Returns 0 or -errno; nl->extack holds the kernel's message, if any.
 */
int nl_request(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

/* "optireduce: WHAT: EXTACK (strerror)" or "optireduce: WHAT: strerror". */
void nl_perror(const struct nl *nl, const char *what, int err);

/*
 * Parse the attributes of a genetlink message into tb[0..max] (unknown or
 * malformed ones are left out); types[i] is the libmnl type of attribute i.
 */
void nl_parse(const struct nlmsghdr *nlh, const struct nlattr **tb,
	      unsigned int max, const enum mnl_attr_data_type *types);
void nl_parse_nested(const struct nlattr *nest, const struct nlattr **tb,
		     unsigned int max, const enum mnl_attr_data_type *types);

/* Join the events group. 0 or -1 with a message printed. */
int nl_subscribe(struct nl *nl);

#endif /* OPTIREDUCE_NL_H */
