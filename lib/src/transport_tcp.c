// SPDX-License-Identifier: MIT
/*
 * Reliable transport: the Transpose AllReduce over TCP ("TAR+TCP"), also
 * the path of warm-up and fallback calls and of everything when the kernel
 * module is not loaded.
 *
 * One TCP connection per pair of ranks (full mesh, set up once). Messages
 * are framed as a 24-byte header (magic, tag, length) and the payload.
 * Driven from the communicator's progress thread through non-blocking
 * sockets and one epoll instance; no io_uring here (the io_uring engine
 * arrives with the kernel transport) and no thread of its own. Send-to-all
 * is a fan-out: the same buffer queued on every connection.
 *
 * A message whose receive is already posted is read straight into the
 * receive buffer. One that arrives earlier (its sender is a call ahead) is
 * held in a buffer from a small cache until the receive is posted: stalling
 * the connection instead could deadlock a caller that waits for call c
 * while call c+1's data sits in front of c's on the same stream.
 *
 * Queue items and held buffers are recycled, so steady state allocates
 * nothing.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net.h"
#include "transport.h"
#include "util.h"

#define WIRE_MAGIC	0x4f524d31u	/* "ORM1": message header */
#define HELLO_MAGIC	0x4f524831u	/* "ORH1": connection hello */
#define HELLO_VERSION	2
#define HELD_CACHE	16		/* spare held buffers kept */
#define CLOSE_DRAIN_MS	2000		/* wait for peers' FIN at destroy */

struct wire_hdr {
	uint32_t magic;
	uint32_t flags;
	uint64_t tag;
	uint64_t len;
};

struct hello {
	uint32_t magic;
	uint16_t version;
	uint16_t lossy_ok;
	uint32_t rank;
	uint32_t size;
	uint64_t cfg_hash;
	uint32_t memlock_kb;		/* version 2 on */
	uint32_t reserved;
};
#define HELLO_V1_LEN	offsetof(struct hello, memlock_kb)

struct send_op {
	struct send_op *next;		/* free list */
	uint64_t user_data;
	unsigned int refs;		/* connections still writing it */
	int err;
};

struct tx_item {
	struct tx_item *next;
	struct wire_hdr hdr;
	const char *buf;
	uint64_t len;
	uint64_t done;			/* bytes of header + payload written */
	struct send_op *op;
};

struct rx_post {
	struct rx_post *next;
	struct or_recv r;
};

struct held {
	struct held *next;
	uint64_t tag;
	char *buf;
	uint64_t cap;
	uint64_t len;
	int complete;
	struct rx_post *claimed;	/* posted while still arriving */
};

struct peer {
	int fd;
	int err;			/* connection failed: -errno */
	struct tx_item *txh, *txt;
	int want_out;			/* EPOLLOUT armed */
	/* receive side */
	struct wire_hdr hdr;
	size_t hdr_got;
	int in_body;
	uint64_t body_got;
	struct rx_post *body_post;	/* reading into a posted buffer */
	struct held *body_held;		/* ... or into a held one */
	struct rx_post *posted;
	struct held *held;
};

struct tcp {
	struct or_transport t;
	struct peer *peers;
	struct or_cqe *cq;		/* completions not yet reaped */
	unsigned int cq_n, cq_cap;
	struct tx_item *free_tx;
	struct send_op *free_ops;
	struct rx_post *free_posts;
	struct held *free_held;
	unsigned int nfree_held;
};

static struct tcp *to_tcp(struct or_transport *t)
{
	return (struct tcp *)t;
}

