/* SPDX-License-Identifier: GPL-2.0 */
/*
 * optireduce(8): what every object's file shares. Each level of the
 * command line is a table of struct cmd; an entry either runs a handler or
 * descends into a table of its own (an object's commands).
 */
#ifndef OPTIREDUCE_TOOL_H
#define OPTIREDUCE_TOOL_H

#include <stdbool.h>
#include <stdint.h>

#include <libmnl/libmnl.h>
#include <linux/optireduce.h>

#include "nl.h"

#define EXIT_USAGE	2

struct ctx {
	bool json;
	bool pretty;
	bool stats;		/* -s */
	bool nl_open;
	struct nl nl;
};

struct cmd {
	const char *name;
	/* argv holds the arguments after the command's name. */
	int (*fn)(struct ctx *c, int argc, char **argv);
	const struct cmd *sub;	/* an object: its commands, first the default */
	const char *args;	/* synopsis of the arguments */
	const char *help;
};

/* Objects' command tables, NULL-terminated. */
extern const struct cmd sock_cmds[];
extern const struct cmd comm_cmds[];
extern const struct cmd stats_cmds[];
extern const struct cmd param_cmds[];
int cmd_monitor(struct ctx *c, int argc, char **argv);

/* The usage of @path ("optireduce param") on stderr, after a one-line
 * complaint; returns EXIT_USAGE.
 */
int usage_error(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The help of @path on stdout; returns 0. */
int usage(const char *path);
bool is_help(const char *arg);

/* The netlink socket, opened at first use; -1 after printing why not. */
int ctx_nl(struct ctx *c);

/* Decimal or 0x-hexadecimal, no sign, no spaces, fits 32 bits. */
int parse_u32(const char *s, uint32_t *v);

/* Every attribute of the family with its libmnl type. */
extern const enum mnl_attr_data_type optr_attr_types[OPTIREDUCE_A_MAX + 1];

/* Counters of a nested OPTIREDUCE_A_STATS: a JSON object named @key (NULL
 * at the top level), in text one line per group, each line after @indent.
 */
void stats_print(const struct nlattr *nest, const char *key,
		 const char *indent);

static inline unsigned long long attr_u32(const struct nlattr *a)
{
	return mnl_attr_get_u32(a);
}

static inline unsigned long long attr_u64(const struct nlattr *a)
{
	return mnl_attr_get_u64(a);
}

/* A be32 OPTIREDUCE_A_COMM_GROUP as "group" (text " group A.B.C.D"). */
void print_group(const struct nlattr *a);

#endif /* OPTIREDUCE_TOOL_H */
