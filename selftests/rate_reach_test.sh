#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Rate control raises only a rate its sender reaches (kmod/rate.c,
# optr_rate_reached()). Two ranks on a plain bridge, where nothing
# congests and every report is clean; rate_control on, starting at a
# fixed START Mbit/s (no warm-up, so no knee) under a 1 Gbit/s ceiling.
# The same calls run twice:
#   - free: the clean reports raise rank 0's rate (its dump counts
#     raises), so the run can tell a raise from a hold;
#   - starved: rank 0 in a cgroup allowed QUOTA of every PERIOD
#     microseconds of CPU (cpu.max), as a sender whose vCPU an
#     oversubscribed host takes away for milliseconds at a time. After
#     each wake-up it catches up and then waits for a slot or two, which
#     alone once counted as being held back by the rate; but it falls
#     behind the rate for good for longer than its bytes take at it, so
#     the clean reports hold the rate: rank 0's dump counts no raise and
#     holds it counts as unreached, and its sends' tracepoint
#     (optireduce_send) says how far behind they fell (behind_us).
# The cgroup's throttling and the rates are printed; nothing about time
# is asserted. About 30 s in the TCG guest.

dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$dir/lib.sh"

AR=$REPO_DIR/lib/build/examples/allreduce_rank
TOOL=${OPTIREDUCE_TOOL:-$REPO_DIR/tools/optireduce/optireduce}
TRACING=/sys/kernel/tracing
EVENT=$TRACING/events/optireduce/optireduce_send
CGROOT=/sys/fs/cgroup
OUT=$(mktemp -d)
N=2
CALLS=30
START=20
# 10% of one CPU, in 5 ms slices: at START, a slice sends the pacer's
# 16 KiB of catch-up and 5 ms at the rate, under a quarter of what the
# rate would in 50 ms.
QUOTA=5000
PERIOD=50000
# 128 KiB calls: rank 0 sends 64 KiB (47 datagrams) in each phase.
AR_OPTS=(--per-call --path kernel --check none --count 32768)
# No warm-up: the rate starts at the fixed rate (pace_mbps). The slack
# keeps the starved sender's sends from being hurried past the rate to
# make their deadlines (optr_rate_in_time()).
RANK_ENV=(OPTIREDUCE_WARMUP=0 OPTIREDUCE_DIRECT_KB=0 OPTIREDUCE_HADAMARD=off
	OPTIREDUCE_DEADLINE_SLACK_MS=3000)
CG=""
port=23000

require_root
require_built "$AR" "$TOOL"

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	main_shell || return 0
	[ -w "$EVENT/enable" ] && echo 0 >"$EVENT/enable"
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	params_restore
	cleanup_ns
	rm -rf "$OUT"
}
trap cleanup EXIT

# cgroup_starve: CG, a cgroup whose tasks get QUOTA of every PERIOD us.
cgroup_starve() {
	[ -e "$CGROOT/cgroup.subtree_control" ] || return 1
	grep -qw cpu "$CGROOT/cgroup.subtree_control" ||
		echo +cpu >"$CGROOT/cgroup.subtree_control" 2>/dev/null ||
		return 1
	CG=$CGROOT/optr-starve-$$
	mkdir "$CG" || { CG=""; return 1; }
	echo "$QUOTA $PERIOD" >"$CG/cpu.max"
}

# run NAME: the calls, rank 0's dump in NAME.json (allreduce_dumped),
# the ranks' status in st_NAME.
run() {
	local name=$1

	[ "$tracing" = 1 ] && echo >"$TRACING/trace"
	port=$((port + 10))
	allreduce_dumped "$name" $N $port 300 $CALLS "${RANK_ENV[@]}"
	eval "st_$name=$?"
	if [ "$tracing" = 1 ]; then
		# Rank 0's sends: how many, and behind_us summed.
		awk '/optireduce_send:/ && / rank=0 / {
			for (i = 1; i <= NF; i++) {
				split($i, kv, "=")
				if (kv[1] == "behind_us") b += kv[2]
			}
			n++ }
			END { print n + 0, b + 0 }' "$TRACING/trace" >"$OUT/$name.behind"
	fi
}

