// SPDX-License-Identifier: MIT
#include <string.h>

#include "optireduce.h"
#include "dtype.h"
#include "wire16.h"

int or_wire_dtype(int dtype, int hadamard)
{
	if (dtype == OPTIREDUCE_FLOAT16 && hadamard)
		return OPTIREDUCE_BFLOAT16;
	return dtype;
}

void or_wire_narrow(uint16_t *dst, float *src, size_t n, int wdtype,
		    float div)
{
	or_dtype_store(dst, src, n, wdtype, div);
	or_dtype_load(src, dst, n, wdtype);
}

void or_wire_widen(void *buf, size_t n, int wdtype,
		   const struct or_range *missing, uint32_t nr_missing)
{
	char *p = buf;
	uint32_t k = nr_missing;	/* ranges not yet passed, from the end */

	/*
	 * Backwards: float i covers 16-bit entries 2i and 2i + 1, which for
	 * i > 0 lie past i and were read already; entry 0 is read before
	 * float 0 is written. memcpy: the two views of one buffer alias.
	 */
	for (size_t i = n; i-- > 0;) {
		uint16_t h;
		float f = 0.0f;

		while (k && missing[k - 1].start >= 2 * i + 2)
			k--;
		if (!k || missing[k - 1].end <= 2 * i) {
			memcpy(&h, p + 2 * i, 2);
			f = wdtype == OPTIREDUCE_BFLOAT16 ? or_bf16_to_f32(h) :
							    or_f16_to_f32(h);
		}
		memcpy(p + 4 * i, &f, 4);
	}
}

void or_wire_ranges(struct or_range *r, uint32_t nr, size_t esize)
{
	for (uint32_t i = 0; i < nr; i++) {
		r[i].start = r[i].start / esize * sizeof(float);
		r[i].end = (r[i].end + esize - 1) / esize * sizeof(float);
	}
}
