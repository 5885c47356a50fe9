// SPDX-License-Identifier: GPL-2.0
/*
 * The batched send path (kmod/send.c) on its own: three ranks on
 * 127.0.0.1 in a private network namespace whose loopback has an MTU of
 * 1500, so that a message leaves as UDP GSO batches of 1436-byte
 * fragments (as over a LAN) rather than as 64 KiB datagrams. Covers
 * sizes around the fragment, batch and page-fragment boundaries from
 * user buffers at odd alignments, fan-out to every peer from one buffer,
 * scatter sends (one part per rank), and the contract that a buffer may
 * be rewritten and unmapped as soon
 * as the send returns without changing what the peers receive; and that a
 * send that must not wait gives way to one in progress (EAGAIN, POLLOUT).
 * Each case runs plain and with authenticated datagrams.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

#define LONG_US		30000000
#define HEAVY_S		600
#define MTU		1500
/* Payload per datagram: MTU - IPv4 - UDP - wire header (send.c). */
#define FRAG		(MTU - 20 - 8 - 36)
#define BIG		(4 << 20)
#define DIV_UP(n, d)	(((n) + (d) - 1) / (d))

FIXTURE(lo1500) {
	int fd[3];		/* ranks 0, 1, 2 */
	__u32 comm;
	__u32 round;
};

/* Every case twice: plain, and with authenticated datagrams, whose tag
 * each send path (linear, batched, piecewise) writes as it copies.
 */
FIXTURE_VARIANT(lo1500) {
	bool auth;
};

FIXTURE_VARIANT_ADD(lo1500, plain) {
	.auth = false,
};

FIXTURE_VARIANT_ADD(lo1500, auth) {
	.auth = true,
};

/* Payload per datagram of the variant: a tag takes its room. */
static size_t frag_of(const FIXTURE_VARIANT(lo1500) *v)
{
	return FRAG - (v->auth ? OPTIREDUCE_AUTH_TAG_LEN : 0);
}

FIXTURE_SETUP(lo1500)
{
	int i;

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, optr_lo_up_mtu(MTU));
	__u8 secret[OPTIREDUCE_SECRET_LEN];

	self->comm = optr_test_comm_id();
	self->round = 1;
	for (i = 0; i < OPTIREDUCE_SECRET_LEN; i++)
		secret[i] = self->comm >> (i % 4 * 8) ^ (0x5a + i);
	for (i = 0; i < 3; i++) {
		self->fd[i] = optr_socket();
		ASSERT_GE(self->fd[i], 0);
		ASSERT_EQ(0, optr_join_flags(self->fd[i], self->comm, i, 3,
					     NULL, NULL, 0,
					     variant->auth ? secret : NULL,
					     variant->auth ?
					     OPTIREDUCE_JOIN_AUTH : 0));
	}
}

FIXTURE_TEARDOWN(lo1500)
{
	int i;

	for (i = 0; i < 3; i++)
		close(self->fd[i]);
}

/* Bytes < 0x80 that depend on position and seed (never the 0xaa fill). */
static void fill(__u8 *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (seed * 131 + i * 7 + (i >> 12)) & 0x7f;
}

/* Index of the first byte of @p that is not fill()'s, or -1. */
static long check(const __u8 *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != ((seed * 131 + i * 7 + (i >> 12)) & 0x7f))
			return (long)i;
	return -1;
}

/*
 * Rank 0 sends the @len bytes of @iov to @dst (a rank or
 * OPTIREDUCE_DST_ALL); every receiving rank has posted a buffer first.
 * @after, if set, runs as soon as the send returned, on the first
 * iovec. Each receiver must then hold exactly fill(@seed).
 */
