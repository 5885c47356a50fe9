# SPDX-License-Identifier: MIT
"""pip install ./lib/python, and torchrun launching the example trainer.

Installs a copy of lib/python into a virtual environment that sees the
system's packages (torch, numpy; offline: --no-build-isolation with the
system's setuptools), then, from outside the tree, checks that the
installed optireduce says how to point it at a library when it finds
none, loads one from OPTIREDUCE_LIB and from an installed prefix
(find_library through LD_LIBRARY_PATH), and that
`python -m torch.distributed.run -m optireduce.example_train` trains two
ranks over the TCP path to identical replicas."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

from ktap import Ktap

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TREE_LIB = os.path.join(REPO, "lib", "build", "liboptireduce.so.0")


def run(cmd, env, timeout=120, cwd="/"):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "OPTIREDUCE_LIB", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROBE = ("import optireduce, numpy as np\n"
         "print(optireduce.__file__)\n"
         "print(optireduce.library_path())\n"
         "with optireduce.Comm(0, 1, ['127.0.0.1:0'], quiet=True) as c:\n"
         "    a = np.arange(5, dtype=np.float32)\n"
         "    c.allreduce(a)\n"
         "    print(a.tolist())\n")


def main():
    t = Ktap("")
    tmp = tempfile.mkdtemp(prefix="optireduce-pip-")
    try:
        src = os.path.join(tmp, "src")
        shutil.copytree(os.path.join(REPO, "lib", "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "test"))
        venv = os.path.join(tmp, "venv")
        r = run([sys.executable, "-m", "venv", "--system-site-packages",
                 venv], clean_env())
        if r.returncode:
            t.skip("pip install ./lib/python", "no venv module: %s"
                   % r.stderr.strip().splitlines()[-1:])
            t.finish()
        py = os.path.join(venv, "bin", "python")
        r = run([py, "-m", "pip", "install", "--no-build-isolation",
                 "--no-deps", "--no-index", "--quiet", src], clean_env())
        t.check(r.returncode == 0, "pip install ./lib/python (offline, no "
                "build isolation) into a venv", r.stdout + r.stderr)
        if r.returncode:
            t.finish()

        r = run([py, "-c", "import optireduce; optireduce.library()"],
                clean_env())
        t.check(r.returncode == 1 and "OPTIREDUCE_LIB=" in r.stderr and
                "make -C lib install" in r.stderr,
                "installed, no library anywhere: the error says how to "
                "point it at one", r.stderr)

        r = run([py, "-c", PROBE], clean_env(OPTIREDUCE_LIB=TREE_LIB))
        lines = r.stdout.splitlines()
        t.check(r.returncode == 0 and len(lines) == 3 and
                lines[0].startswith(venv) and lines[1] == TREE_LIB and
                lines[2] == "[0.0, 1.0, 2.0, 3.0, 4.0]",
                "the installed package loads OPTIREDUCE_LIB and reduces",
                r.stdout + r.stderr)

        prefix = os.path.join(tmp, "prefix")
        r = run(["make", "-s", "-C", os.path.join(REPO, "lib"), "install",
                 "PREFIX=" + prefix], clean_env(), cwd=REPO)
        libdir = os.path.join(prefix, "lib")
        r2 = run([py, "-c", PROBE], clean_env(LD_LIBRARY_PATH=libdir))
        lines = r2.stdout.splitlines()
        t.check(r.returncode == 0 and r2.returncode == 0 and
                len(lines) == 3 and lines[1] == "liboptireduce.so.0",
                "the installed package finds an installed library "
                "(find_library)", r.stderr + r2.stdout + r2.stderr)

        # Debian's torch 1.13 under Python 3.11 reads torchrun's default
        # --redirects/--tee 0 as None and fails before any rank starts;
        # 1 (stdout to a log, echoed) works with every version.
        r = run([py, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                 "--master_port", str(free_port()), "--redirects", "1",
                 "--tee", "1", "-m", "optireduce.example_train",
                 "--steps", "6"],
                clean_env(OPTIREDUCE_LIB=TREE_LIB, OMP_NUM_THREADS="1"))
        reps = {}
        for line in r.stdout.splitlines():
            _, _, body = line.partition(":")
            if body.startswith("{"):
                rep = json.loads(body)
                reps[rep["rank"]] = rep
        good = (r.returncode == 0 and sorted(reps) == [0, 1] and
                all(x["path"] == "tcp" and x["wire"] == ["float32"] and
                    x["last_loss"] < x["first_loss"] and
                    x["sent_bytes"] == 4 * x["entries"] > 0
                    for x in reps.values()) and
                reps[0]["checksum"] == reps[1]["checksum"])
        t.check(good, "torchrun -m optireduce.example_train: 2 ranks over "
                "TCP, loss down, identical replicas",
                json.dumps(reps) + "\n" + r.stdout[-2000:] +
                r.stderr[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
