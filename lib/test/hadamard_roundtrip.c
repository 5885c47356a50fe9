// SPDX-License-Identifier: MIT
/* Large vectors: round-trip error, energy (each piece's times its lane
 * transform size m, the forward side being unscaled), the transform is
 * linear (sum of transforms = transform of the sum, what lets ranks reduce
 * in the Hadamard domain), integer data round-trips exactly, and signs
 * depend on the seed. Buffers are 64-byte aligned, as the engine's are, so
 * the vector kernels can take their streaming path; a guard after each one
 * catches a kernel writing past the end (the odd tail ends in pieces of
 * 8 entries, a single vector, and 1). */
#include <math.h>
#include <string.h>

#include "hadamard.h"
#include "helpers.h"

#define GUARD	64	/* floats after each buffer */

static float *vec(size_t n)
{
	float *v = aligned_alloc(64, (n + GUARD) * 4);

	if (v)
		for (size_t i = 0; i < GUARD; i++)
			v[n + i] = -12345.0f;
	return v;
}

static void guards(const char *when, size_t n, float **v, int nv)
{
	for (int k = 0; k < nv; k++)
		for (size_t i = 0; i < GUARD; i++)
			T_ASSERT(v[k][n + i] == -12345.0f,
				 "%s: buffer %d written past its end (+%zu)",
				 when, k, i);
}

int main(void)
{
	const size_t n = (1 << 20) + 12345;	/* blocks and an odd tail */
	const unsigned int blocks[] = { 256, 4096, 65536 };
	float *x = vec(n), *y = vec(n), *z = vec(n), *s = vec(n);
	float *all[] = { x, y, z, s };

	T_ASSERT(x && y && z && s, "memory");
	for (size_t i = 0; i < n; i++) {
		x[i] = sinf(i * 0.001f) * 3 + (i % 97) * 0.01f;
		y[i] = cosf(i * 0.0007f);
	}
	for (size_t bi = 0; bi < 3; bi++) {
		unsigned int B = blocks[bi];
		double e_in = 0, e_out = 0, err = 0, lin = 0;

		/* Out of place (as the engine does for float32). */
		or_hadamard_forward(z, x, n, 42, B);
		for (size_t off = 0; off < n;) {
			size_t b = B, m;

			while (b > n - off)
				b >>= 1;
			m = b / or_hadamard_lanes(b);
			for (size_t i = off; i < off + b; i++) {
				e_in += (double)m * x[i] * x[i];
				e_out += (double)z[i] * z[i];
			}
			off += b;
		}
		T_ASSERT(fabs(e_in - e_out) <= 1e-4 * e_in, "energy %g vs %g", e_in, e_out);
		/* linearity: T(x) + T(y) == T(x + y) */
		memcpy(s, y, n * 4);
		or_hadamard_forward(s, s, n, 42, B);
		for (size_t i = 0; i < n; i++)
			s[i] += z[i];
		or_hadamard_inverse(s, s, n, 42, B, 1.0f);
		for (size_t i = 0; i < n; i++) {
			double d = s[i] - (x[i] + y[i]);

			lin = fmax(lin, fabs(d));
		}
		T_ASSERT(lin < 1e-4, "linearity error %g", lin);
		/* Out of place with a divisor, as for a mean of 4 ranks. */
		or_hadamard_inverse(s, z, n, 42, B, 4.0f);
		for (size_t i = 0; i < n; i++)
			err = fmax(err, fabs((double)s[i] * 4 - x[i]));
		T_ASSERT(err < 1e-5, "block %u round-trip max error %g", B, err);
		printf("block %u: round-trip max abs error %.3g, linearity %.3g\n",
		       B, err, lin);
	}
	/* Integers: no rounding on the way there and back (sums < 2^24). */
	for (size_t i = 0; i < n; i++)
		x[i] = (float)((int)(i % 401) - 200);
	or_hadamard_forward(z, x, n, 9, 4096);
	or_hadamard_inverse(s, z, n, 9, 4096, 1.0f);
	for (size_t i = 0; i < n; i++)	/* == : a 0 may come back as -0 */
		T_ASSERT(s[i] == x[i], "integer entry %zu: %g came back as %.9g",
			 i, x[i], s[i]);
	/* The vector kernels, streamed and not: still bit-identical to the
	 * scalar ones, both ways, for blocks of one, two and three memory
	 * passes (and a middle pass) in each. */
	for (size_t i = 0; i < n; i++)
		x[i] = sinf(i * 0.003f) + (i % 13) * 0.1f;
	T_ASSERT(or_hadamard_stream_from() >= 4096,
		 "streams from %zu bytes", or_hadamard_stream_from());
	printf("streaming from %zu KiB (half the last-level cache)\n",
	       or_hadamard_stream_from() >> 10);
	for (int k = 0; k < 2 * (OR_HADAMARD_IMPL_LAST - OR_HADAMARD_IMPL_AVX2 + 1);
	     k++) {
		static const unsigned int sb[] = { 64, 256, 4096, 16384, 65536 };
		int impl = OR_HADAMARD_IMPL_AVX2 + k / 2, stream = k & 1;

		if (or_hadamard_set_impl(impl)) {
			printf("# kernel %d: not on this CPU\n", impl);
			continue;
		}
		or_hadamard_set_stream_from(stream ? 1 : SIZE_MAX);
		for (size_t bi = 0; bi < sizeof(sb) / sizeof(sb[0]); bi++) {
			or_hadamard_set_impl(impl);
			or_hadamard_forward(z, x, n, 5, sb[bi]);
			or_hadamard_set_impl(OR_HADAMARD_IMPL_SCALAR);
			or_hadamard_forward(s, x, n, 5, sb[bi]);
			T_ASSERT(!memcmp(s, z, n * 4),
				 "forward: kernel %d differs from scalar, block %u",
				 impl, sb[bi]);
			or_hadamard_inverse(y, s, n, 5, sb[bi], 3.0f);
			or_hadamard_set_impl(impl);
			or_hadamard_inverse(s, z, n, 5, sb[bi], 3.0f);
			T_ASSERT(!memcmp(s, y, n * 4),
				 "inverse: kernel %d differs from scalar, block %u",
				 impl, sb[bi]);
		}
		printf("kernel %s: %s bit-identical to scalar\n",
		       or_hadamard_impl_name(),
		       stream ? "streamed" : "through the caches");
		guards(or_hadamard_impl_name(), n, all, 4);
	}
	or_hadamard_set_stream_from(0);
	or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
	/* Another seed gives another transform. */
	or_hadamard_forward(z, x, n, 1, 4096);
	or_hadamard_forward(s, x, n, 2, 4096);
	T_ASSERT(memcmp(z, s, n * 4), "seed has no effect");
	guards("end", n, all, 4);
	free(x);
	free(y);
	free(z);
	free(s);
	return 0;
}
