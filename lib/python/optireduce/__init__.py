# SPDX-License-Identifier: MIT
"""Python binding of liboptireduce (bounded-time, loss-tolerant allreduce).

    import optireduce
    with optireduce.Comm(rank, size, ["10.0.0.1:7000", "10.0.0.2:7000"]) as c:
        res = c.allreduce(array)            # in place, sum over all ranks
        h = c.allreduce_start(array, "mean")
        ...                                 # compute
        res = h.wait()                      # or h.test(): None while running

Buffers are float32 (also float16; bfloat16 for torch tensors), contiguous,
writable, in CPU memory: numpy arrays or torch tensors. Every library error
raises OptiReduceError (an OSError) with .errno set and the library's own
message (optireduce_strerror). The DDP communication hook is in
optireduce.torch.
"""

from ._binding import (
    Comm,
    Config,
    default_config,
    Handle,
    OptiReduceError,
    Result,
    FLOAT32, BFLOAT16, FLOAT16,
    SUM, MEAN,
    TRANSPORT_AUTO, TRANSPORT_KERNEL, TRANSPORT_TCP,
    HADAMARD_AUTO, HADAMARD_OFF, HADAMARD_ON,
    RES_RELIABLE, RES_WARMUP, RES_FALLBACK, RES_HADAMARD, RES_LOSS_HIGH,
    RES_ESTIMATED, RES_DIRECT,
    OPT_RANK, OPT_SIZE, OPT_TRANSPORT, OPT_MAX_INFLIGHT, OPT_HADAMARD,
    OPT_HADAMARD_BLOCK, OPT_INCAST, OPT_LOSS_THRESHOLD_PPM,
    OPT_FALLBACK_CALLS, OPT_TIMEOUT_MS,
    MAX_RANKS, MAX_COUNT, MAX_INFLIGHT, REPORT_LAG,
    library,
    library_path,
    strerror,
)

__all__ = [
    "Comm", "Config", "default_config", "Handle", "OptiReduceError", "Result",
    "FLOAT32", "BFLOAT16", "FLOAT16", "SUM", "MEAN",
    "TRANSPORT_AUTO", "TRANSPORT_KERNEL", "TRANSPORT_TCP",
    "HADAMARD_AUTO", "HADAMARD_OFF", "HADAMARD_ON",
    "RES_RELIABLE", "RES_WARMUP", "RES_FALLBACK", "RES_HADAMARD",
    "RES_LOSS_HIGH", "RES_ESTIMATED", "RES_DIRECT",
    "OPT_RANK", "OPT_SIZE", "OPT_TRANSPORT", "OPT_MAX_INFLIGHT",
    "OPT_HADAMARD", "OPT_HADAMARD_BLOCK", "OPT_INCAST",
    "OPT_LOSS_THRESHOLD_PPM", "OPT_FALLBACK_CALLS", "OPT_TIMEOUT_MS",
    "MAX_RANKS", "MAX_COUNT", "MAX_INFLIGHT", "REPORT_LAG",
    "library", "library_path", "strerror",
]
