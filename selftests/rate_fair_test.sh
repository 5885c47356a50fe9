#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Rate control is fair to a TCP co-tenant (kmod/rate.c). Three hosts in
# the emulated fabric (tools/lib/fabric.sh): every link, both ways, a 30
# Mbit/s token bucket with a 128 KiB queue that marks ECN-capable packets
# above 32 KiB. A long TCP flow (iperf3, host 2 to host 1, as a co-tenant
# runs it: no ECN) measures its goodput
#   - alone: the link as TCP gets it (B);
#   - beside two optireduce ranks on hosts 0 and 1 that exchange 256 KiB
#     every round (optr_peer; the switch's port towards host 1 is
#     shared), paced at a fixed 200 Mbit/s, far above the link;
#   - the same with rate_control on, starting from 200 Mbit/s;
#   - the same again with rate_foreign 0 (every mark cuts);
#   - the pair beside a bursty job instead (iperf3 writing 256 KiB at
#     once, 4 Mbit/s on average, as fabric_cotenants_start's), with
#     rate_drained 1 and 0.
# With rate control TCP keeps at least its fair share, half of B, less a
# fifth for the emulated clock's noise, and optireduce gets more of its
# data through than when it overruns the link at a fixed rate (whose
# datagrams mostly die in the queues). The ports mark ECN-capable packets
# above 32 KiB but let TCP's fill the queue (FABRIC_NONECT=tail): the
# flow's standing queue marks nearly every datagram of ours, and rate
# control judges it a queue another sender keeps (rate_foreign in the
# dump), where with rate_foreign 0 the marks hold the rate down and
# optireduce places less. The goodputs are printed; nothing
# about time is asserted. The alone flow also checks the co-tenant meter
# that allreduce-bench reads around each contender (fabric.sh,
# fabric_cotenant_bytes) against iperf3's own count. A
# bursty job's queue comes and goes: host 1 reports marks followed by
# unmarked datagrams as drained and host 0 counts them (rate_drained in
# the dump), none with rate_drained 0. Last, the fabric's
# two models of a TCP flow without ECN (FABRIC_NONECT): "tail" never drops
# its packets early, "early" drops them where ECN-capable ones are marked,
# and the fabric's report counts those drops.
#
# The co-tenant sends from a host of its own: the queue the two share is
# then a switch's, which a TCP flow fills to its end. Sent from host 0,
# the flow shared the pair's own uplink, where TCP small queues keep a
# socket's backlog to about a millisecond of its rate: runs went either
# way, the flow losing segments at a 20-25 ms round trip, or none at
# 10-12 ms, leaving the queue to the pair's marks (no standing queue to
# judge), its goodput set by what the pair left (results.md).
. "$(dirname "$0")/lib.sh"
# shellcheck source=../tools/lib/fabric.sh
. "$REPO_DIR/tools/lib/fabric.sh"

peer_prepare rate-fair
TOOL=${OPTIREDUCE_TOOL:-$REPO_DIR/tools/optireduce/optireduce}
require_built "$TOOL"
PIDS=()
FABRIC_COTENANT_PIDS=()
cleanup() {
	fabric_cotenants_stop
	params_restore
	peer_cleanup
}
trap cleanup EXIT

SECS=${RATE_FAIR_SECS:-12}
[ "$SECS" -ge 7 ] || SECS=7	# the meter skips a flow's first 2 s, last 3
START=200
COMM=5151
command -v iperf3 >/dev/null || { echo "# SKIP: no iperf3"; exit "$KSFT_SKIP"; }
params_save pace_mbps rate_control rate_min_mbps rate_max_mbps \
	rate_step_mbps rate_md_pct rate_foreign rate_drained
FABRIC_ECN_KB=32
fabric_setup 3 || { ktap_fail "fabric of 3 hosts"; ktap_finish; }
PEERS=${HOST_IP[0]},${HOST_IP[1]}
COTENANT=2	# the co-tenant's host; its flows go to host 1

# rx_bytes: what host 1's optireduce sockets placed so far.
rx_bytes() { net_counters 1 | awk '$1 == "rx_bytes" { n = $2 } END { print n + 0 }'; }

# window NAME: read from a co-tenant's third second to three before its
# end (room for a slow reading: after the end the flow's sockets are
# gone) the bench's co-tenant meter (fabric_cotenant_bytes), into
# $WORK/NAME.meter, and what host 1's optireduce sockets placed
# meanwhile, into $WORK/NAME.rx. Only while the co-tenant runs: counted
# around the whole flow, its start and end (seconds under TCG) gave the
# pair the link alone, and those seconds decided which of two runs
# placed more.
window() {
	local rx0

	sleep 2
	fabric_cotenant_bytes "$WORK/$1.m0"
	rx0=$(rx_bytes)
	sleep $((SECS - 5))
	fabric_cotenant_bytes "$WORK/$1.m1"
	echo $(($(rx_bytes) - rx0)) >"$WORK/$1.rx"
	fabric_cotenant_report "$WORK/$1.m0" "$WORK/$1.m1" >"$WORK/$1.meter"
}

