# SPDX-License-Identifier: MIT
"""PyTorch DistributedDataParallel over liboptireduce.

    import optireduce.torch as ortorch
    dist.init_process_group("gloo")                 # torchrun sets the env
    model = DDP(net)
    state = ortorch.register(model, resync_every=500, resync_lost=0.01)
    for batch in data:
        loss(model(batch)).backward()               # buckets go through
        opt.step(); opt.zero_grad()                 # optireduce, averaged
        print(state.log_line())

register() = OptiReduceState(...) + model.register_comm_hook(state,
allreduce_hook) + state.attach(model). The gloo process group stays in use
for what must be exact: the rendezvous, DDP's own broadcasts, and the drift
guard's parameter re-synchronization.

Buckets in CPU memory are reduced in place. Buckets on a GPU are staged
through pinned host buffers on streams of the hook's own (staging.py);
a model's buckets all live on one device, as DDP has them. bfloat16 and
float16 buckets cross the wire as 16 bits (Result.wire_dtype). PyTorch
1.13 and 2.x differ in a few calls the hook makes: _compat.py holds one
implementation per version.
"""

import collections
import logging
import os
import socket
import threading
import time

import torch
import torch.distributed as dist

from . import _binding as _b
from . import _compat
from . import staging as _staging

log = logging.getLogger("optireduce")

_STEP_KEYS = ("buckets", "entries", "expected", "lost", "compensated",
              "sent_bytes",
              "lossy_calls", "reliable_calls", "warmup_calls",
              "fallback_calls", "loss_high_calls", "estimated_calls",
              "busy_ns")


def _local_address():
    """The address this rank advertises: $OPTIREDUCE_ADDR, else the one it
    reaches $MASTER_ADDR from, else 127.0.0.1."""
    addr = os.environ.get("OPTIREDUCE_ADDR")
    if addr:
        return addr
    master = os.environ.get("MASTER_ADDR")
    if not master:
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(master), 9))     # no packet is sent
        return s.getsockname()[0]


def _free_port(addr):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


