# SPDX-License-Identifier: GPL-2.0
# Helpers shared by the shell selftests: KTAP output, requirements, rank
# and time helpers. What the demo and the benchmarks use too (module
# load/unload, network namespaces, the clock) lives in tools/lib/ and is
# sourced from there. Sourced, never run.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

SELFTESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$SELFTESTS_DIR")

. "$REPO_DIR/tools/lib/path.sh"
. "$REPO_DIR/tools/lib/module.sh"
. "$REPO_DIR/tools/lib/netns.sh"
. "$REPO_DIR/tools/lib/clock.sh"

# uapi_define NAME: a numeric #define of the uapi header, in decimal.
uapi_define() {
	local v

	v=$(awk -v n="$1" '$1 == "#define" && $2 == n { print $3 }' \
		"$REPO_DIR/uapi/linux/optireduce.h")
	echo $((v))
}
OPTIREDUCE_FAMILY_DEFAULT=$(uapi_define OPTIREDUCE_FAMILY_DEFAULT)
OPTIREDUCE_SOL_DEFAULT=$(uapi_define OPTIREDUCE_SOL_DEFAULT)
OPTIREDUCE_PORT_DEFAULT=$(uapi_define OPTIREDUCE_PORT_DEFAULT)

ktap_n=0
ktap_failed=0
ktap_skipped=0

ktap_ok() { ktap_n=$((ktap_n + 1)); echo "ok $ktap_n $*"; }
ktap_fail() {
	ktap_n=$((ktap_n + 1))
	ktap_failed=$((ktap_failed + 1))
	echo "not ok $ktap_n $*"
}
ktap_skip() {
	ktap_n=$((ktap_n + 1))
	ktap_skipped=$((ktap_skipped + 1))
	echo "ok $ktap_n $1 # SKIP ${2:-}"
}
# ktap_check NAME CMD...: one result line from a command's status.
ktap_check() {
	local name=$1

	shift
	if "$@"; then
		ktap_ok "$name"
	else
		ktap_fail "$name"
	fi
}
# Exit status for the whole script: any failure fails it.
ktap_finish() {
	echo "# $ktap_n tests, $ktap_failed failed, $ktap_skipped skipped"
	[ "$ktap_failed" -eq 0 ] && exit $KSFT_PASS
	exit $KSFT_FAIL
}

require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "# SKIP: needs root"
		exit $KSFT_SKIP
	fi
}

# require_built FILE...: skip the test unless every program was built.
require_built() {
	local f

	for f in "$@"; do
		if [ ! -x "$f" ]; then
			echo "# SKIP: $f not built (make tools selftests)"
			exit $KSFT_SKIP
		fi
	done
}

# wait_ranks SECONDS LABEL PID...: wait for every rank process, killing
# them all after SECONDS. One watchdog, not a timeout(1) per rank: under
# emulation every process started costs. Says which rank failed; returns 1
# if any did. The watchdog holds none of the caller's output and takes its
# sleep with it when stopped: a sleep left holding a test's stdout kept
# run.sh's tee, and the test, waiting out the rest of SECONDS (torch hook
# test: 190 s after it had finished). Each rank's exit status is left in
# RANK_STATUS[I].
wait_ranks() {
	local secs=$1 label=$2 pid dog i=0 st=0

	shift 2
	RANK_STATUS=()
	(
		exec >/dev/null 2>&1
		sleep "$secs" &
		trap 'kill $!' TERM
		wait $! && kill "$@"
	) &
	dog=$!
	for pid in "$@"; do
		# Quiet: bash reports a rank killed by a signal ("Killed")
		# outside the TAP stream; the status says it below.
		{ wait "$pid"; } 2>/dev/null
		RANK_STATUS[i]=$?
		if [ "${RANK_STATUS[i]}" -ne 0 ]; then
			echo "# ${label}rank $i exited with status ${RANK_STATUS[i]}"
			st=1
		fi
		i=$((i + 1))
	done
	kill $dog 2>/dev/null
	wait $dog 2>/dev/null
	return $st
}

# The shell that sourced this file: bash 5.2 was seen to run a script's
# EXIT trap in one of its subshells too, mid-run, removing namespaces and
# scratch folders under the running test. Cleanups run in this one only.
OPTR_MAIN_PID=$BASHPID
main_shell() { [ "$BASHPID" = "$OPTR_MAIN_PID" ]; }

