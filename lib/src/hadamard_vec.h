/* SPDX-License-Identifier: MIT */
/*
 * The blockwise lane Walsh-Hadamard transform's vector kernels, written
 * once for any vector width: hadamard_avx2.c (8-float vectors, AVX2 and
 * AVX-512VL) and hadamard_avx512.c (16-float vectors) include this after
 * defining
 *
 *   vec, VF, VBYTES   the vector type, its floats and bytes
 *   LINE_VECS         vectors per 64-byte cache line
 *   BF(a, b)          a, b <- a + b, a - b
 *   load(), store()   vector v of a block, with the forward signs on the
 *                     way in (pre) or the inverse signs and scale on the
 *                     way out (post), and whatever else the width needs
 *   v_load, v_stream, v_zero, v_set1, v_init
 *
 * A vector holds VF consecutive entries; the butterflies here are between
 * whole vectors, of distances 1, 2, 4 ... vectors. Not a header of its
 * own: only the files above include it, each once.
 */

/*
 * Butterfly networks written out for the register allocator: vector i of
 * a group is the variable r<i> (with an indexed array the compiler keeps
 * the array on the stack). Depth-first, so few values are live at once:
 * the forward network loads at its leaves and runs a half's stages before
 * the other half is loaded; the inverse one is its mirror image, storing
 * at its leaves. The stores of the forward network and the loads of the
 * inverse one are on its top stage (STx/LTx below).
 */
#define LD(i)	(r##i = load(src, v + (i) * s, pre, signs))
#define ST(i)	store(dst, v + (i) * s, r##i, post, nt, signs, vs)
#define B(a, b)	BF(r##a, r##b)

/* Forward: stages ascending, inputs loaded, results left in registers. */
#define F1(a, b)	do { LD(a); LD(b); B(a, b); } while (0)
#define F2(a, b, c, d)	do { F1(a, b); F1(c, d); B(a, c); B(b, d); } while (0)
#define F3(a, b, c, d, e, f, g, h) do {					\
	F2(a, b, c, d); F2(e, f, g, h);					\
	B(a, e); B(b, f); B(c, g); B(d, h);				\
} while (0)
#define F4(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) do {		\
	F3(a, b, c, d, e, f, g, h); F3(i, j, k, l, m, n, o, p);		\
	B(a, i); B(b, j); B(c, k); B(d, l);				\
	B(e, m); B(f, n); B(g, o); B(h, p);				\
} while (0)

/* Inverse: stages descending, inputs in registers, results stored. */
#define I1(a, b)	do { B(a, b); ST(a); ST(b); } while (0)
#define I2(a, b, c, d)	do { B(a, c); B(b, d); I1(a, b); I1(c, d); } while (0)
#define I3(a, b, c, d, e, f, g, h) do {					\
	B(a, e); B(b, f); B(c, g); B(d, h);				\
	I2(a, b, c, d); I2(e, f, g, h);					\
} while (0)
#define I4(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) do {		\
	B(a, i); B(b, j); B(c, k); B(d, l);				\
	B(e, m); B(f, n); B(g, o); B(h, p);				\
	I3(a, b, c, d, e, f, g, h); I3(i, j, k, l, m, n, o, p);		\
} while (0)

/* Top stage of a forward network: butterfly, then store both. */
#define FT(a, b)	do { B(a, b); ST(a); ST(b); } while (0)
/* Top stage of an inverse network: load both, then butterfly. */
#define LT(a, b)	do { LD(a); LD(b); B(a, b); } while (0)

#define H16A	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
#define H16B	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
#define F4L(...)	F4(__VA_ARGS__)		/* expand H16A/B first */
#define I4L(...)	I4(__VA_ARGS__)

/*
 * One memory pass over nv vectors: cnt (0..5) butterfly stages of
 * distances s, 2s, 4s ... vectors (ascending, forward) or the reverse
 * (inverse), from src to dst. cnt 4 and 5 hold 16 and 32 vectors and are
 * only reached with 32 vector registers (AVX-512VL, see below).
 */
