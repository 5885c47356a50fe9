// SPDX-License-Identifier: GPL-2.0
/*
 * Rate control: one sending rate per communicator. Every rank reports, in
 * the feedback word of the datagrams it sends us anyway (Transpose
 * AllReduce sends both ways between every pair within a call), what it saw
 * of our traffic: the loss of the messages it expected from us and the
 * fraction of our datagrams a switch marked CE, at every end of a message
 * and every few dozen datagrams before it. Each sender stamps its epoch
 * (its count of moves, cuts and raises) on its datagrams and each report
 * echoes it, so a report about traffic sent since the rate last moved is
 * known as such, however long the send it came from, and the rate moves
 * at most once per report about its current value (with clean reports
 * every few dozen datagrams from each of seven peers, a raise on each
 * tripled the rate before the first report about a raised rate came
 * back). Such a report moves the rate: down by rate_md_pct on loss above
 * OPTR_RATE_LOSS_MIN, in proportion to the fraction marked on marks (as
 * DCTCP) that last to the report's end; up on a clean one (or one whose
 * queue drained before it ended: OPTR_FB_DRAINED), first halfway back to
 * the rate before the last cut (OPTR_RATE_RECOVER times, as DCQCN's fast
 * recovery), then by a
 * step that grows with a run of clean reports but stays under an eighth
 * of the rate; neither past the knee (rate_knee_pct above the start the
 * caller measured), above which a clean report adds 1/128 of the rate.
 * A clean report raises only a rate that held a send back since the
 * rate last moved: one the sender does not reach (a busy CPU, a receiver
 * it waits for) says nothing of the path, and raised on it would let the
 * next send that can leave at once overrun every queue. A drop in our
 * own queue cuts it as a lossy report would,
 * once per send at most. Always within [rate_min_mbps, rate_max_mbps].
 * Loss counts only below the furthest byte that came (optr_rate_seen()):
 * what had not come when a message ended was late, not dropped.
 *
 * One rate, not one per destination: a socket sends one message at a time
 * (its send lock), so every destination shares its host's link, and a call
 * ends with its slowest peer anyway; one rate learns from every peer's
 * reports at once. Incast at a receiver's port is the library's incast
 * limit's and the interleaved copies of a fan-out's (send.c). The rate only
 * spaces datagrams: a send still ends at its timeout and a round at its
 * deadline.
 *
 * The pure functions at the top are KUnit-tested (tests/kunit.c).
 */

#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/inet_ecn.h>
#include <uapi/linux/optireduce.h>

#include "comm.h"
#include "params.h"
#include "ranges.h"
#include "rate.h"
#include "round.h"
#include "sock.h"
#include "trace.h"
#include "wire.h"

/* The feedback word travels in optr_frag, which a backlogged skb's cb holds. */
static_assert(sizeof(struct optr_skb_cb) <= sizeof_field(struct sk_buff, cb));

/* A report's word; the sender's own epoch (bits 2..0) is added as each
 * datagram leaves (optr_rate_tx_word()).
 */
u32 optr_rate_encode(const struct optr_rate_report *r)
{
	return OPTR_FB_VALID |
	       (u32)(r->seq & OPTR_FB_SEQ_MASK) << OPTR_FB_SEQ_SHIFT |
	       (u32)r->loss << OPTR_FB_LOSS_SHIFT |
	       (u32)r->ce << OPTR_FB_CE_SHIFT |
	       (r->ce && r->drained ? OPTR_FB_DRAINED : 0) |
	       (r->epochs ? OPTR_FB_EPOCHS |
			    (r->echo & OPTR_FB_EPOCH_MASK) << OPTR_FB_ECHO_SHIFT :
			    0);
}

/* False for a word that carries no report (0, as every sender without
 * rate control sends).
 */
bool optr_rate_decode(u32 word, struct optr_rate_report *r)
{
	if (!(word & OPTR_FB_VALID))
		return false;
	r->seq = (word >> OPTR_FB_SEQ_SHIFT) & OPTR_FB_SEQ_MASK;
	r->loss = (word >> OPTR_FB_LOSS_SHIFT) & 0xff;
	r->ce = (word >> OPTR_FB_CE_SHIFT) & 0xff;
	r->drained = r->ce && (word & OPTR_FB_DRAINED);
	r->epochs = word & OPTR_FB_EPOCHS;
	r->echo = (word >> OPTR_FB_ECHO_SHIFT) & OPTR_FB_EPOCH_MASK;
	return true;
}

/* The epoch the sender of @word stamped on it; false if it stamps none. */
bool optr_rate_epoch(u32 word, u8 *epoch)
{
	if (!(word & OPTR_FB_EPOCHS))
		return false;
	*epoch = word & OPTR_FB_EPOCH_MASK;
	return true;
}

/* @part of @whole in 255ths, rounded up; 0 when @whole is. */
u8 optr_rate_frac(u64 part, u64 whole)
{
	if (!whole || !part)
		return 0;
	if (part >= whole)
		return OPTR_FB_FRAC_ONE;
	/* Keep part * 255 in 64 bits; the ratio is what counts. */
	while (part > U64_MAX / OPTR_FB_FRAC_ONE) {
		part >>= 8;
		whole >>= 8;
	}
	return min_t(u64, div64_u64(part * OPTR_FB_FRAC_ONE + whole - 1, whole),
		     OPTR_FB_FRAC_ONE);
}

enum optr_rate_verdict optr_rate_judge(const struct optr_rate_report *r,
				       bool tx_forced)
{
	/* A message the sender cut at its own timeout lost bytes that no
	 * queue dropped, and one it hurried past the rate to make that
	 * timeout lost what the rate did not send: either way its loss
	 * says nothing of the rate (and slowing down for it would only cut
	 * or hurry the next one more).
	 */
	if (!tx_forced && r->loss > OPTR_RATE_LOSS_MIN)
		return OPTR_RATE_LOSSY;
	if (!r->ce)
		return OPTR_RATE_CLEAN;
	/* Marks, then OPTR_RATE_DRAINED_DGRAMS datagrams without: the
	 * queue fell under the marking threshold while we went on sending
	 * at the rate the report judges, so that rate does not keep it.
	 * A queue of ours (a rate above the link's, or an incast that
	 * lasts) marks to the report's end.
	 */
	return r->drained ? OPTR_RATE_DRAINED : OPTR_RATE_MARKED;
}

