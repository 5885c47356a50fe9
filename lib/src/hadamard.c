// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hadamard.h"
#include "util.h"

uint64_t or_hadamard_sign_word(uint64_t seed, size_t word)
{
	return or_mix64(seed ^ ((uint64_t)word * 0xd1b54a32d192ed03ull));
}

/*
 * The portable kernel ("scalar"): plain C on 4-float vectors of GCC's
 * vector extension, which every 64-bit target has in registers (SSE on
 * baseline x86-64, NEON on arm64). A butterfly of the lane transform pairs
 * entries 8s apart, so it is element-wise between such vectors, with the
 * same additions in the same order as the AVX2 kernels: the results are
 * theirs bit for bit. Element by element the butterflies ran at under
 * 1 GB/s (the compiler would not vectorize a loop whose halves might
 * overlap). Three stages share a memory pass (radix 8, eight vector
 * registers of the sixteen SSE has), as the AVX2 kernels do.
 */
typedef float v4f __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));

#define AI static inline __attribute__((always_inline))

AI v4f ld4(const float *p)
{
	v4f v;

	memcpy(&v, p, sizeof(v));
	return v;
}

AI void st4(float *p, v4f v)
{
	memcpy(p, &v, sizeof(v));
}

/* v with lane k negated where bit k of bits is set. */
AI v4f flip4(v4f v, unsigned int bits)
{
	const v4u lane = { 0, 1, 2, 3 };
	v4u m = (((v4u){ 0 } + bits) >> lane & 1) << 31;

	return (v4f)((v4u)v ^ m);
}

#define BF(a, b) do { v4f t_ = (a); (a) = t_ + (b); (b) = t_ - (b); } while (0)
#define MAXG	3	/* stages per memory pass: eight vectors */

/* Entry i of a load or store: the signs of the 4 entries from i. */
AI unsigned int nibble(const uint8_t *signs, size_t i)
{
	return signs[i >> 3] >> (i & 4) & 15;
}

AI v4f load(const float *src, size_t i, int pre, const uint8_t *signs)
{
	v4f v = ld4(src + i);

	return pre ? flip4(v, nibble(signs, i)) : v;
}

AI void store(float *dst, size_t i, v4f v, int post, const uint8_t *signs,
	      v4f vs)
{
	st4(dst + i, post ? flip4(v, nibble(signs, i)) * vs : v);
}

/*
 * One memory pass from src to dst (b entries; they may be the same): k
 * (1..3) butterfly stages of distances d, 2d, 4d entries (ascending,
 * forward) or the reverse (inverse). pre: the forward signs on the way in;
 * post: the inverse signs and scale on the way out.
 */
AI void pass(float *dst, const float *src, size_t b, size_t d, unsigned int k,
	     int inverse, int pre, int post, const uint8_t *signs, v4f vs)
{
	const size_t span = d << k;

	for (size_t base = 0; base < b; base += span)
		for (size_t i = base; i < base + d; i += 4) {
			v4f r0, r1, r2, r3, r4, r5, r6, r7;

			r0 = load(src, i, pre, signs);
			r1 = load(src, i + d, pre, signs);
			if (k >= 2) {
				r2 = load(src, i + 2 * d, pre, signs);
				r3 = load(src, i + 3 * d, pre, signs);
			}
			if (k == 3) {
				r4 = load(src, i + 4 * d, pre, signs);
				r5 = load(src, i + 5 * d, pre, signs);
				r6 = load(src, i + 6 * d, pre, signs);
				r7 = load(src, i + 7 * d, pre, signs);
			}
			if (k == 1) {
				BF(r0, r1);
			} else if (k == 2) {
				if (!inverse) {
					BF(r0, r1); BF(r2, r3);
				}
				BF(r0, r2); BF(r1, r3);
				if (inverse) {
					BF(r0, r1); BF(r2, r3);
				}
			} else {
				if (!inverse) {
					BF(r0, r1); BF(r2, r3);
					BF(r4, r5); BF(r6, r7);
					BF(r0, r2); BF(r1, r3);
					BF(r4, r6); BF(r5, r7);
				}
				BF(r0, r4); BF(r1, r5); BF(r2, r6); BF(r3, r7);
				if (inverse) {
					BF(r0, r2); BF(r1, r3);
					BF(r4, r6); BF(r5, r7);
					BF(r0, r1); BF(r2, r3);
					BF(r4, r5); BF(r6, r7);
				}
			}
			store(dst, i, r0, post, signs, vs);
			store(dst, i + d, r1, post, signs, vs);
			if (k >= 2) {
				store(dst, i + 2 * d, r2, post, signs, vs);
				store(dst, i + 3 * d, r3, post, signs, vs);
			}
			if (k == 3) {
				store(dst, i + 4 * d, r4, post, signs, vs);
				store(dst, i + 5 * d, r5, post, signs, vs);
				store(dst, i + 6 * d, r6, post, signs, vs);
				store(dst, i + 7 * d, r7, post, signs, vs);
			}
		}
}

