// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

void t_free_ports(int n, int *ports)
{
	int fds[256];

	if (n > 256)
		T_FAIL("too many ports");
	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t l = sizeof(a);

		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (void *)&a, sizeof(a)) ||
		    getsockname(fds[i], (void *)&a, &l))
			T_FAIL("cannot find a free port: %s", strerror(errno));
		ports[i] = ntohs(a.sin_port);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

const char *const *t_peer_list(int n, const int *ports)
{
	static char buf[256][32];
	static const char *list[256];

	for (int i = 0; i < n; i++) {
		snprintf(buf[i], sizeof(buf[i]), "127.0.0.1:%d", ports[i]);
		list[i] = buf[i];
	}
	return list;
}

int t_spawn_status[256];

int t_spawn(int n, int (*fn)(int rank, void *arg), void *arg, int timeout_s)
{
	pid_t pids[256];
	int failed = 0, left = n;
	time_t end = time(NULL) + timeout_s;

	fflush(NULL);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			T_FAIL("fork: %s", strerror(errno));
		if (!pids[r])
			_exit(fn(r, arg));
	}
	while (left) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			for (int r = 0; r < n; r++)
				if (pids[r] == p) {
					pids[r] = 0;
					t_spawn_status[r] = WIFEXITED(st) ?
						WEXITSTATUS(st) : -WTERMSIG(st);
					if (!WIFEXITED(st) || WEXITSTATUS(st)) {
						fprintf(stderr, "rank %d: %s %d\n", r,
							WIFEXITED(st) ? "exit" : "signal",
							WIFEXITED(st) ? WEXITSTATUS(st) :
							WTERMSIG(st));
						failed = 1;
					}
				}
			left--;
			continue;
		}
		if (time(NULL) > end) {
			fprintf(stderr, "timeout after %d s: killing ranks\n", timeout_s);
			for (int r = 0; r < n; r++)
				if (pids[r] > 0)
					kill(pids[r], SIGKILL);
			while (waitpid(-1, NULL, 0) > 0)
				;
			return 1;
		}
		usleep(2000);
	}
	return failed;
}

float t_value(int rank, size_t i, uint64_t salt)
{
	uint64_t x = (i * 0x9e3779b97f4a7c15ull) ^ (rank * 0xbf58476d1ce4e5b9ull) ^ salt;

	x ^= x >> 29;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 32;
	/* -512 .. 511: sums of up to 2^14 of them stay exact in float32. */
	return (float)((int)(x % 1024) - 512);
}

void t_config(struct optireduce_config *cfg)
{
	optireduce_config_init(cfg);
	cfg->flags = OPTIREDUCE_CFG_QUIET;
	cfg->timeout_ms = 60000;
}

void t_world_init(struct t_world *w, int n, const struct optireduce_config *base,
		  const struct or_sim_loss *loss)
{
	w->n = n;
	w->rel = or_sim_fabric_create(n, NULL);
	w->lossy = loss ? or_sim_fabric_create(n, loss) : NULL;
	if (!w->rel || (loss && !w->lossy))
		T_FAIL("fabric");
	for (int r = 0; r < n; r++) {
		struct optireduce_config cfg = *base;
		struct or_transport *rel, *lossy = NULL;

		cfg.rank = r;
		cfg.size = n;
		T_OK(or_sim_transport_create(w->rel, r, &rel));
		if (loss)
			T_OK(or_sim_transport_create(w->lossy, r, &lossy));
		T_OK(or_comm_create_with(&cfg, rel, lossy, OPTIREDUCE_TRANSPORT_KERNEL,
					 &w->comm[r]));
	}
}

void t_world_fini(struct t_world *w)
{
	for (int r = 0; r < w->n; r++)
		T_OK(optireduce_comm_destroy(w->comm[r]));
	or_sim_fabric_destroy(w->rel);
	or_sim_fabric_destroy(w->lossy);
}

void t_world_allreduce(struct t_world *w, void **bufs, size_t count, int dtype,
		       int op, struct optireduce_result *res)
{
	t_world_allreduce_late(w, bufs, count, dtype, op, res, 0);
}

void t_world_fill(struct t_world *w, void **bufs, size_t count, uint64_t salt)
{
	for (int r = 0; r < w->n; r++)
		for (size_t i = 0; i < count; i++)
			((float *)bufs[r])[i] = t_value(r, i, salt);
}

