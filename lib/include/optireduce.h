/* SPDX-License-Identifier: MIT */
#ifndef OPTIREDUCE_H
#define OPTIREDUCE_H

/*
 * liboptireduce: bounded-time, loss-tolerant allreduce for data-parallel
 * training (OptiReduce, NSDI'25), on Linux.
 *
 * Objects
 *   optireduce_comm      a communicator: `size` ranks, this process is `rank`.
 *   optireduce_handle    an allreduce in flight (a value, not a pointer, so a
 *                        stale or foreign handle is detected, never followed).
 *
 * Life cycle
 *   optireduce_config_init()          fill a config with the defaults
 *   optireduce_comm_create()          from an explicit config (peer addresses)
 *   optireduce_comm_create_from_env() from OPTIREDUCE_* or torchrun's RANK,
 *                                     WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 *   optireduce_comm_destroy()         cancel what is in flight, free all
 *
 * Allreduce (in place; float32, bfloat16, float16; sum or mean)
 *   optireduce_allreduce()            blocking
 *   optireduce_allreduce_start()      asynchronous: returns a handle at once
 *   optireduce_allreduce_test()       -EAGAIN until done, then the outcome
 *   optireduce_allreduce_wait()       block until done, then the outcome
 * Every rank must start the same calls (count, dtype, op) in the same order,
 * like any collective. Up to max_inflight calls may be outstanding; a
 * per-communicator progress thread runs them one after the other (FIFO) while
 * the caller computes. The buffer must not be touched until the call is done.
 * Each call reports what happened in a struct optireduce_result: entries
 * lost and compensated, whether it went over the reliable path and why, and
 * how long it took.
 *
 * Loss is counted in one unit everywhere (results, stats, the loss reports
 * behind group_lost_ppm, the safeguard's loss_threshold_ppm): entries of the
 * result, i.e. gradient elements. An entry is lost when anything it depends
 * on did not arrive in time: any of the peers' contributions to an entry of
 * this rank's own shard (counted once however many are missing), or the
 * entry itself for another rank's shard. A call of count entries on more
 * than one rank expects count entries; lost / expected is the fraction of
 * the gradient this rank had to rescale or estimate.
 *
 * Tuning and counters
 *   optireduce_comm_set_option() / optireduce_comm_get_option()
 *   optireduce_comm_stats()           totals since creation
 *
 * Errors
 *   Every function returns 0 or a negative errno value; optireduce_strerror()
 *   says what it means here. Misuse (NULL, count 0 or too large, unknown
 *   dtype or op, rank >= size, a destroyed communicator, a consumed handle)
 *   is reported, never followed into a crash.
 *
 * Paths
 *   The lossy path is the optireduce kernel socket (not loaded: the library
 *   says so once on stderr and uses the reliable path). The reliable path is
 *   the same Transpose AllReduce over TCP; it also carries the warm-up calls
 *   that measure deadlines and the calls after a safeguard trip.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPTIREDUCE_VERSION_MAJOR	0
#define OPTIREDUCE_VERSION_MINOR	1

/* Calls between a lossy call and the one whose start has every rank's
 * loss report of it (optireduce_result.group_lost_ppm). */
#define OPTIREDUCE_REPORT_LAG		8

/* Limits checked by every call. */
#define OPTIREDUCE_MAX_RANKS		1024
#define OPTIREDUCE_MAX_COUNT		((size_t)1 << 30)	/* entries per call */
#define OPTIREDUCE_MAX_INFLIGHT		4096

typedef struct optireduce_comm optireduce_comm;
typedef uint64_t optireduce_handle;

enum optireduce_dtype {
	OPTIREDUCE_FLOAT32	= 1,
	OPTIREDUCE_BFLOAT16	= 2,	/* 16 bits on the wire, reduced in
					 * float32, rounded back */
	OPTIREDUCE_FLOAT16	= 3,	/* the same (bfloat16 on the wire
					 * under the Hadamard transform:
					 * its entries outgrow float16) */
};

enum optireduce_op {
	OPTIREDUCE_SUM		= 1,
	OPTIREDUCE_MEAN		= 2,	/* sum / size */
};

enum optireduce_transport {
	OPTIREDUCE_TRANSPORT_AUTO	= 0,	/* kernel if loaded, else TCP */
	OPTIREDUCE_TRANSPORT_KERNEL	= 1,	/* kernel or fail */
	OPTIREDUCE_TRANSPORT_TCP	= 2,	/* reliable path only (TAR+TCP) */
};

enum optireduce_hadamard {
	OPTIREDUCE_HADAMARD_AUTO	= 0,	/* on for lossy-path calls while the
						 * communicator's recent loss is
						 * 1% or more (see the man page) */
	OPTIREDUCE_HADAMARD_OFF		= 1,
	OPTIREDUCE_HADAMARD_ON		= 2,	/* on for every call */
};

/* optireduce_config.flags */
#define OPTIREDUCE_CFG_QUIET		(1u << 0)	/* no notice on stderr */
/* Dynamic incast: the incast limit of lossy calls follows the loss the
 * ranks report, the incast option its ceiling (see
 * optireduce_comm_set_option(3)). Same on all ranks. */
