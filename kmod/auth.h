/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_AUTH_H
#define _OPTR_AUTH_H

#include <linux/types.h>

#include "compat.h"

struct optr_skb_walk;

/* The key of a communicator's datagram tags, derived from its secret. */
#define OPTR_AUTH_KEY_LEN	BLAKE2S_KEY_SIZE

u32 optr_auth_wire_id(u32 id, const u8 *secret);
bool optr_auth_same_secret(const u8 *a, const u8 *b);
void optr_auth_key(u8 *key, const u8 *secret);

void optr_auth_mac_init(struct optr_blake2s_state *st, const u8 *key);
void optr_auth_tag(const u8 *key, const void *data, u32 len, u8 *tag);
bool optr_auth_verify(const u8 *key, const struct optr_skb_walk *w, u32 off,
		      u32 len);

#endif /* _OPTR_AUTH_H */
