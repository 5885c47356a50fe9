/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * OptiReduce socket ABI, shared by optireduce.ko and userspace.
 *
 * Discovery
 *   The module is built out of tree, so it cannot own a fixed address family
 *   or socket option level: the kernel refuses family numbers >= AF_MAX.
 *   It borrows an unused number at load time (module parameter "family") and
 *   a socket option level ("sol"). Userspace reads both at run time from
 *   OPTIREDUCE_SYSFS_FAMILY and OPTIREDUCE_SYSFS_SOL; the *_DEFAULT values
 *   below are only what the module picks when loaded without parameters and
 *   must not be compiled into callers as the live value.
 *
 * Model
 *   socket(family, SOCK_DGRAM, 0), then OPTIREDUCE_JOIN a communicator: an
 *   id shared by all its members, this socket's rank, and every rank's IP
 *   address. Several ranks may share an address (one host, many ranks):
 *   packets carry the destination rank. All members of a namespace share
 *   one UDP port (module parameter "port").
 *
 *   Data moves in rounds, named by a __u32 that must increase (serial
 *   number arithmetic) with every round a socket opens. A receiver posts,
 *   ahead of time, where each expected message lands: (round, source rank,
 *   message id, buffer). The first post of a round opens it and starts its
 *   deadline timer. Arriving fragments are copied straight into the posted
 *   buffer (its pages are pinned while posted: one copy, from the packet to
 *   the buffer, in softirq context). A posted message completes when every
 *   byte arrived, when its round's deadline passes, when the round ends
 *   early (every sender's last fragment seen, then the round idle for a
 *   fraction of the estimate) or when the round is cancelled. Each
 *   completion is queued to the socket and read with recvmsg().
 *
 *   Senders need no round state: a message goes to one rank or to all
 *   peers (one multicast datagram per fragment when the communicator has a
 *   group, else one copy per peer), and is never retransmitted.
 *
 * Socket options (level = value of "sol")
 *   OPTIREDUCE_ABI_VERSION   get    __u32: OPTIREDUCE_ABI.
 *   OPTIREDUCE_JOIN          set    struct optireduce_join followed by
 *                                   nranks struct optireduce_addr (the peer
 *                                   table, indexed by rank). Once per socket.
 *                                   A communicator is its id and its
 *                                   secret: on the wire it is named by a
 *                                   32-bit id derived from both (the id
 *                                   itself when the secret is all zero), so
 *                                   one without the secret can neither
 *                                   name nor join it. Its members all
 *                                   belong to the uid of its first.
 *                                   With OPTIREDUCE_JOIN_AUTH its
 *                                   datagrams are also authenticated.
 *                           get    the same, as joined (secret zeroed).
 *   OPTIREDUCE_PACE_MBPS     set/get __u32: send rate of this socket, Mbit/s;
 *                                   0 = unpaced. Until set, the module
 *                                   parameter pace_mbps applies.
 *   OPTIREDUCE_SEND_FLAGS    get    __u32: the optireduce_send.flags this
 *                                   module takes (an addition within ABI 5:
 *                                   a module without it answers
 *                                   ENOPROTOOPT and takes none).
 *   OPTIREDUCE_RATE_START_MBPS set/get __u32: where rate control (module
 *                                   parameter rate_control) starts this
 *                                   socket's sending rate, Mbit/s, until
 *                                   its first step moves it: what the
 *                                   caller measured its path to carry
 *                                   (liboptireduce: its fastest reliable
 *                                   warm-up call). 0 = none: the socket's
 *                                   pace, else rate_max_mbps. Clamped to
 *                                   [rate_min_mbps, rate_max_mbps] when
 *                                   used. Added within ABI 5: a module
 *                                   without it (also reporting ABI 5)
 *                                   answers ENOPROTOOPT.
 *   OPTIREDUCE_STATS         get    struct optireduce_stats of this socket.
 *   OPTIREDUCE_ESTIMATE      get    struct optireduce_estimate.
 *
 * Control messages of sendmsg() (cmsg_level = "sol"), exactly one per call:
 *   OPTIREDUCE_CMSG_SEND     struct optireduce_send; the iovec is the data.
 *                            With MSG_DONTWAIT or O_NONBLOCK it fails
 *                            with EAGAIN, sending nothing, while another
 *                            send holds the socket; poll/epoll/io_uring
 *                            see POLLOUT again when that one is done. Once
 *                            it has the socket, a send may wait for pacing
 *                            and for buffer room (never past its timeout):
 *                            stopping mid-message would only cut it short.
 *                            Only a fatal signal interrupts those waits
 *                            (EINTR); caught signals and io_uring's task
 *                            work do not.
 *   OPTIREDUCE_CMSG_POST     struct optireduce_post; the iovec (one entry)
 *                            is the buffer to fill. Returns 0.
 *   OPTIREDUCE_CMSG_CANCEL   struct optireduce_cancel: complete every
 *                            pending post of a round as CANCELLED.
 *   OPTIREDUCE_CMSG_DEADLINE struct optireduce_deadline: move an open
 *                            round's deadline to deadline_us from now
 *                            (earlier or later; ENOENT when the round is
 *                            not open). For a caller that learns only
 *                            after posting when its senders started.
 *
 * recvmsg() fills the buffer with as many completion records as fit, each
 * a struct optireduce_completion followed by nranges struct optireduce_range
 * (the missing byte ranges, ascending); rec_len walks from one record to the
 * next. When not even the first record's ranges fit, as many ranges as fit
 * are returned, OPTIREDUCE_COMPL_TRUNC is set in its flags and MSG_TRUNC in
 * msg_flags; nmissing always counts them all. MSG_DONTWAIT and O_NONBLOCK
 * are honoured; poll/epoll/io_uring see POLLIN while a completion is queued.
 *
 * Every option and control message validates its size and contents: a wrong
 * size, rank, length, offset, flag or type is EINVAL; an unknown option is
 * ENOPROTOOPT. Other errors: EISCONN (joined twice), ENOTCONN (not joined),
 * EEXIST (a post for the same round/source/message is pending), ESTALE (the
 * round is older than one this socket already opened), ENOENT (cancel of a
 * round that is not open), ENOBUFS (max_rounds open), ENOMEM (also: the
 * buffer, pinned until its completion is read, would take the poster past
 * its RLIMIT_MEMLOCK; CAP_IPC_LOCK is exempt), EMSGSIZE (message
 * longer than OPTIREDUCE_MAX_MSG), EADDRINUSE (that communicator and rank
 * already joined in this namespace, or the communicator's members belong
 * to another user, or its wire id collides with another's: one errno
 * that tells nothing of which, or, at the namespace's first join,
 * another socket holds the module's UDP port there), ETIMEDOUT (a send reached its timeout
 * before every fragment left: tx_dropped counts those that did not), EAGAIN
 * (a send that must not wait, behind another).
 */
