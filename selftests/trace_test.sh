#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The round_end, drop and send tracepoints (kmod/trace.h), read from
# tracefs, field by field, in a namespace of their own:
#   - communicator COMPLETE: two ranks run ROUNDS rounds: one round_end per
#     rank and round, status complete, within the deadline;
#   - communicator EXPIRED: rank 1 joins, opens round STALE_AHEAD and never
#     sends; then rank 0 opens round 1, and once rank 0 is gone rank 1
#     opens round STALE_AHEAD + 1: all three rounds expire (status
#     expired, not before their deadline), and every datagram of rank 0's
#     round 1 reaches rank 1 after its round STALE_AHEAD opened: one drop
#     event each, reason stale_round, round 1, source rank 0;
#   - the events agree in number with the namespace's counters in
#     /proc/net/optireduce, and no other round ends or drops for them;
#   - one send event per send of those rounds, every byte sent, as many
#     bytes as the namespace's tx_bytes;
#   - where a send's time goes: communicator PACED, rank 0 paced at
#     PACE_MBPS, rank 1 unpaced, messages of BIG bytes (several datagrams
#     on loopback): rank 0's sends slept in the pacer and took at least
#     their schedule, rank 1's never slept; communicator TIMEOUT, rank 0
#     paced the same with a send timeout shorter than its schedule: part
#     of its message sent, the rest counted unsent, error ETIMEDOUT.
. "$(dirname "$0")/lib.sh"
require_root

PEER=$SELFTESTS_DIR/optr_peer
require_built "$PEER"
optr_load || { ktap_fail "module loads"; ktap_finish; }

TRACING=/sys/kernel/tracing
EVENTS=$TRACING/events/optireduce
EVS="optireduce_round_open optireduce_round_end optireduce_drop optireduce_send"
for ev in $EVS; do
	if [ ! -w "$EVENTS/$ev/enable" ]; then
		echo "# SKIP: no tracefs event $EVENTS/$ev"
		exit "$KSFT_SKIP"
	fi
done

COMPLETE=4701
EXPIRED=4702
ROUNDS=3
STALE_AHEAD=5
# Completing rounds must not come near theirs, even in the debug guest;
# the expiring ones must not take long.
DEADLINE_COMPLETE=20000000
DEADLINE_EXPIRED=500000
PACED=4703
TIMEOUT=4704
PACE_MBPS=10
# Four datagrams on loopback (up to 65507 bytes each): at PACE_MBPS the
# last leaves three datagrams' time (157 ms) after the first, less the
# pacer's catch-up credit (16 KiB, 13 ms) a send starts with.
BIG=200000
PACED_MIN_US=140000
SEND_TIMEOUT_US=100000
WORK=$(mktemp -d /tmp/optr-trace-XXXXXX)
PIDS=()

events_enable() {
	local ev

	for ev in $EVS; do
		echo "$1" >"$EVENTS/$ev/enable"
	done
}

cleanup() {
	local p

	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	events_enable 0
	cleanup_ns
	rm -rf "$WORK"
}
trap cleanup EXIT

setup_ns T || { ktap_fail "namespace"; ktap_finish; }
peer() {
	"$PEER" --netns "$T" --peers 127.0.0.1,127.0.0.1 --size "${SIZE:-3000}" \
		--linger-ms 0 "$@"
}

# pair COMM LABEL "RANK 0's OPTIONS" "RANK 1's OPTIONS": both ranks of
# COMM, joined before either sends (a datagram ahead of its receiver's
# join would be dropped, unknown_comm, and end that round early).
pair() {
	local comm=$1 label=$2 r
	local rank_opts=("$3" "$4")

	PIDS=()
	rm -f "$WORK/joined" "$WORK/joined.0" "$WORK/joined.1"
	for r in 0 1; do
		# shellcheck disable=SC2086 # one word per option
		peer --comm "$comm" --rank $r ${rank_opts[$r]} \
			--ready-file "$WORK/joined.$r" --go-file "$WORK/joined" \
			>"$WORK/$label.$r" 2>&1 &
		PIDS+=($!)
	done
	busywait 30000 test -e "$WORK/joined.0" -a -e "$WORK/joined.1"
	touch "$WORK/joined"
	wait_ranks 120 "$label: " "${PIDS[@]}"
}

