// SPDX-License-Identifier: GPL-2.0
/*
 * Rounds, posts and completions on one host: two ranks of a communicator on
 * 127.0.0.1, plus a raw socket that injects hand-built fragments from the
 * module's port (as members send), so that exactly which bytes arrive is
 * under the test's control. Covers
 * byte-exact delivery, the early-arrival backlog, deadlines, the early
 * timeout, cancel, stale rounds, duplicate and out-of-bounds fragments,
 * truncated completion records, many rounds in flight, poll/epoll, the
 * adaptive estimate, pinned buffers charged to RLIMIT_MEMLOCK, and slab
 * usage over thousands of rounds.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "optr_test.h"
#include "optr_rank.h"

/* Timing tolerance on a slow emulated guest: late by at most this much. */
#define LATE_NS		(400 * 1000 * 1000ULL)
/*
 * The deadline of rounds in tests that are not about deadlines: long
 * enough for the debug kernel (KASAN, lockdep, software emulation), where
 * everything runs tens of times slower.
 */
#define LONG_US		30000000
/* Harness timeout, seconds, of the tests that move the most data. */
#define HEAVY_S		600

FIXTURE(pair) {
	int a, b;		/* ranks 0 and 1 */
	int inject;		/* plain UDP socket */
	__u32 comm;
	struct sockaddr_in port;
};

FIXTURE_SETUP(pair)
{
	self->comm = optr_test_comm_id();
	self->a = optr_socket();
	self->b = optr_socket();
	ASSERT_GE(self->a, 0);
	ASSERT_GE(self->b, 0);
	ASSERT_EQ(0, optr_join_local(self->a, self->comm, 0, 2));
	ASSERT_EQ(0, optr_join_local(self->b, self->comm, 1, 2));
	/* Raw: a plain UDP socket cannot send from the port the module's
	 * socket holds, and the module takes no other source port.
	 */
	self->inject = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
	ASSERT_GE(self->inject, 0);
	self->port.sin_family = AF_INET;
	self->port.sin_port = htons(optr_param("port"));
	self->port.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

FIXTURE_TEARDOWN(pair)
{
	close(self->a);
	close(self->b);
	close(self->inject);
}

/* Inject one fragment "from rank 0 to rank 1" of message (round, msg). */
static void inject(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		   __u32 round, __u32 msg, __u32 off, __u32 len, __u32 total,
		   const __u8 *data)
{
	__u8 pkt[sizeof(struct udphdr) + sizeof(struct optr_test_wire_hdr) +
		 2048];
	struct udphdr *u = (void *)pkt;
	struct optr_test_wire_hdr *h = (void *)(u + 1);
	size_t n = sizeof(*u) + sizeof(*h) + len;

	ASSERT_LE(len, 2048);
	/* Checksum 0: none, which IPv4 allows. */
	u->source = self->port.sin_port;
	u->dest = self->port.sin_port;
	u->len = htons(n);
	u->check = 0;
	memset(h, 0, sizeof(*h));
	h->version = 1;
	h->flags = off + len == total ? OPTR_TEST_WIRE_LAST : 0;
	h->src = htons(0);
	h->dst = htons(1);
	h->comm = htonl(self->comm);
	h->round = htonl(round);
	h->msg = htonl(msg);
	h->offset = htonl(off);
	h->total = htonl(total);
	memcpy(h + 1, data + off, len);
	ASSERT_EQ((ssize_t)n,
		  sendto(self->inject, pkt, n, 0,
			 (struct sockaddr *)&self->port, sizeof(self->port)));
}

static void fill(__u8 *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (seed * 131 + i * 7 + (i >> 11)) & 0x7f;
}

/* Post message msg of round (from rank 0) with a typical round time of
 * hint_us (early_us; it counts on the round's first post). */
static int post_msg_hinted(int fd, __u32 round, __u32 msg, __u32 flags,
			   __u32 deadline_us, __u32 hint_us, void *buf,
			   size_t len)
{
	return optr_post_hinted(fd, round, msg, 0, flags, deadline_us,
				hint_us, 0, buf, len);
}

/* ... message 0 alone, with a 20 s deadline. */
static int post_hinted(int fd, __u32 round, __u32 hint_us, void *buf,
		       size_t len)
{
	return post_msg_hinted(fd, round, 0, 0, 20 * 1000 * 1000, hint_us,
			       buf, len);
}

TEST_F_TIMEOUT(pair, delivers_every_size_byte_exact, HEAVY_S)
{
	static const size_t sizes[] = { 1, 35, 1400, 1500, 9000, 65536,
					100000, 4 << 20 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		__u8 *src = malloc(n), *dst = malloc(n);
		struct optr_compl c;

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		fill(src, n, i);
		memset(dst, 0xaa, n);
		/* Explicit deadline and typical round: the adaptive ones
		 * learn from the small rounds before and would rightly end
		 * the 4 MiB one early or expire it.
		 */
		ASSERT_EQ(0, optr_post_exact(self->b, i + 1, 5, LONG_US,
					     1000 + i, dst, n));
		ASSERT_EQ((ssize_t)n, optr_send(self->a, i + 1, 5, 1, 0, src, n));
		ASSERT_EQ(0, optr_recv_one(self->b, &c, LONG_US / 1000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		EXPECT_EQ((__u32)n, c.h.len);
		EXPECT_EQ((__u32)n, c.h.received);
		EXPECT_EQ(0, c.h.nmissing);
		EXPECT_EQ(1000 + i, c.h.user_data);
		EXPECT_EQ(i + 1, c.h.round);
		EXPECT_EQ(5, c.h.msg);
		EXPECT_EQ(0, c.h.src);
		EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_LAST_SEEN);
		EXPECT_EQ(0, memcmp(src, dst, n)) TH_LOG("size %zu", n);
		free(src);
		free(dst);
	}
}

/* A sender ahead of the receiver: its fragments wait for the post. */
TEST_F(pair, early_fragments_wait_for_their_post)
{
	struct optireduce_stats st;
	__u8 src[20000], dst[20000];
	struct optr_compl c;

	fill(src, sizeof(src), 3);
	ASSERT_EQ((ssize_t)sizeof(src),
		  optr_send(self->a, 1, 0, 1, 0, src, sizeof(src)));
	usleep(50000);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, LONG_US, 0, dst,
			       sizeof(dst)));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, LONG_US / 1000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(0, memcmp(src, dst, sizeof(dst)));
	ASSERT_EQ(0, optr_stats(self->b, &st));
	EXPECT_GT(st.backlog_queued, 0);
}

