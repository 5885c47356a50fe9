# SPDX-License-Identifier: MIT
"""Results of the tta host tests, one "ok N - what" line each (TAP)."""

import sys

_n = 0
_failed = 0


def check(ok, what):
    global _n, _failed
    _n += 1
    print("%sok %d - %s" % ("" if ok else "not ", _n, what), flush=True)
    _failed += not ok


def finish(planned=None):
    """The plan line, then exit 1 if a check failed or fewer ran than
    planned (a test that stopped early must not look passed)."""
    print("1..%d" % _n)
    if _failed:
        print("# %d of %d failed" % (_failed, _n))
    sys.exit(1 if _failed or (planned is not None and _n != planned) else 0)
