// SPDX-License-Identifier: MIT
/*
 * The optireduce kernel socket as the lossy transport: the ops table.
 * post_recv and send only queue an operation (transport_kernel_op.c);
 * reap collects what the engine finished (transport_kernel_done.c), then
 * hands the queue to the engine, io_uring or plain syscalls, in one batch.
 * This file maps the engine's tags to the kernel's rounds: ids, deadlines,
 * sealing (transport_kernel.h says how), and sets the transport up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport_kernel.h"
#include "util.h"

static struct kt *to_kt(struct or_transport *t)
{
	return (struct kt *)t;
}

static int tag_round(uint64_t tag, uint32_t *round, uint32_t *msg)
{
	unsigned int phase = or_tag_phase(tag);

	if (phase != OR_PHASE_SCATTER && phase != OR_PHASE_GATHER)
		return -EINVAL;
	*round = (uint32_t)(or_tag_seq(tag) * 2 + phase);
	*msg = phase;
	return 0;
}

/* Serial number arithmetic, as the kernel compares round ids. */
static int round_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* Microseconds from now to an absolute deadline, as a post or send wants
 * it: at least 1 (0 would mean "the kernel's estimate"). */
static uint32_t until_us(int64_t deadline_ns, uint32_t floor_us)
{
	int64_t us = (deadline_ns - or_now_ns()) / 1000;

	if (us < floor_us)
		us = floor_us;
	return us > 60000000 ? 60000000 : (uint32_t)us;
}

static int queue_cancel(struct kt *kt, uint32_t round)
{
	struct kt_op *op = kt_op_get(kt, KT_CANCEL, 1, 0);
	struct optireduce_cancel *c;

	if (!op)
		return -ENOMEM;
	c = kt_op_prep(kt, op, OPTIREDUCE_CMSG_CANCEL, sizeof(*c), NULL, 0);
	c->round = round;
	kt_queue(kt, op);
	return 0;
}

static int queue_retime(struct kt *kt, uint32_t round, int64_t deadline_ns)
{
	struct kt_op *op = kt_op_get(kt, KT_DEADLINE, 1, 0);
	struct optireduce_deadline *d;

	if (!op)
		return -ENOMEM;
	op->round = round;
	d = kt_op_prep(kt, op, OPTIREDUCE_CMSG_DEADLINE, sizeof(*d), NULL, 0);
	d->round = round;
	/* Stamped now: the engine calls retime() from its reap of the
	 * reliable transport, and this transport's reap follows at once. */
	d->deadline_us = until_us(deadline_ns + kt->slack_ns, 1);
	kt_queue(kt, op);
	return 0;
}

/* The deadline of a round opened by this batch, filled in just before the
 * batch goes to the kernel, so that the time spent queued counts. */
static void stamp_deadline(struct kt *kt, struct kt_round *r)
{
	struct optireduce_post *p;

	if (!r->first)
		return;
	p = (void *)CMSG_DATA(CMSG_FIRSTHDR(&r->first->msg));
	p->deadline_us = r->deadline_ns ?
			 until_us(r->deadline_ns + kt->slack_ns, 1) : 0;
	/* The slack widens the early timeout's windows too: the sender of
	 * a message that stops mid-way may only have been descheduled. */
	p->early_us = r->early_ns ?
		      (uint32_t)OR_MAX(OR_MIN((r->early_ns + kt->slack_ns) /
					      1000, 60000000), 1) :
		      0;
	r->first = NULL;
}

/* Rounds of earlier calls that are not sealed (an empty shard kept them
 * below size-1 posts) end now: every post of theirs has completed. The
 * cancel is queued behind their posts. */
static int retire_rounds(struct kt *kt, uint32_t round)
{
	uint32_t call_first = round - ((round - 1) & 1);	/* its phase 1 */

	for (int i = 0; i < KT_ROUNDS; i++) {
		struct kt_round *r = &kt->rounds[i];
		int rc;

		if (!r->used || !round_before(r->id, call_first))
			continue;
		stamp_deadline(kt, r);
		if (!r->sealed) {
			rc = queue_cancel(kt, r->id);
			if (rc)
				return rc;
		}
		r->used = 0;
	}
	return 0;
}

static struct kt_round *round_get(struct kt *kt, uint32_t id, int *rc)
{
	struct kt_round *r = kt_round_find(kt, id);

	*rc = 0;
	if (r)
		return r;
	*rc = retire_rounds(kt, id);
	if (*rc)
		return NULL;
	r = &kt->rounds[id % KT_ROUNDS];
	if (r->used) {
		/* Only rounds of this very call remain: KT_ROUNDS is ample. */
		*rc = -EOVERFLOW;
		return NULL;
	}
	*r = (struct kt_round){ .id = id, .used = 1 };
	return r;
}

