#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw output of an allreduce-bench run into a CSV, plots and a
summary table.

    allreduce_plot.py RAW_DIR [--out DIR] [--check] [--no-plots]

RAW_DIR holds meta.txt, profiles.txt and PROFILE.CONTENDER.RANK.out files
(the per-rank lines of allreduce_bench). Writes into DIR (default: RAW_DIR's
parent):
    allreduce.csv     one row per profile x contender x size
    samples.csv       every measured call of every rank
    cdf-PROFILE.png   completion-time CDF per size, one line per contender
    p99-vs-size.png   p99 completion time against buffer size, per profile
and prints the summary on stdout. Reports numbers; never judges them.
--check (the smoke mode): exit 1 unless every contender has results for
every profile and size and the CSV reads back well-formed.
Exit 2 on a bad command line.
"""
import csv
import math
import os
import sys

CSV_FIELDS = [
    "profile", "link_rtt_p50_ms", "link_rtt_p99_ms", "link_p99_p50",
    "link_probes_lost", "contender", "ranks", "bytes", "samples",
    "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms", "goodput_gbps",
    "lost_fraction", "reliable_calls", "lossy_calls", "dtype", "wire_bytes",
]
BASELINE = "gloo-ring"
LABEL = {
    "optireduce": "OptiReduce (kernel)",
    "tar-tcp": "TAR+TCP (liboptireduce)",
    "gloo-ring": "Gloo ring",
    "gloo-ring-chunked": "Gloo ring_chunked",
    "gloo-halving-doubling": "Gloo halving_doubling",
    "gloo-bcube": "Gloo bcube",
    "optireduce-bf16": "OptiReduce (kernel), bfloat16",
    "optireduce-rc": "OptiReduce (kernel), rate control",
    "tar-tcp-bf16": "TAR+TCP (liboptireduce), bfloat16",
    "gloo-ring-fp16": "Gloo ring, float16",
}


def usage():
    sys.stderr.write("usage: allreduce_plot.py RAW_DIR [--out DIR] [--check] "
                     "[--no-plots]\n")
    sys.exit(2)


def size_label(b):
    b = int(b)
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%dM" % (b >> 20)
    if b >= 1 << 10 and b % (1 << 10) == 0:
        return "%dK" % (b >> 10)
    return str(b)


def pct(sorted_v, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_v:
        return float("nan")
    k = max(1, int(math.ceil(p / 100.0 * len(sorted_v))))
    return sorted_v[min(k, len(sorted_v)) - 1]


def read_meta(raw):
    meta = {}
    with open(os.path.join(raw, "meta.txt")) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            if k == "param":    # "param NAME VALUE", one a parameter
                meta.setdefault("params", []).append("=".join(v.split()))
            else:
                meta[k] = v
    return meta


def read_profiles(raw):
    """profile -> (p50, p99, lost) of the UDP round trips."""
    out = {}
    path = os.path.join(raw, "profiles.txt")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 2 or w[0] != "profile":
                continue
            name = w[1]
            try:
                i = w.index("rtt_ms")
            except ValueError:
                continue
            kv = w[i + 1:]
            if kv and kv[0] == "none":
                out[name] = (float("nan"), float("nan"), int(kv[2]))
                continue
            d = dict(zip(kv[0::2], kv[1::2]))
            out[name] = (float(d["p50"]), float(d["p99"]), int(d["lost"]))
    return out


def read_samples(raw, meta):
    """(profile, contender, bytes) -> list of per-call dicts, and the list
    of every sample: only of sizes that every rank finished with a right
    result (its "size" line says bad=0). A contender that failed part
    way, or summed wrong, gives no figures for that size."""
    groups, rows, done, wire = {}, [], {}, {}
    ranks = int(meta.get("ranks", 0))
    for fn in sorted(os.listdir(raw)):
        if not fn.endswith(".out"):
            continue
        # PROFILE.CONTENDER.RANK.out; profile names may contain dots.
        base = fn[:-4]
        prof_cont, _, rank = base.rpartition(".")
        profile, _, contender = prof_cont.rpartition(".")
        if not profile or not rank.isdigit():
            continue
        with open(os.path.join(raw, fn)) as f:
            for line in f:
                w = line.split()
                if len(w) == 6 and w[0] == "size" and w[5] == "bad=0":
                    done.setdefault((profile, contender, int(w[3])),
                                    set()).add(int(w[2]))
                if len(w) == 6 and w[0] == "wire":
                    kv = dict(x.split("=", 1) for x in w[4:])
                    wire.setdefault((profile, contender, int(w[3])),
                                    []).append((kv["dtype"],
                                                int(kv["sent_bytes"])))
                if len(w) != 10 or w[0] != "iter":
                    continue
                s = {
                    "profile": profile, "contender": w[1], "rank": int(w[2]),
                    "bytes": int(w[3]), "iter": int(w[4]),
                    "ms": int(w[5]) / 1e6, "lost": int(w[6]),
                    "expected": int(w[7]), "path": w[8],
                    "start_ns": int(w[9]),
                }
                rows.append(s)
                groups.setdefault((profile, contender, s["bytes"]), []).append(s)
    unfinished = [k for k in groups if len(done.get(k, ())) != ranks]
    for k in sorted(unfinished):
        print("== %s under %s, %d bytes: not every rank finished it right; "
              "left out" % (k[1], k[0], k[2]))
        del groups[k]
    rows = [s for s in rows if (s["profile"], s["contender"], s["bytes"])
            in groups]
    return groups, rows, wire


def summarize(groups, profiles, ranks, wire):
    table = []
    for (profile, contender, nbytes), ss in groups.items():
        # What crossed: the type, and the payload of one call per rank
        # (the mean over the ranks' "wire" lines).
        w = wire.get((profile, contender, nbytes), [])
        t = sorted(s["ms"] for s in ss)
        lost = sum(s["lost"] for s in ss)
        expected = sum(s["expected"] for s in ss)
        lf = lost / expected if expected else 0.0
        mean = sum(t) / len(t)
        link = profiles.get(profile, (float("nan"), float("nan"), 0))
        table.append({
            "profile": profile,
            "link_rtt_p50_ms": link[0], "link_rtt_p99_ms": link[1],
            "link_p99_p50": link[1] / link[0] if link[0] > 0 else float("nan"),
            "link_probes_lost": link[2],
            "contender": contender, "ranks": ranks, "bytes": nbytes,
            "samples": len(t),
            "p50_ms": pct(t, 50), "p90_ms": pct(t, 90), "p99_ms": pct(t, 99),
            "max_ms": t[-1], "mean_ms": mean,
            # Payload reduced per second, what arrived: the buffer less
            # the lost share, over the mean completion time.
            "goodput_gbps": nbytes * (1 - lf) * 8 / (mean * 1e6),
            "lost_fraction": lf,
            "reliable_calls": sum(s["path"] == "reliable" for s in ss),
            "lossy_calls": sum(s["path"] == "lossy" for s in ss),
            "dtype": w[0][0] if w else "float32",
            "wire_bytes": (sum(b for _, b in w) / len(w) if w
                           else float("nan")),
        })
    return table


def fmt(v, spec="%.3f"):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return spec % v if isinstance(v, float) else str(v)


def write_csv(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: fmt(r[k], "%.6g") for k in fields})


def check_csv(path, want):
    """Errors of the CSV: columns, numbers, and every wanted row present."""
    errs = []
    seen = set()
    with open(path, newline="") as f:
        rd = csv.reader(f)
        header = next(rd, None)
        if header != CSV_FIELDS:
            return ["header is %r" % header]
        for n, row in enumerate(rd, 2):
            if len(row) != len(CSV_FIELDS):
                errs.append("line %d: %d fields" % (n, len(row)))
                continue
            r = dict(zip(CSV_FIELDS, row))
            for k in CSV_FIELDS:
                if k in ("profile", "contender", "dtype"):
                    continue
                try:
                    v = float(r[k])
                except ValueError:
                    errs.append("line %d: %s=%r is not a number" % (n, k, r[k]))
                    continue
                if k.startswith("link_"):
                    continue
                if math.isnan(v) or v < 0:
                    errs.append("line %d: %s=%s" % (n, k, r[k]))
            if r["samples"].isdigit() and int(r["samples"]) == 0:
                errs.append("line %d: no samples" % n)
            seen.add((r["profile"], r["contender"], r["bytes"]))
    for key in want:
        if key not in seen:
            errs.append("no results for profile %s, contender %s, %s bytes" % key)
    return errs


def grid(plt, n):
    """A figure of n panels, three to a row; returns it, panel(k)."""
    cols = min(n, 3)
    rws = (n + cols - 1) // cols
    fig, axes = plt.subplots(rws, cols, figsize=(5 * cols, 3.6 * rws),
                             squeeze=False)
    for k in range(n, rws * cols):
        axes[k // cols][k % cols].axis("off")
    return fig, lambda k: axes[k // cols][k % cols]


def save(plt, fig, panel, path, made):
    panel(0).legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    made.append(path)


def plots(table, groups, profiles, contenders, sizes, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for profile in profiles:
        fig, panel = grid(plt, len(sizes))
        for k, b in enumerate(sizes):
            ax = panel(k)
            for c in contenders:
                t = sorted(s["ms"] for s in groups.get((profile, c, b), []))
                if not t:
                    continue
                y = [(i + 1) / len(t) for i in range(len(t))]
                ax.step(t, y, where="post", label=LABEL.get(c, c))
            ax.set_xscale("log")
            ax.set_title("%s, %s" % (profile, size_label(b)))
            ax.set_xlabel("completion time (ms)")
            ax.set_ylabel("CDF")
            ax.grid(True, alpha=0.3)
        save(plt, fig, panel, os.path.join(outdir, "cdf-%s.png" % profile),
             made)

    fig, panel = grid(plt, len(profiles))
    for k, profile in enumerate(profiles):
        ax = panel(k)
        for c in contenders:
            pts = sorted((r["bytes"], r["p99_ms"]) for r in table
                         if r["profile"] == profile and r["contender"] == c)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        label=LABEL.get(c, c))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([size_label(b) for b in sizes])
        ax.set_title("p99 vs size, %s" % profile)
        ax.set_xlabel("buffer")
        ax.set_ylabel("p99 completion time (ms)")
        ax.grid(True, alpha=0.3)
    save(plt, fig, panel, os.path.join(outdir, "p99-vs-size.png"), made)
    return made


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else float("nan")


def print_summary(table, profiles_seen, profiles, contenders, sizes, meta):
    idx = {(r["profile"], r["contender"], r["bytes"]): r for r in table}
    print("== allreduce-bench summary: %s ranks, %s, mode %s, Hadamard %s"
          % (meta.get("ranks"), meta.get("kernel"), meta.get("mode"),
             meta.get("hadamard")))
    if meta.get("params"):
        print("   optireduce.ko loaded with %s" % " ".join(meta["params"]))
    print("   times in ms, every rank's own calls pooled; x ring = this p50 (p99)"
          " / Gloo ring's p50 (p99) of the same profile and size")
    for profile in profiles:
        link = profiles_seen.get(profile)
        if link:
            print("-- profile %s: link rtt p50 %.2f ms, p99 %.2f ms, P99/P50 %.2f"
                  " (UDP probes lost: %d)" % (profile, link[0], link[1],
                                              ratio(link[1], link[0]), link[2]))
        else:
            print("-- profile %s: link not measured" % profile)
        hdr = "   %-5s %-22s %5s %9s %9s %9s %9s %7s %8s %8s %8s %10s" % (
            "size", "contender", "n", "p50", "p90", "p99", "max", "p99/p50",
            "Gbit/s", "x ring50", "x ring99", "lost")
        print(hdr)
        for b in sizes:
            base = idx.get((profile, BASELINE, b))
            for c in contenders:
                r = idx.get((profile, c, b))
                if not r:
                    print("   %-5s %-22s (no results)" % (size_label(b), c))
                    continue
                lost = ("%.4f%%" % (100 * r["lost_fraction"])
                        if c.startswith("optireduce") else "-")
                if c.startswith("optireduce") and r["reliable_calls"]:
                    lost += " (%d reliable)" % r["reliable_calls"]
                print("   %-5s %-22s %5d %9.2f %9.2f %9.2f %9.2f %7.2f %8.3f %8s %8s %10s" % (
                    size_label(b), c, r["samples"], r["p50_ms"], r["p90_ms"],
                    r["p99_ms"], r["max_ms"], ratio(r["p99_ms"], r["p50_ms"]),
                    r["goodput_gbps"],
                    fmt(ratio(r["p50_ms"], base["p50_ms"]), "%.2f") if base else "-",
                    fmt(ratio(r["p99_ms"], base["p99_ms"]), "%.2f") if base else "-",
                    lost))

    # 16-bit contenders against their float32 twins: bytes and time.
    pairs = [(c, c.rsplit("-", 1)[0]) for c in contenders
             if c.endswith(("-bf16", "-fp16"))]
    if pairs:
        print("== 16 bits on the wire: payload a rank sends per call, and "
              "p50, against the same contender in float32")
        for profile in profiles:
            for b in sizes:
                for c, twin in pairs:
                    r, t = idx.get((profile, c, b)), idx.get((profile, twin, b))
                    if not r or not t:
                        continue
                    print("   %-8s %-5s %-16s %s %9.1f KiB vs %9.1f KiB (x%.2f),"
                          " p50 %8.2f ms vs %8.2f ms (x%.2f)" % (
                              profile, size_label(b), c, r["dtype"],
                              r["wire_bytes"] / 1024, t["wire_bytes"] / 1024,
                              ratio(r["wire_bytes"], t["wire_bytes"]),
                              r["p50_ms"], t["p50_ms"],
                              ratio(r["p50_ms"], t["p50_ms"])))

    # The target figures, as numbers.
    print("== target ratios (numbers only; OptiReduce = kernel transport)")
    tail = None
    for p in profiles:
        if p.startswith("tail"):
            link = profiles_seen.get(p)
            # The tail profile whose measured P99/P50 is nearest 3.
            if link and link[0] > 0:
                d = abs(link[1] / link[0] - 3)
                if tail is None or d < tail[1]:
                    tail = (p, d)
    for b in sizes:
        o = lambda p: idx.get((p, "optireduce", b))
        g = lambda p: idx.get((p, BASELINE, b))
        parts = []
        if tail and o(tail[0]) and g(tail[0]):
            parts.append("p99 OptiReduce/Gloo ring under %s: %.2f" % (
                tail[0], ratio(o(tail[0])["p99_ms"], g(tail[0])["p99_ms"])))
        if tail and o(tail[0]):
            parts.append("OptiReduce own p99/p50 under %s: %.2f" % (
                tail[0], ratio(o(tail[0])["p99_ms"], o(tail[0])["p50_ms"])))
        if o("calm") and g("calm"):
            parts.append("calm p50 OptiReduce/Gloo ring: %.2f" % ratio(
                o("calm")["p50_ms"], g("calm")["p50_ms"]))
        lost = ["%s %.4f%%" % (p, 100 * o(p)["lost_fraction"])
                for p in profiles if o(p)]
        if lost:
            parts.append("entries lost: " + ", ".join(lost))
        if parts:
            print("   %-5s %s" % (size_label(b), "\n         ".join(parts)))


def read_fabric(raw):
    """The fabric's link rate in bit/s, from profiles.fabric, or None."""
    path = os.path.join(raw, "profiles.fabric")
    if not os.path.exists(path):
        return None
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bit": 1}
    with open(path) as f:
        for line in f:
            for w in line.split():
                k, _, v = w.partition("=")
                if k != "rate":
                    continue
                for u, m in units.items():
                    if v.endswith(u):
                        try:
                            return float(v[:-len(u)]) * m
                        except ValueError:
                            return None
    return None


