/* SPDX-License-Identifier: MIT */
#ifndef OR_COMM_H
#define OR_COMM_H

/*
 * The communicator and its engine.
 *
 * Implementation notes
 * - Threads: callers (any number) and one progress thread per
 *   communicator. Callers only queue calls and collect results; the
 *   progress thread alone touches transports, scratch buffers and the
 *   active call (struct or_active), so those need no lock.
 * - comm->lock protects the slots' state, the queue, stats, options and
 *   comm->state; comm->cv signals completed calls and users leaving.
 * - Registry (comm.c): every public entry point looks the communicator up
 *   in a global list under or_registry_lock and takes a user reference
 *   before dereferencing it, so a destroyed communicator is reported
 *   (-EBADF), never followed. Lock order: registry lock, then comm->lock.
 * - Calls run one at a time in start order (FIFO): round deadlines assume
 *   the call has the links to itself, and incast control would mean
 *   nothing with several calls sending at once.
 * - Path agreement: every rank must take the same path for a call. Warm-up
 *   is by call number; the safeguard decides from loss reports that all
 *   ranks exchange over the reliable path, applied OR_REPORT_LAG calls
 *   later, so all ranks decide from the same numbers without a barrier on
 *   the critical path. A report message covers OR_REPORT_BATCH calls:
 *   three small TCP messages each way per call more than doubled the time
 *   of a 4 KiB call in the emulated guest.
 */

#include <pthread.h>
#include <stdint.h>

#include "optireduce.h"
#include "compensate.h"
#include "estimator.h"
#include "tar.h"
#include "transport.h"

#define OR_COMM_MAGIC		0x4f52434du	/* "ORCM" */
#define OR_REPORT_LAG		OPTIREDUCE_REPORT_LAG
#define OR_REPORT_BATCH		4	/* calls per report message */
#define OR_REPORT_SLOTS		(OR_REPORT_LAG / OR_REPORT_BATCH + 1)
/* How long a gated call waits for a peer to start before its receives
 * end anyway: the kernel's longest deadline. A peer that never starts is
 * dead, and its connection's failure ends the call first. */
#define OR_READY_WAIT_NS	(60 * 1000000000LL)
/* Largest cfg.direct_kb: past this a direct call's bytes cost more than
 * the round it saves. */
#define OR_DIRECT_MAX_KB	4096
/* How long a catch-up call (engine.c, catch_up()) waits for a peer's
 * first message on top of its bound. Short: where the lossy path itself
 * is down (UDP blocked, a link dropping everything), every call is a
 * catch-up call until the safeguard, OR_REPORT_LAG calls behind, falls
 * back to TCP. */
#define OR_CATCH_UP_WAIT_NS	(1000000000LL)
#define OR_MAX_MISSING		256	/* missing ranges per received message */
#define OR_SLOT_BITS		12	/* handle = generation << 12 | slot */

enum or_comm_state {
	OR_LIVE = 1,
	OR_BROKEN,		/* a transport failed: every call fails */
	OR_CLOSING,
};

enum or_slot_state {
	OR_SLOT_FREE = 0,
	OR_SLOT_QUEUED,
	OR_SLOT_ACTIVE,
	OR_SLOT_DONE,
};

/* A call slot. Scratch buffers stay with the slot and are reused. */
struct or_call {
	uint64_t gen;
	int state;
	int err;
	uint64_t seq;
	void *buf;
	size_t count;
	int dtype;
	int op;
	/* Options captured at start: a change applies to the calls started
	 * after it on every rank, whichever each engine reaches first. */
	unsigned int incast;
	unsigned int hadamard_mode;
	unsigned int hadamard_block;
	unsigned int loss_ppm;		/* loss_threshold_ppm */
	unsigned int fallback_calls;
	unsigned int timeout_ms;
	int64_t t_start;
	float *work;			/* count: local vector, then result */
	size_t work_cap;
	float *p1;			/* size * shard: phase-1 contributions */
	size_t p1_cap;
	/* count: the reduced shards phase 2 brings, at their offsets; apart
	 * from work so their receives can be posted when the call starts,
	 * not only once this rank's phase-1 send from work has left. */
	float *p2;
	size_t p2_cap;
	struct optireduce_result res;
};

/* Loss report of one rank for one lossy call (little-endian on the wire). */
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
	struct or_report *r;		/* [size][OR_REPORT_BATCH] */
};

/* The call being run: progress-thread private. */
struct or_active {
	struct or_call *c;
	struct or_transport *t;
	struct or_sched s;
	int reliable;
	/* A direct call (cfg.direct_kb): one round, the whole buffer to
	 * every peer; len is then the whole buffer and s has r2 0. */
	int direct;
	int hadamard;
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
	 * Ready signals (cfg.ready_kb): a gated call sends phase 1 to peer j
	 * only after j's signal (ready[j]), or once OR_READY_WAIT_NS passed;
	 * p1_issued[j] says the send went out, waiting counts the peers held
	 * back, since wait_since.
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
	uint32_t *p1_nmiss, *p2_nmiss;
	struct or_range *p1_miss, *p2_miss;	/* [size][OR_MAX_MISSING] */
	struct or_comp_stats p1st, p2st;
};

