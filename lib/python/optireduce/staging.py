# SPDX-License-Identifier: MIT
"""Staging of device-resident gradient buckets through host memory.

The library reduces host memory. A bucket on a GPU goes:

  DDP's thread   copy the bucket to a pinned host buffer on the hook's own
                 copy-in stream, after DDP's current stream (wait_stream),
                 and record an event; return the Future at once.
  starter        (a thread of the Stager) in submission order: wait for
                 that event, then start the allreduce of the host buffer.
  completer      (the OptiReduceState's poller) when the call is done:
                 copy the result back on the hook's copy-out stream, wait
                 for it, give the host buffer back to the pool, and
                 complete the Future from that stream, so DDP's stream,
                 which waits on the Future, is ordered after the copy.

So bucket k's copy in runs while bucket k - 1 is reduced, and k - 1's copy
back while k is. Host buffers come from a pool and are reused across steps:
after the first step, a step allocates nothing. Starting in submission
order keeps every rank's calls in the same order, as a collective needs.

The Device is the only part that knows about CUDA: CudaDevice in
production, CpuDevice (plain tensors, copies that are done when issued) to
drive the same Stager with CPU tensors in the tests.
"""

import atexit
import collections
import threading
import time
import weakref

import torch

from . import _compat

# Interpreter exit ends daemon threads where they next take the GIL back.
# One inside a torch op (a copy, a wait) then unwinds through C++ frames
# that may not be unwound, and the process aborts ("terminate called
# without an active exception", status 134) after whatever the program
# printed: a training script that stops mid-step on an error of its own.
# Whatever has a worker thread registers here and is halted first, in
# registration order, all within _EXIT_WAIT_S.
_EXIT_WAIT_S = 10.0
_at_exit = []                   # weakref.ref of what halt_at_exit() took


def halt_at_exit(obj):
    """Call obj.halt(timeout) at interpreter exit, before daemon threads
    are ended, unless obj is gone by then."""
    _at_exit[:] = [r for r in _at_exit if r() is not None]
    _at_exit.append(weakref.ref(obj))


@atexit.register
def _halt_all():
    end = time.monotonic() + _EXIT_WAIT_S
    for ref in list(_at_exit):
        obj = ref()
        if obj is not None:
            obj.halt(max(0.0, end - time.monotonic()))


class Device:
    """What the Stager needs of a device. Events are opaque to it."""

    def host_buffer(self, numel, dtype):
        """A host tensor of numel entries the library may reduce."""
        raise NotImplementedError

    def current_stream(self, tensor):
        """The stream that produced tensor (DDP's, at hook time)."""
        raise NotImplementedError

    def copy_in(self, host, tensor, after):
        """Copy tensor into host after stream `after`; an event."""
        raise NotImplementedError

    def copy_out(self, tensor, host):
        """Copy host into tensor; an event."""
        raise NotImplementedError

    def synchronize(self, event):
        """Block until event is done (without holding the GIL)."""
        raise NotImplementedError

    def future(self, tensor):
        return _compat.api.future(tensor.device)

    def complete(self, fut, tensor):
        """fut's result is tensor, ordered after the copy back."""
        fut.set_result(tensor)


class CpuDevice(Device):
    """Host tensors: the copies are done when issued."""

    def host_buffer(self, numel, dtype):
        return torch.empty(numel, dtype=dtype)

    def current_stream(self, tensor):
        return None

    def copy_in(self, host, tensor, after):
        host.copy_(tensor)
        return None

    def copy_out(self, tensor, host):
        tensor.copy_(host)
        return None

    def synchronize(self, event):
        pass


class CudaDevice(Device):
    """One CUDA device: pinned host buffers, two streams of the hook's own
    (one each way, so a copy back and the next copy in overlap). cuda is
    the module it calls (torch.cuda; the tests give a recording stand-in,
    having no GPU)."""

    def __init__(self, device, cuda=None):
        self.cuda = cuda or torch.cuda
        self.device = torch.device(device)
        self.stream_in = self.cuda.Stream(device=self.device)
        self.stream_out = self.cuda.Stream(device=self.device)

    def host_buffer(self, numel, dtype):
        return torch.empty(numel, dtype=dtype, pin_memory=True)

    def current_stream(self, tensor):
        return self.cuda.current_stream(tensor.device)

    def copy_in(self, host, tensor, after):
        s = self.stream_in
        s.wait_stream(after)
        with self.cuda.stream(s):
            host.copy_(tensor, non_blocking=True)
            # The caching allocator must not hand the bucket's memory to
            # DDP's stream while this stream still reads it.
            tensor.record_stream(s)
            return self._record(s)

    def copy_out(self, tensor, host):
        s = self.stream_out
        with self.cuda.stream(s):
            tensor.copy_(host, non_blocking=True)
            tensor.record_stream(s)
            return self._record(s)

    def _record(self, stream):
        ev = self.cuda.Event()
        ev.record(stream)
        return ev

    def synchronize(self, event):
        event.synchronize()     # torch releases the GIL while it waits

    def complete(self, fut, tensor):
        # A CUDA Future records an event on the current stream at
        # set_result; whoever waits on it waits for our copy back.
        with self.cuda.stream(self.stream_out):
            fut.set_result(tensor)