static int push_cqe(struct tcp *tc, const struct or_cqe *c)
{
	if (tc->cq_n == tc->cq_cap) {
		unsigned int cap = tc->cq_cap ? tc->cq_cap * 2 : 64;
		struct or_cqe *n = realloc(tc->cq, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tc->cq = n;
		tc->cq_cap = cap;
	}
	tc->cq[tc->cq_n++] = *c;
	return 0;
}

static void complete_recv(struct tcp *tc, struct rx_post *p, int res)
{
	struct or_cqe c = {
		.user_data = p->r.user_data,
		.res = res,
		.flags = OR_CQE_RECV,
		.bytes = res ? 0 : p->r.len,
	};

	if (!res)
		tc->t.bytes_received += p->r.len;
	push_cqe(tc, &c);
	p->next = tc->free_posts;
	tc->free_posts = p;
}

static void op_put(struct tcp *tc, struct send_op *op, int err)
{
	if (err && !op->err)
		op->err = err;
	if (--op->refs)
		return;
	push_cqe(tc, &(struct or_cqe){ .user_data = op->user_data, .res = op->err });
	op->next = tc->free_ops;
	tc->free_ops = op;
}

static void held_free(struct tcp *tc, struct held *h)
{
	if (tc->nfree_held >= HELD_CACHE) {
		free(h->buf);
		free(h);
		return;
	}
	/* Its receive (if one claimed it) is completed and recycled: not
	 * ours to free again at destroy. */
	h->claimed = NULL;
	h->next = tc->free_held;
	tc->free_held = h;
	tc->nfree_held++;
}

static struct held *held_get(struct tcp *tc, uint64_t len)
{
	struct held **best = NULL, **big = NULL, *h;

	/* The smallest cached buffer that fits, else grow the largest: the
	 * cache settles on the sizes that arrive early, and then steady
	 * state allocates nothing. */
	for (struct held **pp = &tc->free_held; *pp; pp = &(*pp)->next) {
		if ((*pp)->cap >= len && (!best || (*pp)->cap < (*best)->cap))
			best = pp;
		if (!big || (*pp)->cap > (*big)->cap)
			big = pp;
	}
	if (!best)
		best = big;
	if (best) {
		h = *best;
		*best = h->next;
		tc->nfree_held--;
	} else {
		h = calloc(1, sizeof(*h));
		if (!h)
			return NULL;
	}
	if (h->cap < len) {
		char *b = realloc(h->buf, len);

		if (!b) {
			held_free(tc, h);
			return NULL;
		}
		h->buf = b;
		h->cap = len;
	}
	h->len = len;
	h->complete = 0;
	h->claimed = NULL;
	return h;
}

/* Everything pending on a broken connection completes with its error. */
static void peer_fail(struct tcp *tc, struct peer *pe, int err)
{
	if (pe->err)
		return;
	pe->err = err;
	or_debug("tcp: rank %d: peer connection failed: %s", tc->t.rank,
		 strerror(-err));
	while (pe->posted) {
		struct rx_post *p = pe->posted;

		pe->posted = p->next;
		complete_recv(tc, p, err);
	}
	if (pe->body_post)
		complete_recv(tc, pe->body_post, err);
	pe->body_post = NULL;
	for (struct held *h = pe->held; h; h = h->next)
		if (h->claimed) {
			complete_recv(tc, h->claimed, err);
			h->claimed = NULL;
		}
	while (pe->txh) {
		struct tx_item *it = pe->txh;

		pe->txh = it->next;
		op_put(tc, it->op, err);
		it->next = tc->free_tx;
		tc->free_tx = it;
	}
	pe->txt = NULL;
	epoll_ctl(tc->t.event_fd, EPOLL_CTL_DEL, pe->fd, NULL);
}

static void set_out(struct tcp *tc, struct peer *pe, int on)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (on ? EPOLLOUT : 0),
		.data.u32 = pe - tc->peers,
	};

	if (pe->want_out == on || pe->err)
		return;
	pe->want_out = on;
	epoll_ctl(tc->t.event_fd, EPOLL_CTL_MOD, pe->fd, &ev);
}

static void flush_peer(struct tcp *tc, struct peer *pe)
{
	while (pe->txh && !pe->err) {
		struct tx_item *it = pe->txh;
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		ssize_t n;

		if (it->done < sizeof(it->hdr)) {
			iov[mh.msg_iovlen].iov_base = (char *)&it->hdr + it->done;
			iov[mh.msg_iovlen++].iov_len = sizeof(it->hdr) - it->done;
			iov[mh.msg_iovlen].iov_base = (char *)it->buf;
			iov[mh.msg_iovlen++].iov_len = it->len;
		} else {
			uint64_t off = it->done - sizeof(it->hdr);

			iov[mh.msg_iovlen].iov_base = (char *)it->buf + off;
			iov[mh.msg_iovlen++].iov_len = it->len - off;
		}
		n = sendmsg(pe->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				set_out(tc, pe, 1);
				return;
			}
			peer_fail(tc, pe, -errno);
			return;
		}
		it->done += n;
		if (it->done < sizeof(it->hdr) + it->len)
			continue;
		tc->t.bytes_sent += it->len;
		pe->txh = it->next;
		if (!pe->txh)
			pe->txt = NULL;
		op_put(tc, it->op, 0);
		it->next = tc->free_tx;
		tc->free_tx = it;
	}
	set_out(tc, pe, 0);
}