/* Literal k, direction and flags: each call is its own straight-line
 * loop. k 0 is the signs alone (a block of one vector). */
#define PASS_DIR(dst, src, b, d, k, pre, post, signs, vs, inv) do {	\
	if ((k) == 3)							\
		pass(dst, src, b, d, 3, inv, pre, post, signs, vs);	\
	else if ((k) == 2)						\
		pass(dst, src, b, d, 2, inv, pre, post, signs, vs);	\
	else if ((k) == 1)						\
		pass(dst, src, b, d, 1, inv, pre, post, signs, vs);	\
	else								\
		for (size_t i_ = 0; i_ < (b); i_ += 4)			\
			store(dst, i_, load(src, i_, pre, signs), post,	\
			      signs, vs);				\
} while (0)

static void pass_fwd(float *dst, const float *src, size_t b, size_t d,
		     unsigned int k, int pre, const uint8_t *signs)
{
	const v4f one = (v4f){ 0 } + 1.0f;

	if (pre)
		PASS_DIR(dst, src, b, d, k, 1, 0, signs, one, 0);
	else
		PASS_DIR(dst, src, b, d, k, 0, 0, signs, one, 0);
}

static void pass_inv(float *dst, const float *src, size_t b, size_t d,
		     unsigned int k, int post, const uint8_t *signs, v4f vs)
{
	if (post)
		PASS_DIR(dst, src, b, d, k, 0, 1, signs, vs, 1);
	else
		PASS_DIR(dst, src, b, d, k, 0, 0, signs, vs, 1);
}

/* Blocks of fewer than 8 entries: one lane per entry, no butterflies. */
static void tiny(float *dst, const float *src, size_t b, const uint8_t *signs,
		 float scale)
{
	for (size_t i = 0; i < b; i++)
		dst[i] = (signs[0] >> i) & 1 ? -(src[i] * scale) : src[i] * scale;
}

void or_fwht_fwd_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	unsigned int levels, e;

	(void)scale;
	(void)flags;
	(void)next;
	if (b < 8) {
		tiny(dst, src, b, signs, 1.0f);
		return;
	}
	levels = or_fwht_levels(b / 8);
	/* The first pass reads the source, with the signs. */
	pass_fwd(dst, src, b, 8, or_fwht_group(levels, 0, MAXG), 1, signs);
	for (e = MAXG; e < levels; e += MAXG)
		pass_fwd(dst, dst, b, (size_t)8 << e,
			 or_fwht_group(levels, e, MAXG), 0, signs);
}

