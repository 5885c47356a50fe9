# SPDX-License-Identifier: MIT
"""Background traffic for the time-to-accuracy benchmark's tail profiles.

The paper made its latency tail with background allreduce jobs sharing the
training links. This stands in for them: FLOWS jobs per rank, each of which
sleeps an exponentially distributed time (mean OFF_MS), then pushes BURST_KB
over TCP to a randomly chosen other rank, and again. Every rank also sinks
what the others push. Through a rate-limited link the bursts queue in front
of the training's own packets, at random moments and for random lengths of
time: a tail that comes from sharing, not from a delay distribution.

    background.py --port P --self IP --peers IP,IP,... [--flows 4]
                  [--burst-kb 1024] [--off-ms 100] [--seed 1]

Runs until SIGTERM; then prints one line, "background: sent N bursts, M MB;
received K MB", on stdout.
"""

import argparse
import random
import signal
import socket
import sys
import threading
import time

CHUNK = 1 << 16


def parse(argv):
    p = argparse.ArgumentParser(prog="background.py")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--self", dest="me", required=True,
                   help="this rank's address (sink, and left out of peers)")
    p.add_argument("--peers", required=True,
                   help="every rank's address, comma separated")
    p.add_argument("--flows", type=int, default=4)
    p.add_argument("--burst-kb", type=int, default=1024)
    p.add_argument("--off-ms", type=float, default=100.0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    a.peers = [x for x in a.peers.split(",") if x and x != a.me]
    if not a.peers:
        p.error("--peers names no other rank")
    if a.flows < 1 or a.burst_kb < 1 or a.off_ms <= 0:
        p.error("--flows, --burst-kb and --off-ms must be positive")
    return a


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.bursts = 0
        self.sent = 0
        self.received = 0

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


def sink(srv, cnt, stop):
    def drain(conn):
        buf = bytearray(CHUNK)
        with conn:
            while not stop.is_set():
                try:
                    n = conn.recv_into(buf)
                except OSError:
                    return
                if not n:
                    return
                cnt.add(received=n)

    srv.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def flow(a, idx, cnt, stop):
    """One background job: connections kept open, as a job's would be."""
    me = int.from_bytes(socket.inet_aton(a.me), "big")
    rnd = random.Random((a.seed * 1000 + idx) * 2**32 + me)
    data = bytes(a.burst_kb * 1024)
    conns = {}
    while not stop.wait(rnd.expovariate(1000.0 / a.off_ms)):
        peer = rnd.choice(a.peers)
        s = conns.get(peer)
        try:
            if s is None:
                s = socket.create_connection((peer, a.port), timeout=5)
                s.settimeout(None)
                conns[peer] = s
            s.sendall(data)
            cnt.add(bursts=1, sent=len(data))
        except OSError:
            # The peer's sink is not up yet, or is gone: try again later.
            conns.pop(peer, None)
            if s is not None:
                s.close()
    for s in conns.values():
        s.close()


def main(argv):
    a = parse(argv)
    stop = threading.Event()
    cnt = Counters()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((a.me, a.port))
    srv.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threads = [threading.Thread(target=sink, args=(srv, cnt, stop),
                                daemon=True)]
    threads += [threading.Thread(target=flow, args=(a, i, cnt, stop),
                                 daemon=True) for i in range(a.flows)]
    for t in threads:
        t.start()
    while not stop.wait(1.0):
        pass
    srv.close()
    time.sleep(0.2)
    print("background: sent %d bursts, %.1f MB; received %.1f MB"
          % (cnt.bursts, cnt.sent / 1e6, cnt.received / 1e6), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
