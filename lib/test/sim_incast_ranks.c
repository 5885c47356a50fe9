// SPDX-License-Identifier: MIT
/*
 * Dynamic incast through the engine: eight ranks whose ports take two
 * senders at once; from three on, half of every phase-1 message's packets
 * are lost (the simulated fabric learns a call's limit from the rounds of
 * its sender's phase-1 receives: every round has a deadline of its own).
 *
 * - With OPTIREDUCE_CFG_INCAST_DYNAMIC every rank's result carries the
 *   same limit for every call, the limit falls below 3, the stats count
 *   the same lowerings on every rank, and the last 40 calls lose less
 *   than half of what the same calls lose with the fixed limit (the
 *   rest: probes of 3, ever rarer; sim_incast_decide follows them
 *   further).
 * - Without it (the default) every lossy call runs at 7.
 * - OPTIREDUCE_OPT_INCAST_DYNAMIC reads the flag back and takes 0 or 1;
 *   OPTIREDUCE_INCAST_DYNAMIC=1 sets it, a word it does not know fails.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util.h"

#define N	8
#define COUNT	(8 * 1024)
#define CALLS	160
#define WARMUP	3
#define LAST	40
#define MAXR	8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* [rank][call]: distinct phase-1 deadlines, i.e. the call's rounds */
static int64_t deadlines[N][CALLS][MAXR];
static unsigned int rounds[N][CALLS];

static void posted(void *arg, int rank, const struct or_recv *rx)
{
	uint64_t seq = or_tag_seq(rx->tag);
	unsigned int *r;

	(void)arg;
	if (seq >= CALLS || or_tag_phase(rx->tag) != OR_PHASE_SCATTER)
		return;
	pthread_mutex_lock(&lock);
	r = &rounds[rank][seq];
	for (unsigned int i = 0; i < *r; i++)
		if (deadlines[rank][seq][i] == rx->deadline_ns)
			goto out;
	if (*r < MAXR)
		deadlines[rank][seq][(*r)++] = rx->deadline_ns;
out:
	pthread_mutex_unlock(&lock);
}

/* A sender posts its own phase-1 receives before it sends: its rounds
 * are known here. Three rounds or fewer: three senders or more at once. */
static int drop(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		uint64_t npkts)
{
	uint64_t seq = or_tag_seq(tag);
	unsigned int r;

	(void)arg;
	(void)npkts;
	if (seq >= CALLS || or_tag_phase(tag) != OR_PHASE_SCATTER)
		return 0;
	pthread_mutex_lock(&lock);
	r = rounds[src][seq];
	pthread_mutex_unlock(&lock);
	return r && r <= 3 && or_mix64(tag ^ (uint64_t)src << 8 ^
				       (uint64_t)dst << 16 ^ pkt << 24) & 1;
}

static uint64_t run(int dynamic, struct optireduce_result (*res)[N])
{
	struct or_sim_loss loss = { .packet = 1024, .drop = drop,
				    .posted = posted };
	struct optireduce_config cfg;
	struct optireduce_stats st[N];
	static float bufs[N][COUNT];
	uint64_t lost = 0;
	void *b[N];
	struct t_world w;
	int64_t v;

	memset(rounds, 0, sizeof(rounds));
	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.direct_kb = 0;
	cfg.loss_threshold_ppm = 1000000;	/* the safeguard stays out */
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	if (dynamic)
		cfg.flags |= OPTIREDUCE_CFG_INCAST_DYNAMIC;
	t_world_init(&w, N, &cfg, &loss);
	T_ASSERT(!optireduce_comm_get_option(w.comm[0],
					     OPTIREDUCE_OPT_INCAST_DYNAMIC, &v) &&
		 v == dynamic, "option reads %lld", (long long)v);
	T_ASSERT(optireduce_comm_set_option(w.comm[0],
					    OPTIREDUCE_OPT_INCAST_DYNAMIC, 2) ==
		 -EINVAL, "option takes 2");
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++) {
		t_world_fill_sum(&w, b, COUNT, call, res[call]);
		for (int r = 0; r < N; r++) {
			T_ASSERT(res[call][r].incast == res[call][0].incast,
				 "call %d: rank %d at %u, rank 0 at %u", call,
				 r, res[call][r].incast, res[call][0].incast);
			if (call >= CALLS - LAST)
				lost += res[call][r].lost;
		}
		if (!dynamic && call >= WARMUP)
			T_ASSERT(res[call][0].incast == N - 1,
				 "fixed: call %d at %u", call,
				 res[call][0].incast);
	}
	for (int r = 0; r < N; r++) {
		T_ASSERT(!optireduce_comm_stats(w.comm[r], &st[r]), "stats");
		T_ASSERT(st[r].incast == res[CALLS - 1][r].incast &&
			 st[r].incast_lowered == st[0].incast_lowered,
			 "rank %d: stats incast %u lowered %u", r,
			 st[r].incast, st[r].incast_lowered);
	}
	T_ASSERT(dynamic ? st[0].incast_lowered > 0 : !st[0].incast_lowered,
		 "lowered %u times", st[0].incast_lowered);
	t_world_fini(&w);
	return lost;
}

/* A one-rank communicator from the environment: the flag as the option
 * reads it back, or the error. */
static int from_env(const char *value, int64_t *v)
{
	optireduce_comm *c;
	int rc;

	setenv("OPTIREDUCE_QUIET", "1", 1);
	setenv("OPTIREDUCE_RANK", "0", 1);
	setenv("OPTIREDUCE_SIZE", "1", 1);
	setenv("OPTIREDUCE_PEERS", "127.0.0.1:0", 1);
	setenv("OPTIREDUCE_TRANSPORT", "tcp", 1);
	setenv("OPTIREDUCE_INCAST_DYNAMIC", value, 1);
	rc = optireduce_comm_create_from_env(NULL, &c);
	if (rc)
		return rc;
	rc = optireduce_comm_get_option(c, OPTIREDUCE_OPT_INCAST_DYNAMIC, v);
	optireduce_comm_destroy(c);
	return rc;
}

int main(void)
{
	static struct optireduce_result res[CALLS][N];
	uint64_t fixed, dyn;
	unsigned int least = N;
	int64_t v = -1;
	int rc;

	rc = from_env("1", &v);
	T_ASSERT(!rc && v == 1, "OPTIREDUCE_INCAST_DYNAMIC=1: %d, %lld", rc,
		 (long long)v);
	rc = from_env("0", &v);
	T_ASSERT(!rc && v == 0, "OPTIREDUCE_INCAST_DYNAMIC=0: %d, %lld", rc,
		 (long long)v);
	T_ASSERT(from_env("yes", &v) == -EINVAL, "OPTIREDUCE_INCAST_DYNAMIC=yes");

	fixed = run(0, res);
	dyn = run(1, res);
	for (int call = WARMUP; call < CALLS; call++)
		if (res[call][0].incast < least)
			least = res[call][0].incast;
	printf("last %d calls lost %llu entries at a fixed limit, %llu with "
	       "dynamic incast (lowest limit %u)\n", LAST,
	       (unsigned long long)fixed, (unsigned long long)dyn, least);
	T_ASSERT(least < 3, "the limit never fell below 3");
	T_ASSERT(fixed > 0 && dyn * 2 < fixed, "lost %llu, fixed %llu",
		 (unsigned long long)dyn, (unsigned long long)fixed);
	printf("ok\n");
	return 0;
}
