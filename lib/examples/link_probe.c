// SPDX-License-Identifier: MIT
/*
 * Measure a link's round-trip time distribution (tools/demo: what the
 * injected latency tail looks like). No ping in the guest image, and a
 * probe in C costs one process instead of an interpreter.
 *
 *   link_probe serve PORT             echo datagrams until killed
 *   link_probe ping ADDR PORT COUNT   COUNT probes, one at a time (a lost
 *                                     one times out after 1 s); prints
 *                                     "rtt_ms p50 P p90 P p99 P max P lost N"
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted samples. */
static double pct(const double *v, int n, int p)
{
	int k = (n * p + 99) / 100;

	return v[k ? k - 1 : 0];
}

static int serve(int fd, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char buf[64];

	if (bind(fd, (void *)&a, sizeof(a))) {
		perror("bind");
		return 1;
	}
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (void *)&from, &fl);

		if (n > 0)
			sendto(fd, buf, n, 0, (void *)&from, fl);
	}
}

static int ping(int fd, const char *addr, int port, int count)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	double *rtt = calloc(count, sizeof(*rtt));
	int got = 0;

	if (!rtt || inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
	    connect(fd, (void *)&a, sizeof(a))) {
		fprintf(stderr, "link_probe: bad address %s\n", addr);
		return 1;
	}
	for (int i = 0; i < count; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double t0 = now_ms();
		int seq = i, echo = -1;

		send(fd, &seq, sizeof(seq), 0);
		/* Drop late echoes of earlier probes; wait for this one. */
		while (echo != seq && poll(&p, 1, 1000) == 1)
			if (recv(fd, &echo, sizeof(echo), 0) < 0)
				break;
		if (echo == seq)
			rtt[got++] = now_ms() - t0;
	}
	if (!got) {
		printf("rtt_ms none lost %d\n", count);
		return 1;
	}
	qsort(rtt, got, sizeof(*rtt), cmp);
	printf("rtt_ms p50 %.2f p90 %.2f p99 %.2f max %.2f lost %d\n",
	       pct(rtt, got, 50), pct(rtt, got, 90), pct(rtt, got, 99),
	       rtt[got - 1], count - got);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0) {
		perror("socket");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(fd, atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "ping"))
		return ping(fd, argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: link_probe serve PORT | ping ADDR PORT COUNT\n");
	return 2;
}
