#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Datagrams the transport must refuse, sent with UDP sockets (raw ones
# where they send from the module's port, as members do) to the port of a
# member while it waits in a round: every one must land in the
# right counter of /proc/net/optireduce (and of the socket, where one is
# to blame), none may touch the posted buffer, and the same socket must
# then go on to complete rounds byte-exact.
#
# Three hosts on a bridge (lib.sh setup_bridge): host 1 runs rank 1 of a
# two-rank communicator (optr_peer, the "victim"), host 0 has rank 0's
# address, host 2 is a stranger. One python process (python starts in
# ~7 s under TCG, so only one) sends from both host 0 and host 2:
#   from the stranger: bad version, truncated headers, a header without
#     payload, bad flags, MCAST/destination mismatch, zero and oversize
#     totals, rank ids beyond the wire limit, offset/length out of range,
#     inconsistent LAST, an unknown communicator, a member communicator
#     (foreign source), a rank beyond the communicator, a destination rank
#     beyond it, an IP-fragmented out-of-bounds datagram, a few hundred
#     random packets whose expected counter python derives from its own
#     model of the header rules (wire.c, receive.c), and a UDP GSO batch
#     of bad datagrams, the last one truncated;
#   from rank 0's address: a stale round, a sealed round's unposted message
#     (drop_no_post), a wrong message length (out of bounds), a source
#     rank beyond the communicator, a well-formed fragment from another
#     source port than the module's (foreign source),
#     "from" the victim's own rank, to another rank; and finally rank 0's
#     real 4000-byte message of the round as two overlapping pieces, the
#     second one IP-fragmented, which must be placed byte-exact, and the
#     first piece again once the post completed (stale);
#   then, for the victim's next round, rank 0's 64 KiB message as ~50
#     pieces of random bounds overlapping their neighbours, in random
#     order, a few of them left out: the round must end early with
#     exactly the uncovered bytes reported missing (python computes them)
#     and every covered byte right (optr_peer checks byte by byte);
#   last (senders send rounds in order), a future round's unposted
#     message, held in the backlog and dropped as no_post once that round
#     is posted.
# Then the real rank 0 starts and both run three more rounds.
# Counters become shell variables through load_counters (printf -v):
# shellcheck disable=SC2154
. "$(dirname "$0")/lib.sh"
peer_prepare malformed
PIDS=()
trap peer_cleanup EXIT

COMM=4242
# The victim's first round; its message from rank 0 is 4000 bytes.
ROUND=5
SIZE0=4000
# Its second round's message (python's pieces with holes).
SIZE1=65536

# load_counters FILE PREFIX: shell variables PREFIX_NAME from FILE.
load_counters() {
	local k v

	while read -r k v; do
		printf -v "$2_$k" '%s' "$v"
	done <"$1"
}

setup_bridge 3 || { ktap_fail "setup: bridge of 3 hosts"; ktap_finish; }
PEERS=${HOST_IP[0]},${HOST_IP[1]}

# The victim: rounds 5..9; rounds 5 and 6 are python's (60 s deadline),
# and it holds before round 7 until the real rank 0 has joined.
in_host 1 "$PEER" --comm $COMM --rank 1 --peers "$PEERS" \
	--rounds 5 --start-round $ROUND --sizes $SIZE0,$SIZE1,65536,1500,9000 \
	--deadline-us 60000000 --expect-loss --per-round \
	--ready-file "$WORK/ready1" \
	--go-file "$WORK/go" --go-round $((ROUND + 2)) \
	>"$WORK/out1" 2>&1 &
PIDS+=($!)
busywait 60000 test -e "$WORK/ready1" ||
	{ ktap_fail "victim joined"; ktap_finish; }
# Round 5 is open once it has posted (its socket line says so), and its
# own 3-fragment send to rank 0 (lost: no member there yet) is done.
victim_opened 1 3 || { ktap_fail "victim opened its round"; ktap_finish; }
net_counters 1 >"$WORK/before"

