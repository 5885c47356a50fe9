/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_RECEIVE_H
#define _OPTR_RECEIVE_H

struct optr_net;
struct sk_buff;

void optr_receive(struct optr_net *on, struct sk_buff *skb);
void optr_receive_here(struct optr_net *on, struct sk_buff *skb);

#endif /* _OPTR_RECEIVE_H */
