// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input to the socket ABI: every malformed socket option and control
 * message is refused with the documented errno and leaves the socket usable.
 */
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

static size_t join_len(__u32 n)
{
	return sizeof(struct optireduce_join) + n * sizeof(struct optireduce_addr);
}

/* A valid two-rank join on 127.0.0.1, for tests to spoil. */
static struct optireduce_join *join_make(__u32 comm, __u32 rank, __u32 n)
{
	struct optireduce_join *j = calloc(1, join_len(n));
	struct optireduce_addr *a = (void *)(j + 1);
	__u32 i;

	j->comm = comm;
	j->rank = rank;
	j->nranks = n;
	for (i = 0; i < n; i++) {
		a[i].family = AF_INET;
		inet_pton(AF_INET, "127.0.0.1", a[i].addr);
	}
	return j;
}

#define EXPECT_ERRNO(err, call) do {					\
		errno = 0;						\
		EXPECT_EQ(-1, (int)(call));				\
		EXPECT_EQ(err, errno);					\
	} while (0)

TEST(join_validation)
{
	int fd = optr_socket(), sol = optr_sol();
	__u32 comm = optr_test_comm_id();
	struct optireduce_join *j = join_make(comm, 0, 2);
	struct optireduce_addr *a = (void *)(j + 1);

	ASSERT_GE(fd, 0);
	/* Sizes: short, one peer missing, one too many. */
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j, 4));
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(1)));
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2) + 1));
	/* Rank counts and ranks. */
	j->nranks = 1;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(1)));
	j->nranks = 2;
	j->rank = 2;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->rank = 0;
	j->nranks = OPTIREDUCE_MAX_RANKS + 1;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->nranks = 2;
	/* Unknown flags, reserved fields. */
	j->flags = 0x80;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	/* Authenticated datagrams with no secret to key them. */
	j->flags = OPTIREDUCE_JOIN_AUTH;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->flags = 0;
	j->reserved = 1;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->reserved = 0;
	/* A group without the flag, a TTL without a group. */
	j->group.family = AF_INET;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->group.family = 0;
	j->mcast_ttl = 3;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->mcast_ttl = 0;
	/* The flag with a unicast group, a group of another family. */
	j->flags = OPTIREDUCE_JOIN_MCAST;
	j->group.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", j->group.addr);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->group.family = AF_INET6;
	inet_pton(AF_INET, "239.1.1.1", j->group.addr);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	j->group.family = AF_INET;
	j->mcast_ttl = 256;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	memset(&j->group, 0, sizeof(j->group));
	j->mcast_ttl = 0;
	j->flags = 0;
	/* Peers: another family, multicast, 0.0.0.0, broadcast, junk. */
	a[1].family = AF_INET6;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	a[1].family = AF_INET;
	inet_pton(AF_INET, "224.0.0.1", a[1].addr);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	inet_pton(AF_INET, "0.0.0.0", a[1].addr);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	inet_pton(AF_INET, "255.255.255.255", a[1].addr);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	inet_pton(AF_INET, "127.0.0.1", a[1].addr);
	a[1].addr[9] = 1;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	a[1].addr[9] = 0;
	a[1].ifindex = 1;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					join_len(2)));
	a[1].ifindex = 0;
	/* A bad pointer. */
	EXPECT_ERRNO(EFAULT, setsockopt(fd, sol, OPTIREDUCE_JOIN, (void *)8,
					join_len(2)));

	/* Still usable: the valid join works, once. */
	ASSERT_EQ(0, setsockopt(fd, sol, OPTIREDUCE_JOIN, j, join_len(2)));
	EXPECT_ERRNO(EISCONN, setsockopt(fd, sol, OPTIREDUCE_JOIN, j,
					 join_len(2)));
	free(j);
	close(fd);
}

TEST(join_same_rank_twice_in_namespace)
{
	__u32 comm = optr_test_comm_id();
	int a = optr_socket(), b = optr_socket();

	ASSERT_EQ(0, optr_join_local(a, comm, 0, 2));
	EXPECT_ERRNO(EADDRINUSE, optr_join_local(b, comm, 0, 2));
	EXPECT_EQ(0, optr_join_local(b, comm, 1, 2));
	close(a);
	close(b);
}

