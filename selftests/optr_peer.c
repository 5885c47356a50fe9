// SPDX-License-Identifier: GPL-2.0
/*
 * optr_peer: one rank of a communicator, for the multi-namespace shell
 * tests (transport_test.sh, malformed_test.sh).
 *
 * Every round it posts one buffer per other rank (pre-filled with a
 * sentinel), sends its own message to every other rank, then reads
 * completions until all its posts of the round ended. Each completion is
 * checked byte by byte: what the kernel reports received must be exactly
 * what was sent, what it reports missing must be untouched, and the
 * accounting (received + missing == len, ranges ascending and disjoint)
 * must add up. At exit it prints one "result" line and the socket's
 * counters as "stat NAME VALUE" lines; the shell compares those with
 * /proc/net/optireduce.
 *
 * Message bytes are a function of (round, src, msg, offset), all < 0x80,
 * so a received byte can never be mistaken for the 0xAA sentinel and a
 * fragment placed at the wrong offset or in the wrong buffer shows.
 * malformed_test.sh computes the same pattern in python (keep in sync).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "optr_test.h"

#define SENTINEL	0xAA
#define MSG_ID		1	/* every rank sends message id 1 each round */
#define MAX_SIZES	64
#define COMPL_BUF	(1 << 20)	/* room for ~130k missing ranges */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *const stat_names[] = {
	"rounds_opened", "rounds_completed", "rounds_expired", "rounds_early",
	"rounds_cancelled", "tx_packets", "tx_bytes", "tx_dropped",
	"rx_packets", "rx_bytes", "rx_duplicate", "drop_malformed",
	"drop_unknown_comm", "drop_foreign_source", "drop_stale_round",
	"drop_no_post", "drop_out_of_bounds", "bytes_lost", "backlog_queued",
	"drop_nomem", "rx_gso_batches", "rx_steered", "drop_mem_limit",
	"drop_auth",
};
_Static_assert(ARRAY_SIZE(stat_names) ==
	       sizeof(struct optireduce_stats) / sizeof(__u64),
	       "stat_names out of date with struct optireduce_stats");

struct opts {
	__u32 comm;
	int rank;
	int nranks;
	__u32 peers[OPTIREDUCE_MAX_RANKS];
	int rounds;
	__u32 sizes[MAX_SIZES];
	int nsizes;
	const char *mcast;
	const char *dev;
	__u32 deadline_us;
	__u32 early_us;
	__u32 send_timeout_us;
	long pace_mbps;		/* -1: leave the module default */
	bool silent;
	bool unicast;
	bool expect_loss;
	bool per_round;
	__u32 start_round;
	const char *stats_file;
	long linger_ms;
	long long start_at_ms;	/* CLOCK_REALTIME ms; 0: start at once */
	const char *ready_file;
	const char *go_file;
	__u32 go_round;
	bool have_go_round;
	__u8 secret[OPTIREDUCE_SECRET_LEN];
	bool auth;
	bool net_counters;
	const char *netns;
	bool watch_stalls;
	long delay_ms;
	bool expect_missing;
	__u32 miss_off, miss_len;
};

static struct opts o = {
	.rank = -1,
	.rounds = 1,
	.deadline_us = 10000000,	/* no-loss runs must never expire */
	.send_timeout_us = 10000000,
	.pace_mbps = -1,
	.start_round = 1,
	.linger_ms = 200,
};

/* Tallies for the result line. */
static struct {
	uint64_t posts, complete, expired, early, cancelled;
	uint64_t bytes, received, missing, mismatches;
	uint64_t tx_msgs, tx_timeouts;
	uint64_t wall_max_us;
	uint64_t send_min_us, send_max_us;	/* time in SEND per round */
	uint64_t tx_rounds;
	uint64_t refused, refused_bytes;	/* posts refused: round ended */
	uint64_t *round_us;	/* per round: elapsed of its last completion */
	/* the current round, for --per-round */
	uint64_t r_missing, r_ranges, r_complete, r_expired, r_early;
} t;

static int sol;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "optr_peer rank %d: ", o.rank);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A mismatch: printed (the first few) and counted, never fatal, so one
 * run shows how widespread a problem is.
 */
