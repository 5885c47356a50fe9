// SPDX-License-Identifier: MIT
/*
 * Hadamard transform throughput on one core, per block size and kernel,
 * against memcpy of the same bytes measured in the same run, and what
 * encode + decode cost relative to the time the same bytes take on a
 * 10 Gbit/s link (the target: under 10%).
 *
 *   hadamard_bench [MiB]     buffer size, default 16 (a typical bucket)
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
				or_hadamard_forward(a, n, 7, block);
			else
				or_hadamard_inverse(a, n, 7, block);
			iters++;
			t = now() - t0;
		} while (t < 0.1);
		if (t / iters < best)
			best = t / iters;
	}
	return best;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 16;
	size_t n = mib << 18, bytes = n * 4;
	const unsigned int blocks[] = { 256, 1024, 4096, 16384, 65536 };
	const int impls[] = { OR_HADAMARD_IMPL_AVX2, OR_HADAMARD_IMPL_SCALAR };
	double wire = bytes * 8 / 10e9;	/* seconds at 10 Gbit/s */
	float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);

	if (!mib || !a || !b) {
		fprintf(stderr, "usage: hadamard_bench [MiB]\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		a[i] = (float)(i % 1000) * 0.001f - 0.5f;
	memset(b, 0, bytes);
	printf("buffer %zu MiB, one core; 10 Gbit/s wire time %.3f ms\n", mib,
	       wire * 1e3);
	printf("%-7s %6s %10s %10s %10s %14s %9s\n", "kernel", "block",
	       "enc GB/s", "dec GB/s", "memcpy GB/s", "enc+dec/wire", "target");
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
		if (or_hadamard_set_impl(impls[k])) {
			printf("%-7s (not supported by this CPU)\n",
			       impls[k] == OR_HADAMARD_IMPL_AVX2 ? "avx2" : "scalar");
			continue;
		}
		for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
			double enc = measure(ENCODE, a, b, n, blocks[bi]);
			double dec = measure(DECODE, a, b, n, blocks[bi]);
			double cpy = measure(COPY, a, b, n, blocks[bi]);
			double frac = (enc + dec) / wire;

			printf("%-7s %6u %10.2f %10.2f %10.2f %13.1f%% %9s\n",
			       or_hadamard_impl_name(), blocks[bi], bytes / enc / 1e9,
			       bytes / dec / 1e9, bytes / cpy / 1e9, frac * 100,
			       frac < 0.10 ? "met" : "missed");
		}
	}
	free(a);
	free(b);
	return 0;
}
