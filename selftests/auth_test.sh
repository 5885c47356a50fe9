#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Authenticated datagrams (OPTIREDUCE_JOIN_AUTH). Two hosts on a bridge:
# host 1 runs rank 1 of a two-rank communicator with a secret and
# authentication on (optr_peer, the "victim"); from host 0, rank 0's
# address and the module's port, python (which derives the wire id and
# the tag key from the secret itself) sends, for the victim's open round:
#   forged: a tag of random bytes; no tag at all (a member that does not
#     authenticate); a tag under another secret;
#   altered: rank 0's real first piece, correctly tagged, with one payload
#     bit flipped, and with its header's offset changed;
#   real: rank 0's message as two correctly tagged pieces (python's tag
#     is the kernel's: they must be placed byte-exact), the first one
#     sent twice (a duplicate within the round);
#   replayed: the first piece again once the round completed (an earlier
#     round's datagram: stale).
# Every forged and altered one is counted in drop_auth (socket and
# namespace) and touches nothing; then the real rank 0, with the same
# secret and authentication, runs three rounds with the victim, both
# byte-exact. The secret is drawn here, per run.
# Counters become shell variables through load_counters (printf -v):
# shellcheck disable=SC2154
. "$(dirname "$0")/lib.sh"
peer_prepare auth
PIDS=()
trap peer_cleanup EXIT

COMM=4343
ROUND=5
SIZE0=4000
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# net_counter HOST NAME: one namespace counter of HOST.
net_counter() { net_counters "$1" | awk -v k="$2" '$1 == k { print $2 }'; }

setup_bridge 2 || { ktap_fail "setup: bridge of 2 hosts"; ktap_finish; }
PEERS=${HOST_IP[0]},${HOST_IP[1]}

# The victim: rounds 5..8; round 5 is python's (60 s deadline), and it
# holds before round 6 until the real rank 0 has joined.
in_host 1 "$PEER" --comm $COMM --rank 1 --peers "$PEERS" \
	--secret "$SECRET" --auth \
	--rounds 4 --start-round $ROUND --sizes $SIZE0,65536,1500,9000 \
	--deadline-us 60000000 --per-round \
	--ready-file "$WORK/ready1" \
	--go-file "$WORK/go" --go-round $((ROUND + 1)) \
	>"$WORK/out1" 2>&1 &
PIDS+=($!)
busywait 60000 test -e "$WORK/ready1" ||
	{ ktap_fail "victim joined"; ktap_finish; }
# Round 5 is open once it has posted, and its own send to rank 0 is done.
victim_opened 1 3 || { ktap_fail "victim opened its round"; ktap_finish; }
auth0=$(net_counter 1 drop_auth)
stale0=$(net_counter 1 drop_stale_round)

PYTHONPATH=$SELFTESTS_DIR python3 - "$WORK/expect" "/run/netns/${HOST_NS[0]}" \
	"${HOST_IP[1]}" "$PORT" "$COMM" "$ROUND" "$SIZE0" "$SECRET" \
	"$WORK/out1" <<'EOF'
import os, sys, time
from optr_wire import (LAST, AUTH, TAG_LEN, Sock, hdr, pattern, tag,
                       tag_key, wire_id)

(expect_file, ns_rank0, victim, port, comm, rnd, size0, secret,
 victim_out) = sys.argv[1:]
port, comm, rnd, size0 = int(port), int(comm), int(rnd), int(size0)
secret = bytes.fromhex(secret)
key = tag_key(secret)
comm = wire_id(comm, secret)    # what the packets carry
A = Sock(ns_rank0, port, member_port=True)
to = (victim, port)
expect = {"drop_auth": 0, "drop_stale_round": 0, "rx_duplicate": 0,
          "wire_id": comm}

def piece(lo, hi, flags=AUTH, k=key):
    """Rank 0's bytes [lo, hi) of round rnd, tagged with k (or not)."""
    h = hdr(comm, rnd, 1, lo, size0, 0, 1,
            flags | (LAST if hi == size0 else 0))
    d = h + pattern(rnd, 0, size0)[lo:hi]
    return d + tag(k, d) if k else d

