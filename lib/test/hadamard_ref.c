// SPDX-License-Identifier: MIT
/* Hadamard transform against a naive O(n^2) reference, for every length up
 * to 300 and several block sizes, with both kernels; scalar and AVX2 must
 * agree bit for bit. */
#include <math.h>
#include <string.h>

#include "hadamard.h"
#include "helpers.h"

/* H_b[i][j] = (-1)^popcount(i & j) */
static void reference(const float *x, double *y, size_t n, uint64_t seed,
		      unsigned int block)
{
	size_t off = 0;

	while (off < n) {
		size_t b = block;

		while (b > n - off)
			b >>= 1;
		for (size_t i = 0; i < b; i++) {
			double acc = 0;

			for (size_t j = 0; j < b; j++) {
				double v = x[off + j];

				if (or_hadamard_sign(seed, off + j))
					v = -v;
				acc += __builtin_popcountll(i & j) & 1 ? -v : v;
			}
			y[off + i] = acc / sqrt((double)b);
		}
		off += b;
	}
}

int main(void)
{
	static float x[300], a[300], b[300];
	static double ref[300];
	int have_avx2 = or_hadamard_set_impl(OR_HADAMARD_IMPL_AVX2) == 0;
	const unsigned int blocks[] = { 16, 32, 64, 128, 256 };

	if (!have_avx2)
		fprintf(stderr, "no AVX2 on this CPU: scalar kernel only\n");
	for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
		for (size_t n = 1; n <= 300; n++) {
			uint64_t seed = n * 7919 + bi;

			for (size_t i = 0; i < n; i++)
				x[i] = t_value(1, i, n) / 64.0f + 0.25f;
			reference(x, ref, n, seed, blocks[bi]);

			memcpy(a, x, n * 4);
			or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
			or_hadamard_forward(a, n, seed, blocks[bi]);
			for (size_t i = 0; i < n; i++)
				T_ASSERT(fabs(a[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i])),
					 "n %zu block %u entry %zu: %g vs %g", n,
					 blocks[bi], i, a[i], ref[i]);
			if (have_avx2) {
				memcpy(b, x, n * 4);
				or_hadamard_set_impl(OR_HADAMARD_IMPL_AVX2);
				or_hadamard_forward(b, n, seed, blocks[bi]);
				T_ASSERT(!memcmp(a, b, n * 4),
					 "forward: avx2 differs from scalar, n %zu", n);
				or_hadamard_inverse(b, n, seed, blocks[bi]);
			}
			or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
			or_hadamard_inverse(a, n, seed, blocks[bi]);
			if (have_avx2)
				T_ASSERT(!memcmp(a, b, n * 4),
					 "inverse: avx2 differs from scalar, n %zu", n);
			for (size_t i = 0; i < n; i++)
				T_ASSERT(fabsf(a[i] - x[i]) <= 1e-5f * (1 + fabsf(x[i])),
					 "round trip n %zu entry %zu: %g vs %g", n, i,
					 a[i], x[i]);
		}
	}
	return 0;
}