static void bad(const char *fmt, ...)
{
	va_list ap;

	if (t.mismatches++ < 20) {
		va_start(ap, fmt);
		fprintf(stderr, "optr_peer rank %d: MISMATCH: ", o.rank);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static uint32_t seed_of(uint32_t round, uint32_t src, uint32_t msg)
{
	uint32_t x = round * 0x9e3779b1u ^ (src + 1) * 0x85ebca6bu ^
		     msg * 0xc2b2ae35u;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return x;
}

/* Byte @off of a message: changes every 32 bytes with the hash and every
 * byte with the offset, never >= 0x80.
 */
static uint8_t pattern(uint32_t seed, uint32_t off)
{
	uint32_t x = seed + (off >> 5) * 0x9e3779b1u;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return (uint8_t)((x + off) & 0x7f);
}

static void fill(uint8_t *buf, uint32_t len, uint32_t round, uint32_t src)
{
	uint32_t seed = seed_of(round, src, MSG_ID), i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Stall monitor (--watch-stalls): one thread per CPU sleeps 5 ms at a
 * time and records the longest oversleep. On a TCG guest sharing a busy
 * host a vCPU can stop for seconds; the kernel's timers and this thread
 * are late alike, so the shell can tell "the guest stalled" from "a round
 * ended late". The kernel's timer runs on one CPU: hence a thread per CPU.
 */
#define STALL_TICK_NS	5000000ull
static uint64_t stall_max_ns;
static bool stall_stop;		/* __atomic accesses */

static void *stall_fn(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!__atomic_load_n(&stall_stop, __ATOMIC_RELAXED)) {
		struct timespec ts = { 0, STALL_TICK_NS };
		uint64_t t0 = now_ns(), late;

		nanosleep(&ts, NULL);
		late = now_ns() - t0 - STALL_TICK_NS;
		if (late > __atomic_load_n(&stall_max_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&stall_max_ns, late, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int stall_nthreads;
static pthread_t stall_threads[64];

static void stall_start(void)
{
	long cpu, ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (cpu = 0; cpu < ncpu && cpu < 64; cpu++)
		if (!pthread_create(&stall_threads[stall_nthreads], NULL,
				    stall_fn, (void *)cpu))
			stall_nthreads++;
}

static void stall_end(void)
{
	int i;

	__atomic_store_n(&stall_stop, true, __ATOMIC_RELAXED);
	for (i = 0; i < stall_nthreads; i++)
		pthread_join(stall_threads[i], NULL);
}

static void usage(void)
{
	fprintf(stderr,
"usage: optr_peer --comm ID --rank R --peers IP0,IP1,... [options]\n"
"  --rounds N            rounds to run (default 1)\n"
"  --size BYTES          message size of every round\n"
"  --sizes A,B,C         sizes cycling per round\n"
"  --mcast GROUP --dev IF  join with a multicast group on interface IF\n"
"  --unicast             one SEND per destination instead of DST_ALL\n"
"  --secret HEX          the communicator's secret, 64 hex digits\n"
"  --auth                authenticated datagrams (needs --secret)\n"
"  --deadline-us D       round deadline (default 10000000; 0 = adaptive)\n"
"  --early-us T          typical round for the early timeout (default 0:\n"
"                        the socket's estimate)\n"
"  --send-timeout-us T   send timeout (default 10000000; 0 = estimate)\n"
"  --pace MBPS           OPTIREDUCE_PACE_MBPS of the socket\n"
"  --silent              post and receive, never send\n"
"  --expect-loss         incomplete posts are not a failure\n"
"  --expect-missing OFF:LEN  every post longer than OFF misses exactly\n"
"                        [OFF, OFF+LEN) (clipped to its length)\n"
"  --start-round K       first round id (default 1)\n"
"  --ready-file F        create F once joined\n"
"  --go-file F           once joined, wait until F exists\n"
"  --go-round K          wait for the go file before round K instead\n"
"  --delay-ms MS         then wait this long before the first round\n"
"  --start-at MS         then wait until this CLOCK_REALTIME time (ms)\n"
"  --linger-ms MS        stay open this long after the last round (200)\n"
"  --per-round           print one line per round\n"
"  --stats FILE          also write the result and stat lines to FILE\n"
"  --netns NAME          enter network namespace NAME (/run/netns/NAME)\n"
"  --watch-stalls        measure guest stalls (stall_us of the result)\n"
"  --net-counters        also print how this namespace's counters\n"
"                        (/proc/net/optireduce, UDP MIB) moved while we ran\n");
	exit(2);
}

static unsigned long long num(const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max || *s == '-') {
		fprintf(stderr, "optr_peer: bad number '%s'\n", s);
		usage();
	}
	return v;
}

static void parse_sizes(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	o.nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o.nsizes == MAX_SIZES)
			usage();
		o.sizes[o.nsizes++] = num(tok, 64u << 20);
		if (!o.sizes[o.nsizes - 1])
			usage();
	}
	free(copy);
	if (!o.nsizes)
		usage();
}

static void parse_peers(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	struct in_addr a;

	o.nranks = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o.nranks == OPTIREDUCE_MAX_RANKS || !inet_aton(tok, &a))
			usage();
		o.peers[o.nranks++] = a.s_addr;
	}
	free(copy);
}

static void parse_missing(char *arg)
{
	char *colon = strchr(arg, ':');

	if (!colon)
		usage();
	*colon = 0;
	o.miss_off = num(arg, UINT32_MAX);
	o.miss_len = num(colon + 1, UINT32_MAX);
	o.expect_missing = true;
}

static void parse_secret(const char *arg)
{
	int i;

	if (strlen(arg) != 2 * OPTIREDUCE_SECRET_LEN)
		usage();
	for (i = 0; i < OPTIREDUCE_SECRET_LEN; i++) {
		unsigned int b;

		if (!isxdigit(arg[2 * i]) || !isxdigit(arg[2 * i + 1]) ||
		    sscanf(arg + 2 * i, "%2x", &b) != 1)
			usage();
		o.secret[i] = b;
	}
}

static void parse(int argc, char **argv)
{
	enum {
		O_COMM = 256, O_RANK, O_PEERS, O_ROUNDS, O_SIZE, O_SIZES,
		O_MCAST, O_DEV, O_UNICAST, O_DEADLINE, O_EARLY, O_STIMEO, O_PACE,
		O_SILENT, O_LOSS, O_MISSING, O_START, O_START_AT, O_LINGER,
		O_PER_ROUND, O_STATS, O_READY, O_GO, O_DELAY, O_GO_ROUND,
		O_NETC, O_NETNS, O_STALLS, O_SECRET, O_AUTH,
	};
	static const struct option lo[] = {
		{ "comm", 1, NULL, O_COMM },
		{ "rank", 1, NULL, O_RANK },
		{ "peers", 1, NULL, O_PEERS },
		{ "rounds", 1, NULL, O_ROUNDS },
		{ "size", 1, NULL, O_SIZE },
		{ "sizes", 1, NULL, O_SIZES },
		{ "mcast", 1, NULL, O_MCAST },
		{ "dev", 1, NULL, O_DEV },
		{ "unicast", 0, NULL, O_UNICAST },
		{ "deadline-us", 1, NULL, O_DEADLINE },
		{ "early-us", 1, NULL, O_EARLY },
		{ "send-timeout-us", 1, NULL, O_STIMEO },
		{ "pace", 1, NULL, O_PACE },
		{ "silent", 0, NULL, O_SILENT },
		{ "expect-loss", 0, NULL, O_LOSS },
		{ "expect-missing", 1, NULL, O_MISSING },
		{ "start-round", 1, NULL, O_START },
		{ "start-at", 1, NULL, O_START_AT },
		{ "linger-ms", 1, NULL, O_LINGER },
		{ "per-round", 0, NULL, O_PER_ROUND },
		{ "stats", 1, NULL, O_STATS },
		{ "ready-file", 1, NULL, O_READY },
		{ "go-file", 1, NULL, O_GO },
		{ "go-round", 1, NULL, O_GO_ROUND },
		{ "delay-ms", 1, NULL, O_DELAY },
		{ "net-counters", 0, NULL, O_NETC },
		{ "netns", 1, NULL, O_NETNS },
		{ "watch-stalls", 0, NULL, O_STALLS },
		{ "secret", 1, NULL, O_SECRET },
		{ "auth", 0, NULL, O_AUTH },
		{}
	};
	bool have_comm = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_COMM:
			o.comm = num(optarg, UINT32_MAX);
			have_comm = true;
			break;
		case O_RANK:
			o.rank = num(optarg, OPTIREDUCE_MAX_RANKS - 1);
			break;
		case O_PEERS:
			parse_peers(optarg);
			break;
		case O_ROUNDS:
			o.rounds = num(optarg, 1000000);
			break;
		case O_SIZE:	/* one size is a list of one */
		case O_SIZES:
			parse_sizes(optarg);
			break;
		case O_MCAST:
			o.mcast = optarg;
			break;
		case O_DEV:
			o.dev = optarg;
			break;
		case O_UNICAST:
			o.unicast = true;
			break;
		case O_DEADLINE:
			o.deadline_us = num(optarg, 60000000);
			break;
		case O_EARLY:
			o.early_us = num(optarg, 60000000);
			break;
		case O_STIMEO:
			o.send_timeout_us = num(optarg, 60000000);
			break;
		case O_PACE:
			o.pace_mbps = num(optarg, UINT32_MAX);
			break;
		case O_SILENT:
			o.silent = true;
			break;
		case O_LOSS:
			o.expect_loss = true;
			break;
		case O_MISSING:
			parse_missing(optarg);
			break;
		case O_START:
			o.start_round = num(optarg, UINT32_MAX);
			break;
		case O_START_AT:
			o.start_at_ms = num(optarg, 1ull << 60);
			break;
		case O_LINGER:
			o.linger_ms = num(optarg, 600000);
			break;
		case O_PER_ROUND:
			o.per_round = true;
			break;
		case O_STATS:
			o.stats_file = optarg;
			break;
		case O_READY:
			o.ready_file = optarg;
			break;
		case O_GO:
			o.go_file = optarg;
			break;
		case O_GO_ROUND:
			o.go_round = num(optarg, UINT32_MAX);
			o.have_go_round = true;
			break;
		case O_DELAY:
			o.delay_ms = num(optarg, 600000);
			break;
		case O_NETC:
			o.net_counters = true;
			break;
		case O_NETNS:
			o.netns = optarg;
			break;
		case O_STALLS:
			o.watch_stalls = true;
			break;
		case O_SECRET:
			parse_secret(optarg);
			break;
		case O_AUTH:
			o.auth = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !have_comm || o.rank < 0 || o.nranks < 2 ||
	    o.rank >= o.nranks || !o.nsizes || !o.rounds ||
	    !o.mcast != !o.dev)
		usage();
}

