// SPDX-License-Identifier: MIT
/*
 * What the kernel finished, as the engine wants it: results of sendmsg
 * (posts, sends, cancels) and completion records read from the socket
 * become or_cqe in a queue that reap empties. The queue is a ring that
 * grows to the largest backlog and then stops growing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport_kernel.h"
#include "util.h"

int kt_cq_push(struct kt *kt, const struct or_cqe *c)
{
	if (kt->cq_n == kt->cq_cap) {
		unsigned int cap = kt->cq_cap ? kt->cq_cap * 2 : 64;
		struct or_cqe *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		/* Unwrap the ring into the new array. */
		for (unsigned int i = 0; i < kt->cq_n; i++)
			n[i] = kt->cq[(kt->cq_head + i) % kt->cq_cap];
		free(kt->cq);
		kt->cq = n;
		kt->cq_cap = cap;
		kt->cq_head = 0;
	}
	kt->cq[(kt->cq_head + kt->cq_n++) % kt->cq_cap] = *c;
	return 0;
}

void kt_fail(struct kt *kt, int err)
{
	if (!kt->err)
		kt->err = err;
}

static void post_ended(struct kt *kt, struct kt_op *op)
{
	struct kt_round *r = kt_round_find(kt, op->round);

	if (r && r->open)
		r->open--;
	kt_op_put(kt, op);
}

/*
 * A send that ran out of time, or found no route or buffer, lost data;
 * that is the transport's business, not an error: the receivers account
 * for whatever did not arrive.
 */
static int send_loss_only(int res)
{
	return res == -ETIMEDOUT || res == -ENOBUFS || res == -EHOSTUNREACH ||
	       res == -ENETUNREACH || res == -EAGAIN || res == -EINTR;
}

/*
 * A post the kernel had no memory for (ENOMEM): most often its buffer,
 * pinned until the completion is read, would have taken this user past
 * RLIMIT_MEMLOCK. A lossy receive that cannot be made loses its message:
 * the call goes on, counts it lost and compensates, and a limit that
 * makes that the rule shows in the loss rate, where the safeguard moves
 * calls to TCP. Said once per process, with the remedy.
 */
static struct or_cqe unposted(struct kt *kt, struct kt_op *op)
{
	static int told;
	struct or_cqe c = {
		.user_data = op->user_data,
		.flags = OR_CQE_RECV | OR_CQE_UNPOSTED,
	};

	if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		or_log(kt->quiet, "a %llu-byte receive could not be posted: "
		       "no memory, or its pinned buffer would exceed the "
		       "locked-memory limit (ulimit -l, RLIMIT_MEMLOCK); its "
		       "data counts as lost. Raise the limit or grant "
		       "CAP_IPC_LOCK", (unsigned long long)op->len);
	c.nr_missing = or_miss_all(op->missing, op->max_missing, op->len);
	return c;
}

/*
 * A post to a round that had already ended (ESTALE, though the round was
 * opened by an earlier post of ours): the progress thread came after the
 * round's deadline. Nothing of it can arrive any more: it ends as its
 * deadline says, with everything missing. The kernel never saw it, so its
 * bytes_lost does not count it: late_bytes does.
 */
static struct or_cqe late_post(struct kt *kt, struct kt_op *op)
{
	struct or_cqe c = {
		.user_data = op->user_data,
		.flags = OR_CQE_RECV | OR_CQE_DEADLINE,
	};

	or_debug("kernel: rank %d: receive posted after round %u ended",
		 kt->t.rank, op->round);
	kt->late_bytes += op->len;
	c.nr_missing = or_miss_all(op->missing, op->max_missing, op->len);
	return c;
}

void kt_op_done(struct kt *kt, struct kt_op *op, int res)
{
	struct or_cqe c;

	switch (op->kind) {
	case KT_POST:
		if (res >= 0) {
			kt_op_put(kt, op);	/* the record holds the other ref */
			return;
		}
		/* No record will come: complete the receive here. */
		c = (struct or_cqe){ .user_data = op->user_data, .res = res,
				     .flags = OR_CQE_RECV };
		if (res == -ESTALE && !op->opener)
			c = late_post(kt, op);
		else if (res == -ENOMEM)
			c = unposted(kt, op);
		else
			or_debug("kernel: rank %d: post of round %u failed: %s",
				 kt->t.rank, op->round, strerror(-res));
		if (kt_cq_push(kt, &c))
			kt_fail(kt, -ENOMEM);
		kt_op_put(kt, op);
		post_ended(kt, op);
		return;
	case KT_SEND:
		if (res >= 0) {
			kt->t.bytes_sent += res;
		} else if (send_loss_only(res)) {
			or_debug("kernel: rank %d: send cut short: %s",
				 kt->t.rank, strerror(-res));
			res = 0;
		}
		if (kt_cq_push(kt, &(struct or_cqe){ .user_data = op->user_data,
			    .res = res < 0 ? res : 0 }))
			kt_fail(kt, -ENOMEM);
		break;
	case KT_CANCEL:
	case KT_DEADLINE:
		/* ENOENT: the round had ended by itself. Nothing to report. */
		if (res < 0 && res != -ENOENT)
			or_debug("kernel: rank %d: round %u: %s failed: %s",
				 kt->t.rank, op->round,
				 op->kind == KT_CANCEL ? "cancel" : "retime",
				 strerror(-res));
		break;
	}
	kt_op_put(kt, op);
}

