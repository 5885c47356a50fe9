#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh's accounting, on fake programs in a copy of this directory: what
# each program reports counts as it said; a skip (exit 4) adds one skip
# line with the program's reason, also after "ok" lines of its own, and
# "not ok" lines before it fail the run; a crash and a timeout get a "not
# ok" of the runner's. Totals are counted as tools/check counts them.
. "$(dirname "$0")/lib.sh"
require_root

WORK=$(mktemp -d /tmp/optr-runner-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# A tree of links to this one whose selftests directory also holds the
# fake programs: run.sh and lib.sh find everything where they look.
fake=$WORK/selftests
mkdir "$fake"
for f in "$REPO_DIR"/*; do
	[ "$f" = "$SELFTESTS_DIR" ] || ln -s "$f" "$WORK/"
done
ln -s "$SELFTESTS_DIR"/* "$fake/"

# fake NAME EXIT LINE...: a program printing LINEs, then exiting EXIT.
fake() {
	local name=$1 st=$2

	shift 2
	{
		echo '#!/bin/sh'
		printf "echo '%s'\n" "$@"
		echo "exit $st"
	} >"$fake/$name"
	chmod +x "$fake/$name"
}
fake passes 0 "ok 1 a" "ok 2 b"
fake oks_then_skips 4 "ok 1 c" "ok 2 d # SKIP no e" "# SKIP: no f"
fake skips 4 "# SKIP: no g"
fake skips_silently 4
fake fails_then_skips 4 "ok 1 h" "not ok 2 i"
fake crashes 3 "ok 1 j"
printf '#!/bin/sh\necho "ok 1 k"\nexec sleep 30\n' >"$fake/hangs"
chmod +x "$fake/hangs"

# runs OUT TEST...: run.sh on the fake programs, its output in OUT with
# run.sh's own numbers taken out of its lines, its status in $st. It
# unloads the module when done; this test's runner loads it again.
runs() {
	local out=$1

	shift
	OPTIREDUCE_KO=$OPTIREDUCE_KO KSFT_TIMEOUT=2 "$fake/run.sh" "$@" \
		>"$out.raw" 2>&1
	st=$?
	sed 's/^/# run.sh: /' "$out.raw"
	sed -E 's/^(not ok|ok) [0-9]+ /\1 /' "$out.raw" >"$out"
}
# has OUT LINE...: run.sh printed every LINE (numbers taken out).
has() {
	local out=$1 l

	shift
	for l in "$@"; do
		grep -qxF -- "$l" "$out" || return 1
	done
}

runs "$WORK/all" passes oks_then_skips skips skips_silently \
	fails_then_skips crashes hangs
ktap_check "a program's own results are passed through" \
	has "$WORK/all" "ok a" "ok b" "ok c" "ok d # SKIP no e" "ok h" \
	"not ok i" "ok j" "ok k"
ktap_check "exit 4 after ok lines: one skip line with the program's reason" \
	has "$WORK/all" "ok oks_then_skips # SKIP no f"
ktap_check "exit 4 alone: one skip line with its reason" \
	has "$WORK/all" "ok skips # SKIP no g"
ktap_check "exit 4 without a reason: the status is the reason" \
	has "$WORK/all" "ok skips_silently # SKIP exit status 4"
ktap_check "exit 4 after a not ok: a skip line as well" \
	has "$WORK/all" "ok fails_then_skips # SKIP exit status 4"
ktap_check "a crash without not ok: the runner reports it" \
	has "$WORK/all" "not ok crashes: exited with status 3"
ktap_check "a program past its time: the runner reports it" \
	has "$WORK/all" "not ok hangs: timed out after 2s"
ktap_check "every program: a kernel log line" \
	test "$(grep -c ': kernel log clean$' "$WORK/all")" -eq 7
# As tools/check counts: a, b, c, h, j, k, seven kernel log lines and the
# module's unload passed; d and four skip lines skipped; i, crashes and
# hangs failed.
ktap_check "totals: 14 passed, 5 skipped, 3 failed" \
	test "$(grep '^ok ' "$WORK/all" | grep -cv '# SKIP')" -eq 14 \
	-a "$(grep '^ok ' "$WORK/all" | grep -c '# SKIP')" -eq 5 \
	-a "$(grep -c '^not ok' "$WORK/all")" -eq 3
ktap_check "the run fails (exit 1)" test "$st" -eq "$KSFT_FAIL"

runs "$WORK/skips" passes oks_then_skips skips skips_silently
ktap_check "skips alone do not fail the run" test "$st" -eq "$KSFT_PASS"
runs "$WORK/fails" passes fails_then_skips
ktap_check "a not ok before exit 4 fails the run" test "$st" -eq "$KSFT_FAIL"
ktap_finish