AI void pass(float *dst, const float *src, size_t nv, size_t s,
	     unsigned int cnt, int desc, int pre, int post, int nt,
	     const uint8_t *signs, vec vs)
{
	const size_t span = s << cnt;

	for (size_t base = 0; base < nv; base += span) {
		for (size_t v = base; v < base + s; v++) {
			vec r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10,
			       r11, r12, r13, r14, r15, r16, r17, r18, r19,
			       r20, r21, r22, r23, r24, r25, r26, r27, r28,
			       r29, r30, r31;

			if (cnt == 5 && !desc) {
				F4L(H16A);
				F4L(H16B);
				FT(0, 16); FT(1, 17); FT(2, 18); FT(3, 19);
				FT(4, 20); FT(5, 21); FT(6, 22); FT(7, 23);
				FT(8, 24); FT(9, 25); FT(10, 26); FT(11, 27);
				FT(12, 28); FT(13, 29); FT(14, 30); FT(15, 31);
			} else if (cnt == 5) {
				LT(0, 16); LT(1, 17); LT(2, 18); LT(3, 19);
				LT(4, 20); LT(5, 21); LT(6, 22); LT(7, 23);
				LT(8, 24); LT(9, 25); LT(10, 26); LT(11, 27);
				LT(12, 28); LT(13, 29); LT(14, 30); LT(15, 31);
				I4L(H16A);
				I4L(H16B);
			} else if (cnt == 4 && !desc) {
				F3(0, 1, 2, 3, 4, 5, 6, 7);
				F3(8, 9, 10, 11, 12, 13, 14, 15);
				FT(0, 8); FT(1, 9); FT(2, 10); FT(3, 11);
				FT(4, 12); FT(5, 13); FT(6, 14); FT(7, 15);
			} else if (cnt == 4) {
				LT(0, 8); LT(1, 9); LT(2, 10); LT(3, 11);
				LT(4, 12); LT(5, 13); LT(6, 14); LT(7, 15);
				I3(0, 1, 2, 3, 4, 5, 6, 7);
				I3(8, 9, 10, 11, 12, 13, 14, 15);
			} else if (cnt == 3 && !desc) {
				F2(0, 1, 2, 3);
				F2(4, 5, 6, 7);
				FT(0, 4); FT(1, 5); FT(2, 6); FT(3, 7);
			} else if (cnt == 3) {
				LT(0, 4); LT(1, 5); LT(2, 6); LT(3, 7);
				I2(0, 1, 2, 3);
				I2(4, 5, 6, 7);
			} else if (cnt == 2 && !desc) {
				F1(0, 1);
				F1(2, 3);
				FT(0, 2); FT(1, 3);
			} else if (cnt == 2) {
				LT(0, 2); LT(1, 3);
				I1(0, 1);
				I1(2, 3);
			} else if (cnt == 1) {
				LT(0, 1);
				ST(0);
				ST(1);
			} else {
				LD(0);
				ST(0);
			}
		}
	}
}

/* Literal counts and flags: each call is its own straight-line kernel.
 * maxg is a constant of the caller, so the wider cases vanish from the
 * 16-register kernels. */
#define PASS_CNT(dst, src, nv, s, cnt, maxg, desc, pre, post, nt, signs, vs) do { \
	if ((maxg) >= 5 && (cnt) == 5)					\
		pass(dst, src, nv, s, 5, desc, pre, post, nt, signs, vs); \
	else if ((maxg) >= 4 && (cnt) == 4)				\
		pass(dst, src, nv, s, 4, desc, pre, post, nt, signs, vs); \
	else if ((cnt) == 3)						\
		pass(dst, src, nv, s, 3, desc, pre, post, nt, signs, vs); \
	else if ((cnt) == 2)						\
		pass(dst, src, nv, s, 2, desc, pre, post, nt, signs, vs); \
	else if ((cnt) == 1)						\
		pass(dst, src, nv, s, 1, desc, pre, post, nt, signs, vs); \
	else								\
		pass(dst, src, nv, s, 0, desc, pre, post, nt, signs, vs); \
} while (0)

#define PASS_NT(dst, src, nv, s, cnt, maxg, desc, pre, post, nt, signs, vs) do { \
	if (nt)								\
		PASS_CNT(dst, src, nv, s, cnt, maxg, desc, pre, post, 1, signs, vs); \
	else								\
		PASS_CNT(dst, src, nv, s, cnt, maxg, desc, pre, post, 0, signs, vs); \
} while (0)

/* The distances of the first two passes as literals: every address in
 * them is then the loop's pointer plus a constant, where a variable
 * distance costs an address computation (or a spilled one) per vector.
 * A third pass only comes with blocks of 2^(2 maxg + 3) or more. */
#define PASS_ALL(dst, src, nv, s, cnt, maxg, desc, pre, post, nt, signs, vs) do { \
	if ((s) == 1)							\
		PASS_NT(dst, src, nv, 1, cnt, maxg, desc, pre, post, nt, signs, vs); \
	else if ((s) == (size_t)1 << (maxg))				\
		PASS_NT(dst, src, nv, (size_t)1 << (maxg), cnt, maxg, desc, pre, post, nt, signs, vs); \
	else								\
		PASS_NT(dst, src, nv, s, cnt, maxg, desc, pre, post, nt, signs, vs); \
} while (0)

/*
 * Streaming (OR_FWHT_STREAM, an aligned destination): the block goes from
 * src through an L1 scratch to dst, whose lines are then written without
 * being read first, so a large transform moves no more memory than a copy
 * of it would. Otherwise the passes run in dst (forward) or src (inverse).
 */
#define SCRATCH_MAX	8192	/* floats: 32 KiB on the stack */