#define OPTIREDUCE_CFG_INCAST_DYNAMIC	(1u << 1)
/* Kernel transport: every datagram carries a tag keyed with the
 * communicator's secret, and one without a valid tag is dropped (see
 * optireduce(7), OPTIREDUCE_JOIN_AUTH). Needs a secret: the rendezvous
 * draws one, with a peer list OPTIREDUCE_SECRET gives it. Same on all
 * ranks. */
#define OPTIREDUCE_CFG_AUTH		(1u << 2)

struct optireduce_config {
	int rank;			/* 0 .. size-1 */
	int size;			/* 1 .. OPTIREDUCE_MAX_RANKS */
	/*
	 * size addresses, "ipv4:port", "[ipv6]:port" or "host:port";
	 * peers[rank] is where this rank listens. Copied at create.
	 * Ignored by optireduce_comm_create_from_env().
	 */
	const char *const *peers;
	unsigned int transport;		/* enum optireduce_transport */
	unsigned int hadamard;		/* enum optireduce_hadamard */
	unsigned int hadamard_block;	/* power of two, 16 .. 65536 */
	unsigned int incast;		/* senders per receiver at once; 0: all
					 * (dynamic incast: at most) */
	unsigned int max_inflight;	/* 1 .. OPTIREDUCE_MAX_INFLIGHT */
	unsigned int warmup_calls;	/* reliable calls that measure deadlines */
	unsigned int loss_threshold_ppm; /* safeguard: a call losing more than
					  * this fraction of its entries
					  * (ppm) trips */
	unsigned int fallback_calls;	/* most reliable calls after a trip */
	unsigned int timeout_ms;	/* connect and per-call bound; 0: none */
	unsigned int flags;		/* OPTIREDUCE_CFG_* */
	uint64_t seed;			/* Hadamard signs; same on all ranks */
	/*
	 * Kernel transport: an IPv4 multicast group (network byte order, as
	 * inet_addr() returns it) that carries phase 2 as one datagram per
	 * fragment instead of one copy per peer; same on all ranks. 0: none.
	 * mcast_ifindex: its interface; 0: the one holding peers[rank].
	 */
	uint32_t mcast_group;
	uint32_t mcast_ifindex;
	/*
	 * Lossy calls in which a rank receives more than ready_kb KiB in
	 * phase 1 send to a peer only once it said that it posted its
	 * receives: a peer still in an earlier call would otherwise find
	 * that data in its socket's bounded backlog, or lose it. Their
	 * receive deadlines start once every peer has said so, so a peer
	 * that starts late is waited for. 0: every lossy call. Same on all
	 * ranks.
	 */
	unsigned int ready_kb;
	/*
	 * Lossy calls in which each rank would receive at most direct_kb
	 * KiB this way, (size - 1) times the buffer, skip the Transpose
	 * AllReduce: every rank sends its whole buffer to all the others
	 * and reduces what it receives, one round instead of two. Small
	 * calls wait on one-way delays, not bytes, so this halves what a
	 * latency tail costs them; the price is (size - 1) buffers
	 * received instead of about two, and that a loss leaves replicas
	 * slightly apart (as a phase-2 loss does). 0: never; nor under an
	 * incast limit. At most 4096. Same on all ranks.
	 */
	unsigned int direct_kb;
	unsigned int reserved[4];	/* must be zero */
};

/* optireduce_result.flags */
#define OPTIREDUCE_RES_RELIABLE		(1u << 0) /* went over the reliable path */
#define OPTIREDUCE_RES_WARMUP		(1u << 1) /* ... because of warm-up */
#define OPTIREDUCE_RES_FALLBACK		(1u << 2) /* ... because the safeguard tripped,
						   * or the receives would pin
						   * more than RLIMIT_MEMLOCK */
#define OPTIREDUCE_RES_HADAMARD		(1u << 3) /* reduced in the Hadamard domain */
#define OPTIREDUCE_RES_LOSS_HIGH	(1u << 4) /* this rank saw loss above threshold */
#define OPTIREDUCE_RES_ESTIMATED	(1u << 5) /* phase-2 holes filled locally:
						     replicas differ slightly */
#define OPTIREDUCE_RES_DIRECT		(1u << 6) /* one round, every rank's buffer
						     to all (direct_kb) */

