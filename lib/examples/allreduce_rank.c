// SPDX-License-Identifier: MIT
/*
 * One rank of an allreduce job driven by options (tools/demo,
 * selftests/allreduce_test.sh): the communicator comes from the
 * environment (OPTIREDUCE_*), the data is integer-valued and reproducible
 * on every rank, so each rank knows the exact sum and checks what the
 * library returned. It links the static library: it reports the kernel
 * transport's late posts, an internal counter (src/comm.h).
 *
 *   allreduce_rank [--calls N] [--count N] [--inflight K]
 *                  [--check exact|bounded|none] [--dtype float32|bfloat16]
 *                  [--common K] [--spread D] [--per-call] [--path kernel|tcp]
 *                  [--late-rank R --late-ms MS [--late-from N]]
 *                  [--ahead-rank R ... --ahead-ms MS --ahead-at N]
 *
 * Data of call c on rank r: x[i] = common(c, i) + spread(c, r, i), with
 * |common| <= K and |spread| <= D integers. Checks (why they hold: see
 * selftests/allreduce_test.sh):
 *   exact    every entry is the exact sum, and nothing was lost. Exact also
 *            with the Hadamard transform when count is a multiple of the
 *            block (4096: scale 1/64, a power of two) and size * (K + D)
 *            < 4096: every intermediate is then a float32 without rounding.
 *   bounded  without the transform, no entry is off by more than
 *            2 * size * D. The bounds that need every rank's compensated
 *            count are for the caller, from the per-call lines.
 * The last line (one per rank) says what happened, as key=value pairs:
 * the library's loss counters, the kernel's bytes_lost, tx_bytes and
 * rx_bytes in this network namespace during the run (from
 * /proc/net/optireduce; one rank per namespace), the bytes of
 * receives posted after their round had ended (late: the kernel never saw
 * them, the library counts them lost), heap allocations during the last
 * quarter of the calls, the errors.
 * --per-call adds a line per call:
 *   call SEQ DURATION_NS LOST EXPECTED PATH COMPENSATED HADAMARD INEXACT
 *        SUM_SQ_ERR SUM_SQ_EXACT MAX_ERR DEADLINE_NS START_MS QUEUED_NS
 * (START_MS: CLOCK_MONOTONIC when the call was started, comparable across
 * ranks on one machine)
 * --late-rank R --late-ms MS: rank R sleeps MS before starting each call,
 * so its peers are ahead of it by that much (a rank finishing its previous
 * call late); with --late-from N only from call N on (after warm-up: a
 * rank whose computation ran long, which its peers' bounds never saw).
 * --ahead-rank R --ahead-ms MS --ahead-at N: every rank but R sleeps MS
 * once, before call N, so that R starts it and the calls after it ahead
 * of all its peers. --ahead-rank may be given again: those ranks are then
 * ahead together, in step among themselves.
 * --dtype bfloat16: the buffers hold bfloat16 (16 bits on the wire); the
 * data is exact in it while size * (K + D) <= 256, and the checks read the
 * result widened to float32. The summary's bytes_sent is the library's
 * count of the payload sent to peers (stats.bytes_sent); incast and
 * incast_lowered are the stats' (the last lossy call's limit, and how
 * often dynamic incast lowered it), as is warmup_mbps (what the fastest
 * warm-up call sent per second, where rate control starts).
 * Exit status 0 when every check held.
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_count.h"	/* the last quarter of the calls: none */
#include "comm.h"		/* the kernel transport's late-post count */
#include "dtype.h"

struct opts {
	int calls, inflight, per_call, late_rank, late_ms, late_from;
	int ahead_ms, ahead_at;
	uint64_t ahead;			/* --ahead-rank, one bit each */
	size_t count;
	int common, spread;
	const char *check, *path;
	int dtype;
	float *widened;			/* bfloat16: the result, to check */
};

struct tally {
	unsigned long long inexact, failed_calls;
	unsigned long long whole_lost;	/* calls that lost every entry */
	unsigned long long some_lost;	/* calls that lost any */
	double max_err;
};

