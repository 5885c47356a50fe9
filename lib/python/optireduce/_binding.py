# SPDX-License-Identifier: MIT
"""ctypes binding of liboptireduce's public API (lib/include/optireduce.h).

The structures below mirror the header field by field; the host tests
compare their sizes and offsets with what the C compiler says.
"""

import ctypes
import ctypes.util
import errno as _errno
import os
import socket
import struct
import threading

# --- constants of optireduce.h ---------------------------------------------

MAX_RANKS = 1024
MAX_COUNT = 1 << 30
MAX_INFLIGHT = 4096
REPORT_LAG = 8          # Result.group_lost_ppm tells of call seq - this

FLOAT32, BFLOAT16, FLOAT16 = 1, 2, 3
SUM, MEAN = 1, 2
TRANSPORT_AUTO, TRANSPORT_KERNEL, TRANSPORT_TCP = 0, 1, 2
HADAMARD_AUTO, HADAMARD_OFF, HADAMARD_ON = 0, 1, 2
CFG_QUIET = 1 << 0
CFG_AUTH = 1 << 2

RES_RELIABLE = 1 << 0
RES_WARMUP = 1 << 1
RES_FALLBACK = 1 << 2
RES_HADAMARD = 1 << 3
RES_LOSS_HIGH = 1 << 4
RES_ESTIMATED = 1 << 5
RES_DIRECT = 1 << 6

(OPT_RANK, OPT_SIZE, OPT_TRANSPORT, OPT_MAX_INFLIGHT, OPT_HADAMARD,
 OPT_HADAMARD_BLOCK, OPT_INCAST, OPT_LOSS_THRESHOLD_PPM, OPT_FALLBACK_CALLS,
 OPT_TIMEOUT_MS, OPT_INCAST_DYNAMIC) = range(1, 12)

_OPTION_NAMES = {
    "rank": OPT_RANK, "size": OPT_SIZE, "transport": OPT_TRANSPORT,
    "max_inflight": OPT_MAX_INFLIGHT, "hadamard": OPT_HADAMARD,
    "hadamard_block": OPT_HADAMARD_BLOCK, "incast": OPT_INCAST,
    "loss_threshold_ppm": OPT_LOSS_THRESHOLD_PPM,
    "fallback_calls": OPT_FALLBACK_CALLS, "timeout_ms": OPT_TIMEOUT_MS,
    "incast_dynamic": OPT_INCAST_DYNAMIC,
}
_TRANSPORTS = {"auto": TRANSPORT_AUTO, "kernel": TRANSPORT_KERNEL,
               "tcp": TRANSPORT_TCP}
_TRANSPORT_NAMES = {TRANSPORT_KERNEL: "kernel", TRANSPORT_TCP: "tcp"}
_HADAMARDS = {"auto": HADAMARD_AUTO, "off": HADAMARD_OFF, "on": HADAMARD_ON}
_OPS = {"sum": SUM, "mean": MEAN}


# --- structures -------------------------------------------------------------

class Config(ctypes.Structure):
    _fields_ = [
        ("rank", ctypes.c_int),
        ("size", ctypes.c_int),
        ("peers", ctypes.POINTER(ctypes.c_char_p)),
        ("transport", ctypes.c_uint),
        ("hadamard", ctypes.c_uint),
        ("hadamard_block", ctypes.c_uint),
        ("incast", ctypes.c_uint),
        ("max_inflight", ctypes.c_uint),
        ("warmup_calls", ctypes.c_uint),
        ("loss_threshold_ppm", ctypes.c_uint),
        ("fallback_calls", ctypes.c_uint),
        ("timeout_ms", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("seed", ctypes.c_uint64),
        ("mcast_group", ctypes.c_uint32),
        ("mcast_ifindex", ctypes.c_uint32),
        ("ready_kb", ctypes.c_uint),
        ("direct_kb", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 4),
    ]


class CResult(ctypes.Structure):
    _fields_ = [
        ("seq", ctypes.c_uint64),
        ("count", ctypes.c_uint64),
        ("expected", ctypes.c_uint64),
        ("lost", ctypes.c_uint64),
        ("compensated", ctypes.c_uint64),
        ("lost_fraction", ctypes.c_double),
        ("duration_ns", ctypes.c_uint64),
        ("queued_ns", ctypes.c_uint64),
        ("deadline_ns", ctypes.c_uint64),
        ("flags", ctypes.c_uint32),
        ("group_lost_ppm", ctypes.c_uint32),
        ("sent_bytes", ctypes.c_uint64),
        ("wire_dtype", ctypes.c_uint32),
        ("incast", ctypes.c_uint32),
    ]


class CStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "calls", "calls_lossy", "calls_reliable", "calls_warmup",
        "calls_fallback", "calls_failed", "safeguard_trips",
        "entries_expected", "entries_lost", "entries_compensated",
        "deadline_ns", "average_ns", "margin_pct", "late_bytes",
        "ready_wait_ns", "ready_missed", "catch_up_calls",
        "calls_direct", "bytes_sent")] + [
            ("incast", ctypes.c_uint32), ("incast_lowered", ctypes.c_uint32),
            ("warmup_mbps", ctypes.c_uint64)]


