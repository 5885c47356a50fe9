// SPDX-License-Identifier: MIT
/* bfloat16 / float16 conversions: exact for representable values, round to
 * nearest even, infinities and NaN kept. */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "helpers.h"

int main(void)
{
	/* Every bf16 and f16 bit pattern survives widening and rounding back. */
	for (uint32_t h = 0; h < 65536; h++) {
		float f = or_bf16_to_f32(h);

		if (isnan(f))
			T_ASSERT(isnan(or_bf16_to_f32(or_f32_to_bf16(f))), "bf16 nan");
		else
			T_ASSERT(or_f32_to_bf16(f) == h, "bf16 %04x", h);
		f = or_f16_to_f32(h);
		if (isnan(f))
			T_ASSERT(isnan(or_f16_to_f32(or_f32_to_f16(f))), "f16 nan");
		else
			T_ASSERT(or_f32_to_f16(f) == h, "f16 %04x", h);
	}
	/* Ties go to even. 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7. */
	T_ASSERT(or_f32_to_bf16(1.0f + 0x1p-8f) == or_f32_to_bf16(1.0f), "bf16 tie");
	T_ASSERT(or_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f) ==
		 or_f32_to_bf16(1.0f + 0x1p-6f), "bf16 tie up");
	T_ASSERT(or_f32_to_f16(1.0f + 0x1p-11f) == or_f32_to_f16(1.0f), "f16 tie");
	T_ASSERT(isinf(or_f16_to_f32(or_f32_to_f16(1e6f))), "f16 overflow");
	T_ASSERT(or_bf16_to_f32(or_f32_to_bf16(-3.0f)) == -3.0f, "bf16 -3");
	/* Buffers, with a true division. */
	{
		uint16_t b[5];
		float in[5] = { 1, 2, 3, -4, 1000 }, out[5];

		or_dtype_store(b, in, 5, OPTIREDUCE_FLOAT16, 1.0f);
		or_dtype_load(out, b, 5, OPTIREDUCE_FLOAT16);
		T_ASSERT(!memcmp(in, out, sizeof(in)), "f16 buffer");
		or_dtype_store(b, in, 5, OPTIREDUCE_BFLOAT16, 2.0f);
		or_dtype_load(out, b, 5, OPTIREDUCE_BFLOAT16);
		T_ASSERT(out[0] == 0.5f && out[3] == -2 && out[4] == 500, "bf16 div");
		or_dtype_store(out, in, 5, OPTIREDUCE_FLOAT32, 3.0f);
		T_ASSERT(out[2] == 1.0f && out[0] == 1.0f / 3.0f, "f32 div");
	}
	T_ASSERT(or_dtype_size(OPTIREDUCE_FLOAT32) == 4 &&
		 or_dtype_size(OPTIREDUCE_BFLOAT16) == 2 &&
		 or_dtype_size(OPTIREDUCE_FLOAT16) == 2 && !or_dtype_size(0) &&
		 !or_dtype_size(99), "sizes");
	return 0;
}