PYTHONPATH=$SELFTESTS_DIR python3 - "$WORK/expect" "/run/netns/${HOST_NS[2]}" "/run/netns/${HOST_NS[0]}" \
	"${HOST_IP[1]}" "$PORT" "$COMM" "$ROUND" "$SIZE0" "$SIZE1" \
	"$WORK/out1" <<'EOF'
import random, socket, struct, sys, time
from optr_wire import (M, LAST, MCAST, AUTH, TAG_LEN as TAG, Sock, hdr as
                       wire_hdr, pattern)

(expect_file, ns_stranger, ns_rank0, victim, port, comm, rnd,
 size0, size1, victim_out) = sys.argv[1:]
port, comm, rnd, size0, size1 = (int(port), int(comm), int(rnd), int(size0),
                                 int(size1))
VICTIM_RANK, NRANKS, MAX_RANKS, ALL = 1, 2, 1024, 0xffff

gso_sent = 0
stranger = Sock(ns_stranger, port)
rank0 = Sock(ns_rank0, port, member_port=True)
rank0_other_port = Sock(ns_rank0, port)

def hdr(version=1, flags=LAST, src=0, dst=VICTIM_RANK, comm=comm,
        round=rnd, msg=1, offset=0, total=None, plen=100):
    if total is None:
        total = offset + plen
    return wire_hdr(comm, round, msg, offset, total, src, dst, flags,
                    version)

def pkt(plen=100, **kw):
    return hdr(plen=plen, **kw) + b"\x55" * plen

# What the module must do with a datagram from a source not in the peer
# table: the counter it lands in, or None (silently ignored). from_member:
# from a member's address and the module's port.
def classify(p, from_member=False):
    if len(p) <= 36:
        return "drop_malformed"
    (ver, flags, src, dst, _, c, _, _, off, total, _, _) = \
        struct.unpack(">BBHHHIIIIIII", p[:36])
    plen = len(p) - 36
    if ver != 1 or flags & ~(LAST | MCAST | AUTH):
        return "drop_malformed"
    if flags & AUTH:            # a tag follows the payload
        if plen <= TAG:
            return "drop_malformed"
        plen -= TAG
    if src >= MAX_RANKS or (dst >= MAX_RANKS and dst != ALL):
        return "drop_malformed"
    if (dst != ALL) if flags & MCAST else (dst == ALL):
        return "drop_malformed"
    if total == 0 or total > 0x7fffffff:
        return "drop_malformed"
    if off >= total or plen > total - off:
        return "drop_out_of_bounds"
    if bool(flags & LAST) != (off + plen == total):
        return "drop_malformed"
    if c != comm:
        return "drop_unknown_comm"
    if (dst == ALL or dst == VICTIM_RANK) and src != VICTIM_RANK:
        if src >= NRANKS or not from_member:
            return "drop_foreign_source"
        # The victim's communicator does not authenticate its datagrams.
        return "drop_auth" if flags & AUTH else "deliver"
    # Nobody here for it; a group datagram whose only local member is
    # its sender is not a drop.
    return None if dst == ALL else "drop_unknown_comm"

expect = {}
def count(what, n=1):
    if what:
        expect[what] = expect.get(what, 0) + n

def send(sock, p, want, member=False):
    got = classify(p, member)
    if got != want:
        sys.exit("test bug: model says %s, case says %s" % (got, want))
    sock.sendto(p, (victim, port))
    if want != "deliver":
        count(want)

S = stranger
# Wire format errors (wire.c): counted in the namespace only.
for v in (0, 2, 255):
    send(S, pkt(version=v), "drop_malformed")
for n in (1, 20, 35):                       # truncated header
    send(S, hdr()[:n], "drop_malformed")
