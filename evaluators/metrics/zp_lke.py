"""ZP-LKE metrics: multiple-choice accuracy, probability mass, response accuracy."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .text import contains_answer

QUESTION_KEYS = ["relation_id", "fact_id", "seed", "n_examples"]


def _keys(df: pd.DataFrame) -> list[str]:
    return [k for k in QUESTION_KEYS if k in df.columns]


def mc_predictions(scores: pd.DataFrame, *, ties_against_gold: bool = False) -> pd.DataFrame:
    """One row per question: whether the gold has the highest log-probability, and the gold's
    probability normalised over the choices.

    Ties go to the lowest option index, or, with ``ties_against_gold`` (the authors' code),
    count as wrong.

    >>> df = pd.DataFrame({"relation_id": ["r"] * 6, "fact_id": ["a"] * 3 + ["b"] * 3,
    ...     "option": [0, 1, 2] * 2, "is_gold": [True, False, False, False, True, False],
    ...     "logprob": [-1.0, -2.0, -3.0, -1.0, -1.0, -5.0]})
    >>> mc_predictions(df)[["fact_id", "correct", "gold_prob"]].round(3).to_dict("records")
    [{'fact_id': 'a', 'correct': True, 'gold_prob': 0.665}, {'fact_id': 'b', 'correct': False, 'gold_prob': 0.495}]
    >>> bool(mc_predictions(df, ties_against_gold=True)["correct"].iloc[1])
    False
    """
    keys = _keys(scores)
    df = scores.sort_values(keys + ["option"], kind="stable")
    lp = df["logprob"].to_numpy(dtype=np.float64)
    grp = df.groupby(keys, sort=False)
    mx = grp["logprob"].transform("max").to_numpy()
    norm = np.exp(lp - mx)
    share = norm / pd.Series(norm, index=df.index).groupby([df[k] for k in keys]).transform(
        "sum").to_numpy()
    df = df.assign(_p=share, _is_max=lp == mx)
    out = []
    for key, g in df.groupby(keys, sort=False):
        gold = g[g["is_gold"]]
        if len(gold) != 1:
            raise ValueError(f"question {key} has {len(gold)} gold options")
        best = g[g["_is_max"]]
        if ties_against_gold:
            correct = bool(gold["_is_max"].iloc[0]) and len(best) == 1
        else:
            correct = bool(best["is_gold"].iloc[0])
        out.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)),
                        correct=correct, gold_prob=float(gold["_p"].iloc[0]),
                        top_prob=float(g["_p"].max())))
    return pd.DataFrame(out)


def response_correct(generations: pd.DataFrame, gold: pd.Series) -> pd.Series:
    """Whether each greedy output contains its fact's gold answer.

    >>> gens = pd.DataFrame({"fact_id": ["a", "b"], "text": [" 1879, Niels", " Paris"]})
    >>> response_correct(gens, pd.Series({"a": "1879", "b": "Rome"})).tolist()
    [True, False]
    """
    return pd.Series([contains_answer(t, gold[f]) for f, t in
                      zip(generations["fact_id"], generations["text"])], index=generations.index)


def summarise(correct: pd.DataFrame, column: str = "correct") -> dict:
    """Overall (micro) and per-relation mean of a 0/1 column, and the macro mean.

    >>> summarise(pd.DataFrame({"relation_id": ["r", "r", "s"], "correct": [1, 0, 1]}))
    {'overall': 0.6667, 'macro': 0.75, 'n': 3, 'per_relation': {'r': 0.5, 's': 1.0}}
    """
    per = correct.groupby("relation_id")[column].mean()
    return {"overall": round(float(correct[column].mean()), 4),
            "macro": round(float(per.mean()), 4), "n": int(len(correct)),
            "per_relation": {k: round(float(v), 4) for k, v in per.items()}}
