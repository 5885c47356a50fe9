/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The optireduce socket from C, over the uapi header alone: the module's
 * family and level, join, post, send, cancel, retime, completions one at a
 * time, counters, tunables. For the programs that drive the transport
 * directly (tools/bench/transport_bench.c, the selftests), not for
 * trainers: those use liboptireduce.
 */
#ifndef _OPTR_SOCK_H
#define _OPTR_SOCK_H

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/optireduce.h>
#include <linux/types.h>

/* The integer a file (sysfs, procfs) starts with; -1 if absent. */
static inline long optr_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Read one integer parameter of the loaded module; -1 if absent. */
static inline long optr_param(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), OPTIREDUCE_SYSFS_PARAMS "%s", name);
	return optr_read_long(path);
}

static inline int optr_family(void)
{
	return (int)optr_param("family");
}

static inline int optr_sol(void)
{
	return (int)optr_param("sol");
}

/*
 * A socket whose receive buffer has room for both of the module's
 * per-socket queues (backlog_kb + rx_steer_kb), which count against it,
 * as liboptireduce sizes its sockets: SO_RCVBUFFORCE where the caller may
 * (CAP_NET_ADMIN), else SO_RCVBUF up to net.core.rmem_max.
 */
static inline int optr_socket(void)
{
	long long kb = optr_param("backlog_kb") + optr_param("rx_steer_kb");
	int fd = socket(optr_family(), SOCK_DGRAM, 0);
	int half = kb * 512 > 0x3fffffff ? 0x3fffffff : (int)(kb * 512);

	if (fd >= 0 && half > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &half, sizeof(half)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &half, sizeof(half));
	return fd;
}

/* A completion record with room for its missing ranges. */
struct optr_compl {
	struct optireduce_completion h;
	struct optireduce_range r[256];
};

static inline __u64 optr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Join rank @rank of an @n-rank communicator whose ranks all live at
 * @ips[rank] (NULL: all on 127.0.0.1), optionally with a multicast group,
 * with @secret (OPTIREDUCE_SECRET_LEN bytes; NULL: an open one) and
 * @flags (OPTIREDUCE_JOIN_AUTH; MCAST follows from @group).
 */
static inline int optr_join_flags(int fd, __u32 comm, __u32 rank, __u32 n,
				  const char *const *ips, const char *group,
				  unsigned int ifindex, const __u8 *secret,
				  __u32 flags)
{
	size_t len = sizeof(struct optireduce_join) +
		     n * sizeof(struct optireduce_addr);
	struct optireduce_join *j = calloc(1, len);
	struct optireduce_addr *a = (void *)(j + 1);
	__u32 i;
	int ret;

	if (!j)
		return -1;
	j->comm = comm;
	j->rank = rank;
	j->nranks = n;
	for (i = 0; i < n; i++) {
		a[i].family = AF_INET;
		inet_pton(AF_INET, ips ? ips[i] : "127.0.0.1", a[i].addr);
	}
	j->flags = flags;
	if (group) {
		j->flags |= OPTIREDUCE_JOIN_MCAST;
		j->group.family = AF_INET;
		j->group.ifindex = ifindex;
		inet_pton(AF_INET, group, j->group.addr);
	}
	if (secret)
		memcpy(j->secret, secret, OPTIREDUCE_SECRET_LEN);
	ret = setsockopt(fd, optr_sol(), OPTIREDUCE_JOIN, j, len);
	memset(j->secret, 0, sizeof(j->secret));
	free(j);
	return ret;
}

static inline int optr_join_secret(int fd, __u32 comm, __u32 rank, __u32 n,
				   const char *const *ips, const char *group,
				   unsigned int ifindex, const __u8 *secret)
{
	return optr_join_flags(fd, comm, rank, n, ips, group, ifindex, secret,
			       0);
}

static inline int optr_join(int fd, __u32 comm, __u32 rank, __u32 n,
			    const char *const *ips, const char *group,
			    unsigned int ifindex)
{
	return optr_join_secret(fd, comm, rank, n, ips, group, ifindex, NULL);
}

static inline int optr_join_local(int fd, __u32 comm, __u32 rank, __u32 n)
{
	return optr_join(fd, comm, rank, n, NULL, NULL, 0);
}