S.sendto(b"", (victim, port)); count("drop_malformed")   # empty datagram
send(S, hdr(plen=0), "drop_malformed")      # header, no payload
send(S, pkt(flags=LAST | 0x08), "drop_malformed")         # unknown flag
send(S, pkt(flags=LAST | AUTH, plen=TAG), "drop_malformed")  # only a tag
send(S, pkt(flags=LAST | MCAST), "drop_malformed")        # MCAST to a rank
send(S, pkt(dst=ALL), "drop_malformed")     # to all, not MCAST
send(S, pkt(total=0, flags=0), "drop_malformed")
send(S, pkt(total=0x80000000, flags=0), "drop_malformed")
send(S, pkt(src=MAX_RANKS), "drop_malformed")
send(S, pkt(dst=MAX_RANKS), "drop_malformed")
send(S, pkt(offset=100, total=100, flags=0), "drop_out_of_bounds")
send(S, pkt(offset=50, total=100, flags=LAST), "drop_out_of_bounds")
send(S, pkt(offset=0xffffff00, total=0x7fffffff, flags=0),
     "drop_out_of_bounds")
send(S, pkt(total=200, flags=LAST), "drop_malformed")     # LAST, not last
send(S, pkt(offset=100, total=200, flags=0), "drop_malformed")  # last, no LAST
send(S, pkt(plen=8000, total=100, flags=0), "drop_out_of_bounds")  # IP frags
# Well-formed, but not for anyone here, or not from a peer.
send(S, pkt(comm=comm + 1), "drop_unknown_comm")
send(S, pkt(dst=5), "drop_unknown_comm")    # a rank beyond the communicator
send(S, pkt(src=0), "drop_foreign_source")  # rank 0, wrong address
send(S, pkt(src=NRANKS), "drop_foreign_source")
send(S, pkt(flags=LAST | MCAST, dst=ALL), "drop_foreign_source")

