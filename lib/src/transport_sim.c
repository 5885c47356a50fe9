// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "transport_sim.h"
#include "util.h"

struct sim_msg {			/* arrived before its receive */
	struct sim_msg *next;
	int src;
	uint64_t tag;
	char *data;
	uint64_t len;
};

struct sim_post {
	struct sim_post *next;
	struct or_recv r;
	int late;			/* ends at its deadline, empty */
};

struct sim_ep {
	struct or_transport t;
	struct or_sim_fabric *f;
	struct sim_post *posted;
	struct sim_msg *held;
	struct or_cqe *cq;
	unsigned int cq_n, cq_cap;
	uint64_t late_bytes;		/* stragglers ended by their deadline */
};

struct or_sim_fabric {
	pthread_mutex_t lock;		/* everything below, all endpoints */
	int size;
	int lossy;
	struct or_sim_loss loss;
	struct sim_ep **ep;
};

static const struct or_transport_ops sim_ops;

struct or_sim_fabric *or_sim_fabric_create(int size,
					   const struct or_sim_loss *loss)
{
	struct or_sim_fabric *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ep = calloc(size, sizeof(*f->ep));
	if (!f->ep) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->size = size;
	if (loss) {
		f->lossy = 1;
		f->loss = *loss;
		if (!f->loss.packet)
			f->loss.packet = 1024;
	}
	return f;
}

void or_sim_fabric_destroy(struct or_sim_fabric *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	free(f->ep);
	free(f);
}

static void push_cqe(struct sim_ep *e, const struct or_cqe *c)
{
	uint64_t one = 1;

	if (e->cq_n == e->cq_cap) {
		unsigned int cap = e->cq_cap ? e->cq_cap * 2 : 64;
		struct or_cqe *n = realloc(e->cq, cap * sizeof(*n));

		if (!n)
			abort();	/* test-only transport */
		e->cq = n;
		e->cq_cap = cap;
	}
	e->cq[e->cq_n++] = *c;
	if (write(e->t.event_fd, &one, sizeof(one)) < 0)
		abort();
}

/* Copy what survives the loss pattern; list the holes. */
static void deliver(struct or_sim_fabric *f, struct sim_ep *dst,
		    struct sim_post *p, int src, const char *data)
{
	struct or_cqe c = { .user_data = p->r.user_data, .flags = OR_CQE_RECV };
	uint64_t len = p->r.len, pk = f->loss.packet;
	uint64_t npk = f->lossy ? OR_DIV_ROUND_UP(len, pk) : 0;
	uint32_t nm = 0;

	if (!f->lossy || !f->loss.drop) {
		memcpy(p->r.buf, data, len);
		c.bytes = len;
	} else {
		for (uint64_t i = 0; i < npk; i++) {
			uint64_t a = i * pk, b = OR_MIN(len, a + pk);

			if (!f->loss.drop(f->loss.arg, src, dst->t.rank, p->r.tag, i, npk)) {
				memcpy((char *)p->r.buf + a, data + a, b - a);
				c.bytes += b - a;
				continue;
			}
			if (nm && p->r.missing[nm - 1].end == a) {
				p->r.missing[nm - 1].end = b;
			} else if (nm < p->r.max_missing) {
				p->r.missing[nm++] = (struct or_range){ a, b };
			} else {
				/* Out of room: the last entry swallows the rest. */
				p->r.missing[nm - 1].end = b;
				c.flags |= OR_CQE_TRUNCATED;
			}
		}
	}
	c.nr_missing = nm;
	dst->t.bytes_received += c.bytes;
	push_cqe(dst, &c);
	free(p);
}

static void expire(struct sim_ep *e, struct sim_post *p)
{
	struct or_cqe c = {
		.user_data = p->r.user_data,
		.flags = OR_CQE_RECV | OR_CQE_DEADLINE,
	};

	c.nr_missing = or_miss_all(p->r.missing, p->r.max_missing, p->r.len);
	/* Only stragglers expire here: their data comes after the deadline. */
	e->late_bytes += p->r.len;
	push_cqe(e, &c);
	free(p);
}

static int is_late(struct or_sim_fabric *f, int src, int dst, uint64_t tag)
{
	return f->lossy && f->loss.late && f->loss.late(f->loss.arg, src, dst, tag);
}

