// SPDX-License-Identifier: MIT
/*
 * The kernel transport without io_uring (kernel.io_uring_disabled, a
 * seccomp profile that refuses it, or OPTIREDUCE_NO_URING=1): the same
 * queue, run with one sendmsg() per operation at reap, completion records
 * read with recvmsg(MSG_DONTWAIT) until none is left. The event_fd is the
 * socket itself: it polls readable while a completion is queued.
 *
 * The cost of the fallback: a send runs on the progress thread, and when
 * the links are full it waits there (never past its timeout, see
 * transport_kernel.c) instead of in an io-wq worker.
 */
#include <errno.h>
#include <stdlib.h>

#include "transport_kernel.h"
#include "util.h"

struct kt_plain {
	struct kt_rx rx;
};

static int plain_submit(struct kt *kt)
{
	struct kt_op *op;

	while ((op = kt_queue_pop(kt))) {
		ssize_t n = sendmsg(kt->fd, &op->msg, 0);

		kt_op_done(kt, op, n < 0 ? -errno : (int)OR_MIN(n, INT32_MAX));
	}
	return 0;
}

static int plain_harvest(struct kt *kt)
{
	struct kt_plain *pl = kt->eng_priv;

	for (;;) {
		ssize_t n = recvmsg(kt->fd, &pl->rx.msg, MSG_DONTWAIT);
		int rc;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		rc = kt_records(kt, pl->rx.buf, n);
		if (rc)
			return rc;
	}
}

static void plain_destroy(struct kt *kt)
{
	free(kt->eng_priv);
	kt->t.event_fd = -1;	/* the socket: closed by the caller */
}

static const struct kt_engine_ops plain_ops = {
	.name = "sendmsg",
	.submit = plain_submit,
	.harvest = plain_harvest,
	.destroy = plain_destroy,
};

int kt_plain_init(struct kt *kt)
{
	struct kt_plain *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return -ENOMEM;
	kt_rx_init(&pl->rx);
	kt->t.event_fd = kt->fd;
	kt->eng_priv = pl;
	kt->eng = &plain_ops;
	return 0;
}
