# SPDX-License-Identifier: GPL-2.0
"""The wire format from python, for the shell tests that forge datagrams
(malformed_test.sh, auth_test.sh): the header (kmod/wire.h), the wire id
and the datagram tag (kmod/auth.c, Documentation/wire-format.md), optr_peer's byte
pattern (keep in sync with optr_peer.c), and UDP sockets inside a host's
network namespace that send from the module's port, as members do."""

import ctypes
import hashlib
import os
import socket
import struct

M = 0xffffffff
LAST, MCAST, AUTH = 0x01, 0x02, 0x04
HDR_LEN, TAG_LEN = 36, 16
ALL = 0xffff
TAG_LABEL = b"optireduce datagram tag v1"

_libc = ctypes.CDLL(None, use_errno=True)


def hdr(comm, round, msg, offset, total, src, dst, flags, version=1):
    return struct.pack(">BBHHHIIIIIII", version, flags, src, dst, 0, comm,
                       round, msg, offset, total, 0, 0)


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & 0xffffffffffffffff


def siphash24(key, data):
    """SipHash-2-4 of bytes data under a 16-byte key, as an integer."""
    mask = 0xffffffffffffffff
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & mask
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & mask
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & mask
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & mask
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    tail = len(data) % 8
    for i in range(0, len(data) - tail, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    b = (len(data) & 0xff) << 56
    b |= int.from_bytes(data[len(data) - tail:], "little")
    v[3] ^= b
    rounds(2)
    v[0] ^= b
    v[2] ^= 0xff
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def wire_id(comm, secret):
    """The 32-bit id that packets of communicator comm carry: SipHash of
    the id (with the label "wire") and the secret's last 128 bits, keyed
    with its first 128; the id itself for an all-zero secret."""
    if not any(secret):
        return comm
    first = (0x77697265 << 32) | comm
    return siphash24(secret[:16],
                     struct.pack("<Q", first) + secret[16:]) & M


def tag_key(secret):
    """The key of a communicator's tags, from its 32-byte secret."""
    return hashlib.blake2s(TAG_LABEL, key=secret, digest_size=32).digest()


def tag(key, datagram):
    """The tag of a datagram's header and payload."""
    return hashlib.blake2s(datagram, key=key, digest_size=TAG_LEN).digest()


def mix(x):
    x &= M
    x ^= x >> 16
    x = (x * 0x7feb352d) & M
    return x ^ (x >> 15)


def pattern(rnd, src, n):
    """optr_peer's message bytes of round rnd from rank src (message 1)."""
    seed = mix(((rnd * 0x9e3779b1) ^ ((src + 1) * 0x85ebca6b) ^
                (1 * 0xc2b2ae35)) & M)
    return bytes((mix(seed + (i >> 5) * 0x9e3779b1) + i) & 0x7f
                 for i in range(n))


def udp_in(ns, raw=False):
    """A UDP socket (raw: to write the UDP header ourselves) in the
    network namespace whose file is ns."""
    fd = os.open(ns, os.O_RDONLY)
    if _libc.setns(fd, 0x40000000) != 0:        # CLONE_NEWNET
        raise OSError(ctypes.get_errno(), "setns " + ns)
    os.close(fd)
    if raw:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Bigger than the MTU is fragmented by IP, never refused.
    s.setsockopt(socket.IPPROTO_IP, 10, 0)     # IP_MTU_DISCOVER: DONT
    return s


class Sock:
    """A UDP socket in a namespace that counts what it sends (sent).
    member_port: a raw socket that sends from the module's port, as
    members do (a plain one cannot: the module's socket holds it)."""
    def __init__(self, ns, port, member_port=False):
        self.raw = member_port
        self.port = port
        self.s = udp_in(ns, member_port)
        self.sent = 0

    def sendto(self, p, addr):
        self.sent += 1
        if self.raw:        # checksum 0: none, which IPv4 allows
            p = struct.pack(">HHHH", self.port, self.port, 8 + len(p), 0) + p
            addr = (addr[0], 0)
        self.s.sendto(p, addr)
