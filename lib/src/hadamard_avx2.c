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
 *
 * x86-64 only; elsewhere this file is empty and hadamard.c's portable
 * kernel is the one there is.
 */
#ifdef __x86_64__
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

typedef __m256 vec;
#define VF		8
#define VBYTES		32
#define LINE_VECS	2

/* a, b <- a + b, a - b (see the top: the subtraction on the FMA ports) */
#define BF(a, b) do {							\
	vec t_ = (a);							\
	(a) = _mm256_add_ps(t_, (b));					\
	(b) = _mm256_fnmadd_ps((b), _mm256_set1_ps(1.0f), t_);		\
} while (0)

AI vec v_load(const float *p) { return _mm256_load_ps(p); }
AI void v_stream(float *p, vec r) { _mm256_stream_ps(p, r); }
AI vec v_zero(void) { return _mm256_setzero_ps(); }
AI vec v_set1(float f) { return _mm256_set1_ps(f); }
AI void v_init(void) { pthread_once(&sign_table_once, fill_sign_table); }

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

#include "hadamard_vec.h"

void or_fwht_fwd_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags, const float *next)
{
	(void)scale;
	fwd(dst, src, b, signs, flags, next, 3);
}

void or_fwht_inv_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags, const float *next)
{
	inv(dst, src, b, signs, scale, flags, next, 3);
}

/*
 * The same kernels with AVX-512VL's 32 vector registers (still 8-float
 * vectors: EVEX encoding reaches ymm16-31): five stages per memory pass
 * instead of three, so a 4096-entry block (9 stages) is read and written
 * twice instead of three times. The stores were the bottleneck; the
 * arithmetic and its order are unchanged, so the results are bit-identical.
 */
#define AVX512VL __attribute__((target("avx2,fma,avx512f,avx512vl")))

AVX512VL void or_fwht_fwd_avx512vl(float *dst, float *src, size_t b,
				   const uint8_t *signs, float scale,
				   unsigned int flags, const float *next)
{
	(void)scale;
	fwd(dst, src, b, signs, flags, next, 5);
}

AVX512VL void or_fwht_inv_avx512vl(float *dst, float *src, size_t b,
				   const uint8_t *signs, float scale,
				   unsigned int flags, const float *next)
{
	inv(dst, src, b, signs, scale, flags, next, 5);
}

#endif /* __x86_64__ */
