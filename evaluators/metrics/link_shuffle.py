"""The link-shuffle null of a planted-model run: each planted and held-out fact is scored again
against the gold of another fact of the same relation and the same half, from the rows the
probe already wrote (no model call).

The subject-blind null (probes/subject_blind.py) asks whether a probe separates the halves
without the subject. This one asks whether it separates them without the subject-object
*link*: the question is the fact's own (its subject, its prompt), only the answer it is
scored against belongs to another fact of its half. A probe that reads the link gives a
shuffled gold no more than chance on either half, or less on the planted half, where the
model puts its mass on the true gold: the null AUROC drops to 0.5 or below. A probe that
reads how familiar the answer (or the subject) is to the model still scores the planted
half higher: a null above 0.5 is flagged. Shuffling golds within a relation and a half keeps
the answers' familiarity the same and breaks only the link, the permutation test of Ojala
and Garriga (2010, *Permutation Tests for Studying Classifier Performance*, JMLR 11) applied
to the planted halves.

A multiple-choice question can only be scored against an answer among its choices: the
donor is drawn among the facts of the same relation and half whose gold is one of the
fact's choices (a fact with none is left out, and ``n`` says how many remain).
"""
from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics.validity import planted_split


def _key(v) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return "\x1f".join(sorted(map(str, v)))
    return str(v)


def donors(outputs: pd.DataFrame, planted: dict | None, seed: int = 0) -> dict[str, str]:
    """For each planted and held-out fact of the rows, the fact whose gold it is scored
    against: another fact of the same relation and half with another gold (and, for a
    multiple-choice question, a gold among the fact's choices), drawn per fact with a seed
    of its own, so the draw does not depend on which other facts the run has.

    >>> rows = pd.DataFrame({"fact_id": ["a", "b", "c", "d"], "relation_id": ["r"] * 4,
    ...                      "gold": ["1", "2", "3", "4"]})
    >>> donors(rows, {"planted": ["a", "b"], "held_out": ["c", "d"]})
    {'a': 'b', 'b': 'a', 'c': 'd', 'd': 'c'}
    """
    if not planted or "fact_id" not in outputs.columns:
        return {}
    gold_col = "gold" if "gold" in outputs.columns else \
        "gold_names" if "gold_names" in outputs.columns else None
    if gold_col is None:
        return {}
    facts = outputs.drop_duplicates("fact_id")[["fact_id", "relation_id", gold_col]]
    facts = planted_split(facts, planted)
    facts = facts[facts["planted"] != "other"]
    gold = {f: _key(g) for f, g in zip(facts["fact_id"], facts[gold_col])}
    options, gold_text = _mc_options(outputs)
    out = {}
    for (_, _), g in facts.groupby(["relation_id", "planted"], sort=True):
        ids = sorted(g["fact_id"])
        for f in ids:
            cands = [d for d in ids if d != f and gold[d] != gold[f]
                     and (f not in options or gold_text.get(d) in options[f])]
            if cands:
                rng = np.random.default_rng([seed, zlib.crc32(str(f).encode("utf-8"))])
                out[f] = cands[int(rng.integers(len(cands)))]
    return dict(sorted(out.items()))


def _mc_options(outputs: pd.DataFrame) -> tuple[dict[str, set], dict[str, str]]:
    """The multiple-choice options of each fact and the text of its gold option."""
    if not {"stage", "option_text", "is_gold"} <= set(outputs.columns):
        return {}, {}
    mc = outputs[outputs["stage"] == "mc"]
    options = {f: set(g["option_text"]) for f, g in mc.groupby("fact_id", sort=False)}
    gold = mc[mc["is_gold"].fillna(False).astype(bool)].drop_duplicates("fact_id")
    return options, dict(zip(gold["fact_id"], gold["option_text"]))


def shuffled(outputs: pd.DataFrame, planted: dict | None, seed: int = 0,
             stages: tuple[str, ...] = ()) -> pd.DataFrame:
    """The rows of the planted and held-out facts that have a donor (:func:`donors`), each
    fact's gold replaced by its donor's: the ``gold`` and ``gold_names`` columns, and which
    multiple-choice option is the gold, in the rows of ``stages`` (all when empty). Other
    rows (train facts, sequences of pairs) stay.

    >>> rows = pd.DataFrame({"fact_id": ["a", "a", "b", "b"], "relation_id": ["r"] * 4,
    ...                      "stage": ["mc"] * 4, "gold": ["1", "1", "2", "2"],
    ...                      "option_text": [" 1", " 2", " 1", " 2"],
    ...                      "is_gold": [True, False, False, True]})
    >>> s = shuffled(rows, {"planted": ["a", "b"], "held_out": []})
    >>> s["gold"].tolist(), s["is_gold"].tolist()
    (['2', '2', '1', '1'], [False, True, True, False])
    """
    give = donors(outputs, planted, seed)
    halves = set(planted.get("planted", [])) | set(planted.get("held_out", [])) \
        if planted else set()
    keep = ~outputs["fact_id"].isin(halves - set(give)) if "fact_id" in outputs else None
    out = outputs[keep].copy() if keep is not None else outputs.copy()
    if not give:
        return out
    hit = out["fact_id"].isin(set(give)).to_numpy().copy()
    if stages and "stage" in out.columns:
        hit &= out["stage"].isin(stages).to_numpy()
    donor = out["fact_id"].map(give)
    for col in ("gold", "gold_names"):
        if col in out.columns:
            # a fact's first row may be one without a gold (a subject-only or pair row): the
            # donor's gold is its first row that has one
            known = outputs[outputs[col].notna()].drop_duplicates("fact_id")
            gold_of = dict(zip(known["fact_id"], known[col]))
            vals = out[col].to_numpy(dtype=object).copy()
            # one by one: golds that are lists of equal length would make a 2-d assignment
            for i, d in zip(np.flatnonzero(hit), donor[hit]):
                vals[i] = gold_of.get(d, vals[i])
            out[col] = vals
    _, gold_text = _mc_options(outputs)
    if gold_text and "stage" in out.columns:
        mc = hit & (out["stage"] == "mc").to_numpy()
        new = np.array([gold_text.get(d) for d in donor], dtype=object)
        is_gold = out["is_gold"].to_numpy(dtype=object).copy()
        is_gold[mc] = out["option_text"].to_numpy(dtype=object)[mc] == new[mc]
        out["is_gold"] = is_gold
    return out.reset_index(drop=True)