static void one_round_iov(struct __test_metadata *_metadata,
			  FIXTURE_DATA(lo1500) *self, const struct iovec *iov,
			  int iovcnt, size_t len, __u32 dst, unsigned int seed,
			  void (*after)(const __u8 *src, size_t len))
{
	__u32 round = self->round++;
	__u8 *dstbuf[3] = {};
	struct optr_compl c;
	int r;

	for (r = 1; r < 3; r++) {
		if (dst != OPTIREDUCE_DST_ALL && (__u32)r != dst)
			continue;
		dstbuf[r] = malloc(len);
		ASSERT_NE(NULL, dstbuf[r]);
		memset(dstbuf[r], 0xaa, len);
		ASSERT_EQ(0, optr_post_exact(self->fd[r], round, 7, LONG_US,
					     round, dstbuf[r], len));
	}
	ASSERT_EQ((ssize_t)len, optr_sendv(self->fd[0], round, 7, dst, LONG_US,
					   iov, iovcnt));
	if (after)
		after(iov[0].iov_base, iov[0].iov_len);
	for (r = 1; r < 3; r++) {
		if (!dstbuf[r])
			continue;
		ASSERT_EQ(0, optr_recv_one(self->fd[r], &c, LONG_US / 1000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		EXPECT_EQ(len, c.h.received);
		EXPECT_EQ(-1, check(dstbuf[r], len, seed)) {
			TH_LOG("rank %d, %zu bytes: first bad byte at %ld", r,
			       len, check(dstbuf[r], len, seed));
		}
		free(dstbuf[r]);
	}
}

/* The same from one buffer. */
static void one_round(struct __test_metadata *_metadata,
		      FIXTURE_DATA(lo1500) *self, const __u8 *src, size_t len,
		      __u32 dst, unsigned int seed,
		      void (*after)(const __u8 *src, size_t len))
{
	struct iovec iov = { (void *)src, len };

	one_round_iov(_metadata, self, &iov, 1, len, dst, seed, after);
}

TEST_F_TIMEOUT(lo1500, batches_byte_exact_at_odd_alignments, HEAVY_S)
{
	/* Around one fragment, one batch (tx_segs), and the 32 KiB pages of
	 * the send path's fragment cache.
	 */
	static const size_t sizes[] = { 1, FRAG - 1, FRAG, FRAG + 1,
					32768 + 5, 43 * FRAG, 43 * FRAG + 1,
					64 * FRAG + 3, 100003, (1 << 20) + 7 };
	static const size_t aligns[] = { 0, 1, 37, 4095 };
	struct optireduce_stats st0, st1;
	long long batches = optr_net_counter("rx_gso_batches");
	__u64 frags = 0, bytes = 0;
	unsigned int i, j, seed = 0;
	__u8 *base;

	ASSERT_LE(0, batches);
	base = malloc(BIG + 4096);
	ASSERT_NE(NULL, base);
	ASSERT_EQ(0, optr_stats(self->fd[0], &st0));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
			__u8 *src = base + aligns[j];

			fill(src, sizes[i], ++seed);
			one_round(_metadata, self, src, sizes[i], 1, seed, NULL);
			frags += DIV_UP(sizes[i], frag_of(variant));
			bytes += sizes[i];
		}
	}
	fill(base + 4093, BIG, ++seed);
	one_round(_metadata, self, base + 4093, BIG, 1, seed, NULL);
	frags += DIV_UP(BIG, frag_of(variant));
	bytes += BIG;

	/* Every fragment counted once, and batches really left whole. */
	ASSERT_EQ(0, optr_stats(self->fd[0], &st1));
	EXPECT_EQ(frags, st1.tx_packets - st0.tx_packets);
	EXPECT_EQ(bytes, st1.tx_bytes - st0.tx_bytes);
	EXPECT_EQ(0, st1.tx_dropped - st0.tx_dropped);
	EXPECT_LT(batches, optr_net_counter("rx_gso_batches"));
	free(base);
}

TEST_F_TIMEOUT(lo1500, fan_out_from_one_unaligned_buffer, HEAVY_S)
{
	static const size_t sizes[] = { FRAG + 1, 100003, BIG - 1 };
	unsigned int i;
	__u8 *base = malloc(BIG + 64);

	ASSERT_NE(NULL, base);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill(base + 3, sizes[i], 100 + i);
		one_round(_metadata, self, base + 3, sizes[i],
			  OPTIREDUCE_DST_ALL, 100 + i, NULL);
	}
	free(base);
}

/* Rewrite the buffer, then take it away from the process altogether. */
static void scribble_unmap(const __u8 *src, size_t len)
{
	uintptr_t page = (uintptr_t)src & ~(uintptr_t)4095;
	size_t span = ((uintptr_t)src + len + 4095 - page) & ~(size_t)4095;

	memset((void *)src, 0x55, len);
	munmap((void *)page, span);
}

