"""Uncertainty: seeded bootstrap confidence intervals over facts, the paired comparison of two
runs on the same facts, and the AUROC of a score between two groups of facts.

Every resampling here is reproducible from its documented recipe, so an independent
implementation (the tests have one) gets the same numbers:

- **Stratified bootstrap** (:func:`bootstrap`): facts are resampled with replacement *within*
  each stratum (a relation, or planted / held-out). For stratum ``g`` (strata in sorted order)
  a generator ``numpy.random.default_rng([seed, zlib.crc32(g.encode())])`` draws the row
  indices in blocks of at most 100 resamples, ``rng.integers(0, n_g, size=(block, n_g))``.
  A stratum's statistic is ``sum(values) / sum(weights)`` over the drawn rows (the mean when
  there are no weights); the micro statistic pools the strata's sums, the macro statistic
  averages the strata's statistics. The interval is the 2.5th and 97.5th percentile
  (``numpy.percentile``, linear interpolation) of the resampled statistics.
- **Paired sign-flip test** (:func:`paired_test`): per-fact differences ``d``;
  ``numpy.random.default_rng(seed)`` draws signs in blocks of at most 1,000 permutations,
  ``rng.integers(0, 2, size=(block, n)) * 2 - 1``; p = (1 + #{|mean(s d)| >= |mean(d)|}) /
  (1 + permutations).
"""
from __future__ import annotations

import math
import zlib
from typing import Iterable

import numpy as np
import pandas as pd

BLOCK = 100
PERM_BLOCK = 1000
DIGITS = 4


def rnd(x, digits: int = DIGITS):
    """A float for ``metrics.json``: rounded, and ``None`` where it is not a number.

    >>> rnd(0.123456), rnd(float("nan")), rnd(None), rnd(3)
    (0.1235, None, None, 3.0)
    """
    if x is None:
        return None
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return None
    return round(x, digits) + 0.0          # + 0.0 turns -0.0 into 0.0


def stratum_seed(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(str(name).encode("utf-8"))])


def _resampled_sums(values: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
                    resamples: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(values)
    num = np.empty(resamples)
    den = np.empty(resamples)
    done = 0
    while done < resamples:
        block = min(BLOCK, resamples - done)
        idx = rng.integers(0, n, size=(block, n))
        num[done:done + block] = values[idx].sum(axis=1)
        den[done:done + block] = weights[idx].sum(axis=1)
        done += block
    return num, den


def _interval(stats: np.ndarray, level: float) -> tuple[float, float]:
    stats = stats[~np.isnan(stats)]
    if len(stats) == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return float(lo), float(hi)


def _ratio(num, den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1), np.nan)


def bootstrap(values, strata=None, *, weights=None, resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> dict:
    """Point estimates and stratified-bootstrap intervals of ``sum(values) / sum(weights)``.

    Returns ``value`` (micro: pooled over strata) with ``ci_low``/``ci_high``, ``macro`` (the
    mean of the strata's statistics) with its interval, ``n`` and, per stratum, its value,
    interval and size. Rows whose value is NaN are left out.

    >>> b = bootstrap([1, 0, 1, 1], ["r", "r", "s", "s"], resamples=200)
    >>> b["value"], b["macro"], b["n"], b["per_stratum"]["s"]["value"]
    (0.75, 0.75, 4, 1.0)
    >>> b["per_stratum"]["s"]["ci_low"], b["ci_low"] <= 0.75 <= b["ci_high"]
    (1.0, True)
    """
    values = np.asarray(values, dtype=float)
    strata = np.asarray(["all"] * len(values) if strata is None else list(strata), dtype=object)
    weights = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float)
    keep = ~np.isnan(values) & ~np.isnan(weights)
    values, strata, weights = values[keep], strata[keep], weights[keep]
    out: dict = {"n": int(len(values)), "per_stratum": {}}
    if len(values) == 0:
        nan = float("nan")
        out.update(value=nan, ci_low=nan, ci_high=nan, macro=nan, macro_ci_low=nan,
                   macro_ci_high=nan)
        return out
    names = sorted(set(strata.tolist()))
    nums, dens = [], []
    point_num = point_den = 0.0
    point_stats = []
    for g in names:
        sel = strata == g
        v, w = values[sel], weights[sel]
        num, den = _resampled_sums(v, w, stratum_seed(seed, g), resamples) if resamples \
            else (np.empty(0), np.empty(0))
        nums.append(num)
        dens.append(den)
        stat = float(v.sum() / w.sum()) if w.sum() else float("nan")
        point_stats.append(stat)
        point_num += v.sum()
        point_den += w.sum()
        lo, hi = _interval(_ratio(num, den), level) if resamples else (float("nan"),) * 2
        out["per_stratum"][g] = {"value": stat, "ci_low": lo, "ci_high": hi, "n": int(sel.sum())}
    value = point_num / point_den if point_den else float("nan")
    if resamples:
        micro = _ratio(np.sum(nums, axis=0), np.sum(dens, axis=0))
        macro = np.nanmean(np.vstack([_ratio(n, d) for n, d in zip(nums, dens)]), axis=0) \
            if len(names) else np.array([])
        lo, hi = _interval(micro, level)
        mlo, mhi = _interval(macro, level)
    else:
        lo = hi = mlo = mhi = float("nan")
    out.update(value=float(value), ci_low=lo, ci_high=hi,
               macro=float(np.nanmean(point_stats)), macro_ci_low=mlo, macro_ci_high=mhi)
    return out