TEST_F(pair, expires_at_deadline)
{
	__u8 dst[4096];
	struct optr_compl c;
	__u64 t0 = optr_now_ns(), took;

	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 150000, 0, dst,
			       sizeof(dst)));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	took = optr_now_ns() - t0;
	EXPECT_EQ(OPTIREDUCE_EXPIRED, c.h.status);
	EXPECT_EQ(0, c.h.received);
	ASSERT_EQ(1, c.h.nmissing);
	EXPECT_EQ(0, c.r[0].offset);
	EXPECT_EQ(sizeof(dst), c.r[0].len);
	EXPECT_GE(took, 150000000ULL);
	EXPECT_LE(took, 150000000ULL + LATE_NS);
	EXPECT_GE(c.h.elapsed_ns, 150000000ULL);
	TH_LOG("deadline 150 ms, completion after %llu us",
	       (unsigned long long)took / 1000);
}

/*
 * A moved deadline: later, the round waits for a sender that starts late
 * and gets its whole message; earlier, it ends at the new time.
 */
TEST_F(pair, deadline_moved_later)
{
	__u8 src[3000], dst[3000];
	struct optr_compl c;

	fill(src, sizeof(src), 4);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 100000, 0, dst,
			       sizeof(dst)));
	ASSERT_EQ(0, optr_retime(self->b, 1, 2000000));
	usleep(300000);		/* three times the deadline first given */
	ASSERT_EQ((ssize_t)sizeof(src), optr_send(self->a, 1, 0, 1, 0, src,
						  sizeof(src)));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(0, memcmp(src, dst, sizeof(dst)));
}

TEST_F(pair, deadline_moved_earlier)
{
	__u8 dst[4096];
	struct optr_compl c;
	__u64 t0 = optr_now_ns(), took;

	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 30000000, 0, dst,
			       sizeof(dst)));
	ASSERT_EQ(0, optr_retime(self->b, 1, 150000));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	took = optr_now_ns() - t0;
	EXPECT_EQ(OPTIREDUCE_EXPIRED, c.h.status);
	EXPECT_EQ(sizeof(dst), c.r[0].len);
	EXPECT_GE(took, 150000000ULL);
	EXPECT_LE(took, 150000000ULL + LATE_NS);
	/* Ended: there is nothing left to move. */
	EXPECT_EQ(-1, optr_retime(self->b, 1, 1000));
	EXPECT_EQ(ENOENT, errno);
	TH_LOG("deadline 30 s moved to 150 ms, completion after %llu us",
	       (unsigned long long)took / 1000);
}

