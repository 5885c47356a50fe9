# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# What the cluster tests share, on the host and in guests: netem on the
# transport's datagrams, and checks over the summary lines of
# lib/examples/allreduce_rank (one per rank, "rank=0 size=... ok=1").
# Each rank must be alone in its kernel or network namespace: its
# kernel_* counts are then its own traffic. Sourced, never run.

# A summary line "key=value ..." into v[].
CL_KV='function kv(  i, p) { delete v; for (i = 1; i <= NF; i++) { split($i, p, "="); v[p[1]] = p[2] } }'

# cl_netem_batch DEV PORT ARGS...: the tc batch lines that put netem ARGS
# on the UDP datagrams to PORT (the module's) leaving DEV; the rest, TCP
# (rendezvous, loss reports) included, passes untouched, so ranks stay in
# step and the loss is the transport's alone.
cl_netem_batch() {
	local dev=$1 port=$2

	shift 2
	echo "qdisc add dev $dev root handle 1: prio"
	echo "qdisc add dev $dev parent 1:3 handle 30: netem $*"
	echo "filter add dev $dev parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport $port 0xffff flowid 1:3"
}

# cl_exact FILE...: every rank took the kernel path for at least 4 calls,
# its result was exactly the sum, and nothing was lost.
cl_exact() {
	awk "$CL_KV"'
		/^rank=/ { kv(); k++
			   if (v["ok"] != 1 || v["path"] != "kernel" || v["lost"] != 0 ||
			       v["inexact"] != 0 || v["lossy"] < 4) bad = 1 }
		END { exit bad || k != ARGC - 1 }' "$@"
}

# cl_bounded FILE...: every rank took the kernel path and its own check
# (allreduce_rank --check bounded) held.
cl_bounded() {
	awk "$CL_KV"'
		/^rank=/ { kv(); k++; if (v["ok"] != 1 || v["path"] != "kernel") bad = 1 }
		END { exit bad || k != ARGC - 1 }' "$@"
}

# cl_bytes_conserved LABEL FILE...: every payload byte one rank's kernel
# sent, another's received, or its receiver counted lost: the kernel
# (bytes_lost) or, for receives posted after their round, the library.
cl_bytes_conserved() {
	local label=$1

	shift
	awk -v label="$label" "$CL_KV"'
		/^rank=/ { kv(); k++; tx += v["kernel_tx_bytes"]; rx += v["kernel_rx_bytes"]
			   lost += v["kernel_bytes_lost"]; late += v["late_bytes"] }
		END { printf "# %s: bytes sent %d = received %d + lost %d + posted late %d\n",
			     label, tx, rx, lost, late
		      exit k != ARGC - 1 || !(tx > 0) || tx != rx + lost + late }' "$@"
}

# cl_lost_matches N FILE...: the library's lost entries against the
# kernel's bytes, rank by rank: an entry lacks 1 to N-1 contributions of
# 4 bytes (the kernel's bytes_lost, or the library's late posts); and
# something was lost.
cl_lost_matches() {
	local n=$1

	shift
	awk -v n="$n" "$CL_KV"'
		/^rank=/ { kv(); k++; b = v["kernel_bytes_lost"] + v["late_bytes"]
			   if (v["lost"] > 0) any = 1
			   if (b < 4 * v["lost"] || b > 4 * (n - 1) * v["lost"]) {
				bad = 1
				printf "# rank %s: lost %s entries, but kernel and late bytes %d\n", v["rank"], v["lost"], b
			   }
			   all += v["lost"]; want += v["expected"] }
		END { printf "# lost %d of %d entries (%.2f%%), each within the kernel'"'"'s count\n",
			     all, want, want ? 100 * all / want : 0
		      exit k != ARGC - 1 || bad || !any }' "$@"
}
