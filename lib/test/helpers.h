/* SPDX-License-Identifier: MIT */
#ifndef OR_TEST_HELPERS_H
#define OR_TEST_HELPERS_H

/*
 * Shared by the host tests. Each test is one program: exit 0 pass, 1 fail,
 * 77 skip. Multi-rank tests either fork processes talking TCP on
 * 127.0.0.1 (only loopback, ever) or run every rank in-process over the
 * simulated transport.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "optireduce.h"
#include "transport_sim.h"

#define T_SKIP 77

#define T_FAIL(...) do {						\
	fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);			\
	fprintf(stderr, __VA_ARGS__);					\
	fprintf(stderr, "\n");						\
	exit(1);							\
} while (0)

#define T_ASSERT(cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: assertion '%s' failed: ",	\
			__FILE__, __LINE__, #cond);			\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		exit(1);						\
	}								\
} while (0)

/* rc must be 0; otherwise fail with the library's explanation. */
#define T_OK(expr) do {							\
	int t_rc_ = (expr);						\
	if (t_rc_)							\
		T_FAIL("%s = %d (%s)", #expr, t_rc_,			\
		       optireduce_strerror(t_rc_));			\
} while (0)

/* n distinct free TCP ports on 127.0.0.1 (bound then released). */
void t_free_ports(int n, int *ports);
/* "127.0.0.1:port" strings for n ranks (static storage, reused). */
const char *const *t_peer_list(int n, const int *ports);

/*
 * Fork n processes running fn(rank, arg); their exit status is fn's return.
 * Kills them all after timeout_s. Returns 0 when every one returned 0.
 */
int t_spawn(int n, int (*fn)(int rank, void *arg), void *arg, int timeout_s);
/* Per rank after t_spawn: exit status, or -signal. */
extern int t_spawn_status[256];

/* Deterministic integer-valued data: exact in float32 sums. */
float t_value(int rank, size_t i, uint64_t salt);

/* In-process world over simulated fabrics. */
struct t_world {
	int n;
	struct or_sim_fabric *rel;
	struct or_sim_fabric *lossy;	/* NULL: reliable path only */
	optireduce_comm *comm[64];
};
/* cfg: rank and peers ignored; loss NULL: no lossy path at all. */
void t_world_init(struct t_world *w, int n, const struct optireduce_config *cfg,
		  const struct or_sim_loss *loss);
void t_world_fini(struct t_world *w);
/* Rank r's float buffer bufs[r]: t_value(r, i, salt) for each of count. */
void t_world_fill(struct t_world *w, void **bufs, size_t count, uint64_t salt);
/* buf holds the exact sum over n ranks of t_value(r, i, salt); else fail,
 * naming what (a label such as "call 3 rank 1"). */
void t_check_sum(const float *buf, int n, size_t count, uint64_t salt,
		 const char *what);
/* One allreduce on every rank (bufs[r]), async start then wait. */
void t_world_allreduce(struct t_world *w, void **bufs, size_t count, int dtype,
		       int op, struct optireduce_result *res);
/* The same, the last rank starting late_ms after the others. */
void t_world_allreduce_late(struct t_world *w, void **bufs, size_t count,
			    int dtype, int op, struct optireduce_result *res,
			    int late_ms);
/* t_world_fill with salt, then a float32 sum of bufs on every rank. */
void t_world_fill_sum(struct t_world *w, void **bufs, size_t count,
		      uint64_t salt, struct optireduce_result *res);

/*
 * A 16-bit call under the Hadamard transform (src/wire16.h): fail, naming
 * what, unless ||got - exact||_2 <= u_w (sum_r ||x_r||_2 + ||sum||_2) / div
 * + u_out ||exact||_2 (plus float32 slack), exact being sum / div in
 * float64. x[r]: rank r's input; wdtype: what crossed; dtype: the call's.
 */
void t_check_wire16(const double *got, const double *const *x, int n,
		    size_t count, int op, int wdtype, int dtype,
		    const char *what);

/* Internal entry points the tests reach through the static library. */
struct or_transport;
int or_comm_create_with(const struct optireduce_config *cfg,
			struct or_transport *rel, struct or_transport *lossy,
			int lossy_kind, optireduce_comm **out);
void or_test_no_compensation(optireduce_comm *c, int on);

/* A config for tests: quiet, short timeouts. */
void t_config(struct optireduce_config *cfg);
/* For the lossy-path tests: no warm-up, the safeguard never trips. */
void t_lossy_config(struct optireduce_config *cfg, int hadamard);

/* Two TCP ranks in this process (creation blocks until both connected, so
 * they are created from two threads). t_pair_init fills cfg (quiet, size
 * 2, loopback peers, TCP only); change options, then t_pair_create. */
struct t_pair {
	struct optireduce_config cfg;
	optireduce_comm *c;
	int rc;
};
void t_pair_init(struct t_pair p[2]);
void t_pair_create(struct t_pair p[2]);

#endif
