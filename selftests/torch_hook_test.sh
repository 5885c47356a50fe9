#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The PyTorch DDP hook (lib/python, optireduce.torch) over the kernel
# socket: two ranks, each in its own network namespace on one bridge (lib.sh
# setup_bridge), run lib/python/test/train_rank.py: a tiny DDP training
# (gloo process group for the rendezvous and DDP's broadcasts) once with
# DDP's default allreduce and once with the optireduce hook. Checked:
#
#   - both ranks finished, the hook's calls after warm-up took the lossy
#     kernel path (lossy calls > 0, no safeguard fallback, path "kernel");
#   - the final parameters of the two ranks are identical (no loss on the
#     bridge), and equal to the default-allreduce reference within float
#     tolerance (the lossy calls reduce in the Hadamard domain);
#   - then 30% of the module's datagrams dropped (netem on its UDP port,
#     each rank's egress; TRAIN_LOSS) for 24 more steps with the drift
#     guard on loss: the guard re-synchronized, for loss, after the same
#     steps on both ranks, deciding from the loss reports the library
#     exchanges (no collective of its own), and something was lost.
#   - last, rank 1 kills itself (SIGKILL) as soon as its allreduce of
#     step EXIT_STEP started: rank 0's step raises our error (ECONNRESET
#     from the library, through DDP), its next step the same, it closes
#     its state and exits 0; rank 1's status is 137.
#
# Needs Debian's python3 with torch (tools/install-deps python) and the
# library (make -C lib); skips (4) without them. Deadlines get
# OPTIREDUCE_DEADLINE_SLACK_MS=5000 of slack: the guest is emulated and its
# scheduling noise is far beyond what warm-up measures (see
# allreduce_test.sh). Time: importing torch (loading libtorch) takes about a
# minute under the guest's emulation, the training itself a few seconds.

dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$dir/lib.sh"

PY=/usr/bin/python3
TRAIN=$REPO_DIR/lib/python/test/train_rank.py
LIBSO=$REPO_DIR/lib/build/liboptireduce.so.0
OUT=$(mktemp -d)
RUN_TIMEOUT=240
TOL=1e-4
EXIT_STEP=2
start=$(now_ms)

require_root
# The kernel paths this drives are allreduce_test.sh's, which the debug
# lane runs; importing torch there (KASAN, emulated) takes many minutes.
if debug_kernel; then
	echo "# SKIP: debug kernel (allreduce_test.sh covers the kernel side)"
	exit "$KSFT_SKIP"
fi
if [ ! -e "$LIBSO" ]; then
	echo "# SKIP: $LIBSO not built (make -C lib)"
	exit "$KSFT_SKIP"
fi
# find_spec, not import: importing torch costs about a minute in the guest.
if ! "$PY" -c 'import importlib.util as u, sys
sys.exit(not (u.find_spec("torch") and u.find_spec("numpy")))' 2>/dev/null; then
	echo "# SKIP: $PY cannot import torch (tools/install-deps python)"
	exit "$KSFT_SKIP"
fi

cleanup() {
	cleanup_ns
	rm -rf "$OUT"
}
trap cleanup EXIT

if ! optr_load; then
	echo "# SKIP: module did not load"
	exit "$KSFT_SKIP"
fi
modprobe -q sch_netem 2>/dev/null
modprobe -q sch_prio 2>/dev/null
modprobe -q cls_u32 2>/dev/null
if ! setup_bridge 2; then
	ktap_fail "bridge of 2 namespaces"
	ktap_finish
fi

pids=()
for i in 0 1; do
	(
		export RANK=$i WORLD_SIZE=2 MASTER_ADDR=${HOST_IP[0]} \
			MASTER_PORT=29500 PYTHONPATH=$REPO_DIR/lib/python \
			PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 \
			OPTIREDUCE_WARMUP=2 OPTIREDUCE_DEADLINE_SLACK_MS=5000 \
			OPTIREDUCE_TIMEOUT_MS=60000 TRAIN_STEPS=8 TRAIN_LOSS=30% \
			TRAIN_EXIT_STEP=$EXIT_STEP
		unset OPTIREDUCE_LIB
		exec ip netns exec "${HOST_NS[$i]}" "$PY" "$TRAIN"
	) >"$OUT/rank.$i" 2>"$OUT/rank.$i.err" &
	pids+=($!)
done
st=0
wait_ranks "$RUN_TIMEOUT" "" "${pids[@]}"
# Rank 1 kills itself last (TRAIN_EXIT_STEP); rank 0 lives on and exits.
[ "${RANK_STATUS[0]}" = 0 ] && [ "${RANK_STATUS[1]}" = 137 ] || st=1
echo "# training took $(( $(now_ms) - start )) ms"

explain() {
	local i

	for i in 0 1; do
		tail -n 8 "$OUT/rank.$i.err" | sed "s/^/# rank $i err: /"
		sed "s/^/# rank $i: /" "$OUT/rank.$i"
	done
}

