#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# optireduce(8), the tool of the module's generic netlink family, against
# live state:
#   - without the module: one line saying how to load it, exit 1;
#   - bad command lines: usage on stderr, exit 2; help at every level;
#   - param show (text, -j, -p) equals sysfs, ranges equal the module's own
#     parameter descriptions; param set takes every tunable's range and
#     refuses out of range, crossed deadline bounds, garbage numbers,
#     unknown and read-only names, leaving the value unchanged;
#   - namespace A: idle ranks of two communicators (one multicast, one with
#     its own pace), 100 sockets joined to 100 more communicators and 20
#     unjoined ones (dumps longer than one message): sock show (-s, -j, -p)
#     and comm show agree with /proc/net/optireduce socket by socket,
#     stats show with its "net" lines; a non-root user reads the counters
#     and parameters, sees root's sockets only as inode and owner and none
#     of its communicators (visibility_test.sh has the rest), and
#     param set and stats reset are refused and change nothing (param
#     set also for the root of a user namespace: tunables are global);
#     stats reset zeroes the namespace's and its sockets' counters;
#   - monitor: the rounds of ranks whose peer never joined expire (text
#     and JSON monitors as root, in namespace A), and in
#     namespace B every datagram is delayed past the deadline by netem
#     (pretty JSON); a monitor in another namespace sees none of it;
#   - the bash completion offers objects, commands and parameter names.
#
# TCG guests are slow (~150 ms per process): checks of JSON are batched
# into a few python runs.
. "$(dirname "$0")/lib.sh"
require_root

TOOL=${OPTIREDUCE_TOOL:-$REPO_DIR/tools/optireduce/optireduce}
COMPLETION=$REPO_DIR/tools/optireduce/optireduce.bash-completion
PEER=$SELFTESTS_DIR/optr_peer
require_built "$TOOL" "$PEER"

# The distribution's interpreter: a version manager's shim in PATH may
# cost tens of seconds per start under TCG.
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3

WORK=$(mktemp -d /tmp/optr-tool-XXXXXX)
chmod 755 "$WORK"
# What runs as another user runs from here: that user may not enter the
# checkout (a clone in root's home, mode 700).
NOBODY_TOOL=$WORK/optireduce
cp "$TOOL" "$NOBODY_TOOL"
OUT=$WORK/out
ERR=$WORK/err
PIDS=()

cleanup() {
	local p

	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	cleanup_ns
	rm -rf "$WORK"
}
trap cleanup EXIT

nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# run ARGS...: the tool, stdout in $OUT, stderr in $ERR, status in $RC.
run() {
	"$TOOL" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}
run_nobody() {
	nobody "$NOBODY_TOOL" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# show_run: what the last run printed, as KTAP comments.
show_run() {
	echo "# exit status $RC"
	head -n 5 "$OUT" | sed 's/^/# stdout: /'
	head -n 5 "$ERR" | sed 's/^/# stderr: /'
}

# expect NAME STATUS [STDERR_ERE]: the last run exited STATUS and, if
# given, its stderr matches STDERR_ERE.
expect() {
	if [ "$RC" -eq "$2" ] && { [ -z "${3:-}" ] || grep -Eq -- "$3" "$ERR"; }; then
		ktap_ok "$1"
	else
		ktap_fail "$1"
		show_run
	fi
}

# py_check MODE ARGS...: run check.py (below); its "ok"/"not ok" lines
# become this script's results.
py_check() {
	local line

	while IFS= read -r line; do
		case $line in
		"ok "*) ktap_ok "${line#ok }" ;;
		"not ok "*) ktap_fail "${line#not ok }" ;;
		*) echo "$line" ;;
		esac
	done < <("$PYTHON" "$WORK/check.py" "$@" 2>&1 ||
		 echo "not ok check.py $1: exit status $?")
}

cat >"$WORK/check.py" <<'EOF'
import json, os, re, sys

PARAMS = "/sys/module/optireduce/parameters"
FIXED = {"family", "sol", "port"}
STATS = ("rounds_opened rounds_completed rounds_expired rounds_early "
         "rounds_cancelled tx_packets tx_bytes tx_dropped rx_packets "
         "rx_bytes rx_duplicate drop_malformed drop_unknown_comm "
         "drop_foreign_source drop_stale_round drop_no_post "
         "drop_out_of_bounds bytes_lost backlog_queued drop_nomem rx_gso_batches "
         "rx_steered drop_mem_limit drop_auth").split()

def check(name, cond, why=""):
    print(("ok " if cond else "not ok ") + name)
    if not cond and why:
        for l in str(why).splitlines()[:10]:
            print("# " + l)

