// SPDX-License-Identifier: GPL-2.0
/*
 * What the module holds for a socket before placing it (fragments that
 * beat their post) is bounded and charged: by the socket's receive
 * buffer, which an unprivileged user raises only up to
 * net.core.rmem_max; by the module's mem_max_kb, across all sockets; and
 * to the memory cgroup of the socket's creator. Senders flood rounds that
 * their receivers never post; every fragment must end up held or dropped
 * and counted (drop_mem_limit), never held past a bound.
 *
 * Each test opens NPAIRS pairs of sockets on 127.0.0.1, one communicator
 * per pair, and sends FLOOD bytes from one side of each pair to a round
 * the other side has not posted.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/sock_diag.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

#define NPAIRS		16
#define FLOOD		(2 << 20)
#define SEND_US		5000000
#define CGROUP_ROOT	"/sys/fs/cgroup"

struct pairs {
	int tx[NPAIRS];
	int rx[NPAIRS];
	int n;
};

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Receive memory the socket holds, and its receive buffer (SO_MEMINFO). */
static int meminfo(int fd, __u32 *rmem, __u32 *rcvbuf)
{
	__u32 m[SK_MEMINFO_VARS];
	socklen_t len = sizeof(m);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, m, &len))
		return -1;
	*rmem = m[SK_MEMINFO_RMEM_ALLOC];
	*rcvbuf = m[SK_MEMINFO_RCVBUF];
	return 0;
}

/*
 * n pairs, the receiving side asking for an @rcvbuf receive buffer with
 * SO_RCVBUFFORCE (@force) or SO_RCVBUF.
 */
static int pairs_open(struct pairs *p, int n, int rcvbuf, bool force)
{
	__u32 comm = optr_test_comm_id();
	int i;

	p->n = 0;
	for (i = 0; i < n; i++) {
		p->tx[i] = optr_socket();
		p->rx[i] = optr_socket();
		p->n++;
		if (p->tx[i] < 0 || p->rx[i] < 0 ||
		    setsockopt(p->rx[i], SOL_SOCKET,
			       force ? SO_RCVBUFFORCE : SO_RCVBUF,
			       &rcvbuf, sizeof(rcvbuf)) ||
		    optr_join_local(p->tx[i], comm + i, 0, 2) ||
		    optr_join_local(p->rx[i], comm + i, 1, 2))
			return -1;
	}
	return 0;
}

static void pairs_close(struct pairs *p)
{
	int i;

	for (i = 0; i < p->n; i++) {
		close(p->tx[i]);
		close(p->rx[i]);
	}
	p->n = 0;
}

/* What a receiver did with the fragments it got before any post. */
static __u64 rx_accounted(const struct optireduce_stats *st)
{
	return st->backlog_queued + st->drop_mem_limit + st->drop_no_post +
	       st->drop_nomem;
}

/*
 * Every pair's sender sends @len bytes to round 1, which its receiver has
 * not posted; then wait until each receiver accounted for every fragment
 * its sender sent (held or dropped). Sums of the receivers' counters and
 * held memory go to @sum and @held.
 */
static int pairs_flood(struct pairs *p, const void *buf, size_t len,
		       struct optireduce_stats *sum, unsigned long *held)
{
	struct optireduce_stats tx, rx;
	int i, tries;

	memset(sum, 0, sizeof(*sum));
	*held = 0;
	for (i = 0; i < p->n; i++)
		if (optr_send(p->tx[i], 1, 0, 1, SEND_US, buf, len) !=
		    (ssize_t)len)
			return -1;
	for (i = 0; i < p->n; i++) {
		__u32 rmem, rcvbuf;

		if (optr_stats(p->tx[i], &tx))
			return -1;
		for (tries = 0; tries < 500; tries++) {
			if (optr_stats(p->rx[i], &rx))
				return -1;
			if (rx_accounted(&rx) >= tx.tx_packets)
				break;
			usleep(10000);
		}
		if (rx_accounted(&rx) != tx.tx_packets ||
		    meminfo(p->rx[i], &rmem, &rcvbuf))
			return -1;
		/* Never more than the receive buffer. */
		if (rmem > rcvbuf)
			return -1;
		*held += rmem;
		sum->backlog_queued += rx.backlog_queued;
		sum->drop_mem_limit += rx.drop_mem_limit;
	}
	return 0;
}

