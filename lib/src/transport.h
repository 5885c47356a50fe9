/* SPDX-License-Identifier: MIT */
#ifndef OR_TRANSPORT_H
#define OR_TRANSPORT_H

/*
 * The internal transport interface: what the Transpose AllReduce engine
 * (engine.c) needs from a network, shaped after what the optireduce kernel
 * socket offers, so the kernel + io_uring transport plugs in as one more
 * ops table. Implementations today:
 *   transport_tcp.c   reliable path (TAR+TCP), full mesh, epoll, no loss
 *   transport_sim.c   in-process fabric with deterministic loss, for tests
 *   transport_kernel.c the kernel socket driven by one io_uring per
 *                     communicator (transport_kernel.h)
 *
 * Model
 *   A message is identified by (source rank, tag). The engine posts a
 *   receive buffer for each message it expects, sends messages to one rank
 *   or to all others, and reaps completions. Tags are opaque 64-bit values
 *   to a transport (or_tag() builds them: call sequence number and phase).
 *
 * Threading
 *   Every op except wake-ups of event_fd is called from one thread only,
 *   the communicator's progress thread. event_fd becomes readable (poll(2)
 *   POLLIN) whenever reap may have something to return; the engine sleeps
 *   in poll() on it, so a transport needs no thread of its own.
 *
 * Batching
 *   post_recv and send only queue work. Nothing is guaranteed to have
 *   started before the next reap; the io_uring transport submits the whole
 *   batch of SQEs there, in one io_uring_enter().
 *
 * Buffers
 *   A receive buffer belongs to the transport from post_recv until its
 *   completion; a send buffer from send until its completion. After a
 *   receive completed the transport never writes into it again (late
 *   packets of that message are stale and dropped). Bytes inside a missing
 *   range are left untouched (the engine fills them itself).
 *
 * Early data
 *   Data may arrive before its receive is posted (a peer already finished
 *   the previous call). A transport holds it and delivers it when the
 *   receive is posted; a lossy one may bound what it holds and count the
 *   rest as lost. TCP and sim hold everything.
 *
 * Deadlines (who owns which rule)
 *   The library owns the hard bound: estimator.c measures warm-up calls on
 *   the reliable path (t_B, a high percentile) and every call (t_C, a moving
 *   average) and gives each receive an absolute CLOCK_MONOTONIC deadline,
 *   cumulative per round. A lossy transport completes the receive no later
 *   than its deadline, with whatever arrived and the missing byte ranges.
 *   The kernel owns the early timeout (OR_RECV_ADAPTIVE): it sees packets,
 *   so it may end a receive before the deadline once every sender's last
 *   packet has been seen and the path has gone idle for a fraction of
 *   early_ns (t_C per round). A reliable transport treats the deadline as
 *   unset (it never loses data); the engine bounds reliable calls itself.
 *
 * Missing ranges
 *   A completion lists the missing byte ranges of the message in ascending
 *   order, into the array the engine gave with the receive. When there are
 *   more than max_missing, the first max_missing-1 are exact and the last
 *   one runs from the start of the next missing range to the end of the
 *   last (conservative: some received bytes are then treated as lost), and
 *   OR_CQE_TRUNCATED is set.
 *
 * Errors
 *   A completion with res < 0 (a peer died, protocol error) is fatal for
 *   the communicator: the engine fails the call and every later one. A
 *   lossy receive that found no memory is a loss, not an error
 *   (OR_CQE_UNPOSTED).
 */

#include <stddef.h>
#include <stdint.h>

/* Tags: call sequence number and phase of the Transpose AllReduce. */
enum or_phase {
	OR_PHASE_SCATTER = 1,	/* phase 1: shard j of every rank to rank j */
	OR_PHASE_GATHER  = 2,	/* phase 2: reduced shard j to all ranks */
	OR_PHASE_REPORT  = 3,	/* loss report for the safeguard (reliable) */
	OR_PHASE_READY   = 4,	/* receives posted: send (reliable) */
};

static inline uint64_t or_tag(uint64_t seq, unsigned int phase)
{
	return (seq << 4) | (phase & 0xf);
}
static inline uint64_t or_tag_seq(uint64_t tag) { return tag >> 4; }
static inline unsigned int or_tag_phase(uint64_t tag) { return tag & 0xf; }

