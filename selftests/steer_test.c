// SPDX-License-Identifier: GPL-2.0
/*
 * Receive steering (kmod/steer.c): batches for a socket whose reader runs
 * on another CPU are placed on the reader's CPU. Two ranks on 127.0.0.1 in
 * a private network namespace with a loopback MTU of 1500 (so that data
 * moves as UDP GSO batches, as over a LAN); the receiver runs on CPU 1, a
 * sending child process on CPU 0, where loopback delivers its packets.
 * Covers: data placed byte for byte through the steering queue; the
 * tunable turning it off; a small queue that fills; a queue too small for
 * one batch placing every batch where it arrived; short batches placed
 * where they arrive; more joined sockets than CPUs placing every batch
 * where it arrived; long datagrams that come alone (MTU 65535) steered
 * too; and closing a socket while batches are queued.
 */
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

#define LONG_US		30000000
#define HEAVY_S		600
#define MTU		1500
#define ROUNDS		8
#define MSG		((1 << 20) + 7)

FIXTURE(steer) {
	int fd[2];		/* rank 0 sends, rank 1 receives */
	__u32 comm;
	long steer_kb;		/* the tunable as found, restored after */
	__u8 *buf[ROUNDS];
};

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Bytes that depend on position, round and seed. */
static __u8 pattern(size_t i, unsigned int round)
{
	return (round * 131 + i * 7 + (i >> 12)) & 0xff;
}

FIXTURE_SETUP(steer)
{
	int i;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "steering needs two CPUs");
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, optr_lo_up_mtu(MTU));
	self->steer_kb = optr_param("rx_steer_kb");
	ASSERT_LE(0, self->steer_kb);
	self->comm = optr_test_comm_id();
	for (i = 0; i < 2; i++) {
		self->fd[i] = optr_socket();
		ASSERT_GE(self->fd[i], 0);
		ASSERT_EQ(0, optr_join_local(self->fd[i], self->comm, i, 2));
	}
	for (i = 0; i < ROUNDS; i++) {
		self->buf[i] = malloc(4 << 20);
		ASSERT_NE(NULL, self->buf[i]);
	}
	ASSERT_EQ(0, pin_to(1));
}

FIXTURE_TEARDOWN(steer)
{
	int i;

	if (self->steer_kb >= 0)
		optr_param_set("rx_steer_kb", self->steer_kb);
	for (i = 0; i < 2; i++)
		close(self->fd[i]);
	for (i = 0; i < ROUNDS; i++)
		free(self->buf[i]);
}

/*
 * A child on CPU 0 sends rounds 1..@n of @len bytes each to rank 1, once
 * the parent wrote a byte to @go. Exits 0 if every send went out whole.
 * It closes its copy of the receiver's socket, which stays the parent's.
 */
static pid_t sender(int fd, int rx_fd, int go, unsigned int n, size_t len)
{
	pid_t pid = fork();
	unsigned int r;
	__u8 *src;
	size_t i;
	char c;

	if (pid)
		return pid;
	close(rx_fd);
	src = malloc(len);
	if (!src || pin_to(0) || read(go, &c, 1) != 1)
		_exit(1);
	for (r = 1; r <= n; r++) {
		for (i = 0; i < len; i++)
			src[i] = pattern(i, r);
		if (optr_send(fd, r, 7, 1, LONG_US, src, len) != (ssize_t)len)
			_exit(1);
	}
	_exit(0);
}

/* Rounds 1..ROUNDS of @len (<= MSG) bytes from the child, checked byte
 * for byte. */