/* Missing ranges are exactly the bytes that never came. */
TEST_F(pair, reports_exact_missing_ranges)
{
	__u8 src[5000], dst[5000];
	struct optr_compl c;
	unsigned int i;

	fill(src, sizeof(src), 9);
	memset(dst, 0xaa, sizeof(dst));
	ASSERT_EQ(0, optr_post(self->b, 1, 2, 0, 0, 200000, 0, dst,
			       sizeof(dst)));
	/* [0,1000) [1500,2000) [4000,5000) arrive. */
	inject(_metadata, self, 1, 2, 0, 1000, 5000, src);
	inject(_metadata, self, 1, 2, 1500, 500, 5000, src);
	inject(_metadata, self, 1, 2, 4000, 1000, 5000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	/* The last fragment came: the early timeout or the deadline. */
	EXPECT_NE(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(2500, c.h.received);
	ASSERT_EQ(2, c.h.nmissing);
	EXPECT_EQ(1000, c.r[0].offset);
	EXPECT_EQ(500, c.r[0].len);
	EXPECT_EQ(2000, c.r[1].offset);
	EXPECT_EQ(2000, c.r[1].len);
	for (i = 0; i < sizeof(dst); i++) {
		int missing = (i >= 1000 && i < 1500) || (i >= 2000 && i < 4000);

		ASSERT_EQ(missing ? 0xaa : src[i], dst[i]) TH_LOG("byte %u", i);
	}
}

/* Every sender's last fragment in, then idle: the round ends early. */
TEST_F(pair, early_timeout_before_deadline)
{
	__u8 src[3000], dst[3000];
	struct optr_compl c;
	__u64 t0;

	fill(src, sizeof(src), 1);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 10 * 1000 * 1000, 0, dst,
			       sizeof(dst)));
	t0 = optr_now_ns();
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 1, 0, 2000, 1000, 3000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 15000));
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_EQ(2000, c.h.received);
	EXPECT_LT(optr_now_ns() - t0, 5000000000ULL);
	TH_LOG("deadline 10 s, ended early after %llu ms",
	       (unsigned long long)(optr_now_ns() - t0) / 1000000);
}

/*
 * A post that opens its round may say how long such rounds typically take
 * (early_us, the library's moving average): the idle window is
 * early_idle_pct percent of that, not of the socket's own estimate. With a
 * typical time of 8 s the window is long enough to tell apart from the
 * estimate's (the floor, deadline_min_us, for a fresh socket) and still
 * well before the 20 s deadline.
 */
TEST_F(pair, early_timeout_scales_with_the_posts_hint)
{
	const __u64 hint_us = 8 * 1000 * 1000;
	__u8 src[3000], dst[3000];
	long pct = optr_param("early_idle_pct");
	struct optr_compl c;
	__u64 t0, waited;

	ASSERT_GT(pct, 0);
	fill(src, sizeof(src), 1);
	ASSERT_EQ(0, post_hinted(self->b, 1, hint_us, dst, sizeof(dst)));
	t0 = optr_now_ns();
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 1, 0, 2000, 1000, 3000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 25000));
	waited = optr_now_ns() - t0;
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_EQ(2000, c.h.received);
	/* Idle for the window after the last fragment: never sooner. */
	EXPECT_GE(waited, hint_us * 1000 * pct / 100);
	EXPECT_LT(waited, 20000000000ULL);
	TH_LOG("hint %llu ms, early_idle_pct %ld: ended early after %llu ms",
	       (unsigned long long)hint_us / 1000, pct,
	       (unsigned long long)waited / 1000000);
}

/*
 * A sender sends its rounds in order, so a fragment of a later round from
 * it means it sent all it will of this one: here the message's LAST
 * fragment is what got lost, and the round still ends by the early
 * timeout, not at its 10 s deadline. The completion does not claim the
 * last fragment came.
 */
TEST_F(pair, sender_moving_on_ends_round_early)
{
	__u8 src[3000], dst[3000];
	struct optr_compl c;
	__u64 t0, waited;

	fill(src, sizeof(src), 1);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 10 * 1000 * 1000, 0, dst,
			       sizeof(dst)));
	t0 = optr_now_ns();
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 1, 0, 1000, 1000, 3000, src);
	/* Nothing more of round 1 yet: it must wait. */
	EXPECT_EQ(-1, optr_recv_one(self->b, &c, 300));
	inject(_metadata, self, 3, 0, 0, 1000, 3000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 15000));
	waited = optr_now_ns() - t0;
	EXPECT_EQ(1, c.h.round);
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_EQ(2000, c.h.received);
	EXPECT_FALSE(c.h.flags & OPTIREDUCE_COMPL_LAST_SEEN);
	EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_MOVED_ON);
	ASSERT_EQ(1, c.h.nranges);
	EXPECT_EQ(2000, c.r[0].offset);
	EXPECT_EQ(1000, c.r[0].len);
	EXPECT_LT(waited, 5000000000ULL);
	TH_LOG("deadline 10 s; the sender moved on: ended early after %llu ms",
	       (unsigned long long)waited / 1000000);
}

/* ... also when the later round's fragment came before the post. */
TEST_F(pair, post_after_sender_moved_on_ends_early)
{
	__u8 src[3000], dst[3000];
	struct optr_compl c;

	fill(src, sizeof(src), 2);
	inject(_metadata, self, 5, 0, 0, 1000, 3000, src);	/* held */
	ASSERT_EQ(0, optr_post(self->b, 3, 0, 0, 0, 10 * 1000 * 1000, 0, dst,
			       sizeof(dst)));
	inject(_metadata, self, 3, 0, 0, 1000, 3000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 15000));
	EXPECT_EQ(3, c.h.round);
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_EQ(1000, c.h.received);
	EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_MOVED_ON);
	EXPECT_LT(c.h.elapsed_ns, 5000000000ULL);
}

