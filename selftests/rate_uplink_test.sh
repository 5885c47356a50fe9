#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Rate control judges a queue on its own host's uplink another sender's
# (kmod/rate.c, optr_rate_uplink()). Four hosts in the emulated fabric
# (tools/lib/fabric.sh): every link a 30 Mbit/s token bucket with a
# 128 KiB queue that marks ECN-capable packets above 32 KiB and lets the
# others fill it (FABRIC_NONECT=tail). Three ranks on hosts 0, 1 and 2
# run 128 KiB calls. Behind host 0, which routes for it, a tenant (a
# namespace of its own, as a container on that host) runs a long TCP flow
# without ECN to host 3: it leaves through host 0's uplink and keeps that
# queue above the marking threshold, answering only loss, whatever rank 0
# sends, so rank 0's datagrams to either receiver are marked there. The
# tenant's flow is forwarded by host 0, not sent from it: TCP small queues
# bound what a socket keeps in its own host's queues to about a
# millisecond of its rate, and a flow sent from host 0 itself kept no
# standing queue in some runs (rate_fair_test.sh). The same calls run
# twice:
#   - rate_foreign 1: reports heavily marked from both receivers through
#     cuts to the floor judge the uplink's queue foreign, and rank 0's
#     dump counts marked reports heard as that queue's (rate_uplink);
#   - rate_foreign 0: every mark is congestion, none is counted so.
# The flow also overflows the queue now and then and drops some of rank
# 0's datagrams: judged, those losses keep 70% of the rate (the dump's
# rate_foreign_loss, and the cuts in the rate tracepoint); heeded, every
# loss cut keeps rate_md_pct, 50%.
# What the uplink dropped and marked, rank 0's rate and its mean call,
# and the tenant's goodput are printed; nothing about time is asserted.
# About a minute in the TCG guest.

dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$dir/lib.sh"
# shellcheck source=../tools/lib/fabric.sh
. "$REPO_DIR/tools/lib/fabric.sh"

AR=$REPO_DIR/lib/build/examples/allreduce_rank
TOOL=${OPTIREDUCE_TOOL:-$REPO_DIR/tools/optireduce/optireduce}
TRACING=/sys/kernel/tracing
EVENT=$TRACING/events/optireduce/optireduce_rate
OUT=$(mktemp -d)
HOSTS=4
N=3
CALLS=${RATE_UPLINK_CALLS:-20}
START=20
FLOOR=2
MD=50
TENANT_NET=10.99.0
AR_OPTS=(--per-call --path kernel --check none --count 32768)
# No warm-up: the rate starts at the fixed rate (pace_mbps). The slack
# keeps sends at the floor from being hurried past the rate to make their
# deadlines (optr_rate_in_time()).
RANK_ENV=(OPTIREDUCE_WARMUP=0 OPTIREDUCE_DIRECT_KB=0 OPTIREDUCE_HADAMARD=off
	OPTIREDUCE_DEADLINE_SLACK_MS=3000)
FABRIC_COTENANT_PIDS=()
port=24000
iport=25200

require_root
require_built "$AR" "$TOOL"
if ! command -v iperf3 >/dev/null; then
	echo "# SKIP: iperf3 not installed"
	exit "$KSFT_SKIP"
fi

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	main_shell || return 0
	[ -w "$EVENT/enable" ] && echo 0 >"$EVENT/enable"
	fabric_cotenants_stop
	params_restore
	cleanup_ns
	rm -rf "$OUT"
}
trap cleanup EXIT

# tenant_setup: TENANT, a namespace behind host 0 (TENANT_NET.2, routed
# by host 0 at TENANT_NET.1), reachable from host 3.
tenant_setup() {
	setup_ns TENANT || return 1
	ip link add tn0 netns "${HOST_NS[0]}" type veth peer name eth0 \
		netns "$TENANT" || return 1
	printf '%s\n' "addr add $TENANT_NET.1/24 dev tn0" "link set tn0 up" |
		ip -n "${HOST_NS[0]}" -batch - || return 1
	ip netns exec "${HOST_NS[0]}" sysctl -qw net.ipv4.ip_forward=1 ||
		return 1
	printf '%s\n' "addr add $TENANT_NET.2/24 dev eth0" "link set eth0 up" \
		"route add default via $TENANT_NET.1" |
		ip -n "$TENANT" -batch - || return 1
	ip -n "${HOST_NS[3]}" route add "$TENANT_NET.0/24" via "${HOST_IP[0]}"
}