def send(p, counter):
    A.sendto(p, to)
    if counter:
        expect[counter] += 1

first, second = piece(0, 1000), piece(500, size0)
# Forged: random tag, no tag (and no AUTH flag), another secret's tag.
send(first[:-TAG_LEN] + os.urandom(TAG_LEN), "drop_auth")
send(piece(0, 1000, flags=0, k=None), "drop_auth")
send(piece(0, 1000, k=tag_key(os.urandom(32))), "drop_auth")
# Altered on the way: a payload bit, the header's offset.
b = bytearray(first)
b[36 + 123] ^= 0x04
send(bytes(b), "drop_auth")
b = bytearray(first)
b[23] ^= 0x08                   # offset 0 -> 8: still inside the message
send(bytes(b), "drop_auth")
# The real message; its first piece twice (a duplicate in the round).
send(first, None)
send(first, "rx_duplicate")
send(second, None)
for _ in range(300):            # the victim prints its round's line
    if any(l.startswith("round %d " % rnd) for l in open(victim_out)):
        break
    time.sleep(0.1)
# Replayed from an earlier round: the round is over.
send(first, "drop_stale_round")
with open(expect_file, "w") as f:
    for k, v in sorted(expect.items()):
        f.write("%s %d\n" % (k, v))
print("# python sent %d datagrams" % A.sent)
EOF
py=$?
ktap_check "forged, altered, real and replayed datagrams sent (python exit status $py)" \
	test $py -eq 0
exp() { awk -v k="$1" '$1 == k { print $2 }' "$WORK/expect"; }
wid=$(in_host 1 cat /proc/net/optireduce | awk '$1 == "sock" { for (i = 1; i < NF; i++) if ($i == "comm") print $(i + 1) }')
ktap_check "python's wire id of (id, secret) is the kernel's ($wid)" \
	test "$wid" = "$(exp wire_id)"

ktap_check "round $ROUND completed byte-exact by the correctly tagged pieces" \
	grep -q "^round $ROUND .* complete 1 expired 0 early 0 missing 0 ranges 0" "$WORK/out1"
stale_moved() { [ "$(net_counter 1 drop_stale_round)" -gt "$stale0" ]; }
busywait 5000 stale_moved
d_auth=$(($(net_counter 1 drop_auth) - auth0))
d_stale=$(($(net_counter 1 drop_stale_round) - stale0))
echo "# namespace: drop_auth +$d_auth (expected +$(exp drop_auth)), drop_stale_round +$d_stale (expected +$(exp drop_stale_round))"
ktap_check "every forged and altered datagram counted in drop_auth" \
	test "$d_auth" -eq "$(exp drop_auth)"
ktap_check "the replay of an earlier round's datagram dropped as stale" \
	test "$d_stale" -eq "$(exp drop_stale_round)"

# Now the real rank 0, with the secret: three rounds, both byte-exact.
victim_joined_by_rank0 $((ROUND + 1)) 65536,1500,9000 \
	--secret "$SECRET" --auth
ktap_check "victim: every round complete and byte-exact (exit $rc1)" \
	grep -q "^result rank=1 rounds=4 complete=4 expired=0 early=0 .* mismatches=0 " "$WORK/out1"
ktap_check "rank 0 with authentication: byte-exact (exit $rc0)" test $rc0 -eq 0
# The victim's socket was to blame for each: its own counters say so.
ktap_check "the socket's drop_auth and rx_duplicate match" \
	test "$(sock_stat "$WORK/out1" drop_auth)" = "$(exp drop_auth)" -a \
	"$(sock_stat "$WORK/out1" rx_duplicate)" = "$(exp rx_duplicate)"
# Rank 0's datagrams all carried good tags.
ktap_check "rank 0's tagged datagrams: none dropped for authentication" \
	test "$(sock_stat "$WORK/out0" drop_auth)" = 0
ktap_finish
