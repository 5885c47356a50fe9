// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring drives the socket the way the library does: posts and sends as
 * IORING_OP_SENDMSG, completions as IORING_OP_RECVMSG, all submitted in
 * batches; a receive submitted before anything completed waits (poll-armed)
 * and finishes when the data arrives. A send submitted while another send
 * holds the socket waits the same way, poll-armed on POLLOUT, instead of
 * blocking the submitter inside io_uring_enter().
 */
#include <liburing.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

enum { ROUNDS = 16, LEN = 20000 };

struct ctl_msg {
	struct msghdr m;
	struct iovec iov;
	union {
		char b[CMSG_SPACE(sizeof(struct optireduce_post))];
		struct cmsghdr align;
	} c;
};

static void ctl_prep(struct ctl_msg *cm, int type, const void *data,
		     size_t dlen, void *buf, size_t len)
{
	struct cmsghdr *c;

	memset(cm, 0, sizeof(*cm));
	cm->iov.iov_base = buf;
	cm->iov.iov_len = len;
	cm->m.msg_iov = &cm->iov;
	cm->m.msg_iovlen = 1;
	cm->m.msg_control = cm->c.b;
	cm->m.msg_controllen = CMSG_SPACE(dlen);
	c = CMSG_FIRSTHDR(&cm->m);
	c->cmsg_level = optr_sol();
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(dlen);
	memcpy(CMSG_DATA(c), data, dlen);
}

TEST(uring_post_send_receive)
{
	static __u8 src[ROUNDS][LEN], dst[ROUNDS][LEN];
	static struct ctl_msg posts[ROUNDS], sends[ROUNDS];
	static char rbuf[8192];
	struct iovec riov = { rbuf, sizeof(rbuf) };
	struct msghdr rmsg = { .msg_iov = &riov, .msg_iovlen = 1 };
	__u32 comm = optr_test_comm_id();
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int a = optr_socket(), b = optr_socket(), r, i, got = 0, seen = 0;
	int ret;

	ASSERT_EQ(0, optr_join_local(a, comm, 0, 2));
	ASSERT_EQ(0, optr_join_local(b, comm, 1, 2));
	ret = io_uring_queue_init(64, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "io_uring unavailable: %s", strerror(-ret));
	ASSERT_EQ(0, ret);

	/* A receive first: nothing is complete yet, so it must wait. */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, b, &rmsg, 0);
	sqe->user_data = 1000;
	ASSERT_EQ(1, io_uring_submit(&ring));
	EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));

	/* Every post in one batch, then every send in another. */
	for (r = 0; r < ROUNDS; r++) {
		/* A deadline the slow debug kernel cannot miss. */
		struct optireduce_post p = { .round = r + 1, .src = 0,
					     .deadline_us = 30000000,
					     .user_data = r };

		for (i = 0; i < LEN; i++)
			src[r][i] = (r * 31 + i) & 0x7f;
		ctl_prep(&posts[r], OPTIREDUCE_CMSG_POST, &p, sizeof(p),
			 dst[r], LEN);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_sendmsg(sqe, b, &posts[r].m, 0);
		sqe->user_data = r;
	}
	ASSERT_EQ(ROUNDS, io_uring_submit(&ring));
	for (r = 0; r < ROUNDS; r++) {
		struct optireduce_send s = { .round = r + 1, .dst = 1 };

		ctl_prep(&sends[r], OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
			 src[r], LEN);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_sendmsg(sqe, a, &sends[r].m, 0);
		sqe->user_data = 100 + r;
	}
	ASSERT_EQ(ROUNDS, io_uring_submit(&ring));

	/* Reap: posts return 0, sends LEN, receives completion records;
	 * keep a receive in flight until every round was reported.
	 */
	while (seen < 2 * ROUNDS || got < ROUNDS) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		if (cqe->user_data < 100) {
			EXPECT_EQ(0, cqe->res);
			seen++;
		} else if (cqe->user_data < 1000) {
			EXPECT_EQ(LEN, cqe->res);
			seen++;
		} else {
			int off = 0;

			ASSERT_GT(cqe->res, 0) TH_LOG("recvmsg: %s",
						      strerror(-cqe->res));
			while (off < cqe->res) {
				struct optireduce_completion *c =
					(void *)(rbuf + off);

				EXPECT_EQ(OPTIREDUCE_COMPLETE, c->status);
				EXPECT_EQ(LEN, c->received);
				off += c->rec_len;
				got++;
			}
			if (got < ROUNDS) {
				sqe = io_uring_get_sqe(&ring);
				io_uring_prep_recvmsg(sqe, b, &rmsg, 0);
				sqe->user_data = 1000;
				ASSERT_EQ(1, io_uring_submit(&ring));
			}
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	for (r = 0; r < ROUNDS; r++)
		EXPECT_EQ(0, memcmp(src[r], dst[r], LEN)) TH_LOG("round %d", r);
	io_uring_queue_exit(&ring);
	close(a);
	close(b);
}

