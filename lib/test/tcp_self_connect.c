// SPDX-License-Identifier: MIT
/*
 * A connect to a local port nobody listens on, from an ephemeral port that
 * is that same port, connects the socket to itself. Made likely here: in a
 * network namespace of its own whose ephemeral range is that port and the
 * next, the retries of or_connect_retry() come to it within a few
 * attempts. It must keep retrying (and time out), not return the socket,
 * and leave the port to the listener that comes (what a self-connection
 * leaves in TIME_WAIT is SO_REUSEADDR); a connect then reaches it. Needs
 * CAP_SYS_ADMIN for the namespace (skips without).
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers.h"
#include "net.h"
#include "util.h"

#define PORT	40122
#define RANGE	"/proc/sys/net/ipv4/ip_local_port_range"

static int write_file(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return ok ? 0 : -1;
}

static int lo_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0), rc = -1;

	if (s < 0)
		return -1;
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return rc;
}

int main(void)
{
	char buf[32];
	struct or_addr a;
	int fd, lfd;

	if (unshare(CLONE_NEWNET)) {
		printf("skip: unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return T_SKIP;
	}
	T_ASSERT(!lo_up(), "lo up: %s", strerror(errno));
	snprintf(buf, sizeof(buf), "%d %d", PORT, PORT + 1);
	T_ASSERT(!write_file(RANGE, buf), "port range: %s", strerror(errno));
	snprintf(buf, sizeof(buf), "127.0.0.1:%d", PORT);
	T_OK(or_addr_parse(buf, &a));

	fd = or_connect_retry(&a, or_now_ns() + 300000000LL);
	T_ASSERT(fd == -ETIMEDOUT, "connect with nobody listening: %d", fd);

	lfd = or_listen(&a, 4);
	T_ASSERT(lfd >= 0, "listen: %d", lfd);
	T_ASSERT(!write_file(RANGE, "32768 60999"), "range: %s", strerror(errno));
	fd = or_connect_retry(&a, or_now_ns() + 2000000000LL);
	T_ASSERT(fd >= 0, "connect to the listener: %d", fd);
	close(fd);
	close(lfd);
	return 0;
}