#ifndef _UAPI_LINUX_OPTIREDUCE_H
#define _UAPI_LINUX_OPTIREDUCE_H

#include <linux/types.h>

/* Bumped on any incompatible change of this header. */
#define OPTIREDUCE_ABI			5

#define OPTIREDUCE_SYSFS_PARAMS		"/sys/module/optireduce/parameters/"
#define OPTIREDUCE_SYSFS_FAMILY		OPTIREDUCE_SYSFS_PARAMS "family"
#define OPTIREDUCE_SYSFS_SOL		OPTIREDUCE_SYSFS_PARAMS "sol"

/* Load-time defaults; see "Discovery" above. 19 was AF_ECONET, removed in
 * Linux 3.5 and unused since.
 */
#define OPTIREDUCE_FAMILY_DEFAULT	19
#define OPTIREDUCE_SOL_DEFAULT		0x4f52
/* UDP port of the transport; module parameter "port". */
#define OPTIREDUCE_PORT_DEFAULT		18515

#define OPTIREDUCE_MAX_RANKS		1024
/* Largest message: offsets and lengths on the wire are 32-bit. */
#define OPTIREDUCE_MAX_MSG		0x7fffffffU
/* Largest rate OPTIREDUCE_PACE_MBPS and OPTIREDUCE_RATE_START_MBPS take. */
#define OPTIREDUCE_MAX_MBPS		1000000U
/* Destination "every peer" of struct optireduce_send. */
#define OPTIREDUCE_DST_ALL		0xffffffffU