TEST(join_readback)
{
	__u32 comm = optr_test_comm_id();
	int fd = optr_socket(), sol = optr_sol();
	char buf[512];
	struct optireduce_join *j = (void *)buf;
	socklen_t len = sizeof(buf);

	EXPECT_ERRNO(ENOTCONN, getsockopt(fd, sol, OPTIREDUCE_JOIN, buf, &len));
	ASSERT_EQ(0, optr_join_local(fd, comm, 1, 3));
	len = join_len(3) - 1;
	EXPECT_ERRNO(EINVAL, getsockopt(fd, sol, OPTIREDUCE_JOIN, buf, &len));
	len = sizeof(buf);
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_JOIN, buf, &len));
	EXPECT_EQ(join_len(3), len);
	EXPECT_EQ(comm, j->comm);
	EXPECT_EQ(1, j->rank);
	EXPECT_EQ(3, j->nranks);
	close(fd);
}

TEST(pace_and_read_only_options)
{
	int fd = optr_socket(), sol = optr_sol();
	struct optireduce_stats st;
	__u32 v = 100;
	socklen_t len = sizeof(v);

	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_PACE_MBPS, &v, 2));
	v = 1000001;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_PACE_MBPS, &v,
					sizeof(v)));
	v = 2500;
	ASSERT_EQ(0, setsockopt(fd, sol, OPTIREDUCE_PACE_MBPS, &v, sizeof(v)));
	v = 0;
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_PACE_MBPS, &v, &len));
	EXPECT_EQ(2500, v);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_STATS, &st,
					sizeof(st)));
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_ESTIMATE, &st,
					sizeof(st)));
	len = sizeof(st) - 8;
	EXPECT_ERRNO(EINVAL, getsockopt(fd, sol, OPTIREDUCE_STATS, &st, &len));
	close(fd);
}

/* The send flags the module takes: read-only, a u32. */
TEST(send_flags)
{
	int fd = optr_socket(), sol = optr_sol();
	__u32 v = 0;
	socklen_t len = sizeof(v);

	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_SEND_FLAGS, &v, &len));
	EXPECT_EQ(sizeof(v), len);
	EXPECT_EQ(OPTIREDUCE_SEND_SCATTER, v);
	len = 2;
	EXPECT_ERRNO(EINVAL, getsockopt(fd, sol, OPTIREDUCE_SEND_FLAGS, &v,
					&len));
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_SEND_FLAGS, &v,
					sizeof(v)));
	close(fd);
}

/* Where rate control starts: a u32 up to the ceiling's bound, 0 clears. */
TEST(rate_start)
{
	int fd = optr_socket(), sol = optr_sol();
	__u32 v = 25, big = 0;
	socklen_t len = sizeof(v);

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS,
					&v, 2));
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS,
					&big, sizeof(big) + 4));
	v = 1000001;
	EXPECT_ERRNO(EINVAL, setsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS,
					&v, sizeof(v)));
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS, &v, &len));
	EXPECT_EQ(0, v);
	v = 25;
	ASSERT_EQ(0, setsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS, &v,
				sizeof(v)));
	v = 0;
	len = sizeof(v);
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS, &v, &len));
	EXPECT_EQ(25, v);
	len = 2;
	EXPECT_ERRNO(EINVAL, getsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS,
					&v, &len));
	v = 0;
	ASSERT_EQ(0, setsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS, &v,
				sizeof(v)));
	len = sizeof(v);
	v = 7;
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_RATE_START_MBPS, &v, &len));
	EXPECT_EQ(0, v);
	close(fd);
}

FIXTURE(joined) {
	int fd;
	__u8 buf[256];
};

FIXTURE_SETUP(joined)
{
	self->fd = optr_socket();
	ASSERT_EQ(0, optr_join_local(self->fd, optr_test_comm_id(), 0, 3));
}

