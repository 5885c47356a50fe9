// SPDX-License-Identifier: GPL-2.0
/* Counters; see stats.h. */

#include <linux/seq_file.h>

#include "netns.h"
#include "sock.h"
#include "stats.h"
#include "trace.h"
#include "wire.h"

const char *const optr_stat_names[OPTR_NSTATS] = {
	[OPTR_STAT_ROUNDS_OPENED] = "rounds_opened",
	[OPTR_STAT_ROUNDS_COMPLETED] = "rounds_completed",
	[OPTR_STAT_ROUNDS_EXPIRED] = "rounds_expired",
	[OPTR_STAT_ROUNDS_EARLY] = "rounds_early",
	[OPTR_STAT_ROUNDS_CANCELLED] = "rounds_cancelled",
	[OPTR_STAT_TX_PACKETS] = "tx_packets",
	[OPTR_STAT_TX_BYTES] = "tx_bytes",
	[OPTR_STAT_TX_DROPPED] = "tx_dropped",
	[OPTR_STAT_RX_PACKETS] = "rx_packets",
	[OPTR_STAT_RX_BYTES] = "rx_bytes",
	[OPTR_STAT_RX_DUPLICATE] = "rx_duplicate",
	[OPTR_STAT_DROP_MALFORMED] = "drop_malformed",
	[OPTR_STAT_DROP_UNKNOWN_COMM] = "drop_unknown_comm",
	[OPTR_STAT_DROP_FOREIGN_SOURCE] = "drop_foreign_source",
	[OPTR_STAT_DROP_STALE_ROUND] = "drop_stale_round",
	[OPTR_STAT_DROP_NO_POST] = "drop_no_post",
	[OPTR_STAT_DROP_OUT_OF_BOUNDS] = "drop_out_of_bounds",
	[OPTR_STAT_BYTES_LOST] = "bytes_lost",
	[OPTR_STAT_BACKLOG_QUEUED] = "backlog_queued",
	[OPTR_STAT_DROP_NOMEM] = "drop_nomem",
	[OPTR_STAT_RX_GSO_BATCHES] = "rx_gso_batches",
	[OPTR_STAT_RX_STEERED] = "rx_steered",
	[OPTR_STAT_DROP_MEM_LIMIT] = "drop_mem_limit",
	[OPTR_STAT_DROP_AUTH] = "drop_auth",
};

void optr_stat_net(struct optr_net *on, enum optr_stat s, u64 n)
{
	atomic64_add(n, &on->stats[s]);
}

/* Counts for the socket and its namespace. */
void optr_stat_sock(struct optr_sock *osk, enum optr_stat s, u64 n)
{
	lockdep_assert_held(&osk->lock);
	osk->stats[s] += n;
	optr_stat_net(osk->on, s, n);
}

/*
 * A packet the transport could not use: count it where it belongs (the
 * socket, if one was found, and always the namespace) and trace it. Never
 * logged: a flood of foreign packets must not flood the log.
 */
void optr_drop(struct optr_net *on, struct optr_sock *osk, enum optr_stat why,
	       const struct optr_frag *f)
{
	if (osk)
		optr_stat_sock(osk, why, 1);
	else
		optr_stat_net(on, why, 1);
	trace_optireduce_drop(why, f ? f->comm : 0, f ? f->round : 0,
			      f ? f->src : 0);
}

void optr_stats_copy_sock(struct optr_sock *osk, struct optireduce_stats *st)
{
	u64 *v = (u64 *)st;
	int i;

	spin_lock_bh(&osk->lock);
	for (i = 0; i < OPTR_NSTATS; i++)
		v[i] = osk->stats[i];
	spin_unlock_bh(&osk->lock);
}

void optr_stats_copy_net(struct optr_net *on, struct optireduce_stats *st)
{
	u64 *v = (u64 *)st;
	int i;

	for (i = 0; i < OPTR_NSTATS; i++)
		v[i] = atomic64_read(&on->stats[i]);
}

/* One "prefix name value" line per counter. */
void optr_stats_show(struct seq_file *seq, const char *prefix,
		     const struct optireduce_stats *st)
{
	const u64 *v = (const u64 *)st;
	int i;

	for (i = 0; i < OPTR_NSTATS; i++)
		seq_printf(seq, "%s%s %llu\n", prefix, optr_stat_names[i], v[i]);
}
