// SPDX-License-Identifier: MIT
/*
 * Whatever else connects to a rank's port while the mesh forms (a port
 * scan, a health check) does not end it: before rank 1 connects, one
 * stranger connects and resets the connection at once, and another
 * connects and says nothing. Rank 0 drops the first, gives up on the
 * second after OR_HELLO_WAIT_MS, and the mesh forms and works.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers.h"

static void *create(void *arg)
{
	struct t_pair *p = arg;

	p->rc = optireduce_comm_create(&p->cfg, &p->c);
	return NULL;
}

struct call {
	optireduce_comm *c;
	float x[4];
	int rc;
};

static void *allreduce(void *arg)
{
	struct call *k = arg;
	struct optireduce_result res;

	k->rc = optireduce_allreduce(k->c, k->x, 4, OPTIREDUCE_FLOAT32,
				     OPTIREDUCE_SUM, &res);
	return NULL;
}

static int connect_to(int port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	for (int i = 0; i < 200; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		T_ASSERT(fd >= 0, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		close(fd);
		usleep(50000);
	}
	T_FAIL("nobody listens on port %d (rank 0 gave up?)", port);
}

int main(void)
{
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	struct t_pair p[2];
	struct call k[2];
	pthread_t th[2];
	int port, reset, silent;

	t_pair_init(p);
	for (int r = 0; r < 2; r++)
		p[r].cfg.timeout_ms = 30000;
	/* The port rank 0 listens on: the tail of its peer string. */
	port = atoi(strrchr(p[0].cfg.peers[0], ':') + 1);
	T_ASSERT(!pthread_create(&th[0], NULL, create, &p[0]), "thread");
	reset = connect_to(port);
	T_ASSERT(!setsockopt(reset, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)),
		 "SO_LINGER");
	close(reset);
	silent = connect_to(port);
	T_ASSERT(!pthread_create(&th[1], NULL, create, &p[1]), "thread");
	for (int r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	close(silent);
	for (int r = 0; r < 2; r++)
		T_ASSERT(p[r].rc == 0, "rank %d: %d (%s)", r, p[r].rc,
			 optireduce_strerror(p[r].rc));
	/* A call over the mesh that formed. */
	for (int r = 0; r < 2; r++) {
		k[r] = (struct call){ .c = p[r].c, .x = { 1, 2, 3, 4 } };
		T_ASSERT(!pthread_create(&th[r], NULL, allreduce, &k[r]),
			 "thread");
	}
	for (int r = 0; r < 2; r++) {
		pthread_join(th[r], NULL);
		T_OK(k[r].rc);
		for (int i = 0; i < 4; i++)
			T_ASSERT(k[r].x[i] == 2 * (i + 1), "rank %d [%d] = %g",
				 r, i, k[r].x[i]);
		T_OK(optireduce_comm_destroy(p[r].c));
	}
	return 0;
}
