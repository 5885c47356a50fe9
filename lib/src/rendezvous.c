// SPDX-License-Identifier: MIT
/*
 * A small TCP rendezvous for torchrun-style launches: rank 0 listens at the
 * master address; every other rank connects, says who it is and where it
 * listens for the mesh; rank 0 answers everybody with the full table, its
 * seed (so every rank transforms with the same signs) and the
 * communicator's secret: the launcher's, or 256 random bits rank 0 draws
 * for this communicator alone. Then the mesh is connected as with an
 * explicit peer list. Whoever can reach the master port first as rank r
 * learns the secret: the rendezvous is as trusted as the launcher's
 * store (Documentation/design.md, "Threat model").
 *
 * Records are fixed-size and little-endian:
 *   hello  magic, version, rank, size, address[OR_ADDR_MAX]
 *   table  magic, size, seed, secret, then size addresses
 * Connections that do not start with the magic are dropped (a port
 * scanner, a stale client); a rank with another size or version fails the
 * rendezvous with -EPROTO.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "comm.h"
#include "net.h"
#include "rendezvous.h"
#include "util.h"

#define RDZV_MAGIC	0x4f52525au	/* "ORRZ" */
#define RDZV_VERSION	2

struct rdzv_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t rank;
	uint32_t size;
	char addr[OR_ADDR_MAX];
};

struct rdzv_table {
	uint32_t magic;
	uint32_t size;
	uint64_t seed;
	uint8_t secret[OR_SECRET_LEN];
};

/* Listen for the mesh on host's address, any port; advertise it. */
static int mesh_listener(const struct or_addr *host, int size, char *adv,
			 int quiet)
{
	struct or_addr a = *host;
	const char *want = getenv("OPTIREDUCE_ADDR");
	int fd;

	if (want) {
		char tmp[OR_ADDR_MAX + 8];
		int rc;

		snprintf(tmp, sizeof(tmp), strchr(want, ':') ? "[%s]:0" : "%s:0", want);
		rc = or_addr_parse(tmp, &a);
		if (rc) {
			or_log(quiet, "OPTIREDUCE_ADDR=\"%s\" is not an address", want);
			return rc;
		}
	}
	if (a.ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&a.ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)&a.ss)->sin_port = 0;
	fd = or_listen(&a, size);
	if (fd < 0)
		return fd;
	a.len = sizeof(a.ss);
	getsockname(fd, (struct sockaddr *)&a.ss, &a.len);
	or_addr_format(&a, adv, OR_ADDR_MAX);
	return fd;
}

static int alloc_peers(int size, char ***out)
{
	char **p = calloc(size, sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < size; i++) {
		p[i] = calloc(1, OR_ADDR_MAX);
		if (!p[i]) {
			or_peers_free(p, size);
			return -ENOMEM;
		}
	}
	*out = p;
	return 0;
}

static int serve(struct optireduce_config *cfg, const struct or_addr *m,
		 int64_t deadline, char **peers, const char *mine,
		 uint8_t *secret)
{
	int size = cfg->size, *fds, lfd, got = 0, rc = 0;
	struct rdzv_table tab = {
		.magic = htole32(RDZV_MAGIC),
		.size = htole32(size),
		.seed = htole64(cfg->seed),
	};

	if (!or_secret_given(secret) &&
	    getrandom(secret, OR_SECRET_LEN, 0) != OR_SECRET_LEN)
		return -errno;
	lfd = or_listen(m, size);
	if (lfd < 0) {
		char s[OR_ADDR_MAX];

		or_addr_format(m, s, sizeof(s));
		or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "rank 0: cannot listen for the rendezvous on %s: %s", s,
		       strerror(-lfd));
		return lfd;
	}
	fds = malloc(size * sizeof(*fds));
	if (!fds) {
		close(lfd);
		return -ENOMEM;
	}
	for (int i = 0; i < size; i++)
		fds[i] = -1;
	strcpy(peers[0], mine);
	while (got < size - 1) {
		struct rdzv_hello h;
		int fd = or_accept(lfd, deadline), r;

		if (fd < 0) {
			rc = fd;
			or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "rank 0: rendezvous: %d of %d ranks arrived: %s",
			       got + 1, size, strerror(-rc));
			goto out;
		}
		rc = or_read_full(fd, &h, sizeof(h), or_hello_by(deadline));
		r = le32toh(h.rank);
		if (rc || le32toh(h.magic) != RDZV_MAGIC || r <= 0 || r >= size ||
		    fds[r] >= 0) {
			close(fd);	/* a stranger or a duplicate */
			rc = 0;
			continue;
		}
		if (le32toh(h.version) != RDZV_VERSION || (int)le32toh(h.size) != size) {
			or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "rank 0: rank %d says WORLD_SIZE=%u, mine is %d",
			       r, le32toh(h.size), size);
			close(fd);
			rc = -EPROTO;
			goto out;
		}
		h.addr[OR_ADDR_MAX - 1] = 0;
		strcpy(peers[r], h.addr);
		fds[r] = fd;
		got++;
	}
	memcpy(tab.secret, secret, OR_SECRET_LEN);
	for (int r = 1; r < size && !rc; r++) {
		rc = or_write_full(fds[r], &tab, sizeof(tab), deadline);
		for (int i = 0; i < size && !rc; i++)
			rc = or_write_full(fds[r], peers[i], OR_ADDR_MAX, deadline);
	}