static int sim_post_recv(struct or_transport *t, const struct or_recv *rx)
{
	struct sim_ep *e = (struct sim_ep *)t;
	struct or_sim_fabric *f = e->f;
	struct sim_post *p;

	if (rx->src < 0 || rx->src >= t->size || rx->src == t->rank)
		return -EINVAL;
	if (f->lossy && f->loss.posted)
		f->loss.posted(f->loss.arg, t->rank, rx);
	if (f->lossy && f->loss.unposted &&
	    f->loss.unposted(f->loss.arg, rx->src, t->rank, rx->tag)) {
		struct or_cqe c = { .user_data = rx->user_data,
				    .flags = OR_CQE_RECV | OR_CQE_UNPOSTED };

		c.nr_missing = or_miss_all(rx->missing, rx->max_missing,
					   rx->len);
		pthread_mutex_lock(&f->lock);
		push_cqe(e, &c);
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->r = *rx;
	pthread_mutex_lock(&f->lock);
	for (struct sim_msg **mp = &e->held; *mp; mp = &(*mp)->next) {
		struct sim_msg *m = *mp;

		if (m->src != rx->src || m->tag != rx->tag)
			continue;
		*mp = m->next;
		if (!m->data && m->len == rx->len) {
			p->late = 1;	/* a straggler: wait for the deadline */
		} else {
			if (m->len != rx->len) {
				push_cqe(e, &(struct or_cqe){ .user_data = rx->user_data,
					 .res = -EPROTO, .flags = OR_CQE_RECV });
				free(p);
			} else {
				deliver(f, e, p, m->src, m->data);
			}
			p = NULL;
		}
		free(m->data);
		free(m);
		break;
	}
	if (!p) {
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	/* Also when its sender has not sent it, and may never (stopped). */
	if (is_late(f, rx->src, t->rank, rx->tag))
		p->late = 1;
	p->next = e->posted;
	e->posted = p;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void send_one(struct or_sim_fabric *f, int src, int dst_rank,
		     const struct or_send *tx)
{
	struct sim_ep *dst = f->ep[dst_rank];
	int late = is_late(f, src, dst_rank, tx->tag);
	struct sim_msg *m;

	if (!dst)
		return;		/* that rank is gone: the message is lost */
	for (struct sim_post **pp = &dst->posted; *pp; pp = &(*pp)->next) {
		struct sim_post *p = *pp;

		if (p->r.src != src || p->r.tag != tx->tag)
			continue;
		if (p->late)
			return;	/* it ends at its deadline all the same */
		if (p->r.len != tx->len) {
			*pp = p->next;
			push_cqe(dst, &(struct or_cqe){ .user_data = p->r.user_data,
				 .res = -EPROTO, .flags = OR_CQE_RECV });
			free(p);
		} else if (late) {
			p->late = 1;
		} else {
			*pp = p->next;
			deliver(f, dst, p, src, tx->buf);
		}
		return;
	}
	/* Early: hold a copy (a late one only as a marker). */
	m = calloc(1, sizeof(*m));
	if (!m || (!late && tx->len && !(m->data = malloc(tx->len))))
		abort();
	m->src = src;
	m->tag = tx->tag;
	m->len = tx->len;
	if (!late && tx->len)
		memcpy(m->data, tx->buf, tx->len);
	else if (!late)
		m->data = malloc(1);	/* non-NULL: not a late marker */
	m->next = dst->held;
	dst->held = m;
}

static int sim_send(struct or_transport *t, const struct or_send *tx)
{
	struct sim_ep *e = (struct sim_ep *)t;
	struct or_sim_fabric *f = e->f;

	int scatter = !!(tx->flags & OR_SEND_SCATTER);

	if ((tx->dst != OR_DST_ALL &&
	     (tx->dst < 0 || tx->dst >= t->size || tx->dst == t->rank)) ||
	    (tx->flags & ~OR_SEND_SCATTER) ||
	    (scatter && (!(t->caps & OR_TCAP_SCATTER) ||
			 tx->dst != OR_DST_ALL || !tx->parts)))
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	for (int r = 0; r < t->size; r++) {
		struct or_send one = *tx;

		if (r == t->rank || (tx->dst != OR_DST_ALL && tx->dst != r))
			continue;
		/* A scatter send: each rank its own part, or nothing. */
		if (scatter) {
			one.buf = tx->parts[r].buf;
			one.len = tx->parts[r].len;
			if (!one.len)
				continue;
		}
		send_one(f, t->rank, r, &one);
		t->bytes_sent += one.len;
	}
	push_cqe(e, &(struct or_cqe){ .user_data = tx->user_data });
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int sim_reap(struct or_transport *t, struct or_cqe *cqes, unsigned int max)
{
	struct sim_ep *e = (struct sim_ep *)t;
	struct or_sim_fabric *f = e->f;
	int64_t now = or_now_ns();
	uint64_t cnt;
	unsigned int n;

	if (read(t->event_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return -errno;
	pthread_mutex_lock(&f->lock);
	for (struct sim_post **pp = &e->posted; *pp;) {
		struct sim_post *p = *pp;

		if (p->late && p->r.deadline_ns && p->r.deadline_ns <= now) {
			*pp = p->next;
			expire(e, p);
		} else {
			pp = &p->next;
		}
	}
	n = OR_MIN(max, e->cq_n);
	memcpy(cqes, e->cq, n * sizeof(*cqes));
	memmove(e->cq, e->cq + n, (e->cq_n - n) * sizeof(*cqes));
	e->cq_n -= n;
	if (e->cq_n) {
		uint64_t one = 1;

		/* More than max: stay readable. */
		if (write(t->event_fd, &one, sizeof(one)) < 0)
			abort();
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

static int sim_retime(struct or_transport *t, uint64_t tag, int64_t deadline_ns)
{
	struct sim_ep *e = (struct sim_ep *)t;

	pthread_mutex_lock(&e->f->lock);
	for (struct sim_post *p = e->posted; p; p = p->next)
		if (p->r.tag == tag)
			p->r.deadline_ns = deadline_ns;
	pthread_mutex_unlock(&e->f->lock);
	return 0;
}

static void sim_destroy(struct or_transport *t)
{
	struct sim_ep *e = (struct sim_ep *)t;

	pthread_mutex_lock(&e->f->lock);
	e->f->ep[t->rank] = NULL;
	while (e->posted) {
		struct sim_post *p = e->posted;

		e->posted = p->next;
		free(p);
	}
	while (e->held) {
		struct sim_msg *m = e->held;

		e->held = m->next;
		free(m->data);
		free(m);
	}
	pthread_mutex_unlock(&e->f->lock);
	close(t->event_fd);
	free(e->cq);
	free(e);
}

static uint64_t sim_late(struct or_transport *t)
{
	struct sim_ep *e = (struct sim_ep *)t;
	uint64_t v;

	pthread_mutex_lock(&e->f->lock);
	v = e->late_bytes;
	pthread_mutex_unlock(&e->f->lock);
	return v;
}

static int sim_path_rate(struct or_transport *t, uint64_t mbps)
{
	struct sim_ep *e = (struct sim_ep *)t;
	struct or_sim_fabric *f = e->f;

	pthread_mutex_lock(&f->lock);
	if (f->loss.path_rate)
		f->loss.path_rate(f->loss.arg, t->rank, mbps, t->bytes_sent);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static const struct or_transport_ops sim_ops = {
	.name = "sim",
	.post_recv = sim_post_recv,
	.send = sim_send,
	.reap = sim_reap,
	.destroy = sim_destroy,
	.late = sim_late,
	.retime = sim_retime,
	.path_rate = sim_path_rate,
};

int or_sim_transport_create(struct or_sim_fabric *f, int rank,
			    struct or_transport **out)
{
	struct sim_ep *e;

	if (rank < 0 || rank >= f->size || f->ep[rank])
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->t.ops = &sim_ops;
	e->t.rank = rank;
	e->t.size = f->size;
	/* Lossy, it scatters as the kernel socket does, so the engine's
	 * scatter path runs in every simulated test. */
	e->t.caps = f->lossy ?
		    OR_TCAP_LOSSY | OR_TCAP_SEND_ALL | OR_TCAP_SCATTER : 0;
	e->t.event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->t.event_fd < 0) {
		free(e);
		return -errno;
	}
	e->f = f;
	pthread_mutex_lock(&f->lock);
	f->ep[rank] = e;
	pthread_mutex_unlock(&f->lock);
	*out = &e->t;
	return 0;
}
