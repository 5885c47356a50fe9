// SPDX-License-Identifier: GPL-2.0
/*
 * Rate control: per destination rank, additive increase on every clean
 * report that rank sends back about our traffic (by a step that grows with
 * a run of clean reports), multiplicative decrease on every congested one:
 * by rate_md_pct on loss above OPTR_RATE_LOSS_MIN, in proportion to the
 * fraction marked on ECN CE marks (as DCTCP), within [rate_min_mbps,
 * rate_max_mbps]. Transpose AllReduce sends
 * both ways between every pair within a call, so the reports ride in the
 * feedback word of the datagrams a receiver sends anyway; none has a
 * datagram of its own. The rate only spaces datagrams: a send still ends
 * at its timeout and a round at its deadline.
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
#include "rate.h"
#include "round.h"
#include "sock.h"
#include "trace.h"
#include "wire.h"

/* The feedback word travels in optr_frag, which a backlogged skb's cb holds. */
static_assert(sizeof(struct optr_skb_cb) <= sizeof_field(struct sk_buff, cb));

u32 optr_rate_encode(const struct optr_rate_report *r)
{
	return OPTR_FB_VALID |
	       (u32)(r->seq & OPTR_FB_SEQ_MASK) << OPTR_FB_SEQ_SHIFT |
	       (u32)r->loss << OPTR_FB_LOSS_SHIFT |
	       (u32)r->ce << OPTR_FB_CE_SHIFT;
}

/* False for a word that carries no report (0, as every sender without
 * rate control sends). The low byte is reserved and ignored.
 */
bool optr_rate_decode(u32 word, struct optr_rate_report *r)
{
	if (!(word & OPTR_FB_VALID))
		return false;
	r->seq = (word >> OPTR_FB_SEQ_SHIFT) & OPTR_FB_SEQ_MASK;
	r->loss = (word >> OPTR_FB_LOSS_SHIFT) & 0xff;
	r->ce = (word >> OPTR_FB_CE_SHIFT) & 0xff;
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
				       bool tx_cut)
{
	/* A message the sender cut at its own timeout lost bytes that no
	 * queue dropped: its loss says nothing of the path (and slowing
	 * down for it would only cut the next one shorter).
	 */
	if (!tx_cut && r->loss > OPTR_RATE_LOSS_MIN)
		return OPTR_RATE_LOSSY;
	return r->ce ? OPTR_RATE_MARKED : OPTR_RATE_CLEAN;
}

/*
 * One step from @rate on a report judged @v, @ce its marked fraction;
 * *@clean counts the clean reports in a row. Lossy: keep md_pct percent.
 * Marked: give up that much times the fraction marked, at least 1 Mbit/s.
 * Clean: step_mbps times the run of clean reports (up to
 * OPTR_RATE_CLEAN_MAX), so a rate far below its path's climbs back in a
 * few reports and one near it probes gently after every cut.
 */
u32 optr_rate_aimd(u32 rate, enum optr_rate_verdict v, u8 ce, u8 *clean,
		   const struct optr_rate_cfg *cfg)
{
	u64 cut;

	rate = clamp(rate, cfg->min_mbps, cfg->max_mbps);
	switch (v) {
	case OPTR_RATE_LOSSY:
		*clean = 0;
		return max_t(u32, div_u64((u64)rate * cfg->md_pct, 100),
			     cfg->min_mbps);
	case OPTR_RATE_MARKED:
		*clean = 0;
		cut = div_u64((u64)rate * (100 - cfg->md_pct) * ce,
			      100 * OPTR_FB_FRAC_ONE);
		cut = clamp_t(u64, cut, 1, rate);
		return max_t(u32, rate - cut, cfg->min_mbps);
	case OPTR_RATE_CLEAN:
	default:
		if (*clean < OPTR_RATE_CLEAN_MAX)
			(*clean)++;
		return min_t(u64, (u64)rate + (u64)cfg->step_mbps * *clean,
			     cfg->max_mbps);
	}
}

/* Where a destination starts: the socket's fixed rate if it has one. */
u32 optr_rate_start(u32 fixed_mbps, const struct optr_rate_cfg *cfg)
{
	if (!fixed_mbps)
		return cfg->max_mbps;
	return clamp(fixed_mbps, cfg->min_mbps, cfg->max_mbps);
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
}

struct optr_rate_peer *optr_rate_alloc(u32 nranks)
{
	return kvcalloc(nranks, sizeof(struct optr_rate_peer), GFP_KERNEL);
}

