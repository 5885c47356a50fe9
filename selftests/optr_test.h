/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the C selftests. */
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

/* Read one integer parameter of the loaded module; -1 if absent. */
static inline long optr_param(const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), OPTIREDUCE_SYSFS_PARAMS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static inline int optr_family(void)
{
	return (int)optr_param("family");
}

static inline int optr_sol(void)
{
	return (int)optr_param("sol");
}

static inline int optr_socket(void)
{
	return socket(optr_family(), SOCK_DGRAM, 0);
}

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