def load(path):
    with open(path) as f:
        return json.load(f)

def load_stream(path):
    """Every JSON document of a file (monitor: one per event)."""
    text, docs, dec, i = open(path).read(), [], json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)

def proc(path):
    """/proc/net/optireduce: sockets N, net counters, sock lines."""
    net, socks, n = {}, [], None
    for line in open(path):
        w = line.split()
        if w[0] == "sockets":
            n = int(w[1])
        elif w[0] == "net":
            net[w[1]] = int(w[2])
        elif w[0] == "sock":
            socks.append({w[i]: int(w[i + 1]) for i in range(1, len(w), 2)})
    return n, net, socks

def sysfs(name):
    return int(open(os.path.join(PARAMS, name)).read())

def mode_params(js, pretty, modinfo):
    """param show -j / -p against sysfs and the module's descriptions."""
    try:
        got, one = load(js), load(pretty)
    except ValueError as e:
        check("param show -j parses", False, e)
        return
    check("param show -j parses", isinstance(got, list))
    names = {p["name"] for p in got}
    check("param show -j lists every sysfs parameter",
          names == set(os.listdir(PARAMS)), names ^ set(os.listdir(PARAMS)))
    bad = [p for p in got if p["value"] != sysfs(p["name"])]
    check("param show -j values equal sysfs", not bad, bad)
    bad = [p for p in got if p["writable"] != (p["name"] not in FIXED) or
           p["writable"] != bool(os.stat(os.path.join(PARAMS, p["name"])).st_mode & 0o200)]
    check("param show -j: writable exactly the 0644 tunables", not bad, bad)
    ranges = {}
    for line in open(modinfo):
        m = re.match(r"(\w+):.*\[(\d+)\.\.(\d+), default (\d+)\]", line)
        if m:
            ranges[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    bad = [p for p in got if p["writable"] and
           ranges.get(p["name"]) != (p["min"], p["max"])]
    bad += [p for p in got if not p["writable"] and
            not p["min"] == p["max"] == p["value"]]
    check("param show -j: min/max as the module describes them",
          not bad and len(ranges) == len(names - FIXED), (bad, ranges))
    check("param show -p NAME: one pretty entry",
          len(one) == 1 and one[0]["name"] == "deadline_pctl" and
          one[0]["value"] == sysfs("deadline_pctl") and
          open(pretty).read().count("\n") > 3, one)

def mode_live(procfile, socks_js, socks_pretty, comm_js, pace_default,
              mcast_comm, group, paced_comm, pace):
    """sock show -j -s and comm show -j against /proc/net/optireduce."""
    pace_default, mcast_comm = int(pace_default), int(mcast_comm)
    paced_comm, pace = int(paced_comm), int(pace)
    n, net, psocks = proc(procfile)
    try:
        socks, comms = load(socks_js), load(comm_js)
        pretty = load(socks_pretty)
    except ValueError as e:
        check("sock/comm show -j parse", False, e)
        return
    check("sock show -j: as many sockets as /proc 'sockets'",
          len(socks) == n, "%d vs %d" % (len(socks), n))
    check("sock show -p parses to the same sockets",
          sorted(s["inode"] for s in pretty) == sorted(s["inode"] for s in socks))
    byino = {s["ino"]: s for s in psocks}
    bad = []
    for s in socks:
        p = byino.get(s["inode"])
        if p is None:
            bad.append(("not in /proc", s))
            continue
        # /proc leaves rounds and completions out for unjoined sockets.
        keys = ("uid", "comm", "rank", "nranks") + \
               (("rounds", "completions") if "comm" in p else ())
        for k in keys:
            if (k in p) != (k in s) or p.get(k) != s.get(k):
                bad.append((k, s, p))
        if "comm" not in p and (s.get("rounds"), s.get("completions")) != (0, 0):
            bad.append(("unjoined with rounds", s))
    check("sock show -j: every socket as /proc shows it", not bad, bad[:3])
    joined = [s for s in socks if "comm" in s]
    bad = [s for s in joined if set(s.get("stats", {})) != set(STATS) or
           set(s.get("estimate", {})) != {"deadline_us", "typical_us", "samples"}]
    bad += [s for s in socks if "comm" not in s and set(s.get("stats", {})) != set(STATS)]
    check("sock show -s -j: every counter, estimate of joined sockets",
          joined and not bad, bad[:2])
    bad = [s for s in socks if s["pace_mbps"] !=
           (pace if s.get("comm") == paced_comm else pace_default)]
    check("sock show -j: pace of the socket, else the module default",
          not bad, bad[:2])
    bad = [s for s in socks if s.get("group") !=
           (group if s.get("comm") == mcast_comm else None)]
    check("sock show -j: multicast group of the joined socket", not bad,
          bad[:2])
    for k in ("rounds_opened", "rounds_expired", "bytes_lost"):
        tot = sum(s["stats"][k] for s in socks)
        check("sock show -s -j: sockets' %s add up to the namespace's" % k,
              tot == net[k] and tot > 0, "%d vs %d" % (tot, net[k]))
    want = {}
    for s in psocks:
        if "comm" in s:
            c = want.setdefault(s["comm"], {"nranks": s["nranks"], "members": []})
            c["members"].append(s["rank"])
    got = {c["comm"]: {"nranks": c["nranks"], "members": sorted(c["members"])}
           for c in comms}
    for c in want.values():
        c["members"].sort()
    diff = [(k, got.get(k), want.get(k)) for k in set(got) | set(want)
            if got.get(k) != want.get(k)]
    check("comm show -j: every communicator with its local ranks (%d)" % len(want),
          not diff and len(comms) == len(want), diff[:3])
    bad = [c for c in comms if c.get("group") != (group if c["comm"] == mcast_comm else None)]
    check("comm show -j: multicast group", not bad, bad[:2])

def mode_stats(procfile, js, tag):
    n, net, _ = proc(procfile)
    try:
        got = load(js)
    except ValueError as e:
        check("stats show -j %s parses" % tag, False, e)
        return
    check("stats show -j %s equals /proc 'net' lines" % tag,
          got == net and set(got) == set(STATS), (got, net))

def mode_zero(procfile, socks_js):
    n, net, _ = proc(procfile)
    socks = load(socks_js)
    check("after stats reset: namespace counters zero",
          set(net.values()) == {0}, net)
    bad = [s for s in socks if set(s["stats"].values()) != {0}]
    check("after stats reset: every socket's counters zero (%d sockets)" % len(socks),
          socks and not bad, bad[:2])

def mode_events(path, tag, *want):
    """want: EVENT:COMM:RANK:ROUND:LOST_MIN:LOST_MAX:EXPECTED, each once."""
    try:
        evs = load_stream(path)
    except ValueError as e:
        check("monitor %s: JSON parses" % tag, False, e)
        return
    exp = []
    for w in want:
        e, c, r, rd, lo, hi, x = w.split(":")
        exp.append((e, int(c), int(r), int(rd), int(lo), int(hi), int(x)))
    got = sorted((e["event"], e["comm"], e["rank"], e["round"]) for e in evs)
    check("monitor %s: one event per expected (event, comm, rank, round)" % tag,
          got == sorted(x[:4] for x in exp), got)
    bad = []
    for e in evs:
        for x in exp:
            if (e["event"], e["comm"], e["rank"], e["round"]) == x[:4] and \
               not (x[4] <= e["lost"] <= x[5] and e["expected"] == x[6]):
                bad.append((e, x))
    check("monitor %s: lost and expected bytes" % tag, not bad, bad)

globals()["mode_" + sys.argv[1]](*sys.argv[2:])
EOF

# ---- without the module --------------------------------------------------

if optr_unload; then
	for args in "param show" "sock show" "-j stats show" "monitor -c 1"; do
		# shellcheck disable=SC2086 # several words
		run $args
		if [ "$RC" -eq 1 ] && [ ! -s "$OUT" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
			grep -q "module is not loaded.*insmod optireduce.ko" "$ERR"; then
			ktap_ok "no module: '$args' says how to load it in one line, exit 1"
		else
			ktap_fail "no module: '$args' says how to load it in one line, exit 1"
			show_run
		fi
	done
else
	ktap_skip "no module: one-line message" "the module is in use"
fi
optr_load || { ktap_fail "module loads"; ktap_finish; }

# ---- command line --------------------------------------------------------
echo "# ${SECONDS}s: command line"

while IFS= read -r args; do
	# shellcheck disable=SC2086 # several words, "" is an empty argument
	eval run $args
	if [ "$RC" -eq 2 ] && [ ! -s "$OUT" ] && grep -q '^Usage:' "$ERR"; then
		ktap_ok "bad command line: optireduce $args: usage, exit 2"
	else
		ktap_fail "bad command line: optireduce $args: usage, exit 2"
		show_run
	fi
done <<'EOF'

bogus
s
sock bogus
sock show extra
-x sock show
--bogus
-n
stats show extra
param set deadline_pctl
param set deadline_pctl 1 2
param show a b
monitor -c 0
monitor --count abc
monitor --timeout -1
monitor --timeout
monitor extra
help extra
EOF

ok=1
for args in "help" "-h" "sock help" "comm help" "stats help" "param help" \
	    "monitor help" "param -h" "monitor --help" "param set help"; do
	# shellcheck disable=SC2086
	run $args
	if [ "$RC" -ne 0 ] || ! grep -q '^Usage:' "$OUT" || [ -s "$ERR" ]; then
		echo "# optireduce $args:"
		show_run
		ok=0
	fi
done
ktap_check "help at every level: usage on stdout, exit 0" test $ok -eq 1
run param help
ktap_check "param help names both commands" \
	grep -q 'param set NAME VALUE' "$OUT"
run -V
version=$(sed -n 's/^VERSION *:= *//p' "$REPO_DIR/lib/Makefile")
ktap_check "-V prints version $version" grep -q "^optireduce $version " "$OUT"
run -n no-such-netns-$$ sock show
expect "-n with an unknown namespace: exit 1" 1 "no-such-netns"

# ---- param ---------------------------------------------------------------
echo "# ${SECONDS}s: param"

declare -A VAL MIN MAX MODE
run param show
ok=1
while read -r name value rest; do
	VAL[$name]=$value
	read -r cur <"$PARAMS/$name" || { ok=0; echo "# $name: no sysfs file"; continue; }
	[ "$cur" = "$value" ] || { ok=0; echo "# $name: $value, sysfs $cur"; }
	if [ "$rest" = ro ]; then
		MODE[$name]=ro
	else
		# shellcheck disable=SC2086
		set -- $rest
		MIN[$name]=$2
		MAX[$name]=$4
		MODE[$name]=$5
	fi
done <"$OUT"
[ "${#VAL[@]}" -eq "$(find "$PARAMS" -mindepth 1 | wc -l)" ] ||
	{ ok=0; echo "# ${#VAL[@]} parameters listed"; }
ktap_check "param show: every parameter, value equals sysfs" test $ok -eq 1 -a "$RC" -eq 0
ktap_check "param show: family, sol, port read-only, the rest rw" \
	test "${MODE[family]}${MODE[sol]}${MODE[port]}" = rororo -a \
	"$(printf '%s\n' "${MODE[@]}" | grep -c rw)" -eq $((${#VAL[@]} - 3))
TUNABLES=$(for n in "${!MODE[@]}"; do [ "${MODE[$n]}" = rw ] && echo "$n"; done | sort)

"$TOOL" -j param show >"$WORK/params.json"
"$TOOL" -p param show deadline_pctl >"$WORK/param1.json"
modinfo -F parm "$OPTIREDUCE_KO" >"$WORK/modinfo"
py_check params "$WORK/params.json" "$WORK/param1.json" "$WORK/modinfo"

run param show nonesuch
expect "param show nonesuch: no such parameter, exit 1" 1 "no such parameter"

# set_refused NAME VALUE STATUS ERE: the tool refuses, the value stays.
set_refused() {
	local before after

	read -r before <"$PARAMS/$1"
	run param set "$1" "$2"
	read -r after <"$PARAMS/$1"
	if [ "$RC" -ne "$3" ] || [ "$before" != "$after" ] ||
		! grep -Eq -- "$4" "$ERR"; then
		echo "# param set $1 '$2': $before -> $after"
		show_run
		return 1
	fi
}

# set_ok NAME VALUE: the tool sets it and sysfs reads it back.
set_ok() {
	local after

	run param set "$1" "$2"
	read -r after <"$PARAMS/$1"
	if [ "$RC" -ne 0 ] || [ "$after" != "$(($2))" ]; then
		echo "# param set $1 $2: now $after"
		show_run
		return 1
	fi
}

for name in $TUNABLES; do
	min=${MIN[$name]} max=${MAX[$name]} def=${VAL[$name]}
	ok=1
	case $name in
	deadline_min_us) set_ok "$name" "$min" || ok=0 ;;	# max: above deadline_max_us
	deadline_max_us) set_ok "$name" "$max" || ok=0 ;;
	rate_min_mbps) set_ok "$name" "$min" || ok=0 ;;	# max: above rate_max_mbps
	rate_max_mbps) set_ok "$name" "$max" || ok=0 ;;
	*) { set_ok "$name" "$min" && set_ok "$name" "$max"; } || ok=0 ;;
	esac
	set_ok "$name" "$def" || ok=0
	ktap_check "param set $name: in range taken, default restored" test $ok -eq 1
	ok=1
	set_refused "$name" $((max + 1)) 1 "value out of range" || ok=0
	if [ "$min" -gt 0 ]; then
		set_refused "$name" $((min - 1)) 1 "value out of range" || ok=0
	fi
	ktap_check "param set $name: out of range refused (exit 1, extack), unchanged" \
		test $ok -eq 1
