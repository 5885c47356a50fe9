# SPDX-License-Identifier: MIT
"""Host tests of the staging path GPU buckets take (optireduce/staging.py),
driven with CPU tensors through CpuDevice: the same Stager, pool and
ordering code as on a GPU, with a stand-in for the library that doubles
each buffer on a thread of its own. CudaDevice itself runs against a
recording stand-in for torch.cuda: which stream each copy, wait, event
and completion is on."""

import contextlib
import queue
import subprocess
import sys
import threading

import torch

from optireduce import staging
from ktap import Ktap


class Log:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = []

    def add(self, *op):
        with self.lock:
            self.ops.append(op)

    def index(self, *op):
        return self.ops.index(op)


class RecordingDevice(staging.CpuDevice):
    """CpuDevice that logs what the Stager asks of it."""

    def __init__(self, log):
        self.log = log
        self.names = {}         # data_ptr of a bucket -> its name

    def host_buffer(self, numel, dtype):
        self.log.add("alloc", numel, str(dtype))
        return super().host_buffer(numel, dtype)

    def current_stream(self, tensor):
        return "ddp-stream"

    def copy_in(self, host, tensor, after):
        assert after == "ddp-stream"
        self.log.add("copy_in", self.names[tensor.data_ptr()])
        return super().copy_in(host, tensor, after)

    def copy_out(self, tensor, host):
        self.log.add("copy_out", self.names[tensor.data_ptr()])
        return super().copy_out(tensor, host)

    def complete(self, fut, tensor):
        self.log.add("complete", self.names[tensor.data_ptr()])
        super().complete(fut, tensor)


class FakeLibrary:
    """start() as OptiReduceState._start: in order, one at a time, the
    'allreduce' doubles the host buffer, then item.done(). fail_start: the
    names whose start raises; fail_call: those whose call fails; hold: a
    name whose call waits for release()."""

    def __init__(self, log, device, fail_start=(), fail_call=(), hold=None):
        self.log = log
        self.device = device
        self.fail_start = set(fail_start)
        self.fail_call = set(fail_call)
        self.hold = hold
        self.held = threading.Event()
        self.gate = threading.Event()
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def start(self, host, last, t0, item):
        name = self.device.names[item.tensor.data_ptr()]
        self.log.add("start", name)
        if name in self.fail_start:
            raise OSError(5, "start of %s failed" % name)
        self.q.put((name, host, item))

    def _run(self):
        while True:
            name, host, item = self.q.get()
            if name is None:
                return
            if name == self.hold:
                self.held.set()
                self.gate.wait(10)
            host.mul_(2)
            self.log.add("done", name)
            if name in self.fail_call:
                item.fail(OSError(110, "call %s timed out" % name))
            else:
                item.done()

    def release(self):
        self.gate.set()

    def stop(self):
        self.q.put((None, None, None))
        self.t.join(10)


SIZES = ((1000, torch.float32), (70, torch.bfloat16), (1000, torch.float32))


def buckets(step):
    out = []
    for k, (n, dt) in enumerate(SIZES):
        out.append(torch.arange(n, dtype=torch.float32).to(dt) + step + k)
    return out


def setup(**kw):
    log = Log()
    dev = RecordingDevice(log)
    lib = FakeLibrary(log, dev, **kw)
    st = staging.Stager(dev, lib.start)
    return log, dev, lib, st


def submit(st, dev, step, tensors):
    futs = []
    for k, t in enumerate(tensors):
        name = "s%db%d" % (step, k)
        dev.names[t.data_ptr()] = name
        futs.append((name, st.submit(t, k == len(tensors) - 1)))
    return futs


def steps_reuse_buffers(t):
    # Step 0 has all three buckets in flight at once (its first call is
    # held until all are submitted): a buffer each. Later steps, however
    # their buckets overlap, find them in the pool.
    log, dev, lib, st = setup(hold="s0b0")
    allocs = []
    good = True
    for step in range(4):
        tensors = buckets(step)
        want = [x.clone() * 2 for x in tensors]
        futs = submit(st, dev, step, tensors)
        lib.release()
        for (name, f), w, x in zip(futs, want, tensors):
            v = f.wait()
            good &= v is x and torch.equal(v, w)
        allocs.append(st.pool.allocations)
    t.check(good, "staging: every future's value is its bucket, reduced in "
            "place (float32 and bfloat16)")
    t.check(allocs == [3] * 4,
            "staging: host buffers reused, no allocation after the first "
            "step (allocations after each step %s)" % allocs, log.ops)
    names = ["s%db%d" % (s, k) for s in range(4) for k in range(3)]
    completed = [op[1] for op in log.ops if op[0] == "complete"]
    t.check(completed == names,
            "staging: futures complete in submission order", completed)
    order_ok = all(
        log.index("copy_in", n) < log.index("start", n) <
        log.index("done", n) < log.index("copy_out", n) <
        log.index("complete", n) for n in names)
    t.check(order_ok, "staging: each bucket copied in, reduced, copied back, "
            "then completed", log.ops)
    lib.stop()
    st.close()


