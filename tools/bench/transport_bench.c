// SPDX-License-Identifier: GPL-2.0
/*
 * transport_bench: goodput and CPU cost of large messages through an
 * OptiReduce socket, and through one TCP stream with the same buffers and
 * the same process structure, so the two can be compared in one run.
 *
 *   transport_bench rx     --local B --peer A [options]   rank 1, receiver
 *   transport_bench tx     --local A --peer B [options]   rank 0, sender
 *   transport_bench tcp-rx --local B --peer A [options]   TCP receiver
 *   transport_bench tcp-tx --local A --peer B [options]   TCP sender
 *
 * Start the receiver first: it prints LISTENING once the sender may
 * connect to its control port (TCP, --port; the sender retries for a
 * while). The sender sends one message per round (optireduce:
 * OPTIREDUCE_CMSG_SEND to rank 1; TCP: one message of the same size on the
 * stream) for --warmup + --duration seconds, then reports the last round
 * and its own CPU time over the control connection. The optireduce sender
 * sends a round only once the receiver posted it ("C <round>" lines on
 * the control connection, the counterpart of TCP's receive window;
 * --no-credit on both sides lets it run free). The receiver keeps
 * --ahead rounds posted (optireduce) or buffers in rotation (TCP), reposts
 * as rounds end, checks the content of every --verify-every'th round byte
 * for byte (the received parts, when some were lost), and prints one line:
 *
 *   RESULT proto=... gbps=... cpu_s_per_gb_proc=... cpu_s_per_gb_sys=...
 *
 * The receiver's measured interval starts when the first round that ends
 * after --warmup seconds ends, and stops when the sender's last round
 * ended; goodput counts the payload that arrived in the receiver's buffers
 * for the rounds in between (completions' "received" for optireduce, whole
 * messages for TCP). CPU per GB: each process's getrusage (user+sys) over
 * its own interval divided by the bytes of that interval (sent, for the
 * sender), summed; and every CPU's busy time (from /proc/stat) over the
 * receiver's interval, divided by its bytes: softirq work that ran outside
 * the two processes is only there. A benchmark: it reports, never judges;
 * the exit status is non-zero only when the run itself failed (setup
 * error, content mismatch, lost control connection).
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "optr_sock.h"

/* The payload: one pseudo-random buffer; round r's message starts at byte
 * 8 * (r % NPAT) of it, so neighbouring rounds differ everywhere and a
 * fragment placed in the wrong round or at the wrong offset fails
 * verification. A buffer is cleared before it receives a round that will
 * be verified, so leftovers of an older round cannot pass either.
 */
#define NPAT		3
#define CTL_LINE	512

enum mode { MODE_TX, MODE_RX, MODE_TCP_TX, MODE_TCP_RX };

static struct {
	enum mode mode;
	const char *local, *peer, *tag;
	size_t msg;
	unsigned int ahead, verify_every, port;
	bool credit;
	bool auth;
	double warmup, duration, timeout;
	__u32 comm, deadline_us, timeout_us;
} opt = {
	.msg = 4 << 20,
	.ahead = 8,
	.credit = true,
	.verify_every = 8,
	.port = 5301,
	.warmup = 0.5,
	.duration = 2.0,
	.timeout = 60.0,
	.comm = 0x0be4c401,
	.deadline_us = 10000000,
	.timeout_us = 10000000,
	.tag = "-",
};

static unsigned char *pat;

static void die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	fprintf(stderr, "transport_bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (e)
		fprintf(stderr, ": %s", strerror(e));
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	return optr_now_ns() / 1e9;
}

/* ---- CPU accounting --------------------------------------------------- */

struct cpu_snap {
	double wall;		/* CLOCK_MONOTONIC, seconds */
	double proc;		/* this process, user + sys, seconds */
	double proc_user, proc_sys;
	/* /proc/stat, every CPU, seconds. idle (with iowait) is measured at
	 * idle entry and exit; the rest are tick samples, which a slow or
	 * emulated CPU under-counts when ticks arrive late, so busy time is
	 * taken as wall time * CPUs - idle, and the ticks only give shares.
	 */
	double idle, tick_busy, tick_softirq, tick_kernel, tick_user;
	double softnet_drops;	/* /proc/net/softnet_stat, every CPU */
};

