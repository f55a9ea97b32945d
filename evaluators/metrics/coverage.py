"""Knowledge coverage and the knowledge sharing rate of BELIEF and BELIEF-ICL (Zhao et al.,
Sec. 7, Table 7, footnote 16, Fig. 2), over per-prompt rows with ``relation_id``, ``fact_id``
(the subject-relation pair), ``template_id``, ``subject_name`` and a 0/1 ``correct``."""
from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics.stats import BLOCK, _interval, rnd, stratum_seed, summarise

# How a pair's prompts of one template (one per subject name) make a(t, tau) for Maximum:
# the paper's footnote 16 takes the best subject expression; "mean" averages the names.
SUBJECT_CHOICES = ("best", "mean")


def template_accuracy(rows: pd.DataFrame, subject: str = "best") -> pd.DataFrame:
    """a(t, tau) per pair t and template tau: the best of its subject names' prompts
    (``subject="best"``, footnote 16) or their mean (``"mean"``).

    >>> r = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a"] * 3,
    ...     "template_id": ["t1", "t1", "t2"], "correct": [1.0, 0.0, 0.0]})
    >>> template_accuracy(r)["correct"].tolist(), template_accuracy(r, "mean")["correct"].tolist()
    ([1.0, 0.0], [0.5, 0.0])
    """
    if subject not in SUBJECT_CHOICES:
        raise UserError(f"coverage subject {subject!r}: choose {' or '.join(SUBJECT_CHOICES)}")
    g = rows.groupby(["relation_id", "fact_id", "template_id"], sort=True)["correct"]
    return (g.max() if subject == "best" else g.mean()).reset_index()


def coverage(rows: pd.DataFrame, *, resamples: int = 1000, seed: int = 0,
             subject: str = "best") -> dict:
    """Knowledge coverage (Sec. 7, Table 7):

    - Average: the mean over templates of the pair's accuracy with the template (the names'
      mean), averaged over pairs: the average Acc@1 when every template has every name;
    - Maximum: per relation the template tau with the highest mean over pairs of a(t, tau),
      where a(t, tau) is the pair's *best* subject name with that template (footnote 16: "We
      select the prompt with the best subject expression among prompts for each fact";
      ``subject="mean"``: the names' mean); pair-weighted over relations;
    - Oracle: the share of pairs with at least one correct prompt.

    >>> r = pd.DataFrame({"relation_id": ["r"] * 5, "fact_id": ["a", "a", "a", "b", "b"],
    ...     "template_id": ["t1", "t1", "t2", "t1", "t2"], "correct": [0.0, 1, 0, 0, 0]})
    >>> c = coverage(r, resamples=0)
    >>> c["average"]["value"], c["maximum"]["value"], c["oracle"]["value"]
    (0.125, 0.5, 0.5)
    >>> coverage(r, resamples=0, subject="mean")["maximum"]["value"]
    0.25
    """
    per_t = template_accuracy(rows, subject)
    avg = template_accuracy(rows, "mean").groupby(["relation_id", "fact_id"], sort=True)[
        "correct"].mean().reset_index()
    oracle = rows.groupby(["relation_id", "fact_id"], sort=True)["correct"].max().reset_index()
    out = {"average": summarise(avg, resamples=resamples, seed=seed),
           "oracle": summarise(oracle, resamples=resamples, seed=seed)}
    # Maximum: template chosen per relation, so resample pairs and re-choose.
    per_rel, boot_num, n_total = {}, [], 0
    best_templates = {}
    for rel, g in per_t.groupby("relation_id", sort=True):
        a = g.set_index(["fact_id", "template_id"])["correct"].unstack("template_id")
        tids = list(a.columns)
        a = a.to_numpy(dtype=float)
        n = a.shape[0]
        filled = np.nan_to_num(a)
        present = (~np.isnan(a)).astype(float)
        col = filled.sum(0) / np.maximum(present.sum(0), 1)
        col[present.sum(0) == 0] = np.nan
        best = float(np.nanmax(col))
        best_templates[rel] = tids[int(np.nanargmax(col))]
        boots = np.empty(0)
        if resamples:
            rng = stratum_seed(seed, rel)
            boots = np.empty(resamples)
            done = 0
            while done < resamples:
                block = min(BLOCK, resamples - done)
                idx = rng.integers(0, n, size=(block, n))
                counts = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(float)
                with np.errstate(invalid="ignore", divide="ignore"):
                    means = (counts @ filled) / (counts @ present)
                boots[done:done + block] = np.nanmax(means, axis=1)
                done += block
        lo, hi = _interval(boots, 0.95) if resamples else (float("nan"),) * 2
        per_rel[rel] = {"value": rnd(best), "ci_low": rnd(lo), "ci_high": rnd(hi), "n": n}
        boot_num.append((n, best, boots))
        n_total += n
    value = sum(n * b for n, b, _ in boot_num) / n_total if n_total else float("nan")
    macro = float(np.mean([b for _, b, _ in boot_num])) if boot_num else float("nan")
    if resamples and boot_num:
        micro_b = sum(n * bs for n, _, bs in boot_num) / n_total
        macro_b = np.mean([bs for _, _, bs in boot_num], axis=0)
        lo, hi = _interval(micro_b, 0.95)
        mlo, mhi = _interval(macro_b, 0.95)
    else:
        lo = hi = mlo = mhi = float("nan")
    out["maximum"] = {"value": rnd(value), "ci_low": rnd(lo), "ci_high": rnd(hi),
                      "macro": rnd(macro), "macro_ci_low": rnd(mlo), "macro_ci_high": rnd(mhi),
                      "n": int(n_total), "per_relation": per_rel,
                      "best_template": best_templates, "subject": subject}
    return out


def covered_units(rows: pd.DataFrame) -> set:
    """The (fact_id, template_id, subject_name) prompts a run answers correctly: the units of
    the knowledge sharing rate.

    >>> r = pd.DataFrame({"fact_id": ["a", "a"], "template_id": ["t1", "t2"],
    ...                   "subject_name": ["X", "X"], "correct": [1.0, 0.0]})
    >>> covered_units(r)
    {('a', 't1', 'X')}
    """
    hit = rows[rows["correct"] > 0.5]
    return set(zip(hit["fact_id"], hit["template_id"], hit["subject_name"]))


def sharing_units(units: set, unit: str = "fact-template") -> set:
    """The units of the knowledge sharing rate from a run's correctly answered prompts
    (:func:`covered_units`). ``fact-template`` (the paper, Sec. 7: "We first collect the
    correctly predicted facts for each template, defining these as the model's covered
    facts"): a (fact, template) is covered when one of its subject names is answered
    correctly. ``prompt``: every (fact, template, subject name) on its own, so a fact with
    many aliases weighs more.

    >>> u = {("a", "t1", "X"), ("a", "t1", "Y"), ("b", "t1", "Z")}
    >>> sorted(sharing_units(u)), len(sharing_units(u, "prompt"))
    ([('a', 't1'), ('b', 't1')], 3)
    """
    if unit == "prompt":
        return set(units)
    if unit == "fact-template":
        return {u[:2] for u in units}
    raise ValueError(f"sharing unit {unit!r}: fact-template or prompt")


def sharing_rate(covered_a, covered_b) -> float:
    """Knowledge sharing rate of A with B (Sec. 7, Fig. 2): |covered(A) and covered(B)| /
    |covered(A)| (NaN when A covers nothing).

    >>> sharing_rate({1, 2, 3, 4}, {2, 3, 9})
    0.5
    """
    a, b = set(covered_a), set(covered_b)
    return len(a & b) / len(a) if a else float("nan")