class HostPool:
    """Host buffers by dtype, reused: acquire() returns a view of numel
    entries of the smallest free buffer that holds them, allocating one
    only when none does."""

    def __init__(self, device):
        self.device = device
        self._free = collections.defaultdict(list)
        self._lock = threading.Lock()
        self.allocations = 0

    def acquire(self, numel, dtype):
        with self._lock:
            free = self._free[dtype]
            fits = [i for i, b in enumerate(free) if b.numel() >= numel]
            if fits:
                buf = free.pop(min(fits, key=lambda i: free[i].numel()))
                return buf, buf[:numel]
        self.allocations += 1
        buf = self.device.host_buffer(max(numel, 1), dtype)
        return buf, buf[:numel]

    def release(self, buf):
        with self._lock:
            self._free[buf.dtype].append(buf)


class _Staged:
    """One bucket on its way: what the completer needs to finish it."""

    __slots__ = ("stager", "tensor", "buf", "host", "fut", "event", "last",
                 "t0")

    def __init__(self, stager, tensor, buf, host, fut, event, last, t0):
        self.stager = stager
        self.tensor = tensor
        self.buf = buf
        self.host = host
        self.fut = fut
        self.event = event
        self.last = last
        self.t0 = t0

    def done(self):
        s = self.stager
        try:
            s.device.synchronize(s.device.copy_out(self.tensor.view(-1),
                                                   self.host))
        except Exception as e:
            self.fail(e)
            return
        s.pool.release(self.buf)
        s.device.complete(self.fut, self.tensor)

    def fail(self, err):
        self.stager.pool.release(self.buf)
        self.fut.set_exception(err)


class Stager:
    """Stages the buckets of one device through host buffers.

    start(host, last, t0, item) starts the allreduce of a host tensor in
    place and arranges that item.done() (or item.fail(err)) is called once
    it completed; it may block for a free slot, and raises on failure."""

    def __init__(self, device, start):
        self.device = device
        self.pool = HostPool(device)
        self._start = start
        self._pending = collections.deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._error = None
        self._thread = threading.Thread(target=self._run,
                                        name="optireduce-stager", daemon=True)
        self._thread.start()
        halt_at_exit(self)

    def submit(self, tensor, last):
        """Copy tensor out and queue its allreduce; its Future."""
        fut = self.device.future(tensor)
        if self._error is not None:
            fut.set_exception(self._error)
            return fut
        buf = None
        try:
            buf, host = self.pool.acquire(tensor.numel(), tensor.dtype)
            ev = self.device.copy_in(host, tensor.reshape(-1),
                                     self.device.current_stream(tensor))
        except Exception as e:
            if buf is not None:
                self.pool.release(buf)
            fut.set_exception(e)
            return fut
        item = _Staged(self, tensor, buf, host, fut, ev, last,
                       time.perf_counter_ns())
        with self._cv:
            self._pending.append(item)
            self._cv.notify()
        return fut

    def _run(self):
        while True:
            with self._cv:
                while not self._pending and not self._stopping:
                    self._cv.wait()
                if not self._pending:
                    return
                item = self._pending.popleft()
            if self._error is not None:
                item.fail(self._error)
                continue
            try:
                self.device.synchronize(item.event)
                self._start(item.host, item.last, item.t0, item)
            except Exception as e:
                # The calls after this one would not match the peers':
                # every later bucket fails too.
                self._error = self._error or e
                item.fail(e)

    def close(self):
        """Stop after what is queued."""
        self._stop(drop=False, timeout=None)

    def halt(self, timeout):
        """At exit: drop what is queued (nobody waits for it any more) and
        let the thread finish the bucket in its hands, at most timeout
        seconds."""
        self._stop(drop=True, timeout=timeout)

    def _stop(self, drop, timeout):
        with self._cv:
            if drop:
                self._pending.clear()
            self._stopping = True
            self._cv.notify()
        self._thread.join(timeout)
