#!/bin/bash
# SPDX-License-Identifier: MIT
#
# GPU check of the DDP hook, for a machine with an NVIDIA GPU and PyTorch
# 2.x (the kernel module is not needed: the library's TCP path):
#
#   lib/python/test/gpu_check.sh [--ranks N] [--steps S] [--dtype T]
#
# N ranks (default 2) share GPU 0; each trains a small model with CUDA
# parameters for S DDP steps (default 4) twice from the same start, over
# gloo's allreduce and through the optireduce hook (CUDA buckets staged
# through pinned host memory), and every parameter is compared after each
# step: equal within float32 reduction rounding (T float32, the default),
# or within a few units of the 16-bit last place for T bfloat16 or float16,
# whose buckets cross the wire as 16 bits. Prints what it ran and a
# PASS or FAIL line; exit 0, 1, or 77 with the reason where there is no
# CUDA or no PyTorch 2.x. PYTHON picks the interpreter (default python3).
# --device cpu runs the same comparison with CPU tensors through the same
# staging path, on any PyTorch: the script's own test where there is no GPU.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
PY=${PYTHON:-python3}

if [ ! -e "$repo/lib/build/liboptireduce.so.0" ] &&
   ! make -s -C "$repo/lib" >/dev/null; then
	echo "gpu_check: FAIL: the library does not build (make -C lib)"
	exit 1
fi
export OPTIREDUCE_LIB=${OPTIREDUCE_LIB:-$repo/lib/build/liboptireduce.so.0}
export PYTHONPATH=$repo/lib/python${PYTHONPATH:+:$PYTHONPATH}
exec "$PY" "$here/gpu_check.py" "$@"