static int join(void)
{
	size_t len = sizeof(struct optireduce_join) +
		     o.nranks * sizeof(struct optireduce_addr);
	struct optireduce_join *j = calloc(1, len);
	struct optireduce_addr *a = (struct optireduce_addr *)(j + 1);
	int fd, i;

	fd = optr_socket();
	if (fd < 0)
		die("socket: %s", strerror(errno));
	j->comm = o.comm;
	j->rank = o.rank;
	j->nranks = o.nranks;
	memcpy(j->secret, o.secret, sizeof(j->secret));
	if (o.auth)
		j->flags |= OPTIREDUCE_JOIN_AUTH;
	if (o.mcast) {
		struct in_addr g;

		if (!inet_aton(o.mcast, &g))
			usage();
		j->flags |= OPTIREDUCE_JOIN_MCAST;
		j->group.family = AF_INET;
		j->group.ifindex = if_nametoindex(o.dev);
		if (!j->group.ifindex)
			die("interface %s: %s", o.dev, strerror(errno));
		memcpy(j->group.addr, &g.s_addr, 4);
		j->mcast_ttl = 1;
	}
	for (i = 0; i < o.nranks; i++) {
		a[i].family = AF_INET;
		memcpy(a[i].addr, &o.peers[i], 4);
	}
	if (setsockopt(fd, sol, OPTIREDUCE_JOIN, j, len))
		die("OPTIREDUCE_JOIN: %s", strerror(errno));
	memset(j->secret, 0, sizeof(j->secret));
	free(j);
	if (o.pace_mbps >= 0) {
		__u32 p = o.pace_mbps;

		if (setsockopt(fd, sol, OPTIREDUCE_PACE_MBPS, &p, sizeof(p)))
			die("OPTIREDUCE_PACE_MBPS: %s", strerror(errno));
	}
	return fd;
}