/*
 * After a sender moved on, the round waits a whole typical round of quiet
 * (a path that reorders may still deliver the rest), not the early
 * timeout's usual share of it; and if the last fragment then comes after
 * all, the round is a plain early timeout again. Typical time 2 s here
 * (the post's hint), early_idle_pct of it is the usual window.
 */
TEST_F(pair, moved_on_waits_a_typical_round)
{
	const __u64 hint_us = 2 * 1000 * 1000;
	__u8 src[3000], dst[3000];
	struct optr_compl c;
	__u64 t0, waited;

	fill(src, sizeof(src), 3);
	ASSERT_EQ(0, post_hinted(self->b, 1, hint_us, dst, sizeof(dst)));
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 2, 0, 0, 1000, 3000, src);	/* moved on */
	t0 = optr_now_ns();
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 25000));
	waited = optr_now_ns() - t0;
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_MOVED_ON);
	EXPECT_GE(waited + 50000000ULL, hint_us * 1000);
	EXPECT_LT(waited, 20000000000ULL);
	TH_LOG("typical 2 s: moved-on round ended after %llu ms",
	       (unsigned long long)waited / 1000000);

	/* Round 3: moved on, then the last fragment comes after all. */
	ASSERT_EQ(0, post_hinted(self->b, 3, hint_us, dst, sizeof(dst)));
	inject(_metadata, self, 3, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 4, 0, 0, 1000, 3000, src);	/* moved on */
	inject(_metadata, self, 3, 0, 2000, 1000, 3000, src);	/* LAST */
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 25000));
	EXPECT_EQ(3, c.h.round);
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_LAST_SEEN);
	EXPECT_FALSE(c.h.flags & OPTIREDUCE_COMPL_MOVED_ON);
	EXPECT_EQ(2000, c.h.received);
	EXPECT_LT(c.h.elapsed_ns, hint_us * 1000);
}

/*
 * The LAST fragment lost and the sender not (yet) on to a later round: a
 * message that began to arrive and then fell silent for a whole typical
 * round ends the round early, not at its deadline. The window is the
 * whole typical round (1 s), not early_idle_pct of it: the sender might
 * only be slow.
 */
TEST_F(pair, stalled_sender_waits_a_typical_round)
{
	const __u64 hint_us = 1000 * 1000;
	__u8 src[3000], dst[3000];
	struct optr_compl c;
	__u64 t0, waited;

	fill(src, sizeof(src), 5);
	ASSERT_EQ(0, post_hinted(self->b, 1, hint_us, dst, sizeof(dst)));
	t0 = optr_now_ns();
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 1, 0, 1000, 1000, 3000, src);
	EXPECT_EQ(-1, optr_recv_one(self->b, &c, 500));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 25000));
	waited = optr_now_ns() - t0;
	EXPECT_EQ(OPTIREDUCE_EARLY, c.h.status);
	EXPECT_EQ(2000, c.h.received);
	EXPECT_TRUE(c.h.flags & OPTIREDUCE_COMPL_STALLED);
	EXPECT_FALSE(c.h.flags & OPTIREDUCE_COMPL_LAST_SEEN);
	EXPECT_FALSE(c.h.flags & OPTIREDUCE_COMPL_MOVED_ON);
	EXPECT_GE(waited + 50000000ULL, hint_us * 1000);
	EXPECT_LT(waited, 15000000000ULL);
	TH_LOG("typical 1 s, deadline 20 s: stalled sender's round ended after %llu ms",
	       (unsigned long long)waited / 1000000);
}

/*
 * A message of which nothing came keeps its round on the deadline, even
 * when the round's other message stalled: its sender may be late to start.
 * Once it is heard from (a fragment, or a fragment of a later round), the
 * early timeout takes over. Two messages from rank 0 per round; typical
 * round 200 ms, deadline 1.5 s.
 */
