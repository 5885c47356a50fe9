/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rate control: one sending rate per communicator (the host's path into
 * the fabric), adapted from what every rank reports of our traffic in the
 * header's feedback word (loss of the messages it expected from us, ECN
 * CE marks on our datagrams) and from our own queue's drops. Off unless
 * the rate_control tunable is set; then the pacer of send.c spaces every
 * message at that rate. Design.md, "Rate control", explains the
 * algorithm; wire-format.md the feedback word.
 *
 * Locking: struct optr_rate lives in the communicator. Everything in it
 * changes under osk->lock (the receive path, the round ends, and a send
 * that saw its queue drop, which takes it); the send path, which holds
 * only osk->tx_lock, reads the rate, the epoch and fb_word and writes
 * fb_sent, tx_forced, tx_at and the path's limited, paced_ns and
 * behind_ns with READ_ONCE/WRITE_ONCE, single words that need no lock
 * (the send path alone adds to the last two; a move notes where they
 * stood in paced_from and behind_from).
 */
#ifndef _OPTR_RATE_H
#define _OPTR_RATE_H

#include <linux/ktime.h>
#include <linux/types.h>

struct optr_frag;
struct optr_ranges;
struct optr_sock;
struct sk_buff;

/* The feedback word (wire-format.md, "Feedback"). */
#define OPTR_FB_VALID		0x80000000U	/* a report is present */
#define OPTR_FB_SEQ_SHIFT	24
#define OPTR_FB_SEQ_MASK	0x7fU
#define OPTR_FB_LOSS_SHIFT	16
#define OPTR_FB_CE_SHIFT	8
/*
 * The low byte: epochs. The sender's epoch (its count of rate moves, cuts
 * and raises, mod 8) on every datagram, and with a report the echo of the
 * epoch the reported rank stamped on the first datagram the report covers;
 * EPOCHS says both are there (a module from before them sends the byte 0).
 */
#define OPTR_FB_EPOCHS		0x80U
#define OPTR_FB_ECHO_SHIFT	4
#define OPTR_FB_EPOCH_MASK	0x7U
/*
 * With a report whose datagrams were marked: the last
 * OPTR_RATE_DRAINED_DGRAMS of them came unmarked, the queue that marked
 * them drained before the report ended (optr_rate_judge()). A module from
 * before it sends the bit 0: every marked report then stands.
 */
#define OPTR_FB_DRAINED		0x08U
/* Fractions are in 255ths, rounded up: any loss or mark is at least 1. */
#define OPTR_FB_FRAC_ONE	255U

/*
 * A report carrying more loss than this (in 255ths, about 0.8%) is a
 * congestion signal; less is noise a lossy path or a late sender makes.
 */
#define OPTR_RATE_LOSS_MIN	2U
/* Consecutive clean reports that raise the increase, at most this many steps. */
#define OPTR_RATE_CLEAN_MAX	16U
/*
 * An additive step is at most this fraction of the rate (1/8): near a
 * slow link a step of rate_step_mbps times the run would overshoot it
 * by more than its queue holds.
 */
#define OPTR_RATE_STEP_SHIFT	3
/*
 * After a cut, this many clean reports each halve the distance back to
 * the rate before it (as DCQCN's fast recovery) before additive steps
 * probe beyond it.
 */
#define OPTR_RATE_RECOVER	3U
/*
 * Above the knee (the start rate the caller measured, plus rate_knee_pct)
 * a clean report adds 1/2^OPTR_RATE_KNEE_SHIFT of the rate, its fraction
 * of a Mbit/s (in 2^-OPTR_RATE_CREDIT_SHIFT) carried to the next: a whole
 * run of OPTR_RATE_CLEAN_MAX clean reports adds an eighth, where below it
 * a single one may.
 */
#define OPTR_RATE_KNEE_SHIFT	(OPTR_RATE_STEP_SHIFT + 4)
#define OPTR_RATE_CREDIT_SHIFT	8
/*
 * Our own queue dropped a datagram: the rate is above our link's. One cut
 * per this long at most, time for the cut rate to show in the queue.
 */
