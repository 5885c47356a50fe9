# SPDX-License-Identifier: MIT
"""KTAP-ish result lines for the Python host tests."""

import sys


class Ktap:
    def __init__(self, prefix=""):
        self.n = 0
        self.failed = 0
        self.prefix = prefix

    def check(self, cond, desc, diag=None):
        self.n += 1
        if cond:
            print("ok %d - %s%s" % (self.n, self.prefix, desc), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s%s" % (self.n, self.prefix, desc), flush=True)
            if diag:
                for line in str(diag).splitlines():
                    print("# " + line, flush=True)
        return bool(cond)

    def skip(self, desc, why):
        self.n += 1
        print("ok %d - %s%s # SKIP %s" % (self.n, self.prefix, desc, why),
              flush=True)

    def raises(self, fn, errno_want, desc, lib_message=None):
        """fn() must raise OptiReduceError with errno_want (and, if given,
        the library's message)."""
        import optireduce
        try:
            fn()
        except optireduce.OptiReduceError as e:
            good = e.errno == errno_want and (
                lib_message is None or e.strerror == lib_message)
            return self.check(good, desc, "got %r" % (e,))
        except Exception as e:      # a wrong kind of error is a failure
            return self.check(False, desc, "raised %s: %s"
                              % (type(e).__name__, e))
        return self.check(False, desc, "nothing raised")

    def finish(self):
        print("# %d tests, %d failed" % (self.n, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)