done

ok=1
for v in abc -1 "" 1.5 0x " 5" "5 " +5 4294967296 99999999999999999999; do
	set_refused deadline_pctl "$v" 2 '^Usage:' || ok=0
done
ktap_check "param set: garbage numbers are usage errors, value unchanged" test $ok -eq 1
ktap_check "param set deadline_pctl 0x5a (hexadecimal, as sysfs)" set_ok deadline_pctl 0x5a
set_ok deadline_pctl "${VAL[deadline_pctl]}"

set_ok deadline_min_us 5000
ktap_check "param set deadline_max_us below deadline_min_us refused" \
	set_refused deadline_max_us 4000 1 "Invalid argument"
set_ok deadline_min_us "${VAL[deadline_min_us]}"

run param set nonesuch 5
expect "param set nonesuch 5: no such parameter, exit 1" 1 "no such parameter"
run param set "$(printf 'x%.0s' {1..100})" 5
expect "param set with a 100-character name: refused, exit 1" 1 "."
for ro in family sol port; do
	ktap_check "param set $ro: fixed at load time, exit 1, unchanged" \
		set_refused "$ro" $((VAL[$ro] + 1)) 1 "fixed at load time"
done

# ---- live state in namespace A ------------------------------------------
echo "# ${SECONDS}s: live state in namespace A"