FIXTURE_TEARDOWN(joined)
{
	close(self->fd);
}

/* Control messages in general: count, level, size, type, address. */
TEST_F(joined, cmsg_framing)
{
	struct optireduce_send s = { .round = 1, .dst = 1 };
	struct iovec iov = { self->buf, 10 };
	union {
		char b[CMSG_SPACE(sizeof(s)) * 2];
		struct cmsghdr align;
	} cbuf;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct cmsghdr *c;

	/* None at all. */
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	/* Two. */
	memset(&cbuf, 0, sizeof(cbuf));
	m.msg_control = cbuf.b;
	m.msg_controllen = sizeof(cbuf.b);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = optr_sol();
	c->cmsg_type = OPTIREDUCE_CMSG_SEND;
	c->cmsg_len = CMSG_LEN(sizeof(s));
	memcpy(CMSG_DATA(c), &s, sizeof(s));
	c = CMSG_NXTHDR(&m, c);
	*c = *CMSG_FIRSTHDR(&m);
	memcpy(CMSG_DATA(c), &s, sizeof(s));
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	/* Wrong level, wrong size, unknown type. */
	m.msg_controllen = CMSG_SPACE(sizeof(s));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET + 1000;
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	c->cmsg_level = optr_sol();
	c->cmsg_len = CMSG_LEN(sizeof(s) - 4);
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	c->cmsg_len = CMSG_LEN(sizeof(s));
	c->cmsg_type = 99;
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	c->cmsg_type = OPTIREDUCE_CMSG_SEND;
	/* A destination address: ranks are named in the message. */
	m.msg_name = &sin;
	m.msg_namelen = sizeof(sin);
	EXPECT_ERRNO(EINVAL, sendmsg(self->fd, &m, 0));
	m.msg_name = NULL;
	m.msg_namelen = 0;
	/* And the well-formed message works. */
	EXPECT_EQ(10, sendmsg(self->fd, &m, 0));
}

TEST_F(joined, send_validation)
{
	struct optireduce_send s = { .round = 1, .dst = 1 };
	int fd = self->fd;

	s.dst = 0;		/* self */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	s.dst = 3;		/* no such rank */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	s.dst = 1;
	s.flags = 1;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	s.flags = 0;
	s.reserved = 1;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	s.reserved = 0;
	s.timeout_us = 60000001;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	s.timeout_us = 0;
	/* Empty message, unreadable buffer. */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 0));
	EXPECT_ERRNO(EFAULT, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      (void *)16, 100));
	EXPECT_EQ(10, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
			       self->buf, 10));
	s.dst = OPTIREDUCE_DST_ALL;
	EXPECT_EQ(10, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
			       self->buf, 10));
	s.flags = 2;		/* no such flag */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
}

/* A scatter send: to every peer, exactly one iovec per rank (3 here). */
TEST_F(joined, scatter_validation)
{
	struct optireduce_send s = {
		.round = 1, .dst = 1, .flags = OPTIREDUCE_SEND_SCATTER,
	};
	struct iovec parts[4] = {
		{ self->buf, 10 }, { self->buf + 10, 20 },
		{ self->buf + 30, 30 }, { self->buf + 60, 40 },
	};
	struct iovec none[3] = {
		{ self->buf, 0 }, { self->buf, 0 }, { self->buf, 0 },
	};
	int fd = self->fd;

	/* To one rank. */
	EXPECT_ERRNO(EINVAL, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				       parts, 3));
	s.dst = OPTIREDUCE_DST_ALL;
	/* Too few, too many, one buffer. */
	EXPECT_ERRNO(EINVAL, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				       parts, 2));
	EXPECT_ERRNO(EINVAL, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				       parts, 4));
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				      self->buf, 10));
	/* Nothing at all; an unreadable part. */
	EXPECT_ERRNO(EINVAL, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				       none, 3));
	parts[2].iov_base = (void *)16;
	EXPECT_ERRNO(EFAULT, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				       parts, 3));
	parts[2].iov_base = self->buf + 30;
	/* Our own part (rank 0's) counts in the length, sent or not. */
	EXPECT_EQ(60, optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s),
				parts, 3));
}

