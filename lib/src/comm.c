// SPDX-License-Identifier: MIT
/*
 * The public API: communicators, allreduce calls, options, statistics.
 * Everything here only validates, queues and collects; engine.c runs the
 * calls. See comm.h for the locking and registry rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "dtype.h"
#include "hadamard.h"
#include "memlock.h"
#include "transport.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* Registry of live communicators.                                     */

static pthread_mutex_t or_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static optireduce_comm *or_registry;

/* Take a user reference on a live communicator, or say it is not one. */
static int comm_get(optireduce_comm *c)
{
	int rc = -EBADF;

	if (!c)
		return rc;
	pthread_mutex_lock(&or_registry_lock);
	for (optireduce_comm *p = or_registry; p; p = p->next) {
		if (p != c)
			continue;
		/* Found in the list: safe to dereference. */
		if (c->magic == OR_COMM_MAGIC) {
			c->users++;
			rc = 0;
		}
		break;
	}
	pthread_mutex_unlock(&or_registry_lock);
	return rc;
}

/*
 * Under c->lock: destroy() counts users under it, so it cannot see none
 * and free c while this user has yet to take the lock to wake it.
 */
static void comm_put(optireduce_comm *c)
{
	pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&or_registry_lock);
	c->users--;
	pthread_mutex_unlock(&or_registry_lock);
	/* destroy() may be waiting for the last user. */
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

static unsigned int comm_users(optireduce_comm *c)
{
	unsigned int u;

	pthread_mutex_lock(&or_registry_lock);
	u = c->users;
	pthread_mutex_unlock(&or_registry_lock);
	return u;
}

/* ------------------------------------------------------------------ */
/* Configuration.                                                      */

OR_EXPORT void optireduce_config_init(struct optireduce_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = 1;
	cfg->transport = OPTIREDUCE_TRANSPORT_AUTO;
	cfg->hadamard = OPTIREDUCE_HADAMARD_AUTO;
	cfg->hadamard_block = OR_HADAMARD_DEF_BLOCK;
	cfg->incast = 0;
	cfg->max_inflight = 128;
	cfg->warmup_calls = 20;			/* paper: 20 reliable runs */
	cfg->loss_threshold_ppm = 50000;	/* 5% */
	cfg->fallback_calls = 100;
	cfg->timeout_ms = 1800000;		/* 30 min, as torch.distributed */
	/* Calls long against a one-way delay wait for their peers to start
	 * (Documentation/design.md, "The library on the kernel path"). */
	cfg->ready_kb = 256;
	/* One round for calls that wait on delays, not bytes
	 * (Documentation/design.md, "Direct calls"): 16 KiB buffers with
	 * four ranks. */
	cfg->direct_kb = 48;
	cfg->seed = 0x5eed0f0971ed0ceull;
}

static int valid_block(uint64_t b)
{
	return b >= OR_HADAMARD_MIN_BLOCK && b <= OR_HADAMARD_MAX_BLOCK &&
	       !(b & (b - 1));
}

int or_config_check(const struct optireduce_config *cfg)
{
	if (!cfg)
		return -EFAULT;
	for (size_t i = 0; i < OR_ARRAY_SIZE(cfg->reserved); i++)
		if (cfg->reserved[i])
			return -EINVAL;
	if (cfg->size < 1 || cfg->size > OPTIREDUCE_MAX_RANKS ||
	    cfg->rank < 0 || cfg->rank >= cfg->size)
		return -ERANGE;
	if (cfg->transport > OPTIREDUCE_TRANSPORT_TCP ||
	    cfg->hadamard > OPTIREDUCE_HADAMARD_ON ||
	    !valid_block(cfg->hadamard_block) ||
	    cfg->max_inflight < 1 || cfg->max_inflight > OPTIREDUCE_MAX_INFLIGHT ||
	    cfg->loss_threshold_ppm > 1000000 ||
	    cfg->direct_kb > OR_DIRECT_MAX_KB ||
	    (cfg->flags & ~(OPTIREDUCE_CFG_QUIET |
			    OPTIREDUCE_CFG_INCAST_DYNAMIC |
			    OPTIREDUCE_CFG_AUTH)) ||
	    (cfg->mcast_group && !IN_MULTICAST(ntohl(cfg->mcast_group))))
		return -EINVAL;
	return 0;
}