setup_ns A B
ip -n "$A" -batch - <<EOF
link add d0 type dummy
link set d0 up multicast on
addr add 10.9.0.1/24 dev d0
EOF
SIZE=1000
MCAST_COMM=9
GROUP=239.1.2.3
PACE=123

# subscribed PID: its generic netlink socket joined a group (the group's
# bit shows in /proc/net/netlink while its id is below 32).
subscribed() {
	awk -v p="$1" '$2 == 16 && $3 == p && $4 != "00000000" { f = 1 }
		END { exit !f }' "/proc/$1/net/netlink" 2>/dev/null
}
# start_monitor OUTFILE CMD...: CMD in the background, until it listens.
start_monitor() {
	local out=$1

	shift
	"$@" >"$out" 2>"$out.err" &
	MON_PID=$!
	PIDS+=("$MON_PID")
	busywait 5000 subscribed "$MON_PID" ||
		echo "# monitor $MON_PID: subscription not seen, going on"
}
# wait_monitor PID: its exit status (killed after 30 s).
wait_monitor() {
	local i

	for ((i = 0; i < 300; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill "$1" 2>/dev/null
	wait "$1"
}

start_monitor "$WORK/monA.txt" ip netns exec "$A" "$TOOL" monitor -c 6 --timeout 30
MON_TEXT=$MON_PID
start_monitor "$WORK/monA.json" ip netns exec "$A" \
	"$TOOL" -j monitor --count 6 --timeout 30
MON_JSON=$MON_PID

# Ranks 0 and 2 of communicator 7 (rank 1 never joins), rank 1 of the
# multicast communicator 9 (rank 0 never joins): round 1 expires after
# 300 ms, then they wait before round 2 for a file that never comes.
peer_a() {
	ip netns exec "$A" "$PEER" --comm "$1" --rank "$2" --peers "$3" \
		--size $SIZE --rounds 2 --deadline-us 300000 --expect-loss \
		--go-file "$WORK/never" --go-round 2 "${@:4}" \
		>"$WORK/peer.$1.$2" 2>&1 &
	PIDS+=($!)
}
peer_a 7 0 10.9.0.1,10.9.0.1,10.9.0.1
peer_a 7 2 10.9.0.1,10.9.0.1,10.9.0.1
peer_a $MCAST_COMM 1 10.9.0.1,10.9.0.1 --mcast $GROUP --dev d0 --pace $PACE
# 20 unjoined sockets, 100 joined to communicators 1000..1099.
ip netns exec "$A" "$PYTHON" -c '
import socket, struct, sys, time
fam, sol = int(sys.argv[1]), int(sys.argv[2])
OPTIREDUCE_JOIN = 2
keep = [socket.socket(fam, socket.SOCK_DGRAM, 0) for _ in range(20)]
peer = struct.pack("=HHI16s", socket.AF_INET, 0, 0, socket.inet_aton("127.0.0.1"))
for i in range(100):
    s = socket.socket(fam, socket.SOCK_DGRAM, 0)
    s.setsockopt(sol, OPTIREDUCE_JOIN,
                 struct.pack("=IIII24sII32s", 1000 + i, 0, 2, 0, bytes(24), 0, 0, bytes(32)) + peer * 2)
    keep.append(s)
open(sys.argv[3], "w").close()
time.sleep(600)' "$(optr_family)" "$(cat "$PARAMS/sol")" "$WORK/py.ready" &
PY_PID=$!
PIDS+=("$PY_PID")

wait_monitor "$MON_TEXT"
st_text=$?
wait_monitor "$MON_JSON"
st_json=$?
echo "# ${SECONDS}s: monitors done"
busywait 20000 test -e "$WORK/py.ready" || { echo "# python sockets not ready"; ls -la "$WORK"; }
echo "# ${SECONDS}s: python ready"

# Text: "EVENT comm C rank R round N lost L expected E", six lines.
ok=1
for want in "round_expired 7 0 1000 2000" "round_expired 7 2 1000 2000" \
	    "round_expired $MCAST_COMM 1 1000 1000" "loss_alarm 7 0 1000 2000" \
	    "loss_alarm 7 2 1000 2000" "loss_alarm $MCAST_COMM 1 1000 1000"; do
	read -r ev c r lo x <<<"$want"
	awk -v e="$ev" -v c="$c" -v r="$r" -v lo="$lo" -v x="$x" '
		$1 == e && $3 == c && $5 == r && $7 == 1 && $9 >= lo && $9 <= x &&
		$11 == x { n++ } END { exit n != 1 }' "$WORK/monA.txt" ||
		{ ok=0; echo "# no line '$want'"; }
done
[ "$(wc -l <"$WORK/monA.txt")" -eq 6 ] || ok=0
ktap_check "monitor -c 6 (text): round_expired and loss_alarm of each rank, round 1" \
	test $ok -eq 1 -a "$st_text" -eq 0
[ $ok -eq 1 ] || sed 's/^/# monitor: /' "$WORK/monA.txt" "$WORK/monA.txt.err"
ktap_check "monitor -j: exit 0 after 6 events" test "$st_json" -eq 0
py_check events "$WORK/monA.json" "-j" \
	round_expired:7:0:1:1000:2000:2000 round_expired:7:2:1:1000:2000:2000 \
	round_expired:$MCAST_COMM:1:1:1000:1000:1000 \
	loss_alarm:7:0:1:1000:2000:2000 loss_alarm:7:2:1:1000:2000:2000 \
	loss_alarm:$MCAST_COMM:1:1:1000:1000:1000

# Every rank now waits before round 2: nothing moves while we look.
PROC_A=/proc/$PY_PID/net/optireduce
cp "$PROC_A" "$WORK/procA"
run -n "$A" sock show
# Text lines are /proc's plus the group, pace, and "unjoined" with the
# open rounds and queued completions /proc leaves out of such sockets.
sed -e 's/ group [^ ]*//' -e 's/ pace [^ ]*$//' \
	-e 's/ unjoined rounds [0-9]* completions [0-9]*$//' "$OUT" | sort >"$WORK/sockA.txt"
grep '^sock ' "$WORK/procA" | sort >"$WORK/procA.sock"
ktap_check "sock show (text): one line per socket, as /proc shows it ($(wc -l <"$WORK/procA.sock"))" \
	cmp -s "$WORK/sockA.txt" "$WORK/procA.sock"
cmp -s "$WORK/sockA.txt" "$WORK/procA.sock" ||
	diff "$WORK/procA.sock" "$WORK/sockA.txt" | head -n 6 | sed 's/^/# /'
ktap_check "sock show (text): group and pace of the multicast rank" \
	grep -q "comm $MCAST_COMM rank 1 nranks 2 group $GROUP rounds 0 completions 0 pace ${PACE}Mbit\$" "$OUT"
run -n "$A" -s sock show
ktap_check "sock show -s (text): estimate and counters of every joined socket" \
	test "$(grep -c '^    estimate deadline [0-9]*us typical [0-9]*us samples [0-9]*$' "$OUT")" -eq 103 \
	-a "$(grep -c '^    rounds  opened' "$OUT")" -eq 123
run -n "$A" comm show
ktap_check "comm show (text): communicator 7 with ranks 0 and 2" \
	grep -Eq '^comm 7 nranks 3 members (0 2|2 0)$' "$OUT"
ktap_check "comm show (text): communicator $MCAST_COMM with its group" \
	grep -q "^comm $MCAST_COMM nranks 2 group $GROUP members 1\$" "$OUT"
ktap_check "comm show (text): 102 communicators" test "$(wc -l <"$OUT")" -eq 102

"$TOOL" -n "$A" -j -s sock show >"$WORK/socks.json"
"$TOOL" -n "$A" -p -s sock show >"$WORK/socks.pretty"
"$TOOL" -n "$A" -j comm show >"$WORK/comms.json"
"$TOOL" -n "$A" -j stats show >"$WORK/statsA.json"
py_check live "$WORK/procA" "$WORK/socks.json" "$WORK/socks.pretty" \
	"$WORK/comms.json" "$(cat "$PARAMS/pace_mbps")" $MCAST_COMM $GROUP \
	$MCAST_COMM $PACE
py_check stats "$WORK/procA" "$WORK/statsA.json" "(namespace A)"

run -n "$A" stats show
awk '{ for (i = 2; i < NF; i += 2) print "net " $1 "_" $i " " $(i + 1) }' "$OUT" |
	sort >"$WORK/statsA.txt"
grep '^net ' "$WORK/procA" | sort >"$WORK/procA.net"
ktap_check "stats show (text): GROUP LABEL VALUE equals /proc 'net' lines" \
	cmp -s "$WORK/statsA.txt" "$WORK/procA.net"
ktap_check "stats show: counters moved (rounds expired)" \
	grep -q '^net rounds_expired 3$' "$WORK/procA.net"

# The init namespace sees none of A's sockets.
"$TOOL" -j sock show >"$WORK/socks0.json"
n0=$(awk '$1 == "sockets" { print $2 }' /proc/net/optireduce)
ktap_check "sock show -j in the init namespace: its own $n0 sockets only" \
	"$PYTHON" -c 'import json, sys; sys.exit(len(json.load(open(sys.argv[1]))) != int(sys.argv[2]))' \
	"$WORK/socks0.json" "$n0"

# A non-root user reads the counters and parameters as root does, root's
# sockets as inode and owner alone and none of root's communicators, and
# changes nothing.
ok=1
for args in "sock show" "-s sock show" "comm show" "stats show" "param show"; do
	# shellcheck disable=SC2086
	ip netns exec "$A" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$NOBODY_TOOL" $args >"$OUT" 2>"$ERR"
	RC=$?
	# shellcheck disable=SC2086
	"$TOOL" -n "$A" $args >"$WORK/root.out"
	case $args in
	*"sock show")
		# Every socket of A is root's: one bare line each, no counters.
		sed -n 's/^\(sock ino [0-9]* uid 0\).*/\1/p' "$WORK/root.out" >"$WORK/root.bare"
		same() { cmp -s "$OUT" "$WORK/root.bare"; } ;;
	"comm show")
		same() { [ ! -s "$OUT" ]; } ;;
	*)
		same() { cmp -s "$OUT" "$WORK/root.out"; } ;;
	esac
	if [ "$RC" -ne 0 ] || ! same; then
		ok=0
		echo "# nobody: $args"
		show_run
	fi
