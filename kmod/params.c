// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters: the borrowed family number and option level (load time
 * only), and the tunables, each with a setter that refuses values out of
 * range. Documentation/ABI/sysfs-module-optireduce describes every one.
 */

#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/sysfs.h>
#include <uapi/linux/optireduce.h>

#include "params.h"

int optr_family = OPTIREDUCE_FAMILY_DEFAULT;
int optr_sol = OPTIREDUCE_SOL_DEFAULT;

/* The family and level are fixed once the module is loaded (0444), so these
 * setters only ever run for insmod arguments: a bad value fails the load.
 */
static int optr_param_set_family(const char *val, const struct kernel_param *kp)
{
	int v, err;

	err = kstrtoint(val, 0, &v);
	if (err)
		return -EINVAL;
	/* 0 is AF_UNSPEC; sock_register() refuses >= NPROTO (AF_MAX). */
	if (v <= AF_UNSPEC || v >= NPROTO)
		return -EINVAL;
	*(int *)kp->arg = v;
	return 0;
}

static int optr_param_set_sol(const char *val, const struct kernel_param *kp)
{
	int v, err;

	err = kstrtoint(val, 0, &v);
	if (err)
		return -EINVAL;
	/* Levels below 256 are protocol numbers (SOL_IP, SOL_TCP ...). */
	if (v < 256 || v > 0xffff)
		return -EINVAL;
	*(int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops optr_family_ops = {
	.set = optr_param_set_family,
	.get = param_get_int,
};

static const struct kernel_param_ops optr_sol_ops = {
	.set = optr_param_set_sol,
	.get = param_get_int,
};

module_param_cb(family, &optr_family_ops, &optr_family, 0444);
MODULE_PARM_DESC(family, "Address family number borrowed at load time (default "
		 __stringify(OPTIREDUCE_FAMILY_DEFAULT) ")");
module_param_cb(sol, &optr_sol_ops, &optr_sol, 0444);
MODULE_PARM_DESC(sol, "Socket option level (default "
		 __stringify(OPTIREDUCE_SOL_DEFAULT) ")");

unsigned short optr_port = OPTIREDUCE_PORT_DEFAULT;

static int optr_param_set_port(const char *val, const struct kernel_param *kp)
{
	u16 v;

	if (kstrtou16(val, 0, &v) || !v)
		return -EINVAL;
	*(unsigned short *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops optr_port_ops = {
	.set = optr_param_set_port,
	.get = param_get_ushort,
};

module_param_cb(port, &optr_port_ops, &optr_port, 0444);
MODULE_PARM_DESC(port, "UDP port of the transport in every namespace (default "
		 __stringify(OPTIREDUCE_PORT_DEFAULT) ")");

#define OPTR_TUNABLE(_name, _def, _min, _max, _desc)			\
	struct optr_tunable optr_##_name = {				\
		.val = _def, .min = _min, .max = _max,			\
	};								\
	module_param_cb(_name, &optr_tunable_ops, &optr_##_name, 0644);	\
	MODULE_PARM_DESC(_name, _desc " [" #_min ".." #_max ", default " #_def "]")

/* Serialises writers, so that the cross-check of two bounds (deadline, rate)
 * and the write are one step whether they come from sysfs or netlink.
 */
static DEFINE_MUTEX(optr_tunable_lock);

/*
 * The one way a tunable changes: out of range, or a deadline bound that
 * would cross the other, is -EINVAL and the value stays.
 */
int optr_tunable_write(struct optr_tunable *t, unsigned int v)
{
	int err = 0;

	if (v < t->min || v > t->max)
		return -EINVAL;
	mutex_lock(&optr_tunable_lock);
	if ((t == &optr_deadline_min_us &&
	     v > optr_tunable_get(&optr_deadline_max_us)) ||
	    (t == &optr_deadline_max_us &&
	     v < optr_tunable_get(&optr_deadline_min_us)) ||
	    (t == &optr_rate_min_mbps &&
	     v > optr_tunable_get(&optr_rate_max_mbps)) ||
	    (t == &optr_rate_max_mbps &&
	     v < optr_tunable_get(&optr_rate_min_mbps)))
		err = -EINVAL;
	else
		WRITE_ONCE(t->val, v);
	mutex_unlock(&optr_tunable_lock);
	return err;
}

static int optr_tunable_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v))
		return -EINVAL;
	return optr_tunable_write(kp->arg, v);
}

static int optr_tunable_show(char *buf, const struct kernel_param *kp)
{
	const struct optr_tunable *t = kp->arg;

	return sysfs_emit(buf, "%u\n", optr_tunable_get(t));
}

static const struct kernel_param_ops optr_tunable_ops = {
	.set = optr_tunable_set,
	.get = optr_tunable_show,
};

OPTR_TUNABLE(deadline_min_us, 10000, 100, 60000000,
	     "Lower bound of an adaptive round deadline, microseconds");
OPTR_TUNABLE(deadline_max_us, 2000000, 1000, 60000000,
	     "Upper bound of an adaptive round deadline, and the deadline before any round completed, microseconds");
OPTR_TUNABLE(deadline_pctl, 95, 50, 100,
	     "Percentile of recent round completion times an adaptive deadline starts from");
OPTR_TUNABLE(deadline_margin_pct, 25, 0, 1000,
	     "Margin added on top of that percentile, percent");
OPTR_TUNABLE(early_idle_pct, 10, 0, 100,
	     "Idle time, as percent of the estimate, after which a round whose senders all sent their last fragment completes early; 0 disables");
OPTR_TUNABLE(pace_mbps, 0, 0, 1000000,
	     "Default send rate of a socket, Mbit/s; 0 leaves sends unpaced");
OPTR_TUNABLE(tx_segs, 64, 1, 128,
	     "Fragments a sender hands to the IP layer at once as one UDP GSO packet; 1 sends each on its own");
OPTR_TUNABLE(max_rounds, 256, 1, 4096,
	     "Rounds a socket may have open at once");
OPTR_TUNABLE(backlog_kb, 16384, 0, 1048576,
	     "Per-socket memory for fragments that arrive before their buffer is posted, KiB");
OPTR_TUNABLE(loss_alarm_ppm, 10000, 0, 1000000,
	     "A round ending with more of its posted bytes missing than this, parts per million, raises a netlink loss alarm; 0 disables");
OPTR_TUNABLE(rx_steer_kb, 4096, 0, 1048576,
	     "Per-socket memory for received batches waiting to be placed on the CPU of the socket's reader, KiB; 0 places them where they arrive");
OPTR_TUNABLE(mem_max_kb, 262144, 0, 16777216,
	     "Memory all sockets together may hold for later placement (backlog and steering), KiB; what does not fit is dropped and counted");
OPTR_TUNABLE(rate_control, 0, 0, 1,
	     "1: each communicator's send rate adapts to its receivers' feedback (loss, ECN marks) and its own queue's drops; 0: the fixed rate of pace_mbps");
OPTR_TUNABLE(rate_min_mbps, 10, 1, 1000000,
	     "Floor of an adapted send rate, Mbit/s");
OPTR_TUNABLE(rate_max_mbps, 100000, 1, 1000000,
	     "Ceiling of an adapted send rate, and where a socket given neither a start nor a fixed rate starts, Mbit/s");
OPTR_TUNABLE(rate_step_mbps, 10, 1, 100000,
	     "Additive increase of a communicator's rate per clean report, Mbit/s (at most an eighth of the rate)");
OPTR_TUNABLE(rate_md_pct, 50, 1, 99,
	     "Percent of a communicator's rate kept on a congested report or own-queue drop (multiplicative decrease)");
OPTR_TUNABLE(rate_knee_pct, 25, 0, 1000,
	     "Percent above the start rate the caller measured (OPTIREDUCE_RATE_START_MBPS) from which a communicator's rate probes slowly (an eighth per 16 clean reports); 0: no knee");
OPTR_TUNABLE(rate_foreign, 1, 0, 1,
	     "1: heavy ECN marks from one receiver, while another receiver reports clean or through cuts to an eighth of the rate (or to the floor), are a queue another sender keeps (from several receivers through such cuts: on our own uplink): its marks probe by 1 Mbit/s per 100 ms and only its loss cuts, keeping at least 70% of the rate, until clean reports say it drained; 0: every mark cuts");
OPTR_TUNABLE(rate_drained, 1, 0, 1,
	     "1: a report whose marked datagrams were followed by 8 unmarked ones (the queue drained while the rate held) raises the rate as a clean one; 0: it cuts as any marked report");

#define OPTR_TUNABLE_ENTRY(_name) { #_name, &optr_##_name }

/* Every runtime tunable by name, for the netlink interface. */
const struct optr_tunable_entry optr_tunables[] = {
	OPTR_TUNABLE_ENTRY(deadline_min_us),
	OPTR_TUNABLE_ENTRY(deadline_max_us),
	OPTR_TUNABLE_ENTRY(deadline_pctl),
	OPTR_TUNABLE_ENTRY(deadline_margin_pct),
	OPTR_TUNABLE_ENTRY(early_idle_pct),
	OPTR_TUNABLE_ENTRY(pace_mbps),
	OPTR_TUNABLE_ENTRY(tx_segs),
	OPTR_TUNABLE_ENTRY(max_rounds),
	OPTR_TUNABLE_ENTRY(backlog_kb),
	OPTR_TUNABLE_ENTRY(loss_alarm_ppm),
	OPTR_TUNABLE_ENTRY(rx_steer_kb),
	OPTR_TUNABLE_ENTRY(mem_max_kb),
	OPTR_TUNABLE_ENTRY(rate_control),
	OPTR_TUNABLE_ENTRY(rate_min_mbps),
	OPTR_TUNABLE_ENTRY(rate_max_mbps),
	OPTR_TUNABLE_ENTRY(rate_step_mbps),
	OPTR_TUNABLE_ENTRY(rate_md_pct),
	OPTR_TUNABLE_ENTRY(rate_knee_pct),
	OPTR_TUNABLE_ENTRY(rate_foreign),
	OPTR_TUNABLE_ENTRY(rate_drained),
	{}
};
