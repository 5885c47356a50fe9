// SPDX-License-Identifier: GPL-2.0
/*
 * Receive steering: place a socket's data on the CPU its reader runs on.
 *
 * Placement is the receive side's one copy, from the skb into the posted
 * buffer. Done where the packet is received, it runs on whichever CPU took
 * the packet: for a sender on the same host (veth, bridges), that is the
 * sending CPU, which then does the send copy and the receive copy while
 * the reader's CPU sleeps. TCP does its receive copy in recvmsg, on the
 * reader's CPU, so the two copies run in parallel. Steering gets the same
 * for us without a reader in the loop: a batch for a socket whose reader
 * last ran on another CPU is queued on the socket, and a work item on the
 * reader's CPU places it (as RFS would steer it, but with no set-up).
 *
 *   osk->rx_cpu     the CPU of the last post or recvmsg (-1: none yet)
 *   osk->steer      batches waiting, in arrival order; its own lock
 *   osk->steer_work drains them through optr_receive_here()
 *
 * Steering pays where the reader's CPU has time to spare while its reader
 * waits. Where joined sockets outnumber the online CPUs (ranks on a host
 * with fewer cores than ranks), every CPU is some reader's, and a steered
 * batch waits behind whatever runs there, then costs a work wake-up on
 * top: nothing is steered then. With four ranks on two vCPUs (the
 * emulated guest), 1 MiB allreduces took 15.8 ms p50 unsteered against
 * 17.0 ms steered, 16 MiB ones 131-132 ms against 137-149 ms.
 *
 * Only batches and datagrams of OPTR_STEER_MIN_LEN or more (a link with a
 * 64 KiB MTU sends such datagrams one at a time) are steered: a message of
 * a few KiB, in one datagram or one short batch, costs less to place than
 * the work's wake-up adds to its latency. The queue holds at most
 * rx_steer_kb of skb memory, and only what the socket's receive buffer
 * has room for (mem.c); beyond it, and when the tunable is 0, a batch
 * is placed at once where it arrived, so nothing is dropped for steering's
 * sake, and what waits in the queue is placed first. While batches are
 * queued or being placed, later datagrams for the socket queue behind
 * them, so a sender's data keeps its order but for the one batch the work
 * may be placing when a full queue is flushed. Order matters beyond
 * speed: a later round's fragment placed first tells the early timeout
 * that its sender moved on, and the earlier round could end before its
 * queued data is placed. A batch still queued when its round's deadline
 * passes is late, like one still in flight: its bytes are reported
 * missing and it is dropped as stale when placed.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/skbuff.h>
#include <linux/smp.h>
#include <linux/workqueue.h>

#include "mem.h"
#include "netns.h"
#include "params.h"
#include "receive.h"
#include "sock.h"
#include "stats.h"
#include "steer.h"

/*
 * A batch or lone datagram this long is worth the trip; see above. Under
 * it: the 16 KiB messages of a 64 KiB allreduce on four ranks, whose
 * steered batches added about 0.45 ms to each call's 3.1 ms (4 ranks on 2
 * vCPUs in the emulated guest). Over it: the ~90 KiB batches of long
 * messages (tx_segs 64 at MTU 1500) and the datagrams of a 64 KiB MTU.
 */
#define OPTR_STEER_MIN_LEN	(32 * 1024)

/* Joined sockets of every namespace: the readers sharing the CPUs. */
static atomic_t optr_steer_readers = ATOMIC_INIT(0);

static void optr_steer_work(struct work_struct *work)
{
	struct optr_sock *osk = container_of(work, struct optr_sock,
					     steer_work);
	struct sk_buff *skb;

	/* One batch at a time, so that a full queue flushed by the receive
	 * path (optr_steer) overtakes at most the one being placed here.
	 */
	for (;;) {
		spin_lock_bh(&osk->steer.lock);
		skb = __skb_dequeue(&osk->steer);
		if (skb) {
			osk->steer_bytes -= skb->truesize;
			optr_mem_uncharge(osk, skb);
		}
		WRITE_ONCE(osk->steer_placing, !!skb);
		spin_unlock_bh(&osk->steer.lock);
		if (!skb)
			break;
		/* The receive path's locks and counters expect softirq's
		 * view.
		 */
		local_bh_disable();
		optr_receive_here(osk->on, skb);
		local_bh_enable();
		cond_resched();
	}
}