TEST_F(pair, silent_message_keeps_the_deadline)
{
	const __u32 hint_us = 200 * 1000, dl_us = 1500 * 1000;
	__u8 src[3000], d0[3000], d1[3000];
	struct optr_compl c[2];
	unsigned int i;

	fill(src, sizeof(src), 6);
	/* Round 1: message 1 silent throughout. */
	ASSERT_EQ(0, post_msg_hinted(self->b, 1, 0, OPTIREDUCE_POST_MORE,
				     dl_us, hint_us, d0, sizeof(d0)));
	ASSERT_EQ(0, post_msg_hinted(self->b, 1, 1, 0, dl_us, hint_us, d1,
				     sizeof(d1)));
	inject(_metadata, self, 1, 0, 0, 1000, 3000, src);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, optr_recv_one(self->b, &c[i], 10000));
		EXPECT_EQ(OPTIREDUCE_EXPIRED, c[i].h.status);
		EXPECT_GE(c[i].h.elapsed_ns, dl_us * 1000ULL);
		EXPECT_FALSE(c[i].h.flags & OPTIREDUCE_COMPL_STALLED);
	}

	/* Round 3: message 1's LAST fragment alone, message 0 stalled. */
	ASSERT_EQ(0, post_msg_hinted(self->b, 3, 0, OPTIREDUCE_POST_MORE,
				     dl_us, hint_us, d0, sizeof(d0)));
	ASSERT_EQ(0, post_msg_hinted(self->b, 3, 1, 0, dl_us, hint_us, d1,
				     sizeof(d1)));
	inject(_metadata, self, 3, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 3, 1, 2000, 1000, 3000, src);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, optr_recv_one(self->b, &c[i], 10000));
		EXPECT_EQ(3, c[i].h.round);
		EXPECT_EQ(OPTIREDUCE_EARLY, c[i].h.status);
		EXPECT_GE(c[i].h.elapsed_ns + 50000000ULL, hint_us * 1000ULL);
		EXPECT_LT(c[i].h.elapsed_ns, dl_us * 1000ULL);
		EXPECT_EQ(c[i].h.msg == 0,
			  !!(c[i].h.flags & OPTIREDUCE_COMPL_STALLED));
		EXPECT_EQ(c[i].h.msg == 1,
			  !!(c[i].h.flags & OPTIREDUCE_COMPL_LAST_SEEN));
	}

	/* Round 5: message 1 silent until its sender moves on to round 7. */
	ASSERT_EQ(0, post_msg_hinted(self->b, 5, 0, OPTIREDUCE_POST_MORE,
				     dl_us, hint_us, d0, sizeof(d0)));
	ASSERT_EQ(0, post_msg_hinted(self->b, 5, 1, 0, dl_us, hint_us, d1,
				     sizeof(d1)));
	inject(_metadata, self, 5, 0, 0, 1000, 3000, src);
	inject(_metadata, self, 7, 0, 0, 1000, 3000, src);	/* held */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, optr_recv_one(self->b, &c[i], 10000));
		EXPECT_EQ(5, c[i].h.round);
		EXPECT_EQ(OPTIREDUCE_EARLY, c[i].h.status);
		EXPECT_TRUE(c[i].h.flags & OPTIREDUCE_COMPL_MOVED_ON);
		EXPECT_FALSE(c[i].h.flags & OPTIREDUCE_COMPL_STALLED);
		EXPECT_EQ(c[i].h.msg == 0 ? 1000 : 0, c[i].h.received);
		EXPECT_LT(c[i].h.elapsed_ns, dl_us * 1000ULL);
	}
}

TEST_F(pair, early_timeout_off_waits_for_deadline)
{
	__u8 src[3000], dst[3000];
	struct optr_compl c;
	long saved = optr_param("early_idle_pct");

	ASSERT_EQ(0, optr_param_set("early_idle_pct", 0));
	fill(src, sizeof(src), 1);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 300000, 0, dst,
			       sizeof(dst)));
	inject(_metadata, self, 1, 0, 2000, 1000, 3000, src);
	EXPECT_EQ(0, optr_recv_one(self->b, &c, 5000));
	EXPECT_EQ(OPTIREDUCE_EXPIRED, c.h.status);
	EXPECT_GE(c.h.elapsed_ns, 300000000ULL);
	optr_param_set("early_idle_pct", saved);
}

TEST_F(pair, cancel)
{
	__u8 dst[100];
	struct optr_compl c;

	ASSERT_EQ(0, optr_post(self->b, 7, 0, 0, 0, 0, 0, dst, sizeof(dst)));
	ASSERT_EQ(0, optr_cancel(self->b, 7));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 1000));
	EXPECT_EQ(OPTIREDUCE_CANCELLED, c.h.status);
	EXPECT_EQ(-1, optr_cancel(self->b, 7));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(pair, stale_and_duplicate_fragments)
{
	struct optireduce_stats before, after;
	__u8 src[2000], dst[2000];
	struct optr_compl c;

	fill(src, sizeof(src), 4);
	ASSERT_EQ(0, optr_post(self->b, 5, 0, 0, 0, LONG_US, 0, dst, sizeof(dst)));
	ASSERT_EQ(0, optr_stats(self->b, &before));
	inject(_metadata, self, 5, 0, 0, 1000, 2000, src);
	inject(_metadata, self, 5, 0, 0, 1000, 2000, src);	/* duplicate */
	inject(_metadata, self, 5, 0, 0, 1000, 3000, src);	/* wrong total */
	inject(_metadata, self, 5, 0, 1000, 1000, 2000, src);
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(0, memcmp(src, dst, sizeof(dst)));
	/* Round 5 is over: round 4 and 5 are stale now. */
	inject(_metadata, self, 4, 0, 0, 1000, 2000, src);
	inject(_metadata, self, 5, 0, 0, 1000, 2000, src);
	usleep(100000);
	ASSERT_EQ(0, optr_stats(self->b, &after));
	EXPECT_EQ(before.rx_duplicate + 1, after.rx_duplicate);
	EXPECT_EQ(before.drop_out_of_bounds + 1, after.drop_out_of_bounds);
	EXPECT_EQ(before.drop_stale_round + 2, after.drop_stale_round);
	EXPECT_EQ(before.rx_bytes + 2000, after.rx_bytes);
	/* And a post for an older round is refused. */
	EXPECT_EQ(-1, optr_post(self->b, 4, 0, 0, 0, 0, 0, dst, sizeof(dst)));
	EXPECT_EQ(ESTALE, errno);
}