#define OPTR_RATE_QUEUE_GAP_NS	(1 * NSEC_PER_MSEC)
/*
 * A receiver publishes a report about a sender's traffic at each end of
 * a message from it and, once this many of its datagrams came since the
 * last report and some of them were CE-marked, before the end: a mark
 * reaches its sender within a few dozen datagrams instead of a message
 * later (at 4 MiB calls in the 8-rank fabric a message took seconds,
 * and the queues overflowed long before its report came).
 */
#define OPTR_RATE_REPORT_DGRAMS	32U
/*
 * A standing queue another sender keeps on the way to one receiver
 * (optr_rate_heed()): OPTR_RATE_FOREIGN_RUN reports in a row from it with
 * at least OPTR_RATE_FOREIGN_CE of their datagrams marked (7/8), while
 * another receiver reported a clean path or the rate fell to
 * 2^-OPTR_RATE_FOREIGN_SHIFT of where they began (or to the floor). Our
 * load is about the same at every receiver's port and about our rate
 * (design.md, "Why one rate"), so a queue that stands at one port only,
 * or through such cuts, is not ours. Its marks then stop counting as
 * congestion until OPTR_RATE_FOREIGN_CLEAN clean reports from it in a
 * row say the queue is gone. The same run and cuts with the reports of
 * more than one receiver make our own uplink's queue foreign
 * (optr_rate_uplink()). At the floor every marked report counts in the
 * run, however lightly marked (optr_rate_run()).
 */
#define OPTR_RATE_FOREIGN_CE	224U
#define OPTR_RATE_FOREIGN_RUN	4U
#define OPTR_RATE_FOREIGN_SHIFT	3
#define OPTR_RATE_FOREIGN_CLEAN	4U
/*
 * Loss where the queue is judged another sender's keeps at least this
 * percent of the rate (optr_rate_loss_keep()): the flow that keeps such
 * a queue answers only loss, and Linux's default TCP, CUBIC, keeps 70%
 * of its window on one (RFC 9438's beta). Halving beside it, the rank
 * whose uplink a long flow shared sent at a third of the link to the
 * flow's two thirds (results.md, "Our own uplink's queue").
 */
#define OPTR_RATE_FOREIGN_KEEP_PCT	70U
/*
 * Beside a foreign queue the rate probes by 1 Mbit/s per this much time
 * since its last move (optr_rate_probe_steps()), up to
 * OPTR_RATE_FOREIGN_STEPS in one report: about the pace of a loss-driven
 * flow's additive increase, a segment per round trip, which at the 25-35
 * ms round trips of a full 128 KiB queue on a 30 Mbit/s port is 10-15
 * Mbit/s a second. In time, not per report: a receiver's reports ride on
 * its own data, and one whose messages leave in a short burst a round
 * reports once a round (twice a second in rate_fair_test.sh), which at 1
 * Mbit/s a report took seconds to climb back from an eighth of the rate.
 */
#define OPTR_RATE_FOREIGN_PROBE_NS	(100 * NSEC_PER_MSEC)
#define OPTR_RATE_FOREIGN_STEPS	4U
/*
 * A marked report's last this many datagrams came unmarked: the queue
 * that marked the others drained while the sender went on at its rate
 * (OPTR_FB_DRAINED). A RED queue marks on its average, which lags the
 * queue: marks go on for some datagrams after the queue fell under the
 * threshold, and a quarter of a report (OPTR_RATE_REPORT_DGRAMS) without
 * one says it fell.
 */
#define OPTR_RATE_DRAINED_DGRAMS	8U

/* What a report says about the path. */
enum optr_rate_verdict {
	OPTR_RATE_CLEAN,	/* no mark, no loss above OPTR_RATE_LOSS_MIN */
	OPTR_RATE_MARKED,	/* CE marks, no such loss */
	OPTR_RATE_LOSSY,	/* loss above OPTR_RATE_LOSS_MIN */
	OPTR_RATE_FOREIGN,	/* marks from a queue another sender keeps */
	OPTR_RATE_DRAINED,	/* marks from a queue that drained since */
};

struct optr_rate_report {
	u8 seq;			/* 0..OPTR_FB_SEQ_MASK */
	u8 loss;		/* bytes missing / bytes expected, 255ths */
	u8 ce;			/* CE-marked datagrams / datagrams, 255ths */
	bool drained;		/* with ce: its last datagrams came unmarked */
	bool epochs;		/* the reporter speaks epochs: echo is valid */
	u8 echo;		/* our epoch on the first datagram it covers */
};

