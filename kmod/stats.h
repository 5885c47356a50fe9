/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters, kept twice: per socket (plain u64 under the socket's lock) and
 * per namespace (atomics, since packets that match no socket count there
 * too). The index order is the field order of struct optireduce_stats, so
 * either copies out as that struct.
 */
#ifndef _OPTR_STATS_H
#define _OPTR_STATS_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <uapi/linux/optireduce.h>

enum optr_stat {
	OPTR_STAT_ROUNDS_OPENED,
	OPTR_STAT_ROUNDS_COMPLETED,
	OPTR_STAT_ROUNDS_EXPIRED,
	OPTR_STAT_ROUNDS_EARLY,
	OPTR_STAT_ROUNDS_CANCELLED,
	OPTR_STAT_TX_PACKETS,
	OPTR_STAT_TX_BYTES,
	OPTR_STAT_TX_DROPPED,
	OPTR_STAT_RX_PACKETS,
	OPTR_STAT_RX_BYTES,
	OPTR_STAT_RX_DUPLICATE,
	OPTR_STAT_DROP_MALFORMED,
	OPTR_STAT_DROP_UNKNOWN_COMM,
	OPTR_STAT_DROP_FOREIGN_SOURCE,
	OPTR_STAT_DROP_STALE_ROUND,
	OPTR_STAT_DROP_NO_POST,
	OPTR_STAT_DROP_OUT_OF_BOUNDS,
	OPTR_STAT_BYTES_LOST,
	OPTR_STAT_BACKLOG_QUEUED,
	OPTR_STAT_DROP_NOMEM,
	OPTR_STAT_RX_GSO_BATCHES,
	OPTR_STAT_RX_STEERED,
	OPTR_STAT_DROP_MEM_LIMIT,
	OPTR_STAT_DROP_AUTH,
	OPTR_NSTATS
};

static_assert(sizeof(struct optireduce_stats) == OPTR_NSTATS * sizeof(__u64));

struct optr_frag;
struct optr_net;
struct optr_sock;
struct seq_file;

extern const char *const optr_stat_names[OPTR_NSTATS];

void optr_stat_net(struct optr_net *on, enum optr_stat s, u64 n);
void optr_stat_sock(struct optr_sock *osk, enum optr_stat s, u64 n);
void optr_drop(struct optr_net *on, struct optr_sock *osk, enum optr_stat why,
	       const struct optr_frag *f);
void optr_stats_copy_sock(struct optr_sock *osk, struct optireduce_stats *st);
void optr_stats_copy_net(struct optr_net *on, struct optireduce_stats *st);
void optr_stats_show(struct seq_file *seq, const char *prefix,
		     const struct optireduce_stats *st);

#endif /* _OPTR_STATS_H */