def copies_overlap(t):
    # The call of bucket 0 is held: bucket 1 is still copied in meanwhile
    # (its copy in overlaps bucket 0's allreduce), and nothing completes.
    log, dev, lib, st = setup(hold="s0b0")
    tensors = buckets(0)[:2]
    dev.names[tensors[0].data_ptr()] = "s0b0"
    f0 = st.submit(tensors[0], False)
    lib.held.wait(10)
    dev.names[tensors[1].data_ptr()] = "s0b1"
    f1 = st.submit(tensors[1], True)
    copied = ("copy_in", "s0b1") in log.ops and not f0.done()
    lib.release()
    f1.wait()
    done = [op[1] for op in log.ops if op[0] == "complete"]
    t.check(copied and done == ["s0b0", "s0b1"],
            "staging: bucket 1 copied in while bucket 0 is reduced", log.ops)
    lib.stop()
    st.close()


def errors_propagate(t):
    # Bucket 1's start fails: it fails with that error, and so does bucket
    # 2 (its call would no longer match the peers'); bucket 0 completes.
    log, dev, lib, st = setup(fail_start={"s0b1"})
    futs = submit(st, dev, 0, buckets(0))
    outcome = []
    for name, f in futs:
        try:
            f.wait()
            outcome.append("ok")
        except Exception as e:
            outcome.append(str(e))
    t.check(outcome[0] == "ok" and "start of s0b1 failed" in outcome[1] and
            "start of s0b1 failed" in outcome[2] and
            ("start", "s0b2") not in log.ops,
            "staging: a failed start fails its bucket and every later one",
            outcome)
    free = sum(len(v) for v in st.pool._free.values())
    t.check(free == st.pool.allocations,
            "staging: buffers of failed buckets back in the pool (%d of %d)"
            % (free, st.pool.allocations))
    lib.stop()
    st.close()

    # A call that fails (the library's wait reports an error): its future
    # raises that error, and its bucket is not copied back.
    log, dev, lib, st = setup(fail_call={"s0b0"})
    futs = submit(st, dev, 0, buckets(0)[:1])
    try:
        futs[0][1].wait()
        msg = "no error"
    except Exception as e:
        msg = str(e)
    t.check("call s0b0 timed out" in msg and
            ("copy_out", "s0b0") not in log.ops,
            "staging: a failed call's future raises its error", msg)
    lib.stop()
    st.close()


class FakeCuda:
    """What CudaDevice calls of torch.cuda, logged: streams, events, the
    current stream (per thread, as CUDA's)."""

    def __init__(self, log):
        self.log = log
        self.local = threading.local()
        self.ddp = self.Stream(name="ddp")

    def Stream(self, device=None, name=None):
        cuda = self

        class S:
            def __init__(self):
                self.name = name or "hook%d" % len(cuda.log.ops)
                cuda.log.add("stream", self.name)

            def wait_stream(self, other):
                cuda.log.add("wait", self.name, other.name)
        return S()

    def Event(self):
        cuda = self

        class E:
            def record(self, stream):
                self.stream = stream
                cuda.log.add("record", stream.name)

            def synchronize(self):
                cuda.log.add("sync", self.stream.name)
        return E()

    def current_stream(self, device):
        return getattr(self.local, "cur", None) or self.ddp

    @contextlib.contextmanager
    def stream(self, s):
        prev = getattr(self.local, "cur", None)
        self.local.cur = s
        try:
            yield
        finally:
            self.local.cur = prev


class Logged:
    """A CPU tensor standing in for a bucket on the GPU (name: the
    bucket's) or for a pinned host buffer (name None), which logs each
    copy into it: which bucket, which way, on which stream."""

    def __init__(self, t, cuda, name=None):
        self.t, self.cuda, self.name = t, cuda, name
        self.device = torch.device("cuda", 0) if name else t.device
        self.dtype = t.dtype

    def numel(self):
        return self.t.numel()

    def reshape(self, *shape):
        return Logged(self.t.reshape(*shape), self.cuda, self.name)

    view = reshape

    def __getitem__(self, k):
        return Logged(self.t[k], self.cuda, self.name)

    def data_ptr(self):
        return self.t.data_ptr()

    def copy_(self, src, non_blocking=False):
        way, bucket = ("h2d", self.name) if self.name else ("d2h", src.name)
        self.cuda.log.add(way, bucket, self.cuda.current_stream(None).name,
                          non_blocking)
        self.t.copy_(src.t)
        return self

    def mul_(self, k):
        self.t.mul_(k)

    def record_stream(self, s):
        self.cuda.log.add("record_stream", self.name, s.name)