/* What a post and a send both need: a live transport, a length the
 * kernel takes, a peer other than us (or all), a tag it can map. */
static int op_check(struct kt *kt, int peer, int all_ok, uint64_t len,
		    uint64_t tag, uint32_t *round, uint32_t *msg)
{
	if (kt->err)
		return kt->err;
	if (!len || len > OPTIREDUCE_MAX_MSG ||
	    (!(all_ok && peer == OR_DST_ALL) &&
	     (peer < 0 || peer >= kt->t.size || peer == kt->t.rank)))
		return -EINVAL;
	return tag_round(tag, round, msg);
}

static int kt_post_recv(struct or_transport *t, const struct or_recv *rx)
{
	struct kt *kt = to_kt(t);
	struct optireduce_post *p;
	struct kt_round *r;
	struct kt_op *op;
	uint32_t round, msg;
	int rc;

	rc = op_check(kt, rx->src, 0, rx->len, rx->tag, &round, &msg);
	if (rc)
		return rc;
	r = round_get(kt, round, &rc);
	if (!r)
		return rc;
	if (r->sealed)
		return -EINVAL;		/* more than one receive per peer */
	/* Two references: its submission and its completion record. */
	op = kt_op_get(kt, KT_POST, 2, rx->user_data);
	if (!op)
		return -ENOMEM;
	op->round = round;
	op->len = rx->len;
	op->missing = rx->missing;
	op->max_missing = rx->missing ? rx->max_missing : 0;
	p = kt_op_prep(kt, op, OPTIREDUCE_CMSG_POST, sizeof(*p), rx->buf, rx->len);
	*p = (struct optireduce_post){
		.round = round,
		.msg = msg,
		.src = rx->src,
		.flags = OPTIREDUCE_POST_MORE,
		.user_data = (uint64_t)op->gen << 32 | op->idx,
	};
	if (++r->posted == (unsigned int)t->size - 1) {
		p->flags = 0;
		r->sealed = 1;
	}
	r->open++;
	if (rx->deadline_ns > r->deadline_ns)
		r->deadline_ns = rx->deadline_ns;
	if (rx->early_ns > r->early_ns)
		r->early_ns = rx->early_ns;
	op->opener = r->posted == 1;
	if (op->opener)
		r->first = op;		/* deadline filled in at submission */
	kt_queue(kt, op);
	return 0;
}

/*
 * A scatter send's iovecs, one per rank, into op->parts (allocated with
 * the op: kt_op_get()): the kernel reads them when the send is issued,
 * which may be after this returns. The largest part to another rank goes
 * to *max and what all of them carry to op->len.
 */
static void scatter_parts(struct kt *kt, struct kt_op *op,
			  const struct or_part *parts, uint64_t *max)
{
	uint32_t n = kt->t.size;

	*max = 0;
	op->len = 0;
	for (uint32_t r = 0; r < n; r++) {
		uint64_t len = r == (uint32_t)kt->t.rank ? 0 : parts[r].len;

		op->parts[r] = (struct iovec){ (void *)parts[r].buf, len };
		op->len += len;
		if (len > *max)
			*max = len;
	}
	op->msg.msg_iov = op->parts;
	op->msg.msg_iovlen = n;
}

static int kt_send(struct or_transport *t, const struct or_send *tx)
{
	struct kt *kt = to_kt(t);
	int scatter = !!(tx->flags & OR_SEND_SCATTER);
	uint64_t len = tx->len;
	struct optireduce_send *s;
	struct kt_round *r;
	struct kt_op *op;
	uint32_t round, msg;
	int rc;

	if ((tx->flags & ~OR_SEND_SCATTER) ||
	    (scatter && (!(t->caps & OR_TCAP_SCATTER) ||
			 tx->dst != OR_DST_ALL || !tx->parts)))
		return -EINVAL;
	op = kt_op_get(kt, KT_SEND, 1, tx->user_data);
	if (!op)
		return -ENOMEM;
	s = kt_op_prep(kt, op, OPTIREDUCE_CMSG_SEND, sizeof(*s), tx->buf, tx->len);
	op->len = tx->dst == OR_DST_ALL && !(t->caps & OR_TCAP_SEND_ALL) ?
		  tx->len * (t->size - 1) : tx->len;
	if (scatter)
		scatter_parts(kt, op, tx->parts, &len);
	rc = op_check(kt, tx->dst, 1, len, tx->tag, &round, &msg);
	if (rc) {
		kt_op_put(kt, op);
		return rc;
	}
	*s = (struct optireduce_send){
		.round = round,
		.msg = msg,
		.dst = tx->dst == OR_DST_ALL ? OPTIREDUCE_DST_ALL : (uint32_t)tx->dst,
		.flags = scatter ? OPTIREDUCE_SEND_SCATTER : 0,
	};
	kt->sends_scatter += scatter;
	/*
	 * A send only waits when the links are full; data that leaves after
	 * the receivers' deadline is wasted, and ours for the same round is
	 * the best guess of theirs. Unknown: the kernel's estimate (0).
	 */
	r = kt_round_find(kt, round);
	if (r && r->deadline_ns)
		s->timeout_us = until_us(r->deadline_ns + kt->slack_ns, 1000);
	kt_queue(kt, op);
	return 0;
}