static double softnet_drops(void)
{
	unsigned int processed, dropped;
	char line[512];
	double n = 0;
	FILE *f = fopen("/proc/net/softnet_stat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%x %x", &processed, &dropped) == 2)
			n += dropped;
	fclose(f);
	return n;
}

static void cpu_snap(struct cpu_snap *s)
{
	unsigned long long v[10] = {};
	double hz = (double)sysconf(_SC_CLK_TCK);
	struct rusage ru;
	FILE *f;

	s->wall = now_s();
	getrusage(RUSAGE_SELF, &ru);
	s->proc_user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	s->proc_sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	s->proc = s->proc_user + s->proc_sys;

	f = fopen("/proc/stat", "r");
	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			 &v[7], &v[8], &v[9]) < 8)
		die("/proc/stat");
	fclose(f);
	/* user nice system idle iowait irq softirq steal (guest is in user) */
	s->idle = (v[3] + v[4]) / hz;
	s->tick_user = (v[0] + v[1]) / hz;
	s->tick_kernel = (v[2] + v[5]) / hz;
	s->tick_softirq = v[6] / hz;
	s->tick_busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
	s->softnet_drops = softnet_drops();
}

struct cpu_delta {
	double wall, proc, proc_user, proc_sys;
	double sys_busy;	/* every CPU, not idle */
	double sys_idle, tick_busy, tick_softirq, tick_kernel, tick_user;
	double softnet_drops;
};

static void cpu_delta(struct cpu_delta *d, const struct cpu_snap *a,
		      const struct cpu_snap *b)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	d->wall = b->wall - a->wall;
	d->proc = b->proc - a->proc;
	d->proc_user = b->proc_user - a->proc_user;
	d->proc_sys = b->proc_sys - a->proc_sys;
	d->sys_idle = b->idle - a->idle;
	d->sys_busy = ncpu * d->wall - d->sys_idle;
	if (d->sys_busy < 0)
		d->sys_busy = 0;
	d->tick_busy = b->tick_busy - a->tick_busy;
	d->tick_softirq = b->tick_softirq - a->tick_softirq;
	d->tick_kernel = b->tick_kernel - a->tick_kernel;
	d->tick_user = b->tick_user - a->tick_user;
	d->softnet_drops = b->softnet_drops - a->softnet_drops;
}

/* ---- payload ---------------------------------------------------------- */

static void *xalloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu", len);
	return p;
}

static void make_patterns(void)
{
	size_t len = opt.msg + 8 * NPAT, j;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	pat = xalloc(len);
	for (j = 0; j < len; j++) {
		if (!(j & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		pat[j] = (unsigned char)(x >> (8 * (j & 7)));
	}
}

/* The message of round @r. */
static const unsigned char *message(__u32 r)
{
	return pat + 8 * (r % NPAT);
}

/* Compare [off, off + len) of round @r's message with @buf. */
static bool check_range(__u32 r, const unsigned char *buf, size_t off,
			size_t len)
{
	return !memcmp(buf + off, message(r) + off, len);
}

/* ---- control connection ----------------------------------------------- */

struct ctl {
	int fd;
	char buf[CTL_LINE];
	size_t n;
};

static void ctl_send(struct ctl *c, const char *fmt, ...)
{
	char line[CTL_LINE];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) ||
	    send(c->fd, line, n, MSG_NOSIGNAL) != n)
		die("control send");
}

/* One line (without the newline) if a whole one is buffered or arrives
 * within @timeout_ms; 0 when none, -1 at EOF or error.
 */
static int ctl_line(struct ctl *c, char *out, int timeout_ms)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->n);
		ssize_t r;

		if (nl) {
			size_t len = nl - c->buf;

			memcpy(out, c->buf, len);
			out[len] = 0;
			c->n -= len + 1;
			memmove(c->buf, nl + 1, c->n);
			return 1;
		}
		if (c->n == sizeof(c->buf))
			return -1;
		if (timeout_ms >= 0 && !optr_wait_readable(c->fd, timeout_ms))
			return 0;
		r = recv(c->fd, c->buf + c->n, sizeof(c->buf) - c->n,
			 MSG_DONTWAIT);
		if (r == 0)
			return -1;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		c->n += r;
		timeout_ms = 0;
	}
}

static void sin_of(struct sockaddr_in *sin, const char *ip, unsigned int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sin->sin_addr) != 1) {
		errno = 0;
		die("bad address %s", ip);
	}
}

