// SPDX-License-Identifier: MIT
/*
 * A rank that dies (exits without destroying, or is killed in the middle
 * of a call) makes the others' calls fail promptly with a clear error
 * (-ECONNRESET, then -ENOTCONN), not hang until a timeout.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static int ports[4];

static int rank_main(int rank, void *arg)
{
	int mode = *(int *)arg;
	struct optireduce_config cfg;
	struct optireduce_result res;
	optireduce_comm *c;
	static float buf[200000];
	int rc;

	t_config(&cfg);
	cfg.rank = rank;
	cfg.size = 3;
	cfg.peers = t_peer_list(3, ports);
	cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
	cfg.timeout_ms = 20000;		/* the test fails if we get here */
	T_OK(optireduce_comm_create(&cfg, &c));
	T_OK(optireduce_allreduce(c, buf, 1000, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL));
	if (rank == 2) {
		if (mode == 0)
			_exit(0);		/* gone without a word */
		usleep(20000);
		kill(getpid(), SIGKILL);	/* dies in the middle of a call */
	}
	for (int i = 0; i < 5; i++) {
		rc = optireduce_allreduce(c, buf, 200000, OPTIREDUCE_FLOAT32,
					  OPTIREDUCE_SUM, &res);
		if (rc)
			break;
	}
	T_ASSERT(rc == -ECONNRESET || rc == -EPIPE, "rank %d: %d (%s)", rank, rc,
		 optireduce_strerror(rc));
	rc = optireduce_allreduce(c, buf, 10, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL);
	T_ASSERT(rc == -ENOTCONN, "then: %d", rc);
	T_OK(optireduce_comm_destroy(c));
	return 0;
}

int main(void)
{
	for (int mode = 0; mode < 2; mode++) {
		t_free_ports(3, ports);
		t_spawn(3, rank_main, &mode, 15);
		T_ASSERT(t_spawn_status[0] == 0 && t_spawn_status[1] == 0,
			 "mode %d: survivors %d %d", mode, t_spawn_status[0],
			 t_spawn_status[1]);
		T_ASSERT(t_spawn_status[2] == (mode ? -SIGKILL : 0), "rank 2 %d",
			 t_spawn_status[2]);
	}
	return 0;
}