/*
 * Called from the receive path, under RCU, with @osk the unicast target of
 * @skb's first datagram. True if @skb was queued for the reader's CPU and
 * is no longer the caller's.
 */
bool optr_steer(struct optr_sock *osk, struct sk_buff *skb)
{
	unsigned int limit = optr_tunable_get(&optr_rx_steer_kb) << 10;
	/* Nothing of the socket's ahead of @skb, queued or being placed. */
	bool idle = !READ_ONCE(osk->steer_placing) &&
		    skb_queue_empty_lockless(&osk->steer);
	int cpu = READ_ONCE(osk->rx_cpu);
	struct sk_buff_head full;
	struct sk_buff *held;
	bool queued = false;

	/* A short batch or datagram is cheap to place and would wait for
	 * the work's wake-up: only long ones are worth the trip, unless
	 * others queue.
	 */
	if (!limit || cpu < 0 ||
	    (idle && (cpu == smp_processor_id() ||
		      skb->len < OPTR_STEER_MIN_LEN ||
		      atomic_read(&optr_steer_readers) > num_online_cpus())))
		return false;

	__skb_queue_head_init(&full);
	spin_lock(&osk->steer.lock);
	if (osk->steer_closed || !cpu_online(cpu)) {
		/* Placed here; a closing socket turns it away there. */
	} else if (osk->steer_bytes + skb->truesize <= limit &&
		   optr_mem_charge(osk, skb)) {
		__skb_queue_tail(&osk->steer, skb);
		osk->steer_bytes += skb->truesize;
		/* Pending work keeps its CPU; a fresh one goes to @cpu. */
		queue_work_on(cpu, system_highpri_wq, &osk->steer_work);
		queued = true;
	} else {
		/* Full: what waits goes first, here, then @skb (by the
		 * caller), so that a later round's data cannot overtake
		 * an earlier round's and end it early as if complete.
		 */
		skb_queue_splice_init(&osk->steer, &full);
		osk->steer_bytes = 0;
	}
	spin_unlock(&osk->steer.lock);
	if (queued)
		optr_stat_net(osk->on, OPTR_STAT_RX_STEERED, 1);
	while ((held = __skb_dequeue(&full))) {
		optr_mem_uncharge(osk, held);
		optr_receive_here(osk->on, held);
	}
	return queued;
}

/* The socket's reader runs here now: steer its data to this CPU. */
void optr_steer_note_cpu(struct optr_sock *osk)
{
	int cpu = raw_smp_processor_id();

	if (READ_ONCE(osk->rx_cpu) != cpu)
		WRITE_ONCE(osk->rx_cpu, cpu);
}

/* A socket joined (optr_steer_join) or left (optr_steer_leave) a
 * communicator: one reader more or less for the CPUs.
 */
void optr_steer_join(void)
{
	atomic_inc(&optr_steer_readers);
}

void optr_steer_leave(void)
{
	atomic_dec(&optr_steer_readers);
}

void optr_steer_init(struct optr_sock *osk)
{
	osk->rx_cpu = -1;
	skb_queue_head_init(&osk->steer);
	INIT_WORK(&osk->steer_work, optr_steer_work);
}

/*
 * The socket is closing and the receive path may still hold it under RCU:
 * refuse new batches, then wait for the work and free what it left.
 */
void optr_steer_close(struct optr_sock *osk)
{
	struct sk_buff *skb;

	spin_lock_bh(&osk->steer.lock);
	osk->steer_closed = true;
	spin_unlock_bh(&osk->steer.lock);
	cancel_work_sync(&osk->steer_work);
	while ((skb = skb_dequeue(&osk->steer))) {
		optr_mem_uncharge(osk, skb);
		kfree_skb(skb);
	}
	osk->steer_bytes = 0;
}