/* What every rank must agree on; checked when the mesh connects. */
uint64_t or_config_hash(const struct optireduce_config *cfg)
{
	const uint64_t v[] = {
		cfg->size, cfg->hadamard, cfg->hadamard_block, cfg->incast,
		cfg->warmup_calls, cfg->loss_threshold_ppm, cfg->fallback_calls,
		cfg->seed, OR_REPORT_LAG, cfg->mcast_group, cfg->ready_kb,
		cfg->direct_kb, cfg->flags & OPTIREDUCE_CFG_INCAST_DYNAMIC,
		cfg->flags & OPTIREDUCE_CFG_AUTH,
	};
	uint64_t h = 0x6f707469726564ull;

	for (size_t i = 0; i < OR_ARRAY_SIZE(v); i++)
		h = or_mix64(h ^ v[i]);
	return h;
}

/* ------------------------------------------------------------------ */
/* Create and destroy.                                                 */

static void comm_free(optireduce_comm *c)
{
	if (c->rel)
		c->rel->ops->destroy(c->rel);
	if (c->lossy)
		c->lossy->ops->destroy(c->lossy);
	for (unsigned int i = 0; c->slots && i < c->nslots; i++) {
		free(c->slots[i].work);
		free(c->slots[i].p1);
		free(c->slots[i].p2);
		free(c->slots[i].wire);
	}
	free(c->slots);
	free(c->queue);
	or_engine_free(c);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
	c->magic = 0;
	free(c);
}

/*
 * Takes ownership of the transports (also on failure). Tests call it
 * directly with simulated ones.
 */
int or_comm_create_with(const struct optireduce_config *cfg,
			struct or_transport *rel, struct or_transport *lossy,
			int lossy_kind, optireduce_comm **out)
{
	optireduce_comm *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		if (rel)
			rel->ops->destroy(rel);
		if (lossy)
			lossy->ops->destroy(lossy);
		return -ENOMEM;
	}
	c->magic = OR_COMM_MAGIC;
	c->rank = cfg->rank;
	c->size = cfg->size;
	c->cfg = *cfg;
	c->cfg.peers = NULL;
	c->rel = rel;
	c->lossy = lossy;
	c->lossy_kind = lossy ? lossy_kind : OPTIREDUCE_TRANSPORT_TCP;
	c->state = OR_LIVE;
	c->wake_fd = -1;
	c->memlock_kb = OR_MEMLOCK_UNLIMITED;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	or_est_init(&c->est);
	or_incast_init(&c->incast);
	c->nslots = cfg->max_inflight;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	c->queue = calloc(c->nslots, sizeof(*c->queue));
	rc = !c->slots || !c->queue ? -ENOMEM : or_engine_alloc(c);
	if (!rc)
		rc = or_engine_start(c);
	if (rc) {
		comm_free(c);
		return rc;
	}
	pthread_mutex_lock(&or_registry_lock);
	c->next = or_registry;
	or_registry = c;
	pthread_mutex_unlock(&or_registry_lock);
	*out = c;
	return 0;
}

