// SPDX-License-Identifier: MIT
/*
 * AVX2 kernels of the blockwise Walsh-Hadamard transform (see hadamard.h).
 * Built with -mavx2 for this file only and reached only after
 * __builtin_cpu_supports("avx2"). Same stage order and the same float
 * operations as the scalar kernels, so results are bit-identical:
 * a + (-c) is exactly a - c in IEEE arithmetic, and (-x) * s is -(x * s).
 *
 * Layout: distances 1, 2, 4 are inside one 8-float vector (permute plus a
 * sign flip and one add); longer distances are between vectors, fused three
 * stages per memory pass (radix 8) so a 4096-entry block is read and written
 * four times instead of twelve.
 */
#include <immintrin.h>
#include <pthread.h>

#include "hadamard.h"

#define AI static inline __attribute__((always_inline))

/* Negate lane k when bit k of bits is set. */
AI __m256 lane_signs(unsigned int bits)
{
	const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	__m256i m = _mm256_and_si256(_mm256_set1_epi32(bits), sel);

	m = _mm256_cmpeq_epi32(m, sel);
	return _mm256_castsi256_ps(_mm256_slli_epi32(m, 31));
}

/* The same as a table (8 KiB, stays in L1 while a block is processed):
 * one load per vector instead of four instructions. */
static __m256 sign_table[256];
static pthread_once_t sign_table_once = PTHREAD_ONCE_INIT;

static void fill_sign_table(void)
{
	for (unsigned int i = 0; i < 256; i++)
		sign_table[i] = lane_signs(i);
}

/* Butterfly of distance 1, 2 or 4 lanes: lane k gets x[k] + x[k^d] for the
 * lower, x[k^d] - x[k] for the upper element of each pair. */
AI __m256 intra1(__m256 v)
{
	__m256 s = _mm256_permute_ps(v, 0xb1);

	return _mm256_add_ps(s, _mm256_xor_ps(v, lane_signs(0xaa)));
}

AI __m256 intra2(__m256 v)
{
	__m256 s = _mm256_permute_ps(v, 0x4e);

	return _mm256_add_ps(s, _mm256_xor_ps(v, lane_signs(0xcc)));
}

AI __m256 intra4(__m256 v)
{
	__m256 s = _mm256_permute2f128_ps(v, v, 0x01);

	return _mm256_add_ps(s, _mm256_xor_ps(v, lane_signs(0xf0)));
}

/* a, b <- a + b, a - b */
#define BF(a, b) do {							\
	__m256 t_ = (a);						\
	(a) = _mm256_add_ps(t_, (b));					\
	(b) = _mm256_sub_ps(t_, (b));					\
} while (0)

/* Register distances 1, 2, 4 among r0..r7 (memory stride s, 2s, 4s). */
#define D1_8 do { BF(r0, r1); BF(r2, r3); BF(r4, r5); BF(r6, r7); } while (0)
#define D2_8 do { BF(r0, r2); BF(r1, r3); BF(r4, r6); BF(r5, r7); } while (0)
#define D4_8 do { BF(r0, r4); BF(r1, r5); BF(r2, r6); BF(r3, r7); } while (0)

/*
 * One memory pass doing cnt (1..3) butterfly stages between vectors,
 * distances s, 2s, 4s vectors (ascending, forward) or the reverse
 * (inverse). Written out by hand: with an indexed register array the
 * compiler keeps the array on the stack.
 */
