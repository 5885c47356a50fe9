// SPDX-License-Identifier: MIT
/*
 * A peer of another version, whose hello is shorter than ours: rank 0
 * must refuse it (EPROTO) as soon as it has read
 * the fields every version starts with, not wait for fields that peer
 * never sends until the mesh's timeout. The test plays rank 1 of two and
 * sends version 1's 24-byte hello; rank 0's create runs in a thread.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers.h"

struct hello_v1 {		/* version 1's hello, as it went on the wire */
	uint32_t magic;
	uint16_t version;
	uint16_t lossy_ok;
	uint32_t rank;
	uint32_t size;
	uint64_t cfg_hash;
};

struct rank0 {
	struct optireduce_config cfg;
	int rc;
};

static void *create_rank0(void *arg)
{
	struct rank0 *r = arg;
	optireduce_comm *c = NULL;

	r->rc = optireduce_comm_create(&r->cfg, &c);
	if (c)
		optireduce_comm_destroy(c);
	return NULL;
}

int main(void)
{
	struct hello_v1 h = {
		.magic = htole32(0x4f524831u),	/* "ORH1" */
		.version = htole16(1),
		.rank = htole32(1),
		.size = htole32(2),
	};
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rank0 r0;
	pthread_t th;
	char reply[64];
	int ports[2], fd = -1;
	ssize_t n;

	t_free_ports(2, ports);
	t_config(&r0.cfg);
	r0.cfg.rank = 0;
	r0.cfg.size = 2;
	r0.cfg.peers = t_peer_list(2, ports);
	r0.cfg.transport = OPTIREDUCE_TRANSPORT_TCP;
	r0.cfg.timeout_ms = 20000;
	T_ASSERT(!pthread_create(&th, NULL, create_rank0, &r0), "thread");
	a.sin_port = htons(ports[0]);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 200; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		T_ASSERT(fd >= 0, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(fd);
		fd = -1;
		usleep(50000);
	}
	T_ASSERT(fd >= 0, "rank 0 never listened on port %d", ports[0]);
	T_ASSERT(write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h), "write");
	/* Rank 0 answers with its own hello, then gives up on us. */
	n = read(fd, reply, sizeof(reply));
	T_ASSERT(n >= (ssize_t)sizeof(h), "rank 0 answered %zd bytes", n);
	pthread_join(th, NULL);
	close(fd);
	T_ASSERT(r0.rc == -EPROTO, "rank 0's create: %d (%s), want -EPROTO",
		 r0.rc, optireduce_strerror(r0.rc));
	return 0;
}