def estimate(values, strata=None, *, weights=None, resamples: int = 1000, seed: int = 0,
             per_stratum: bool = True) -> dict:
    """:func:`bootstrap` rounded for ``metrics.json``, strata reported as ``per_relation``.

    >>> estimate([1, 0, 1, 1], ["r", "r", "s", "s"], resamples=0)["per_relation"]["r"]
    {'value': 0.5, 'ci_low': None, 'ci_high': None, 'n': 2}
    """
    b = bootstrap(values, strata, weights=weights, resamples=resamples, seed=seed)
    out = {k: rnd(b[k]) for k in ("value", "ci_low", "ci_high")}
    out["n"] = b["n"]
    if strata is not None:
        out.update(macro=rnd(b["macro"]), macro_ci_low=rnd(b["macro_ci_low"]),
                   macro_ci_high=rnd(b["macro_ci_high"]))
        if per_stratum:
            out["per_relation"] = {g: {"value": rnd(s["value"]), "ci_low": rnd(s["ci_low"]),
                                       "ci_high": rnd(s["ci_high"]), "n": s["n"]}
                                   for g, s in b["per_stratum"].items()}
    return dict(sorted(out.items()))


def summarise(frame: pd.DataFrame, column: str = "correct", *, weights: str | None = None,
              resamples: int = 1000, seed: int = 0, per_relation: bool = True) -> dict:
    """Per-fact rows (with ``relation_id``) -> overall (micro) and macro mean of ``column``
    with stratified-bootstrap intervals, and the same per relation.

    >>> s = summarise(pd.DataFrame({"relation_id": ["r", "r", "s"], "correct": [1, 0, 1]}),
    ...               resamples=0)
    >>> s["value"], s["macro"], s["n"], s["per_relation"]["r"]["value"]
    (0.6667, 0.75, 3, 0.5)
    """
    w = None if weights is None else frame[weights].to_numpy(dtype=float)
    return estimate(frame[column].to_numpy(dtype=float), frame["relation_id"].to_numpy(),
                    weights=w, resamples=resamples, seed=seed, per_stratum=per_relation)


