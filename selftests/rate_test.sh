#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Rate control (kmod/rate.c) on the kernel path, in the emulated fabric
# (tools/lib/fabric.sh): four ranks, every link (the switch's port towards
# each host and each host's uplink) a 30 Mbit/s token bucket with a
# 128 KiB queue that marks ECN-capable packets above 32 KiB. Each call of
# 256 KiB sends a 64 KiB shard to each peer: phase 1 is an incast of three
# senders into each port. The same calls run twice, paced at a fixed
# 200 Mbit/s, far above the links, and with rate_control on, at most
# 200 Mbit/s, starting where the TCP warm-up measured the path:
#   - the rate-controlled calls lose fewer entries than the fixed ones
#     (calls WARM..CALLS-2 of each, both counts printed, the order
#     asserted), and what the switch and uplinks dropped is printed;
#   - its rates fell (decreases in rank 0's netlink dump, every rate under
#     the start), and the tracepoint saw decreases and marks;
#   - rank 0 reported marks to its peers before their messages ended (a
#     64 KiB shard is 47 datagrams; a report goes early after 32 with
#     marks among them);
#   - each rank's rate started where the library's TCP warm-up measured
#     its path (OPTIREDUCE_RATE_START_MBPS), not at the 200 Mbit/s ceiling;
#   - its knee, rate_knee_pct above that start, is in the netlink dump, and
#     no step crossed it from below nor, at or above it, added more than
#     1/128 of the rate and the fraction of a Mbit/s the reports before
#     left over (the tracepoint);
#   - once the fabric is unshaped (the congestion stops), with the calls
#     still running, the rates rise again (the tracepoint: rates above
#     where the congestion left them);
#   - a rate the senders never reach (200 Gbit/s, on the unshaped links)
#     is not raised by the clean reports that come back: rank 0's dump
#     counts holds and no raise.
# Nothing about time is asserted. Under two minutes in the TCG guest.

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
N=4
COUNT=65536
# Calls compared; the rate-controlled run goes on for CLEAN more once the
# fabric is unshaped, which are not compared: enough that on a loaded
# host the snapshot of the congested state (tc, the counters, the dump)
# is over long before they are.
CALLS=${RATE_TEST_CALLS:-16}
WARM=${RATE_TEST_WARM:-6}
CLEAN=${RATE_TEST_CLEAN:-60}
START=200
# Every rank's options and environment (allreduce_ranks); the library's
# default engine, io_uring.
AR_OPTS=(--per-call --path kernel --check none --count "$COUNT")
RANK_ENV=(OPTIREDUCE_WARMUP=2 OPTIREDUCE_DIRECT_KB=0 OPTIREDUCE_HADAMARD=off
	OPTIREDUCE_LOSS_THRESHOLD=1 OPTIREDUCE_DEADLINE_SLACK_MS=300)
port=22000

require_root
require_built "$AR" "$TOOL"

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	main_shell || return 0
	[ -w "$EVENT/enable" ] && echo 0 >"$EVENT/enable"
	params_restore
	cleanup_ns
	rm -rf "$OUT"
}
trap cleanup EXIT

# lost NAME: entries lost in calls WARM..CALLS-2 over every rank (the last
# compared call may overlap the unshaping of the rate-controlled run).
lost() {
	awk -v from=$WARM -v to=$((CALLS - 2)) \
		'$1 == "call" && $2 >= from && $2 <= to { lost += $4 }
		 END { print lost + 0 }' "$OUT/$1".[0-9]
}

# transport FILE: the hosts' namespace counters summed, "NAME VALUE" lines.
transport() {
	local i

	for ((i = 0; i < N; i++)); do
		ip netns exec "${HOST_NS[$i]}" cat /proc/net/optireduce
	done | awk '$1 == "net" { v[$2] += $3 } END { for (k in v) print k, v[k] }' >"$1"
}

# transport_report RUN: what the transport counted during RUN.
transport_report() {
	awk -v run="$1" 'NR == FNR { b[$1] = $2; next }
		$1 ~ /^(tx_dropped|bytes_lost|rounds_expired|rounds_early|rounds_completed|drop_stale_round|drop_no_post)$/ {
			printf " %s=%d", $1, $2 - b[$1] }
		END { print "" }' "$OUT/tbefore.$1" "$OUT/tafter.$1" |
		sed "s/^/# $1: transport/"
}

# peers FILE: rank 0's sockets (optireduce -j sock show) into FILE.json,
# at once; peers_parse FILE, later: "RATE DECREASES INCREASES EARLY
# STALE" per peer,
# one line each, into FILE, and "RATE CUTS RAISES QUEUE_DROPS KNEE HOLDS" of the
# communicator into FILE.comm (python starts slowly under TCG, and the
# remaining calls must not end before the fabric is unshaped).
peers() {
	ip netns exec "${HOST_NS[0]}" "$TOOL" -j sock show >"$1.json"
}
peers_parse() {
	python3 -c '
import json, sys
with open(sys.argv[2], "w") as comm:
    for s in json.load(open(sys.argv[1])):
        if "rate_mbps" in s:
            print(s["rate_mbps"], s["rate_cuts"], s["rate_raises"],
                  s["queue_drops"], s.get("rate_knee_mbps", 0),
                  s["rate_holds"], file=comm)
        for p in s.get("peers", []):
            print(p["rate_mbps"], p["decreases"], p["increases"],
                  p["reports_early"], p["reports_stale"])
' "$1.json" "$1.comm" >"$1"
}

