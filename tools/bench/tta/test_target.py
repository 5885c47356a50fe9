# SPDX-License-Identifier: MIT
"""Host test of target.py (when a time-to-accuracy run hit its target,
and the seeds' runs together) and of report.py's table and ratios over
seeds: one evaluation cannot decide a hit, the hit is that evaluation's
time and step, medians over odd and even seed counts with misses, ratios
n/a without a majority. No torch. KTAP-ish output."""

import itertools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402
import target  # noqa: E402
from ktap import check, finish  # noqa: E402


def evals(accs, every=5, step_s=0.5):
    """(step, wall_s, accuracy) of evaluations every EVERY steps, each
    step taking STEP_S seconds."""
    return [((i + 1) * every, (i + 1) * every * step_s, a)
            for i, a in enumerate(accs)]


def one_sample():
    a = target.first_hit(evals([0.949, 0.951, 0.950]), 0.95, 3)
    b = target.first_hit(evals([0.950, 0.949, 0.951]), 0.95, 3)
    check(a == b == (7.5, 15),
          "K=3: 0.949,0.951,0.950 and 0.950,0.949,0.951 both hit at the "
          "third evaluation (%s, %s)" % (a, b))
    a1 = target.first_hit(evals([0.949, 0.951, 0.950]), 0.95, 1)
    b1 = target.first_hit(evals([0.950, 0.949, 0.951]), 0.95, 1)
    check(a1 == (5.0, 10) and b1 == (2.5, 5),
          "K=1 (one evaluation decides): they hit at different steps")
    # The issue: with 360 test images gloo had 342 right at step 80
    # (0.95), the other contender 341, the rest of their curves alike.
    g = [x / 360 for x in (318, 330, 334, 336, 338, 339, 340, 342)]
    o = [x / 360 for x in (318, 330, 334, 336, 338, 339, 340, 341)]
    check(target.first_hit(evals(g, 10), 0.95, 1) == (40.0, 80) and
          target.first_hit(evals(o, 10), 0.95, 1) is None,
          "K=1: one image at step 80 makes one hit, the other not")
    check(target.first_hit(evals(g, 10), 0.95, 3) is None and
          target.first_hit(evals(o, 10), 0.95, 3) is None,
          "K=3: neither hits; one image does not part them")
    spike = evals([0.93, 0.96, 0.93, 0.94])
    check(target.first_hit(spike, 0.95, 3) is None and
          target.first_hit(spike, 0.95, 1) == (5.0, 10),
          "K=3: a single evaluation above the target is no hit")
    accs = [0.949, 0.951, 0.950, 0.947, 0.953]
    means = {tuple(target.smoothed(list(p), 5))
             for p in itertools.permutations(accs)}
    check(len(means) == 1, "the mean of a window does not depend on the "
          "order of its evaluations (%s)" % means)


def first_step():
    e = evals([0.5, 0.8, 0.9, 0.94, 0.96, 0.94, 0.97, 0.98])
    check(target.first_hit(e, 0.95, 3) == (17.5, 35),
          "the hit is the evaluation that completes the window: step 35, "
          "its wall time 17.5 s")
    check(target.first_hit(e, 0.95, 1) == (12.5, 25),
          "K=1 is the first evaluation at or above the target")
    check(target.first_hit(evals([0.99, 0.99]), 0.95, 3) is None,
          "fewer than K evaluations decide nothing")
    check(target.first_hit(evals([0.94, 0.96, 0.95]), 0.95, 3) == (7.5, 15)
          and target.first_hit(evals([0.94, 0.96, 0.9499]), 0.95, 3)
          is None, "a mean on the target hits it, one just below does not")
    check(abs(target.final([0.9, 0.95, 0.96, 0.97], 3) - 0.96) < 1e-12 and
          target.final([0.9, 0.92], 3) == 0.91 and
          target.final([], 3) is None,
          "final accuracy: mean of the last K (of all when fewer)")


