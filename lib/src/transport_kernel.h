/* SPDX-License-Identifier: MIT */
#ifndef OR_TRANSPORT_KERNEL_H
#define OR_TRANSPORT_KERNEL_H

/*
 * The optireduce kernel socket as a transport (see transport.h for the
 * contract, uapi/linux/optireduce.h for the socket). Shared by:
 *   transport_kernel.c        the ops table: tags to rounds, deadlines,
 *                             sealing; create and destroy
 *   transport_kernel_op.c     operations (prepared msghdrs) and their queue
 *   transport_kernel_done.c   finished operations and completion records
 *                             to or_cqe
 *   transport_kernel_sock.c   discovery, socket, OPTIREDUCE_JOIN
 *   transport_kernel_uring.c  engine: one io_uring per communicator
 *   transport_kernel_plain.c  engine: sendmsg/recvmsg, where io_uring is
 *                             unavailable (seccomp, io_uring_disabled) or
 *                             OPTIREDUCE_NO_URING=1
 *
 * Mapping (both ends compute the same numbers, nothing is negotiated):
 *   round id    2 * seq + phase (phase 1 scatter, 2 gather): increases
 *               with every round a socket opens, since calls run in order
 *               and phase 2 posts only follow phase 1's.
 *   message id  the phase; the post key is (round, source rank, message).
 *   deadline    the round's first post carries the largest deadline of the
 *               round's receives queued with it, relative to submission,
 *               plus OPTIREDUCE_DEADLINE_SLACK_MS (default 0): room for
 *               machines whose timing noise exceeds what warm-up measured
 *               (an emulator, oversubscribed CPUs; the guest tests set it).
 *               With incast < size-1 a phase has several TAR rounds: they
 *               share the kernel round, whose deadline is then the phase's
 *               last (an earlier TAR round may end later than the engine
 *               planned, never the call).
 *               retime() moves an open round's deadline
 *               (OPTIREDUCE_CMSG_DEADLINE), or only the one its first post
 *               will carry when that is still queued.
 *   early hint  the same post carries the largest early_ns (the engine's
 *               t_C per round) as early_us: the kernel's early timeout
 *               waits early_idle_pct percent of it, not of the socket's
 *               own estimate, which knows only this socket's past rounds.
 *               The slack is added to it as to the deadline.
 *   lateness    a post that reaches the kernel after its round ended (the
 *               progress thread was late past the deadline) gets ESTALE:
 *               it completes at once as expired, everything missing, and
 *               counts in late_bytes, not in the kernel's bytes_lost.
 *   sealing     the engine posts one receive per peer and tag: the
 *               (size-1)-th post of a round goes without POST_MORE, which
 *               seals it (early timeout possible, foreign data dropped).
 *               A round that never gets size-1 posts (a call with fewer
 *               entries than ranks: empty shards) is cancelled once a later
 *               call posts, all its posts having completed by then.
 */

#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/optireduce.h>

#include "transport.h"

#define KT_ROUNDS	8		/* round table slots (id % KT_ROUNDS) */
#define KT_RXBUF	(64 * 1024)	/* completion records per recvmsg */

enum kt_kind {
	KT_POST = 1,
	KT_SEND,
	KT_CANCEL,
	KT_DEADLINE,
};

/*
 * One queued or in-flight operation: its msghdr and control message live
 * here until the kernel has taken them. A post also lives until its
 * completion record was read (refs counts both). Recycled, never freed
 * before the transport.
 */
struct kt_op {
	struct kt_op *next;		/* queue or free list */
	uint32_t idx;			/* in kt->tab */
	uint32_t gen;			/* bumped on reuse: stale records */
	uint8_t kind;
	uint8_t refs;
	uint8_t opener;			/* first post of its round */
	uint8_t async;			/* send handed to an io-wq worker */
	uint64_t user_data;		/* the engine's */
	struct msghdr msg;
	struct iovec iov;
	/* A scatter send's parts, one per rank (with OR_TCAP_SCATTER). */
	struct iovec *parts;
	union {
		char b[CMSG_SPACE(sizeof(struct optireduce_post))];
		struct cmsghdr align;
	} ctl;
	/* posts: the message's length; sends: the payload it puts on the
	 * wire, every copy counted */
	uint32_t round;
	uint64_t len;
	struct or_range *missing;
	uint32_t max_missing;
};

