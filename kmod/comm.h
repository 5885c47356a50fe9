/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Communicators: the peer table a socket joins, its place in the
 * namespace's member table, and multicast group memberships.
 */
#ifndef _OPTR_COMM_H
#define _OPTR_COMM_H

#include <linux/sockptr.h>
#include <linux/types.h>
#include <uapi/linux/optireduce.h>

struct optr_rate;
struct optr_sock;

/* What a socket has seen of one rank's fragments (under osk->lock). */
struct optr_src_seen {
	u32 round;		/* the newest round it sent us, if valid */
	u32 valid;
};

struct optr_comm {
	u32 id;
	u32 rank;
	u32 nranks;
	u32 flags;		/* OPTIREDUCE_JOIN_* */
	__be32 group;		/* with OPTIREDUCE_JOIN_MCAST */
	int group_ifindex;
	u8 ttl;
	struct optireduce_join join;	/* as given, for getsockopt */
	u8 secret[OPTIREDUCE_SECRET_LEN];	/* never leaves the kernel */
	/* With OPTIREDUCE_JOIN_AUTH: the tags' key (auth.c), likewise. */
	u8 mac_key[OPTIREDUCE_SECRET_LEN];
	/*
	 * Per rank, after addr[]: the only part that changes after JOIN,
	 * under osk->lock (round.c: optr_note_source()).
	 */
	struct optr_src_seen *seen;
	struct optr_rate *rate;	/* rate.h */
	__be32 addr[];		/* IPv4 address of each rank */
};

int optr_comm_join(struct optr_sock *osk, sockptr_t optval,
		   unsigned int optlen);
int optr_comm_get(struct optr_sock *osk, char __user *optval, int *len);
void optr_comm_leave(struct optr_sock *osk);
void optr_comm_free(struct optr_comm *comm);

#endif /* _OPTR_COMM_H */
