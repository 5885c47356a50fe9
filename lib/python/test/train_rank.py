# SPDX-License-Identifier: MIT
"""One rank of a tiny DDP training, for selftests/torch_hook_test.sh.

Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun's), and
any OPTIREDUCE_* setting. Trains STEPS steps with DDP's default allreduce
(gloo) and again from the same start with the optireduce hook, then prints
one JSON line: the largest difference to the reference, the largest
difference between ranks, and the hook's report; then again through the
staging path CUDA buckets take, with CPU buckets (stage_cpu), under
"staged".

TRAIN_LOSS=PCT (root, in a network namespace whose eth0 carries the
optireduce socket): then drops PCT of the module's UDP datagrams leaving
eth0 (netem, as selftests/allreduce_test.sh does) and trains
TRAIN_LOSS_STEPS more steps with the drift guard on loss
(resync_lost=0.01) and the safeguard out of the way; the JSON line gets
the guard's resync steps and the hook's totals of that run under "loss".

TRAIN_EXIT_STEP=K: last, both ranks train again with the hook, and rank
WORLD_SIZE-1 kills itself (SIGKILL, as the OOM killer would) as soon as
its allreduce of step K started; every other rank prints one line "exit JSON":
the step and the time at which its training raised, the error's type
and text, whether the hook's next call failed at once with the same
error, and how long closing the state took. Those ranks then leave
without destroying the process group (its peer is gone).
"""

import json
import os
import signal
import subprocess
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


def train(rank, hook, steps=STEPS, resync_lost=0, stage=False):
    ddp = DDP(model())
    state = ortorch.register(ddp, resync_every=0, resync_lost=resync_lost,
                             stage_cpu=stage) if hook else None
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for s in range(steps):
        g = torch.Generator().manual_seed(100 * rank + s)
        x, y = torch.randn(8, 10, generator=g), torch.randn(8, 3, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    return flat, state


def udp_loss(pct):
    """netem loss on the module's UDP port, leaving eth0; None removes it."""
    if pct is None:
        subprocess.run(["tc", "qdisc", "del", "dev", "eth0", "root"],
                       check=False)
        return
    with open("/sys/module/optireduce/parameters/port") as fh:
        port = fh.read().strip()
    rules = ("qdisc add dev eth0 root handle 1: prio\n"
             "qdisc add dev eth0 parent 1:3 handle 30: netem loss %s\n"
             "filter add dev eth0 parent 1: protocol ip prio 1 u32 "
             "match ip protocol 17 0xff match ip dport %s 0xffff "
             "flowid 1:3\n" % (pct, port))
    subprocess.run(["tc", "-batch", "-"], input=rules, text=True, check=True)


def lossy_guard(pct):
    """Train under pct loss with the drift guard on loss; its record."""
    # Short deadlines: what a lost message holds a round to. The
    # safeguard would move calls to TCP, where nothing is lost.
    os.environ.update(OPTIREDUCE_DEADLINE_SLACK_MS="300",
                      OPTIREDUCE_LOSS_THRESHOLD="1")
    udp_loss(pct)
    try:
        _, st = train(dist.get_rank(), True,
                      int(os.environ.get("TRAIN_LOSS_STEPS", "24")),
                      resync_lost=0.01)
    finally:
        udp_loss(None)
    rep = st.report()
    out = {"resync_steps": rep["resync_steps"],
           "reasons": rep["resync_reasons"], "totals": rep["totals"],
           "group_since": rep["group_lost_since_resync"]}
    st.close()
    return out


def peer_exit(step):
    """Train with the hook until a step raises, the last rank dying in
    its allreduce of step; the survivors' record (see the docstring)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DDP(model())
    state = ortorch.OptiReduceState(None, resync_every=0)
    dying = rank == world - 1

    def hook(st, bucket):
        # Which step this is, read before the call: the poller counts a
        # step done as soon as its last call completes, which, the peer
        # being ahead, can be before allreduce_hook returns here.
        due = dying and st.steps == step
        fut = ortorch.allreduce_hook(st, bucket)
        if due:
            os.kill(os.getpid(), signal.SIGKILL)    # its call started
        return fut

    ddp.register_comm_hook(state, hook)
    state.attach(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    out = {"rank": rank, "raised_at": None, "errors": []}
    t0 = time.monotonic()
    # Up to the step after the first that raised: that one must raise
    # too, and at once (the communicator is broken for good).
    for s in range(step + 3):
        x, y = torch.randn(8, 10), torch.randn(8, 3)
        opt.zero_grad()
        t1 = time.monotonic()
        try:
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        except Exception as e:
            out["errors"].append({
                "step": s, "seconds": round(time.monotonic() - t1, 3),
                "type": type(e).__name__,
                "error": str(e).splitlines()[0][:300]})
            if out["raised_at"] is not None:
                break
            out["raised_at"] = s
            out["seconds"] = round(time.monotonic() - t0, 2)
    out["steps"] = state.steps
    t1 = time.monotonic()
    state.close()
    out["close_seconds"] = round(time.monotonic() - t1, 3)
    return out


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
    # The staging path CUDA buckets take (host buffers, the stager's
    # thread), driven with CPU buckets over the kernel path.
    sgot, sstate = train(rank, True, stage=True)
    dist.all_gather(allp, sgot)
    srep = sstate.report()
    out["staged"] = {
        "ref_diff": (sgot - ref).abs().max().item(),
        "rank_spread": max((p - allp[0]).abs().max().item() for p in allp),
        "path": srep["path"], "lossy_calls": srep["totals"]["lossy_calls"],
        "buckets": srep["totals"]["buckets"]}
    sstate.close()
    if os.environ.get("TRAIN_LOSS"):
        out["loss"] = lossy_guard(os.environ["TRAIN_LOSS"])
        out["seconds"] = round(time.time() - t0, 2)
    if os.environ.get("TRAIN_EXIT_STEP"):
        print(json.dumps(out), flush=True)
        rec = peer_exit(int(os.environ["TRAIN_EXIT_STEP"]))
        print("exit " + json.dumps(rec), flush=True)
        os._exit(0)
    dist.destroy_process_group()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