/* What this socket knows about a round it posts to. */
struct kt_round {
	uint32_t id;
	int used;
	int sealed;
	unsigned int posted;		/* posts queued */
	unsigned int open;		/* posts without a completion yet */
	int64_t deadline_ns;		/* largest of its receives */
	int64_t early_ns;		/* largest early-timeout hint */
	struct kt_op *first;		/* opening post, until submitted */
};

struct kt_engine_ops;

struct kt {
	struct or_transport t;
	const struct kt_engine_ops *eng;
	void *eng_priv;
	int fd;
	int sol;
	struct kt_op *qhead, *qtail;	/* queued, not yet submitted */
	struct kt_op *free_ops;
	struct kt_op **tab;		/* every op, by idx */
	uint32_t nops, tab_cap;
	struct kt_round rounds[KT_ROUNDS];
	struct or_cqe *cq;		/* completions not yet reaped */
	unsigned int cq_head, cq_n, cq_cap;
	int err;			/* the transport failed: -errno */
	int quiet;
	int64_t slack_ns;		/* OPTIREDUCE_DEADLINE_SLACK_MS */
	uint64_t late_bytes;		/* posted after their round ended */
	uint64_t behind_bytes;		/* expired before their sender's
					 * tail came (expired_tail()), since
					 * kt_late() last looked
					 */
	uint64_t stale_seen;		/* stale fragments' bytes then */
	uint64_t wire_late;		/* kt_late()'s sum of the larger */
	uint64_t sends_inline;		/* io_uring: sends issued in place */
	uint64_t sends_async;		/* ... and by io-wq workers */
	uint64_t sends_scatter;		/* OR_SEND_SCATTER, either engine */
};

/* An engine moves queued operations to the kernel and completions back. */
struct kt_engine_ops {
	const char *name;
	/* Take the queue (kt_queue_pop) to the kernel: one batch; with
	 * nothing to do, no system call. */
	int (*submit)(struct kt *kt);
	/* Collect finished operations and records, without blocking. */
	int (*harvest)(struct kt *kt);
	/* Wait for in-flight operations, then free; the socket stays open. */
	void (*destroy)(struct kt *kt);
};

/* Where recvmsg puts completion records. */
struct kt_rx {
	struct msghdr msg;
	struct iovec iov;
	char buf[KT_RXBUF];
};

static inline struct kt_round *kt_round_find(struct kt *kt, uint32_t id)
{
	struct kt_round *r = &kt->rounds[id % KT_ROUNDS];

	return r->used && r->id == id ? r : NULL;
}

/* transport_kernel_op.c: the pool and queue of operations. */
/* An operation of kind with refs references; NULL: no memory. */
struct kt_op *kt_op_get(struct kt *kt, uint8_t kind, uint8_t refs,
			uint64_t user_data);
void kt_op_put(struct kt *kt, struct kt_op *op);	/* drop one ref */
/* Fill op's msghdr: one control message of type (dlen bytes, returned to
 * fill in), buf as the one iovec (none if NULL). */
void *kt_op_prep(struct kt *kt, struct kt_op *op, int type, size_t dlen,
		 const void *buf, uint64_t len);
void kt_queue(struct kt *kt, struct kt_op *op);
struct kt_op *kt_queue_pop(struct kt *kt);
void kt_rx_init(struct kt_rx *rx);

/* transport_kernel_done.c: what the engines report back. */
/* The kernel is done with op's msghdr: res as sendmsg returned it. */
void kt_op_done(struct kt *kt, struct kt_op *op, int res);
/* Completion records as recvmsg returned them. */
int kt_records(struct kt *kt, const void *buf, size_t len);
int kt_cq_push(struct kt *kt, const struct or_cqe *c);
int kt_cq_pop(struct kt *kt, struct or_cqe *cqes, unsigned int max);
void kt_fail(struct kt *kt, int err);		/* the first error stays */

/* transport_kernel_uring.c / _plain.c: 0, or -errno (engine not set up). */
int kt_uring_init(struct kt *kt);
int kt_plain_init(struct kt *kt);

/* transport_kernel_sock.c */
/* The family and option level the module published; -errno if absent. */
int kt_sysfs_ids(int *family, int *sol);
/* A socket joined to the communicator; fd or -errno (said why on stderr). */
int kt_socket_join(const struct or_kernel_params *p, int family, int sol);
/* The optireduce_send.flags the module takes (0 before it said). */
uint32_t kt_send_flags(int fd, int sol);

#endif /* OR_TRANSPORT_KERNEL_H */
