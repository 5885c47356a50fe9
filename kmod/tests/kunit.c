// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for the module's pure logic: header parsing, received-range
 * bookkeeping, the adaptive deadline rule, reading skbs, the datagram
 * tag, and rate control's feedback encoding, AIMD step and path moves.
 * Built into optireduce.ko when the kernel has CONFIG_KUNIT (the debug
 * kernel), and run at load time; results appear in dmesg as KTAP and in
 * debugfs under kunit/.
 */

#include <kunit/test.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <uapi/linux/optireduce.h>

#include "../auth.h"
#include "../estimate.h"
#include "../ranges.h"
#include "../rate.h"
#include "../skbwalk.h"
#include "../wire.h"

/* ---- wire ---- */

static void optr_frag_fill(struct optr_frag *f, u32 off, u32 len, u32 total)
{
	*f = (struct optr_frag) {
		.comm = 7, .round = 9, .msg = 3, .offset = off, .len = len,
		.total = total, .src = 1, .dst = 2,
		.flags = off + len == total ? OPTR_WIRE_LAST : 0,
	};
}

static void wire_roundtrip(struct kunit *test)
{
	struct optr_wire_hdr h;
	struct optr_frag f, g;

	optr_frag_fill(&f, 100, 50, 150);
	f.hint_us = 1234;
	f.feedback = 0x8a0b0c00;
	optr_wire_build(&h, &f);
	KUNIT_ASSERT_EQ(test, OPTR_WIRE_OK,
			optr_wire_parse(&h, sizeof(h) + 50, &g));
	KUNIT_EXPECT_EQ(test, g.comm, 7U);
	KUNIT_EXPECT_EQ(test, g.round, 9U);
	KUNIT_EXPECT_EQ(test, g.msg, 3U);
	KUNIT_EXPECT_EQ(test, g.offset, 100U);
	KUNIT_EXPECT_EQ(test, g.len, 50U);
	KUNIT_EXPECT_EQ(test, g.total, 150U);
	KUNIT_EXPECT_EQ(test, g.hint_us, 1234U);
	KUNIT_EXPECT_EQ(test, g.feedback, 0x8a0b0c00U);
	KUNIT_EXPECT_EQ(test, g.src, 1);
	KUNIT_EXPECT_EQ(test, g.dst, 2);
	KUNIT_EXPECT_EQ(test, g.flags, OPTR_WIRE_LAST);
}

/* With the AUTH flag the last OPTR_WIRE_TAG_LEN bytes are not payload. */
static void wire_auth_tag_room(struct kunit *test)
{
	struct optr_wire_hdr h;
	struct optr_frag f, g;

	optr_frag_fill(&f, 100, 50, 150);
	f.flags |= OPTR_WIRE_AUTH;
	optr_wire_build(&h, &f);
	KUNIT_ASSERT_EQ(test, OPTR_WIRE_OK,
			optr_wire_parse(&h, sizeof(h) + 50 + OPTR_WIRE_TAG_LEN,
					&g));
	KUNIT_EXPECT_EQ(test, g.len, 50U);
	KUNIT_EXPECT_EQ(test, g.flags, OPTR_WIRE_LAST | OPTR_WIRE_AUTH);
	/* The tag taken for payload: the LAST flag no longer fits. */
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 50, &g));
	/* A tag and nothing else. */
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + OPTR_WIRE_TAG_LEN, &g));
}

static void wire_malformed(struct kunit *test)
{
	struct optr_wire_hdr h;
	struct optr_frag f, g;

	optr_frag_fill(&f, 0, 10, 20);
	optr_wire_build(&h, &f);
	/* No payload, or shorter than a header. */
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h), &g));
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED, optr_wire_parse(&h, 3, &g));
	/* Version, unknown flags. */
	h.version = 2;
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	optr_wire_build(&h, &f);
	h.flags = 0x80;
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	/* LAST on a fragment that does not end the message, and missing
	 * on one that does.
	 */
	f.flags = OPTR_WIRE_LAST;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	optr_frag_fill(&f, 10, 10, 20);
	f.flags = 0;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	/* Zero total, ranks out of range, multicast flag vs destination. */
	optr_frag_fill(&f, 0, 10, 10);
	f.total = 0;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_NE(test, OPTR_WIRE_OK,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	optr_frag_fill(&f, 0, 10, 10);
	f.src = OPTIREDUCE_MAX_RANKS;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	optr_frag_fill(&f, 0, 10, 10);
	f.dst = OPTR_WIRE_DST_ALL;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_MALFORMED,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	f.flags |= OPTR_WIRE_MCAST;
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_OK,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
}

static void wire_bounds(struct kunit *test)
{
	struct optr_wire_hdr h;
	struct optr_frag f, g;

	/* Payload past the end of the message. */
	optr_frag_fill(&f, 15, 10, 20);
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_OUT_OF_BOUNDS,
			optr_wire_parse(&h, sizeof(h) + 10, &g));
	/* Offset at the end, and offset + len wrapping 32 bits. */
	optr_frag_fill(&f, 20, 1, 20);
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_OUT_OF_BOUNDS,
			optr_wire_parse(&h, sizeof(h) + 1, &g));
	optr_frag_fill(&f, 0xfffffff0U, 0x20, 0x7fffffff);
	optr_wire_build(&h, &f);
	KUNIT_EXPECT_EQ(test, OPTR_WIRE_OUT_OF_BOUNDS,
			optr_wire_parse(&h, sizeof(h) + 0x20, &g));
}

/* ---- ranges ---- */

static void ranges_check(struct kunit *test, struct optr_ranges *r, u32 total,
			 const struct optireduce_range *want, u32 nwant)
{
	struct optireduce_range got[8];
	u32 i, n = optr_ranges_missing(r, total, got, ARRAY_SIZE(got));

	KUNIT_ASSERT_EQ(test, n, nwant);
	for (i = 0; i < n && i < ARRAY_SIZE(got); i++) {
		KUNIT_EXPECT_EQ(test, got[i].offset, want[i].offset);
		KUNIT_EXPECT_EQ(test, got[i].len, want[i].len);
	}
}

