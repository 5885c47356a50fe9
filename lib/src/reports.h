/* SPDX-License-Identifier: MIT */
#ifndef OR_REPORTS_H
#define OR_REPORTS_H

/*
 * Loss reports (reports.c): after every call each rank tells the others,
 * over the reliable path, what it lost and its own t_B; from these every
 * rank takes, alike and without a barrier, the decisions that must be
 * the same everywhere: the safeguard's fallback, HADAMARD_AUTO, the
 * incast limit, the agreed bound, and results' group_lost_ppm.
 *
 * Implementation notes
 * - Progress thread only. A report message carries a batch of
 *   OR_REPORT_BATCH calls (engine.h); the ring of OR_REPORT_SLOTS batches
 *   holds up to OR_REPORT_LAG calls reported but not yet consumed.
 * - A function returning int returns 0 or the reliable transport's error,
 *   which breaks the communicator (the caller's job).
 */

#include <stdint.h>

#include "comm.h"

/* Reports are exchanged at all: a lossy path and more than one rank. */
int or_reporting(optireduce_comm *c);
/* Whether @call may start: the reports it depends on are consumed (which
 * applies their decisions), and the ring has room for its own. 0: wait,
 * a report arriving wakes the engine. */
int or_reports_allow(optireduce_comm *c, const struct or_call *call);
/* At the start of call seq, of bytes, lossy or not, run at dynamic incast
 * limit incast (0: a fixed limit, which no decision learns from). */
int or_report_start(optireduce_comm *c, uint64_t seq, int lossy,
		    uint64_t bytes, unsigned int incast);
/* At the end of call seq: its loss in entries of the result. */
int or_report_finish(optireduce_comm *c, uint64_t seq, int lossy,
		     uint64_t lost, uint64_t expected);
/* Closing: send a batch the last call left short. */
int or_report_flush(optireduce_comm *c);
/* Completions of batch's messages: a peer's arrived; ours went out (res
 * < 0: a peer that left, which is no failure). */
void or_report_received(optireduce_comm *c, uint64_t batch);
void or_report_sent(optireduce_comm *c, uint64_t batch, int res);
/* group_lost_ppm of call seq: the worst rank's loss of call
 * seq - OR_REPORT_LAG, consumed before seq could start. */
uint32_t or_report_group_ppm(optireduce_comm *c, uint64_t seq);

#endif /* OR_REPORTS_H */
