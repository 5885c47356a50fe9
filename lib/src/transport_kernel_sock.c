// SPDX-License-Identifier: MIT
/*
 * The kernel transport's socket: find the family and option level the
 * module borrowed (published in sysfs, never compiled in), open a socket,
 * check the ABI, and join the communicator with every rank's IPv4 address
 * and, optionally, a multicast group for phase 2.
 *
 * Every rank derives the same communicator id from what all ranks share
 * (the configuration hash and the peer list), so nothing has to be
 * exchanged before the join but the communicator's secret, which the
 * rendezvous or the launcher handed out; the TCP mesh that follows tells
 * every rank whether all the others joined too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "transport_kernel.h"
#include "util.h"

_Static_assert(OR_SECRET_LEN == OPTIREDUCE_SECRET_LEN,
	       "the library's secret is the kernel's");

static int read_param(const char *path, int *out)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -EAFNOSUPPORT;
	ok = fscanf(f, "%d", out) == 1;
	fclose(f);
	return ok ? 0 : -EAFNOSUPPORT;
}

int kt_sysfs_ids(int *family, int *sol)
{
	int rc = read_param(OPTIREDUCE_SYSFS_FAMILY, family);

	return rc ? rc : read_param(OPTIREDUCE_SYSFS_SOL, sol);
}

/*
 * What the module holds for a socket before placing it (fragments that
 * beat their post, batches waiting to be steered) counts against the
 * socket's receive buffer, as a UDP socket's queue does: ask for room for
 * both of the module's per-socket queues. SO_RCVBUFFORCE needs
 * CAP_NET_ADMIN; without it SO_RCVBUF gets at most net.core.rmem_max,
 * and what does not fit is dropped (drop_mem_limit) like any late data.
 * The kernel doubles the value for its bookkeeping, as it does for UDP.
 */
static void size_rcvbuf(int fd)
{
	int backlog_kb = 0, steer_kb = 0, half;
	long long want;

	if (read_param(OPTIREDUCE_SYSFS_PARAMS "backlog_kb", &backlog_kb) ||
	    read_param(OPTIREDUCE_SYSFS_PARAMS "rx_steer_kb", &steer_kb))
		return;
	want = ((long long)backlog_kb + steer_kb) * 1024 / 2;
	half = want > INT_MAX / 2 ? INT_MAX / 2 : (int)want;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &half, sizeof(half)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &half, sizeof(half));
}

/* The interface that holds addr (network order); 0 if none does. */
static unsigned int iface_of(uint32_t addr)
{
	struct ifaddrs *ifa, *i;
	unsigned int idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr)
			idx = if_nametoindex(i->ifa_name);
	freeifaddrs(ifa);
	return idx;
}

/* "host:port" to the IPv4 address of the peer table. */
static int peer_addr(const char *peer, struct optireduce_addr *out,
		     uint32_t *ip, int quiet)
{
	struct or_addr a;
	int rc = or_addr_parse(peer, &a);

	if (rc)
		return rc;
	if (a.ss.ss_family != AF_INET) {
		or_log(quiet, "peer %s is not IPv4: the kernel transport carries "
		       "IPv4 only", peer);
		return -EAFNOSUPPORT;
	}
	*ip = ((struct sockaddr_in *)&a.ss)->sin_addr.s_addr;
	out->family = AF_INET;
	memcpy(out->addr, ip, 4);
	return 0;
}

static uint32_t comm_id(const struct or_kernel_params *p)
{
	uint64_t h = or_mix64(p->comm_hash ^ 0x6b65726e656cull);

	for (int r = 0; r < p->size; r++)
		for (const char *c = p->peers[r]; *c; c++)
			h = or_mix64(h ^ (unsigned char)*c);
	return (uint32_t)(h ^ h >> 32);
}

static int join(int fd, int sol, const struct or_kernel_params *p)
{
	size_t len = sizeof(struct optireduce_join) +
		     (size_t)p->size * sizeof(struct optireduce_addr);
	struct optireduce_join *j = calloc(1, len);
	struct optireduce_addr *a = (void *)(j + 1);
	uint32_t mine = 0;
	int rc = 0;

	if (!j)
		return -ENOMEM;
	j->comm = comm_id(p);
	if (p->secret)
		memcpy(j->secret, p->secret, sizeof(j->secret));
	j->rank = p->rank;
	j->nranks = p->size;
	for (int r = 0; r < p->size && !rc; r++) {
		uint32_t ip = 0;

		rc = peer_addr(p->peers[r], &a[r], &ip, p->quiet);
		if (r == p->rank)
			mine = ip;
	}
	if (p->auth)
		j->flags |= OPTIREDUCE_JOIN_AUTH;
	if (!rc && p->mcast_group) {
		j->flags |= OPTIREDUCE_JOIN_MCAST;
		j->group.family = AF_INET;
		/* The group lives on the link that carries our own address. */
		j->group.ifindex = p->mcast_ifindex ? p->mcast_ifindex :
						      iface_of(mine);
		memcpy(j->group.addr, &p->mcast_group, 4);
	}
	if (!rc && setsockopt(fd, sol, OPTIREDUCE_JOIN, j, len))
		rc = -errno;
	explicit_bzero(j->secret, sizeof(j->secret));
	free(j);
	return rc;
}

uint32_t kt_send_flags(int fd, int sol)
{
	uint32_t flags = 0;
	socklen_t len = sizeof(flags);

	/* A module from before the option: ENOPROTOOPT, no flags. */
	if (getsockopt(fd, sol, OPTIREDUCE_SEND_FLAGS, &flags, &len) ||
	    len != sizeof(flags))
		return 0;
	return flags;
}

int kt_socket_join(const struct or_kernel_params *p, int family, int sol)
{
	uint32_t abi = 0;
	socklen_t alen = sizeof(abi);
	int fd, rc;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		or_log(p->quiet, "rank %d: cannot open an optireduce socket "
		       "(family %d): %s", p->rank, family, strerror(-rc));
		return rc;
	}
	if (getsockopt(fd, sol, OPTIREDUCE_ABI_VERSION, &abi, &alen) ||
	    abi != OPTIREDUCE_ABI) {
		or_log(p->quiet, "rank %d: the optireduce module speaks ABI %u, "
		       "this library %u", p->rank, abi, OPTIREDUCE_ABI);
		close(fd);
		return -EPROTONOSUPPORT;
	}
	size_rcvbuf(fd);
	rc = join(fd, sol, p);
	if (rc) {
		or_log(p->quiet, "rank %d: cannot join the kernel communicator: %s",
		       p->rank, strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
}
