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

optr_unload() {
	optr_loaded || return 0
	rmmod optireduce
}

# The address family number the loaded module registered.
optr_family() { cat "$PARAMS/family"; }