/*
 * One step from @rate on a report judged @v, @ce its marked fraction;
 * *@clean counts the clean reports in a row. Lossy: keep md_pct percent.
 * Marked: give up that much times the fraction marked, to the nearest
 * Mbit/s; a cut that rounds to nothing holds the rate (and ends the run of
 * clean reports): a few marks say the queue just touched the marking
 * threshold, and a whole Mbit/s for each such report took a rate near a
 * slow link to its floor in the fabric (see optr_rate_step()).
 * Clean: step_mbps times the run of clean reports (up to
 * OPTR_RATE_CLEAN_MAX), at most an eighth of the rate and at least
 * 1 Mbit/s, so a rate far below its path's climbs back in a few reports
 * and one near a slow link probes it without overrunning its queue.
 */
u32 optr_rate_aimd(u32 rate, enum optr_rate_verdict v, u8 ce, u8 *clean,
		   const struct optr_rate_cfg *cfg)
{
	u64 cut, step;

	rate = clamp(rate, cfg->min_mbps, cfg->max_mbps);
	switch (v) {
	case OPTR_RATE_LOSSY:
		*clean = 0;
		return max_t(u32, div_u64((u64)rate * cfg->md_pct, 100),
			     cfg->min_mbps);
	case OPTR_RATE_MARKED:
		*clean = 0;
		cut = div_u64((u64)rate * (100 - cfg->md_pct) * ce +
			      100 * OPTR_FB_FRAC_ONE / 2,
			      100 * OPTR_FB_FRAC_ONE);
		cut = min_t(u64, cut, rate);
		return max_t(u32, rate - cut, cfg->min_mbps);
	case OPTR_RATE_CLEAN:
	default:
		if (*clean < OPTR_RATE_CLEAN_MAX)
			(*clean)++;
		step = min_t(u64, (u64)cfg->step_mbps * *clean,
			     rate >> OPTR_RATE_STEP_SHIFT);
		return min_t(u64, (u64)rate + max_t(u64, step, 1),
			     cfg->max_mbps);
	}
}

/*
 * The run of heavily marked reports @h counts, after a report judged *@v
 * (@ce its marked fraction) from receiver @src at @rate_mbps, when
 * @clean_reports clean reports came from every receiver so far: true
 * once it holds OPTR_RATE_FOREIGN_RUN, for its caller to judge whose
 * queue it is. At the floor (@cfg's) every marked report counts, drained
 * or not: a loss-driven flow whose window swings about the marking
 * threshold marks some of each report, now and then none of its tail;
 * a rate at the floor cannot fall further, and one that leaves it on a
 * clean or drained report goes back on the next marks, so it stays there
 * while the flow takes the link (two ranks beside such a flow on a 200
 * Mbit/s fabric: one rank at its 10 Mbit/s floor in 136 of 176 steps,
 * results.md, "A queue that swings about the threshold"). On a queue
 * already judged foreign a marked report becomes OPTR_RATE_FOREIGN, and
 * OPTR_RATE_FOREIGN_CLEAN clean ones in a row end the judgment: the
 * queue drained.
 */
static bool optr_rate_run(struct optr_rate_heed *h, u32 src,
			  enum optr_rate_verdict *v, u8 ce, u32 clean_reports,
			  u32 rate_mbps, const struct optr_rate_cfg *cfg)
{
	switch (*v) {
	case OPTR_RATE_CLEAN:
		h->run = 0;
		if (h->foreign && ++h->clean >= OPTR_RATE_FOREIGN_CLEAN)
			h->foreign = false;
		return false;
	case OPTR_RATE_DRAINED:
	case OPTR_RATE_MARKED:
		if (h->foreign) {
			h->clean = 0;
			*v = OPTR_RATE_FOREIGN;
			return false;
		}
		/* Above the floor, a drained queue came and went, whatever
		 * it marked: no standing queue, foreign or ours (one judged
		 * foreign, above, is not yet known gone).
		 */
		if (rate_mbps > cfg->min_mbps &&
		    (*v == OPTR_RATE_DRAINED || ce < OPTR_RATE_FOREIGN_CE)) {
			h->run = 0;
			return false;
		}
		if (!h->run) {
			h->others_at = clean_reports;
			h->from_mbps = rate_mbps;
			h->first = src;
			h->mixed = false;
		} else if (src != h->first) {
			h->mixed = true;
		}
		if (h->run < OPTR_RATE_FOREIGN_RUN)
			h->run++;
		return h->run >= OPTR_RATE_FOREIGN_RUN;
	default:
		/* Loss: congestion whoever keeps the queue; a run of marks
		 * goes on through it (a full queue marks and drops).
		 */
		return false;
	}
}

/* The rate fell through cuts to an eighth of where @h's run began, or to
 * the floor, since: our own load cannot keep a queue standing there.
 */
static bool optr_rate_fell(const struct optr_rate_heed *h, u32 rate_mbps,
			   const struct optr_rate_cfg *cfg)
{
	return rate_mbps <= max(h->from_mbps >> OPTR_RATE_FOREIGN_SHIFT,
				cfg->min_mbps);
}

/* @h's run judged its queue another sender's. */
static enum optr_rate_verdict optr_rate_judge_foreign(struct optr_rate_heed *h)
{
	h->run = 0;
	h->foreign = true;
	h->clean = 0;
	return OPTR_RATE_FOREIGN;
}

