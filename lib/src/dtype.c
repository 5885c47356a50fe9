// SPDX-License-Identifier: MIT
#include <string.h>

#include "optireduce.h"
#include "dtype.h"

size_t or_dtype_size(int dtype)
{
	switch (dtype) {
	case OPTIREDUCE_FLOAT32:
		return 4;
	case OPTIREDUCE_BFLOAT16:
	case OPTIREDUCE_FLOAT16:
		return 2;
	}
	return 0;
}

float or_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint16_t or_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)	/* NaN: keep it a (quiet) NaN */
		return (u >> 16) | 0x0040;
	u += 0x7fff + ((u >> 16) & 1);		/* round to nearest even */
	return u >> 16;
}

/* _Float16 conversions are IEEE-correct (F16C or libgcc). */
float or_f16_to_f32(uint16_t h)
{
	_Float16 v;

	memcpy(&v, &h, 2);
	return (float)v;
}

uint16_t or_f32_to_f16(float f)
{
	_Float16 v = (_Float16)f;
	uint16_t h;

	memcpy(&h, &v, 2);
	return h;
}

void or_dtype_load(float *dst, const void *src, size_t n, int dtype)
{
	const uint16_t *s16 = src;

	switch (dtype) {
	case OPTIREDUCE_FLOAT32:
		memcpy(dst, src, n * 4);
		break;
	case OPTIREDUCE_BFLOAT16:
		for (size_t i = 0; i < n; i++)
			dst[i] = or_bf16_to_f32(s16[i]);
		break;
	case OPTIREDUCE_FLOAT16:
		for (size_t i = 0; i < n; i++)
			dst[i] = or_f16_to_f32(s16[i]);
		break;
	}
}

void or_dtype_store(void *dst, const float *src, size_t n, int dtype,
		    float div)
{
	float *d32 = dst;
	uint16_t *d16 = dst;

	switch (dtype) {
	case OPTIREDUCE_FLOAT32:
		if (div == 1.0f)
			memcpy(dst, src, n * 4);
		else
			for (size_t i = 0; i < n; i++)
				d32[i] = src[i] / div;
		break;
	case OPTIREDUCE_BFLOAT16:
		for (size_t i = 0; i < n; i++)
			d16[i] = or_f32_to_bf16(src[i] / div);
		break;
	case OPTIREDUCE_FLOAT16:
		for (size_t i = 0; i < n; i++)
			d16[i] = or_f32_to_f16(src[i] / div);
		break;
	}
}