_RESULT_FIELDS = ("seq", "count", "expected", "lost", "compensated",
                  "lost_fraction", "duration_ns", "queued_ns", "deadline_ns",
                  "flags", "group_lost_ppm", "sent_bytes", "wire_dtype",
                  "incast")


class Result:
    """What one allreduce did (struct optireduce_result).

    expected, lost and compensated count entries of the result (gradient
    elements), one unit in both phases: expected is count (0 with one
    rank); an entry is lost when anything it depends on did not arrive in
    time (any peer's contribution to an entry of this rank's shard, counted
    once, or the reduced entry of another rank's shard); compensated, the
    entries rescaled or estimated. lost_fraction = lost / expected is the
    fraction of the gradient that was rescaled or estimated; group_lost_ppm
    (the worst rank's, of call seq - REPORT_LAG) is in the same unit, as is
    the safeguard's loss_threshold_ppm. sent_bytes is the payload this rank
    sent its peers, wire_dtype the type it crossed as (FLOAT32, BFLOAT16,
    FLOAT16): 16-bit buffers cross as 16 bits, half the bytes. incast is
    the number of senders per receiver its phase 1 allowed at once (the
    incast option, or what dynamic incast chose)."""

    __slots__ = _RESULT_FIELDS

    def __init__(self, c):
        for name in _RESULT_FIELDS:
            setattr(self, name, getattr(c, name))

    @property
    def reliable(self):
        return bool(self.flags & RES_RELIABLE)

    @property
    def warmup(self):
        return bool(self.flags & RES_WARMUP)

    @property
    def fallback(self):
        return bool(self.flags & RES_FALLBACK)

    @property
    def hadamard(self):
        return bool(self.flags & RES_HADAMARD)

    @property
    def loss_high(self):
        return bool(self.flags & RES_LOSS_HIGH)

    @property
    def estimated(self):
        return bool(self.flags & RES_ESTIMATED)

    @property
    def direct(self):
        return bool(self.flags & RES_DIRECT)

    def as_dict(self):
        return {name: getattr(self, name) for name in _RESULT_FIELDS}

    def __repr__(self):
        return "Result(%s)" % ", ".join(
            "%s=%r" % (n, getattr(self, n)) for n in _RESULT_FIELDS)


# --- loading the library ----------------------------------------------------

_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def _candidates():
    env = os.environ.get("OPTIREDUCE_LIB")
    if env:
        return [env]            # asked for one: that one or an error
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "..", "..", "build", "liboptireduce.so.0")
    out = []
    if os.path.exists(tree):
        out.append(os.path.normpath(tree))
    out.append(ctypes.util.find_library("optireduce") or "liboptireduce.so.0")
    return out


