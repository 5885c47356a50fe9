# SPDX-License-Identifier: MIT
"""Host tests of the PyTorch version shim (optireduce/_compat.py): the
version picks the implementation, and each implementation's calls work
on stand-ins of its version's objects and, where this torch has them, on
the real ones (a one-rank gloo group, a real DDP bucket)."""

import os
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from optireduce import _compat
from ktap import Ktap


class Bucket2:
    """A GradBucket as 1.10+ and 2.x have it."""

    def __init__(self, t, last):
        self.t, self.last = t, last

    def buffer(self):
        return self.t

    def is_last(self):
        return self.last


class Bucket1Old:
    """A GradBucket as 1.x before 1.10 had it."""

    def __init__(self, t):
        self.t = t

    def get_tensor(self):
        return self.t

    def is_last(self):
        return True


def versions(t):
    t.check(_compat.torch_major("1.13.0a0") == 1 and
            _compat.torch_major("2.4.1+cu121") == 2 and
            _compat.for_version("1.13.1") is _compat.Torch1 and
            _compat.for_version("2.1.0") is _compat.Torch2 and
            _compat.for_version("3.0.0") is _compat.Torch2,
            "compat: the major version picks the implementation")
    want = _compat.Torch1 if torch.__version__.startswith("1.") else \
        _compat.Torch2
    t.check(_compat.api is want, "compat: torch %s uses %s"
            % (torch.__version__, want.__name__))
    try:
        _compat.torch_major("nightly")
        t.check(False, "compat: an unreadable version is an error")
    except RuntimeError as e:
        t.check("nightly" in str(e), "compat: an unreadable version is an "
                "error naming it")


def buckets(t):
    x = torch.ones(3)
    b = Bucket2(x, True)
    t.check(_compat.Torch2.bucket_tensor(b) is x and
            _compat.Torch1.bucket_tensor(b) is x and
            _compat.Torch2.bucket_is_last(b) and
            _compat.Torch1.bucket_is_last(Bucket2(x, False)) is False,
            "compat: buffer() and is_last() of a 2.x bucket, both paths")
    old = Bucket1Old(x)
    t.check(_compat.Torch1.bucket_tensor(old) is x,
            "compat: 1.x path reads a pre-1.10 bucket (get_tensor())")
    try:
        _compat.Torch2.bucket_tensor(old)
        t.check(False, "compat: 2.x path calls buffer() only")
    except AttributeError:
        t.check(True, "compat: 2.x path calls buffer() only")
    for impl in (_compat.Torch1, _compat.Torch2):
        f = impl.future(torch.device("cpu"))
        f.set_result(x)
        t.check(f.wait() is x, "compat: %s future for a CPU bucket"
                % impl.__name__)


def real_objects(t):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    g = dist.new_group([0])
    t.check(_compat.Torch1.global_rank(g, 0) == 0 and
            _compat.Torch2.global_rank(g, 0) == 0,
            "compat: global rank of a group's rank 0, both paths")
    seen = []

    def hook(state, bucket):
        a = _compat.Torch1.bucket_tensor(bucket)
        b = _compat.Torch2.bucket_tensor(bucket)
        seen.append(a.data_ptr() == b.data_ptr() and
                    _compat.Torch1.bucket_is_last(bucket) ==
                    _compat.Torch2.bucket_is_last(bucket))
        fut = _compat.api.future(a.device)
        fut.set_result(a)
        return fut

    torch.manual_seed(0)
    m = DDP(torch.nn.Linear(4, 2))
    m.register_comm_hook(None, hook)
    m(torch.randn(3, 4)).sum().backward()
    t.check(seen and all(seen), "compat: a real DDP bucket reads alike "
            "through both paths (%d buckets)" % len(seen))
    dist.destroy_process_group()


def main():
    t = Ktap("")
    torch.set_num_threads(1)
    versions(t)
    buckets(t)
    real_objects(t)
    t.finish()


if __name__ == "__main__":
    main()
