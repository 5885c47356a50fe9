# SPDX-License-Identifier: MIT
"""Host tests of the ctypes binding: struct layout, misuse gives the
library's errors, and 2 and 4 ranks (processes on 127.0.0.1, the TCP path
since the module is absent) allreducing numpy arrays to exact sums."""

import ctypes
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np

import optireduce
from optireduce import _binding as B
from ktap import Ktap

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
t = Ktap("binding: ")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def layout():
    """sizeof/offsetof of the three structs, and constants, from the C
    compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    fields = {"optireduce_config": B.Config, "optireduce_result": B.CResult,
              "optireduce_stats": B.CStats}
    src = ["#include <stdio.h>", "#include <stddef.h>",
           "#include <optireduce.h>", "int main(void) {"]
    for cname, py in fields.items():
        src.append('printf("%s sizeof %%zu\\n", sizeof(struct %s));'
                   % (cname, cname))
        for f, _ in py._fields_:
            src.append('printf("%s %s %%zu\\n", offsetof(struct %s, %s));'
                       % (cname, f, cname, f))
    consts = ("MAX_RANKS", "MAX_INFLIGHT", "REPORT_LAG", "RES_DIRECT",
              "RES_ESTIMATED", "CFG_QUIET", "CFG_AUTH")
    for k in consts:
        src.append('printf("const %s %%llu\\n", '
                   '(unsigned long long)OPTIREDUCE_%s);' % (k, k))
    src.append("return 0; }")
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "l.c")
        with open(c, "w") as fh:
            fh.write("\n".join(src))
        exe = os.path.join(d, "l")
        subprocess.run([cc, "-I", os.path.join(REPO, "lib", "include"), "-o",
                        exe, c], check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    want = {}
    for line in out.splitlines():
        s, f, v = line.split()
        want[(s, f)] = int(v)
    got = {}
    for cname, py in fields.items():
        got[(cname, "sizeof")] = ctypes.sizeof(py)
        for f, _ in py._fields_:
            got[(cname, f)] = getattr(py, f).offset
    for k in consts:
        got[("const", k)] = getattr(B, k)
    return want, got


def single_rank():
    lib_msg = optireduce.strerror
    t.check(optireduce.library_path() and
            os.path.exists(optireduce.library_path()),
            "library loaded (%s)" % optireduce.library_path())
    lw = layout()
    if lw is None:
        t.skip("struct layout", "no C compiler")
    else:
        want, got = lw
        bad = {k: (want[k], got.get(k)) for k in want if want[k] != got.get(k)}
        t.check(not bad and want, "ctypes structs and constants match the "
                "header (sizes, offsets, values)", bad)

    cfg = optireduce.default_config()
    cfg2 = optireduce.default_config(transport="tcp", loss_threshold=0.02,
                                     quiet=True, direct_kb=0)
    t.check(cfg.size == 1 and cfg.max_inflight == 128 and
            cfg.warmup_calls == 20 and cfg.loss_threshold_ppm == 50000 and
            cfg.direct_kb == 48 and cfg2.direct_kb == 0 and
            cfg2.transport == optireduce.TRANSPORT_TCP and
            cfg2.loss_threshold_ppm == 20000 and cfg2.flags == 1,
            "config_init defaults and options")
    t.check(lib_msg(-errno.EBADF).startswith("not a live communicator") and
            lib_msg(errno.EBADF) == lib_msg(-errno.EBADF),
            "strerror gives the library's text for either sign")

    # create errors
    t.raises(lambda: optireduce.Comm(5, 2, ["127.0.0.1:1", "127.0.0.1:2"],
                                     quiet=True),
             errno.ERANGE, "rank >= size: ERANGE", lib_msg(errno.ERANGE))
    t.raises(lambda: optireduce.Comm(0, 0, [], quiet=True),
             errno.ERANGE, "size 0: ERANGE")
    t.raises(lambda: optireduce.Comm(0, 2, ["127.0.0.1:1", None], quiet=True),
             errno.EFAULT, "NULL peer entry: EFAULT")
    t.raises(lambda: optireduce.Comm(0, 2, ["not an address", "x"],
                                     quiet=True, timeout_ms=2000),
             errno.EINVAL, "unparsable peer address: EINVAL")
    t.raises(lambda: optireduce.Comm(0, 1, ["127.0.0.1:0"],
                                     hadamard_block=1000, quiet=True),
             errno.EINVAL, "hadamard_block not a power of two: EINVAL")
    t.raises(lambda: optireduce.Comm(0, 1, ["127.0.0.1:0"],
                                     direct_kb=4097, quiet=True),
             errno.EINVAL, "direct_kb above 4096: EINVAL")
    os.environ.pop("OPTIREDUCE_SECRET", None)
    t.raises(lambda: optireduce.Comm(0, 2, ["127.0.0.1:1", "127.0.0.1:2"],
                                     auth=True, quiet=True, timeout_ms=2000),
             errno.EINVAL, "auth=True with a peer list and no secret: EINVAL")
    try:
        optireduce.Comm(0, 2, ["127.0.0.1:1"])
        t.check(False, "peers shorter than size: ValueError", "no error")
    except ValueError as e:
        t.check("1 addresses for 2 ranks" in str(e),
                "peers shorter than size: ValueError", e)
    try:
        optireduce.Comm(0, 1, ["127.0.0.1:0"], bogus=1)
        t.check(False, "unknown option: TypeError", "no error")
    except TypeError as e:
        t.check("bogus" in str(e), "unknown option: TypeError", e)

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OPTIREDUCE_") and k not in
           ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        t.raises(lambda: optireduce.Comm.from_env(quiet=True), errno.ENOENT,
                 "from_env without RANK/WORLD_SIZE: ENOENT")
        os.environ.update(OPTIREDUCE_RANK="0", OPTIREDUCE_SIZE="1",
                          OPTIREDUCE_PEERS="127.0.0.1:0",
                          OPTIREDUCE_WARMUP="lots")
        t.raises(lambda: optireduce.Comm.from_env(quiet=True), errno.EINVAL,
                 "from_env with malformed OPTIREDUCE_WARMUP: EINVAL")
        del os.environ["OPTIREDUCE_WARMUP"]
        c = optireduce.Comm.from_env(quiet=True, timeout_ms=1234)
        t.check(c.rank == 0 and c.size == 1 and
                c.get_option("timeout_ms") == 1234,
                "from_env with OPTIREDUCE_* and a base option")
        c.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)

    c = optireduce.Comm(0, 1, ["127.0.0.1:0"], quiet=True, incast=3)
    t.check(c.rank == 0 and c.size == 1 and c.transport == "tcp" and
            c.get_option(optireduce.OPT_INCAST) == 3,
            "size-1 communicator: rank, size, transport, options")
    c.set_option("timeout_ms", 5000)
    t.check(c.get_option("timeout_ms") == 5000, "set_option / get_option")
    t.raises(lambda: c.set_option("rank", 1), errno.EPERM,
             "set read-only option: EPERM")
    t.raises(lambda: c.set_option(999, 1), errno.EINVAL,
             "unknown option: EINVAL")
    t.raises(lambda: c.set_option("loss_threshold_ppm", 2000000),
             errno.EINVAL, "option value out of range: EINVAL")
    a = np.arange(10, dtype=np.float32)
    res = c.allreduce(a)
    t.check(np.array_equal(a, np.arange(10)) and res.count == 10,
            "size-1 allreduce leaves the data")
    t.raises(lambda: c.allreduce(np.zeros(0, np.float32)), errno.EINVAL,
             "count 0: EINVAL")
    t.raises(lambda: c.allreduce(a, 7), errno.EOPNOTSUPP,
             "unknown op: EOPNOTSUPP")
    for bad, kind in ((np.zeros(4, np.float64), TypeError),
                      (np.zeros((4, 4), np.float32)[:, 1], ValueError),
                      ([1.0, 2.0], TypeError)):
        try:
            c.allreduce(bad)
            t.check(False, "unusable buffer %s: %s" % (type(bad).__name__,
                                                        kind.__name__))
        except kind as e:
            t.check(True, "unusable buffer rejected: %s" % e)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    try:
        c.allreduce(ro)
        t.check(False, "read-only array rejected")
    except ValueError:
        t.check(True, "read-only array rejected")
    h = c.allreduce_start(a, "mean")
    r = h.wait()
    t.check(r.seq == 1 and not r.lost, "allreduce_start + wait")
    t.raises(h.wait, errno.ESRCH, "handle collected twice: ESRCH")
    t.raises(h.test, errno.ESRCH, "test on a collected handle: ESRCH")
    st = c.stats()
    t.check(st["calls"] == 2 and st["calls_failed"] == 0, "stats count calls",
            st)
    c.close()
    t.raises(lambda: c.allreduce(a), errno.EBADF,
             "allreduce on a closed communicator: EBADF")
    t.raises(c.stats, errno.EBADF, "stats on a closed communicator: EBADF")


def multi_rank(size, count):
    ports = free_ports(size)
    peers = ",".join("127.0.0.1:%d" % p for p in ports)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, ".."), HERE]))
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ar_worker.py"),
                               str(r), str(size), peers, str(count)],
                              env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for r in range(size)]
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        outs.append((p.returncode, o, e))
    reports = []
    diag = []
    for r, (rc, o, e) in enumerate(outs):
        try:
            reports.append(json.loads(o.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            reports.append(None)
        if rc != 0:
            diag.append("rank %d: status %s\n%s%s" % (r, rc, o, e))
    good = len(diag) == 0 and all(reports)
    if good:
        for name in reports[0]["checks"]:
            t.check(all(rep["checks"][name] for rep in reports),
                    "%d ranks: %s" % (size, name))
        t.check(all(rep["transport"] == "tcp" for rep in reports),
                "%d ranks: TCP path (module absent)" % size)
        notice = [e for _, _, e in outs]
        t.check(all("kernel module not loaded" in e and e.count("\n") == 1
                    for e in notice), "%d ranks: one notice line each" % size,
                notice)
    else:
        t.check(False, "%d ranks: every rank finished" % size, "\n".join(diag))


single_rank()
multi_rank(2, 100003)
multi_rank(4, 65536 + 7)
t.finish()
