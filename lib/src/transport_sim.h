/* SPDX-License-Identifier: MIT */
#ifndef OR_TRANSPORT_SIM_H
#define OR_TRANSPORT_SIM_H

/*
 * Simulated transport: the ranks of a communicator live in one process and
 * share a fabric. With a loss description it behaves like the lossy kernel
 * transport (deterministic packet loss, late messages that end at their
 * deadline, native send-to-all); without, like a reliable one. Tests drive
 * the real engine, TAR and compensation code through it.
 *
 * Timing never decides what is lost: a message counts as late only when
 * the loss description says so, so results do not depend on how the
 * threads are scheduled (valgrind, a loaded machine).
 */

#include "transport.h"

struct or_sim_loss {
	uint32_t packet;	/* bytes per simulated packet (> 0) */
	/* 1: drop packet pkt of npkts of message src -> dst. NULL: none. */
	int (*drop)(void *arg, int src, int dst, uint64_t tag, uint64_t pkt,
		    uint64_t npkts);
	/* 1: message src -> dst never arrives; its receive ends at its
	 * deadline (a straggler). NULL: none. */
	int (*late)(void *arg, int src, int dst, uint64_t tag);
	/* 1: rank dst cannot post its receive of src's message tag (as the
	 * kernel transport when the buffer cannot be pinned): it completes
	 * at once, OR_CQE_UNPOSTED, all missing. NULL: none. */
	int (*unposted)(void *arg, int src, int dst, uint64_t tag);
	/* Sees every receive rank posts, with the deadline and early-timeout
	 * hint the engine gave it. NULL: none. */
	void (*posted)(void *arg, int rank, const struct or_recv *rx);
	/* Sees the engine's path_rate() on rank's lossy endpoint, with the
	 * bytes that endpoint had sent before it. NULL: none. */
	void (*path_rate)(void *arg, int rank, uint64_t mbps, uint64_t sent);
	void *arg;
};

struct or_sim_fabric;

/* loss NULL: a reliable fabric. */
struct or_sim_fabric *or_sim_fabric_create(int size,
					   const struct or_sim_loss *loss);
/* After every transport on it was destroyed. */
void or_sim_fabric_destroy(struct or_sim_fabric *f);
int or_sim_transport_create(struct or_sim_fabric *f, int rank,
			    struct or_transport **out);

#endif /* OR_TRANSPORT_SIM_H */