/* 2 MiB at 4 Mbit/s: the long send holds the socket about four seconds. */
#define PACED_MBPS	4
#define PACED_LEN	(2 << 20)
#define SMALL		64

TEST(uring_send_behind_a_long_one)
{
	static __u8 big[PACED_LEN], got[PACED_LEN], small[SMALL], small_got[SMALL];
	struct optr_long_send ls = { .round = 1, .msg = 0, .dst = 1,
				     .buf = big, .len = PACED_LEN };
	struct optireduce_send s = { .round = 1, .msg = 1, .dst = 1,
				     .timeout_us = 60000000 };
	__u32 comm = optr_test_comm_id(), v = PACED_MBPS;
	int a = optr_socket(), b = optr_socket(), ret, i;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct ctl_msg send;
	struct io_uring ring;
	struct optr_compl c;

	ASSERT_EQ(0, optr_join_local(a, comm, 0, 2));
	ASSERT_EQ(0, optr_join_local(b, comm, 1, 2));
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "io_uring unavailable: %s", strerror(-ret));
	ASSERT_EQ(0, ret);
	for (i = 0; i < PACED_LEN; i++)
		big[i] = (i * 7) & 0x7f;
	memset(small, 0x5a, SMALL);
	ASSERT_EQ(0, setsockopt(a, optr_sol(), OPTIREDUCE_PACE_MBPS, &v,
				sizeof(v)));
	ASSERT_EQ(0, optr_post(b, 1, 0, 0, OPTIREDUCE_POST_MORE, 60000000, 0,
			       got, PACED_LEN));
	ASSERT_EQ(0, optr_post(b, 1, 1, 0, 0, 60000000, 1, small_got, SMALL));
	ls.fd = a;
	ASSERT_EQ(0, optr_long_send_start(&ls));

	/* No IOSQE_ASYNC: io_uring tries it inline first. */
	ctl_prep(&send, OPTIREDUCE_CMSG_SEND, &s, sizeof(s), small, SMALL);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_sendmsg(sqe, a, &send.m, 0);
	sqe->user_data = 1;
	ASSERT_EQ(1, io_uring_submit(&ring));
	/* The submitter did not wait out the long send, and the small one
	 * neither failed nor went ahead of it: it waits for POLLOUT.
	 */
	EXPECT_EQ(0, optr_pollout(a, 0));
	EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));

	EXPECT_EQ(PACED_LEN, optr_long_send_join(&ls));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(SMALL, cqe->res) TH_LOG("send: %s", strerror(-cqe->res));
	io_uring_cqe_seen(&ring, cqe);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, optr_recv_one(b, &c, 60000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		EXPECT_EQ(c.h.user_data ? SMALL : PACED_LEN, c.h.received);
	}
	EXPECT_EQ(0, memcmp(big, got, PACED_LEN));
	EXPECT_EQ(0, memcmp(small, small_got, SMALL));
	io_uring_queue_exit(&ring);
	close(a);
	close(b);
}

TEST_HARNESS_MAIN
