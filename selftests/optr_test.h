/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the C selftests. The socket helpers themselves (join,
 * post, send, completions, tunables) are tools/lib/optr_sock.h, which the
 * benchmarks use too; what is here serves tests only.
 */
#ifndef _OPTR_TEST_H
#define _OPTR_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/optireduce.h>
#include <linux/types.h>

#include "optr_sock.h"

/* The "sockets N" line of /proc/net/optireduce in this namespace. */
static inline long optr_proc_sockets(void)
{
	FILE *f = fopen("/proc/net/optireduce", "r");
	long n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "sockets %ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/*
 * The wire header, written out independently of kmod/wire.h so that a test
 * that injects packets checks the documented format, not the code's idea
 * of it (Documentation/wire-format.md).
 */
struct optr_test_wire_hdr {
	__u8 version;
	__u8 flags;
	__be16 src;
	__be16 dst;
	__be16 reserved;
	__be32 comm;
	__be32 round;
	__be32 msg;
	__be32 offset;
	__be32 total;
	__be32 hint_us;
	__be32 feedback;
} __attribute__((packed));

_Static_assert(sizeof(struct optr_test_wire_hdr) == 36, "wire header size");

#define OPTR_TEST_WIRE_LAST	0x01
#define OPTR_TEST_WIRE_MCAST	0x02

#endif /* _OPTR_TEST_H */