#define OR_DST_ALL	(-1)	/* send to every rank but the sender */

struct or_range {
	uint64_t start;		/* byte offset, inclusive */
	uint64_t end;		/* byte offset, exclusive */
};

/* or_recv.flags */
#define OR_RECV_ADAPTIVE	(1u << 0)	/* transport may end it early */

struct or_recv {
	int src;			/* sending rank */
	uint32_t flags;			/* OR_RECV_* */
	uint64_t tag;
	void *buf;
	uint64_t len;			/* exact length of the message */
	int64_t deadline_ns;		/* CLOCK_MONOTONIC; 0: none */
	int64_t early_ns;		/* hint for OR_RECV_ADAPTIVE; 0: none */
	struct or_range *missing;	/* filled at completion */
	uint32_t max_missing;
	uint64_t user_data;		/* returned in the completion */
};

/* One rank's part of a scatter send. */
struct or_part {
	const void *buf;
	uint64_t len;			/* 0: nothing for that rank */
};

/* or_send.flags */
/* To OR_DST_ALL, parts[] (one per rank, the sender's own ignored) instead
 * of buf: each rank receives its own part as the message (only with
 * OR_TCAP_SCATTER). */
#define OR_SEND_SCATTER		(1u << 0)

struct or_send {
	int dst;			/* rank, or OR_DST_ALL */
	uint32_t flags;			/* OR_SEND_* */
	uint64_t tag;
	const void *buf;
	uint64_t len;
	const struct or_part *parts;	/* OR_SEND_SCATTER */
	uint64_t user_data;
};

/* or_cqe.flags */
#define OR_CQE_RECV		(1u << 0)	/* else a send completed */
#define OR_CQE_DEADLINE		(1u << 1)	/* ended by its deadline */
#define OR_CQE_TRUNCATED	(1u << 2)	/* missing list was cut */
/* A lossy receive the transport could not take (no memory, or no more
 * locked memory for its buffer): it ends at once, all of it missing. It
 * says nothing of the peer, which may well have sent on time. */
#define OR_CQE_UNPOSTED		(1u << 3)

/* A receive of which nothing came: one missing range, the whole message,
 * in missing[] (room for max); the count for or_cqe.nr_missing. */
static inline uint32_t or_miss_all(struct or_range *missing, uint32_t max,
				   uint64_t len)
{
	if (!len || !max)
		return 0;
	missing[0] = (struct or_range){ 0, len };
	return 1;
}

struct or_cqe {
	uint64_t user_data;
	int32_t res;			/* 0, or -errno (fatal) */
	uint32_t flags;			/* OR_CQE_* */
	uint64_t bytes;			/* receive: bytes that arrived */
	uint32_t nr_missing;		/* receive: entries filled in missing[] */
};

/* or_transport.caps */
#define OR_TCAP_LOSSY		(1u << 0)	/* may lose data; honours deadlines */
#define OR_TCAP_SEND_ALL	(1u << 1)	/* OR_DST_ALL is one native send
						   (multicast), not a fan-out */
#define OR_TCAP_ADAPTIVE	(1u << 2)	/* implements OR_RECV_ADAPTIVE */
#define OR_TCAP_SCATTER		(1u << 3)	/* OR_SEND_SCATTER: one send, its
						   parts interleaved on the wire */

struct or_transport;