/*
 * A datagram right in every field but its source port, as any program on
 * a member's host can send: dropped as foreign, and the post waits for
 * the member's own.
 */
TEST_F(pair, foreign_source_port)
{
	__u8 pkt[sizeof(struct optr_test_wire_hdr) + 1000], dst[1000];
	struct optr_test_wire_hdr *h = (void *)pkt;
	struct optireduce_stats before, after;
	struct optr_compl c;
	int plain = socket(AF_INET, SOCK_DGRAM, 0);

	ASSERT_GE(plain, 0);
	fill(pkt + sizeof(*h), 1000, 9);
	memset(h, 0, sizeof(*h));
	h->version = 1;
	h->flags = OPTR_TEST_WIRE_LAST;
	h->src = htons(0);
	h->dst = htons(1);
	h->comm = htonl(self->comm);
	h->round = htonl(6);
	h->offset = htonl(0);
	h->total = htonl(1000);
	memset(dst, 0xaa, sizeof(dst));
	ASSERT_EQ(0, optr_post(self->b, 6, 0, 0, 0, LONG_US, 0, dst,
			       sizeof(dst)));
	ASSERT_EQ(0, optr_stats(self->b, &before));
	ASSERT_EQ((ssize_t)sizeof(pkt),
		  sendto(plain, pkt, sizeof(pkt), 0,
			 (struct sockaddr *)&self->port, sizeof(self->port)));
	EXPECT_EQ(-1, optr_recv_one(self->b, &c, 300));
	ASSERT_EQ(0, optr_stats(self->b, &after));
	EXPECT_EQ(before.drop_foreign_source + 1, after.drop_foreign_source);
	EXPECT_EQ(before.rx_bytes, after.rx_bytes);
	inject(_metadata, self, 6, 0, 0, 1000, 1000, pkt + sizeof(*h));
	ASSERT_EQ(0, optr_recv_one(self->b, &c, 5000));
	EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	EXPECT_EQ(0, memcmp(pkt + sizeof(*h), dst, sizeof(dst)));
	close(plain);
}

TEST_F(pair, post_rules)
{
	__u8 dst[100];

	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, OPTIREDUCE_POST_MORE, 0, 0,
			       dst, sizeof(dst)));
	EXPECT_EQ(-1, optr_post(self->b, 1, 0, 0, 0, 0, 0, dst, sizeof(dst)));
	EXPECT_EQ(EEXIST, errno);
	ASSERT_EQ(0, optr_post(self->b, 1, 1, 0, 0, 0, 0, dst, sizeof(dst)));
	/* Sealed: the post without POST_MORE was the last. */
	EXPECT_EQ(-1, optr_post(self->b, 1, 2, 0, 0, 0, 0, dst, sizeof(dst)));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(pair, max_rounds_enforced)
{
	long saved = optr_param("max_rounds");
	__u8 dst[16];
	int r;

	ASSERT_EQ(0, optr_param_set("max_rounds", 4));
	for (r = 1; r <= 4; r++)
		ASSERT_EQ(0, optr_post(self->b, r, 0, 0, 0, 0, 0, dst,
				       sizeof(dst)));
	EXPECT_EQ(-1, optr_post(self->b, 5, 0, 0, 0, 0, 0, dst, sizeof(dst)));
	EXPECT_EQ(ENOBUFS, errno);
	optr_param_set("max_rounds", saved);
}

/*
 * A posted buffer stays pinned until its completion is read: pages the
 * poster has locked, charged to its RLIMIT_MEMLOCK when it lacks
 * CAP_IPC_LOCK. A child that is uid 65534 (no capabilities) with a
 * 64 KiB limit posts on the fixture's socket: one 32 KiB post fits (8
 * pages, charged as 10, as MSG_ZEROCOPY charges), a second does not
 * (ENOMEM) while the first is pending, and does once the first's
 * completion was read. Exit status: the step that failed.
 */
