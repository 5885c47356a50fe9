// SPDX-License-Identifier: MIT
/*
 * optireduce_comm_create_from_env(): settings from the environment.
 *
 *   rank, size     OPTIREDUCE_RANK / OPTIREDUCE_SIZE, else torchrun's RANK /
 *                  WORLD_SIZE
 *   peers          OPTIREDUCE_PEERS="host:port,host:port,..." (one per rank),
 *                  else a rendezvous at OPTIREDUCE_MASTER_ADDR (else
 *                  MASTER_ADDR), port OPTIREDUCE_MASTER_PORT, else
 *                  MASTER_PORT + 1: under torchrun MASTER_PORT itself is
 *                  taken by torch's own TCP store on rank 0.
 *   OPTIREDUCE_ADDR        address this rank advertises in the rendezvous
 *                          (default: the one it reaches the master from)
 *   OPTIREDUCE_TRANSPORT   auto | kernel | tcp
 *   OPTIREDUCE_HADAMARD    auto | on | off
 *   OPTIREDUCE_HADAMARD_BLOCK, OPTIREDUCE_INCAST, OPTIREDUCE_MAX_INFLIGHT,
 *   OPTIREDUCE_WARMUP, OPTIREDUCE_FALLBACK_CALLS, OPTIREDUCE_TIMEOUT_MS,
 *   OPTIREDUCE_SEED        integers
 *   OPTIREDUCE_LOSS_THRESHOLD  fraction, e.g. 0.05
 *   OPTIREDUCE_MCAST_GROUP     IPv4 multicast group for phase 2 on the
 *                          kernel transport, "239.1.2.3" or "239.1.2.3%eth0"
 *   OPTIREDUCE_INCAST_DYNAMIC  0 (default) | 1: the incast limit stays
 *                          OPTIREDUCE_INCAST, or follows reported loss
 *                          with OPTIREDUCE_INCAST as its ceiling
 *   OPTIREDUCE_AUTH        0 (default) | 1: authenticated datagrams on
 *                          the kernel transport (OPTIREDUCE_CFG_AUTH)
 *   OPTIREDUCE_QUIET=1     no notice on stderr
 * A variable that is set but malformed is an error (-EINVAL), never
 * silently ignored.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "net.h"
#include "rendezvous.h"
#include "util.h"

/* Messages while reading the environment follow OPTIREDUCE_QUIET or the
 * base config's flag (set before anything is parsed). */
static __thread int env_quiet;

static int env_u64(const char *name, uint64_t max, uint64_t *out)
{
	const char *v = getenv(name);
	uint64_t x;

	if (!v)
		return 0;
	if (or_parse_u64(v, &x) || x > max) {
		or_log(env_quiet, "%s=\"%s\" is not an integer in 0..%llu", name, v,
		       (unsigned long long)max);
		return -EINVAL;
	}
	*out = x;
	return 1;
}

static int env_uint(const char *name, unsigned int *out)
{
	uint64_t v;
	int rc = env_u64(name, UINT32_MAX, &v);

	if (rc > 0)
		*out = v;
	return rc;
}

static int env_word(const char *name, const char *const *words, unsigned int n,
		    unsigned int *out)
{
	const char *v = getenv(name);

	if (!v)
		return 0;
	for (unsigned int i = 0; i < n; i++)
		if (words[i] && !strcmp(v, words[i])) {
			*out = i;
			return 1;
		}
	or_log(env_quiet, "%s=\"%s\" is not a known value", name, v);
	return -EINVAL;
}

/* "group" or "group%ifname": a multicast group and maybe its interface. */
static int env_mcast(struct optireduce_config *cfg)
{
	const char *v = getenv("OPTIREDUCE_MCAST_GROUP");
	char addr[INET_ADDRSTRLEN];
	size_t len;
	struct in_addr a;

	if (!v)
		return 0;
	len = strcspn(v, "%");
	if (len < sizeof(addr)) {
		memcpy(addr, v, len);
		addr[len] = 0;
	}
	if (len >= sizeof(addr) || inet_pton(AF_INET, addr, &a) != 1 ||
	    !IN_MULTICAST(ntohl(a.s_addr)) ||
	    (v[len] && !(cfg->mcast_ifindex = if_nametoindex(v + len + 1)))) {
		or_log(env_quiet, "OPTIREDUCE_MCAST_GROUP=\"%s\" is not an IPv4 "
		       "multicast group (optionally %%interface)", v);
		return -EINVAL;
	}
	cfg->mcast_group = a.s_addr;
	return 1;
}

