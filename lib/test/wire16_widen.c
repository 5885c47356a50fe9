// SPDX-License-Identifier: MIT
/* The 16-bit wire format's helpers (src/wire16.h): which type crosses,
 * narrowing keeps what crossed, widening in place leaves entries of
 * missing ranges unread (0), and missing byte ranges become float32 ones
 * covering every entry they touch. */
#include <string.h>

#include "dtype.h"
#include "helpers.h"
#include "wire16.h"

#define N	37

static void widen_case(int dt)
{
	/* Bytes 10..13 (entries 5, 6), 21..22 (entries 10, 11: partly) and
	 * 70..74 (entries 35, 36: the end) did not arrive. */
	struct or_range miss[3] = { { 10, 14 }, { 21, 23 }, { 70, 74 } };
	float buf[N], want[N];
	uint16_t *h = (uint16_t *)buf;

	memset(buf, 0xff, sizeof(buf));	/* "never written" */
	for (int i = 0; i < N; i++) {
		float v = (float)(i - 18) / 4;
		int lost = (i >= 5 && i <= 6) || (i >= 10 && i <= 11) || i >= 35;

		if (!lost)
			h[i] = dt == OPTIREDUCE_BFLOAT16 ? or_f32_to_bf16(v) :
							   or_f32_to_f16(v);
		want[i] = lost ? 0 : v;
	}
	or_wire_widen(buf, N, dt, miss, 3);
	for (int i = 0; i < N; i++)
		T_ASSERT(buf[i] == want[i], "dtype %d entry %d: %g, want %g",
			 dt, i, buf[i], want[i]);
	or_wire_ranges(miss, 3, 2);
	T_ASSERT(miss[0].start == 20 && miss[0].end == 28 &&
		 miss[1].start == 40 && miss[1].end == 48 &&
		 miss[2].start == 140 && miss[2].end == 148,
		 "ranges %llu-%llu %llu-%llu %llu-%llu",
		 (unsigned long long)miss[0].start, (unsigned long long)miss[0].end,
		 (unsigned long long)miss[1].start, (unsigned long long)miss[1].end,
		 (unsigned long long)miss[2].start, (unsigned long long)miss[2].end);
}

int main(void)
{
	float v[3] = { 1.0f / 3, 300.7f, -0.0001f };
	uint16_t w[3];

	T_ASSERT(or_wire_dtype(OPTIREDUCE_FLOAT32, 1) == OPTIREDUCE_FLOAT32 &&
		 or_wire_dtype(OPTIREDUCE_BFLOAT16, 0) == OPTIREDUCE_BFLOAT16 &&
		 or_wire_dtype(OPTIREDUCE_BFLOAT16, 1) == OPTIREDUCE_BFLOAT16 &&
		 or_wire_dtype(OPTIREDUCE_FLOAT16, 0) == OPTIREDUCE_FLOAT16 &&
		 or_wire_dtype(OPTIREDUCE_FLOAT16, 1) == OPTIREDUCE_BFLOAT16,
		 "wire dtypes");
	/* Narrowing: the sender keeps exactly what it sent (divided). */
	or_wire_narrow(w, v, 3, OPTIREDUCE_BFLOAT16, 2.0f);
	for (int i = 0; i < 3; i++)
		T_ASSERT(v[i] == or_bf16_to_f32(w[i]), "entry %d kept %g, sent %g",
			 i, v[i], or_bf16_to_f32(w[i]));
	T_ASSERT(w[0] == or_f32_to_bf16(1.0f / 3 / 2), "rounded the quotient");
	widen_case(OPTIREDUCE_BFLOAT16);
	widen_case(OPTIREDUCE_FLOAT16);
	/* Nothing missing: every entry widened. */
	{
		float b[4];
		uint16_t *h = (uint16_t *)b;

		for (int i = 0; i < 4; i++)
			h[i] = or_f32_to_f16((float)i + 0.5f);
		or_wire_widen(b, 4, OPTIREDUCE_FLOAT16, NULL, 0);
		for (int i = 0; i < 4; i++)
			T_ASSERT(b[i] == (float)i + 0.5f, "entry %d: %g", i, b[i]);
	}
	return 0;
}
