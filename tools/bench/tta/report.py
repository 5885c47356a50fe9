# SPDX-License-Identifier: MIT
"""Summary and plots of a time-to-accuracy run (tools/bench/tta/run).

    report.py DIR      reads DIR/summary.csv and DIR/curve.csv, prints the
                       table and the ratios, writes DIR/summary.txt and
                       DIR/tta-PROFILE.png (accuracy vs training wall time);
                       a fabric profile's switch and TCP counters from
                       DIR/fabric-PROFILE/report.

Reports, never judges: the ratios are printed next to the issue's targets.
"""

import csv
import os
import sys

LABELS = {"gloo": "DDP + gloo allreduce",
          "optireduce": "DDP + optireduce (Hadamard on)",
          "optireduce-nohad": "DDP + optireduce (Hadamard off)"}


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(rows, out):
    out.append("%-13s %-17s %5s %9s %7s %7s %8s %8s %9s %9s %6s" % (
        "profile", "contender", "steps", "t->tgt s", "steps", "final",
        "train s", "step ms", "ar ms", "lost", "fallbk"))
    for r in rows:
        out.append("%-13s %-17s %5s %9s %7s %7s %8s %8s %9s %8s%% %6s" % (
            r["profile"], r["contender"], r["steps"],
            fmt(num(r["time_to_target_s"]), ".1f", "not hit"),
            r["steps_to_target"] or "-",
            fmt(num(r["final_acc"]), ".4f"), fmt(num(r["train_s"]), ".1f"),
            fmt(num(r["step_ms_mean"]), ".0f"),
            fmt(num(r["allreduce_ms_mean"]), ".0f"),
            fmt(100 * (num(r["lost_fraction"]) or 0), ".3f"),
            r["fallback_calls"]))


def link_text(r):
    """What the link was: the netem arguments, or a fabric profile's
    description (it starts with "fabric:")."""
    v = r["netem"]
    return v if v.startswith("fabric:") else 'netem "%s"' % v


def fabric_lines(d, profile):
    """What the switch and TCP did during a fabric profile (the fabric
    helper's report), or nothing."""
    try:
        with open(os.path.join(d, "fabric-" + profile, "report")) as f:
            return ["  " + x.strip() for x in f if x.strip()]
    except OSError:
        return []


def ratios(rows, out, d="."):
    by = {(r["profile"], r["contender"]): r for r in rows}
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    for p in profiles:
        any_r = next(r for r in rows if r["profile"] == p)
        out.append("profile %s: %s; link round trip p50 %s ms, "
                   "p99 %s ms, p99/p50 %s (measured)" % (
                       p, link_text(any_r),
                       fmt(num(any_r["link_p50_ms"]), ".2f"),
                       fmt(num(any_r["link_p99_ms"]), ".2f"),
                       fmt(num(any_r["link_p99_p50"]), ".2f")))
        g = by.get((p, "gloo"))
        if g and num(g["allreduce_share"]) is not None:
            out.append("  allreduce share of a gloo DDP step: %.0f%% (step "
                       "%.0f ms, computation alone %.0f ms)" % (
                           100 * num(g["allreduce_share"]),
                           num(g["step_ms_mean"]), num(g["compute_ms"])))
        out += fabric_lines(d, p)
        for c in ("optireduce", "optireduce-nohad"):
            o = by.get((p, c))
            if not (g and o):
                continue
            tg, to = num(g["time_to_target_s"]), num(o["time_to_target_s"])
            ratio = tg / to if tg and to else None
            dacc = 100 * (num(o["final_acc"]) - num(g["final_acc"]))
            want = {"tail": ">= 2", "shared": ">= 2",
                    "fabric-shared": ">= 1.5",
                    "calm": ">= 1 (no slower)"}.get(p, "")
            out.append("  %-17s gloo time-to-target / this one: %s%s; final "
                       "accuracy %+.2f points vs gloo (target: within 0.5)" % (
                           c, fmt(ratio, ".2f", "n/a (target not hit)"),
                           " (target %s)" % want if want else "", dacc))


def plot(rows, curve, out_dir, target):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing (apt-get install "
              "python3-matplotlib): no plots", file=sys.stderr)
        return []
    pngs = []
    for p in dict.fromkeys(r["profile"] for r in curve):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for c in dict.fromkeys(r["contender"] for r in curve):
            pts = [(float(r["wall_s"]), float(r["test_acc"])) for r in curve
                   if r["profile"] == p and r["contender"] == c]
            if pts:
                ax.plot(*zip(*pts), marker=".", label=LABELS.get(c, c))
        if target is not None:
            ax.axhline(target, color="grey", ls="--", lw=0.8,
                       label="target %.2f" % target)
        s = next(r for r in rows if r["profile"] == p)
        model = {"wide": "wide model", "mlp": "MLP"}.get(s.get("model"),
                                                         "MLP")
        params = num(s.get("params"))
        if params:
            model += " (%.2fM parameters)" % (params / 1e6)
        ax.set_title("digits, %s, %s ranks, profile %s (link p99/p50 %s)" % (
            model, s["ranks"], p, fmt(num(s["link_p99_p50"]), ".1f")))
        ax.set_xlabel("training wall time (s, evaluation excluded)")
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        path = os.path.join(out_dir, "tta-%s.png" % p)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        pngs.append(path)
    return pngs


def main(argv):
    if len(argv) != 1:
        print("usage: report.py DIR", file=sys.stderr)
        return 2
    d = argv[0]
    try:
        rows = read(os.path.join(d, "summary.csv"))
        curve = read(os.path.join(d, "curve.csv"))
    except OSError as e:
        print("report: %s" % e, file=sys.stderr)
        return 1
    if not rows:
        print("report: no results in %s" % d, file=sys.stderr)
        return 1
    out = ["== time to test accuracy %s (training wall time, evaluation "
           "excluded; lost: fraction of gradient entries lost)"
           % rows[0]["target"]]
    table(rows, out)
    ratios(rows, out, d)
    pngs = plot(rows, curve, d, num(rows[0]["target"]))
    out += ["csv: %s, %s" % (os.path.join(d, "summary.csv"),
                             os.path.join(d, "curve.csv"))]
    out += ["plot: %s" % p for p in pngs]
    text = "\n".join(out)
    print(text)
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
