// SPDX-License-Identifier: MIT
/* Large vectors: round-trip error, energy preserved (orthonormal), the
 * transform is linear (sum of transforms = transform of the sum, what lets
 * ranks reduce in the Hadamard domain), and signs depend on the seed. */
#include <math.h>
#include <string.h>

#include "hadamard.h"
#include "helpers.h"

int main(void)
{
	const size_t n = (1 << 20) + 12345;	/* blocks and an odd tail */
	const unsigned int blocks[] = { 256, 4096, 65536 };
	float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4);
	float *s = malloc(n * 4);

	T_ASSERT(x && y && z && s, "memory");
	for (size_t i = 0; i < n; i++) {
		x[i] = sinf(i * 0.001f) * 3 + (i % 97) * 0.01f;
		y[i] = cosf(i * 0.0007f);
	}
	for (size_t bi = 0; bi < 3; bi++) {
		unsigned int B = blocks[bi];
		double e_in = 0, e_out = 0, err = 0, lin = 0;

		memcpy(z, x, n * 4);
		or_hadamard_forward(z, n, 42, B);
		for (size_t i = 0; i < n; i++) {
			e_in += (double)x[i] * x[i];
			e_out += (double)z[i] * z[i];
		}
		T_ASSERT(fabs(e_in - e_out) <= 1e-4 * e_in, "energy %g vs %g", e_in, e_out);
		/* linearity: T(x) + T(y) == T(x + y) */
		memcpy(s, y, n * 4);
		or_hadamard_forward(s, n, 42, B);
		for (size_t i = 0; i < n; i++)
			s[i] += z[i];
		or_hadamard_inverse(s, n, 42, B);
		for (size_t i = 0; i < n; i++) {
			double d = s[i] - (x[i] + y[i]);

			lin = fmax(lin, fabs(d));
		}
		T_ASSERT(lin < 1e-4, "linearity error %g", lin);
		or_hadamard_inverse(z, n, 42, B);
		for (size_t i = 0; i < n; i++)
			err = fmax(err, fabs((double)z[i] - x[i]));
		T_ASSERT(err < 1e-5, "block %u round-trip max error %g", B, err);
		printf("block %u: round-trip max abs error %.3g, linearity %.3g\n",
		       B, err, lin);
	}
	/* Another seed gives another transform. */
	memcpy(z, x, n * 4);
	memcpy(s, x, n * 4);
	or_hadamard_forward(z, n, 1, 4096);
	or_hadamard_forward(s, n, 2, 4096);
	T_ASSERT(memcmp(z, s, n * 4), "seed has no effect");
	free(x);
	free(y);
	free(z);
	free(s);
	return 0;
}