def read_cotenant(raw, profile, contender):
    """The long co-tenant flows' goodput, Mbit/s summed over the flows,
    over the contender's whole run in the profile (PROFILE.NAME.cotenant,
    from allreduce-bench), or None."""
    path = os.path.join(raw, "%s.%s.cotenant" % (profile, contender))
    try:
        with open(path) as f:
            words = f.read().split()
    except OSError:
        return None
    vals = []
    for w in words:
        k, _, v = w.partition("=")
        if k.endswith("_mbps"):
            try:
                vals.append(float(v))
            except ValueError:
                return None
    return sum(vals) if vals else None


def cotenant_in_calls(raw, profile, contender, groups):
    """The long co-tenant flows' goodput, Mbit/s, while the contender's
    measured calls ran: over each size's span from its first call's start
    to its last call's end on any rank, leaving out the communicator
    set-up and OptiReduce's reliable warm-up calls between them. From the
    flows' bytes sampled every second (.cotenant.samples: monotonic
    seconds, bytes), interpolated at the spans' ends; None without
    samples around a span."""
    path = os.path.join(raw, "%s.%s.cotenant.samples" % (profile, contender))
    pts = []
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 2:
                    pts.append((float(w[0]), float(w[1])))
    except (OSError, ValueError):
        return None
    pts.sort()

    def at(t):
        for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * ((t - t0) / (t1 - t0) if t1 > t0
                                         else 0)
        return None

    moved = secs = 0.0
    for (p, c, _), calls in groups.items():
        if p != profile or c != contender or not calls:
            continue
        t0 = min(s["start_ns"] for s in calls) / 1e9
        t1 = max(s["start_ns"] / 1e9 + s["ms"] / 1e3 for s in calls)
        b0, b1 = at(t0), at(t1)
        if b0 is None or b1 is None or t1 <= t0:
            return None
        moved += b1 - b0
        secs += t1 - t0
    return moved * 8 / secs / 1e6 if secs else None


