// SPDX-License-Identifier: MIT
/*
 * Hadamard transform throughput on one core, per block size and kernel,
 * against memcpy of the same bytes measured in the same run, and what
 * encode + decode cost relative to the time the same bytes take on a
 * 10 Gbit/s link (the target: under 10%). Encode and decode are measured
 * as the library runs them for float32: encode reads the caller's buffer
 * and writes the work buffer, decode reads the work buffer and writes the
 * caller's with the mean's division. Without the transform the library
 * copies the same bytes in and out anyway (a memcpy each way), so the
 * transform's own cost is "added": encode + decode - 2 memcpy. Both
 * figures are printed, and the two copies alone ("copies/wire"); the
 * target is judged on the added one. Where the buffer is in memory, not
 * in a cache, one core's two copies by themselves come near or past 10%
 * of a 10 Gbit/s link's time, with or without a transform.
 *
 *   hadamard_bench [MiB]     one buffer size; default 1/4, 1, 4, 16 and
 *                            64 MiB (from L2 to past most L3 caches)
 *
 * Buffers from half the last-level cache up are streamed (their results
 * written past the caches), as the library does; the header says which.
 *
 * Numbers, not a test: it always exits 0 unless something is broken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hadamard.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { COPY, ENCODE, DECODE };

/* Best of several runs of at least 0.1 s each: seconds per pass. */
static double measure(int what, float *a, float *b, size_t n, unsigned int block)
{
	double best = 1e9;

	for (int rep = 0; rep < 3; rep++) {
		double t0 = now(), t;
		int iters = 0;

		do {
			if (what == COPY)
				memcpy(b, a, n * 4);
			else if (what == ENCODE)
				or_hadamard_forward(b, a, n, 7, block);
			else
				or_hadamard_inverse(a, b, n, 7, block, 4.0f);
			iters++;
			t = now() - t0;
		} while (t < 0.1);
		if (t / iters < best)
			best = t / iters;
	}
	return best;
}

static void run(size_t bytes)
{
	const unsigned int blocks[] = { 256, 1024, 4096, 16384, 65536 };
	const int impls[] = { OR_HADAMARD_IMPL_AVX512, OR_HADAMARD_IMPL_AVX512VL,
			      OR_HADAMARD_IMPL_AVX2, OR_HADAMARD_IMPL_SCALAR };
	size_t n = bytes / 4;
	double wire = bytes * 8 / 10e9;	/* seconds at 10 Gbit/s */
	float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);

	if (!a || !b) {
		fprintf(stderr, "hadamard_bench: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		a[i] = (float)(i % 1000) * 0.001f - 0.5f;
	memset(b, 0, bytes);
	printf("\nbuffer %.2f MiB, one core; 10 Gbit/s wire time %.3f ms; %s\n",
	       bytes / 1048576.0, wire * 1e3,
	       bytes >= or_hadamard_stream_from() ? "streamed" :
	       "through the caches");
	printf("%-8s %6s %9s %9s %12s %12s %13s %11s %7s\n", "kernel",
	       "block", "enc GB/s", "dec GB/s", "memcpy GB/s", "copies/wire",
	       "enc+dec/wire", "added/wire", "target");
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
		if (or_hadamard_set_impl(impls[k])) {
			printf("kernel %d: not supported by this CPU\n", impls[k]);
			continue;
		}
		for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
			double enc = measure(ENCODE, a, b, n, blocks[bi]);
			double dec = measure(DECODE, a, b, n, blocks[bi]);
			double cpy = measure(COPY, a, b, n, blocks[bi]);
			double frac = (enc + dec) / wire;
			double added = (enc + dec - 2 * cpy) / wire;

			printf("%-8s %6u %9.2f %9.2f %12.2f %11.1f%% %12.1f%% %10.1f%% %7s\n",
			       or_hadamard_impl_name(), blocks[bi], bytes / enc / 1e9,
			       bytes / dec / 1e9, bytes / cpy / 1e9,
			       2 * cpy / wire * 100, frac * 100, added * 100,
			       added < 0.10 ? "met" : "missed");
		}
	}
	free(a);
	free(b);
}

/* The kernel the library picks on its own, and the times it chose by. */
static void print_auto(void)
{
	uint64_t ns[OR_HADAMARD_IMPL_LAST + 1];
	const char *name;

	or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
	name = or_hadamard_impl_name();
	or_hadamard_calibration(ns);
	printf("auto: %s; a %u-entry block forward and back took", name,
	       OR_HADAMARD_DEF_BLOCK);
	for (int k = OR_HADAMARD_IMPL_SCALAR; k <= OR_HADAMARD_IMPL_LAST; k++) {
		if (ns[k])
			printf(" %s %.1f us", or_hadamard_kernel_name(k),
			       ns[k] / 1e3);
	}
	printf("%s\n", ns[OR_HADAMARD_IMPL_SCALAR] ? "" :
	       " (not measured: OPTIREDUCE_HADAMARD_IMPL)");
}

int main(int argc, char **argv)
{
	char *end = NULL;
	size_t mib = argc > 1 ? strtoul(argv[1], &end, 0) : 0;

	if (argc > 2 || (argc == 2 && (!mib || *end))) {
		fprintf(stderr, "usage: hadamard_bench [MiB]\n");
		return 2;
	}
	printf("streaming from %zu KiB (half the last-level cache)\n",
	       or_hadamard_stream_from() >> 10);
	print_auto();
	if (mib) {
		run(mib << 20);
		return 0;
	}
	for (size_t kib = 256; kib <= 64 << 10; kib *= 4)
		run(kib << 10);
	return 0;
}