/*
 * The verdict to act on, from a report judged @v (@ce its marked
 * fraction) from the receiver whose path @h tracks, at @rate_mbps;
 * @clean_reports counts the clean reports from every receiver so far. A
 * switch that marks ECN-capable packets above a threshold but lets the
 * others fill its buffer to the end (RED's default, the fabric's
 * FABRIC_NONECT=tail) marks nearly every datagram of ours queued behind
 * another tenant's TCP flow: that flow answers only loss and keeps the
 * queue above the threshold whatever we send. Heeding those marks, two
 * ranks beside such a flow got a sixth to a half less through than with
 * this judgment (rate_fair_test, results.md). Our own load is about the
 * same at every receiver's port, and about our rate (design.md, "Why one
 * rate"), so a queue is not ours if it stands at one receiver's port
 * while another receiver's reports come clean (a flow towards that
 * receiver), or through cuts to an eighth of the rate or to the floor (a
 * flow out of our own host, whose uplink marks towards every receiver):
 * OPTR_RATE_FOREIGN_RUN heavily marked reports in a row (at least
 * OPTR_RATE_FOREIGN_CE) and either of those make the receiver's path
 * foreign. From then on its marked reports
 * are OPTR_RATE_FOREIGN (a probe paced in time, optr_rate_move()) and only
 * its loss cuts, as loss does for the flow that keeps the queue.
 * OPTR_RATE_FOREIGN_CLEAN clean reports from it in a row end that: the
 * queue drained. An incast of ours marks every port, and the cuts drain
 * it: the marks thin out and end the run first. cfg->foreign false
 * (rate_foreign 0): every mark is congestion.
 */
enum optr_rate_verdict optr_rate_heed(struct optr_rate_heed *h,
				      enum optr_rate_verdict v, u8 ce,
				      u32 clean_reports, u32 rate_mbps,
				      const struct optr_rate_cfg *cfg)
{
	if (!cfg->foreign) {
		*h = (struct optr_rate_heed){};
		return v;
	}
	/* One receiver's reports: its run is never mixed (any src will do). */
	if (!optr_rate_run(h, 0, &v, ce, clean_reports, rate_mbps, cfg))
		return v;
	/* The receiver's own clean reports end its run: any counted since
	 * it began are another receiver's.
	 */
	if (h->others_at == clean_reports && !optr_rate_fell(h, rate_mbps, cfg))
		return v;
	return optr_rate_judge_foreign(h);
}

/*
 * The verdict to act on, from a report judged @v (@ce its marked
 * fraction) from receiver @src, at @rate_mbps, as a report about our own
 * uplink: its queue is on the way to every receiver, so a run of heavily
 * marked reports there comes from several of them at once. A TCP flow
 * out of our own host that keeps our uplink's queue above the marking
 * threshold marks our datagrams to every receiver alike, but each
 * receiver's reports thin out whenever the flow backs off, and a run of
 * OPTR_RATE_FOREIGN_RUN from one receiver rarely formed: each receiver
 * not yet judged cut the rate back to the floor (in the 8-rank
 * fabric-shared benchmark, the rank beside the long flow sat at the
 * floor in three of four steps, results.md). So the run counts here
 * across receivers: OPTR_RATE_FOREIGN_RUN heavily marked reports in a
 * row, from more than one receiver (one receiver's run is its port's,
 * optr_rate_heed()'s), through cuts to an eighth of the rate or the floor
 * (our own load cannot keep a queue there) make the uplink foreign, and
 * every receiver's marks then probe, as in optr_rate_heed(), until
 * OPTR_RATE_FOREIGN_CLEAN clean reports in a row, from any receivers,
 * say it drained.
 */
enum optr_rate_verdict optr_rate_uplink(struct optr_rate_heed *u, u32 src,
					enum optr_rate_verdict v, u8 ce,
					u32 rate_mbps,
					const struct optr_rate_cfg *cfg)
{
	if (!cfg->foreign) {
		*u = (struct optr_rate_heed){};
		return v;
	}
	/* Every receiver's clean report ends this run: no others count. */
	if (!optr_rate_run(u, src, &v, ce, 0, rate_mbps, cfg) || !u->mixed ||
	    !optr_rate_fell(u, rate_mbps, cfg))
		return v;
	return optr_rate_judge_foreign(u);
}

/* The percent of the rate a loss keeps, @md_pct (rate_md_pct) or, where
 * the queue is judged another sender's (@foreign), at least
 * OPTR_RATE_FOREIGN_KEEP_PCT: there loss is what we and the queue's owner
 * share, and we answer it as that owner does.
 */
u32 optr_rate_loss_keep(u32 md_pct, bool foreign)
{
	return foreign ? max(md_pct, OPTR_RATE_FOREIGN_KEEP_PCT) : md_pct;
}

/*
 * How many 1 Mbit/s probes a foreign queue's report earns at @now: one per
 * OPTR_RATE_FOREIGN_PROBE_NS since *@at, the rate's last move (a cut, a
 * clean step, or the probes counted so far), at most
 * OPTR_RATE_FOREIGN_STEPS. *@at advances by the periods taken, so a
 * report that comes before a whole period earns none and loses no time;
 * past the cap (a path idle between calls) it restarts at @now.
 */
u32 optr_rate_probe_steps(ktime_t *at, ktime_t now)
{
	s64 ns = ktime_to_ns(ktime_sub(now, *at));
	u64 n;

	if (ns < OPTR_RATE_FOREIGN_PROBE_NS)
		return 0;
	n = div_u64(ns, OPTR_RATE_FOREIGN_PROBE_NS);
	if (n >= OPTR_RATE_FOREIGN_STEPS) {
		*at = now;
		return OPTR_RATE_FOREIGN_STEPS;
	}
	*at = ktime_add_ns(*at, n * OPTR_RATE_FOREIGN_PROBE_NS);
	return n;
}

/*
 * The rate's next value after a report judged @v (@ce its marked
 * fraction): a cut remembers the rate it cut from, and the next
 * OPTR_RATE_RECOVER clean reports each take half the way back to it;
 * after them (or once there) optr_rate_aimd()'s additive steps probe on.
 * With a knee (cfg->knee_mbps), neither recovery nor a step goes past it,
 * and at or above it a clean report adds only 1/2^OPTR_RATE_KNEE_SHIFT of
 * the rate: the path carried about the knee when the caller measured it,
 * so probing beyond is slow, but not barred (the path may have got faster
 * since). The fraction of a Mbit/s a report adds there is kept for the
 * next (s->credit, in 256ths): near a 30 Mbit/s link 1/128 is a quarter
 * of a Mbit/s, and rounded up to a whole one each report added 3% of the
 * rate, four times the rule. A marked report whose cut rounds to nothing
 * holds the rate and is no cut: it neither remembers a rate to recover
 * to (which would replace the one the last real cut left, and strand the
 * rate low) nor uses up a recovery step (nor, in optr_rate_move(), counts
 * as one). At the floor a mark holds too: there is nowhere lower to go.
 * s->rate_mbps must hold a value (the start, before the first step).
 */
