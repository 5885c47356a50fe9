#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the selftests where the module can be loaded (the guest, or a real
# host). KTAP-style output: every test prints its own "ok"/"not ok" lines;
# this runner adds one line per program for a crash or timeout the program
# could not report itself, one for a program that skipped (exit 4) and one
# for the kernel log it left behind.
#
#   selftests/run.sh [TEST...]     default: every test the Makefile lists
set -uo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir" || exit 1
# shellcheck source=lib.sh
. ./lib.sh

# What the kernel must never print while a test runs.
KERNEL_BAD='WARNING:|BUG:|Oops|Call Trace|UBSAN:|KASAN:|circular locking|suspicious RCU|unreferenced object|general protection|refcount_t:|list_(add|del) corruption'

# KSFT_TIMEOUT overrides the settings file: the debug lane needs longer.
timeout_s=${KSFT_TIMEOUT:-$(sed -n 's/^timeout=//p' settings)}
if [ $# -gt 0 ]; then
	tests=("$@")
else
	read -ra tests < <(make -s --no-print-directory print-tests)
fi

require_root
failed=0

run_one() {
	local t=$1 marker log st bad t0=$SECONDS

	marker="optireduce-selftest-start: $t $$ $RANDOM"
	echo "$marker" >/dev/kmsg
	echo "# selftest: $t"
	if ! optr_load; then
		ktap_fail "$t: module did not load"
		return
	fi

	log=$(mktemp)
	timeout --foreground -k 10 "$timeout_s" "./$t" 2>&1 | tee "$log"
	st=${PIPESTATUS[0]}
	case $st in
	0) ;;
	"$KSFT_SKIP")
		# Whatever it reported counts as it said; the skip itself
		# counts once more, with the program's reason if it gave one.
		# Failures it reported before skipping fail the run.
		if grep -q '^not ok ' "$log"; then
			failed=$((failed + 1))
		fi
		ktap_skip "$t" "$(sed -n 's/^# SKIP: *//p' "$log" | tail -n 1 |
			grep . || echo "exit status 4")"
		;;
	124 | 137)
		ktap_fail "$t: timed out after ${timeout_s}s"
		;;
	*)
		# A program that failed must have said so; if it crashed
		# before it could, say it for it.
		failed=$((failed + 1))
		grep -q '^not ok ' "$log" ||
			ktap_fail "$t: exited with status $st"
		;;
	esac
	rm -f "$log"
	echo "# selftest: $t took $((SECONDS - t0)) s"

	bad=$(dmesg | sed -n "\|$marker|,\$p" | grep -E -A20 "$KERNEL_BAD")
	if [ -n "$bad" ]; then
		ktap_fail "$t: kernel log clean"
		echo "$bad" | sed 's/^/# dmesg: /'
	else
		ktap_ok "$t: kernel log clean"
	fi
}

for t in "${tests[@]}"; do
	run_one "$t"
done
# Leave the module unloadable: a leaked socket or reference shows here.
if optr_loaded; then
	ktap_check "module unloads after all tests" optr_rmmod
fi
# The summary counts this runner's own lines; a program that reported
# failures of its own fails the run as well.
(ktap_finish)
st=$?
[ "$failed" -eq 0 ] || st=$KSFT_FAIL
exit "$st"