/*
 * optireduce_send.flags. OPTIREDUCE_SEND_SCATTER, with dst
 * OPTIREDUCE_DST_ALL: the message's iovecs are one part per rank, exactly
 * nranks of them in rank order; every non-empty part but the sender's own
 * goes to its rank as message (round, msg), each at most
 * OPTIREDUCE_MAX_MSG, all of them interleaved batch by batch as a
 * fan-out's copies are. The flags a module takes: OPTIREDUCE_SEND_FLAGS.
 */
#define OPTIREDUCE_SEND_SCATTER		0x1U

/* Socket options, level "sol". */
enum {
	OPTIREDUCE_ABI_VERSION = 1,
	OPTIREDUCE_JOIN,
	OPTIREDUCE_PACE_MBPS,
	OPTIREDUCE_STATS,
	OPTIREDUCE_ESTIMATE,
	OPTIREDUCE_RATE_START_MBPS,
	OPTIREDUCE_SEND_FLAGS,
};

/* Control message types, level "sol". */
enum {
	OPTIREDUCE_CMSG_SEND = 1,
	OPTIREDUCE_CMSG_POST,
	OPTIREDUCE_CMSG_CANCEL,
	OPTIREDUCE_CMSG_DEADLINE,
};

/* An IPv4 address of a rank or a multicast group (IPv6 is not yet carried:
 * family must be AF_INET).
 */
struct optireduce_addr {
	__u16 family;		/* AF_INET */
	__u16 reserved;		/* 0 */
	__u32 ifindex;		/* multicast group: interface; peers: 0 */
	__u8 addr[16];		/* IPv4 in the first 4 bytes, network order */
};

/* Bytes of a communicator's secret: 256 bits. */
#define OPTIREDUCE_SECRET_LEN		32

/* OPTIREDUCE_JOIN; followed by nranks struct optireduce_addr. */
struct optireduce_join {
	__u32 comm;		/* communicator id, shared by all members */
	__u32 rank;		/* this socket's rank, < nranks */
	__u32 nranks;		/* 2 .. OPTIREDUCE_MAX_RANKS */
	__u32 flags;		/* OPTIREDUCE_JOIN_* */
	struct optireduce_addr group;	/* with OPTIREDUCE_JOIN_MCAST */
	__u32 mcast_ttl;	/* with OPTIREDUCE_JOIN_MCAST; 0 means 1 */
	__u32 reserved;		/* 0 */
	/*
	 * Known only to the communicator's members (random, from the
	 * library's rendezvous or the launcher): with comm, the
	 * communicator's identity. All zero: an open communicator, whose
	 * id anyone may guess (tests, tools). Write-only: reads as zero.
	 */
	__u8 secret[OPTIREDUCE_SECRET_LEN];
};

#define OPTIREDUCE_JOIN_MCAST		0x1U
/*
 * Authenticated datagrams: every datagram this member sends carries a
 * tag (OPTIREDUCE_AUTH_TAG_LEN bytes after its payload, a keyed MAC of
 * header and payload with a key derived from the secret), and every
 * datagram it receives must carry a valid one, or it is dropped and
 * counted in drop_auth. Needs a secret (EINVAL when all zero); every
 * member must set it alike. Integrity and origin only: the payload
 * still travels in the clear.
 */
#define OPTIREDUCE_JOIN_AUTH		0x2U
#define OPTIREDUCE_JOIN_FLAGS		(OPTIREDUCE_JOIN_MCAST | \
					 OPTIREDUCE_JOIN_AUTH)
#define OPTIREDUCE_AUTH_TAG_LEN		16

/* OPTIREDUCE_CMSG_SEND */
struct optireduce_send {
	__u32 round;
	__u32 msg;		/* message id, chosen by the application */
	__u32 dst;		/* a rank, or OPTIREDUCE_DST_ALL */
	__u32 flags;		/* 0 or OPTIREDUCE_SEND_SCATTER */
	/* A paced send stops once this much time passed (0: the socket's
	 * deadline estimate) and reports what it sent; never blocks longer.
	 */
	__u32 timeout_us;
	__u32 reserved;		/* 0 */
};