static int tcp_listen(const char *ip, unsigned int port)
{
	struct sockaddr_in sin;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin_of(&sin, ip, port);
	if (bind(fd, (void *)&sin, sizeof(sin)) || listen(fd, 4))
		die("listen %s:%u", ip, port);
	return fd;
}

static int tcp_accept(int lfd)
{
	int fd;

	if (!optr_wait_readable(lfd, (int)(opt.timeout * 1000))) {
		errno = ETIMEDOUT;
		die("no sender connected");
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	return fd;
}

/* Connect, retrying while the receiver is not listening yet. */
static int tcp_connect(const char *ip, unsigned int port)
{
	double until = now_s() + 20;
	struct sockaddr_in sin;

	sin_of(&sin, ip, port);
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			die("socket");
		if (!connect(fd, (void *)&sin, sizeof(sin)))
			return fd;
		close(fd);
		if (now_s() > until)
			die("connect %s:%u", ip, port);
		usleep(20000);
	}
}

/* ---- sender ------------------------------------------------------------ */

static int optr_sock_joined(__u32 rank)
{
	const char *ips[2];
	int fd = optr_socket();

	if (fd < 0)
		die("optireduce socket (module loaded?)");
	__u8 secret[OPTIREDUCE_SECRET_LEN];
	unsigned int i;

	ips[rank] = opt.local;
	ips[!rank] = opt.peer;
	/* A benchmark's secret need not be secret, only the same on both
	 * ends and not zero: a function of the communicator id.
	 */
	for (i = 0; i < sizeof(secret); i++)
		secret[i] = (__u8)(opt.comm >> (8 * (i % 4))) ^ (0xa5 + i);
	if (optr_join_flags(fd, opt.comm, rank, 2, ips, NULL, 0,
			    opt.auth ? secret : NULL,
			    opt.auth ? OPTIREDUCE_JOIN_AUTH : 0))
		die("OPTIREDUCE_JOIN");
	return fd;
}

static void write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("tcp write");
		}
		p += n;
		len -= n;
	}
}

/*
 * Make sure the receiver has posted round @r: its "C <round>" lines say up
 * to which round it posted. The application's counterpart of TCP's
 * receive window: without it an unpaced sender that gets ahead of the
 * receiver's posts loses whatever the backlog cannot hold. Returns the new
 * credit; counts in @waits the times it had to block for it.
 */
static __u32 tx_credit(struct ctl *ctl, __u32 r, __u32 credit,
		       unsigned long long *waits)
{
	int timeout_ms = 0;
	char line[CTL_LINE];

	while (r > credit) {
		int ret = ctl_line(ctl, line, timeout_ms);
		__u32 c;

		if (!ret && !timeout_ms) {
			/* Nothing buffered: block until the next line. */
			(*waits)++;
			timeout_ms = (int)(opt.timeout * 1000);
			continue;
		}
		if (ret != 1 || sscanf(line, "C %u", &c) != 1) {
			errno = 0;
			die("no credit for round %u", r);
		}
		if (c > credit)
			credit = c;
	}
	return credit;
}

