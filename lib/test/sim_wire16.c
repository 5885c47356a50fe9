// SPDX-License-Identifier: MIT
/*
 * The 16-bit wire format (src/wire16.h) over the simulated lossy path:
 * - every data receive a rank posts is of the shard's entries times the
 *   wire type's size, and the results and stats say what was sent: half
 *   the bytes of the same call in float32;
 * - without the transform the result is exactly round(sum / div), rounded
 *   once, on every rank, for values a float32 sum holds exactly;
 * - compensation: a phase-1 packet lost gives exactly the rescaled sum of
 *   the others, a phase-2 packet lost exactly the receiver's own value
 *   times size / div;
 * - with the transform, the error against a float64 reference is within
 *   the bound of wire16.h, and a float16 call, whose transformed entries
 *   would overflow float16, crosses as bfloat16 and stays finite.
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "helpers.h"
#include "shard.h"

#define N	3		/* not a power of two: a mean rounds */
#define COUNT	3000		/* shards of 1000 entries */
#define PACKET	512		/* 256 16-bit entries */

struct watch {
	int bad;		/* receives of an unexpected length */
	int seen;
	size_t esize;
	int drop_phase, drop_src, drop_dst;	/* 0: drop nothing */
};

static void posted(void *arg, int rank, const struct or_recv *rx)
{
	struct watch *w = arg;
	int ph = or_tag_phase(rx->tag);
	size_t want;

	if (ph == OR_PHASE_SCATTER)
		want = or_shard_len(COUNT, N, rank);
	else if (ph == OR_PHASE_GATHER)
		want = or_shard_len(COUNT, N, rx->src);
	else
		return;
	/* Every rank's thread posts: count atomically (a plain ++ from
	 * three threads lost a count now and then).
	 */
	__atomic_add_fetch(&w->seen, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&w->bad, rx->len != want * w->esize,
			   __ATOMIC_RELAXED);
}

static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	const struct watch *w = arg;

	(void)npkts;
	return w->drop_phase && (int)or_tag_phase(tag) == w->drop_phase &&
	       src == w->drop_src && dst == w->drop_dst && pkt == 1;
}

static float widen(int dt, uint16_t h)
{
	return dt == OPTIREDUCE_BFLOAT16 ? or_bf16_to_f32(h) : or_f16_to_f32(h);
}

static uint16_t narrow(int dt, float f)
{
	return dt == OPTIREDUCE_BFLOAT16 ? or_f32_to_bf16(f) : or_f32_to_f16(f);
}

/* Values of exponents -4 .. 3 and 8 significant bits: sums of N of them
 * are exact in float32, so only the final rounding is left. */
static float value(int r, size_t i, uint64_t salt)
{
	uint64_t h = (r * 1000003ull + i) * 0x9e3779b97f4a7c15ull + salt;
	float v = (float)(int)((h >> 20) % 255 + 1) / 128;

	v = ldexpf(v, (int)((h >> 40) % 8) - 4);
	return (h >> 50) & 1 ? -v : v;
}

/* One call on a fresh world; the float32 twin first: same bytes halved. */
static void call(struct watch *wt, int hadamard, int dt, int op,
		 uint16_t *bufs[N], struct optireduce_result res[N],
		 uint64_t salt, float scale)
{
	struct or_sim_loss loss = { .packet = PACKET, .drop = drop,
				    .posted = posted, .arg = wt };
	struct optireduce_config cfg;
	struct optireduce_stats st;
	struct t_world w;
	float *f32[N];
	struct optireduce_result r32[N];

	t_lossy_config(&cfg, hadamard);
	t_world_init(&w, N, &cfg, &loss);
	wt->esize = 4;
	for (int r = 0; r < N; r++) {
		f32[r] = malloc(COUNT * 4);
		for (size_t i = 0; i < COUNT; i++)
			f32[r][i] = value(r, i, salt) * scale;
	}
	t_world_allreduce(&w, (void **)f32, COUNT, OPTIREDUCE_FLOAT32, op, r32);
	wt->esize = 2;
	for (int r = 0; r < N; r++)
		for (size_t i = 0; i < COUNT; i++)
			bufs[r][i] = narrow(dt, value(r, i, salt) * scale);
	t_world_allreduce(&w, (void **)bufs, COUNT, dt, op, res);
	for (int r = 0; r < N; r++) {
		T_OK(optireduce_comm_stats(w.comm[r], &st));
		T_ASSERT(r32[r].wire_dtype == OPTIREDUCE_FLOAT32 &&
			 res[r].wire_dtype == (unsigned int)(hadamard ?
				OPTIREDUCE_BFLOAT16 : dt),
			 "rank %d: wire dtypes %u %u", r, r32[r].wire_dtype,
			 res[r].wire_dtype);
		/* Phase 1: the two other shards; phase 2: its own to two. */
		T_ASSERT(res[r].sent_bytes == 4 * 1000 * 2 &&
			 r32[r].sent_bytes == 2 * res[r].sent_bytes,
			 "rank %d: sent %llu and %llu bytes", r,
			 (unsigned long long)res[r].sent_bytes,
			 (unsigned long long)r32[r].sent_bytes);
		T_ASSERT(st.bytes_sent == res[r].sent_bytes + r32[r].sent_bytes,
			 "rank %d: stats say %llu bytes sent", r,
			 (unsigned long long)st.bytes_sent);
		free(f32[r]);
	}
	t_world_fini(&w);
	/* Each rank posts 2 phase-1 and 2 phase-2 receives per call. */
	T_ASSERT(wt->seen == 2 * N * 4 && !wt->bad,
		 "%d of %d data receives of the wrong length", wt->bad,
		 wt->seen);
	wt->seen = 0;
}