static void ranges_in_order(struct kunit *test)
{
	struct optr_ranges r;
	u32 off;

	KUNIT_ASSERT_EQ(test, 0, optr_ranges_init(&r, 1, GFP_KERNEL));
	for (off = 0; off < 10000; off += 100)
		KUNIT_EXPECT_EQ(test, 100L,
				optr_ranges_add(&r, off, off + 100, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, 1U);
	KUNIT_EXPECT_EQ(test, r.covered, 10000U);
	ranges_check(test, &r, 10000, NULL, 0);
	optr_ranges_free(&r);
}

static void ranges_holes_and_merges(struct kunit *test)
{
	static const struct optireduce_range holes[] = {
		{ 0, 10 }, { 20, 10 }, { 40, 60 },
	};
	static const struct optireduce_range after[] = { { 0, 10 }, { 50, 50 } };
	struct optr_ranges r;

	KUNIT_ASSERT_EQ(test, 0, optr_ranges_init(&r, 1, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, 10L, optr_ranges_add(&r, 30, 40, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, 10L, optr_ranges_add(&r, 10, 20, GFP_KERNEL));
	ranges_check(test, &r, 100, holes, ARRAY_SIZE(holes));
	/* Fill the gap between the two spans and overlap both: 10 new. */
	KUNIT_EXPECT_EQ(test, 10L, optr_ranges_add(&r, 15, 35, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, 1U);
	/* Pure duplicate, then an adjacent extension. */
	KUNIT_EXPECT_EQ(test, 0L, optr_ranges_add(&r, 12, 38, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, 10L, optr_ranges_add(&r, 40, 50, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, 1U);
	KUNIT_EXPECT_EQ(test, r.covered, 40U);
	ranges_check(test, &r, 100, after, ARRAY_SIZE(after));
	/* Empty or inverted adds change nothing. */
	KUNIT_EXPECT_EQ(test, 0L, optr_ranges_add(&r, 60, 60, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, 0L, optr_ranges_add(&r, 70, 60, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.covered, 40U);
	optr_ranges_free(&r);
}

/*
 * Fragments sent backwards, each opening a span: refused past the cap,
 * while extending a span still works.
 */
static void ranges_span_cap(struct kunit *test)
{
	struct optr_ranges r;
	u32 i, top = 2 * (OPTR_RANGES_MAX + 8);

	KUNIT_ASSERT_EQ(test, 0, optr_ranges_init(&r, 1, GFP_KERNEL));
	for (i = 0; i < OPTR_RANGES_MAX; i++)
		KUNIT_ASSERT_EQ(test, 1L, optr_ranges_add(&r, top - 2 * i - 2,
							  top - 2 * i - 1,
							  GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, (u32)OPTR_RANGES_MAX);
	KUNIT_EXPECT_EQ(test, r.cap, (u32)OPTR_RANGES_MAX);
	KUNIT_EXPECT_EQ(test, (long)-ENOSPC,
			optr_ranges_add(&r, 0, 1, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, (u32)OPTR_RANGES_MAX);
	KUNIT_EXPECT_EQ(test, r.covered, (u32)OPTR_RANGES_MAX);
	/* Joining the two top spans: one fewer, the next new one fits. */
	KUNIT_EXPECT_EQ(test, 1L, optr_ranges_add(&r, top - 3, top - 2,
						  GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, (u32)OPTR_RANGES_MAX - 1);
	KUNIT_EXPECT_EQ(test, 1L, optr_ranges_add(&r, 0, 1, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, r.n, (u32)OPTR_RANGES_MAX);
	optr_ranges_free(&r);
}

/* Random fragments against a byte map: covered and missing agree. */
static void ranges_random(struct kunit *test)
{
	enum { TOTAL = 4096 };
	struct optireduce_range *miss;
	struct optr_ranges r;
	u8 *map;
	u32 i, n, bytes = 0, holes = 0;
	u32 seed = 12345;

	map = kunit_kzalloc(test, TOTAL, GFP_KERNEL);
	miss = kunit_kcalloc(test, TOTAL, sizeof(*miss), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, map);
	KUNIT_ASSERT_NOT_NULL(test, miss);
	KUNIT_ASSERT_EQ(test, 0, optr_ranges_init(&r, 1, GFP_KERNEL));
	for (i = 0; i < 300; i++) {
		u32 s, l, b, fresh = 0;

		seed = seed * 1103515245 + 12345;
		s = (seed >> 8) % TOTAL;
		seed = seed * 1103515245 + 12345;
		l = 1 + (seed >> 8) % 64;
		l = min(l, TOTAL - s);
		for (b = s; b < s + l; b++) {
			fresh += !map[b];
			map[b] = 1;
		}
		KUNIT_EXPECT_EQ(test, (long)fresh,
				optr_ranges_add(&r, s, s + l, GFP_KERNEL));
	}
	for (i = 0; i < TOTAL; i++) {
		bytes += map[i];
		holes += !map[i] && (i == 0 || map[i - 1]);
	}
	KUNIT_EXPECT_EQ(test, r.covered, bytes);
	n = optr_ranges_missing(&r, TOTAL, miss, TOTAL);
	KUNIT_EXPECT_EQ(test, n, holes);
	for (i = 0; i < n && i < TOTAL; i++) {
		u32 b;

		for (b = miss[i].offset; b < miss[i].offset + miss[i].len; b++)
			KUNIT_EXPECT_EQ(test, map[b], 0);
	}
	optr_ranges_free(&r);
}

/* ---- estimator ---- */

static void estimate_rule(struct kunit *test)
{
	struct optr_est_rule rule = {
		.pctl = 95, .margin_pct = 25, .min_us = 1000, .max_us = 2000000,
	};
	struct optr_estimator e = {};
	u32 typical, i;

	/* No samples: the upper bound, and it is also "typical". */
	KUNIT_EXPECT_EQ(test, 2000000U, optr_est_deadline(&e, &rule, &typical));
	KUNIT_EXPECT_EQ(test, 2000000U, typical);

	/* 1..100 ms: p95 is 95 ms, plus 25%. */
	for (i = 1; i <= 100; i++)
		optr_est_add(&e, i * 1000);
	KUNIT_EXPECT_EQ(test, e.n, (u32)OPTR_EST_SAMPLES);
	/* Only the last 64 samples (37..100 ms) count: nearest rank 61. */
	KUNIT_EXPECT_EQ(test, 97000U, optr_est_percentile(&e, 95));
	KUNIT_EXPECT_EQ(test, 121250U, optr_est_deadline(&e, &rule, &typical));
	KUNIT_EXPECT_EQ(test, 97000U, typical);

	/* Clamped at both ends. */
	rule.margin_pct = 1000;
	rule.max_us = 500000;
	KUNIT_EXPECT_EQ(test, 500000U, optr_est_deadline(&e, &rule, NULL));
	memset(&e, 0, sizeof(e));
	optr_est_add(&e, 10);
	KUNIT_EXPECT_EQ(test, 1000U, optr_est_deadline(&e, &rule, NULL));
	/* p100 of one sample is that sample; p50 of two the lower. */
	optr_est_add(&e, 30);
	KUNIT_EXPECT_EQ(test, 30U, optr_est_percentile(&e, 100));
	KUNIT_EXPECT_EQ(test, 10U, optr_est_percentile(&e, 50));
}

/* ---- skb walk ---- */

/*
 * An skb of 100 linear bytes and three frags: 9000 bytes across the
 * subpages of a compound page, 3000 of a single page, and 5000 more of
 * the compound page. Every byte is distinct modulo 251.
 */
static struct sk_buff *skbwalk_skb(struct kunit *test)
{
	static const struct { int big; u32 off, len; } fr[] = {
		{ 1, 1000, 9000 }, { 0, 17, 3000 }, { 1, 10000, 5000 },
	};
	struct page *big = alloc_pages(GFP_KERNEL | __GFP_COMP, 2);
	struct page *small = alloc_page(GFP_KERNEL);
	struct sk_buff *skb = alloc_skb(100, GFP_KERNEL);
	u32 i, pos = 0;
	u8 *head;

	KUNIT_ASSERT_NOT_NULL(test, big);
	KUNIT_ASSERT_NOT_NULL(test, small);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	head = skb_put(skb, 100);
	for (i = 0; i < 100; i++)
		head[i] = pos++ % 251;
	for (i = 0; i < ARRAY_SIZE(fr); i++) {
		struct page *pg = fr[i].big ? big : small;
		u8 *base = page_address(pg);
		u32 b;

		for (b = 0; b < fr[i].len; b++)
			base[fr[i].off + b] = pos++ % 251;
		get_page(pg);
		skb_fill_page_desc(skb, i, pg, fr[i].off, fr[i].len);
		skb->len += fr[i].len;
		skb->data_len += fr[i].len;
		skb->truesize += fr[i].len;
	}
	put_page(big);
	put_page(small);
	return skb;
}

/* A pseudo-random range [*o, *o + *n) of @len bytes, at most @max long. */
static void skbwalk_pick(u32 *seed, u32 len, u32 max, u32 *o, u32 *n)
{
	*seed = *seed * 1103515245 + 12345;
	*o = (*seed >> 8) % len;
	*seed = *seed * 1103515245 + 12345;
	*n = 1 + (*seed >> 8) % min(len - *o, max);
}

/* Reads forward in datagram-like steps, then behind, then past the end. */
static void skbwalk_reads(struct kunit *test)
{
	static const u32 steps[] = { 36, 1436, 1, 4095, 36, 7000, 2 };
	struct sk_buff *skb = skbwalk_skb(test);
	u32 seed = 777, off = 0, k = 0, i;
	struct optr_skb_walk w;
	u8 *got, *want;

	got = kunit_kmalloc(test, skb->len, GFP_KERNEL);
	want = kunit_kmalloc(test, skb->len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, got);
	KUNIT_ASSERT_NOT_NULL(test, want);
	for (i = 0; i < skb->len; i++)
		want[i] = i % 251;
	optr_skb_walk_init(&w, skb);
	while (off < skb->len) {
		u32 n = min(steps[k++ % ARRAY_SIZE(steps)], skb->len - off);

		KUNIT_ASSERT_EQ(test, 0, optr_skb_walk_copy(&w, off, got + off, n));
		off += n;
	}
	KUNIT_EXPECT_EQ(test, 0, memcmp(got, want, skb->len));

	for (i = 0; i < 200; i++) {
		u32 o, n;

		skbwalk_pick(&seed, skb->len, 5000, &o, &n);
		memset(got, 0, n);
		KUNIT_ASSERT_EQ(test, 0, optr_skb_walk_copy(&w, o, got, n));
		KUNIT_EXPECT_EQ(test, 0, memcmp(got, want + o, n));
	}

	KUNIT_EXPECT_NE(test, 0, optr_skb_walk_copy(&w, skb->len - 1, got, 2));
	KUNIT_EXPECT_NE(test, 0, optr_skb_walk_copy(&w, U32_MAX, got, 1));
	kfree_skb(skb);
}

/*
 * The tag of bytes read where they lie in the skb's head and frags
 * (optr_skb_walk_mac) is the tag of the same bytes in one flat buffer;
 * optr_auth_verify() takes a datagram whose last bytes are that tag and
 * refuses it with any byte changed.
 */
static void skbwalk_mac(struct kunit *test)
{
	struct sk_buff *skb = skbwalk_skb(test);
	u8 key[OPTR_AUTH_KEY_LEN], secret[OPTIREDUCE_SECRET_LEN] = { 1, 2 };
	u8 got[OPTR_WIRE_TAG_LEN], want[OPTR_WIRE_TAG_LEN];
	struct optr_blake2s_state st;
	struct optr_skb_walk w;
	u32 seed = 4242, i;
	u8 *flat;

	flat = kunit_kmalloc(test, skb->len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, flat);
	for (i = 0; i < skb->len; i++)
		flat[i] = i % 251;
	optr_auth_key(key, secret);
	optr_skb_walk_init(&w, skb);
	for (i = 0; i < 50; i++) {
		u32 o, n;

		skbwalk_pick(&seed, skb->len, 9000, &o, &n);
		optr_auth_mac_init(&st, key);
		KUNIT_ASSERT_EQ(test, 0, optr_skb_walk_mac(&w, o, n, &st));
		blake2s_final(&st, got);
		optr_auth_tag(key, flat + o, n, want);
		KUNIT_EXPECT_EQ(test, 0, memcmp(got, want, sizeof(got)));
	}
	optr_auth_mac_init(&st, key);
	KUNIT_EXPECT_NE(test, 0, optr_skb_walk_mac(&w, skb->len - 1, 2, &st));
	memzero_explicit(&st, sizeof(st));

	/* A datagram at 100 whose tag is right, then one byte changed. */
	optr_auth_tag(key, flat + 100, 5000, want);
	KUNIT_ASSERT_EQ(test, 0, skb_store_bits(skb, 5100, want, sizeof(want)));
	KUNIT_EXPECT_TRUE(test, optr_auth_verify(key, &w, 100,
						 5000 + sizeof(want)));
	flat[4321] ^= 0x20;
	KUNIT_ASSERT_EQ(test, 0, skb_store_bits(skb, 4321, &flat[4321], 1));
	KUNIT_EXPECT_FALSE(test, optr_auth_verify(key, &w, 100,
						  5000 + sizeof(want)));
	kfree_skb(skb);
}

/* ---- datagram tag ---- */

/*
 * Known answers, from another BLAKE2s (Python's hashlib: the key is
 * blake2s(label, key=secret, digest_size=32), the tag blake2s(data,
 * key=key, digest_size=16)), for secret 0..31 and data 0..99.
 */
static void auth_known_answer(struct kunit *test)
{
	static const u8 want_key[OPTR_AUTH_KEY_LEN] = {
		0xbe, 0xe2, 0xb2, 0x23, 0xae, 0x1f, 0x9c, 0x37,
		0x2e, 0xc7, 0x36, 0x09, 0x16, 0x7f, 0x59, 0x19,
		0x02, 0xe6, 0xe8, 0x3f, 0x45, 0x1a, 0x71, 0x91,
		0xf6, 0xe2, 0x9a, 0x0f, 0x22, 0x75, 0xec, 0x75,
	};
	static const u8 want_tag[OPTR_WIRE_TAG_LEN] = {
		0xbe, 0x66, 0x81, 0xaf, 0xba, 0x7c, 0x73, 0xb5,
		0x1c, 0x62, 0x33, 0x77, 0xe2, 0xf6, 0xd2, 0x4c,
	};
	u8 secret[OPTIREDUCE_SECRET_LEN], data[100];
	u8 key[OPTR_AUTH_KEY_LEN], tag[OPTR_WIRE_TAG_LEN];
	int i;

	for (i = 0; i < sizeof(secret); i++)
		secret[i] = i;
	for (i = 0; i < sizeof(data); i++)
		data[i] = i;
	optr_auth_key(key, secret);
	KUNIT_EXPECT_EQ(test, 0, memcmp(key, want_key, sizeof(key)));
	optr_auth_tag(key, data, sizeof(data), tag);
	KUNIT_EXPECT_EQ(test, 0, memcmp(tag, want_tag, sizeof(tag)));
}

/* ---- rate control ---- */

static void rate_encoding(struct kunit *test)
{
	struct optr_rate_report r = {}, g;
	u8 epoch;
	u32 w;

	KUNIT_EXPECT_FALSE(test, optr_rate_decode(0, &g));
	/* Without the valid bit nothing else counts. */
	KUNIT_EXPECT_FALSE(test, optr_rate_decode(0x7fffffff, &g));
	for (r.seq = 0; r.seq <= OPTR_FB_SEQ_MASK; r.seq++) {
		r.loss = r.seq * 2;
		r.ce = 255 - r.seq;
		w = optr_rate_encode(&r);
		KUNIT_EXPECT_NE(test, w, 0U);
		KUNIT_EXPECT_EQ(test, w & 0xff, 0U);
		KUNIT_ASSERT_TRUE(test, optr_rate_decode(w, &g));
		KUNIT_EXPECT_EQ(test, g.seq, r.seq);
		KUNIT_EXPECT_EQ(test, g.loss, r.loss);
		KUNIT_EXPECT_EQ(test, g.ce, r.ce);
		KUNIT_EXPECT_FALSE(test, g.epochs);
		KUNIT_EXPECT_FALSE(test, g.drained);
		/* The sender's epoch is not the report's. */
		KUNIT_ASSERT_TRUE(test, optr_rate_decode(w | 0x07, &g));
		KUNIT_EXPECT_EQ(test, g.seq, r.seq);
		KUNIT_EXPECT_EQ(test, g.ce, r.ce);
		KUNIT_EXPECT_FALSE(test, g.epochs);
		KUNIT_EXPECT_FALSE(test, g.drained);
	}
	/* Bit 3: the marks' queue drained; meaningless without marks. */
	r = (struct optr_rate_report){ .seq = 1, .ce = 40, .drained = true };
	w = optr_rate_encode(&r);
	KUNIT_EXPECT_EQ(test, w & 0xff, OPTR_FB_DRAINED);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(w, &g));
	KUNIT_EXPECT_TRUE(test, g.drained);
	r.ce = 0;
	KUNIT_EXPECT_EQ(test, optr_rate_encode(&r) & 0xff, 0U);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(OPTR_FB_VALID | OPTR_FB_DRAINED,
						 &g));
	KUNIT_EXPECT_FALSE(test, g.drained);
	/* With epochs: the echo in bits 6..4, EPOCHS in bit 7; the
	 * sender's own epoch, bits 2..0, comes with or without a report.
	 */
	r = (struct optr_rate_report){ .seq = 5, .loss = 0x20, .ce = 3,
				       .epochs = true, .echo = 6 };
	w = optr_rate_encode(&r);
	KUNIT_EXPECT_EQ(test, w, 0x852003e0U);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(w | 3, &g));
	KUNIT_EXPECT_TRUE(test, g.epochs);
	KUNIT_EXPECT_EQ(test, g.echo, 6);
	KUNIT_EXPECT_TRUE(test, optr_rate_epoch(w | 3, &epoch));
	KUNIT_EXPECT_EQ(test, epoch, 3);
	KUNIT_EXPECT_FALSE(test, optr_rate_decode(OPTR_FB_EPOCHS | 5, &g));
	KUNIT_EXPECT_TRUE(test, optr_rate_epoch(OPTR_FB_EPOCHS | 5, &epoch));
	KUNIT_EXPECT_EQ(test, epoch, 5);
	/* A module from before epochs sends the byte 0: none. */
	KUNIT_EXPECT_FALSE(test, optr_rate_epoch(0x85200300U, &epoch));
	/* An echo past 3 bits wraps. */
	r.echo = 9;
	KUNIT_EXPECT_EQ(test, optr_rate_encode(&r), 0x85200390U);
	/* The documented layout: valid, seq 5, loss 0x20, ce 0x03. */
	r = (struct optr_rate_report){ .seq = 5, .loss = 0x20, .ce = 3 };
	KUNIT_EXPECT_EQ(test, optr_rate_encode(&r), 0x85200300U);
	/* A sequence past 7 bits wraps instead of touching the valid bit. */
	r.seq = 0x85;
	KUNIT_EXPECT_EQ(test, optr_rate_encode(&r), 0x85200300U);
}

static void rate_frac(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, optr_rate_frac(0, 0), 0);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(5, 0), 0);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(0, 1000), 0);
	/* Any loss at all reports as at least 1/255. */
	KUNIT_EXPECT_EQ(test, optr_rate_frac(1, 1000000), 1);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(1000, 1000), 255);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(2000, 1000), 255);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(1, 2), 128);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(1, 255), 1);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(2, 255), 2);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(254, 255), 254);
	/* No overflow near the top of u64. */
	KUNIT_EXPECT_EQ(test, optr_rate_frac(U64_MAX / 2, U64_MAX), 128);
	KUNIT_EXPECT_EQ(test, optr_rate_frac(U64_MAX - 1, U64_MAX), 255);
}

