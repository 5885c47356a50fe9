# SPDX-License-Identifier: MIT
"""One rank of a tiny DDP training, for selftests/torch_hook_test.sh.

Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun's), and
any OPTIREDUCE_* setting. Trains STEPS steps with DDP's default allreduce
(gloo) and again from the same start with the optireduce hook, then prints
one JSON line: the largest difference to the reference, the largest
difference between ranks, and the hook's report.
"""

import json
import os
import sys
import time

T_START = time.time()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import optireduce.torch as ortorch  # noqa: E402

STEPS = int(os.environ.get("TRAIN_STEPS", "8"))


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 3))


def train(rank, hook):
    ddp = DDP(model())
    state = ortorch.register(ddp, resync_every=0, resync_lost=0) if hook \
        else None
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for s in range(STEPS):
        g = torch.Generator().manual_seed(100 * rank + s)
        x, y = torch.randn(8, 10, generator=g), torch.randn(8, 3, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    return flat, state


def main():
    t0 = time.time()
    t_import = t0 - T_START
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ref, _ = train(rank, False)
    got, state = train(rank, True)
    allp = [torch.empty_like(got) for _ in range(world)]
    dist.all_gather(allp, got)
    rep = state.report()
    out = {"rank": rank, "ref_diff": (got - ref).abs().max().item(),
           "ref_norm": ref.abs().max().item(),
           "rank_spread": max((p - allp[0]).abs().max().item() for p in allp),
           "path": rep["path"], "steps": rep["step"],
           "totals": rep["totals"], "log": state.log_line(),
           "import_seconds": round(t_import, 2),
           "seconds": round(time.time() - t0, 2)}
    state.close()
    dist.destroy_process_group()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
