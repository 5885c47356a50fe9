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
 */

#include <linux/siphash.h>
#include <linux/string.h>
#include <uapi/linux/optireduce.h>

#include "auth.h"

/* Separates this use of the secret from any other ("wire"). */
#define OPTR_AUTH_WIRE_DOMAIN	0x77697265ULL

/*
 * Whether two secrets are equal, in time independent of where they
 * differ. Written out rather than crypto_memneq(): that lives in a module
 * on some kernels, and plain insmod must keep working.
 */
bool optr_auth_same_secret(const u8 *a, const u8 *b)
{
	u8 diff = 0;
	int i;

	for (i = 0; i < OPTIREDUCE_SECRET_LEN; i++)
		diff |= a[i] ^ b[i];
	return !diff;
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