/* Translate the kernel's missing ranges into the engine's array. */
static uint32_t copy_missing(const struct optireduce_completion *rec,
			     const struct kt_op *op, uint32_t *flags)
{
	uint32_t n = rec->nranges, max = op->max_missing, k;
	uint64_t end;

	if (!max || !rec->nmissing)
		return 0;
	k = n < max ? n : max;
	for (uint32_t i = 0; i < k; i++)
		op->missing[i] = (struct or_range){
			rec->ranges[i].offset,
			(uint64_t)rec->ranges[i].offset + rec->ranges[i].len,
		};
	if (rec->nmissing == k)
		return k;
	/* Cut: the last entry covers the rest, conservatively. A record the
	 * kernel truncated does not say where the rest ends: to the end. */
	end = n == rec->nmissing ?
	      (uint64_t)rec->ranges[n - 1].offset + rec->ranges[n - 1].len :
	      op->len;
	if (!k) {
		k = 1;
		op->missing[0].start = 0;
	}
	op->missing[k - 1].end = end;
	*flags |= OR_CQE_TRUNCATED;
	return k;
}

/*
 * Bytes of an expired message that its sender had not got to: those past
 * the furthest byte that came, when neither its last fragment came nor
 * the sender moved on to a later round, so it was still sending (behind
 * the deadline). A longer deadline would have had them. None for a
 * message of which nothing came: a peer that never started (or is gone)
 * says nothing about how long a message takes, and must not widen every
 * deadline. None for a record whose missing ranges did not all fit.
 */
static uint64_t expired_tail(const struct optireduce_completion *rec)
{
	const struct optireduce_range *last;

	if (rec->status != OPTIREDUCE_EXPIRED || !rec->received ||
	    !rec->nranges || rec->nranges != rec->nmissing ||
	    rec->flags & (OPTIREDUCE_COMPL_LAST_SEEN | OPTIREDUCE_COMPL_MOVED_ON))
		return 0;
	last = &rec->ranges[rec->nranges - 1];
	return (uint64_t)last->offset + last->len == rec->len ? last->len : 0;
}

static void record(struct kt *kt, const struct optireduce_completion *rec)
{
	uint32_t idx = (uint32_t)rec->user_data, gen = rec->user_data >> 32;
	struct kt_op *op = idx < kt->nops ? kt->tab[idx] : NULL;
	struct or_cqe c = { .flags = OR_CQE_RECV };

	if (!op || op->gen != gen || op->kind != KT_POST || op->refs == 0) {
		or_debug("kernel: rank %d: record for no post (round %u)",
			 kt->t.rank, rec->round);
		return;
	}
	c.user_data = op->user_data;
	c.bytes = rec->received;
	kt->t.bytes_received += rec->received;
	kt->behind_bytes += expired_tail(rec);
	switch (rec->status) {
	case OPTIREDUCE_COMPLETE:
		break;
	case OPTIREDUCE_EXPIRED:
	case OPTIREDUCE_EARLY:
		c.flags |= OR_CQE_DEADLINE;
		break;
	default:
		c.res = -ECANCELED;
		break;
	}
	c.nr_missing = copy_missing(rec, op, &c.flags);
	if (kt_cq_push(kt, &c))
		kt_fail(kt, -ENOMEM);
	post_ended(kt, op);
}

int kt_records(struct kt *kt, const void *buf, size_t len)
{
	const size_t hdr = sizeof(struct optireduce_completion);
	size_t off = 0;

	while (off + hdr <= len) {
		const struct optireduce_completion *rec =
			(const void *)((const char *)buf + off);

		if (rec->rec_len < hdr || rec->rec_len > len - off ||
		    rec->rec_len != hdr + rec->nranges * sizeof(rec->ranges[0]))
			return -EPROTO;
		record(kt, rec);
		off += rec->rec_len;
	}
	return off == len ? 0 : -EPROTO;
}

int kt_cq_pop(struct kt *kt, struct or_cqe *cqes, unsigned int max)
{
	unsigned int n = OR_MIN(max, kt->cq_n);

	for (unsigned int i = 0; i < n; i++)
		cqes[i] = kt->cq[(kt->cq_head + i) % kt->cq_cap];
	if (n) {
		kt->cq_head = (kt->cq_head + n) % kt->cq_cap;
		kt->cq_n -= n;
	}
	return n;
}
