# SPDX-License-Identifier: MIT
"""Host test of background.py (the shared profile's traffic), on loopback
addresses: two ranks push bursts to each other, stop on SIGTERM and report;
bad arguments are refused with status 2. KTAP-ish output."""

import os
import re
import signal
import subprocess
import sys
import time

from ktap import check, finish

HERE = os.path.dirname(os.path.abspath(__file__))
BG = [sys.executable, os.path.join(HERE, "background.py")]
LINE = re.compile(r"^background: sent (\d+) bursts, ([\d.]+) MB; "
                  r"received ([\d.]+) MB$")


def traffic():
    addrs = ["127.0.0.1", "127.0.0.2"]
    port = 20000 + os.getpid() % 20000
    procs = [subprocess.Popen(BG + ["--port", str(port), "--self", a,
                                    "--peers", ",".join(addrs),
                                    "--flows", "2", "--burst-kb", "64",
                                    "--off-ms", "20"],
                              stdout=subprocess.PIPE, text=True)
             for a in addrs]
    time.sleep(2)
    outs = []
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        out, _ = p.communicate(timeout=30)
        outs.append((p.returncode, out.strip()))
    check(all(rc == 0 for rc, _ in outs), "background: exits 0 on SIGTERM")
    got = [LINE.match(o) for _, o in outs]
    check(all(got), "background: one report line each: %s"
          % [o for _, o in outs])
    if all(got):
        sent = [int(m.group(1)) for m in got]
        recv = [float(m.group(3)) for m in got]
        check(all(s > 0 for s in sent) and all(r > 0 for r in recv),
              "background: both ranks sent bursts and received bytes "
              "(sent %s, received %s MB)" % (sent, recv))


def usage():
    for args, what in (([], "no arguments"),
                       (["--port", "1", "--self", "127.0.0.1", "--peers",
                         "127.0.0.1"], "no other rank"),
                       (["--port", "1", "--self", "127.0.0.1", "--peers",
                         "127.0.0.2", "--flows", "0"], "zero flows")):
        p = subprocess.run(BG + args, capture_output=True, text=True,
                           timeout=30)
        check(p.returncode == 2 and "usage" in p.stderr,
              "background: %s: status 2 with usage" % what)


traffic()
usage()
finish()
