/* SPDX-License-Identifier: MIT */
#ifndef OR_ESTIMATOR_H
#define OR_ESTIMATOR_H

/*
 * Deadline estimation (the library's side of the deadline rule; see
 * transport.h for the kernel's side).
 *
 *   t_B  hard bound of a lossy call: the 95th percentile of the completion
 *        times of the most recent reliable calls (warm-up, then every call
 *        that falls back) of the same size class.
 *   t_C  moving average (EWMA, 1/8) of the completion times of all calls of
 *        the size class; handed to the kernel as its early-timeout hint.
 *
 * Size classes are powers of two of the payload bytes. A sample of b bytes
 * taking t counts for a call of B > b bytes as t * B / b (bandwidth-bound,
 * conservative); for B <= b as t (latency-bound, conservative). A class with
 * no sample borrows from the nearest one that has. Before any sample the
 * bound is OR_EST_DEFAULT_NS; it is never below OR_EST_FLOOR_NS, so timer
 * and scheduling noise on a fast link cannot cut every call short.
 * Completion time is measured from the moment the call became active (its
 * predecessors done), not from when it was started.
 *
 * The margin. The bound given to a lossy call is t_B times a margin that
 * follows late data: bytes that arrived (or whose receive was posted)
 * after their receive's deadline had ended it, or whose sender was still
 * sending when it did (transport.h, late()). Those are losses a longer
 * deadline would have avoided, unlike drops on the wire, which no deadline
 * recovers. After each lossy call: more than OR_EST_LATE_PPM of its bytes
 * late widens the margin by OR_EST_MARGIN_UP, or by 1 / (1 - f) where a
 * share f of its bytes came late and that is more (up to
 * OR_EST_MARGIN_MAX); otherwise it shrinks by OR_EST_MARGIN_DOWN, never
 * below 1. The wider step is what the deadline would have needed had the
 * data kept arriving at the pace it did: a call that moves from a fast
 * reliable path to a slower paced one (rate control on a congested
 * fabric, where TCP's warm-up took half the time) is late by half its
 * bytes once, not by a little in each of the calls the 1.25 steps would
 * take to get there. So where the
 * reliable path's timing predicts the lossy path's (the paper's setting)
 * the margin stays 1 and the bound is t_B; where it does not (a noisy or
 * emulated host, a receiver that runs behind, small calls on which the
 * kernel path is slower than TCP), the margin settles where the up and
 * down steps balance (late shares under a fifth, so steps of 1.25): a
 * share ln(1/DOWN) / (ln UP + ln(1/DOWN)) of the lossy calls late, 2.2%,
 * without a per-machine constant. For a small call
 * one late message is a sixth of a rank's entries (4 ranks), so that is
 * about 0.4% of entries. With DOWN 0.95 the balance was at 19% of calls:
 * 4-rank 64 KiB calls in the calm guest lost 2-5% of their entries once
 * t_B came from 20 warm-up calls (the 95th percentile of TCP's times, below
 * the kernel path's typical time there). Fast up, slow down: a late call
 * costs 45 calls of a wider bound (ln 1.25 / ln(1/0.995)).
 *
 * Agreement. Each rank's t_B comes from its own few warm-up calls, and on a
 * noisy path ranks' estimates of the same calls differ by 2x or more: the
 * rank that drew the low one cuts its receives short and loses what its
 * peers deliver a little later, the one that drew the high one waits out
 * every straggler. So every rank sends its t_B of each call's size with
 * its loss report (reports.c; reliable calls report it too), and once all
 * reports of that call are in, the size class's t_B becomes the upper
 * median of the ranks' (the paper's rule: receivers agree on the median
 * of the senders' estimates). The first lossy call after the warm-up
 * waits for the reports of the warm-up (those in whole report batches),
 * so lossy calls run on the agreed bound from the start. The margin stays
 * each rank's own, as the late data it follows is.
 */

#include <stdint.h>

#define OR_EST_CLASSES		48
#define OR_EST_WINDOW		32
#define OR_EST_PERCENTILE	95
#define OR_EST_FLOOR_NS		500000ull	/* 0.5 ms */
#define OR_EST_DEFAULT_NS	1000000000ull	/* 1 s */
/* Never above: a peer's report of an absurd t_B (or a scaled one past
 * what a uint64_t holds) must not wrap the bound to nothing. */
#define OR_EST_CEIL_NS		600000000000ull	/* 10 min */
#define OR_EST_LATE_PPM		1000		/* 0.1% of a call's bytes */
#define OR_EST_MARGIN_UP	1.25
#define OR_EST_MARGIN_DOWN	0.995
#define OR_EST_MARGIN_MAX	4.0

struct or_est_class {
	uint64_t ns[OR_EST_WINDOW];
	uint64_t bytes[OR_EST_WINDOW];
	unsigned int n;		/* samples held */
	unsigned int head;	/* next to overwrite */
	double avg_ns;		/* t_C; 0 until the first sample */
	uint64_t agreed_ns;	/* t_B agreed by all ranks; 0: none yet */
	uint64_t agreed_bytes;	/* ... for calls of this size */
};

struct or_estimator {
	struct or_est_class cls[OR_EST_CLASSES];
	double margin;		/* >= 1; see above */
	uint64_t late_bytes;	/* every late byte so far */
	uint64_t last_bound_ns;	/* for statistics */
	uint64_t last_avg_ns;
};

void or_est_init(struct or_estimator *e);
/* A completed call; reliable ones also feed t_B. */
void or_est_sample(struct or_estimator *e, uint64_t bytes, uint64_t ns,
		   int reliable);
/* A lossy call of bytes ended; late of them came too late. */
void or_est_late(struct or_estimator *e, uint64_t bytes, uint64_t late);
/* t_B of a call of bytes (agreed if there is an agreement for its class,
 * else this rank's own), times the margin. */
uint64_t or_est_bound(struct or_estimator *e, uint64_t bytes);
/* This rank's own t_B of a call of bytes, no margin: what it reports. */
uint64_t or_est_own(struct or_estimator *e, uint64_t bytes);
/* The ranks' t_B of a call of bytes: n values, 0 for "none"; sorts them. */
void or_est_agree(struct or_estimator *e, uint64_t bytes, uint64_t *tb,
		  unsigned int n);
uint64_t or_est_average(struct or_estimator *e, uint64_t bytes); /* t_C */

#endif /* OR_ESTIMATOR_H */
