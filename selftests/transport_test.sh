#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transport end to end: N ranks (optr_peer), each in its own network
# namespace, on one bridge (lib.sh setup_bridge; 8 hosts, a case with N
# ranks uses hosts 0..N-1). Every case runs the ranks and checks
#   - what each rank saw: every byte reported received is exactly what was
#     sent, every byte reported missing is untouched (optr_peer exits
#     non-zero otherwise);
#   - that the kernel's books agree with it: /proc/net/optireduce of each
#     namespace against the rank's own observations and against what the
#     other ranks sent.
# Cases: no loss (2, 4, 8 ranks, 1 B .. 1 MiB; per-destination unicast
# sends), two ranks sharing a namespace and address, the backlog's memory
# bound, fan-out vs multicast, pacing, the send timeout, a send into a
# path that holds everything (bounded by its timeout), deadline expiry
# (a silent peer; netem delay beyond the deadline), the early timeout (a
# middle fragment dropped by a tc filter), netem loss 1/5/20%, reorder,
# duplicate and corrupt.
#
# TCG guests are slow (~150 ms per process, far more when other guests
# share the host): cases are sized to finish in a few seconds each, the
# LAN is built once, ranks enter their namespace themselves and report
# the namespace's counters themselves (as deltas over their run, so cases
# can share namespaces), and timing bounds are generous and account for
# guest stalls (optr_peer measures them).
# The counters are shell variables made by summarize (eval):
# shellcheck disable=SC2154
. "$(dirname "$0")/lib.sh"
peer_prepare transport

# Kernels with KASAN/kmemleak/lockdep (the debug guest) run everything
# about ten times slower under TCG: deadlines and time bounds scale by
# TIME_SCALE. OPTIREDUCE_TIME_SCALE overrides the guess.
if [ -n "${OPTIREDUCE_TIME_SCALE:-}" ]; then
	TIME_SCALE=$OPTIREDUCE_TIME_SCALE
elif debug_kernel; then
	TIME_SCALE=10
else
	TIME_SCALE=1
fi
# sc US: a time scaled, capped at the module's one-minute limit.
sc() {
	local v=$(($1 * TIME_SCALE))

	echo $((v > 60000000 ? 60000000 : v))
}
# Rounds that should never expire get this long.
SAFE_DEADLINE=$(sc 10000000)
# Runs where every byte must arrive also get a typical round that long: a
# sender this guest descheduled in the middle of a message must not look
# like one whose tail was lost (design.md, "Early timeout").
NO_LOSS=(--early-us "$SAFE_DEADLINE")
MTU=1500
# Payload per datagram (send.c): route MTU - IPv4 - UDP - wire header.
FRAG=$((MTU - 20 - 8 - 36))
GROUP=239.77.0.1
COMM=1000
PEERS_OVERRIDE=

BACKLOG_KB=$(cat "$PARAMS/backlog_kb")
cleanup() {
	echo "$BACKLOG_KB" >"$PARAMS/backlog_kb"
	[ -n "${TX_SEGS_DEFAULT:-}" ] && wire_batched
	del_namespaces
	rm -rf "$WORK"
}
trap cleanup EXIT

case_start() { CASE_T0=$SECONDS; }

# frags SIZE: datagrams one copy of a SIZE-byte message takes.
frags() { echo $((($1 + FRAG - 1) / FRAG)); }