class RecordingCudaDevice(staging.CudaDevice):
    """CudaDevice on the stand-in; host memory not pinned (no GPU), the
    Future a plain one (a CUDA-aware one needs the device)."""

    def host_buffer(self, numel, dtype):
        return Logged(torch.empty(numel, dtype=dtype), self.cuda)

    def future(self, tensor):
        return StreamFuture(self.cuda)


class StreamFuture:
    """A Future that logs on which stream its result was set: where a
    CUDA-aware one records the event its waiters wait for."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.f = torch.futures.Future()

    def set_result(self, v):
        self.cuda.log.add("complete", v.name,
                          self.cuda.current_stream(None).name)
        self.f.set_result(v)

    def set_exception(self, e):
        self.f.set_exception(e)

    def wait(self):
        return self.f.wait()


def cuda_device(t):
    log = Log()
    cuda = FakeCuda(log)
    dev = RecordingCudaDevice("cuda:0", cuda=cuda)
    started = []
    completers = []

    def start(host, last, t0, item):        # the library: doubles, done
        started.append(item.tensor.name)
        log.add("start", item.tensor.name)
        host.mul_(2)
        # Started from the Stager's thread, so a daemon like it: joined
        # below, or the interpreter's exit would end it inside a torch
        # op and abort the process (terminate called at exit).
        th = threading.Thread(target=item.done)
        completers.append(th)
        th.start()

    st = staging.Stager(dev, start)
    xs = [Logged(torch.arange(5.0) + k, cuda, "b%d" % k) for k in range(2)]
    futs = [st.submit(x, k == 1) for k, x in enumerate(xs)]
    vals = [f.wait() for f in futs]
    st.close()
    for th in completers:
        th.join(10)
    ops = log.ops
    sin, sout = dev.stream_in.name, dev.stream_out.name
    good = all(torch.equal(v.t, (torch.arange(5.0) + k) * 2)
               for k, v in enumerate(vals))
    t.check(good, "staging on CUDA (stand-in): results copied back into "
            "the buckets")
    for name in ("b0", "b1"):
        i_wait = ops.index(("wait", sin, "ddp"))
        i_d2h = ops.index(("d2h", name, sin, True))
        i_start = ops.index(("start", name))
        i_h2d = ops.index(("h2d", name, sout, True))
        i_done = ops.index(("complete", name, sout))
        ok = (i_wait < i_d2h < i_start < i_h2d < i_done and
              ("record_stream", name, sin) in ops and
              ("record_stream", name, sout) in ops and
              ("sync", sin) in ops[i_d2h:i_start] and
              ("sync", sout) in ops[i_h2d:i_done])
        t.check(ok, "staging on CUDA (stand-in), %s: copy in on the hook's "
                "stream after DDP's, allreduce after that copy, copy back "
                "on the other hook stream, waited for, completed from it"
                % name, ops)


def pool_best_fit(t):
    pool = staging.HostPool(staging.CpuDevice())
    a, va = pool.acquire(100, torch.float32)
    b, vb = pool.acquire(10, torch.float32)
    pool.release(a)
    pool.release(b)
    c, vc = pool.acquire(8, torch.float32)
    d, vd = pool.acquire(50, torch.float32)
    e, ve = pool.acquire(5, torch.bfloat16)
    t.check(c is b and d is a and vc.numel() == 8 and vd.numel() == 50 and
            e.dtype == torch.bfloat16 and pool.allocations == 3,
            "staging: the pool gives the smallest free buffer that fits, "
            "per dtype")


EXIT_MID_CALL = r"""
import sys, threading, time, torch
from optireduce import staging
busy = threading.Event()
def start(host, last, t0, item):       # on the Stager's thread
    busy.set()
    x = torch.ones(1 << 16)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        x.mul_(1.0)                     # each op lets the GIL go
    item.done()
st = staging.Stager(staging.CpuDevice(), start)
for k in range(3):
    st.submit(torch.ones(8), k == 2)
busy.wait(10)
sys.exit(0)                             # no close(), the thread in torch
"""


def exit_mid_call(t):
    # A program that exits while the Stager's thread is inside torch ops:
    # without the halt at exit the interpreter ends that thread there and
    # the process aborts (status 134, "terminate called ..."), most runs.
    bad = []
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", EXIT_MID_CALL],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or "terminate" in p.stderr:
            bad.append((p.returncode, p.stderr.strip()[-200:]))
    t.check(not bad, "staging: a program that exits mid-call, without "
            "close(), exits cleanly (its Stager halted at exit)", bad)


def main():
    t = Ktap("")
    steps_reuse_buffers(t)
    copies_overlap(t)
    errors_propagate(t)
    pool_best_fit(t)
    cuda_device(t)
    exit_mid_call(t)
    t.finish()


if __name__ == "__main__":
    main()
