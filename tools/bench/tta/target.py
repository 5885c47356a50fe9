# SPDX-License-Identifier: MIT
"""When a time-to-accuracy run hit its target, and what several seeds' runs
say together (tools/bench/tta/run). No torch: tta_rank.py decides the hit
with it in the guest, report.py aggregates the seeds with it on the host,
and test_target.py tests it with a plain python3.

A single evaluation must not decide: with a few hundred test images one
image is a quarter of a point, and the accuracy moves by about a point
from one evaluation to the next near the target. So the hit is the first
evaluation at which the mean of the last K evaluations reaches the
target, and a contender's time is the median over seeds.
"""

import math
import statistics

# An accuracy is a count over the test images; a mean of K of them that
# is the target on paper can come out one rounding step below it.
EPS = 1e-9


def smoothed(accs, k):
    """From the K-th evaluation on, the mean of the last K accuracies.
    fsum: the same mean whatever the order of the K (a plain sum can
    differ in its last bit, and decide a hit that sits on the target)."""
    if k < 1:
        raise ValueError("a window of %r evaluations" % k)
    return [math.fsum(accs[i - k + 1:i + 1]) / k
            for i in range(k - 1, len(accs))]


def first_hit(evals, target, k):
    """evals: (step, wall_s, accuracy) per evaluation, in training order,
    the untrained model's left out. The first evaluation at which the mean
    of the last K accuracies reaches the target, as (wall_s, step) of that
    evaluation; None if there is none. Before the K-th evaluation nothing
    is decided: a shorter window would let one evaluation decide again."""
    accs = [e[2] for e in evals]
    for i, m in enumerate(smoothed(accs, k), k - 1):
        if m >= target - EPS:
            return evals[i][1], evals[i][0]
    return None


def final(accs, k):
    """The final accuracy: the mean of the last K evaluations (of all of
    them when there are fewer), smoothed as the hit is; None without any."""
    last = list(accs)[-k:]
    return math.fsum(last) / len(last) if last else None


def over_seeds(values):
    """values: per seed, the time (or steps) to target, None where the
    seed's run did not hit it. Returns n, hits, median, min and max.

    The median counts a miss as later than every hit, so it exists only
    when a majority of the seeds hit (then the middle values are all
    hits, with an odd or an even count): a contender that misses on most
    seeds has no time to target, rather than the time of its lucky ones.
    min and max are the fastest and the slowest hit (None without one);
    hits out of n says how many the range leaves out."""
    n = len(values)
    hit = sorted(v for v in values if v is not None)
    med = None
    if 2 * len(hit) > n:
        med = statistics.median(hit + [math.inf] * (n - len(hit)))
    return {"n": n, "hits": len(hit), "median": med,
            "min": hit[0] if hit else None,
            "max": hit[-1] if hit else None}


def mean_range(values):
    """Mean, min and max of the values that are not None (a final
    accuracy per seed); None, None, None without any."""
    v = [x for x in values if x is not None]
    if not v:
        return None, None, None
    return math.fsum(v) / len(v), min(v), max(v)


def ratio(gloo, other):
    """gloo's median time to target over the other contender's (above 1:
    the other is faster), from two over_seeds() results; None ("n/a")
    when either has no median, i.e. did not hit on a majority of its
    seeds."""
    g, o = gloo["median"], other["median"]
    if g is None or o is None or o <= 0:
        return None
    return g / o
