// SPDX-License-Identifier: GPL-2.0
/*
 * Header parsing and building. Pure functions of their arguments, so that
 * KUnit can drive them with every malformed shape (tests/kunit.c).
 */

#include <asm/byteorder.h>
#include <linux/build_bug.h>
#include <uapi/linux/optireduce.h>

#include "wire.h"

static_assert(sizeof(struct optr_wire_hdr) == 36);

/*
 * Parse and validate a header; datalen is the whole UDP payload (header
 * and tag included). A fragment must carry at least one byte, lie inside
 * its message, and carry the LAST flag exactly when it ends the message.
 * The tag is the receive path's to check, against the communicator's key.
 */
enum optr_wire_err optr_wire_parse(const struct optr_wire_hdr *h,
				   unsigned int datalen, struct optr_frag *f)
{
	u32 tag;

	if (datalen <= sizeof(*h))
		return OPTR_WIRE_MALFORMED;
	if (h->version != OPTR_WIRE_VERSION || (h->flags & ~OPTR_WIRE_FLAGS))
		return OPTR_WIRE_MALFORMED;
	tag = h->flags & OPTR_WIRE_AUTH ? OPTR_WIRE_TAG_LEN : 0;
	if (datalen <= sizeof(*h) + tag)
		return OPTR_WIRE_MALFORMED;

	f->flags = h->flags;
	f->src = be16_to_cpu(h->src);
	f->dst = be16_to_cpu(h->dst);
	f->comm = be32_to_cpu(h->comm);
	f->round = be32_to_cpu(h->round);
	f->msg = be32_to_cpu(h->msg);
	f->offset = be32_to_cpu(h->offset);
	f->total = be32_to_cpu(h->total);
	f->hint_us = be32_to_cpu(h->hint_us);
	f->feedback = be32_to_cpu(h->feedback);
	f->len = datalen - sizeof(*h) - tag;

	if (f->src >= OPTIREDUCE_MAX_RANKS ||
	    (f->dst >= OPTIREDUCE_MAX_RANKS && f->dst != OPTR_WIRE_DST_ALL))
		return OPTR_WIRE_MALFORMED;
	/* Multicast exactly when addressed to every rank. */
	if (f->flags & OPTR_WIRE_MCAST ? f->dst != OPTR_WIRE_DST_ALL :
					 f->dst == OPTR_WIRE_DST_ALL)
		return OPTR_WIRE_MALFORMED;
	if (!f->total || f->total > OPTIREDUCE_MAX_MSG)
		return OPTR_WIRE_MALFORMED;
	if (f->offset >= f->total || f->len > f->total - f->offset)
		return OPTR_WIRE_OUT_OF_BOUNDS;
	if (!!(f->flags & OPTR_WIRE_LAST) != (f->offset + f->len == f->total))
		return OPTR_WIRE_MALFORMED;
	return OPTR_WIRE_OK;
}

void optr_wire_build(struct optr_wire_hdr *h, const struct optr_frag *f)
{
	h->version = OPTR_WIRE_VERSION;
	h->flags = f->flags;
	h->src = cpu_to_be16(f->src);
	h->dst = cpu_to_be16(f->dst);
	h->reserved = 0;
	h->comm = cpu_to_be32(f->comm);
	h->round = cpu_to_be32(f->round);
	h->msg = cpu_to_be32(f->msg);
	h->offset = cpu_to_be32(f->offset);
	h->total = cpu_to_be32(f->total);
	h->hint_us = cpu_to_be32(f->hint_us);
	h->feedback = cpu_to_be32(f->feedback);
}
