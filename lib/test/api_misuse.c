// SPDX-License-Identifier: MIT
/*
 * Every misuse path of the API returns its negative errno, never crashes:
 * NULL pointers, bad sizes and ranks, unknown dtypes and ops and options,
 * reserved fields, stale and foreign handles, a communicator that was
 * destroyed or never created, calls that disagree between ranks, a peer
 * that went away, destroy with calls in flight.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static optireduce_comm *solo(void)
{
	static const char *const peers[] = { "127.0.0.1:0" };
	struct optireduce_config cfg;
	optireduce_comm *c;

	t_config(&cfg);
	cfg.peers = peers;
	T_OK(optireduce_comm_create(&cfg, &c));
	return c;
}

static void expect(int got, int want, const char *what)
{
	T_ASSERT(got == want, "%s: got %d (%s), want %d (%s)", what, got,
		 optireduce_strerror(got), want, optireduce_strerror(want));
}

/* Two ranks in this process; rank 1 may get another Hadamard mode. */
static void pair(struct t_pair a[2], unsigned int hadamard1)
{
	t_pair_init(a);
	a[0].cfg.timeout_ms = a[1].cfg.timeout_ms = 5000;
	a[1].cfg.hadamard = hadamard1;
	t_pair_create(a);
}

struct wait_arg {
	optireduce_comm *c;
	optireduce_handle h;
	int rc;
};

static void *wait_thread(void *p)
{
	struct wait_arg *w = p;

	w->rc = optireduce_allreduce_wait(w->c, w->h, NULL);
	return NULL;
}

