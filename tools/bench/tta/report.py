# SPDX-License-Identifier: MIT
"""Summary and plots of a time-to-accuracy run (tools/bench/tta/run).

    report.py DIR      reads DIR/summary.csv and DIR/curve.csv, prints the
                       table over the seeds, the ratios and the table per
                       seed, writes DIR/summary.txt and DIR/tta-PROFILE.png
                       (accuracy vs training wall time, every seed's
                       curve); a fabric profile's switch and TCP counters
                       from DIR/fabric-PROFILE/report.

Per profile and contender: the median time (and steps) to target over the
seeds, its range over the seeds that hit, how many hit, and the final
accuracy's mean and range (target.py). The ratios against gloo are of
the medians. Reports, never judges: the ratios are printed next to the
issue's targets.
"""

import csv
import os
import sys

import target

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


def groups(rows):
    """The rows of each (profile, contender), in the order they ran."""
    g = {}
    for r in rows:
        g.setdefault((r["profile"], r["contender"]), []).append(r)
    return g


def summarize(rs):
    """One profile and contender over its seeds (target.py)."""
    def col(k):
        return [num(r[k]) for r in rs]

    return {"time": target.over_seeds(col("time_to_target_s")),
            "steps": target.over_seeds(col("steps_to_target")),
            "final": target.mean_range(col("final_acc")),
            "step_ms": target.mean_range(col("step_ms_mean"))[0],
            "ar_ms": target.mean_range(col("allreduce_ms_mean"))[0],
            "lost": target.mean_range(col("lost_fraction"))[0],
            "share": target.mean_range(col("allreduce_share"))[0],
            "fallback": sum(int(v or 0) for v in col("fallback_calls"))}


def span(lo, hi, spec):
    return "-" if lo is None else "%s-%s" % (format(lo, spec),
                                             format(hi, spec))


def table(rows, out):
    """Per profile and contender over the seeds: how many hit the target,
    the median time and steps to it (none unless most seeds hit), the
    fastest to slowest hit, the final accuracy's mean and range; step and
    allreduce time and losses as means over the seeds, fallback calls
    summed."""
    out.append("%-13s %-17s %5s %9s %13s %6s %7s %13s %8s %7s %9s %6s" % (
        "profile", "contender", "hit", "t->tgt s", "t range s", "steps",
        "final", "final range", "step ms", "ar ms", "lost", "fallbk"))
    for (p, c), rs in groups(rows).items():
        s = summarize(rs)
        t, f = s["time"], s["final"]
        out.append("%-13s %-17s %5s %9s %13s %6s %7s %13s %8s %7s %8s%% %6d"
                   % (p, c, "%d/%d" % (t["hits"], t["n"]),
                      fmt(t["median"], ".1f", "not hit"),
                      span(t["min"], t["max"], ".1f"),
                      fmt(s["steps"]["median"], ".0f"), fmt(f[0], ".4f"),
                      span(f[1], f[2], ".4f"), fmt(s["step_ms"], ".0f"),
                      fmt(s["ar_ms"], ".0f"),
                      fmt(100 * (s["lost"] or 0), ".3f"), s["fallback"]))