/* A round still waiting for its first post's submission takes the new
 * deadline with it; an open one is moved; one whose posts all completed
 * has nothing left to move. */
static int kt_retime(struct or_transport *t, uint64_t tag, int64_t deadline_ns)
{
	struct kt *kt = to_kt(t);
	uint32_t round, msg;
	struct kt_round *r;
	int rc;

	if (kt->err)
		return kt->err;
	rc = tag_round(tag, &round, &msg);
	if (rc)
		return rc;
	r = kt_round_find(kt, round);
	if (!r || !r->open)
		return 0;
	r->deadline_ns = deadline_ns;
	if (r->first)
		return 0;
	return queue_retime(kt, round, deadline_ns);
}

static int kt_reap(struct or_transport *t, struct or_cqe *cqes,
		   unsigned int max)
{
	struct kt *kt = to_kt(t);
	int rc;

	if (kt->err)
		return kt->err;
	rc = kt->eng->harvest(kt);
	if (!rc) {
		for (int i = 0; i < KT_ROUNDS; i++)
			if (kt->rounds[i].used)
				stamp_deadline(kt, &kt->rounds[i]);
		rc = kt->eng->submit(kt);
	}
	if (!rc)
		rc = kt->err;
	if (rc) {
		kt_fail(kt, rc);
		return rc;
	}
	return kt_cq_pop(kt, cqes, max);
}

/*
 * Rounds with posts outstanding are cancelled first, synchronously: once
 * cancelled, the kernel writes nothing more into their buffers, which the
 * engine frees after destroy returns.
 */
static void kt_destroy(struct or_transport *t)
{
	struct kt *kt = to_kt(t);
	struct kt_op *op;

	while ((op = kt_queue_pop(kt))) {
		/* Never submitted: the round never opened on its account. */
		op->refs = 1;
		kt_op_put(kt, op);
	}
	for (int i = 0; i < KT_ROUNDS && kt->fd >= 0; i++) {
		struct kt_round *r = &kt->rounds[i];

		if (r->used && (r->open || !r->sealed) &&
		    queue_cancel(kt, r->id))
			break;
	}
	while ((op = kt_queue_pop(kt))) {
		if (sendmsg(kt->fd, &op->msg, 0) < 0 && errno != ENOENT)
			or_debug("kernel: cancel at close: %s", strerror(errno));
		kt_op_put(kt, op);
	}
	if (kt->eng)
		kt->eng->destroy(kt);
	if (kt->fd >= 0)
		close(kt->fd);
	for (uint32_t i = 0; i < kt->nops; i++) {
		free(kt->tab[i]->parts);
		free(kt->tab[i]);
	}
	free(kt->tab);
	free(kt->cq);
	free(kt);
}

/*
 * Late data: posts that came after their round ended (late_post), and the
 * data of messages whose receive ended before it came. The latter shows
 * two ways: as the tails of expired messages whose senders were still
 * sending (expired_tail(), known as the receive ends), and as fragments
 * the socket dropped as stale because they came after it (counted in
 * packets, each taken at the socket's average payload; known only once
 * they came, often after the call whose deadline cut them). The same
 * bytes may be counted both ways, so each call takes the larger of the
 * two since the last: a sender still sending when the deadline hit counts
 * in the call it was late for, not one later. One getsockopt per call.
 */
static uint64_t kt_late(struct or_transport *t)
{
	struct kt *kt = (struct kt *)t;
	struct optireduce_stats st;
	socklen_t len = sizeof(st);
	uint64_t stale = kt->stale_seen;

	if (!getsockopt(kt->fd, kt->sol, OPTIREDUCE_STATS, &st, &len) &&
	    len >= offsetof(struct optireduce_stats, drop_no_post) &&
	    st.rx_packets)
		stale = (uint64_t)((double)st.drop_stale_round * st.rx_bytes /
				   st.rx_packets);
	/* The average payload moves: never a negative share. */
	stale = stale > kt->stale_seen ? stale - kt->stale_seen : 0;
	kt->wire_late += OR_MAX(kt->behind_bytes, stale);
	kt->behind_bytes = 0;
	kt->stale_seen += stale;
	return kt->late_bytes + kt->wire_late;
}

