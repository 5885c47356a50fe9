// SPDX-License-Identifier: GPL-2.0
/*
 * What a communicator's secret (OPTIREDUCE_SECRET_LEN bytes, known only
 * to its members) stands for in the kernel.
 *
 * The wire id: packets name their communicator with 32 bits. Derived from
 * the id and the whole secret by SipHash (a PRF, keyed with the secret's
 * first 128 bits, over the id and the other 128), it cannot be predicted
 * without the secret: a local user who knows a job's id and peer table
 * but not its secret joins another communicator, never that one, and
 * neither squats its ranks nor receives its data. Two communicators whose
 * derived ids collide (2^-32 for a given pair) cannot share a namespace:
 * the second join fails as if the rank were taken. An all-zero secret
 * keeps the id as it is, for tools and tests that name an open
 * communicator by hand.
 *
 * The datagram tag (OPTIREDUCE_JOIN_AUTH): 16 bytes after the payload,
 * BLAKE2s with a 16-byte output keyed with a 32-byte key, over the header
 * (its AUTH flag, round, message and offset included) and the payload.
 * The key is BLAKE2s-256 of a fixed label keyed with the secret, so a tag
 * never reveals anything usable for the wire id, nor the other way round.
 * BLAKE2s because the kernel has it built in (the random driver uses it):
 * no crypto API allocation in softirq, no module for plain insmod to
 * miss, any context; a keyed BLAKE2s is a PRF and so a MAC, with forgery
 * at 2^-128 a try. Its cost per byte is measured in `make bench-transport`
 * (Documentation/results.md). Replays need no state here: a copy of an
 * earlier round's datagram is stale for the round machinery, a copy
 * within the round a duplicate, and the tag binds both numbers.
 */

#include <linux/siphash.h>
#include <linux/string.h>
#include <uapi/linux/optireduce.h>

#include "auth.h"
#include "skbwalk.h"
#include "wire.h"

/* Separates this use of the secret from any other ("wire"). */
#define OPTR_AUTH_WIRE_DOMAIN	0x77697265ULL
/* The label the tag key is derived from (wire-format.md). */
static const char optr_auth_tag_label[] = "optireduce datagram tag v1";

/*
 * Whether @len bytes at @a and @b are equal, in time independent of where
 * they differ. Written out rather than crypto_memneq(): that lives in a
 * module on some kernels, and plain insmod must keep working.
 */
static bool optr_auth_equal(const u8 *a, const u8 *b, u32 len)
{
	u8 diff = 0;
	u32 i;

	for (i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return !diff;
}

bool optr_auth_same_secret(const u8 *a, const u8 *b)
{
	return optr_auth_equal(a, b, OPTIREDUCE_SECRET_LEN);
}

/* @key (OPTR_AUTH_KEY_LEN bytes) for the tags of the communicator whose
 * secret is @secret.
 */
void optr_auth_key(u8 *key, const u8 *secret)
{
	struct optr_blake2s_state st;

	static_assert(OPTIREDUCE_SECRET_LEN == BLAKE2S_KEY_SIZE);
	blake2s_init_key(&st, OPTR_AUTH_KEY_LEN, secret,
			 OPTIREDUCE_SECRET_LEN);
	blake2s_update(&st, (const u8 *)optr_auth_tag_label,
		       sizeof(optr_auth_tag_label) - 1);
	blake2s_final(&st, key);
}

void optr_auth_mac_init(struct optr_blake2s_state *st, const u8 *key)
{
	blake2s_init_key(st, OPTR_WIRE_TAG_LEN, key, OPTR_AUTH_KEY_LEN);
}

/* The tag of the @len bytes (header and payload) at @data, into @tag. */
void optr_auth_tag(const u8 *key, const void *data, u32 len, u8 *tag)
{
	struct optr_blake2s_state st;

	optr_auth_mac_init(&st, key);
	blake2s_update(&st, (const u8 *)data, len);
	blake2s_final(&st, tag);
}

/*
 * Whether the datagram of @len bytes at @off of @w's skb (header, payload,
 * tag) carries the right tag. Reads through a copy of @w, so the caller's
 * place in the skb stays where it was.
 */
bool optr_auth_verify(const u8 *key, const struct optr_skb_walk *w, u32 off,
		      u32 len)
{
	struct optr_skb_walk v = *w;
	struct optr_blake2s_state st;
	u8 want[OPTR_WIRE_TAG_LEN], got[OPTR_WIRE_TAG_LEN];

	if (len <= OPTR_WIRE_TAG_LEN)
		return false;
	len -= OPTR_WIRE_TAG_LEN;
	optr_auth_mac_init(&st, key);
	if (optr_skb_walk_mac(&v, off, len, &st) ||
	    optr_skb_walk_copy(&v, off + len, got, sizeof(got))) {
		memzero_explicit(&st, sizeof(st));
		return false;
	}
	blake2s_final(&st, want);
	return optr_auth_equal(want, got, sizeof(want));
}

u32 optr_auth_wire_id(u32 id, const u8 *secret)
{
	siphash_key_t key;
	u64 rest[2];

	if (!memchr_inv(secret, 0, OPTIREDUCE_SECRET_LEN))
		return id;
	memcpy(key.key, secret, sizeof(key.key));
	memcpy(rest, secret + sizeof(key.key), sizeof(rest));
	return (u32)siphash_3u64(OPTR_AUTH_WIRE_DOMAIN << 32 | id, rest[0],
				 rest[1], &key);
}