static void exact(int dt, int op)
{
	struct watch wt = { 0 };
	struct optireduce_result res[N];
	uint16_t *bufs[N];
	float div = op == OPTIREDUCE_MEAN ? N : 1;

	for (int r = 0; r < N; r++)
		bufs[r] = malloc(COUNT * 2);
	call(&wt, 0, dt, op, bufs, res, 1, 1);
	for (int r = 0; r < N; r++) {
		T_ASSERT(!res[r].lost, "rank %d lost entries", r);
		for (size_t i = 0; i < COUNT; i++) {
			float sum = 0;

			for (int q = 0; q < N; q++)
				sum += widen(dt, narrow(dt, value(q, i, 1)));
			T_ASSERT(bufs[r][i] == narrow(dt, sum / div),
				 "dtype %d op %d rank %d entry %zu: %g, want %g",
				 dt, op, r, i, widen(dt, bufs[r][i]),
				 widen(dt, narrow(dt, sum / div)));
		}
	}
	for (int r = 0; r < N; r++)
		free(bufs[r]);
}

/*
 * Packet 1 (entries 256 .. 511 of the message) of src -> dst lost in phase
 * ph: phase 1 from rank 0 to rank 1 (rank 1's shard, entries 1256 ..
 * 1511 miss rank 0's contribution), or phase 2 from rank 2 to rank 0
 * (rank 0 estimates those entries of shard 2, 2256 .. 2511).
 */
static void compensated(int dt, int op, int ph)
{
	struct watch wt = { .drop_phase = ph, .drop_src = ph == 1 ? 0 : 2,
			    .drop_dst = ph == 1 ? 1 : 0 };
	struct optireduce_result res[N];
	uint16_t *bufs[N];
	float div = op == OPTIREDUCE_MEAN ? N : 1;
	size_t lo = ph == 1 ? 1256 : 2256;
	int hit = wt.drop_dst;

	for (int r = 0; r < N; r++)
		bufs[r] = malloc(COUNT * 2);
	call(&wt, 0, dt, op, bufs, res, 2, 1);
	for (int r = 0; r < N; r++) {
		/* A phase-1 loss reaches every replica; a phase-2 one only
		 * the rank that lost it. The float32 twin lost the same
		 * packet index, other entries: compare the 16-bit call. */
		int affected = ph == 1 || r == hit;

		T_ASSERT(res[r].lost == (r == hit ? 256u : 0u) &&
			 res[r].compensated == res[r].lost,
			 "phase %d: rank %d lost %llu", ph, r,
			 (unsigned long long)res[r].lost);
		for (size_t i = 0; i < COUNT; i++) {
			float x[N], sum = 0, want;

			for (int q = 0; q < N; q++) {
				x[q] = widen(dt, narrow(dt, value(q, i, 2)));
				sum += x[q];
			}
			want = sum / div;
			if (affected && i >= lo && i < lo + 256)
				want = ph == 1 ?
					(sum - x[0]) * ((float)N / (N - 1)) / div :
					x[0] * ((float)N / div);
			T_ASSERT(bufs[r][i] == narrow(dt, want),
				 "phase %d dtype %d op %d rank %d entry %zu: %g, want %g",
				 ph, dt, op, r, i, widen(dt, bufs[r][i]),
				 widen(dt, narrow(dt, want)));
		}
	}
	for (int r = 0; r < N; r++)
		free(bufs[r]);
}

/* scale: a float16 call of large values under the transform. */
static void bounded(int dt, int op, float scale)
{
	static double x[N][COUNT], got[COUNT];
	const double *xp[N];
	struct watch wt = { 0 };
	struct optireduce_result res[N];
	uint16_t *bufs[N];

	for (int r = 0; r < N; r++)
		bufs[r] = malloc(COUNT * 2);
	call(&wt, 1, dt, op, bufs, res, 3, scale);
	for (int q = 0; q < N; q++) {
		for (size_t i = 0; i < COUNT; i++)
			x[q][i] = widen(dt, narrow(dt, value(q, i, 3) * scale));
		xp[q] = x[q];
	}
	for (int r = 0; r < N; r++) {
		T_ASSERT(res[r].flags & OPTIREDUCE_RES_HADAMARD, "no transform");
		T_ASSERT(!memcmp(bufs[r], bufs[0], COUNT * 2),
			 "rank %d's replica differs", r);
		for (size_t i = 0; i < COUNT; i++)
			got[i] = widen(dt, bufs[r][i]);
		t_check_wire16(got, xp, N, COUNT, op, res[r].wire_dtype, dt,
			       "sim_wire16, hadamard");
	}
	for (int r = 0; r < N; r++)
		free(bufs[r]);
}

int main(void)
{
	const int dts[] = { OPTIREDUCE_BFLOAT16, OPTIREDUCE_FLOAT16 };

	for (int d = 0; d < 2; d++)
		for (int op = OPTIREDUCE_SUM; op <= OPTIREDUCE_MEAN; op++) {
			exact(dts[d], op);
			compensated(dts[d], op, 1);
			compensated(dts[d], op, 2);
			bounded(dts[d], op, 1);
		}
	bounded(OPTIREDUCE_FLOAT16, OPTIREDUCE_SUM, 1000);
	return 0;
}
