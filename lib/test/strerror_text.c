// SPDX-License-Identifier: MIT
/* optireduce_strerror: every code the library returns has its own text,
 * either sign works, a system error passed through gets the C library's
 * description, unknown codes still give a string. */
#include <errno.h>
#include <string.h>

#include "helpers.h"

int main(void)
{
	const int codes[] = { EINVAL, EBADF, EFAULT, E2BIG, EOPNOTSUPP, ERANGE,
		ESRCH, EAGAIN, EBUSY, EAFNOSUPPORT, ENOENT, ETIMEDOUT,
		EPROTO, ENOTCONN, ECONNRESET, ECANCELED, EPERM, ENOMEM };
	const size_t n = sizeof(codes) / sizeof(codes[0]);

	for (size_t i = 0; i < n; i++) {
		const char *s = optireduce_strerror(-codes[i]);

		T_ASSERT(s && *s, "code %d", codes[i]);
		T_ASSERT(s == optireduce_strerror(codes[i]), "sign");
		for (size_t j = 0; j < i; j++)
			T_ASSERT(strcmp(s, optireduce_strerror(-codes[j])),
				 "%d and %d share a text", codes[i], codes[j]);
	}
	T_ASSERT(!strcmp(optireduce_strerror(0), "success"), "0");
	T_ASSERT(optireduce_strerror(-EIO) && *optireduce_strerror(-EIO), "EIO");
	/* Nothing in the library makes ENOSYS (io_uring missing falls back
	 * to plain system calls): only a system call can, and it says so. */
	T_ASSERT(!strcmp(optireduce_strerror(-ENOSYS), strerrordesc_np(ENOSYS)),
		 "ENOSYS: %s", optireduce_strerror(-ENOSYS));
	T_ASSERT(!strcmp(optireduce_strerror(-EIO), strerrordesc_np(EIO)),
		 "EIO: %s", optireduce_strerror(-EIO));
	T_ASSERT(optireduce_strerror(-99999) != NULL, "unknown");
	T_ASSERT(optireduce_strerror(-2147483647) != NULL, "huge");
	return 0;
}