static void rate_judge(struct kunit *test)
{
	struct optr_rate_report r = {};

	KUNIT_EXPECT_EQ(test, OPTR_RATE_CLEAN, optr_rate_judge(&r, false));
	r.loss = OPTR_RATE_LOSS_MIN;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_CLEAN, optr_rate_judge(&r, false));
	r.loss = OPTR_RATE_LOSS_MIN + 1;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_LOSSY, optr_rate_judge(&r, false));
	/* Loss of a message its sender cut at its timeout is no signal. */
	r.loss = 255;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_CLEAN, optr_rate_judge(&r, true));
	/* A mark always is; loss outranks it. */
	r.ce = 1;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_MARKED, optr_rate_judge(&r, true));
	KUNIT_EXPECT_EQ(test, OPTR_RATE_LOSSY, optr_rate_judge(&r, false));
	r.loss = 0;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_MARKED, optr_rate_judge(&r, false));
	/* Marks whose queue drained before the report ended; loss still
	 * outranks them.
	 */
	r.drained = true;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_DRAINED, optr_rate_judge(&r, false));
	r.loss = 255;
	KUNIT_EXPECT_EQ(test, OPTR_RATE_LOSSY, optr_rate_judge(&r, false));
	KUNIT_EXPECT_EQ(test, OPTR_RATE_DRAINED, optr_rate_judge(&r, true));
}