u32 optr_rate_step(struct optr_rate_state *s, enum optr_rate_verdict v, u8 ce,
		   const struct optr_rate_cfg *cfg)
{
	u32 rate = clamp(s->rate_mbps, cfg->min_mbps, cfg->max_mbps);
	u32 knee = cfg->knee_mbps ? cfg->knee_mbps : U32_MAX;
	u64 credit;
	u32 to;

	/* A queue that drained while we sent at this rate: as clean. */
	if (v == OPTR_RATE_DRAINED)
		v = OPTR_RATE_CLEAN;
	if (v == OPTR_RATE_FOREIGN) {
		/* 1 Mbit/s, never past the knee; optr_rate_move() takes as
		 * many such steps as time allows (optr_rate_probe_steps()),
		 * about the pace at which the queue's owner probes, now that
		 * loss alone stops us.
		 */
		s->clean = 0;
		s->rate_mbps = min3(rate + 1, cfg->max_mbps, max(knee, rate));
		return s->rate_mbps;
	}
	if (v != OPTR_RATE_CLEAN) {
		to = optr_rate_aimd(rate, v, ce, &s->clean, cfg);
		if (v == OPTR_RATE_MARKED && to == rate) {
			s->rate_mbps = rate;	/* a hold */
			return rate;
		}
		s->target_mbps = rate;
		s->recover = OPTR_RATE_RECOVER;
		s->credit = 0;
		s->rate_mbps = to;
		return to;
	}
	to = min3(s->target_mbps, cfg->max_mbps, max(knee, rate));
	if (s->recover && to > rate) {
		s->recover--;
		s->clean = 0;
		rate += DIV_ROUND_UP(to - rate, 2);
		s->rate_mbps = rate;
		return rate;
	}
	s->recover = 0;
	if (rate >= knee) {
		if (s->clean < OPTR_RATE_CLEAN_MAX)
			s->clean++;
		credit = s->credit +
			 ((u64)rate << OPTR_RATE_CREDIT_SHIFT >>
			  OPTR_RATE_KNEE_SHIFT);
		s->credit = credit & (BIT(OPTR_RATE_CREDIT_SHIFT) - 1);
		s->rate_mbps = min_t(u64,
				     (u64)rate + (credit >> OPTR_RATE_CREDIT_SHIFT),
				     cfg->max_mbps);
		return s->rate_mbps;
	}
	s->rate_mbps = min(optr_rate_aimd(rate, v, ce, &s->clean, cfg), knee);
	return s->rate_mbps;
}

/*
 * The sender reached the path's rate since it last moved: a batch waited
 * for its slot (optr_rate_paced()), and the time the sender fell behind
 * the rate for good (more than it may catch up: optr_pace()) is at most
 * the time its bytes took at the rate, so that it sent at least half of
 * it. The flag alone is too easy: a sender whose CPU is taken for
 * milliseconds at a time wakes late, sends what it may catch up, and
 * waits for its next slot once before it loses the CPU again; in the
 * emulated fabric a rank so limited sent at 14 Mbit/s while clean
 * reports raised its rate to 100 (results.md, "Rates the senders did
 * not reach"). Half, as TCP validates a window the sender used half of
 * (RFC 7661): a rate no more than twice what the sender reaches is one
 * the queues can take when its CPU comes back.
 */
bool optr_rate_reached(const struct optr_rate_path *path)
{
	u64 paced = READ_ONCE(path->paced_ns) - path->paced_from;
	u64 behind = READ_ONCE(path->behind_ns) - path->behind_from;

	return READ_ONCE(path->limited) && behind <= paced;
}

/*
 * The path's rate after a report judged @v (@ce its marked fraction) at
 * @now, from @old (optr_rate_now()), under the tunables @cfg, and the
 * path's account of it. A probe on a rate the sender did not reach since
 * it last moved (optr_rate_reached()) holds: the path may not carry even
 * that. Beside a foreign queue
 * the probes come in time, not per report (optr_rate_probe_steps()); any
 * other move restarts that clock. A move, or a loss even at the floor,
 * opens a new epoch: reports echoing an older one judge the rate before,
 * and what held that rate back says nothing of this one. The caller holds
 * the socket's lock (optr_rate_move()); KUnit drives it with its own
 * clock.
 */
u32 optr_rate_path_move(struct optr_rate_path *path, enum optr_rate_verdict v,
			u8 ce, u32 old, ktime_t now,
			const struct optr_rate_cfg *cfg)
{
	bool probe = v == OPTR_RATE_CLEAN || v == OPTR_RATE_FOREIGN ||
		     v == OPTR_RATE_DRAINED;
	u32 new, n;

	path->st.rate_mbps = old;
	if (probe && !optr_rate_reached(path)) {
		path->holds++;
		path->unreached++;
		return old;
	}
	if (v == OPTR_RATE_FOREIGN) {
		n = optr_rate_probe_steps(&path->probe_at, now);
		for (new = old; n; n--)
			new = optr_rate_step(&path->st, v, ce, cfg);
	} else {
		new = optr_rate_step(&path->st, v, ce, cfg);
		path->probe_at = now;
	}
	WRITE_ONCE(path->st.rate_mbps, new);
	if (probe && new != old) {
		path->raises++;
	} else if (probe) {
		path->holds++;	/* at the ceiling, or a fraction above the knee */
	} else if (v == OPTR_RATE_LOSSY || new != old) {
		path->cut_at = now;
		path->cuts++;
	} else {
		path->holds++;
	}
	if (new != old || v == OPTR_RATE_LOSSY) {
		WRITE_ONCE(path->epoch,
			   (path->epoch + 1) & OPTR_FB_EPOCH_MASK);
		WRITE_ONCE(path->limited, false);
		path->paced_from = READ_ONCE(path->paced_ns);
		path->behind_from = READ_ONCE(path->behind_ns);
	}
	return new;
}

