/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for tests that drive the transport, over tools/lib/optr_sock.h:
 * communicator ids, byte-exact posts, a send that holds the send lock,
 * memory and namespace counters, loopback set-up.
 */
#ifndef _OPTR_RANK_H
#define _OPTR_RANK_H

#include <net/if.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "optr_test.h"

/* A communicator id unlikely to collide with another test's. */
static inline __u32 optr_test_comm_id(void)
{
	return (getpid() << 12) ^ (__u32)optr_now_ns();
}

/*
 * A post for a test of what arrives, byte for byte: its round typically
 * takes the whole deadline, so the early timeout waits a whole deadline
 * for a missing tail rather than the socket's estimate (10 ms after a few
 * small rounds). A sender that a slow kernel (KASAN under emulation)
 * holds up for longer than that between two batches is not a lost tail.
 */
static inline int optr_post_exact(int fd, __u32 round, __u32 msg,
				  __u32 deadline_us, __u64 user_data,
				  void *buf, size_t len)
{
	return optr_post_hinted(fd, round, msg, 0, 0, deadline_us,
				deadline_us, user_data, buf, len);
}

/*
 * A send that keeps @fd's send lock for a few seconds: @len bytes to
 * @dst at the socket's pace (set it low first), on a thread of its own.
 * optr_long_send_start() returns once the send holds the lock (poll no
 * longer reports POLLOUT), 0 then.
 */
struct optr_long_send {
	int fd;
	__u32 round, msg, dst;
	const void *buf;
	size_t len;
	ssize_t ret;
	pthread_t thread;
};

static inline void *optr_long_send_run(void *arg)
{
	struct optr_long_send *ls = arg;

	ls->ret = optr_send(ls->fd, ls->round, ls->msg, ls->dst, 60000000,
			    ls->buf, ls->len);
	return NULL;
}

static inline int optr_long_send_start(struct optr_long_send *ls)
{
	int i;

	if (pthread_create(&ls->thread, NULL, optr_long_send_run, ls))
		return -1;
	for (i = 0; i < 10000; i++) {
		if (!optr_pollout(ls->fd, 0))
			return 0;
		usleep(1000);
	}
	return -1;
}

static inline ssize_t optr_long_send_join(struct optr_long_send *ls)
{
	pthread_join(ls->thread, NULL);
	return ls->ret;
}

static inline long optr_meminfo_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	return v;
}

/* Bring this namespace's loopback up with an MTU of @mtu. */
static inline int optr_lo_up_mtu(int mtu)
{
	struct ifreq ifr = {};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int ret = -1;

	if (s < 0)
		return -1;
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	ifr.ifr_mtu = mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr))
		goto out;
	if (ioctl(s, SIOCGIFFLAGS, &ifr))
		goto out;
	ifr.ifr_flags |= IFF_UP;
	ret = ioctl(s, SIOCSIFFLAGS, &ifr);
out:
	close(s);
	return ret;
}

/* A "net NAME VALUE" line of this namespace's /proc/net/optireduce. */
static inline long long optr_net_counter(const char *name)
{
	char line[256], key[64];
	long long v = -1, x;
	FILE *f = fopen("/proc/net/optireduce", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "net %63s %lld", key, &x) == 2 &&
		    !strcmp(key, name))
			v = x;
	fclose(f);
	return v;
}

#endif /* _OPTR_RANK_H */
