# SPDX-License-Identifier: MIT
"""The GPU check of the DDP hook (run by gpu_check.sh; see there).

Every rank trains the same small model twice from the same start, a few
DDP steps each: over gloo's own allreduce (the reference: NCCL refuses two
ranks on one GPU), and through the optireduce hook on the library's TCP
path. After each step every parameter of the two runs must agree within
the float32 reduction's rounding. Exit 0 PASS, 1 FAIL, 77 skip.
"""

import argparse
import json
import os
import socket
import sys
import traceback

SKIP = 77


def skip_reason(device):
    try:
        import torch
    except ImportError:
        return "no PyTorch"
    if device == "cpu":
        return None             # the CPU self-test runs on any version
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        return "needs PyTorch 2.x, found %s" % torch.__version__
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        return "no CUDA device (torch %s)" % torch.__version__
    return None


def model(device, dtype):
    import torch
    torch.manual_seed(11)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 512), torch.nn.Tanh(), torch.nn.Linear(512, 512),
        torch.nn.Tanh(), torch.nn.Linear(512, 4)).to(device=device,
                                                     dtype=dtype)


def tolerance(dtype):
    """Relative bound on one parameter's difference to the gloo run.

    float32: reductions in another order, a few units of the last place
    carried through the steps. 16-bit: gloo rounds each partial sum to 16
    bits, the library reduces in float32 and rounds once, so the two differ
    by about a unit of the 16-bit last place per step."""
    import torch
    if dtype == torch.float32:
        return 1e-5
    return 4 * torch.finfo(dtype).eps


def train(rank, device, dtype, steps, hook):
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    import optireduce.torch as ortorch

    net = model(device, dtype)
    ddp = DDP(net, device_ids=[device.index] if device.type == "cuda"
              else None, bucket_cap_mb=0.25)
    state = None
    if hook:
        state = ortorch.register(ddp, resync_every=0, resync_lost=0,
                                 quiet=True, transport="tcp",
                                 stage_cpu=device.type == "cpu")
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(500 + rank)
    after = []
    for _ in range(steps):
        x = torch.randn(32, 16, generator=g).to(device=device, dtype=dtype)
        y = torch.randn(32, 4, generator=g).to(device=device, dtype=dtype)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        after.append([p.detach().to("cpu", torch.float64, copy=True)
                      for p in ddp.parameters()])
    info = {}
    if state is not None:
        rep = state.report()
        info = {"path": rep["path"], "buckets": rep["buckets"],
                "sent_bytes": rep["totals"]["sent_bytes"],
                "staged": sorted(str(d) for d in state._stagers)}
        state.close()
    return after, info


def rank_main(rank, world, port, device_name, dtype_name, steps, out):
    res = {"rank": rank}
    try:
        import torch
        import torch.distributed as dist
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                          RANK=str(rank), WORLD_SIZE=str(world))
        torch.set_num_threads(1)
        device = torch.device(device_name)
        dtype = getattr(torch, dtype_name)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        ref, _ = train(rank, device, dtype, steps, hook=False)
        got, info = train(rank, device, dtype, steps, hook=True)
        worst = []
        ok = True
        for s in range(steps):
            d = 0.0
            for a, b in zip(got[s], ref[s]):
                tol = tolerance(dtype) * (1 + b.abs())
                ok &= bool(((a - b).abs() <= tol).all())
                d = max(d, (a - b).abs().max().item())
            worst.append(d)
        flat = torch.cat([p.reshape(-1) for p in got[-1]])
        allp = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(allp, flat)
        res.update(ok=ok, max_diff=worst, info=info,
                   params=sum(p.numel() for p in got[-1]),
                   replicas_equal=all(torch.equal(p, allp[0]) for p in allp),
                   device=(torch.cuda.get_device_name(device)
                           if device.type == "cuda" else "cpu"))
        dist.destroy_process_group()
    except Exception:
        res["error"] = traceback.format_exc()
    out.put(res)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                   default="float32")
    args = p.parse_args()
    why = skip_reason(args.device)
    if why:
        print("gpu_check: SKIP: %s" % why, flush=True)
        return SKIP
    import torch
    import torch.multiprocessing as mp
    dev = "cuda:0" if args.device == "cuda" else "cpu"
    print("gpu_check: torch %s, %d ranks sharing %s, %d DDP steps of %s, "
          "optireduce over TCP vs gloo" % (torch.__version__, args.ranks,
                                          dev, args.steps, args.dtype),
          flush=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")       # CUDA does not survive fork
    q = ctx.Queue()
    procs = [ctx.Process(target=rank_main,
                         args=(r, args.ranks, port, dev, args.dtype,
                               args.steps, q))
             for r in range(args.ranks)]
    for pr in procs:
        pr.start()
    out = {}
    for _ in procs:
        try:
            r = q.get(timeout=300)
        except Exception:
            break
        out[r["rank"]] = r
    for pr in procs:
        pr.join(30)
        if pr.is_alive():
            pr.kill()
    good = len(out) == args.ranks and all("error" not in r for r in out.values())
    for r in sorted(out):
        x = out[r]
        if "error" in x:
            print("gpu_check: rank %d failed:\n%s" % (r, x["error"]))
            continue
        print("gpu_check: rank %d on %s: %d parameters, %s; max |diff| to "
              "gloo after each step %s; replicas equal %s" % (
                  r, x["device"], x["params"], json.dumps(x["info"]),
                  ["%.2g" % d for d in x["max_diff"]], x["replicas_equal"]),
              flush=True)
        good &= x["ok"] and x["replicas_equal"] and \
            x["info"].get("path") == "tcp" and bool(x["info"].get("staged"))
    print("gpu_check: %s" % ("PASS" if good else "FAIL"), flush=True)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
