/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _OPTR_TXPOOL_H
#define _OPTR_TXPOOL_H

#include <linux/types.h>

struct optr_sock;

bool optr_txpool_refill(struct optr_sock *osk, unsigned int sz);
void optr_txpool_free(struct optr_sock *osk);

#endif /* _OPTR_TXPOOL_H */
