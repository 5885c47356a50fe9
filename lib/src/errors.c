// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "optireduce.h"
#include "util.h"

/*
 * What each errno means when this library returns it. Anything else is a
 * system error passed through, described by the C library.
 */
static const struct {
	int err;
	const char *msg;
} or_errors[] = {
	{ 0,		"success" },
	{ EINVAL,	"invalid argument (count 0, bad option or config value, reserved field set)" },
	{ EBADF,	"not a live communicator (NULL, destroyed, or never created)" },
	{ EFAULT,	"NULL buffer or output pointer" },
	{ E2BIG,	"count larger than OPTIREDUCE_MAX_COUNT" },
	{ EOPNOTSUPP,	"unsupported data type or reduction operation" },
	{ ERANGE,	"rank or size out of range (need 0 <= rank < size <= OPTIREDUCE_MAX_RANKS)" },
	{ ESRCH,	"no such call: handle unknown, foreign, or already completed" },
	{ EAGAIN,	"call still in progress" },
	{ EBUSY,	"too many calls in flight (max_inflight reached)" },
	{ EAFNOSUPPORT,	"optireduce kernel module not loaded (lossy transport unavailable)" },
	{ ENOENT,	"required setting missing (RANK/WORLD_SIZE, MASTER_ADDR/MASTER_PORT or OPTIREDUCE_PEERS)" },
	{ ETIMEDOUT,	"peers did not answer in time (rendezvous, connect, or reliable call)" },
	{ EPROTO,	"peer speaks another protocol version or has a different configuration" },
	{ ENOTCONN,	"communicator broken by an earlier transport failure; destroy it" },
	{ ECONNRESET,	"a peer closed its connection (process exited or destroyed its communicator)" },
	{ ECONNREFUSED,	"connection refused by a peer" },
	{ ECANCELED,	"call canceled: communicator destroyed" },
	{ EADDRINUSE,	"listening address already in use" },
	{ EPERM,	"option is read-only" },
	{ ENOMEM,	"out of memory" },
};

OR_EXPORT const char *optireduce_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	for (size_t i = 0; i < OR_ARRAY_SIZE(or_errors); i++)
		if (or_errors[i].err == err)
			return or_errors[i].msg;
	/* glibc's table: thread-safe, unlike strerror(). */
	s = strerrordesc_np(err);
	return s ? s : "unknown error";
}
