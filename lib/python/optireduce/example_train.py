# SPDX-License-Identifier: MIT
"""A small DDP training through the optireduce hook, to launch with
torchrun:

    python3 -m torch.distributed.run --nproc_per_node 2 \\
        -m optireduce.example_train [--steps N] [--dtype float32|bfloat16]
        [--device cpu|cuda] [--hadamard auto|off|on]

Each rank trains a small network on synthetic regression data of its own
(seeded by its rank) with DistributedDataParallel over a gloo process group
and the optireduce hook, prints the hook's step line on rank 0 every few
steps, and at the end one JSON line per rank: the first and last loss, the
path the calls took, what crossed the wire, and a checksum of the
parameters (equal on every rank when the replicas are). --device cuda puts
each rank on GPU LOCAL_RANK modulo the GPUs there are: its buckets are
staged through host memory.
"""

import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from . import torch as ortorch
from ._binding import BFLOAT16, FLOAT16, FLOAT32

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16}
_WIRE = {FLOAT32: "float32", BFLOAT16: "bfloat16", FLOAT16: "float16"}


def parse(argv=None):
    p = argparse.ArgumentParser(prog="optireduce.example_train")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--hadamard", choices=("auto", "off", "on"),
                   default="auto")
    p.add_argument("--lr", type=float, default=0.05)
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dtype = _DTYPES[args.dtype]
    torch.manual_seed(0)                    # the same start on every rank
    net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 1)).to(device, dtype)
    model = DDP(net, bucket_cap_mb=0.1)
    state = ortorch.register(model, resync_every=0, quiet=True,
                             hadamard=args.hadamard)
    wire = set()
    wait_raw = state.comm.wait_raw

    def noting(h, cres):                    # what crossed, from the results
        rc = wait_raw(h, cres)
        if rc >= 0:
            wire.add(_WIRE.get(cres.wire_dtype, str(cres.wire_dtype)))
        return rc
    state.comm.wait_raw = noting
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(100 + rank)
    w_true = torch.randn(32, 1, generator=torch.Generator().manual_seed(1))
    losses = []
    for step in range(args.steps):
        x = torch.randn(64, 32, generator=g)
        y = x @ w_true
        x, y = x.to(device, dtype), y.to(device, dtype)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if rank == 0 and (step + 1) % 5 == 0:
            print(state.log_line(), flush=True)
    rep = state.report()
    with torch.no_grad():
        checksum = sum(p.double().sum().item() for p in model.parameters())
    print(json.dumps({
        "rank": rank, "steps": args.steps, "first_loss": losses[0],
        "last_loss": losses[-1], "path": rep["path"],
        "wire": sorted(wire), "dtype": args.dtype, "device": str(device),
        "sent_bytes": rep["totals"]["sent_bytes"],
        "entries": rep["totals"]["entries"], "checksum": checksum}),
        flush=True)
    state.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