# tcp_goodput NAME: one SECS-second iperf3 flow from the co-tenant's
# host to host 1; its goodput in Mbit/s (receiver side) on stdout, 0 if
# it failed; its window (above) read meanwhile.
tcp_goodput() {
	fabric_iperf "$WORK" "$1" "$COTENANT" 1 5201 -t "$SECS" -J
	FABRIC_COTENANT_LONG=("$1 1 5201")
	window "$1"
	wait "${FABRIC_COTENANT_PIDS[-1]}"
	fabric_cotenants_stop
	python3 -c '
import json, sys
try:
    print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))
except Exception:
    print(0)' "$WORK/cotenant.$1.client"
}

# optr_pair NAME: both ranks in the background for longer than a flow,
# each sending 256 KiB to the other every round; PIDS holds them.
optr_pair() {
	local i

	PIDS=()
	for i in 0 1; do
		"$PEER" --netns "${HOST_NS[$i]}" --comm $COMM --rank $i \
			--peers "$PEERS" --rounds 100000 --size 262144 \
			--deadline-us 400000 --send-timeout-us 400000 \
			--expect-loss >"$WORK/$1.out.$i" 2>&1 &
		PIDS+=($!)
	done
	COMM=$((COMM + 1))
}

# optr_stop: stop the pair.
optr_stop() {
	kill "${PIDS[@]}" 2>/dev/null
	wait "${PIDS[@]}" 2>/dev/null
	PIDS=()
}

# dumped KEY FILE: the sum of KEY over host 0's sockets in FILE, its
# dump (optireduce -j sock show): rate_foreign, the marked reports taken
# as a foreign queue's; rate_drained, those whose queue had drained.
dumped() {
	python3 -c '
import json, sys
print(sum(s.get(sys.argv[1], 0) for s in json.load(open(sys.argv[2]))))
' "$1" "$2" 2>/dev/null || echo 0
}

# sock_dump NAME: host 0's sockets, into $WORK/NAME.sock.json.
sock_dump() {
	ip netns exec "${HOST_NS[0]}" "$TOOL" -j sock show \
		>"$WORK/$1.sock.json" 2>/dev/null
}

# with_pair NAME CMD...: the pair running, then CMD (a co-tenant, run to
# its end, its window read); what host 1's optireduce sockets placed in
# the window in OPTR_RX, host 0's socket dump, before the pair stops, in
# $WORK/NAME.sock.json.
with_pair() {
	local name=$1

	shift
	optr_pair "$name"
	sleep 2
	"$@"
	OPTR_RX=$(cat "$WORK/$name.rx")
	sock_dump "$name"
	optr_stop
}

# beside NAME: a flow beside the pair; TCP's goodput in TCP_MBPS.
tcp_beside() { TCP_MBPS=$(tcp_goodput "$1"); }
beside() { with_pair "$1" tcp_beside "$1"; }

# bursty NAME: a bursty job from the co-tenant's host to host 1 for SECS
# seconds beside the pair.
burst_job() {
	fabric_iperf "$WORK" "$1" "$COTENANT" 1 5201 -t "$SECS" -l 16K -b 4M/16
	window "$1"
	wait "${FABRIC_COTENANT_PIDS[-1]}"
	fabric_cotenants_stop
}
bursty() { with_pair "$1" burst_job "$1"; }

alone=$(tcp_goodput alone)
meter=$(awk '{ split($2, p, "="); printf "%d", p[2] }' "$WORK/alone.meter")

echo $START >"$PARAMS/pace_mbps"
echo 0 >"$PARAMS/rate_control"
beside fixed
fixed=$TCP_MBPS fixed_rx=$OPTR_RX

echo 1 >"$PARAMS/rate_min_mbps"
echo $START >"$PARAMS/rate_max_mbps"
echo 1 >"$PARAMS/rate_control"
echo 1 >"$PARAMS/rate_foreign"
beside rate
rate=$TCP_MBPS rate_rx=$OPTR_RX
rate_foreign=$(dumped rate_foreign "$WORK/rate.sock.json")

echo 0 >"$PARAMS/rate_foreign"
beside heed
heed=$TCP_MBPS heed_rx=$OPTR_RX
heed_foreign=$(dumped rate_foreign "$WORK/heed.sock.json")
echo 1 >"$PARAMS/rate_foreign"

echo 1 >"$PARAMS/rate_drained"
bursty burst
burst_rx=$OPTR_RX
burst_drained=$(dumped rate_drained "$WORK/burst.sock.json")
echo 0 >"$PARAMS/rate_drained"
bursty burst0
burst0_rx=$OPTR_RX
burst0_drained=$(dumped rate_drained "$WORK/burst0.sock.json")