# tenant_flow NAME: the tenant's long TCP flow to host 3, its client's
# report in cotenant.tenant.NAME.client.
tenant_flow() {
	fabric_iperf_ns "$OUT" "tenant.$1" "$TENANT" 3 $iport -t 600
	iport=$((iport + 1))
}

# run NAME: the calls beside the tenant's flow, the fabric's counters
# around them, rank 0's dump in NAME.json (allreduce_dumped), the ranks'
# status in st_NAME.
run() {
	local name=$1

	tenant_flow "$name"
	# The flow's queue stands within a second or two.
	sleep 2
	fabric_counters "$OUT/before.$name"
	[ "$tracing" = 1 ] && echo >"$TRACING/trace"
	port=$((port + 10))
	allreduce_dumped "$name" $N $port 400 "$CALLS" "${RANK_ENV[@]}"
	eval "st_$name=$?"
	fabric_counters "$OUT/after.$name"
	fabric_cotenants_stop
	[ "$tracing" = 1 ] && loss_cuts <"$TRACING/trace" >"$OUT/$name.cuts"
}

# loss_cuts: from the rate tracepoint's events on stdin, rank 0's cuts
# for loss (a report's above OPTR_RATE_LOSS_MIN, 2/255, or a drop of its
# own queue) from a rate where keeping 70% and keeping MD% differ:
# "KEPT HALVED OTHER", how many kept 70%, how many MD%, how many neither.
loss_cuts() {
	awk -v md="$MD" -v floor="$FLOOR" '
		function at_least(x) { return x > floor ? x : floor }
		/optireduce_rate:/ && / rank=0 / {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			old = v["old_mbps"] + 0; new = v["new_mbps"] + 0
			split(v["loss"], l, "/")
			if (!(l[1] > 2 || v["queue"] == 1) || new >= old)
				next
			k = at_least(int(old * 70 / 100)); h = at_least(int(old * md / 100))
			if (k == h)
				next
			if (new == k) kept++
			else if (new == h) halved++
			else other++
		}
		END { print kept + 0, halved + 0, other + 0 }'
}

if ! optr_load; then
	echo "# SKIP: optireduce.ko cannot be loaded"
	exit "$KSFT_SKIP"
fi
params_save pace_mbps rate_control rate_min_mbps rate_max_mbps \
	rate_step_mbps rate_md_pct rate_knee_pct rate_foreign
FABRIC_ECN_KB=32
FABRIC_NONECT='tail'
if ! fabric_setup $HOSTS || ! tenant_setup; then
	ktap_fail "fabric setup"
	ktap_finish
fi
tracing=0
if [ -w "$EVENT/enable" ]; then
	echo 1 >"$EVENT/enable"
	tracing=1
fi
echo 1 >"$PARAMS/rate_min_mbps"
echo 200 >"$PARAMS/rate_max_mbps"
echo $FLOOR >"$PARAMS/rate_min_mbps"
echo 5 >"$PARAMS/rate_step_mbps"
echo $MD >"$PARAMS/rate_md_pct"
echo $START >"$PARAMS/pace_mbps"
echo 1 >"$PARAMS/rate_control"

echo 1 >"$PARAMS/rate_foreign"
run judged
echo 0 >"$PARAMS/rate_foreign"
run heeded