TEST_F_TIMEOUT(lo1500, buffer_reusable_when_send_returns, HEAVY_S)
{
	static const size_t sizes[] = { 16384, 65536 + 11, BIG };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t map = sizes[i] + 2 * 4096;
		__u8 *m = mmap(NULL, map, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		ASSERT_NE(MAP_FAILED, m);
		fill(m + 17, sizes[i], 200 + i);
		one_round(_metadata, self, m + 17, sizes[i],
			  i == 1 ? OPTIREDUCE_DST_ALL : 1, 200 + i,
			  scribble_unmap);
		/* What scribble_unmap left mapped (the tail page). */
		munmap(m, map);
	}
}

/*
 * A message gathered from many iovecs, of lengths that end inside
 * fragments, batches and pages, each in its own place: the send path takes
 * the pages under a batch a stretch at a time (kmod/txsrc.c), and a
 * stretch ends where an iovec does.
 */
TEST_F_TIMEOUT(lo1500, gathered_from_many_iovecs, HEAVY_S)
{
	static const size_t lens[] = { 1, 7, FRAG - 1, 4095, FRAG + 3, 70001,
				       3, 2 * FRAG, 65536, 12289, 5 };
	enum { N = sizeof(lens) / sizeof(lens[0]) };
	struct iovec iov[N];
	size_t len = 0, off = 0;
	__u8 *msg, *scatter, *at;
	int k;

	for (k = 0; k < N; k++)
		len += lens[k];
	msg = malloc(len);
	scatter = malloc(len + 20 * N);
	ASSERT_NE(NULL, msg);
	ASSERT_NE(NULL, scatter);
	fill(msg, len, 300);
	at = scatter + len + 20 * N;
	for (k = 0; k < N; k++) {
		/* Apart from each other, at odd alignments, in reverse. */
		at -= lens[k] + 13 + k % 5;
		memcpy(at, msg + off, lens[k]);
		iov[k].iov_base = at;
		iov[k].iov_len = lens[k];
		off += lens[k];
	}
	one_round_iov(_metadata, self, iov, N, len, 1, 300, NULL);
	one_round_iov(_metadata, self, iov, N, len, OPTIREDUCE_DST_ALL, 300,
		      NULL);
	free(scatter);
	free(msg);
}

/* A buffer the sender may read but not write is sent as any other. */
TEST_F_TIMEOUT(lo1500, read_only_buffer, HEAVY_S)
{
	size_t map = (1 << 20) + 4096;
	__u8 *m = mmap(NULL, map, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, m);
	fill(m + 99, 1 << 20, 400);
	ASSERT_EQ(0, mprotect(m, map, PROT_READ));
	one_round(_metadata, self, m + 99, 1 << 20, 1, 400, NULL);
	munmap(m, map);
}

/*
 * Pages pinned and unpinned since boot (/proc/vmstat), read in one pass:
 * outstanding pins are their difference. The counters sit partly in
 * per-CPU buckets, folded in every second or so (a read could show more
 * unpinned than pinned): stat_refresh folds them first. 0, or -1.
 */
