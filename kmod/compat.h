/* SPDX-License-Identifier: GPL-2.0 */
/* The few kernel API differences between 6.1 and 6.12 that matter here. */
#ifndef _OPTR_COMPAT_H
#define _OPTR_COMPAT_H

#include <linux/uio.h>
#include <linux/version.h>

/*
 * The user address of a single-segment iterator, or 0 if @it is not one
 * (several iovecs, or kernel memory).
 */
static inline unsigned long optr_iter_single_uaddr(const struct iov_iter *it)
{
	if (iter_is_ubuf(it))
		return (unsigned long)it->ubuf + it->iov_offset;
	/* 6.1 imports a single iovec as ITER_IOVEC; 6.4 renamed the field. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
	if (iter_is_iovec(it) && it->nr_segs == 1)
		return (unsigned long)it->iov->iov_base + it->iov_offset;
#else
	if (iter_is_iovec(it) && it->nr_segs == 1)
		return (unsigned long)iter_iov(it)->iov_base + it->iov_offset;
#endif
	return 0;
}

#endif /* _OPTR_COMPAT_H */
