// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "util.h"

int or_addr_parse(const char *s, struct or_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char host[256];
	const char *port;
	size_t hl;
	int rc;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (!e || e[1] != ':')
			return -EINVAL;
		hl = e - s - 1;
		s++;
		port = e + 2;
	} else {
		const char *c = strrchr(s, ':');

		if (!c)
			return -EINVAL;
		hl = c - s;
		port = c + 1;
	}
	if (!hl || hl >= sizeof(host) || !*port || strspn(port, "0123456789") != strlen(port) ||
	    atol(port) > 65535)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return rc == EAI_SYSTEM ? -errno : -EINVAL;
	memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
	a->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void or_addr_format(const struct or_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)&a->ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)&a->ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	}
}

int64_t or_deadline_after(unsigned int timeout_ms)
{
	return timeout_ms ? or_now_ns() + (int64_t)timeout_ms * 1000000 : 0;
}

int64_t or_hello_by(int64_t deadline_ns)
{
	int64_t by = or_deadline_after(OR_HELLO_WAIT_MS);

	return deadline_ns && deadline_ns < by ? deadline_ns : by;
}

/* Wait for events on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ns)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ms = -1, rc;

	if (deadline_ns) {
		int64_t left = deadline_ns - or_now_ns();

		if (left <= 0)
			return -ETIMEDOUT;
		ms = (int)OR_MIN(left / 1000000 + 1, 1000000);
	}
	rc = poll(&p, 1, ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (!rc)
		return deadline_ns ? (or_now_ns() >= deadline_ns ? -ETIMEDOUT : 0) : 0;
	return 0;
}

int or_listen(const struct or_addr *a, int backlog)
{
	int one = 1, fd;

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Restarted jobs reuse the same ports at once. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) ||
	    listen(fd, backlog)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

void or_sock_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/*
 * Connecting to a port of this host that nobody listens on yet, from an
 * ephemeral port that happens to be that very one, connects the socket to
 * itself (TCP's simultaneous open). It then holds the port the peer is
 * about to listen on, and talks to itself. Master ports in the ephemeral
 * range meet it among retries every 10 ms.
 */
static int self_connected(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl))
		return 0;
	return ml == pl && !memcmp(&me, &peer, ml);
}

static int connect_once(const struct or_addr *a, int64_t deadline_ns)
{
	socklen_t sl = sizeof(int);
	int fd, err = 0, rc, one = 1;

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* What a self-connection leaves in TIME_WAIT must not keep the
	 * peer's listener (SO_REUSEADDR too) off the port.
	 */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) && errno != EINPROGRESS) {
		err = -errno;
		goto fail;
	}
	do {
		rc = wait_fd(fd, POLLOUT, deadline_ns);
		if (rc) {
			err = rc;
			goto fail;
		}
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
		err = -err;
		if (err)
			goto fail;
		/* Connected once the socket is writable without error. */
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
			break;
	} while (1);
	if (self_connected(fd)) {
		err = -ECONNREFUSED;	/* nobody there yet: retried */
		goto fail;
	}
	or_sock_tune(fd);
	return fd;
fail:
	close(fd);
	return err;
}

int or_connect_retry(const struct or_addr *a, int64_t deadline_ns)
{
	for (;;) {
		int fd = connect_once(a, deadline_ns);

		if (fd >= 0)
			return fd;
		/* The peer may simply not be listening yet. */
		if (fd != -ECONNREFUSED && fd != -ENETUNREACH &&
		    fd != -EHOSTUNREACH && fd != -ECONNRESET)
			return fd;
		if (deadline_ns && or_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

int or_accept(int lfd, int64_t deadline_ns)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		int rc;

		if (fd >= 0) {
			or_sock_tune(fd);
			return fd;
		}
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return -errno;
		rc = wait_fd(lfd, POLLIN, deadline_ns);
		if (rc)
			return rc;
	}
}

/* All len bytes in or out, waiting for the socket until the deadline. */
static int transfer(int fd, char *buf, size_t len, int64_t deadline_ns, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL) :
				  recv(fd, buf + done, len - done, 0);
		int rc;

		if (n > 0) {
			done += n;
			continue;
		}
		if (!n)
			return -ECONNRESET;	/* peer closed while we read */
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		rc = wait_fd(fd, out ? POLLOUT : POLLIN, deadline_ns);
		if (rc)
			return rc;
	}
	return 0;
}

int or_read_full(int fd, void *buf, size_t len, int64_t deadline_ns)
{
	return transfer(fd, buf, len, deadline_ns, 0);
}

int or_write_full(int fd, const void *buf, size_t len, int64_t deadline_ns)
{
	return transfer(fd, (char *)buf, len, deadline_ns, 1);
}