if ! optr_load; then
	echo "# SKIP: optireduce.ko cannot be loaded"
	exit "$KSFT_SKIP"
fi
params_save pace_mbps rate_control rate_min_mbps rate_max_mbps \
	rate_step_mbps rate_md_pct rate_knee_pct
FABRIC_ECN_KB=32
if ! fabric_setup $N; then
	ktap_fail "fabric setup"
	ktap_finish
fi
tracing=0
if [ -w "$EVENT/enable" ]; then
	echo >"$TRACING/trace"
	echo 1 >"$EVENT/enable"
	tracing=1
fi

# Fixed pacing, too fast for the links.
echo $START >"$PARAMS/pace_mbps"
echo 0 >"$PARAMS/rate_control"
fabric_counters "$OUT/before.fixed"
transport "$OUT/tbefore.fixed"
port=$((port + 10))
allreduce_ranks fixed $N $port 150 "${RANK_ENV[@]}" -- --calls $CALLS
st_fixed=$?
fabric_counters "$OUT/after.fixed"
transport "$OUT/tafter.fixed"

# Rate control under the same ceiling, then the congestion stops.
echo 1 >"$PARAMS/rate_min_mbps"
echo $START >"$PARAMS/rate_max_mbps"
echo 5 >"$PARAMS/rate_min_mbps"
echo 5 >"$PARAMS/rate_step_mbps"
echo 50 >"$PARAMS/rate_md_pct"
KNEE_PCT=25
echo $KNEE_PCT >"$PARAMS/rate_knee_pct"
echo 1 >"$PARAMS/rate_control"
fabric_counters "$OUT/before.rate"
transport "$OUT/tbefore.rate"
port=$((port + 10))
allreduce_ranks rate $N $port 150 "${RANK_ENV[@]}" -- \
	--calls $((CALLS + CLEAN)) &
ranks=$!
busywait 150000 calls_done "$OUT/rate.0" $CALLS
fabric_counters "$OUT/after.rate"
transport "$OUT/tafter.rate"
peers "$OUT/peers.congested"
[ $tracing = 1 ] && echo rate_test_unshaped >"$TRACING/trace_marker"
fabric_unshape
wait $ranks
st_rate=$?
[ $tracing = 1 ] && echo 0 >"$EVENT/enable"
peers_parse "$OUT/peers.congested"

# A rate no sender here reaches: the fixed rate a communicator without a
# measured start begins at (no warm-up), under a ceiling above it.
echo 1000000 >"$PARAMS/rate_max_mbps"
echo 200000 >"$PARAMS/pace_mbps"
port=$((port + 10))
allreduce_ranks unreached $N $port 150 OPTIREDUCE_WARMUP=0 \
	OPTIREDUCE_DIRECT_KB=0 OPTIREDUCE_HADAMARD=off -- --calls 300 &
ranks=$!
busywait 150000 calls_done "$OUT/unreached.0" 20
peers "$OUT/peers.unreached"
wait $ranks
st_unreached=$?
peers_parse "$OUT/peers.unreached"

f_lost=$(lost fixed)
r_lost=$(lost rate)
echo "# fixed pacing at $START Mbit/s: entries lost in calls $WARM..$((CALLS - 2)): $f_lost"
echo "# rate control: $r_lost"
for run in fixed rate; do
	fabric_report "$OUT/before.$run" "$OUT/after.$run" /dev/null |
		sed -n "s/^fabric total/# $run: switch total/p"
	transport_report $run
done
sed "s/^/# optireduce -j sock show, rank 0, congested: /" \
	"$OUT/peers.congested.json"
# Rank 0's calls: SEQ DURATION_MS LOST EXPECTED.
for run in fixed rate; do
	awk -v run=$run '$1 == "call" {
		printf "# %s call %d %d ms lost %d of %d\n", run, $2, $3 / 1e6, $4, $5 }' \
		"$OUT/$run.0"
done
if [ $st_fixed -ne 0 ] || [ $st_rate -ne 0 ]; then
	ranks_stderr
fi

ktap_check "every rank ran every call" test $st_fixed -eq 0 -a $st_rate -eq 0
ktap_check "rate control loses fewer entries than fixed pacing" \
	test "$r_lost" -lt "$f_lost"
# Every peer of rank 0 reported congestion, and the communicator's rate
# (which every send leaves at) was cut below the start.
ktap_check "rates fell under congestion" awk -v start=$START -v peers=$((N - 1)) '
	{ n++; if ($1 >= start || $2 < 1) bad = 1 }
	END { exit !(n == peers && !bad) }' "$OUT/peers.congested"
