/* SPDX-License-Identifier: MIT */
#ifndef OR_HADAMARD_H
#define OR_HADAMARD_H

/*
 * Randomized Hadamard transform, blockwise. A block of b entries is
 * L = min(b, 8) interleaved lanes of m = b / L entries each (entry i is
 * element i / L of lane i % L), and each lane gets its own Walsh-Hadamard
 * transform of size m:
 *   forward  y = (H_m (x) I_L) (D x)
 *   inverse  x = D (H_m (x) I_L) y / m
 * The whole 1/m is on the inverse side: m is a power of two, so dividing
 * by it is exact, and integer-valued data whose sums stay below 2^24 goes
 * through forward, reduction and inverse without a rounding (the tests
 * rely on it); the forward pass is a sign flip and additions only.
 * D is a diagonal of random +-1 signs: sign of entry i is bit (i mod 64) of
 * or_mix64(seed ^ (i / 64) * K), so every rank derives the same signs from
 * the call's seed. The vector is cut into blocks of `block` entries (a power
 * of two); the tail is cut into descending powers of two (each piece starts
 * at a multiple of its own size), so any length works and the inverse is
 * exact up to rounding.
 *
 * Why lanes, not H_b: the transport loses whole fragments (hundreds of
 * entries, every lane alike), and for such a loss H_m on each lane spreads
 * the error over the block just as H_b would. What it saves are the three
 * butterfly stages inside an 8-float vector, which need shuffles and cost
 * as much as all the others: the transform then runs at memory speed.
 *
 * Stage order is fixed (forward: butterflies of distance L, 2L, 4L ...;
 * inverse: the reverse) so the scalar, AVX2, AVX-512VL and AVX-512 kernels give
 * bit-identical results, as ranks on different CPUs must; of those the CPU
 * has (__builtin_cpu_supports) the fastest, measured on first use, is
 * chosen, and OPTIREDUCE_HADAMARD_IMPL=scalar|avx2|avx512vl|avx512 asks
 * for a given one.
 * Kernels take a source and a destination, so the copy into the work
 * buffer (forward) and out of it (inverse, with the mean's division) are
 * the transform's first and last pass, not passes of their own.
 */

#include <stddef.h>
#include <stdint.h>

#define OR_HADAMARD_MIN_BLOCK	16
#define OR_HADAMARD_MAX_BLOCK	65536
#define OR_HADAMARD_DEF_BLOCK	4096

/* dst may be src. */
void or_hadamard_forward(float *dst, const float *src, size_t n, uint64_t seed,
			 unsigned int block);
/* Every entry of the result is also divided by div (1 for a sum). src is
 * scratch: it is overwritten. dst may be src. */
void or_hadamard_inverse(float *dst, float *src, size_t n, uint64_t seed,
			 unsigned int block, float div);

/* 64 sign bits: entries 64*word .. 64*word+63 (1: negate). */
uint64_t or_hadamard_sign_word(uint64_t seed, size_t word);

static inline unsigned int or_hadamard_sign(uint64_t seed, size_t i)
{
	return (or_hadamard_sign_word(seed, i >> 6) >> (i & 63)) & 1;
}

enum or_hadamard_impl {
	OR_HADAMARD_IMPL_AUTO = 0,
	OR_HADAMARD_IMPL_SCALAR,
	OR_HADAMARD_IMPL_AVX2,
	OR_HADAMARD_IMPL_AVX512VL,
	OR_HADAMARD_IMPL_AVX512,
	OR_HADAMARD_IMPL_LAST = OR_HADAMARD_IMPL_AVX512,
};
/* Select a kernel (tests, benchmark): 0, or -ENOTSUP if the CPU lacks it.
 * AUTO: OPTIREDUCE_HADAMARD_IMPL's if the CPU has it, else the fastest
 * the CPU has, measured (hadamard.c, calibrate()). */
int or_hadamard_set_impl(enum or_hadamard_impl impl);
const char *or_hadamard_impl_name(void);
/* Kernel impl's name ("scalar", "avx2", ...); NULL for AUTO or none. */
const char *or_hadamard_kernel_name(enum or_hadamard_impl impl);
/* The kernel with the least time in ns[] (indexed by impl; 0: not
 * measured), the wider on a tie; scalar if none was measured. */
enum or_hadamard_impl or_hadamard_fastest(const uint64_t *ns);
/* The last measurement's ns[], OR_HADAMARD_IMPL_LAST + 1 of them: one
 * block of OR_HADAMARD_DEF_BLOCK forward and back; 0 where not measured. */
void or_hadamard_calibration(uint64_t *ns);
/*
 * Transforms of at least this many bytes write their result past the
 * caches (OR_FWHT_STREAM): half the last-level cache, found on first use.
 * Tests and the benchmark may set it; 0 goes back to the cache's size.
 */
size_t or_hadamard_stream_from(void);
void or_hadamard_set_stream_from(size_t bytes);

/*
 * One block of b entries (power of two) from src to dst, signs as bytes
 * (bit k of byte t is entry 8t + k); the inverse multiplies by scale along
 * with the signs, after the stages (the forward kernels ignore it). The forward kernel only reads src; the
 * inverse one may transform src in place before its last pass writes dst.
 * next: the source of the block transformed after this one, or NULL; a
 * streaming kernel fetches it into the cache while this block's results
 * leave (reads and writes of memory then overlap, as in a plain copy).
 * Kernels: hadamard.c ("scalar": portable C on GCC vector types, any
 * CPU), hadamard_avx2.c (AVX2 and AVX-512VL) and hadamard_avx512.c
 * (x86-64 only, b >= 8; the vector code of both is hadamard_vec.h).
 */
typedef void (*or_fwht_fn)(float *dst, float *src, size_t b,
			   const uint8_t *signs, float scale,
			   unsigned int flags, const float *next);
/* flags: the result will not be read soon (a large transform): a kernel may
 * write it past the caches, with weakly ordered stores that the caller
 * fences after the last block. The result is the same either way. */
#define OR_FWHT_STREAM		0x1u
void or_fwht_fwd_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags,
			const float *next);
void or_fwht_inv_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags,
			const float *next);
void or_fwht_fwd_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags,
			const float *next);
void or_fwht_inv_avx2(float *dst, float *src, size_t b, const uint8_t *signs,
		      float scale, unsigned int flags,
			const float *next);
void or_fwht_fwd_avx512vl(float *dst, float *src, size_t b,
			  const uint8_t *signs, float scale, unsigned int flags,
			const float *next);
void or_fwht_inv_avx512vl(float *dst, float *src, size_t b,
			  const uint8_t *signs, float scale, unsigned int flags,
			const float *next);
void or_fwht_fwd_avx512(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next);
void or_fwht_inv_avx512(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next);

/*
 * Every kernel runs a block's stages in memory passes of up to maxg stages
 * each, grouped from the bottom: 0 .. maxg-1, maxg .. 2maxg-1, ..., the
 * remainder on top (the inverse: the same groups in reverse). These give
 * the number of stages of n vectors and the size of the group from e.
 */
static inline unsigned int or_fwht_levels(size_t n)
{
	return 63 - __builtin_clzll(n);
}

static inline unsigned int or_fwht_group(unsigned int levels, unsigned int e,
					 unsigned int maxg)
{
	return levels - e < maxg ? levels - e : maxg;
}

/* Lane count of a piece of b entries, and the size of each lane's transform. */
static inline size_t or_hadamard_lanes(size_t b)
{
	return b < 8 ? b : 8;
}

#endif /* OR_HADAMARD_H */