done
ktap_check "non-root: stats, param show as for root; root's sockets bare, its communicators hidden" \
	test $ok -eq 1
run_nobody param set deadline_pctl 60
read -r after <"$PARAMS/deadline_pctl"
expect "non-root: param set refused (EPERM, exit 1)" 1 "Operation not permitted"
ktap_check "non-root: param set left the value" test "$after" = "${VAL[deadline_pctl]}"
ip netns exec "$A" setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$NOBODY_TOOL" stats reset >"$OUT" 2>"$ERR"
RC=$?
expect "non-root: stats reset refused (EPERM, exit 1)" 1 "Operation not permitted"
grep '^net ' "$PROC_A" | sort >"$WORK/procA.net2"
ktap_check "non-root: stats reset left the counters" \
	cmp -s "$WORK/procA.net" "$WORK/procA.net2"

# Tunables are global: the root of a user namespace may not change them.
if nobody unshare -Urn true 2>/dev/null; then
	nobody unshare -Urn "$NOBODY_TOOL" param set deadline_pctl 60 >"$OUT" 2>"$ERR"
	RC=$?
	read -r after <"$PARAMS/deadline_pctl"
	expect "user namespace root: param set refused (EPERM, exit 1)" 1 \
		"Operation not permitted"
	ktap_check "user namespace root: param set left the value" \
		test "$after" = "${VAL[deadline_pctl]}"
