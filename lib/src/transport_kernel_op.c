// SPDX-License-Identifier: MIT
/*
 * The kernel transport's operations: each one a msghdr with one control
 * message (post, send or cancel), kept until the kernel is done with it,
 * then recycled. They are numbered (idx, gen) so a completion record can
 * name its post without a pointer the kernel would hand back unchecked.
 * The pool grows to the largest batch in flight and then stops growing.
 */
#include <stdlib.h>
#include <string.h>

#include "transport_kernel.h"

struct kt_op *kt_op_get(struct kt *kt, uint8_t kind, uint8_t refs,
			uint64_t user_data)
{
	struct kt_op *op = kt->free_ops;

	if (op) {
		kt->free_ops = op->next;
	} else {
		if (kt->nops == kt->tab_cap) {
			uint32_t cap = kt->tab_cap ? kt->tab_cap * 2 : 64;
			struct kt_op **tab = realloc(kt->tab, cap * sizeof(*tab));

			if (!tab)
				return NULL;
			kt->tab = tab;
			kt->tab_cap = cap;
		}
		op = calloc(1, sizeof(*op));
		if (!op)
			return NULL;
		/* Room for a scatter send's parts now, while the pool
		 * grows: a steady state allocates nothing. The cap is
		 * known before the first op (or_kernel_create()). */
		if (kt->t.caps & OR_TCAP_SCATTER) {
			op->parts = calloc(kt->t.size, sizeof(*op->parts));
			if (!op->parts) {
				free(op);
				return NULL;
			}
		}
		op->idx = kt->nops;
		kt->tab[kt->nops++] = op;
	}
	op->gen++;
	op->next = NULL;
	op->kind = kind;
	op->refs = refs;
	op->user_data = user_data;
	return op;
}

void kt_op_put(struct kt *kt, struct kt_op *op)
{
	if (--op->refs)
		return;
	op->next = kt->free_ops;
	kt->free_ops = op;
}

/* Fill op's msghdr: one control message of type with data, one iovec. */
void *kt_op_prep(struct kt *kt, struct kt_op *op, int type, size_t dlen,
		 const void *buf, uint64_t len)
{
	struct cmsghdr *c;

	memset(&op->ctl, 0, sizeof(op->ctl));
	op->iov.iov_base = (void *)buf;
	op->iov.iov_len = len;
	op->msg = (struct msghdr){
		.msg_iov = &op->iov,
		.msg_iovlen = buf ? 1 : 0,
		.msg_control = op->ctl.b,
		.msg_controllen = CMSG_SPACE(dlen),
	};
	c = CMSG_FIRSTHDR(&op->msg);
	c->cmsg_level = kt->sol;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(dlen);
	return CMSG_DATA(c);
}

void kt_queue(struct kt *kt, struct kt_op *op)
{
	if (kt->qtail)
		kt->qtail->next = op;
	else
		kt->qhead = op;
	kt->qtail = op;
}

struct kt_op *kt_queue_pop(struct kt *kt)
{
	struct kt_op *op = kt->qhead;

	if (op) {
		kt->qhead = op->next;
		if (!kt->qhead)
			kt->qtail = NULL;
		op->next = NULL;
	}
	return op;
}

void kt_rx_init(struct kt_rx *rx)
{
	rx->iov = (struct iovec){ rx->buf, sizeof(rx->buf) };
	rx->msg = (struct msghdr){ .msg_iov = &rx->iov, .msg_iovlen = 1 };
}