TEST_F(joined, post_validation)
{
	struct optireduce_post p = { .round = 1, .src = 1 };
	struct iovec iov[2] = { { self->buf, 10 }, { self->buf + 10, 10 } };
	union {
		char b[CMSG_SPACE(sizeof(p))];
		struct cmsghdr align;
	} cbuf;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2,
			    .msg_control = cbuf.b,
			    .msg_controllen = sizeof(cbuf.b) };
	struct cmsghdr *c;
	int fd = self->fd;

	p.src = 0;		/* self */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 10));
	p.src = 7;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 10));
	p.src = 1;
	p.flags = 0x10;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 10));
	p.flags = 0;
	p.early_us = 60000001;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 10));
	p.early_us = 0;
	p.deadline_us = 60000001;
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 10));
	p.deadline_us = 0;
	/* No buffer, an unwritable one, an unmapped one. */
	EXPECT_ERRNO(EINVAL, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      self->buf, 0));
	EXPECT_ERRNO(EFAULT, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      (void *)"read-only string", 10));
	EXPECT_ERRNO(EFAULT, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				      (void *)4096, 10));
	/* Two segments: a post is one contiguous buffer. */
	memset(&cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = optr_sol();
	c->cmsg_type = OPTIREDUCE_CMSG_POST;
	c->cmsg_len = CMSG_LEN(sizeof(p));
	memcpy(CMSG_DATA(c), &p, sizeof(p));
	EXPECT_ERRNO(EINVAL, sendmsg(fd, &m, 0));
	/* None of that opened a round: round 1 is still new. */
	EXPECT_EQ(0, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
			      self->buf, 10));
}

TEST_F(joined, cancel_validation)
{
	struct optireduce_cancel c = { .round = 1, .reserved = 1 };

	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_CANCEL, &c,
				      sizeof(c), NULL, 0));
	c.reserved = 0;
	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_CANCEL, &c,
				      sizeof(c), self->buf, 10));
	EXPECT_ERRNO(ENOENT, optr_ctl(self->fd, OPTIREDUCE_CMSG_CANCEL, &c,
				      sizeof(c), NULL, 0));
}

TEST_F(joined, deadline_validation)
{
	struct optireduce_deadline d = { .round = 1, .deadline_us = 0 };

	/* 0 ("the socket's estimate") is a post's, not a move's. */
	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_DEADLINE, &d,
				      sizeof(d), NULL, 0));
	d.deadline_us = 60000001;
	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_DEADLINE, &d,
				      sizeof(d), NULL, 0));
	d.deadline_us = 1000;
	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_DEADLINE, &d,
				      sizeof(d) - 1, NULL, 0));
	EXPECT_ERRNO(EINVAL, optr_ctl(self->fd, OPTIREDUCE_CMSG_DEADLINE, &d,
				      sizeof(d), self->buf, 10));
	EXPECT_ERRNO(ENOENT, optr_ctl(self->fd, OPTIREDUCE_CMSG_DEADLINE, &d,
				      sizeof(d), NULL, 0));
}

TEST(not_joined)
{
	struct optireduce_send s = { .dst = 1 };
	struct optireduce_post p = { .src = 1 };
	int fd = optr_socket();
	char buf[128];

	EXPECT_ERRNO(ENOTCONN, optr_ctl(fd, OPTIREDUCE_CMSG_SEND, &s,
					sizeof(s), buf, 10));
	EXPECT_ERRNO(ENOTCONN, optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p,
					sizeof(p), buf, 10));
	EXPECT_ERRNO(EAGAIN, recv(fd, buf, sizeof(buf), MSG_DONTWAIT));
	EXPECT_ERRNO(EOPNOTSUPP, recv(fd, buf, sizeof(buf), MSG_PEEK));
	close(fd);
}

TEST_HARNESS_MAIN
