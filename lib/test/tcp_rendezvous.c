// SPDX-License-Identifier: MIT
/*
 * torchrun-style launch: RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1,
 * MASTER_PORT; the rendezvous runs on MASTER_PORT + 1 (MASTER_PORT belongs
 * to torch's store), or on OPTIREDUCE_MASTER_PORT. Ranks start in reverse
 * order (rank 0 last) to exercise the retries. Also OPTIREDUCE_PEERS and a
 * world of one.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static int port, mode;
static char peers_env[512];

static int rank_main(int rank, void *arg)
{
	int n = *(int *)arg;
	char v[32];
	optireduce_comm *c;
	int64_t got;
	float buf[1000];

	usleep((n - 1 - rank) * 30000);
	snprintf(v, sizeof(v), "%d", rank);
	setenv("RANK", v, 1);
	snprintf(v, sizeof(v), "%d", n);
	setenv("WORLD_SIZE", v, 1);
	setenv("OPTIREDUCE_QUIET", "1", 1);
	setenv("OPTIREDUCE_TRANSPORT", "tcp", 1);
	setenv("OPTIREDUCE_TIMEOUT_MS", "30000", 1);
	if (mode == 2) {
		setenv("OPTIREDUCE_PEERS", peers_env, 1);
	} else {
		setenv("MASTER_ADDR", "127.0.0.1", 1);
		snprintf(v, sizeof(v), "%d", mode == 0 ? port - 1 : 1);
		setenv("MASTER_PORT", v, 1);
		if (mode == 1) {
			snprintf(v, sizeof(v), "%d", port);
			setenv("OPTIREDUCE_MASTER_PORT", v, 1);
		}
	}
	T_OK(optireduce_comm_create_from_env(NULL, &c));
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_RANK, &got));
	T_ASSERT(got == rank, "rank %lld", (long long)got);
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_SIZE, &got));
	T_ASSERT(got == n, "size %lld", (long long)got);
	for (int i = 0; i < 1000; i++)
		buf[i] = t_value(rank, i, n);
	T_OK(optireduce_allreduce(c, buf, 1000, OPTIREDUCE_FLOAT32, OPTIREDUCE_MEAN, NULL));
	for (int i = 0; i < 1000; i++) {
		float sum = 0;

		for (int q = 0; q < n; q++)
			sum += t_value(q, i, n);
		T_ASSERT(buf[i] == sum / n, "entry %d", i);
	}
	T_OK(optireduce_comm_destroy(c));
	return 0;
}

int main(void)
{
	int ports[8];

	for (mode = 0; mode <= 2; mode++) {
		for (int n = 1; n <= 4; n++) {
			t_free_ports(n, ports);
			port = ports[0];
			peers_env[0] = 0;
			for (int r = 0; r < n; r++)
				snprintf(peers_env + strlen(peers_env),
					 sizeof(peers_env) - strlen(peers_env),
					 "%s127.0.0.1:%d", r ? "," : "", ports[r]);
			if (t_spawn(n, rank_main, &n, 60))
				T_FAIL("mode %d N = %d failed", mode, n);
		}
	}
	return 0;
}
