# SPDX-License-Identifier: GPL-2.0
# Load and unload optireduce.ko from the tree, and read its parameters.
# Sourced, never run.
#
#   OPTIREDUCE_KO  the module to load (default: kmod/optireduce.ko of the
#                  tree this file belongs to)
#   PARAMS         the loaded module's parameter directory

OPTIREDUCE_KO=${OPTIREDUCE_KO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/kmod/optireduce.ko}
PARAMS=/sys/module/optireduce/parameters

optr_loaded() { [ -d /sys/module/optireduce ]; }

# optr_load [PARAM=VALUE...]: load the module unless it is loaded. A plain
# insmod: the module needs no other module loaded first.
optr_load() {
	optr_loaded && return 0
	insmod "$OPTIREDUCE_KO" "$@"
}

# optr_rmmod: unload once the last closed socket let go of the module.
# Every socket holds a reference on the module until RCU frees it
# (SOCK_RCU_FREE), and kernels that batch RCU callbacks lazily (7.x's
# cloud kernels) defer that by up to ten seconds after the last close().
optr_rmmod() {
	local i

	for i in $(seq 150); do
		[ "$(cat /sys/module/optireduce/refcnt 2>/dev/null)" = 0 ] && break
		sleep 0.1
	done
	rmmod optireduce
}

optr_unload() {
	optr_loaded || return 0
	optr_rmmod
}

# The address family number the loaded module registered.
optr_family() { cat "$PARAMS/family"; }
