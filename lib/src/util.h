/* SPDX-License-Identifier: MIT */
#ifndef OR_UTIL_H
#define OR_UTIL_H

/* Small helpers shared by every file of the library. */

#include <stdint.h>
#include <stddef.h>
#include <time.h>

#define OR_EXPORT	__attribute__((visibility("default")))
#define OR_UNUSED	__attribute__((unused))
#define OR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define OR_MIN(a, b)	((a) < (b) ? (a) : (b))
#define OR_MAX(a, b)	((a) > (b) ? (a) : (b))
#define OR_DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))

static inline int64_t or_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 64-bit mixer (splitmix64 finaliser): seeds, hashes, per-call signs. */
static inline uint64_t or_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Messages on stderr. The library stays silent in steady state: a notice
 * is printed once (e.g. "kernel module not loaded, using TCP"), errors only
 * while a communicator is being created, debug only with OPTIREDUCE_DEBUG.
 */
void or_log(int quiet, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * A number as written in the environment: decimal (leading zeros too,
 * not octal) or hex after 0x; no sign, blank or anything after it, and
 * no overflow. 0 or -EINVAL.
 */
int or_parse_u64(const char *v, uint64_t *out);
void or_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* OR_UTIL_H */
