// SPDX-License-Identifier: GPL-2.0
/*
 * optireduce: inspect and tune the OptiReduce transport (optireduce.ko)
 * through its generic netlink family.
 *
 *   optireduce [-j] [-p] [-s] [-n NETNS] OBJECT [COMMAND [ARGS]]
 *
 * One file per object (sock.c, comm.c, stats.c, param.c, monitor.c); the
 * command line is walked down tables of struct cmd, which also make the
 * help text of every level.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "print.h"
#include "tool.h"

#ifndef OPTIREDUCE_TOOL_VERSION
#define OPTIREDUCE_TOOL_VERSION "unknown"
#endif

static int cmd_help(struct ctx *c, int argc, char **argv);

const enum mnl_attr_data_type optr_attr_types[OPTIREDUCE_A_MAX + 1] = {
	[OPTIREDUCE_A_SOCK_INODE] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_UID] = MNL_TYPE_U32,
	[OPTIREDUCE_A_SOCK_PACE_MBPS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_SOCK_ROUNDS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_SOCK_COMPLETIONS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_COMM_ID] = MNL_TYPE_U32,
	[OPTIREDUCE_A_COMM_RANK] = MNL_TYPE_U32,
	[OPTIREDUCE_A_COMM_NRANKS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_COMM_GROUP] = MNL_TYPE_U32,
	[OPTIREDUCE_A_COMM_MEMBERS] = MNL_TYPE_NESTED,
	[OPTIREDUCE_A_STATS] = MNL_TYPE_NESTED,
	[OPTIREDUCE_A_ESTIMATE] = MNL_TYPE_NESTED,
	[OPTIREDUCE_A_PARAM_NAME] = MNL_TYPE_NUL_STRING,
	[OPTIREDUCE_A_PARAM_VALUE] = MNL_TYPE_U32,
	[OPTIREDUCE_A_PARAM_MIN] = MNL_TYPE_U32,
	[OPTIREDUCE_A_PARAM_MAX] = MNL_TYPE_U32,
	[OPTIREDUCE_A_PARAM_WRITABLE] = MNL_TYPE_FLAG,
	[OPTIREDUCE_A_EVENT_ROUND] = MNL_TYPE_U32,
	[OPTIREDUCE_A_EVENT_LOST] = MNL_TYPE_U64,
	[OPTIREDUCE_A_EVENT_EXPECTED] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_PEERS] = MNL_TYPE_NESTED,
	[OPTIREDUCE_A_SOCK_RATE_MBPS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_SOCK_RATE_CUTS] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_RAISES] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_QUEUE_DROPS] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_KNEE_MBPS] = MNL_TYPE_U32,
	[OPTIREDUCE_A_SOCK_RATE_HOLDS] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_FOREIGN] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_DRAINED] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_UNREACHED] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_UPLINK] = MNL_TYPE_U64,
	[OPTIREDUCE_A_SOCK_RATE_FOREIGN_LOSS] = MNL_TYPE_U64,
};

static const struct cmd objects[] = {
	{ "sock", NULL, sock_cmds, NULL,
	  "sockets of this network namespace" },
	{ "comm", NULL, comm_cmds, NULL,
	  "communicators with members in this namespace" },
	{ "stats", NULL, stats_cmds, NULL, "counters of this namespace" },
	{ "param", NULL, param_cmds, NULL, "module parameters and tunables" },
	{ "monitor", cmd_monitor, NULL, "[-c|--count COUNT] [--timeout SECONDS]",
	  "print round events until interrupted" },
	{ "help", cmd_help, NULL, NULL, "this text" },
	{}
};

static const char options_help[] =
	"Options:\n"
	"  -j, --json           JSON output\n"
	"  -p, --pretty         indented JSON output (implies -j)\n"
	"  -s, --stats          add counters and estimates (sock show)\n"
	"  -n, --netns NAME     run in network namespace NAME (ip netns)\n"
	"  -V, --version        print the version and exit\n"
	"  -h, --help           this text\n";

static const char monitor_help[] =
	"  -c, --count COUNT    exit after COUNT events\n"
	"  --timeout SECONDS    exit after SECONDS (status 1 if COUNT events\n"
	"                       were asked for and not seen)\n";

/*
 * Help for @path: "optireduce" lists every object's commands; "optireduce
 * OBJECT" only that object's.
 */
static void print_help(FILE *f, const char *path)
{
	const char *obj = strchr(path, ' ');
	const struct cmd *o, *s;
	const char *lead = "Usage:";

	if (!obj) {
		fprintf(f, "%s optireduce [OPTIONS] OBJECT [COMMAND [ARGS]]\n",
			lead);
		lead = "      ";
	}
	for (o = objects; o->name; o++) {
		if (obj && strcmp(obj + 1, o->name))
			continue;
		if (!o->sub) {
			if (o->fn != cmd_help || !obj)
				fprintf(f, "%s optireduce [OPTIONS] %s%s%s\n", lead,
					o->name, o->args ? " " : "",
					o->args ? o->args : "");
			lead = "      ";
			continue;
		}
		for (s = o->sub; s->name; s++) {
			fprintf(f, "%s optireduce [OPTIONS] %s %s%s%s\n", lead,
				o->name, s->name, s->args ? " " : "",
				s->args ? s->args : "");
			lead = "      ";
		}
	}
	fprintf(f, "%s:\n", obj ? "Where" : "Objects");
	for (o = objects; o->name; o++) {
		if (!obj) {
			fprintf(f, "  %-10s %s\n", o->name, o->help);
			continue;
		}
		if (strcmp(obj + 1, o->name))
			continue;
		if (!o->sub)
			fprintf(f, "  %-10s %s\n", o->name, o->help);
		for (s = o->sub; s && s->name; s++)
			fprintf(f, "  %-10s %s\n", s->name, s->help);
	}
	if (!obj)
		fputs(options_help, f);
	else if (!strcmp(obj + 1, "monitor"))
		fputs(monitor_help, f);
}