static int run_tx(bool tcp)
{
	struct optireduce_stats st0 = {}, st1 = {};
	unsigned long long timeouts = 0, credit_waits = 0;
	struct ctl ctl = { .fd = -1 };
	struct cpu_snap c0 = {}, c1;
	__u32 credit = 0;
	double t_start, t0 = 0, t1;
	bool measuring = false;
	char line[CTL_LINE];
	__u32 r, r0 = 0;
	struct cpu_delta d;
	int fd, one = 1;

	make_patterns();
	ctl.fd = tcp_connect(opt.peer, opt.port);
	setsockopt(ctl.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (tcp) {
		/* The data connection is accepted after the control one. */
		fd = tcp_connect(opt.peer, opt.port + 1);
	} else {
		fd = optr_sock_joined(0);
	}
	if (ctl_line(&ctl, line, (int)(opt.timeout * 1000)) != 1 ||
	    strcmp(line, "READY")) {
		errno = 0;
		die("receiver not ready");
	}

	t_start = now_s();
	for (r = 1;; r++) {
		double t = now_s();
		const unsigned char *m;

		if (!measuring && t - t_start >= opt.warmup) {
			cpu_snap(&c0);
			if (!tcp && optr_stats(fd, &st0))
				die("OPTIREDUCE_STATS");
			t0 = t;
			r0 = r;
			measuring = true;
		}
		if (measuring && t - t0 >= opt.duration)
			break;
		if (!tcp && opt.credit && r > credit)
			credit = tx_credit(&ctl, r, credit, &credit_waits);
		m = message(r);
		if (tcp) {
			write_all(fd, m, opt.msg);
		} else if (optr_send(fd, r, 0, 1, opt.timeout_us, m,
				     opt.msg) != (ssize_t)opt.msg) {
			if (errno != ETIMEDOUT)
				die("optireduce send round %u", r);
			timeouts++;
		}
	}
	t1 = now_s();
	cpu_snap(&c1);
	cpu_delta(&d, &c0, &c1);
	if (!tcp && optr_stats(fd, &st1))
		die("OPTIREDUCE_STATS");
	if (tcp)
		shutdown(fd, SHUT_WR);
	ctl_send(&ctl, "E %u %u %.6f %.6f %.6f %llu %llu %llu %llu %llu\n",
		 r - 1, r - r0, d.proc_user, d.proc_sys, t1 - t0,
		 (unsigned long long)(st1.tx_packets - st0.tx_packets),
		 (unsigned long long)(st1.tx_bytes - st0.tx_bytes),
		 (unsigned long long)(st1.tx_dropped - st0.tx_dropped),
		 timeouts, credit_waits);
	/* Stay until the receiver is done: it may still be reading. */
	while (ctl_line(&ctl, line, (int)(opt.timeout * 1000)) == 1 &&
	       strcmp(line, "DONE"))
		;
	close(fd);
	close(ctl.fd);
	return 0;
}

/* ---- receiver ---------------------------------------------------------- */

struct rx_state {
	int fd;			/* optireduce socket or TCP stream */
	bool tcp;
	/* per round (index r): bytes that arrived, completion status + 1
	 * (0: not ended); grown on demand
	 */
	__u32 *got;
	unsigned char *st;
	size_t got_cap;
	__u32 next_post;	/* optireduce: the next round to post */
	__u32 credit_sent;	/* the last round a "C" line announced */
	struct ctl *ctl;
	__u32 first;		/* first measured round, 0 until known */
	__u32 last;		/* the sender's last round, 0 until told */
	__u64 ended;		/* rounds ended (any status) */
	__u64 ended_upto_last;	/* ... of those, rounds <= last */
	__u64 verified, verify_failed, verify_skipped;
	struct cpu_snap c0, c1;
	double t_ready, t0, t1, t_last;
	struct optireduce_stats st0, st1;
	/* the sender's "E" line */
	__u32 tx_rounds;
	double tx_user, tx_sys, tx_secs;
	unsigned long long tx_packets, tx_bytes, tx_dropped, tx_timeouts;
	unsigned long long credit_waits;
};

static bool rx_done(const struct rx_state *s)
{
	return s->last && s->ended_upto_last >= s->last;
}

/* The last round ended: the measured interval ends with it. */
static void rx_finish(struct rx_state *s)
{
	s->t1 = s->t_last;
	cpu_snap(&s->c1);
	if (!s->tcp && optr_stats(s->fd, &s->st1))
		die("OPTIREDUCE_STATS");
}

static void rx_round_ended(struct rx_state *s, __u32 r, __u32 got,
			   unsigned int status)
{
	double t = now_s();

	if (r >= s->got_cap) {
		size_t cap = s->got_cap ? s->got_cap * 2 : 4096;

		while (cap <= r)
			cap *= 2;
		s->got = realloc(s->got, cap * sizeof(*s->got));
		s->st = realloc(s->st, cap);
		if (!s->got || !s->st)
			die("realloc");
		memset(s->got + s->got_cap, 0,
		       (cap - s->got_cap) * sizeof(*s->got));
		memset(s->st + s->got_cap, 0, cap - s->got_cap);
		s->got_cap = cap;
	}
	s->got[r] = got;
	s->st[r] = (unsigned char)(status + 1);
	s->ended++;
	s->t_last = t;
	/* The interval starts with the first round end after the warm-up:
	 * rounds after this one are measured.
	 */
	if (!s->first && t - s->t_ready >= opt.warmup) {
		s->first = r + 1;
		s->t0 = t;
		cpu_snap(&s->c0);
		if (!s->tcp && optr_stats(s->fd, &s->st0))
			die("OPTIREDUCE_STATS");
	}
	if (s->last && r <= s->last) {
		s->ended_upto_last++;
		if (rx_done(s))
			rx_finish(s);
	}
}

static void rx_ctl(struct rx_state *s, struct ctl *ctl)
{
	char line[CTL_LINE];
	int ret;

	while ((ret = ctl_line(ctl, line, 0)) == 1) {
		if (line[0] != 'E' ||
		    sscanf(line, "E %u %u %lf %lf %lf %llu %llu %llu %llu %llu",
			   &s->last, &s->tx_rounds, &s->tx_user, &s->tx_sys,
			   &s->tx_secs, &s->tx_packets, &s->tx_bytes,
			   &s->tx_dropped, &s->tx_timeouts,
			   &s->credit_waits) != 10 || !s->last) {
			errno = 0;
			die("bad control line: %s", line);
		}
		/* Every round that ended so far is one of the sender's:
		 * nothing was sent for later ones.
		 */
		s->ended_upto_last = s->ended;
		if (rx_done(s))
			rx_finish(s);
	}
	if (ret < 0 && !s->last) {
		errno = 0;
		die("control connection lost");
	}
}

/* Verify the received parts of a round: all of it, or around the missing
 * ranges the completion lists.
 */
static void rx_verify(struct rx_state *s, __u32 r, const unsigned char *buf,
		      const struct optr_compl *c)
{
	size_t pos = 0;
	bool ok = true;
	__u32 i;

	if (c && (c->h.flags & OPTIREDUCE_COMPL_TRUNC)) {
		s->verify_skipped++;
		return;
	}
	for (i = 0; c && i < c->h.nranges; i++) {
		const struct optireduce_range *m = &c->r[i];

		if (m->offset > pos)
			ok &= check_range(r, buf, pos, m->offset - pos);
		pos = (size_t)m->offset + m->len;
	}
	if (pos < opt.msg)
		ok &= check_range(r, buf, pos, opt.msg - pos);
	s->verified++;
	if (!ok) {
		s->verify_failed++;
		fprintf(stderr, "transport_bench: round %u: content mismatch\n",
			r);
	}
}

static bool rx_sample(__u32 r)
{
	return opt.verify_every && r % opt.verify_every == 0;
}

/* Post the next round into buffer @i, unless the sender is done. */
static void rx_post(struct rx_state *s, unsigned char *b, __u32 i)
{
	__u32 r = s->next_post;

	if (s->last && r > s->last)
		return;
	/* A verified round must not pass on an older round's bytes. */
	if (rx_sample(r))
		memset(b, 0, opt.msg);
	if (optr_post(s->fd, r, 0, 0, 0, opt.deadline_us, i, b, opt.msg))
		die("post round %u", r);
	s->next_post++;
}

/* Tell the sender how far it may go, in steps of a quarter window. */
static void rx_credit(struct rx_state *s, bool force)
{
	__u32 posted = s->next_post - 1;
	__u32 step = opt.ahead / 4 ? opt.ahead / 4 : 1;

	if (!opt.credit || s->last || !s->ctl)
		return;
	if (force || posted - s->credit_sent >= step) {
		ctl_send(s->ctl, "C %u\n", posted);
		s->credit_sent = posted;
	}
}

/* Read completion records, verify a sample, repost. */
static void rx_optr_completions(struct rx_state *s, unsigned char **bufs)
{
	static char rbuf[64 * 1024];
	ssize_t n, off;

	n = recv(s->fd, rbuf, sizeof(rbuf), MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		die("recv completions");
	}
	for (off = 0; off + (ssize_t)sizeof(struct optireduce_completion) <= n;) {
		struct optireduce_completion *h = (void *)(rbuf + off);
		struct optr_compl c;
		unsigned char *b;

		if (h->rec_len < sizeof(*h) || h->rec_len > n - off) {
			errno = 0;
			die("bad completion record");
		}
		memset(&c, 0, sizeof(c));
		memcpy(&c, h, h->rec_len < sizeof(c) ? h->rec_len : sizeof(c));
		if (c.h.nranges > sizeof(c.r) / sizeof(c.r[0]))
			c.h.flags |= OPTIREDUCE_COMPL_TRUNC;
		off += h->rec_len;
		if (c.h.status == OPTIREDUCE_CANCELLED)
			continue;
		if (c.h.user_data >= opt.ahead) {
			errno = 0;
			die("completion of round %u: bad user_data", c.h.round);
		}
		b = bufs[c.h.user_data];
		if (rx_sample(c.h.round))
			rx_verify(s, c.h.round, b, &c);
		rx_round_ended(s, c.h.round, c.h.received, c.h.status);
		/* Its buffer goes to the next round. Rounds may end out of
		 * order (one that lost its last fragment waits for its
		 * deadline), and a socket opens its rounds in order.
		 */
		rx_post(s, b, (__u32)c.h.user_data);
	}
	rx_credit(s, false);
}

/* Fill the current round's buffer from the stream; returns after at most
 * one round ended, so the control connection is not starved.
 */
static void rx_tcp_read(struct rx_state *s, unsigned char **bufs,
			__u32 *round, size_t *off, bool *eof)
{
	for (;;) {
		unsigned char *b = bufs[*round % opt.ahead];
		ssize_t n = recv(s->fd, b + *off, opt.msg - *off,
				 MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			die("tcp recv");
		}
		if (n == 0) {
			/* The sender is done; its "E" line says how many
			 * rounds it sent.
			 */
			*eof = true;
			if (*off) {
				errno = 0;
				die("tcp stream ended mid-message");
			}
			return;
		}
		*off += n;
		if (*off < opt.msg)
			continue;
		if (rx_sample(*round))
			rx_verify(s, *round, b, NULL);
		rx_round_ended(s, *round, opt.msg, OPTIREDUCE_COMPLETE);
		++*round;
		*off = 0;
		/* As the optireduce receiver does before a post. */
		if (rx_sample(*round))
			memset(bufs[*round % opt.ahead], 0, opt.msg);
		return;
	}
}

static double share(double part, double whole)
{
	return whole > 0 ? part / whole : 0;
}

static void rx_report(struct rx_state *s)
{
	struct optireduce_stats *a = &s->st0, *b = &s->st1;
	unsigned long long bytes = 0, drops, status[5] = {};
	double secs, gb, tx_gb, gbps, tx_cpu, rx_cpu;
	struct cpu_delta d;
	__u32 r;

	if (!s->first || s->first > s->last) {
		/* The snapshots taken at READY stand: the interval is the
		 * whole run, warm-up included.
		 */
		fprintf(stderr, "transport_bench: no round ended after the "
			"warm-up; measured from the start\n");
		s->first = 1;
		s->t0 = s->t_ready;
	}
	for (r = s->first; r <= s->last && r < s->got_cap; r++) {
		bytes += s->got[r];
		status[s->st[r] < 5 ? s->st[r] : 0]++;
	}
	cpu_delta(&d, &s->c0, &s->c1);
	secs = s->t1 - s->t0;
	gb = bytes / 1e9;
	tx_gb = (double)s->tx_rounds * opt.msg / 1e9;
	gbps = secs > 0 ? bytes * 8 / secs / 1e9 : 0;
	tx_cpu = s->tx_user + s->tx_sys;
	rx_cpu = d.proc;
	drops = (b->drop_malformed - a->drop_malformed) +
		(b->drop_unknown_comm - a->drop_unknown_comm) +
		(b->drop_foreign_source - a->drop_foreign_source) +
		(b->drop_stale_round - a->drop_stale_round) +
		(b->drop_no_post - a->drop_no_post) +
		(b->drop_out_of_bounds - a->drop_out_of_bounds) +
		(b->drop_nomem - a->drop_nomem) +
		(b->drop_auth - a->drop_auth);

	printf("RESULT tag=%s proto=%s msg=%zu ahead=%u pace_mbps=%ld "
	       "rounds=%u bytes=%llu secs=%.4f gbps=%.4f "
	       "tx_rounds=%u tx_secs=%.4f tx_cpu_s=%.4f rx_cpu_s=%.4f "
	       "sys_cpu_s=%.4f sys_idle_s=%.4f softirq_share=%.3f "
	       "kernel_share=%.3f user_share=%.3f "
	       "cpu_s_per_gb_tx=%.4f cpu_s_per_gb_rx=%.4f "
	       "cpu_s_per_gb_proc=%.4f cpu_s_per_gb_sys=%.4f "
	       "complete=%llu expired=%llu early=%llu "
	       "bytes_lost=%llu tx_dropped=%llu tx_timeouts=%llu "
	       "rx_drops=%llu rx_duplicate=%llu backlog_queued=%llu "
	       "softnet_drops=%.0f tx_packets=%llu rx_packets=%llu "
	       "credit=%d credit_waits=%llu "
	       "verified=%llu verify_failed=%llu verify_skipped=%llu\n",
	       opt.tag, s->tcp ? "tcp" : opt.auth ? "auth" : "optr", opt.msg,
	       opt.ahead,
	       s->tcp ? 0 : optr_param("pace_mbps"),
	       s->last - s->first + 1, bytes, secs, gbps,
	       s->tx_rounds, s->tx_secs, tx_cpu, rx_cpu,
	       d.sys_busy, d.sys_idle, share(d.tick_softirq, d.tick_busy),
	       share(d.tick_kernel, d.tick_busy),
	       share(d.tick_user, d.tick_busy),
	       share(tx_cpu, tx_gb), share(rx_cpu, gb),
	       share(tx_cpu, tx_gb) + share(rx_cpu, gb),
	       share(d.sys_busy, gb),
	       status[1 + OPTIREDUCE_COMPLETE], status[1 + OPTIREDUCE_EXPIRED],
	       status[1 + OPTIREDUCE_EARLY],
	       (unsigned long long)(b->bytes_lost - a->bytes_lost),
	       s->tx_dropped, s->tx_timeouts, drops,
	       (unsigned long long)(b->rx_duplicate - a->rx_duplicate),
	       (unsigned long long)(b->backlog_queued - a->backlog_queued),
	       d.softnet_drops, s->tx_packets,
	       (unsigned long long)(b->rx_packets - a->rx_packets),
	       !s->tcp && opt.credit, s->credit_waits,
	       s->verified, s->verify_failed, s->verify_skipped);
	fflush(stdout);
}

static int run_rx(bool tcp)
{
	struct rx_state s = { .fd = -1, .tcp = tcp };
	struct ctl ctl = { .fd = -1 };
	int lfd, dfd = -1, one = 1;
	unsigned char **bufs;
	__u32 tcp_round = 1;
	size_t tcp_off = 0;
	bool eof = false;
	double give_up;
	unsigned int i;

	make_patterns();
	bufs = calloc(opt.ahead, sizeof(*bufs));
	if (!bufs)
		die("calloc");
	for (i = 0; i < opt.ahead; i++)
		bufs[i] = xalloc(opt.msg);

	lfd = tcp_listen(opt.local, opt.port);
	if (tcp) {
		dfd = tcp_listen(opt.local, opt.port + 1);
	} else {
		s.fd = optr_sock_joined(1);
		s.next_post = 1;
		for (i = 0; i < opt.ahead; i++)
			rx_post(&s, bufs[i], i);
	}
	/* Tell the driver we listen; it starts the sender now. */
	printf("LISTENING\n");
	fflush(stdout);
	ctl.fd = tcp_accept(lfd);
	setsockopt(ctl.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (tcp) {
		s.fd = tcp_accept(dfd);
		close(dfd);
		if (rx_sample(tcp_round))
			memset(bufs[tcp_round % opt.ahead], 0, opt.msg);
	}
	close(lfd);
	s.t_ready = now_s();
	/* Replaced when the measured interval starts (rx_round_ended). */
	cpu_snap(&s.c0);
	if (!tcp && optr_stats(s.fd, &s.st0))
		die("OPTIREDUCE_STATS");
	ctl_send(&ctl, "READY\n");
	s.ctl = &ctl;
	if (!tcp)
		rx_credit(&s, true);

	give_up = s.t_ready + opt.warmup + opt.duration + opt.timeout;
	while (!rx_done(&s)) {
		struct pollfd p[2] = {
			{ .fd = ctl.fd, .events = POLLIN },
			{ .fd = eof ? -1 : s.fd, .events = POLLIN },
		};

		if (now_s() > give_up) {
			errno = ETIMEDOUT;
			die("run did not end (%llu rounds ended, last %u)",
			    (unsigned long long)s.ended, s.last);
		}
		if (poll(p, 2, 200) < 0 && errno != EINTR)
			die("poll");
		if (p[0].revents)
			rx_ctl(&s, &ctl);
		if (eof && s.last && !rx_done(&s)) {
			errno = 0;
			die("tcp stream ended after %llu of %u rounds",
			    (unsigned long long)s.ended, s.last);
		}
		if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (tcp)
			rx_tcp_read(&s, bufs, &tcp_round, &tcp_off, &eof);
		else
			rx_optr_completions(&s, bufs);
	}
	rx_report(&s);
	ctl_send(&ctl, "DONE\n");
	close(s.fd);
	close(ctl.fd);
	return s.verify_failed ? 1 : 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
"usage: transport_bench tx|rx|tcp-tx|tcp-rx --local IP --peer IP [options]\n"
"  --netns NAME       enter network namespace NAME (ip netns) first\n"
"  --msg BYTES        message (round) size, default 4194304 (K/M suffix ok)\n"
"  --ahead K          rounds posted ahead / receive buffers, default 8\n"
"  --warmup S         seconds before the measured interval, default 0.5\n"
"  --duration S       measured seconds, default 2\n"
"  --verify-every N   check every N-th round byte for byte (0: never), default 8\n"
"  --port P           control port (TCP data: P+1), default 5301\n"
"  --comm ID          communicator id, default 0x0be4c401\n"
"  --deadline-us US   explicit round deadline of each post, default 10000000\n"
"  --timeout-us US    send timeout of each message, default 10000000\n"
"  --timeout S        give up on a stuck run after this long, default 60\n"
"  --tag STR          label copied into the RESULT line\n"
"  --no-credit        optireduce: the sender does not wait for the\n"
"                     receiver's posts (both sides must agree)\n"
"  --auth             optireduce: authenticated datagrams (a tag on every\n"
"                     one; both sides); RESULT says proto=auth\n"
"The receiver prints LISTENING, then one RESULT line.\n");
	exit(2);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || !v)
		usage();
	return v;
}

