/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The socket's completion queue: ended posts, oldest first, until recvmsg
 * copies them out as struct optireduce_completion records.
 */
#ifndef _OPTR_COMPLETION_H
#define _OPTR_COMPLETION_H

#include <linux/list.h>
#include <linux/socket.h>

struct optr_post;
struct optr_sock;

void optr_completion_queue(struct optr_sock *osk, struct optr_post *p);
void optr_completions_take(struct optr_sock *osk, struct list_head *posts);
int optr_recv_completions(struct optr_sock *osk, struct msghdr *msg,
			  int flags);

#endif /* _OPTR_COMPLETION_H */
