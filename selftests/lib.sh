# SPDX-License-Identifier: GPL-2.0
# Helpers shared by the shell selftests: KTAP output, module load/unload,
# network namespaces. Sourced, never run.

# System tools first: a user's PATH may put e.g. a pyenv python3 shim ahead
# of Debian's, which is slow to start in the guest and lacks Debian's modules.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

SELFTESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$SELFTESTS_DIR")
OPTIREDUCE_KO=${OPTIREDUCE_KO:-$REPO_DIR/kmod/optireduce.ko}
PARAMS=/sys/module/optireduce/parameters

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

optr_loaded() { [ -d /sys/module/optireduce ]; }

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
# if any did.
wait_ranks() {
	local secs=$1 label=$2 pid dog i=0 st=0

	shift 2
	( sleep "$secs"; kill "$@" ) 2>/dev/null &
	dog=$!
	for pid in "$@"; do
		if ! wait "$pid"; then
			echo "# ${label}rank $i exited with status $?"
			st=1
		fi
		i=$((i + 1))
	done
	kill $dog 2>/dev/null
	wait $dog 2>/dev/null
	return $st
}

# The debug guest (KASAN, kmemleak, lockdep): everything runs several to
# ten times slower there.
debug_kernel() {
	[ -e /sys/kernel/debug/kmemleak ] || [ -d /sys/kernel/debug/kasan ]
}

# optr_load [PARAM=VALUE...]: load the module from the tree (or
# $OPTIREDUCE_KO). Stock Debian kernels build udp_tunnel as a module.
optr_load() {
	optr_loaded && return 0
	modprobe -q udp_tunnel 2>/dev/null || true
	insmod "$OPTIREDUCE_KO" "$@"
}

optr_unload() {
	optr_loaded || return 0
	rmmod optireduce
}

optr_family() { cat "$PARAMS/family"; }

# setup_ns NAME...: create namespaces with a unique suffix; the variables
# named NAME hold the real names. cleanup_ns removes them.
NS_LIST=()
setup_ns() {
	local var ns

	for var in "$@"; do
		ns="$var-$$-$RANDOM"
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
		NS_LIST+=("$ns")
		eval "$var=$ns"
	done
}

cleanup_ns() {
	local ns

	for ns in "${NS_LIST[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	NS_LIST=()
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

# --- A switched LAN of namespaces (transport and malformed tests) ---------
#
# setup_bridge N: N hosts, each in its own namespace, on one bridge in a
# namespace of its own. BR_NS is the bridge's namespace (br0; port vpI leads
# to host I); HOST_NS[I], HOST_IP[I] (10.77.0.I+1/24) and HOST_MAC[I]
# describe host I, whose only interface is eth0. Only namespaces created
# here are touched; cleanup_ns removes them all.
#
# Under TCG every process costs ~150 ms, so the setup is a few `ip -batch`
# runs instead of one `ip` per step: N+2 processes in all.
BR_NS=
HOST_NS=()
HOST_IP=()
HOST_MAC=()
BRIDGE_NET=10.77.0

setup_bridge() {
	local n=$1 i j tag=$$-$RANDOM

	BR_NS=optr-br-$tag
	HOST_NS=()
	HOST_IP=()
	HOST_MAC=()
	for ((i = 0; i < n; i++)); do
		HOST_NS+=("optr-h$i-$tag")
		HOST_IP+=("$BRIDGE_NET.$((i + 1))")
		HOST_MAC+=("$(printf '02:77:00:00:00:%02x' $((i + 1)))")
	done
	NS_LIST+=("$BR_NS" "${HOST_NS[@]}")
	for i in "$BR_NS" "${HOST_NS[@]}"; do
		echo "netns add $i"
	done | ip -batch - || return 1

	# No multicast snooping: group traffic is flooded, so delivery never
	# depends on IGMP reports having been seen (there is no querier).
	{
		echo "link set lo up"
		echo "link add br0 type bridge mcast_snooping 0"
		echo "link set br0 up"
		for ((i = 0; i < n; i++)); do
			echo "link add vp$i type veth peer name eth0 address ${HOST_MAC[$i]} netns ${HOST_NS[$i]}"
			echo "link set vp$i master br0 up"
		done
	} | ip -n "$BR_NS" -batch - || return 1

	# Every host knows every other host's MAC for good: the first burst
	# of a test must not be cut by ARP resolution (the neighbour queue
	# holds a few dozen packets, a message may be hundreds) nor the ARP
	# exchange be lost to netem.
	for ((i = 0; i < n; i++)); do
		{
			echo "link set lo up"
			echo "addr add ${HOST_IP[$i]}/24 dev eth0"
			echo "link set eth0 up"
			for ((j = 0; j < n; j++)); do
				[ "$i" -eq "$j" ] && continue
				echo "neigh replace ${HOST_IP[$j]} lladdr ${HOST_MAC[$j]} dev eth0 nud permanent"
			done
		} | ip -n "${HOST_NS[$i]}" -batch - || return 1
	done
}

# in_host I CMD...: run CMD in host I's namespace.
in_host() {
	local i=$1

	shift
	ip netns exec "${HOST_NS[$i]}" "$@"
}

# bridge_peers [N]: the --peers argument of optr_peer for the first N
# hosts (default all).
bridge_peers() {
	local IFS=,

	echo "${HOST_IP[*]:0:${1:-${#HOST_IP[@]}}}"
}

# now_ms: milliseconds, CLOCK_REALTIME, without forking date(1).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}

	echo $((t / 1000))
}