static void rate_aimd(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
	};
	const struct optr_rate_cfg wide = {
		.min_mbps = 10, .max_mbps = 10000, .step_mbps = 10, .md_pct = 50,
	};
	u32 rate = 1000;
	u8 clean = 0;
	int i;

	/* Loss: keep md_pct percent, never below the floor. */
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(100, OPTR_RATE_LOSSY, 0, &clean,
					     &cfg), 50U);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(15, OPTR_RATE_LOSSY, 0, &clean,
					     &cfg), 10U);
	/* Out of bounds (the bounds moved): clamped first; no overflow. */
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(U32_MAX, OPTR_RATE_LOSSY, 0,
					     &clean, &cfg), 500U);
	/* Marks: in proportion to the fraction marked, to the nearest
	 * Mbit/s ...
	 */
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(1000, OPTR_RATE_MARKED, 255,
					     &clean, &cfg), 500U);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(1000, OPTR_RATE_MARKED, 51,
					     &clean, &cfg), 900U);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(1000, OPTR_RATE_MARKED, 1,
					     &clean, &cfg), 998U);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(10, OPTR_RATE_MARKED, 255,
					     &clean, &cfg), 10U);
	/* ... and a cut that rounds to nothing holds the rate (12 Mbit/s,
	 * 3/255 marked: 0.07), but still ends a run of clean reports.
	 */
	clean = 5;
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(12, OPTR_RATE_MARKED, 3,
					     &clean, &cfg), 12U);
	KUNIT_EXPECT_EQ(test, clean, 0);
	/* Clean: the step times the run of clean reports, at most an
	 * eighth of the rate.
	 */
	clean = 0;
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(100, OPTR_RATE_CLEAN, 0, &clean,
					     &cfg), 110U);
	KUNIT_EXPECT_EQ(test, clean, 1);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(110, OPTR_RATE_CLEAN, 0, &clean,
					     &cfg), 123U);
	KUNIT_EXPECT_EQ(test, clean, 2);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(800, OPTR_RATE_CLEAN, 0, &clean,
					     &cfg), 830U);
	/* A congested report ends the run. */
	optr_rate_aimd(130, OPTR_RATE_MARKED, 1, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, clean, 0);
	/* The run's multiplier stops at OPTR_RATE_CLEAN_MAX ... */
	clean = OPTR_RATE_CLEAN_MAX;
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(2000, OPTR_RATE_CLEAN, 0, &clean,
					     &wide), 2000U + 10 * OPTR_RATE_CLEAN_MAX);
	KUNIT_EXPECT_EQ(test, clean, OPTR_RATE_CLEAN_MAX);
	/* (an eighth of 100 is less) */
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(100, OPTR_RATE_CLEAN, 0, &clean,
					     &cfg), 112U);
	/* ... and the rate at the ceiling. */
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(995, OPTR_RATE_CLEAN, 0, &clean,
					     &cfg), 1000U);
	/* Seven losses take 1000 to the floor ... */
	for (i = 0; i < 7; i++)
		rate = optr_rate_aimd(rate, OPTR_RATE_LOSSY, 0, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 10U);
	/* ... and clean reports bring it back at most an eighth (at least
	 * 1 Mbit/s) a step: 10, 11, ..., 16, 18, ..., 33 after 13; the
	 * ceiling after 43 (929 after 42), not beyond.
	 */
	for (i = 0; i < 13; i++)
		rate = optr_rate_aimd(rate, OPTR_RATE_CLEAN, 0, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 33U);
	for (i = 13; i < 42; i++)
		rate = optr_rate_aimd(rate, OPTR_RATE_CLEAN, 0, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 929U);
	rate = optr_rate_aimd(rate, OPTR_RATE_CLEAN, 0, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 1000U);
	rate = optr_rate_aimd(rate, OPTR_RATE_CLEAN, 0, &clean, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 1000U);
}

static void rate_step(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
	};
	struct optr_rate_state s = { .rate_mbps = 800 };

	/* A cut remembers where it cut from ... */
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg),
			400U);
	KUNIT_EXPECT_EQ(test, s.target_mbps, 800U);
	KUNIT_EXPECT_EQ(test, s.recover, OPTR_RATE_RECOVER);
	/* ... the clean reports after it halve the way back ... */
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			600U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			700U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			750U);
	/* ... OPTR_RATE_RECOVER times, then the additive steps probe. */
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			760U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			780U);
	/* A cut during recovery heads back to the rate it cut, not the
	 * older one.
	 */
	s = (struct optr_rate_state){ .rate_mbps = 800 };
	optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg);
	optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_MARKED, 255, &cfg),
			300U);
	KUNIT_EXPECT_EQ(test, s.target_mbps, 600U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			450U);
	/* A hold (a mark too light to cut) keeps the rate to recover to
	 * and the recovery steps left.
	 */
	s = (struct optr_rate_state){ .rate_mbps = 100, .target_mbps = 800,
				      .recover = 2 };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_MARKED, 1, &cfg),
			100U);
	KUNIT_EXPECT_EQ(test, s.target_mbps, 800U);
	KUNIT_EXPECT_EQ(test, s.recover, 2);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			450U);
	/* A target above a lowered ceiling heads for the ceiling. */
	s = (struct optr_rate_state){ .rate_mbps = 200, .target_mbps = 5000,
				      .recover = 1 };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			600U);
	/* Out of bounds (the bounds moved): clamped first. */
	s = (struct optr_rate_state){ .rate_mbps = 3 };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg),
			10U);
}

