// SPDX-License-Identifier: GPL-2.0
/*
 * The socket family itself: discovery through sysfs, which socket types and
 * protocols are accepted, option validation, many sockets, unprivileged
 * users, network namespace isolation and multicast group membership.
 */
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

TEST(family_published)
{
	int family = optr_family(), sol = optr_sol();

	ASSERT_GT(family, 0);
	ASSERT_LT(family, 46);	/* below AF_MAX, or sock_register refuses */
	ASSERT_GE(sol, 256);
	ASSERT_GT(optr_param("port"), 0);
}

TEST(dgram_create_close)
{
	int fd = optr_socket();

	ASSERT_GE(fd, 0) TH_LOG("socket: %s", strerror(errno));
	ASSERT_EQ(0, close(fd));
}

TEST(unsupported_types)
{
	static const int types[] = { SOCK_STREAM, SOCK_SEQPACKET, SOCK_RAW,
				     SOCK_RDM };
	unsigned int i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, socket(optr_family(), types[i], 0));
		EXPECT_EQ(ESOCKTNOSUPPORT, errno) TH_LOG("type %d", types[i]);
	}
}

TEST(nonzero_protocol)
{
	errno = 0;
	ASSERT_EQ(-1, socket(optr_family(), SOCK_DGRAM, IPPROTO_UDP));
	ASSERT_EQ(EPROTONOSUPPORT, errno);
}

TEST(abi_version_option)
{
	int fd = optr_socket(), sol = optr_sol();
	__u32 v = 0;
	socklen_t len = sizeof(v);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, getsockopt(fd, sol, OPTIREDUCE_ABI_VERSION, &v, &len));
	EXPECT_EQ((__u32)OPTIREDUCE_ABI, v);
	EXPECT_EQ(sizeof(v), len);

	/* Too short a buffer, a negative length. */
	len = sizeof(v) - 1;
	EXPECT_EQ(-1, getsockopt(fd, sol, OPTIREDUCE_ABI_VERSION, &v, &len));
	EXPECT_EQ(EINVAL, errno);
	len = (socklen_t)-1;
	EXPECT_EQ(-1, getsockopt(fd, sol, OPTIREDUCE_ABI_VERSION, &v, &len));
	EXPECT_EQ(EINVAL, errno);

	/* Read-only. */
	EXPECT_EQ(-1, setsockopt(fd, sol, OPTIREDUCE_ABI_VERSION, &v,
				 sizeof(v)));
	EXPECT_EQ(EINVAL, errno);

	/* Unknown option, unknown level. */
	len = sizeof(v);
	EXPECT_EQ(-1, getsockopt(fd, sol, 9999, &v, &len));
	EXPECT_EQ(ENOPROTOOPT, errno);
	EXPECT_EQ(-1, getsockopt(fd, SOL_IP, OPTIREDUCE_ABI_VERSION, &v,
				 &len));
	EXPECT_EQ(ENOPROTOOPT, errno);
	EXPECT_EQ(-1, setsockopt(fd, sol + 1, 1, &v, sizeof(v)));
	EXPECT_EQ(ENOPROTOOPT, errno);

	close(fd);
}

TEST(stream_operations_refused)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = optr_socket();

	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, bind(fd, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, connect(fd, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, listen(fd, 1));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, accept(fd, NULL, NULL));
	EXPECT_EQ(EOPNOTSUPP, errno);
	close(fd);
}

/*
 * Sockets appear in and leave /proc/net/optireduce one for one. The
 * create/close churn runs for a fixed time rather than a fixed count, so
 * that the debug kernel, tens of times slower, fits the harness timeout.
 */
TEST(many_sockets)
{
	enum { OPEN_AT_ONCE = 500, MAX_CYCLES = 20000, MIN_CYCLES = 100 };
	long base = optr_proc_sockets();
	static int fds[OPEN_AT_ONCE];
	struct timespec t0, t;
	int i;

	ASSERT_GE(base, 0);
	for (i = 0; i < OPEN_AT_ONCE; i++) {
		fds[i] = optr_socket();
		ASSERT_GE(fds[i], 0) TH_LOG("socket %d: %s", i,
					    strerror(errno));
	}
	EXPECT_EQ(base + OPEN_AT_ONCE, optr_proc_sockets());
	for (i = 0; i < OPEN_AT_ONCE; i++)
		ASSERT_EQ(0, close(fds[i]));
	EXPECT_EQ(base, optr_proc_sockets());

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < MAX_CYCLES; i++) {
		int fd = optr_socket();

		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, close(fd));
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (i >= MIN_CYCLES && t.tv_sec - t0.tv_sec >= 10)
			break;
	}
	TH_LOG("%d create/close cycles", i);
	EXPECT_EQ(base, optr_proc_sockets());
}

