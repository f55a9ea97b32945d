"""Estimator validity on a planted-knowledge model (``factprobe plant``): the model was taught
the ``planted`` facts of ``planted.json`` and never shown the ``held_out`` ones, so a valid
estimator scores the first far above the second. Per method: accuracy on each half (with
intervals), their difference, and the AUROC of a per-fact score (how well the score alone
separates planted from held-out facts; 0.5 = chance, 1 = perfect).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics.stats import auroc, auroc_interval, bootstrap, rnd


def planted_split(frame: pd.DataFrame, planted: dict | None) -> pd.DataFrame:
    """``frame`` with a ``planted`` column: ``planted``, ``held_out`` or ``other``.

    >>> planted_split(pd.DataFrame({"fact_id": ["a", "b", "c"]}),
    ...               {"planted": ["a"], "held_out": ["b"]})["planted"].tolist()
    ['planted', 'held_out', 'other']
    """
    if not planted:
        return frame.iloc[:0].assign(planted=pd.Series(dtype=str))
    where = np.full(len(frame), "other", dtype=object)
    ids = frame["fact_id"].to_numpy()
    where[np.isin(ids, list(planted.get("planted", [])))] = "planted"
    where[np.isin(ids, list(planted.get("held_out", [])))] = "held_out"
    return frame.assign(planted=where)


def validity(per_fact: pd.DataFrame, planted: dict | None, *, column: str = "correct",
             score: str | None = None, resamples: int = 1000, seed: int = 0,
             accuracy_means: str = "", score_means: str = "", chance: str | None = None
             ) -> dict:
    """Accuracy (mean of ``column``) on planted and on held-out facts with bootstrap
    intervals, the difference with its interval (each half resampled on its own), and the
    AUROC of ``score`` (default: ``column``) between the halves. Empty without
    ``planted.json`` or when the run has no planted or held-out fact. ``chance``: a column
    of each fact's accuracy by chance (1 / its choices), whose held-out mean is recorded as
    ``held_out_chance``: held-out facts answered far above it are given away by the graph.

    >>> facts = pd.DataFrame({"fact_id": list("abcd"), "correct": [1.0, 1.0, 0.0, 1.0],
    ...                       "p": [0.9, 0.8, 0.1, 0.7], "c": [0.5, 0.5, 0.5, 0.25]})
    >>> v = validity(facts, {"planted": ["a", "b"], "held_out": ["c", "d"]}, score="p",
    ...              resamples=0, chance="c")
    >>> v["planted"]["value"], v["held_out"]["value"], v["difference"]["value"], v["auroc"]["value"]
    (1.0, 0.5, 0.5, 1.0)
    >>> v["held_out_chance"]
    0.375
    """
    split = planted_split(per_fact, planted)
    split = split[split["planted"] != "other"]
    if split.empty or split["planted"].nunique() < 2:
        return {}
    b = bootstrap(split[column].to_numpy(dtype=float), split["planted"].to_numpy(),
                  resamples=resamples, seed=seed)
    out = {}
    for k in ("planted", "held_out"):
        s = b["per_stratum"][k]
        out[k] = {"value": rnd(s["value"]), "ci_low": rnd(s["ci_low"]),
                  "ci_high": rnd(s["ci_high"]), "n": s["n"]}
    diff = _difference(split, column, resamples, seed)
    out["difference"] = {"value": rnd(out["planted"]["value"] - out["held_out"]["value"]
                                      if None not in (out["planted"]["value"],
                                                      out["held_out"]["value"]) else None),
                         "ci_low": rnd(diff[0]), "ci_high": rnd(diff[1])}
    sc = score or column
    pos = split.loc[split["planted"] == "planted", sc].to_numpy(dtype=float)
    neg = split.loc[split["planted"] == "held_out", sc].to_numpy(dtype=float)
    lo, hi = auroc_interval(pos, neg, resamples=resamples, seed=seed)
    out["auroc"] = {"value": rnd(auroc(pos, neg)), "ci_low": rnd(lo), "ci_high": rnd(hi)}
    both = np.concatenate([pos, neg])
    if len(both) and np.all(both == both[0]):
        # one score for every fact: the AUROC is 0.5 by ties, whatever the probe does
        out["constant_score"] = rnd(float(both[0]))
    if chance:
        out["held_out_chance"] = rnd(float(
            split.loc[split["planted"] == "held_out", chance].mean()))
    if accuracy_means:
        out["accuracy_means"] = accuracy_means
    if score_means:
        out["score_means"] = score_means
    return out


def _difference(split: pd.DataFrame, column: str, resamples: int, seed: int):
    """Interval of mean(planted) - mean(held_out), from the same resamples as their own
    intervals (the stratified recipe of :mod:`.stats`, strata ``held_out`` and ``planted``)."""
    if not resamples:
        return float("nan"), float("nan")
    from factprobe.evaluators.metrics.stats import _interval, _resampled_sums, stratum_seed
    means = {}
    for k in ("held_out", "planted"):
        v = split.loc[split["planted"] == k, column].to_numpy(dtype=float)
        v = v[~np.isnan(v)]
        if len(v) == 0:
            return float("nan"), float("nan")
        num, den = _resampled_sums(v, np.ones_like(v), stratum_seed(seed, k), resamples)
        means[k] = num / den
    return _interval(means["planted"] - means["held_out"], 0.95)


# How far from 0.5 a null AUROC may be before the report flags it (docs/metrics/validity.md):
# the point estimate must leave 0.4-0.6 and its interval must exclude 0.5, so that a null
# resting on few facts (0.36 [0.21, 0.51]) is not flagged on its point estimate alone.
FAMILIARITY_MARGIN = 0.1


def null_of(blind_block: dict | None, why: str = "", what: str = "the subject-blind") -> dict:
    """The subject-blind null of a validity block: accuracy on each half and the AUROC of the
    same block computed on the null pass's rows (the same probe, the subject of every planted
    and held-out fact replaced by one made-up name). ``auroc`` is null, with ``reason``, when
    the null pass gave no such block, or when it named no gold for any fact and so scored
    every fact the same (MONITOR without the subject: no anchor equals the gold, every score
    0): its AUROC would be 0.5 by ties alone, whatever the probe does, and could never be
    flagged.

    ``leans`` is the null's flag, as the report raises it: the half a null that is off
    favours (:func:`null_leans`), None when it is not off or is undefined. A link-shuffle
    null is off only towards planted facts: below 0.5 is what a probe that reads the link
    gives.

    >>> half = {"value": 0.5, "ci_low": 0.3, "ci_high": 0.7, "n": 4}
    >>> null_of({"planted": half, "held_out": half, "difference": {"value": 0.0},
    ...          "auroc": {"value": 0.5, "ci_low": 0.3, "ci_high": 0.7},
    ...          "score_means": "p"})["auroc"]
    {'value': 0.5, 'ci_low': 0.3, 'ci_high': 0.7}
    >>> low = {"planted": half, "held_out": half,
    ...        "auroc": {"value": 0.1, "ci_low": 0.05, "ci_high": 0.2}}
    >>> null_of(low)["leans"], null_of(low, what="the link-shuffle")["leans"]
    ('held_out', None)
    >>> null_of({}, "no anchor")  # doctest: +NORMALIZE_WHITESPACE
    {'auroc': {'value': None, 'ci_low': None, 'ci_high': None}, 'reason': 'no anchor',
     'leans': None}
    >>> zero = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 4}
    >>> null_of({"planted": zero, "held_out": zero, "constant_score": 0.0,
    ...          "auroc": {"value": 0.5, "ci_low": 0.5, "ci_high": 0.5}})["auroc"]["value"]
    """
    if not blind_block:
        return {"auroc": {"value": None, "ci_low": None, "ci_high": None},
                "reason": why or f"{what} pass gave no planted or held-out fact",
                "leans": None}
    if _named_no_gold(blind_block):
        why = (f"undefined: {what} pass named no planted or held-out fact's gold, every "
               f"score is {blind_block['constant_score']:g}, and ties alone would give 0.5")
        if what == "the link-shuffle":
            why = ("undefined: no planted or held-out fact's answer names the other fact's "
                   "gold it is scored against (every score 0), as a probe that reads the "
                   "link would; ties alone would give 0.5")
        return {**{k: dict(blind_block[k]) for k in ("planted", "held_out")},
                "auroc": {"value": None, "ci_low": None, "ci_high": None}, "reason": why,
                "leans": None}
    leans = null_leans(blind_block["auroc"])
    if what == "the link-shuffle" and leans != "planted":
        leans = None
    return {**{k: dict(blind_block[k]) for k in ("planted", "held_out", "auroc")},
            "leans": leans}


def _named_no_gold(block: dict) -> bool:
    # a score of 0 for every fact with no gold named: nothing was measured (a graded score
    # that ties, such as one multiple-choice probability for every fact, is a measurement)
    return (block.get("constant_score") == 0
            and all((block.get(k) or {}).get("value") == 0 for k in ("planted", "held_out")))


def null_leans(auroc: dict | None, margin: float = FAMILIARITY_MARGIN) -> str | None:
    """Which half a null favours, when it is off: ``"planted"`` (the probe without the link
    still scores planted facts higher: answer familiarity), ``"held_out"`` (it scores
    held-out ones higher), or None. Off means the point estimate is farther than ``margin``
    from 0.5 and the interval excludes 0.5 (no interval: the point estimate alone).

    >>> null_leans({"value": 0.778, "ci_low": 0.733, "ci_high": 0.821})
    'planted'
    >>> null_leans({"value": 0.36, "ci_low": 0.212, "ci_high": 0.505}) is None
    True
    >>> null_leans({"value": 0.3, "ci_low": 0.2, "ci_high": 0.45})
    'held_out'
    >>> null_leans({"value": 0.55, "ci_low": 0.51, "ci_high": 0.6}), null_leans(None)
    (None, None)
    """
    v = (auroc or {}).get("value")
    if v is None or np.isnan(v) or abs(v - 0.5) <= margin:
        return None
    lo, hi = auroc.get("ci_low"), auroc.get("ci_high")
    if v > 0.5:
        return "planted" if lo is None or np.isnan(lo) or lo > 0.5 else None
    return "held_out" if hi is None or np.isnan(hi) or hi < 0.5 else None


def familiar(null_auroc, margin: float = FAMILIARITY_MARGIN) -> bool:
    """True when a null is off (:func:`null_leans`); takes the AUROC block, or a bare point
    estimate (no interval).

    >>> familiar(0.9), familiar(0.5), familiar(0.35), familiar(0.6), familiar(None)
    (True, False, True, False, False)
    >>> familiar({"value": 0.36, "ci_low": 0.212, "ci_high": 0.505})
    False
    """
    if not isinstance(null_auroc, dict):
        null_auroc = {"value": null_auroc}
    return null_leans(null_auroc, margin) is not None


LEANS = {"planted": "favours planted facts: without the subject it still scores the taught "
                    "facts' answers higher (answer familiarity)",
         "held_out": "favours held-out facts: without the subject it scores the untaught "
                     "facts' answers higher"}


def planted_model(planted: dict | None) -> dict | None:
    """Whether the planted model learned what it was taught, from its ``planted.json``
    (``converged``, the last teacher-forced accuracy on the planted facts, the target, the
    epochs): carried into every run and report that uses the model, because a model that did
    not learn its planted facts makes every method's validity look weak. None for a
    planted.json that does not say (written by hand, or by an older factprobe).

    >>> s = planted_model({"converged": False, "planted_accuracy": [0.5, 0.708],
    ...                    "epochs_run": 40, "config": {"target_accuracy": 0.9,
    ...                                                 "max_epochs": 40}})
    >>> s["converged"], s["planted_accuracy"], s["target_accuracy"], s["epochs_run"]
    (False, 0.708, 0.9, 40)
    >>> s["what_to_do"].split(":")[0]
    'plant it again until planted.json says converged'
    >>> planted_model({"converged": True, "planted_accuracy": [0.95]})["what_to_do"]
    ''
    >>> planted_model({"planted": []}) is None
    True
    """
    if not isinstance(planted, dict) or not isinstance(planted.get("converged"), bool):
        return None
    acc = planted.get("planted_accuracy")
    last = acc[-1] if isinstance(acc, list) and acc else acc
    cfg = planted.get("config") if isinstance(planted.get("config"), dict) else {}
    out = {"converged": planted["converged"],
           "planted_accuracy": last if isinstance(last, (int, float)) else None,
           "target_accuracy": cfg.get("target_accuracy"),
           "epochs_run": planted.get("epochs_run"), "max_epochs": cfg.get("max_epochs"),
           "what_to_do": ""}
    if not out["converged"]:
        out["what_to_do"] = (
            "plant it again until planted.json says converged: true (factprobe plant "
            "--max-epochs, a higher --lr; in a DVC project plant.max_epochs in params.yaml), "
            "then rerun the evaluations; until then every validity figure understates "
            "what the methods can see")
    return out


def planted_warning(status: dict | None, where: str) -> str:
    """The one line the report puts at its top and beside the validity table for a planted
    model that did not learn its planted facts; empty for one that did.

    >>> planted_warning({"converged": False, "planted_accuracy": 0.708,
    ...                  "target_accuracy": 0.9, "epochs_run": 40, "what_to_do": "do X"},
    ...                 "models/planted")[:80]
    'The planted model models/planted did not learn its planted facts: teacher-forced'
    >>> planted_warning({"converged": True}, "m")
    ''
    """
    if not status or status.get("converged", True):
        return ""
    acc, target = status.get("planted_accuracy"), status.get("target_accuracy")
    got = f"{acc:.3f}" if isinstance(acc, (int, float)) else "unknown"
    need = f" < target {target}" if target is not None else ""
    epochs = status.get("epochs_run")
    after = f" after {epochs} epochs" if epochs is not None else ""
    return (f"The planted model {where} did not learn its planted facts: teacher-forced "
            f"accuracy {got}{need}{after} (planted.json: converged false). Its validity "
            f"figures measure a half-taught model, not the methods. What to do: "
            f"{status.get('what_to_do')}.")


def subject_only_block(scores: pd.DataFrame, planted: dict, resamples: int = 1000,
                       seed: int = 0) -> dict:
    """The subject-only check (probes/subject_only.py): per score read from the subject
    alone, its mean on each half and its AUROC between them. It should be 0.5; one off
    (:func:`null_leans`, either way) says the subject alone tells planted from held-out facts.

    >>> s = pd.DataFrame({"fact_id": list("abcd"), "relation_id": ["r"] * 4,
    ...                   "period_after_subject": [-1.0, -2.0, -1.5, -0.5],
    ...                   "subject_likelihood": [-3.0, -3.0, -3.0, -3.0]})
    >>> b = subject_only_block(s, {"planted": ["a", "b"], "held_out": ["c", "d"]}, 0)
    >>> b["period_after_subject"]["auroc"]["value"], b["subject_likelihood"]["auroc"]["value"]
    (0.25, 0.5)
    """
    out = {}
    for name in ("period_after_subject", "subject_likelihood"):
        v = validity(scores.dropna(subset=[name]), planted, column=name, score=name,
                     resamples=resamples, seed=seed)
        if v:
            out[name] = {k: v[k] for k in ("planted", "held_out", "auroc")}
            out[name]["leans"] = null_leans(v["auroc"])
    return out
