/* SPDX-License-Identifier: MIT */
#ifndef OR_NET_H
#define OR_NET_H

/*
 * Socket helpers for connection setup (rendezvous, TCP mesh): addresses,
 * and reads, writes, connects and accepts bounded by an absolute
 * CLOCK_MONOTONIC deadline (0: none). All sockets are non-blocking and
 * close-on-exec; waiting is poll(2). Steady-state traffic does not use
 * these (see transport_tcp.c).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define OR_ADDR_MAX	64	/* "[ipv6]:port" fits */

struct or_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* "ipv4:port", "[ipv6]:port" or "host:port" (resolved). 0 or -errno. */
int or_addr_parse(const char *s, struct or_addr *a);
/* Numeric form of a, as or_addr_parse() takes it. */
void or_addr_format(const struct or_addr *a, char *buf, size_t len);

int or_listen(const struct or_addr *a, int backlog);		/* fd or -errno */
/* Connect, retrying refused or unreachable attempts until the deadline. */
int or_connect_retry(const struct or_addr *a, int64_t deadline_ns);
int or_accept(int lfd, int64_t deadline_ns);			/* fd or -errno */
int or_read_full(int fd, void *buf, size_t len, int64_t deadline_ns);
int or_write_full(int fd, const void *buf, size_t len, int64_t deadline_ns);
/* TCP_NODELAY and O_NONBLOCK on a connected socket. */
void or_sock_tune(int fd);
/* Absolute deadline timeout_ms from now; 0 stays 0 (no deadline). */
int64_t or_deadline_after(unsigned int timeout_ms);
/*
 * When an accepted connection's first message must have come: whatever
 * connects and says nothing (a port scan, a health check) holds a
 * listener up for OR_HELLO_WAIT_MS at most, not until @deadline_ns.
 */
#define OR_HELLO_WAIT_MS	5000
int64_t or_hello_by(int64_t deadline_ns);

#endif /* OR_NET_H */