/* How one call came out on this rank. */
struct outcome {
	unsigned long long inexact;
	double sq_err, sq_sum, max_err;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	if (ms)
		nanosleep(&ts, NULL);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* An integer in [-m, m], a function of its arguments only. */
static int pick(uint64_t a, uint64_t b, int m)
{
	return (int)(mix(mix(a) ^ b) % (uint64_t)(2 * m + 1)) - m;
}

/* Cheap on purpose: every rank sums all ranks' values for every entry. */
static int spread(const struct opts *o, int call, int rank, size_t i)
{
	return (int)((i * 7 + (size_t)rank * 3 + (size_t)call) %
		     (size_t)(2 * o->spread + 1)) - o->spread;
}

static float value(const struct opts *o, int call, int rank, size_t i)
{
	return (float)(pick(call, i, o->common) + spread(o, call, rank, i));
}

/* Counters of this network namespace (/proc/net/optireduce), by name. */
#define KC_MAX	32
struct kcounters {
	int n;
	char name[KC_MAX][32];
	long long v[KC_MAX];
};

static void kernel_counters(struct kcounters *k)
{
	char line[256];
	FILE *f = fopen("/proc/net/optireduce", "r");

	k->n = 0;
	while (f && k->n < KC_MAX && fgets(line, sizeof(line), f))
		if (sscanf(line, "net %31s %lld", k->name[k->n], &k->v[k->n]) == 2)
			k->n++;
	if (f)
		fclose(f);
}

/* How much counter name grew from a to b; -1 if unknown. */
static long long kdelta(const struct kcounters *a, const struct kcounters *b,
			const char *name)
{
	for (int i = 0; i < b->n; i++)
		if (!strcmp(b->name[i], name))
			return i < a->n && !strcmp(a->name[i], name) ?
			       b->v[i] - a->v[i] : b->v[i];
	return -1;
}

/* Every counter that moved, but the byte and packet counts above. */
static void print_moved(const struct kcounters *a, const struct kcounters *b)
{
	for (int i = 0; i < b->n; i++) {
		long long d = kdelta(a, b, b->name[i]);

		if (d && !strstr(b->name[i], "bytes") &&
		    !strstr(b->name[i], "packets"))
			printf("k_%s=%lld ", b->name[i], d);
	}
}

/*
 * Compare buf with the exact sum of call c; 0 when what can be checked on
 * this rank alone holds. Bounds that need every rank's count of
 * compensated entries (another rank's compensation reaches this one
 * through phase 2) are checked by the caller of all ranks, from the
 * per-call lines.
 */
static int verify(const struct opts *o, int call, int size, const float *buf,
		  const struct optireduce_result *res, struct outcome *out)
{
	int hadamard = !!(res->flags & OPTIREDUCE_RES_HADAMARD);
	double entry_bound = 2.0 * size * o->spread;
	int bad = 0;

	*out = (struct outcome){ 0 };
	for (size_t i = 0; i < o->count; i++) {
		double want = (double)size * pick(call, i, o->common), err;

		for (int r = 0; r < size; r++)
			want += spread(o, call, r, i);
		err = fabs(buf[i] - want);
		out->inexact += err != 0;
		out->sq_err += err * err;
		out->sq_sum += want * want;
		if (err > out->max_err)
			out->max_err = err;
		/* Without the transform each entry stands alone; float
		 * rounding of the rescaled sum on top. */
		if (!hadamard && err > entry_bound + 1e-5 * (1 + fabs(want)))
			bad = 1;
	}
	if (!strcmp(o->check, "exact"))
		return out->inexact || res->lost;
	return !strcmp(o->check, "bounded") && bad;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "calls", 1, 0, 'n' }, { "count", 1, 0, 'c' },
		{ "inflight", 1, 0, 'i' }, { "check", 1, 0, 'k' },
		{ "common", 1, 0, 'K' }, { "spread", 1, 0, 'D' },
		{ "per-call", 0, 0, 'p' }, { "path", 1, 0, 't' },
		{ "late-rank", 1, 0, 'L' }, { "late-ms", 1, 0, 'M' },
		{ "late-from", 1, 0, 'F' }, { "ahead-rank", 1, 0, 'A' },
		{ "ahead-ms", 1, 0, 'B' }, { "ahead-at", 1, 0, 'C' },
		{ "dtype", 1, 0, 'T' }, { 0, 0, 0, 0 },
	};
	int ch;

	*o = (struct opts){ .calls = 10, .inflight = 1, .count = 65536,
			    .common = 200, .spread = 2, .check = "exact",
			    .late_rank = -1, .dtype = OPTIREDUCE_FLOAT32 };
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': o->calls = atoi(optarg); break;
		case 'c': o->count = strtoull(optarg, NULL, 0); break;
		case 'i': o->inflight = atoi(optarg); break;
		case 'k': o->check = optarg; break;
		case 'K': o->common = atoi(optarg); break;
		case 'D': o->spread = atoi(optarg); break;
		case 'p': o->per_call = 1; break;
		case 't': o->path = optarg; break;
		case 'L': o->late_rank = atoi(optarg); break;
		case 'M': o->late_ms = atoi(optarg); break;
		case 'F': o->late_from = atoi(optarg); break;
		case 'A':
			ch = atoi(optarg);
			if (ch < 0 || ch > 63)
				return -1;
			o->ahead |= 1ull << ch;
			break;
		case 'B': o->ahead_ms = atoi(optarg); break;
		case 'C': o->ahead_at = atoi(optarg); break;
		case 'T':
			if (strcmp(optarg, "float32") && strcmp(optarg, "bfloat16"))
				return -1;
			o->dtype = strcmp(optarg, "float32") ?
				   OPTIREDUCE_BFLOAT16 : OPTIREDUCE_FLOAT32;
			break;
		default: return -1;
		}
	}
	if (o->calls < 1 || o->inflight < 1 || o->inflight > 64 || !o->count ||
	    o->common < 0 || o->spread < 0 || o->late_ms < 0 ||
	    o->late_from < 0 ||
	    (o->late_ms && o->late_rank < 0) || o->ahead_ms < 0 ||
	    o->ahead_at < 0 || (o->ahead_ms && !o->ahead))
		return -1;
	return 0;
}

