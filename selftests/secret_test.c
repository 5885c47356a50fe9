// SPDX-License-Identifier: GPL-2.0
/*
 * A communicator is its id and its secret. Another local user, or
 * anyone who knows the id and the peer table but not the secret, cannot
 * join it, squat one of its ranks, or receive what its members send; a
 * second network namespace sees none of it either. The secret never
 * reads back.
 */
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

#define MSG_LEN		(64 << 10)
#define DEADLINE_US	300000
#define NOBODY		65534

FIXTURE(comm) {
	__u32 id;
	__u8 secret[OPTIREDUCE_SECRET_LEN];
	int r0, r1;	/* the owner's ranks 0 and 1 */
};

FIXTURE_SETUP(comm)
{
	self->id = optr_test_comm_id();
	ASSERT_EQ(sizeof(self->secret),
		  getrandom(self->secret, sizeof(self->secret), 0));
	self->r0 = optr_socket();
	self->r1 = -1;
	ASSERT_LE(0, self->r0);
	ASSERT_EQ(0, optr_join_secret(self->r0, self->id, 0, 2, NULL, NULL, 0,
				      self->secret));
}

FIXTURE_TEARDOWN(comm)
{
	close(self->r0);
	if (self->r1 >= 0)
		close(self->r1);
}

static int join_as(int fd, __u32 id, __u32 rank, const __u8 *secret)
{
	return optr_join_secret(fd, id, rank, 2, NULL, NULL, 0, secret) ?
	       -errno : 0;
}

/*
 * Post for rank 0's message of round 1 on @fd, let rank 0 send it, and
 * return how many bytes arrived; -1 on error.
 */
static long exchange(int fd, int r0)
{
	static __u8 out[MSG_LEN], in[MSG_LEN];
	struct optr_compl c;

	memset(out, 0x5a, sizeof(out));
	memset(in, 0, sizeof(in));
	if (optr_post(fd, 1, 0, 0, 0, DEADLINE_US, 0, in, sizeof(in)) ||
	    optr_send(r0, 1, 0, 1, DEADLINE_US, out, sizeof(out)) !=
	    (ssize_t)sizeof(out) ||
	    optr_recv_one(fd, &c, 5000))
		return -1;
	if (c.h.received && memcmp(in, out, c.h.received))
		return -1;
	return c.h.received;
}

/* The owner's own rank 1 joins, and what rank 0 sends arrives whole. */
TEST_F(comm, members_exchange)
{
	self->r1 = optr_socket();
	ASSERT_EQ(0, join_as(self->r1, self->id, 1, self->secret));
	EXPECT_EQ(MSG_LEN, exchange(self->r1, self->r0));
}

/*
 * Knowing the id and the peers but not the secret: the join makes
 * another communicator (succeeds, tells nothing), and the owner's data
 * never reaches it; the owner's real rank 1 still joins after it.
 */
TEST_F(comm, wrong_secret_neither_squats_nor_reads)
{
	__u8 guess[OPTIREDUCE_SECRET_LEN] = { 0 };
	struct optireduce_stats st;
	int x = optr_socket();

	ASSERT_EQ(0, join_as(x, self->id, 1, guess));
	self->r1 = optr_socket();
	ASSERT_EQ(0, join_as(self->r1, self->id, 1, self->secret));
	EXPECT_EQ(0, exchange(x, self->r0));
	EXPECT_EQ(0, optr_stats(x, &st));
	EXPECT_EQ(0, st.rx_packets);
	EXPECT_EQ(MSG_LEN, exchange(self->r1, self->r0));
	close(x);
}

/*
 * @child(@self) in a process of its own, as the tests that change user or
 * namespace run: its exit status (the step that failed; 0: none), or -1
 * when it could not start or did not exit.
 */
static int in_child(int (*child)(const FIXTURE_DATA(comm) *self),
		    const FIXTURE_DATA(comm) *self)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(child(self));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Another user, even one that has the secret, cannot join the owner's
 * communicator, and learns only what a taken rank says (EADDRINUSE); a
 * communicator of its own it joins freely.
 */
static int other_user_child(const FIXTURE_DATA(comm) *self)
{
	__u8 mine[OPTIREDUCE_SECRET_LEN];
	int fd;

	if (setgid(NOBODY) || setuid(NOBODY))
		return 10;
	fd = optr_socket();
	if (fd < 0 || join_as(fd, self->id, 1, self->secret) != -EADDRINUSE)
		return 11;
	close(fd);
	fd = optr_socket();
	/* Rank 0 is taken and rank 1 is not: the same answer. */
	if (fd < 0 || join_as(fd, self->id, 0, self->secret) != -EADDRINUSE)
		return 12;
	close(fd);
	fd = optr_socket();
	if (getrandom(mine, sizeof(mine), 0) != sizeof(mine) ||
	    fd < 0 || join_as(fd, self->id, 1, mine))
		return 13;
	close(fd);
	return 0;
}

TEST_F(comm, other_user_cannot_join)
{
	EXPECT_EQ(0, in_child(other_user_child, self));
	/* The owner's own rank 1 is still free. */
	self->r1 = optr_socket();
	EXPECT_EQ(0, join_as(self->r1, self->id, 1, self->secret));
}

/*
 * In a second network namespace, even with id and secret, a join makes a
 * communicator of that namespace: nothing the owner's ranks send in the
 * first reaches it.
 */
static int netns_child(const FIXTURE_DATA(comm) *self)
{
	int fd;

	if (unshare(CLONE_NEWNET) ||
	    system("ip link set lo up"))
		return 20;
	fd = optr_socket();
	if (fd < 0 || join_as(fd, self->id, 1, self->secret))
		return 21;
	/* r0 still lives in the first namespace. */
	if (exchange(fd, self->r0) != 0)
		return 22;
	close(fd);
	return 0;
}

TEST_F(comm, second_netns_reads_nothing)
{
	EXPECT_EQ(0, in_child(netns_child, self));
}

/* What getsockopt(OPTIREDUCE_JOIN) returns has the secret zeroed. */
TEST_F(comm, secret_never_reads_back)
{
	size_t len = sizeof(struct optireduce_join) +
		     2 * sizeof(struct optireduce_addr);
	struct optireduce_join *j = calloc(1, len);
	__u8 zero[OPTIREDUCE_SECRET_LEN] = { 0 };
	socklen_t got = len;

	ASSERT_NE(NULL, j);
	ASSERT_EQ(0, getsockopt(self->r0, optr_sol(), OPTIREDUCE_JOIN, j,
				&got));
	EXPECT_EQ(self->id, j->comm);
	EXPECT_EQ(0, memcmp(j->secret, zero, sizeof(zero)));
	free(j);
}

TEST_HARNESS_MAIN
