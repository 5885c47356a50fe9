// SPDX-License-Identifier: MIT
/*
 * The progress engine: one thread per communicator that runs queued calls
 * one after the other through the Transpose AllReduce (tar.c) over a
 * transport (transport.h), compensates losses (compensate.c), and feeds the
 * deadline estimator (estimator.c) and the loss reports (reports.c).
 *
 * Life of a call on rank r (see also tar.h):
 *   activate  pick the path (reliable: warm-up, fallback, no lossy
 *             transport; else lossy), widen to float32, Hadamard forward,
 *             post the phase-1 receives (into p1) and the phase-2 ones
 *             (into p2, apart from the work vector phase 1 sends from),
 *             each with the deadline of its round, start round 0.
 *   round k   send the round's shards; the round is over when its sends
 *             and receives completed (full, or ended by their deadline).
 *   reduce    after phase 1: sum contributions, rescale (compensate.c).
 *   finish    fill phase-2 holes (from this rank's own shards in work),
 *             gather the result in p2, Hadamard inverse, round and divide into
 *             the caller's buffer, record, send the loss report.
 *
 * A direct call (a lossy call in which each rank receives at most
 * cfg.direct_kb from its peers together) is one round: its
 * "shard" is the whole buffer, sent to all peers at once; reduce sums the
 * whole buffer, and finish has no phase 2 to gather.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "comm.h"
#include "dtype.h"
#include "engine.h"
#include "hadamard.h"
#include "memlock.h"
#include "reports.h"
#include "shard.h"
#include "user_data.h"
#include "util.h"
#include "wire16.h"

/* What a ready signal carries; receivers do not look at it. */
static const uint64_t ready_word = 0x5944414552524f00ull;

void or_engine_wake(optireduce_comm *c)
{
	uint64_t one = 1;

	if (write(c->wake_fd, &one, sizeof(one)) < 0) {
		/* Counter saturated: the thread is awake anyway. */
	}
}

int or_engine_alloc(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	size_t n = c->size;

	a->p1_recv = calloc(n, 1);
	a->p1_send = calloc(n, 1);
	a->p2_recv = calloc(n, 1);
	a->ready = calloc(n, 1);
	a->p1_issued = calloc(n, 1);
	a->p1_batch = calloc(n, sizeof(uint32_t));
	a->p1_parts = calloc(n, sizeof(struct or_part));
	a->heard = calloc(n, 1);
	c->silent = calloc(n, 1);
	c->ready_sink = calloc(n, sizeof(uint64_t));
	c->t_b = calloc(n, sizeof(uint64_t));
	a->p1_nmiss = calloc(n, sizeof(uint32_t));
	a->p2_nmiss = calloc(n, sizeof(uint32_t));
	a->p1_miss = calloc(n * OR_MAX_MISSING, sizeof(struct or_range));
	a->p2_miss = calloc(n * OR_MAX_MISSING, sizeof(struct or_range));
	c->contrib = calloc(n, sizeof(*c->contrib));
	c->events = calloc(2 * n * OR_MAX_MISSING, sizeof(*c->events));
	for (int i = 0; i < OR_REPORT_SLOTS; i++)
		c->reports[i].r = calloc(n * OR_REPORT_BATCH,
					 sizeof(struct or_report));
	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!a->p1_recv || !a->p1_send || !a->p2_recv || !a->ready ||
	    !a->p1_issued || !a->p1_batch || !a->p1_parts || !a->heard ||
	    !c->silent || !c->ready_sink ||
	    !c->t_b || !a->p1_nmiss || !a->p2_nmiss || !a->p1_miss ||
	    !a->p2_miss || !c->contrib || !c->events || c->wake_fd < 0)
		return -ENOMEM;
	for (int i = 0; i < OR_REPORT_SLOTS; i++)
		if (!c->reports[i].r)
			return -ENOMEM;
	return 0;
}

void or_engine_free(optireduce_comm *c)
{
	struct or_active *a = &c->act;

	free(a->p1_recv);
	free(a->p1_send);
	free(a->p2_recv);
	free(a->ready);
	free(a->p1_issued);
	free(a->p1_batch);
	free(a->p1_parts);
	free(a->heard);
	free(c->silent);
	free(c->ready_sink);
	free(c->t_b);
	free(a->p1_nmiss);
	free(a->p2_nmiss);
	free(a->p1_miss);
	free(a->p2_miss);
	free(c->contrib);
	free(c->events);
	for (int i = 0; i < OR_REPORT_SLOTS; i++)
		free(c->reports[i].r);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
}

/* ------------------------------------------------------------------ */
/* Completion of a call (success or failure); progress thread.        */