# cycle_sums ROUNDS SIZES: SUM_SIZE and SUM_FRAGS over ROUNDS rounds whose
# sizes cycle through the comma-separated SIZES (as optr_peer does).
cycle_sums() {
	local rounds=$1 r
	local -a s

	IFS=, read -ra s <<<"$2"
	SUM_SIZE=0
	SUM_FRAGS=0
	for ((r = 0; r < rounds; r++)); do
		SUM_SIZE=$((SUM_SIZE + s[r % ${#s[@]}]))
		SUM_FRAGS=$((SUM_FRAGS + $(frags "${s[r % ${#s[@]}]}")))
	done
}

# A qdisc on the sender sees what the module hands to IP: with tx_segs > 1,
# batches of fragments (UDP GSO) that are cut into datagrams only further
# down. Loss on a real wire hits single datagrams, so cases that emulate
# the wire at the qdisc send one datagram per skb; the others keep the
# default and so exercise the batched path.
TX_SEGS_DEFAULT=$(cat "$PARAMS/tx_segs")
wire_datagrams() { echo 1 >"$PARAMS/tx_segs"; }
wire_batched() { echo "$TX_SEGS_DEFAULT" >"$PARAMS/tx_segs"; }

# netem_on N ARGS...: netem ARGS on the egress of hosts 0..N-1 (replacing
# what was there), sending unbatched; netem_off N removes whatever root
# qdisc they have and batches again. Datagrams still delayed when a case
# ends reach the next case's namespaces as strangers (drop_unknown_comm
# or drop_stale_round), which no case counts on.
netem_on() {
	local n=$1 i

	shift
	wire_datagrams
	for ((i = 0; i < n; i++)); do
		tc -n "${HOST_NS[$i]}" qdisc replace dev eth0 root netem "$@" \
			limit 100000 || return 1
	done
}

netem_off() {
	local i

	for ((i = 0; i < $1; i++)); do
		tc -n "${HOST_NS[$i]}" qdisc del dev eth0 root 2>/dev/null
	done
	wire_batched
}

# run_ranks NAME N ARGS...: optr_peer as ranks 0..N-1 on hosts 0..N-1,
# with ARGS plus RANK_ARGS[I] for rank I (later options win over earlier
# ones, and both over the default --deadline-us $SAFE_DEADLINE). All join
# before any starts (a datagram for a namespace with no member yet is
# simply lost). Output of rank I in $WORK/NAME.out.I, exit status in
# RC[I]. Each rank also prints how its namespace's counters moved while it
# ran (--net-counters): cases can share namespaces, and no extra process
# is needed to read them.
run_ranks() {
	local name=$1 n=$2 i waited=0
	local -a pids=()

	shift 2
	rm -f "$WORK/$name".*
	COMM=$((COMM + 1))
	RC=()
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2086 # RANK_ARGS holds several words
		"$PEER" --netns "${HOST_NS[$i]}" --comm "$COMM" --rank "$i" \
			--deadline-us "$SAFE_DEADLINE" \
			--peers "${PEERS_OVERRIDE:-$(bridge_peers "$n")}" \
			--ready-file "$WORK/$name.ready.$i" \
			--go-file "$WORK/$name.go" --net-counters \
			"$@" ${RANK_ARGS[$i]:-} \
			>"$WORK/$name.out.$i" 2>&1 &
		pids+=($!)
	done
	for ((i = 0; i < n; i++)); do
		while [ ! -e "$WORK/$name.ready.$i" ] && [ $waited -lt 300 ]; do
			sleep 0.1
			waited=$((waited + 1))
		done
	done
	touch "$WORK/$name.go"
	for ((i = 0; i < n; i++)); do
		wait "${pids[$i]}"
		RC[i]=$?
	done
	summarize "$name"
}

# summarize NAME: shell variables from the outputs of run_ranks.
#   R_key / M_key   sum / max over ranks of the "result" line's fields
#   R<I>_key        rank I's field
#   S_key, S<I>_key socket counters (optr_peer's "stat" lines)
#   N_key, N<I>_key namespace counters (/proc/net/optireduce "net" lines)
#   U_key           UDP MIB counters summed over the namespaces
#   Y_key           system-wide counters (softnet_dropped), max over ranks
# (the namespace counters are what moved while the rank ran).
summarize() {
	local vars v

	# Nothing from an earlier case may stand in for a missing value.
	for v in $(compgen -v); do
		[[ $v =~ ^[RSNMUY][0-9]*_ ]] && unset "$v"
	done
	vars=$(awk '
		function out(k, v) { printf "%s=%.0f\n", k, v }
		FNR == 1 { n = split(FILENAME, p, "."); idx = p[n] }
		$1 == "result" {
			for (i = 2; i <= NF; i++) {
				split($i, kv, "=")
				out("R" idx "_" kv[1], kv[2])
				R[kv[1]] += kv[2]
				if (!(kv[1] in M) || kv[2] > M[kv[1]]) M[kv[1]] = kv[2]
			}
		}
		$1 == "stat" { out("S" idx "_" $2, $3); S[$2] += $3 }
		$1 == "net" { out("N" idx "_" $2, $3); N[$2] += $3 }
		$1 == "udp" { U[$2] += $3 }
		$1 == "sys" { if ($3 > Y[$2]) Y[$2] = $3 }
		END {
			for (k in R) { out("R_" k, R[k]); out("M_" k, M[k]) }
			for (k in S) out("S_" k, S[k])
			for (k in N) out("N_" k, N[k])
			for (k in U) out("U_" k, U[k])
			for (k in Y) out("Y_" k, Y[k])
		}' "$WORK/$1".out.*)
	eval "$vars"
}

STAT_NAMES="rounds_opened rounds_completed rounds_expired rounds_early
	rounds_cancelled tx_packets tx_bytes tx_dropped rx_packets rx_bytes
	rx_duplicate drop_malformed drop_unknown_comm drop_foreign_source
	drop_stale_round drop_no_post drop_out_of_bounds bytes_lost
	backlog_queued drop_nomem rx_gso_batches rx_steered drop_mem_limit drop_auth"

CASE_FAIL=()
# want DESC ACTUAL OP EXPECTED: one condition of the current case.
want() {
	# An empty value (a counter that was never printed) fails too.
	if [ -z "$2" ] || [ -z "$4" ] || ! test "$2" "$3" "$4"; then
		CASE_FAIL+=("$1: got '$2', want $3 '$4'")
	fi
}

# case_done NAME DESC: the case's result line; on failure its conditions
# and what the ranks printed on stderr.
case_done() {
	local name=$1 f

	if [ ${#CASE_FAIL[@]} -eq 0 ]; then
		ktap_ok "$2"
	else
		for f in "${CASE_FAIL[@]}"; do
			echo "# FAIL: $f"
		done
		grep -vh '^stat \|^round \|^net \|^udp ' "$WORK/$name".out.* |
			sed 's/^/#   /'
		ktap_fail "$2"
	fi
	echo "# ($((SECONDS - CASE_T0)) s)"
	CASE_FAIL=()
}

# min_over N FIELD: the smallest FIELD of ranks 0..N-1's result lines.
min_over() {
	local n=$1 i v m=

	for ((i = 0; i < n; i++)); do
		v=R${i}_$2
		if [ -z "$m" ] || [ "${!v}" -lt "$m" ]; then
			m=${!v}
		fi
	done
	echo "$m"
}

ranks_ok() {
	local n=$1 i

	for ((i = 0; i < n; i++)); do
		want "rank $i exit status" "${RC[$i]}" -eq 0
	done
}

# The socket's own counters equal its namespace's: one member per
# namespace, so every count lands in both (drops with no socket to blame
# only in the namespace, and none are expected here).
sock_equals_net() {
	local n=$1 i k s v

	for ((i = 0; i < n; i++)); do
		for k in $STAT_NAMES; do
			# Counted before any socket is found, or once for
			# all the sockets of a batch: namespace only.
			case $k in rx_gso_batches | rx_steered) continue ;; esac
			s=S${i}_$k
			v=N${i}_$k
			want "rank $i $k: socket vs namespace" "${!s}" -eq "${!v}"
		done
	done
}

# Counters no case here should ever move.
no_bad_drops() {
	local k v

	for k in drop_malformed drop_foreign_source drop_out_of_bounds \
		 drop_nomem tx_dropped rounds_cancelled; do
		v=N_$k
		want "$k" "${!v}" -eq 0
	done
}

# Per rank: the namespace placed exactly the bytes the rank saw arrive and
# counted lost exactly the bytes it saw missing.
books_agree() {
	local n=$1 i a b

	for ((i = 0; i < n; i++)); do
		a=R${i}_received b=N${i}_rx_bytes
		want "rank $i received vs rx_bytes" "${!a}" -eq "${!b}"
		a=R${i}_missing b=N${i}_bytes_lost
		want "rank $i missing vs bytes_lost" "${!a}" -eq "${!b}"
	done
}

# --- No loss --------------------------------------------------------------
# Every byte arrives, every round completes, and the counters add up to
# the datagram: tx_packets is fragments x peers, every sent fragment is
# placed exactly once, nothing is dropped or duplicated. Ranks start 40 ms
# apart after joining (scaled: a debug kernel's first post and send can
# take longer than that), so the early ones' first fragments wait in the
# later ones' backlog (backlog_queued > 0) and must be delivered from it.
no_loss() {
	local n=$1 rounds=$2 sizes=$3 extra=${4:-} i
	local name=noloss$1${4:+${4//-/}}

	case_start
	RANK_ARGS=()
	for ((i = 0; i < n; i++)); do
		RANK_ARGS[i]="--delay-ms $((40 * i * TIME_SCALE))"
	done
	# shellcheck disable=SC2086
	run_ranks "$name" "$n" --rounds "$rounds" --sizes "$sizes" "${NO_LOSS[@]}" $extra
	RANK_ARGS=()
	cycle_sums "$rounds" "$sizes"
	local posts=$((n * (n - 1) * rounds))
	local bytes=$((n * (n - 1) * SUM_SIZE))
	local pkts=$((n * (n - 1) * SUM_FRAGS))

	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "posts complete" "$R_complete" -eq "$posts"
	want "posts" "$R_posts" -eq "$posts"
	want "bytes received" "$R_received" -eq "$bytes"
	want "rx_bytes" "$N_rx_bytes" -eq "$bytes"
	want "tx_bytes" "$N_tx_bytes" -eq "$bytes"
	want "tx_packets = fragments x peers" "$N_tx_packets" -eq "$pkts"
	want "rx_packets" "$N_rx_packets" -eq "$pkts"
	want "rounds_opened" "$N_rounds_opened" -eq $((n * rounds))
	want "rounds_completed" "$N_rounds_completed" -eq $((n * rounds))
	want "rounds_expired" "$N_rounds_expired" -eq 0
	want "rounds_early" "$N_rounds_early" -eq 0
	want "bytes_lost" "$N_bytes_lost" -eq 0
	want "rx_duplicate" "$N_rx_duplicate" -eq 0
	want "drop_stale_round" "$N_drop_stale_round" -eq 0
	want "drop_no_post" "$N_drop_no_post" -eq 0
	want "drop_unknown_comm" "$N_drop_unknown_comm" -eq 0
	want "backlog used" "$N_backlog_queued" -gt 0
	# Messages of many fragments leave as UDP GSO batches (tx_segs) and
	# veth and the bridge pass them whole: the receive path must walk
	# them itself, and that is what these cases check byte for byte.
	want "GSO batches received whole" "$N_rx_gso_batches" -gt 0
	# A "no loss" network that dropped datagrams itself (a CPU's input
	# backlog overflowed) says so here rather than as a transport loss.
	want "datagrams dropped by the stack (softnet)" "$Y_softnet_dropped" -eq 0
	no_bad_drops
	sock_equals_net "$n"
	echo "# $n ranks, $rounds rounds of $sizes B: $bytes B in $pkts datagrams," \
	     "round p50 $M_p50_us us max $M_max_us us, backlog_queued $N_backlog_queued"
	case_done "$name" "no loss: $n ranks${extra:+ ($extra)}, sizes $sizes: byte-exact, counters agree"
}

# --- Receive GRO -----------------------------------------------------------
# Datagrams sent one per skb (tx_segs 1) into a veth whose far end has GRO
# on (and whose near end has TSO off, which veth asks before it hands a
# packet to NAPI, hence to GRO): GRO must build batches for the module's
# port and the socket take them whole, as a NIC's packets would be. GRO
# finds the socket only once it enabled UDP encapsulation (udp.c). A
# NIC's poll finds many packets; here each send would run the whole path
# to the far end's poll on its own, so a netem delay on the sender's
# egress lets them arrive in bursts.
gro() {
	local name=gro rounds=4 sizes=262144 st=0

	if ! command -v ethtool >/dev/null; then
		ktap_skip "receive GRO" "no ethtool (tools/install-deps vm)"
		return 0
	fi
	case_start
	wire_datagrams
	{ ip netns exec "$BR_NS" ethtool -K vp1 tso off &&
	  in_host 1 ethtool -K eth0 gro on &&
	  tc -n "${HOST_NS[0]}" qdisc replace dev eth0 root netem delay 2ms \
		limit 100000; } >/dev/null || st=1
	[ $st -eq 0 ] && run_ranks "$name" 2 --rounds "$rounds" \
		--sizes "$sizes" "${NO_LOSS[@]}"
	tc -n "${HOST_NS[0]}" qdisc del dev eth0 root 2>/dev/null
	in_host 1 ethtool -K eth0 gro off >/dev/null
	ip netns exec "$BR_NS" ethtool -K vp1 tso on >/dev/null
	wire_batched
	want "ethtool set the features" "$st" -eq 0
	ranks_ok 2
	want "mismatches" "$R_mismatches" -eq 0
	want "posts complete" "$R_complete" -eq $((2 * rounds))
	want "GRO batches at host 1" "$N1_rx_gso_batches" -gt 0
	want "none at host 0 (GRO off)" "$N0_rx_gso_batches" -eq 0
	no_bad_drops
	echo "# GRO: host 1 took $N1_rx_gso_batches batches of" \
	     "$N1_rx_packets datagrams"
	case_done "$name" "receive GRO: datagrams sent one by one arrive batched, byte-exact"
}

# --- Backlog bound ---------------------------------------------------------
# Fragments that come before their post wait in the receiver's backlog, up
# to backlog_kb of memory per socket; the rest are dropped as no_post.
# Rank 1 joins, then waits 1 s before posting while rank 0 sends ~1 MiB
# at once: with backlog_kb=256 the first ~100 fragments are held (and
# placed when the post comes), the rest dropped, so the round ends without
# its last fragment, with exactly the dropped fragments missing: at its
# deadline, or once the sender has been silent for a typical round (it
# stalled, as far as the receiver can tell), whichever comes first. The
# size is a multiple of the fragment size: a short last fragment could
# still fit in a full backlog (the bound is on memory), be held, and end
# the round early.
backlog_bound() {
	local n=2 f=730 name=backlog size old k=256

	case_start
	size=$((f * FRAG))
	old=$(cat "$PARAMS/backlog_kb")
	echo $k >"$PARAMS/backlog_kb" || { ktap_fail "backlog: set backlog_kb"; return; }
	# Rank 0 waits for rank 1's data, sent only after its late post.
	RANK_ARGS=("--deadline-us $(sc 5000000)" "--delay-ms $(($(sc 1000000) / 1000))")
	run_ranks "$name" "$n" --size "$size" --deadline-us "$(sc 1000000)" --expect-loss
	RANK_ARGS=()
	echo "$old" >"$PARAMS/backlog_kb"
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "rank 0 complete" "$R0_complete" -eq 1
	want "rank 1 held some" "$N1_backlog_queued" -gt 0
	# Each held fragment costs at least its payload.
	want "rank 1 held at most ${k} KiB" $((N1_backlog_queued * FRAG)) -le $((k * 1024))
	want "rank 1 dropped the rest" "$N1_drop_no_post" -gt 0
	want "rank 1 every fragment placed or dropped" \
		$((N1_rx_packets + N1_drop_no_post)) -eq "$f"
	want "rank 1 placed >= held" "$N1_rx_packets" -ge "$N1_backlog_queued"
	want "rank 1 received = placed fragments" "$R1_received" -eq $((N1_rx_packets * FRAG))
	want "rank 1 round expired or stalled (last fragment dropped)" \
		$((N1_rounds_expired + N1_rounds_early)) -eq 1
	want "rank 1 round not complete" "$R1_complete" -eq 0
	books_agree "$n"
	echo "# $size B ($f fragments) into a 256 KiB backlog: $N1_backlog_queued" \
	     "held, $N1_drop_no_post dropped, $N1_rx_packets placed"
	case_done "$name" "backlog: bounded by backlog_kb, overflow dropped as no_post and reported missing"
}

# --- Ranks sharing an address ---------------------------------------------
# Ranks 0 and 1 live in host 0's namespace at the same address, rank 2 on
# host 1: one UDP port per namespace, datagrams carry the destination
# rank. Between ranks 0 and 1 the route is local (lo, MTU 65536), so a
# message there takes 64 KiB datagrams, to rank 2 the bridge's 1500.
shared_addr() {
	local rounds=4 sizes=1,1500,65536,300000 name=shared i big=$((65536 - 64))
	local lo_frags=0 br_frags=0 r
	local -a s

	case_start
	IFS=, read -ra s <<<"$sizes"
	for ((r = 0; r < rounds; r++)); do
		lo_frags=$((lo_frags + (s[r] + big - 1) / big))
		br_frags=$((br_frags + $(frags "${s[r]}")))
	done
	cycle_sums "$rounds" "$sizes"
	# run_ranks puts rank I on host I: give it a peer table of its own.
	HOST_NS_SAVED=("${HOST_NS[@]}")
	HOST_NS[1]=${HOST_NS[0]}
	HOST_NS[2]=${HOST_NS_SAVED[1]}
	PEERS_OVERRIDE=${HOST_IP[0]},${HOST_IP[0]},${HOST_IP[1]}
	run_ranks "$name" 3 --rounds "$rounds" --sizes "$sizes" "${NO_LOSS[@]}"
	HOST_NS=("${HOST_NS_SAVED[@]}")
	PEERS_OVERRIDE=
	ranks_ok 3
	want "mismatches" "$R_mismatches" -eq 0
	want "posts complete" "$R_complete" -eq $((3 * 2 * rounds))
	want "rx_bytes (sockets)" "$S_rx_bytes" -eq $((3 * 2 * SUM_SIZE))
	want "rank 0 tx_packets: lo + bridge" "$S0_tx_packets" -eq $((lo_frags + br_frags))
	want "rank 1 tx_packets: lo + bridge" "$S1_tx_packets" -eq $((lo_frags + br_frags))
	want "rank 2 tx_packets: bridge x 2" "$S2_tx_packets" -eq $((2 * br_frags))
	for i in 0 1 2; do
		for k in drop_malformed drop_unknown_comm drop_foreign_source \
			 drop_stale_round drop_no_post drop_out_of_bounds; do
			v=S${i}_$k
			want "rank $i $k" "${!v}" -eq 0
		done
	done
	echo "# ranks 0 and 1 at ${HOST_IP[0]}, rank 2 at ${HOST_IP[1]}:" \
	     "rank 0 sent $S0_tx_packets datagrams ($lo_frags over lo," \
	     "$br_frags over the bridge), rank 2 sent $S2_tx_packets"
	case_done "$name" "two ranks share a namespace and address: delivered by rank, per-route fragment size"
}

# --- Multicast --------------------------------------------------------------
# One SEND to DST_ALL with a group: one datagram per fragment, whatever N,
# and still every byte at every peer. The fan-out run of the same traffic
# sends N-1 times as many.
multicast() {
	local n=4 rounds=4 sizes=1,1500,65536,262144 name=mcast
	local fan_pkts

	cycle_sums "$rounds" "$sizes"
	case_start
	run_ranks fanout "$n" --rounds "$rounds" --sizes "$sizes" "${NO_LOSS[@]}"
	fan_pkts=$N_tx_packets
	ranks_ok "$n"
	want "fan-out: posts complete" "$R_complete" -eq $((n * (n - 1) * rounds))
	want "fan-out: tx_packets" "$N_tx_packets" -eq $((n * (n - 1) * SUM_FRAGS))

	run_ranks "$name" "$n" --rounds "$rounds" --sizes "$sizes" \
		--mcast "$GROUP" --dev eth0 "${NO_LOSS[@]}"
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "posts complete" "$R_complete" -eq $((n * (n - 1) * rounds))
	want "rx_bytes" "$N_rx_bytes" -eq $((n * (n - 1) * SUM_SIZE))
	want "rx_packets" "$N_rx_packets" -eq $((n * (n - 1) * SUM_FRAGS))
	want "tx_bytes = one copy" "$N_tx_bytes" -eq $((n * SUM_SIZE))
	want "tx_packets = fragments" "$N_tx_packets" -eq $((n * SUM_FRAGS))
	want "rounds_completed" "$N_rounds_completed" -eq $((n * rounds))
	# Each sender's own group datagrams loop back to its namespace and
	# must be ignored, not counted as drops.
	want "drop_unknown_comm" "$N_drop_unknown_comm" -eq 0
	want "drop_stale_round" "$N_drop_stale_round" -eq 0
	no_bad_drops
	sock_equals_net "$n"
	echo "# $n ranks, $rounds rounds of $sizes B: tx_packets fan-out" \
	     "$fan_pkts, multicast $N_tx_packets (fragments per rank" \
	     "$SUM_FRAGS), round max $M_max_us us"
	case_done "$name" "multicast: $n ranks, one datagram per fragment, every byte at every peer"
}

# --- netem ----------------------------------------------------------------
# Loss, reordering, duplication, corruption on every host's egress. Ranks
# accept incomplete posts (--expect-loss) but never a wrong byte, and the
# books must balance: each rank's received/missing bytes are its
# namespace's rx_bytes/bytes_lost, and everything sent was either placed
# or reported lost (tx_bytes = rx_bytes + bytes_lost).
LOSSY_N=4
LOSSY_ROUNDS=4
LOSSY_SIZES=65536,262144
LOSSY_DEADLINE=$(sc 500000)

lossy() {
	local name=$1 desc=$2 n=$LOSSY_N rounds=$LOSSY_ROUNDS
	local posts=$((LOSSY_N * (LOSSY_N - 1) * LOSSY_ROUNDS))

	shift 2
	cycle_sums "$rounds" "$LOSSY_SIZES"
	case_start
	netem_on "$n" "$@" || { ktap_fail "$desc: netem $*"; return 1; }
	run_ranks "$name" "$n" --rounds "$rounds" --sizes "$LOSSY_SIZES" \
		--deadline-us "$LOSSY_DEADLINE" --expect-loss
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	# A post can be refused (ESTALE) when a very slow guest lets its
	# round's deadline pass before the rank finished posting for it.
	want "posts ended" $((R_complete + R_expired + R_early + R_refused)) -eq "$posts"
	want "bytes accounted" $((R_received + R_missing + R_refused_bytes)) \
		-eq $((n * (n - 1) * SUM_SIZE))
	books_agree "$n"
	want "sent = placed + lost" "$N_tx_bytes" -eq $((N_rx_bytes + N_bytes_lost))
	# netem_on sends one datagram per skb: nothing may arrive batched.
	want "no GSO batches" "$N_rx_gso_batches" -eq 0
	want "rounds_opened" "$N_rounds_opened" -eq $((n * rounds))
	want "rounds ended" $((N_rounds_completed + N_rounds_expired + N_rounds_early)) \
		-eq $((n * rounds))
	no_bad_drops
	echo "# $desc: posts complete $R_complete early $R_early expired" \
	     "$R_expired of $posts; bytes missing $R_missing of" \
	     "$((R_received + R_missing)); datagrams sent $N_tx_packets placed" \
	     "$N_rx_packets dup $N_rx_duplicate stale $N_drop_stale_round" \
	     "no_post $N_drop_no_post; round p50 $M_p50_us us max $M_max_us us"
	return 0
}

loss_case() {
	local pct=$1 name=loss$1

	lossy "$name" "netem loss $pct%" loss "$pct%" || return
	want "datagrams lost" "$N_rx_packets" -lt "$N_tx_packets"
	want "bytes missing" "$R_missing" -gt 0
	case_done "$name" "netem loss $pct%: no wrong byte, every missing range reported, counters agree"
}

reorder_case() {
	# 25% of datagrams overtake the others, which wait 10 ms.
	lossy reorder "netem reorder" delay 10ms reorder 25% 50% || return
	case_done reorder "netem reorder: no wrong byte, counters agree"
}

duplicate_case() {
	lossy dup "netem duplicate 10%" duplicate 10% || return
	# A copy lands either in its still-open post (rx_duplicate) or after
	# the round ended (drop_stale_round); it never counts as data twice.
	want "rx_duplicate" "$N_rx_duplicate" -gt 0
	want "rx_packets <= sent" "$N_rx_packets" -le "$N_tx_packets"
	case_done dup "netem duplicate 10%: duplicates counted, never placed twice"
}

corrupt_case() {
	lossy corrupt "netem corrupt 5%" corrupt 5% || return
	# The UDP checksum catches the flipped bits before the module sees
	# the datagram: UDP counts checksum errors, the module nothing bad.
	want "UDP InCsumErrors" "$U_InCsumErrors" -gt 0
	want "datagrams lost" "$N_rx_packets" -lt "$N_tx_packets"
	case_done corrupt "netem corrupt 5%: corruption stopped by the UDP checksum, no wrong byte"
}

# --- Deadlines --------------------------------------------------------------
DEADLINE_US=$(sc 200000)
# A round must end at its deadline: never before (optr_peer checks every
# EXPIRED completion has elapsed >= deadline), typically just after, and
# never much later. TCG timing is noisy, so the median gets a tight bound
# and the worst case a loose one. On top of that, a guest sharing a busy
# host can stop for seconds: the rank's stall monitor (stall_us, its
# longest oversleep) measures that, and the worst-case bound grows by it,
# so only a round later than the guest can explain fails.
DEADLINE_P50_SLACK_US=$(sc 100000)
DEADLINE_MAX_SLACK_US=$(sc 300000)

# deadline_times DESC RANKS...: the timing conditions for these ranks.
deadline_times() {
	local i min p50 max stall

	for i in "${@:2}"; do
		min=R${i}_min_us p50=R${i}_p50_us max=R${i}_max_us
		stall=R${i}_stall_us
		want "rank $i earliest round end (us)" "${!min}" -ge "$DEADLINE_US"
		want "rank $i median round end (us)" "${!p50}" \
			-le $((DEADLINE_US + DEADLINE_P50_SLACK_US))
		want "rank $i latest round end (us)" "${!max}" \
			-le $((DEADLINE_US + DEADLINE_MAX_SLACK_US + ${!stall}))
		echo "# $1: rank $i rounds ended after ${!min} .. ${!max} us," \
		     "median ${!p50} us (allowed >= $DEADLINE_US, median <=" \
		     "$((DEADLINE_US + DEADLINE_P50_SLACK_US)), max <=" \
		     "$((DEADLINE_US + DEADLINE_MAX_SLACK_US)) + guest stall ${!stall})"
	done
}

# Every datagram is delayed 1 s (5 deadlines), far past the deadline: every round of
# every rank expires, with nothing received, at its deadline. (Unless the
# guest stalled for most of that second: then the timer and the delayed
# datagrams become due together and either may run first.)
deadline_delay() {
	local n=3 rounds=5 size=9000 name=delay delay_us=$((5 * DEADLINE_US))

	case_start
	netem_on "$n" delay "$((delay_us / 1000))ms" ||
		{ ktap_fail "deadline: netem"; return; }
	run_ranks "$name" "$n" --rounds "$rounds" --size "$size" \
		--deadline-us "$DEADLINE_US" --expect-loss --watch-stalls
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	if [ "$M_stall_us" -lt $((delay_us - DEADLINE_US - DEADLINE_MAX_SLACK_US)) ]; then
		want "posts expired" "$R_expired" -eq $((n * (n - 1) * rounds))
		want "rounds_expired" "$N_rounds_expired" -eq $((n * rounds))
		want "bytes received" "$R_received" -eq 0
	else
		echo "# guest stalled $M_stall_us us: delayed data may beat the timer"
		want "posts ended" $((R_expired + R_complete)) -eq $((n * (n - 1) * rounds))
	fi
	books_agree "$n"
	no_bad_drops
	deadline_times "netem delay $((delay_us / 1000)) ms" 0 1 2
	case_done "$name" "deadline: delay beyond it, every round EXPIRED at its deadline"
}

# Rank 2 joins and posts but never sends: every round of the others
# expires at the deadline with rank 2's message missing entirely; rank 2
# itself gets everything. (Rank 2 gets a long deadline: done with round r
# as soon as their data came, it opens round r+1 while they still wait
# out round r.) Messages are small so the exchange between ranks 0 and 1
# beats the deadline, even on a loaded guest.
deadline_silent() {
	local n=3 rounds=5 size=1500 name=silent s r

	case_start
	RANK_ARGS=("" "" "--silent --deadline-us $(sc 5000000)")
	run_ranks "$name" "$n" --rounds "$rounds" --size "$size" \
		--deadline-us "$DEADLINE_US" --expect-loss --watch-stalls
	RANK_ARGS=()
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	for r in 0 1; do
		s=N${r}_rounds_expired
		want "rank $r rounds_expired" "${!s}" -eq "$rounds"
		s=R${r}_expired
		want "rank $r posts expired" "${!s}" -ge "$rounds"
		s=R${r}_missing
		want "rank $r missing >= all of rank 2's" "${!s}" -ge $((rounds * size))
	done
	want "rank 2 posts complete" "$R2_complete" -eq $((2 * rounds))
	want "rank 2 rounds_completed" "$N2_rounds_completed" -eq "$rounds"
	want "rank 2 sent nothing" "$N2_tx_packets" -eq 0
	books_agree "$n"
	no_bad_drops
	deadline_times "silent rank 2" 0 1
	case_done "$name" "deadline: silent peer, every round EXPIRED at its deadline"
}

# --- Early timeout ----------------------------------------------------------
# Every host drops, on egress, the one fragment at offset 10 x FRAG of
# every message (tc u32 on the wire header's offset field). Each post then
# misses exactly that range but sees its last fragment, so its round ends
# EARLY once idle for a fraction of the estimate, far before the 5 s
# deadline; optr_peer checks the reported range is exactly the dropped one.
early() {
	local n=4 rounds=4 sizes=262144,131072 name=early i
	local off=$((10 * FRAG)) deadline

	# IPv4 (no options) 20 + UDP 8 + the offset field at 20 of the header.
	local at=$((20 + 8 + 20))

	deadline=$(sc 5000000)
	case_start
	# A prio root qdisc carries the filter (clsact is not in every
	# kernel the tests run on, e.g. the debug one). The filter matches
	# one datagram's header: send unbatched.
	wire_datagrams
	for ((i = 0; i < n; i++)); do
		printf '%s\n' "qdisc replace dev eth0 root handle 1: prio" \
			"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport $PORT 0xffff match u32 $(printf '0x%08x' $off) 0xffffffff at $at action drop" |
			tc -n "${HOST_NS[$i]}" -batch - ||
			{ ktap_fail "early: tc u32 filter"; return; }
	done
	run_ranks "$name" "$n" --rounds "$rounds" --sizes "$sizes" \
		--deadline-us "$deadline" --expect-loss \
		--expect-missing "$off:$FRAG" --watch-stalls
	netem_off "$n"
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "posts ended early" "$R_early" -eq $((n * (n - 1) * rounds))
	want "rounds_early" "$N_rounds_early" -eq $((n * rounds))
	want "bytes missing = one fragment per post" "$R_missing" -eq $((n * (n - 1) * rounds * FRAG))
	want "latest round end (us)" "$M_max_us" -lt $((deadline / 2 + M_stall_us))
	books_agree "$n"
	no_bad_drops
	echo "# fragment at offset $off dropped, deadline $deadline us: rounds" \
	     "ended early after $(min_over "$n" min_us) .. $M_max_us us" \
	     "(median up to $M_p50_us us; guest stall up to $M_stall_us us)"
	case_done "$name" "early timeout: a middle fragment lost, rounds end EARLY well before the deadline"
}

# --- Pacing and the send timeout ------------------------------------------
# A paced socket spaces its datagrams to the rate: a 1 MiB message at
# 50 Mbit/s (headers included) cannot leave faster than ~175 ms.
paced() {
	local n=2 rounds=2 size=1048576 mbps=50 name=paced f min_us

	case_start
	f=$(frags $size)
	# Paced bytes include 64 B of IPv4 + UDP + wire header per datagram;
	# bits / (Mbit/s) = us; the first datagram leaves at once.
	min_us=$(((size + f * 64) * 8 * (f - 1) / f / mbps))
	run_ranks "$name" "$n" --rounds "$rounds" --size "$size" --pace "$mbps" \
		"${NO_LOSS[@]}"
	ranks_ok "$n"
	want "posts complete" "$R_complete" -eq $((n * (n - 1) * rounds))
	want "fastest paced send (us)" "$(min_over "$n" send_min_us)" -ge $((min_us * 9 / 10))
	no_bad_drops
	echo "# 1 MiB at $mbps Mbit/s: sends took $(min_over "$n" send_min_us)" \
	     ".. $M_send_max_us us (at least ~$min_us us)"
	case_done "$name" "pacing: $mbps Mbit/s holds a 1 MiB send to its rate"
}

# A send that cannot finish by its timeout (1 MiB at 20 Mbit/s needs
# ~440 ms, the timeout is 100 ms) stops, reports ETIMEDOUT and counts the
# fragments it did not send (tx_dropped): sent + dropped = the message.
# The receiver never sees a last fragment, so its round ends at its deadline
# or after a typical round of silence with the unsent tail missing; what
# was sent is placed (or, if it came after the round ended, dropped as
# stale).
send_timeout() {
	local n=2 rounds=2 size=1048576 name=sendtimeout f

	case_start
	f=$(frags $size)
	run_ranks "$name" "$n" --rounds "$rounds" --size "$size" --pace 20 \
		--send-timeout-us 100000 --deadline-us "$(sc 1000000)" --expect-loss
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "sends timed out" "$R_tx_timeouts" -eq $((n * rounds))
	want "tx_dropped > 0" "$N_tx_dropped" -gt 0
	want "sent + dropped = fragments" $((N_tx_packets + N_tx_dropped)) -eq $((n * rounds * f))
	want "sent = placed + stale" "$N_tx_packets" -eq $((N_rx_packets + N_drop_stale_round))
	want "posts expired or stalled (last fragment never sent)" \
		$((R_expired + R_early)) -eq $((n * rounds))
	want "bytes lost >= not sent" "$N_bytes_lost" -ge $((n * rounds * size - N_tx_bytes))
	books_agree "$n"
	echo "# 1 MiB at 20 Mbit/s, send timeout 100 ms: $N_tx_packets of" \
	     "$((n * rounds * f)) datagrams sent, $N_tx_dropped dropped," \
	     "$N_drop_stale_round too late"
	case_done "$name" "send timeout: ETIMEDOUT, tx_dropped counts the unsent rest"
}

# --- Blocked path ----------------------------------------------------------
# Rank 0's egress holds everything: tbf at 1 kbit/s (a datagram every 12 s
# after the first), with room for far more
# than the namespace's 4 MiB send buffer. Its batches (cut into datagrams
# by tbf) fill the send buffer and stay queued below it, so an 8 MiB send
# must wait for room that never comes, and gives up at its timeout:
# ETIMEDOUT on time, the unsent rest in tx_dropped. The ranks exit with
# those datagrams still queued (charged to the namespace's UDP socket,
# which outlives its last member until they go); deleting the qdisc frees
# them.
blocked_path() {
	local n=2 size=8388608 name=blocked f to

	case_start
	f=$(frags $size)
	to=$(sc 300000)
	if ! tc -n "${HOST_NS[0]}" qdisc replace dev eth0 root tbf \
		rate 1kbit burst 1600 limit 67108864; then
		ktap_fail "blocked path: tbf qdisc"
		return
	fi
	RANK_ARGS=("" "--silent")
	run_ranks "$name" "$n" --size "$size" --send-timeout-us "$to" \
		--deadline-us "$(sc 1000000)" --expect-loss
	RANK_ARGS=()
	tc -n "${HOST_NS[0]}" qdisc del dev eth0 root
	ranks_ok "$n"
	want "mismatches" "$R_mismatches" -eq 0
	want "rank 0's send timed out" "$R0_tx_timeouts" -eq 1
	want "rank 0's send waited for its timeout" "$R0_send_max_us" -ge "$to"
	want "rank 0's send returned within its timeout + $(sc 1000000) us" \
		"$R0_send_max_us" -le $((to + $(sc 1000000)))
	want "tx_dropped > 0" "$N0_tx_dropped" -gt 0
	want "sent + dropped = fragments" $((N0_tx_packets + N0_tx_dropped)) -eq "$f"
	want "rank 1 got at most what tbf let through" "$N1_rx_packets" -le \
		$((2 + $(sc 1000000) / 1000000))
	# Rank 0 hears nothing from the silent rank 1 and expires; rank 1
	# heard what tbf let through and expires or, after a typical round
	# of silence, stalls.
	want "rank 0 post expired" "$R0_expired" -eq 1
	want "posts expired or stalled" $((R_expired + R_early)) -eq 2
	books_agree "$n"
	echo "# 8 MiB into a held queue, send timeout $to us: returned after" \
	     "$R0_send_max_us us, $N0_tx_packets datagrams queued, $N0_tx_dropped dropped"
	case_done "$name" "blocked path: a send waits for room only until its timeout"
}

t_start=$SECONDS
setup_bridge 8 || { ktap_fail "setup: bridge of 8 namespaces"; ktap_finish; }
echo "# LAN of 8 namespaces: $((SECONDS - t_start)) s"
# OPTIREDUCE_TRANSPORT_CASES (a regular expression) runs only the matching
# cases (the debug lane picks a subset),
# e.g. OPTIREDUCE_TRANSPORT_CASES='^(early|loss_case 5)$'.
run() {
	[[ "$*" =~ ${OPTIREDUCE_TRANSPORT_CASES:-.} ]] && "$@"
}
[ "$TIME_SCALE" -ne 1 ] && echo "# slow kernel: times scaled by $TIME_SCALE"
run no_loss 8 6 1,100,1400,1500,9000,65536
run no_loss 4 7 1,100,1400,1500,9000,65536,1048576
run no_loss 2 7 1,100,1400,1500,9000,65536,1048576
run no_loss 4 3 1,1500,65536 --unicast
run gro
run shared_addr
run backlog_bound
run multicast
run paced
run send_timeout
run blocked_path
run deadline_silent
run early
run loss_case 1
run loss_case 5
run loss_case 20
run reorder_case
run duplicate_case
run corrupt_case
run deadline_delay
echo "# transport_test: $((SECONDS - t_start)) s"
ktap_finish