static int memlock_child(int fd)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	size_t len = 32 << 10;
	struct optr_compl c;
	__u8 *buf;

	buf = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setgid(65534) || setuid(65534))
		return 10;
	if (optr_post(fd, 1, 0, 0, 0, LONG_US, 0, buf, len))
		return 11;
	if (optr_post(fd, 2, 0, 0, 0, LONG_US, 0, buf + len, len) != -1 ||
	    errno != ENOMEM)
		return 12;
	/* Still charged while the completion waits to be read. */
	if (optr_cancel(fd, 1) ||
	    optr_post(fd, 2, 0, 0, 0, LONG_US, 0, buf + len, len) != -1 ||
	    errno != ENOMEM)
		return 13;
	if (optr_recv_one(fd, &c, 5000) || c.h.round != 1)
		return 14;
	if (optr_post(fd, 2, 0, 0, 0, LONG_US, 0, buf + len, len))
		return 15;
	if (optr_cancel(fd, 2) || optr_recv_one(fd, &c, 5000) ||
	    c.h.round != 2)
		return 16;
	return 0;
}

TEST_F(pair, pins_count_against_memlock)
{
	int st;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(memlock_child(self->b));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

/* 64 rounds open at once, sent in reverse order, all complete. */
TEST_F_TIMEOUT(pair, many_rounds_in_flight, HEAVY_S)
{
	enum { ROUNDS = 64, LEN = 3000 };
	static __u8 src[ROUNDS][LEN], dst[ROUNDS][LEN];
	struct optr_compl c;
	int r, done = 0;

	for (r = 0; r < ROUNDS; r++) {
		fill(src[r], LEN, r);
		ASSERT_EQ(0, optr_post(self->b, 100 + r, 0, 0, 0, LONG_US, r,
				       dst[r], LEN));
	}
	for (r = ROUNDS - 1; r >= 0; r--)
		ASSERT_EQ(LEN, optr_send(self->a, 100 + r, 0, 1, 0, src[r],
					 LEN));
	while (done < ROUNDS) {
		ASSERT_EQ(0, optr_recv_one(self->b, &c, LONG_US / 1000));
		EXPECT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
		done++;
	}
	for (r = 0; r < ROUNDS; r++)
		EXPECT_EQ(0, memcmp(src[r], dst[r], LEN)) TH_LOG("round %d", r);
}

/* A small buffer: one record, its ranges cut, flagged both ways. */
TEST_F(pair, truncated_completion_record)
{
	__u8 src[4000], dst[4000];
	char buf[sizeof(struct optireduce_completion) +
		 2 * sizeof(struct optireduce_range)];
	struct optireduce_completion *c = (void *)buf;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int i;

	fill(src, sizeof(src), 2);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, 200000, 0, dst,
			       sizeof(dst)));
	/* Every other 500 bytes: four holes. */
	for (i = 0; i < 8; i += 2)
		inject(_metadata, self, 1, 0, (i + 1) * 500, 500, 4000, src);
	ASSERT_TRUE(optr_wait_readable(self->b, 5000));
	ASSERT_EQ((ssize_t)sizeof(buf), recvmsg(self->b, &m, 0));
	EXPECT_TRUE(m.msg_flags & MSG_TRUNC);
	EXPECT_TRUE(c->flags & OPTIREDUCE_COMPL_TRUNC);
	EXPECT_EQ(4, c->nmissing);
	EXPECT_EQ(2, c->nranges);
	EXPECT_EQ(sizeof(buf), c->rec_len);
	EXPECT_EQ(0, c->ranges[0].offset);
	EXPECT_EQ(1000, c->ranges[1].offset);
	/* Too small for even a record. */
	iov.iov_len = sizeof(*c) - 1;
	EXPECT_EQ(-1, recvmsg(self->b, &m, MSG_DONTWAIT));
	EXPECT_EQ(EINVAL, errno);
}

/* Several completions come out of one recvmsg, each record walkable. */
TEST_F(pair, batched_completions)
{
	__u8 src[100], dst[3][100];
	char buf[4096];
	ssize_t n, off = 0;
	int r, seen = 0;

	fill(src, sizeof(src), 0);
	for (r = 0; r < 3; r++) {
		ASSERT_EQ(0, optr_post(self->b, r + 1, 0, 0, 0, LONG_US, 0,
				       dst[r], 100));
		ASSERT_EQ(100, optr_send(self->a, r + 1, 0, 1, 0, src, 100));
	}
	/* All three are ready once the last one is. */
	ASSERT_TRUE(optr_wait_readable(self->b, LONG_US / 1000));
	usleep(100000);
	n = recv(self->b, buf, sizeof(buf), MSG_DONTWAIT);
	ASSERT_EQ(3 * (ssize_t)sizeof(struct optireduce_completion), n);
	while (off < n) {
		struct optireduce_completion *c = (void *)(buf + off);

		EXPECT_EQ(OPTIREDUCE_COMPLETE, c->status);
		off += c->rec_len;
		seen++;
	}
	EXPECT_EQ(3, seen);
	EXPECT_EQ(-1, recv(self->b, buf, sizeof(buf), MSG_DONTWAIT));
	EXPECT_EQ(EAGAIN, errno);
}