/* OPTIREDUCE_CMSG_POST */
struct optireduce_post {
	__u32 round;
	__u32 msg;
	__u32 src;		/* the sending rank */
	__u32 flags;		/* OPTIREDUCE_POST_* */
	/* Used when this post opens its round: the round's deadline from
	 * now; 0 = adaptive (OPTIREDUCE_ESTIMATE).
	 */
	__u32 deadline_us;
	/* Used when this post opens its round: the typical time of such a
	 * round, which the early timeout's idle window is early_idle_pct
	 * percent of (a caller that measures its rounds, as the library's
	 * moving average does); 0 = the socket's estimate. At most
	 * 60 s, like deadline_us.
	 */
	__u32 early_us;
	__u64 user_data;	/* echoed in the completion */
};

/* More posts of this round follow: it cannot end early before they come. */
#define OPTIREDUCE_POST_MORE		0x1U

/* OPTIREDUCE_CMSG_CANCEL */
struct optireduce_cancel {
	__u32 round;
	__u32 reserved;		/* 0 */
};

/* OPTIREDUCE_CMSG_DEADLINE */
struct optireduce_deadline {
	__u32 round;
	__u32 deadline_us;	/* from now: 1 .. 60 s, like a post's */
};

enum optireduce_status {
	OPTIREDUCE_COMPLETE = 0,	/* every byte arrived */
	OPTIREDUCE_EXPIRED,		/* the round's deadline passed */
	OPTIREDUCE_EARLY,		/* ended by the early timeout */
	OPTIREDUCE_CANCELLED,		/* OPTIREDUCE_CMSG_CANCEL */
};

struct optireduce_range {
	__u32 offset;
	__u32 len;
};

struct optireduce_completion {
	__u32 rec_len;		/* this record with its ranges, bytes */
	__u32 status;		/* enum optireduce_status */
	__u32 round;
	__u32 msg;
	__u32 src;
	__u32 flags;		/* OPTIREDUCE_COMPL_* */
	__u64 user_data;
	__u32 len;		/* posted length */
	__u32 received;		/* distinct bytes that arrived */
	__u32 nmissing;		/* missing ranges, all of them */
	__u32 nranges;		/* missing ranges in this record */
	__u64 elapsed_ns;	/* from the round's opening */
	struct optireduce_range ranges[];
};

/* The sender's last fragment arrived. */
#define OPTIREDUCE_COMPL_LAST_SEEN	0x1U
/* Not every missing range fitted: nranges < nmissing. */
#define OPTIREDUCE_COMPL_TRUNC		0x2U
/* The last fragment did not come, but a fragment of a later round from
 * the same sender did: senders send rounds in order, so it sent all it
 * would of this message (what is missing was lost). Such a round may end
 * by the early timeout, after an idle window of a whole typical round.
 */
#define OPTIREDUCE_COMPL_MOVED_ON	0x4U
/* Neither the last fragment came nor did the sender move on, but its
 * message had begun to arrive and then the round fell silent for a whole
 * typical round: the rest (and its LAST fragment) was lost, or the sender
 * stalled for longer than a round takes. Only with OPTIREDUCE_EARLY.
 */
#define OPTIREDUCE_COMPL_STALLED	0x8U

/* Counters of a socket (OPTIREDUCE_STATS) and of a namespace
 * (/proc/net/optireduce). Only ever grow.
 */