static int cmsg_sendmsg(int fd, int type, const void *req, size_t reqlen,
			void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(64)];
		struct cmsghdr align;
	} ctl = {};
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = CMSG_SPACE(reqlen),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = sol;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(reqlen);
	memcpy(CMSG_DATA(c), req, reqlen);
	return sendmsg(fd, &m, 0);
}

struct post_state {
	uint8_t *buf;
	uint32_t len;
	bool pending;
};

static struct post_state *ps;	/* indexed by source rank */
static uint8_t *txbuf;

static uint32_t size_of_round(uint32_t idx)
{
	return o.sizes[idx % o.nsizes];
}

/* Check one completion record against what was sent. */
static void check_completion(const struct optireduce_completion *c,
			     uint32_t round, uint64_t *last_ns)
{
	const struct optireduce_range *rg = c->ranges;
	struct post_state *p;
	uint64_t miss = 0;
	uint32_t seed, pos = 0, i, k;
	bool last_seen;

	if (c->round != round || c->src >= (uint32_t)o.nranks ||
	    c->src == (uint32_t)o.rank || !ps[c->src].pending ||
	    c->msg != MSG_ID) {
		bad("unexpected completion round %u src %u msg %u (in round %u)",
		    c->round, c->src, c->msg, round);
		return;
	}
	p = &ps[c->src];
	p->pending = false;
	if (c->user_data != ((uint64_t)round << 32 | c->src))
		bad("round %u src %u: user_data %#" PRIx64, round, c->src,
		    (uint64_t)c->user_data);
	if (c->len != p->len)
		bad("round %u src %u: len %u, posted %u", round, c->src,
		    c->len, p->len);
	if (c->nranges != c->nmissing || (c->flags & OPTIREDUCE_COMPL_TRUNC))
		bad("round %u src %u: truncated ranges %u/%u", round, c->src,
		    c->nranges, c->nmissing);
	if (c->rec_len != sizeof(*c) + c->nranges * sizeof(*rg))
		bad("round %u src %u: rec_len %u for %u ranges", round,
		    c->src, c->rec_len, c->nranges);
	if (*last_ns < c->elapsed_ns)
		*last_ns = c->elapsed_ns;

	t.r_ranges += c->nranges;
	switch (c->status) {
	case OPTIREDUCE_COMPLETE:
		t.complete++;
		t.r_complete++;
		break;
	case OPTIREDUCE_EXPIRED:
		t.expired++;
		t.r_expired++;
		break;
	case OPTIREDUCE_EARLY:
		t.early++;
		t.r_early++;
		break;
	case OPTIREDUCE_CANCELLED:
		t.cancelled++;
		break;
	default:
		bad("round %u src %u: status %u", round, c->src, c->status);
	}

	/* Walk the buffer: received stretches must hold the pattern, missing
	 * ranges the sentinel. Ranges ascending, disjoint, non-empty, inside.
	 */
	seed = seed_of(round, c->src, MSG_ID);
	for (k = 0; k <= c->nranges; k++) {
		uint32_t start = k < c->nranges ? rg[k].offset : p->len;
		uint32_t end = k < c->nranges ? rg[k].offset + rg[k].len : p->len;

		if (k < c->nranges &&
		    (!rg[k].len || start < pos || end > p->len || end < start ||
		     (k && start == pos))) {
			bad("round %u src %u: range %u [%u,+%u) after %u, len %u",
			    round, c->src, k, rg[k].offset, rg[k].len, pos,
			    p->len);
			return;
		}
		for (i = pos; i < start; i++) {
			if (p->buf[i] != pattern(seed, i)) {
				bad("round %u src %u: byte %u is %#x, sent %#x",
				    round, c->src, i, p->buf[i],
				    pattern(seed, i));
				break;
			}
		}
		for (i = start; i < end; i++) {
			if (p->buf[i] != SENTINEL) {
				bad("round %u src %u: missing byte %u is %#x",
				    round, c->src, i, p->buf[i]);
				break;
			}
		}
		miss += end - start;
		pos = end;
	}
	if ((uint64_t)c->received + miss != c->len)
		bad("round %u src %u: received %u + missing %" PRIu64
		    " != len %u", round, c->src, c->received, miss, c->len);
	if ((c->status == OPTIREDUCE_COMPLETE) != (c->nmissing == 0))
		bad("round %u src %u: status %u with %u missing ranges",
		    round, c->src, c->status, c->nmissing);
	/* The last fragment arrived iff the last byte is not missing. */
	last_seen = !c->nranges ||
		    rg[c->nranges - 1].offset + rg[c->nranges - 1].len != c->len;
	if (!!(c->flags & OPTIREDUCE_COMPL_LAST_SEEN) != last_seen)
		bad("round %u src %u: LAST_SEEN %d but last byte %s", round,
		    c->src, !!(c->flags & OPTIREDUCE_COMPL_LAST_SEEN),
		    last_seen ? "arrived" : "missing");
	/* MOVED_ON only without the last fragment. */
	if (last_seen && (c->flags & OPTIREDUCE_COMPL_MOVED_ON))
		bad("round %u src %u: MOVED_ON with the last fragment", round,
		    c->src);
	/* The early timeout arms only once every sender was heard from:
	 * without the last fragment, a post ends early because its sender
	 * moved on to a later round or stalled after a first fragment. */
	if (c->status == OPTIREDUCE_EARLY && !last_seen &&
	    !(c->flags & (OPTIREDUCE_COMPL_MOVED_ON | OPTIREDUCE_COMPL_STALLED)))
		bad("round %u src %u: EARLY without the last fragment", round,
		    c->src);
	if ((c->flags & OPTIREDUCE_COMPL_STALLED) &&
	    (c->status != OPTIREDUCE_EARLY || last_seen || !c->received ||
	     (c->flags & OPTIREDUCE_COMPL_MOVED_ON)))
		bad("round %u src %u: STALLED with status %u, %u bytes, flags %#x",
		    round, c->src, c->status, c->received, c->flags);
	/* A deadline timer never fires before the deadline. */
	if (c->status == OPTIREDUCE_EXPIRED && o.deadline_us &&
	    c->elapsed_ns < (uint64_t)o.deadline_us * 1000)
		bad("round %u src %u: EXPIRED after %" PRIu64 " us < deadline %u us",
		    round, c->src, (uint64_t)c->elapsed_ns / 1000, o.deadline_us);
	if (o.expect_missing) {
		bool want = p->len > o.miss_off;
		uint32_t wl = want ? p->len - o.miss_off : 0;

		if (wl > o.miss_len)
			wl = o.miss_len;
		if (want ? c->nranges != 1 || rg[0].offset != o.miss_off ||
			   rg[0].len != wl :
			   c->nranges != 0)
			bad("round %u src %u: missing %u ranges (first [%u,+%u)), expected %s[%u,+%u)",
			    round, c->src, c->nranges,
			    c->nranges ? rg[0].offset : 0,
			    c->nranges ? rg[0].len : 0, want ? "" : "none ",
			    o.miss_off, wl);
	}
	t.bytes += c->len;
	t.received += c->received;
	t.missing += miss;
	t.r_missing += miss;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run_round(int fd, uint32_t idx, uint8_t *cbuf)
{
	uint32_t round = o.start_round + idx, len = size_of_round(idx);
	int src, last = -1, pending = 0;
	uint64_t opened, last_ns = 0, wait_ms;
	struct optireduce_send s = {
		.round = round,
		.msg = MSG_ID,
		.timeout_us = o.send_timeout_us,
	};

	for (src = 0; src < o.nranks; src++)
		if (src != o.rank)
			last = src;
	t.r_missing = t.r_ranges = t.r_complete = t.r_expired = t.r_early = 0;
	opened = now_ns();
	for (src = 0; src < o.nranks; src++) {
		struct optireduce_post p = {
			.round = round,
			.msg = MSG_ID,
			.src = src,
			.flags = src == last ? 0 : OPTIREDUCE_POST_MORE,
			.deadline_us = o.deadline_us,
			.early_us = o.early_us,
			.user_data = (uint64_t)round << 32 | src,
		};

		if (src == o.rank)
			continue;
		ps[src].len = len;
		memset(ps[src].buf, SENTINEL, len);
		if (cmsg_sendmsg(fd, OPTIREDUCE_CMSG_POST, &p, sizeof(p),
				 ps[src].buf, len)) {
			/* The round's deadline runs from its first post: on a
			 * very slow guest it can pass before the last post,
			 * and the round ends without it. Lossy runs count
			 * such a post as refused; others fail.
			 */
			if (errno == ESTALE && o.expect_loss) {
				t.refused++;
				t.refused_bytes += len;
				continue;
			}
			die("POST round %u src %d: %s", round, src,
			    strerror(errno));
		}
		ps[src].pending = true;
		pending++;
		t.posts++;
	}

	if (!o.silent) {
		uint64_t t0, us;

		fill(txbuf, len, round, o.rank);
		t0 = now_ns();
		for (src = 0; src < o.nranks; src++) {
			ssize_t n;

			if (o.unicast) {
				if (src == o.rank)
					continue;
				s.dst = src;
			} else {
				s.dst = OPTIREDUCE_DST_ALL;
			}
			n = cmsg_sendmsg(fd, OPTIREDUCE_CMSG_SEND, &s,
					 sizeof(s), txbuf, len);
			if (n < 0 && errno == ETIMEDOUT && o.expect_loss)
				t.tx_timeouts++;
			else if (n != (ssize_t)len)
				die("SEND round %u dst %d: %zd %s", round,
				    (int)s.dst, n, n < 0 ? strerror(errno) : "");
			t.tx_msgs++;
			if (!o.unicast)
				break;
		}
		us = (now_ns() - t0) / 1000;
		if (!t.tx_rounds++ || us < t.send_min_us)
			t.send_min_us = us;
		if (us > t.send_max_us)
			t.send_max_us = us;
	}

	/* Every post ends by its deadline at the latest: waiting much longer
	 * means a completion was lost, which is a kernel bug.
	 */
	wait_ms = (o.deadline_us ? o.deadline_us : 60000000) / 1000 + 30000;
	while (pending) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct optireduce_completion *c;
		ssize_t n;
		size_t off;
		int r;

		r = poll(&pfd, 1, wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("round %u: %d posts never completed (poll %d)",
			    round, pending, r);
		n = recv(fd, cbuf, COMPL_BUF, MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			continue;	/* POLLIN without a completion */
		if (n < 0)
			die("recv: %s", strerror(errno));
		for (off = 0; off + sizeof(*c) <= (size_t)n; off += c->rec_len) {
			c = (struct optireduce_completion *)(cbuf + off);
			if (c->rec_len < sizeof(*c) || off + c->rec_len > (size_t)n) {
				bad("bad rec_len %u at %zu of %zd", c->rec_len,
				    off, n);
				break;
			}
			if (c->round == round && c->src < (uint32_t)o.nranks &&
			    ps[c->src].pending)
				pending--;
			check_completion(c, round, &last_ns);
		}
		if (off != (size_t)n)
			bad("recv returned %zd bytes, records cover %zu", n, off);
	}
	t.round_us[idx] = last_ns / 1000;
	if ((now_ns() - opened) / 1000 > t.wall_max_us)
		t.wall_max_us = (now_ns() - opened) / 1000;
	if (o.per_round) {
		printf("round %u size %u last_us %" PRIu64 " wall_us %" PRIu64
		       " complete %" PRIu64 " expired %" PRIu64 " early %" PRIu64
		       " missing %" PRIu64 " ranges %" PRIu64 "\n",
		       round, len, last_ns / 1000, (now_ns() - opened) / 1000,
		       t.r_complete, t.r_expired, t.r_early, t.r_missing,
		       t.r_ranges);
		fflush(stdout);	/* the shell may wait for this line */
	}
}

static void report(FILE *f, const char *prefix,
		   const struct optireduce_stats *st, uint64_t p50,
		   uint64_t max, uint64_t min)
{
	const __u64 *v = (const __u64 *)st;
	unsigned int i;

	fprintf(f, "%sresult rank=%d rounds=%d complete=%" PRIu64
		" expired=%" PRIu64 " early=%" PRIu64 " bytes=%" PRIu64
		" received=%" PRIu64 " missing=%" PRIu64 " mismatches=%" PRIu64
		" p50_us=%" PRIu64 " max_us=%" PRIu64 " min_us=%" PRIu64
		" cancelled=%" PRIu64 " posts=%" PRIu64 " tx_msgs=%" PRIu64
		" tx_timeouts=%" PRIu64 " wall_max_us=%" PRIu64
		" send_min_us=%" PRIu64 " send_max_us=%" PRIu64
		" stall_us=%" PRIu64 " refused=%" PRIu64
		" refused_bytes=%" PRIu64 "\n",
		prefix, o.rank, o.rounds, t.complete, t.expired, t.early,
		t.bytes, t.received, t.missing, t.mismatches, p50, max, min,
		t.cancelled, t.posts, t.tx_msgs, t.tx_timeouts,
		t.wall_max_us, t.send_min_us, t.send_max_us,
		stall_max_ns / 1000, t.refused, t.refused_bytes);
	for (i = 0; i < ARRAY_SIZE(stat_names); i++)
		fprintf(f, "%sstat %s %llu\n", prefix, stat_names[i],
			(unsigned long long)v[i]);
}

/*
 * The namespace's counters: "net NAME VALUE" lines of /proc/net/optireduce
 * and the UDP MIB of /proc/net/snmp (a header line of names, then one of
 * values). Read here rather than by the shell: under TCG every extra
 * process costs ~150 ms.
 */
#define MAX_NETC 64
struct netc {
	int n;
	char name[MAX_NETC][80];
	unsigned long long v[MAX_NETC];
};

static void netc_add(struct netc *c, const char *pfx, const char *name,
		     unsigned long long v)
{
	if (c->n == MAX_NETC)
		return;
	snprintf(c->name[c->n], sizeof(c->name[0]), "%s %s", pfx, name);
	c->v[c->n++] = v;
}

static void netc_read(struct netc *c)
{
	char line[1024], hdr[1024] = "", name[64], *a, *b, *sa, *sb;
	unsigned long long v;
	FILE *f;

	c->n = 0;
	f = fopen("/proc/net/optireduce", "r");
	if (!f)
		die("/proc/net/optireduce: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "net %63s %llu", name, &v) == 2)
			netc_add(c, "net", name, v);
	fclose(f);
	/* Datagrams the stack itself dropped (per-CPU input backlog full):
	 * the sum of the second column, global to the system.
	 */
	f = fopen("/proc/net/softnet_stat", "r");
	if (f) {
		unsigned long long total = 0;
		unsigned int processed, dropped;

		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%x %x", &processed, &dropped) == 2)
				total += dropped;
		fclose(f);
		netc_add(c, "sys", "softnet_dropped", total);
	}
	f = fopen("/proc/net/snmp", "r");
	if (!f)
		die("/proc/net/snmp: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Udp: ", 5))
			continue;
		if (!hdr[0]) {
			snprintf(hdr, sizeof(hdr), "%s", line);
			continue;
		}
		a = strtok_r(hdr + 5, " \n", &sa);
		b = strtok_r(line + 5, " \n", &sb);
		while (a && b) {
			netc_add(c, "udp", a, strtoull(b, NULL, 10));
			a = strtok_r(NULL, " \n", &sa);
			b = strtok_r(NULL, " \n", &sb);
		}
		break;
	}
	fclose(f);
}

static struct netc netc_start;

static void netc_print(FILE *out, const char *prefix)
{
	struct netc end;
	int i, j;

	netc_read(&end);
	for (i = 0; i < end.n; i++) {
		unsigned long long base = 0;

		for (j = 0; j < netc_start.n; j++)
			if (!strcmp(netc_start.name[j], end.name[i]))
				base = netc_start.v[j];
		fprintf(out, "%s%s %llu\n", prefix, end.name[i], end.v[i] - base);
	}
}

static void wait_go(void)
{
	int i;

	if (!o.go_file)
		return;
	for (i = 0; access(o.go_file, F_OK); i++) {
		if (i > 120000 / 5)
			die("%s never appeared", o.go_file);
		usleep(5000);
	}
}

/* One rank from start to finish; returns the exit status. */
static int run_peer(const char *prefix)
{
	struct optireduce_stats st = {};
	socklen_t stlen = sizeof(st);
	uint32_t maxlen = 0;
	uint64_t *sorted;
	uint8_t *cbuf;
	int fd, i;

	if (o.netns) {
		char path[256];
		int nfd;

		snprintf(path, sizeof(path), "/run/netns/%s", o.netns);
		nfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nfd < 0 || setns(nfd, CLONE_NEWNET))
			die("netns %s: %s", o.netns, strerror(errno));
		close(nfd);
	}
	sol = optr_sol();
	if (sol < 0 || optr_family() < 0)
		die("module not loaded");
	for (i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > maxlen)
			maxlen = o.sizes[i];
	ps = calloc(o.nranks, sizeof(*ps));
	txbuf = malloc(maxlen);
	cbuf = aligned_alloc(8, COMPL_BUF);
	t.round_us = calloc(o.rounds, sizeof(*t.round_us));
	sorted = calloc(o.rounds, sizeof(*sorted));
	if (!ps || !txbuf || !cbuf || !t.round_us || !sorted)
		die("out of memory");
	for (i = 0; i < o.nranks; i++)
		if (i != o.rank && !(ps[i].buf = malloc(maxlen)))
			die("out of memory");

	fd = join();
	if (o.net_counters)
		netc_read(&netc_start);
	/* A datagram that reaches a namespace before its member joined finds
	 * no socket on the port and is gone (the backlog only helps a member
	 * that joined but has not posted yet). So the shell lets every rank
	 * join, then starts them all.
	 */
	if (o.ready_file) {
		FILE *f = fopen(o.ready_file, "w");

		if (!f)
			die("%s: %s", o.ready_file, strerror(errno));
		fclose(f);
	}
	if (!o.have_go_round)
		wait_go();
	if (o.delay_ms)
		usleep(o.delay_ms * 1000);
	if (o.start_at_ms) {
		struct timespec ts = {
			.tv_sec = o.start_at_ms / 1000,
			.tv_nsec = (o.start_at_ms % 1000) * 1000000,
		};

		while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
	if (o.watch_stalls)
		stall_start();
	for (i = 0; i < o.rounds; i++) {
		if (o.have_go_round && o.start_round + i == o.go_round)
			wait_go();
		run_round(fd, i, cbuf);
	}

	/* Our data for the last round has left, but may still sit in a
	 * delaying qdisc, and a peer that is behind may not have posted for
	 * it yet. Linger so our exit never looks like a loss.
	 */
	stall_end();
	if (o.linger_ms)
		usleep(o.linger_ms * 1000);
	if (getsockopt(fd, sol, OPTIREDUCE_STATS, &st, &stlen) ||
	    stlen != sizeof(st))
		die("OPTIREDUCE_STATS: %s", strerror(errno));
	/* Right after the socket's own counters: both see the same traffic. */
	if (o.net_counters)
		netc_print(stdout, prefix);
	close(fd);

	memcpy(sorted, t.round_us, o.rounds * sizeof(*sorted));
	qsort(sorted, o.rounds, sizeof(*sorted), cmp_u64);
	report(stdout, prefix, &st, sorted[(o.rounds - 1) / 2],
	       sorted[o.rounds - 1], sorted[0]);
	fflush(stdout);
	if (o.stats_file) {
		FILE *f = fopen(o.stats_file, "w");

		if (!f)
			die("%s: %s", o.stats_file, strerror(errno));
		report(f, "", &st, sorted[(o.rounds - 1) / 2],
		       sorted[o.rounds - 1], sorted[0]);
		fclose(f);
	}
	if (t.mismatches)
		return 1;
	if (!o.expect_loss && t.complete != t.posts)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	return run_peer("");
}