/* Like UDP, any user may open a socket. */
TEST(unprivileged_user)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = optr_socket();
		_exit(fd >= 0 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/* The uid /proc/net/udp lists for the socket bound to @port, or -1. */
static long udp_port_uid(unsigned int port)
{
	FILE *f = fopen("/proc/net/udp", "r");
	char line[512];
	long uid = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int p;
		long u;

		if (sscanf(line, " %*d: %*x:%x %*x:%*x %*x %*x:%*x %*x:%*x %*x %ld",
			   &p, &u) == 2 && p == port)
			uid = u;
	}
	fclose(f);
	return uid;
}

/*
 * The namespace's UDP socket serves every member, so it belongs to none:
 * joined first by an unprivileged user, it is still root's (a kernel
 * thread creates it), not charged to that user's uid and cgroups.
 */
TEST(udp_socket_owned_by_no_joiner)
{
	long port = optr_param("port");
	int status;
	pid_t pid;

	ASSERT_GT(port, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		long uid;
		int fd;

		if (unshare(CLONE_NEWNET) || optr_lo_up_mtu(65536))
			_exit(2);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		fd = optr_socket();
		if (fd < 0 || optr_join_local(fd, optr_test_comm_id(), 0, 2))
			_exit(4);
		uid = udp_port_uid(port);
		_exit(uid == 0 ? 0 : uid < 0 ? 5 : 6);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	/* 6: the socket is the joiner's (uid 65534); 5: no socket found */
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Each namespace counts only its own sockets. */
TEST(netns_isolation)
{
	long outer = optr_proc_sockets();
	int status, fd;
	pid_t pid;

	fd = optr_socket();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(outer + 1, optr_proc_sockets());

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int inner;

		if (unshare(CLONE_NEWNET))
			_exit(2);
		if (optr_proc_sockets() != 0)
			_exit(3);
		inner = optr_socket();
		if (inner < 0 || optr_proc_sockets() != 1)
			_exit(4);
		close(inner);
		_exit(optr_proc_sockets() == 0 ? 0 : 5);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(outer + 1, optr_proc_sockets());
	close(fd);
	EXPECT_EQ(outer, optr_proc_sockets());
}

/* Whether @dev is a member of @group, from /proc/net/igmp: a line per
 * device ("1\tlo        :     1      V3"), then one per group it is in,
 * the address in hex as it sits in memory.
 */
static int igmp_member(const char *dev, const char *group)
{
	char line[256], name[64] = "", want[16];
	FILE *f = fopen("/proc/net/igmp", "r");
	unsigned int addr;
	int found = 0;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%08X", (unsigned int)inet_addr(group));
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != '\t') {
			if (sscanf(line, "%*d %63s", name) != 1)
				name[0] = 0;
			continue;
		}
		if (sscanf(line, " %X", &addr) == 1 && !strcmp(name, dev)) {
			char have[16];

			snprintf(have, sizeof(have), "%08X", addr);
			found |= !strcmp(have, want);
		}
	}
	fclose(f);
	return found;
}

/*
 * A group joined without a device goes where the route to it points; when
 * its last member leaves, it is left on that device even if the route has
 * moved since (asking the route again would leave nothing, keep the
 * membership and refuse the next join there with EADDRINUSE). Another
 * communicator keeps the namespace's UDP socket, and its memberships,
 * open throughout.
 */
TEST(mcast_group_left_where_joined)
{
	static const char *const group = "239.77.5.1";
	__u32 comm = optr_test_comm_id();
	int keep, fd;

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, optr_lo_up_mtu(65536));
	ASSERT_EQ(0, system("ip link add m0 type veth peer name m0p && "
			    "ip link add m1 type veth peer name m1p && "
			    "for d in m0 m0p m1 m1p; do ip link set $d up; done && "
			    "ip addr add 10.77.0.1/24 dev m0 && "
			    "ip addr add 10.77.1.1/24 dev m1 && "
			    "ip route add 239.77.5.0/24 dev m0"));
	keep = optr_socket();
	fd = optr_socket();
	ASSERT_GE(keep, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, optr_join_local(keep, comm + 1, 0, 2));
	ASSERT_EQ(0, optr_join(fd, comm, 0, 2, NULL, group, 0));
	EXPECT_EQ(1, igmp_member("m0", group));
	EXPECT_EQ(0, igmp_member("m1", group));

	ASSERT_EQ(0, system("ip route replace 239.77.5.0/24 dev m1"));
	close(fd);
	EXPECT_EQ(0, igmp_member("m0", group));
	EXPECT_EQ(0, igmp_member("m1", group));

	/* The route back: joining there again works. */
	ASSERT_EQ(0, system("ip route replace 239.77.5.0/24 dev m0"));
	fd = optr_socket();
	ASSERT_GE(fd, 0);
	EXPECT_EQ(0, optr_join(fd, comm + 2, 0, 2, NULL, group, 0));
	EXPECT_EQ(1, igmp_member("m0", group));
	close(fd);
	close(keep);
}

TEST_HARNESS_MAIN