/*
 * Where a communicator's rate starts: what the caller measured its path
 * to carry (@start_mbps, OPTIREDUCE_RATE_START_MBPS) if it told us, else
 * the socket's fixed rate if it has one, else the ceiling. From the
 * ceiling, a host on a link slower than its own interface fills its first
 * queue at once and every rank's first messages are lost, as are the
 * reports that would have told how fast the path is.
 */
u32 optr_rate_start(u32 start_mbps, u32 fixed_mbps,
		    const struct optr_rate_cfg *cfg)
{
	u32 mbps = start_mbps ? start_mbps : fixed_mbps;

	if (!mbps)
		return cfg->max_mbps;
	return clamp(mbps, cfg->min_mbps, cfg->max_mbps);
}

/*
 * The knee of a communicator whose caller measured its path to carry
 * @start_mbps: rate_knee_pct percent above it, within the bounds; 0 (no
 * knee) without a measured start or with rate_knee_pct 0. A fixed rate
 * is a setting, not a measurement, and makes no knee.
 */
u32 optr_rate_knee(u32 start_mbps, const struct optr_rate_cfg *cfg)
{
	u64 knee;

	if (!start_mbps || !cfg->knee_pct)
		return 0;
	knee = div_u64((u64)start_mbps * (100 + cfg->knee_pct), 100);
	return clamp_t(u64, knee, cfg->min_mbps, cfg->max_mbps);
}

/* The rate, Mbit/s rounded up, at which @bytes leave in @ns; 0 when no
 * time is left (nothing helps then).
 */
u32 optr_rate_needed(u64 bytes, s64 ns)
{
	u64 mbps;

	if (ns <= 0 || !bytes)
		return 0;
	/* bytes * 8000 / ns = Mbit/s; a send is at most 2 GiB per peer. */
	if (bytes > U64_MAX / 8000)
		return U32_MAX;
	mbps = div64_u64(bytes * 8000 + ns - 1, ns);
	return min_t(u64, mbps, U32_MAX);
}

/*
 * What a message tells of its sender's path, from what came of it (@got):
 * the bytes up to the furthest that came (returned), *@missing of them
 * dropped. Fragments
 * leave in order and queues keep it, so a byte missing before the furthest
 * one was dropped on the way; the bytes after it had not come yet when
 * the message ended, a sender behind the deadline or cut at its timeout,
 * and count neither way. A queue that overflows drops among what it
 * keeps, which leaves holes; only a tail dropped whole would escape, and
 * a paced sender's does not end at once. Returns the bytes it judges: 0,
 * no evidence, when nothing came.
 */
u32 optr_rate_seen(const struct optr_ranges *got, u32 *missing)
{
	u32 reach = optr_ranges_reach(got);

	*missing = reach - min(got->covered, reach);
	return reach;
}

bool optr_rate_enabled(void)
{
	return optr_tunable_get(&optr_rate_control);
}

void optr_rate_cfg_get(struct optr_rate_cfg *cfg)
{
	cfg->min_mbps = optr_tunable_get(&optr_rate_min_mbps);
	cfg->max_mbps = optr_tunable_get(&optr_rate_max_mbps);
	/* Each bound is checked against the other as it is written, but
	 * two reads may straddle a write of both.
	 */
	if (cfg->min_mbps > cfg->max_mbps)
		cfg->min_mbps = cfg->max_mbps;
	cfg->step_mbps = optr_tunable_get(&optr_rate_step_mbps);
	cfg->md_pct = optr_tunable_get(&optr_rate_md_pct);
	cfg->knee_pct = optr_tunable_get(&optr_rate_knee_pct);
	cfg->knee_mbps = 0;
	cfg->foreign = optr_tunable_get(&optr_rate_foreign);
	cfg->drained = optr_tunable_get(&optr_rate_drained);
}

/* The tunables, and @osk's communicator's knee, for a step or the dump
 * (the send path needs only the bounds: optr_rate_cfg_get()).
 */
static void optr_rate_cfg_sock(struct optr_sock *osk, struct optr_rate_cfg *cfg)
{
	optr_rate_cfg_get(cfg);
	cfg->knee_mbps = optr_rate_knee(READ_ONCE(osk->rate_start_mbps), cfg);
}

struct optr_rate *optr_rate_alloc(u32 nranks)
{
	struct optr_rate *rate;

	return kvzalloc(struct_size(rate, peer, nranks), GFP_KERNEL);
}

void optr_rate_free(struct optr_rate *rate)
{
	kvfree(rate);
}

/* The socket's fixed rate (OPTIREDUCE_PACE_MBPS, else pace_mbps). */
static u32 optr_rate_fixed(struct optr_sock *osk)
{
	return READ_ONCE(osk->pace_set) ? READ_ONCE(osk->pace_mbps) :
					  optr_tunable_get(&optr_pace_mbps);
}

/* The rate of @osk's communicator @comm now; its start until a step set it. */
static u32 optr_rate_now(struct optr_sock *osk, struct optr_comm *comm,
			 u32 fixed, const struct optr_rate_cfg *cfg)
{
	u32 rate = READ_ONCE(comm->rate->path.st.rate_mbps);

	if (!rate)
		return optr_rate_start(READ_ONCE(osk->rate_start_mbps), fixed,
				       cfg);
	return clamp(rate, cfg->min_mbps, cfg->max_mbps);
}

/*
 * The rate a message leaves at, to one rank or to all (a multicast):
 * @fixed_mbps (the socket's) without rate control, else the
 * communicator's.
 */
u32 optr_rate_mbps(struct optr_sock *osk, u32 fixed_mbps)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_cfg cfg;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || !optr_rate_enabled())
		return fixed_mbps;
	optr_rate_cfg_get(&cfg);
	return optr_rate_now(osk, comm, fixed_mbps, &cfg);
}

/*
 * With rate control, @mbps raised to what gets @left bytes out in @ns, the
 * time to their send's timeout: bytes that would leave after it are
 * dropped at the sender, so pacing slower than that only loses them
 * (the timeout bounds the send, the rate only spreads it). Unchanged
 * without rate control, or unpaced.
 */