def seeds():
    s = target.over_seeds([30.0, 10.0, 20.0])
    check(s == {"n": 3, "hits": 3, "median": 20.0, "min": 10.0,
                "max": 30.0}, "3 seeds: median 20, range 10-30 (%s)" % s)
    s = target.over_seeds([10.0, 40.0, 20.0, 30.0])
    check(s["median"] == 25.0 and s["hits"] == 4,
          "4 seeds: median between the middle two (%s)" % s["median"])
    s = target.over_seeds([10.0, None, 30.0])
    check(s == {"n": 3, "hits": 2, "median": 30.0, "min": 10.0,
                "max": 30.0},
          "2 of 3 hit: a miss counts as later than every hit (%s)" % s)
    s = target.over_seeds([10.0, 20.0, None, 30.0])
    check(s["median"] == 25.0 and s["hits"] == 3,
          "3 of 4 hit: median of the middle two hits (%s)" % s["median"])
    none = [target.over_seeds(v) for v in ([10.0, None, None],
                                           [10.0, None, 20.0, None],
                                           [None, None], [])]
    check([x["median"] for x in none] == [None] * 4 and
          [x["hits"] for x in none] == [1, 2, 0, 0] and
          none[0]["min"] == none[0]["max"] == 10.0 and
          none[2]["min"] is None,
          "no majority (1/3, 2/4, 0/2, none): no median; the range of "
          "the hits kept")
    check(target.over_seeds([50.0]) == {"n": 1, "hits": 1, "median": 50.0,
                                        "min": 50.0, "max": 50.0} and
          target.over_seeds([None])["median"] is None,
          "one seed: its own time, or none")
    g = target.over_seeds([30.0, 40.0, 35.0])
    check(target.ratio(g, target.over_seeds([15.0, None, 20.0])) == 1.75,
          "ratio: gloo's median over the other's (35 / 20)")
    check(target.ratio(g, target.over_seeds([None, None, 50.0])) is None and
          target.ratio(target.over_seeds([30.0, None, None]), g) is None,
          "ratio n/a when the other or gloo missed on most seeds")
    m = target.mean_range([0.95, None, 0.97])
    check(abs(m[0] - 0.96) < 1e-12 and m[1:] == (0.95, 0.97) and
          target.mean_range([None]) == (None, None, None),
          "final accuracy over seeds: mean and range of those that ran")


def row(contender, seed, t, final):
    """A summary.csv row as report.py reads it (strings, '' for none)."""
    return {"profile": "tail", "contender": contender, "seed": str(seed),
            "steps": "160", "target": "0.95", "smooth": "3",
            "eval_every": "5", "test_images": "540",
            "time_to_target_s": "" if t is None else str(t),
            "steps_to_target": "" if t is None else str(int(t) * 2),
            "final_acc": str(final), "train_s": "80", "step_ms_mean": "500",
            "allreduce_ms_mean": "", "lost_fraction": "0",
            "fallback_calls": "1", "netem": "delay 8ms", "link_p50_ms": "1",
            "link_p99_ms": "3", "link_p99_p50": "3", "compute_ms": "",
            "allreduce_share": ""}


def report_seeds():
    rows = []
    for s, (g, o, n) in enumerate([(30, 15, None), (40, None, None),
                                   (35, 20, 50)], 1):
        rows += [row("gloo", s, g, 0.96), row("optireduce", s, n, 0.95),
                 row("optireduce-nohad", s, o, 0.955)]
    out = report.header(rows)
    report.table(rows, out)
    lines = {ln.split()[1]: ln.split() for ln in out
             if ln.startswith("tail ")}
    report.ratios(rows, out)
    report.seed_table(rows, out)
    text = "\n".join(out)
    check(lines.get("gloo", [])[2:6] == ["3/3", "35.0", "30.0-40.0", "70"]
          and lines.get("optireduce-nohad", [])[2:6] ==
          ["2/3", "20.0", "15.0-20.0", "40"] and
          lines.get("optireduce", [])[2:5] == ["1/3", "not", "hit"],
          "report: hits, median time, range, median steps per contender")
    check(lines.get("gloo", [])[6:8] == ["0.9600", "0.9600-0.9600"] and
          lines.get("gloo", [])[-1] == "3",
          "report: final accuracy mean and range; fallback calls summed")
    check("optireduce-nohad  gloo time-to-target / this one (medians): "
          "1.75" in text and "-0.50 points vs gloo" in text,
          "report: ratio of the medians, final accuracy difference")
    check("optireduce        gloo time-to-target / this one (medians): "
          "n/a (target hit by gloo on 3/3 seeds, this one 1/3)" in text,
          "report: n/a when the contender missed on most seeds")
    check("per seed:" in text and sum(ln.startswith("tail ") for ln in out)
          == 12 and "mean over the last 3 evaluations" in out[0] and
          "on 540 test images" in out[0],
          "report: the rule in the header, then one row per seed")


one_sample()
first_step()
seeds()
report_seeds()
finish(25)