struct or_transport_ops {
	const char *name;
	/* Queue a receive. 0 or -errno (then nothing was queued). */
	int (*post_recv)(struct or_transport *t, const struct or_recv *rx);
	/* Queue a send to one rank or to all. 0 or -errno. */
	int (*send)(struct or_transport *t, const struct or_send *tx);
	/*
	 * Submit what is queued, make progress without blocking, and return
	 * up to max completions (>= 0), or -errno when the transport itself
	 * failed.
	 */
	int (*reap)(struct or_transport *t, struct or_cqe *cqes,
		    unsigned int max);
	/* Stop everything and free. Queued work is dropped silently. */
	void (*destroy)(struct or_transport *t);
	/*
	 * Lossy transports: bytes so far that came too late for their
	 * receive (they arrived, or their receive was posted, after its
	 * deadline ended it, or their sender was still sending when it
	 * did). Only ever grows; counted by the call whose deadline cut them
	 * where the transport can tell. These are losses a longer deadline
	 * would have avoided, unlike drops on the wire: the engine's
	 * deadline margin follows them. NULL: never late (reliable).
	 */
	uint64_t (*late)(struct or_transport *t);
	/*
	 * Lossy transports: the receives of tag still pending now end at
	 * deadline_ns instead (earlier or later). Those already ended are
	 * not affected. 0 or -errno. NULL: no deadlines (reliable).
	 */
	int (*retime)(struct or_transport *t, uint64_t tag, int64_t deadline_ns);
	/*
	 * Lossy transports that pace their sends: what the reliable path
	 * carried out of this host, Mbit/s (payload only; the fastest
	 * warm-up call's), given once when the warm-up is over, before the
	 * first lossy send. A transport whose rate adapts starts there
	 * instead of at its ceiling; it stays a start, never a limit.
	 * 0 or -errno (then the transport keeps its own start; the engine
	 * goes on). NULL: nothing to start.
	 */
	int (*path_rate)(struct or_transport *t, uint64_t mbps);
};

struct or_transport {
	const struct or_transport_ops *ops;
	int rank;
	int size;
	unsigned int caps;		/* OR_TCAP_* */
	int event_fd;			/* POLLIN: reap may return something */
	uint64_t bytes_sent;		/* payload bytes, for statistics */
	uint64_t bytes_received;
};

/* transport_tcp.c: connect the full mesh (blocking, bounded by timeout). */
struct or_tcp_params {
	int rank;
	int size;
	const char *const *peers;	/* "host:port" for every rank */
	int listen_fd;			/* already listening on peers[rank], or -1 */
	uint64_t cfg_hash;		/* peers must present the same */
	uint32_t lossy_ok;		/* this rank can use the lossy path */
	uint32_t memlock_kb;		/* ... and may pin this much for it */
	unsigned int timeout_ms;
	int quiet;			/* no messages on stderr */
};
/* What the ranks' hellos add up to: every rank sees the same. */
struct or_tcp_agreed {
	uint32_t lossy_ok;		/* every rank can use the lossy path */
	uint32_t memlock_kb;		/* the smallest budget */
};
int or_tcp_create(const struct or_tcp_params *p, struct or_transport **out,
		  struct or_tcp_agreed *agreed);

/* transport_kernel*.c: the optireduce kernel socket, one io_uring per
 * communicator (plain sendmsg/recvmsg where io_uring is unavailable). */
/*
 * A communicator's secret (the kernel's OPTIREDUCE_SECRET_LEN): only its
 * members know it, and with it the kernel tells the communicator from any
 * other that uses the same id. Random per communicator: the rendezvous's
 * rank 0 draws it and hands it to the others, or the launcher passes it
 * in OPTIREDUCE_SECRET (hex). All zero: none (an open communicator).
 */
#define OR_SECRET_LEN	32

struct or_kernel_params {
	int rank;
	int size;
	const char *const *peers;	/* "host:port" per rank: IPv4 hosts */
	uint64_t comm_hash;		/* identical on every rank */
	const uint8_t *secret;		/* OR_SECRET_LEN bytes; NULL: none */
	uint32_t mcast_group;		/* network order; 0: fan-out */
	uint32_t mcast_ifindex;		/* 0: the interface of peers[rank] */
	int auth;			/* authenticated datagrams (needs
					 * a secret) */
	int quiet;
};
/* 0 when the module is loaded, else -EAFNOSUPPORT. */
int or_kernel_probe(void);
/* Socket, OPTIREDUCE_JOIN, engine; -errno (and why on stderr) if not. */
int or_kernel_create(const struct or_kernel_params *p,
		     struct or_transport **out);
/* Tests: receive bytes the kernel never saw (posted after their round
 * ended: the loss of those is the library's count, not the kernel's). */
uint64_t or_kernel_late_bytes(const struct or_transport *t);
/* Tests: sends the io_uring engine issued in place and through io-wq, and
 * of all sends those that scattered (OR_SEND_SCATTER). */
void or_kernel_sends(const struct or_transport *t, uint64_t *in_place,
		     uint64_t *async, uint64_t *scatter);

#endif /* OR_TRANSPORT_H */
