"""BELIEF-ICL metrics (Zhao et al., Sec. 3, App. D): the BELIEF metric set on the greedy
answers of a decoder LM, with lemma matching (:mod:`.lemmas`): accuracy one-directional,
consistency and confidence two-directional; confidence from multinomial samples; the
one-word generation rate. Every context (``zero``, ``4-template``, ...) is its own setting.
"""
from __future__ import annotations

import string

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics import lemmas
from factprobe.evaluators.metrics.stats import summarise


def icl_correct(output: str, gold_names, mode: str = "contiguous") -> bool:
    """The greedy output names a gold object: some gold name's lemmas occur, in order, among
    the output's (one-directional).

    >>> icl_correct(" Paris.", ["Paris"]), icl_correct(" It is Rome", ["Paris"])
    (True, False)
    >>> icl_correct(" guitars", ["a guitar"]), icl_correct(" a guitar", ["guitars"])
    (False, True)
    """
    return lemmas.matches_gold(str(output or ""), list(gold_names), mode)


def one_word(text: str) -> bool:
    """Whether an answer is one word: one whitespace-separated word once surrounding spaces
    and punctuation are stripped.

    >>> one_word(" Paris."), one_word(" New York"), one_word(" "), one_word("Jean-Paul")
    (True, False, False, True)
    """
    t = str(text or "").strip().strip(string.punctuation + " \n\t").strip()
    return len(t.split()) == 1


def icl_rows(outputs: pd.DataFrame, mode: str = "contiguous") -> pd.DataFrame:
    """Greedy rows with ``prediction`` (the text), ``correct`` (lemma match, one-directional)
    and ``one_word``.

    >>> out = pd.DataFrame({"stage": ["greedy"] * 2, "relation_id": ["r"] * 2,
    ...     "fact_id": ["a", "b"], "context": ["zero"] * 2, "gold_names": [["Paris"], ["Oslo"]],
    ...     "text": [" Paris.", " the city of Bergen"]})
    >>> icl_rows(out)[["fact_id", "correct", "one_word"]].to_dict("records")
    [{'fact_id': 'a', 'correct': 1.0, 'one_word': 1.0}, {'fact_id': 'b', 'correct': 0.0, 'one_word': 0.0}]
    """
    rows = outputs[outputs["stage"] == "greedy"]
    texts = [str(t) if isinstance(t, str) else "" for t in rows["text"]]
    lemmas.warm(texts + [g for names in rows["gold_names"] for g in names])
    return rows.assign(prediction=texts,
                       correct=[float(icl_correct(t, g, mode))
                                for t, g in zip(texts, rows["gold_names"])],
                       one_word=[float(one_word(t)) for t in texts])


def sample_confidence(outputs: pd.DataFrame, greedy: pd.DataFrame,
                      mode: str = "contiguous") -> pd.DataFrame:
    """Per sampled prompt: confidence = share of its samples that match its greedy answer
    (two-directional), with the greedy answer's correctness, and ``gold_share`` = share of
    samples that name the gold (one-directional).

    >>> g = pd.DataFrame({"context": ["zero"], "prompt_id": ["p"], "relation_id": ["r"],
    ...     "fact_id": ["a"], "prediction": [" Paris"], "correct": [1.0]})
    >>> s = pd.DataFrame({"stage": ["samples"] * 4, "context": ["zero"] * 4,
    ...     "prompt_id": ["p"] * 4, "fact_id": ["a"] * 4, "gold_names": [["Paris"]] * 4,
    ...     "text": [" Paris.", " Rome", " paris", " Lyon"]})
    >>> cols = ["confidence", "correct", "gold_share", "samples"]
    >>> sample_confidence(s, g)[cols].to_dict("records")
    [{'confidence': 0.5, 'correct': 1.0, 'gold_share': 0.5, 'samples': 4}]
    """
    smp = outputs[outputs["stage"] == "samples"]
    cols = ["context", "prompt_id", "relation_id", "fact_id", "confidence", "correct",
            "gold_share", "samples"]
    if smp.empty or greedy.empty:
        return pd.DataFrame(columns=cols)
    lemmas.warm([str(t) for t in smp["text"]])
    # one prompt text can serve two facts (the subject-blind null gives every fact the same
    # subject), so a sampled prompt is a (fact, prompt) pair, not a prompt id alone
    key = ["context", "fact_id", "prompt_id"]
    ref = greedy.drop_duplicates(key).set_index(key)
    rows = []
    for (ctx, fid, pid), g in smp.groupby(key, sort=True):
        if (ctx, fid, pid) not in ref.index:
            continue
        r = ref.loc[(ctx, fid, pid)]
        texts = [str(t) if isinstance(t, str) else "" for t in g["text"]]
        same = [lemmas.same_answer(r["prediction"], t, mode) for t in texts]
        gold = list(g["gold_names"].iloc[0])
        hits = [lemmas.matches_gold(t, gold, mode) for t in texts]
        rows.append({"context": ctx, "prompt_id": pid, "relation_id": r["relation_id"],
                     "fact_id": fid, "confidence": float(np.mean(same)),
                     "correct": float(r["correct"]), "gold_share": float(np.mean(hits)),
                     "samples": len(texts)})
    return pd.DataFrame(rows, columns=cols)


def one_word_rate(rows: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Share of greedy outputs that are one word (over prompts; intervals resample pairs).

    >>> r = pd.DataFrame({"relation_id": ["r"] * 3, "fact_id": ["a", "a", "b"],
    ...                   "one_word": [1.0, 0.0, 1.0]})
    >>> one_word_rate(r, resamples=0)["value"]
    0.6667
    """
    per = rows.groupby(["relation_id", "fact_id"], sort=True)["one_word"].agg(["sum", "size"])
    per = per.reset_index()
    return summarise(per, "sum", weights="size", resamples=resamples, seed=seed,
                     per_relation=False)
