// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hadamard.h"
#include "util.h"

uint64_t or_hadamard_sign_word(uint64_t seed, size_t word)
{
	return or_mix64(seed ^ ((uint64_t)word * 0xd1b54a32d192ed03ull));
}

static inline float signed_scale(const uint8_t *signs, size_t i, float scale)
{
	return (signs[i >> 3] >> (i & 7)) & 1 ? -scale : scale;
}

/* Butterflies of distance h over x[0..b), h = L, 2L, ... or the reverse. */
static void stages(float *x, size_t b, size_t h)
{
	for (size_t i = 0; i < b; i += 2 * h)
		for (size_t j = i; j < i + h; j++) {
			float a = x[j], c = x[j + h];

			x[j] = a + c;
			x[j + h] = a - c;
		}
}

void or_fwht_fwd_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	(void)scale;
	(void)flags;
	(void)next;
	for (size_t i = 0; i < b; i++)
		dst[i] = (signs[i >> 3] >> (i & 7)) & 1 ? -src[i] : src[i];
	for (size_t h = or_hadamard_lanes(b); h < b; h <<= 1)
		stages(dst, b, h);
}

void or_fwht_inv_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	(void)flags;
	(void)next;
	for (size_t h = b >> 1; h >= or_hadamard_lanes(b) && h; h >>= 1)
		stages(src, b, h);
	for (size_t i = 0; i < b; i++)
		dst[i] = src[i] * signed_scale(signs, i, scale);
}

/* Kernels in use; chosen once, on first use. */
static or_fwht_fn fwht_fwd, fwht_inv;
static const char *fwht_name;

static const struct {
	const char *name;
	or_fwht_fn fwd, inv;
} kernels[] = {
	[OR_HADAMARD_IMPL_SCALAR] = { "scalar", or_fwht_fwd_scalar,
				      or_fwht_inv_scalar },
	[OR_HADAMARD_IMPL_AVX2] = { "avx2", or_fwht_fwd_avx2, or_fwht_inv_avx2 },
	[OR_HADAMARD_IMPL_AVX512VL] = { "avx512vl", or_fwht_fwd_avx512vl,
					or_fwht_inv_avx512vl },
};

static int cpu_has(enum or_hadamard_impl impl)
{
#ifdef __x86_64__
	__builtin_cpu_init();
	/* The vector kernels subtract with FMA (see hadamard_avx2.c). */
	if (impl == OR_HADAMARD_IMPL_AVX2 || impl == OR_HADAMARD_IMPL_AVX512VL)
		if (!__builtin_cpu_supports("avx2") ||
		    !__builtin_cpu_supports("fma"))
			return 0;
	if (impl == OR_HADAMARD_IMPL_AVX512VL)
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vl");
	return 1;
#else
	return impl == OR_HADAMARD_IMPL_SCALAR;
#endif
}

int or_hadamard_set_impl(enum or_hadamard_impl impl)
{
	if (impl == OR_HADAMARD_IMPL_AUTO) {
		const char *e = getenv("OPTIREDUCE_HADAMARD_IMPL");

		/* The one asked for if the CPU has it, else the best it has
		 * (a debugging knob: any kernel gives the same results). */
		impl = OR_HADAMARD_IMPL_AVX512VL;
		while (impl > OR_HADAMARD_IMPL_SCALAR && !cpu_has(impl))
			impl--;
		for (unsigned int k = OR_HADAMARD_IMPL_SCALAR; e && k <= impl; k++)
			if (!strcmp(e, kernels[k].name))
				impl = k;
	}
	if (impl <= OR_HADAMARD_IMPL_AUTO || impl > OR_HADAMARD_IMPL_AVX512VL)
		return -EINVAL;
	if (!cpu_has(impl))
		return -ENOTSUP;
	__atomic_store_n(&fwht_inv, kernels[impl].inv, __ATOMIC_RELAXED);
	__atomic_store_n(&fwht_name, kernels[impl].name, __ATOMIC_RELAXED);
	__atomic_store_n(&fwht_fwd, kernels[impl].fwd, __ATOMIC_RELEASE);
	return 0;
}

static void pick_kernels(void)
{
	/* Racing first uses pick the same kernels: harmless. */
	if (!__atomic_load_n(&fwht_fwd, __ATOMIC_ACQUIRE))
		or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
}

const char *or_hadamard_impl_name(void)
{
	pick_kernels();
	return __atomic_load_n(&fwht_name, __ATOMIC_ACQUIRE);
}

/* Sign bytes of entries off .. off+b-1; off is a multiple of 8 when b >= 8. */
static void sign_bytes(uint64_t seed, size_t off, size_t b, uint8_t *out)
{
	if (b < 8) {
		uint8_t v = 0;

		for (size_t i = 0; i < b; i++)
			v |= or_hadamard_sign(seed, off + i) << i;
		out[0] = v;
		return;
	}
	/* Whole words where the piece is 64-aligned (every piece of 64 or
	 * more is: pieces start at multiples of their size). */
	if (!(off & 63) && !(b & 63)) {
		for (size_t w = 0; w < b / 64; w++) {
			uint64_t v = htole64(or_hadamard_sign_word(seed, (off >> 6) + w));

			memcpy(out + 8 * w, &v, 8);
		}
		return;
	}
	for (size_t t = 0; t < b / 8; t++) {
		size_t g = off + 8 * t;

		out[t] = or_hadamard_sign_word(seed, g >> 6) >> (g & 63);
	}
}

static void transform(float *dst, float *src, size_t n, uint64_t seed,
		      unsigned int block, int inverse, float div)
{
	uint8_t signs[OR_HADAMARD_MAX_BLOCK / 8];
	/* Beyond L2, the result is gone from the caches before it is used. */
	unsigned int flags = n * sizeof(float) >= (1u << 20) ? OR_FWHT_STREAM : 0;
	or_fwht_fn fn;
	size_t off = 0;

	pick_kernels();
	if (block < 1 || block > OR_HADAMARD_MAX_BLOCK || (block & (block - 1)))
		block = OR_HADAMARD_DEF_BLOCK;
	fn = __atomic_load_n(inverse ? &fwht_inv : &fwht_fwd, __ATOMIC_ACQUIRE);
	while (off < n) {
		size_t b = block;
		double m;

		/* Tail: the largest power of two that still fits. */
		while (b > n - off)
			b >>= 1;
		m = inverse ? (double)(b / or_hadamard_lanes(b)) : 1.0;
		sign_bytes(seed, off, b, signs);
		/* Pieces under 8 entries never reach the vector kernel. */
		(b >= 8 ? fn : inverse ? or_fwht_inv_scalar : or_fwht_fwd_scalar)
			(dst + off, src + off, b, signs,
			 (float)(1.0 / (m * div)), flags,
			 off + b < n ? src + off + b : NULL);
		off += b;
	}
}

void or_hadamard_forward(float *dst, const float *src, size_t n, uint64_t seed,
			 unsigned int block)
{
	/* The forward kernels only read src. */
	transform(dst, (float *)src, n, seed, block, 0, 1.0f);
}

void or_hadamard_inverse(float *dst, float *src, size_t n, uint64_t seed,
			 unsigned int block, float div)
{
	transform(dst, src, n, seed, block, 1, div);
}