echo >"$TRACING/trace"
events_enable 1

opts="--rounds $ROUNDS --deadline-us $DEADLINE_COMPLETE"
pair $COMPLETE complete "$opts" "$opts"
ktap_check "communicator $COMPLETE: $ROUNDS rounds complete" test $? -eq 0

PIDS=()
# Rank 1 stays open between its rounds until rank 0 is done: rank 0's
# datagrams find its socket, never an unknown communicator.
peer --comm $EXPIRED --rank 1 --start-round $STALE_AHEAD --rounds 2 --silent \
	--expect-loss --deadline-us $DEADLINE_EXPIRED \
	--go-round $((STALE_AHEAD + 1)) --go-file "$WORK/rank0.done" \
	--ready-file "$WORK/rank1.ready" >"$WORK/expired.1" 2>&1 &
PIDS+=($!)
peer --comm $EXPIRED --rank 0 --expect-loss --deadline-us $DEADLINE_EXPIRED \
	--go-file "$WORK/rank1.opened" >"$WORK/expired.0" 2>&1 &
PIDS+=($!)
# Rank 1's round opens right after it joined; its round_open event is
# the moment rank 0 may send.
busywait 30000 test -e "$WORK/rank1.ready"
busywait 30000 grep -q "optireduce_round_open: comm=$EXPIRED rank=1 round=$STALE_AHEAD " \
	"$TRACING/trace" || echo "# rank 1's round_open not seen, going on"
touch "$WORK/rank1.opened"
wait_ranks 120 "expired: rank 0: " "${PIDS[1]}"
st=$?
touch "$WORK/rank0.done"
wait_ranks 120 "expired: rank 1: " "${PIDS[0]}"
ktap_check "communicator $EXPIRED: both ranks ran their rounds" test $? -eq 0 -a $st -eq 0
PIDS=()

events_enable 0
# "EVENT FIELD=VALUE..." of our communicators, in the order they came.
awk -v a=$COMPLETE -v b=$EXPIRED '
	match($0, /optireduce_(round_end|drop|send): /) {
		ev = substr($0, RSTART + 11, RLENGTH - 13)
		rest = substr($0, RSTART + RLENGTH)
		if (rest ~ "(^| )comm=(" a "|" b ") ")
			print ev, rest
	}' "$TRACING/trace" >"$WORK/events"
sed 's/^/# event: /' "$WORK/events" | head -n 40
ip netns exec "$T" cat /proc/net/optireduce |
	awk '$1 == "net" { print $2, $3 }' >"$WORK/counters"
counter() { awk -v n="$1" '$1 == n { print $2 }' "$WORK/counters"; }

