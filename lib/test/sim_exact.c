// SPDX-License-Identifier: MIT
/* In-process ranks over the simulated transport, nothing lost: exact sums
 * and means for N = 1..8, 16 and 64, counts below, at and above N, every
 * dtype, on the reliable path and on the lossy path (Hadamard off), with
 * several incast values; with Hadamard on the result is within rounding
 * (16-bit types: within the bound of src/wire16.h, replicas identical).
 * Also with every lossy call waiting for its receivers' ready signals
 * (ready_kb 0). */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "helpers.h"

static float round_to(int dtype, float v)
{
	if (dtype == OPTIREDUCE_BFLOAT16)
		return or_bf16_to_f32(or_f32_to_bf16(v));
	if (dtype == OPTIREDUCE_FLOAT16)
		return or_f16_to_f32(or_f32_to_f16(v));
	return v;
}

static float get(const void *buf, int dtype, size_t i)
{
	if (dtype == OPTIREDUCE_BFLOAT16)
		return or_bf16_to_f32(((const uint16_t *)buf)[i]);
	if (dtype == OPTIREDUCE_FLOAT16)
		return or_f16_to_f32(((const uint16_t *)buf)[i]);
	return ((const float *)buf)[i];
}

static void put(void *buf, int dtype, size_t i, float v)
{
	if (dtype == OPTIREDUCE_BFLOAT16)
		((uint16_t *)buf)[i] = or_f32_to_bf16(v);
	else if (dtype == OPTIREDUCE_FLOAT16)
		((uint16_t *)buf)[i] = or_f32_to_f16(v);
	else
		((float *)buf)[i] = v;
}

#define MAX_N	64	/* t_world's limit */

/* A 16-bit call under the transform rounds in the Hadamard domain: its
 * result is within the bound of src/wire16.h, on every rank alike. */
static void check_wire16(void **bufs, int n, size_t count, int dt, int op,
			 uint64_t salt, float scale,
			 const struct optireduce_result *res)
{
	static double x[MAX_N][4099], got[4099];
	const double *xp[MAX_N];

	for (int q = 0; q < n; q++) {
		for (size_t i = 0; i < count; i++)
			x[q][i] = roundf(t_value(q, i, salt) * scale);
		xp[q] = x[q];
	}
	for (int r = 0; r < n; r++) {
		T_ASSERT(res[r].lost == 0 && res[r].flags & OPTIREDUCE_RES_HADAMARD,
			 "rank %d: result", r);
		T_ASSERT(!memcmp(bufs[r], bufs[0], count * 2),
			 "rank %d's replica differs from rank 0's", r);
		for (size_t i = 0; i < count; i++)
			got[i] = get(bufs[r], dt, i);
		t_check_wire16(got, xp, n, count, op, res[r].wire_dtype, dt,
			       "sim_exact, hadamard");
	}
}

static unsigned int ready_kb = 4096;

static void run(int n, int lossy, int hadamard, unsigned int incast)
{
	struct optireduce_config cfg;
	struct or_sim_loss none = { .packet = 512 };
	struct optireduce_result res[MAX_N];
	struct t_world w;
	const size_t counts[] = { 1, 2, 3, 7, 8, 9, 1000, 4099 };
	const int dtypes[] = { OPTIREDUCE_FLOAT32, OPTIREDUCE_BFLOAT16, OPTIREDUCE_FLOAT16 };
	void *bufs[MAX_N];
	uint64_t salt = 0;

	t_config(&cfg);
	cfg.warmup_calls = 0;
	cfg.hadamard = hadamard ? OPTIREDUCE_HADAMARD_ON : OPTIREDUCE_HADAMARD_OFF;
	cfg.incast = incast;
	cfg.ready_kb = ready_kb;
	t_world_init(&w, n, &cfg, lossy ? &none : NULL);
	for (int r = 0; r < n; r++)
		bufs[r] = malloc(4099 * 4);
	for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
	for (size_t di = 0; di < 3; di++)
	for (int op = OPTIREDUCE_SUM; op <= OPTIREDUCE_MEAN; op++) {
		size_t count = counts[ci];
		int dt = dtypes[di];
		/* 16-bit types: small values, so inputs are exact. */
		float scale = dt == OPTIREDUCE_FLOAT32 ? 1 : 1.0f / 16;

		salt++;
		for (int r = 0; r < n; r++)
			for (size_t i = 0; i < count; i++)
				put(bufs[r], dt, i, roundf(t_value(r, i, salt) * scale));
		t_world_allreduce(&w, bufs, count, dt, op, res);
		if (hadamard && n > 1 && dt != OPTIREDUCE_FLOAT32) {
			check_wire16(bufs, n, count, dt, op, salt, scale, res);
			continue;
		}
		for (int r = 0; r < n; r++) {
			T_ASSERT(res[r].count == count && res[r].lost == 0 &&
				 res[r].compensated == 0, "result counters");
			T_ASSERT(!!(res[r].flags & OPTIREDUCE_RES_RELIABLE) == !lossy,
				 "path flags %x", res[r].flags);
			T_ASSERT(!!(res[r].flags & OPTIREDUCE_RES_HADAMARD) ==
				 (hadamard && n > 1), "hadamard flag");
			for (size_t i = 0; i < count; i++) {
				float sum = 0, want, got = get(bufs[r], dt, i);

				for (int q = 0; q < n; q++)
					sum += roundf(t_value(q, i, salt) * scale);
				want = round_to(dt, op == OPTIREDUCE_MEAN ? sum / n : sum);
				if (hadamard && n > 1)
					T_ASSERT(fabsf(got - want) <= 1e-3f * (1 + fabsf(want)) ||
						 round_to(dt, got) == want,
						 "n %d count %zu entry %zu: %g vs %g", n,
						 count, i, got, want);
				else
					T_ASSERT(got == want,
						 "n %d rank %d count %zu dtype %d op %d entry %zu: %g vs %g",
						 n, r, count, dt, op, i, got, want);
			}
		}
	}
	for (int r = 0; r < n; r++)
		free(bufs[r]);
	t_world_fini(&w);
}

int main(void)
{
	for (int n = 1; n <= 8; n++) {
		run(n, 0, 0, 0);
		run(n, 1, 0, 0);
	}
	/* Incast: rounds of at most I senders per receiver. */
	for (unsigned int incast = 1; incast <= 3; incast++) {
		run(8, 1, 0, incast);
		run(5, 0, 0, incast);
	}
	run(3, 1, 1, 0);
	run(4, 0, 1, 0);
	/* Ready signals on every lossy call: same results. */
	ready_kb = 0;
	run(2, 1, 0, 0);
	run(5, 1, 0, 0);
	run(8, 1, 0, 2);
	run(4, 1, 1, 0);
	/* The ranks of a training job: 64, each way, and with incast. */
	ready_kb = 4096;
	run(16, 1, 0, 0);
	run(MAX_N, 0, 0, 0);
	run(MAX_N, 1, 0, 0);
	run(MAX_N, 1, 0, 8);
	return 0;
}
