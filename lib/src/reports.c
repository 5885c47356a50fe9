// SPDX-License-Identifier: MIT
/*
 * Loss reports and the decisions every rank takes alike from them
 * (reports.h): the safeguard's fallback to the reliable path,
 * HADAMARD_AUTO, the incast limit (incast.h), the agreed bound (estimator.c) and group_lost_ppm.
 */
#include <endian.h>
#include <string.h>

#include "reports.h"
#include "user_data.h"
#include "util.h"

static struct or_report_slot *report_slot(optireduce_comm *c, uint64_t batch)
{
	return &c->reports[batch % OR_REPORT_SLOTS];
}

int or_reporting(optireduce_comm *c)
{
	return c->lossy && c->size > 1;
}

/*
 * Whether call seq may start as far as reports go: the first call of a
 * batch needs its slot back, consumed, done sending, and with every receive
 * of the batch it held completed (a peer far behind has not sent that
 * batch yet; its arrival wakes us).
 */
static int report_room(optireduce_comm *c, uint64_t seq)
{
	struct or_report_slot *rs = report_slot(c, seq / OR_REPORT_BATCH);

	if (!or_reporting(c) || seq % OR_REPORT_BATCH)
		return 1;
	return !rs->used && !rs->send_pending &&
	       (!rs->posted || rs->got == (unsigned int)c->size - 1);
}

/* At the start of call seq (after report_room()): the first call of a
 * batch posts the receives of the peers' batch messages; every call notes
 * whether it will report. */
int or_report_start(optireduce_comm *c, uint64_t seq, int lossy,
		    uint64_t bytes, unsigned int incast)
{
	uint64_t batch = seq / OR_REPORT_BATCH;
	struct or_report_slot *rs = report_slot(c, batch);
	unsigned int i = seq % OR_REPORT_BATCH;

	if (!or_reporting(c))
		return 0;
	if (!i) {
		rs->batch = batch;
		rs->used = 1;
		rs->posted = 1;
		rs->got = 0;
		memset(rs->lossy, 0, sizeof(rs->lossy));
		memset(rs->r, 0, (size_t)c->size * OR_REPORT_BATCH *
				 sizeof(*rs->r));
	}
	rs->lossy[i] = lossy;
	rs->bytes[i] = bytes;
	rs->incast[i] = incast;
	if (i)
		return 0;
	return or_post_from_peers(c, batch, OR_PHASE_REPORT, UD_REPORT_RECV,
				  rs->r, OR_REPORT_BATCH * sizeof(*rs->r));
}

/*
 * How long the reliable path lasts after a trip: fallback_calls / 16 (at
 * least one call) the first time, doubling with every trip that follows
 * without a clean lossy call in between, up to fallback_calls. One noisy
 * call then costs a few reliable calls, while loss that persists keeps
 * the calls on the reliable path ever longer.
 */
#define OR_FALLBACK_DOUBLINGS	4

static uint64_t fallback_len(unsigned int cap, unsigned int trips_in_row)
{
	unsigned int d = trips_in_row - 1;
	uint64_t len;

	if (d > OR_FALLBACK_DOUBLINGS)
		d = OR_FALLBACK_DOUBLINGS;
	len = cap >> (OR_FALLBACK_DOUBLINGS - d);
	return len || !cap ? len : 1;
}

/*
 * HADAMARD_AUTO: the transform spreads a loss over its block, which keeps
 * training on course at loss rates of 5-10% but buys nothing at 1% or
 * less (the paper), while it costs two passes over the buffer per call.
 * So AUTO follows the loss the ranks report: a moving average (1/4) of
 * the lost fraction of lossy calls, the transform on from 1% and off again
 * under 0.25%. The reports are the same on every rank and consumed in the
 * same order, so every rank makes the same choice for the same call, as
 * it must: a sum of transformed and untransformed vectors is garbage.
 */
#define OR_HADAMARD_AUTO_ON	0.01
#define OR_HADAMARD_AUTO_OFF	0.0025

static void hadamard_auto_update(optireduce_comm *c, uint64_t lost,
				 uint64_t expected)
{
	if (!expected)
		return;
	c->loss_avg += ((double)lost / expected - c->loss_avg) / 4;
	if (c->loss_avg >= OR_HADAMARD_AUTO_ON)
		c->hadamard_auto = 1;
	else if (c->loss_avg < OR_HADAMARD_AUTO_OFF)
		c->hadamard_auto = 0;
}

/* A rank's loss in parts per million, rounded up: any loss shows. */
static uint32_t loss_ppm(uint64_t lost, uint64_t expected)
{
	if (!expected || !lost)
		return 0;
	if (lost >= expected)
		return 1000000;
	return (uint32_t)((lost * 1000000 + expected - 1) / expected);
}

/* One call's reports from every rank: agreement and the worst rank's
 * loss (results' group_lost_ppm); for a lossy call also AUTO and the
 * safeguard. */
