"""BELIEF Acc@1 fluctuation: N draws of one random prompt per subject-relation pair.

    python benchmarks/bench_belief_fluctuation.py                      # 20,000 pairs, N = 50,000
    python benchmarks/bench_belief_fluctuation.py --pairs 100000 --samplings 50000 --loop 200

Per-prompt rows of a synthetic BELIEF run are made in memory (``--pairs`` pairs in 40
relations, 2 to 40 prompts per pair, each pair with its own accuracy), then timed:

  factprobe   ``factprobe.evaluators.metrics.belief.acc1_fluctuation`` (per-pair counts, one binomial
              draw per (correct prompts, prompts) group and sampling);
  loop        the paper's procedure written plainly: for each sampling, pick one prompt per
              pair with numpy and average; ``--loop`` samplings only (0: skip), extrapolated
              to N.

Also reported: the two procedures' mean, standard deviation and range (they agree within
sampling noise), and the exact expectation.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (puts the repository on sys.path)
from common import machine, versions  # noqa: E402


def synthetic_rows(pairs: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prompts = rng.integers(2, 41, size=pairs)
    skill = rng.beta(0.6, 0.9, size=pairs)                  # per-pair accuracy, many 0s and 1s
    pair = np.repeat(np.arange(pairs), prompts)
    correct = (rng.random(len(pair)) < skill[pair]).astype(float)
    return pd.DataFrame({"relation_id": [f"P{p % 40}" for p in pair],
                         "fact_id": [f"f{p:07d}" for p in pair], "correct": correct})


def plain_loop(rows: pd.DataFrame, samplings: int, seed: int) -> np.ndarray:
    groups = [g.to_numpy() for _, g in rows.groupby("fact_id", sort=True)["correct"]]
    rng = np.random.default_rng(seed)
    sizes = np.array([len(g) for g in groups])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat = np.concatenate(groups)
    out = np.empty(samplings)
    for s in range(samplings):
        pick = offsets + (rng.random(len(sizes)) * sizes).astype(int)
        out[s] = flat[pick].mean()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--samplings", type=int, default=50_000)
    ap.add_argument("--loop", type=int, default=500, help="samplings for the plain loop (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from factprobe.evaluators.metrics.belief import acc1_fluctuation
    rows = synthetic_rows(args.pairs, args.seed)
    t0 = time.perf_counter()
    got = acc1_fluctuation(rows, samplings=args.samplings, seed=args.seed)
    fast = time.perf_counter() - t0
    report = {"pairs": args.pairs, "prompts": len(rows), "samplings": args.samplings,
              "factprobe_seconds": round(fast, 3), "factprobe": got}
    if args.loop:
        t0 = time.perf_counter()
        accs = plain_loop(rows, args.loop, args.seed)
        slow = time.perf_counter() - t0
        report.update(loop_samplings=args.loop, loop_seconds=round(slow, 3),
                      loop_seconds_for_N=round(slow / args.loop * args.samplings, 1),
                      loop={"mean": round(float(accs.mean()), 4),
                            "std": round(float(accs.std()), 4),
                            "range_over_loop_samplings": round(float(np.ptp(accs)), 4)})
    report.update(machine=machine(), versions=versions())
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