/* A 0 | 1 variable that sets or clears @flag of cfg->flags. */
static int env_flag(const char *name, unsigned int flag,
		    struct optireduce_config *cfg)
{
	static const char *const words[] = { "0", "1" };
	unsigned int on;
	int rc = env_word(name, words, 2, &on);

	if (rc > 0)
		cfg->flags = (cfg->flags & ~flag) | (on ? flag : 0);
	return rc;
}

static int env_options(struct optireduce_config *cfg)
{
	static const char *const transports[] = { "auto", "kernel", "tcp" };
	static const char *const hadamard[] = { "auto", "off", "on" };
	const char *v;
	int rc = 0;

	rc |= env_word("OPTIREDUCE_TRANSPORT", transports, 3, &cfg->transport);
	rc |= env_word("OPTIREDUCE_HADAMARD", hadamard, 3, &cfg->hadamard);
	rc |= env_uint("OPTIREDUCE_HADAMARD_BLOCK", &cfg->hadamard_block);
	rc |= env_uint("OPTIREDUCE_INCAST", &cfg->incast);
	rc |= env_flag("OPTIREDUCE_INCAST_DYNAMIC",
		       OPTIREDUCE_CFG_INCAST_DYNAMIC, cfg);
	rc |= env_flag("OPTIREDUCE_AUTH", OPTIREDUCE_CFG_AUTH, cfg);
	rc |= env_uint("OPTIREDUCE_MAX_INFLIGHT", &cfg->max_inflight);
	rc |= env_uint("OPTIREDUCE_WARMUP", &cfg->warmup_calls);
	rc |= env_uint("OPTIREDUCE_FALLBACK_CALLS", &cfg->fallback_calls);
	rc |= env_uint("OPTIREDUCE_TIMEOUT_MS", &cfg->timeout_ms);
	rc |= env_uint("OPTIREDUCE_READY_KB", &cfg->ready_kb);
	rc |= env_uint("OPTIREDUCE_DIRECT_KB", &cfg->direct_kb);
	rc |= env_u64("OPTIREDUCE_SEED", UINT64_MAX, &cfg->seed);
	rc |= env_mcast(cfg);
	v = getenv("OPTIREDUCE_LOSS_THRESHOLD");
	if (v) {
		char *end;
		double f = strtod(v, &end);

		if (!*v || *end || !(f >= 0 && f <= 1)) {
			or_log(env_quiet, "OPTIREDUCE_LOSS_THRESHOLD=\"%s\" is not a "
			       "fraction in 0..1", v);
			rc = -EINVAL;
		} else {
			cfg->loss_threshold_ppm = (unsigned int)(f * 1e6 + 0.5);
		}
	}
	v = getenv("OPTIREDUCE_QUIET");
	if (v && *v && *v != '0')
		cfg->flags |= OPTIREDUCE_CFG_QUIET;
	/* Each helper returns 0, 1 or -EINVAL; any negative is in the OR. */
	return rc < 0 ? -EINVAL : 0;
}