def print_cotenants(raw, profiles, contenders, groups):
    """What the long co-tenant flows kept while each contender's measured
    calls ran (its whole run's figure in brackets), and the target: at
    least 0.8 of it beside OptiReduce with rate control as beside TAR
    over TCP."""
    for p in profiles:
        got = []
        for c in contenders:
            run = read_cotenant(raw, p, c)
            calls = cotenant_in_calls(raw, p, c, groups)
            if run is not None or calls is not None:
                got.append((c, calls, run))
        if not got:
            continue
        print("   %-13s co-tenant long flows, Mbit/s during each contender's "
              "calls (whole run): %s" % (p, ", ".join(
                  "%s %s (%s)" % (c, "-" if v is None else "%.1f" % v,
                                  "-" if r is None else "%.1f" % r)
                  for c, v, r in got)))
        by = {c: (v, r) for c, v, r in got}
        rc, tar = by.get("optireduce-rc"), by.get("tar-tcp")
        if not rc or not tar:
            continue
        for k, what in ((0, "during the calls"), (1, "whole runs")):
            if rc[k] is not None and tar[k]:
                print("   %-13s co-tenant share rc/TAR+TCP %.2f %s (>= 0.8)"
                      % (p, rc[k] / tar[k], what))


def print_fabric_targets(table, profiles, contenders, sizes, ranks, rate):
    """Issue 27's targets in the fabric profiles, as numbers: OptiReduce
    with rate control (optireduce-rc) against Gloo ring, the best Gloo
    algorithm, TAR over TCP and OptiReduce with fixed pacing; its mean
    against the link-rate bound, 2(N-1)/N of the buffer at the link
    rate (a rank sends and receives that much)."""
    idx = {(r["profile"], r["contender"], r["bytes"]): r for r in table}
    fab = [p for p in profiles if p.startswith("fabric")]
    if not fab or "optireduce-rc" not in contenders:
        return
    print("== fabric targets (numbers only; rc = OptiReduce with rate "
          "control, fixed = without)")
    for p in fab:
        for b in sizes:
            rc = idx.get((p, "optireduce-rc", b))
            if not rc:
                continue
            gloo = [idx[(p, c, b)] for c in contenders
                    if c.startswith("gloo-") and not c.endswith("-fp16")
                    and (p, c, b) in idx]
            best = min(gloo, key=lambda r: r["p99_ms"]) if gloo else None
            ring = idx.get((p, BASELINE, b))
            tar = idx.get((p, "tar-tcp", b))
            fixed = idx.get((p, "optireduce", b))
            parts = []
            if ring:
                parts.append("p99 rc/Gloo ring %.2f (<= 0.5)"
                             % ratio(rc["p99_ms"], ring["p99_ms"]))
            if tar:
                parts.append("p99 rc/TAR+TCP %.2f (<= 0.7)"
                             % ratio(rc["p99_ms"], tar["p99_ms"]))
            if best:
                parts.append("p99 rc/best Gloo (%s) %.2f (< 1)" % (
                    best["contender"][5:], ratio(rc["p99_ms"],
                                                 best["p99_ms"])))
            if rate and ranks and p == "fabric":
                bound = 2 * (ranks - 1) / ranks * b * 8 / rate * 1e3
                parts.append("mean rc/link-rate bound %.2f (<= 1.1; bound "
                             "%.1f ms)" % (ratio(rc["mean_ms"], bound), bound))
            parts.append("lost rc %.3f%% (< 1%%)" % (100 * rc["lost_fraction"]))
            if fixed:
                parts.append("lost rc/fixed %.3f (<= 0.2; fixed %.2f%%)" % (
                    ratio(rc["lost_fraction"], fixed["lost_fraction"]),
                    100 * fixed["lost_fraction"]))
            parts.append("own p99/p50 %.2f (<= 1.5)"
                         % ratio(rc["p99_ms"], rc["p50_ms"]))
            print("   %-13s %-5s %s" % (p, size_label(b),
                                      "\n                       ".join(parts)))


