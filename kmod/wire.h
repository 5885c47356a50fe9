/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The packet format: one UDP datagram per fragment, this header first.
 * Documentation/wire-format.md describes it for people; this is the
 * authority for the code.
 */
#ifndef _OPTR_WIRE_H
#define _OPTR_WIRE_H

#include <linux/types.h>
#include <uapi/linux/optireduce.h>

#define OPTR_WIRE_VERSION	1

/* flags */
#define OPTR_WIRE_LAST		0x01	/* highest-offset fragment of a message */
#define OPTR_WIRE_MCAST		0x02	/* sent once to the group */
#define OPTR_WIRE_AUTH		0x04	/* a tag follows the payload */
#define OPTR_WIRE_FLAGS		(OPTR_WIRE_LAST | OPTR_WIRE_MCAST | \
				 OPTR_WIRE_AUTH)

/* With OPTR_WIRE_AUTH: the tag's bytes, after the payload (see auth.c). */
#define OPTR_WIRE_TAG_LEN	OPTIREDUCE_AUTH_TAG_LEN

#define OPTR_WIRE_DST_ALL	0xffff

struct optr_wire_hdr {
	u8 version;
	u8 flags;
	__be16 src;		/* source rank */
	__be16 dst;		/* destination rank or OPTR_WIRE_DST_ALL */
	__be16 reserved;	/* sent 0, ignored */
	__be32 comm;
	__be32 round;
	__be32 msg;
	__be32 offset;		/* of this fragment's payload in the message */
	__be32 total;		/* message length */
	__be32 hint_us;		/* the send's timeout; receivers ignore it */
	__be32 feedback;	/* receiver's report, rate.h; 0: none */
} __packed;

/* A parsed header, host order; what the receive path works with. */
struct optr_frag {
	u32 comm;
	u32 round;
	u32 msg;
	u32 offset;
	u32 len;		/* payload bytes in this fragment, no tag */
	u32 total;
	u32 hint_us;
	u32 feedback;		/* rate.h; 0: no report */
	u16 src;
	u16 dst;
	u8 flags;
};

enum optr_wire_err {
	OPTR_WIRE_OK = 0,
	OPTR_WIRE_MALFORMED,	/* short, wrong version, bad flags, empty */
	OPTR_WIRE_OUT_OF_BOUNDS,/* payload beyond the message's end */
};

enum optr_wire_err optr_wire_parse(const struct optr_wire_hdr *h,
				   unsigned int datalen,
				   struct optr_frag *f);
void optr_wire_build(struct optr_wire_hdr *h, const struct optr_frag *f);

#endif /* _OPTR_WIRE_H */
