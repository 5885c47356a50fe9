#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Host tests of the Python binding and the DDP hook (lib/python). Installs
# the python group of tools/install-deps (Debian's python3-torch, numpy),
# builds the library if needed, and runs the tests with Debian's python3
# (torch comes from apt, not from a pyenv python on PATH). KTAP-ish output,
# numbered across the files; exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
PY=${PYTHON:-/usr/bin/python3}

"$repo/tools/install-deps" python || exit 1
make -s -C "$repo/lib" || { echo "not ok - python: library builds"; exit 1; }

export PYTHONPATH=$repo/lib/python:$here
export PYTHONDONTWRITEBYTECODE=1
unset OPTIREDUCE_LIB

{
	st=0
	for t in test_binding.py test_compat.py test_staging.py test_ddp.py \
		 test_install.py test_gpu_check.py; do
		echo "# $t"
		timeout -k 5 120 "$PY" "$here/$t" || st=1
	done
	exit $st
} 2>&1 | awk '
	/^(not )?ok [0-9]+ / { n++; sub(/ok [0-9]+ /, "ok " n " ") }
	{ print; fflush() }'
# the status of the tests, not awk's
exit "${PIPESTATUS[0]}"
