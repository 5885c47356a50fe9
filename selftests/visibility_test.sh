#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What one user sees of another's sockets: that they exist and whose they
# are (inode, uid), as for TCP sockets, but not their communicators,
# rounds or counters, in /proc/net/optireduce and over netlink (sock show,
# comm show); nor their round events (monitor), which need CAP_NET_ADMIN.
# Its own sockets a user sees whole; root sees everything.
. "$(dirname "$0")/lib.sh"
require_root
TOOL=${OPTIREDUCE_TOOL:-$REPO_DIR/tools/optireduce/optireduce}
require_built "$TOOL"
optr_load || { ktap_fail "module loads"; ktap_finish; }

WORK=$(mktemp -d)
chmod 1777 "$WORK"
# nobody may not reach the build tree: a copy it can run.
cp "$TOOL" "$WORK/optireduce"
PIDS=()
cleanup() {
	kill "${PIDS[@]}" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# hold COMM READY: one socket joined to COMM as rank 0, held for 60 s.
HOLD='
import socket, struct, sys, time
fam, sol, comm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
peer = struct.pack("=HHI16s", socket.AF_INET, 0, 0, socket.inet_aton("127.0.0.1"))
s = socket.socket(fam, socket.SOCK_DGRAM, 0)
s.setsockopt(sol, 2, struct.pack("=IIII24sII32s", comm, 0, 2, 0, bytes(24),
                                 0, 0, bytes(32)) + peer * 2)
open(sys.argv[4], "w").close()
time.sleep(60)'
SOL=$(cat "$PARAMS/sol")
python3 -c "$HOLD" "$(optr_family)" "$SOL" 4242 "$WORK/root.ready" &
PIDS+=($!)
nobody python3 -c "$HOLD" "$(optr_family)" "$SOL" 4343 "$WORK/nobody.ready" &
PIDS+=($!)
busywait 20000 test -e "$WORK/root.ready" -a -e "$WORK/nobody.ready" ||
	{ ktap_fail "sockets joined"; ktap_finish; }

# /proc: nobody's line of root's socket has no communicator; its own has.
nobody cat /proc/net/optireduce >"$WORK/proc.nobody"
cat /proc/net/optireduce >"$WORK/proc.root"
ktap_check "/proc as nobody: root's socket listed with its owner" \
	grep -q "^sock ino [0-9]* uid 0$" "$WORK/proc.nobody"
ktap_check "/proc as nobody: root's communicator not shown" \
	test "$(grep -c ' comm 4242 ' "$WORK/proc.nobody")" -eq 0
ktap_check "/proc as nobody: its own communicator shown" \
	grep -q "uid 65534 comm 4343 rank 0 nranks 2" "$WORK/proc.nobody"
ktap_check "/proc as root: both communicators shown" \
	test "$(grep -c ' comm 4[23]4[23] ' "$WORK/proc.root")" -eq 2

# Netlink: the same split in sock show and comm show.
nobody "$WORK/optireduce" -j -s sock show >"$WORK/sock.nobody"
nobody "$WORK/optireduce" -j comm show >"$WORK/comm.nobody"
"$TOOL" -j comm show >"$WORK/comm.root"
ktap_check "sock show as nobody: root's socket without details, its own with" \
	python3 -c '
import json, sys
socks = json.load(open(sys.argv[1]))
root = [s for s in socks if s["uid"] == 0]
mine = [s for s in socks if s["uid"] == 65534]
assert root and all(set(s) == {"inode", "uid"} for s in root), root
assert len(mine) == 1 and mine[0]["comm"] == 4343 and "stats" in mine[0], mine
' "$WORK/sock.nobody"
ktap_check "comm show as nobody: only its own communicator" \
	python3 -c '
import json, sys
assert [c["comm"] for c in json.load(open(sys.argv[1]))] == [4343]
' "$WORK/comm.nobody"
ktap_check "comm show as root: both communicators" \
	python3 -c '
import json, sys
assert {c["comm"] for c in json.load(open(sys.argv[1]))} >= {4242, 4343}
' "$WORK/comm.root"

# Events: nobody cannot subscribe; root can.
nobody "$WORK/optireduce" monitor -c 1 --timeout 2 >"$WORK/mon.out" 2>"$WORK/mon.err"
st=$?
ktap_check "monitor as nobody: refused (exit $st)" \
	test "$st" -ne 0 -a ! -s "$WORK/mon.out"
ktap_check "monitor as nobody: says why" \
	grep -qi "not permitted" "$WORK/mon.err"
"$TOOL" monitor -c 1 --timeout 1 >"$WORK/mon.root" 2>&1
st=$?
ktap_check "monitor as root: subscribes (no event within 1 s: exit $st)" \
	test "$st" -eq 1 -a "$(grep -ci 'joining the events group' "$WORK/mon.root")" -eq 0
ktap_finish
