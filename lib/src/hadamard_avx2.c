// SPDX-License-Identifier: MIT
/*
 * AVX2 kernels of the blockwise lane Walsh-Hadamard transform (see
 * hadamard.h). Built with -mavx2 -mfma for this file only and reached only
 * after __builtin_cpu_supports("avx2") and ("fma").
 *
 * One 8-float vector holds one entry of each of the 8 lanes, so every
 * butterfly is between whole vectors: a + b and a - b, no shuffles. The
 * stages are fused three per memory pass (radix 8: eight vectors in
 * registers), so a 4096-entry block (512 vectors, 9 stages) is read and
 * written three times while it sits in L1. The signs ride on the first
 * pass of the forward transform (reading the caller's source), the signs
 * and the scale on the last pass of the inverse (writing the caller's
 * destination).
 *
 * Bit-identical to the scalar kernels: the same stages in the same order,
 * the same products; a - b is computed as fma(b, -1, a), which is exact
 * until its single rounding, the rounding of a - b. That moves half the
 * butterfly work to the FMA ports, which the adds do not use.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>

#include "hadamard.h"

#define AI static inline __attribute__((always_inline))

/* Negate lane k when bit k of bits is set: a table of 256 masks (8 KiB,
 * stays in L1 while a block is processed), one load per vector. */
static __m256 sign_table[256];
static pthread_once_t sign_table_once = PTHREAD_ONCE_INIT;

static void fill_sign_table(void)
{
	const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);

	for (unsigned int i = 0; i < 256; i++) {
		__m256i m = _mm256_and_si256(_mm256_set1_epi32(i), sel);

		m = _mm256_cmpeq_epi32(m, sel);
		sign_table[i] = _mm256_castsi256_ps(_mm256_slli_epi32(m, 31));
	}
}

/* a, b <- a + b, a - b */
#define BF(a, b) do {							\
	__m256 t_ = (a);						\
	(a) = _mm256_add_ps(t_, (b));					\
	(b) = _mm256_fnmadd_ps((b), one, t_);				\
} while (0)

#define D1_8 do { BF(r0, r1); BF(r2, r3); BF(r4, r5); BF(r6, r7); } while (0)
#define D2_8 do { BF(r0, r2); BF(r1, r3); BF(r4, r6); BF(r5, r7); } while (0)
#define D4_8 do { BF(r0, r4); BF(r1, r5); BF(r2, r6); BF(r3, r7); } while (0)

/* Vector v of src, with its signs when this is the forward transform's
 * first pass. */
AI __m256 load(const float *src, size_t v, int pre, const uint8_t *signs)
{
	__m256 r = _mm256_loadu_ps(src + 8 * v);

	return pre ? _mm256_xor_ps(r, sign_table[signs[v]]) : r;
}

/* ... and the other way round for the inverse transform's last pass;
 * past the caches (aligned dst) when the result will not be read soon. */
AI void store(float *dst, size_t v, __m256 r, int post, int nt,
	      const uint8_t *signs, __m256 vs)
{
	if (post)
		r = _mm256_mul_ps(_mm256_xor_ps(r, sign_table[signs[v]]), vs);
	if (nt)
		_mm256_stream_ps(dst + 8 * v, r);
	else
		_mm256_storeu_ps(dst + 8 * v, r);
}

/*
 * One memory pass over nv vectors: cnt (0..3) butterfly stages of
 * distances s, 2s, 4s vectors (ascending, forward) or the reverse
 * (inverse), from src to dst. Written out by hand: with an indexed
 * register array the compiler keeps the array on the stack.
 */
AI void pass(float *dst, const float *src, size_t nv, size_t s,
	     unsigned int cnt, int desc, int pre, int post, int nt,
	     const uint8_t *signs, __m256 vs)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	const size_t span = s << cnt;

	for (size_t base = 0; base < nv; base += span) {
		for (size_t v = base; v < base + s; v++) {
			if (cnt == 3) {
				__m256 r0 = load(src, v, pre, signs);
				__m256 r1 = load(src, v + s, pre, signs);
				__m256 r2 = load(src, v + 2 * s, pre, signs);
				__m256 r3 = load(src, v + 3 * s, pre, signs);
				__m256 r4 = load(src, v + 4 * s, pre, signs);
				__m256 r5 = load(src, v + 5 * s, pre, signs);
				__m256 r6 = load(src, v + 6 * s, pre, signs);
				__m256 r7 = load(src, v + 7 * s, pre, signs);

				if (desc) {
					D4_8; D2_8; D1_8;
				} else {
					D1_8; D2_8; D4_8;
				}
				store(dst, v, r0, post, nt, signs, vs);
				store(dst, v + s, r1, post, nt, signs, vs);
				store(dst, v + 2 * s, r2, post, nt, signs, vs);
				store(dst, v + 3 * s, r3, post, nt, signs, vs);
				store(dst, v + 4 * s, r4, post, nt, signs, vs);
				store(dst, v + 5 * s, r5, post, nt, signs, vs);
				store(dst, v + 6 * s, r6, post, nt, signs, vs);
				store(dst, v + 7 * s, r7, post, nt, signs, vs);
			} else if (cnt == 2) {
				__m256 r0 = load(src, v, pre, signs);
				__m256 r1 = load(src, v + s, pre, signs);
				__m256 r2 = load(src, v + 2 * s, pre, signs);
				__m256 r3 = load(src, v + 3 * s, pre, signs);

				if (desc) {
					BF(r0, r2); BF(r1, r3); BF(r0, r1); BF(r2, r3);
				} else {
					BF(r0, r1); BF(r2, r3); BF(r0, r2); BF(r1, r3);
				}
				store(dst, v, r0, post, nt, signs, vs);
				store(dst, v + s, r1, post, nt, signs, vs);
				store(dst, v + 2 * s, r2, post, nt, signs, vs);
				store(dst, v + 3 * s, r3, post, nt, signs, vs);
			} else if (cnt == 1) {
				__m256 r0 = load(src, v, pre, signs);
				__m256 r1 = load(src, v + s, pre, signs);

				BF(r0, r1);
				store(dst, v, r0, post, nt, signs, vs);
				store(dst, v + s, r1, post, nt, signs, vs);
			} else {
				store(dst, v, load(src, v, pre, signs), post,
				      nt, signs, vs);
			}
		}
	}
}

