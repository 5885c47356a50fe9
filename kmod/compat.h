/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel API differences that matter here, from 6.1 (Debian 12)
 * to the newest Debian ships (7.x). The one place that knows versions.
 */
#ifndef _OPTR_COMPAT_H
#define _OPTR_COMPAT_H

#include <crypto/blake2s.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/udp.h>
#include <linux/uio.h>
#include <linux/version.h>
#include <net/sock.h>
/*
 * The socket memory accounting helpers (sk_under_memory_pressure())
 * moved out of <net/sock.h> into their own header in 6.10.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#include <net/proto_memory.h>
#endif

/*
 * BLAKE2s's state is struct blake2s_ctx from 6.19 on, struct blake2s_state
 * before; blake2s_init_key(), blake2s_update() and blake2s_final() take
 * the same arguments in both.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
#define optr_blake2s_state blake2s_ctx
#else
#define optr_blake2s_state blake2s_state
#endif

/* The iovecs of an ITER_IOVEC iterator: 6.4 renamed the field. */
static inline const struct iovec *optr_iter_iovecs(const struct iov_iter *it)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
	return it->iov;
#else
	return iter_iov(it);
#endif
}

/*
 * The user address of a single-segment iterator, or 0 if @it is not one
 * (several iovecs, or kernel memory).
 */
static inline unsigned long optr_iter_single_uaddr(const struct iov_iter *it)
{
	if (iter_is_ubuf(it))
		return (unsigned long)it->ubuf + it->iov_offset;
	/* 6.1 imports a single iovec as ITER_IOVEC. */
	if (iter_is_iovec(it) && it->nr_segs == 1)
		return (unsigned long)optr_iter_iovecs(it)->iov_base +
		       it->iov_offset;
	return 0;
}

/*
 * Let UDP queue whole UDP GSO batches to this socket (and let GRO build
 * them from a NIC's packets, once udp.c enabled encapsulation), as the
 * UDP_GRO socket option does for a user socket. 6.7 turned the udp_sock
 * bitfields into flag bits.
 */
static inline void optr_udp_accept_gso(struct sock *sk)
{
#ifdef udp_set_bit
	udp_set_bit(GRO_ENABLED, sk);
	udp_set_bit(ACCEPT_L4, sk);
#else
	udp_sk(sk)->gro_enabled = 1;
	udp_sk(sk)->accept_udp_l4 = 1;
#endif
}

/*
 * The pages under up to @max bytes of @it, at most @maxpages of them,
 * advancing @it past those bytes; *@off is where they start in pages[0].
 * *@held says whether they must be let go with optr_iter_put_pages():
 * user pages are pinned (6.3 and later) or referenced (6.1), the pages of
 * a kernel iterator (io_uring's registered buffers) are not held.
 */
static inline ssize_t optr_iter_get_pages(struct iov_iter *it,
					  struct page **pages, size_t max,
					  unsigned int maxpages, size_t *off,
					  bool *held)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	*held = iov_iter_extract_will_pin(it);
	return iov_iter_extract_pages(it, &pages, max, maxpages, 0, off);
#else
	*held = true;
	return iov_iter_get_pages2(it, pages, max, maxpages, off);
#endif
}

static inline void optr_iter_put_pages(struct page **pages, unsigned int n)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	unpin_user_pages(pages, n);
#else
	while (n--)
		put_page(pages[n]);
#endif
}

/*
 * A timer set up to run @fn. 6.13 added hrtimer_setup(), which takes the
 * function at once; 6.15 removed hrtimer_init().
 */
static inline void optr_hrtimer_setup(struct hrtimer *t,
				      enum hrtimer_restart (*fn)(struct hrtimer *),
				      clockid_t clock, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(t, fn, clock, mode);
#else
	hrtimer_init(t, clock, mode);
	t->function = fn;
#endif
}

#endif /* _OPTR_COMPAT_H */
