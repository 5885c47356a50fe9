// SPDX-License-Identifier: MIT
/*
 * A peer that stops calling, its connection still up (SIGSTOP, a hung
 * device): the other rank's lossy calls end at their deadlines, until
 * the next one needs loss reports the stopped peer never sent. That call
 * is held back, and still times out at timeout_ms, counted from when it
 * could have started: -ETIMEDOUT, the communicator broken, instead of a
 * wait for good. The timeout is the one the call was started with, not
 * one set while it waits.
 */
#include <errno.h>
#include <unistd.h>

#include "helpers.h"
#include "util.h"

#define N		2
#define COUNT		1024
#define WARMUP		4
#define TIMEOUT_MS	2500	/* above a catch-up call's wait of 1 s */
#define STOP		(WARMUP + 2)	/* rank 1's last call is STOP - 1 */

/* What rank 1 never sends: its receives on rank 0 end at their deadline
 * (the simulated fabric expires only what its loss model says). */
static int late(void *arg, int src, int dst, uint64_t tag)
{
	(void)arg;
	(void)dst;
	return src == 1 && or_tag_seq(tag) >= STOP;
}

int main(void)
{
	struct or_sim_loss loss = { .packet = 1000, .late = late };
	struct optireduce_config cfg;
	struct optireduce_result res[N];
	static float bufs[N][COUNT];
	int64_t t_last = 0, t_fail;
	void *b[N];
	struct t_world w;
	int call, rc = 0;

	/* Without the bound the call below never returns; with the
	 * timeout set after it started, only after 60 s. */
	alarm(30);
	t_lossy_config(&cfg, 0);
	cfg.warmup_calls = WARMUP;
	cfg.timeout_ms = TIMEOUT_MS;
	cfg.hadamard = OPTIREDUCE_HADAMARD_OFF;
	t_world_init(&w, N, &cfg, &loss);
	for (int r = 0; r < N; r++)
		b[r] = bufs[r];
	for (call = 0; call < STOP; call++) {
		t_world_fill(&w, b, COUNT, call);
		t_world_allreduce(&w, b, COUNT, OPTIREDUCE_FLOAT32,
				  OPTIREDUCE_SUM, res);
	}
	/* Rank 1 stops; rank 0 goes on alone. */
	for (; call < STOP + 4 * OPTIREDUCE_REPORT_LAG; call++) {
		optireduce_handle h;

		T_OK(optireduce_allreduce_start(w.comm[0], bufs[0], COUNT,
						OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &h));
		/* A call keeps the options it was started with. */
		T_OK(optireduce_comm_set_option(w.comm[0],
						OPTIREDUCE_OPT_TIMEOUT_MS,
						60000));
		rc = optireduce_allreduce_wait(w.comm[0], h, res);
		if (rc)
			break;
		T_OK(optireduce_comm_set_option(w.comm[0],
						OPTIREDUCE_OPT_TIMEOUT_MS,
						TIMEOUT_MS));
		t_last = or_now_ns();
	}
	t_fail = or_now_ns();
	printf("# rank 0 alone from call %d: call %d failed %.0f ms after the "
	       "last one ended\n", STOP, call, (t_fail - t_last) / 1e6);
	T_ASSERT(rc == -ETIMEDOUT, "call %d: %d (%s)", call, rc,
		 optireduce_strerror(rc));
	/* Held, not timed out as an active call: the reports ran out
	 * after about OPTIREDUCE_REPORT_LAG calls alone. */
	T_ASSERT(call > STOP && call <= STOP + OPTIREDUCE_REPORT_LAG + 1,
		 "failed at call %d", call);
	T_ASSERT(t_fail - t_last >= (int64_t)TIMEOUT_MS * 1000000,
		 "failed %.0f ms after the last call", (t_fail - t_last) / 1e6);
	rc = optireduce_allreduce(w.comm[0], bufs[0], COUNT, OPTIREDUCE_FLOAT32,
				  OPTIREDUCE_SUM, res);
	T_ASSERT(rc == -ETIMEDOUT || rc == -ENOTCONN,
		 "after: %d (%s)", rc, optireduce_strerror(rc));
	t_world_fini(&w);
	return 0;
}