/*
 * Rate control starts the socket's rate where the reliable path measured
 * the host's path (OPTIREDUCE_RATE_START_MBPS). A module older than the
 * option (ENOPROTOOPT) starts at its ceiling, as before.
 */
static int kt_path_rate(struct or_transport *t, uint64_t mbps)
{
	struct kt *kt = (struct kt *)t;
	uint32_t v = mbps > OPTIREDUCE_MAX_MBPS ? OPTIREDUCE_MAX_MBPS :
						  (uint32_t)mbps;

	if (setsockopt(kt->fd, kt->sol, OPTIREDUCE_RATE_START_MBPS, &v,
		       sizeof(v)))
		return -errno;
	return 0;
}

static const struct or_transport_ops kt_ops = {
	.name = "kernel",
	.post_recv = kt_post_recv,
	.send = kt_send,
	.reap = kt_reap,
	.destroy = kt_destroy,
	.late = kt_late,
	.retime = kt_retime,
	.path_rate = kt_path_rate,
};

/* Tests: bytes of receives posted after their round ended (late_post). */
/* @t as the kernel transport, or NULL when it is another one. */
static const struct kt *kt_of(const struct or_transport *t)
{
	return t && t->ops == &kt_ops ? (const struct kt *)t : NULL;
}

uint64_t or_kernel_late_bytes(const struct or_transport *t)
{
	const struct kt *kt = kt_of(t);

	return kt ? kt->late_bytes : 0;
}

void or_kernel_sends(const struct or_transport *t, uint64_t *in_place,
		     uint64_t *async, uint64_t *scatter)
{
	const struct kt *kt = kt_of(t);

	*in_place = kt ? kt->sends_inline : 0;
	*async = kt ? kt->sends_async : 0;
	*scatter = kt ? kt->sends_scatter : 0;
}

int or_kernel_probe(void)
{
	int family, sol;

	return kt_sysfs_ids(&family, &sol);
}

/* Say once per process which engine drives the socket when it is not
 * io_uring, and why. */
static void notice_plain(int quiet, const char *why)
{
	static int told;

	if (__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		return;
	or_log(quiet, "%s; the kernel transport uses plain sendmsg/recvmsg", why);
}

static int engine_init(struct kt *kt)
{
	const char *no = getenv("OPTIREDUCE_NO_URING");
	int rc;

	if (no && *no && *no != '0') {
		notice_plain(kt->quiet, "OPTIREDUCE_NO_URING is set");
		return kt_plain_init(kt);
	}
	rc = kt_uring_init(kt);
	if (rc) {
		/* ENOSYS, EPERM: disabled or filtered; anything else: still
		 * better than no lossy path. */
		char why[96];

		snprintf(why, sizeof(why), "io_uring unavailable (%s)",
			 strerror(-rc));
		notice_plain(kt->quiet, why);
		return kt_plain_init(kt);
	}
	return rc;
}

static int env_slack(int64_t *ns, int quiet)
{
	const char *v = getenv("OPTIREDUCE_DEADLINE_SLACK_MS");
	uint64_t ms;

	*ns = 0;
	if (!v)
		return 0;
	if (or_parse_u64(v, &ms) || ms > 60000) {
		or_log(quiet, "OPTIREDUCE_DEADLINE_SLACK_MS=\"%s\" is not a number "
		       "of milliseconds in 0..60000", v);
		return -EINVAL;
	}
	*ns = (int64_t)ms * 1000000;
	return 0;
}

int or_kernel_create(const struct or_kernel_params *p,
		     struct or_transport **out)
{
	struct kt *kt;
	int family, rc;

	kt = calloc(1, sizeof(*kt));
	if (!kt)
		return -ENOMEM;
	kt->t.ops = &kt_ops;
	kt->t.rank = p->rank;
	kt->t.size = p->size;
	kt->t.caps = OR_TCAP_LOSSY | OR_TCAP_ADAPTIVE |
		     (p->mcast_group ? OR_TCAP_SEND_ALL : 0);
	kt->t.event_fd = -1;
	kt->quiet = p->quiet;
	rc = env_slack(&kt->slack_ns, p->quiet);
	if (rc) {
		free(kt);
		return rc;
	}
	rc = kt_sysfs_ids(&family, &kt->sol);
	kt->fd = rc ? rc : kt_socket_join(p, family, kt->sol);
	if (kt->fd >= 0 &&
	    (kt_send_flags(kt->fd, kt->sol) & OPTIREDUCE_SEND_SCATTER))
		kt->t.caps |= OR_TCAP_SCATTER;
	rc = kt->fd < 0 ? kt->fd : engine_init(kt);
	if (rc) {
		kt_destroy(&kt->t);
		return rc;
	}
	*out = &kt->t;
	return 0;
}
