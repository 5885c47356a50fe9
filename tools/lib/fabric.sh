# SPDX-License-Identifier: GPL-2.0
# An emulated shared fabric: the bridge of netns.sh made a shallow-buffered
# switch, for benchmarks and tests. Sourced after netns.sh, never run;
# safe under set -e.
#
# fabric_setup N: setup_bridge N, then every link, in both directions, is a
# token bucket at FABRIC_RATE with a byte-sized tail-drop queue of
# FABRIC_BUFFER: the switch's egress port towards host I (vpI in BR_NS) and
# host I's own uplink (its eth0). With FABRIC_ECN_KB > 0 each queue marks
# ECN-capable packets once it holds more than that many KiB (RED with a
# step at the threshold); what happens there to packets that are not
# ECN-capable is FABRIC_NONECT's choice. Losses come only from queues,
# never from a drop probability; add tail delay with netem on top if
# wanted (fabric_netem).
#
# Defaults, for eight ranks on two emulated CPUs (TCG): at 30 Mbit/s the
# eight ports together carry 240 Mbit/s, about 20,000 packets a second
# through two veth crossings and the bridge, which the emulated CPUs keep
# up with while the ranks compute (Gloo's pipelined ring reaches about 90%
# of this link rate in the fabric), so the links, not the CPUs, set the
# pace. 128 KiB per port is the share of a shallow shared-buffer top-of-rack
# switch: the phase-1 burst of a 64 KiB call at 8 ranks (7 shards of 8 KiB)
# fits, that of a 1 MiB call (7 x 128 KiB towards one port) does not, the
# many-to-one regime the fabric exists to show.
FABRIC_RATE=${FABRIC_RATE:-30mbit}
FABRIC_BUFFER=${FABRIC_BUFFER:-128k}
FABRIC_ECN_KB=${FABRIC_ECN_KB:-0}
# With ECN marking, packets that are not ECN-capable (TCP without ECN,
# iperf3's co-tenants among them) once the queue passes the threshold:
# "tail" queues them until the queue is full (only tail drop), "early"
# drops them there, as a switch's WRED profile with ECN does for traffic
# that cannot be marked. Tail lets such traffic keep a standing queue at
# the threshold, where every ECN-capable packet is marked.
FABRIC_NONECT=${FABRIC_NONECT:-tail}
# 0: only the switch's ports are shaped, the hosts' uplinks run at veth
# speed (a host NIC faster than its share of the fabric): what queues is
# then the switch's, the incast, never a sender's own unpaced burst.
FABRIC_UPLINK=${FABRIC_UPLINK:-1}
# How often the queue sampler reads every queue's backlog (fabric_watch).
FABRIC_SAMPLE_S=${FABRIC_SAMPLE_S:-0.2}

# fabric_bytes SIZE: a size with an optional k/m suffix, in bytes.
fabric_bytes() {
	case $1 in
	*[kK]) echo $(( ${1%[kK]} << 10 )) ;;
	*[mM]) echo $(( ${1%[mM]} << 20 )) ;;
	*) echo "$1" ;;
	esac
}

# fabric_port_cmds DEV [PARENT]: the tc batch lines that make DEV one
# switch port, at the root or beneath PARENT (a netem's class). The
# bucket's burst is ten full-size frames: enough that the shaper keeps its
# rate under a coarse emulated clock, small against the queue.
fabric_port_cmds() {
	local dev=$1 at=${2:+parent $2} buf min max keep=

	buf=$(fabric_bytes "$FABRIC_BUFFER")
	echo "qdisc add dev $dev ${at:-root} handle 1: tbf rate $FABRIC_RATE burst 15140 limit $buf"
	[ "$FABRIC_ECN_KB" -gt 0 ] || return 0
	# A step: marking probability 1 from min, max just above it; the
	# average follows the queue closely (burst = min / avpkt + 1).
	min=$((FABRIC_ECN_KB << 10))
	max=$((min + 3000))
	[ "$FABRIC_NONECT" = early ] || keep=" nodrop"
	echo "qdisc add dev $dev parent 1:1 handle 10: red limit $buf min $min max $max" \
	     "avpkt 1500 burst $((min / 1500 + 1)) bandwidth $FABRIC_RATE" \
	     "probability 1.0 ecn$keep"
}