int main(void)
{
	static const char *const bad_peers[] = { "127.0.0.1:1", "nonsense" };
	static const char *const null_peer[] = { "127.0.0.1:1", NULL };
	static const char *const two_peers[] = { "127.0.0.1:1", "127.0.0.1:2" };
	struct optireduce_config cfg;
	struct optireduce_result res;
	struct optireduce_stats st;
	optireduce_comm *c, *c2, *fake;
	static char fake_mem[4096];
	optireduce_handle h, h2;
	float buf[16] = { 0 };
	int64_t v;

	/* --- create --- */
	t_config(&cfg);
	cfg.timeout_ms = 3000;
	expect(optireduce_comm_create(NULL, &c), -EFAULT, "NULL config");
	expect(optireduce_comm_create(&cfg, NULL), -EFAULT, "NULL out");
	expect(optireduce_comm_create(&cfg, &c), -EFAULT, "NULL peers");
	T_ASSERT(c == NULL, "out not cleared");
	cfg.peers = bad_peers;
	cfg.size = 2;
	cfg.rank = 2;
	expect(optireduce_comm_create(&cfg, &c), -ERANGE, "rank >= size");
	cfg.rank = -1;
	expect(optireduce_comm_create(&cfg, &c), -ERANGE, "rank < 0");
	cfg.rank = 0;
	cfg.size = 0;
	expect(optireduce_comm_create(&cfg, &c), -ERANGE, "size 0");
	cfg.size = OPTIREDUCE_MAX_RANKS + 1;
	expect(optireduce_comm_create(&cfg, &c), -ERANGE, "size too large");
	cfg.size = 2;
	cfg.reserved[3] = 1;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "reserved");
	cfg.reserved[3] = 0;
	cfg.hadamard_block = 1000;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "block not a power of two");
	cfg.hadamard_block = 4096;
	cfg.hadamard = 7;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "hadamard mode");
	cfg.hadamard = 0;
	cfg.transport = 9;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "transport");
	cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
	cfg.max_inflight = 0;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "max_inflight 0");
	cfg.max_inflight = 8;
	cfg.flags = 0x80;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "unknown flag");
	cfg.flags = OPTIREDUCE_CFG_QUIET | OPTIREDUCE_CFG_AUTH;
	cfg.peers = two_peers;
	unsetenv("OPTIREDUCE_SECRET");
	expect(optireduce_comm_create(&cfg, &c), -EINVAL,
	       "authenticated datagrams without a secret");
	cfg.flags = OPTIREDUCE_CFG_QUIET;
	cfg.peers = null_peer;
	expect(optireduce_comm_create(&cfg, &c), -EFAULT, "NULL peer entry");
	cfg.peers = bad_peers;
	cfg.rank = 1;
	expect(optireduce_comm_create(&cfg, &c), -EINVAL, "unparsable address");
	cfg.transport = OPTIREDUCE_TRANSPORT_KERNEL;
	cfg.rank = 0;
	{
		int rc = optireduce_comm_create(&cfg, &c);

		/* Loaded: the peer table cannot be built from that list. */
		T_ASSERT(rc == (access("/sys/module/optireduce", F_OK) ?
				-EAFNOSUPPORT : -EINVAL), "kernel: %d", rc);
	}

	/* --- a live communicator --- */
	c = solo();
	c2 = solo();
	expect(optireduce_allreduce(c, NULL, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EFAULT, "NULL buffer");
	expect(optireduce_allreduce(c, buf, 0, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EINVAL, "count 0");
	expect(optireduce_allreduce(c, buf, OPTIREDUCE_MAX_COUNT + 1, OPTIREDUCE_FLOAT32,
				    OPTIREDUCE_SUM, NULL), -E2BIG, "count too large");
	expect(optireduce_allreduce(c, buf, (size_t)-1, OPTIREDUCE_FLOAT32,
				    OPTIREDUCE_SUM, NULL), -E2BIG, "count -1");
	expect(optireduce_allreduce(c, buf, 4, 0, OPTIREDUCE_SUM, NULL), -EOPNOTSUPP, "dtype 0");
	expect(optireduce_allreduce(c, buf, 4, 99, OPTIREDUCE_SUM, NULL), -EOPNOTSUPP, "dtype 99");
	expect(optireduce_allreduce(c, buf, 4, OPTIREDUCE_FLOAT32, 0, NULL), -EOPNOTSUPP, "op 0");
	expect(optireduce_allreduce(c, buf, 4, OPTIREDUCE_FLOAT32, 3, NULL), -EOPNOTSUPP, "op 3");
	expect(optireduce_allreduce_start(c, buf, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EFAULT, "NULL handle");
	expect(optireduce_allreduce_test(c, 0, &res), -ESRCH, "handle 0");
	expect(optireduce_allreduce_wait(c, 0xdeadbeef, &res), -ESRCH, "random handle");
	expect(optireduce_allreduce_wait(c, ~0ull, &res), -ESRCH, "handle ~0");
	/* A world of one: the sum is the input. */
	for (int i = 0; i < 16; i++)
		buf[i] = i;
	T_OK(optireduce_allreduce_start(c, buf, 16, OPTIREDUCE_FLOAT32, OPTIREDUCE_MEAN, &h));
	T_OK(optireduce_allreduce_wait(c, h, &res));
	T_ASSERT(buf[5] == 5 && res.count == 16 && res.expected == 0, "solo result");
	expect(optireduce_allreduce_wait(c, h, &res), -ESRCH, "collected handle");
	expect(optireduce_allreduce_test(c, h, &res), -ESRCH, "collected handle (test)");
	/* A handle of another communicator. */
	T_OK(optireduce_allreduce_start(c2, buf, 8, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, &h2));
	T_OK(optireduce_allreduce_start(c, buf + 8, 8, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, &h));
	T_OK(optireduce_allreduce_wait(c2, h2, NULL));
	expect(optireduce_allreduce_wait(c2, h2, NULL), -ESRCH, "foreign/consumed");
	T_OK(optireduce_allreduce_wait(c, h, NULL));

	/* options */
	expect(optireduce_comm_set_option(c, 12345, 1), -EINVAL, "unknown option");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_RANK, 1), -EPERM, "read-only");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_HADAMARD, 5), -EINVAL, "hadamard 5");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_HADAMARD_BLOCK, 3), -EINVAL, "block 3");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_INCAST, -1), -EINVAL, "incast -1");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_LOSS_THRESHOLD_PPM, 2000000),
	       -EINVAL, "threshold > 1");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_TIMEOUT_MS, -5), -EINVAL, "timeout");
	T_OK(optireduce_comm_set_option(c, OPTIREDUCE_OPT_INCAST, 3));
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_INCAST, &v));
	T_ASSERT(v == 3, "incast read back");
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_TRANSPORT, &v));
	T_ASSERT(v == OPTIREDUCE_TRANSPORT_TCP, "transport in use");
	expect(optireduce_comm_get_option(c, OPTIREDUCE_OPT_RANK, NULL), -EFAULT, "NULL value");
	expect(optireduce_comm_get_option(c, 0, &v), -EINVAL, "option 0");
	expect(optireduce_comm_stats(c, NULL), -EFAULT, "NULL stats");
	T_OK(optireduce_comm_stats(c, &st));
	T_ASSERT(st.calls == 2, "stats calls %llu", (unsigned long long)st.calls);

	/* --- not a communicator --- */
	fake = (optireduce_comm *)fake_mem;
	expect(optireduce_allreduce(NULL, buf, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EBADF, "NULL comm");
	expect(optireduce_allreduce(fake, buf, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EBADF, "never created");
	expect(optireduce_comm_destroy(NULL), -EBADF, "destroy NULL");
	expect(optireduce_comm_destroy(fake), -EBADF, "destroy fake");
	T_OK(optireduce_comm_destroy(c));
	expect(optireduce_comm_destroy(c), -EBADF, "destroy twice");
	expect(optireduce_allreduce(c, buf, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL),
	       -EBADF, "allreduce after destroy");
	expect(optireduce_allreduce_start(c, buf, 4, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, &h),
	       -EBADF, "start after destroy");
	expect(optireduce_allreduce_test(c, h, &res), -EBADF, "test after destroy");
	expect(optireduce_allreduce_wait(c, h, &res), -EBADF, "wait after destroy");
	expect(optireduce_comm_set_option(c, OPTIREDUCE_OPT_INCAST, 1), -EBADF, "set after destroy");
	expect(optireduce_comm_get_option(c, OPTIREDUCE_OPT_INCAST, &v), -EBADF, "get after destroy");
	expect(optireduce_comm_stats(c, &st), -EBADF, "stats after destroy");
	T_OK(optireduce_comm_destroy(c2));

	/* --- two ranks with different configurations --- */
	{
		struct t_pair a[2];

		pair(a, OPTIREDUCE_HADAMARD_ON);
		expect(a[0].rc, -EPROTO, "config mismatch, rank 0");
		expect(a[1].rc, -EPROTO, "config mismatch, rank 1");
	}

	/* --- ranks that disagree on the count: a clear error, no hang --- */
	{
		struct t_pair a[2];
		float b0[10] = { 0 }, b1[20] = { 0 };

		pair(a, OPTIREDUCE_HADAMARD_AUTO);
		T_OK(a[0].rc);
		T_OK(a[1].rc);
		T_OK(optireduce_allreduce_start(a[0].c, b0, 10, OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &h));
		T_OK(optireduce_allreduce_start(a[1].c, b1, 20, OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &h2));
		/* One side sees the mismatch; the other either sees it too or
		 * sees the first one close the connection. */
		{
			int r0 = optireduce_allreduce_wait(a[0].c, h, NULL);
			int r1 = optireduce_allreduce_wait(a[1].c, h2, NULL);

			T_ASSERT((r0 == -EPROTO && (r1 == -EPROTO || r1 == -ECONNRESET)) ||
				 (r1 == -EPROTO && (r0 == -EPROTO || r0 == -ECONNRESET)),
				 "count mismatch: %d %d", r0, r1);
		}
		expect(optireduce_allreduce(a[0].c, b0, 10, OPTIREDUCE_FLOAT32,
					    OPTIREDUCE_SUM, NULL), -ENOTCONN, "after failure");
		T_OK(optireduce_comm_destroy(a[0].c));
		T_OK(optireduce_comm_destroy(a[1].c));
	}

	/* --- destroy with calls in flight; the peer sees the loss --- */
	{
		struct t_pair a[2];
		struct wait_arg w;
		pthread_t t;
		float b[8] = { 0 };
		int rc;

		pair(a, OPTIREDUCE_HADAMARD_AUTO);
		T_OK(a[0].rc);
		T_OK(a[1].rc);
		/* Rank 0 starts calls rank 1 never joins. */
		T_OK(optireduce_allreduce_start(a[0].c, b, 8, OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &w.h));
		T_OK(optireduce_allreduce_start(a[0].c, b, 8, OPTIREDUCE_FLOAT32,
						OPTIREDUCE_SUM, &h));
		expect(optireduce_allreduce_test(a[0].c, w.h, NULL), -EAGAIN, "in progress");
		w.c = a[0].c;
		pthread_create(&t, NULL, wait_thread, &w);
		usleep(50000);
		T_OK(optireduce_comm_destroy(a[0].c));
		pthread_join(t, NULL);
		expect(w.rc, -ECANCELED, "waiter of a destroyed communicator");
		/* Rank 1's peer is gone. */
		rc = optireduce_allreduce(a[1].c, b, 8, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM, NULL);
		T_ASSERT(rc == -ECONNRESET || rc == -EPIPE, "peer gone: %d (%s)", rc,
			 optireduce_strerror(rc));
		expect(optireduce_allreduce(a[1].c, b, 8, OPTIREDUCE_FLOAT32,
					    OPTIREDUCE_SUM, NULL), -ENOTCONN, "broken");
		T_OK(optireduce_comm_destroy(a[1].c));
	}
	return 0;
}
