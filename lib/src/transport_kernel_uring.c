// SPDX-License-Identifier: MIT
/*
 * The kernel transport's io_uring engine: one ring per communicator.
 *
 *   posts, cancels  IORING_OP_SENDMSG, issued inline at submission: they
 *                   pin pages and return, and their order is the order the
 *                   kernel sees rounds opened in.
 *   sends           IORING_OP_SENDMSG. A large one gets IOSQE_ASYNC: it
 *                   copies for a while and may wait in the kernel for room
 *                   in the send buffer (up to its timeout); an io-wq
 *                   worker does that, not the progress thread, which keeps
 *                   posting and reaping meanwhile. A small one is issued
 *                   in place (send_in_place()).
 *   completions     one IORING_OP_RECVMSG always in flight; it waits
 *                   poll-armed in the kernel and returns a batch of records.
 *
 * Everything queued goes to the kernel with one io_uring_enter() per reap;
 * finished operations are read from the completion ring without a system
 * call. An eventfd registered with the ring is the transport's event_fd.
 * The ring is set up without COOP_TASKRUN or DEFER_TASKRUN: the receive's
 * retry runs as task work of the progress thread, which must be woken out
 * of ppoll() for it, not wait for its next system call.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "transport_kernel.h"
#include "util.h"

#define KT_RING_ENTRIES	256
#define KT_INLINE_SEND	(64 * 1024)	/* bytes times peers sent to */
#define KT_DRAIN_MS	5000	/* destroy: wait this long for the ring */

struct kt_uring {
	struct io_uring ring;
	unsigned int inflight;		/* SQEs submitted, CQE not yet seen */
	unsigned int async_sends;	/* of which sends on io-wq workers */
	int rx_armed;
	struct kt_rx rx;
};

/* user_data of the completion receive; operations use their address. */
#define KT_UD_RECV	1ull

static struct io_uring_sqe *get_sqe(struct kt_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	/* A full submission ring costs a second enter, only then. */
	if (!sqe && io_uring_submit(&u->ring) >= 0)
		sqe = io_uring_get_sqe(&u->ring);
	return sqe;
}

/*
 * A send of at most KT_INLINE_SEND bytes to all its peers together (its
 * length once per peer it is copied for: once for a multicast group) is
 * issued in place, inside io_uring_enter(): it copies its data into a few
 * datagrams and returns. Handing it to an io-wq worker costs a wake-up and
 * two context switches, which is most of what a small call takes (4 ranks
 * in the guest, calm link: 64 KiB calls 3.3-3.6 ms at p50 in place against
 * 4.1-5.3 ms through io-wq). A send behind one still on a worker goes to
 * io-wq too, in order behind it. In place it would not wait (the kernel
 * refuses a send that must not wait with EAGAIN while the worker holds the
 * socket, and io_uring retries it at POLLOUT), but it could overtake the
 * worker's later sends on the wire.
 */
static int send_in_place(const struct kt_uring *u, const struct kt_op *op)
{
	/* op->len: every copy counted (kt_send()) */
	return !u->async_sends && op->len <= KT_INLINE_SEND;
}

static int uring_submit(struct kt *kt)
{
	struct kt_uring *u = kt->eng_priv;
	struct io_uring_sqe *sqe;
	struct kt_op *op;
	int rc;

	if (!kt->qhead && u->rx_armed)
		return 0;		/* nothing to say: no system call */
	while ((op = kt->qhead)) {
		sqe = get_sqe(u);
		if (!sqe)
			return -EBUSY;
		kt_queue_pop(kt);
		io_uring_prep_sendmsg(sqe, kt->fd, &op->msg, 0);
		io_uring_sqe_set_data(sqe, op);
		if (op->kind == KT_SEND) {
			op->async = !send_in_place(u, op);
			if (op->async) {
				sqe->flags |= IOSQE_ASYNC;
				u->async_sends++;
				kt->sends_async++;
			} else {
				kt->sends_inline++;
			}
		}
		u->inflight++;
	}
	if (!u->rx_armed) {
		sqe = get_sqe(u);
		if (!sqe)
			return -EBUSY;
		io_uring_prep_recvmsg(sqe, kt->fd, &u->rx.msg, 0);
		io_uring_sqe_set_data64(sqe, KT_UD_RECV);
		u->rx_armed = 1;
		u->inflight++;
	}
	rc = io_uring_submit(&u->ring);
	return rc < 0 ? rc : 0;
}

