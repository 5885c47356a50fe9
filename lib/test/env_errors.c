// SPDX-License-Identifier: MIT
/*
 * optireduce_comm_create_from_env(): missing and malformed settings give
 * clear errors, options from the environment are applied, a rendezvous
 * nobody answers times out, and ranks that disagree on WORLD_SIZE fail
 * with -EPROTO instead of hanging.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static const char *const vars[] = {
	"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OPTIREDUCE_RANK",
	"OPTIREDUCE_SIZE", "OPTIREDUCE_PEERS", "OPTIREDUCE_MASTER_ADDR",
	"OPTIREDUCE_MASTER_PORT", "OPTIREDUCE_TRANSPORT", "OPTIREDUCE_HADAMARD",
	"OPTIREDUCE_INCAST", "OPTIREDUCE_LOSS_THRESHOLD", "OPTIREDUCE_TIMEOUT_MS",
	"OPTIREDUCE_HADAMARD_BLOCK", "OPTIREDUCE_ADDR",
};

static void clear(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("OPTIREDUCE_QUIET", "1", 1);
}

static void expect_env(int want, const char *what)
{
	optireduce_comm *c = (optireduce_comm *)1;
	int rc = optireduce_comm_create_from_env(NULL, &c);

	T_ASSERT(rc == want, "%s: got %d (%s), want %d", what, rc,
		 optireduce_strerror(rc), want);
	T_ASSERT(c == NULL, "%s: out not cleared", what);
}

static int port;

static int mismatch_rank(int rank, void *arg)
{
	char v[16];
	optireduce_comm *c;
	int rc;

	(void)arg;
	clear();
	snprintf(v, sizeof(v), "%d", rank);
	setenv("RANK", v, 1);
	setenv("WORLD_SIZE", rank ? "3" : "2", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	snprintf(v, sizeof(v), "%d", port);
	setenv("OPTIREDUCE_MASTER_PORT", v, 1);
	setenv("OPTIREDUCE_TIMEOUT_MS", "5000", 1);
	rc = optireduce_comm_create_from_env(NULL, &c);
	if (rc != -EPROTO) {
		fprintf(stderr, "rank %d: %d (%s)\n", rank, rc, optireduce_strerror(rc));
		return 1;
	}
	return 0;
}

int main(void)
{
	optireduce_comm *c;
	struct optireduce_config base;
	int64_t v;
	int ports[2];

	clear();
	T_ASSERT(optireduce_comm_create_from_env(NULL, NULL) == -EFAULT, "NULL out");
	expect_env(-ENOENT, "nothing set");
	setenv("RANK", "0", 1);
	expect_env(-ENOENT, "no WORLD_SIZE");
	setenv("WORLD_SIZE", "2", 1);
	expect_env(-ENOENT, "no peers, no master");
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	expect_env(-ENOENT, "no MASTER_PORT");
	setenv("RANK", "abc", 1);
	expect_env(-EINVAL, "RANK=abc");
	setenv("RANK", "-1", 1);
	expect_env(-EINVAL, "RANK=-1");
	setenv("RANK", "2", 1);
	expect_env(-ERANGE, "RANK >= WORLD_SIZE");
	setenv("RANK", "0", 1);
	setenv("OPTIREDUCE_PEERS", "127.0.0.1:1", 1);
	expect_env(-EINVAL, "one peer for two ranks");
	unsetenv("OPTIREDUCE_PEERS");
	setenv("MASTER_PORT", "70000", 1);
	expect_env(-EINVAL, "MASTER_PORT out of range");
	unsetenv("MASTER_PORT");
	setenv("OPTIREDUCE_TRANSPORT", "carrier-pigeon", 1);
	expect_env(-EINVAL, "unknown transport");
	setenv("OPTIREDUCE_TRANSPORT", "tcp", 1);
	setenv("OPTIREDUCE_LOSS_THRESHOLD", "2", 1);
	expect_env(-EINVAL, "threshold 2");
	setenv("OPTIREDUCE_LOSS_THRESHOLD", "0.01", 1);
	setenv("OPTIREDUCE_INCAST", "-1", 1);
	expect_env(-EINVAL, "incast -1");
	setenv("OPTIREDUCE_INCAST", "3", 1);
	setenv("OPTIREDUCE_HADAMARD_BLOCK", "100", 1);
	expect_env(-EINVAL, "block 100");
	setenv("OPTIREDUCE_HADAMARD_BLOCK", "1024", 1);
	/* Numbers: digits only, decimal or after 0x. */
	{
		static const char *const bad[] = {
			" 3", "+3", "3 ", "0x", "0x0x3", "3k", "",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char what[32];

			setenv("OPTIREDUCE_INCAST", bad[i], 1);
			snprintf(what, sizeof(what), "incast \"%s\"", bad[i]);
			expect_env(-EINVAL, what);
		}
	}
	setenv("OPTIREDUCE_INCAST", "3", 1);
	setenv("OPTIREDUCE_MASTER_PORT", "0", 1);
	expect_env(-EINVAL, "OPTIREDUCE_MASTER_PORT=0");
	unsetenv("OPTIREDUCE_MASTER_PORT");
	/* Leading zeros are decimal, not octal. */
	setenv("OPTIREDUCE_TIMEOUT_MS", "0600000", 1);
	setenv("OPTIREDUCE_HADAMARD_BLOCK", "0x400", 1);

	/* A base config with a reserved field set. */
	optireduce_config_init(&base);
	base.reserved[0] = 1;
	T_ASSERT(optireduce_comm_create_from_env(&base, &c) == -EINVAL, "reserved");

	/* A world of one, options from the environment. */
	setenv("WORLD_SIZE", "1", 1);
	setenv("OPTIREDUCE_HADAMARD", "on", 1);
	T_OK(optireduce_comm_create_from_env(NULL, &c));
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_INCAST, &v));
	T_ASSERT(v == 3, "incast %lld", (long long)v);
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_HADAMARD, &v));
	T_ASSERT(v == OPTIREDUCE_HADAMARD_ON, "hadamard");
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_LOSS_THRESHOLD_PPM, &v));
	T_ASSERT(v == 10000, "threshold %lld", (long long)v);
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_HADAMARD_BLOCK, &v));
	T_ASSERT(v == 1024, "block");
	T_OK(optireduce_comm_get_option(c, OPTIREDUCE_OPT_TIMEOUT_MS, &v));
	T_ASSERT(v == 600000, "timeout %lld", (long long)v);
	T_OK(optireduce_comm_destroy(c));

	/* Nobody at the master address: a timeout, not a hang. */
	t_free_ports(1, ports);
	setenv("WORLD_SIZE", "2", 1);
	setenv("RANK", "1", 1);
	{
		char p[16];

		snprintf(p, sizeof(p), "%d", ports[0]);
		setenv("OPTIREDUCE_MASTER_PORT", p, 1);
	}
	setenv("OPTIREDUCE_TIMEOUT_MS", "300", 1);
	expect_env(-ETIMEDOUT, "rendezvous timeout");

	/* Ranks with different WORLD_SIZE. */
	t_free_ports(1, ports);
	port = ports[0];
	T_ASSERT(!t_spawn(2, mismatch_rank, NULL, 30), "WORLD_SIZE mismatch");
	return 0;
}