struct optireduce_result {
	uint64_t seq;			/* call number on this communicator */
	uint64_t count;			/* entries reduced */
	uint64_t expected;		/* entries that depend on what peers
					 * send: count (0 with one rank) */
	uint64_t lost;			/* ... of which something did not
					 * arrive (see "Loss is counted") */
	uint64_t compensated;		/* result entries rescaled or estimated */
	double lost_fraction;		/* lost / expected (0 when expected 0) */
	uint64_t duration_ns;		/* start to completion */
	uint64_t queued_ns;		/* of which waiting behind earlier calls */
	uint64_t deadline_ns;		/* bound used by a lossy call, else 0 */
	uint32_t flags;			/* OPTIREDUCE_RES_* */
	/* Of call seq - OPTIREDUCE_REPORT_LAG: the largest fraction of its
	 * expected entries that any rank lost, in parts per million, rounded
	 * up (0 for a reliable call, before that call, or with one rank).
	 * From the loss reports every rank consumes alike, so the same on
	 * every rank: a decision taken from it needs no further agreement. */
	uint32_t group_lost_ppm;
	/* Payload this rank sent its peers, counted once per peer meant for
	 * (phase 1: its shards, phase 2: its reduced shard to each), in
	 * the type that crossed: wire_dtype, an OPTIREDUCE_* dtype. 16-bit
	 * calls send half the bytes of float32 ones. */
	uint64_t sent_bytes;
	uint32_t wire_dtype;
	/* Senders per receiver at once in this call's phase 1: the incast
	 * option, or with dynamic incast the limit the loss reports chose
	 * for it (the same on every rank). 0 with one rank. */
	uint32_t incast;
};

struct optireduce_stats {
	uint64_t calls;			/* completed */
	uint64_t calls_lossy;
	uint64_t calls_reliable;
	uint64_t calls_warmup;		/* subset of calls_reliable */
	uint64_t calls_fallback;	/* subset of calls_reliable */
	uint64_t calls_failed;
	uint64_t safeguard_trips;
	uint64_t entries_expected;	/* sums of the results' expected, */
	uint64_t entries_lost;		/* lost */
	uint64_t entries_compensated;	/* and compensated: entries */
	uint64_t deadline_ns;		/* current bound: t_B times the margin
					 * (0: no call yet) */
	uint64_t average_ns;		/* current t_C estimate */
	uint64_t margin_pct;		/* deadline margin, percent (>= 100) */
	uint64_t late_bytes;		/* received or posted after their
					 * deadline: what the margin follows */
	uint64_t ready_wait_ns;		/* phase-1 sends held for peers'
					 * ready signals (see ready_kb) */
	uint64_t ready_missed;		/* ... that went without one after
					 * a minute's wait */
	uint64_t catch_up_calls;	/* lossy calls whose deadlines waited
					 * for a message from each peer that
					 * was silent in the call before */
	uint64_t calls_direct;		/* subset of calls_lossy: one round,
					 * every buffer to all (direct_kb) */
	uint64_t bytes_sent;		/* sum of the results' sent_bytes */
	uint32_t incast;		/* the last lossy call's incast */
	uint32_t incast_lowered;	/* times dynamic incast lowered it */
	uint64_t warmup_mbps;		/* payload per second this rank's
					 * fastest warm-up call sent, Mbit/s:
					 * where the kernel path's rate
					 * control starts (0: none) */
};

enum optireduce_option {
	OPTIREDUCE_OPT_RANK = 1,		/* get */
	OPTIREDUCE_OPT_SIZE,			/* get */
	OPTIREDUCE_OPT_TRANSPORT,		/* get: path of lossy calls */
	OPTIREDUCE_OPT_MAX_INFLIGHT,		/* get */
	OPTIREDUCE_OPT_HADAMARD,		/* get, set: same on all ranks */
	OPTIREDUCE_OPT_HADAMARD_BLOCK,		/* get, set: same on all ranks */
	OPTIREDUCE_OPT_INCAST,			/* get, set: same on all ranks */
	OPTIREDUCE_OPT_LOSS_THRESHOLD_PPM,	/* get, set: same on all ranks */
	OPTIREDUCE_OPT_FALLBACK_CALLS,		/* get, set: same on all ranks */
	OPTIREDUCE_OPT_TIMEOUT_MS,		/* get, set */
	OPTIREDUCE_OPT_INCAST_DYNAMIC,		/* get, set: 0 or 1, same on all
						 * ranks */
};

void optireduce_config_init(struct optireduce_config *cfg);

int optireduce_comm_create(const struct optireduce_config *cfg,
			   optireduce_comm **comm);
int optireduce_comm_create_from_env(const struct optireduce_config *base,
				    optireduce_comm **comm);
int optireduce_comm_destroy(optireduce_comm *comm);

int optireduce_comm_set_option(optireduce_comm *comm, int option,
			       int64_t value);
int optireduce_comm_get_option(optireduce_comm *comm, int option,
			       int64_t *value);
int optireduce_comm_stats(optireduce_comm *comm,
			  struct optireduce_stats *stats);

int optireduce_allreduce(optireduce_comm *comm, void *buf, size_t count,
			 int dtype, int op, struct optireduce_result *res);
int optireduce_allreduce_start(optireduce_comm *comm, void *buf, size_t count,
			       int dtype, int op, optireduce_handle *handle);
int optireduce_allreduce_test(optireduce_comm *comm, optireduce_handle handle,
			      struct optireduce_result *res);
int optireduce_allreduce_wait(optireduce_comm *comm, optireduce_handle handle,
			      struct optireduce_result *res);

const char *optireduce_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* OPTIREDUCE_H */
