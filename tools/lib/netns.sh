# SPDX-License-Identifier: GPL-2.0
# Network namespaces: private ones, and a switched LAN of them on a bridge.
# Sourced, never run; cleanup_ns removes every namespace created here.

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

# --- A switched LAN of namespaces (the demo, the benchmarks, tests) ------
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
	# of a run must not be cut by ARP resolution (the neighbour queue
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

# bridge_peers [N]: the addresses of the first N hosts (default all),
# comma-separated (a --peers argument).
bridge_peers() {
	local IFS=,

	echo "${HOST_IP[*]:0:${1:-${#HOST_IP[@]}}}"
}