u32 optr_rate_in_time(u32 mbps, u64 left, s64 ns)
{
	if (!mbps || !optr_rate_enabled())
		return mbps;
	return max(mbps, optr_rate_needed(left, ns));
}

/*
 * The feedback word of the next datagram to @dst (OPTR_WIRE_DST_ALL: a
 * multicast): our epoch, and the latest report about @dst's traffic if
 * there is one. Taken again for every batch, so that a report published
 * while a long send runs leaves with its next datagram. 0 without rate
 * control.
 */
u32 optr_rate_tx_word(struct optr_sock *osk, u32 dst)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_peer *p;
	u32 word;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || !optr_rate_enabled())
		return 0;
	word = OPTR_FB_EPOCHS |
	       (READ_ONCE(comm->rate->path.epoch) & OPTR_FB_EPOCH_MASK);
	if (dst >= comm->nranks)
		return word;
	p = &comm->rate->peer[dst];
	word |= READ_ONCE(p->fb_word);
	if ((word & OPTR_FB_VALID) && !READ_ONCE(p->fb_sent))
		WRITE_ONCE(p->fb_sent, true);
	return word;
}

/*
 * A send to @dst begins: note when (a loss report from @dst moves the rate
 * only if it is about a message sent since the last cut), and return the
 * feedback word for its first datagrams.
 */
u32 optr_rate_tx_begin(struct optr_sock *osk, u32 dst)
{
	struct optr_comm *comm = optr_sock_comm(osk);

	lockdep_assert_held(&osk->tx_lock);
	if (comm && dst < comm->nranks && optr_rate_enabled())
		WRITE_ONCE(comm->rate->peer[dst].tx_at, ktime_get());
	return optr_rate_tx_word(osk, dst);
}

/*
 * A batch of a send left at the rate, @paced_ns its time at it; before
 * it, the sender had fallen @behind_ns further behind the rate than it
 * may catch up (its CPU, or room in its send buffer, set its pace then),
 * and @held: it waited for its slot, on schedule. What a clean report at
 * this rate judges, the path or the sender: optr_rate_reached().
 */
void optr_rate_paced(struct optr_sock *osk, bool held, u64 paced_ns,
		     u64 behind_ns)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_path *path;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || !optr_rate_enabled())
		return;
	path = &comm->rate->path;
	WRITE_ONCE(path->paced_ns, path->paced_ns + paced_ns);
	if (behind_ns)
		WRITE_ONCE(path->behind_ns, path->behind_ns + behind_ns);
	if (held && !READ_ONCE(path->limited))
		WRITE_ONCE(path->limited, true);
}

/*
 * A send to @dst ended at its timeout with fragments unsent, or left
 * faster than the rate to make its timeout (optr_rate_in_time()): the
 * timeout, not the rate, shaped what @dst will report of it.
 */
void optr_rate_tx_forced(struct optr_sock *osk, u32 dst)
{
	struct optr_comm *comm = optr_sock_comm(osk);

	lockdep_assert_held(&osk->tx_lock);
	if (comm && dst < comm->nranks && optr_rate_enabled())
		WRITE_ONCE(comm->rate->peer[dst].tx_forced, true);
}

/* The last send to @p began after the last cut (true before any cut):
 * what @p reports, or our queue drops of it, judges the current rate.
 */
static bool optr_rate_sent_since_cut(const struct optr_rate_path *path,
				     const struct optr_rate_peer *p)
{
	return !path->cut_at || ktime_after(READ_ONCE(p->tx_at), path->cut_at);
}

/*
 * One step of the communicator's rate, @peer's report or send its cause,
 * under the tunables @cfg its caller judged the report by (read once: a
 * write between two reads would judge by one setting and step by another).
 */
static void optr_rate_move(struct optr_sock *osk, u32 peer,
			   enum optr_rate_verdict v, u8 loss, u8 ce, bool queue,
			   const struct optr_rate_cfg *cfg)
{
	u32 old, new;

	lockdep_assert_held(&osk->lock);
	old = optr_rate_now(osk, osk->comm, optr_rate_fixed(osk), cfg);
	new = optr_rate_path_move(&osk->comm->rate->path, v, ce, old,
				  ktime_get(), cfg);
	trace_optireduce_rate(osk->comm->id, osk->comm->rank, peer, old, new,
			      loss, ce, queue);
}

/*
 * A batch of a send to @dst was dropped by our own queue (the qdisc of
 * the device it left by): we send faster than our link, whatever the
 * receivers will report. Cut, once per send at most and only for a send
 * that began after the last cut: a queue that a faster rate filled stays
 * full, and drops, until it drained, which at a rate just under the
 * link's takes many times the queue's own time; cutting for every drop
 * meanwhile would take the rate to the floor. Not for a batch that left
 * faster than the rate (@hurried, to make its timeout): its drop says
 * nothing of the rate, and a cut would only hurry the next send more.
 */
void optr_rate_queue_drop(struct optr_sock *osk, u32 dst, bool hurried)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_path *path;
	struct optr_rate_cfg cfg;
	bool cut;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || !optr_rate_enabled())
		return;
	path = &comm->rate->path;
	optr_rate_cfg_sock(osk, &cfg);
	spin_lock_bh(&osk->lock);
	path->queue_drops++;
	cut = !hurried &&
	      (!path->cut_at ||
	       ktime_to_ns(ktime_sub(ktime_get(), path->cut_at)) >=
	       OPTR_RATE_QUEUE_GAP_NS);
	/* A multicast has no send time of its own: the gap alone. */
	if (cut && dst < comm->nranks)
		cut = optr_rate_sent_since_cut(path, &comm->rate->peer[dst]);
	if (cut) {
		cfg.md_pct = optr_rate_loss_keep(cfg.md_pct,
						 path->uplink.foreign);
		path->foreign_losses += path->uplink.foreign;
		optr_rate_move(osk, dst, OPTR_RATE_LOSSY, OPTR_FB_FRAC_ONE, 0,
			       true, &cfg);
	}
	spin_unlock_bh(&osk->lock);
}

/* The IP header's ECN field: ECT(0) with rate control, so that a
 * switch marks instead of dropping; not ECN-capable without.
 */