/* Calls [first, first + k), k at once; every one verified. */
static int batch(optireduce_comm *c, const struct opts *o, float **bufs,
		 int first, int k, int rank, int size, struct tally *t)
{
	optireduce_handle h[64];
	int64_t t_start[64];
	struct optireduce_result res;
	struct outcome oc;
	int rc;

	for (int b = 0; b < k; b++) {
		for (size_t i = 0; i < o->count; i++)
			if (o->dtype == OPTIREDUCE_BFLOAT16)
				((uint16_t *)bufs[b])[i] =
					or_f32_to_bf16(value(o, first + b, rank, i));
			else
				bufs[b][i] = value(o, first + b, rank, i);
		if (rank == o->late_rank && first + b >= o->late_from)
			sleep_ms(o->late_ms);
		if (!(o->ahead >> rank & 1) && first + b == o->ahead_at)
			sleep_ms(o->ahead_ms);
		t_start[b] = now_ns();
		rc = k == 1 ? optireduce_allreduce(c, bufs[b], o->count,
						   o->dtype, OPTIREDUCE_SUM,
						   &res) :
			      optireduce_allreduce_start(c, bufs[b], o->count,
							 o->dtype,
							 OPTIREDUCE_SUM, &h[b]);
		if (rc)
			return rc;
	}
	for (int b = 0; b < k; b++) {
		if (k > 1 && (rc = optireduce_allreduce_wait(c, h[b], &res)))
			return rc;
		if (o->dtype == OPTIREDUCE_BFLOAT16)
			or_dtype_load(o->widened, bufs[b], o->count, o->dtype);
		if (verify(o, first + b, size, o->dtype == OPTIREDUCE_BFLOAT16 ?
			   o->widened : bufs[b], &res, &oc)) {
			t->failed_calls++;
			fprintf(stderr, "rank %d: call %d fails the %s check "
				"(lost %llu, compensated %llu)\n", rank, first + b,
				o->check, (unsigned long long)res.lost,
				(unsigned long long)res.compensated);
		}
		t->inexact += oc.inexact;
		t->whole_lost += res.expected && res.lost == res.expected;
		t->some_lost += res.lost > 0;
		if (oc.max_err > t->max_err)
			t->max_err = oc.max_err;
		if (o->per_call)
			printf("call %llu %llu %llu %llu %s %llu %d %llu %.6g %.6g "
			       "%.6g %llu %lld %llu\n", (unsigned long long)res.seq,
			       (unsigned long long)res.duration_ns,
			       (unsigned long long)res.lost,
			       (unsigned long long)res.expected,
			       res.flags & OPTIREDUCE_RES_RELIABLE ? "reliable" :
								     "lossy",
			       (unsigned long long)res.compensated,
			       !!(res.flags & OPTIREDUCE_RES_HADAMARD), oc.inexact,
			       oc.sq_err, oc.sq_sum, oc.max_err,
			       (unsigned long long)res.deadline_ns,
			       (long long)(t_start[b] / 1000000),
			       (unsigned long long)res.queued_ns);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct optireduce_stats st;
	struct tally t = { 0 };
	int64_t rank = -1, size = 0, kind = 0;
	struct kcounters k0, k1;
	unsigned long long late;
	uint64_t sends_in_place, sends_async, sends_scatter;
	long steady = -1;
	optireduce_comm *c;
	struct opts o;
	float *bufs[64];
	int rc, bad;

	/* Line by line: what a rank said survives whatever ends it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	kernel_counters(&k0);
	if (parse(argc, argv, &o)) {
		fprintf(stderr, "usage: see the top of lib/examples/allreduce_rank.c\n");
		return 2;
	}
	rc = optireduce_comm_create_from_env(NULL, &c);
	if (rc) {
		fprintf(stderr, "create: %s\n", optireduce_strerror(rc));
		return 1;
	}
	optireduce_comm_get_option(c, OPTIREDUCE_OPT_RANK, &rank);
	optireduce_comm_get_option(c, OPTIREDUCE_OPT_SIZE, &size);
	optireduce_comm_get_option(c, OPTIREDUCE_OPT_TRANSPORT, &kind);
	for (int b = 0; b < o.inflight; b++)
		if (!(bufs[b] = malloc(o.count * sizeof(float))))
			return 1;
	if (!(o.widened = malloc(o.count * sizeof(float))))
		return 1;
	for (int call = 0; call < o.calls && !rc; call += o.inflight) {
		if (call >= o.calls - o.calls / 4 && steady < 0)
			steady = allocs;
		rc = batch(c, &o, bufs, call, o.inflight < o.calls - call ?
			   o.inflight : o.calls - call, rank, size, &t);
	}
	steady = steady < 0 ? -1 : allocs - steady;
	optireduce_comm_stats(c, &st);
	late = or_kernel_late_bytes(c->lossy);
	or_kernel_sends(c->lossy, &sends_in_place, &sends_async,
			&sends_scatter);
	/* After destroy: a receive still pending would have been counted. */
	optireduce_comm_destroy(c);
	kernel_counters(&k1);
	bad = rc || t.failed_calls ||
	      (o.path && strcmp(o.path, kind == OPTIREDUCE_TRANSPORT_KERNEL ?
				"kernel" : "tcp"));
	printf("rank=%lld size=%lld path=%s calls=%llu lossy=%llu reliable=%llu "
	       "lost=%llu expected=%llu compensated=%llu kernel_bytes_lost=%lld "
	       "kernel_tx_bytes=%lld kernel_rx_bytes=%lld late_bytes=%llu "
	       "steady_allocs=%ld ready_wait_ms=%.1f ready_missed=%llu "
	       "catch_up_calls=%llu whole_lost=%llu some_lost=%llu direct=%llu "
	       "deadline_ms=%.3f margin_pct=%llu "
	       "sends_in_place=%llu sends_async=%llu sends_scatter=%llu "
	       "inexact=%llu failed_calls=%llu max_err=%g error=%d "
	       "bytes_sent=%llu incast=%u incast_lowered=%u warmup_mbps=%llu ",
	       (long long)rank, (long long)size,
	       kind == OPTIREDUCE_TRANSPORT_KERNEL ? "kernel" : "tcp",
	       (unsigned long long)st.calls, (unsigned long long)st.calls_lossy,
	       (unsigned long long)st.calls_reliable,
	       (unsigned long long)st.entries_lost,
	       (unsigned long long)st.entries_expected,
	       (unsigned long long)st.entries_compensated,
	       kdelta(&k0, &k1, "bytes_lost"), kdelta(&k0, &k1, "tx_bytes"),
	       kdelta(&k0, &k1, "rx_bytes"), late, steady,
	       st.ready_wait_ns / 1e6, (unsigned long long)st.ready_missed,
	       (unsigned long long)st.catch_up_calls, t.whole_lost, t.some_lost,
	       (unsigned long long)st.calls_direct,
	       st.deadline_ns / 1e6, (unsigned long long)st.margin_pct,
	       (unsigned long long)sends_in_place,
	       (unsigned long long)sends_async,
	       (unsigned long long)sends_scatter, t.inexact,
	       t.failed_calls, t.max_err, rc,
	       (unsigned long long)st.bytes_sent, st.incast,
	       st.incast_lowered, (unsigned long long)st.warmup_mbps);
	print_moved(&k0, &k1);
	printf("ok=%d\n", !bad);
	if (rc)
		fprintf(stderr, "rank %lld: %s\n", (long long)rank,
			optireduce_strerror(rc));
	for (int b = 0; b < o.inflight; b++)
		free(bufs[b]);
	free(o.widened);
	return bad;
}