# fabric_port NS DEV [NETEM ARGS...]: DEV in NS becomes a port, with a
# netem in front of its shaper when NETEM ARGS are given (tail delay; the
# byte queue stays the shaper's).
fabric_port() {
	local ns=$1 dev=$2

	shift 2
	tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
	{
		if [ $# -gt 0 ]; then
			echo "qdisc add dev $dev root handle 2: netem $* limit 10000"
			fabric_port_cmds "$dev" 2:1
		else
			fabric_port_cmds "$dev"
		fi
	} | tc -n "$ns" -batch - || {
		echo "fabric: could not shape $dev in $ns" >&2
		return 1
	}
}

# fabric_shape: (re)shape every port of the bridge setup_bridge made.
fabric_shape() {
	local i

	case $FABRIC_NONECT in
	tail|early) ;;
	*) echo "fabric: FABRIC_NONECT is tail or early, not" \
		"\"$FABRIC_NONECT\"" >&2
	   return 1 ;;
	esac
	for ((i = 0; i < ${#HOST_NS[@]}; i++)); do
		fabric_port "$BR_NS" "vp$i" || return 1
		[ "$FABRIC_UPLINK" = 0 ] ||
			fabric_port "${HOST_NS[$i]}" eth0 || return 1
	done
}

fabric_setup() {
	setup_bridge "$1" || return 1
	fabric_shape
}

# fabric_netem HOST [ARGS...]: netem ARGS (tail delay) in front of host
# HOST's uplink; no ARGS: back to the plain port.
fabric_netem() {
	local i=$1

	shift
	fabric_port "${HOST_NS[$i]}" eth0 "$@"
}

# --- What the switch did ----------------------------------------------
#
# fabric_counters FILE: every queue's counters now, one line each:
#   PORT sent_bytes sent_pkts drops overlimits marks backlog_bytes
# PORT is swI (the switch's port towards host I) or upI (host I's uplink).
# Drops and backlog are the shaper's (they include its child's, the ECN
# queue's early drops with FABRIC_NONECT=early among them), marks those of
# the ECN child.
fabric_tc_parse() {
	awk -v port="$1" '
		/^qdisc tbf 1:/ { in_tbf = 1; next }
		/^qdisc red 10:/ { in_tbf = 0; in_red = 1; next }
		/^qdisc/ { in_tbf = 0; in_red = 0; next }
		in_tbf && $1 == "Sent" { sent = $2; pkts = $4; drops = $7 + 0
			overl = $9 + 0 }
		in_tbf && $1 == "backlog" { backlog = $2 + 0 }
		in_red && $1 == "marked" { marks = $2 + 0 }
		END { printf "%s %d %d %d %d %d %d\n", port, sent, pkts, drops,
			     overl, marks, backlog }'
}

fabric_counters() {
	local i n=${#HOST_NS[@]}

	: >"$1"
	for ((i = 0; i < n; i++)); do
		tc -n "$BR_NS" -s qdisc show dev "vp$i" | fabric_tc_parse "sw$i" >>"$1"
		tc -n "${HOST_NS[$i]}" -s qdisc show dev eth0 |
			fabric_tc_parse "up$i" >>"$1"
	done
}

# fabric_watch_start DIR / fabric_watch_stop: sample every queue's backlog
# each FABRIC_SAMPLE_S seconds while a run goes on, into DIR/watch.*. One
# long-lived tc per namespace reads "qdisc show" commands from a loop that
# sleeps with bash's own read -t: no process per sample, which under TCG
# would cost more than the sampling is worth. A sample catches a queue
# between bursts as often as in one: the peak it reports is a lower bound,
# and a full queue shows as drops.
FABRIC_WATCH_PIDS=()
FABRIC_WATCH_STOP=
fabric_sampler() {
	local ns=$1 out=$2 fd

	exec {fd}<> <(:)
	while [ ! -e "$FABRIC_WATCH_STOP" ] && echo "qdisc show"; do
		read -r -t "$FABRIC_SAMPLE_S" -u "$fd" || true
	done | tc -n "$ns" -s -batch - >"$out" 2>/dev/null
}

fabric_watch_start() {
	local dir=$1 i

	FABRIC_WATCH_PIDS=()
	FABRIC_WATCH_STOP=$dir/watch.stop
	rm -f "$FABRIC_WATCH_STOP" "$dir"/watch.*
	fabric_sampler "$BR_NS" "$dir/watch.sw" &
	FABRIC_WATCH_PIDS+=($!)
	for ((i = 0; i < ${#HOST_NS[@]}; i++)); do
		fabric_sampler "${HOST_NS[$i]}" "$dir/watch.up$i" &
		FABRIC_WATCH_PIDS+=($!)
	done
	if [ ${#FABRIC_COTENANT_LONG[@]} -gt 0 ]; then
		fabric_cotenant_sampler "$dir/watch.cotenant" &
		FABRIC_WATCH_PIDS+=($!)
	fi
}

# fabric_cotenant_sampler FILE: every second until the watch stops, a line
# "UPTIME_S BYTES": the long co-tenant flows' bytes so far (summed), read
# as fabric_cotenant_bytes does, against /proc/uptime, which in the guest
# (never suspended) is CLOCK_MONOTONIC, the clock of the benchmark's call
# times. A few processes a second: ss is a process per reading.
fabric_cotenant_sampler() {
	local out=$1 fd up rest

	exec {fd}<> <(:)
	while [ ! -e "$FABRIC_WATCH_STOP" ]; do
		read -r up rest </proc/uptime
		fabric_cotenant_bytes "$out.now"
		awk -v t="$up" '{ b += $2 } END { printf "%s %.0f\n", t, b }' \
			"$out.now" >>"$out"
		read -r -t 1 -u "$fd" || true
	done
	rm -f "$out.now"
}

# The loops see the stop file within a sample; each tc then reads the end
# of its input and exits, writing out what it buffered.
fabric_watch_stop() {
	local pid

	[ -n "$FABRIC_WATCH_STOP" ] || return 0
	touch "$FABRIC_WATCH_STOP"
	for pid in "${FABRIC_WATCH_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	FABRIC_WATCH_PIDS=()
	return 0
}

# fabric_peaks DIR: "PORT peak_backlog_bytes" per queue from the samples.
fabric_peaks() {
	local dir=$1 f

	awk '/^qdisc tbf 1: dev vp/ { dev = $5; sub("vp", "sw", dev) }
	     /^qdisc/ && !/^qdisc tbf 1: dev vp/ { dev = "" }
	     dev != "" && $1 == "backlog" {
		     b = $2 + 0; if (b > peak[dev]) peak[dev] = b
		     seen[dev] = 1 }
	     END { for (d in seen) print d, peak[d] + 0 }' "$dir/watch.sw"
	for f in "$dir"/watch.up*; do
		awk -v port="${f##*watch.}" '
			/^qdisc tbf 1:/ { on = 1; next }
			/^qdisc/ { on = 0; next }
			on && $1 == "backlog" { b = $2 + 0; if (b > peak) peak = b }
			END { print port, peak + 0 }' "$f"
	done
}

# fabric_report BEFORE AFTER PEAKS: one line per queue that dropped,
# marked or queued anything in between, and a total line.
fabric_report() {
	awk 'FILENAME == ARGV[1] { b[$1] = $0; next }
	     FILENAME == ARGV[2] { a[$1] = $0; order[++n] = $1; next }
	     { peak[$1] = $2 }
	     END {
		for (k = 1; k <= n; k++) {
			p = order[k]
			split(b[p], x, " "); split(a[p], y, " ")
			d = y[4] - x[4]; m = y[6] - x[6]
			td += d; tm += m
			if (peak[p] > tp) tp = peak[p]
			if (d || m || peak[p])
				printf "fabric %s drops=%d marks=%d sent_pkts=%d peak_kb=%.1f\n",
				       p, d, m, y[3] - x[3], peak[p] / 1024
		}
		printf "fabric total drops=%d marks=%d peak_kb=%.1f\n", td, tm, tp / 1024
	     }' "$1" "$2" "$3"
}

# --- What TCP saw --------------------------------------------------------
#
# fabric_tcp_counters FILE: retransmission timeouts and retransmitted
# segments, summed over the hosts' namespaces (nstat's absolute values;
# take a difference around a run).
fabric_tcp_counters() {
	local i

	for ((i = 0; i < ${#HOST_NS[@]}; i++)); do
		in_host "$i" nstat -asz TcpExtTCPTimeouts TcpRetransSegs
	done | awk '$1 ~ /^Tcp/ { s[$1] += $2 }
		END { printf "timeouts %d retrans %d\n",
			     s["TcpExtTCPTimeouts"], s["TcpRetransSegs"] }' >"$1"
}

# fabric_tcp_report BEFORE AFTER: the difference, one line.
fabric_tcp_report() {
	awk 'FILENAME == ARGV[1] { t = $2; r = $4; next }
	     { printf "tcp rto_timeouts=%d retrans_segs=%d\n", $2 - t, $4 - r }' \
		"$1" "$2"
}

# --- Co-tenants ---------------------------------------------------------
#
# fabric_cotenants_start DIR: other tenants' traffic on the same ports, as
# in a shared cloud: long TCP flows (iperf3, host 2j+1 to host 2j for
# j < max(1, N/8)) and a bursty background job, a periodic incast of the
# upper half's last hosts onto host N/2 (iperf3 in burst mode: 256 KiB at
# once, 4 Mbit/s on average per sender, at most three senders). Logs in
# DIR/cotenant.*; fabric_cotenants_stop ends them. The long flows, as
# "NAME DST PORT", in FABRIC_COTENANT_LONG (fabric_cotenant_bytes).
FABRIC_COTENANT_PIDS=()
FABRIC_COTENANT_LONG=()
FABRIC_COTENANT_PORT=5301
fabric_cotenants_start() {
	local dir=$1 n=${#HOST_NS[@]} j src dst port long

	FABRIC_COTENANT_PIDS=()
	FABRIC_COTENANT_LONG=()
	port=$FABRIC_COTENANT_PORT
	long=$((n / 8))
	[ "$long" -ge 1 ] || long=1
	for ((j = 0; j < long; j++)); do
		src=$((2 * j + 1)) dst=$((2 * j))
		fabric_iperf "$dir" "long$j" "$src" "$dst" "$port" -t 86400 ||
			return 1
		FABRIC_COTENANT_LONG+=("long$j $dst $port")
		port=$((port + 1))
	done
	dst=$((n / 2))
	for ((src = n - 1; src > dst && src >= n - 3; src--)); do
		fabric_iperf "$dir" "burst$src" "$src" "$dst" "$port" \
			-t 86400 -l 16K -b 4M/16 || return 1
		port=$((port + 1))
	done
}

# fabric_iperf DIR NAME SRC DST PORT ARGS...: one iperf3 flow SRC -> DST.
fabric_iperf() {
	local dir=$1 name=$2 src=$3

	shift 3
	fabric_iperf_ns "$dir" "$name" "${HOST_NS[$src]}" "$@"
}

# fabric_iperf_ns DIR NAME NS DST PORT ARGS...: the same from namespace
# NS (a host's, or one behind a host that routes for it).
fabric_iperf_ns() {
	local dir=$1 name=$2 ns=$3 dst=$4 port=$5 t

	shift 5
	# ip netns exec execs iperf3: $! is iperf3 itself, for the stop.
	ip netns exec "${HOST_NS[$dst]}" iperf3 -s -1 -p "$port" \
		>"$dir/cotenant.$name.server" 2>&1 &
	FABRIC_COTENANT_PIDS+=($!)
	# The server listens within a second even under TCG.
	for ((t = 0; t < 50; t++)); do
		in_host "$dst" ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.1
	done
	ip netns exec "$ns" iperf3 -c "${HOST_IP[$dst]}" -p "$port" -i 10 --forceflush "$@" \
		>"$dir/cotenant.$name.client" 2>&1 &
	FABRIC_COTENANT_PIDS+=($!)
}

# fabric_running PID: PID has not exited (a zombie, exited but not yet
# reaped, has; one bash reaped has no /proc entry).
fabric_running() {
	local state

	read -r _ _ state _ 2>/dev/null <"/proc/$1/stat" && [ "$state" != Z ]
}

# fabric_cotenants_stop: every co-tenant gets SIGTERM at once, and one
# still running 5 s later is killed, and said so: waiting for one that
# never exits would hang the caller (a benchmark's cleanup once hung
# here, its co-tenants' traffic still flowing).
fabric_cotenants_stop() {
	local pid left end=$((SECONDS + 5))

	for pid in "${FABRIC_COTENANT_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	while :; do
		left=()
		for pid in "${FABRIC_COTENANT_PIDS[@]}"; do
			fabric_running "$pid" && left+=("$pid")
		done
		[ ${#left[@]} -gt 0 ] && [ $SECONDS -lt $end ] || break
		sleep 0.1
	done
	if [ ${#left[@]} -gt 0 ]; then
		echo "fabric: ${#left[@]} co-tenant process(es) still running 5 s" \
		     "after SIGTERM: killed" >&2
		kill -KILL "${left[@]}" 2>/dev/null || true
	fi
	for pid in "${FABRIC_COTENANT_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	FABRIC_COTENANT_PIDS=()
	FABRIC_COTENANT_LONG=()
	return 0
}

# fabric_cotenant_bytes FILE: what each long co-tenant flow delivered so
# far, "NAME BYTES US" lines: the bytes its receiver's TCP sockets took in
# (ss; iperf3's control connection shares the port and adds a few) and
# when they were read (microseconds, bash's own clock: no process per
# reading). Read around a contender's run, two of these give the flow's
# goodput meanwhile (fabric_cotenant_report).
fabric_cotenant_bytes() {
	local f name dst port

	for f in "${FABRIC_COTENANT_LONG[@]}"; do
		read -r name dst port <<<"$f"
		in_host "$dst" ss -Htin "sport = :$port" |
			awk -v n="$name" -v t="${EPOCHREALTIME/./}" '
				{ for (i = 1; i <= NF; i++)
					if ($i ~ /^bytes_received:/) {
						split($i, p, ":"); b += p[2]
					} }
				END { printf "%s %.0f %s\n", n, b, t }'
	done >"$1"
}

# fabric_cotenant_report BEFORE AFTER: one line, each long flow's goodput
# in Mbit/s between the two readings.
fabric_cotenant_report() {
	awk 'FILENAME == ARGV[1] { b[$1] = $2; t[$1] = $3; next }
	     ($1 in b) && $3 > t[$1] {
		line = line sprintf(" %s_mbps=%.2f", $1,
				    ($2 - b[$1]) * 8 / ($3 - t[$1]))
	     }
	     END { if (line != "") print "cotenant" line }' "$1" "$2"
}

# fabric_unshape: every port back to the bridge's plain links.
fabric_unshape() {
	local i

	for ((i = 0; i < ${#HOST_NS[@]}; i++)); do
		tc -n "$BR_NS" qdisc del dev "vp$i" root 2>/dev/null || true
		tc -n "${HOST_NS[$i]}" qdisc del dev eth0 root 2>/dev/null || true
	done
	return 0
}