/* The tunables, read once per decision. */
struct optr_rate_cfg {
	u32 min_mbps;
	u32 max_mbps;
	u32 step_mbps;
	u32 md_pct;		/* percent of the rate kept on congestion */
	u32 knee_pct;		/* the knee above the measured start, percent */
	u32 knee_mbps;		/* this communicator's knee; 0: none */
	bool foreign;		/* rate_foreign: judge foreign queues */
	bool drained;		/* rate_drained: a drained queue's marks raise */
};

/* The rate's state, and the step that moves it (optr_rate_step()). */
struct optr_rate_state {
	u32 rate_mbps;		/* 0: not adapted yet, start value */
	u32 target_mbps;	/* before the last cut */
	u8 recover;		/* clean reports left that head back to it */
	u8 clean;		/* consecutive clean reports, capped */
	u8 credit;		/* above the knee: 256ths of a Mbit/s owed */
};

/* One receiver's port, or our own uplink, as reports tell
 * (optr_rate_heed(), optr_rate_uplink()).
 */
struct optr_rate_heed {
	u8 run;			/* heavily marked reports in a row */
	bool foreign;		/* its queue is another sender's */
	u8 clean;		/* ... clean reports since, in a row */
	bool mixed;		/* the uplink's run has more than one receiver's */
	u32 first;		/* ... the receiver of its first */
	u32 others_at;		/* the path's clean reports when run began */
	u32 from_mbps;		/* the rate when it began */
};

/* The communicator's sending rate (towards every rank). */
struct optr_rate_path {
	struct optr_rate_state st;
	struct optr_rate_heed uplink;	/* our own uplink's queue */
	ktime_t cut_at;		/* when a report or drop last cut it */
	ktime_t probe_at;	/* foreign probes counted up to here */
	u64 cuts;		/* congestion steps taken */
	u64 raises;		/* clean steps that moved it */
	u64 holds;		/* reports that left it as it was */
	u64 foreign;		/* marked reports heard as a foreign queue's */
	u64 uplink_foreign;	/* ... as our own uplink's */
	u64 foreign_losses;	/* losses cut gently beside such a queue */
	u64 drained;		/* marked reports whose queue had drained */
	u64 unreached;		/* clean reports on a rate not reached */
	u32 clean_reports;	/* clean reports from any rank, wrapping */
	bool limited;		/* it held a send back since its last move */
	u64 paced_ns;		/* what left, at the rate it left at */
	u64 behind_ns;		/* time the sender fell behind it for good */
	u64 paced_from;		/* ... where they stood at the last move */
	u64 behind_from;
	u8 epoch;		/* moves, mod OPTR_FB_EPOCH_MASK + 1 */
	u64 queue_drops;	/* batches our own queue dropped */
};

struct optr_rate_peer {
	/* As a sender to this rank. */
	ktime_t tx_at;		/* the last send to it began */
	bool have_seq;		/* last_seq is valid */
	u8 last_seq;		/* of the last report applied */
	u8 last_loss;		/* ... and what it said */
	u8 last_ce;
	bool tx_forced;		/* a send to it met its timeout since */
	u64 reports;		/* reports received */
	u64 decreases;		/* ... that said congestion */
	u64 increases;		/* ... that were clean */
	struct optr_rate_heed heed;	/* its port's queue */
	u64 foreign;		/* its marked reports heard as foreign */
	u64 drained;		/* ... whose queue had drained */
	/* As a receiver of this rank: what the next report covers. */
	u64 acc_expected;	/* of its messages that ended, bytes up to
				 * the furthest that came in each
				 */
	u64 acc_missing;	/* ... missing when they did */
	u32 acc_dgrams;		/* its datagrams received */
	u32 acc_ce;		/* ... with CE set */
	u32 acc_tail;		/* ... unmarked since the last marked one */
	u8 acc_echo;		/* its epoch on the first of them */
	/* What the published report covers, until it was sent. */
	u64 pub_expected;
	u64 pub_missing;
	u32 pub_dgrams;
	u32 pub_ce;
	u32 pub_tail;
	u8 pub_echo;
	u8 seq;			/* of the published report */
	bool fb_sent;		/* it went out at least once */
	u32 fb_word;		/* host order; 0: nothing to report */
	u64 ce_rx;		/* CE-marked datagrams received from it */
	u64 early;		/* reports to it published before a message end */
	u64 stale;		/* its reports about traffic before our cut */
};

