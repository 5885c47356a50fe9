/* SPDX-License-Identifier: MIT */
#ifndef OR_DTYPE_H
#define OR_DTYPE_H

/*
 * Element types. Everything is reduced in float32: 16-bit inputs are widened
 * on the way in and rounded (to nearest even) on the way out; on the wire
 * they travel as 16 bits (wire16.h says how, and what each step rounds).
 */

#include <stddef.h>
#include <stdint.h>

size_t or_dtype_size(int dtype);	/* 0: unknown dtype */
/* dst[i] = src[i] as float32 */
void or_dtype_load(float *dst, const void *src, size_t n, int dtype);
/*
 * dst[i] = src[i] / div, rounded to dtype. A true division, not a multiply
 * by 1/div, so a mean of integer-valued data is exactly what the caller
 * computes as sum / size.
 */
void or_dtype_store(void *dst, const float *src, size_t n, int dtype,
		    float div);

uint16_t or_f32_to_bf16(float f);
float or_bf16_to_f32(uint16_t h);
uint16_t or_f32_to_f16(float f);
float or_f16_to_f32(uint16_t h);

#endif /* OR_DTYPE_H */