int usage(const char *path)
{
	print_help(stdout, path);
	return 0;
}

int usage_error(const char *path, const char *fmt, ...)
{
	va_list ap;

	fputs("optireduce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_help(stderr, path);
	return EXIT_USAGE;
}

bool is_help(const char *arg)
{
	return !strcmp(arg, "help") || !strcmp(arg, "-h") ||
	       !strcmp(arg, "--help");
}

static int cmd_help(struct ctx *c, int argc, char **argv)
{
	(void)c;
	(void)argv;
	if (argc)
		return usage_error("optireduce", "help takes no arguments");
	return usage("optireduce");
}

int ctx_nl(struct ctx *c)
{
	if (c->nl_open)
		return 0;
	if (nl_open(&c->nl) < 0)
		return -1;
	c->nl_open = true;
	return 0;
}

int parse_u32(const char *s, uint32_t *v)
{
	unsigned long long x;
	char *end;
	int base = 10;

	if (!isdigit((unsigned char)s[0]))
		return -1;		/* empty, sign, space */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	errno = 0;
	x = strtoull(s, &end, base);
	if (errno || *end || end == s || x > UINT32_MAX)
		return -1;
	*v = x;
	return 0;
}

/*
 * The entry of @table that @name names: exactly, or else as the prefix of
 * exactly one entry. NULL (after a usage error) when none or several.
 */
static const struct cmd *lookup(const char *path, const struct cmd *table,
				const char *name, int *status)
{
	const struct cmd *e, *found = NULL;
	int n = 0;

	for (e = table; e->name; e++)
		if (!strcmp(e->name, name))
			return e;
	for (e = table; e->name && name[0]; e++) {
		if (!strncmp(e->name, name, strlen(name))) {
			found = e;
			n++;
		}
	}
	if (n == 1)
		return found;
	if (n)
		*status = usage_error(path, "'%s' is ambiguous", name);
	else
		*status = usage_error(path, "unknown %s '%s'",
				      table == objects ? "object" : "command",
				      name);
	return NULL;
}

/* Walk one level: @path names the table; a missing command runs the first
 * entry of an object's table (its "show").
 */
static int run(struct ctx *c, const char *path, const struct cmd *table,
	       int argc, char **argv)
{
	const struct cmd *e;
	char sub[64];
	int status = 0;

	if (argc == 0) {
		if (table == objects)
			return usage_error(path, "missing OBJECT");
		e = table;
	} else {
		if (is_help(argv[0]))
			return argc > 1 ?
			       usage_error(path, "help takes no arguments") :
			       usage(path);
		e = lookup(path, table, argv[0], &status);
		if (!e)
			return status;
		argc--;
		argv++;
	}
	if (e->sub) {
		snprintf(sub, sizeof(sub), "%s %s", path, e->name);
		return run(c, sub, e->sub, argc, argv);
	}
	/* "optireduce param set help": the object's help. */
	if (table != objects && argc && is_help(argv[0]))
		return argc > 1 ? usage_error(path, "help takes no arguments") :
				  usage(path);
	return e->fn(c, argc, argv);
}

static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "optireduce: network namespace %s: %s\n", name,
			strerror(errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "optireduce: entering network namespace %s: %s\n",
			name, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "stats", no_argument, NULL, 's' },
		{ "netns", required_argument, NULL, 'n' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctx c = {};
	const char *netns = NULL;
	int opt, status;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:jpsn:Vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			c.json = true;
			break;
		case 'p':
			c.json = true;
			c.pretty = true;
			break;
		case 's':
			c.stats = true;
			break;
		case 'n':
			netns = optarg;
			break;
		case 'V':
			printf("optireduce %s (generic netlink family %s version %d, socket ABI %d)\n",
			       OPTIREDUCE_TOOL_VERSION, OPTIREDUCE_GENL_NAME,
			       OPTIREDUCE_GENL_VERSION, OPTIREDUCE_ABI);
			return 0;
		case 'h':
			return usage("optireduce");
		case ':':
			return usage_error("optireduce",
					   "option '%s' needs an argument",
					   argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("optireduce",
						   "unknown option '-%c'", optopt);
			return usage_error("optireduce", "unknown option '%s'",
					   argv[optind - 1]);
		}
	}
	if (netns && enter_netns(netns) < 0)
		return 1;
	print_init(c.json, c.pretty);
	status = run(&c, "optireduce", objects, argc - optind, argv + optind);
	if (c.nl_open)
		nl_close(&c.nl);
	if (fflush(stdout) == EOF) {
		perror("optireduce: stdout");
		return 1;
	}
	return status;
}
