// SPDX-License-Identifier: MIT
/*
 * AVX-512 kernels of the blockwise lane Walsh-Hadamard transform (see
 * hadamard.h): the same butterflies as the AVX2 ones (hadamard_avx2.c), on
 * 16-float vectors. Built with -mavx512f for this file only and reached
 * only after __builtin_cpu_supports("avx512f").
 *
 * A 16-float vector is two of the AVX2 kernels' 8-float ones, v and v + 1,
 * so every stage of distance 2, 4 ... 8-float vectors is between whole
 * 16-float vectors and takes half the instructions. The stage of distance
 * 1, between the two halves of a register, runs in the register: on the
 * way in of the forward transform's first pass (after the signs) and on
 * the way out of the inverse's last (before them), which is where the
 * AVX2 kernels run it too, so the results are bit for bit theirs. On a
 * core with full-width AVX-512 units the transform was compute-bound at 8
 * floats a vector (a 16 MiB buffer sits in a large L3).
 *
 * x86-64 only; elsewhere this file is empty.
 */
#ifdef __x86_64__
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "hadamard.h"

#define AI static inline __attribute__((always_inline))

typedef __m512 vec;
#define VF		16
#define VBYTES		64
#define LINE_VECS	1

/* a, b <- a + b, a - b */
#define BF(a, b) do {							\
	vec t_ = (a);							\
	(a) = _mm512_add_ps(t_, (b));					\
	(b) = _mm512_sub_ps(t_, (b));					\
} while (0)

AI vec v_load(const float *p) { return _mm512_load_ps(p); }
AI void v_stream(float *p, vec r) { _mm512_stream_ps(p, r); }
AI vec v_zero(void) { return _mm512_setzero_ps(); }
AI vec v_set1(float f) { return _mm512_set1_ps(f); }
AI void v_init(void) { }

/* Lane k negated where bit k of the two sign bytes of vector v is set. */
AI vec flip(vec r, const uint8_t *signs, size_t v)
{
	uint16_t m;

	memcpy(&m, signs + 2 * v, sizeof(m));	/* byte 2v: lanes 0-7 */
	return _mm512_castsi512_ps(_mm512_mask_xor_epi32(
		_mm512_castps_si512(r), (__mmask16)m, _mm512_castps_si512(r),
		_mm512_set1_epi32((int)0x80000000u)));
}

/* The stage of distance one 8-float vector: low half a, high half b
 * become a + b and a - b. */
AI vec halves(vec r)
{
	vec sw = _mm512_shuffle_f32x4(r, r, 0x4e);	/* halves swapped */

	return _mm512_mask_blend_ps(0xff00, _mm512_add_ps(r, sw),
				    _mm512_sub_ps(sw, r));
}

AI vec load(const float *src, size_t v, int pre, const uint8_t *signs)
{
	vec r = _mm512_loadu_ps(src + VF * v);

	return pre ? halves(flip(r, signs, v)) : r;
}

AI void store(float *dst, size_t v, vec r, int post, int nt,
	      const uint8_t *signs, vec vs)
{
	if (post)
		r = _mm512_mul_ps(flip(halves(r), signs, v), vs);
	if (nt)
		_mm512_stream_ps(dst + VF * v, r);
	else
		_mm512_storeu_ps(dst + VF * v, r);
}

#include "hadamard_vec.h"

/* A block of one 8-float vector has no pair of halves: the AVX2 kernel,
 * which every CPU with AVX-512 has, takes it. */
void or_fwht_fwd_avx512(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	if (b < 2 * 8) {
		or_fwht_fwd_avx2(dst, src, b, signs, scale, flags, next);
		return;
	}
	fwd(dst, src, b, signs, flags, next, 5);
}

void or_fwht_inv_avx512(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	if (b < 2 * 8) {
		or_fwht_inv_avx2(dst, src, b, signs, scale, flags, next);
		return;
	}
	inv(dst, src, b, signs, scale, flags, next, 5);
}

#endif /* __x86_64__ */