u8 optr_rate_tos(void)
{
	return optr_rate_enabled() ? INET_ECN_ECT_0 : 0;
}

/*
 * A new report from @src about our traffic to it: counted, and a step of
 * the rate if it is about traffic sent at the current rate. Older ones
 * judge a rate a move already left: acting on them would cut once per
 * reporting peer for one congestion, raise the rate back for traffic
 * the cut has not yet seen, or raise again before anyone saw the last
 * raise. A report of marks or of nothing covers the datagrams since the
 * one before, and echoes our epoch on the first of them: it judges the
 * current rate if that is our epoch now. One of loss covers whole
 * messages (a hole is known only once later bytes came), so it judges
 * the current rate if the last send to @src began after the last cut; so
 * does every report of a peer that echoes no epochs.
 */
static void optr_rate_apply(struct optr_sock *osk, struct optr_rate_peer *p,
			    u32 src, const struct optr_rate_report *rep)
{
	struct optr_rate_path *path = &osk->comm->rate->path;
	enum optr_rate_verdict v, up;
	struct optr_rate_cfg cfg;
	bool kept = false;
	u32 rate;

	lockdep_assert_held(&osk->lock);
	optr_rate_cfg_sock(osk, &cfg);
	v = optr_rate_judge(rep, READ_ONCE(p->tx_forced));
	if (v == OPTR_RATE_DRAINED && !cfg.drained)
		v = OPTR_RATE_MARKED;
	rate = optr_rate_now(osk, osk->comm, optr_rate_fixed(osk), &cfg);
	up = optr_rate_uplink(&path->uplink, src, v, rep->ce, rate, &cfg);
	v = optr_rate_heed(&p->heed, v, rep->ce, path->clean_reports, rate,
			   &cfg);
	if (up == OPTR_RATE_FOREIGN)
		v = up;
	if (v == OPTR_RATE_LOSSY) {
		kept = path->uplink.foreign || p->heed.foreign;
		cfg.md_pct = optr_rate_loss_keep(cfg.md_pct, kept);
	}
	if (v == OPTR_RATE_CLEAN)
		path->clean_reports++;
	/* A forced send excuses the loss its message's report brings, not
	 * the marks reported while it ran (those carry no loss).
	 */
	if (rep->loss)
		WRITE_ONCE(p->tx_forced, false);
	p->have_seq = true;
	p->last_seq = rep->seq;
	p->last_loss = rep->loss;
	p->last_ce = rep->ce;
	p->reports++;
	if (v == OPTR_RATE_FOREIGN) {
		p->foreign++;
		path->foreign++;
		if (up == OPTR_RATE_FOREIGN)
			path->uplink_foreign++;
	} else if (v == OPTR_RATE_CLEAN) {
		p->increases++;
	} else if (v == OPTR_RATE_DRAINED) {
		p->drained++;
		path->drained++;
	} else {
		p->decreases++;
	}
	if (v == OPTR_RATE_LOSSY || !rep->epochs ?
	    !optr_rate_sent_since_cut(path, p) : rep->echo != path->epoch) {
		p->stale++;
		return;
	}
	path->foreign_losses += kept;
	optr_rate_move(osk, src, v, rep->loss, rep->ce, false, &cfg);
}

/*
 * Publish a new report to @p's rank, covering everything since the last
 * report that went out (one that never left, because nothing went to it
 * in between, is merged into this one, and its echo, the older, kept).
 */
static void optr_rate_publish(struct optr_rate_peer *p)
{
	struct optr_rate_report rep = { .epochs = true };

	rep.echo = p->acc_echo;
	if (p->fb_word && !READ_ONCE(p->fb_sent)) {
		/* Unmarked since the last mark: back into the merged one's
		 * tail while none of the newer datagrams was marked.
		 */
		if (!p->acc_ce)
			p->acc_tail += p->pub_tail;
		p->acc_expected += p->pub_expected;
		p->acc_missing += p->pub_missing;
		p->acc_dgrams += p->pub_dgrams;
		p->acc_ce += p->pub_ce;
		rep.echo = p->pub_echo;
	}
	p->pub_expected = p->acc_expected;
	p->pub_missing = p->acc_missing;
	p->pub_dgrams = p->acc_dgrams;
	p->pub_ce = p->acc_ce;
	p->pub_tail = p->acc_tail;
	p->pub_echo = rep.echo;
	p->acc_expected = 0;
	p->acc_missing = 0;
	p->acc_dgrams = 0;
	p->acc_ce = 0;
	p->acc_tail = 0;
	p->seq = (p->seq + 1) & OPTR_FB_SEQ_MASK;
	rep.seq = p->seq;
	rep.loss = optr_rate_frac(p->pub_missing, p->pub_expected);
	rep.ce = optr_rate_frac(p->pub_ce, p->pub_dgrams);
	rep.drained = p->pub_tail >= OPTR_RATE_DRAINED_DGRAMS;
	WRITE_ONCE(p->fb_sent, false);
	WRITE_ONCE(p->fb_word, optr_rate_encode(&rep));
}

/*
 * A datagram from @p's rank, carrying its sender's @epoch, came (@ce: with
 * a CE mark): count it towards the next report, the first since the last
 * report giving the report's echo, and publish that report early once
 * OPTR_RATE_REPORT_DGRAMS came, marked or not: a long message's sender
 * hears of marks within a few dozen datagrams, and of a clean path as
 * soon, where with clean reports only at a message's end a rate cut
 * early in a message of seconds stayed low to its end. True if it did.
 */
bool optr_rate_count(struct optr_rate_peer *p, u8 epoch, bool ce)
{
	if (!p->acc_dgrams)
		p->acc_echo = epoch;
	p->acc_dgrams++;
	if (ce) {
		p->acc_ce++;
		p->ce_rx++;
		p->acc_tail = 0;
	} else {
		p->acc_tail++;
	}
	if (p->acc_dgrams < OPTR_RATE_REPORT_DGRAMS)
		return false;
	optr_rate_publish(p);
	p->early++;
	return true;
}

