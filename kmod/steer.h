/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_STEER_H
#define _OPTR_STEER_H

#include <linux/types.h>

struct optr_sock;
struct sk_buff;

void optr_steer_init(struct optr_sock *osk);
void optr_steer_close(struct optr_sock *osk);
void optr_steer_note_cpu(struct optr_sock *osk);
void optr_steer_join(void);
void optr_steer_leave(void);
bool optr_steer(struct optr_sock *osk, struct sk_buff *skb);

#endif /* _OPTR_STEER_H */
