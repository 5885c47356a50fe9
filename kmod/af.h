/* SPDX-License-Identifier: GPL-2.0 */
/* The socket family (af.c): registered last at load, first gone at exit. */
#ifndef _OPTR_AF_H
#define _OPTR_AF_H

int optr_af_init(void);
void optr_af_exit(void);

#endif /* _OPTR_AF_H */
