// SPDX-License-Identifier: MIT
/*
 * The communicator's secret: the rendezvous's rank 0 draws 256 random
 * bits for each communicator and every rank ends up with the same; a
 * launcher's secret (OPTIREDUCE_SECRET, 64 hex digits) is adopted
 * instead; a malformed or all-zero one is refused.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "comm.h"
#include "rendezvous.h"

#define N	3

static uint8_t (*got)[OR_SECRET_LEN];	/* per rank, shared with the forks */
static uint8_t given[OR_SECRET_LEN];	/* rank 0's on entry */
static char master[32];

static int rank_main(int rank, void *arg)
{
	struct optireduce_config cfg;
	struct or_rdzv rz = { .master = master, .timeout_ms = 20000 };
	uint8_t secret[OR_SECRET_LEN] = { 0 };
	char **peers;
	int lfd;

	(void)arg;
	optireduce_config_init(&cfg);
	cfg.rank = rank;
	cfg.size = N;
	cfg.flags = OPTIREDUCE_CFG_QUIET;
	if (!rank)
		memcpy(secret, given, sizeof(secret));
	/* Rank 0 last: the others retry until it listens. */
	if (!rank)
		usleep(50000);
	if (or_rendezvous(&cfg, &rz, secret, &peers, &lfd))
		return 1;
	memcpy(got[rank], secret, sizeof(secret));
	or_peers_free(peers, N);
	close(lfd);
	return 0;
}

/* One rendezvous; the secret all ranks agreed on goes to out. */
static void rendezvous(uint8_t out[OR_SECRET_LEN])
{
	int port;

	t_free_ports(1, &port);
	snprintf(master, sizeof(master), "127.0.0.1:%d", port);
	memset(got, 0, N * OR_SECRET_LEN);
	if (t_spawn(N, rank_main, NULL, 30))
		T_FAIL("rendezvous failed");
	for (int r = 1; r < N; r++)
		T_ASSERT(!memcmp(got[0], got[r], OR_SECRET_LEN),
			 "rank %d has another secret", r);
	T_ASSERT(or_secret_given(got[0]), "no secret drawn");
	memcpy(out, got[0], OR_SECRET_LEN);
}

static int env_secret(const char *v, uint8_t out[OR_SECRET_LEN])
{
	if (v)
		setenv("OPTIREDUCE_SECRET", v, 1);
	else
		unsetenv("OPTIREDUCE_SECRET");
	return or_env_secret(out, 1);
}

int main(void)
{
	static const char hex[] =
		"00112233445566778899aabbccddeeff"
		"0123456789ABCDEFfedcba9876543210";
	uint8_t a[OR_SECRET_LEN], b[OR_SECRET_LEN], e[OR_SECRET_LEN];

	got = mmap(NULL, N * OR_SECRET_LEN, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(got != MAP_FAILED, "mmap");

	/* Drawn per communicator: two rendezvous, two secrets. */
	rendezvous(a);
	rendezvous(b);
	T_ASSERT(memcmp(a, b, OR_SECRET_LEN), "the same secret twice");

	/* The launcher's, parsed, is what every rank gets. */
	T_ASSERT(env_secret(hex, e) == 1, "valid secret refused");
	T_ASSERT(e[0] == 0x00 && e[1] == 0x11 && e[15] == 0xff &&
		 e[16] == 0x01 && e[23] == 0xef && e[31] == 0x10,
		 "parsed wrong");
	memcpy(given, e, sizeof(given));
	rendezvous(a);
	T_ASSERT(!memcmp(a, e, OR_SECRET_LEN), "the launcher's not adopted");

	/* Unset, short, long, not hex, all zero. */
	T_ASSERT(env_secret(NULL, e) == 0, "unset");
	T_ASSERT(env_secret("0011", e) < 0, "short accepted");
	T_ASSERT(env_secret("00112233445566778899aabbccddeeff"
			    "0123456789abcdeffedcba98765432100", e) < 0,
		 "long accepted");
	T_ASSERT(env_secret("g0112233445566778899aabbccddeeff"
			    "0123456789abcdeffedcba9876543210", e) < 0,
		 "not hex accepted");
	T_ASSERT(env_secret("00000000000000000000000000000000"
			    "00000000000000000000000000000000", e) < 0,
		 "all zero accepted");
	T_ASSERT(!or_secret_given(e), "a refused secret left behind");
	return 0;
}