/*
 * The unprivileged flood, in a child that is uid 65534 with room to pin
 * its posts. Exit status: the step that failed.
 */
static int nobody_child(void)
{
	struct rlimit rl = { 64 << 20, 64 << 20 };
	long rmem_max = optr_read_long("/proc/sys/net/core/rmem_max");
	struct optireduce_stats sum;
	unsigned long held;
	int big = 1 << 30, i;
	struct optr_compl c;
	struct pairs p;
	__u32 rmem, rcvbuf;
	__u8 *buf;

	buf = mmap(NULL, FLOOD, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || rmem_max <= 0 ||
	    setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
		return 10;
	memset(buf, 0x11, FLOOD);
	if (pairs_open(&p, NPAIRS, big, false))
		return 11;
	/* SO_RCVBUFFORCE is CAP_NET_ADMIN's; SO_RCVBUF stops at rmem_max. */
	if (setsockopt(p.rx[0], SOL_SOCKET, SO_RCVBUFFORCE, &big,
		       sizeof(big)) != -1 || errno != EPERM)
		return 12;
	for (i = 0; i < p.n; i++)
		if (meminfo(p.rx[i], &rmem, &rcvbuf) ||
		    rcvbuf > 2 * rmem_max)
			return 13;
	if (pairs_flood(&p, buf, FLOOD, &sum, &held))
		return 14;
	ksft_print_msg("nobody: %d sockets hold %lu KiB (rmem_max %ld KiB), %llu fragments held, %llu dropped\n",
		       p.n, held >> 10, rmem_max >> 10,
		       (unsigned long long)sum.backlog_queued,
		       (unsigned long long)sum.drop_mem_limit);
	if (held > (unsigned long)p.n * 2 * rmem_max || !sum.backlog_queued ||
	    !sum.drop_mem_limit)
		return 15;
	/* The post takes what was held, and the socket's charge goes. */
	if (optr_post(p.rx[0], 1, 0, 0, 0, SEND_US, 0, buf, FLOOD) ||
	    optr_cancel(p.rx[0], 1) || optr_recv_one(p.rx[0], &c, 5000) ||
	    !c.h.received || meminfo(p.rx[0], &rmem, &rcvbuf) || rmem)
		return 16;
	pairs_close(&p);
	return 0;
}

TEST(unprivileged_bounded_by_rmem_max)
{
	pid_t pid = fork();
	int st;

	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(nobody_child());
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

FIXTURE(cap) {
	long old_cap;
	struct pairs p;
	__u8 *buf;
};

FIXTURE_SETUP(cap)
{
	self->old_cap = optr_param("mem_max_kb");
	ASSERT_LT(0, self->old_cap);
	self->buf = calloc(1, FLOOD);
	ASSERT_NE(NULL, self->buf);
	self->p.n = 0;
}

FIXTURE_TEARDOWN(cap)
{
	pairs_close(&self->p);
	free(self->buf);
	EXPECT_EQ(0, optr_param_set("mem_max_kb", self->old_cap));
}

/*
 * mem_max_kb bounds all sockets together, whatever their receive
 * buffers: 16 sockets that may each hold 8 MiB hold no more than the cap,
 * give or take the per-CPU reserves of socket memory accounting (up to
 * 1 MiB per CPU) and one datagram per socket. The cap is well above those
 * reserves: the module's count can still carry up to their size from the
 * sockets of earlier tests, and a cap they filled would hold nothing.
 */
TEST_F(cap, module_cap_bounds_all_sockets)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), cap_kb = 2048 * ncpu;
	struct optireduce_stats sum;
	unsigned long held, bound;

	ASSERT_EQ(0, optr_param_set("mem_max_kb", cap_kb));
	ASSERT_EQ(0, pairs_open(&self->p, NPAIRS, 4 << 20, true));
	ASSERT_EQ(0, pairs_flood(&self->p, self->buf, FLOOD, &sum, &held));
	bound = (cap_kb << 10) + ncpu * (1UL << 20) + NPAIRS * (64UL << 10);
	ksft_print_msg("cap %ld KiB: %d sockets hold %lu KiB, %llu dropped\n",
		       cap_kb, self->p.n, held >> 10,
		       (unsigned long long)sum.drop_mem_limit);
	EXPECT_GT(held, 0);
	EXPECT_LE(held, bound);
	EXPECT_GT(sum.drop_mem_limit, 0);
}