struct optireduce_stats {
	__u64 rounds_opened;
	__u64 rounds_completed;		/* every post complete */
	__u64 rounds_expired;		/* at the deadline */
	__u64 rounds_early;		/* by the early timeout */
	__u64 rounds_cancelled;
	__u64 tx_packets;
	__u64 tx_bytes;			/* payload */
	/* Fragments of a destination's message that did not leave once
	 * its sending began (timeout, fault, no route); a batch that
	 * failed counts whole.
	 */
	__u64 tx_dropped;
	__u64 rx_packets;		/* placed in a posted buffer */
	__u64 rx_bytes;			/* payload placed */
	__u64 rx_duplicate;		/* fragments already received */
	__u64 drop_malformed;
	__u64 drop_unknown_comm;
	__u64 drop_foreign_source;
	__u64 drop_stale_round;
	__u64 drop_no_post;
	__u64 drop_out_of_bounds;
	__u64 bytes_lost;		/* missing bytes of ended posts */
	__u64 backlog_queued;		/* fragments held for a later post */
	__u64 drop_nomem;		/* no memory to track or hold one
					 * (or its message in 4096 pieces)
					 */
	__u64 rx_gso_batches;		/* UDP GSO/GRO batches taken whole;
					 * namespace only, 0 per socket
					 */
	__u64 rx_steered;		/* batches placed on the reader's
					 * CPU (steer.c); namespace only
					 */
	/* Not held for later: the socket's receive buffer (SO_RCVBUF),
	 * its memory cgroup or the module's mem_max_kb was full.
	 */
	__u64 drop_mem_limit;
	/* With OPTIREDUCE_JOIN_AUTH: a missing or wrong tag (forged,
	 * altered on the way, or from a member that does not authenticate).
	 */
	__u64 drop_auth;
};

/* OPTIREDUCE_ESTIMATE: the adaptive deadline as it stands. */
struct optireduce_estimate {
	__u32 deadline_us;	/* what the next adaptive round would get */
	__u32 typical_us;	/* the percentile before the margin */
	__u32 samples;		/* completion times it is based on */
	__u32 reserved;
};

/*
 * Generic netlink family OPTIREDUCE_GENL_NAME, version OPTIREDUCE_GENL_VERSION,
 * per network namespace. Reads are open to everyone, but a socket's
 * communicator, rounds, counters and estimate (SOCK_GET) and the
 * communicators it stands for (COMM_GET) only to its owner and to readers
 * with CAP_NET_ADMIN over the namespace: others get SOCK_INODE and
 * SOCK_UID alone, as /proc/net/optireduce shows them. Commands marked (admin)
 * need CAP_NET_ADMIN (PARAM_SET: in the initial user namespace, since it
 * changes the whole module; STATS_RESET: over the network namespace).
 *
 *   OPTIREDUCE_CMD_SOCK_GET    dump: one message per socket of the namespace:
 *       SOCK_INODE u64, SOCK_UID u32 (in the reader's user namespace),
 *       SOCK_PACE_MBPS u32, SOCK_ROUNDS u32 (open), SOCK_COMPLETIONS u32
 *       (queued), STATS (nested, one u64 per counter), and if joined:
 *       COMM_ID u32, COMM_RANK u32, COMM_NRANKS u32, COMM_GROUP be32
 *       (multicast only), ESTIMATE (nested ESTIMATE_*), once rate
 *       control (module parameter rate_control) moved the rate or saw a
 *       drop: SOCK_RATE_MBPS u32, SOCK_RATE_CUTS u64, SOCK_RATE_RAISES
 *       u64, SOCK_QUEUE_DROPS u64 (the communicator's rate and its steps),
 *       SOCK_RATE_HOLDS u64 (reports that left it: marked too lightly to
 *       cut, or clean while the sender did not reach the rate),
 *       SOCK_RATE_UNREACHED u64 (those clean ones: no send waited for
 *       the rate, or the sender fell behind it more than it kept it),
 *       SOCK_RATE_FOREIGN u64 (marked reports taken as a standing queue
 *       another sender keeps: they probed instead of cutting),
 *       SOCK_RATE_UPLINK u64 (of those, the ones taken as such a queue on
 *       our own uplink, judged from several receivers' reports),
 *       SOCK_RATE_FOREIGN_LOSS u64 (losses that cut the rate while
 *       the queue was judged another's: they kept 70% of it, or
 *       rate_md_pct if more, instead of rate_md_pct),
 *       SOCK_RATE_DRAINED u64 (marked reports whose queue had drained
 *       before they ended: they raised as clean ones),
 *       SOCK_RATE_KNEE_MBPS u32 (where a measured start set a knee),
 *       and once it has state for a rank, SOCK_PEERS (nested PEERS_PEER,
 *       each nested PEER_*: that rank's reports and marks; as many ranks
 *       as fit one message)
 *   OPTIREDUCE_CMD_COMM_GET    dump: one message per communicator with a
 *       member in the namespace: COMM_ID, COMM_NRANKS, COMM_GROUP,
 *       COMM_MEMBERS (nested COMM_RANK u32 of each local member)
 *   OPTIREDUCE_CMD_STATS_GET   do: the namespace's counters, STATS
 *   OPTIREDUCE_CMD_STATS_RESET do (admin of the namespace): zero the
 *       namespace's and all its sockets' counters
 *   OPTIREDUCE_CMD_PARAM_GET   dump, or do with PARAM_NAME: PARAM_NAME
 *       string, PARAM_VALUE u32, PARAM_MIN u32, PARAM_MAX u32,
 *       PARAM_WRITABLE flag
 *   OPTIREDUCE_CMD_PARAM_SET   do (admin): PARAM_NAME, PARAM_VALUE; the same
 *       validation as the sysfs parameter (EINVAL, value unchanged)
 *
 * Multicast group OPTIREDUCE_GENL_MCGRP_EVENTS, per namespace; joining it
 * needs CAP_NET_ADMIN (events name every user's communicators):
 *   OPTIREDUCE_CMD_EVENT_ROUND_EXPIRED  a round reached its deadline with
 *       bytes missing: COMM_ID, COMM_RANK, EVENT_ROUND u32, EVENT_LOST u64
 *       (bytes), EVENT_EXPECTED u64 (bytes posted)
 *   OPTIREDUCE_CMD_EVENT_LOSS_ALARM     a round ended with more than
 *       loss_alarm_ppm of its posted bytes missing: the same attributes
 */