# check WHAT: one verdict over both ranks' JSON lines.
check() {
	"$PY" - "$1" "$TOL" "$OUT/rank.0" "$OUT/rank.1" <<'PYEOF'
import json, sys
what, tol = sys.argv[1], float(sys.argv[2])
reps = []
for f in sys.argv[3:]:
    with open(f) as fh:
        lines = [l for l in fh if l.startswith("{")]
    if not lines:
        sys.exit(1)
    reps.append(json.loads(lines[-1]))
for r in reps:
    t = r["totals"]
    if what == "lossy":
        ok = (r["path"] == "kernel" and t["lossy_calls"] > 0 and
              t["fallback_calls"] == 0 and r["steps"] > 0 and
              t["lossy_calls"] + t["reliable_calls"] == t["buckets"])
    elif what == "ranks":
        ok = r["rank_spread"] == 0
    elif what == "reference":
        ok = r["ref_diff"] <= tol * max(1.0, r["ref_norm"])
    elif what == "staged":
        s = r.get("staged", {})
        ok = (s.get("path") == "kernel" and s["lossy_calls"] > 0 and
              s["rank_spread"] == 0 and
              s["ref_diff"] <= tol * max(1.0, r["ref_norm"]))
        print("# rank %d staged: %s" % (r["rank"], s))
    elif what == "guard":
        g = r.get("loss", {})
        ok = (bool(g.get("resync_steps")) and
              g["reasons"]["loss"] == len(g["resync_steps"]) and
              g["resync_steps"] == reps[0]["loss"]["resync_steps"] and
              g["totals"]["lossy_calls"] > 0 and
              g["totals"]["fallback_calls"] == 0)
        print("# rank %d under loss: resyncs after steps %s, lost %d of %d, "
              "lossy calls %d" % (r["rank"], g.get("resync_steps"),
                                  g.get("totals", {}).get("lost", -1),
                                  g.get("totals", {}).get("expected", -1),
                                  g.get("totals", {}).get("lossy_calls", -1)))
    if what == "lossy":
        print("# rank %d: path %s, lossy %d, reliable %d (warm-up %d, "
              "fallback %d), lost %d, spread %.3g, |diff to reference| %.3g, "
              "import %.1f s, run %.1f s" % (r["rank"], r["path"], t["lossy_calls"],
                          t["reliable_calls"], t["warmup_calls"],
                          t["fallback_calls"], t["lost"], r["rank_spread"],
                          r["ref_diff"], r["import_seconds"], r["seconds"]))
    if not ok:
        sys.exit(1)
if what == "guard" and not any(r["loss"]["totals"]["lost"] for r in reps):
    sys.exit(1)
PYEOF
}

if [ $st -eq 0 ] && check lossy; then
	ktap_ok "DDP hook: 2 ranks trained, lossy kernel path used, no fallback"
else
	ktap_fail "DDP hook: 2 ranks trained, lossy kernel path used, no fallback"
	explain
fi
if [ $st -eq 0 ] && check ranks; then
	ktap_ok "DDP hook: final parameters identical on both ranks"
else
	ktap_fail "DDP hook: final parameters identical on both ranks"
fi
if [ $st -eq 0 ] && check reference; then
	ktap_ok "DDP hook: parameters == default allreduce within $TOL"
else
	ktap_fail "DDP hook: parameters == default allreduce within $TOL"
fi
if [ $st -eq 0 ] && check staged; then
	ktap_ok "DDP hook: staging path (host buffers), kernel path, same result"
else
	ktap_fail "DDP hook: staging path (host buffers), kernel path, same result"
fi
if [ $st -eq 0 ] && check guard; then
	ktap_ok "DDP hook: drift guard on loss, same steps on both ranks"
else
	ktap_fail "DDP hook: drift guard on loss, same steps on both ranks"
fi
# Rank 0's record of rank 1's death (the line "exit JSON").
if [ $st -eq 0 ] && "$PY" - "$EXIT_STEP" "$OUT/rank.0" <<'PYEOF'
import json, sys
step = int(sys.argv[1])
with open(sys.argv[2]) as fh:
    rec = [json.loads(l[5:]) for l in fh if l.startswith("exit {")]
if len(rec) != 1:
    sys.exit(1)
r = rec[0]
errs = r["errors"]
for e in errs:
    print("# rank 0, step %d raised after %.2f s: %s: %s"
          % (e["step"], e["seconds"], e["type"], e["error"]))
print("# rank 0: %d steps completed, state closed in %.3f s"
      % (r["steps"], r["close_seconds"]))
# It died in step EXIT_STEP's allreduce, which rank 0 may have finished
# first; the next step raised again, with the same error.
ok = (r["raised_at"] in (step, step + 1) and len(errs) == 2 and
      errs[1]["step"] == errs[0]["step"] + 1 and
      all("OptiReduceError: optireduce_allreduce_wait" in e["error"]
          for e in errs) and errs[0]["error"] == errs[1]["error"])
sys.exit(not ok)
PYEOF
then
	ktap_ok "DDP hook: a peer killed mid-step fails the next steps with our error"
else
	ktap_fail "DDP hook: a peer killed mid-step fails the next steps with our error"
fi
echo "# torch hook test took $(( ($(now_ms) - start) / 1000 )) s"
ktap_finish