/* sendmsg of @iov with one control message of our level, and @flags. */
static inline ssize_t optr_ctlv_flags(int fd, int type, const void *data,
				      size_t dlen, const struct iovec *iov,
				      int iovcnt, int flags)
{
	union {
		char b[CMSG_SPACE(64)];
		struct cmsghdr align;
	} cbuf;
	struct msghdr m = {
		.msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt,
		.msg_control = cbuf.b, .msg_controllen = CMSG_SPACE(dlen),
	};
	struct cmsghdr *c;

	memset(&cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = optr_sol();
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(dlen);
	memcpy(CMSG_DATA(c), data, dlen);
	return sendmsg(fd, &m, flags);
}

static inline ssize_t optr_ctlv(int fd, int type, const void *data,
				size_t dlen, const struct iovec *iov, int iovcnt)
{
	return optr_ctlv_flags(fd, type, data, dlen, iov, iovcnt, 0);
}

/* The same with one buffer (none if @buf is NULL). */
static inline ssize_t optr_ctl(int fd, int type, const void *data,
			       size_t dlen, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return optr_ctlv(fd, type, data, dlen, &iov, buf ? 1 : 0);
}

/* Post @buf for message @msg of @round from rank @src, telling the
 * socket its rounds typically take @early_us (0: its own estimate). */
static inline int optr_post_hinted(int fd, __u32 round, __u32 msg, __u32 src,
				   __u32 flags, __u32 deadline_us,
				   __u32 early_us, __u64 user_data,
				   void *buf, size_t len)
{
	struct optireduce_post p = {
		.round = round, .msg = msg, .src = src, .flags = flags,
		.deadline_us = deadline_us, .early_us = early_us,
		.user_data = user_data,
	};

	return (int)optr_ctl(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p), buf, len);
}

static inline int optr_post(int fd, __u32 round, __u32 msg, __u32 src,
			    __u32 flags, __u32 deadline_us, __u64 user_data,
			    void *buf, size_t len)
{
	return optr_post_hinted(fd, round, msg, src, flags, deadline_us, 0,
				user_data, buf, len);
}

/* Send the bytes of @iov as message @msg of @round to @dst, with sendmsg
 * @flags (MSG_DONTWAIT). */
static inline ssize_t optr_sendv_flags(int fd, __u32 round, __u32 msg,
				       __u32 dst, __u32 timeout_us,
				       const struct iovec *iov, int iovcnt,
				       int flags)
{
	struct optireduce_send s = {
		.round = round, .msg = msg, .dst = dst, .timeout_us = timeout_us,
	};

	return optr_ctlv_flags(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s), iov,
			       iovcnt, flags);
}

static inline ssize_t optr_sendv(int fd, __u32 round, __u32 msg, __u32 dst,
				 __u32 timeout_us, const struct iovec *iov,
				 int iovcnt)
{
	return optr_sendv_flags(fd, round, msg, dst, timeout_us, iov, iovcnt, 0);
}

/* The same from one buffer. */
static inline ssize_t optr_send_flags(int fd, __u32 round, __u32 msg,
				      __u32 dst, __u32 timeout_us,
				      const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };

	return optr_sendv_flags(fd, round, msg, dst, timeout_us, &iov, 1,
				flags);
}

static inline ssize_t optr_send(int fd, __u32 round, __u32 msg, __u32 dst,
				__u32 timeout_us, const void *buf, size_t len)
{
	return optr_send_flags(fd, round, msg, dst, timeout_us, buf, len, 0);
}

static inline int optr_pollout(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLOUT);
}

static inline int optr_cancel(int fd, __u32 round)
{
	struct optireduce_cancel c = { .round = round };

	return (int)optr_ctl(fd, OPTIREDUCE_CMSG_CANCEL, &c, sizeof(c), NULL, 0);
}

static inline int optr_retime(int fd, __u32 round, __u32 deadline_us)
{
	struct optireduce_deadline d = {
		.round = round, .deadline_us = deadline_us,
	};

	return (int)optr_ctl(fd, OPTIREDUCE_CMSG_DEADLINE, &d, sizeof(d), NULL,
			     0);
}

static inline int optr_wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/*
 * The next completion of @fd, waiting up to @timeout_ms. recvmsg may return
 * several records at once; the extra ones are kept here for later calls.
 */
static inline int optr_recv_one(int fd, struct optr_compl *out, int timeout_ms)
{
	static struct { int fd; struct optr_compl c; } stash[128];
	static unsigned int nstash;
	static char buf[64 * 1024];
	unsigned int i;
	ssize_t n, off;

	for (;;) {
		for (i = 0; i < nstash; i++) {
			if (stash[i].fd != fd)
				continue;
			*out = stash[i].c;
			stash[i] = stash[--nstash];
			return 0;
		}
		if (!optr_wait_readable(fd, timeout_ms))
			return -1;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			return -1;
		for (off = 0; off < n && nstash < 128;) {
			struct optireduce_completion *c = (void *)(buf + off);

			stash[nstash].fd = fd;
			memset(&stash[nstash].c, 0, sizeof(stash[nstash].c));
			memcpy(&stash[nstash].c, c,
			       c->rec_len < sizeof(struct optr_compl) ?
			       c->rec_len : sizeof(struct optr_compl));
			nstash++;
			off += c->rec_len;
		}
	}
}

static inline int optr_stats(int fd, struct optireduce_stats *st)
{
	socklen_t len = sizeof(*st);

	return getsockopt(fd, optr_sol(), OPTIREDUCE_STATS, st, &len);
}

static inline int optr_param_set(const char *name, long v)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), OPTIREDUCE_SYSFS_PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

#endif /* _OPTR_SOCK_H */