#define OPTIREDUCE_GENL_NAME		"optireduce"
#define OPTIREDUCE_GENL_VERSION		1
#define OPTIREDUCE_GENL_MCGRP_EVENTS	"events"

enum {
	OPTIREDUCE_CMD_UNSPEC,
	OPTIREDUCE_CMD_SOCK_GET,
	OPTIREDUCE_CMD_COMM_GET,
	OPTIREDUCE_CMD_STATS_GET,
	OPTIREDUCE_CMD_STATS_RESET,
	OPTIREDUCE_CMD_PARAM_GET,
	OPTIREDUCE_CMD_PARAM_SET,
	OPTIREDUCE_CMD_EVENT_ROUND_EXPIRED,
	OPTIREDUCE_CMD_EVENT_LOSS_ALARM,
	__OPTIREDUCE_CMD_MAX
};

#define OPTIREDUCE_CMD_MAX (__OPTIREDUCE_CMD_MAX - 1)

enum {
	OPTIREDUCE_A_UNSPEC,
	OPTIREDUCE_A_PAD,
	OPTIREDUCE_A_SOCK_INODE,	/* u64 */
	OPTIREDUCE_A_SOCK_UID,		/* u32 */
	OPTIREDUCE_A_SOCK_PACE_MBPS,	/* u32 */
	OPTIREDUCE_A_SOCK_ROUNDS,	/* u32 */
	OPTIREDUCE_A_SOCK_COMPLETIONS,	/* u32 */
	OPTIREDUCE_A_COMM_ID,		/* u32 */
	OPTIREDUCE_A_COMM_RANK,		/* u32 */
	OPTIREDUCE_A_COMM_NRANKS,	/* u32 */
	OPTIREDUCE_A_COMM_GROUP,	/* be32 */
	OPTIREDUCE_A_COMM_MEMBERS,	/* nested COMM_RANK */
	OPTIREDUCE_A_STATS,		/* nested OPTIREDUCE_STAT_* u64 */
	OPTIREDUCE_A_ESTIMATE,		/* nested OPTIREDUCE_ESTIMATE_* u32 */
	OPTIREDUCE_A_PARAM_NAME,	/* string */
	OPTIREDUCE_A_PARAM_VALUE,	/* u32 */
	OPTIREDUCE_A_PARAM_MIN,		/* u32 */
	OPTIREDUCE_A_PARAM_MAX,		/* u32 */
	OPTIREDUCE_A_PARAM_WRITABLE,	/* flag */
	OPTIREDUCE_A_EVENT_ROUND,	/* u32 */
	OPTIREDUCE_A_EVENT_LOST,	/* u64 */
	OPTIREDUCE_A_EVENT_EXPECTED,	/* u64 */
	OPTIREDUCE_A_SOCK_PEERS,	/* nested OPTIREDUCE_PEERS_PEER */
	OPTIREDUCE_A_SOCK_RATE_MBPS,	/* u32: rate control's sending rate */
	OPTIREDUCE_A_SOCK_RATE_CUTS,	/* u64: ... congestion steps taken */
	OPTIREDUCE_A_SOCK_RATE_RAISES,	/* u64: ... clean steps taken */
	OPTIREDUCE_A_SOCK_QUEUE_DROPS,	/* u64: batches our own queue dropped */
	OPTIREDUCE_A_SOCK_RATE_KNEE_MBPS, /* u32: ... above which it probes slowly */
	OPTIREDUCE_A_SOCK_RATE_HOLDS,	/* u64: reports that left the rate */
	OPTIREDUCE_A_SOCK_RATE_FOREIGN,	/* u64: marks heard as another's queue */
	OPTIREDUCE_A_SOCK_RATE_DRAINED,	/* u64: marks from a queue that drained */
	OPTIREDUCE_A_SOCK_RATE_UNREACHED, /* u64: clean reports, rate not reached */
	OPTIREDUCE_A_SOCK_RATE_UPLINK,	/* u64: marks heard as our uplink's queue */
	OPTIREDUCE_A_SOCK_RATE_FOREIGN_LOSS, /* u64: losses cut to 70% beside one */
	__OPTIREDUCE_A_MAX
};