# round_ends COMM RANK STATUS ROUND... : exactly these rounds of RANK
# ended, in this order, with STATUS.
round_ends() {
	local comm=$1 rank=$2 status=$3 want got

	shift 3
	want="$*"
	got=$(awk -v c="comm=$comm" -v r="rank=$rank" -v s="status=$status" '
		$1 == "round_end" && $2 == c && $3 == r {
			print ($5 == s) ? substr($4, 7) : "bad:" $0
		}' "$WORK/events" | paste -sd' ')
	[ "$got" = "$want" ] || { echo "# $comm/$rank: got '$got', want '$want' ($status)"; return 1; }
}
# elapsed COMM OP LIMIT: every round_end of COMM has elapsed_us OP LIMIT.
elapsed() {
	awk -v c="comm=$1" -v op="$2" -v lim="$3" '
		$1 == "round_end" && $2 == c {
			n++
			v = substr($6, 12) + 0
			if ((op == "<" && v >= lim) || (op == ">=" && v < lim)) {
				print "# elapsed out of range: " $0
				bad++
			}
		}
		END { exit bad || !n }' "$WORK/events"
}

seq_rounds=$(seq -s' ' 1 $ROUNDS)
ktap_check "round_end: rank 0 of $COMPLETE, rounds $seq_rounds complete" \
	round_ends $COMPLETE 0 complete "$seq_rounds"
ktap_check "round_end: rank 1 of $COMPLETE, rounds $seq_rounds complete" \
	round_ends $COMPLETE 1 complete "$seq_rounds"
ktap_check "round_end: complete rounds within their deadline" \
	elapsed $COMPLETE "<" $DEADLINE_COMPLETE
ktap_check "round_end: rank 0 of $EXPIRED, round 1 expired" \
	round_ends $EXPIRED 0 expired 1
ktap_check "round_end: rank 1 of $EXPIRED, rounds $STALE_AHEAD and $((STALE_AHEAD + 1)) expired" \
	round_ends $EXPIRED 1 expired $STALE_AHEAD $((STALE_AHEAD + 1))
ktap_check "round_end: expired rounds not before their deadline" \
	elapsed $EXPIRED ">=" $DEADLINE_EXPIRED
ktap_check "round_end: as many as the counters (completed, expired)" \
	test "$(grep -c '^round_end .* status=complete ' "$WORK/events")" -eq "$(counter rounds_completed)" \
	-a "$(grep -c '^round_end .* status=expired ' "$WORK/events")" -eq "$(counter rounds_expired)" \
	-a "$(grep -c '^round_end ' "$WORK/events")" -eq $((2 * ROUNDS + 3))

drops=$(grep -c '^drop ' "$WORK/events")
ktap_check "drop: rank 0's round 1 at rank 1, stale_round from source 0 ($drops)" \
	test "$drops" -gt 0 -a "$(grep -cx "drop reason=stale_round comm=$EXPIRED round=1 src=0" \
	"$WORK/events")" -eq "$drops"
ktap_check "drop: one event per drop_stale_round count, no other drop" \
	test "$drops" -eq "$(counter drop_stale_round)" \
	-a "$(awk '$1 ~ /^drop_/ { n += $2 } END { print n + 0 }' "$WORK/counters")" -eq "$drops"

# field NAME: the value of NAME=... in each line on stdin.
field() {
	awk -v k="$1=" '{
		for (i = 2; i <= NF; i++)
			if (index($i, k) == 1)
				print substr($i, length(k) + 1)
	}'
}
# sends COMM RANK: RANK's send events of COMM.
sends() {
	awk -v c="comm=$1" -v r="rank=$2" '$1 == "send" && $2 == c && $3 == r' \
		"$WORK/events"
}
# sent_whole COMM RANK SIZE ROUND...: RANK of COMM sent these rounds, in
# this order, each to every peer, whole, without an error.
sent_whole() {
	local comm=$1 rank=$2 size=$3 want got

	shift 3
	want="$*"
	got=$(sends "$comm" "$rank" | awk -v sz="$size" '{
		ok = $4 == "dst=-1" && $6 == "bytes=" sz && $7 == "unsent=0" &&
		     $NF == "err=0"
		print ok ? substr($5, 7) : "bad:" $0
	}' | paste -sd' ')
	[ "$got" = "$want" ] || { echo "# sends of $comm/$rank: got '$got', want '$want'"; return 1; }
}
# parts_within: every send's lock, pacer and send-buffer waits, and the
# pacer's lateness, within what they are part of.
parts_within() {
	awk '$1 == "send" {
		n++
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			v[kv[1]] = kv[2] + 0
		}
		if (v["lock_us"] + v["pace_us"] + v["room_us"] > v["elapsed_us"] ||
		    v["late_us"] > v["pace_us"]) {
			print "# parts exceed the whole: " $0
			bad++
		}
	}
	END { exit bad || !n }' "$WORK/events"
}

