// SPDX-License-Identifier: MIT
/* Hadamard transform against a naive O(n^2) reference, for every length up
 * to 300 and several block sizes, with every kernel the CPU has, in place
 * and out of place; the vector kernels must agree with the scalar one bit
 * for bit. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hadamard.h"
#include "helpers.h"

/* Lane l of a piece is entries l, l + L, l + 2L ...; on each, H_m with
 * H_m[i][j] = (-1)^popcount(i & j), m = b / L (unscaled forward). */
static void reference(const float *x, double *y, size_t n, uint64_t seed,
		      unsigned int block)
{
	size_t off = 0;

	while (off < n) {
		size_t b = block, L;

		while (b > n - off)
			b >>= 1;
		L = b < 8 ? b : 8;
		for (size_t i = 0; i < b; i++) {
			double acc = 0;

			for (size_t j = i % L; j < b; j += L) {
				double v = x[off + j];

				if (or_hadamard_sign(seed, off + j))
					v = -v;
				acc += __builtin_popcountll((i / L) & (j / L)) & 1 ?
					-v : v;
			}
			y[off + i] = acc;
		}
		off += b;
	}
}

int main(void)
{
	/* Every length up to 300 with small blocks; a few long ones with
	 * blocks of 7, 9 and 10 stages (two or more memory passes in the
	 * vector kernels: 3 + 3 + 1, 3 + 3 + 3, ... and 5 + 2, 5 + 4, 5 + 5). */
	static const struct { unsigned int block; size_t nmax; } cases[] = {
		{ 16, 300 }, { 32, 300 }, { 64, 300 }, { 128, 300 },
		{ 256, 300 }, { 1024, 0 }, { 4096, 0 }, { 8192, 0 },
	};
	static const size_t long_n[] = { 1024, 2059, 4096, 8269 };
	static float x[8269], a[8269], b[8269], c[8269];
	static double ref[8269];
	int have[OR_HADAMARD_IMPL_LAST + 1] = { 0 };
	uint64_t ns[OR_HADAMARD_IMPL_LAST + 1];

	for (int k = OR_HADAMARD_IMPL_AVX2; k <= OR_HADAMARD_IMPL_LAST; k++) {
		have[k] = or_hadamard_set_impl(k) == 0;
		printf("# kernel %d: %s\n", k, have[k] ? "tested" : "not on this CPU");
	}
	/* OPTIREDUCE_HADAMARD_IMPL picks a kernel the CPU has; anything
	 * else leaves the fastest one, measured: every kernel the CPU has
	 * and no other, the one chosen the least time of them. */
	have[OR_HADAMARD_IMPL_SCALAR] = 1;
	setenv("OPTIREDUCE_HADAMARD_IMPL", "scalar", 1);
	or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
	T_ASSERT(!strcmp(or_hadamard_impl_name(), "scalar"), "env: %s",
		 or_hadamard_impl_name());
	setenv("OPTIREDUCE_HADAMARD_IMPL", "no-such-kernel", 1);
	or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
	or_hadamard_calibration(ns);
	for (int k = OR_HADAMARD_IMPL_SCALAR; k <= OR_HADAMARD_IMPL_LAST; k++) {
		printf("# kernel %d: %llu ns a block forward and back\n", k,
		       (unsigned long long)ns[k]);
		T_ASSERT(!ns[k] == !have[k], "kernel %d measured: %llu", k,
			 (unsigned long long)ns[k]);
	}
	{
		int k = or_hadamard_fastest(ns);

		for (int j = OR_HADAMARD_IMPL_SCALAR;
		     j <= OR_HADAMARD_IMPL_LAST; j++)
			T_ASSERT(!ns[j] || ns[k] <= ns[j],
				 "chose %d (%llu ns), %d took %llu", k,
				 (unsigned long long)ns[k], j,
				 (unsigned long long)ns[j]);
		T_ASSERT(!strcmp(or_hadamard_impl_name(),
				 or_hadamard_kernel_name(k)),
			 "env fallback: %s, fastest %s",
			 or_hadamard_impl_name(), or_hadamard_kernel_name(k));
	}
	unsetenv("OPTIREDUCE_HADAMARD_IMPL");
	T_ASSERT(!or_hadamard_kernel_name(OR_HADAMARD_IMPL_AUTO) &&
		 !or_hadamard_kernel_name(OR_HADAMARD_IMPL_LAST + 1) &&
		 !strcmp(or_hadamard_kernel_name(OR_HADAMARD_IMPL_AVX2), "avx2"),
		 "kernel names");
	/* The choice itself: least time, the wider on a tie, never a kernel
	 * not measured, scalar if nothing was. */
	{
		static const struct {
			uint64_t ns[OR_HADAMARD_IMPL_LAST + 1];
			int want;
		} picks[] = {
			{ { 0, 900, 90, 0, 0 }, OR_HADAMARD_IMPL_AVX2 },
			{ { 0, 90, 900, 0, 0 }, OR_HADAMARD_IMPL_SCALAR },
			{ { 0, 90, 90, 0, 0 }, OR_HADAMARD_IMPL_AVX2 },
			{ { 0, 900, 300, 200, 250 }, OR_HADAMARD_IMPL_AVX512VL },
			{ { 0, 900, 300, 0, 250 }, OR_HADAMARD_IMPL_AVX512 },
			{ { 0, 900, 0, 0, 0 }, OR_HADAMARD_IMPL_SCALAR },
			{ { 0, 0, 0, 0, 0 }, OR_HADAMARD_IMPL_SCALAR },
			{ { 0, 0, 0, 0, 5 }, OR_HADAMARD_IMPL_AVX512 },
		};

		for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++)
			T_ASSERT((int)or_hadamard_fastest(picks[i].ns) ==
				 picks[i].want, "pick %zu: %d", i,
				 (int)or_hadamard_fastest(picks[i].ns));
	}
	T_ASSERT(or_hadamard_set_impl(OR_HADAMARD_IMPL_LAST + 1) == -EINVAL,
		 "bad kernel accepted");
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		unsigned int block = cases[ci].block;
		size_t nlen = cases[ci].nmax ? cases[ci].nmax :
			sizeof(long_n) / sizeof(long_n[0]);

		for (size_t k = 0; k < nlen; k++) {
			size_t n = cases[ci].nmax ? k + 1 : long_n[k];
			uint64_t seed = n * 7919 + ci;

			for (size_t i = 0; i < n; i++)
				x[i] = t_value(1, i, n) / 64.0f + 0.25f;
			reference(x, ref, n, seed, block);

			or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
			or_hadamard_forward(a, x, n, seed, block);
			for (size_t i = 0; i < n; i++)
				T_ASSERT(fabs(a[i] - ref[i]) <= 1e-5 * (64 + fabs(ref[i])),
					 "n %zu block %u entry %zu: %g vs %g", n,
					 block, i, a[i], ref[i]);
			or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
			or_hadamard_inverse(a, a, n, seed, block, 1.0f);
			for (int impl = OR_HADAMARD_IMPL_AVX2;
			     impl <= OR_HADAMARD_IMPL_LAST; impl++) {
				if (!have[impl])
					continue;
				/* In place, from the input: the same forward
				 * as the scalar one, then the same inverse. */
				memcpy(b, x, n * 4);
				or_hadamard_set_impl(impl);
				or_hadamard_forward(b, b, n, seed, block);
				or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
				or_hadamard_forward(c, x, n, seed, block);
				T_ASSERT(!memcmp(c, b, n * 4),
					 "forward: kernel %d differs from scalar, n %zu block %u",
					 impl, n, block);
				or_hadamard_set_impl(impl);
				or_hadamard_inverse(b, b, n, seed, block, 1.0f);
				T_ASSERT(!memcmp(a, b, n * 4),
					 "inverse: kernel %d differs from scalar, n %zu block %u",
					 impl, n, block);
			}
			for (size_t i = 0; i < n; i++)
				T_ASSERT(fabsf(a[i] - x[i]) <= 1e-5f * (1 + fabsf(x[i])),
					 "round trip n %zu entry %zu: %g vs %g", n, i,
					 a[i], x[i]);
		}
	}
	return 0;
}