void t_world_fill_sum(struct t_world *w, void **bufs, size_t count,
		      uint64_t salt, struct optireduce_result *res)
{
	t_world_fill(w, bufs, count, salt);
	t_world_allreduce(w, bufs, count, OPTIREDUCE_FLOAT32, OPTIREDUCE_SUM,
			  res);
}

void t_check_sum(const float *buf, int n, size_t count, uint64_t salt,
		 const char *what)
{
	for (size_t i = 0; i < count; i++) {
		float want = 0;

		for (int r = 0; r < n; r++)
			want += t_value(r, i, salt);
		T_ASSERT(buf[i] == want, "%s entry %zu: %g, want %g", what, i,
			 buf[i], want);
	}
}

void t_world_allreduce_late(struct t_world *w, void **bufs, size_t count,
			    int dtype, int op, struct optireduce_result *res,
			    int late_ms)
{
	struct timespec ts = { late_ms / 1000, late_ms % 1000 * 1000000L };
	optireduce_handle h[64];

	for (int r = 0; r < w->n; r++) {
		if (r == w->n - 1 && late_ms)
			nanosleep(&ts, NULL);
		T_OK(optireduce_allreduce_start(w->comm[r], bufs[r], count, dtype,
						op, &h[r]));
	}
	for (int r = 0; r < w->n; r++)
		T_OK(optireduce_allreduce_wait(w->comm[r], h[r], res ? &res[r] : NULL));
}

void t_lossy_config(struct optireduce_config *cfg, int hadamard)
{
	t_config(cfg);
	cfg->warmup_calls = 0;
	cfg->loss_threshold_ppm = 1000000;
	cfg->hadamard = hadamard ? OPTIREDUCE_HADAMARD_ON : OPTIREDUCE_HADAMARD_OFF;
	/* The sim tests follow the Transpose AllReduce's two phases
	 * message by message; sim_direct covers direct calls. */
	cfg->direct_kb = 0;
}

void t_pair_init(struct t_pair p[2])
{
	static int ports[2];
	const char *const *peers;

	t_free_ports(2, ports);
	peers = t_peer_list(2, ports);
	for (int r = 0; r < 2; r++) {
		t_config(&p[r].cfg);
		p[r].cfg.rank = r;
		p[r].cfg.size = 2;
		p[r].cfg.peers = peers;
		p[r].cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
		p[r].c = NULL;
		p[r].rc = 0;
	}
}

static void *pair_thread(void *arg)
{
	struct t_pair *p = arg;

	p->rc = optireduce_comm_create(&p->cfg, &p->c);
	return NULL;
}

void t_pair_create(struct t_pair p[2])
{
	pthread_t t[2];

	for (int r = 0; r < 2; r++)
		pthread_create(&t[r], NULL, pair_thread, &p[r]);
	for (int r = 0; r < 2; r++)
		pthread_join(t[r], NULL);
}

static double unit_roundoff(int dtype)
{
	if (dtype == OPTIREDUCE_BFLOAT16)
		return 1.0 / 256;
	if (dtype == OPTIREDUCE_FLOAT16)
		return 1.0 / 2048;
	return 1.0 / (1 << 24);
}

void t_check_wire16(const double *got, const double *const *x, int n,
		    size_t count, int op, int wdtype, int dtype,
		    const char *what)
{
	double div = op == OPTIREDUCE_MEAN ? n : 1, in = 0, sum2 = 0;
	double err2 = 0, bound;

	for (int r = 0; r < n; r++) {
		double s = 0;

		for (size_t i = 0; i < count; i++)
			s += x[r][i] * x[r][i];
		in += sqrt(s);
	}
	for (size_t i = 0; i < count; i++) {
		double sum = 0;

		for (int r = 0; r < n; r++)
			sum += x[r][i];
		sum2 += sum * sum;
		err2 += (got[i] - sum / div) * (got[i] - sum / div);
		T_ASSERT(isfinite(got[i]), "%s: entry %zu is %g", what, i,
			 got[i]);
	}
	/* float32 arithmetic: the transform's and the reduction's roundings,
	 * far below a 16-bit type's, but not zero. */
	bound = unit_roundoff(wdtype) * (in + sqrt(sum2)) / div +
		unit_roundoff(dtype) * 1.01 * sqrt(sum2) / div +
		64 * unit_roundoff(OPTIREDUCE_FLOAT32) * in;
	T_ASSERT(sqrt(err2) <= bound, "%s: error %g over the bound %g", what,
		 sqrt(err2), bound);
}