def _declare(lib):
    P = ctypes.c_void_p
    sig = {
        "optireduce_config_init": (None, [ctypes.POINTER(Config)]),
        "optireduce_comm_create": (ctypes.c_int, [ctypes.POINTER(Config),
                                                  ctypes.POINTER(P)]),
        "optireduce_comm_create_from_env": (ctypes.c_int,
                                            [ctypes.POINTER(Config),
                                             ctypes.POINTER(P)]),
        "optireduce_comm_destroy": (ctypes.c_int, [P]),
        "optireduce_comm_set_option": (ctypes.c_int, [P, ctypes.c_int,
                                                      ctypes.c_int64]),
        "optireduce_comm_get_option": (ctypes.c_int, [
            P, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]),
        "optireduce_comm_stats": (ctypes.c_int, [P, ctypes.POINTER(CStats)]),
        "optireduce_allreduce": (ctypes.c_int, [
            P, P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(CResult)]),
        "optireduce_allreduce_start": (ctypes.c_int, [
            P, P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_uint64)]),
        "optireduce_allreduce_test": (ctypes.c_int, [
            P, ctypes.c_uint64, ctypes.POINTER(CResult)]),
        "optireduce_allreduce_wait": (ctypes.c_int, [
            P, ctypes.c_uint64, ctypes.POINTER(CResult)]),
        "optireduce_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def library():
    """The loaded liboptireduce (ctypes.CDLL), loading it on first use:
    $OPTIREDUCE_LIB if set, else lib/build/liboptireduce.so.0 of this source
    tree (when the package is used from it), else the installed one
    (ctypes.util.find_library: ldconfig's cache, LD_LIBRARY_PATH)."""
    global _lib, _lib_path
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                _declare(lib)
            except (OSError, AttributeError) as e:
                tried.append("%s (%s)" % (path, e))
                continue
            _lib, _lib_path = lib, path
            return lib
        raise OSError(_errno.ENOENT,
                      "liboptireduce not found; tried: %s. Install it "
                      "(`make -C lib install`, then ldconfig, or put its "
                      "directory in LD_LIBRARY_PATH), or point "
                      "OPTIREDUCE_LIB at it: "
                      "OPTIREDUCE_LIB=/path/to/liboptireduce.so.0"
                      % "; ".join(tried))


def library_path():
    library()
    return _lib_path


def strerror(err):
    """The library's description of an errno value (either sign)."""
    return library().optireduce_strerror(int(err)).decode()


class OptiReduceError(OSError):
    """A liboptireduce call failed: .errno is the (positive) errno value,
    .strerror the library's message, .function the C function."""

    def __init__(self, err, function):
        err = abs(int(err))
        super().__init__(err, strerror(err))
        self.function = function

    def __str__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        return "%s: %s (%s)" % (self.function, self.strerror, name)


def _check(rc, function):
    if rc < 0:
        raise OptiReduceError(rc, function)
    return rc


# --- buffers ----------------------------------------------------------------

_TORCH_DTYPES = None


def _torch_dtypes():
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        import torch
        _TORCH_DTYPES = {torch.float32: FLOAT32, torch.float16: FLOAT16,
                         torch.bfloat16: BFLOAT16}
    return _TORCH_DTYPES


_EMPTY = (ctypes.c_float * 1)()     # a valid address for count 0
_LITTLE = struct.pack("=H", 1) == b"\x01\x00"
_MV_DTYPES = {"f": FLOAT32, "e": FLOAT16}


def _is_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def buffer_of(obj):
    """(address, count, dtype, keepalive) of a float buffer the library may
    write to: a torch tensor or anything with the buffer protocol (numpy)."""
    if _is_tensor(obj):
        dt = _torch_dtypes().get(obj.dtype)
        if dt is None:
            raise TypeError("optireduce reduces float32, float16 and bfloat16 "
                            "tensors, not %s" % obj.dtype)
        if obj.device.type != "cpu":
            raise ValueError("optireduce needs a tensor in CPU memory, not on "
                             "%s" % obj.device)
        if not obj.is_contiguous():
            raise ValueError("optireduce needs a contiguous tensor "
                             "(use .contiguous())")
        n = obj.numel()
        if n == 0:
            return ctypes.addressof(_EMPTY), 0, dt, obj
        return obj.data_ptr(), n, dt, obj
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("optireduce needs a numpy array or torch tensor, not "
                        "%s" % type(obj).__name__) from None
    fmt = mv.format.lstrip("@=" + ("<" if _LITTLE else ">"))
    dt = _MV_DTYPES.get(fmt)
    if dt is None:
        fmt = mv.format
        mv.release()
        raise TypeError("optireduce reduces float32 or float16 arrays, not "
                        "format %r (numpy: use .astype(numpy.float32))" % fmt)
    if mv.readonly:
        mv.release()
        raise ValueError("optireduce writes the result in place: the buffer "
                         "is read-only")
    if not mv.c_contiguous:
        mv.release()
        raise ValueError("optireduce needs a C-contiguous buffer "
                         "(numpy: numpy.ascontiguousarray)")
    n = mv.nbytes // mv.itemsize
    if n == 0:
        mv.release()
        return ctypes.addressof(_EMPTY), 0, dt, obj
    # from_buffer holds an export of obj until it is freed: a numpy array
    # cannot be resized while the library owns its memory.
    anchor = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(anchor), n, dt, (obj, mv, anchor)


