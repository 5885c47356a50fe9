/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * OptiReduce socket ABI, shared by optireduce.ko and userspace.
 *
 * Discovery
 *   The module is built out of tree, so it cannot own a fixed address family
 *   or socket option level: the kernel refuses family numbers >= AF_MAX.
 *   It borrows an unused number at load time (module parameter "family") and
 *   a socket option level ("sol"). Userspace reads both at run time from
 *   OPTIREDUCE_SYSFS_FAMILY and OPTIREDUCE_SYSFS_SOL; the *_DEFAULT values
 *   below are only what the module picks when loaded without parameters and
 *   must not be compiled into callers as the live value.
 *
 * Sockets
 *   socket(family, SOCK_DGRAM, 0). Other types fail with ESOCKTNOSUPPORT,
 *   a non-zero protocol with EPROTONOSUPPORT.
 *
 * Socket options (level = value of "sol")
 *   OPTIREDUCE_ABI_VERSION   get, __u32: OPTIREDUCE_ABI for this module.
 *
 * Every option validates its length and contents; a wrong size or value is
 * EINVAL, an unknown option ENOPROTOOPT.
 */
#ifndef _UAPI_LINUX_OPTIREDUCE_H
#define _UAPI_LINUX_OPTIREDUCE_H

#include <linux/types.h>

/* Bumped on any incompatible change of this header. */
#define OPTIREDUCE_ABI			1

#define OPTIREDUCE_SYSFS_PARAMS		"/sys/module/optireduce/parameters/"
#define OPTIREDUCE_SYSFS_FAMILY		OPTIREDUCE_SYSFS_PARAMS "family"
#define OPTIREDUCE_SYSFS_SOL		OPTIREDUCE_SYSFS_PARAMS "sol"

/* Load-time defaults; see "Discovery" above. 19 was AF_ECONET, removed in
 * Linux 3.5 and unused since.
 */
#define OPTIREDUCE_FAMILY_DEFAULT	19
#define OPTIREDUCE_SOL_DEFAULT		0x4f52
/* UDP port of the transport; module parameter "port". */
#define OPTIREDUCE_PORT_DEFAULT		18515

/* Socket options, level "sol". */
enum {
	OPTIREDUCE_ABI_VERSION = 1,
};

#endif /* _UAPI_LINUX_OPTIREDUCE_H */