static void transfer_len(struct __test_metadata *_metadata,
			 FIXTURE_DATA(steer) *self, size_t len)
{
	struct optireduce_stats st0, st1;
	struct optr_compl c;
	int go[2], status;
	unsigned int r;
	pid_t pid;
	size_t i;

	ASSERT_EQ(0, pipe(go));
	for (r = 1; r <= ROUNDS; r++) {
		memset(self->buf[r - 1], 0, MSG);
		ASSERT_EQ(0, optr_post_exact(self->fd[1], r, 7, LONG_US, r,
					     self->buf[r - 1], len));
	}
	ASSERT_EQ(0, optr_stats(self->fd[1], &st0));
	pid = sender(self->fd[0], self->fd[1], go[0], ROUNDS, len);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (r = 1; r <= ROUNDS; r++) {
		ASSERT_EQ(0, optr_recv_one(self->fd[1], &c, LONG_US / 1000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		EXPECT_EQ(len, c.h.received);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	for (r = 1; r <= ROUNDS; r++) {
		for (i = 0; i < len; i++)
			if (self->buf[r - 1][i] != pattern(i, r))
				break;
		EXPECT_EQ(len, i) TH_LOG("round %u: first bad byte at %zu", r, i);
	}
	ASSERT_EQ(0, optr_stats(self->fd[1], &st1));
	EXPECT_EQ((__u64)ROUNDS * len, st1.rx_bytes - st0.rx_bytes);
	EXPECT_EQ(0, st1.bytes_lost - st0.bytes_lost);
	EXPECT_EQ(0, st1.rx_duplicate - st0.rx_duplicate);
	close(go[0]);
	close(go[1]);
}

static void transfer(struct __test_metadata *_metadata,
		     FIXTURE_DATA(steer) *self)
{
	transfer_len(_metadata, self, MSG);
}

/*
 * transfer() with rx_steer_kb at @kb: the batches it steered. Every test
 * also sees data arrive as GSO batches, which is what steering moves.
 */
static long long steered_at(struct __test_metadata *_metadata,
			    FIXTURE_DATA(steer) *self, long kb)
{
	long long before = optr_net_counter("rx_steered");
	long long batches = optr_net_counter("rx_gso_batches");

	EXPECT_LE(0, before);
	EXPECT_EQ(0, optr_param_set("rx_steer_kb", kb));
	transfer(_metadata, self);
	EXPECT_LT(batches, optr_net_counter("rx_gso_batches"));
	return optr_net_counter("rx_steered") - before;
}

TEST_F_TIMEOUT(steer, placed_on_the_readers_cpu, HEAVY_S)
{
	EXPECT_LT(0, steered_at(_metadata, self, 4096));
}

TEST_F_TIMEOUT(steer, off_places_where_received, HEAVY_S)
{
	EXPECT_EQ(0, steered_at(_metadata, self, 0));
}

/*
 * 256 KiB holds a few batches: a sender running ahead of the work fills
 * it, and a full queue is placed where the data arrives, ahead of the
 * batch that did not fit. Every round still ends COMPLETE, byte-exact.
 * (Whether order holds shows in the transport benchmark: with many short
 * rounds, early timeouts would cut rounds whose data was overtaken.)
 */
TEST_F_TIMEOUT(steer, full_queue_keeps_rounds_whole, HEAVY_S)
{
	EXPECT_LT(0, steered_at(_metadata, self, 256));
}

/* 1 KiB holds no batch (a GSO batch's skb is far larger): none queued. */
TEST_F_TIMEOUT(steer, queue_too_small_places_where_received, HEAVY_S)
{
	EXPECT_EQ(0, steered_at(_metadata, self, 1));
}

/*
 * 16 KiB messages go as one GSO batch each (about a dozen datagrams),
 * shorter than the 32 KiB that is worth a work's wake-up: placed where
 * they arrive, though batches, and still whole.
 */
TEST_F_TIMEOUT(steer, short_batches_placed_where_received, HEAVY_S)
{
	long long before = optr_net_counter("rx_steered");
	long long batches = optr_net_counter("rx_gso_batches");

	ASSERT_EQ(0, optr_param_set("rx_steer_kb", 4096));
	transfer_len(_metadata, self, 16 << 10);
	EXPECT_LT(batches, optr_net_counter("rx_gso_batches"));
	EXPECT_EQ(before, optr_net_counter("rx_steered"));
}

/*
 * More joined sockets than online CPUs: every CPU is some reader's, so
 * batches are placed where they arrive. Idle members of other
 * communicators make up the crowd; once they leave, steering resumes.
 */
TEST_F_TIMEOUT(steer, crowded_cpus_place_where_received, HEAVY_S)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int crowd[64], n = 0, i;

	ASSERT_GE(64, ncpu);
	/* Two members here already: ncpu more makes ncpu + 2 > ncpu. */
	for (i = 0; i < ncpu; i++, n++) {
		crowd[i] = optr_socket();
		ASSERT_GE(crowd[i], 0);
		ASSERT_EQ(0, optr_join_local(crowd[i], self->comm + 1 + i, 0,
					     2));
	}
	EXPECT_EQ(0, steered_at(_metadata, self, 4096));
	for (i = 0; i < n; i++)
		close(crowd[i]);
	/* Round numbers start over on a new pair, which is steered. */
	self->comm += 1 + n;
	for (i = 0; i < 2; i++) {
		close(self->fd[i]);
		self->fd[i] = optr_socket();
		ASSERT_GE(self->fd[i], 0);
		ASSERT_EQ(0, optr_join_local(self->fd[i], self->comm, i, 2));
	}
	EXPECT_LT(0, steered_at(_metadata, self, 4096));
}

/*
 * At a loopback MTU of 65535 every datagram carries about 64 KiB and goes
 * alone, not in a GSO batch: long enough to be steered all the same.
 */
TEST_F_TIMEOUT(steer, long_lone_datagrams_steered, HEAVY_S)
{
	long long before = optr_net_counter("rx_steered");
	long long batches = optr_net_counter("rx_gso_batches");

	ASSERT_EQ(0, optr_lo_up_mtu(65535));
	ASSERT_EQ(0, optr_param_set("rx_steer_kb", 4096));
	transfer(_metadata, self);
	EXPECT_EQ(batches, optr_net_counter("rx_gso_batches"));
	EXPECT_LT(before, optr_net_counter("rx_steered"));
}

/*
 * The receiver closes with rounds posted while batches are on their way
 * to its CPU: the sends still go out, the socket goes away, and what was
 * queued for it is freed (kmemleak and the dmesg check see the rest).
 */
TEST_F_TIMEOUT(steer, close_while_batches_queued, HEAVY_S)
{
	long long before = optr_net_counter("rx_steered");
	int go[2], status, i;
	unsigned int r;
	pid_t pid;

	ASSERT_EQ(0, optr_param_set("rx_steer_kb", 4096));
	ASSERT_EQ(0, pipe(go));
	for (r = 1; r <= ROUNDS; r++)
		ASSERT_EQ(0, optr_post(self->fd[1], r, 7, 0, 0, LONG_US, r,
				       self->buf[r - 1], 4 << 20));
	pid = sender(self->fd[0], self->fd[1], go[0], ROUNDS, 4 << 20);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, write(go[1], "g", 1));
	/* Close as soon as the first batch was steered. */
	for (i = 0; i < 30000 && optr_net_counter("rx_steered") == before; i++)
		usleep(100);
	EXPECT_LT(before, optr_net_counter("rx_steered"));
	ASSERT_EQ(0, close(self->fd[1]));
	self->fd[1] = -1;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(1, optr_proc_sockets());
	close(go[0]);
	close(go[1]);
}

TEST_HARNESS_MAIN
