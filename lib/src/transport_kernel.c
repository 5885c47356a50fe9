// SPDX-License-Identifier: MIT
/*
 * The optireduce kernel socket, driven by one io_uring per communicator.
 * Not written yet: the module and its ABI (uapi/linux/optireduce.h) are in
 * progress. Until then this file only answers whether the module is
 * loaded, so that OPTIREDUCE_TRANSPORT_AUTO can say why it uses TCP and
 * OPTIREDUCE_TRANSPORT_KERNEL can fail with a clear error.
 *
 * Plan, so that nothing around it changes when it lands:
 * - or_kernel_probe() opens a socket of the family the module publishes at
 *   run time; or_comm_create_tcp() creates this transport when every rank
 *   reported lossy_ok in the TCP hello, and passes it to
 *   or_comm_create_with() as the lossy transport.
 * - post_recv / send fill SQEs; reap does one io_uring_submit_and_wait
 *   (non-blocking) and turns CQEs into or_cqe; event_fd is an eventfd
 *   registered with io_uring_register_eventfd(). OR_DST_ALL maps onto the
 *   socket's send-to-all (multicast or in-kernel fan-out).
 * - io_uring unavailable (ENOSYS, EPERM: kernel.io_uring_disabled, the
 *   default seccomp profile of container runtimes): fall back to plain
 *   non-blocking sendmsg/recvmsg behind the same ops table, with a one-line
 *   notice, rather than fail: the lossy path stays usable in containers.
 *   OPTIREDUCE_IO_URING=0 will force that fallback.
 */
#include <errno.h>
#include <unistd.h>

#include "transport.h"

int or_kernel_probe(void)
{
	/* A loaded module always has its directory in sysfs. */
	if (access("/sys/module/optireduce", F_OK))
		return -EAFNOSUPPORT;
	return -ENOSYS;
}