out:
	explicit_bzero(tab.secret, sizeof(tab.secret));
	for (int i = 0; i < size; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	close(lfd);
	return rc;
}

static int join(struct optireduce_config *cfg, int fd, int64_t deadline,
		char **peers, const char *mine, uint8_t *secret)
{
	struct rdzv_hello h = {
		.magic = htole32(RDZV_MAGIC),
		.version = htole32(RDZV_VERSION),
		.rank = htole32(cfg->rank),
		.size = htole32(cfg->size),
	};
	struct rdzv_table tab;
	int rc;

	snprintf(h.addr, sizeof(h.addr), "%s", mine);
	rc = or_write_full(fd, &h, sizeof(h), deadline);
	if (!rc)
		rc = or_read_full(fd, &tab, sizeof(tab), deadline);
	if (rc == -ECONNRESET) {
		or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "rank %d: rank 0 refused the rendezvous (another "
		       "WORLD_SIZE?)", cfg->rank);
		return -EPROTO;
	}
	if (rc)
		return rc;
	if (le32toh(tab.magic) != RDZV_MAGIC || (int)le32toh(tab.size) != cfg->size)
		return -EPROTO;
	cfg->seed = le64toh(tab.seed);
	memcpy(secret, tab.secret, OR_SECRET_LEN);
	explicit_bzero(tab.secret, sizeof(tab.secret));
	for (int i = 0; i < cfg->size && !rc; i++) {
		rc = or_read_full(fd, peers[i], OR_ADDR_MAX, deadline);
		peers[i][OR_ADDR_MAX - 1] = 0;
	}
	return rc;
}

int or_rendezvous(struct optireduce_config *cfg, const struct or_rdzv *rz,
		  uint8_t *secret, char ***peers_out, int *listen_fd)
{
	int64_t deadline = or_deadline_after(rz->timeout_ms);
	char mine[OR_ADDR_MAX];
	struct or_addr m, local;
	char **peers = NULL;
	int lfd = -1, fd = -1, rc;

	rc = or_addr_parse(rz->master, &m);
	if (rc) {
		or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "cannot resolve the master address %s", rz->master);
		return rc;
	}
	rc = alloc_peers(cfg->size, &peers);
	if (rc)
		return rc;
	if (cfg->rank == 0) {
		/* Rank 0 is reached at the master address. */
		lfd = mesh_listener(&m, cfg->size, mine, cfg->flags & OPTIREDUCE_CFG_QUIET);
		rc = lfd < 0 ? lfd : serve(cfg, &m, deadline, peers, mine,
					   secret);
	} else {
		fd = or_connect_retry(&m, deadline);
		if (fd < 0) {
			rc = fd;
			or_log(cfg->flags & OPTIREDUCE_CFG_QUIET, "rank %d: cannot reach the rendezvous at %s: %s",
			       cfg->rank, rz->master, strerror(-rc));
			goto out;
		}
		/* Advertise the address this host reaches the master from. */
		local.len = sizeof(local.ss);
		getsockname(fd, (struct sockaddr *)&local.ss, &local.len);
		lfd = mesh_listener(&local, cfg->size, mine,
				   cfg->flags & OPTIREDUCE_CFG_QUIET);
		rc = lfd < 0 ? lfd : join(cfg, fd, deadline, peers, mine,
					  secret);
		close(fd);
	}
out:
	if (rc) {
		if (lfd >= 0)
			close(lfd);
		or_peers_free(peers, cfg->size);
		return rc;
	}
	*peers_out = peers;
	*listen_fd = lfd;
	return 0;
}
