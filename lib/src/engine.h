/* SPDX-License-Identifier: MIT */
#ifndef OR_ENGINE_H
#define OR_ENGINE_H

/*
 * The engine: the progress thread that runs a communicator's calls
 * (engine.c), and the state it keeps to itself.
 *
 * Implementation notes
 * - Only the progress thread touches what is declared here (struct
 *   or_active, the report ring): no lock. What it shares with callers
 *   lives in struct optireduce_comm under comm->lock (comm.h).
 * - Calls run one at a time in start order (FIFO): round deadlines assume
 *   the call has the links to itself, and incast control would mean
 *   nothing with several calls sending at once.
 * - Path agreement: every rank must take the same path for a call. Warm-up
 *   is by call number; the safeguard decides from loss reports that all
 *   ranks exchange over the reliable path (reports.c), applied
 *   OR_REPORT_LAG calls later, so all ranks decide from the same numbers
 *   without a barrier on the critical path. A report message covers
 *   OR_REPORT_BATCH calls: three small TCP messages each way per call more
 *   than doubled the time of a 4 KiB call in the emulated guest.
 */

#include <stddef.h>
#include <stdint.h>

#include "optireduce.h"
#include "compensate.h"
#include "tar.h"
#include "transport.h"

#define OR_REPORT_LAG		OPTIREDUCE_REPORT_LAG
#define OR_REPORT_BATCH		4	/* calls per report message */
#define OR_REPORT_SLOTS		(OR_REPORT_LAG / OR_REPORT_BATCH + 1)
/* How long a gated call waits for a peer to start before its receives
 * end anyway: the kernel's longest deadline. A peer that never starts is
 * dead, and its connection's failure ends the call first. */
#define OR_READY_WAIT_NS	(60 * 1000000000LL)
/* How long a catch-up call (engine.c, catch_up()) waits for a peer's
 * first message on top of its bound. Short: where the lossy path itself
 * is down (UDP blocked, a link dropping everything), every call is a
 * catch-up call until the safeguard, OR_REPORT_LAG calls behind, falls
 * back to TCP. */
#define OR_CATCH_UP_WAIT_NS	(1000000000LL)
#define OR_MAX_MISSING		256	/* missing ranges per received message */

struct or_call;

/* Loss report of one rank for one lossy call (little-endian on the wire):
 * entries of the result, as in struct optireduce_result. */
struct or_report {
	uint64_t lost;
	uint64_t expected;
	uint64_t t_b_ns;		/* the sender's own t_B of the call's size */
};

/* The reports of OR_REPORT_BATCH consecutive calls (a batch), from every
 * rank; OR_REPORT_SLOTS of them in a ring. */
struct or_report_slot {
	uint64_t batch;			/* seq / OR_REPORT_BATCH of its calls */
	int used;			/* posted, not yet all consumed */
	int posted;			/* receives were posted */
	int send_pending;		/* our batch still being sent */
	unsigned int got;		/* peers' batches received */
	uint8_t lossy[OR_REPORT_BATCH];	/* which calls have a report */
	uint64_t bytes[OR_REPORT_BATCH];	/* their sizes */
	/* their dynamic incast limits (0: a fixed one) */
	unsigned int incast[OR_REPORT_BATCH];
	struct or_report *r;		/* [size][OR_REPORT_BATCH] */
};

/* The call being run. */
struct or_active {
	struct or_call *c;
	struct or_transport *t;
	struct or_sched s;
	int reliable;
	/* A direct call (cfg.direct_kb): one round, the whole buffer to
	 * every peer; len is then the whole buffer and s has r2 0. */
	int direct;
	int hadamard;
	/* What crosses the wire (wire16.h): its dtype and entry size; the
	 * buffers the transport fills hold entries of that size at the
	 * offsets of their float32 entries until widened. */
	int wdtype;
	size_t wsz;
	uint64_t seed;
	size_t len;			/* my shard */
	size_t off;
	unsigned int round;		/* 0 .. r1 + r2 */
	int round_started;
	int64_t t0;			/* became active */
	/* Receive deadlines count from here: t0, or for a gated call the
	 * moment every peer had said it started (0 until then). */
	int64_t base;
	int64_t budget;			/* per round, lossy calls */
	int64_t early;
	int64_t bound;			/* t_B used */
	int64_t call_deadline;		/* timeout_ms from t0 (0: none) */
	unsigned int loss_ppm;		/* safeguard threshold of this call */
	uint8_t *p1_recv, *p1_send, *p2_recv, p2_send;	/* done flags */
	/*
	 * Ready signals (cfg.ready_kb): a gated call sends a round's phase 1
	 * once every peer j of the round signalled (ready[j]), or once
	 * OR_READY_WAIT_NS passed; p1_issued[j] says the send went out,
	 * waiting counts the peers not yet ready, since wait_since.
	 */
	int gated;
	/* A catch-up call (see catch_up() in engine.c): deadlines count
	 * from when the peers silent in the last call have each delivered
	 * a message; awaited of them still have not. */
	int catch_up;
	unsigned int awaited;
	uint8_t *heard;			/* a message of this peer arrived */
	unsigned int waiting;
	int64_t wait_since;
	uint8_t *ready, *p1_issued;
	/* Where the transport scatters (OR_TCAP_SCATTER), the peers a round
	 * may send to go in one send: p1_batch[j] names the one that carried
	 * shard j (its first peer), p1_parts is its scratch. */
	uint32_t *p1_batch;
	struct or_part *p1_parts;
	uint32_t *p1_nmiss, *p2_nmiss;
	struct or_range *p1_miss, *p2_miss;	/* [size][OR_MAX_MISSING] */
	struct or_comp_stats p1st, p2st;
};

int or_engine_alloc(optireduce_comm *c);
void or_engine_free(optireduce_comm *c);
int or_engine_start(optireduce_comm *c);
void or_engine_stop(optireduce_comm *c);
void or_engine_wake(optireduce_comm *c);

/* A reliable receive from every peer of a small message of this call or
 * batch (seq): peer p's lands at base + p * len, completes with kind. */
int or_post_from_peers(optireduce_comm *c, uint64_t seq, unsigned int phase,
		       unsigned int kind, void *base, size_t len);

#endif /* OR_ENGINE_H */
