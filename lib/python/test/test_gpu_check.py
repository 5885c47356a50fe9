# SPDX-License-Identifier: MIT
"""gpu_check.sh where there is no GPU: it skips cleanly (77, the reason on
its one line), and its comparison logic passes with --device cpu (the
same training and checks, CPU tensors through the staging path)."""

import os
import subprocess

import torch

from ktap import Ktap

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "gpu_check.sh")


def run(*args):
    env = dict(os.environ, PYTHON=os.environ.get("PYTHON", "/usr/bin/python3"))
    return subprocess.run([SCRIPT] + list(args), env=env, capture_output=True,
                          text=True, timeout=110)


def main():
    t = Ktap("")
    have_gpu = (int(torch.__version__.split(".")[0]) >= 2 and
                torch.cuda.is_available())
    if have_gpu:
        t.skip("gpu_check.sh skips without CUDA or PyTorch 2.x",
               "this machine has both")
    else:
        r = run()
        out = r.stdout.strip().splitlines()
        t.check(r.returncode == 77 and len(out) == 1 and
                out[0].startswith("gpu_check: SKIP: ") and
                ("PyTorch 2.x" in out[0] or "no CUDA" in out[0]),
                "gpu_check.sh without CUDA or PyTorch 2.x: exit 77, the "
                "reason", r.stdout + r.stderr)
    r = run("--device", "cpu", "--steps", "3")
    out = r.stdout.strip().splitlines()
    t.check(r.returncode == 0 and out and out[-1] == "gpu_check: PASS" and
            out[0].startswith("gpu_check: torch ") and
            sum("max |diff| to gloo" in o for o in out) == 2,
            "gpu_check.sh --device cpu: the comparison passes, ranks "
            "report", r.stdout + r.stderr)
    t.finish()


if __name__ == "__main__":
    main()
