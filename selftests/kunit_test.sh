#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's KUnit suites (kmod/tests/kunit.c) run when it loads on a
# kernel with CONFIG_KUNIT (the debug lane); report each case. Kernels
# without KUnit skip.
. "$(dirname "$0")/lib.sh"
require_root

d=/sys/kernel/debug/kunit
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
# Reload so the suites ran in this module instance.
optr_unload && optr_load || { ktap_fail "module reloads"; ktap_finish; }
suites=$(ls -d "$d"/optireduce-* 2>/dev/null)
if [ -z "$suites" ]; then
	echo "# SKIP: this kernel has no KUnit (CONFIG_KUNIT)"
	exit $KSFT_SKIP
fi
for s in $suites; do
	name=$(basename "$s")
	# Cases are the indented "ok N case" lines of the suite's KTAP.
	while read -r st rest; do
		case $st in
		ok) ktap_ok "$name: ${rest#* }" ;;
		not) ktap_fail "$name: ${rest#ok * }" ;;
		esac
	done < <(sed -n 's/^    \(\(not \)\{0,1\}ok [0-9]\)/\1/p' "$s/results")
done
[ "$ktap_n" -gt 0 ] || ktap_fail "KUnit suites reported cases"
ktap_finish
