# SPDX-License-Identifier: MIT
"""One rank of the multi-process binding test (numpy only: starts fast).

    ar_worker.py RANK SIZE PEERS COUNT
Allreduces integer-valued float32 data whose exact sum every rank knows,
blocking and asynchronous (test() polling and wait()), sum and mean, and
float16 (half the bytes on the wire); prints
one JSON line with what it saw; exit 0 when everything matched.
"""

import json
import sys

import numpy as np

import optireduce


def data(rank, count, salt):
    i = np.arange(count, dtype=np.int64)
    return ((rank + 1) * (i % 17) - 8 + rank + salt).astype(np.float32)


def main():
    rank, size, peers, count = (int(sys.argv[1]), int(sys.argv[2]),
                                sys.argv[3].split(","), int(sys.argv[4]))
    out = {"rank": rank, "checks": {}}
    ok = True

    def expect(salt):
        return sum(data(r, count, salt).astype(np.float64) for r in range(size))

    with optireduce.Comm(rank, size, peers, timeout_ms=30000) as comm:
        out["transport"] = comm.transport
        # blocking sum
        a = data(rank, count, 0)
        res = comm.allreduce(a)
        out["checks"]["sync_sum"] = bool(np.array_equal(a, expect(0)))
        out["checks"]["sync_result"] = (res.count == count and
                                        res.lost == 0 and res.reliable)
        # blocking mean (size is a power of two in the tests: exact)
        a = data(rank, count, 1)
        comm.allreduce(a, "mean")
        out["checks"]["sync_mean"] = bool(np.array_equal(a, expect(1) / size))
        # four in flight: poll the first with test(), wait for the rest
        bufs = [data(rank, count, 2 + k) for k in range(4)]
        hs = [comm.allreduce_start(b) for b in bufs]
        polls = 0
        while hs[0].test() is None:
            polls += 1
        res = [hs[0].result] + [h.wait() for h in hs[1:]]
        out["polls"] = polls
        out["checks"]["async_sum"] = all(
            np.array_equal(b, expect(2 + k)) for k, b in enumerate(bufs))
        out["checks"]["async_seq"] = [r.seq for r in res] == sorted(
            r.seq for r in res) and len({r.seq for r in res}) == 4
        try:
            hs[1].wait()
            out["checks"]["collected_once"] = False
        except optireduce.OptiReduceError as e:
            out["checks"]["collected_once"] = e.errno == 3    # ESRCH
        # float16 crosses the wire as 16 bits: half the bytes of the same
        # call in float32; small integers, so the sum is exact in it
        a32 = data(rank, count, 7)
        r32 = comm.allreduce(a32)
        a16 = data(rank, count, 7).astype(np.float16)
        r16 = comm.allreduce(a16)
        out["checks"]["float16_sum"] = bool(np.array_equal(
            a16.astype(np.float64), expect(7)))
        out["checks"]["float16_half_the_bytes"] = (
            r16.wire_dtype == optireduce.FLOAT16 and
            r32.wire_dtype == optireduce.FLOAT32 and
            r32.sent_bytes == 2 * r16.sent_bytes > 0)
        st = comm.stats()
        out["stats"] = st
        out["checks"]["stats"] = (st["calls"] == 8 and st["calls_failed"] == 0
                                  and st["entries_lost"] == 0 and
                                  st["bytes_sent"] >= r32.sent_bytes +
                                  r16.sent_bytes)
    ok = all(out["checks"].values())
    print(json.dumps(out), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