static inline int streaming(const float *dst, size_t b, unsigned int flags)
{
	return (flags & OR_FWHT_STREAM) && b <= SCRATCH_MAX &&
	       !((uintptr_t)dst & (VBYTES - 1));
}

/*
 * The last step of a streaming block, either way: its lines from L1 to dst
 * past the caches, each store paired with a prefetch of a line of the next
 * block. Reading a block and then writing one, as the passes otherwise
 * would, leaves memory idle in turns: measured on a 16 MiB buffer, a
 * blockwise copy through L1 ran at half the speed of a plain streaming
 * copy, and at three quarters with the prefetch woven in (spreading the
 * prefetch over the arithmetic instead was slower). The transform went
 * from about 6 to 8-9 GB/s encoding, 6 to 7 decoding.
 */
AI void stream_out(float *dst, const float *work, size_t nv, const float *next)
{
	size_t v;

	for (v = 0; v + LINE_VECS <= nv; v += LINE_VECS) {
		if (next)
			_mm_prefetch((const char *)(next + VF * v), _MM_HINT_T0);
		for (size_t k = 0; k < LINE_VECS; k++)
			v_stream(dst + VF * (v + k), v_load(work + VF * (v + k)));
	}
	for (; v < nv; v++)	/* a block of less than a line */
		v_stream(dst + VF * v, v_load(work + VF * v));
}

/* Blocks of one pass have no copy to weave the prefetch into. */
AI void prefetch_block(const float *next, size_t nv)
{
	for (size_t v = 0; v < nv; v += LINE_VECS)
		_mm_prefetch((const char *)(next + VF * v), _MM_HINT_T0);
}

/* maxg: stages per memory pass, 3 with 16 vector registers, 5 with 32. */
AI void fwd(float *dst, const float *src, size_t b, const uint8_t *signs,
	    unsigned int flags, const float *next, unsigned int maxg)
{
	const vec vs = v_zero();	/* no scale on this side */
	float tmp[SCRATCH_MAX] __attribute__((aligned(VBYTES)));
	size_t nv = b / VF;
	unsigned int levels = or_fwht_levels(nv);
	int nt = streaming(dst, b, flags);
	float *work = nt && levels > maxg ? tmp : dst;
	unsigned int e;

	v_init();
	/* The first group reads the source, with the signs; the last one
	 * writes the destination. */
	PASS_ALL(levels > maxg ? work : dst, src, nv, 1,
		 or_fwht_group(levels, 0, maxg), maxg, 0, 1, 0,
		 nt && levels <= maxg, signs, vs);
	for (e = maxg; e + maxg < levels; e += maxg)
		PASS_ALL(work, work, nv, (size_t)1 << e, maxg, maxg, 0, 0, 0, 0,
			 signs, vs);
	if (levels > maxg)
		PASS_ALL(nt ? work : dst, work, nv, (size_t)1 << e,
			 or_fwht_group(levels, e, maxg), maxg, 0, 0, 0, 0, signs,
			 vs);
	/* That pass writes with a stride of 2^e vectors, 8 or 32 lines at
	 * once: too many half-written lines for the write-combining buffers,
	 * which then flush partial lines. A last, sequential copy out of L1
	 * streams whole lines. */
	if (nt && levels > maxg)
		stream_out(dst, work, nv, next);
	else if (nt && next)
		prefetch_block(next, nv);
}

AI void inv(float *dst, float *src, size_t b, const uint8_t *signs,
	    float scale, unsigned int flags, const float *next, unsigned int maxg)
{
	const vec vs = v_set1(scale);
	float tmp[SCRATCH_MAX] __attribute__((aligned(VBYTES)));
	size_t nv = b / VF;
	unsigned int levels = or_fwht_levels(nv);
	unsigned int e = levels ? (levels - 1) / maxg * maxg : 0;
	int nt = streaming(dst, b, flags);
	float *work = nt ? tmp : src;

	v_init();
	/* The forward groups in reverse order, each one reversed: the first
	 * reads the source, the last (levels 0 .. maxg-1) writes the
	 * destination with signs and scale. */
	if (e) {
		PASS_ALL(work, src, nv, (size_t)1 << e,
			 or_fwht_group(levels, e, maxg), maxg, 1, 0, 0, 0, signs,
			 vs);
		for (e -= maxg; e > 0; e -= maxg)
			PASS_ALL(work, work, nv, (size_t)1 << e, maxg, maxg, 1,
				 0, 0, 0, signs, vs);
		src = work;
	}
	if (!nt) {
		PASS_ALL(dst, src, nv, 1, or_fwht_group(levels, 0, maxg), maxg, 1,
			 0, 1, 0, signs, vs);
		return;
	}
	/* Streaming: the last pass ends in L1 too, so that the lines leave
	 * with the next block's prefetch woven in (see stream_out()). */
	PASS_ALL(work, src, nv, 1, or_fwht_group(levels, 0, maxg), maxg, 1, 0, 1,
		 0, signs, vs);
	stream_out(dst, work, nv, next);
}