AI void cross_pass(float *x, size_t nv, size_t s, unsigned int cnt, int desc)
{
	const size_t span = s << cnt, st = 8 * s;

	for (size_t base = 0; base < nv; base += span) {
		for (size_t j = 0; j < s; j++) {
			float *p = x + 8 * (base + j);

			if (cnt == 3) {
				__m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + st);
				__m256 r2 = _mm256_loadu_ps(p + 2 * st), r3 = _mm256_loadu_ps(p + 3 * st);
				__m256 r4 = _mm256_loadu_ps(p + 4 * st), r5 = _mm256_loadu_ps(p + 5 * st);
				__m256 r6 = _mm256_loadu_ps(p + 6 * st), r7 = _mm256_loadu_ps(p + 7 * st);

				if (desc) {
					D4_8; D2_8; D1_8;
				} else {
					D1_8; D2_8; D4_8;
				}
				_mm256_storeu_ps(p, r0);
				_mm256_storeu_ps(p + st, r1);
				_mm256_storeu_ps(p + 2 * st, r2);
				_mm256_storeu_ps(p + 3 * st, r3);
				_mm256_storeu_ps(p + 4 * st, r4);
				_mm256_storeu_ps(p + 5 * st, r5);
				_mm256_storeu_ps(p + 6 * st, r6);
				_mm256_storeu_ps(p + 7 * st, r7);
			} else if (cnt == 2) {
				__m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + st);
				__m256 r2 = _mm256_loadu_ps(p + 2 * st), r3 = _mm256_loadu_ps(p + 3 * st);

				if (desc) {
					BF(r0, r2); BF(r1, r3); BF(r0, r1); BF(r2, r3);
				} else {
					BF(r0, r1); BF(r2, r3); BF(r0, r2); BF(r1, r3);
				}
				_mm256_storeu_ps(p, r0);
				_mm256_storeu_ps(p + st, r1);
				_mm256_storeu_ps(p + 2 * st, r2);
				_mm256_storeu_ps(p + 3 * st, r3);
			} else {
				__m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + st);

				BF(r0, r1);
				_mm256_storeu_ps(p, r0);
				_mm256_storeu_ps(p + st, r1);
			}
		}
	}
}

static void cross_stages(float *x, size_t nv, unsigned int e, unsigned int cnt,
			 int desc)
{
	size_t s = (size_t)1 << e;

	/* Literal counts and directions: each call below is its own
	 * straight-line kernel. */
	if (desc) {
		if (cnt == 3)
			cross_pass(x, nv, s, 3, 1);
		else if (cnt == 2)
			cross_pass(x, nv, s, 2, 1);
		else
			cross_pass(x, nv, s, 1, 1);
	} else {
		if (cnt == 3)
			cross_pass(x, nv, s, 3, 0);
		else if (cnt == 2)
			cross_pass(x, nv, s, 2, 0);
		else
			cross_pass(x, nv, s, 1, 0);
	}
}

static unsigned int log2_size(size_t v)
{
	return 63 - __builtin_clzll(v);
}

void or_fwht_fwd_avx2(float *x, size_t b, const uint8_t *signs, float scale)
{
	const __m256 vs = _mm256_set1_ps(scale);
	size_t nv = b / 8;
	unsigned int levels = log2_size(nv);

	pthread_once(&sign_table_once, fill_sign_table);
	for (size_t i = 0; i < nv; i++) {
		__m256 v = _mm256_loadu_ps(x + 8 * i);

		v = _mm256_mul_ps(_mm256_xor_ps(v, sign_table[signs[i]]), vs);
		v = intra4(intra2(intra1(v)));
		_mm256_storeu_ps(x + 8 * i, v);
	}
	/* Groups of three levels from the bottom: 0-2, 3-5, ..., remainder. */
	for (unsigned int e = 0; e < levels; e += 3)
		cross_stages(x, nv, e, levels - e < 3 ? levels - e : 3, 0);
}

void or_fwht_inv_avx2(float *x, size_t b, const uint8_t *signs, float scale)
{
	const __m256 vs = _mm256_set1_ps(scale);
	size_t nv = b / 8;
	unsigned int levels = log2_size(nv);

	pthread_once(&sign_table_once, fill_sign_table);
	/* The forward groups in reverse order, each one reversed. */
	if (levels) {
		unsigned int e = (levels - 1) / 3 * 3;

		for (;;) {
			cross_stages(x, nv, e, levels - e < 3 ? levels - e : 3, 1);
			if (!e)
				break;
			levels = e;
			e -= 3;
		}
	}
	for (size_t i = 0; i < nv; i++) {
		__m256 v = _mm256_loadu_ps(x + 8 * i);

		v = intra1(intra2(intra4(v)));
		v = _mm256_mul_ps(_mm256_xor_ps(v, sign_table[signs[i]]), vs);
		_mm256_storeu_ps(x + 8 * i, v);
	}
}