def main(argv):
    raw, out, check, do_plots = None, None, False, True
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--out" and i + 1 < len(argv):
            out = argv[i + 1]
            i += 1
        elif a == "--check":
            check = True
        elif a == "--no-plots":
            do_plots = False
        elif a.startswith("-") or raw is not None:
            usage()
        else:
            raw = a
        i += 1
    if raw is None:
        usage()
    out = out or os.path.dirname(os.path.abspath(raw))
    try:
        meta = read_meta(raw)
    except OSError as e:
        print("allreduce_plot: %s" % e, file=sys.stderr)
        return 1
    profiles = meta.get("profiles", "").split(",")
    contenders = meta.get("contenders", "").split(",")
    sizes = []
    for s in meta.get("sizes", "").split(","):
        m = {"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20}
        sizes.append(int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s))
    ranks = int(meta.get("ranks", 0))
    profiles_seen = read_profiles(raw)
    groups, rows, wire = read_samples(raw, meta)
    table = summarize(groups, profiles_seen, ranks, wire)
    order = {c: k for k, c in enumerate(contenders)}
    porder = {p: k for k, p in enumerate(profiles)}
    table.sort(key=lambda r: (porder.get(r["profile"], 99),
                              order.get(r["contender"], 99), r["bytes"]))
    os.makedirs(out, exist_ok=True)
    csv_path = os.path.join(out, "allreduce.csv")
    write_csv(csv_path, CSV_FIELDS, table)
    write_csv(os.path.join(out, "samples.csv"),
              ["profile", "contender", "rank", "bytes", "iter", "ms", "lost",
               "expected", "path", "start_ns"], rows)
    print_summary(table, profiles_seen, profiles, contenders, sizes, meta)
    print_fabric_targets(table, profiles, contenders, sizes, ranks,
                         read_fabric(raw))
    print_cotenants(raw, profiles, contenders, groups)
    made = []
    if do_plots and table:
        made = plots(table, groups, profiles, contenders, sizes, out)
    print("== wrote %s, %s%s" % (csv_path, os.path.join(out, "samples.csv"),
                                "".join(", " + p for p in made)))
    status = 0
    # "failed P C attempt N" and, after a second attempt that went well,
    # "recovered P C attempt 2". A failure never recovered fails the run
    # if it was one of ours; Gloo's own (allreduce-bench gives it two
    # attempts) is reported, its rows are what its ranks finished.
    if os.path.exists(os.path.join(raw, "failures.txt")):
        failed, recovered = [], set()
        with open(os.path.join(raw, "failures.txt")) as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[0] == "recovered":
                    recovered.add((w[1], w[2]))
                elif len(w) >= 3:
                    failed.append((w[1], w[2]))
        for p, c in sorted(set(failed)):
            if (p, c) in recovered:
                print("== %s under %s failed once; its second attempt is "
                      "the one measured (raw/%s.%s.*.failed.err)"
                      % (c, p, p, c))
            elif c.startswith("gloo-"):
                print("== %s under %s failed inside Gloo (%d attempts); "
                      "its rows are the sizes all its ranks finished "
                      "(raw/%s.%s.*.err)" % (c, p, failed.count((p, c)),
                                             p, c))
            else:
                print("== run failed: %s under %s" % (c, p))
                status = 1
    if check:
        want = [(p, c, str(b)) for p in profiles for c in contenders
                for b in sizes]
        errs = check_csv(csv_path, want)
        # Every rank of every contender must have said it finished well.
        for p in profiles:
            for c in contenders:
                for r in range(ranks):
                    fn = os.path.join(raw, "%s.%s.%d.out" % (p, c, r))
                    try:
                        with open(fn) as f:
                            ok = any(l.startswith("done ") and l.rstrip().endswith("ok=1")
                                     for l in f)
                    except OSError:
                        ok = False
                    if not ok:
                        errs.append("%s: rank %d of %s did not finish well" % (p, r, c))
        for e in errs:
            print("smoke: %s" % e)
        print("smoke: %s (%d contenders x %d profiles x %d sizes, %d rows)" % (
            "FAIL" if errs else "ok", len(contenders), len(profiles),
            len(sizes), len(table)))
        if errs:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