/* One report through optr_rate_heed() at 200 Mbit/s. */
#define HEED(h, v, ce, others, cfg) \
	optr_rate_heed(h, OPTR_RATE_##v, ce, others, 200, cfg)

static void rate_heed(struct kunit *test)
{
	struct optr_rate_cfg cfg = { .min_mbps = 10, .max_mbps = 1000,
				     .foreign = true };
	static const struct {
		u32 from, at;
	} cut[] = {
		{ 800, 100 },	/* an eighth */
		{ 40, 10 },	/* the floor */
	};
	struct optr_rate_heed h = {};
	u32 others = 7;	/* clean reports from any receiver so far */
	unsigned int c;
	int i;

	/* Heavy marks from one receiver, no clean report from another and
	 * the rate where they began: congestion, however long.
	 */
	for (i = 0; i < 2 * OPTR_RATE_FOREIGN_RUN; i++)
		KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, others, &cfg),
				OPTR_RATE_MARKED);
	KUNIT_EXPECT_FALSE(test, h.foreign);
	/* Its own clean report ends the run; a new one begins ... */
	KUNIT_EXPECT_EQ(test, HEED(&h, CLEAN, 0, others, &cfg),
			OPTR_RATE_CLEAN);
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++) {
		KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 230, others, &cfg),
				OPTR_RATE_MARKED);
		others++;	/* another receiver reported clean */
	}
	/* ... and its OPTR_RATE_FOREIGN_RUNth heavy report, with clean
	 * ones from others meanwhile, makes its path foreign.
	 */
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, others, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_TRUE(test, h.foreign);
	/* Light marks too, now; loss still cuts. */
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 3, others, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_EQ(test, HEED(&h, LOSSY, 0, others, &cfg),
			OPTR_RATE_LOSSY);
	KUNIT_EXPECT_TRUE(test, h.foreign);
	/* A mark between its clean reports starts their count again ... */
	for (i = 1; i < OPTR_RATE_FOREIGN_CLEAN; i++)
		HEED(&h, CLEAN, 0, others, &cfg);
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, others, &cfg),
			OPTR_RATE_FOREIGN);
	/* ... and OPTR_RATE_FOREIGN_CLEAN in a row end it: marks count. */
	for (i = 1; i < OPTR_RATE_FOREIGN_CLEAN; i++)
		HEED(&h, CLEAN, 0, others, &cfg);
	KUNIT_EXPECT_TRUE(test, h.foreign);
	HEED(&h, CLEAN, 0, others, &cfg);
	KUNIT_EXPECT_FALSE(test, h.foreign);
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, others, &cfg),
			OPTR_RATE_MARKED);

	/* Marks thinning out (an incast the cuts drained) end the run.
	 * The count of clean reports wraps: what counts is that it moved.
	 */
	h = (struct optr_rate_heed){};
	HEED(&h, MARKED, 255, U32_MAX, &cfg);
	HEED(&h, MARKED, 100, 0, &cfg);
	KUNIT_EXPECT_EQ(test, h.run, 0);
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++)
		HEED(&h, MARKED, 255, U32_MAX, &cfg);
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, 0, &cfg),
			OPTR_RATE_FOREIGN);

	/* Every receiver marking (our own uplink's queue): foreign only
	 * once the rate fell to an eighth of where the run began, or to
	 * the floor.
	 */
	for (c = 0; c < ARRAY_SIZE(cut); c++) {
		h = (struct optr_rate_heed){};
		for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++)
			optr_rate_heed(&h, OPTR_RATE_MARKED, 255, 0,
				       cut[c].from, &cfg);
		KUNIT_EXPECT_EQ(test, optr_rate_heed(&h, OPTR_RATE_MARKED, 255,
						     0, cut[c].at + 1, &cfg),
				OPTR_RATE_MARKED);
		KUNIT_EXPECT_EQ(test, optr_rate_heed(&h, OPTR_RATE_MARKED, 255,
						     0, cut[c].at, &cfg),
				OPTR_RATE_FOREIGN);
	}

	/* rate_foreign 0: every mark is congestion, and the judgment made
	 * before is forgotten.
	 */
	cfg.foreign = false;
	KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, 1, &cfg),
			OPTR_RATE_MARKED);
	KUNIT_EXPECT_FALSE(test, h.foreign);
	for (i = 0; i < 2 * OPTR_RATE_FOREIGN_RUN; i++)
		KUNIT_EXPECT_EQ(test, HEED(&h, MARKED, 255, i, &cfg),
				OPTR_RATE_MARKED);
}

#undef HEED

/* One report from receiver @src through optr_rate_uplink() at @rate. */
#define UPLINK(u, src, v, ce, rate, cfg) \
	optr_rate_uplink(u, src, OPTR_RATE_##v, ce, rate, cfg)

/* Three heavily marked reports from three receivers, the rate falling
 * from 800 Mbit/s to 100 (an eighth) meanwhile: one more makes a run.
 */
static void uplink_heavy(struct optr_rate_heed *u,
			 const struct optr_rate_cfg *cfg)
{
	UPLINK(u, 1, MARKED, 255, 800, cfg);
	UPLINK(u, 2, MARKED, 255, 100, cfg);
	UPLINK(u, 3, MARKED, 255, 100, cfg);
}

static void rate_uplink(struct kunit *test)
{
	struct optr_rate_cfg cfg = { .min_mbps = 10, .max_mbps = 1000,
				     .foreign = true };
	struct optr_rate_heed u = {};
	u32 i;

	/* One receiver's heavy marks at the floor are its port's
	 * (optr_rate_heed()), not our uplink's, however many.
	 */
	for (i = 0; i < 3 * OPTR_RATE_FOREIGN_RUN; i++)
		KUNIT_EXPECT_EQ(test, UPLINK(&u, 2, MARKED, 240, 10, &cfg),
				OPTR_RATE_MARKED);
	KUNIT_EXPECT_FALSE(test, u.foreign);
	/* A second receiver's joins the run: foreign, at once. */
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 3, MARKED, 240, 10, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_TRUE(test, u.foreign);
	/* Now any receiver's marks probe, thin ones too, and a run of
	 * clean reports from several receivers ends it; a mark in between
	 * starts that run again, loss leaves it be.
	 */
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 5, MARKED, 40, 10, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 6, DRAINED, 240, 10, &cfg),
			OPTR_RATE_FOREIGN);
	for (i = 1; i < OPTR_RATE_FOREIGN_CLEAN; i++)
		KUNIT_EXPECT_EQ(test, UPLINK(&u, i, CLEAN, 0, 10, &cfg),
				OPTR_RATE_CLEAN);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, MARKED, 240, 10, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, LOSSY, 0, 10, &cfg),
			OPTR_RATE_LOSSY);
	for (i = 1; i < OPTR_RATE_FOREIGN_CLEAN; i++)
		UPLINK(&u, i, CLEAN, 0, 10, &cfg);
	KUNIT_EXPECT_TRUE(test, u.foreign);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 7, CLEAN, 0, 10, &cfg),
			OPTR_RATE_CLEAN);
	KUNIT_EXPECT_FALSE(test, u.foreign);

	/* Several receivers' heavy marks while the rate is still above an
	 * eighth of where the run began: our own queue, cut for.
	 */
	u = (struct optr_rate_heed){};
	UPLINK(&u, 1, MARKED, 255, 800, &cfg);
	for (i = 2; i <= 2 * OPTR_RATE_FOREIGN_RUN; i++)
		KUNIT_EXPECT_EQ(test, UPLINK(&u, i, MARKED, 255, 101, &cfg),
				OPTR_RATE_MARKED);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 3, MARKED, 255, 100, &cfg),
			OPTR_RATE_FOREIGN);

	/* Above the floor a thin mark, a drained queue or any clean
	 * report ends a run (from 800 Mbit/s, 100 is an eighth).
	 */
	u = (struct optr_rate_heed){};
	uplink_heavy(&u, &cfg);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, MARKED, 223, 100, &cfg),
			OPTR_RATE_MARKED);
	KUNIT_EXPECT_EQ(test, u.run, 0);
	uplink_heavy(&u, &cfg);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, DRAINED, 255, 100, &cfg),
			OPTR_RATE_DRAINED);
	uplink_heavy(&u, &cfg);
	UPLINK(&u, 5, CLEAN, 0, 100, &cfg);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, MARKED, 255, 100, &cfg),
			OPTR_RATE_MARKED);
	KUNIT_EXPECT_FALSE(test, u.foreign);
	/* At the floor thin marks and drained reports count too (a
	 * receiver each, marked 40 to 120 of 255); a clean report still
	 * ends the run.
	 */
	u = (struct optr_rate_heed){};
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++) {
		UPLINK(&u, i, MARKED, 40, 10, &cfg);
		UPLINK(&u, i, DRAINED, 120, 10, &cfg);
		UPLINK(&u, i, CLEAN, 0, 10, &cfg);
		KUNIT_EXPECT_EQ(test, u.run, 0);
	}
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++)
		optr_rate_uplink(&u, i, i & 1 ? OPTR_RATE_MARKED :
				 OPTR_RATE_DRAINED, 40 * i, 10, &cfg);
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, DRAINED, 60, 10, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_TRUE(test, u.foreign);

	/* rate_foreign 0: no judgment, and the one made is forgotten. */
	u.foreign = true;
	cfg.foreign = false;
	KUNIT_EXPECT_EQ(test, UPLINK(&u, 4, MARKED, 255, 10, &cfg),
			OPTR_RATE_MARKED);
	KUNIT_EXPECT_FALSE(test, u.foreign);
}

#undef UPLINK

static void rate_loss_keep(struct kunit *test)
{
	struct optr_rate_cfg cfg = { .min_mbps = 10, .max_mbps = 1000,
				     .md_pct = 50 };
	u8 clean = 0;

	/* Beside a foreign queue a loss keeps CUBIC's share; a gentler
	 * rate_md_pct stays as set.
	 */
	KUNIT_EXPECT_EQ(test, optr_rate_loss_keep(50, false), 50U);
	KUNIT_EXPECT_EQ(test, optr_rate_loss_keep(50, true),
			OPTR_RATE_FOREIGN_KEEP_PCT);
	KUNIT_EXPECT_EQ(test, optr_rate_loss_keep(90, true), 90U);
	KUNIT_EXPECT_EQ(test, optr_rate_loss_keep(90, false), 90U);
	cfg.md_pct = optr_rate_loss_keep(cfg.md_pct, true);
	KUNIT_EXPECT_EQ(test, optr_rate_aimd(40, OPTR_RATE_LOSSY, 0, &clean,
					     &cfg), 28U);
}