/* Literal counts and flags: each call is its own straight-line kernel. */
#define PASS_CNT(dst, src, nv, s, cnt, desc, pre, post, nt, signs, vs) do { \
	switch (cnt) {							\
	case 3: pass(dst, src, nv, s, 3, desc, pre, post, nt, signs, vs); break; \
	case 2: pass(dst, src, nv, s, 2, desc, pre, post, nt, signs, vs); break; \
	case 1: pass(dst, src, nv, s, 1, desc, pre, post, nt, signs, vs); break; \
	default: pass(dst, src, nv, s, 0, desc, pre, post, nt, signs, vs); break; \
	}								\
} while (0)

#define PASS_ALL(dst, src, nv, s, cnt, desc, pre, post, nt, signs, vs) do { \
	if (nt)								\
		PASS_CNT(dst, src, nv, s, cnt, desc, pre, post, 1, signs, vs); \
	else								\
		PASS_CNT(dst, src, nv, s, cnt, desc, pre, post, 0, signs, vs); \
} while (0)

static unsigned int log2_size(size_t v)
{
	return 63 - __builtin_clzll(v);
}

/* Groups of three levels from the bottom: 0-2, 3-5, ..., remainder. */
static unsigned int group_size(unsigned int levels, unsigned int e)
{
	return levels - e < 3 ? levels - e : 3;
}

/*
 * Streaming (OR_FWHT_STREAM, an aligned destination): the block goes from
 * src through an L1 scratch to dst, whose lines are then written without
 * being read first, so a large transform moves no more memory than a copy
 * of it would. Otherwise the passes run in dst (forward) or src (inverse).
 */
#define SCRATCH_MAX	8192	/* floats: 32 KiB on the stack */

static int streaming(const float *dst, size_t b, unsigned int flags)
{
	return (flags & OR_FWHT_STREAM) && b <= SCRATCH_MAX &&
	       !((uintptr_t)dst & 31);
}

void or_fwht_fwd_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags)
{
	const __m256 vs = _mm256_setzero_ps();	/* no scale on this side */
	float tmp[SCRATCH_MAX] __attribute__((aligned(32)));
	size_t nv = b / 8;
	unsigned int levels = log2_size(nv);
	int nt = streaming(dst, b, flags);
	float *work = nt && levels > 3 ? tmp : dst;
	unsigned int e;

	(void)scale;
	pthread_once(&sign_table_once, fill_sign_table);
	/* The first group reads the source, with the signs; the last one
	 * writes the destination. */
	PASS_ALL(levels > 3 ? work : dst, src, nv, 1, group_size(levels, 0),
		 0, 1, 0, nt && levels <= 3, signs, vs);
	for (e = 3; e + 3 < levels; e += 3)
		PASS_ALL(work, work, nv, (size_t)1 << e, 3, 0, 0, 0, 0, signs, vs);
	if (levels > 3)
		PASS_ALL(dst, work, nv, (size_t)1 << e, group_size(levels, e),
			 0, 0, 0, nt, signs, vs);
	if (nt)
		_mm_sfence();
}

void or_fwht_inv_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags)
{
	const __m256 vs = _mm256_set1_ps(scale);
	float tmp[SCRATCH_MAX] __attribute__((aligned(32)));
	size_t nv = b / 8;
	unsigned int levels = log2_size(nv);
	unsigned int e = levels ? (levels - 1) / 3 * 3 : 0;
	int nt = streaming(dst, b, flags);
	float *work = nt ? tmp : src;

	pthread_once(&sign_table_once, fill_sign_table);
	/* The forward groups in reverse order, each one reversed: the first
	 * reads the source, the last (levels 0-2) writes the destination
	 * with signs and scale. */
	if (e) {
		PASS_ALL(work, src, nv, (size_t)1 << e, group_size(levels, e),
			 1, 0, 0, 0, signs, vs);
		for (e -= 3; e > 0; e -= 3)
			PASS_ALL(work, work, nv, (size_t)1 << e, 3, 1, 0, 0, 0,
				 signs, vs);
		src = work;
	}
	PASS_ALL(dst, src, nv, 1, group_size(levels, 0), 1, 0, 1, nt, signs, vs);
	if (nt)
		_mm_sfence();
}
