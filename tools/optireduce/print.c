// SPDX-License-Identifier: GPL-2.0
/*
 * The text/JSON print layer; see print.h. The JSON writer is a stack of
 * open containers, each knowing whether it is an object (members have
 * keys) and how many members it has so far (where commas go).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "print.h"

#define MAX_DEPTH	16
#define INDENT		4

static bool json, pretty;

static struct {
	bool object;
	unsigned int n;
} stack[MAX_DEPTH];
static int depth;

void print_init(bool want_json, bool want_pretty)
{
	json = want_json;
	pretty = want_pretty;
	depth = 0;
}

bool print_is_json(void)
{
	return json;
}

static void json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

static void newline_indent(void)
{
	putchar('\n');
	printf("%*s", depth * INDENT, "");
}

/* Before a value: the comma, the indentation and, in an object, the key. */
static void json_member(const char *key)
{
	if (depth == 0)
		return;
	if (stack[depth - 1].n++)
		putchar(',');
	if (pretty)
		newline_indent();
	if (stack[depth - 1].object) {
		json_string(key ? key : "");
		fputs(pretty ? ": " : ":", stdout);
	}
}

static void json_open(const char *key, bool object)
{
	json_member(key);
	putchar(object ? '{' : '[');
	if (depth == MAX_DEPTH) {
		fputs("optireduce: JSON nested too deep\n", stderr);
		exit(1);
	}
	stack[depth].object = object;
	stack[depth].n = 0;
	depth++;
}

static void json_close(bool object)
{
	if (depth == 0 || stack[depth - 1].object != object) {
		fputs("optireduce: JSON writer misuse\n", stderr);
		exit(1);
	}
	depth--;
	if (pretty && stack[depth].n)
		newline_indent();
	putchar(object ? '}' : ']');
	if (depth == 0) {
		putchar('\n');
		fflush(stdout);
	}
}

void print_open_object(const char *key)
{
	if (json)
		json_open(key, true);
}

void print_close_object(void)
{
	if (json)
		json_close(true);
}

void print_open_array(const char *key)
{
	if (json)
		json_open(key, false);
}

void print_close_array(void)
{
	if (json)
		json_close(false);
}

void print_uint(const char *key, const char *fmt, unsigned long long v)
{
	if (json) {
		if (key) {
			json_member(key);
			printf("%llu", v);
		}
	} else if (fmt) {
		printf(fmt, v);
	}
}

void print_string(const char *key, const char *fmt, const char *s)
{
	if (json) {
		if (key) {
			json_member(key);
			json_string(s);
		}
	} else if (fmt) {
		printf(fmt, s);
	}
}

void print_bool(const char *key, const char *fmt_true, const char *fmt_false,
		bool v)
{
	if (json) {
		if (key) {
			json_member(key);
			fputs(v ? "true" : "false", stdout);
		}
	} else if (v ? fmt_true : fmt_false) {
		fputs(v ? fmt_true : fmt_false, stdout);
	}
}

void print_text(const char *fmt, ...)
{
	va_list ap;

	if (json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
