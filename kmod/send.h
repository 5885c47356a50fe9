/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_SEND_H
#define _OPTR_SEND_H

#include <linux/socket.h>
#include <uapi/linux/optireduce.h>

struct optr_sock;

/* The optireduce_send.flags this module takes. */
#define OPTR_SEND_FLAGS		OPTIREDUCE_SEND_SCATTER

int optr_send(struct optr_sock *osk, const struct optireduce_send *req,
	      struct msghdr *msg);
int optr_tx_lock(struct optr_sock *osk, bool nonblock);
void optr_tx_unlock(struct optr_sock *osk);
bool optr_tx_writable(struct optr_sock *osk);

#endif /* _OPTR_SEND_H */