#define OPTIREDUCE_A_MAX (__OPTIREDUCE_A_MAX - 1)

/* Inside OPTIREDUCE_A_ESTIMATE. */
enum {
	OPTIREDUCE_ESTIMATE_UNSPEC,
	OPTIREDUCE_ESTIMATE_DEADLINE_US,
	OPTIREDUCE_ESTIMATE_TYPICAL_US,
	OPTIREDUCE_ESTIMATE_SAMPLES,
	__OPTIREDUCE_ESTIMATE_MAX
};

/* Inside OPTIREDUCE_A_SOCK_PEERS: one nest per rank. */
enum {
	OPTIREDUCE_PEERS_UNSPEC,
	OPTIREDUCE_PEERS_PEER,		/* nested OPTIREDUCE_PEER_* */
	__OPTIREDUCE_PEERS_MAX
};

/* Inside OPTIREDUCE_PEERS_PEER: rate control's state for one rank. */
enum {
	OPTIREDUCE_PEER_UNSPEC,
	OPTIREDUCE_PEER_PAD,
	OPTIREDUCE_PEER_RANK,		/* u32 */
	OPTIREDUCE_PEER_RATE_MBPS,	/* u32: what a send to it leaves at */
	OPTIREDUCE_PEER_REPORTS,	/* u64: its reports received */
	OPTIREDUCE_PEER_DECREASES,	/* u64: ... that were congestion */
	OPTIREDUCE_PEER_INCREASES,	/* u64: ... that were clean */
	OPTIREDUCE_PEER_LOSS_PPM,	/* u32: loss in its last report */
	OPTIREDUCE_PEER_CE_PPM,		/* u32: CE marks in its last report */
	OPTIREDUCE_PEER_CE_RX,		/* u64: CE-marked datagrams from it */
	OPTIREDUCE_PEER_EARLY,		/* u64: our reports to it published
					 * before its message ended (marks)
					 */
	OPTIREDUCE_PEER_STALE,		/* u64: its reports about traffic sent
					 * before our last cut, not applied
					 */
	OPTIREDUCE_PEER_FOREIGN,	/* u64: its marked reports taken as a
					 * queue another sender keeps
					 */
	OPTIREDUCE_PEER_DRAINED,	/* u64: its marked reports whose queue
					 * drained before they ended
					 */
	__OPTIREDUCE_PEER_MAX
};

/*
 * Inside OPTIREDUCE_A_STATS: attribute type i + 1 carries field i of
 * struct optireduce_stats (rounds_opened is 1, ..., drop_auth is 24).
 */
#define OPTIREDUCE_STAT_ATTR(field_index)	((field_index) + 1)

#endif /* _UAPI_LINUX_OPTIREDUCE_H */