echo "# TCP goodput, Mbit/s: alone $alone; beside optireduce at a fixed $START Mbit/s $fixed; beside optireduce with rate control $rate, with rate_foreign 0 $heed"
echo "# optireduce bytes placed at host 1 in the flow's window: fixed $fixed_rx, rate control $rate_rx, with rate_foreign 0 $heed_rx"
echo "# marked reports taken as a foreign queue's at host 0: $rate_foreign, with rate_foreign 0 $heed_foreign"
echo "# beside a bursty job: optireduce bytes placed at host 1 $burst_rx, with rate_drained 0 $burst0_rx; marked reports whose queue had drained at host 0 $burst_drained, with rate_drained 0 $burst0_drained"
ktap_check "TCP alone moves data ($alone Mbit/s)" test "$alone" -gt 0
# The meter counts the flow's middle seconds, iperf3 all of them.
ktap_check "the co-tenant meter agrees with iperf3: $meter within 0.7-1.3 x $alone Mbit/s" \
	test $((meter * 10)) -ge $((alone * 7)) -a \
	     $((meter * 10)) -le $((alone * 13)) -a "$meter" -gt 0
ktap_check "with rate control TCP keeps its fair share: $rate >= 0.8 x $alone / 2 Mbit/s" \
	test $((rate * 10)) -ge $((alone * 4))
ktap_check "optireduce places more with rate control than at the fixed rate ($rate_rx > $fixed_rx bytes)" \
	test "$rate_rx" -gt "$fixed_rx"
ktap_check "the TCP flow's standing queue is judged foreign ($rate_foreign reports), never with rate_foreign 0 ($heed_foreign)" \
	test "$rate_foreign" -gt 0 -a "$heed_foreign" -eq 0
ktap_check "judging it foreign, optireduce places more than heeding every mark ($rate_rx > $heed_rx bytes)" \
	test "$rate_rx" -gt "$heed_rx"
ktap_check "heeding every mark, TCP keeps its fair share too: $heed >= 0.8 x $alone / 2 Mbit/s" \
	test $((heed * 10)) -ge $((alone * 4))
ktap_check "beside a bursty job, marked reports whose queue had drained are counted ($burst_drained), none with rate_drained 0 ($burst0_drained)" \
	test "$burst_drained" -gt 0 -a "$burst0_drained" -eq 0

# red_early: packets the ports' ECN queues dropped early, so far.
red_early() {
	local i

	for i in "${!HOST_NS[@]}"; do
		tc -n "$BR_NS" -s qdisc show dev "vp$i"
		tc -n "${HOST_NS[$i]}" -s qdisc show dev eth0
	done | awk '$1 == "marked" { e += $4 } END { print e + 0 }'
}

tail_early=$(red_early)
FABRIC_NONECT=early
fabric_shape || ktap_fail "ports reshaped with FABRIC_NONECT=early"
fabric_counters "$WORK/early.c0"
SECS=7 early=$(tcp_goodput early)
fabric_counters "$WORK/early.c1"
early_drops=$(red_early)
# What the bench prints for the run (no queue samples: no peaks).
counted=$(fabric_report "$WORK/early.c0" "$WORK/early.c1" /dev/null |
	  sed -n 's/^fabric total drops=\([0-9]*\) .*/\1/p')
echo "# TCP without ECN: early drops $tail_early with tail drop (three flows), $early_drops with early drop (goodput $early Mbit/s); fabric_report counted $counted drops"
ktap_check "FABRIC_NONECT=tail: a TCP flow without ECN is never dropped early" \
	test "$tail_early" -eq 0
ktap_check "FABRIC_NONECT=early: it is ($early_drops), and still moves data" \
	test "$early_drops" -gt 0 -a "$early" -gt 0
ktap_check "the fabric's report counts early drops ($counted >= $early_drops)" \
	test "${counted:-0}" -ge "$early_drops"
# A co-tenant that ignores SIGTERM is killed after 5 s, and said so.
FABRIC_COTENANT_PIDS=()
bash -c 'trap "" TERM; exec sleep 600' &
deaf=$!
FABRIC_COTENANT_PIDS+=($deaf)
# Until it ignores SIGTERM: once it is sleep.
for ((i = 0; i < 100; i++)); do
	[ "$(cat "/proc/$deaf/comm" 2>/dev/null)" = sleep ] && break
	sleep 0.1
done
t0=$SECONDS
fabric_cotenants_stop 2>"$WORK/stop.err"
echo "# the stop took $((SECONDS - t0)) s"
ktap_check "a co-tenant deaf to SIGTERM is killed, and said so" \
	test ${#FABRIC_COTENANT_PIDS[@]} -eq 0 -a ! -e "/proc/$deaf" -a \
	"$(grep -c 'still running 5 s after SIGTERM: killed' "$WORK/stop.err")" = 1

refused() { ! fabric_shape 2>/dev/null; }
FABRIC_NONECT=bogus
ktap_check "a FABRIC_NONECT other than tail or early is refused" refused
ktap_finish