/* What `ip netns exec NAME` does for the network, without its cost. */
static void enter_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		die("netns %s", name);
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "local", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "msg", required_argument, NULL, 'm' },
		{ "ahead", required_argument, NULL, 'k' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "verify-every", required_argument, NULL, 'v' },
		{ "port", required_argument, NULL, 'P' },
		{ "comm", required_argument, NULL, 'c' },
		{ "deadline-us", required_argument, NULL, 'D' },
		{ "timeout-us", required_argument, NULL, 'T' },
		{ "timeout", required_argument, NULL, 't' },
		{ "tag", required_argument, NULL, 'g' },
		{ "no-credit", no_argument, NULL, 'C' },
		{ "auth", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	const char *netns = NULL;
	int c;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "tx"))
		opt.mode = MODE_TX;
	else if (!strcmp(argv[1], "rx"))
		opt.mode = MODE_RX;
	else if (!strcmp(argv[1], "tcp-tx"))
		opt.mode = MODE_TCP_TX;
	else if (!strcmp(argv[1], "tcp-rx"))
		opt.mode = MODE_TCP_RX;
	else
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n': netns = optarg; break;
		case 'l': opt.local = optarg; break;
		case 'p': opt.peer = optarg; break;
		case 'm': opt.msg = parse_size(optarg); break;
		case 'k': opt.ahead = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'w': opt.warmup = atof(optarg); break;
		case 'd': opt.duration = atof(optarg); break;
		case 'v': opt.verify_every = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'P': opt.port = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'c': opt.comm = (__u32)strtoul(optarg, NULL, 0); break;
		case 'D': opt.deadline_us = (__u32)strtoul(optarg, NULL, 0); break;
		case 'T': opt.timeout_us = (__u32)strtoul(optarg, NULL, 0); break;
		case 't': opt.timeout = atof(optarg); break;
		case 'g': opt.tag = optarg; break;
		case 'C': opt.credit = false; break;
		case 'A': opt.auth = true; break;
		default: usage();
		}
	}
	if (optind != argc || !opt.local || !opt.peer || !opt.ahead ||
	    opt.duration <= 0 || opt.warmup < 0 || opt.msg > OPTIREDUCE_MAX_MSG)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (netns)
		enter_netns(netns);

	switch (opt.mode) {
	case MODE_TX:
		return run_tx(false);
	case MODE_TCP_TX:
		return run_tx(true);
	case MODE_RX:
		return run_rx(false);
	case MODE_TCP_RX:
		return run_rx(true);
	}
	return 2;
}