/*
 * cgroup v2 at CGROUP_ROOT, mounted if it is not, with the memory
 * controller: 1; 0 when the kernel has no memory cgroups (the debug
 * kernel is built without); -1 when it has but they cannot be set up.
 */
static int memcg_ready(void)
{
	char line[256] = "";
	bool cgroup2 = false;
	struct stat s;
	FILE *f;

	f = fopen("/proc/filesystems", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		cgroup2 |= !!strstr(line, "\tcgroup2\n");
	fclose(f);
	if (!cgroup2)
		return 0;
	if (stat(CGROUP_ROOT "/cgroup.controllers", &s) &&
	    mount("cgroup2", CGROUP_ROOT, "cgroup2", 0, NULL))
		return -1;
	line[0] = 0;
	f = fopen(CGROUP_ROOT "/cgroup.controllers", "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return strstr(line, "memory") ? 1 : 0;
}

/* The "sock" line of a cgroup's memory.stat, bytes; -1 if unreadable. */
static long memcg_sock(const char *dir)
{
	char path[256], key[64];
	long v, found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, "sock"))
			found = v;
	fclose(f);
	return found;
}

/*
 * In a child moved into the memory cgroup @dir: flood, check that the
 * cgroup is charged at least what the sockets hold, close, check that the
 * charge went. Exit status: the step that failed.
 */
static int memcg_child(const char *dir)
{
	char path[256], pid[32];
	struct optireduce_stats sum;
	unsigned long held;
	struct pairs p;
	long sock = -1;
	int tries;
	__u8 *buf;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	if (write_str(path, pid))
		return 20;
	buf = calloc(1, FLOOD);
	/* Sockets opened inside the cgroup are charged to it. */
	if (!buf || pairs_open(&p, NPAIRS, 1 << 20, true))
		return 21;
	if (pairs_flood(&p, buf, FLOOD, &sum, &held) || !held)
		return 22;
	/* The cgroup's statistics are flushed lazily: wait for them. */
	for (tries = 0; tries < 300; tries++) {
		sock = memcg_sock(dir);
		if (sock >= (long)held)
			break;
		usleep(10000);
	}
	ksft_print_msg("memcg: %d sockets hold %lu KiB, cgroup charged %ld KiB for sockets\n",
		       p.n, held >> 10, sock >> 10);
	if (sock < (long)held)
		return 23;
	pairs_close(&p);
	for (tries = 0; tries < 300; tries++) {
		sock = memcg_sock(dir);
		if (sock >= 0 && sock < (long)held)
			break;
		usleep(10000);
	}
	return sock >= 0 && sock < (long)held ? 0 : 24;
}

/*
 * Sockets opened in a memory cgroup charge what they hold to it, as TCP
 * and UDP sockets do, and give it back when they close: a flood from a
 * job in a small cgroup is that cgroup's memory, not the host's.
 */
TEST(memcg_charged)
{
	char dir[128];
	pid_t pid;
	int st;

	int ready = memcg_ready();

	ASSERT_LE(0, ready);
	if (!ready)
		SKIP(return, "no memory cgroups in this kernel");
	/* Enabled already, or enabled now; either way it must be there. */
	write_str(CGROUP_ROOT "/cgroup.subtree_control", "+memory");
	snprintf(dir, sizeof(dir), CGROUP_ROOT "/optr_mem_test.%d", getpid());
	ASSERT_EQ(0, mkdir(dir, 0755));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(memcg_child(dir));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, rmdir(dir));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

TEST_HARNESS_MAIN
