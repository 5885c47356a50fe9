// SPDX-License-Identifier: MIT
/*
 * How a lossy call's bound is shared among its rounds. The bound holds
 * the whole call; each round may run until the bound less the typical
 * time (t_C per round, the receives' early-timeout hint) of the rounds
 * still to come, and never ends before an even share of the bound would
 * have ended it. So the round that draws the tail gets the slack, not
 * only half of it: with an even split a phase-1 message a little past
 * half the bound was cut even when phase 2 then took its usual time.
 *
 * The warm-up calls are slow (one rank starts each SKEW_MS late, so the
 * agreed t_B is about SKEW_MS) and the lossy calls after them fast, so
 * t_C falls far below t_B and the two rules give different deadlines.
 * Every receive's deadline is recorded as posted; within one call and
 * rank, the deadlines of two rounds differ by what the rule says. The
 * first lossy call is left out: it is gated, so its receives are posted
 * a minute away and moved to the rule's deadlines later.
 */
#include <pthread.h>
#include <string.h>

#include "helpers.h"
#include "tar.h"

#define MAXN	4
#define COUNT	3000
#define WARMUP	8
#define CALLS	(WARMUP + 24)
#define SKEW_MS	30

struct seen {
	int64_t deadline, early;
	int posted;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* [rank][call][phase - 1][src] */
static struct seen seen[MAXN][CALLS][2][MAXN];

static void posted(void *arg, int rank, const struct or_recv *rx)
{
	uint64_t seq = or_tag_seq(rx->tag);
	unsigned int ph = or_tag_phase(rx->tag);
	struct seen *s;

	(void)arg;
	if (seq >= CALLS || (ph != OR_PHASE_SCATTER && ph != OR_PHASE_GATHER))
		return;
	pthread_mutex_lock(&lock);
	s = &seen[rank][seq][ph - 1][rx->src];
	s->deadline = rx->deadline_ns;
	s->early = rx->early_ns;
	s->posted = 1;
	pthread_mutex_unlock(&lock);
}

/* The rule, from the call's base: round r of R ends here. */
static int64_t rule(int64_t bound, int64_t early, unsigned int r,
		    unsigned int rounds)
{
	int64_t even = (int64_t)(r + 1) * (bound / rounds);
	int64_t rest = bound - (int64_t)(rounds - 1 - r) * early;

	return rest > even ? rest : even;
}

static void run(int n, unsigned int incast)
{
	struct or_sim_loss loss = { .packet = 1000, .posted = posted };
	struct optireduce_config cfg;
	struct optireduce_result res[MAXN];
	static float bufs[MAXN][COUNT];
	void *b[MAXN];
	struct or_sched s;
	struct t_world w;
	int later = 0;

	memset(seen, 0, sizeof(seen));
	t_config(&cfg);
	cfg.warmup_calls = WARMUP;
	cfg.direct_kb = 0;	/* the Transpose AllReduce, round by round */
	cfg.incast = incast;
	cfg.loss_threshold_ppm = 1000000;
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	or_sched_init(&s, n, incast);
	t_world_init(&w, n, &cfg, &loss);
	for (int r = 0; r < n; r++)
		b[r] = bufs[r];
	for (int call = 0; call < CALLS; call++) {
		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce_late(&w, b, COUNT, OPTIREDUCE_FLOAT32,
				       OPTIREDUCE_SUM, res,
				       call < WARMUP ? SKEW_MS : 0);
		/* The first lossy call is gated (engine.c, gated()): its
		 * receives are posted a minute away, then retimed. */
		if (call <= WARMUP)
			continue;
		for (int r = 0; r < n; r++) {
			unsigned int rounds = s.r1 + s.r2, last = rounds;
			int64_t bound = (int64_t)res[r].deadline_ns, ref = 0;
			int64_t early = -1;

			T_ASSERT(!(res[r].flags & OPTIREDUCE_RES_RELIABLE),
				 "n=%d call %d rank %d: reliable", n, call, r);
			/* Every receive against the rank's last phase-2 one. */
			for (int src = 0; src < n; src++) {
				struct seen *g = &seen[r][call][1][src];
				unsigned int rd = s.r1 + or_sched_p2_round(&s, src);

				if (src == r || !g->posted)
					continue;
				if (last == rounds || rd > last) {
					last = rd;
					ref = g->deadline;
				}
				early = g->early;
			}
			T_ASSERT(last != rounds && early >= 0,
				 "n=%d call %d rank %d: no phase-2 receive seen",
				 n, call, r);
			for (int ph = 0; ph < 2; ph++) {
				for (int src = 0; src < n; src++) {
					struct seen *g = &seen[r][call][ph][src];
					unsigned int rd;
					int64_t want, got;

					if (src == r)
						continue;
					T_ASSERT(g->posted, "n=%d call %d rank %d: no phase-%d receive from %d",
						 n, call, r, ph + 1, src);
					rd = ph ? s.r1 + or_sched_p2_round(&s, src) :
						  or_sched_p1_round(&s, src, r);
					want = rule(bound, early, last, rounds) -
					       rule(bound, early, rd, rounds);
					got = ref - g->deadline;
					T_ASSERT(got == want,
						 "n=%d call %d rank %d: round %u ends %lld ns before round %u, the rule says %lld (bound %lld, t_C per round %lld)",
						 n, call, r, rd, (long long)got, last,
						 (long long)want, (long long)bound,
						 (long long)early);
					/* Later than an even share of the bound. */
					later += rd < last &&
						 got < (int64_t)(last - rd) * (bound / rounds);
				}
			}
		}
	}
	/* Once t_C has fallen (it starts from the slow warm-up calls), the
	 * earlier rounds end later than an even split would end them. */
	T_ASSERT(later > 0, "n=%d incast %u: no round ran past its even share",
		 n, incast);
	printf("# n=%d incast %u: %d receives ran past their even share of the bound\n",
	       n, incast, later);
	t_world_fini(&w);
}

int main(void)
{
	run(3, 0);	/* one round per phase */
	run(4, 1);	/* three phase-1 rounds, four phase-2 ones */
	return 0;
}