void or_fwht_inv_scalar(float *dst, float *src, size_t b, const uint8_t *signs,
			float scale, unsigned int flags, const float *next)
{
	const v4f vs = (v4f){ 0 } + scale;
	unsigned int levels, e;

	(void)flags;
	(void)next;
	if (b < 8) {
		tiny(dst, src, b, signs, scale);
		return;
	}
	levels = or_fwht_levels(b / 8);
	/* The forward groups in reverse order, each one reversed; the last
	 * writes the destination with signs and scale. */
	for (e = levels ? (levels - 1) / MAXG * MAXG : 0; e > 0; e -= MAXG)
		pass_inv(src, src, b, (size_t)8 << e,
			 or_fwht_group(levels, e, MAXG), 0, signs, vs);
	pass_inv(dst, src, b, 8, or_fwht_group(levels, 0, MAXG), 1, signs, vs);
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
#ifdef __x86_64__
	[OR_HADAMARD_IMPL_AVX2] = { "avx2", or_fwht_fwd_avx2, or_fwht_inv_avx2 },
	[OR_HADAMARD_IMPL_AVX512VL] = { "avx512vl", or_fwht_fwd_avx512vl,
					or_fwht_inv_avx512vl },
	[OR_HADAMARD_IMPL_AVX512] = { "avx512", or_fwht_fwd_avx512,
				      or_fwht_inv_avx512 },
#else
	/* Named, so that OPTIREDUCE_HADAMARD_IMPL=avx2 is understood and
	 * refused like on an x86 CPU without it; never chosen (cpu_has). */
	[OR_HADAMARD_IMPL_AVX2] = { "avx2", NULL, NULL },
	[OR_HADAMARD_IMPL_AVX512VL] = { "avx512vl", NULL, NULL },
	[OR_HADAMARD_IMPL_AVX512] = { "avx512", NULL, NULL },
#endif
};