else
	ktap_skip "user namespace root: param set refused" \
		"no unprivileged user namespaces"
fi

# Inside a user namespace that owns its network namespace: the socket's
# owner is shown as that namespace sees it (uid 0, as /proc shows it), and
# its root may reset the namespace's own counters.
if nobody unshare -Urn true 2>/dev/null; then
	nobody unshare -Urn sh -c '
		/usr/bin/python3 -c "import socket, sys, time
s = socket.socket(int(sys.argv[1]), socket.SOCK_DGRAM, 0)
time.sleep(30)" "$1" &
		for i in $(seq 100); do
			grep -q "^sock " /proc/net/optireduce && break
			sleep 0.2
		done
		grep "^sock " /proc/net/optireduce | sed -n "s/.* uid \([0-9]*\).*/proc \1/p"
		"$2" -j sock show | /usr/bin/python3 -c "import json, sys
print(\"nl\", json.load(sys.stdin)[0][\"uid\"])"
		"$2" stats reset && echo reset-ok
		kill $!' sh "$(optr_family)" "$NOBODY_TOOL" >"$OUT" 2>"$ERR"
	ktap_check "user namespace: /proc shows the owner as uid 0" \
		grep -qx "proc 0" "$OUT"
	ktap_check "user namespace: netlink shows the same uid as /proc" \
		grep -qx "nl 0" "$OUT"
	ktap_check "user namespace root: stats reset of its own namespace" \
		grep -qx "reset-ok" "$OUT"
else
	ktap_skip "user namespace: uid and counter reset" \
		"no unprivileged user namespaces"
fi

run -n "$A" so
cp "$OUT" "$WORK/so.out"
run -n "$A" sock show
ktap_check "an object alone runs its show, abbreviated ('so')" \
	cmp -s "$OUT" "$WORK/so.out"

run -n "$A" stats reset
expect "stats reset: exit 0" 0
cp "$PROC_A" "$WORK/procA.reset"
"$TOOL" -n "$A" -j -s sock show >"$WORK/socks.reset.json"
py_check zero "$WORK/procA.reset" "$WORK/socks.reset.json"

# ---- monitor: netem delay in namespace B --------------------------------
echo "# ${SECONDS}s: monitor: netem"

tc -n "$B" qdisc add dev lo root netem delay 500ms
start_monitor "$WORK/monB.json" "$TOOL" -n "$B" -p monitor -c 4 --timeout 30
MON_B=$MON_PID
# A monitor of the init namespace: none of B's events are its business.
start_monitor "$WORK/mon0.txt" "$TOOL" monitor --timeout 6
MON_0=$MON_PID
for r in 0 1; do
	ip netns exec "$B" "$PEER" --comm 21 --rank $r --peers 127.0.0.1,127.0.0.1 \
		--size 3000 --deadline-us 200000 --expect-loss --linger-ms 0 \
		--ready-file "$WORK/b.ready.$r" --go-file "$WORK/b.go" \
		>"$WORK/peerB.$r" 2>&1 &
	PIDS+=($!)
done
busywait 20000 test -e "$WORK/b.ready.0" -a -e "$WORK/b.ready.1"
touch "$WORK/b.go"
wait_monitor "$MON_B"
ktap_check "monitor -p -c 4: exit 0" test $? -eq 0
py_check events "$WORK/monB.json" "-p (netem delay 500ms)" \
	round_expired:21:0:1:3000:3000:3000 round_expired:21:1:1:3000:3000:3000 \
	loss_alarm:21:0:1:3000:3000:3000 loss_alarm:21:1:1:3000:3000:3000
wait_monitor "$MON_0"
st=$?
ktap_check "monitor --timeout in another namespace: no events, exit 0" \
	test "$st" -eq 0 -a ! -s "$WORK/mon0.txt"
run -n "$B" monitor -c 1 --timeout 0.5
expect "monitor -c 1 --timeout 0.5 without events: exit 1" 1 "timeout after 0 of 1 events"

# ---- bash completion -----------------------------------------------------
echo "# ${SECONDS}s: bash completion"

# complete WORDS...: COMPREPLY for the last word, one line.
complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	_optireduce
	echo "${COMPREPLY[*]}"
}
# shellcheck source=../tools/optireduce/optireduce.bash-completion
. "$COMPLETION"
ktap_check "completion: objects" \
	test "$(complete_words optireduce "")" = "sock comm stats param monitor help"
ktap_check "completion: stats commands" \
	test "$(complete_words optireduce -j stats "")" = "show reset help"
c=$(complete_words optireduce param set "")
ktap_check "completion: param set offers the tunables, not family" \
	test "$(echo "$c" | wc -w)" -eq "$(echo "$TUNABLES" | wc -w)" -a \
	"${c/deadline_pctl/}" != "$c" -a "${c/family/}" = "$c"
c=$(complete_words optireduce par show f)
ktap_check "completion: param show f -> family" test "$c" = family

echo "# ${SECONDS}s: done"
ktap_finish