static void publish(optireduce_comm *c, struct or_call *call, int err)
{
	struct optireduce_result *res = &call->res;
	struct optireduce_stats *st = &c->stats;

	pthread_mutex_lock(&c->lock);
	call->err = err;
	call->state = OR_SLOT_DONE;
	res->duration_ns = or_now_ns() - call->t_start;
	if (err) {
		st->calls_failed++;
	} else {
		st->calls++;
		if (res->flags & OPTIREDUCE_RES_RELIABLE) {
			st->calls_reliable++;
			st->calls_warmup += !!(res->flags & OPTIREDUCE_RES_WARMUP);
			st->calls_fallback += !!(res->flags & OPTIREDUCE_RES_FALLBACK);
		} else {
			st->calls_lossy++;
			st->calls_direct += !!(res->flags & OPTIREDUCE_RES_DIRECT);
		}
		st->entries_expected += res->expected;
		st->entries_lost += res->lost;
		st->entries_compensated += res->compensated;
		st->bytes_sent += res->sent_bytes;
		if (!(res->flags & OPTIREDUCE_RES_RELIABLE))
			st->incast = res->incast;
		st->incast_lowered = (uint32_t)c->incast.lowered;
		st->warmup_mbps = c->warmup_mbps;
		st->deadline_ns = c->est.last_bound_ns;
		st->average_ns = c->est.last_avg_ns;
		st->margin_pct = (uint64_t)(c->est.margin * 100 + 0.5);
		st->late_bytes = c->est.late_bytes;
		st->ready_wait_ns = c->stats_ready_wait;
		st->ready_missed = c->stats_ready_missed;
		st->catch_up_calls = c->stats_catch_up;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

/*
 * What the reliable path carried out of this host in the warm-up: the
 * fastest call's payload over its time (a slower one waited on a peer, or
 * was too small to fill the link). Once the warm-up is over the lossy
 * transport starts its rate there (transport.h, path_rate): a rate that
 * starts at its ceiling overruns a link slower than the host's own
 * interface and loses most of the first lossy calls finding it.
 */
static void note_warmup_rate(optireduce_comm *c, const struct or_call *call,
			     uint64_t sent, uint64_t ns)
{
	uint64_t warmup = c->cfg.warmup_calls, mbps;

	if (!c->lossy || call->seq >= warmup || !ns)
		return;
	/* bytes * 8 / ns is Gbit/s */
	mbps = (uint64_t)((double)sent * 8000.0 / (double)ns);
	if (mbps > c->warmup_mbps)
		c->warmup_mbps = mbps;
	if (call->seq + 1 == warmup && c->warmup_mbps &&
	    c->lossy->ops->path_rate)
		c->lossy->ops->path_rate(c->lossy, c->warmup_mbps);
}

/* A transport failed: this call and every queued one fail, for good. */
static void break_comm(optireduce_comm *c, int err)
{
	struct or_call *active = c->act.c;

	or_debug("rank %d: communicator broken: %s", c->rank,
		 optireduce_strerror(err));
	c->act.c = NULL;
	c->held_since = 0;
	pthread_mutex_lock(&c->lock);
	if (c->state == OR_LIVE) {
		c->state = OR_BROKEN;
		c->err = err;
	}
	pthread_mutex_unlock(&c->lock);
	if (active)
		publish(c, active, err);
	pthread_mutex_lock(&c->lock);
	while (c->qlen) {
		struct or_call *q = &c->slots[c->queue[c->qhead]];

		c->qhead = (c->qhead + 1) % c->nslots;
		c->qlen--;
		q->err = -ENOTCONN;
		q->state = OR_SLOT_DONE;
		c->stats.calls_failed++;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------ */
/* Small reliable messages: loss reports (reports.c), ready signals.   */

int or_post_from_peers(optireduce_comm *c, uint64_t seq, unsigned int phase,
		       unsigned int kind, void *base, size_t len)
{
	for (int p = 0; p < c->size; p++) {
		struct or_recv rx = {
			.src = p,
			.tag = or_tag(seq, phase),
			.buf = (char *)base + (size_t)p * len,
			.len = len,
			.user_data = ud(kind, p, seq),
		};
		int rc;

		if (p == c->rank)
			continue;
		rc = c->rel->ops->post_recv(c->rel, &rx);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The active call.                                                    */

/* A direct call has one "shard" for everybody: the whole buffer. */
static size_t shard_len(struct or_active *a, int j)
{
	return a->direct ? a->c->count : or_shard_len(a->c->count, a->s.n, j);
}

static float *shard_ptr(struct or_active *a, int j)
{
	return a->c->work +
	       (a->direct ? 0 : or_shard_off(a->c->count, a->s.n, j));
}

/*
 * Round r of a lossy call (of R) ends at base + max((r + 1) * bound / R,
 * bound - (R - 1 - r) * t_C/R): the bound holds the whole call, and a
 * round may use all of it but the typical time of the rounds still to
 * come, never less than an even share. With an even split a round that
 * drew the tail was cut at its share even when the rounds after it then
 * took their usual time: under the tail3 profile (4 ranks, 64 KiB)
 * 0.2-2.0% of entries came late that way; with the slack to whichever
 * round needs it, 0-0.2%, at the same p99 (Documentation/design.md).
 */
static int64_t recv_deadline(struct or_active *a, unsigned int round)
{
	if (a->reliable)
		return 0;
	if (!a->base)	/* see start_clock() */
		return a->t0 + (a->catch_up ? OR_CATCH_UP_WAIT_NS + a->bound :
					      OR_READY_WAIT_NS);
	return a->base +
	       OR_MAX((round + 1) * a->budget,
		      a->bound - (a->s.r1 + a->s.r2 - 1 - round) * a->early);
}

/* Shard j in the phase-2 buffer. */
static float *p2_ptr(struct or_active *a, int j)
{
	return a->c->p2 + or_shard_off(a->c->count, a->s.n, j);
}

static int post_p2(optireduce_comm *c, int j)
{
	struct or_active *a = &c->act;
	struct or_recv rx = {
		.src = j,
		.flags = a->reliable ? 0 : OR_RECV_ADAPTIVE,
		.tag = or_tag(a->c->seq, OR_PHASE_GATHER),
		.buf = p2_ptr(a, j),
		.len = shard_len(a, j) * a->wsz,
		.deadline_ns = recv_deadline(a, a->s.r1 + or_sched_p2_round(&a->s, j)),
		.early_ns = a->early,
		.missing = a->p2_miss + (size_t)j * OR_MAX_MISSING,
		.max_missing = OR_MAX_MISSING,
		.user_data = ud(UD_P2_RECV, j, a->c->seq),
	};

	return a->t->ops->post_recv(a->t, &rx);
}

/* Grow a scratch buffer to hold need floats; 64-byte aligned: whole cache
 * lines for the vector kernels. Never shrinks, so steady state reuses. */
static int grow(float **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	free(*buf);
	*buf = aligned_alloc(64, OR_DIV_ROUND_UP(need * 4, 64) * 64);
	*cap = *buf ? need : 0;
	return *buf ? 0 : -ENOMEM;
}

/*
 * After a lossy call: the peers none of whose messages arrived in time
 * (heard[] still 0) are the ones the next call waits for, if it is a
 * catch-up call (catch_up()).
 */
static void note_silent(optireduce_comm *c)
{
	for (int j = 0; j < c->size; j++)
		c->silent[j] = !c->act.heard[j];
}

/* What this rank receives in a call, the measure the lossy transport's
 * late bytes are set against: its shard from every peer, then every other
 * shard (a direct call: the whole buffer from every peer). */
static uint64_t received_bytes(optireduce_comm *c)
{
	struct or_active *a = &c->act;

	return ((uint64_t)(c->size - 1) * a->len + (a->c->count - a->len)) *
	       a->wsz;
}

static void finish(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	struct or_call *call = a->c;
	struct optireduce_result *res = &call->res;
	int n = c->size;
	float factor = c->no_compensation ? 1.0f : (float)n;
	int64_t now = or_now_ns();
	float *result = call->work;	/* one rank: its own vector */
	float div = call->op == OPTIREDUCE_MEAN ? (float)n : 1.0f;

	/* Phase 2 brought the others' shards into p2; a hole there gets
	 * this rank's own contribution to that shard, still in work (it was
	 * the phase-1 send). The own reduced shard joins them. A direct
	 * call reduced the whole buffer in work. A 16-bit phase 2 carried
	 * the shards already divided (narrow_own_shard()). */
	if (n > 1 && !a->direct) {
		if (a->wsz != sizeof(float)) {
			factor /= div;
			div = 1.0f;
		}
		for (int j = 0; j < n; j++) {
			struct or_range *miss = a->p2_miss + (size_t)j * OR_MAX_MISSING;

			if (j == c->rank)
				continue;
			if (a->wsz != sizeof(float)) {
				or_wire_widen(p2_ptr(a, j), shard_len(a, j),
					      a->wdtype, miss, a->p2_nmiss[j]);
				or_wire_ranges(miss, a->p2_nmiss[j], a->wsz);
			}
			if (a->p2_nmiss[j])
				or_comp_fill(p2_ptr(a, j), shard_ptr(a, j),
					     shard_len(a, j), miss,
					     a->p2_nmiss[j], factor, &a->p2st);
		}
		memcpy(p2_ptr(a, c->rank), shard_ptr(a, c->rank),
		       a->len * sizeof(float));
		result = call->p2;
	}
	/* float32 leaves the Hadamard domain straight into the caller's
	 * buffer; other types are converted from the result. */
	if (a->hadamard && call->dtype == OPTIREDUCE_FLOAT32) {
		or_hadamard_inverse(call->buf, result, call->count, a->seed,
				    call->hadamard_block, div);
	} else {
		if (a->hadamard)
			or_hadamard_inverse(result, result, call->count,
					    a->seed, call->hadamard_block, 1.0f);
		or_dtype_store(call->buf, result, call->count, call->dtype,
			       div);
	}

	res->lost = a->p1st.lost + a->p2st.lost;
	res->compensated = a->p1st.compensated + a->p2st.compensated;
	res->lost_fraction = res->expected ? (double)res->lost / res->expected : 0;
	res->queued_ns = a->t0 - call->t_start;
	/* Each rank reduced its own direct call: a loss makes it differ. */
	if (a->p2st.lost || (a->direct && a->p1st.lost))
		res->flags |= OPTIREDUCE_RES_ESTIMATED;
	if (!a->reliable) {
		res->deadline_ns = a->bound;
		note_silent(c);
		if ((double)res->lost * 1e6 >
		    (double)a->loss_ppm * res->expected)
			res->flags |= OPTIREDUCE_RES_LOSS_HIGH;
	}
	if (!a->reliable && a->t->ops->late) {
		uint64_t late = a->t->ops->late(a->t);

		or_est_late(&c->est, received_bytes(c), late - c->late_seen);
		c->late_seen = late;
	}
	if (n > 1) {
		uint64_t took = now - (a->base ? a->base : a->t0);

		if (a->reliable)
			note_warmup_rate(c, call, res->sent_bytes, took);
		/* Also after reliable calls, so stats show the bound a lossy
		 * call of this size would get. */
		or_est_sample(&c->est, call->count * a->wsz, took, a->reliable);
		or_est_bound(&c->est, call->count * a->wsz);
		or_est_average(&c->est, call->count * a->wsz);
	}
	c->act.c = NULL;
	if (or_reporting(c)) {
		int rc = or_report_finish(c, call->seq, !a->reliable,
					  res->lost, res->expected);

		if (rc)
			break_comm(c, rc);
	}
	publish(c, call, 0);
}

/* This rank's 16-bit vector as it crosses the wire, from entry off. */
static uint16_t *wire_ptr(struct or_active *a, size_t off)
{
	return a->c->wire + off;
}

/*
 * A 16-bit phase 2 sends the owner's reduced shard divided by the mean's
 * divisor and rounded to the wire type (wire16.h), and the owner keeps
 * exactly that: every replica holds the same bits, rounded once.
 */
static void narrow_own_shard(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	float div = a->c->op == OPTIREDUCE_MEAN ? (float)c->size : 1.0f;

	if (a->wsz == sizeof(float) || a->direct || c->size == 1)
		return;
	or_wire_narrow(wire_ptr(a, a->off), shard_ptr(a, c->rank), a->len,
		       a->wdtype, div);
}

static void reduce(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	unsigned int nc = 0;

	if (!a->len)
		return;
	for (int s = 0; s < c->size; s++) {
		if (s == c->rank)
			continue;
		if (a->wsz != sizeof(float)) {
			struct or_range *miss = a->p1_miss +
						(size_t)s * OR_MAX_MISSING;

			or_wire_widen(a->c->p1 + (size_t)s * a->len, a->len,
				      a->wdtype, miss, a->p1_nmiss[s]);
			or_wire_ranges(miss, a->p1_nmiss[s], a->wsz);
		}
		c->contrib[nc++] = (struct or_contrib){
			.data = a->c->p1 + (size_t)s * a->len,
			.missing = a->p1_miss + (size_t)s * OR_MAX_MISSING,
			.nr_missing = a->p1_nmiss[s],
		};
	}
	or_tar_reduce(shard_ptr(a, c->rank), a->len, c->contrib, nc, c->size,
		      !c->no_compensation, c->events, &a->p1st);
	narrow_own_shard(c);
}

/* Owners sending in phase-2 round g: [*lo, *hi). */
static void p2_group(struct or_active *a, unsigned int g, int *lo, int *hi)
{
	if (a->s.r2 == 1) {
		*lo = 0;
		*hi = a->s.n;
	} else {
		*lo = g * a->s.incast;
		*hi = OR_MIN((unsigned int)*lo + a->s.incast, a->s.n);
	}
}

/*
 * Ready signals. A rank still finishing an earlier call, or still
 * computing the gradients it brings, has not posted this call's receives;
 * what peers send it meanwhile waits in its socket's backlog, which is
 * bounded (backlog_kb), and the rest is lost. And the peers' own receives
 * from it run their deadlines while it has not even started. Calls large
 * enough to overflow the backlog (more than ready_kb in phase 1 per rank,
 * decided from count and size alone, so alike on every rank; ready_kb 0:
 * every lossy call, as the DDP hook does) therefore take one more step:
 * once its receives are posted, a rank says so to every peer over the
 * reliable path, and a peer sends it phase 1 only after that, to all of
 * a round's peers at once when the last of them said so (issue_p1()).
 * Phase 2 needs none: its receives are posted with phase 1's. The
 * receives of a gated call wait for every peer's signal before their
 * deadlines start (start_clock()). Ranks in step lose about one one-way
 * delay, on calls that take many. A rank that is behind is waited for
 * instead of flooded or cut off, and its peers finish their call after
 * it started: waiting pulls ranks back into step, where sending at once
 * would keep the ones ahead ahead (each of their calls cut short by its
 * deadline).
 *
 * The first call after the warm-up is gated whatever its size: each rank
 * starts it once the warm-up's loss reports are in (reports_needed()),
 * and under load those come in milliseconds apart, more than a small
 * call's bound. Every rank knows which call that is, so it stays a
 * decision all ranks take alike.
 */
static int gated(optireduce_comm *c, struct or_call *call)
{
	struct or_active *a = &c->act;
	uint64_t in = (uint64_t)(c->size - 1) * shard_len(a, 0) * a->wsz;

	return !a->reliable && c->size > 1 &&
	       (in > (uint64_t)c->cfg.ready_kb * 1024 ||
		call->seq == c->cfg.warmup_calls);
}

/*
 * A catch-up call. A rank that starts a call ahead of some of its peers
 * by more than the bound gets none of their data in time: it loses their
 * entries, and at its deadline starts the next call, still ahead. They,
 * in step with the rest, find its data waiting in their backlogs and take
 * their usual time, so the lead only shrinks by what the bound exceeds
 * that time, and the margin grows by one step a call: in the guest, a
 * rank that came out of the warm-up 10 ms ahead of all three peers lost
 * six 4 KiB calls whole, and two ranks 12 ms ahead of the other two lost
 * two thirds of three calls' entries. So after a lossy call in which some
 * peer was silent (not one of its messages arrived in time, note_silent()),
 * the next lossy call of an ungated size is a catch-up call: its deadlines
 * count from the moment every such peer has delivered a message
 * (start_clock()) instead of from its start. It waits for them to catch
 * up, as a gated call would, but needs no signal from them, so no rank has
 * to agree to it. It waits a second at most (OR_CATCH_UP_WAIT_NS): without
 * those messages by then, its receives end a bound later. A peer silent
 * for another reason (the network) costs a call that waits that long.
 */
static int catch_up(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	int want = !a->reliable && c->size > 1 && !a->gated && a->len;

	/* Whom to wait for: the silent peers, but not one with nothing to
	 * send this call; nobody if this call cannot catch up. */
	a->awaited = 0;
	for (int j = 0; j < c->size; j++) {
		c->silent[j] &= want && !a->heard[j];
		a->awaited += c->silent[j];
	}
	want = a->awaited > 0;
	c->stats_catch_up += want;
	return want;
}

static int post_ready(optireduce_comm *c, uint64_t seq)
{
	return or_post_from_peers(c, seq, OR_PHASE_READY, UD_READY_RECV,
				  c->ready_sink, sizeof(*c->ready_sink));
}

/* After this call's lossy receives went to the kernel (the reap before
 * the first advance submitted them). */
static int send_ready(optireduce_comm *c)
{
	struct or_send tx = {
		.dst = OR_DST_ALL,
		.tag = or_tag(c->act.c->seq, OR_PHASE_READY),
		.buf = &ready_word,
		.len = sizeof(ready_word),
		.user_data = ud(UD_READY_SEND, c->rank, c->act.c->seq),
	};

	return c->rel->ops->send(c->rel, &tx);
}

static int all_ready(optireduce_comm *c)
{
	for (int j = 0; j < c->size; j++)
		if (!c->act.ready[j])
			return 0;
	return 1;
}

/*
 * Every peer has started this gated call: its receives were posted with
 * OR_READY_WAIT_NS and now get the deadlines the schedule gives them,
 * counted from this moment instead of from our own start. A peer still
 * computing when we started is late through no fault of the network;
 * counting from our start would cut its data, and count the wait as
 * network time in the estimates.
 */
static void start_clock(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	unsigned int last = a->s.r1 + a->s.r2 - 1;
	int rc;

	a->base = or_now_ns();
	/* A phase's kernel round ends at its last TAR round's deadline. */
	rc = a->t->ops->retime(a->t, or_tag(a->c->seq, OR_PHASE_SCATTER),
			       recv_deadline(a, a->s.r1 - 1));
	if (!rc && a->s.r2)
		rc = a->t->ops->retime(a->t, or_tag(a->c->seq, OR_PHASE_GATHER),
				       recv_deadline(a, last));
	if (rc)
		break_comm(c, rc);
}

/* A receive from peer completed: heard from it (if anything arrived, or
 * if our receive never was: no sign of the peer either way), and one
 * fewer silent peer for a catch-up call to wait for. */
static void on_peer_recv(optireduce_comm *c, const struct or_cqe *e,
			 int peer)
{
	struct or_active *a = &c->act;

	a->heard[peer] |= e->bytes > 0 || (e->flags & OR_CQE_UNPOSTED);
	if (!a->catch_up || a->base || !c->silent[peer])
		return;
	c->silent[peer] = 0;
	if (!--a->awaited)
		start_clock(c);
}

/*
 * Phase-1 sends of round k that may go now (see gated()); a->waiting counts
 * those still held. Called again while any are. A direct call sends its
 * whole buffer to all peers at once (one multicast on the kernel path),
 * so it goes when the last of them is ready.
 */
/* What goes out of shard j (a direct call: the whole buffer): the
 * float32 work vector, or its 16-bit image. */
static const void *send_ptr(struct or_active *a, int j)
{
	size_t off = a->direct ? 0 : or_shard_off(a->c->count, a->s.n, j);

	if (a->wsz != sizeof(float))
		return wire_ptr(a, off);
	return shard_ptr(a, j);
}

/*
 * Phase 1 to the @np peers in @go: one scatter send (OR_TCAP_SCATTER),
 * whose parts leave interleaved batch by batch, so that each peer gets its
 * shard at the np-th part of this rank's rate, all at once, as TCP's
 * all-to-all does. One message after the other would send each peer its
 * shard at the full rate in turn, and ranks out of step would meet at one
 * receiver's port. Else one send per peer.
 */
static int send_p1(optireduce_comm *c, const unsigned int *go,
		   unsigned int np)
{
	struct or_active *a = &c->act;
	uint64_t tag = or_tag(a->c->seq, OR_PHASE_SCATTER);
	int rc;

	if (np > 1 && (a->t->caps & OR_TCAP_SCATTER)) {
		struct or_send tx = {
			.dst = OR_DST_ALL,
			.flags = OR_SEND_SCATTER,
			.tag = tag,
			.parts = a->p1_parts,
			.user_data = ud(UD_P1_SCATTER, go[0], a->c->seq),
		};

		memset(a->p1_parts, 0, c->size * sizeof(*a->p1_parts));
		for (unsigned int i = 0; i < np; i++)
			a->p1_parts[go[i]] = (struct or_part){
				send_ptr(a, go[i]), shard_len(a, go[i]) * a->wsz,
			};
		rc = a->t->ops->send(a->t, &tx);
		if (rc)
			return rc;
		for (unsigned int i = 0; i < np; i++) {
			a->p1_issued[go[i]] = 1;
			a->p1_batch[go[i]] = go[0];
		}
		return 0;
	}
	for (unsigned int i = 0; i < np; i++) {
		unsigned int j = go[i];
		struct or_send tx = {
			.dst = j,
			.tag = tag,
			.buf = send_ptr(a, j),
			.len = shard_len(a, j) * a->wsz,
			.user_data = ud(UD_P1_SEND, j, a->c->seq),
		};

		rc = a->t->ops->send(a->t, &tx);
		if (rc)
			return rc;
		a->p1_issued[j] = 1;
	}
	return 0;
}

static int issue_p1(optireduce_comm *c, unsigned int k)
{
	struct or_active *a = &c->act;
	unsigned int peers[OPTIREDUCE_MAX_RANKS], np;
	unsigned int go[OPTIREDUCE_MAX_RANKS], ngo = 0;
	int64_t now = a->gated ? or_now_ns() : 0;
	int expired = a->gated && now >= a->t0 + OR_READY_WAIT_NS;
	unsigned int held = 0;
	int rc;

	/*
	 * One scatter to all of the round's peers, once every one of them is
	 * ready: a scatter to the few that are gives each of them a larger
	 * part of this rank's rate, and the rank that started its call first,
	 * ready first for everyone, would take several senders' whole rates
	 * at its port at once. p1_issued: sent, or an empty shard.
	 */
	np = or_sched_p1_peers(&a->s, c->rank, k, 0, peers);
	for (unsigned int i = 0; i < np && !expired; i++)
		if (!a->p1_issued[peers[i]] && !a->ready[peers[i]])
			held++;
	for (unsigned int i = 0; i < np && !held; i++) {
		int j = peers[i];

		if (a->p1_issued[j])
			continue;
		if (!a->ready[j])
			c->stats_ready_missed++;
		if (!a->direct)	/* else one send to all, below */
			go[ngo++] = j;
	}
	rc = send_p1(c, go, ngo);
	if (rc)
		return rc;
	if (a->direct && !held && np && !a->p1_issued[peers[0]]) {
		struct or_send tx = {
			.dst = OR_DST_ALL,
			.tag = or_tag(a->c->seq, OR_PHASE_SCATTER),
			.buf = send_ptr(a, 0),
			.len = a->c->count * a->wsz,
			.user_data = ud(UD_P1_SEND, c->rank, a->c->seq),
		};

		rc = a->t->ops->send(a->t, &tx);
		if (rc)
			return rc;
		for (unsigned int i = 0; i < np; i++)
			a->p1_issued[peers[i]] = 1;
	}
	if (a->waiting && !held)
		c->stats_ready_wait += now - a->wait_since;
	else if (!a->waiting && held)
		a->wait_since = now;
	a->waiting = held;
	return 0;
}

static int start_round(optireduce_comm *c, unsigned int k)
{
	struct or_active *a = &c->act;
	int lo, hi, rc;

	/* Round 0 starts once per call. */
	if (k == 0 && a->gated) {
		rc = send_ready(c);
		if (rc)
			return rc;
	}
	if (k < a->s.r1)
		return issue_p1(c, k);
	p2_group(a, k - a->s.r1, &lo, &hi);
	if (c->rank >= lo && c->rank < hi && !a->p2_send) {
		struct or_send tx = {
			.dst = OR_DST_ALL,
			.tag = or_tag(a->c->seq, OR_PHASE_GATHER),
			.buf = send_ptr(a, c->rank),
			.len = a->len * a->wsz,
			.user_data = ud(UD_P2_SEND, c->rank, a->c->seq),
		};

		return a->t->ops->send(a->t, &tx);
	}
	return 0;
}

static int round_complete(optireduce_comm *c, unsigned int k)
{
	struct or_active *a = &c->act;
	unsigned int peers[OPTIREDUCE_MAX_RANKS], np;
	int lo, hi;

	if (k < a->s.r1) {
		np = or_sched_p1_peers(&a->s, c->rank, k, 1, peers);
		for (unsigned int i = 0; i < np; i++)
			if (!a->p1_recv[peers[i]])
				return 0;
		np = or_sched_p1_peers(&a->s, c->rank, k, 0, peers);
		for (unsigned int i = 0; i < np; i++)
			if (!a->p1_send[peers[i]])
				return 0;
		return 1;
	}
	p2_group(a, k - a->s.r1, &lo, &hi);
	for (int j = lo; j < hi; j++)
		if (j != c->rank && !a->p2_recv[j])
			return 0;
	return !(c->rank >= lo && c->rank < hi) || a->p2_send;
}

/* Move the active call as far as it can go; 1 if anything happened. */
static int advance(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	int moved = 0, rc;

	while (a->c) {
		if (a->round == a->s.r1 + a->s.r2) {
			reduce(c);	/* n == 1 or empty schedule */
			finish(c);
			return 1;
		}
		if (!a->round_started || a->waiting) {
			unsigned int held = a->waiting;

			rc = a->round_started ? issue_p1(c, a->round) :
						start_round(c, a->round);
			if (rc) {
				break_comm(c, rc);
				return 1;
			}
			moved |= !a->round_started || a->waiting != held;
			a->round_started = 1;
		}
		if (!round_complete(c, a->round))
			break;
		a->round++;
		a->round_started = 0;
		moved = 1;
		if (a->round == a->s.r1)
			reduce(c);
		if (a->round == a->s.r1 + a->s.r2) {
			finish(c);
			return 1;
		}
	}
	return moved;
}

/* Take the queue's head; it becomes the active call. Under c->lock. */
static struct or_call *queue_pop(optireduce_comm *c)
{
	struct or_call *call = &c->slots[c->queue[c->qhead]];

	c->qhead = (c->qhead + 1) % c->nslots;
	c->qlen--;
	call->state = OR_SLOT_ACTIVE;
	return call;
}

/* What activation reads under c->lock, at the moment the call leaves the
 * queue: options may change while it runs, the call keeps these. */
struct or_taken {
	unsigned int warmup;
	unsigned int timeout_ms;
	uint64_t fallback_until;
	uint32_t memlock_kb;
};

/*
 * The queue's head, taken off the queue, if it may start: the loss
 * reports it depends on decide its path, so it waits for them (and its
 * timeout counts from when it began to wait, held_since). NULL: nothing
 * to start now; a call queued or a report arriving wakes us.
 */
static struct or_call *take_head(optireduce_comm *c, struct or_taken *tk)
{
	struct or_call *call;

	pthread_mutex_lock(&c->lock);
	if (!c->qlen || c->state != OR_LIVE) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	call = &c->slots[c->queue[c->qhead]];
	pthread_mutex_unlock(&c->lock);
	if (!or_reports_allow(c, call)) {
		if (!c->held_since)
			c->held_since = or_now_ns();
		return NULL;
	}

	pthread_mutex_lock(&c->lock);
	queue_pop(c);
	tk->warmup = c->cfg.warmup_calls;
	tk->timeout_ms = call->timeout_ms;
	c->act.loss_ppm = call->loss_ppm;
	tk->fallback_until = c->fallback_until;
	tk->memlock_kb = c->memlock_kb;
	pthread_mutex_unlock(&c->lock);
	return call;
}

/* The call becomes the active one; its clocks start. Its timeout counts
 * from when it could have started: a call held for reports waited. */
static void begin_call(optireduce_comm *c, struct or_call *call,
		       const struct or_taken *tk)
{
	struct or_active *a = &c->act;

	memset(&call->res, 0, sizeof(call->res));
	memset(&a->p1st, 0, sizeof(a->p1st));
	memset(&a->p2st, 0, sizeof(a->p2st));
	a->c = call;
	a->t0 = or_now_ns();
	a->call_deadline = tk->timeout_ms ?
		(c->held_since ? c->held_since : a->t0) +
		(int64_t)tk->timeout_ms * 1000000 : 0;
	c->held_since = 0;
}

/*
 * The incast limit of this call's schedule. Every rank must run the same
 * schedule: a lossy call with dynamic incast takes the limit the consumed
 * loss reports chose (incast.h), identical on every rank; any other the
 * option as the call was started with it.
 */
static unsigned int call_incast(optireduce_comm *c, const struct or_call *call,
				int reliable)
{
	if (reliable || !call->incast_dynamic)
		return call->incast;
	return or_incast_choose(&c->incast,
				or_incast_ceiling(call->incast, c->size));
}

/*
 * The path: reliable (warm-up, fallback after a safeguard trip, no lossy
 * transport, or more than the ranks' locked memory), else lossy, and then
 * direct or the Transpose AllReduce under the call's incast limit; with
 * or without the Hadamard transform. Each is decided from the call number,
 * size, options and consumed reports alone, so every rank takes the same.
 */
static void choose_path(optireduce_comm *c, struct or_call *call,
			const struct or_taken *tk)
{
	struct or_active *a = &c->act;
	uint64_t seq = call->seq;
	int n = c->size, me = c->rank;
	size_t bytes = call->count * or_dtype_size(call->dtype);

	a->reliable = !c->lossy || seq < tk->warmup ||
		      seq < tk->fallback_until;
	or_sched_init(&a->s, n, call_incast(c, call, a->reliable));
	/* Not under an incast limit, which a direct call would break. */
	a->direct = !a->reliable && n > 1 &&
		    a->s.incast >= (unsigned int)n - 1 &&
		    (uint64_t)(n - 1) * bytes <=
		    (uint64_t)c->cfg.direct_kb * 1024;
	/* More than the ranks' locked memory allows (memlock.c): the
	 * reliable path, on every rank alike. */
	if (!a->reliable && n > 1 &&
	    or_memlock_call_kb(call->count, n, a->direct) > tk->memlock_kb) {
		a->reliable = 1;
		a->direct = 0;
	}
	a->t = a->reliable ? c->rel : c->lossy;
	a->hadamard = n > 1 && (call->hadamard_mode == OPTIREDUCE_HADAMARD_ON ||
		(call->hadamard_mode == OPTIREDUCE_HADAMARD_AUTO &&
		 !a->reliable && c->hadamard_auto));
	a->wdtype = or_wire_dtype(call->dtype, a->hadamard);
	a->wsz = or_dtype_size(a->wdtype);
	a->seed = or_mix64(c->cfg.seed ^ or_mix64(seq + 1));
	/* Without an incast limit phase 1 is already one round, with
	 * every peer; a direct call drops phase 2. */
	if (a->direct)
		a->s.r2 = 0;
	a->len = a->direct ? call->count : or_shard_len(call->count, n, me);
	a->off = a->direct ? 0 : or_shard_off(call->count, n, me);
	a->gated = gated(c, call);
}

/* The bound of a lossy call and its rounds' shares (recv_deadline()). */
static void set_deadlines(optireduce_comm *c, const struct or_call *call)
{
	struct or_active *a = &c->act;
	size_t bytes = call->count * a->wsz;

	a->bound = a->budget = a->early = 0;
	if (!a->reliable && c->size > 1) {
		unsigned int rounds = a->s.r1 + a->s.r2;

		a->bound = or_est_bound(&c->est, bytes);
		a->budget = a->bound / rounds;
		a->early = or_est_average(&c->est, bytes) / rounds;
	}
}

/* The payload this rank sends its peers in the call, counted once per
 * peer it is meant for: its shards (a direct call: its buffer) to each in
 * phase 1, its reduced shard to every peer in phase 2. */
static uint64_t sent_bytes(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	uint64_t n = c->size, entries;

	if (n == 1)
		return 0;
	if (a->direct)
		entries = (n - 1) * a->c->count;
	else
		entries = a->c->count - a->len + (n - 1) * a->len;
	return entries * a->wsz;
}

/* The result's fields known at the start: what finish() adds to. */
static void describe_result(optireduce_comm *c, struct or_call *call,
			    const struct or_taken *tk)
{
	struct or_active *a = &c->act;
	struct optireduce_result *res = &call->res;

	res->seq = call->seq;
	res->count = call->count;
	/* Every entry of the result depends on something received: the own
	 * shard on its contributions, the others on phase 2. */
	res->expected = c->size > 1 ? call->count : 0;
	res->wire_dtype = a->wdtype;
	res->sent_bytes = sent_bytes(c);
	res->flags = (a->reliable ? OPTIREDUCE_RES_RELIABLE : 0) |
		(a->hadamard ? OPTIREDUCE_RES_HADAMARD : 0) |
		(a->direct ? OPTIREDUCE_RES_DIRECT : 0);
	if (a->reliable && c->lossy)
		res->flags |= call->seq < tk->warmup ? OPTIREDUCE_RES_WARMUP :
						       OPTIREDUCE_RES_FALLBACK;
	/* take_head() consumed that call's reports before we got here */
	res->group_lost_ppm = or_report_group_ppm(c, call->seq);
	res->incast = a->s.incast;
}

/*
 * The slot's scratch buffers, grown to the call, and the vector to send:
 * widened to float32 and, with the transform, in the Hadamard domain.
 * float32 enters that domain straight from the caller's buffer; other
 * types are converted into the work buffer first.
 */
static int prepare_buffers(optireduce_comm *c, struct or_call *call)
{
	struct or_active *a = &c->act;
	int n = c->size, rc;

	rc = grow(&call->work, &call->work_cap, call->count);
	if (!rc)
		rc = grow(&call->p1, &call->p1_cap, (size_t)n * a->len);
	if (!rc && n > 1)
		rc = grow(&call->p2, &call->p2_cap, call->count);
	if (rc)
		return rc;
	if (a->hadamard && call->dtype == OPTIREDUCE_FLOAT32) {
		or_hadamard_forward(call->work, call->buf, call->count, a->seed,
				    call->hadamard_block);
	} else {
		or_dtype_load(call->work, call->buf, call->count, call->dtype);
		if (a->hadamard)
			or_hadamard_forward(call->work, call->work, call->count,
					    a->seed, call->hadamard_block);
	}
	/* A 16-bit call sends its vector rounded to the wire type. */
	if (a->wsz != sizeof(float) && n > 1) {
		float *wire = (float *)call->wire;

		rc = grow(&wire, &call->wire_cap, OR_DIV_ROUND_UP(call->count, 2));
		call->wire = (uint16_t *)wire;
		if (rc)
			return rc;
		or_wire_narrow(call->wire, call->work, call->count, a->wdtype,
			       1.0f);
	}
	return 0;
}

/*
 * The done flags, from the path: what this rank has nothing to wait for
 * starts done. Then whether this is a catch-up call, which depends on
 * whom it hears from at all; its deadlines (base) wait for the peers
 * then, as a gated call's do for their signals.
 */
static void reset_progress(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	int n = c->size, me = c->rank;

	a->round = 0;
	a->round_started = 0;
	memset(a->p1_nmiss, 0, n * sizeof(uint32_t));
	memset(a->p2_nmiss, 0, n * sizeof(uint32_t));
	/* An empty shard is never sent; a direct call has no phase 2. */
	a->p2_send = !a->len || a->direct;
	a->waiting = 0;
	for (int j = 0; j < n; j++) {
		int empty = j == me || !shard_len(a, j);

		a->p1_recv[j] = j == me || !a->len;
		a->p1_send[j] = empty;
		a->p1_issued[j] = empty;
		a->p1_batch[j] = UINT32_MAX;
		a->p2_recv[j] = empty || a->direct;
		a->ready[j] = j == me || !a->gated;
		/* Nothing to hear from it: never silent. */
		a->heard[j] = a->p1_recv[j] && a->p2_recv[j];
	}
	a->catch_up = catch_up(c);
	a->base = a->gated || a->catch_up ? 0 : a->t0;
}

/*
 * Every receive of the call, posted before anything is sent: the loss
 * reports' and ready signals' on the reliable path, then phase 1's (into
 * p1) and phase 2's (into p2). Phase 2's land apart from the buffer phase
 * 1 sends from, so none has to wait for those sends to leave (a peer that
 * finished phase 1 first would find no receive posted, and its shard would
 * pile up in the socket's backlog or be lost).
 */
static int post_receives(optireduce_comm *c, struct or_call *call)
{
	struct or_active *a = &c->act;
	uint64_t seq = call->seq;
	int n = c->size, me = c->rank, rc;

	rc = or_report_start(c, seq, !a->reliable && n > 1,
			     call->count * a->wsz,
			     call->incast_dynamic ? a->s.incast : 0);
	if (!rc && a->gated)
		rc = post_ready(c, seq);
	if (rc)
		return rc;
	for (int s = 0; s < n && a->len; s++) {
		struct or_recv rx = {
			.src = s,
			.flags = a->reliable ? 0 : OR_RECV_ADAPTIVE,
			.tag = or_tag(seq, OR_PHASE_SCATTER),
			.buf = call->p1 + (size_t)s * a->len,
			.len = a->len * a->wsz,
			.early_ns = a->early,
			.missing = a->p1_miss + (size_t)s * OR_MAX_MISSING,
			.max_missing = OR_MAX_MISSING,
			.user_data = ud(UD_P1_RECV, s, seq),
		};

		if (s == me)
			continue;
		rx.deadline_ns = recv_deadline(a, or_sched_p1_round(&a->s, s, me));
		rc = a->t->ops->post_recv(a->t, &rx);
		if (rc)
			return rc;
	}
	for (int j = 0; j < n; j++) {
		if (a->p2_recv[j])
			continue;	/* this rank's own, or an empty shard */
		rc = post_p2(c, j);
		if (rc)
			return rc;
	}
	return 0;
}

/* Start the call at the head of the queue; 1 if one was started (or
 * failed starting, which breaks the communicator). */
static int activate(optireduce_comm *c)
{
	struct or_taken tk;
	struct or_call *call = take_head(c, &tk);
	int rc;

	if (!call)
		return 0;
	begin_call(c, call, &tk);
	choose_path(c, call, &tk);
	set_deadlines(c, call);
	describe_result(c, call, &tk);
	rc = prepare_buffers(c, call);
	if (!rc) {
		reset_progress(c);
		rc = post_receives(c, call);
	}
	if (rc)
		break_comm(c, rc);
	return 1;
}

static void on_cqe(optireduce_comm *c, const struct or_cqe *e)
{
	struct or_active *a = &c->act;
	unsigned int kind = UD_KIND(e->user_data);
	int peer = UD_PEER(e->user_data);
	uint64_t seq = UD_SEQ(e->user_data);

	/* seq is the batch of a report. */
	if (kind == UD_REPORT_SEND) {
		or_report_sent(c, seq, e->res);
		return;
	}
	if (e->res < 0) {
		break_comm(c, e->res);
		return;
	}
	if (kind == UD_REPORT_RECV) {
		or_report_received(c, seq);
		return;
	}
	if (kind == UD_READY_SEND)
		return;
	if (!a->c || (a->c->seq & UD_SEQ_MASK) != seq) {
		/* A ready signal after its call ended at a deadline. */
		if (kind != UD_READY_RECV)
			or_debug("rank %d: stale completion kind %u seq %llu",
				 c->rank, kind, (unsigned long long)seq);
		return;
	}
	if (kind == UD_P1_RECV || kind == UD_P2_RECV)
		on_peer_recv(c, e, peer);
	switch (kind) {
	case UD_P1_RECV:
		a->p1_recv[peer] = 1;
		a->p1_nmiss[peer] = e->nr_missing;
		break;
	case UD_P1_SEND:
		a->p1_send[peer] = 1;
		if (a->direct)	/* the one send to all */
			memset(a->p1_send, 1, c->size);
		break;
	case UD_P1_SCATTER:
		for (int j = 0; j < c->size; j++)
			if (j != c->rank && a->p1_issued[j] &&
			    a->p1_batch[j] == (uint32_t)peer)
				a->p1_send[j] = 1;
		break;
	case UD_P2_RECV:
		a->p2_recv[peer] = 1;
		a->p2_nmiss[peer] = e->nr_missing;
		break;
	case UD_P2_SEND:
		a->p2_send = 1;
		break;
	case UD_READY_RECV:
		a->ready[peer] = 1;
		if (!a->base && all_ready(c))
			start_clock(c);
		break;
	}
}

/*
 * When the queue's head, held back for want of loss reports, reaches its
 * timeout (0: it is not held, or has none). Reports stop coming when a
 * peer stopped with its connection still up: the calls before it ended
 * at their deadlines, this one would wait for good.
 */
static int64_t held_deadline(optireduce_comm *c)
{
	int64_t t = 0;

	if (!c->held_since)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (c->qlen) {
		struct or_call *call = &c->slots[c->queue[c->qhead]];

		if (call->timeout_ms)
			t = c->held_since + (int64_t)call->timeout_ms * 1000000;
	}
	pthread_mutex_unlock(&c->lock);
	return t;
}

/* That head fails with -ETIMEDOUT, as an active call past it would, and
 * the communicator with it. */
static void held_timeout(optireduce_comm *c)
{
	pthread_mutex_lock(&c->lock);
	c->act.c = queue_pop(c);
	pthread_mutex_unlock(&c->lock);
	break_comm(c, -ETIMEDOUT);
}

/* Earliest moment something time-driven is due; 0: nothing. */
static int64_t next_timer(optireduce_comm *c)
{
	struct or_active *a = &c->act;
	int64_t t = a->call_deadline;

	if (!a->c)
		return held_deadline(c);
	if (a->waiting) {
		int64_t d = a->t0 + OR_READY_WAIT_NS;

		if (!t || d < t)
			t = d;
	}
	if (!a->reliable) {
		/* The sim transport ends late receives when reaped after
		 * their deadline; the kernel ends them itself. */
		for (int j = 0; j < c->size; j++) {
			int64_t d = 0;

			if (!a->p1_recv[j])
				d = recv_deadline(a, or_sched_p1_round(&a->s, j, c->rank));
			else if (!a->p2_recv[j])
				d = recv_deadline(a, a->s.r1 + or_sched_p2_round(&a->s, j));
			if (d && (!t || d < t))
				t = d;
		}
	}
	return t;
}

static int reap_all(optireduce_comm *c, struct or_transport *t)
{
	struct or_cqe cqes[64];
	int n, any = 0;

	if (!t || c->err)
		return 0;
	do {
		n = t->ops->reap(t, cqes, OR_ARRAY_SIZE(cqes));
		if (n < 0) {
			break_comm(c, n);
			return 1;
		}
		for (int i = 0; i < n; i++)
			on_cqe(c, &cqes[i]);
		any |= n > 0;
	} while (n == (int)OR_ARRAY_SIZE(cqes) && !c->err);
	return any;
}

static void *progress_main(void *arg)
{
	optireduce_comm *c = arg;

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = c->wake_fd, .events = POLLIN },
			{ .fd = c->rel ? c->rel->event_fd : -1, .events = POLLIN },
			{ .fd = c->lossy ? c->lossy->event_fd : -1, .events = POLLIN },
		};
		struct timespec ts, *tsp = NULL;
		int busy = 0, state;
		int64_t when, held;
		uint64_t cnt;

		pthread_mutex_lock(&c->lock);
		state = c->state;
		pthread_mutex_unlock(&c->lock);
		if (state == OR_CLOSING) {
			/* The last loss reports may still be queued: peers
			 * finishing the last call wait for them. */
			int rc = or_report_flush(c);

			if (rc)
				break_comm(c, rc);
			reap_all(c, c->rel);
			break;
		}
		if (state != OR_LIVE)
			pfd[1].fd = pfd[2].fd = -1;	/* only a wake-up matters */
		if (state == OR_LIVE) {
			if (!c->act.c)
				busy |= activate(c);
			busy |= reap_all(c, c->rel);
			busy |= reap_all(c, c->lossy);
			if (c->act.c)
				busy |= advance(c);
			if (c->act.c && c->act.call_deadline &&
			    or_now_ns() >= c->act.call_deadline) {
				break_comm(c, -ETIMEDOUT);
				busy = 1;
			} else if (!c->act.c && (held = held_deadline(c)) &&
				   or_now_ns() >= held) {
				held_timeout(c);
				busy = 1;
			}
		}
		if (c->err && c->rel) {
			/*
			 * Broken: close every connection now, so that peers
			 * fail at once instead of waiting for their timeout.
			 */
			c->rel->ops->destroy(c->rel);
			c->rel = NULL;
			if (c->lossy)
				c->lossy->ops->destroy(c->lossy);
			c->lossy = NULL;
		}
		if (busy)
			continue;	/* queued work is submitted by the next reap */
		when = state == OR_LIVE ? next_timer(c) : 0;
		if (when) {
			int64_t left = when - or_now_ns();

			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		ppoll(pfd, 3, tsp, NULL);
		if (read(c->wake_fd, &cnt, sizeof(cnt)) < 0) {
			/* nothing pending: fine */
		}
	}
	return NULL;
}

int or_engine_start(optireduce_comm *c)
{
	int rc = pthread_create(&c->thread, NULL, progress_main, c);

	if (rc)
		return -rc;
	c->thread_started = 1;
	return 0;
}

void or_engine_stop(optireduce_comm *c)
{
	if (!c->thread_started)
		return;
	or_engine_wake(c);
	pthread_join(c->thread, NULL);
	c->thread_started = 0;
}