def seed_table(rows, out):
    """Every run, one per profile, seed and contender."""
    out.append("per seed:")
    out.append("%-13s %-17s %4s %5s %9s %7s %7s %8s %8s %9s %9s %6s" % (
        "profile", "contender", "seed", "steps", "t->tgt s", "steps",
        "final", "train s", "step ms", "ar ms", "lost", "fallbk"))
    for r in rows:
        out.append("%-13s %-17s %4s %5s %9s %7s %7s %8s %8s %9s %8s%% %6s" % (
            r["profile"], r["contender"], r.get("seed") or "-", r["steps"],
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
    by = {k: summarize(rs) for k, rs in groups(rows).items()}
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
        if g and g["share"] is not None:
            out.append("  allreduce share of a gloo DDP step: %.0f%% (step "
                       "%.0f ms, computation alone %.0f ms)" % (
                           100 * g["share"], g["step_ms"],
                           num(any_r["compute_ms"])))
        out += fabric_lines(d, p)
        for c in ("optireduce", "optireduce-nohad"):
            o = by.get((p, c))
            if not (g and o):
                continue
            ratio = target.ratio(g["time"], o["time"])
            dacc = 100 * (o["final"][0] - g["final"][0])
            want = {"tail": ">= 2", "shared": ">= 2",
                    "fabric-shared": ">= 1.5",
                    "calm": ">= 1 (no slower)"}.get(p, "")
            na = "n/a (target hit by gloo on %d/%d seeds, this one %d/%d)" % (
                g["time"]["hits"], g["time"]["n"], o["time"]["hits"],
                o["time"]["n"])
            out.append("  %-17s gloo time-to-target / this one (medians): "
                       "%s%s; final accuracy %+.2f points vs gloo (target: "
                       "within 0.5)" % (c, fmt(ratio, ".2f", na),
                                        " (target %s)" % want if want else "",
                                        dacc))


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
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, c in enumerate(dict.fromkeys(r["contender"] for r in curve)):
            # Every seed's curve in the contender's colour, labelled once.
            seeds = dict.fromkeys(r.get("seed") for r in curve
                                  if r["profile"] == p and
                                  r["contender"] == c)
            for j, sd in enumerate(seeds):
                pts = [(float(r["wall_s"]), float(r["test_acc"]))
                       for r in curve if r["profile"] == p and
                       r["contender"] == c and r.get("seed") == sd]
                ax.plot(*zip(*pts), marker=".", ms=3, lw=1,
                        color=colours[i % len(colours)],
                        label=None if j else LABELS.get(c, c))
        if target is not None:
            ax.axhline(target, color="grey", ls="--", lw=0.8,
                       label="target %.2f" % target)
        s = next(r for r in rows if r["profile"] == p)
        model = {"wide": "wide model", "mlp": "MLP"}.get(s.get("model"),
                                                         "MLP")
        params = num(s.get("params"))
        if params:
            model += " (%.2fM parameters)" % (params / 1e6)
        nseeds = len({r.get("seed") for r in rows if r["profile"] == p})
        ax.set_title("digits, %s, %s ranks, profile %s (link p99/p50 %s)%s"
                     % (model, s["ranks"], p,
                        fmt(num(s["link_p99_p50"]), ".1f"),
                        ", %d seeds" % nseeds if nseeds > 1 else ""),
                     fontsize=10)
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


def header(rows):
    """What the figures are. Rows of a run from before the seeds have no
    seed, smooth, eval_every or test_images: one run, a single evaluation
    decided the hit, the final accuracy was the mean of three."""
    r = rows[0]
    k = r.get("smooth") or ""
    how = ("the first evaluation whose mean over the last %s evaluations "
           "reaches it" % k if k else "the first evaluation at or above it")
    on = ""
    if r.get("eval_every") and r.get("test_images"):
        on = "; evaluations every %s steps, on %s test images" % (
            r["eval_every"], r["test_images"])
    seeds = list(dict.fromkeys(x.get("seed") or "-" for x in rows))
    return ["== time to test accuracy %s: training wall time (evaluation "
            "excluded) at %s%s" % (r["target"], how, on),
            "   %d seed(s) (%s) per contender. t->tgt s, steps: medians over "
            "the seeds, 'not hit' unless most seeds hit; t range: fastest "
            "to slowest hit; final: the mean of the last %s evaluations, "
            "mean and range over the seeds; lost: fraction of gradient "
            "entries lost" % (len(seeds), ",".join(seeds), k or "3")]


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
    out = header(rows)
    table(rows, out)
    ratios(rows, out, d)
    if any(len(rs) > 1 for rs in groups(rows).values()):
        seed_table(rows, out)
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
