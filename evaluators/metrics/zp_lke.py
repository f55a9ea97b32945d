"""ZP-LKE and prompt-baseline metrics (Wu et al., Sec. 4 and App. D): multiple-choice accuracy,
gold probability mass, response accuracy, Accuracy@K and the subsumption rate.

A *question* is one fact under one draw of examples (``seed``), one example count
(``n_examples``) and, for the prompt baselines, one ``template_id``. Per-fact numbers average
the fact's questions over seeds (and templates); intervals resample facts.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics.stats import rnd, summarise
from factprobe.evaluators.metrics.text import contains_answer

QUESTION_KEYS = ["relation_id", "fact_id", "seed", "n_examples", "template_id"]


def _keys(df: pd.DataFrame) -> list[str]:
    return [k for k in QUESTION_KEYS if k in df.columns]


def mc_predictions(scores: pd.DataFrame, *, ties_against_gold: bool = False) -> pd.DataFrame:
    """One row per question: whether the gold has the highest log-probability, the gold's
    probability normalised over the choices (``gold_prob``) and the top choice's
    (``top_prob``).

    Ties go to the lowest option index, or, with ``ties_against_gold`` (the authors' code),
    count as wrong. A question without exactly one gold option is a user error.

    >>> df = pd.DataFrame({"relation_id": ["r"] * 6, "fact_id": ["a"] * 3 + ["b"] * 3,
    ...     "option": [0, 1, 2] * 2, "is_gold": [True, False, False, False, True, False],
    ...     "logprob": [-1.0, -2.0, -3.0, -1.0, -1.0, -5.0]})
    >>> mc_predictions(df)[["fact_id", "correct", "gold_prob"]].round(3).to_dict("records")
    [{'fact_id': 'a', 'correct': True, 'gold_prob': 0.665}, {'fact_id': 'b', 'correct': False, 'gold_prob': 0.495}]
    >>> bool(mc_predictions(df, ties_against_gold=True)["correct"].iloc[1])
    False
    """
    keys = _keys(scores)
    if scores.empty:
        return pd.DataFrame(columns=keys + ["correct", "gold_prob", "top_prob", "options"])
    df = scores.sort_values(keys + ["option"], kind="stable").reset_index(drop=True)
    lp = df["logprob"].to_numpy(dtype=np.float64)
    if np.isnan(lp).any():
        raise UserError(f"{int(np.isnan(lp).sum())} multiple-choice rows have no log-probability;"
                        f" the run is incomplete: rerun 'factprobe eval'")
    gold = df["is_gold"].fillna(False).astype(bool).to_numpy()
    q = df.groupby(keys, sort=False).ngroup().to_numpy()
    nq = int(q.max()) + 1
    golds = np.bincount(q, weights=gold, minlength=nq)
    if (golds != 1).any():
        bad = int(np.flatnonzero(golds != 1)[0])
        row = df.loc[np.flatnonzero(q == bad)[0], keys].to_dict()
        raise UserError(f"multiple-choice question {row} has {int(golds[bad])} gold options "
                        f"(exactly one expected): outputs.parquet is incomplete or mixes runs")
    mx = np.full(nq, -np.inf)
    np.maximum.at(mx, q, lp)
    is_max = lp == mx[q]
    z = np.bincount(q, weights=np.exp(lp - mx[q]), minlength=nq)
    n_max = np.bincount(q, weights=is_max, minlength=nq)
    gold_lp = np.zeros(nq)
    gold_lp[q[gold]] = lp[gold]
    first_max = np.full(nq, -1)
    rows = np.flatnonzero(is_max)
    first_max[q[rows[::-1]]] = rows[::-1]             # the lowest row index wins
    gold_is_max = gold_lp == mx
    if ties_against_gold:
        correct = gold_is_max & (n_max == 1)
    else:
        correct = gold[first_max]
    first = df.groupby(keys, sort=False).head(1)[keys].reset_index(drop=True)
    return first.assign(correct=correct, gold_prob=np.exp(gold_lp - mx) / z, top_prob=1.0 / z,
                        options=np.bincount(q, minlength=nq).astype(int))


def per_fact(preds: pd.DataFrame, columns=("correct", "gold_prob")) -> pd.DataFrame:
    """Average each fact's questions (seeds, templates) at each example count.

    >>> p = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a", "a", "b"], "seed": [0, 1, 0],
    ...                   "n_examples": [5] * 3, "correct": [True, False, True]})
    >>> per_fact(p, ["correct"])[["fact_id", "correct"]].to_dict("records")
    [{'fact_id': 'a', 'correct': 0.5}, {'fact_id': 'b', 'correct': 1.0}]
    """
    keys = [k for k in ("relation_id", "fact_id", "n_examples") if k in preds.columns]
    cols = list(columns)
    return preds.assign(**{c: preds[c].astype(float) for c in cols}).groupby(
        keys, sort=True, as_index=False)[cols].mean()


def main_n(preds: pd.DataFrame) -> pd.DataFrame:
    """Questions at the largest example count (the headline setting)."""
    if "n_examples" not in preds.columns or preds.empty:
        return preds
    return preds[preds["n_examples"] == preds["n_examples"].max()]


def mc_accuracy(preds: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Share of facts whose prediction is the gold (facts averaged over seeds), overall, macro
    and per relation, with bootstrap intervals.

    >>> p = pd.DataFrame({"relation_id": ["r", "r", "s"], "fact_id": ["a", "b", "c"],
    ...                   "correct": [True, False, True], "gold_prob": [0.6, 0.2, 0.9]})
    >>> m = mc_accuracy(p, resamples=0)
    >>> m["value"], m["macro"], m["per_relation"]["r"]["value"]
    (0.6667, 0.75, 0.5)
    """
    return summarise(per_fact(main_n(preds)), "correct", resamples=resamples, seed=seed)


