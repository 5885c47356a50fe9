/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_AF_H
#define _OPTR_AF_H

#include <net/sock.h>

struct optr_net;

struct optr_sock {
	struct sock sk;		/* must stay first: sk_alloc() sizes by proto */
	struct optr_net *on;
	/* Entry in on->socks, under on->lock. */
	struct list_head net_node;
};

static inline struct optr_sock *optr_sk(const struct sock *sk)
{
	return container_of(sk, struct optr_sock, sk);
}

int optr_af_init(void);
void optr_af_exit(void);

#endif /* _OPTR_AF_H */