def paired_test(a, b, strata=None, *, resamples: int = 1000, permutations: int = 10_000,
                seed: int = 0) -> dict:
    """Compare two runs on the same facts: mean difference ``a - b`` with a stratified
    bootstrap interval, and the two-sided p-value of a paired sign-flip permutation test:
    the share of sign flips of the differences whose |mean| is at least the observed one.
    Facts with no difference flip to themselves, so only the m others are flipped: all 2^m
    flips when 2^m <= ``permutations`` (the exact p-value), else ``permutations`` random ones.

    >>> t = paired_test([1, 1, 1, 1, 0, 1], [0, 0, 1, 0, 0, 0], resamples=200)
    >>> t["difference"], t["n"], t["a_only"], t["b_only"], t["p_value"]   # 2 of 2^4 flips
    (0.6667, 6, 4, 0, 0.125)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired_test needs two arrays over the same facts")
    d = a - b
    boot = bootstrap(d, strata, resamples=resamples, seed=seed)
    n = len(d)
    nz = d[d != 0]
    observed = abs(nz.sum())          # |mean| up to the factor 1/n every flip shares
    m = len(nz)
    if m == 0:
        p = 1.0
    elif 2 ** m <= permutations:
        signs = ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1) * 2 - 1
        p = float((np.abs(signs @ nz) >= observed - 1e-9).mean())
    else:
        rng = np.random.default_rng(int(seed))
        hits = 0
        done = 0
        while done < permutations:
            block = min(PERM_BLOCK, permutations - done)
            signs = rng.integers(0, 2, size=(block, m)) * 2 - 1
            hits += int((np.abs(signs @ nz) >= observed - 1e-9).sum())
            done += block
        p = (1 + hits) / (1 + permutations)
    return {"difference": rnd(d.mean() if n else float("nan")), "ci_low": rnd(boot["ci_low"]),
            "ci_high": rnd(boot["ci_high"]), "p_value": rnd(p), "n": int(n),
            "a_only": int(((a > 0.5) & (b <= 0.5)).sum()),
            "b_only": int(((b > 0.5) & (a <= 0.5)).sum())}


def _auroc_sorted(pos: np.ndarray, neg_sorted: np.ndarray) -> float:
    below = np.searchsorted(neg_sorted, pos, side="left")
    upto = np.searchsorted(neg_sorted, pos, side="right")
    return float((below + 0.5 * (upto - below)).sum() / (len(pos) * len(neg_sorted)))


def auroc(positive, negative) -> float:
    """Area under the ROC curve of a score separating positives from negatives: the chance
    that a random positive scores above a random negative, ties counting one half
    (Mann-Whitney U / (n+ n-)).

    >>> auroc([0.9, 0.8, 0.4], [0.1, 0.4]), auroc([1, 1], [1, 1]), auroc([], [0.2])
    (0.9166666666666666, 0.5, nan)
    """
    pos = np.asarray(positive, dtype=float)
    neg = np.asarray(negative, dtype=float)
    pos, neg = pos[~np.isnan(pos)], neg[~np.isnan(neg)]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    return _auroc_sorted(pos, np.sort(neg))


def auroc_interval(positive, negative, *, resamples: int = 1000, seed: int = 0,
                   level: float = 0.95) -> tuple[float, float]:
    """Bootstrap interval of :func:`auroc`: positives and negatives are resampled separately
    (strata ``planted`` and ``held_out``, the recipe of :func:`bootstrap`)."""
    pos = np.asarray(positive, dtype=float)
    neg = np.asarray(negative, dtype=float)
    pos, neg = pos[~np.isnan(pos)], neg[~np.isnan(neg)]
    if len(pos) == 0 or len(neg) == 0 or resamples == 0:
        return float("nan"), float("nan")
    draws = {}
    for name, arr in (("held_out", neg), ("planted", pos)):
        rng = stratum_seed(seed, name)
        blocks = []
        done = 0
        while done < resamples:
            block = min(BLOCK, resamples - done)
            blocks.append(arr[rng.integers(0, len(arr), size=(block, len(arr)))])
            done += block
        draws[name] = np.vstack(blocks)
    stats = np.array([_auroc_sorted(p, np.sort(n))
                      for p, n in zip(draws["planted"], draws["held_out"])])
    return _interval(stats, level)


def pearson(x: Iterable[float], y: Iterable[float]) -> float:
    """Pearson correlation; NaN with fewer than three points or no variation.

    >>> round(pearson([1, 2, 3], [2, 4, 7]), 4), pearson([1, 2], [1, 2])
    (0.9934, nan)
    """
    x = np.asarray(list(x), dtype=float)
    y = np.asarray(list(y), dtype=float)
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])
