# SPDX-License-Identifier: MIT
"""Host test of the time-to-accuracy models and data (tta_rank.py): the
wide model's feature rows (one disjoint range per feature, the values
recoverable from the row), the same split for both models (its own for
each seed), and that a few steps of SGD train the wide model; the
--fabric option; the seeds, smoothing and evaluation options. KTAP-ish
output."""

import contextlib
import io
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../lib/python"))
sys.path.insert(0, HERE)
import tta_rank  # noqa: E402
from ktap import check, finish  # noqa: E402


def feature_rows():
    v = tta_rank.PIXEL_VALUES
    rng = np.random.default_rng(7)
    pix = rng.integers(0, v, size=(50, 64))
    pix[0] = 0
    pix[1] = v - 1
    rows = tta_rank.wide_rows(pix)
    npairs = len(tta_rank.NEIGHBOURS)
    check(rows.shape == (50, 64 + npairs) and npairs == 112,
          "176 features per image (64 pixels, 112 neighbour pairs)")
    check(rows.min() >= 0 and rows.max() < tta_rank.WIDE_ROWS,
          "every row inside the table (%d rows)" % tta_rank.WIDE_ROWS)
    single = rows[:, :64] - np.arange(64) * v
    check(np.array_equal(single, pix), "a pixel's row gives its value back")
    base = 64 * v + np.arange(npairs) * v * v
    pair = rows[:, 64:] - base
    a = pix[:, tta_rank.NEIGHBOURS[:, 0]]
    b = pix[:, tta_rank.NEIGHBOURS[:, 1]]
    check(np.array_equal(pair, a * v + b) and pair.min() >= 0 and
          pair.max() < v * v,
          "a pair's row gives both values back, inside its own range")
    right = {(p, p + 1) for p in range(64) if p % 8 < 7}
    down = {(p, p + 8) for p in range(56)}
    check({tuple(x) for x in tta_rank.NEIGHBOURS} == right | down,
          "pairs are each pixel with its right and its lower neighbour")
    # One pixel changed: its own feature and those of its pairs only.
    q = pix[2:3].copy()
    q[0, 27] = (q[0, 27] + 1) % v
    diff = np.nonzero(tta_rank.wide_rows(q)[0] != rows[2])[0]
    touched = [64 + i for i, (x, y) in enumerate(tta_rank.NEIGHBOURS)
               if 27 in (x, y)]
    check(list(diff) == [27] + touched and len(touched) == 4,
          "changing pixel 27 changes its feature and its 4 pairs' only")


def options(*argv):
    """tta_rank's own options, as a rank parses them."""
    return tta_rank.parse(["--out", ".", "--profile", "calm="] + list(argv))


def fabric_options():
    """--fabric marks a profile without netem as the fabric helper's; a
    profile with netem, or one not run, is refused."""
    a = tta_rank.parse(["--out", ".", "--profile", "calm=rate 1gbit",
                        "--profile", "fabric-shared=",
                        "--fabric", "fabric-shared=fabric: ports of 200mbit"])
    check(a.fabric == {"fabric-shared": "fabric: ports of 200mbit"} and
          a.profiles == [("calm", "rate 1gbit"), ("fabric-shared", "")] and
          os.path.basename(a.fabric_cmd) == "fabric",
          "--fabric: the profile's link description and the helper")
    refused = []
    for bad in ("calm=x", "other=x", "fabric-shared"):
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                tta_rank.parse(["--out", ".", "--profile", "calm=rate 1",
                                "--profile", "fabric-shared=",
                                "--fabric", bad])
            except SystemExit as e:
                refused.append(e.code == 2)
    check(refused == [True] * 3,
          "--fabric refused on a netem profile, an unknown one, no '='")


def seed_options():
    """The defaults a rank runs with when tools/bench/tta/run passes none,
    the seeds it trains, and counts below 1 refused."""
    a = options()
    check(a.eval_every == 5 and a.smooth == 3 and a.seed_list == [1],
          "defaults: evaluation every 5 steps, mean of 3, one seed")
    a = options("--seed", "4", "--seeds", "3", "--smooth", "2")
    check(a.seed_list == [4, 5, 6] and a.smooth == 2,
          "--seed 4 --seeds 3: seeds 4, 5, 6")
    refused = []
    for bad in ("--seeds", "--smooth", "--eval-every"):
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                options(bad, "0")
            except SystemExit as e:
                refused.append(e.code == 2)
    check(refused == [True] * 3, "--seeds, --smooth, --eval-every 0 refused")


def data_and_training():
    wide = tta_rank.load_data(1, "wide")
    mlp = tta_rank.load_data(1, "mlp")
    check(wide[0].shape == (1257, 176) and wide[2].shape == (540, 176) and
          wide[0].dtype == torch.int64,
          "wide data: 1257 training and 540 test images of 176 rows")
    check(torch.equal(wide[1], mlp[1]) and torch.equal(wide[3], mlp[3]),
          "both models get the same split")
    again, other = tta_rank.load_data(1, "wide"), tta_rank.load_data(2, "wide")
    check(torch.equal(wide[2], again[2]) and
          not torch.equal(wide[2], other[2]) and
          torch.equal(torch.bincount(wide[3]), torch.bincount(other[3])),
          "a seed's split is the same every time; another seed's differs, "
          "stratified alike")
    a = options("--model", "wide", "--embed-dim", "32")
    model = tta_rank.make_model(1, a)
    nparams = sum(p.numel() for p in model.parameters())
    check(nparams == tta_rank.WIDE_ROWS * 32 + 32 * 10 + 10,
          "wide model of width 32: table and output layer (%d)" % nparams)
    m = options("--model", "mlp", "--hidden", "512,512")
    mlp_params = sum(p.numel() for p in tta_rank.make_model(1, m).parameters())
    check(mlp_params == 301066 and mlp[0].dtype == torch.float32 and
          mlp[0].shape == (1257, 64),
          "MLP 64-512-512-10 (%d parameters) on 64 standardized pixels"
          % mlp_params)
    again = tta_rank.make_model(1, a)
    check(all(torch.equal(x, y) for x, y in
              zip(model.parameters(), again.parameters())),
          "same seed, same parameters")
    x, y = wide[0][:256], wide[1][:256]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lossf = torch.nn.functional.cross_entropy
    with torch.no_grad():
        before = lossf(model(x), y).item()
    for i in range(30):
        idx = torch.arange(i * 32, i * 32 + 32) % 256
        opt.zero_grad()
        lossf(model(x[idx]), y[idx]).backward()
        opt.step()
    with torch.no_grad():
        after = lossf(model(x), y).item()
        acc = (model(x).argmax(1) == y).float().mean().item()
    check(after < before / 4 and acc > 0.9,
          "30 SGD steps train it: loss %.3f -> %.3f, accuracy %.2f"
          % (before, after, acc))


def main():
    torch.set_num_threads(1)
    feature_rows()
    fabric_options()
    seed_options()
    data_and_training()
    finish(18)


if __name__ == "__main__":
    main()