static int env_rank_size(struct optireduce_config *cfg)
{
	const char *rn = getenv("OPTIREDUCE_RANK") ? "OPTIREDUCE_RANK" : "RANK";
	const char *sn = getenv("OPTIREDUCE_SIZE") ? "OPTIREDUCE_SIZE" : "WORLD_SIZE";
	uint64_t r, s;
	int rc1 = env_u64(rn, INT32_MAX, &r), rc2 = env_u64(sn, INT32_MAX, &s);

	if (rc1 < 0 || rc2 < 0)
		return -EINVAL;
	if (!rc1 || !rc2) {
		or_log(env_quiet, "%s not set (need OPTIREDUCE_RANK/OPTIREDUCE_SIZE or "
		       "RANK/WORLD_SIZE)", !rc1 ? "rank" : "size");
		return -ENOENT;
	}
	cfg->rank = r;
	cfg->size = s;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int or_secret_given(const uint8_t s[OR_SECRET_LEN])
{
	uint8_t any = 0;

	for (int i = 0; i < OR_SECRET_LEN; i++)
		any |= s[i];
	return any != 0;
}

int or_env_secret(uint8_t out[OR_SECRET_LEN], int quiet)
{
	const char *v = getenv("OPTIREDUCE_SECRET");
	int i;

	memset(out, 0, OR_SECRET_LEN);
	if (!v)
		return 0;
	for (i = 0; i < 2 * OR_SECRET_LEN && hex_digit(v[i]) >= 0; i++)
		out[i / 2] |= hex_digit(v[i]) << (i % 2 ? 0 : 4);
	if (i == 2 * OR_SECRET_LEN && !v[i] && or_secret_given(out))
		return 1;
	memset(out, 0, OR_SECRET_LEN);
	or_log(quiet, "OPTIREDUCE_SECRET is not %d hex digits, not all zero",
	       2 * OR_SECRET_LEN);
	return -EINVAL;
}

/* Split "a,b,c" into exactly size strings. */
static int split_peers(const char *list, int size, char ***out)
{
	const char *s = list;
	int n = 1;
	char **p;

	for (const char *c = list; *c; c++)
		n += *c == ',';
	if (n != size) {
		or_log(env_quiet, "OPTIREDUCE_PEERS lists %d addresses, WORLD_SIZE is %d",
		       n, size);
		return -EINVAL;
	}
	p = calloc(size, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (int i = 0; i < size; i++) {
		size_t len = strcspn(s, ",");

		p[i] = strndup(s, len);
		if (!p[i]) {
			or_peers_free(p, size);
			return -ENOMEM;
		}
		s += len + (s[len] == ',');
	}
	*out = p;
	return 0;
}

void or_peers_free(char **peers, int size)
{
	for (int i = 0; peers && i < size; i++)
		free(peers[i]);
	free(peers);
}

static int master_address(char *buf, size_t len)
{
	const char *addr = getenv("OPTIREDUCE_MASTER_ADDR");
	uint64_t port;
	int rc;

	if (!addr)
		addr = getenv("MASTER_ADDR");
	rc = env_u64("OPTIREDUCE_MASTER_PORT", 65535, &port);
	if (rc > 0 && !port) {
		or_log(env_quiet, "OPTIREDUCE_MASTER_PORT=0 is not a port");
		return -EINVAL;
	}
	if (!rc) {
		rc = env_u64("MASTER_PORT", 65534, &port);
		port++;
	}
	if (rc < 0)
		return rc;
	if (!addr || !rc) {
		or_log(env_quiet, "no peers: set OPTIREDUCE_PEERS, or MASTER_ADDR and "
		       "MASTER_PORT for a rendezvous");
		return -ENOENT;
	}
	snprintf(buf, len, strchr(addr, ':') ? "[%s]:%u" : "%s:%u", addr,
		 (unsigned int)port);
	return 0;
}

OR_EXPORT int optireduce_comm_create_from_env(const struct optireduce_config *base,
					      optireduce_comm **comm)
{
	uint8_t secret[OR_SECRET_LEN];
	struct optireduce_config cfg;
	char master[OR_ADDR_MAX + 16];
	char **peers = NULL;
	const char *list;
	int lfd = -1, rc;

	if (!comm)
		return -EFAULT;
	*comm = NULL;
	if (base)
		cfg = *base;
	else
		optireduce_config_init(&cfg);
	list = getenv("OPTIREDUCE_QUIET");
	env_quiet = (cfg.flags & OPTIREDUCE_CFG_QUIET) || (list && *list && *list != '0');
	rc = env_options(&cfg);
	if (!rc)
		rc = or_env_secret(secret, env_quiet) < 0 ? -EINVAL : 0;
	if (!rc)
		rc = env_rank_size(&cfg);
	if (!rc)
		rc = or_config_check(&cfg);
	if (rc)
		return rc;
	list = getenv("OPTIREDUCE_PEERS");
	if (list) {
		rc = split_peers(list, cfg.size, &peers);
	} else if (cfg.size == 1) {
		/* Alone: nothing to connect, no rendezvous needed. */
		peers = calloc(1, sizeof(*peers));
		rc = peers && (peers[0] = strdup("127.0.0.1:0")) ? 0 : -ENOMEM;
	} else {
		struct or_rdzv rz = { .master = master, .timeout_ms = cfg.timeout_ms };

		rc = master_address(master, sizeof(master));
		if (!rc)
			rc = or_rendezvous(&cfg, &rz, secret, &peers, &lfd);
	}
	if (rc) {
		explicit_bzero(secret, sizeof(secret));
		or_peers_free(peers, cfg.size);
		return rc;
	}
	cfg.peers = (const char *const *)peers;
	/* From the launcher or the rendezvous; none with a bare peer list. */
	rc = or_comm_create_tcp(&cfg, lfd,
				or_secret_given(secret) ? secret : NULL,
				comm);
	explicit_bzero(secret, sizeof(secret));
	or_peers_free(peers, cfg.size);
	return rc;
}
