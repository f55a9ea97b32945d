"""BELIEF metrics (Zhao et al., Sec. 2, 5.4, 7), shared by BELIEF-ICL: Acc@1 with its
fluctuation, Consist, Overconf with the calibration curve, bias level, Average / Maximum /
Oracle coverage and the knowledge sharing rate.

The unit is the subject-relation *pair* (key ``fact_id``: the pair's first fact); each pair
has prompts P_t (templates x subject names). Every function takes per-prompt rows with
``relation_id``, ``fact_id``, ``template_id``, a 0/1 ``correct`` and, where it needs them,
``prediction`` and ``confidence``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics.coverage import coverage, covered_units, sharing_rate
from factprobe.evaluators.metrics.stats import rnd, summarise
from factprobe.evaluators.metrics.text import normalise


# How a top-1 token is compared with the gold: "exact" (the paper, Sec. 2.1: the predicted
# token is one of the gold tokens) or "normalised" (lower-cased, punctuation and the
# tokenizer's word-start mark dropped: "ĠParis" and "paris" both name "Paris").
MATCHES = ("exact", "normalised")
_WORD_START = ("Ġ", "▁")     # byte-level BPE and SentencePiece marks of a preceding space


def bare(token: str) -> str:
    """A token without its word-start mark.

    >>> bare("ĠParis"), bare("▁Paris"), bare("##is")
    ('Paris', 'Paris', '##is')
    """
    token = str(token)
    return token[1:] if token[:1] in _WORD_START else token


def gold_tokens(gold_names, candidate_probs, candidate_tokens=None) -> list[str]:
    """The gold's tokens at the mask: the backend's ``candidate_tokens`` where the outputs
    have them, else (outputs written before that column existed) the gold names the backend
    found to be one token (a probability, not NaN).

    >>> gold_tokens(["Paris", "City of Light"], [0.5, float("nan")], ["ĠParis", None])
    ['ĠParis']
    >>> gold_tokens(["Paris", "City of Light"], [0.5, float("nan")])
    ['Paris']
    """
    if candidate_tokens is not None and len(candidate_tokens) == len(gold_names):
        return [str(t) for t in candidate_tokens if isinstance(t, str)]
    return [str(g) for g, p in zip(gold_names, candidate_probs) if not math.isnan(float(p))]


def mask_correct(top_token: str, golds, *, match: str = "exact", gold_names=()) -> bool:
    """Whether a masked LM's top-1 token names the gold. ``exact`` (the paper): the token is
    one of the gold's tokens ``golds``; ``normalised``: the token without its word-start mark,
    normalised, equals a normalised gold token or gold name.

    >>> mask_correct("ĠParis", ["ĠParis"]), mask_correct("Ġparis", ["ĠParis"])
    (True, False)
    >>> mask_correct("Ġparis", ["ĠParis"], match="normalised")
    True
    >>> mask_correct("##is", ["Paris"], match="normalised", gold_names=["Paris", "is"])
    False
    """
    top = str(top_token)
    if not top:
        return False
    if match == "exact":
        return top in set(golds)
    t = normalise(bare(top))
    return bool(t) and not top.startswith("##") and \
        t in {normalise(bare(g)) for g in [*golds, *gold_names]} - {""}


def answerable(candidate_probs) -> bool:
    """Whether any gold name is a single token of the model (the paper skips pairs otherwise).

    >>> answerable([float("nan"), 0.2]), answerable([float("nan")])
    (True, False)
    """
    return any(not math.isnan(p) for p in np.asarray(candidate_probs, dtype=float))


def belief_rows(outputs: pd.DataFrame, *, match: str = "exact") -> pd.DataFrame:
    """The ``prompts`` rows of a BELIEF run with a single-token gold name, with
    ``prediction`` (the top-1 token), ``confidence`` (its probability), ``correct`` (see
    :func:`mask_correct`) and ``gold_prob`` (the summed probability of the single-token gold
    names).

    >>> out = pd.DataFrame({"stage": ["prompts"] * 3, "relation_id": ["r"] * 3,
    ...     "fact_id": ["a", "b", "c"], "template_id": ["t"] * 3,
    ...     "gold_names": [["Paris"], ["Oslo"], ["Rome"]],
    ...     "top_tokens": [["ĠParis", "ĠRome"], ["ĠBergen"], ["Ġrome"]],
    ...     "top_probs": [[0.6, 0.3], [0.5], [0.4]],
    ...     "candidate_probs": [[0.6], [float("nan")], [0.2]],
    ...     "candidate_tokens": [["ĠParis"], [None], ["ĠRome"]]})
    >>> cols = ["fact_id", "prediction", "confidence", "correct", "gold_prob"]
    >>> belief_rows(out)[cols].to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'fact_id': 'a', 'prediction': 'ĠParis', 'confidence': 0.6, 'correct': 1.0, 'gold_prob': 0.6},
     {'fact_id': 'c', 'prediction': 'Ġrome', 'confidence': 0.4, 'correct': 0.0, 'gold_prob': 0.2}]
    >>> belief_rows(out, match="normalised")["correct"].tolist()
    [1.0, 1.0]
    """
    if match not in MATCHES:
        from factprobe.core.errors import UserError
        raise UserError(f"match {match!r}: choose {' or '.join(MATCHES)}")
    rows = outputs[outputs["stage"] == "prompts"]
    cands = [np.asarray(c, dtype=float) for c in rows["candidate_probs"]]
    ok = np.array([bool((~np.isnan(c)).any()) for c in cands], dtype=bool)
    rows = rows[ok]
    cands = [c for c, k in zip(cands, ok) if k]
    tokens = rows["candidate_tokens"] if "candidate_tokens" in rows.columns \
        else [None] * len(rows)
    correct, preds = [], []
    for toks, names, probs, ctoks in zip(rows["top_tokens"], rows["gold_names"], cands, tokens):
        top = str(toks[0]) if len(toks) else ""
        preds.append(top)
        golds = gold_tokens(list(names), probs, None if ctoks is None or
                            (isinstance(ctoks, float) and math.isnan(ctoks)) else list(ctoks))
        correct.append(float(mask_correct(top, golds, match=match, gold_names=list(names))))
    conf = [float(p[0]) if len(p) else float("nan") for p in rows["top_probs"]]
    return rows.assign(prediction=preds, confidence=conf, correct=correct,
                       gold_prob=[float(np.nansum(c)) for c in cands])


def skipped_pairs(prompts: pd.DataFrame, kept: pd.DataFrame) -> dict:
    """The pairs of ``prompts`` none of whose prompts is in ``kept`` (no gold name is one token
    of the model: the paper evaluates single-token objects only, footnote 6), per relation,
    the relations left out whole, and the note the command prints about them.

    >>> p = pd.DataFrame({"relation_id": ["P36", "P36", "P37", "P38"],
    ...                   "fact_id": ["a", "b", "c", "d"]})
    >>> s = skipped_pairs(p, p[p["fact_id"] == "d"])
    >>> s["pairs"], s["of"], s["reasons"], s["relations"]
    (3, 4, {'multi-token objects': {'P36': 2, 'P37': 1}}, ['P36', 'P37'])
    >>> s["note"]
    'skipped 3 of 4 pairs (multi-token objects): P36 2 of 2, P37 1 of 1; relations P36, P37 are left out whole'
    """
    every = prompts[["relation_id", "fact_id"]].drop_duplicates()
    kept_ids = set(kept["fact_id"])
    gone = every[~every["fact_id"].isin(kept_ids)]
    per_rel = {str(k): int(v) for k, v in gone.groupby("relation_id").size().sort_index()
               .items()}
    sizes = every.groupby("relation_id").size()
    whole = [r for r, n in per_rel.items() if n == int(sizes[r])]
    reason = "multi-token objects"
    note = None
    if len(gone):
        note = (f"skipped {len(gone)} of {len(every)} pairs ({reason}): "
                + ", ".join(f"{r} {n} of {int(sizes[r])}" for r, n in per_rel.items()))
        if whole:
            note += (f"; relation{'s' if len(whole) > 1 else ''} {', '.join(whole)} "
                     f"{'are' if len(whole) > 1 else 'is'} left out whole")
    return {"pairs": len(gone), "of": len(every), "prompts": len(prompts) - len(kept),
            "reasons": {reason: per_rel} if per_rel else {}, "relations": whole,
            "note": note}


def pair_accuracy(rows: pd.DataFrame) -> pd.DataFrame:
    """Per pair: its prompts' accuracy (the chance that one random prompt is right), prompt
    count and correct count.

    >>> r = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a", "a", "b"],
    ...                   "correct": [1.0, 0.0, 1.0]})
    >>> pair_accuracy(r).to_dict("records")
    [{'relation_id': 'r', 'fact_id': 'a', 'prompts': 2, 'hits': 1, 'correct': 0.5}, {'relation_id': 'r', 'fact_id': 'b', 'prompts': 1, 'hits': 1, 'correct': 1.0}]
    """
    g = rows.groupby(["relation_id", "fact_id"], sort=True)["correct"]
    out = pd.DataFrame({"prompts": g.size(), "hits": g.sum().round().astype(int)}).reset_index()
    return out.assign(correct=out["hits"] / out["prompts"])


def acc1_fluctuation(rows: pd.DataFrame, *, samplings: int = 50_000, seed: int = 0) -> dict:
    """Acc@1 over ``samplings`` draws of one random prompt per pair: mean, standard deviation
    (population), range (max - min), min and max, and the exact expectation.

    Vectorised: in one draw, the pairs whose share of correct prompts is k/m (as a reduced
    fraction; pairs with k = 0 or k = m are fixed) contribute a Binomial(count, k/m) number
    of correct answers, exactly the distribution of drawing one prompt per pair;
    ``numpy.random.default_rng(seed)`` draws one binomial array of ``samplings`` per such
    group, groups in sorted (k, m) order. Cost: samplings x groups, not samplings x pairs.

    >>> r = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a", "a", "b", "c"],
    ...                   "correct": [1.0, 0.0, 1.0, 0.0]})
    >>> f = acc1_fluctuation(r, samplings=2000)
    >>> f["expected"], f["min"], f["max"], abs(f["mean"] - 0.5) < 0.02
    (0.5, 0.3333, 0.6667, True)
    """
    pairs = pair_accuracy(rows)
    T = len(pairs)
    if T == 0 or samplings <= 0:
        return {"mean": None, "std": None, "range": None, "min": None, "max": None,
                "expected": None, "samplings": int(samplings), "pairs": int(T)}
    k = pairs["hits"].to_numpy()
    m = pairs["prompts"].to_numpy()
    fixed = int((k == m).sum())                       # always right
    mixed = (k > 0) & (k < m)
    g = np.gcd(k[mixed], m[mixed])                    # 2 of 4 and 1 of 2: the same chance
    counts = pd.Series(1, index=pd.MultiIndex.from_arrays([k[mixed] // g, m[mixed] // g])
                       ).groupby(level=[0, 1]).sum().sort_index()
    rng = np.random.default_rng(int(seed))
    hits = np.full(samplings, fixed, dtype=np.int64)
    for (kk, mm), n in counts.items():
        hits += rng.binomial(int(n), kk / mm, size=samplings)
    acc = hits / T
    return {"mean": rnd(acc.mean()), "std": rnd(acc.std()), "range": rnd(acc.max() - acc.min()),
            "min": rnd(acc.min()), "max": rnd(acc.max()), "expected": rnd((k / m).mean()),
            "samplings": int(samplings), "pairs": int(T)}


def _pair_consistency(preds: list, counts: list[int], same: Callable | None) -> float:
    m = sum(counts)
    if m < 2:
        return float("nan")
    agree = 0.0
    for i, (p, c) in enumerate(zip(preds, counts)):
        if same is None or same(p, p):
            agree += c * (c - 1) / 2
        if same is not None:
            for q, d in zip(preds[i + 1:], counts[i + 1:]):
                if same(p, q):
                    agree += c * d
    return agree / (m * (m - 1) / 2)


def consistency(rows: pd.DataFrame, *, same: Callable | None = None) -> pd.DataFrame:
    """Per pair: the share of its prompt pairs (i < j) whose predictions agree, the summand
    of Consist. Agreement is string equality of ``prediction`` unless ``same(a, b)`` is
    given (BELIEF-ICL: two-directional lemma match). Pairs with one prompt are left out.

    >>> r = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a", "a", "a", "b"],
    ...                   "prediction": ["x", "x", "y", "z"]})
    >>> consistency(r).round(4)[["fact_id", "consist"]].to_dict("records")
    [{'fact_id': 'a', 'consist': 0.3333}]
    """
    counted = rows.groupby(["relation_id", "fact_id", "prediction"], sort=True).size()
    if same is None:                                  # equality: sum_v C(c_v, 2) / C(m, 2)
        c = counted.astype(float)
        agree = (c * (c - 1) / 2).groupby(level=[0, 1], sort=True).sum()
        m = c.groupby(level=[0, 1], sort=True).sum()
        frame = pd.DataFrame({"agree": agree, "m": m}).reset_index()
        frame = frame[frame["m"] >= 2]
        return pd.DataFrame({"relation_id": frame["relation_id"].to_numpy(),
                             "fact_id": frame["fact_id"].to_numpy(),
                             "consist": (frame["agree"] / (frame["m"] * (frame["m"] - 1) / 2)
                                         ).to_numpy(dtype=float)})
    out = []
    for (rel, fid), g in counted.groupby(level=[0, 1], sort=True):
        value = _pair_consistency(list(g.index.get_level_values(2)), g.tolist(), same)
        if not math.isnan(value):
            out.append({"relation_id": rel, "fact_id": fid, "consist": round(value, 10)})
    return pd.DataFrame(out, columns=["relation_id", "fact_id", "consist"])


def overconfidence(confidence, correct, *, bins: int = 10, order=None) -> dict:
    """Overconf: prompts sorted by confidence (descending; ties by ``order``), cut into
    ``bins`` equal-size bins (``numpy.array_split``: sizes differ by at most one, empty bins
    dropped); the mean over bins of (mean confidence - accuracy). Negative: under-confident.
    Also the calibration curve, one row per bin.

    >>> o = overconfidence([0.9, 0.8, 0.3, 0.2], [1, 0, 0, 0], bins=2)
    >>> o["value"], o["calibration"]["01"], o["calibration"]["02"]["accuracy"]
    (0.3, {'accuracy': 0.5, 'confidence': 0.85, 'n': 2}, 0.0)
    """
    conf = np.asarray(confidence, dtype=float)
    corr = np.asarray(correct, dtype=float)
    keep = ~np.isnan(conf) & ~np.isnan(corr)
    conf, corr = conf[keep], corr[keep]
    order = np.arange(len(keep))[keep] if order is None else np.asarray(order)[keep]
    if len(conf) == 0:
        return {"value": None, "bins": int(bins), "n": 0, "calibration": {}}
    idx = np.lexsort((order, -conf))
    curve = {}
    gaps = []
    for b, part in enumerate(np.array_split(idx, bins)):
        if len(part) == 0:
            continue
        c, a = conf[part].mean(), corr[part].mean()
        gaps.append(c - a)
        curve[f"{b + 1:02d}"] = {"accuracy": rnd(a), "confidence": rnd(c), "n": int(len(part))}
    return {"value": rnd(np.mean(gaps)), "bins": int(bins), "n": int(len(conf)),
            "calibration": curve}


def _entropy_bias(p: np.ndarray) -> float:
    """1 - H(p) / H_max for a distribution over K >= 2 candidates."""
    k = len(p)
    if k < 2:
        return float("nan")
    nz = p[p > 0]
    h = -(nz * np.log(nz)).sum()
    return float(1 - h / math.log(k))


def bias_level(content_free: pd.DataFrame, renormalise: str = "each") -> dict:
    """Bias level (Sec. 5.4) from content-free prompts ("N/A", "", "?" in place of the subject):
    per template, each input's probabilities over the relation's single-token candidate
    objects (NaN ones dropped, the same set for every template of the relation) are
    renormalised and averaged over the inputs; bias = 1 - H / H_max (H_max = log K).
    Single-prompt bias is the mean over templates, multi-prompt bias the bias of the
    template-averaged distribution. Overall numbers average the relations. The paper
    ("ensembling the distribution over prompts with three content-free tokens", footnote 12)
    does not say when to renormalise: ``each`` renormalises every input's distribution
    before averaging (an input that puts little mass on the candidates counts as much as
    one that puts much), ``after`` averages the raw probabilities and renormalises once.

    An input with (0.3, 0.1) and one with (0.01, 0.03) over two candidates: ``each`` gives
    (0.75 + 0.25, 0.25 + 0.75) / 2 = (0.5, 0.5), bias 0; ``after`` gives (0.31, 0.13) /
    0.44, bias 1 - H(0.7045, 0.2955) / log 2 = 0.1243.

    >>> two = pd.DataFrame({"relation_id": ["r"] * 2, "template_id": ["t", "t"],
    ...                     "candidate_probs": [[0.3, 0.1], [0.01, 0.03]]})
    >>> bias_level(two)["single_prompt"], bias_level(two, "after")["single_prompt"]
    (0.0, 0.1243)

    >>> cf = pd.DataFrame({"relation_id": ["r"] * 2, "template_id": ["t1", "t2"],
    ...     "candidate_probs": [[0.5, 0.0, float("nan")], [0.0, 0.5, float("nan")]]})
    >>> b = bias_level(cf)
    >>> b["single_prompt"], b["multi_prompt"], b["per_relation"]["r"]["candidates"]
    (1.0, 0.0, 2)
    """
    per = {}
    for rel, g in content_free.groupby("relation_id", sort=True):
        probs = [np.asarray(c, dtype=float) for c in g["candidate_probs"]]
        width = {len(p) for p in probs}
        if len(width) != 1:
            continue
        valid = np.logical_and.reduce([~np.isnan(p) for p in probs])
        k = int(valid.sum())
        dists = {}
        for tid, p in zip(g["template_id"], probs):
            q = p[valid]
            if k < 2 or q.sum() <= 0:
                continue
            dists.setdefault(tid, []).append(q / q.sum() if renormalise == "each" else q)
        templates = {t: np.mean(v, axis=0) for t, v in sorted(dists.items())}
        if renormalise == "after":
            templates = {t: v / v.sum() for t, v in templates.items()}
        if not templates:
            per[rel] = {"single_prompt": None, "multi_prompt": None, "templates": 0,
                        "candidates": k}
            continue
        single = float(np.mean([_entropy_bias(d) for d in templates.values()]))
        multi = _entropy_bias(np.mean(list(templates.values()), axis=0))
        per[rel] = {"single_prompt": rnd(single), "multi_prompt": rnd(multi),
                    "templates": len(templates), "candidates": k}
    singles = [v["single_prompt"] for v in per.values() if v["single_prompt"] is not None]
    multis = [v["multi_prompt"] for v in per.values() if v["multi_prompt"] is not None]
    return {"single_prompt": rnd(np.mean(singles)) if singles else None,
            "multi_prompt": rnd(np.mean(multis)) if multis else None,
            "relations": len(singles), "per_relation": per}


def belief_summary(rows: pd.DataFrame, *, resamples: int = 1000, seed: int = 0,
                   samplings: int = 50_000, bins: int = 10, same: Callable | None = None,
                   confidence: pd.DataFrame | None = None, subject: str = "best") -> dict:
    """The BELIEF metric set over per-prompt rows (see the module docstring)."""
    pairs = pair_accuracy(rows)
    out = {"prompts": int(len(rows)), "pairs": int(len(pairs)),
           "accuracy": summarise(pairs, resamples=resamples, seed=seed),
           "acc1_fluctuation": acc1_fluctuation(rows, samplings=samplings, seed=seed)}
    cons = consistency(rows, same=same)
    out["consistency"] = summarise(cons, "consist", resamples=resamples, seed=seed) \
        if len(cons) else {"value": None, "n": 0}
    conf = rows if confidence is None else confidence
    if len(conf):
        out["overconfidence"] = overconfidence(conf["confidence"], conf["correct"], bins=bins,
                                               order=_order(conf))
    out["coverage"] = coverage(rows, resamples=resamples, seed=seed, subject=subject)
    return out


def _order(rows: pd.DataFrame) -> np.ndarray:
    """A deterministic tie-break for sorting by confidence: the rank of (prompt_id, fact_id)."""
    keys = [k for k in ("prompt_id", "fact_id", "template_id", "subject_name")
            if k in rows.columns]
    ranked = rows[keys].astype(str).apply(lambda r: "\x1f".join(r), axis=1) if keys \
        else pd.Series(np.arange(len(rows)).astype(str))
    return ranked.rank(method="first").to_numpy()


__all__ = ["MATCHES", "bare", "gold_tokens", "mask_correct", "answerable", "skipped_pairs",
           "belief_rows", "pair_accuracy", "acc1_fluctuation", "consistency", "overconfidence", "bias_level", "coverage", "covered_units",
           "sharing_rate", "belief_summary"]
