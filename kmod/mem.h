/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_MEM_H
#define _OPTR_MEM_H

#include <linux/types.h>

struct optr_sock;
struct proto;
struct sk_buff;

void optr_mem_proto_init(struct proto *prot);
bool optr_mem_charge(struct optr_sock *osk, const struct sk_buff *skb);
void optr_mem_uncharge(struct optr_sock *osk, const struct sk_buff *skb);
void optr_mem_release(struct optr_sock *osk);

#endif /* _OPTR_MEM_H */