static int cpu_has(enum or_hadamard_impl impl)
{
#ifdef __x86_64__
	__builtin_cpu_init();
	/* The 8-float kernels subtract with FMA (see hadamard_avx2.c); the
	 * 16-float one hands them blocks of 8 entries. */
	if (impl >= OR_HADAMARD_IMPL_AVX2)
		if (!__builtin_cpu_supports("avx2") ||
		    !__builtin_cpu_supports("fma"))
			return 0;
	if (impl == OR_HADAMARD_IMPL_AVX512VL)
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vl");
	if (impl == OR_HADAMARD_IMPL_AVX512)
		return __builtin_cpu_supports("avx512f");
	return 1;
#else
	return impl == OR_HADAMARD_IMPL_SCALAR;
#endif
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

/*
 * AUTO's kernel is the fastest the CPU has, as measured, not the widest:
 * emulated, the widest can be the slowest. Under QEMU's TCG the AVX2
 * kernels ran at 0.01 GB/s, a tenth of the scalar one's speed (every FMA
 * a call into soft-float), and a 2-rank allreduce of 1 MiB with the
 * transform took 1554 ms against 385 with the scalar kernel (results.md,
 * "Hadamard transform: which kernel"). So, as Linux chooses its RAID-6
 * and XOR code, each kernel the CPU has takes one default block forward
 * and back on first use: a pass each to warm up (and, emulated, to
 * translate), then OR_HADAMARD_CAL_REPS rounds of every kernel in turn,
 * the best of each kept. In turn, so that a stall of the CPU (a host's
 * other work, under emulation) costs every kernel a round, not one
 * kernel all of them: run by run instead, one stall would decide. A few
 * tens of microseconds natively, tens of milliseconds emulated.
 */
#define OR_HADAMARD_CAL_REPS	8

static uint64_t cal_ns[OR_HADAMARD_IMPL_LAST + 1];

enum or_hadamard_impl or_hadamard_fastest(const uint64_t *ns)
{
	enum or_hadamard_impl best = OR_HADAMARD_IMPL_SCALAR;

	/* A tie goes to the wider kernel. */
	for (int k = OR_HADAMARD_IMPL_SCALAR + 1; k <= OR_HADAMARD_IMPL_LAST;
	     k++)
		if (ns[k] && (!ns[best] || ns[k] <= ns[best]))
			best = k;
	return best;
}

void or_hadamard_calibration(uint64_t *ns)
{
	for (int k = 0; k <= OR_HADAMARD_IMPL_LAST; k++)
		ns[k] = __atomic_load_n(&cal_ns[k], __ATOMIC_RELAXED);
}

/* One block forward and back with kernel k, in ns (at least 1). The
 * inverse's scale undoes the forward's gain, so the data neither grows
 * nor decays into denormals, which would slow one kernel alone. */
static uint64_t time_block(int k, float *x, float *y, const uint8_t *signs)
{
	const size_t b = OR_HADAMARD_DEF_BLOCK;
	const float scale = 1.0f / (float)(b / or_hadamard_lanes(b));
	int64_t t0 = or_now_ns(), t;

	kernels[k].fwd(y, x, b, signs, 1.0f, 0, NULL);
	kernels[k].inv(x, y, b, signs, scale, 0, NULL);
	t = or_now_ns() - t0;
	return t > 0 ? (uint64_t)t : 1;
}

/* The fastest kernel, its times (0: the CPU lacks it) left in cal_ns[];
 * scalar unmeasured if memory is short. */
static enum or_hadamard_impl calibrate(void)
{
	const size_t b = OR_HADAMARD_DEF_BLOCK;
	uint64_t ns[OR_HADAMARD_IMPL_LAST + 1] = { 0 };
	float *x = aligned_alloc(64, 2 * b * sizeof(float));
	uint8_t signs[OR_HADAMARD_DEF_BLOCK / 8];
	int k, rep;

	if (x) {
		sign_bytes(1, 0, b, signs);
		/* Full mantissas in [-0.5, 0.5), whose sums round as a
		 * gradient's do: QEMU's soft-float hands an operation to
		 * the host's FPU only once a result has rounded (the
		 * inexact flag), and on integers, whose sums never round,
		 * a guest timed both kernels at about 2 ms a block (in a
		 * binary that may have done so anyway: results.md). */
		for (size_t i = 0; i < b; i++)
			x[i] = (float)((uint32_t)(i * 2654435761u) >> 8) *
			       0x1p-24f - 0.5f;
		for (rep = 0; rep <= OR_HADAMARD_CAL_REPS; rep++) {
			for (k = OR_HADAMARD_IMPL_SCALAR;
			     k <= OR_HADAMARD_IMPL_LAST; k++) {
				uint64_t t;

				if (!cpu_has(k))
					continue;
				t = time_block(k, x, x + b, signs);
				if (rep && (!ns[k] || t < ns[k]))
					ns[k] = t;
			}
		}
		free(x);
	}
	for (k = 0; k <= OR_HADAMARD_IMPL_LAST; k++)
		__atomic_store_n(&cal_ns[k], ns[k], __ATOMIC_RELAXED);
	k = or_hadamard_fastest(ns);
	or_debug("hadamard: %s kernel; a block forward and back took "
		 "scalar %llu ns, avx2 %llu, avx512vl %llu, avx512 %llu "
		 "(0: not on this CPU)", kernels[k].name,
		 (unsigned long long)ns[OR_HADAMARD_IMPL_SCALAR],
		 (unsigned long long)ns[OR_HADAMARD_IMPL_AVX2],
		 (unsigned long long)ns[OR_HADAMARD_IMPL_AVX512VL],
		 (unsigned long long)ns[OR_HADAMARD_IMPL_AVX512]);
	return k;
}

int or_hadamard_set_impl(enum or_hadamard_impl impl)
{
	if (impl == OR_HADAMARD_IMPL_AUTO) {
		const char *e = getenv("OPTIREDUCE_HADAMARD_IMPL");

		/* The one asked for if the CPU has it (a debugging knob:
		 * any kernel gives the same results), else the fastest. */
		for (unsigned int k = OR_HADAMARD_IMPL_SCALAR;
		     e && k <= OR_HADAMARD_IMPL_LAST; k++)
			if (!strcmp(e, kernels[k].name) && cpu_has(k))
				impl = k;
		if (impl == OR_HADAMARD_IMPL_AUTO)
			impl = calibrate();
	}
	if (impl <= OR_HADAMARD_IMPL_AUTO || impl > OR_HADAMARD_IMPL_LAST)
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
	/* Racing first uses both measure, and may pick different kernels:
	 * harmless, as every kernel gives the same results. */
	if (!__atomic_load_n(&fwht_fwd, __ATOMIC_ACQUIRE))
		or_hadamard_set_impl(OR_HADAMARD_IMPL_AUTO);
}

const char *or_hadamard_kernel_name(enum or_hadamard_impl impl)
{
	if (impl <= OR_HADAMARD_IMPL_AUTO || impl > OR_HADAMARD_IMPL_LAST)
		return NULL;
	return kernels[impl].name;
}

const char *or_hadamard_impl_name(void)
{
	pick_kernels();
	return __atomic_load_n(&fwht_name, __ATOMIC_ACQUIRE);
}

/* One word of CPU 0's cache index i in sysfs ("Data", "32768K"); "" if
 * there is no such file. */
static int cache_attr(unsigned int i, const char *name, char *out, size_t len)
{
	char path[64], fmt[16];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu0/cache/index%u/%s", i, name);
	snprintf(fmt, sizeof(fmt), "%%%zus", len - 1);
	out[0] = 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	ok = fscanf(f, fmt, out) == 1;
	fclose(f);
	if (!ok)
		out[0] = 0;
	return 1;
}

/*
 * The largest data cache of CPU 0, from sysfs: the one cache instance a
 * core sees. glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) can add up the L3 of
 * every core complex (384 MiB on a host whose cores each see 32 MiB), so it
 * is only the fallback.
 */
static size_t llc_bytes(void)
{
	char type[32], size[32];
	size_t best = 0;
	long sc;

	for (unsigned int i = 0; cache_attr(i, "type", type, sizeof(type)); i++) {
		char *unit;
		size_t b;

		if (strcmp(type, "Data") && strcmp(type, "Unified"))
			continue;
		cache_attr(i, "size", size, sizeof(size));
		b = strtoul(size, &unit, 10);
		b <<= *unit == 'K' ? 10 : *unit == 'M' ? 20 : *unit == 'G' ? 30 : 0;
		if (b > best)
			best = b;
	}
	if (best)
		return best;
	sc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (sc <= 0)
		sc = sysconf(_SC_LEVEL2_CACHE_SIZE);
	return sc > 0 ? (size_t)sc : 2u << 20;
}

/*
 * Streaming pays once the source and the result no longer fit in the last
 * level cache together: below that, plain stores leave the result in the
 * cache for the copy or send that reads it next, and non-temporal stores
 * only send it to memory and back. Measured (one core, 32 MiB L3, block
 * 4096): 1-8 MiB buffers transform at 22-33 GB/s with plain stores and
 * 20-24 GB/s streamed; at 16 MiB streaming wins, 21-23 against 12-15.
 */
static size_t stream_from;	/* bytes; 0: not decided yet */

void or_hadamard_set_stream_from(size_t bytes)
{
	__atomic_store_n(&stream_from, bytes, __ATOMIC_RELAXED);
}

size_t or_hadamard_stream_from(void)
{
	size_t v = __atomic_load_n(&stream_from, __ATOMIC_RELAXED);

	if (!v) {
		/* Racing first uses find the same size: harmless. */
		v = llc_bytes() / 2;
		__atomic_store_n(&stream_from, v, __ATOMIC_RELAXED);
	}
	return v;
}

static void transform(float *dst, float *src, size_t n, uint64_t seed,
		      unsigned int block, int inverse, float div)
{
	uint8_t signs[OR_HADAMARD_MAX_BLOCK / 8];
	unsigned int flags = n * sizeof(float) >= or_hadamard_stream_from() ?
			     OR_FWHT_STREAM : 0;
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
#ifdef __x86_64__
	/* The streamed stores are weakly ordered: one fence, after the last
	 * block, before another thread or the kernel may read the result
	 * (a fence per block cost half the speed at block 256). */
	if (flags & OR_FWHT_STREAM)
		__builtin_ia32_sfence();
#endif
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