static void rate_foreign_step(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
		.knee_mbps = 22,
	};
	struct optr_rate_state s = { .rate_mbps = 20, .clean = 5 };

	/* Marks from a foreign queue probe by 1 Mbit/s, end the run of
	 * clean reports, and stop at the knee.
	 */
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_FOREIGN, 255, &cfg),
			21U);
	KUNIT_EXPECT_EQ(test, s.clean, 0);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_FOREIGN, 255, &cfg),
			22U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_FOREIGN, 255, &cfg),
			22U);
	/* Loss still halves it. */
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg),
			11U);
}

static void rate_probe_steps(struct kunit *test)
{
	const s64 t = OPTR_RATE_FOREIGN_PROBE_NS;
	ktime_t at = ns_to_ktime(1000 * t), now;

	/* Before a whole period: no probe, and no time lost. */
	now = ktime_add_ns(at, t - 1);
	KUNIT_EXPECT_EQ(test, optr_rate_probe_steps(&at, now), 0U);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(at), 1000 * t);
	/* Two and a half periods: two probes, the half kept. */
	now = ktime_add_ns(at, 2 * t + t / 2);
	KUNIT_EXPECT_EQ(test, optr_rate_probe_steps(&at, now), 2U);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(at), 1002 * t);
	now = ktime_add_ns(now, t / 2);
	KUNIT_EXPECT_EQ(test, optr_rate_probe_steps(&at, now), 1U);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(at), 1003 * t);
	/* Long quiet: the cap, and the count restarts from now. */
	now = ktime_add_ns(at, 50 * t + 7);
	KUNIT_EXPECT_EQ(test, optr_rate_probe_steps(&at, now),
			OPTR_RATE_FOREIGN_STEPS);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(at), ktime_to_ns(now));
	/* A clock read before @at (another CPU's): none. */
	now = ktime_sub_ns(at, 5);
	KUNIT_EXPECT_EQ(test, optr_rate_probe_steps(&at, now), 0U);
}

/* A move of @path after a send waited for its rate (optr_rate_paced()). */
static u32 rate_held_move(struct optr_rate_path *path, enum optr_rate_verdict v,
			  u8 ce, u32 rate, ktime_t now,
			  const struct optr_rate_cfg *cfg)
{
	path->limited = true;
	return optr_rate_path_move(path, v, ce, rate, now, cfg);
}

/* A path's moves, on the clock the test keeps (optr_rate_path_move()). */
static void rate_path_move(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
		.foreign = true, .drained = true,
	};
	const s64 t = OPTR_RATE_FOREIGN_PROBE_NS;
	struct optr_rate_path path = {};
	ktime_t now = ns_to_ktime(100 * t);
	u32 rate;
	int i;

	/* A clean report on a rate that held nothing back: a hold. */
	rate = optr_rate_path_move(&path, OPTR_RATE_CLEAN, 0, 100, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 100U);
	KUNIT_EXPECT_EQ(test, path.holds, 1ULL);
	KUNIT_EXPECT_EQ(test, path.epoch, 0);
	/* Loss halves it, notes the cut, opens an epoch, restarts the
	 * probe clock and forgets that a send was held back.
	 */
	rate = rate_held_move(&path, OPTR_RATE_LOSSY, 0, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 50U);
	KUNIT_EXPECT_EQ(test, path.cuts, 1ULL);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(path.cut_at), ktime_to_ns(now));
	KUNIT_EXPECT_EQ(test, ktime_to_ns(path.probe_at), ktime_to_ns(now));
	KUNIT_EXPECT_EQ(test, path.epoch, 1);
	KUNIT_EXPECT_FALSE(test, path.limited);
	/* Beside a foreign queue, reports within one probe period raise
	 * nothing however many come (per report, these twenty would have
	 * taken it to 70), and open no epoch.
	 */
	path.limited = true;
	now = ktime_add_ns(now, t / 2);
	for (i = 0; i < 20; i++)
		rate = optr_rate_path_move(&path, OPTR_RATE_FOREIGN, 255, rate,
					   now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 50U);
	KUNIT_EXPECT_EQ(test, path.raises, 0ULL);
	KUNIT_EXPECT_EQ(test, path.epoch, 1);
	KUNIT_EXPECT_TRUE(test, path.limited);
	/* One period since the cut: one Mbit/s. */
	now = ktime_add_ns(now, t / 2);
	rate = optr_rate_path_move(&path, OPTR_RATE_FOREIGN, 255, rate, now,
				   &cfg);
	KUNIT_EXPECT_EQ(test, rate, 51U);
	KUNIT_EXPECT_EQ(test, path.raises, 1ULL);
	KUNIT_EXPECT_EQ(test, path.epoch, 2);
	/* Two and a half more: two, and the half counts towards the next. */
	now = ktime_add_ns(now, 2 * t + t / 2);
	rate = rate_held_move(&path, OPTR_RATE_FOREIGN, 255, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 53U);
	now = ktime_add_ns(now, t / 2);
	rate = rate_held_move(&path, OPTR_RATE_FOREIGN, 255, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 54U);
	/* A long quiet: no more than OPTR_RATE_FOREIGN_STEPS at once. */
	now = ktime_add_ns(now, 100 * t);
	rate = rate_held_move(&path, OPTR_RATE_FOREIGN, 255, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 54U + OPTR_RATE_FOREIGN_STEPS);
	/* A clean report recovers half the way to the rate before the
	 * cut, and restarts the probe clock: a foreign report just after
	 * it raises nothing.
	 */
	rate = rate_held_move(&path, OPTR_RATE_CLEAN, 0, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 79U);
	now = ktime_add_ns(now, t / 2);
	rate = rate_held_move(&path, OPTR_RATE_FOREIGN, 255, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 79U);
	/* A mark too thin to cut a whole Mbit/s holds: no cut, no epoch. */
	i = path.epoch;
	rate = optr_rate_path_move(&path, OPTR_RATE_MARKED, 1, rate, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 79U);
	KUNIT_EXPECT_EQ(test, path.cuts, 1ULL);
	KUNIT_EXPECT_EQ(test, path.epoch, i);
	/* Loss at the floor moves nothing but is a cut, in a new epoch:
	 * reports on the traffic before it are stale.
	 */
	now = ktime_add_ns(now, t);
	rate = optr_rate_path_move(&path, OPTR_RATE_LOSSY, 0, 10, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 10U);
	KUNIT_EXPECT_EQ(test, path.cuts, 2ULL);
	KUNIT_EXPECT_EQ(test, ktime_to_ns(path.cut_at), ktime_to_ns(now));
	KUNIT_EXPECT_EQ(test, path.epoch, (i + 1) & OPTR_FB_EPOCH_MASK);
}

/*
 * Whether the sender reached the path's rate since it last moved
 * (optr_rate_reached()), from what the pacer told (optr_rate_paced()),
 * and what a clean report does with it (optr_rate_path_move()).
 */
static void rate_reached(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
	};
	const s64 ms = NSEC_PER_MSEC;
	struct optr_rate_path path = {};
	ktime_t now = ns_to_ktime(1000 * ms);
	u32 rate;

	/* No send waited for its slot: not reached, whatever the times. */
	path.paced_ns = 10 * ms;
	KUNIT_EXPECT_FALSE(test, optr_rate_reached(&path));
	rate = optr_rate_path_move(&path, OPTR_RATE_CLEAN, 0, 100, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 100U);
	KUNIT_EXPECT_EQ(test, path.unreached, 1ULL);
	KUNIT_EXPECT_EQ(test, path.holds, 1ULL);
	/* Held back, never behind: reached, and a clean report raises. */
	path.limited = true;
	KUNIT_EXPECT_TRUE(test, optr_rate_reached(&path));
	/*
	 * The starved sender: it waits for one slot in each window the CPU
	 * gives it, but fell behind for good 86 ms for every 14 ms its
	 * bytes took at the rate (it sent at 14% of it). Not reached: the
	 * clean report holds the rate, counted unreached.
	 */
	path.paced_ns += 14 * ms;
	path.behind_ns += 86 * ms;
	KUNIT_EXPECT_FALSE(test, optr_rate_reached(&path));
	rate = optr_rate_path_move(&path, OPTR_RATE_CLEAN, 0, 100, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 100U);
	KUNIT_EXPECT_EQ(test, path.unreached, 2ULL);
	KUNIT_EXPECT_EQ(test, path.raises, 0ULL);
	/*
	 * A hold keeps the account: 72 ms more at the rate make 96 against
	 * 86 behind since the rate last moved, over half: reached, and
	 * the clean report raises.
	 */
	path.paced_ns += 72 * ms;
	KUNIT_EXPECT_TRUE(test, optr_rate_reached(&path));
	path.behind_ns += 11 * ms;
	KUNIT_EXPECT_FALSE(test, optr_rate_reached(&path));
	path.paced_ns += 1 * ms;
	rate = optr_rate_path_move(&path, OPTR_RATE_CLEAN, 0, 100, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 110U);
	KUNIT_EXPECT_EQ(test, path.raises, 1ULL);
	KUNIT_EXPECT_EQ(test, path.unreached, 2ULL);
	/*
	 * The move starts a new account: what the sender did at the old
	 * rate says nothing of this one, however far ahead it was.
	 */
	KUNIT_EXPECT_FALSE(test, path.limited);
	KUNIT_EXPECT_EQ(test, path.paced_from, path.paced_ns);
	KUNIT_EXPECT_EQ(test, path.behind_from, path.behind_ns);
	path.limited = true;
	path.behind_ns += 2 * ms;
	path.paced_ns += 1 * ms;
	KUNIT_EXPECT_FALSE(test, optr_rate_reached(&path));
	path.paced_ns += 1 * ms;
	KUNIT_EXPECT_TRUE(test, optr_rate_reached(&path));
	/* Marks and loss do not ask: a sender below its rate still cuts. */
	path.behind_ns += 100 * ms;
	rate = optr_rate_path_move(&path, OPTR_RATE_LOSSY, 0, 110, now, &cfg);
	KUNIT_EXPECT_EQ(test, rate, 55U);
	/* A probe beside a foreign queue asks as a clean report does. */
	path.limited = true;
	path.behind_ns += 50 * ms;
	rate = optr_rate_path_move(&path, OPTR_RATE_FOREIGN, 255, 55,
				   ktime_add_ns(now, OPTR_RATE_FOREIGN_PROBE_NS),
				   &cfg);
	KUNIT_EXPECT_EQ(test, rate, 55U);
	KUNIT_EXPECT_EQ(test, path.unreached, 3ULL);
}

