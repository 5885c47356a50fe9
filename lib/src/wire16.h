/* SPDX-License-Identifier: MIT */
#ifndef OR_WIRE16_H
#define OR_WIRE16_H

/*
 * The 16-bit wire format: bfloat16 and float16 calls cross the wire as 16
 * bits, half the bytes of float32; everything else of the call stays in
 * float32 (the reduction, compensation, the transform).
 *
 * Precision of each step of a 16-bit call (u = 2^-8 for bfloat16, 2^-11
 * for float16, the unit roundoff of the wire type):
 *   widen     input to float32: exact.
 *   forward   Hadamard transform in float32 (a sign flip and additions).
 *   narrow    the vector phase 1 sends is rounded (to nearest even) to the
 *             wire type, and the rank keeps the rounded value as its own
 *             contribution too, so the sum an owner computes is the sum of
 *             exactly what crossed the wire. Without the transform the
 *             input already is of the wire type: no rounding. With it,
 *             each entry y gets |e| <= u |y|.
 *   reduce    float32 sum of the widened contributions, compensation
 *             (compensate.h) in float32.
 *   narrow    the owner divides its reduced shard by the mean's divisor and
 *             rounds it to the wire type for phase 2; it keeps the rounded
 *             value, so every replica holds the same bits. Without the
 *             transform this is the call's one rounding: the result is
 *             exactly round(sum / div) (the float32 path computes the same
 *             value, then rounds it on the way out).
 *   inverse   float32, then the result is rounded to the caller's type
 *             (exact without the transform: it already is of that type).
 * The inverse transform maps an error vector e of a lane (m entries, see
 * hadamard.h) to one of 2-norm ||e||_2 / sqrt(m), and ||y||_2 =
 * sqrt(m) ||x||_2, so with the transform each rounding on the wire adds at
 * most u ||x||_2 to the 2-norm of a lane's error, x being the vector that
 * was rounded (a rank's contribution, or the reduced sum / div); over the
 * whole buffer: ||result - exact||_2 <= u_w (sum_r ||x_r||_2 +
 * ||sum||_2) / div + u_out ||result||_2, plus float32 rounding.
 *
 * Which type crosses: the call's own, but a float16 call under the
 * transform travels as bfloat16. The forward transform is unnormalized
 * (hadamard.h): an entry may reach m times the largest input, past
 * float16's 65504, and bfloat16 has float32's range.
 */

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

/* The dtype a call of dtype crosses the wire as (an OPTIREDUCE_* dtype). */
int or_wire_dtype(int dtype, int hadamard);

/*
 * dst[i] = src[i] / div rounded to wdtype (a 16-bit type), and src[i]
 * becomes that rounded value widened back: what crossed is what the
 * sender holds.
 */
void or_wire_narrow(uint16_t *dst, float *src, size_t n, int wdtype,
		    float div);

/*
 * buf holds n wdtype entries at its start; afterwards n float32 ones. An
 * entry inside a missing byte range (ascending, as a receive reports
 * them) was never written: it is not read, and becomes 0.
 */
void or_wire_widen(void *buf, size_t n, int wdtype,
		   const struct or_range *missing, uint32_t nr_missing);

/* Missing byte ranges of a message of esize-byte entries become the byte
 * ranges of the same entries (a partly missing one whole) in float32. */
void or_wire_ranges(struct or_range *r, uint32_t nr, size_t esize);

#endif /* OR_WIRE16_H */
