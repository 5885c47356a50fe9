# SPDX-License-Identifier: GPL-2.0
# Wall-clock time for scripts that measure. Sourced, never run.

# now_ms: milliseconds, CLOCK_REALTIME, without forking date(1) (under
# emulation every process started costs ~150 ms).
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}

	echo $((t / 1000))
}
