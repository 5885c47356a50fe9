/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_NETLINK_H
#define _OPTR_NETLINK_H

#include <linux/types.h>

struct optr_sock;

void optr_nl_round_event(struct optr_sock *osk, u8 cmd, u32 round, u64 lost,
			 u64 expected);
int optr_netlink_init(void);
void optr_netlink_exit(void);

#endif /* _OPTR_NETLINK_H */
