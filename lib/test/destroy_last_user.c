// SPDX-License-Identifier: MIT
/*
 * optireduce_comm_destroy() frees the communicator once no API call is
 * inside it, which it checks under comm->lock. A call leaving must drop
 * its count under that lock too: dropped first, with the lock taken only
 * afterwards to wake destroy, a destroy that woke in between would see no
 * users and free the lock the leaving call is about to take. Here the
 * test holds comm->lock while a thread's call leaves (get_option with no
 * place for the value: in and out without taking the lock on its way):
 * the count must not drop before the lock is released.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "comm.h"
#include "helpers.h"

static void *leave(void *arg)
{
	optireduce_comm *c = arg;
	int rc = optireduce_comm_get_option(c, OPTIREDUCE_OPT_RANK, NULL);

	return (void *)(intptr_t)rc;
}

static unsigned int users(optireduce_comm *c)
{
	return __atomic_load_n(&c->users, __ATOMIC_RELAXED);
}

int main(void)
{
	struct optireduce_config cfg;
	struct t_world w;
	pthread_t th;
	void *rc;

	t_config(&cfg);
	t_world_init(&w, 2, &cfg, NULL);
	pthread_mutex_lock(&w.comm[0]->lock);
	T_ASSERT(!pthread_create(&th, NULL, leave, w.comm[0]), "thread");
	/* Time for the call to get in and try to leave; either way the
	 * count must still show it. */
	usleep(200 * 1000);
	T_ASSERT(users(w.comm[0]) == 1,
		 "the count dropped (%u) before the call took the lock",
		 users(w.comm[0]));
	pthread_mutex_unlock(&w.comm[0]->lock);
	T_ASSERT(!pthread_join(th, &rc), "join");
	T_ASSERT((intptr_t)rc == -EFAULT, "get_option: %d", (int)(intptr_t)rc);
	T_ASSERT(users(w.comm[0]) == 0, "users left: %u", users(w.comm[0]));
	t_world_fini(&w);
	return 0;
}