/* The held message h is complete: hand it to the receive that claimed it. */
static void held_deliver(struct tcp *tc, struct peer *pe, struct held *h,
			 struct rx_post *p)
{
	struct held **pp;

	for (pp = &pe->held; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	if (h->len != p->r.len) {
		complete_recv(tc, p, -EPROTO);
		held_free(tc, h);
		peer_fail(tc, pe, -EPROTO);
		return;
	}
	memcpy(p->r.buf, h->buf, h->len);
	complete_recv(tc, p, 0);
	held_free(tc, h);
}

/* A header arrived: decide where its payload goes. */
static int start_body(struct tcp *tc, struct peer *pe)
{
	struct rx_post **pp;
	struct held *h;

	pe->hdr.tag = le64toh(pe->hdr.tag);
	pe->hdr.len = le64toh(pe->hdr.len);
	if (le32toh(pe->hdr.magic) != WIRE_MAGIC)
		return -EPROTO;
	pe->in_body = 1;
	pe->body_got = 0;
	for (pp = &pe->posted; *pp; pp = &(*pp)->next) {
		if ((*pp)->r.tag != pe->hdr.tag)
			continue;
		if ((*pp)->r.len != pe->hdr.len)
			return -EPROTO;
		pe->body_post = *pp;
		*pp = (*pp)->next;
		return 0;
	}
	h = held_get(tc, pe->hdr.len);
	if (!h)
		return -ENOMEM;
	h->tag = pe->hdr.tag;
	h->next = pe->held;
	pe->held = h;
	pe->body_held = h;
	return 0;
}

static void end_body(struct tcp *tc, struct peer *pe)
{
	pe->in_body = 0;
	pe->hdr_got = 0;
	if (pe->body_post) {
		complete_recv(tc, pe->body_post, 0);
		pe->body_post = NULL;
		return;
	}
	pe->body_held->complete = 1;
	if (pe->body_held->claimed)
		held_deliver(tc, pe, pe->body_held, pe->body_held->claimed);
	pe->body_held = NULL;
}

static void read_peer(struct tcp *tc, struct peer *pe)
{
	while (!pe->err) {
		ssize_t n;
		char *dst;
		size_t want;

		if (!pe->in_body) {
			dst = (char *)&pe->hdr + pe->hdr_got;
			want = sizeof(pe->hdr) - pe->hdr_got;
		} else {
			uint64_t len = pe->hdr.len;

			dst = pe->body_post ? pe->body_post->r.buf : pe->body_held->buf;
			dst += pe->body_got;
			want = OR_MIN(len - pe->body_got, (uint64_t)1 << 30);
		}
		if (want) {
			n = recv(pe->fd, dst, want, MSG_DONTWAIT);
			if (n == 0) {
				peer_fail(tc, pe, -ECONNRESET);
				return;
			}
			if (n < 0) {
				if (errno != EAGAIN && errno != EINTR)
					peer_fail(tc, pe, -errno);
				return;
			}
		} else {
			n = 0;	/* empty payload */
		}
		if (!pe->in_body) {
			pe->hdr_got += n;
			if (pe->hdr_got == sizeof(pe->hdr)) {
				int rc = start_body(tc, pe);

				if (rc) {
					peer_fail(tc, pe, rc);
					return;
				}
				if (!pe->hdr.len)
					end_body(tc, pe);
			}
		} else {
			pe->body_got += n;
			if (pe->body_got == pe->hdr.len)
				end_body(tc, pe);
		}
	}
}

static int tcp_post_recv(struct or_transport *t, const struct or_recv *rx)
{
	struct tcp *tc = to_tcp(t);
	struct peer *pe;
	struct rx_post *p;

	if (rx->src < 0 || rx->src >= t->size || rx->src == t->rank)
		return -EINVAL;
	pe = &tc->peers[rx->src];
	p = tc->free_posts;
	if (p)
		tc->free_posts = p->next;
	else if (!(p = malloc(sizeof(*p))))
		return -ENOMEM;
	p->r = *rx;
	/* What arrived whole before the connection failed is still good: a
	 * peer that finished its last call and left sent it first. */
	for (struct held *h = pe->held; h; h = h->next) {
		if (h->tag != rx->tag || h->claimed)
			continue;
		if (h->complete)
			held_deliver(tc, pe, h, p);
		else if (pe->err)
			complete_recv(tc, p, pe->err);
		else
			h->claimed = p;
		return 0;
	}
	if (pe->err) {
		complete_recv(tc, p, pe->err);
		return 0;
	}
	p->next = pe->posted;
	pe->posted = p;
	return 0;
}

static int queue_send(struct tcp *tc, struct peer *pe, const struct or_send *tx,
		      struct send_op *op)
{
	struct tx_item *it = tc->free_tx;