static int on_cqe(struct kt *kt, struct kt_uring *u, struct io_uring_cqe *cqe)
{
	u->inflight--;
	if (cqe->user_data != KT_UD_RECV) {
		struct kt_op *op = io_uring_cqe_get_data(cqe);

		if (op->kind == KT_SEND && op->async)
			u->async_sends--;
		kt_op_done(kt, op, cqe->res);
		return 0;
	}
	u->rx_armed = 0;
	if (cqe->res > 0)
		return kt_records(kt, u->rx.buf, cqe->res);
	/* Interrupted or raced by another reader: just ask again. */
	if (cqe->res == -EAGAIN || cqe->res == -EINTR || cqe->res == -ECANCELED)
		return 0;
	return cqe->res ? cqe->res : -EPROTO;
}

static int uring_harvest(struct kt *kt)
{
	struct kt_uring *u = kt->eng_priv;
	struct io_uring_cqe *cqes[64];
	unsigned int n;
	uint64_t cnt;
	int rc = 0;

	/* Drain the eventfd first: a CQE posted after this signals again. */
	if (read(kt->t.event_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return -errno;
	do {
		n = io_uring_peek_batch_cqe(&u->ring, cqes, OR_ARRAY_SIZE(cqes));
		for (unsigned int i = 0; i < n && !rc; i++)
			rc = on_cqe(kt, u, cqes[i]);
		io_uring_cq_advance(&u->ring, n);
	} while (n == OR_ARRAY_SIZE(cqes) && !rc);
	return rc;	/* submit re-arms the receive, with the next batch */
}

/*
 * The kernel may still read a send's msghdr (an io-wq worker), so nothing
 * is freed before every SQE has completed: cancel them all and wait,
 * bounded. Past the bound the operations are leaked rather than freed
 * under the kernel.
 */
static void uring_destroy(struct kt *kt)
{
	struct kt_uring *u = kt->eng_priv;
	int64_t end = or_now_ns() + (int64_t)KT_DRAIN_MS * 1000000;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, 0);
		u->inflight++;
		io_uring_submit(&u->ring);
	}
	while (u->inflight && or_now_ns() < end) {
		struct __kernel_timespec ts = { .tv_nsec = 100000000 };
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts))
			continue;
		u->inflight--;
		if (cqe->user_data && cqe->user_data != KT_UD_RECV)
			kt_op_done(kt, io_uring_cqe_get_data(cqe), cqe->res);
		io_uring_cqe_seen(&u->ring, cqe);
	}
	if (u->inflight) {
		or_debug("kernel: %u operations still in flight at close",
			 u->inflight);
		kt->nops = 0;	/* leak them: the kernel may still read them */
	}
	io_uring_queue_exit(&u->ring);
	close(kt->t.event_fd);
	kt->t.event_fd = -1;
	free(u);
}

static const struct kt_engine_ops uring_ops = {
	.name = "io_uring",
	.submit = uring_submit,
	.harvest = uring_harvest,
	.destroy = uring_destroy,
};

int kt_uring_init(struct kt *kt)
{
	struct kt_uring *u = calloc(1, sizeof(*u));
	int rc, efd;

	if (!u)
		return -ENOMEM;
	rc = io_uring_queue_init(KT_RING_ENTRIES, &u->ring, 0);
	if (rc) {
		free(u);
		return rc;
	}
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rc = efd < 0 ? -errno : io_uring_register_eventfd(&u->ring, efd);
	if (rc) {
		if (efd >= 0)
			close(efd);
		io_uring_queue_exit(&u->ring);
		free(u);
		return rc;
	}
	kt_rx_init(&u->rx);
	kt->t.event_fd = efd;
	kt->eng_priv = u;
	kt->eng = &uring_ops;
	/*
	 * Nothing is submitted here: the progress thread's first reap arms
	 * the receive, so every request (and the task work of its retries,
	 * and the io-wq workers of its sends) belongs to that thread, which
	 * lives as long as the ring.
	 */
	return 0;
}
