/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints: rounds opening and ending, every dropped packet with its
 * reason, every report rate control applies (rate.c), and every send with
 * where its time went (send.c). perf trace -e 'optireduce:*' or tracefs
 * events/optireduce/.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM optireduce

#if !defined(_OPTR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _OPTR_TRACE_H

#include <linux/tracepoint.h>

#include "sock.h"
#include "stats.h"

/* So that tools reading the event format can resolve the reasons. */
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_MALFORMED);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_UNKNOWN_COMM);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_FOREIGN_SOURCE);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_STALE_ROUND);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_NO_POST);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_OUT_OF_BOUNDS);
TRACE_DEFINE_ENUM(OPTR_STAT_DROP_NOMEM);

TRACE_EVENT(optireduce_round_open,
	TP_PROTO(u32 comm, u32 rank, u32 round, u32 deadline_us,
		 u32 typical_us),
	TP_ARGS(comm, rank, round, deadline_us, typical_us),
	TP_STRUCT__entry(
		__field(u32, comm)
		__field(u32, rank)
		__field(u32, round)
		__field(u32, deadline_us)
		__field(u32, typical_us)
	),
	TP_fast_assign(
		__entry->comm = comm;
		__entry->rank = rank;
		__entry->round = round;
		__entry->deadline_us = deadline_us;
		__entry->typical_us = typical_us;
	),
	TP_printk("comm=%u rank=%u round=%u deadline_us=%u typical_us=%u",
		  __entry->comm, __entry->rank, __entry->round,
		  __entry->deadline_us, __entry->typical_us)
);

TRACE_EVENT(optireduce_round_end,
	TP_PROTO(u32 comm, u32 rank, u32 round, u32 status, u64 elapsed_us),
	TP_ARGS(comm, rank, round, status, elapsed_us),
	TP_STRUCT__entry(
		__field(u32, comm)
		__field(u32, rank)
		__field(u32, round)
		__field(u32, status)
		__field(u64, elapsed_us)
	),
	TP_fast_assign(
		__entry->comm = comm;
		__entry->rank = rank;
		__entry->round = round;
		__entry->status = status;
		__entry->elapsed_us = elapsed_us;
	),
	TP_printk("comm=%u rank=%u round=%u status=%s elapsed_us=%llu",
		  __entry->comm, __entry->rank, __entry->round,
		  __print_symbolic(__entry->status,
				   { 0, "complete" }, { 1, "expired" },
				   { 2, "early" }, { 3, "cancelled" }),
		  __entry->elapsed_us)
);

TRACE_EVENT(optireduce_drop,
	TP_PROTO(int reason, u32 comm, u32 round, u32 src),
	TP_ARGS(reason, comm, round, src),
	TP_STRUCT__entry(
		__field(int, reason)
		__field(u32, comm)
		__field(u32, round)
		__field(u32, src)
	),
	TP_fast_assign(
		__entry->reason = reason;
		__entry->comm = comm;
		__entry->round = round;
		__entry->src = src;
	),
	TP_printk("reason=%s comm=%u round=%u src=%u",
		  __print_symbolic(__entry->reason,
				   { OPTR_STAT_DROP_MALFORMED, "malformed" },
				   { OPTR_STAT_DROP_UNKNOWN_COMM, "unknown_comm" },
				   { OPTR_STAT_DROP_FOREIGN_SOURCE, "foreign_source" },
				   { OPTR_STAT_DROP_STALE_ROUND, "stale_round" },
				   { OPTR_STAT_DROP_NO_POST, "no_post" },
				   { OPTR_STAT_DROP_OUT_OF_BOUNDS, "out_of_bounds" },
				   { OPTR_STAT_DROP_NOMEM, "nomem" },
				   { OPTR_STAT_DROP_MEM_LIMIT, "mem_limit" },
				   { OPTR_STAT_DROP_AUTH, "auth" }),
		  __entry->comm, __entry->round, __entry->src)
);

