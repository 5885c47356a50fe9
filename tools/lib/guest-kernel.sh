# SPDX-License-Identifier: GPL-2.0
# The kernel a benchmark's QEMU guest boots, as its --kernel option names
# it: "stock", the 6.12 kernel the module builds against (tools/kdir);
# "newest", the development suite's (tools/vm/fetch-kernel, fetched into
# the cache on first use: the kernel make check's newest lane boots); or
# a directory laid out as fetch-kernel lays it out (release,
# boot/vmlinuz-REL, lib/modules/REL/, build/). Sourced from the
# repository's root, never run; safe under set -e.

# guest_kernel_valid K: K names a kernel guest_kernel can boot.
guest_kernel_valid() {
	case $1 in
	stock|newest) return 0 ;;
	esac
	[ -f "$1/release" ] && [ -d "$1/build" ]
}

# guest_kernel K: GUEST_REL, the kernel's release, and GUEST_VM_ARGS,
# tools/vm/run's --kernel (and --modules) for it. For a kernel other than
# stock, the module is built against it into build/kmod-REL and
# OPTIREDUCE_KO exported, unless OPTIREDUCE_KO already names a module.
GUEST_REL=
GUEST_VM_ARGS=()
guest_kernel() {
	local dir=$1

	if [ "$dir" = stock ]; then
		GUEST_REL=$(tools/kdir --version) || return 1
		GUEST_VM_ARGS=(--kernel "$GUEST_REL")
		return 0
	fi
	if [ "$dir" = newest ]; then
		# The tree it prepares needs the kernel build's tools.
		tools/install-deps debug || return 1
		dir=$(tools/vm/fetch-kernel) || return 1
	fi
	GUEST_REL=$(cat "$dir/release") || return 1
	GUEST_VM_ARGS=(--kernel "$dir/boot/vmlinuz-$GUEST_REL"
		       --modules "$dir/lib/modules/$GUEST_REL")
	if [ -z "${OPTIREDUCE_KO:-}" ]; then
		OPTIREDUCE_KO=$(tools/compile-test "$dir/build" \
				"build/kmod-$GUEST_REL") || return 1
		export OPTIREDUCE_KO
	fi
}
