#!/bin/sh
# SPDX-License-Identifier: MIT
# Run host tests, one TAP line each; logs in $B/test/logs/NAME.log.
# Exit codes of a test: 0 pass, 77 skip, anything else fail.
# VALGRIND=1 runs every binary under memcheck (children too);
# EMULATOR="qemu-aarch64 -L /" runs binaries built for another CPU.
B=${B:-build}
LOGS=$B/test/logs
TIMEOUT=${TEST_TIMEOUT:-120}
mkdir -p "$LOGS"
n=0 pass=0 fail=0 skip=0
echo "1..$#"
for t in "$@"; do
	n=$((n + 1))
	name=$(basename "$t" .sh)
	log=$LOGS/$name.log
	limit=$TIMEOUT
	case "$t" in
	*.sh)	cmd="bash $t" ;;
	*)	if [ -n "$VALGRIND" ]; then
			cmd="valgrind -q --error-exitcode=99 --leak-check=full \
--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
--trace-children=yes --child-silent-after-fork=no $t"
			limit=$((TIMEOUT * 10))
		else
			cmd="$EMULATOR $t"
		fi ;;
	esac
	start=$(date +%s)
	timeout -k 5 "$limit" $cmd >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		echo "ok $n - $name (${secs}s)"
		pass=$((pass + 1))
	elif [ $rc -eq 77 ]; then
		echo "ok $n - $name # SKIP $(tail -n 1 "$log")"
		skip=$((skip + 1))
	else
		[ $rc -eq 124 ] && echo "timed out after ${limit}s" >>"$log"
		echo "not ok $n - $name (exit $rc, log $log)"
		sed 's/^/#   /' "$log" | tail -n 15
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
