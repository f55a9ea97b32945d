"""MONITOR metrics (Wang et al., Sec. 4): PFD, IRD and MONITOR from anchor probabilities."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .text import normalise


def fact_distances(anchor: np.ndarray, paraphrases: list[np.ndarray],
                   negatives: list[np.ndarray]) -> tuple[float, float]:
    """(PFD, IRD) of one fact: mean over prompts of the mean absolute difference, token by
    token, between the anchor's probabilities under the positive prompt and under each
    paraphrase (PFD) or negative prompt (IRD). Missing tokens count as probability 0.

    >>> fact_distances(np.array([0.9, 0.5]), [np.array([0.8, 0.5]), np.array([0.9, 0.3])],
    ...                [np.array([0.1, 0.5])])
    (0.075, 0.4)
    """
    def dist(others: list[np.ndarray]) -> float:
        if not others:
            return float("nan")
        L = len(anchor)
        vals = []
        for o in others:
            o = np.pad(np.asarray(o, dtype=float)[:L], (0, max(0, L - len(o))))
            vals.append(np.abs(anchor - o).mean())
        return round(float(np.mean(vals)), 10)
    return dist(paraphrases), dist(negatives)


def monitor_score(pfd: np.ndarray, ird: np.ndarray, anchor_mean: np.ndarray,
                  alphas: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3)) -> float:
    """sum_c sqrt(a1 PFD^2 + a2 IRD^2 + a3 PFD IRD) / sum_c mean_l P+_l. Lower is better.

    >>> round(monitor_score(np.array([0.1, 0.3]), np.array([0.2, 0.1]), np.array([0.8, 0.6])), 4)
    0.2578
    """
    a1, a2, a3 = alphas
    num = np.sqrt(a1 * pfd ** 2 + a2 * ird ** 2 + a3 * pfd * ird).sum()
    return float(num / anchor_mean.sum())


def per_fact(outputs: pd.DataFrame) -> pd.DataFrame:
    """PFD, IRD and mean anchor probability for every fact whose anchor matched its gold."""
    anchors = outputs[(outputs["stage"] == "anchor")].set_index("fact_id")
    foreign = outputs[outputs["stage"] == "foreign"]
    rows = []
    for fid, g in foreign.groupby("fact_id", sort=True):
        a = np.exp(np.asarray(anchors.loc[fid, "token_logprobs"], dtype=float))
        col = "token_logprobs" if "watched_logprobs" not in g.columns or \
            g["watched_logprobs"].isna().all() else "watched_logprobs"
        probs = {(f, i): np.exp(np.asarray(v, dtype=float))
                 for f, i, v in zip(g["frame"], g["index"], g[col])}
        par = [v for (f, _), v in sorted(probs.items()) if f == "paraphrase"]
        neg = [v for (f, _), v in sorted(probs.items()) if f == "negative"]
        pfd, ird = fact_distances(a, par, neg)
        rows.append({"fact_id": fid, "relation_id": g["relation_id"].iloc[0], "pfd": pfd,
                     "ird": ird, "anchor_prob": float(a.mean())})
    return pd.DataFrame(rows, columns=["fact_id", "relation_id", "pfd", "ird", "anchor_prob"])


def frame_accuracy(outputs: pd.DataFrame) -> dict:
    """Accuracy of the greedy answer under each prompt frame: avg, max and min over frames."""
    fr = outputs[outputs["stage"] == "frames"]
    if fr.empty:
        return {}
    ok = [normalise(t) == normalise(g) or normalise(g) in normalise(t).split(" ")
          or normalise(t).startswith(normalise(g)) for t, g in zip(fr["text"], fr["gold"])]
    acc = fr.assign(correct=ok).groupby(["frame", "index"])["correct"].mean()
    return {"avg": round(float(acc.mean()), 4), "max": round(float(acc.max()), 4),
            "min": round(float(acc.min()), 4),
            "per_frame": {f"{f}-{i}": round(float(v), 4) for (f, i), v in acc.items()}}


def summary(outputs: pd.DataFrame, alphas=(1 / 3, 1 / 3, 1 / 3)) -> dict:
    facts = per_fact(outputs)
    out: dict = {"facts_with_anchor": int(len(facts)),
                 "facts": int((outputs["stage"] == "anchor").sum())}
    if len(facts):
        out["monitor"] = round(monitor_score(facts["pfd"].to_numpy(), facts["ird"].to_numpy(),
                                             facts["anchor_prob"].to_numpy(), alphas), 4)
        out["pfd"] = round(float(facts["pfd"].mean()), 4)
        out["ird"] = round(float(facts["ird"].mean()), 4)
        out["anchor_probability"] = round(float(facts["anchor_prob"].mean()), 4)
        out["per_relation"] = {
            r: round(monitor_score(g["pfd"].to_numpy(), g["ird"].to_numpy(),
                                   g["anchor_prob"].to_numpy(), alphas), 4)
            for r, g in facts.groupby("relation_id")}
    out["frame_accuracy"] = frame_accuracy(outputs)
    return out
