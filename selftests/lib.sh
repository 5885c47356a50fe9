# SPDX-License-Identifier: GPL-2.0
# Helpers shared by the shell selftests: KTAP output, module load/unload,
# network namespaces. Sourced, never run.

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
