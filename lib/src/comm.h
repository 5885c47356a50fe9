/* SPDX-License-Identifier: MIT */
#ifndef OR_COMM_H
#define OR_COMM_H

/*
 * The communicator: what callers and the progress thread share.
 *
 * Implementation notes
 * - Threads: callers (any number) and one progress thread per
 *   communicator. Callers only queue calls and collect results; the
 *   progress thread alone touches transports, scratch buffers and the
 *   engine's state (engine.h), so those need no lock.
 * - comm->lock protects the slots' state, the queue, stats, options and
 *   comm->state; comm->cv signals completed calls and users leaving.
 * - Registry (comm.c): every public entry point looks the communicator up
 *   in a global list under or_registry_lock and takes a user reference
 *   before dereferencing it, so a destroyed communicator is reported
 *   (-EBADF), never followed. Lock order: registry lock, then comm->lock.
 * - The engine (engine.h), the loss reports (reports.h), locked memory
 *   (memlock.h) and the rendezvous (rendezvous.h) have headers of their
 *   own.
 */

#include <pthread.h>
#include <stdint.h>

#include "optireduce.h"
#include "compensate.h"
#include "engine.h"
#include "estimator.h"
#include "incast.h"
#include "tar.h"
#include "transport.h"

#define OR_COMM_MAGIC		0x4f52434du	/* "ORCM" */
/* Largest cfg.direct_kb: past this a direct call's bytes cost more than
 * the round it saves. */
#define OR_DIRECT_MAX_KB	4096
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
	int incast_dynamic;		/* OPTIREDUCE_CFG_INCAST_DYNAMIC */
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
	/* count: a 16-bit call's vector as it crosses the wire (wire16.h):
	 * phase 1 sends from it, phase 2 from the owner's shard of it. */
	uint16_t *wire;
	size_t wire_cap;		/* in floats, as grow() counts */
	struct optireduce_result res;
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
	uint64_t warmup_mbps;		/* note_warmup_rate(); 0: none yet */
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
	int hadamard_auto;		/* AUTO's current answer (reports.c) */
	struct or_incast incast;	/* dynamic incast (reports.c, incast.h) */
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
/* OPTIREDUCE_SECRET into out: 1 if set, 0 if not, -EINVAL if malformed. */
int or_env_secret(uint8_t out[OR_SECRET_LEN], int quiet);
/* Whether s holds a secret (is not all zero). */
int or_secret_given(const uint8_t s[OR_SECRET_LEN]);
/* The TCP path of optireduce_comm_create(), with an optional listening
 * socket already bound to peers[rank] (rendezvous binds it first) and the
 * communicator's secret (NULL: none). */
int or_comm_create_tcp(const struct optireduce_config *cfg, int listen_fd,
		       const uint8_t *secret, optireduce_comm **out);

#endif /* OR_COMM_H */