# For the scripts that run optr_peer ranks and forge datagrams at them
# (transport_test.sh, malformed_test.sh, auth_test.sh).
#
# peer_prepare NAME: skip the test unless it runs as root and optr_peer is
# built; load the module; set PEER, PORT (the module's UDP port) and WORK,
# a scratch folder /tmp/optr-NAME-*.
peer_prepare() {
	require_root
	PEER=$SELFTESTS_DIR/optr_peer
	require_built "$PEER"
	optr_load || { ktap_fail "module loads"; ktap_finish; }
	PORT=$(cat "$PARAMS/port")
	WORK=$(mktemp -d "/tmp/optr-$1-XXXXXX")
}

# del_namespaces: every namespace of NS_LIST, in one `ip -batch` instead
# of one process each.
del_namespaces() {
	if [ ${#NS_LIST[@]} -gt 0 ]; then
		printf 'netns del %s\n' "${NS_LIST[@]}" |
			ip -force -batch - 2>/dev/null
	fi
	NS_LIST=()
}

# peer_cleanup (the EXIT trap of peer_prepare's scripts): kill the
# processes in PIDS, delete the namespaces, remove WORK.
peer_cleanup() {
	local p

	main_shell || return 0
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	del_namespaces
	rm -rf "$WORK"
}

# net_counters HOST: "NAME VALUE" per namespace counter of HOST.
net_counters() {
	in_host "$1" cat /proc/net/optireduce | awk '$1 == "net" { print $2, $3 }'
}

# victim_opened HOST TX: wait (20 s at most) until the one socket on HOST
# has opened its first round and its own send of it (TX datagrams, to a
# rank nobody plays yet) has left; 1 if it did not.
victim_opened() {
	local p=/proc/net/optireduce

	busywait 20000 sh -c "ip netns exec ${HOST_NS[$1]} cat $p |
		grep -q 'rounds 1' && ip netns exec ${HOST_NS[$1]} cat $p |
		grep -qx 'net tx_packets $2'"
}

# victim_joined_by_rank0 START SIZES [ARGS...]: the victim (rank 1 of
# $COMM, PIDS[0], output in $WORK/out1, holding at --go-file $WORK/go) is
# joined by rank 0 on host 0 with ARGS, for 3 rounds from START of SIZES;
# wait for both, print their result lines, and set rc0 and rc1 to their
# exit statuses.
victim_joined_by_rank0() {
	local start=$1 sizes=$2

	shift 2
	in_host 0 "$PEER" --comm "$COMM" --rank 0 --peers "$PEERS" "$@" \
		--rounds 3 --start-round "$start" --sizes "$sizes" \
		--ready-file "$WORK/ready0" --go-file "$WORK/go" \
		>"$WORK/out0" 2>&1 &
	PIDS+=($!)
	busywait 60000 test -e "$WORK/ready0"
	touch "$WORK/go"
	wait "${PIDS[0]}"
	rc1=$?
	wait "${PIDS[1]}"
	rc0=$?
	PIDS=()
	grep -h '^result\|MISMATCH\|optr_peer' "$WORK/out0" "$WORK/out1" |
		sed 's/^/# /'
}

# sock_stat FILE NAME: the counter NAME of optr_peer's "stat" lines.
sock_stat() { awk -v k="$2" '$1 == "stat" && $2 == k { print $3 }' "$1"; }

# params_save NAME...: remember module parameters; params_restore puts
# them back. Two passes: a floor and its ceiling (rate_min_mbps,
# rate_max_mbps) are checked against each other, so one may only fit once
# the other is back.
declare -A SAVED_PARAMS=()
params_save() {
	local p

	for p in "$@"; do
		SAVED_PARAMS[$p]=$(<"$PARAMS/$p")
	done
}
params_restore() {
	local p

	for _ in 1 2; do
		for p in "${!SAVED_PARAMS[@]}"; do
			echo "${SAVED_PARAMS[$p]}" >"$PARAMS/$p" 2>/dev/null
		done
	done
	return 0
}

# For the scripts that run $AR (lib/build/examples/allreduce_rank) as
# ranks in the namespaces of setup_bridge or fabric_setup, with their
# outputs in the scratch folder $OUT.
#
# allreduce_prepare: skip the test unless it runs as root and $AR is
# built; on exit, remove the namespaces and $OUT.
allreduce_prepare() {
	require_root
	if [ ! -x "$AR" ]; then
		echo "# SKIP: $AR not built (make -C lib)"
		exit "$KSFT_SKIP"
	fi
	trap allreduce_cleanup EXIT
}
allreduce_cleanup() {
	main_shell || return 0
	cleanup_ns
	rm -rf "$OUT"
}

# allreduce_ranks NAME N PORT SECS [ENV=VALUE...] [-- ARGS...]: $AR with
# the script's AR_OPTS, then ARGS, as ranks 0..N-1 of one communicator,
# under the command RUN_AS if set (limits, another user). Rank I runs in
# host I's namespace at HOST_IP[I] (ONE_HOST=1: every rank in host 0's,
# at 127.0.0.1) on port PORT + I, with the library's environment for that
# (OPTIREDUCE_RANK, _SIZE, _PEERS and a 60 s _TIMEOUT_MS), then ENV. Rank
# I's stdout in $OUT/NAME.I, its stderr in $OUT/NAME.I.err. Rank I runs in
# the cgroup RANK_CGROUP[I] (a directory of the cgroup2 tree) where that is
# set. Waits for them all, up to SECS (wait_ranks); 0 when every rank
# exited 0.
allreduce_ranks() {
	local name=$1 n=$2 base=$3 secs=$4 i ip plist='' envs=() pids=()

	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	for ((i = 0; i < n; i++)); do
		ip=${HOST_IP[$i]}
		[ -n "${ONE_HOST:-}" ] && ip=127.0.0.1
		plist+=${plist:+,}$ip:$((base + i))
	done
	for ((i = 0; i < n; i++)); do
		(
			if [ -n "${RANK_CGROUP[$i]:-}" ]; then
				echo "$BASHPID" >"${RANK_CGROUP[$i]}/cgroup.procs" ||
					exit 1
			fi
			export OPTIREDUCE_RANK=$i OPTIREDUCE_SIZE=$n \
				OPTIREDUCE_PEERS=$plist \
				OPTIREDUCE_TIMEOUT_MS=60000 "${envs[@]}"
			exec ip netns exec "${HOST_NS[$((${ONE_HOST:-0} ? 0 : i))]}" \
				"${RUN_AS[@]}" "$AR" "${AR_OPTS[@]}" "$@"
		) >"$OUT/$name.$i" 2>"$OUT/$name.$i.err" &
		pids+=($!)
	done
	wait_ranks "$secs" "$name: " "${pids[@]}"
}

# ranks_stderr: what every rank run in $OUT wrote to its stderr, as
# comments (after a failed run).
ranks_stderr() {
	local f

	for f in "$OUT"/*.err; do
		sed "s|^|# ${f##*/}: |" "$f"
	done
}

# rate_fields FILE KEY...: for each socket with a rate in FILE, a dump
# of `$TOOL -j sock show`, the values of KEY... on one line (-1 for a key
# it lacks).
rate_fields() {
	python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    if "rate_mbps" in s:
        print(*(s.get(k, -1) for k in sys.argv[2:]))
' "$@"
}

# calls_done FILE N: FILE, a rank's output with --per-call, has N calls.
calls_done() {
	[ "$(grep -c '^call ' "$1" 2>/dev/null)" -ge "$2" ]
}

# allreduce_dumped NAME N PORT SECS CALLS [ENV=VALUE...]: allreduce_ranks
# for CALLS calls, and rank 0's sockets as `$TOOL -j sock show` prints
# them into $OUT/NAME.json while its socket is open: before its last call
# rank 0 sleeps 3 s, time for the tool to read them under TCG. 0 when
# every rank exited 0.
allreduce_dumped() {
	local name=$1 n=$2 base=$3 secs=$4 calls=$5 ranks

	shift 5
	allreduce_ranks "$name" "$n" "$base" "$secs" "$@" -- --calls "$calls" \
		--late-rank 0 --late-ms 3000 --late-from $((calls - 1)) &
	ranks=$!
	busywait $((secs * 1000)) calls_done "$OUT/$name.0" $((calls - 1))
	ip netns exec "${HOST_NS[0]}" "$TOOL" -j sock show >"$OUT/$name.json"
	wait $ranks
}

# The debug guest (KASAN, kmemleak, lockdep): everything runs several to
# ten times slower there.
debug_kernel() {
	[ -e /sys/kernel/debug/kmemleak ] || [ -d /sys/kernel/debug/kasan ]
}

# busywait TIMEOUT_MS CMD...: until CMD succeeds or the time is up.
busywait() {
	local timeout_ms=$1 start now

	shift
	start=$(date +%s%3N)
	while true; do
		"$@" && return 0
		now=$(date +%s%3N)
		[ $((now - start)) -ge "$timeout_ms" ] && return 1
		sleep 0.05
	done
}