def _op(op):
    if isinstance(op, str):
        try:
            return _OPS[op.lower()]
        except KeyError:
            raise ValueError("op must be 'sum' or 'mean', not %r" % op) from None
    return int(op)      # an int goes to the library as is


def _u32(name, v):
    v = int(v)
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError("%s=%d does not fit the library's unsigned int"
                         % (name, v))
    return v


def default_config(**options):
    """A struct optireduce_config from optireduce_config_init(), with the
    Comm options applied (see Comm)."""
    return Comm._config(options)


# --- communicator -----------------------------------------------------------

class Comm:
    """An optireduce communicator (optireduce_comm).

    Comm(rank, size, peers, **options): peers lists one "host:port" per rank;
    this rank listens on peers[rank]. Blocks until every rank connected.
    Comm.from_env(**options): OPTIREDUCE_* / torchrun variables (see
    optireduce_comm_create_from_env(3)); options are the base configuration,
    variables that are set override them.

    options: transport ('auto', 'kernel', 'tcp'), hadamard ('auto', 'off',
    'on'), hadamard_block, incast, max_inflight, warmup_calls,
    loss_threshold (fraction) or loss_threshold_ppm, fallback_calls,
    timeout_ms, seed, quiet (no notice on stderr), mcast_group ("239.1.2.3"),
    mcast_ifindex, ready_kb, direct_kb.
    """

    def __init__(self, rank, size, peers, **options):
        lib = library()
        cfg = self._config(options)
        cfg.rank = int(rank)
        cfg.size = int(size)
        peers = list(peers)
        if 1 <= cfg.size <= MAX_RANKS and len(peers) != cfg.size:
            raise ValueError("peers lists %d addresses for %d ranks"
                             % (len(peers), cfg.size))
        arr = (ctypes.c_char_p * max(len(peers), 1))()
        for i, p in enumerate(peers):
            arr[i] = None if p is None else str(p).encode()
        cfg.peers = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        self._create(lib.optireduce_comm_create, cfg, "optireduce_comm_create")

    @classmethod
    def from_env(cls, **options):
        self = cls.__new__(cls)
        lib = library()
        cfg = self._config(options)
        self._create(lib.optireduce_comm_create_from_env, cfg,
                     "optireduce_comm_create_from_env")
        return self

    @staticmethod
    def _config(options):
        cfg = Config()
        library().optireduce_config_init(ctypes.byref(cfg))
        opts = dict(options)
        if "loss_threshold" in opts:
            frac = float(opts.pop("loss_threshold"))
            opts["loss_threshold_ppm"] = int(round(frac * 1e6))
        if opts.pop("quiet", False):
            cfg.flags |= CFG_QUIET
        if opts.pop("auth", False):
            cfg.flags |= CFG_AUTH
        for name, table in (("transport", _TRANSPORTS),
                            ("hadamard", _HADAMARDS)):
            v = opts.pop(name, None)
            if v is None:
                continue
            if isinstance(v, str):
                if v not in table:
                    raise ValueError("%s must be one of %s, not %r"
                                     % (name, ", ".join(table), v))
                v = table[v]
            setattr(cfg, name, _u32(name, v))
        g = opts.pop("mcast_group", None)
        if g:
            cfg.mcast_group = struct.unpack("=I", socket.inet_aton(g))[0]
        if "seed" in opts:
            cfg.seed = int(opts.pop("seed")) & 0xFFFFFFFFFFFFFFFF
        for name in ("hadamard_block", "incast", "max_inflight",
                     "warmup_calls", "loss_threshold_ppm", "fallback_calls",
                     "timeout_ms", "mcast_ifindex", "ready_kb",
                     "direct_kb"):
            if name in opts:
                setattr(cfg, name, _u32(name, opts.pop(name)))
        if opts:
            raise TypeError("unknown optireduce option(s): %s"
                            % ", ".join(sorted(opts)))
        return cfg

    def _create(self, fn, cfg, name):
        self._lib = library()
        self._ptr = None
        self._inflight = {}
        out = ctypes.c_void_p()
        _check(fn(ctypes.byref(cfg), ctypes.byref(out)), name)
        self._ptr = out.value
        self.rank = self.get_option(OPT_RANK)
        self.size = self.get_option(OPT_SIZE)
        self.transport = _TRANSPORT_NAMES.get(self.get_option(OPT_TRANSPORT),
                                              "unknown")

    # After close() the pointer is NULL: the library answers -EBADF.
    @property
    def closed(self):
        return self._ptr is None

    @property
    def lossy(self):
        """True when lossy calls go over the kernel socket."""
        return self.transport == "kernel"

    def close(self):
        """Destroy the communicator; calls still in flight are canceled."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr is not None:
            rc = self._lib.optireduce_comm_destroy(ptr)
            self._inflight.clear()
            _check(rc, "optireduce_comm_destroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        if self.closed:
            return "<optireduce.Comm closed>"
        return "<optireduce.Comm rank %d of %d, %s>" % (self.rank, self.size,
                                                       self.transport)

    # --- options and counters ---

    def get_option(self, option):
        v = ctypes.c_int64()
        opt = _OPTION_NAMES.get(option, option)
        _check(self._lib.optireduce_comm_get_option(self._ptr, int(opt),
                                                    ctypes.byref(v)),
               "optireduce_comm_get_option")
        return v.value

    def set_option(self, option, value):
        opt = _OPTION_NAMES.get(option, option)
        _check(self._lib.optireduce_comm_set_option(self._ptr, int(opt),
                                                    int(value)),
               "optireduce_comm_set_option")

    def stats(self):
        """Totals since creation (struct optireduce_stats) as a dict;
        entries_expected, entries_lost and entries_compensated are sums of
        the Results' fields, in entries of the result (see Result)."""
        st = CStats()
        _check(self._lib.optireduce_comm_stats(self._ptr, ctypes.byref(st)),
               "optireduce_comm_stats")
        return {name: getattr(st, name) for name, _ in CStats._fields_
                if name != "reserved"}

    # --- allreduce ---

    def allreduce(self, buf, op="sum"):
        """Reduce buf in place over all ranks; blocks; returns a Result."""
        addr, n, dt, keep = buffer_of(buf)
        res = CResult()
        rc = self._lib.optireduce_allreduce(self._ptr, addr, n, dt, _op(op),
                                            ctypes.byref(res))
        del keep
        _check(rc, "optireduce_allreduce")
        return Result(res)

    def allreduce_start(self, buf, op="sum"):
        """Start an asynchronous allreduce of buf; returns a Handle. buf
        belongs to the library (and is kept alive here) until the handle
        reported completion."""
        addr, n, dt, keep = buffer_of(buf)
        h = self.start_raw(addr, n, dt, _op(op), keep)
        return Handle(self, h)

    # Lower level, for the DDP hook: no Python objects per call beyond what
    # the caller passes.
    def start_raw(self, addr, count, dtype, op, keepalive, _h=None):
        h = _h if _h is not None else ctypes.c_uint64()
        _check(self._lib.optireduce_allreduce_start(self._ptr, addr, count,
                                                    dtype, op,
                                                    ctypes.byref(h)),
               "optireduce_allreduce_start")
        self._inflight[h.value] = keepalive
        return h.value

    def wait_raw(self, handle, cres):
        """optireduce_allreduce_wait into cres (a CResult); returns the
        library's status (0 or -errno) without raising."""
        rc = self._lib.optireduce_allreduce_wait(self._ptr, handle,
                                                 ctypes.byref(cres))
        self._inflight.pop(handle, None)
        return rc

    def test_raw(self, handle, cres):
        rc = self._lib.optireduce_allreduce_test(self._ptr, handle,
                                                 ctypes.byref(cres))
        if rc != -_errno.EAGAIN:
            self._inflight.pop(handle, None)
        return rc


class Handle:
    """An allreduce in flight (optireduce_handle)."""

    __slots__ = ("comm", "value", "result", "_c")

    def __init__(self, comm, value):
        self.comm = comm
        self.value = value
        self.result = None
        self._c = CResult()     # one per handle, however often it is tested

    def test(self):
        """None while the call runs; then its Result (raises on failure).
        A handle is collected once: testing it again raises ESRCH."""
        rc = self.comm.test_raw(self.value, self._c)
        if rc == -_errno.EAGAIN:
            return None
        _check(rc, "optireduce_allreduce_test")
        self.result = Result(self._c)
        return self.result

    def wait(self):
        """Block until the call is done; its Result (raises on failure)."""
        _check(self.comm.wait_raw(self.value, self._c),
               "optireduce_allreduce_wait")
        self.result = Result(self._c)
        return self.result

    def __repr__(self):
        return "<optireduce.Handle %#x>" % self.value