static void report_consume(optireduce_comm *c, struct or_report_slot *rs,
			   unsigned int i, const struct or_call *call)
{
	uint64_t seq = call->seq;
	uint64_t lost = 0, expected = 0;
	unsigned int ppm, fallback;
	uint32_t worst = 0;

	for (int p = 0; p < c->size; p++) {
		const struct or_report *r = &rs->r[p * OR_REPORT_BATCH + i];
		uint64_t l = le64toh(r->lost), e = le64toh(r->expected);

		lost += l;
		expected += e;
		if (loss_ppm(l, e) > worst)
			worst = loss_ppm(l, e);
		c->t_b[p] = le64toh(r->t_b_ns);
	}
	c->group_ppm[(rs->batch * OR_REPORT_BATCH + i) %
		     (2 * OR_REPORT_LAG)] = rs->lossy[i] ? worst : 0;
	or_est_agree(&c->est, rs->bytes[i], c->t_b, c->size);
	if (!rs->lossy[i])
		return;
	hadamard_auto_update(c, lost, expected);
	or_incast_update(&c->incast, rs->incast[i], lost, expected,
			 or_incast_ceiling(call->incast, c->size));
	/* The threshold of the call that will go by the decision. */
	ppm = call->loss_ppm;
	fallback = call->fallback_calls;
	pthread_mutex_lock(&c->lock);
	if (expected && (double)lost * 1e6 > (double)ppm * expected) {
		uint64_t len;

		c->stats.safeguard_trips++;
		c->trips_in_row++;
		len = fallback_len(fallback, c->trips_in_row);
		if (seq + len > c->fallback_until)
			c->fallback_until = seq + len;
	} else {
		c->trips_in_row = 0;
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * The reports call seq waits for: those of every call up to
 * seq - OR_REPORT_LAG, and at the first call after the warm-up those of
 * every warm-up call in a whole batch. Each rank's t_B comes from its own
 * warm-up samples, and on a noisy path the ranks' estimates of the same
 * calls differ by 2x or more; without this the first OR_REPORT_LAG lossy
 * calls would run on those, the rank with the lowest cutting off what
 * its peers send a little later. Waiting costs the first lossy call the
 * time until every rank has ended its warm-up, which its receives would
 * have waited anyway.
 */
static uint64_t reports_needed(optireduce_comm *c, uint64_t seq)
{
	uint64_t upto = seq >= OR_REPORT_LAG ? seq - OR_REPORT_LAG + 1 : 0;
	unsigned int warmup = c->cfg.warmup_calls;

	if (seq == warmup && warmup / OR_REPORT_BATCH * OR_REPORT_BATCH > upto)
		upto = warmup / OR_REPORT_BATCH * OR_REPORT_BATCH;
	return upto;
}

/*
 * Before @call may start, the reports of the calls reports_needed()
 * names must be in; they decide the bound and path of calls from it on,
 * identically on every rank. Returns 1 when it may start.
 */
static int reports_ready(optireduce_comm *c, const struct or_call *call)
{
	uint64_t seq = call->seq, upto;

	if (!or_reporting(c))
		return 1;
	upto = reports_needed(c, seq);
	while (c->report_next < upto) {
		uint64_t k = c->report_next;
		struct or_report_slot *rs = report_slot(c, k / OR_REPORT_BATCH);
		unsigned int i = k % OR_REPORT_BATCH;

		if (rs->got < (unsigned int)c->size - 1)
			return 0;	/* a report arriving wakes us */
		report_consume(c, rs, i, call);
		if (i == OR_REPORT_BATCH - 1)
			rs->used = 0;
		c->report_next++;
	}
	return 1;
}

int or_reports_allow(optireduce_comm *c, const struct or_call *call)
{
	return reports_ready(c, call) && report_room(c, call->seq);
}

static int report_send(optireduce_comm *c, uint64_t batch)
{
	struct or_report_slot *rs = report_slot(c, batch);
	struct or_send tx = {
		.dst = OR_DST_ALL,
		.tag = or_tag(batch, OR_PHASE_REPORT),
		.buf = &rs->r[c->rank * OR_REPORT_BATCH],
		.len = OR_REPORT_BATCH * sizeof(*rs->r),
		.user_data = ud(UD_REPORT_SEND, c->rank, batch),
	};

	rs->send_pending = 1;
	return c->rel->ops->send(c->rel, &tx);
}

/* At the end of call seq: its report, and the batch when it is whole. */
int or_report_finish(optireduce_comm *c, uint64_t seq, int lossy,
		     uint64_t lost, uint64_t expected)
{
	struct or_report_slot *rs = report_slot(c, seq / OR_REPORT_BATCH);
	unsigned int i = seq % OR_REPORT_BATCH;
	struct or_report *mine = &rs->r[c->rank * OR_REPORT_BATCH + i];

	if (lossy) {
		mine->lost = htole64(lost);
		mine->expected = htole64(expected);
	}
	/* Reliable calls too: the warm-up's make the first lossy call's
	 * agreement (reports_needed()). */
	mine->t_b_ns = htole64(or_est_own(&c->est, rs->bytes[i]));
	c->report_done = seq + 1;
	if (i == OR_REPORT_BATCH - 1)
		return report_send(c, seq / OR_REPORT_BATCH);
	return 0;
}

/*
 * Closing: a batch cut short by the last call goes out as it is. Peers
 * still finishing that call posted its receive; were it never to come, the
 * connection closing under it would fail their call.
 */
int or_report_flush(optireduce_comm *c)
{
	if (or_reporting(c) && c->report_done % OR_REPORT_BATCH && !c->err)
		return report_send(c, (c->report_done - 1) / OR_REPORT_BATCH);
	return 0;
}

void or_report_received(optireduce_comm *c, uint64_t batch)
{
	report_slot(c, batch)->got++;
}

/* A peer that finished its last call and left needs no more loss
 * reports: failing to send it ours is not a failure. */
void or_report_sent(optireduce_comm *c, uint64_t batch, int res)
{
	if (res < 0)
		or_debug("rank %d: loss report of call %llu not delivered: %s",
			 c->rank, (unsigned long long)batch,
			 optireduce_strerror(res));
	report_slot(c, batch)->send_pending = 0;
}

uint32_t or_report_group_ppm(optireduce_comm *c, uint64_t seq)
{
	if (!or_reporting(c) || seq < OR_REPORT_LAG)
		return 0;
	return c->group_ppm[(seq - OR_REPORT_LAG) % (2 * OR_REPORT_LAG)];
}
