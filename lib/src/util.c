// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

void or_log(int quiet, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line so lines of concurrent ranks do not interleave. */
	fprintf(stderr, "optireduce: %s\n", line);
}

static int debug_enabled;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void debug_init(void)
{
	const char *v = getenv("OPTIREDUCE_DEBUG");

	debug_enabled = v && *v && *v != '0';
}

void or_debug(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	pthread_once(&debug_once, debug_init);
	if (!debug_enabled)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "optireduce[debug]: %s\n", line);
}