void optr_rate_free(struct optr_rate_peer *peers)
{
	kvfree(peers);
}

/* The socket's fixed rate (OPTIREDUCE_PACE_MBPS, else pace_mbps). */
static u32 optr_rate_fixed(struct optr_sock *osk)
{
	return READ_ONCE(osk->pace_set) ? READ_ONCE(osk->pace_mbps) :
					  optr_tunable_get(&optr_pace_mbps);
}

static u32 optr_rate_peer_mbps(const struct optr_rate_peer *p, u32 fixed,
			       const struct optr_rate_cfg *cfg)
{
	u32 rate = READ_ONCE(p->rate_mbps);

	if (!rate)
		return optr_rate_start(fixed, cfg);
	return clamp(rate, cfg->min_mbps, cfg->max_mbps);
}

/*
 * The rate a message to @dst leaves at: @fixed_mbps (the socket's) without
 * rate control, else @dst's; for a multicast (OPTR_WIRE_DST_ALL), the
 * slowest peer's.
 */
u32 optr_rate_mbps(struct optr_sock *osk, u32 dst, u32 fixed_mbps)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_cfg cfg;
	u32 r, rate = U32_MAX;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || !optr_rate_enabled())
		return fixed_mbps;
	optr_rate_cfg_get(&cfg);
	if (dst < comm->nranks)
		return optr_rate_peer_mbps(&comm->rate[dst], fixed_mbps, &cfg);
	for (r = 0; r < comm->nranks; r++)
		if (r != comm->rank)
			rate = min(rate, optr_rate_peer_mbps(&comm->rate[r],
							     fixed_mbps, &cfg));
	return rate == U32_MAX ? fixed_mbps : rate;
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

/* The feedback word for datagrams to @dst: the report about @dst's
 * traffic, or 0 (none; always for a multicast).
 */
u32 optr_rate_feedback(struct optr_sock *osk, u32 dst)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_peer *p;
	u32 word;

	lockdep_assert_held(&osk->tx_lock);
	if (!comm || dst >= comm->nranks || !optr_rate_enabled())
		return 0;
	p = &comm->rate[dst];
	word = READ_ONCE(p->fb_word);
	if (word && !READ_ONCE(p->fb_sent))
		WRITE_ONCE(p->fb_sent, true);
	return word;
}

/* A send to @dst ended at its timeout with fragments unsent. */
void optr_rate_tx_cut(struct optr_sock *osk, u32 dst)
{
	struct optr_comm *comm = optr_sock_comm(osk);

	lockdep_assert_held(&osk->tx_lock);
	if (comm && dst < comm->nranks && optr_rate_enabled())
		WRITE_ONCE(comm->rate[dst].tx_cut, true);
}

/* The IP header's ECN field: ECT(0) with rate control, so that a
 * switch marks instead of dropping; not ECN-capable without.
 */
u8 optr_rate_tos(void)
{
	return optr_rate_enabled() ? INET_ECN_ECT_0 : 0;
}

/* A new report from @src about our traffic to it: one AIMD step. */
static void optr_rate_apply(struct optr_sock *osk, struct optr_rate_peer *p,
			    u32 src, const struct optr_rate_report *rep)
{
	struct optr_comm *comm = osk->comm;
	enum optr_rate_verdict v;
	struct optr_rate_cfg cfg;
	u32 old, new;

	lockdep_assert_held(&osk->lock);
	optr_rate_cfg_get(&cfg);
	old = optr_rate_peer_mbps(p, optr_rate_fixed(osk), &cfg);
	v = optr_rate_judge(rep, READ_ONCE(p->tx_cut));
	WRITE_ONCE(p->tx_cut, false);
	new = optr_rate_aimd(old, v, rep->ce, &p->clean, &cfg);
	WRITE_ONCE(p->rate_mbps, new);
	p->have_seq = true;
	p->last_seq = rep->seq;
	p->last_loss = rep->loss;
	p->last_ce = rep->ce;
	p->reports++;
	if (v != OPTR_RATE_CLEAN)
		p->decreases++;
	else
		p->increases++;
	trace_optireduce_rate(comm->id, comm->rank, src, old, new, rep->loss,
			      rep->ce);
}

/*
 * A datagram from a member, about to be delivered to @osk (the receive
 * path, for every datagram): count it, and its CE mark, towards the next
 * report to its sender, and apply the report it carries about our own
 * traffic to that sender, once per report.
 */
