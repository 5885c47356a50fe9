/* SPDX-License-Identifier: MIT */
#ifndef OR_USER_DATA_H
#define OR_USER_DATA_H

/*
 * What the engine tags each request with (or_send/or_recv user_data), so
 * that a completion says what it completes: its kind, the peer, and the
 * call (or, for loss reports, the batch).
 *
 * Implementation notes
 * - Layout: kind (4 bits) | peer rank (20 bits) | seq (40 bits). 40 bits
 *   of calls outlast any run; a completion is matched against the active
 *   call on those bits alone.
 */

#include <stdint.h>

enum or_ud_kind {
	UD_P1_RECV = 1,
	UD_P1_SEND,
	UD_P2_RECV,
	UD_P2_SEND,
	UD_REPORT_RECV,
	UD_REPORT_SEND,
	UD_READY_RECV,
	UD_READY_SEND,
	UD_P1_SCATTER,		/* peer: the first rank the send went to */
};

#define UD_SEQ_MASK	((1ull << 40) - 1)
#define UD_KIND(u)	((unsigned int)((u) >> 60))
#define UD_PEER(u)	((int)(((u) >> 40) & 0xfffff))
#define UD_SEQ(u)	((u) & UD_SEQ_MASK)

static inline uint64_t ud(unsigned int kind, int peer, uint64_t seq)
{
	return (uint64_t)kind << 60 | (uint64_t)(peer & 0xfffff) << 40 |
	       (seq & UD_SEQ_MASK);
}

#endif /* OR_USER_DATA_H */