	if (it)
		tc->free_tx = it->next;
	else if (!(it = malloc(sizeof(*it))))
		return -ENOMEM;
	it->next = NULL;
	it->hdr = (struct wire_hdr){
		.magic = htole32(WIRE_MAGIC),
		.tag = htole64(tx->tag),
		.len = htole64(tx->len),
	};
	it->buf = tx->buf;
	it->len = tx->len;
	it->done = 0;
	it->op = op;
	op->refs++;
	if (pe->txt)
		pe->txt->next = it;
	else
		pe->txh = it;
	pe->txt = it;
	return 0;
}

static int tcp_send(struct or_transport *t, const struct or_send *tx)
{
	struct tcp *tc = to_tcp(t);
	struct send_op *op = tc->free_ops;
	int rc = 0;

	if (tx->dst != OR_DST_ALL &&
	    (tx->dst < 0 || tx->dst >= t->size || tx->dst == t->rank))
		return -EINVAL;
	if (op)
		tc->free_ops = op->next;
	else if (!(op = malloc(sizeof(*op))))
		return -ENOMEM;
	op->user_data = tx->user_data;
	op->err = 0;
	op->refs = 1;	/* held until every connection has its item */
	for (int r = 0; r < t->size && !rc; r++) {
		struct peer *pe = &tc->peers[r];

		if (r == t->rank || (tx->dst != OR_DST_ALL && tx->dst != r))
			continue;
		if (pe->err)
			op->err = pe->err;
		else
			rc = queue_send(tc, pe, tx, op);
	}
	if (rc)
		op->err = rc;
	op_put(tc, op, 0);
	return 0;
}

static int tcp_reap(struct or_transport *t, struct or_cqe *cqes, unsigned int max)
{
	struct tcp *tc = to_tcp(t);
	struct epoll_event ev[64];
	unsigned int n;
	int ne;

	for (int r = 0; r < t->size; r++)
		if (tc->peers[r].txh && !tc->peers[r].want_out)
			flush_peer(tc, &tc->peers[r]);
	ne = epoll_wait(t->event_fd, ev, OR_ARRAY_SIZE(ev), 0);
	for (int i = 0; i < ne; i++) {
		struct peer *pe = &tc->peers[ev[i].data.u32];

		if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			read_peer(tc, pe);
		if (ev[i].events & (EPOLLOUT | EPOLLERR))
			flush_peer(tc, pe);
	}
	n = OR_MIN(max, tc->cq_n);
	memcpy(cqes, tc->cq, n * sizeof(*cqes));
	memmove(tc->cq, tc->cq + n, (tc->cq_n - n) * sizeof(*cqes));
	tc->cq_n -= n;
	return n;
}

/*
 * Half-close, then keep reading until each peer has either acknowledged
 * everything we sent (SIOCOUTQ == 0) or closed too, bounded: closing with
 * unread data sends a reset, and a reset drops our own unacknowledged
 * data that a slower peer may still need.
 */
static void drain_close(struct tcp *tc)
{
	struct or_transport *t = &tc->t;
	int64_t deadline = or_now_ns() + (int64_t)CLOSE_DRAIN_MS * 1000000;
	char sink[4096];

	for (int r = 0; r < t->size; r++)
		if (tc->peers[r].fd >= 0 && !tc->peers[r].err)
			shutdown(tc->peers[r].fd, SHUT_WR);
	while (or_now_ns() < deadline) {
		struct pollfd pfd[t->size];
		int idx[t->size], np = 0;

		for (int r = 0; r < t->size; r++) {
			struct peer *pe = &tc->peers[r];
			int outq = 0;

			if (pe->fd < 0 || pe->err)
				continue;
			if (!ioctl(pe->fd, SIOCOUTQ, &outq) && !outq) {
				while (recv(pe->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
					;
				pe->err = -ESHUTDOWN;	/* done with this one */
				continue;
			}
			pfd[np] = (struct pollfd){ .fd = pe->fd, .events = POLLIN };
			idx[np++] = r;
		}
		if (!np || (poll(pfd, np, 10) < 0 && errno != EINTR))
			break;
		for (int i = 0; i < np; i++) {
			struct peer *pe = &tc->peers[idx[i]];
			ssize_t n;

			if (!pfd[i].revents)
				continue;
			n = recv(pe->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				pe->err = -ECONNRESET;
		}
	}
}

/* Free a list of any of the structs above whose first member is next. */
static void free_chain(void *head)
{
	struct chain {
		struct chain *next;
	} *c = head;

	while (c) {
		struct chain *n = c->next;

		free(c);
		c = n;
	}
}

static void free_held_chain(struct held *h)
{
	while (h) {
		struct held *n = h->next;

		free(h->claimed);
		free(h->buf);
		free(h);
		h = n;
	}
}

static void tcp_destroy(struct or_transport *t)
{
	struct tcp *tc = to_tcp(t);

	if (tc->peers)
		drain_close(tc);
	for (int r = 0; tc->peers && r < t->size; r++) {
		struct peer *pe = &tc->peers[r];

		if (pe->fd >= 0)
			close(pe->fd);
		/* Sends still queued: their operation dies with its last item. */
		for (struct tx_item *it = pe->txh; it; it = it->next)
			if (!--it->op->refs)
				free(it->op);
		free_chain(pe->txh);
		free_chain(pe->posted);
		free(pe->body_post);
		free_held_chain(pe->held);
	}
	free_chain(tc->free_ops);
	free_chain(tc->free_tx);
	free_chain(tc->free_posts);
	free_held_chain(tc->free_held);
	if (t->event_fd >= 0)
		close(t->event_fd);
	free(tc->peers);
	free(tc->cq);
	free(tc);
}

static const struct or_transport_ops tcp_ops = {
	.name = "tcp",
	.post_recv = tcp_post_recv,
	.send = tcp_send,
	.reap = tcp_reap,
	.destroy = tcp_destroy,
};

/* Exchange hellos on a fresh connection; the peer must be `expect` (or any
 * rank above ours when expect < 0). Returns the peer's rank or -errno. */
static int handshake(int fd, const struct or_tcp_params *p, int expect,
		     int64_t deadline, struct or_tcp_agreed *agreed)
{
	struct hello me = {
		.magic = htole32(HELLO_MAGIC),
		.version = htole16(HELLO_VERSION),
		.lossy_ok = htole16(p->lossy_ok),
		.rank = htole32(p->rank),
		.size = htole32(p->size),
		.cfg_hash = htole64(p->cfg_hash),
		.memlock_kb = htole32(p->memlock_kb),
	}, them;
	int rc, r;

	/* The connecting side speaks first; the accepting side answers. */
	if (expect >= 0 && (rc = or_write_full(fd, &me, sizeof(me), deadline)))
		return rc;
	/* Every version's hello starts with version 1's fields: a peer of
	 * another version is told so before the length of its hello matters
	 * (waiting for fields it never sends would end in a timeout). */
	rc = or_read_full(fd, &them, HELLO_V1_LEN, deadline);
	if (rc)
		return rc;
	if (le32toh(them.magic) != HELLO_MAGIC)
		return -EBADMSG;	/* not one of ours: caller drops it */
	if (expect < 0 && (rc = or_write_full(fd, &me, sizeof(me), deadline)))
		return rc;
	if (le16toh(them.version) == HELLO_VERSION) {
		rc = or_read_full(fd, (char *)&them + HELLO_V1_LEN,
				  sizeof(them) - HELLO_V1_LEN, deadline);
		if (rc)
			return rc;
	}
	r = le32toh(them.rank);
	if (le16toh(them.version) != HELLO_VERSION ||
	    le32toh(them.size) != (uint32_t)p->size ||
	    le64toh(them.cfg_hash) != p->cfg_hash) {
		or_log(p->quiet, "rank %d: peer rank %d has a different version or "
		       "configuration (size %u vs %d)", p->rank, r,
		       le32toh(them.size), p->size);
		return -EPROTO;
	}
	if (expect >= 0 ? r != expect : r <= p->rank || r >= p->size)
		return -EPROTO;
	agreed->lossy_ok &= le16toh(them.lossy_ok);
	if (le32toh(them.memlock_kb) < agreed->memlock_kb)
		agreed->memlock_kb = le32toh(them.memlock_kb);
	return r;
}

int or_tcp_create(const struct or_tcp_params *p, struct or_transport **out,
		  struct or_tcp_agreed *all)
{
	int64_t deadline = or_deadline_after(p->timeout_ms);
	struct tcp *tc;
	int lfd = p->listen_fd, rc = 0, accepted = 0;
	struct or_tcp_agreed agreed = {
		.lossy_ok = p->lossy_ok,
		.memlock_kb = p->memlock_kb,
	};

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		goto nomem;
	tc->t.ops = &tcp_ops;
	tc->t.rank = p->rank;
	tc->t.size = p->size;
	tc->t.event_fd = epoll_create1(EPOLL_CLOEXEC);
	tc->peers = calloc(p->size, sizeof(*tc->peers));
	if (!tc->peers || tc->t.event_fd < 0)
		goto nomem;
	for (int r = 0; r < p->size; r++)
		tc->peers[r].fd = -1;

	/* Every address must make sense before anything is tried. */
	for (int r = 0; r < p->size; r++) {
		struct or_addr a;

		rc = or_addr_parse(p->peers[r], &a);
		if (rc) {
			or_log(p->quiet, "rank %d: bad address for rank %d: \"%s\"",
			       p->rank, r, p->peers[r]);
			goto fail;
		}
	}
	if (lfd < 0 && p->rank < p->size - 1) {
		struct or_addr a;

		rc = or_addr_parse(p->peers[p->rank], &a);
		if (!rc) {
			lfd = or_listen(&a, p->size);
			if (lfd < 0) {
				rc = lfd;
				or_log(p->quiet, "rank %d: cannot listen on %s: %s", p->rank,
				       p->peers[p->rank], strerror(-rc));
			}
		}
		if (rc)
			goto fail;
	}
	/* Lower ranks first, then accept the higher ones: every connect waits
	 * only on ranks below it, so the mesh cannot deadlock. */
	for (int r = 0; r < p->rank; r++) {
		struct or_addr a;
		int fd;

		rc = or_addr_parse(p->peers[r], &a);
		if (rc)
			goto fail;
		fd = or_connect_retry(&a, deadline);
		if (fd < 0) {
			rc = fd;
			or_log(p->quiet, "rank %d: cannot connect to rank %d at %s: %s",
			       p->rank, r, p->peers[r], strerror(-rc));
			goto fail;
		}
		tc->peers[r].fd = fd;
		rc = handshake(fd, p, r, deadline, &agreed);
		if (rc < 0)
			goto fail;
	}
	/*
	 * Whatever else connects (a port scan, a health check) must not end
	 * the mesh: a connection that closes, sends something else, or sends
	 * nothing for OR_HELLO_WAIT_MS is dropped, and so is a second hello from
	 * a rank already here (its agreement is not counted). Only a rank of
	 * ours with another version or configuration ends it (EPROTO).
	 */
	while (accepted < p->size - 1 - p->rank) {
		int fd = or_accept(lfd, deadline), r;
		struct or_tcp_agreed theirs = agreed;
		int64_t by = or_hello_by(deadline);

		if (fd < 0) {
			rc = fd;
			goto fail;
		}
		r = handshake(fd, p, -1, by, &theirs);
		if (r == -EPROTO) {
			close(fd);
			rc = r;
			goto fail;
		}
		if (r < 0 || tc->peers[r].fd >= 0) {
			close(fd);	/* a stranger, or a duplicate rank */
			continue;
		}
		agreed = theirs;
		tc->peers[r].fd = fd;
		accepted++;
	}
	for (int r = 0; r < p->size; r++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = r };

		if (r != p->rank &&
		    epoll_ctl(tc->t.event_fd, EPOLL_CTL_ADD, tc->peers[r].fd, &ev)) {
			rc = -errno;
			goto fail;
		}
	}
	if (lfd >= 0)
		close(lfd);
	*all = agreed;
	*out = &tc->t;
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	if (lfd >= 0)
		close(lfd);
	if (tc) {
		/* Nothing was sent: no drain needed. */
		for (int r = 0; tc->peers && r < p->size; r++)
			if (tc->peers[r].fd >= 0)
				close(tc->peers[r].fd);
		if (tc->t.event_fd >= 0)
			close(tc->t.event_fd);
		free(tc->peers);
		free(tc);
	}
	if (rc == -ETIMEDOUT)
		or_log(p->quiet, "rank %d: timed out connecting the mesh", p->rank);
	return rc;
}