TEST_F(pair, poll_and_epoll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	__u8 src[10] = { 1 }, dst[10];
	struct pollfd pfd = { .fd = self->b, .events = POLLIN | POLLOUT };
	int ep = epoll_create1(0);

	ASSERT_GE(ep, 0);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->b, &ev));
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLOUT, pfd.revents);
	ASSERT_EQ(0, optr_post(self->b, 1, 0, 0, 0, LONG_US, 0, dst, sizeof(dst)));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 50));
	ASSERT_EQ(10, optr_send(self->a, 1, 0, 1, 0, src, sizeof(src)));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 5000));
	EXPECT_TRUE(out.events & EPOLLIN);
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	close(ep);
}

TEST_F(pair, stats_and_estimate)
{
	struct optireduce_estimate est;
	struct optireduce_stats st;
	socklen_t len = sizeof(est);
	__u8 src[1000], dst[1000];
	struct optr_compl c;
	int r;

	fill(src, sizeof(src), 5);
	/* Explicit deadlines: an adaptive one could legitimately expire a
	 * round if this process is descheduled between post and send.
	 */
	for (r = 1; r <= 10; r++) {
		ASSERT_EQ(0, optr_post(self->b, r, 0, 0, 0, LONG_US, 0, dst,
				       sizeof(dst)));
		ASSERT_EQ(1000, optr_send(self->a, r, 0, 1, 0, src, 1000));
		ASSERT_EQ(0, optr_recv_one(self->b, &c, LONG_US / 1000));
	}
	ASSERT_EQ(0, getsockopt(self->b, optr_sol(), OPTIREDUCE_ESTIMATE, &est,
				&len));
	EXPECT_EQ(10, est.samples);
	EXPECT_GE(est.deadline_us, optr_param("deadline_min_us"));
	EXPECT_LE(est.deadline_us, optr_param("deadline_max_us"));
	EXPECT_GE(est.deadline_us, est.typical_us);
	ASSERT_EQ(0, optr_stats(self->b, &st));
	EXPECT_EQ(10, st.rounds_opened);
	EXPECT_EQ(10, st.rounds_completed);
	EXPECT_EQ(10000, st.rx_bytes);
	EXPECT_EQ(0, st.bytes_lost);
	ASSERT_EQ(0, optr_stats(self->a, &st));
	EXPECT_EQ(10000, st.tx_bytes);
	EXPECT_EQ(0, st.tx_dropped);
}

/* Closing with rounds, posts, backlog and completions pending is clean
 * (the runner checks the kernel log; kmemleak does in the debug lane).
 */
TEST_F(pair, close_with_everything_in_flight)
{
	__u8 src[3000], dst[8][3000];
	int r;

	fill(src, sizeof(src), 0);
	for (r = 0; r < 8; r++)
		ASSERT_EQ(0, optr_post(self->b, r + 1, 0, 0, 0, 0, 0, dst[r],
				       sizeof(dst[r])));
	ASSERT_EQ(3000, optr_send(self->a, 1, 0, 1, 0, src, 3000));
	ASSERT_EQ(3000, optr_send(self->a, 50, 0, 1, 0, src, 3000));
	usleep(50000);
	close(self->b);
	self->b = optr_socket();
}

/* Thousands of rounds leave slab usage where it was. */
TEST_F_TIMEOUT(pair, slab_flat_over_many_rounds, HEAVY_S)
{
	enum { WARM = 300, ROUNDS = 3000 };
	__u8 src[200], dst[200];
	struct optr_compl c;
	long before, after;
	int r;

	fill(src, sizeof(src), 0);
	for (r = 1; r <= WARM + ROUNDS; r++) {
		if (r == WARM + 1)
			before = optr_meminfo_kb("Slab:");
		ASSERT_EQ(0, optr_post(self->b, r, 0, 0, 0, LONG_US, 0, dst,
				       sizeof(dst)));
		ASSERT_EQ(200, optr_send(self->a, r, 0, 1, 0, src, 200));
		ASSERT_EQ(0, optr_recv_one(self->b, &c, LONG_US / 1000));
		ASSERT_EQ(OPTIREDUCE_COMPLETE, c.h.status);
	}
	after = optr_meminfo_kb("Slab:");
	TH_LOG("slab %ld kB before, %ld kB after %d rounds", before, after,
	       ROUNDS);
	/* KASAN holds freed objects in a quarantine, so slab grows there by
	 * design; that kernel runs kmemleak after the tests instead.
	 */
	if (!access("/sys/kernel/debug/kasan", F_OK) ||
	    !access("/sys/kernel/debug/kmemleak", F_OK))
		SKIP(return, "KASAN kernel: kmemleak checks for leaks instead");
	EXPECT_LT(after - before, 1024);
}

TEST_HARNESS_MAIN
