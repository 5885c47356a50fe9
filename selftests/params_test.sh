#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tunables in /sys/module/optireduce/parameters: every value in range is
# taken, every value out of range, malformed or from a non-root user is
# refused with the old value kept; load-time parameters are read-only.
. "$(dirname "$0")/lib.sh"
require_root
optr_load

# name min max
TUNABLES="
deadline_min_us 100 60000000
deadline_max_us 1000 60000000
deadline_pctl 50 100
deadline_margin_pct 0 1000
early_idle_pct 0 100
pace_mbps 0 1000000
tx_segs 1 128
max_rounds 1 4096
backlog_kb 0 1048576
loss_alarm_ppm 0 1000000
rx_steer_kb 0 1048576
mem_max_kb 0 16777216
rate_control 0 1
rate_min_mbps 1 1000000
rate_max_mbps 1 1000000
rate_step_mbps 1 100000
rate_md_pct 1 99
rate_knee_pct 0 1000
rate_foreign 0 1
rate_drained 0 1
"

# refused NAME VALUE: the write fails and the value is unchanged.
refused() {
	local before after

	before=$(cat "$PARAMS/$1")
	if echo "$2" >"$PARAMS/$1" 2>/dev/null; then
		echo "# $1=$2 accepted"
		return 1
	fi
	after=$(cat "$PARAMS/$1")
	[ "$before" = "$after" ] || { echo "# $1 changed $before -> $after"; return 1; }
}

# accepted NAME VALUE: the write succeeds and reads back.
accepted() {
	echo "$2" >"$PARAMS/$1" && [ "$(cat "$PARAMS/$1")" = "$2" ]
}

# Defaults, read before anything is written: the bounds tests below move
# deadline_min_us and deadline_max_us together, and the two rate bounds.
declare -A default
while read -r name _; do
	[ -n "$name" ] && default[$name]=$(cat "$PARAMS/$name")
done <<<"$TUNABLES"

restore_defaults() {
	# Order matters only for the bounds: widest first.
	echo 100 >"$PARAMS/deadline_min_us"
	echo 1 >"$PARAMS/rate_min_mbps"
	for name in "${!default[@]}"; do
		echo "${default[$name]}" >"$PARAMS/$name"
	done
	echo "${default[deadline_min_us]}" >"$PARAMS/deadline_min_us"
	echo "${default[rate_min_mbps]}" >"$PARAMS/rate_min_mbps"
}

while read -r name min max; do
	[ -n "$name" ] || continue
	def=${default[$name]}
	ktap_check "$name: default $def within [$min, $max]" \
		test "$def" -ge "$min" -a "$def" -le "$max"
	ok=1
	# The deadline bounds constrain each other: open the room first.
	case $name in
	deadline_min_us) echo 60000000 >"$PARAMS/deadline_max_us" ;;
	deadline_max_us) echo 100 >"$PARAMS/deadline_min_us" ;;
	rate_min_mbps) echo 1000000 >"$PARAMS/rate_max_mbps" ;;
	rate_max_mbps) echo 1 >"$PARAMS/rate_min_mbps" ;;
	esac
	accepted "$name" "$min" || ok=0
	accepted "$name" "$max" || ok=0
	ktap_check "$name: accepts $min and $max" test $ok -eq 1
	ok=1
	[ "$min" -gt 0 ] && { refused "$name" $((min - 1)) || ok=0; }
	for v in $((max + 1)) -1 abc "" 1.5 0x7fffffffffff 99999999999999999999; do
		refused "$name" "$v" || ok=0
	done
	ktap_check "$name: refuses out of range and malformed values" test $ok -eq 1
	ktap_check "$name: non-root cannot write" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		sh -c "! echo $min 2>/dev/null >$PARAMS/$name && cat $PARAMS/$name >/dev/null"
	restore_defaults
done <<<"$TUNABLES"

echo 5000 >"$PARAMS/deadline_min_us"
ktap_check "deadline_max_us below deadline_min_us refused" refused deadline_max_us 4000
echo 1000 >"$PARAMS/deadline_min_us"
ktap_check "deadline_min_us above deadline_max_us refused" refused deadline_min_us 3000000
restore_defaults
echo 500 >"$PARAMS/rate_min_mbps"
ktap_check "rate_max_mbps below rate_min_mbps refused" refused rate_max_mbps 400
echo 5 >"$PARAMS/rate_min_mbps"
echo 100 >"$PARAMS/rate_max_mbps"
ktap_check "rate_min_mbps above rate_max_mbps refused" refused rate_min_mbps 200
restore_defaults
ok=1
for name in "${!default[@]}"; do
	[ "$(cat "$PARAMS/$name")" = "${default[$name]}" ] ||
		{ echo "# $name not restored"; ok=0; }
done
ktap_check "every tunable back at its default" test $ok -eq 1

for ro in family sol port; do
	ktap_check "$ro is read-only" test "$(stat -c %a "$PARAMS/$ro")" = 444
done

ktap_finish