static int pins(long long *acquired, long long *released)
{
	char key[64];
	long long v;
	int found = 0, fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	FILE *f;

	if (fd < 0 || write(fd, "1", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2) {
		if (!strcmp(key, "nr_foll_pin_acquired")) {
			*acquired = v;
			found |= 1;
		} else if (!strcmp(key, "nr_foll_pin_released")) {
			*released = v;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -1;
}

/*
 * Outstanding pins, once they are back to @base or fewer: the guest's own
 * I/O (virtiofs) pins pages for a moment too, so wait up to 2 s for it.
 */
static long long pins_settled(long long base)
{
	long long acq = 0, rel = 0;
	int i;

	for (i = 0; i < 200; i++) {
		if (pins(&acq, &rel))
			return -1;
		if (acq - rel <= base)
			break;
		usleep(10000);
	}
	return acq - rel;
}

/*
 * A buffer that runs into memory the sender cannot read, in the middle
 * of a batch, of a later batch, or of a later iovec: -EFAULT, every page
 * the send path pinned is unpinned again, and the socket goes on sending.
 * Every fragment of the message is counted once, sent or dropped: the
 * batch that faulted is dropped whole, also the fragments of it that
 * were built before the fault.
 */
TEST_F_TIMEOUT(lo1500, fault_mid_message_is_efault, HEAVY_S)
{
	/* Readable bytes ahead of the hole, per case. */
	static const size_t good[] = { 5000, 300000, 4096 };
	size_t map = 512 * 1024;
	__u8 *m = mmap(NULL, 2 * map, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long pinned, unpinned, outstanding;
	unsigned int i;

	ASSERT_NE(MAP_FAILED, m);
	memset(m, 1, map);
	ASSERT_EQ(0, mprotect(m + map, map, PROT_NONE));
	ASSERT_EQ(0, pins(&pinned, &unpinned));
	outstanding = pinned - unpinned;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct iovec iov[2] = {
			{ m + map - good[i], good[i] + 8192 },
			{ m + map, 4096 },
		};
		int cnt = i == 2 ? 2 : 1;
		size_t len = i == 2 ? good[i] + 4096 : good[i] + 8192;
		struct optireduce_stats st0, st1;

		if (i == 2)
			iov[0].iov_len = good[i];
		ASSERT_EQ(0, optr_stats(self->fd[0], &st0));
		errno = 0;
		EXPECT_EQ(-1, optr_sendv(self->fd[0], self->round++, 7, 1,
					 LONG_US, iov, cnt));
		EXPECT_EQ(EFAULT, errno);
		ASSERT_EQ(0, optr_stats(self->fd[0], &st1));
		EXPECT_EQ(DIV_UP(len, frag_of(variant)),
			  st1.tx_packets - st0.tx_packets +
			  st1.tx_dropped - st0.tx_dropped);
		EXPECT_LE(st1.tx_bytes - st0.tx_bytes, good[i]);
	}
	EXPECT_GE(outstanding, pins_settled(outstanding));
	fill(m, 200000, 500);
	one_round(_metadata, self, m, 200000, 1, 500, NULL);
	munmap(m, 2 * map);
}

/*
 * A send that must not wait (MSG_DONTWAIT, O_NONBLOCK) while another send
 * holds the socket fails with EAGAIN and sends nothing; poll reports the
 * socket not writable then, and writable again, waking the poller, once
 * the other send is done. The long send is paced: 2 MiB at 4 Mbit/s, about
 * four seconds.
 */
#define PACED_MBPS	4
#define PACED_LEN	(2 << 20)

TEST_F_TIMEOUT(lo1500, dontwait_send_behind_a_long_one, HEAVY_S)
{
	struct optr_long_send ls = {
		.fd = self->fd[0], .round = self->round++, .msg = 7, .dst = 1,
		.len = PACED_LEN,
	};
	__u8 *big = malloc(PACED_LEN), *got = malloc(PACED_LEN);
	__u8 small[64], small_got[64];
	__u32 v = PACED_MBPS;
	struct optr_compl c;
	int fl;

	ASSERT_NE(NULL, big);
	ASSERT_NE(NULL, got);
	fill(big, PACED_LEN, 3);
	fill(small, sizeof(small), 4);
	ls.buf = big;
	ASSERT_EQ(0, setsockopt(self->fd[0], optr_sol(), OPTIREDUCE_PACE_MBPS,
				&v, sizeof(v)));
	ASSERT_EQ(0, optr_post_exact(self->fd[1], ls.round, 7, LONG_US, 1,
				     got, PACED_LEN));
	ASSERT_EQ(0, optr_post_exact(self->fd[2], ls.round, 8, LONG_US, 2,
				     small_got, sizeof(small)));
	EXPECT_TRUE(optr_pollout(self->fd[0], 0));	/* idle */
	ASSERT_EQ(0, optr_long_send_start(&ls));

	EXPECT_EQ(-1, optr_send_flags(self->fd[0], ls.round, 8, 2, LONG_US,
				      small, sizeof(small), MSG_DONTWAIT));
	EXPECT_EQ(EAGAIN, errno);
	fl = fcntl(self->fd[0], F_GETFL);
	ASSERT_EQ(0, fcntl(self->fd[0], F_SETFL, fl | O_NONBLOCK));
	EXPECT_EQ(-1, optr_send(self->fd[0], ls.round, 8, 2, LONG_US, small,
				sizeof(small)));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, fcntl(self->fd[0], F_SETFL, fl));
	/* Neither sent a byte: rank 2's post is still waiting. */
	EXPECT_EQ(-1, optr_recv_one(self->fd[2], &c, 0));

	/* The long send's end wakes a poller. */
	EXPECT_TRUE(optr_pollout(self->fd[0], LONG_US / 1000));
	EXPECT_EQ(PACED_LEN, optr_long_send_join(&ls));
	EXPECT_EQ((ssize_t)sizeof(small),
		  optr_send_flags(self->fd[0], ls.round, 8, 2, LONG_US, small,
				  sizeof(small), MSG_DONTWAIT));

	ASSERT_EQ(0, optr_recv_one(self->fd[1], &c, LONG_US / 1000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(PACED_LEN, c.h.received);
	EXPECT_EQ(-1, check(got, PACED_LEN, 3));
	ASSERT_EQ(0, optr_recv_one(self->fd[2], &c, LONG_US / 1000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(sizeof(small), c.h.received);
	EXPECT_EQ(-1, check(small_got, sizeof(small), 4));
	free(big);
	free(got);
}

/*
 * A fan-out interleaves its copies batch by batch, round the ring from the
 * sender: rank 1 sends to rank 2 and rank 0 at once, rank 2's batch first
 * in each turn (owners fanning out together then load every receiver's
 * port alike). Paced so that one copy alone would take ORDER_MS and cut at
 * its timeout, 1.5 times that: both peers got three quarters of the
 * message, rank 2 at most one batch (one fragment at this rate) ahead,
 * however slow the guest (slower leaves both with less). Copies one after
 * the other would have left rank 2 the whole message and rank 0 half.
 */
#define ORDER_MBPS	10
#define ORDER_LEN	(256 << 10)
#define ORDER_MS	(ORDER_LEN * 8 / ORDER_MBPS / 1000)
#define ORDER_AHEAD	(16 << 10)	/* what rank 2 may lead by */

/* A scatter send of the three ranks' @parts, one iovec each. */
static ssize_t optr_scatter(int fd, __u32 round, __u32 msg, __u32 timeout_us,
			    const struct iovec *parts)
{
	struct optireduce_send s = {
		.round = round, .msg = msg, .dst = OPTIREDUCE_DST_ALL,
		.flags = OPTIREDUCE_SEND_SCATTER, .timeout_us = timeout_us,
	};

	return optr_ctlv(fd, OPTIREDUCE_CMSG_SEND, &s, sizeof(s), parts, 3);
}

/*
 * Rank 1 sends ranks 2 and 0 ORDER_LEN bytes each at ORDER_MBPS, cut at its
 * timeout: a fan-out of one buffer, or with @scatter a scatter send of a
 * part each. Both got some of theirs, rank 2 at most ORDER_AHEAD ahead.
 */
static void interleaved_case(struct __test_metadata *_metadata,
			     FIXTURE_DATA(lo1500) *self, bool scatter)
{
	__u32 round = self->round++, v = ORDER_MBPS;
	__u8 *src = malloc(3 * ORDER_LEN), *got[3] = {};
	__u32 received[3] = {};
	struct iovec parts[3];
	struct optr_compl c;
	ssize_t sent;
	int r;

	ASSERT_NE(NULL, src);
	ASSERT_EQ(0, setsockopt(self->fd[1], optr_sol(), OPTIREDUCE_PACE_MBPS,
				&v, sizeof(v)));
	for (r = 0; r < 3; r++) {
		parts[r] = (struct iovec){ src + r * ORDER_LEN, ORDER_LEN };
		fill(parts[r].iov_base, ORDER_LEN, 20 + r);
	}
	for (r = 0; r < 3; r += 2) {
		got[r] = malloc(ORDER_LEN);
		ASSERT_NE(NULL, got[r]);
		/* From rank 1. */
		ASSERT_EQ(0, optr_post_hinted(self->fd[r], round, 7, 1, 0,
					      ORDER_MS * 4000, ORDER_MS * 4000,
					      r, got[r], ORDER_LEN));
	}
	if (scatter)
		sent = optr_scatter(self->fd[1], round, 7, ORDER_MS * 1500,
				    parts);
	else
		sent = optr_send(self->fd[1], round, 7, OPTIREDUCE_DST_ALL,
				 ORDER_MS * 1500, src, ORDER_LEN);
	EXPECT_EQ(-1, sent);
	EXPECT_EQ(ETIMEDOUT, errno);
	for (r = 0; r < 3; r += 2) {
		ASSERT_EQ(0, optr_recv_one(self->fd[r], &c, LONG_US / 1000));
		received[r] = c.h.received;
		/* What came is the rank's own part (a fan-out: part 0). */
		EXPECT_EQ(-1, check(got[r], received[r], scatter ? 20 + r : 20));
		free(got[r]);
	}
	TH_LOG("rank 2 got %u bytes, rank 0 %u of %d", received[2],
	       received[0], ORDER_LEN);
	EXPECT_GT(received[0], 0);
	EXPECT_LT(received[2], ORDER_LEN);
	EXPECT_GE(received[2], received[0]);
	EXPECT_LE(received[2], received[0] + ORDER_AHEAD);
	free(src);
}

TEST_F_TIMEOUT(lo1500, fan_out_interleaved, HEAVY_S)
{
	interleaved_case(_metadata, self, false);
}


/*
 * A scatter send: rank 1's three iovecs are one part per rank; rank 0 and
 * rank 2 each receive their own part, byte-exact, as the same message,
 * from odd alignments and of lengths around the fragment, and rank 1's
 * own part goes nowhere (tx counts only the two parts' fragments). An
 * empty part sends nothing to its rank: its post is still pending.
 */
TEST_F_TIMEOUT(lo1500, scatter_one_part_per_rank, HEAVY_S)
{
	static const size_t lens[][2] = {
		{ 1, 100003 }, { FRAG, FRAG + 1 }, { 64 * FRAG + 3, 7 },
	};
	__u8 *src = malloc(3 * 200000), *got[3] = {};
	struct optireduce_stats st0, st1;
	struct optr_compl c;
	unsigned int i;
	int r;

	ASSERT_NE(NULL, src);
	for (r = 0; r < 3; r += 2) {
		got[r] = malloc(200000);
		ASSERT_NE(NULL, got[r]);
	}
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		__u32 round = self->round++;
		struct iovec parts[3] = {
			{ src + 1, lens[i][0] },
			{ src + 200000, 5000 },	/* our own: ignored */
			{ src + 400037, lens[i][1] },
		};
		__u64 frags = 0;

		for (r = 0; r < 3; r += 2) {
			fill(parts[r].iov_base, parts[r].iov_len, 10 * i + r);
			memset(got[r], 0xaa, parts[r].iov_len);
			/* From rank 1, the whole deadline to come. */
			ASSERT_EQ(0, optr_post_hinted(self->fd[r], round, 7, 1,
						      0, LONG_US, LONG_US, r,
						      got[r],
						      parts[r].iov_len));
			frags += DIV_UP(parts[r].iov_len, frag_of(variant));
		}
		ASSERT_EQ(0, optr_stats(self->fd[1], &st0));
		ASSERT_EQ((ssize_t)(lens[i][0] + 5000 + lens[i][1]),
			  optr_scatter(self->fd[1], round, 7, LONG_US, parts));
		ASSERT_EQ(0, optr_stats(self->fd[1], &st1));
		EXPECT_EQ(frags, st1.tx_packets - st0.tx_packets);
		for (r = 0; r < 3; r += 2) {
			ASSERT_EQ(0, optr_recv_one(self->fd[r], &c,
						   LONG_US / 1000));
			EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
			EXPECT_EQ(parts[r].iov_len, c.h.received);
			EXPECT_EQ(-1, check(got[r], parts[r].iov_len,
					    10 * i + r)) {
				TH_LOG("rank %d, part of %zu bytes: first bad byte at %ld",
				       r, parts[r].iov_len,
				       check(got[r], parts[r].iov_len,
					     10 * i + r));
			}
		}
	}

	/* Nothing for rank 0: only rank 2 gets a message. */
	{
		__u32 round = self->round++;
		struct iovec parts[3] = {
			{ src, 0 }, { src, 0 }, { src + 400037, 3000 },
		};

		fill(parts[2].iov_base, 3000, 99);
		for (r = 0; r < 3; r += 2)
			ASSERT_EQ(0, optr_post_hinted(self->fd[r], round, 7, 1,
						      0, LONG_US, LONG_US, r,
						      got[r], 3000));
		ASSERT_EQ(3000, optr_scatter(self->fd[1], round, 7, LONG_US,
					     parts));
		ASSERT_EQ(0, optr_recv_one(self->fd[2], &c, LONG_US / 1000));
		EXPECT_EQ(3000, c.h.received);
		EXPECT_EQ(-1, check(got[2], 3000, 99));
		EXPECT_NE(0, optr_recv_one(self->fd[0], &c, 200));
		ASSERT_EQ(0, optr_cancel(self->fd[0], round));
		ASSERT_EQ(0, optr_recv_one(self->fd[0], &c, LONG_US / 1000));
		EXPECT_EQ(0, c.h.received);
	}
	for (r = 0; r < 3; r += 2)
		free(got[r]);
	free(src);
}

/*
 * A scatter send's parts leave interleaved as a fan-out's copies do: paced
 * so that one part alone would take ORDER_MS, cut at 1.5 times that, both
 * peers got part of theirs, rank 2 (next round the ring) at most
 * ORDER_AHEAD more than rank 0. Parts sent one after the other would have
 * left rank 2 all of its part and rank 0 half.
 */
TEST_F_TIMEOUT(lo1500, scatter_interleaved, HEAVY_S)
{
	interleaved_case(_metadata, self, true);
}

/*
 * The send pages come from a pool that falls back to single pages when a
 * 32 KiB one is not to be had (kmod/txpool.c). A batch then spreads over
 * many more page fragments than an skb holds at MTU 1500; it must end
 * early and the next batch take over, not fail the send. The debug
 * kernel's fail_page_alloc makes every allocation of order 3 (32 KiB) or
 * more by this thread fail while it sends (task-filter, make-it-fail);
 * "times" counts down the failures it injected.
 */
#define FAILPA		"/sys/kernel/debug/fail_page_alloc/"

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return ok ? 0 : -1;
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

TEST_F_TIMEOUT(lo1500, single_page_pool, HEAVY_S)
{
	static const char *const setup[][2] = {
		{ FAILPA "verbose", "0" },
		{ FAILPA "min-order", "3" },
		{ FAILPA "ignore-gfp-wait", "N" },
		{ FAILPA "ignore-gfp-highmem", "N" },
		{ FAILPA "task-filter", "Y" },
		{ FAILPA "interval", "1" },
		{ FAILPA "times", "1000000" },
		{ FAILPA "probability", "100" },
	};
	__u8 *msg, *got[3] = {};
	__u32 round = self->round++;
	struct optr_compl c;
	int r, send_errno;
	ssize_t sent;
	long left;
	size_t i;

	if (access(FAILPA "probability", W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (access(FAILPA "probability", W_OK))
		SKIP(return, "no fail_page_alloc (the debug kernel has it)");
	msg = malloc(BIG);
	ASSERT_NE(NULL, msg);
	fill(msg, BIG, 500);
	for (r = 1; r < 3; r++) {
		got[r] = malloc(BIG);
		ASSERT_NE(NULL, got[r]);
		memset(got[r], 0xaa, BIG);
		ASSERT_EQ(0, optr_post_exact(self->fd[r], round, 7, LONG_US,
					     round, got[r], BIG));
	}
	for (i = 0; i < ARRAY_SIZE(setup); i++)
		ASSERT_EQ(0, write_str(setup[i][0], setup[i][1])) {
			TH_LOG("%s", setup[i][0]);
		}
	ASSERT_EQ(0, write_str("/proc/thread-self/make-it-fail", "1"));
	sent = optr_send(self->fd[0], round, 7, OPTIREDUCE_DST_ALL, LONG_US,
			 msg, BIG);
	send_errno = errno;
	write_str("/proc/thread-self/make-it-fail", "0");
	left = read_long(FAILPA "times");
	write_str(FAILPA "probability", "0");
	write_str(FAILPA "task-filter", "N");
	EXPECT_EQ(BIG, sent) {
		TH_LOG("send: %s", strerror(send_errno));
	}
	/* The pool's first 32 KiB pages were among the failures. */
	EXPECT_LT(left, 1000000);
	EXPECT_GE(left, 0);
	for (r = 1; r < 3; r++) {
		ASSERT_EQ(0, optr_recv_one(self->fd[r], &c, LONG_US / 1000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		EXPECT_EQ(BIG, c.h.received);
		EXPECT_EQ(-1, check(got[r], BIG, 500));
		free(got[r]);
	}
	free(msg);
}

TEST_HARNESS_MAIN
