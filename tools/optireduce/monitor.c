// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce monitor [-c|--count COUNT] [--timeout SECONDS]: join the
 * family's "events" group and print one line (text) or one JSON document
 * (-j) per event, until interrupted, COUNT events were printed, or
 * SECONDS passed.
 *
 * Exit status: 0 when interrupted (SIGINT, SIGTERM), after COUNT events,
 * or at the timeout when no COUNT was asked for; 1 at the timeout before
 * COUNT events, or on an error.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/genetlink.h>

#include "print.h"
#include "tool.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct mon {
	unsigned long long seen;
	unsigned long long count;	/* 0: no limit */
};

static const char *event_name(uint8_t cmd)
{
	switch (cmd) {
	case OPTIREDUCE_CMD_EVENT_ROUND_EXPIRED:
		return "round_expired";
	case OPTIREDUCE_CMD_EVENT_LOSS_ALARM:
		return "loss_alarm";
	}
	return NULL;
}

static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct genlmsghdr *genl = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[OPTIREDUCE_A_MAX + 1];
	struct mon *m = data;
	const char *name;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*genl)))
		return MNL_CB_OK;
	name = event_name(genl->cmd);
	if (!name)
		return MNL_CB_OK;	/* a newer kernel's event */
	nl_parse(nlh, tb, OPTIREDUCE_A_MAX, optr_attr_types);
	print_open_object(NULL);
	print_string("event", "%s", name);
	if (tb[OPTIREDUCE_A_COMM_ID])
		print_uint("comm", " comm %llu",
			   attr_u32(tb[OPTIREDUCE_A_COMM_ID]));
	if (tb[OPTIREDUCE_A_COMM_RANK])
		print_uint("rank", " rank %llu",
			   attr_u32(tb[OPTIREDUCE_A_COMM_RANK]));
	if (tb[OPTIREDUCE_A_EVENT_ROUND])
		print_uint("round", " round %llu",
			   attr_u32(tb[OPTIREDUCE_A_EVENT_ROUND]));
	if (tb[OPTIREDUCE_A_EVENT_LOST])
		print_uint("lost", " lost %llu",
			   attr_u64(tb[OPTIREDUCE_A_EVENT_LOST]));
	if (tb[OPTIREDUCE_A_EVENT_EXPECTED])
		print_uint("expected", " expected %llu",
			   attr_u64(tb[OPTIREDUCE_A_EVENT_EXPECTED]));
	print_text("\n");
	print_close_object();
	fflush(stdout);
	m->seen++;
	/* Several events may share a read: stop at exactly COUNT. */
	return m->count && m->seen >= m->count ? MNL_CB_STOP : MNL_CB_OK;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_count(const char *s, unsigned long long *v)
{
	uint32_t n;

	if (parse_u32(s, &n) < 0 || !n)
		return -1;
	*v = n;
	return 0;
}

static int parse_seconds(const char *s, double *v)
{
	char *end;

	if (!s[0] || s[0] == '-' || s[0] == '+')
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	if (errno || *end || !isfinite(*v) || *v <= 0 || *v > 86400.0 * 365)
		return -1;
	return 0;
}

int cmd_monitor(struct ctx *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static char buf[NL_BUFSIZE] __attribute__((aligned(8)));
	const char *path = "optireduce monitor";
	unsigned long long count = 0;
	double timeout = 0, end = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	struct mon m = {};
	struct pollfd pfd;
	char **args;
	int opt;

	if (argc && !strcmp(argv[0], "help"))
		return argc > 1 ? usage_error(path, "help takes no arguments") :
				  usage(path);
	/* getopt wants a program name first: argv[-1], the word "monitor"
	 * in main()'s argv.
	 */
	args = argv - 1;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc + 1, args, "+:c:t:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (parse_count(optarg, &count) < 0)
				return usage_error(path, "invalid count '%s'",
						   optarg);
			break;
		case 't':
			if (parse_seconds(optarg, &timeout) < 0)
				return usage_error(path, "invalid timeout '%s'",
						   optarg);
			break;
		case 'h':
			return usage(path);
		case ':':
			return usage_error(path, "option '%s' needs an argument",
					   args[optind - 1]);
		default:
			return usage_error(path, "unknown option '%s'",
					   args[optind - 1]);
		}
	}
	if (optind < argc + 1)
		return usage_error(path, "unexpected argument '%s'",
				   args[optind]);

	m.count = count;
	if (ctx_nl(c) < 0 || nl_subscribe(&c->nl) < 0)
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (timeout)
		end = now_s() + timeout;

	pfd.fd = mnl_socket_get_fd(c->nl.sock);
	pfd.events = POLLIN;
	while (!stop && (!count || m.seen < count)) {
		int wait_ms = -1, n;
		ssize_t len;

		if (timeout) {
			double left = end - now_s();

			if (left <= 0)
				break;
			wait_ms = (int)ceil(left * 1000);
		}
		n = poll(&pfd, 1, wait_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "optireduce: monitor: poll: %s\n",
				strerror(errno));
			return 1;
		}
		if (n == 0)
			continue;
		len = mnl_socket_recvfrom(c->nl.sock, buf, sizeof(buf));
		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* Events came faster than we read them. */
				fprintf(stderr, "optireduce: monitor: events lost (receive buffer overrun)\n");
				continue;
			}
			fprintf(stderr, "optireduce: monitor: %s\n",
				strerror(errno));
			return 1;
		}
		/* Events carry sequence number and port id 0. */
		if (mnl_cb_run(buf, len, 0, 0, event_cb, &m) == MNL_CB_ERROR) {
			fprintf(stderr, "optireduce: monitor: %s\n",
				strerror(errno));
			return 1;
		}
	}
	if (!stop && count && m.seen < count) {
		fprintf(stderr, "optireduce: monitor: timeout after %llu of %llu events\n",
			m.seen, count);
		return 1;
	}
	return 0;
}
