// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
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

int or_parse_u64(const char *v, uint64_t *out)
{
	int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	unsigned long long x;
	const char *p;

	if (hex)
		v += 2;
	if (!*v)
		return -EINVAL;
	for (p = v; *p; p++)
		if (!(hex ? isxdigit((unsigned char)*p) :
			    isdigit((unsigned char)*p)))
			return -EINVAL;
	errno = 0;
	x = strtoull(v, NULL, hex ? 16 : 10);
	if (errno)
		return -EINVAL;
	*out = x;
	return 0;
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