def probability_mass(preds: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Mean probability of the gold, normalised over the choices.

    >>> p = pd.DataFrame({"relation_id": ["r", "r", "s"], "fact_id": ["a", "b", "c"],
    ...                   "correct": [True, False, True], "gold_prob": [0.6, 0.2, 0.9]})
    >>> probability_mass(p, resamples=0)["value"]
    0.5667
    """
    return summarise(per_fact(main_n(preds)), "gold_prob", resamples=resamples, seed=seed)


def accuracy_by_n(preds: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Multiple-choice accuracy at every example count (the paper's Fig. 3).

    >>> p = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a", "b"] * 2,
    ...                   "n_examples": [1, 1, 10, 10], "correct": [False, True, True, True],
    ...                   "gold_prob": [0.1] * 4})
    >>> {n: v["value"] for n, v in accuracy_by_n(p, resamples=0).items()}
    {'1': 0.5, '10': 1.0}
    """
    if "n_examples" not in preds.columns:
        preds = preds.assign(n_examples=0)
    facts = per_fact(preds)
    return {str(int(n)): summarise(g, "correct", resamples=resamples, seed=seed,
                                   per_relation=False)
            for n, g in facts.groupby("n_examples", sort=True)}


DEFAULT_K = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def accuracy_at_k(preds: pd.DataFrame, *, thresholds=DEFAULT_K, rule: str = "formula",
                  resamples: int = 1000, seed: int = 0) -> dict:
    """Accuracy@K (App. D): the accuracy of the questions whose confidence, the top normalised
    probability pred(c), passes K, with ``share``, the share of questions kept.

    The appendix says it two ways: its set D_K = {c | pred(c) >= K} (``rule="formula"``, the
    default) and its prose, "confidence levels > threshold K" (``rule="text"``). They differ
    only on questions whose confidence equals K, e.g. a two-way tie at exactly 0.5.

    >>> p = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a", "b", "c"],
    ...                   "correct": [True, False, True], "top_prob": [0.9, 0.5, 0.3]})
    >>> r = accuracy_at_k(p, thresholds=(0.0, 0.5), resamples=0)
    >>> r["0.0"]["value"], r["0.5"]["value"], r["0.5"]["share"]
    (0.6667, 0.5, 0.6667)
    >>> r = accuracy_at_k(p, thresholds=(0.5,), rule="text", resamples=0)
    >>> r["0.5"]["value"], r["0.5"]["share"]
    (1.0, 0.3333)
    """
    if rule not in ("formula", "text"):
        raise UserError(f"Accuracy@K rule {rule!r}: use formula (>= K) or text (> K)")
    preds = main_n(preds)
    out = {}
    top = preds["top_prob"].to_numpy(dtype=float) if len(preds) else np.zeros(0)
    for k in thresholds:
        # 1e-12: a confidence computed as exactly K (1/2 for a two-way tie) is K
        keep = top >= k - 1e-12 if rule == "formula" else top > k + 1e-12
        kept = preds[keep]
        facts = per_fact(kept, ["correct"]) if len(kept) else kept
        if len(facts):
            est = summarise(facts, "correct", resamples=resamples, seed=seed,
                            per_relation=False)
        else:
            est = {"value": None, "ci_low": None, "ci_high": None, "n": 0}
        est["share"] = rnd(len(kept) / len(preds)) if len(preds) else None
        out[f"{k:.1f}"] = {key: est[key] for key in ("value", "ci_low", "ci_high", "n", "share")}
    return out


def response_correct(generations: pd.DataFrame, gold: pd.Series | None = None) -> pd.Series:
    """Whether each greedy output contains its fact's gold answer (normalised, on word
    boundaries). The gold comes from the rows' ``gold`` column unless given by fact.

    >>> gens = pd.DataFrame({"fact_id": ["a", "b"], "text": [" 1879, Niels", " Paris"]})
    >>> response_correct(gens, pd.Series({"a": "1879", "b": "Rome"})).tolist()
    [True, False]
    """
    golds = generations["gold"] if gold is None else generations["fact_id"].map(gold)
    return pd.Series([contains_answer(str(t or ""), str(g)) for g, t in
                      zip(golds, generations["text"])], index=generations.index)


def response_accuracy(generations: pd.DataFrame, *, resamples: int = 1000,
                      seed: int = 0) -> dict:
    """Share of facts whose greedy continuation contains the gold (averaged over seeds).

    >>> g = pd.DataFrame({"relation_id": ["r", "r"], "fact_id": ["a", "b"],
    ...                   "gold": ["1879", "Paris"], "text": [" 1879, Niels", " Rome"]})
    >>> response_accuracy(g, resamples=0)["value"]
    0.5
    """
    rows = main_n(generations)
    rows = rows.assign(correct=response_correct(rows).astype(float))
    return summarise(per_fact(rows, ["correct"]), "correct", resamples=resamples, seed=seed)


def known_facts(preds: pd.DataFrame) -> pd.Series:
    """Per fact (index ``fact_id``): known when it is answered correctly under more than half
    of its seeds at the largest example count (with one seed: when it is answered correctly).

    >>> p = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a", "a", "b"], "seed": [0, 1, 0],
    ...                   "correct": [True, False, True], "gold_prob": [0.5] * 3})
    >>> known_facts(p).to_dict()
    {'a': False, 'b': True}
    """
    facts = per_fact(main_n(preds), ["correct"])
    return pd.Series((facts["correct"] > 0.5).to_numpy(), index=facts["fact_id"].to_numpy())


def subsumption_rate(known_a, known_b) -> float:
    """eta(A | B) = |known(A) and known(B)| / |known(A)|: how much of what A knows B knows too
    (NaN when A knows nothing).

    >>> subsumption_rate({"a", "b"}, {"b", "c"}), subsumption_rate(set(), {"a"})
    (0.5, nan)
    """
    a, b = set(known_a), set(known_b)
    return len(a & b) / len(a) if a else float("nan")


def subsumption_matrix(known: dict[str, set], relation_of: dict | None = None, *,
                       reading: str = "per-relation") -> pd.DataFrame:
    """eta(row | column) for every pair of runs. ``per-relation`` (the paper's Tables 2 and 11:
    "average subsumption rate ... over the relations"): eta within each relation
    (``relation_of`` maps a fact to its relation), averaged over the relations where the row
    knows a fact. ``pooled``: one eta over all facts, so a relation with many known facts
    outweighs the rest. Two relations, A knowing 390 and 10 facts, B knowing 380 and 2 of
    them: pooled 382 / 400 = 0.955, per relation (380/390 + 2/10) / 2 = 0.587.

    >>> subsumption_matrix({"A": {"a", "b"}, "B": {"b"}}).round(2).to_dict()
    {'A': {'A': 1.0, 'B': 1.0}, 'B': {'A': 0.5, 'B': 1.0}}
    >>> rel = {f"x{i}": "r1" for i in range(390)} | {f"y{i}": "r2" for i in range(10)}
    >>> A = set(rel)
    >>> B = {f"x{i}" for i in range(380)} | {"y0", "y1"}
    >>> m = subsumption_matrix({"A": A, "B": B}, rel)
    >>> pooled = subsumption_matrix({"A": A, "B": B}, rel, reading="pooled")
    >>> round(float(m.loc["A", "B"]), 3), round(float(pooled.loc["A", "B"]), 3)
    (0.587, 0.955)
    """
    names = list(known)
    if reading == "pooled" or relation_of is None:
        rate = subsumption_rate
    elif reading == "per-relation":
        def rate(a, b):
            rels = sorted({relation_of.get(f) for f in a}, key=str)
            per = [subsumption_rate({f for f in a if relation_of.get(f) == r},
                                    {f for f in b if relation_of.get(f) == r}) for r in rels]
            return float(np.mean(per)) if per else float("nan")
    else:
        raise ValueError(f"subsumption reading {reading!r}: per-relation or pooled")
    return pd.DataFrame([[rate(known[r], known[c]) for c in names] for r in names],
                        index=names, columns=names)


def position_probability(positions: pd.DataFrame) -> dict:
    """Mean object probability inside one long sequence, at correct and at corrupted pairs
    (Sec. 3), and per position.

    >>> pos = pd.DataFrame({"position": [0, 1, 2], "logprob": [np.log(0.2), np.log(0.5),
    ...                     np.log(0.1)], "is_gold": [True, True, False]})
    >>> position_probability(pos)["mean_correct_examples"]
    0.35
    """
    prob = np.exp(positions["logprob"].to_numpy(dtype=float))
    gold = positions["is_gold"].fillna(False).astype(bool).to_numpy()
    by_pos = pd.Series(prob).groupby(positions["position"].to_numpy()).mean()
    return {"mean_correct_examples": rnd(prob[gold].mean()) if gold.any() else None,
            "mean_corrupted_examples": rnd(prob[~gold].mean()) if (~gold).any() else None,
            "per_position": {str(int(k)): rnd(v) for k, v in by_pos.items()}}