/* Tell once per process why lossy calls are not possible. */
static void notice_no_kernel(const struct optireduce_config *cfg,
			     const char *why)
{
	static int told;

	if (__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		return;
	or_log(cfg->flags & OPTIREDUCE_CFG_QUIET,
	       "%s; using the reliable TCP path (TAR+TCP) for every call", why);
}

/*
 * Say once per process when the locked-memory limit keeps large calls off
 * the lossy path, and from what size on (the Transpose AllReduce's
 * receives: two shards a peer).
 */
static void notice_memlock(const struct optireduce_config *cfg,
			   uint32_t memlock_kb)
{
	static int told;
	uint64_t count = 0;

	if (__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		return;
	for (uint64_t step = 1ull << 40; step; step >>= 1)
		if (or_memlock_call_kb(count + step, cfg->size, 0) <= memlock_kb)
			count += step;
	or_log(cfg->flags & OPTIREDUCE_CFG_QUIET,
	       "locked memory for lossy receives: %u KiB (RLIMIT_MEMLOCK of "
	       "the tightest rank, shared by the ranks on its host): calls "
	       "over about %llu KiB take the reliable TCP path. Raise ulimit "
	       "-l or grant CAP_IPC_LOCK to lift it", memlock_kb,
	       (unsigned long long)(count * sizeof(float) / 1024));
}

/*
 * The lossy transport is set up before the TCP mesh, so that whether it
 * works here travels in the mesh's hello (lossy_ok): every rank then sees
 * the same all_lossy and takes the same path.
 */
static int kernel_transport(const struct optireduce_config *cfg,
			    const uint8_t *secret, struct or_transport **kt)
{
	struct or_kernel_params kp = {
		.rank = cfg->rank,
		.size = cfg->size,
		.peers = cfg->peers,
		.comm_hash = or_config_hash(cfg),
		.secret = secret,
		.mcast_group = cfg->mcast_group,
		.mcast_ifindex = cfg->mcast_ifindex,
		.auth = !!(cfg->flags & OPTIREDUCE_CFG_AUTH),
		.quiet = !!(cfg->flags & OPTIREDUCE_CFG_QUIET),
	};
	char why[96];
	int rc;

	*kt = NULL;
	if (cfg->transport == OPTIREDUCE_TRANSPORT_TCP)
		return -EAFNOSUPPORT;
	rc = or_kernel_probe();
	if (rc) {
		if (cfg->transport == OPTIREDUCE_TRANSPORT_AUTO && cfg->size > 1)
			notice_no_kernel(cfg, "kernel module not loaded (no "
					 "/sys/module/optireduce)");
		return rc;
	}
	if (cfg->size < 2)
		return 0;	/* alone: nothing ever travels */
	rc = or_kernel_create(&kp, kt);
	if (rc && cfg->transport == OPTIREDUCE_TRANSPORT_AUTO) {
		snprintf(why, sizeof(why), "kernel transport unavailable (%s)",
			 strerror(-rc));
		notice_no_kernel(cfg, why);
	}
	return rc;
}

int or_comm_create_tcp(const struct optireduce_config *cfg, int listen_fd,
		       const uint8_t *secret, optireduce_comm **out)
{
	struct or_tcp_params p = {
		.rank = cfg->rank,
		.size = cfg->size,
		.peers = cfg->peers,
		.listen_fd = listen_fd,
		.cfg_hash = or_config_hash(cfg),
		.timeout_ms = cfg->timeout_ms,
		.quiet = !!(cfg->flags & OPTIREDUCE_CFG_QUIET),
	};
	struct or_transport *rel = NULL, *kt;
	struct or_tcp_agreed agreed;
	int kernel, rc;

	/* A tag keyed with no secret would authenticate nothing: refuse
	 * rather than run unauthenticated. */
	if ((cfg->flags & OPTIREDUCE_CFG_AUTH) && cfg->size > 1 && !secret) {
		or_log(p.quiet, "rank %d: authenticated datagrams need the "
		       "communicator's secret: the rendezvous draws one; with "
		       "a peer list, set OPTIREDUCE_SECRET", cfg->rank);
		if (listen_fd >= 0)
			close(listen_fd);
		return -EINVAL;
	}
	kernel = kernel_transport(cfg, secret, &kt);
	if (kernel && cfg->transport == OPTIREDUCE_TRANSPORT_KERNEL) {
		if (listen_fd >= 0)
			close(listen_fd);
		return kernel;
	}
	p.lossy_ok = kernel == 0;
	p.memlock_kb = OR_MEMLOCK_UNLIMITED;
	rc = kt ? or_memlock_budget_kb(cfg, &p.memlock_kb) : 0;
	if (rc) {
		kt->ops->destroy(kt);
		if (listen_fd >= 0)
			close(listen_fd);
		return rc;
	}
	rc = or_tcp_create(&p, &rel, &agreed);
	if (rc) {
		if (kt)
			kt->ops->destroy(kt);
		return rc;
	}
	if (kt && !agreed.lossy_ok) {
		kt->ops->destroy(kt);
		kt = NULL;
		if (cfg->transport == OPTIREDUCE_TRANSPORT_KERNEL) {
			rel->ops->destroy(rel);
			return -EAFNOSUPPORT;
		}
		notice_no_kernel(cfg, "a peer cannot use the kernel transport");
	}
	rc = or_comm_create_with(cfg, rel, kt, kt ? OPTIREDUCE_TRANSPORT_KERNEL :
				 OPTIREDUCE_TRANSPORT_TCP, out);
	if (rc || !kt)
		return rc;
	/* Before any call: none can start until we return. */
	pthread_mutex_lock(&(*out)->lock);
	(*out)->memlock_kb = agreed.memlock_kb;
	pthread_mutex_unlock(&(*out)->lock);
	if (agreed.memlock_kb != OR_MEMLOCK_UNLIMITED)
		notice_memlock(cfg, agreed.memlock_kb);
	return 0;
}

OR_EXPORT int optireduce_comm_create(const struct optireduce_config *cfg,
				     optireduce_comm **comm)
{
	uint8_t secret[OR_SECRET_LEN];
	int rc;

	if (!comm)
		return -EFAULT;
	*comm = NULL;
	rc = or_config_check(cfg);
	if (rc)
		return rc;
	if (!cfg->peers)
		return -EFAULT;
	for (int i = 0; i < cfg->size; i++)
		if (!cfg->peers[i])
			return -EFAULT;
	/* With a peer list there is no rendezvous: the launcher's secret. */
	rc = or_env_secret(secret, !!(cfg->flags & OPTIREDUCE_CFG_QUIET));
	if (rc < 0)
		return rc;
	rc = or_comm_create_tcp(cfg, -1, rc ? secret : NULL, comm);
	explicit_bzero(secret, sizeof(secret));
	return rc;
}

OR_EXPORT int optireduce_comm_destroy(optireduce_comm *comm)
{
	optireduce_comm **pp;

	if (!comm)
		return -EBADF;
	/* Unlisted first: from here on every API call sees -EBADF. */
	pthread_mutex_lock(&or_registry_lock);
	for (pp = &or_registry; *pp && *pp != comm; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&or_registry_lock);
		return -EBADF;
	}
	*pp = comm->next;
	pthread_mutex_unlock(&or_registry_lock);

	pthread_mutex_lock(&comm->lock);
	comm->state = OR_CLOSING;
	pthread_mutex_unlock(&comm->lock);
	or_engine_stop(comm);

	/* Whatever did not finish is canceled; waiters wake up and leave. */
	pthread_mutex_lock(&comm->lock);
	for (unsigned int i = 0; i < comm->nslots; i++) {
		struct or_call *s = &comm->slots[i];

		if (s->state == OR_SLOT_QUEUED || s->state == OR_SLOT_ACTIVE) {
			s->err = -ECANCELED;
			s->state = OR_SLOT_DONE;
		}
	}
	pthread_cond_broadcast(&comm->cv);
	while (comm_users(comm))
		pthread_cond_wait(&comm->cv, &comm->lock);
	pthread_mutex_unlock(&comm->lock);
	comm_free(comm);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Allreduce.                                                          */

static int check_args(void *buf, size_t count, int dtype, int op)
{
	if (!buf)
		return -EFAULT;
	if (!count)
		return -EINVAL;
	if (count > OPTIREDUCE_MAX_COUNT)
		return -E2BIG;
	if (!or_dtype_size(dtype) ||
	    (op != OPTIREDUCE_SUM && op != OPTIREDUCE_MEAN))
		return -EOPNOTSUPP;
	return 0;
}

/* A free slot, preferring one whose buffers already fit: steady state
 * (the same bucket sizes every iteration) then allocates nothing. */
static int pick_slot(optireduce_comm *c, size_t count)
{
	int best = -1, big = -1;

	for (unsigned int i = 0; i < c->nslots; i++) {
		struct or_call *s = &c->slots[i];

		if (s->state != OR_SLOT_FREE)
			continue;
		if (s->work_cap >= count &&
		    (best < 0 || s->work_cap < c->slots[best].work_cap))
			best = i;
		if (big < 0 || s->work_cap > c->slots[big].work_cap)
			big = i;
	}
	return best >= 0 ? best : big;
}

static int comm_state_err(optireduce_comm *c)
{
	return c->state == OR_LIVE ? 0 : c->state == OR_BROKEN ? -ENOTCONN : -EBADF;
}

OR_EXPORT int optireduce_allreduce_start(optireduce_comm *comm, void *buf,
					 size_t count, int dtype, int op,
					 optireduce_handle *handle)
{
	struct or_call *s;
	int rc, idx;

	rc = comm_get(comm);
	if (rc)
		return rc;
	rc = handle ? check_args(buf, count, dtype, op) : -EFAULT;
	if (rc)
		goto out;
	pthread_mutex_lock(&comm->lock);
	rc = comm_state_err(comm);
	if (!rc && comm->inflight == comm->nslots)
		rc = -EBUSY;
	if (rc) {
		pthread_mutex_unlock(&comm->lock);
		goto out;
	}
	idx = pick_slot(comm, count);
	s = &comm->slots[idx];
	s->gen++;
	s->state = OR_SLOT_QUEUED;
	s->err = 0;
	s->seq = comm->next_seq++;
	s->buf = buf;
	s->count = count;
	s->dtype = dtype;
	s->op = op;
	s->incast = comm->cfg.incast;
	s->hadamard_mode = comm->cfg.hadamard;
	s->hadamard_block = comm->cfg.hadamard_block;
	s->loss_ppm = comm->cfg.loss_threshold_ppm;
	s->fallback_calls = comm->cfg.fallback_calls;
	s->timeout_ms = comm->cfg.timeout_ms;
	s->incast_dynamic = !!(comm->cfg.flags & OPTIREDUCE_CFG_INCAST_DYNAMIC);
	s->t_start = or_now_ns();
	comm->queue[(comm->qhead + comm->qlen) % comm->nslots] = idx;
	comm->qlen++;
	comm->inflight++;
	*handle = s->gen << OR_SLOT_BITS | idx;
	pthread_mutex_unlock(&comm->lock);
	or_engine_wake(comm);
out:
	comm_put(comm);
	return rc;
}

/* The slot of a handle, or NULL when the handle is not a live call. */
static struct or_call *handle_slot(optireduce_comm *c, optireduce_handle h)
{
	unsigned int idx = h & ((1u << OR_SLOT_BITS) - 1);
	struct or_call *s;

	if (idx >= c->nslots)
		return NULL;
	s = &c->slots[idx];
	if (s->state == OR_SLOT_FREE || s->gen != h >> OR_SLOT_BITS)
		return NULL;
	return s;
}

/* Hand the outcome of a finished call over and free its slot. */
static int collect(optireduce_comm *c, struct or_call *s,
		   struct optireduce_result *res)
{
	if (res)
		*res = s->res;
	s->state = OR_SLOT_FREE;
	c->inflight--;
	return s->err;
}

/* test (block = 0) and wait (block = 1) */
static int reap_call(optireduce_comm *comm, optireduce_handle handle,
		     struct optireduce_result *res, int block)
{
	struct or_call *s;
	int rc;

	rc = comm_get(comm);
	if (rc)
		return rc;
	pthread_mutex_lock(&comm->lock);
	for (;;) {
		s = handle_slot(comm, handle);
		if (!s) {
			rc = -ESRCH;	/* unknown, or collected by another thread */
			break;
		}
		if (s->state == OR_SLOT_DONE) {
			rc = collect(comm, s, res);
			break;
		}
		if (!block) {
			rc = -EAGAIN;
			break;
		}
		pthread_cond_wait(&comm->cv, &comm->lock);
	}
	pthread_mutex_unlock(&comm->lock);
	comm_put(comm);
	return rc;
}

OR_EXPORT int optireduce_allreduce_test(optireduce_comm *comm,
					optireduce_handle handle,
					struct optireduce_result *res)
{
	return reap_call(comm, handle, res, 0);
}

OR_EXPORT int optireduce_allreduce_wait(optireduce_comm *comm,
					optireduce_handle handle,
					struct optireduce_result *res)
{
	return reap_call(comm, handle, res, 1);
}

OR_EXPORT int optireduce_allreduce(optireduce_comm *comm, void *buf,
				   size_t count, int dtype, int op,
				   struct optireduce_result *res)
{
	optireduce_handle h;
	int rc;

	rc = optireduce_allreduce_start(comm, buf, count, dtype, op, &h);
	if (rc)
		return rc;
	return optireduce_allreduce_wait(comm, h, res);
}

/* ------------------------------------------------------------------ */
/* Options and statistics.                                             */

/* Options that live in the config: where, and their range. */
static const struct {
	int option;
	size_t off;
	int64_t min, max;
} or_options[] = {
	{ OPTIREDUCE_OPT_HADAMARD, offsetof(struct optireduce_config, hadamard),
	  OPTIREDUCE_HADAMARD_AUTO, OPTIREDUCE_HADAMARD_ON },
	{ OPTIREDUCE_OPT_HADAMARD_BLOCK, offsetof(struct optireduce_config, hadamard_block),
	  OR_HADAMARD_MIN_BLOCK, OR_HADAMARD_MAX_BLOCK },
	{ OPTIREDUCE_OPT_INCAST, offsetof(struct optireduce_config, incast),
	  0, OPTIREDUCE_MAX_RANKS },
	{ OPTIREDUCE_OPT_LOSS_THRESHOLD_PPM, offsetof(struct optireduce_config, loss_threshold_ppm),
	  0, 1000000 },
	{ OPTIREDUCE_OPT_FALLBACK_CALLS, offsetof(struct optireduce_config, fallback_calls),
	  0, UINT32_MAX },
	{ OPTIREDUCE_OPT_TIMEOUT_MS, offsetof(struct optireduce_config, timeout_ms),
	  0, UINT32_MAX },
};

static unsigned int *option_field(optireduce_comm *c, int option,
				  int64_t *min, int64_t *max)
{
	for (size_t i = 0; i < OR_ARRAY_SIZE(or_options); i++) {
		if (or_options[i].option != option)
			continue;
		*min = or_options[i].min;
		*max = or_options[i].max;
		return (unsigned int *)((char *)&c->cfg + or_options[i].off);
	}
	return NULL;
}

OR_EXPORT int optireduce_comm_set_option(optireduce_comm *comm, int option,
					 int64_t value)
{
	int64_t min, max;
	unsigned int *field;
	int rc;

	rc = comm_get(comm);
	if (rc)
		return rc;
	pthread_mutex_lock(&comm->lock);
	field = option_field(comm, option, &min, &max);
	if (field) {
		if (value < min || value > max ||
		    (option == OPTIREDUCE_OPT_HADAMARD_BLOCK && !valid_block(value)))
			rc = -EINVAL;
		else
			*field = value;
	} else if (option == OPTIREDUCE_OPT_INCAST_DYNAMIC) {
		if (value == 0 || value == 1)
			comm->cfg.flags = (comm->cfg.flags &
					   ~OPTIREDUCE_CFG_INCAST_DYNAMIC) |
				(value ? OPTIREDUCE_CFG_INCAST_DYNAMIC : 0);
		else
			rc = -EINVAL;
	} else {
		rc = option >= OPTIREDUCE_OPT_RANK &&
		     option <= OPTIREDUCE_OPT_MAX_INFLIGHT ? -EPERM : -EINVAL;
	}
	pthread_mutex_unlock(&comm->lock);
	comm_put(comm);
	return rc;
}

OR_EXPORT int optireduce_comm_get_option(optireduce_comm *comm, int option,
					 int64_t *value)
{
	int64_t min, max;
	unsigned int *field;
	int rc;

	rc = comm_get(comm);
	if (rc)
		return rc;
	if (!value) {
		comm_put(comm);
		return -EFAULT;
	}
	pthread_mutex_lock(&comm->lock);
	field = option_field(comm, option, &min, &max);
	if (field)
		*value = *field;
	else if (option == OPTIREDUCE_OPT_RANK)
		*value = comm->rank;
	else if (option == OPTIREDUCE_OPT_SIZE)
		*value = comm->size;
	else if (option == OPTIREDUCE_OPT_TRANSPORT)
		*value = comm->lossy_kind;
	else if (option == OPTIREDUCE_OPT_MAX_INFLIGHT)
		*value = comm->nslots;
	else if (option == OPTIREDUCE_OPT_INCAST_DYNAMIC)
		*value = !!(comm->cfg.flags & OPTIREDUCE_CFG_INCAST_DYNAMIC);
	else
		rc = -EINVAL;
	pthread_mutex_unlock(&comm->lock);
	comm_put(comm);
	return rc;
}

OR_EXPORT int optireduce_comm_stats(optireduce_comm *comm,
				    struct optireduce_stats *stats)
{
	int rc;

	rc = comm_get(comm);
	if (rc)
		return rc;
	if (stats) {
		pthread_mutex_lock(&comm->lock);
		*stats = comm->stats;
		pthread_mutex_unlock(&comm->lock);
	} else {
		rc = -EFAULT;
	}
	comm_put(comm);
	return rc;
}

/* Tests only: the authors' behaviour (no rescaling, local value for
 * phase-2 holes), to show the statistical test would catch the bias. Set
 * before the first call. */
void or_test_no_compensation(optireduce_comm *c, int on)
{
	c->no_compensation = on;
}