static void rate_seen(struct kunit *test)
{
	struct optr_ranges r;
	u32 missing;

	/* Nothing came: no evidence. */
	KUNIT_ASSERT_EQ(test, 0, optr_ranges_init(&r, 1, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, optr_ranges_reach(&r), 0U);
	KUNIT_EXPECT_EQ(test, optr_rate_seen(&r, &missing), 0U);
	KUNIT_EXPECT_EQ(test, missing, 0U);
	/* The first 600 of 1000 bytes, whole: the rest was late, not lost. */
	KUNIT_EXPECT_EQ(test, 600L, optr_ranges_add(&r, 0, 600, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, optr_rate_seen(&r, &missing), 600U);
	KUNIT_EXPECT_EQ(test, missing, 0U);
	/* Then 800..900: the hole 600..800 before it was dropped. */
	KUNIT_EXPECT_EQ(test, 100L, optr_ranges_add(&r, 800, 900, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, optr_rate_seen(&r, &missing), 900U);
	KUNIT_EXPECT_EQ(test, missing, 200U);
	optr_ranges_free(&r);
}

/*
 * The receiver's reports: an early one after OPTR_RATE_REPORT_DGRAMS,
 * marked or clean, echoing the epoch of the first datagram it covers; at
 * a message's end a report only where there is something to say.
 */
static void rate_reports(struct kunit *test)
{
	struct optr_rate_peer *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	struct optr_rate_report rep;
	u32 word;

	KUNIT_ASSERT_NOT_NULL(test, p);
	for (u32 i = 0; i < OPTR_RATE_REPORT_DGRAMS - 1; i++)
		KUNIT_EXPECT_FALSE(test, optr_rate_count(p, 2, i == 3));
	KUNIT_EXPECT_TRUE(test, optr_rate_count(p, 5, false));
	KUNIT_EXPECT_EQ(test, p->early, 1ULL);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_EQ(test, rep.echo, 2);
	KUNIT_EXPECT_EQ(test, rep.ce, optr_rate_frac(1, OPTR_RATE_REPORT_DGRAMS));
	KUNIT_EXPECT_EQ(test, rep.loss, 0);
	/* The mark was the fourth datagram: the queue drained after it. */
	KUNIT_EXPECT_TRUE(test, rep.drained);
	p->fb_sent = true;	/* the send path carried it */
	word = p->fb_word;

	/* The message ends whole right after: nothing new to say, and a
	 * clean report echoing epoch 2 would read as a clean one on the
	 * epoch the marked report held. The bytes wait for the next.
	 */
	KUNIT_EXPECT_FALSE(test, optr_rate_end(p, 4000, 0));
	KUNIT_EXPECT_EQ(test, p->fb_word, word);
	KUNIT_EXPECT_EQ(test, p->acc_expected, 4000ULL);

	/* A datagram of the next message, which ends with a quarter missing:
	 * a lossy report over both messages' bytes, echoing the new epoch.
	 */
	KUNIT_EXPECT_FALSE(test, optr_rate_count(p, 3, false));
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 4000, 2000));
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_EQ(test, rep.echo, 3);
	KUNIT_EXPECT_EQ(test, rep.ce, 0);
	KUNIT_EXPECT_EQ(test, rep.loss, optr_rate_frac(2000, 8000));
	p->fb_sent = true;

	/* Loss with no datagram since the last report is still reported. */
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 1000, 1000));
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_EQ(test, rep.loss, optr_rate_frac(1000, 1000));
	p->fb_sent = true;

	/* Clean datagrams are reported as early: the sender of a long
	 * message hears that its path is clear before the message ends.
	 */
	for (u32 i = 0; i < OPTR_RATE_REPORT_DGRAMS - 1; i++)
		KUNIT_EXPECT_FALSE(test, optr_rate_count(p, 4, false));
	KUNIT_EXPECT_TRUE(test, optr_rate_count(p, 6, false));
	KUNIT_EXPECT_EQ(test, p->early, 2ULL);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_EQ(test, rep.echo, 4);
	KUNIT_EXPECT_EQ(test, rep.ce, 0);
	KUNIT_EXPECT_EQ(test, rep.loss, 0);
}

/*
 * Whether a marked report's queue drained: OPTR_RATE_DRAINED_DGRAMS
 * unmarked datagrams after its last mark, counted across a report that
 * never left and was merged into the next.
 */
static void rate_drained_reports(struct kunit *test)
{
	struct optr_rate_peer *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	const u32 n = OPTR_RATE_REPORT_DGRAMS, tail = OPTR_RATE_DRAINED_DGRAMS;
	struct optr_rate_report rep;

	KUNIT_ASSERT_NOT_NULL(test, p);
	/* Marked to one datagram short of a drained tail: standing. */
	for (u32 i = 0; i < n; i++)
		optr_rate_count(p, 0, i == n - tail);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_NE(test, rep.ce, 0);
	KUNIT_EXPECT_FALSE(test, rep.drained);
	p->fb_sent = true;
	/* One more unmarked datagram after the last mark would have done. */
	for (u32 i = 0; i < n; i++)
		optr_rate_count(p, 0, i == n - tail - 1);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_TRUE(test, rep.drained);
	p->fb_sent = true;
	/* Marks to the end: a queue that stands. */
	for (u32 i = 0; i < n; i++)
		optr_rate_count(p, 0, i >= n / 2);
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_FALSE(test, rep.drained);
	/* Not sent: a short message's end merges it into the next report,
	 * whose few unmarked datagrams add to the old tail (none) ...
	 */
	optr_rate_count(p, 0, false);
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 1000, 0));
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_FALSE(test, rep.drained);
	/* ... and, still not sent, enough more make the merged one drained. */
	for (u32 i = 0; i < tail - 1; i++)
		optr_rate_count(p, 0, false);
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 1000, 0));
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_NE(test, rep.ce, 0);
	KUNIT_EXPECT_TRUE(test, rep.drained);
	p->fb_sent = true;
	/* A mark among the newer datagrams ends the old tail. */
	for (u32 i = 0; i < tail; i++)
		optr_rate_count(p, 0, false);
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 1000, 0));
	optr_rate_count(p, 0, true);
	KUNIT_EXPECT_TRUE(test, optr_rate_end(p, 1000, 0));
	KUNIT_ASSERT_TRUE(test, optr_rate_decode(p->fb_word, &rep));
	KUNIT_EXPECT_FALSE(test, rep.drained);
}