TRACE_EVENT(optireduce_rate,
	TP_PROTO(u32 comm, u32 rank, u32 peer, u32 old_mbps, u32 new_mbps,
		 u32 loss, u32 ce, bool queue),
	TP_ARGS(comm, rank, peer, old_mbps, new_mbps, loss, ce, queue),
	TP_STRUCT__entry(
		__field(u32, comm)
		__field(u32, rank)
		__field(u32, peer)
		__field(u32, old_mbps)
		__field(u32, new_mbps)
		__field(u32, loss)
		__field(u32, ce)
		__field(bool, queue)
	),
	TP_fast_assign(
		__entry->comm = comm;
		__entry->rank = rank;
		__entry->peer = peer;
		__entry->old_mbps = old_mbps;
		__entry->new_mbps = new_mbps;
		__entry->loss = loss;
		__entry->ce = ce;
		__entry->queue = queue;
	),
	TP_printk("comm=%u rank=%u peer=%u old_mbps=%u new_mbps=%u loss=%u/255 ce=%u/255 queue=%d",
		  __entry->comm, __entry->rank, __entry->peer,
		  __entry->old_mbps, __entry->new_mbps, __entry->loss,
		  __entry->ce, __entry->queue)
);

/*
 * One send (OPTIREDUCE_CMSG_SEND) ended: to rank @dst, or every peer
 * (0xffffffff), @t->bytes of payload left over all copies and
 * @t->unsent fragments did not; of its @elapsed_us, @lock_us waiting
 * for another send of the socket, @t->pace_ns asleep for the rate (of
 * which @t->late_ns after the time each sleep was to end: the host's
 * timer and scheduling latency) and @t->room_ns waiting for room in the
 * send buffer (datagrams sent before not yet gone); the rest built and
 * sent. @t->behind_ns: how far, over the send, it fell behind its rate
 * by more than it may catch up (optr_pace()). @err: 0 or the error.
 */
TRACE_EVENT(optireduce_send,
	TP_PROTO(u32 comm, u32 rank, u32 dst, u32 round,
		 const struct optr_tx_tally *t, s64 elapsed_us, s64 lock_us,
		 int err),
	TP_ARGS(comm, rank, dst, round, t, elapsed_us, lock_us, err),
	TP_STRUCT__entry(
		__field(u32, comm)
		__field(u32, rank)
		__field(u32, dst)
		__field(u32, round)
		__field(u64, bytes)
		__field(u64, unsent)
		__field(u64, elapsed_us)
		__field(u64, lock_us)
		__field(u64, pace_us)
		__field(u64, late_us)
		__field(u64, room_us)
		__field(u64, behind_us)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->comm = comm;
		__entry->rank = rank;
		__entry->dst = dst;
		__entry->round = round;
		__entry->bytes = t->bytes;
		__entry->unsent = t->unsent;
		__entry->elapsed_us = elapsed_us;
		__entry->lock_us = lock_us;
		__entry->pace_us = div_u64(t->pace_ns, NSEC_PER_USEC);
		__entry->late_us = div_u64(t->late_ns, NSEC_PER_USEC);
		__entry->room_us = div_u64(t->room_ns, NSEC_PER_USEC);
		__entry->behind_us = div_u64(t->behind_ns, NSEC_PER_USEC);
		__entry->err = err;
	),
	TP_printk("comm=%u rank=%u dst=%d round=%u bytes=%llu unsent=%llu elapsed_us=%llu lock_us=%llu pace_us=%llu late_us=%llu room_us=%llu behind_us=%llu err=%d",
		  __entry->comm, __entry->rank, (int)__entry->dst,
		  __entry->round, __entry->bytes, __entry->unsent,
		  __entry->elapsed_us, __entry->lock_us, __entry->pace_us,
		  __entry->late_us, __entry->room_us, __entry->behind_us,
		  __entry->err)
);

#endif /* _OPTR_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
