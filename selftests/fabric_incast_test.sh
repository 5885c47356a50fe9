#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Dynamic incast on the kernel path, in the emulated fabric
# (tools/lib/fabric.sh): four ranks on a switch whose ports towards them
# are 30 Mbit/s token buckets with 128 KiB queues (at 100 Mbit/s the
# emulated CPUs, not the queues, decided what was lost on a loaded host). A 256 KiB call sends a
# 64 KiB shard per peer: three senders at once into one port (the fixed
# limit) overflow its queue, one at a time do not. The hosts' uplinks are
# left at veth speed (FABRIC_UPLINK=0): a shaped uplink overflows with a
# sender's own unpaced phase-2 copies whatever the limit, which is the
# rate controller's business, not the incast limit's. The same calls run
# twice: with the fixed limit, and with OPTIREDUCE_INCAST_DYNAMIC=1. The
# dynamic run must lower the limit, alike on every rank, and its calls
# from the 20th on must lose fewer entries than the fixed run's (the order
# is asserted, never a time). Where the limit ends is not asserted: after
# clean windows it probes upwards again, by design. Both counts are printed. About four
# minutes in the guest, most of it the fixed run's calls ending at their
# deadlines.

dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$dir/lib.sh"
# shellcheck source=../tools/lib/fabric.sh
. "$REPO_DIR/tools/lib/fabric.sh"

AR=$REPO_DIR/lib/build/examples/allreduce_rank
OUT=$(mktemp -d)
N=4
COUNT=65536
CALLS=36
FROM=20
port=21000
# Every rank's options (allreduce_ranks).
AR_OPTS=(--per-call --path kernel --check none --calls "$CALLS"
	--count "$COUNT")

allreduce_prepare

# run NAME ENV=VALUE...: every rank, its summary and per-call lines in
# $OUT/NAME.I. 0 when every rank exited 0.
run() {
	local name=$1

	shift
	port=$((port + 10))
	allreduce_ranks "$name" $N $port 240 OPTIREDUCE_WARMUP=4 \
		OPTIREDUCE_DIRECT_KB=0 OPTIREDUCE_HADAMARD=off \
		OPTIREDUCE_LOSS_THRESHOLD=1 OPTIREDUCE_DEADLINE_SLACK_MS=300 "$@"
}

# summary NAME: "LOST_FROM INCAST LOWERED AGREED" over the ranks: entries
# lost in calls FROM.. (per-call lines), the last limit and lowerings of
# rank 0, and whether every rank reports the same two.
summary() {
	awk -v from=$FROM '
		$1 == "call" && $2 >= from { lost += $4 }
		/^rank=/ {
			for (i = 1; i <= NF; i++) {
				split($i, p, "="); v[p[1]] = p[2]
			}
			key = v["incast"] " " v["incast_lowered"]
			if (first == "") first = key
			else if (key != first) differ = 1
		}
		END { print lost + 0, first, differ ? 0 : 1 }' "$OUT/$1".[0-9]
}

if ! optr_load; then
	echo "# SKIP: optireduce.ko cannot be loaded"
	exit "$KSFT_SKIP"
fi
FABRIC_UPLINK=0
if ! fabric_setup $N; then
	ktap_fail "fabric setup"
	ktap_finish
fi

run fixed OPTIREDUCE_INCAST_DYNAMIC=0 &&
	run dynamic OPTIREDUCE_INCAST_DYNAMIC=1
st=$?
read -r f_lost f_incast f_lowered f_agreed < <(summary fixed)
read -r d_lost d_incast d_lowered d_agreed < <(summary dynamic)
echo "# fixed limit: entries lost in calls $FROM..$((CALLS - 1)): $f_lost" \
     "(limit $f_incast, lowered $f_lowered times)"
echo "# dynamic incast: $d_lost (limit $d_incast, lowered $d_lowered times)"
if [ $st -ne 0 ]; then ranks_stderr; fi
ktap_check "fixed: every rank ran at $((N - 1))" \
	test $st -eq 0 -a "$f_lowered" = 0 -a "$f_incast" = $((N - 1)) \
	-a "$f_agreed" = 1
ktap_check "dynamic: lowered alike on every rank" \
	test $st -eq 0 -a "$d_agreed" = 1 -a "${d_lowered:-0}" -gt 0
ktap_check "dynamic: fewer entries lost than at the fixed limit" \
	test $st -eq 0 -a "${d_lost:-0}" -lt "${f_lost:-0}"
ktap_finish