/* A drained queue's report: a raise as a clean one's, unless foreign. */
static void rate_drained_step(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
		.foreign = true,
	};
	struct optr_rate_state a = { .rate_mbps = 10, .target_mbps = 40,
				     .recover = OPTR_RATE_RECOVER };
	struct optr_rate_state b = a;
	struct optr_rate_heed h = {};
	int i;

	for (i = 0; i < 2 * OPTR_RATE_CLEAN_MAX; i++)
		KUNIT_EXPECT_EQ(test,
				optr_rate_step(&a, OPTR_RATE_DRAINED, 40, &cfg),
				optr_rate_step(&b, OPTR_RATE_CLEAN, 0, &cfg));
	KUNIT_EXPECT_GT(test, a.rate_mbps, 40U);
	/* Above the floor it ends a run of heavy marks; at the floor it
	 * counts in one (optr_rate_run()). A foreign path stays one.
	 */
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++)
		optr_rate_heed(&h, OPTR_RATE_MARKED, 255, 0, 20, &cfg);
	KUNIT_EXPECT_EQ(test,
			optr_rate_heed(&h, OPTR_RATE_DRAINED, 255, 0, 20, &cfg),
			OPTR_RATE_DRAINED);
	KUNIT_EXPECT_EQ(test, h.run, 0);
	for (i = 1; i < OPTR_RATE_FOREIGN_RUN; i++)
		optr_rate_heed(&h, OPTR_RATE_MARKED, 255, 0, 10, &cfg);
	KUNIT_EXPECT_EQ(test,
			optr_rate_heed(&h, OPTR_RATE_DRAINED, 60, 0, 10, &cfg),
			OPTR_RATE_FOREIGN);
	h = (struct optr_rate_heed){};
	h.foreign = true;
	h.clean = 2;
	KUNIT_EXPECT_EQ(test,
			optr_rate_heed(&h, OPTR_RATE_DRAINED, 40, 0, 10, &cfg),
			OPTR_RATE_FOREIGN);
	KUNIT_EXPECT_TRUE(test, h.foreign);
	KUNIT_EXPECT_EQ(test, h.clean, 0);
}

static void rate_start(struct kunit *test)
{
	const struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
	};

	/* No measured start: the fixed rate, else the ceiling. */
	KUNIT_EXPECT_EQ(test, optr_rate_start(0, 0, &cfg), 1000U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(0, 5, &cfg), 10U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(0, 500, &cfg), 500U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(0, 5000, &cfg), 1000U);
	/* A measured start wins over both, within the bounds. */
	KUNIT_EXPECT_EQ(test, optr_rate_start(30, 0, &cfg), 30U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(30, 500, &cfg), 30U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(3, 500, &cfg), 10U);
	KUNIT_EXPECT_EQ(test, optr_rate_start(3000, 0, &cfg), 1000U);
}

static void rate_knee(struct kunit *test)
{
	struct optr_rate_cfg cfg = {
		.min_mbps = 10, .max_mbps = 1000, .step_mbps = 10, .md_pct = 50,
		.knee_pct = 25,
	};
	struct optr_rate_state s;
	int i;

	/* A measured start, plus knee_pct, within the bounds; no knee
	 * without a start or with knee_pct 0.
	 */
	KUNIT_EXPECT_EQ(test, optr_rate_knee(0, &cfg), 0U);
	KUNIT_EXPECT_EQ(test, optr_rate_knee(24, &cfg), 30U);
	KUNIT_EXPECT_EQ(test, optr_rate_knee(4, &cfg), 10U);
	KUNIT_EXPECT_EQ(test, optr_rate_knee(900, &cfg), 1000U);
	cfg.knee_pct = 0;
	KUNIT_EXPECT_EQ(test, optr_rate_knee(24, &cfg), 0U);

	/* Additive steps stop at the knee ... */
	cfg.knee_mbps = 30;
	s = (struct optr_rate_state){ .rate_mbps = 28 };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			30U);
	/* ... past it a clean report adds 1/128 of the rate whatever the
	 * run of clean reports, the fraction of a Mbit/s carried to the
	 * next: at 30 Mbit/s a whole one on the fifth report ...
	 */
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test,
				optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
				30U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			31U);
	for (i = 0; i < 16; i++)
		optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg);
	KUNIT_EXPECT_EQ(test, s.rate_mbps, 35U);
	cfg.knee_mbps = 512;
	s = (struct optr_rate_state){ .rate_mbps = 512,
				      .clean = OPTR_RATE_CLEAN_MAX };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			516U);
	/* ... so a run of 16 adds about an eighth, where below the knee
	 * one report of such a run may.
	 */
	s.rate_mbps = 512;
	for (i = 0; i < OPTR_RATE_CLEAN_MAX; i++)
		optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg);
	KUNIT_EXPECT_EQ(test, s.rate_mbps, 579U);
	/* Recovery from a cut above the knee heads for the knee, not for
	 * the rate it cut ...
	 */
	cfg.knee_mbps = 30;
	s = (struct optr_rate_state){ .rate_mbps = 60 };
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg),
			30U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			30U);
	optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg);
	KUNIT_EXPECT_EQ(test, s.rate_mbps, 15U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			23U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			27U);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			29U);
	/* ... and without a knee, as before, for the rate it cut. */
	cfg.knee_mbps = 0;
	s = (struct optr_rate_state){ .rate_mbps = 60 };
	optr_rate_step(&s, OPTR_RATE_LOSSY, 0, &cfg);
	KUNIT_EXPECT_EQ(test, optr_rate_step(&s, OPTR_RATE_CLEAN, 0, &cfg),
			45U);
}

static void rate_needed(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, optr_rate_needed(1000, 0), 0U);
	KUNIT_EXPECT_EQ(test, optr_rate_needed(1000, -5), 0U);
	KUNIT_EXPECT_EQ(test, optr_rate_needed(0, 1000), 0U);
	/* 125 KB in 10 ms: 100 Mbit/s; a nanosecond less rounds up. */
	KUNIT_EXPECT_EQ(test, optr_rate_needed(125000, 10000000), 100U);
	KUNIT_EXPECT_EQ(test, optr_rate_needed(125000, 9999999), 101U);
	/* One byte in a second still needs 1. */
	KUNIT_EXPECT_EQ(test, optr_rate_needed(1, 1000000000), 1U);
	/* Saturates instead of wrapping. */
	KUNIT_EXPECT_EQ(test, optr_rate_needed(1ULL << 40, 1), U32_MAX);
	KUNIT_EXPECT_EQ(test, optr_rate_needed(U64_MAX, 1000), U32_MAX);
}

static struct kunit_case optr_wire_cases[] = {
	KUNIT_CASE(wire_roundtrip),
	KUNIT_CASE(wire_auth_tag_room),
	KUNIT_CASE(auth_known_answer),
	KUNIT_CASE(wire_malformed),
	KUNIT_CASE(wire_bounds),
	{}
};

static struct kunit_case optr_ranges_cases[] = {
	KUNIT_CASE(ranges_in_order),
	KUNIT_CASE(ranges_holes_and_merges),
	KUNIT_CASE(ranges_random),
	KUNIT_CASE(ranges_span_cap),
	{}
};

static struct kunit_case optr_estimate_cases[] = {
	KUNIT_CASE(estimate_rule),
	{}
};

static struct kunit_case optr_skbwalk_cases[] = {
	KUNIT_CASE(skbwalk_reads),
	KUNIT_CASE(skbwalk_mac),
	{}
};

static struct kunit_case optr_rate_cases[] = {
	KUNIT_CASE(rate_encoding),
	KUNIT_CASE(rate_frac),
	KUNIT_CASE(rate_judge),
	KUNIT_CASE(rate_aimd),
	KUNIT_CASE(rate_step),
	KUNIT_CASE(rate_heed),
	KUNIT_CASE(rate_uplink),
	KUNIT_CASE(rate_loss_keep),
	KUNIT_CASE(rate_foreign_step),
	KUNIT_CASE(rate_probe_steps),
	KUNIT_CASE(rate_path_move),
	KUNIT_CASE(rate_reached),
	KUNIT_CASE(rate_seen),
	KUNIT_CASE(rate_reports),
	KUNIT_CASE(rate_drained_reports),
	KUNIT_CASE(rate_drained_step),
	KUNIT_CASE(rate_start),
	KUNIT_CASE(rate_knee),
	KUNIT_CASE(rate_needed),
	{}
};

static struct kunit_suite optr_wire_suite = {
	.name = "optireduce-wire",
	.test_cases = optr_wire_cases,
};

static struct kunit_suite optr_ranges_suite = {
	.name = "optireduce-ranges",
	.test_cases = optr_ranges_cases,
};

static struct kunit_suite optr_estimate_suite = {
	.name = "optireduce-estimate",
	.test_cases = optr_estimate_cases,
};

static struct kunit_suite optr_skbwalk_suite = {
	.name = "optireduce-skbwalk",
	.test_cases = optr_skbwalk_cases,
};

static struct kunit_suite optr_rate_suite = {
	.name = "optireduce-rate",
	.test_cases = optr_rate_cases,
};

kunit_test_suites(&optr_wire_suite, &optr_ranges_suite, &optr_estimate_suite,
		  &optr_skbwalk_suite, &optr_rate_suite);