void optr_rate_rx(struct optr_sock *osk, const struct optr_frag *f, bool ce)
{
	struct optr_comm *comm = osk->comm;
	struct optr_rate_report rep;
	struct optr_rate_peer *p;

	lockdep_assert_held(&osk->lock);
	if (!optr_rate_enabled() || f->src >= comm->nranks)
		return;
	p = &comm->rate[f->src];
	p->acc_dgrams++;
	if (ce) {
		p->acc_ce++;
		p->ce_rx++;
	}
	if (f->dst != comm->rank || !optr_rate_decode(f->feedback, &rep))
		return;
	if (p->have_seq && rep.seq == p->last_seq)
		return;
	optr_rate_apply(osk, p, f->src, &rep);
}

/*
 * A message of @len bytes from @src ended (completed, expired or ended
 * early, not cancelled) with @got of them: publish a new report to @src,
 * covering everything since the last report that went out.
 */
void optr_rate_msg_end(struct optr_sock *osk, u32 src, u32 len, u32 got)
{
	struct optr_comm *comm = osk->comm;
	struct optr_rate_report rep;
	struct optr_rate_peer *p;

	lockdep_assert_held(&osk->lock);
	if (!optr_rate_enabled() || src >= comm->nranks)
		return;
	p = &comm->rate[src];
	p->acc_expected += len;
	p->acc_missing += len - min(got, len);
	/* The last one never left: this one covers it too. */
	if (p->fb_word && !READ_ONCE(p->fb_sent)) {
		p->acc_expected += p->pub_expected;
		p->acc_missing += p->pub_missing;
		p->acc_dgrams += p->pub_dgrams;
		p->acc_ce += p->pub_ce;
	}
	p->pub_expected = p->acc_expected;
	p->pub_missing = p->acc_missing;
	p->pub_dgrams = p->acc_dgrams;
	p->pub_ce = p->acc_ce;
	p->acc_expected = 0;
	p->acc_missing = 0;
	p->acc_dgrams = 0;
	p->acc_ce = 0;
	p->seq = (p->seq + 1) & OPTR_FB_SEQ_MASK;
	rep.seq = p->seq;
	rep.loss = optr_rate_frac(p->pub_missing, p->pub_expected);
	rep.ce = optr_rate_frac(p->pub_ce, p->pub_dgrams);
	WRITE_ONCE(p->fb_sent, false);
	WRITE_ONCE(p->fb_word, optr_rate_encode(&rep));
}

static u32 optr_rate_ppm(u8 frac)
{
	return DIV_ROUND_UP((u32)frac * 1000000U, OPTR_FB_FRAC_ONE);
}

static int optr_rate_nl_peer(struct sk_buff *skb, const struct optr_rate_peer *p,
			     u32 rank, u32 fixed, const struct optr_rate_cfg *cfg)
{
	struct nlattr *nest = nla_nest_start(skb, OPTIREDUCE_PEERS_PEER);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, OPTIREDUCE_PEER_RANK, rank) ||
	    nla_put_u32(skb, OPTIREDUCE_PEER_RATE_MBPS,
			optr_rate_peer_mbps(p, fixed, cfg)) ||
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
			      OPTIREDUCE_PEER_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * OPTIREDUCE_A_SOCK_PEERS: every rank rate control has state for (a rate
 * of its own, a report, a mark), as many as fit the message; nothing
 * while it never ran.
 */
int optr_rate_nl_put(struct sk_buff *skb, struct optr_sock *osk)
{
	struct optr_comm *comm = optr_sock_comm(osk);
	struct optr_rate_cfg cfg;
	struct nlattr *nest = NULL;
	u32 r, fixed;

	if (!comm)
		return 0;
	optr_rate_cfg_get(&cfg);
	fixed = optr_rate_fixed(osk);
	spin_lock_bh(&osk->lock);
	for (r = 0; r < comm->nranks; r++) {
		const struct optr_rate_peer *p = &comm->rate[r];

		if (r == comm->rank ||
		    (!p->rate_mbps && !p->ce_rx && !p->fb_word))
			continue;
		if (!nest) {
			nest = nla_nest_start(skb, OPTIREDUCE_A_SOCK_PEERS);
			if (!nest)
				break;
		}
		if (optr_rate_nl_peer(skb, p, r, fixed, &cfg))
			break;
	}
	spin_unlock_bh(&osk->lock);
	if (nest)
		nla_nest_end(skb, nest);
	return 0;
}
