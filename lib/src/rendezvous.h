/* SPDX-License-Identifier: MIT */
#ifndef OR_RENDEZVOUS_H
#define OR_RENDEZVOUS_H

/*
 * Rendezvous (rendezvous.c): ranks that know only a master's address
 * learn each other's, for optireduce_comm_create_from_env() (env.c).
 *
 * Implementation notes
 * - Every rank binds its mesh listener (any port) before it reports that
 *   address, and hands the bound socket on (*listen_fd) to the mesh: no
 *   other process can take the port between the two.
 */

#include <stdint.h>

#include "optireduce.h"

struct or_rdzv {
	const char *master;		/* "host:port" */
	unsigned int timeout_ms;
	uint64_t seed;			/* rank 0's is adopted by all */
};

/* Fills cfg's peers (*peers_out, freed with or_peers_free()) and seed,
 * and secret (OR_SECRET_LEN bytes): rank 0's, drawn at random unless it
 * came in set, is adopted by all; *listen_fd: this rank's bound mesh
 * listener. */
int or_rendezvous(struct optireduce_config *cfg, const struct or_rdzv *rz,
		  uint8_t *secret, char ***peers_out, int *listen_fd);
void or_peers_free(char **peers, int size);

#endif /* OR_RENDEZVOUS_H */