struct optr_rate {
	struct optr_rate_path path;
	struct optr_rate_peer peer[];	/* per rank */
};

/* Pure logic (KUnit-tested). */
u32 optr_rate_encode(const struct optr_rate_report *r);
bool optr_rate_decode(u32 word, struct optr_rate_report *r);
bool optr_rate_epoch(u32 word, u8 *epoch);
u8 optr_rate_frac(u64 part, u64 whole);
enum optr_rate_verdict optr_rate_judge(const struct optr_rate_report *r,
				       bool tx_forced);
u32 optr_rate_aimd(u32 rate, enum optr_rate_verdict v, u8 ce, u8 *clean,
		   const struct optr_rate_cfg *cfg);
enum optr_rate_verdict optr_rate_heed(struct optr_rate_heed *h,
				      enum optr_rate_verdict v, u8 ce,
				      u32 clean_reports, u32 rate_mbps,
				      const struct optr_rate_cfg *cfg);
enum optr_rate_verdict optr_rate_uplink(struct optr_rate_heed *u, u32 src,
					enum optr_rate_verdict v, u8 ce,
					u32 rate_mbps,
					const struct optr_rate_cfg *cfg);
u32 optr_rate_loss_keep(u32 md_pct, bool foreign);
u32 optr_rate_probe_steps(ktime_t *at, ktime_t now);
u32 optr_rate_step(struct optr_rate_state *s, enum optr_rate_verdict v, u8 ce,
		   const struct optr_rate_cfg *cfg);
bool optr_rate_reached(const struct optr_rate_path *path);
u32 optr_rate_path_move(struct optr_rate_path *path, enum optr_rate_verdict v,
			u8 ce, u32 old, ktime_t now,
			const struct optr_rate_cfg *cfg);
u32 optr_rate_start(u32 start_mbps, u32 fixed_mbps,
		    const struct optr_rate_cfg *cfg);
u32 optr_rate_knee(u32 start_mbps, const struct optr_rate_cfg *cfg);
u32 optr_rate_needed(u64 bytes, s64 ns);
u32 optr_rate_seen(const struct optr_ranges *got, u32 *missing);
bool optr_rate_count(struct optr_rate_peer *p, u8 epoch, bool ce);
bool optr_rate_end(struct optr_rate_peer *p, u32 judged, u32 missing);

bool optr_rate_enabled(void);
void optr_rate_cfg_get(struct optr_rate_cfg *cfg);

/* The communicator's state. */
struct optr_rate *optr_rate_alloc(u32 nranks);
void optr_rate_free(struct optr_rate *rate);

/* Send path (osk->tx_lock). */
u32 optr_rate_mbps(struct optr_sock *osk, u32 fixed_mbps);
u32 optr_rate_in_time(u32 mbps, u64 left, s64 ns);
u32 optr_rate_tx_begin(struct optr_sock *osk, u32 dst);
void optr_rate_paced(struct optr_sock *osk, bool held, u64 paced_ns,
		     u64 behind_ns);
u32 optr_rate_tx_word(struct optr_sock *osk, u32 dst);
void optr_rate_tx_forced(struct optr_sock *osk, u32 dst);
void optr_rate_queue_drop(struct optr_sock *osk, u32 dst, bool hurried);
u8 optr_rate_tos(void);

/* Receive path and round ends (osk->lock). */
void optr_rate_rx(struct optr_sock *osk, const struct optr_frag *f, bool ce);
void optr_rate_msg_end(struct optr_sock *osk, u32 src,
		       const struct optr_ranges *got);

/* Netlink: a joined socket's rate (OPTIREDUCE_A_SOCK_RATE_*) and per-rank
 * state (OPTIREDUCE_A_SOCK_PEERS).
 */
int optr_rate_nl_put(struct sk_buff *skb, struct optr_sock *osk);

#endif /* _OPTR_RATE_H */
