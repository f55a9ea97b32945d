"""BELIEF and BELIEF-ICL: per-prompt correctness (the full metric set builds on these rows)."""
from __future__ import annotations

import math

import pandas as pd

from .text import normalise


def mask_correct(top_token: str, gold_names) -> bool:
    """A masked LM's top-1 token is correct if it is one of the gold names.

    >>> mask_correct("Paris", ["Paris", "City of Light"]), mask_correct("##is", ["Paris"])
    (True, False)
    """
    t = normalise(top_token)
    return bool(t) and any(t == normalise(g) for g in gold_names)


def answerable(candidate_probs) -> bool:
    """Whether any gold name is a single token of the model (the paper skips pairs otherwise)."""
    return any(not math.isnan(p) for p in candidate_probs)


def icl_correct(output: str, gold_names) -> bool:
    """The greedy output names a gold object: every word of a gold name occurs in it.

    >>> icl_correct(" Paris.", ["Paris"]), icl_correct(" It is Rome", ["Paris"])
    (True, False)
    """
    words = set(normalise(output).split())
    return any(set(normalise(g).split()) <= words and normalise(g) for g in gold_names)


def belief_rows(outputs: pd.DataFrame) -> pd.DataFrame:
    rows = outputs[outputs["stage"] == "prompts"]
    ok = rows["candidate_probs"].map(answerable)
    rows = rows[ok]
    return rows.assign(correct=[mask_correct(t[0], g) for t, g in
                                zip(rows["top_tokens"], rows["gold_names"])])


def icl_rows(outputs: pd.DataFrame) -> pd.DataFrame:
    rows = outputs[outputs["stage"] == "greedy"]
    return rows.assign(correct=[icl_correct(t, g) for t, g in
                                zip(rows["text"], rows["gold_names"])])
