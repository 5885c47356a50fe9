/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_AUTH_H
#define _OPTR_AUTH_H

#include <linux/types.h>

u32 optr_auth_wire_id(u32 id, const u8 *secret);
bool optr_auth_same_secret(const u8 *a, const u8 *b);

#endif /* _OPTR_AUTH_H */
