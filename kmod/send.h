/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_SEND_H
#define _OPTR_SEND_H

#include <linux/socket.h>
#include <uapi/linux/optireduce.h>

struct optr_sock;

int optr_send(struct optr_sock *osk, const struct optireduce_send *req,
	      struct msghdr *msg);

#endif /* _OPTR_SEND_H */