# never_slept [COMM RANK]: those sends (default: all) never slept in the
# pacer.
never_slept() {
	if [ $# -eq 2 ]; then
		sends "$1" "$2"
	else
		cat "$WORK/events"
	fi | field pace_us | sort -u | grep -qvx 0 && return 1
	return 0
}
unpaced_parts() {
	never_slept && parts_within
}
complete_sends() {
	sent_whole $COMPLETE 0 3000 "$seq_rounds" &&
		sent_whole $COMPLETE 1 3000 "$seq_rounds"
}
expired_sends() {
	sent_whole $EXPIRED 0 3000 1 && [ -z "$(sends $EXPIRED 1)" ]
}

ktap_check "send: ranks 0 and 1 of $COMPLETE sent rounds $seq_rounds whole" \
	complete_sends
ktap_check "send: rank 0 of $EXPIRED sent round 1 whole, silent rank 1 nothing" \
	expired_sends
ktap_check "send: unpaced sends never slept, parts within the whole" \
	unpaced_parts
ktap_check "send: as many bytes as the namespace's tx_bytes" \
	test "$(field bytes <"$WORK/events" | awk '{ n += $1 } END { print n + 0 }')" \
	-eq "$(counter tx_bytes)"

# Where a paced send's time goes.
echo >"$TRACING/trace"
echo 1 >"$EVENTS/optireduce_send/enable"
opts="--rounds 2 --deadline-us $DEADLINE_COMPLETE"
SIZE=$BIG pair $PACED paced "$opts --pace $PACE_MBPS" "$opts --pace 0"
ktap_check "communicator $PACED: rank 0 paced at $PACE_MBPS Mbit/s, 2 rounds complete" \
	test $? -eq 0
opts="--expect-loss --deadline-us $DEADLINE_EXPIRED"
SIZE=$BIG pair $TIMEOUT timeout \
	"$opts --pace $PACE_MBPS --send-timeout-us $SEND_TIMEOUT_US" "$opts --silent"
ktap_check "communicator $TIMEOUT: rank 0's send timed out, both ranks ran" \
	test $? -eq 0
echo 0 >"$EVENTS/optireduce_send/enable"
awk -v a=$PACED -v b=$TIMEOUT '
	match($0, /optireduce_send: /) {
		rest = substr($0, RSTART + RLENGTH)
		if (rest ~ "(^| )comm=(" a "|" b ") ")
			print "send", rest
	}' "$TRACING/trace" >"$WORK/events"
sed 's/^/# event: /' "$WORK/events"

# slept_paced: each of rank 0's sends of PACED slept in the pacer, and
# took at least its schedule.
slept_paced() {
	sends $PACED 0 | awk -v min=$PACED_MIN_US '{
		n++
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			v[kv[1]] = kv[2] + 0
		}
		if (v["pace_us"] == 0 || v["elapsed_us"] < min) {
			print "# not paced: " $0
			bad++
		}
	}
	END { exit bad || n != 2 }'
}
# cut_short: rank 0 of TIMEOUT sent part of its message, counted the
# rest unsent, and ended with ETIMEDOUT.
cut_short() {
	local ev bytes

	ev=$(sends $TIMEOUT 0)
	bytes=$(field bytes <<<"$ev")
	[ "$(wc -l <<<"$ev")" -eq 1 ] && [ "$bytes" -gt 0 ] &&
		[ "$bytes" -lt $BIG ] && [ "$(field unsent <<<"$ev")" -gt 0 ] &&
		[ "$(field err <<<"$ev")" -eq -110 ]
}

ktap_check "send: rank 0 of $PACED slept in the pacer, at least ${PACED_MIN_US} us a send" \
	slept_paced
unpaced_sends() {
	sent_whole $PACED 1 $BIG 1 2 && never_slept $PACED 1
}
ktap_check "send: unpaced rank 1 of $PACED sent whole, never slept" \
	unpaced_sends
ktap_check "send: rank 0 of $TIMEOUT cut at its timeout: part sent, the rest unsent, ETIMEDOUT" \
	cut_short
ktap_check "send: parts within the whole, paced sends too" parts_within
ktap_finish