struct optireduce_comm {
	uint32_t magic;
	struct optireduce_comm *next;	/* registry */
	unsigned int users;		/* API calls inside (registry lock; drop: lock too) */
	int rank;
	int size;

	pthread_mutex_t lock;
	pthread_cond_t cv;
	int state;
	int err;			/* why it broke */
	struct optireduce_config cfg;	/* live options; peers = NULL */
	struct or_call *slots;
	unsigned int nslots;
	unsigned int inflight;
	unsigned int *queue;		/* FIFO of slot indexes */
	unsigned int qhead, qlen;
	uint64_t next_seq;
	struct optireduce_stats stats;

	/* progress thread */
	pthread_t thread;
	int thread_started;
	int wake_fd;
	struct or_transport *rel;
	struct or_transport *lossy;	/* NULL: reliable path only */
	int lossy_kind;			/* enum optireduce_transport */
	struct or_active act;
	struct or_estimator est;
	uint64_t late_seen;		/* the lossy transport's late() so far */
	struct or_report_slot reports[OR_REPORT_SLOTS];
	uint64_t report_next;		/* first call not yet consumed */
	uint64_t report_done;		/* calls that finished */
	/* Consumed calls' worst rank's loss (ppm), by call % the size: a
	 * call reads that of the call OR_REPORT_LAG before it, and at most
	 * OR_REPORT_LAG calls are consumed ahead of their reader. */
	uint32_t group_ppm[2 * OR_REPORT_LAG];
	uint64_t *ready_sink;		/* [size]: ready signals land here */
	uint64_t *t_b;			/* [size]: ranks' t_B, for agreement */
	uint64_t stats_ready_wait;	/* progress thread; copied to stats */
	uint64_t stats_ready_missed;
	uint64_t stats_catch_up;
	/* [size]: peers silent in the last lossy call, whom a catch-up
	 * call waits for (engine.c) */
	uint8_t *silent;
	/* Since when the queue's head waits for loss reports (0: it does
	 * not); its timeout counts from then (engine.c held_deadline()). */
	int64_t held_since;
	uint64_t fallback_until;
	/* The smallest locked-memory budget among the ranks (KiB): calls
	 * that would pin more take the reliable path (memlock.c). */
	uint32_t memlock_kb;
	unsigned int trips_in_row;	/* trips without a clean lossy call */
	double loss_avg;		/* moving average of reported loss */
	int hadamard_auto;		/* AUTO's current answer (engine.c) */
	struct or_contrib *contrib;	/* [size] */
	struct or_comp_event *events;	/* [2 * size * OR_MAX_MISSING] */
	int no_compensation;		/* tests: the authors' fill, for contrast */
};

/* comm.c */
int or_comm_create_with(const struct optireduce_config *cfg,
			struct or_transport *rel, struct or_transport *lossy,
			int lossy_kind, optireduce_comm **out);
int or_config_check(const struct optireduce_config *cfg);
uint64_t or_config_hash(const struct optireduce_config *cfg);
/* The TCP path of optireduce_comm_create(), with an optional listening
 * socket already bound to peers[rank] (rendezvous binds it first). */
int or_comm_create_tcp(const struct optireduce_config *cfg, int listen_fd,
		       optireduce_comm **out);

/* memlock.c: locked memory for lossy receives, in KiB. */
#define OR_MEMLOCK_UNLIMITED	UINT32_MAX
/* This rank's budget: its RLIMIT_MEMLOCK shared among the ranks on its
 * host; unlimited with CAP_IPC_LOCK; OPTIREDUCE_MEMLOCK_KB overrides.
 * -EINVAL (said on stderr) when that variable is malformed. */
int or_memlock_budget_kb(const struct optireduce_config *cfg, uint32_t *kb);
/* What the lossy receives of one call of count entries keep pinned. */
uint64_t or_memlock_call_kb(size_t count, int n, int direct);

/* engine.c */
int or_engine_start(optireduce_comm *c);
void or_engine_stop(optireduce_comm *c);
void or_engine_wake(optireduce_comm *c);
void or_engine_free(optireduce_comm *c);
int or_engine_alloc(optireduce_comm *c);

/* env.c / rendezvous.c */
struct or_rdzv {
	const char *master;		/* "host:port" */
	unsigned int timeout_ms;
	uint64_t seed;			/* rank 0's is adopted by all */
};
int or_rendezvous(struct optireduce_config *cfg, const struct or_rdzv *rz,
		  char ***peers_out, int *listen_fd);
void or_peers_free(char **peers, int size);

#endif /* OR_COMM_H */
