/* SPDX-License-Identifier: MIT */
#ifndef OR_TAR_H
#define OR_TAR_H

/*
 * Transpose AllReduce, independent of any transport: the round schedule and
 * the phase-1 reduction. engine.c drives it over a transport.
 *
 * Phase 1 (scatter-reduce) with incast I: in round k rank r sends shard
 * (r + d) % n to rank (r + d) % n for d in k*I+1 .. min((k+1)*I, n-1), and
 * receives from (r - d) % n: every receiver hears at most I senders at
 * once; ceil((n-1)/I) rounds.
 *
 * Phase 2 (all-gather) uses send-to-all (multicast, or fan-out on TCP):
 * with I >= n-1 every owner sends at once (one round); otherwise owners go
 * in groups of I (owner j in round j / I, ceil(n/I) rounds), again at most
 * I senders per receiver.
 *
 * A rank starts round k + 1 once the receives and sends of round k are
 * complete (or ended by their deadline).
 */

#include <stddef.h>

#include "compensate.h"

struct or_sched {
	unsigned int n;		/* ranks */
	unsigned int incast;	/* 1 .. n-1 (0 when n == 1) */
	unsigned int r1;	/* phase-1 rounds */
	unsigned int r2;	/* phase-2 rounds */
};

/* incast 0 or >= n-1: everybody at once. */
void or_sched_init(struct or_sched *s, unsigned int n, unsigned int incast);
/* Phase-1 round of the message src -> dst (src != dst). */
unsigned int or_sched_p1_round(const struct or_sched *s, unsigned int src,
			       unsigned int dst);
/* Ranks r sends to (recv = 0) or receives from (recv = 1) in phase-1 round
 * k; returns how many were written to out[] (at most incast). */
unsigned int or_sched_p1_peers(const struct or_sched *s, unsigned int r,
			       unsigned int k, int recv, unsigned int *out);
/* Phase-2 round (0-based) in which owner j sends its reduced shard. */
unsigned int or_sched_p2_round(const struct or_sched *s, unsigned int j);

/*
 * acc holds the owner's own shard; add every received contribution outside
 * its missing ranges, then compensate (see compensate.h). scratch needs two
 * events per missing range of all contributions.
 */
void or_tar_reduce(float *acc, size_t len, const struct or_contrib *c,
		   unsigned int nc, unsigned int n, int compensate,
		   struct or_comp_event *scratch, struct or_comp_stats *st);

#endif /* OR_TAR_H */