# Random datagrams: a third pure noise; the rest near-valid headers with
# random fields (a random communicator, or the member's), a third of
# those with one random bit flipped. The model above says where each
# must land; all of them together exercise every branch of the checks.
rng = random.Random(12345)
for i in range(300):
    n = rng.choice((0, 1, 35, 36, 37)) if i % 10 == 0 else rng.randrange(0, 1500)
    p = bytearray(rng.randbytes(n))
    if i % 3 and n >= 36:
        plen = n - 36
        dst = rng.choice((0, 1, 2, 5, ALL))
        off = rng.choice((0, rng.randrange(0, 100000)))
        total = (off + plen + rng.choice((0, 0, 0, 1, -1))) & M
        p[:36] = hdr(flags=(MCAST if dst == ALL else 0) |
                           (LAST if off + plen == total else 0),
                     src=rng.randrange(0, 4), dst=dst,
                     comm=comm if i % 3 == 2 else rng.randrange(0, M),
                     round=rng.randrange(0, M), msg=rng.randrange(0, M),
                     offset=off, total=total)
        if rng.random() < 0.3:
            b = rng.randrange(0, 36 * 8)
            p[b // 8] ^= 1 << (b % 8)
    p = bytes(p)
    want = classify(p)
    if want == "deliver":
        sys.exit("test bug: a random packet would be delivered")
    S.sendto(p, (victim, port))
    count(want)

# One UDP GSO batch (a UDP_SEGMENT cmsg; veth and the bridge pass it on
# whole): the module walks its datagrams itself, and must judge each on
# its own, including a last one shorter than the segment size.
UDP_SEGMENT, SEG = 103, 136
segs = [pkt(version=2), pkt(comm=comm + 1), pkt(src=0),
        pkt(flags=LAST | 0x08), hdr()[:20]]
for p in segs:
    if len(p) != SEG and p is not segs[-1]:
        sys.exit("test bug: segment of %d bytes" % len(p))
    count(classify(p))
S.s.sendmsg([b"".join(segs)], [(socket.SOL_UDP, UDP_SEGMENT,
                                struct.pack("H", SEG))], 0, (victim, port))
gso_sent += len(segs)
count("rx_gso_batches")

# From rank 0's own address: well-formed, for the victim's socket.
A = rank0
send(A, pkt(round=rnd - 1), "deliver", True)                # stale round
count("drop_stale_round")
send(A, pkt(msg=99), "deliver", True)                       # nothing posted
count("drop_no_post")
send(A, pkt(total=size0 + 1, flags=0), "deliver", True)     # wrong length
count("drop_out_of_bounds")
send(A, pkt(src=5), "drop_foreign_source", True)            # rank 5 of 2
# Rank 0's address, another port: any program on rank 0's host.
send(rank0_other_port, pkt(), "drop_foreign_source")
send(A, pkt(src=VICTIM_RANK), "drop_unknown_comm", True)    # "from" itself
send(A, pkt(dst=0), "drop_unknown_comm", True)              # for rank 0
# Tagged, to a communicator that does not authenticate.
send(A, hdr(flags=LAST | AUTH, plen=100 - TAG) + b"\x55" * 100,
     "drop_auth", True)

# The real message of the round, in two overlapping pieces: bytes
# [0, 1000), then [500, 4000) as one datagram IP must fragment; then the
# first piece once more, after the post completed (stale). The bytes are
# optr_peer's pattern.
data = pattern(rnd, 0, size0)
first = hdr(total=size0, plen=1000, flags=0) + data[:1000]
A.sendto(first, (victim, port))
A.sendto(hdr(total=size0, offset=500, plen=size0 - 500) + data[500:],
         (victim, port))
count("rx_packets", 2)
count("rx_bytes", size0)
count("rounds_completed")
time.sleep(0.5)     # never overtaking the piece that completes the post
A.sendto(first, (victim, port))
count("drop_stale_round")

# The next round: segments of 200..2000 bytes; each piece is a segment
# grown into its neighbours by up to a third of theirs, so it always
# keeps bytes of its own (it is never a duplicate, whatever the order);
# five pieces are left out. Sent once the victim posted that round (so
# normally none waits in the backlog).
r1 = rnd + 1
data = pattern(r1, 0, size1)
rng = random.Random(777)
cuts = [0]
while cuts[-1] < size1:
    cuts.append(min(size1, cuts[-1] + rng.randrange(200, 2000)))
segs = list(zip(cuts, cuts[1:]))
left_out = set(rng.sample(range(1, len(segs) - 1), 5))
pieces = []
for i, (a, b) in enumerate(segs):
    if i in left_out:
        continue
    lo = a - rng.randrange(0, (a - segs[i - 1][0]) // 3 + 1) if i else 0
    hi = (b + rng.randrange(0, (segs[i + 1][1] - b) // 3 + 1)
          if i + 1 < len(segs) else b)
    pieces.append((lo, hi))
rng.shuffle(pieces)
covered = [False] * size1
for lo, hi in pieces:
    covered[lo:hi] = [True] * (hi - lo)
holes = covered.count(False)
nholes = sum(1 for i in range(size1)
             if not covered[i] and (i == 0 or covered[i - 1]))
for _ in range(600):            # the victim prints its round 5 line
    if any(l.startswith("round %d " % rnd) for l in open(victim_out)):
        break
    time.sleep(0.1)
time.sleep(0.5)                 # and posts round 6 right after
for lo, hi in pieces:
    A.sendto(hdr(round=r1, total=size1, offset=lo, plen=hi - lo,
                 flags=LAST if hi == size1 else 0) + data[lo:hi],
             (victim, port))
count("rx_packets", len(pieces))
count("rx_bytes", size1 - holes)
count("bytes_lost", holes)
count("rounds_opened")
count("rounds_early")
# The victim's own send of that round, to rank 0's empty namespace.
count("tx_packets", (size1 + 1435) // 1436)
count("tx_bytes", size1)
# A future round's unposted message, held for later. Last: a sender sends
# its rounds in order, and a fragment of a later round tells the victim
# that rank 0 has sent all of the earlier ones.
send(A, pkt(round=rnd + 2, msg=99), "deliver", True)
count("backlog_queued")
# Not exact: a piece that beat the post waits in the backlog.
expect["backlog_queued_max"] = expect["backlog_queued"] + len(pieces)
# Whether a datagram is placed on the victim's reader's CPU (steer.c)
# depends on where the scheduler ran that reader, not on what was sent.
expect["rx_steered"] = 0
expect["rx_steered_max"] = 1 << 40
with open(expect_file + ".round", "w") as f:
    f.write("missing %d ranges %d\n" % (holes, nholes))
print("# round %d: %d pieces, %d left out: %d bytes in %d holes"
      % (r1, len(pieces), len(left_out), holes, nholes))

with open(expect_file, "w") as f:
    for k, v in sorted(expect.items()):
        f.write("%s %d\n" % (k, v))
print("# python sent %d datagrams" % (stranger.sent + rank0.sent +
                                     rank0_other_port.sent + gso_sent))
EOF
py=$?
ktap_check "forged datagrams sent (python exit status $py)" test $py -eq 0

# The victim's round 5 completes with rank 0's overlapping pieces.
ktap_check "round $ROUND completed by overlapping pieces, one IP-fragmented" \
	grep -q "^round $ROUND .* complete 1 expired 0 early 0 missing 0 ranges 0" "$WORK/out1"
# Round 6 ends early (its last piece came), with exactly the holes missing.
busywait 30000 grep -q "^round $((ROUND + 1)) " "$WORK/out1"
line=$(grep "^round $((ROUND + 1)) " "$WORK/out1")
echo "# victim: $line"
ktap_check "round $((ROUND + 1)) of pieces with holes: ended early, exactly the holes missing" \
	grep -q "^round $((ROUND + 1)) .* complete 0 expired 0 early 1 $(cat "$WORK/expect.round")\$" "$WORK/out1"

# Every forged datagram in its counter, exactly; nothing else moved.
load_counters "$WORK/before" B
check_counters() {
	local k v b e m d ok=0

	net_counters 1 >"$WORK/after"
	load_counters "$WORK/after" A
	load_counters "$WORK/expect" E
	while read -r k _; do
		b=B_$k
		v=A_$k
		e=E_$k
		m=E_${k}_max
		d=$((${!v} - ${!b}))
		if [ "$d" -lt $((${!e:-0})) ] || [ "$d" -gt $((${!m:-${!e:-0}})) ]; then
			[ "${1:-}" = report ] &&
				echo "# $k: +$d, expected +${!e:-0}${!m:+ .. ${!m}}"
			ok=1
		fi
	done <"$WORK/after"
	return $ok
}
# The stranger's datagrams take another path through the bridge than
# rank 0's last one: give stragglers a moment.
busywait 5000 check_counters
if check_counters report; then
	ktap_ok "every forged datagram counted in the right namespace counter"
else
	ktap_fail "every forged datagram counted in the right namespace counter"
fi
grep -v _max "$WORK/expect" | sed 's/^/# expected: +/' 

# Now the real rank 0: three more rounds with the same victim socket.
victim_joined_by_rank0 $((ROUND + 2)) 65536,1500,9000
# --expect-loss for round 6; every other round must be complete.
ktap_check "victim socket still delivers byte-exact afterwards (exit $rc1)" \
	grep -q "^result rank=1 rounds=5 complete=4 expired=0 early=1 .* mismatches=0 " "$WORK/out1"
ktap_check "rank 0 byte-exact (exit $rc0)" test $rc0 -eq 0

# The drops the socket can be blamed for are in its own counters too; the
# held future-round datagram was dropped as no_post once that round came.
net_counters 1 >"$WORK/final"
load_counters "$WORK/final" F
ok=1
for k in drop_foreign_source drop_stale_round drop_out_of_bounds; do
	s=$(sock_stat "$WORK/out1" $k)
	e=E_$k
	# out_of_bounds: only the wrong-length one had a socket to blame.
	[ $k = drop_out_of_bounds ] && e=1 || e=${!e}
	if [ "$s" != "$e" ]; then
		echo "# socket $k $s, expected $e"
		ok=0
	fi
done
for k in drop_malformed drop_unknown_comm; do
	s=$(sock_stat "$WORK/out1" $k)
	[ "$s" = 0 ] || { echo "# socket $k $s, expected 0"; ok=0; }
done
s=$(sock_stat "$WORK/out1" drop_no_post)
[ "$s" = 2 ] || { echo "# socket drop_no_post $s, expected 2"; ok=0; }
[ "$F_drop_no_post" = 2 ] || { echo "# net drop_no_post $F_drop_no_post, expected 2"; ok=0; }
ktap_check "socket counters: foreign, stale, no_post (held one included), out of bounds" \
	test $ok -eq 1

ktap_finish