for name in judged heeded; do
	rate_fields "$OUT/$name.json" rate_mbps rate_cuts rate_foreign \
		rate_uplink rate_foreign_loss >"$OUT/$name.comm"
	read -r rate cuts foreign uplink floss <"$OUT/$name.comm"
	echo "# rate_foreign $([ $name = judged ] && echo 1 || echo 0): rank 0's rate ${rate:-?} Mbit/s, cuts ${cuts:-?}, foreign ${foreign:-?}, heard as its uplink's ${uplink:-?}, losses cut to 70% ${floss:-?}"
	grep -h '^up0 ' "$OUT/before.$name" "$OUT/after.$name" |
		sed "s/^/# $name: up0 port sent pkts drops overlimits marks backlog: /"
	fabric_report "$OUT/before.$name" "$OUT/after.$name" /dev/null |
		sed -n "s/^fabric \(up0\|sw1\|sw2\|sw3\) /# $name: fabric \1 /p"
	awk -v run=$name '$1 == "call" && $2 < '"$((CALLS - 1))"' { n++; t += $3 }
		END { if (n) printf "# %s: rank 0 mean call %d ms over %d calls\n",
				    run, t / n / 1e6, n }' "$OUT/$name.0"
	[ "$tracing" = 1 ] && read -r kept halved other <"$OUT/$name.cuts" &&
		echo "# $name: rank 0's loss cuts from 5 Mbit/s or more: $kept kept 70%, $halved kept $MD%, $other neither"
	grep ' sender$' "$OUT/cotenant.tenant.$name.client" | tail -n 1 |
		sed "s/^/# $name: the tenant's flow: /"
done
if [ "${st_judged:-1}" -ne 0 ] || [ "${st_heeded:-1}" -ne 0 ]; then
	ranks_stderr
fi

ktap_check "every rank ran every call" \
	test "${st_judged:-1}" -eq 0 -a "${st_heeded:-1}" -eq 0
# The flow kept the uplink's queue: it lost packets there, and rank 0's
# were marked.
ktap_check "host 0's uplink dropped and marked" awk '
	FILENAME == ARGV[1] { b[$1] = $0; next }
	$1 == "up0" { split(b["up0"], x, " "); d = $4 - x[4]; m = $6 - x[6] }
	END { exit !(d > 0 && m > 0) }' "$OUT/before.judged" "$OUT/after.judged"
# One communicator in each dump; "RATE CUTS FOREIGN UPLINK".
ktap_check "rate_foreign 1: marks heard as the uplink's foreign queue" \
	awk '{ n++; ok = $4 > 0 && $3 >= $4 } END { exit !(n == 1 && ok) }' \
	"$OUT/judged.comm"
ktap_check "rate_foreign 0: none" \
	awk '{ n++; ok = $4 == 0 && $3 == 0 && $2 > 0 }
		END { exit !(n == 1 && ok) }' "$OUT/heeded.comm"
# The tenant's flow overflows the queue now and then, dropping some of
# rank 0's datagrams (8 to 20 losses in each run): beside the queue
# judged foreign a loss keeps 70% of the rate, and otherwise MD%.
ktap_check "rate_foreign 1: losses beside the uplink's queue kept 70%" \
	awk '{ n++; ok = $5 > 0 && $5 <= $2 } END { exit !(n == 1 && ok) }' \
	"$OUT/judged.comm"
ktap_check "rate_foreign 0: no loss kept 70%" \
	awk '{ n++; ok = $5 == 0 } END { exit !(n == 1 && ok) }' \
	"$OUT/heeded.comm"
if [ $tracing = 1 ]; then
	# "KEPT HALVED OTHER": the cuts themselves, where 70% and MD% of
	# the rate differ (the judged run's first cuts, before its
	# judgment, keep MD% too).
	ktap_check "tracepoint: judged, loss cuts kept 70%" \
		awk '{ ok = $1 > 0 && $3 == 0 } END { exit !ok }' \
		"$OUT/judged.cuts"
	ktap_check "tracepoint: heeded, every loss cut kept $MD%" \
		awk '{ ok = $1 == 0 && $3 == 0 } END { exit !ok }' \
		"$OUT/heeded.cuts"
else
	ktap_skip "tracepoint: judged, loss cuts kept 70%" "no tracefs"
	ktap_skip "tracepoint: heeded, every loss cut kept $MD%" "no tracefs"
fi
ktap_finish
