# SPDX-License-Identifier: MIT
"""What the DDP hook needs from PyTorch, one implementation per major
version, picked once from torch.__version__.

Where 1.x and 2.x differ for the hook:
  - the bucket's flat tensor: GradBucket.buffer() (1.10 and later, every
    2.x); 1.x releases before it only had get_tensor();
  - the global rank of a group's rank: dist.get_global_rank() is public in
    2.x; 1.x has it only as distributed_c10d._get_global_rank() until late
    1.13 builds;
  - the CUDA-aware Future (Future(devices=...), whose set_result records an
    event on the current stream that its consumers wait for): 2.x always,
    1.x from 1.10 on; without it the hook can only hand DDP a value once
    the copy back is complete on the host side, which it does anyway.
Each implementation calls exactly the API of its version; tests drive both
with stand-in buckets and groups (lib/python/test/test_compat.py).
"""

import re

import torch
import torch.distributed as dist


def torch_major(version=None):
    """The major version of torch (or of the version string given)."""
    v = torch.__version__ if version is None else version
    m = re.match(r"(\d+)\.", str(v))
    if not m:
        raise RuntimeError("optireduce: cannot read the torch version %r" % v)
    return int(m.group(1))


class _Common:
    """What both versions spell alike."""

    @staticmethod
    def bucket_is_last(bucket):
        return bucket.is_last()


class Torch1(_Common):
    """PyTorch 1.x."""

    major = 1

    @staticmethod
    def bucket_tensor(bucket):
        if hasattr(bucket, "buffer"):
            return bucket.buffer()
        return bucket.get_tensor()

    @staticmethod
    def global_rank(group, group_rank):
        fn = getattr(dist, "get_global_rank", None)
        if fn is None:
            fn = dist.distributed_c10d._get_global_rank
        return fn(group, group_rank)

    @staticmethod
    def future(device):
        """A Future for a bucket on device (a torch.device)."""
        if device.type == "cuda":
            try:
                return torch.futures.Future(devices=[device])
            except TypeError:       # before 1.10: host-side completion only
                pass
        return torch.futures.Future()


class Torch2(_Common):
    """PyTorch 2.x."""

    major = 2

    @staticmethod
    def bucket_tensor(bucket):
        return bucket.buffer()

    @staticmethod
    def global_rank(group, group_rank):
        return dist.get_global_rank(group, group_rank)

    @staticmethod
    def future(device):
        if device.type == "cuda":
            return torch.futures.Future(devices=[device])
        return torch.futures.Future()


def for_version(version=None):
    """The implementation for torch's version (or the one given)."""
    return Torch1 if torch_major(version) < 2 else Torch2


api = for_version()