if ! optr_load; then
	echo "# SKIP: optireduce.ko cannot be loaded"
	exit "$KSFT_SKIP"
fi
if ! cgroup_starve; then
	echo "# SKIP: no cgroup2 cpu controller (cpu.max) to starve a rank"
	exit "$KSFT_SKIP"
fi
params_save pace_mbps rate_control rate_min_mbps rate_max_mbps \
	rate_step_mbps rate_md_pct rate_knee_pct
if ! setup_bridge $N; then
	ktap_fail "bridge setup"
	ktap_finish
fi
tracing=0
if [ -w "$EVENT/enable" ]; then
	echo 1 >"$EVENT/enable"
	tracing=1
fi
echo 1 >"$PARAMS/rate_min_mbps"
echo 1000 >"$PARAMS/rate_max_mbps"
echo 5 >"$PARAMS/rate_min_mbps"
echo 5 >"$PARAMS/rate_step_mbps"
echo 50 >"$PARAMS/rate_md_pct"
echo $START >"$PARAMS/pace_mbps"
echo 1 >"$PARAMS/rate_control"

run free
RANK_CGROUP=("$CG")
run starved
RANK_CGROUP=()

for name in free starved; do
	rate_fields "$OUT/$name.json" rate_mbps rate_raises rate_holds \
		rate_unreached >"$OUT/$name.comm"
	read -r rate raises holds unreached <"$OUT/$name.comm"
	echo "# $name: rank 0's rate ${rate:-?} Mbit/s from $START, raises ${raises:-?}, holds ${holds:-?}, unreached ${unreached:-?}"
	if [ -r "$OUT/$name.behind" ]; then
		read -r sends behind <"$OUT/$name.behind"
		echo "# $name: rank 0's sends $sends, behind their rate for good $((behind / 1000)) ms in all"
	fi
	awk -v run=$name '$1 == "call" { n++; t += $3 }
		END { if (n) printf "# %s: rank 0 mean call %d ms over %d calls\n",
				    run, t / n / 1e6, n }' "$OUT/$name.0"
done
sed 's/^/# starved cgroup cpu.stat: /' "$CG/cpu.stat"
if [ "${st_free:-1}" -ne 0 ] || [ "${st_starved:-1}" -ne 0 ]; then
	ranks_stderr
fi

ktap_check "every rank ran every call" \
	test "${st_free:-1}" -eq 0 -a "${st_starved:-1}" -eq 0
ktap_check "the starved rank was throttled" \
	awk '$1 == "nr_throttled" { n = $2 } END { exit !(n > 0) }' \
	"$CG/cpu.stat"
# One communicator in each dump; "RATE RAISES HOLDS UNREACHED".
ktap_check "free: clean reports raised the rate the sender reached" \
	awk -v start=$START '{ n++; ok = $2 > 0 && $1 > start }
		END { exit !(n == 1 && ok) }' "$OUT/free.comm"
# Starved, most clean reports hold the rate and it stays under twice the
# start. Not none: a report that comes while the account since the last
# move covers only a slice of CPU the sender had whole may find the rate
# reached (one raise of 2 Mbit/s in one run of several).
ktap_check "starved: clean reports held the rate, counted unreached" \
	awk -v start=$START '{ n++; ok = $1 < 2 * start && $4 > $2 }
		END { exit !(n == 1 && ok) }' "$OUT/starved.comm"
if [ $tracing = 1 ]; then
	ktap_check "starved: its sends fell behind their rate" \
		awk '{ n++; ok = $1 > 0 && $2 > 0 }
			END { exit !(n == 1 && ok) }' "$OUT/starved.behind"
else
	ktap_skip "starved: its sends fell behind their rate" "no tracefs"
fi
ktap_finish