ktap_check "marks were reported before their messages ended" awk '
	{ early += $4; stale += $5 }
	END { printf "# early reports from rank 0: %d; stale reports to it: %d\n",
		     early, stale
	      exit !(early > 0) }' "$OUT/peers.congested"
ktap_check "a rate the senders do not reach is held, not raised" awk -v st=$st_unreached '
	{ n++; printf "# unreached rate of rank 0: %d Mbit/s, cuts %d, raises %d, holds %d\n", $1, $2, $3, $6
	  if ($3 != 0 || $6 < 1) bad = 1 }
	END { exit !(st == 0 && n == 1 && !bad) }' "$OUT/peers.unreached.comm"
ktap_check "the communicator's rate was cut" awk -v start=$START '
	{ n++; if ($1 >= start || $2 < 1) bad = 1 }
	END { exit !(n == 1 && !bad) }' "$OUT/peers.congested.comm"
sed 's/^/# rate, cuts, raises, queue drops, knee of rank 0: /' \
	"$OUT/peers.congested.comm"
if [ $tracing = 1 ]; then
	# "RANK PEER NEW OLD CE AFTER" per rate change; AFTER: once the
	# fabric was unshaped (the marker).
	awk '/rate_test_unshaped/ { after = 1 }
		/optireduce_rate:/ {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			print v["rank"], v["peer"], v["new_mbps"] + 0,
			      v["old_mbps"] + 0, v["ce"] + 0, after + 0
		}' "$TRACING/trace" >"$OUT/events"
	# Each rank's first step moved the rate from where the library's
	# TCP warm-up measured its path (the summary's warmup_mbps, within
	# [rate_min_mbps, rate_max_mbps]), not from the ceiling.
	for ((r = 0; r < N; r++)); do
		sed -n "s/.* warmup_mbps=\([0-9]*\) .*/$r \1/p" "$OUT/rate.$r"
	done >"$OUT/warmup"
	sed 's/^/# rank, warm-up Mbit\/s: /' "$OUT/warmup"
	ktap_check "each rank's rate started where its warm-up measured the path" \
		awk -v lo=5 -v hi=$START -v n=$N '
		NR == FNR { w[$1] = $2 < lo ? lo : ($2 > hi ? hi : $2); next }
		!($1 in first) { first[$1] = $4 }
		END {
			for (r in w) {
				k++
				if (!(r in first) || first[r] != w[r] || w[r] >= hi)
					bad = 1
			}
			exit !(k == n && !bad)
		}' "$OUT/warmup" "$OUT/events"
	# The knee: KNEE_PCT above the measured start, within the bounds.
	knee() {
		awk -v k=$KNEE_PCT -v lo=5 -v hi=$START '{
			x = int($2 * (100 + k) / 100)
			print $1, x < lo ? lo : (x > hi ? hi : x) }' "$OUT/warmup"
	}
	knee >"$OUT/knee"
	ktap_check "rank 0's knee is $KNEE_PCT% above its measured start" \
		awk 'NR == FNR { if ($1 == 0) want = $2; next }
		     { got = $5 } END { exit !(want > 0 && got == want) }' \
		"$OUT/knee" "$OUT/peers.congested.comm"
	# Every raise (NEW > OLD) from below the knee stops at it; from at
	# or above it adds at most OLD / 128 and a carried fraction: the
	# whole Mbit/s of OLD / 128, plus one.
	ktap_check "no raise crossed the knee or climbed fast above it" awk '
		NR == FNR { knee[$1] = $2; next }
		$3 > $4 && ($1 in knee) {
			if ($4 < knee[$1] && $3 > knee[$1]) bad++
			step = int($4 / 128) + 1
			if ($4 >= knee[$1] && $3 - $4 > step) bad++
			if ($4 >= knee[$1]) above++
		}
		END {
			printf "# raises at or above the knee: %d, too large: %d\n",
			       above, bad
			exit !(!bad && above > 0)
		}' "$OUT/knee" "$OUT/events"
	ktap_check "tracepoint: rate decreases and CE marks seen" awk '
		$3 < $4 { dec++ } $5 > 0 { ce++ }
		END { exit !(dec > 0 && ce > 0) }' "$OUT/events"
	# Some rank's rate to some peer climbed, once the fabric was
	# unshaped, above where the congestion had left it.
	ktap_check "rates rose once the congestion stopped" awk '
		!$6 { last[$1 " " $2] = $3; next }
		($1 " " $2) in last && $3 > last[$1 " " $2] && $3 > $4 { up++ }
		END { exit !(up >= 2) }' "$OUT/events"
	awk '$6 { n++; if ($3 > $4) up++ } END {
		printf "# after unshaping: %d rate changes, %d up\n", n, up }' \
		"$OUT/events"
else
	ktap_skip "tracepoint: rate decreases and CE marks seen" "no tracefs"
	ktap_skip "rates rose once the congestion stopped" "no tracefs"
fi
ktap_finish
