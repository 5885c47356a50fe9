/* SPDX-License-Identifier: MIT */
#ifndef OR_HADAMARD_H
#define OR_HADAMARD_H

/*
 * Randomized Hadamard transform, blockwise and orthonormal:
 *   forward  y = H_b (D x) / sqrt(b)   on every block
 *   inverse  x = D (H_b y) / sqrt(b)
 * D is a diagonal of random +-1 signs: sign of entry i is bit (i mod 64) of
 * or_mix64(seed ^ (i / 64) * K), so every rank derives the same signs from
 * the call's seed. The vector is cut into blocks of `block` entries (a power
 * of two); the tail is cut into descending powers of two (each piece starts
 * at a multiple of its own size), so any length works and the inverse is
 * exact up to rounding.
 *
 * Stage order is fixed (forward: butterflies of distance 1, 2, 4 ...;
 * inverse: the reverse) so the scalar and AVX2 kernels give bit-identical
 * results; the AVX2 one is chosen at run time (__builtin_cpu_supports),
 * OPTIREDUCE_HADAMARD_IMPL=scalar forces the other.
 */

#include <stddef.h>
#include <stdint.h>

#define OR_HADAMARD_MIN_BLOCK	16
#define OR_HADAMARD_MAX_BLOCK	65536
#define OR_HADAMARD_DEF_BLOCK	4096

void or_hadamard_forward(float *x, size_t n, uint64_t seed, unsigned int block);
void or_hadamard_inverse(float *x, size_t n, uint64_t seed, unsigned int block);

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
};
/* Select a kernel (tests, benchmark): 0, or -ENOTSUP if the CPU lacks it. */
int or_hadamard_set_impl(enum or_hadamard_impl impl);
const char *or_hadamard_impl_name(void);

/*
 * One block of b entries (power of two), signs as bytes (bit k of byte t is
 * entry 8t + k), scale 1/sqrt(b). Kernels: hadamard.c (scalar) and
 * hadamard_avx2.c (b >= 8).
 */
typedef void (*or_fwht_fn)(float *x, size_t b, const uint8_t *signs,
			   float scale);
void or_fwht_fwd_scalar(float *x, size_t b, const uint8_t *signs, float scale);
void or_fwht_inv_scalar(float *x, size_t b, const uint8_t *signs, float scale);
void or_fwht_fwd_avx2(float *x, size_t b, const uint8_t *signs, float scale);
void or_fwht_inv_avx2(float *x, size_t b, const uint8_t *signs, float scale);

#endif /* OR_HADAMARD_H */