/*
 * A message from @p's rank ended, @judged bytes of it judged and @missing
 * of those missing: publish a report, unless it would say nothing. With
 * no datagram since the last report (an early one covered them all) and
 * nothing missing it would be a clean report on no traffic, and its echo
 * that of the datagrams before the last report: after a marked report
 * that held the rate, the sender would take it as a clean report on the
 * same epoch and raise. The bytes stay counted for the next report. True
 * if it published.
 */
bool optr_rate_end(struct optr_rate_peer *p, u32 judged, u32 missing)
{
	p->acc_expected += judged;
	p->acc_missing += missing;
	if (!p->acc_dgrams && !p->acc_missing)
		return false;
	optr_rate_publish(p);
	return true;
}

/*
 * A datagram from a member, about to be delivered to @osk (the receive
 * path, for every datagram): count it, and its CE mark, towards the next
 * report to its sender (optr_rate_count()), and apply the report it
 * carries about our own traffic to that sender, once per report.
 */
void optr_rate_rx(struct optr_sock *osk, const struct optr_frag *f, bool ce)
{
	struct optr_comm *comm = osk->comm;
	struct optr_rate_report rep;
	struct optr_rate_peer *p;
	u8 epoch = 0;

	lockdep_assert_held(&osk->lock);
	if (!optr_rate_enabled() || f->src >= comm->nranks)
		return;
	p = &comm->rate->peer[f->src];
	optr_rate_epoch(f->feedback, &epoch);
	optr_rate_count(p, epoch, ce);
	if (f->dst != comm->rank || !optr_rate_decode(f->feedback, &rep))
		return;
	if (p->have_seq && rep.seq == p->last_seq)
		return;
	optr_rate_apply(osk, p, f->src, &rep);
}

/*
 * A message from @src ended (completed, expired or ended early, not
 * cancelled) with @got of it: publish a new report to @src
 * (optr_rate_end()); none for a message of which nothing came.
 */
void optr_rate_msg_end(struct optr_sock *osk, u32 src,
		       const struct optr_ranges *got)
{
	struct optr_comm *comm = osk->comm;
	u32 judged, missing;

	lockdep_assert_held(&osk->lock);
	if (!optr_rate_enabled() || src >= comm->nranks)
		return;
	judged = optr_rate_seen(got, &missing);
	if (!judged)
		return;
	optr_rate_end(&comm->rate->peer[src], judged, missing);
}

static u32 optr_rate_ppm(u8 frac)
{
	return DIV_ROUND_UP((u32)frac * 1000000U, OPTR_FB_FRAC_ONE);
}

static int optr_rate_nl_peer(struct sk_buff *skb, const struct optr_rate_peer *p,
			     u32 rank, u32 mbps)
{
	struct nlattr *nest = nla_nest_start(skb, OPTIREDUCE_PEERS_PEER);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, OPTIREDUCE_PEER_RANK, rank) ||
	    nla_put_u32(skb, OPTIREDUCE_PEER_RATE_MBPS, mbps) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_REPORTS, p->reports,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_DECREASES, p->decreases,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_INCREASES, p->increases,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u32(skb, OPTIREDUCE_PEER_LOSS_PPM,
			optr_rate_ppm(p->last_loss)) ||
	    nla_put_u32(skb, OPTIREDUCE_PEER_CE_PPM, optr_rate_ppm(p->last_ce)) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_CE_RX, p->ce_rx,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_EARLY, p->early,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_STALE, p->stale,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_FOREIGN, p->foreign,
			      OPTIREDUCE_PEER_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_PEER_DRAINED, p->drained,
			      OPTIREDUCE_PEER_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* The communicator's rate, once rate control moved it or saw a drop,
 * and its knee if it has one.
 */
static int optr_rate_nl_path(struct sk_buff *skb,
			     const struct optr_rate_path *path, u32 mbps,
			     u32 knee)
{
	if (!path->cuts && !path->raises && !path->holds && !path->queue_drops)
		return 0;
	if (knee && nla_put_u32(skb, OPTIREDUCE_A_SOCK_RATE_KNEE_MBPS, knee))
		return -EMSGSIZE;
	if (nla_put_u32(skb, OPTIREDUCE_A_SOCK_RATE_MBPS, mbps) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_CUTS, path->cuts,
			      OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_RAISES, path->raises,
			      OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_QUEUE_DROPS,
			      path->queue_drops, OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_HOLDS, path->holds,
			      OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_FOREIGN,
			      path->foreign, OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_DRAINED,
			      path->drained, OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_UNREACHED,
			      path->unreached, OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_UPLINK,
			      path->uplink_foreign, OPTIREDUCE_A_PAD) ||
	    nla_put_u64_64bit(skb, OPTIREDUCE_A_SOCK_RATE_FOREIGN_LOSS,
			      path->foreign_losses, OPTIREDUCE_A_PAD))
		return -EMSGSIZE;
	return 0;
}

/*
 * The communicator's rate (OPTIREDUCE_A_SOCK_RATE_*), then
 * OPTIREDUCE_A_SOCK_PEERS: every rank rate control has state for (a
 * report, a mark, a report of ours), as many as fit the message; nothing
 * while it never ran.
 */
int optr_rate_nl_put(struct sk_buff *skb, struct optr_sock *osk)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_cfg cfg;
	struct nlattr *nest = NULL;
	int err;
	u32 r, mbps;

	if (!comm)
		return 0;
	optr_rate_cfg_sock(osk, &cfg);
	spin_lock_bh(&osk->lock);
	mbps = optr_rate_now(osk, comm, optr_rate_fixed(osk), &cfg);
	err = optr_rate_nl_path(skb, &comm->rate->path, mbps, cfg.knee_mbps);
	for (r = 0; !err && r < comm->nranks; r++) {
		const struct optr_rate_peer *p = &comm->rate->peer[r];

		if (r == comm->rank ||
		    (!p->reports && !p->ce_rx && !p->fb_word))
			continue;
		if (!nest) {
			nest = nla_nest_start(skb, OPTIREDUCE_A_SOCK_PEERS);
			if (!nest)
				break;
		}
		if (optr_rate_nl_peer(skb, p, r, mbps))
			break;
	}
	spin_unlock_bh(&osk->lock);
	if (nest)
		nla_nest_end(skb, nest);
	return err;
}