class OptiReduceState:
    """State of the optireduce DDP communication hook.

    process_group   the torch.distributed group whose ranks take part
                    (default: the world). Must have been initialized.
    rendezvous      "store": exchange each rank's address and a free port over
                    the process group (works under torchrun and mp.spawn);
                    "env": the library's own rendezvous from RANK,
                    WORLD_SIZE, MASTER_ADDR, MASTER_PORT+1 or OPTIREDUCE_*.
    resync_every    broadcast the parameters from rank 0 every this many
                    steps (0: never on a schedule).
    resync_lost     ... or as soon as the lost fractions of the steps since
                    the last re-synchronization add up to this much on the
                    rank that lost most (0: never for loss); a fraction of
                    gradient entries, as Result.lost_fraction. Checked at the
                    start of a forward pass every loss_check_every steps,
                    from the loss reports the library already exchanges
                    (Result.group_lost_ppm): the same numbers on every rank,
                    so the ranks decide alike without a collective of
                    their own. They tell of each call REPORT_LAG (8) calls
                    later.
    log_every       log the step report (logger "optireduce", INFO) every
                    this many steps (0: never).
    **comm_options  passed to optireduce.Comm (transport, hadamard,
                    warmup_calls, loss_threshold, timeout_ms, quiet, ...);
                    OPTIREDUCE_* variables override them. ready_kb defaults
                    to 0 here: every lossy bucket starts with ready signals,
                    so a rank whose backward pass ran long is waited for,
                    not cut off by its peers' deadlines.
    stage_cpu       route CPU buckets through the staging path GPU buckets
                    take (host copies, the stager's thread) instead of
                    reducing them in place: the tests drive that path this
                    way where there is no GPU.
    """

    def __init__(self, process_group=None, *, rendezvous="store",
                 resync_every=1000, resync_lost=0.01, loss_check_every=1,
                 log_every=0, stage_cpu=False, **comm_options):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("optireduce: call torch.distributed."
                               "init_process_group() first (gloo backend)")
        for name, v in (("resync_every", resync_every),
                        ("loss_check_every", loss_check_every),
                        ("log_every", log_every)):
            if int(v) < 0:
                raise ValueError("%s must be >= 0, not %r" % (name, v))
        if float(resync_lost) < 0:
            raise ValueError("resync_lost must be >= 0, not %r" % resync_lost)
        self.group = process_group
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self.resync_every = int(resync_every)
        self.resync_lost = float(resync_lost)
        self.loss_check_every = int(loss_check_every)
        self.log_every = int(log_every)

        # Buckets follow computation, whose time varies from rank to rank
        # and step to step; warm-up calls cannot bound that (see ready_kb
        # in optireduce_config_init(3)).
        comm_options.setdefault("ready_kb", 0)
        if rendezvous == "store":
            self.comm = self._rendezvous_store(comm_options)
        elif rendezvous == "env":
            self.comm = _b.Comm.from_env(**comm_options)
        else:
            raise ValueError("rendezvous must be 'store' or 'env', not %r"
                             % rendezvous)
        if (self.comm.rank, self.comm.size) != (self.rank, self.world_size):
            self.comm.close()
            raise RuntimeError(
                "optireduce: communicator is rank %d of %d, the process group "
                "rank %d of %d" % (self.comm.rank, self.comm.size, self.rank,
                                   self.world_size))

        # Hook -> poller: (handle, completion, is_last, t_start); the
        # completion's done() or fail(err) ends the bucket.
        self._queue = collections.deque()
        self._stage_cpu = bool(stage_cpu)
        self._stagers = {}                  # device -> staging.Stager
        self._cv = threading.Condition()
        # Calls started and not yet collected by the poller: the library
        # has max_inflight slots, and a bucket that finds none waits for
        # one (a model with more buckets than slots, or a slow network)
        # instead of failing with EBUSY.
        self._slots = self.comm.get_option(_b.OPT_MAX_INFLIGHT)
        self._outstanding = 0
        self._stopping = False
        self._error = None
        self._cres = _b.CResult()           # reused by the poller
        self._hbox = _b.ctypes.c_uint64()   # reused by the hook

        self.steps = 0                      # completed allreduce steps
        self._cur = dict.fromkeys(_STEP_KEYS, 0)
        self._cur_t0 = None
        self._last = None                   # report of the last step
        self._totals = dict.fromkeys(_STEP_KEYS, 0)
        self._acc_lost = 0.0                # sum of step loss since resync
        # The worst rank's, from group_lost_ppm: each result tells of the
        # call REPORT_LAG before it, weighted by that call's entries.
        self._acc_group = 0.0
        self._step_told = self._step_told_lost = 0    # this step's share
        self._recent = collections.deque(maxlen=_b.REPORT_LAG)  # (seq, n)
        self._next_seq = 0                  # seq of the next call
        self._group_from = 0                # earlier calls: undone by resync
        self.resyncs = 0
        self.resync_log = collections.deque(maxlen=100)  # (step, why, drift)
        self.resync_reasons = {"period": 0, "loss": 0, "manual": 0}
        self.last_resync_drift = 0.0
        self._last_resync_step = 0
        self._checked_step = 0
        self._module = None
        self._flat = None

        self._poller = threading.Thread(target=self._poll,
                                        name="optireduce-poller", daemon=True)
        self._poller.start()
        # Before its stagers, which register as they are made: halt()
        # stops them first, then the poller (see staging.halt_at_exit).
        _staging.halt_at_exit(self)

    def _rendezvous_store(self, options):
        addr = _local_address()
        mine = "%s:%d" % (addr, _free_port(addr))
        peers = [None] * self.world_size
        dist.all_gather_object(peers, mine, group=self.group)
        names = ("OPTIREDUCE_PEERS", "OPTIREDUCE_RANK", "OPTIREDUCE_SIZE")
        saved = {n: os.environ.get(n) for n in names}
        os.environ.update(OPTIREDUCE_PEERS=",".join(peers),
                          OPTIREDUCE_RANK=str(self.rank),
                          OPTIREDUCE_SIZE=str(self.world_size))
        try:
            return _b.Comm.from_env(**options)
        finally:
            for n, v in saved.items():
                if v is None:
                    os.environ.pop(n, None)
                else:
                    os.environ[n] = v

    # --- the hook's two halves -------------------------------------------

    def submit(self, bucket):
        """Start the allreduce (mean) of a DDP gradient bucket; a Future
        completed with the averaged bucket when it is done, or failed
        with the OptiReduceError that ended it."""
        tensor = _compat.api.bucket_tensor(bucket)
        last = _compat.api.bucket_is_last(bucket)
        if tensor.device.type != "cpu" or self._stage_cpu:
            return _failing(self._stager(tensor.device).submit(tensor, last))
        fut = torch.futures.Future()
        if self._error is not None:
            fut.set_exception(self._error)
            return _failing(fut)
        try:
            self._start(tensor, last, time.perf_counter_ns(),
                        _InPlace(tensor, fut))
        except Exception as e:     # misuse or a broken communicator
            fut.set_exception(e)
        return _failing(fut)

    def _stager(self, device):
        st = self._stagers.get(device)
        if st is None:
            dev = (_staging.CpuDevice() if device.type == "cpu" else
                   _staging.CudaDevice(device))
            st = self._stagers[device] = _staging.Stager(dev, self._start)
        return st

    def _start(self, tensor, last, t0, completion):
        """Start the allreduce of a host tensor once a slot is free; the
        poller ends it through completion. Raises on failure."""
        addr, n, dt, _ = _b.buffer_of(tensor)
        with self._cv:
            while self._outstanding >= self._slots and self._error is None:
                self._cv.wait()
            if self._error is not None:
                raise self._error
            h = self.comm.start_raw(addr, n, dt, _b.MEAN, tensor, self._hbox)
            self._outstanding += 1
            self._queue.append((h, completion, last, t0))
            self._cv.notify_all()

    def _poll(self):
        cres = self._cres
        cur = self._cur
        while True:
            with self._cv:
                while not self._queue and not self._stopping:
                    self._cv.wait()
                if not self._queue:
                    return
                h, completion, last, t0 = self._queue.popleft()
            rc = self.comm.wait_raw(h, cres)    # GIL released while blocked
            with self._cv:
                self._outstanding -= 1          # its slot is free again
                self._cv.notify_all()
            if rc < 0:
                err = _b.OptiReduceError(rc, "optireduce_allreduce_wait")
                self._error = self._error or err
                completion.fail(err)
                continue
            if self._cur_t0 is None:
                self._cur_t0 = t0
            self._tell(cres)
            f = cres.flags
            cur["buckets"] += 1
            cur["entries"] += cres.count
            cur["expected"] += cres.expected
            cur["lost"] += cres.lost
            cur["compensated"] += cres.compensated
            cur["sent_bytes"] += cres.sent_bytes
            cur["busy_ns"] += cres.duration_ns - cres.queued_ns
            if f & _b.RES_RELIABLE:
                cur["reliable_calls"] += 1
                if f & _b.RES_WARMUP:
                    cur["warmup_calls"] += 1
                if f & _b.RES_FALLBACK:
                    cur["fallback_calls"] += 1
            else:
                cur["lossy_calls"] += 1
            if f & _b.RES_LOSS_HIGH:
                cur["loss_high_calls"] += 1
            if f & _b.RES_ESTIMATED:
                cur["estimated_calls"] += 1
            if last:
                self._end_step(time.perf_counter_ns())
            # Counters first: DDP proceeds once the last future is done.
            completion.done()

    def _tell(self, cres):
        """Fold in what this result says of the call REPORT_LAG before it:
        the largest fraction any rank lost there, weighted by its entries."""
        told = cres.seq - _b.REPORT_LAG
        if (self._recent and self._recent[0][0] == told and
                told >= self._group_from):
            n = self._recent[0][1]
            self._step_told += n
            self._step_told_lost += n * cres.group_lost_ppm / 1e6
        self._recent.append((cres.seq, cres.count))
        self._next_seq = cres.seq + 1

    def _end_step(self, t_end):
        cur = self._cur
        frac = cur["lost"] / cur["expected"] if cur["expected"] else 0.0
        self._acc_lost += frac
        gfrac = (self._step_told_lost / self._step_told
                 if self._step_told else 0.0)
        self._step_told = self._step_told_lost = 0
        self._acc_group += gfrac
        for k in _STEP_KEYS:
            self._totals[k] += cur[k]
        rep = dict(cur)
        rep["step"] = self.steps + 1
        rep["lost_fraction"] = frac
        rep["allreduce_ms"] = (t_end - self._cur_t0) / 1e6
        rep["busy_ms"] = rep.pop("busy_ns") / 1e6
        rep["lost_since_resync"] = self._acc_lost
        rep["group_lost_fraction"] = gfrac
        rep["group_lost_since_resync"] = self._acc_group
        self._last = rep
        for k in _STEP_KEYS:
            cur[k] = 0
        self._cur_t0 = None
        self.steps += 1

    # --- drift guard -----------------------------------------------------

    def attach(self, module):
        """Arm the drift guard on a DDP module: a forward pre-hook that
        re-synchronizes its parameters when due."""
        if self._module is not None:
            raise RuntimeError("optireduce: state already attached to a model")
        self._module = module
        self._params = [p for p in module.parameters()]
        by_dtype = collections.OrderedDict()
        for p in self._params:
            by_dtype.setdefault(p.dtype, []).append(p)
        # One flat buffer per dtype, allocated once, broadcast in one call.
        self._flat = [(torch.empty(sum(p.numel() for p in ps), dtype=dt), ps)
                      for dt, ps in by_dtype.items()]
        module.register_forward_pre_hook(self._pre_forward)
        return self

    def _pre_forward(self, module, inputs):
        if not torch.is_grad_enabled():
            return
        step = self.steps
        if step == self._checked_step:
            return                  # decided for this step already
        self._checked_step = step
        if self.log_every and step % self.log_every == 0:
            log.info("%s", self.log_line())
        since = step - self._last_resync_step
        if self.resync_every and since >= self.resync_every:
            self.resync("period")
        elif (self.resync_lost and self.loss_check_every and
              step % self.loss_check_every == 0 and
              self._acc_group >= self.resync_lost):
            # Every call of the last step completed before this forward
            # pass, and every rank summed the same reports of the same
            # calls: the same answer everywhere.
            self.resync("loss")

    def resync(self, reason="manual"):
        """Broadcast the attached model's parameters from rank 0 over the
        process group (reliably). Every rank must call it at the same point.
        Returns this rank's largest parameter change (its drift)."""
        if self._module is None:
            raise RuntimeError("optireduce: attach(model) before resync()")
        src = 0
        if self.group is not None and self.group is not dist.group.WORLD:
            src = _compat.api.global_rank(self.group, 0)
        drift = 0.0
        with torch.no_grad():
            for flat, ps in self._flat:
                off = 0
                for p in ps:
                    flat[off:off + p.numel()].copy_(p.reshape(-1))
                    off += p.numel()
                dist.broadcast(flat, src=src, group=self.group)
                off = 0
                for p in ps:
                    v = flat[off:off + p.numel()].view_as(p)
                    if p.numel():
                        drift = max(drift, (p - v).abs().max().item())
                    p.copy_(v)
                    off += p.numel()
        self.resyncs += 1
        self.resync_reasons[reason] = self.resync_reasons.get(reason, 0) + 1
        self.resync_log.append((self.steps, reason, drift))
        self.last_resync_drift = drift
        self._last_resync_step = self.steps
        self._acc_lost = 0.0
        self._acc_group = 0.0
        # Losses reported from now on of calls before this point are
        # undone by it.
        self._group_from = self._next_seq
        return drift

    @property
    def resync_steps(self):
        """Steps after which the last (up to 100) re-synchronizations ran."""
        return [s for s, _, _ in self.resync_log]

    # --- report ----------------------------------------------------------

    def report(self):
        """The last completed step: buckets, entries, lost, lost_fraction,
        sent_bytes (payload sent to peers: 16-bit buckets send half),
        calls by path (lossy, reliable, warm-up, fallback), allreduce_ms
        (first bucket started to last done), busy_ms (time the calls ran),
        lost_since_resync (this rank's), group_lost_fraction and
        group_lost_since_resync (the worst rank's, as reported REPORT_LAG
        calls later: what resync_lost is checked against); plus path,
        resyncs and totals since creation."""
        rep = dict(self._last) if self._last else {"step": 0}
        tot = dict(self._totals)
        tot["busy_ms"] = tot.pop("busy_ns") / 1e6
        tot["lost_fraction"] = (tot["lost"] / tot["expected"]
                                if tot["expected"] else 0.0)
        rep.update(path=self.comm.transport, resyncs=self.resyncs,
                   resync_steps=list(self.resync_steps),
                   resync_reasons=dict(self.resync_reasons),
                   last_resync_drift=self.last_resync_drift, totals=tot)
        return rep

    def log_line(self):
        r = self.report()
        if not r["step"]:
            return "optireduce: no step yet (path %s)" % r["path"]
        return ("optireduce step %d: %d buckets, %d entries, lost %.4f%% "
                "(since resync %.4f%%, worst rank %.4f%%), calls lossy %d "
                "reliable %d (warm-up %d, fallback %d), %.2f ms in "
                "allreduce, path %s, resyncs %d" % (
                    r["step"], r["buckets"], r["entries"],
                    100 * r["lost_fraction"], 100 * r["lost_since_resync"],
                    100 * r["group_lost_since_resync"],
                    r["lossy_calls"], r["reliable_calls"], r["warmup_calls"],
                    r["fallback_calls"], r["allreduce_ms"], r["path"],
                    r["resyncs"]))

    def close(self):
        """Stop the stagers and the poller (after what is queued) and
        destroy the communicator."""
        for st in self._stagers.values():
            st.close()
        self._stop_poller(None)
        self.comm.close()

    def halt(self, timeout):
        """At exit: stop the stagers, then let the poller end the calls
        already started (their copies back are torch ops, which must not
        be cut short by the interpreter's exit), at most timeout seconds.
        The communicator is left to the process's end."""
        end = time.monotonic() + timeout
        for st in list(self._stagers.values()):
            st.halt(max(0.0, end - time.monotonic()))
        self._stop_poller(max(0.0, end - time.monotonic()))

    def _stop_poller(self, timeout):
        """Have the poller stop once the queued calls are ended; wait for
        it at most timeout seconds (None: until it has)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._poller.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _value(fut):
    return fut.value()


def _failing(fut):
    """fut, as a Future that fails when fut's exception is set: DDP's
    reducer reads a hook's result as it is, and set_exception stores the
    exception as the result (a trainer whose peer died then read "Unable
    to cast <our error> to Tensor"); an exception raised in a then()
    callback fails the Future it returns, and DDP raises that, our error
    named in its text."""
    return fut.then(_value)


class _InPlace:
    """A CPU bucket reduced where it lies: done once the call is."""

    __slots__ = ("tensor", "fut")

    def __init__(self, tensor, fut):
        self.tensor = tensor
        self.fut = fut

    def done(self):
        self.fut.set_result(self.tensor)

    def fail(self, err):
        self.fut.set_exception(err)


def allreduce_hook(state, bucket):
    """DDP communication hook: average the bucket over the ranks with
    optireduce (asynchronously); register with
    model.register_comm_hook(state, allreduce_hook)."""
    return state.submit(bucket)


def register(model, process_group=None, **kwargs):
    """Create an OptiReduceState for a DDP model, register allreduce_hook
    and arm the drift guard; returns the state."""
    state = OptiReduceState(process_group, **kwargs)
    try:
        model.register_comm_hook(state, allreduce_hook)
        state.attach(model)
    except Exception:
        state.close()
        raise
    return state
