"""MONITOR metrics (Wang et al., Sec. 4): PFD, IRD and MONITOR per fact, relation and overall,
frame accuracies and the mean primary-anchor probability.

A fact counts for the distances only when its primary anchor (the greedy answer to
"{gold}. Q0(x)") equals the gold after trimming punctuation, the probe's rule. Its anchor
probabilities P+_l are those of the anchor's tokens; the foreign anchors P_j,l (paraphrase j)
and P-_m,l (negative m) are read from the ``foreign`` stage (teacher-forced log-probs, or the
compat run's ``watched_logprobs``). Missing tokens count as probability 0.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from builders.core.errors import UserError
from evaluators.metrics.stats import estimate, rnd, summarise
from evaluators.metrics.text import normalise

ALPHAS = (1 / 3, 1 / 3, 1 / 3)


def fact_distances(anchor: np.ndarray, paraphrases: list[np.ndarray],
                   negatives: list[np.ndarray]) -> tuple[float, float]:
    """(PFD, IRD) of one fact: mean over prompts of the mean absolute difference, token by
    token, between the anchor's probabilities under the positive prompt and under each
    paraphrase (PFD, divided by the real R) or negative prompt (IRD, the real M).

    >>> fact_distances(np.array([0.9, 0.5]), [np.array([0.8, 0.5]), np.array([0.9, 0.3])],
    ...                [np.array([0.1, 0.5])])
    (0.075, 0.4)
    """
    anchor = np.asarray(anchor, dtype=float)

    def dist(others: list[np.ndarray]) -> float:
        if not others:
            return float("nan")
        L = len(anchor)
        vals = []
        for o in others:
            o = np.asarray(o, dtype=float)[:L]
            o = np.pad(o, (0, L - len(o)))
            vals.append(np.abs(anchor - o).mean())
        return round(float(np.mean(vals)), 10)
    return dist(paraphrases), dist(negatives)


def fact_score(pfd, ird, *, alphas=ALPHAS):
    """The MONITOR summand of a fact: sqrt(a1 PFD^2 + a2 IRD^2 + a3 PFD IRD).

    >>> round(float(fact_score(0.1, 0.2)), 4)
    0.1528
    """
    a1, a2, a3 = alphas
    pfd, ird = np.asarray(pfd, dtype=float), np.asarray(ird, dtype=float)
    return np.sqrt(a1 * pfd ** 2 + a2 * ird ** 2 + a3 * pfd * ird)


def monitor_score(pfd: np.ndarray, ird: np.ndarray, anchor_mean: np.ndarray, *,
                  alphas=ALPHAS) -> float:
    """sum_c sqrt(a1 PFD^2 + a2 IRD^2 + a3 PFD IRD) / sum_c mean_l P+_l. Lower is better.

    >>> round(monitor_score(np.array([0.1, 0.3]), np.array([0.2, 0.1]), np.array([0.8, 0.6])), 4)
    0.2578
    """
    return float(fact_score(pfd, ird, alphas=alphas).sum() / np.asarray(anchor_mean).sum())


def anchor_matched(text: str, gold: str, n_tokens: int = 1) -> bool:
    """The probe's rule: the greedy anchor equals the gold after trimming punctuation.

    >>> anchor_matched(" Paris.", "Paris"), anchor_matched(" Paris is", "Paris")
    (True, False)
    """
    from probes.methods.monitor import trimmed
    return n_tokens > 0 and trimmed(str(text or "")) == gold


def anchors(outputs: pd.DataFrame) -> pd.DataFrame:
    """One row per fact: its anchor text, whether it matched the gold and its probability."""
    a = outputs[outputs["stage"] == "anchor"]
    if a["fact_id"].duplicated().any():
        raise UserError("outputs.parquet has several anchor rows for one fact: it mixes runs; "
                        "rerun 'factprobe eval monitor' into an empty folder")
    n_tok = [len(t) if t is not None else 0 for t in a["token_ids"]] \
        if "token_ids" in a.columns else [1] * len(a)
    matched = [anchor_matched(t, g, n) for t, g, n in zip(a["text"], a["gold"], n_tok)]
    prob = [float(np.exp(np.asarray(lp, dtype=float)).mean()) if m and len(lp) else 0.0
            for lp, m in zip(a["token_logprobs"], matched)]
    return pd.DataFrame({"relation_id": a["relation_id"].to_numpy(),
                         "fact_id": a["fact_id"].to_numpy(), "matched": np.array(matched, float),
                         "anchor_prob": prob}).sort_values(["relation_id", "fact_id"],
                                                           kind="stable").reset_index(drop=True)


def per_fact(outputs: pd.DataFrame, *, alphas=ALPHAS) -> pd.DataFrame:
    """PFD, IRD, mean anchor probability and the MONITOR summand (``score``) and ratio
    (``monitor`` = score / anchor probability) for every fact whose anchor matched its gold.
    A matched fact without its foreign-anchor rows is a user error (an incomplete run)."""
    cols = ["relation_id", "fact_id", "pfd", "ird", "anchor_prob", "score", "monitor",
            "paraphrases", "negatives"]
    anc = outputs[outputs["stage"] == "anchor"].drop_duplicates("fact_id").set_index("fact_id")
    ok = anchors(outputs)
    matched = set(ok.loc[ok["matched"] > 0, "fact_id"])
    foreign = outputs[outputs["stage"] == "foreign"]
    frames = outputs[outputs["stage"] == "frames"]
    missing = sorted(matched - set(foreign["fact_id"]))
    if missing:
        raise UserError(f"{len(missing)} fact(s) whose anchor matched the gold have no "
                        f"foreign-anchor rows (e.g. {missing[0]}): the run is incomplete; "
                        f"rerun 'factprobe eval monitor'")
    if len(frames):
        want = frames.groupby("fact_id")[["frame", "index"]].apply(
            lambda g: set(zip(g["frame"], g["index"])))
    rows = []
    for fid, g in foreign[foreign["fact_id"].isin(matched)].groupby("fact_id", sort=True):
        a = np.exp(np.asarray(anc.loc[fid, "token_logprobs"], dtype=float))
        use_watched = "watched_logprobs" in g.columns and g["watched_logprobs"].notna().any()
        col = "watched_logprobs" if use_watched else "token_logprobs"
        probs = {(f, int(i)): np.exp(np.asarray(v, dtype=float))
                 for f, i, v in zip(g["frame"], g["index"], g[col])}
        if len(frames) and fid in want.index and set(probs) != want[fid]:
            raise UserError(f"fact {fid} has {len(probs)} foreign-anchor rows but "
                            f"{len(want[fid])} prompt frames: the run is incomplete; rerun "
                            f"'factprobe eval monitor'")
        par = [v for (f, _), v in sorted(probs.items()) if f == "paraphrase"]
        neg = [v for (f, _), v in sorted(probs.items()) if f == "negative"]
        pfd, ird = fact_distances(a, par, neg)
        anchor_prob = float(a.mean())
        score = float(fact_score(pfd, ird, alphas=alphas))
        rows.append({"relation_id": g["relation_id"].iloc[0], "fact_id": fid, "pfd": pfd,
                     "ird": ird, "anchor_prob": anchor_prob, "score": score,
                     "monitor": score / anchor_prob if anchor_prob else float("nan"),
                     "paraphrases": len(par), "negatives": len(neg)})
    return pd.DataFrame(rows, columns=cols)


def frame_correct(text: str, gold: str) -> bool:
    """A frame's greedy answer is right when, normalised, it is the gold or starts with it
    on a word boundary.

    >>> frame_correct(" Paris, France", "Paris"), frame_correct(" Parisian", "Paris")
    (True, False)
    """
    t, g = normalise(str(text or "")), normalise(str(gold))
    return bool(g) and (t == g or t.startswith(g + " "))


def frame_table(outputs: pd.DataFrame) -> pd.DataFrame:
    """One row per (fact, frame, index) of the ``frames`` stage with ``correct``."""
    fr = outputs[outputs["stage"] == "frames"]
    return pd.DataFrame({"relation_id": fr["relation_id"].to_numpy(),
                         "fact_id": fr["fact_id"].to_numpy(), "frame": fr["frame"].to_numpy(),
                         "index": fr["index"].to_numpy(),
                         "correct": [float(frame_correct(t, g))
                                     for t, g in zip(fr["text"], fr["gold"])]})


def frame_accuracy(outputs: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Accuracy of the greedy answer under each prompt frame (paraphrase j, negative context
    m) over facts; their mean (``avg``, with an interval over facts), ``max`` and ``min``.

    >>> out = pd.DataFrame({"stage": ["frames"] * 4, "relation_id": ["r"] * 4,
    ...     "fact_id": ["a", "a", "b", "b"], "frame": ["paraphrase", "negative"] * 2,
    ...     "index": [0, 0, 0, 0], "gold": ["Paris"] * 2 + ["Oslo"] * 2,
    ...     "text": [" Paris", " Rome", " Oslo.", " Oslo"]})
    >>> f = frame_accuracy(out, resamples=0)
    >>> f["avg"]["value"], f["max"], f["min"], f["per_frame"]
    (0.75, 1.0, 0.5, {'negative-0': 0.5, 'paraphrase-0': 1.0})
    """
    ft = frame_table(outputs)
    if ft.empty:
        return {}
    acc = ft.groupby(["frame", "index"], sort=True)["correct"].mean()
    per = ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].agg(["sum", "size"])
    avg = summarise(per.reset_index(), "sum", weights="size", resamples=resamples, seed=seed)
    return {"avg": avg, "max": rnd(acc.max()), "min": rnd(acc.min()),
            "per_frame": {f"{f}-{int(i)}": rnd(v) for (f, i), v in acc.items()}}


def summary(outputs: pd.DataFrame, *, alphas=ALPHAS, resamples: int = 1000,
            seed: int = 0) -> dict:
    """The MONITOR metric set of one run."""
    anc = anchors(outputs)
    facts = per_fact(outputs, alphas=alphas)
    out: dict = {"facts": int(len(anc)), "facts_with_anchor": int(len(facts)),
                 "alphas": {"a1": rnd(alphas[0], 6), "a2": rnd(alphas[1], 6),
                            "a3": rnd(alphas[2], 6)},
                 "anchor_match": summarise(anc, "matched", resamples=resamples, seed=seed)}
    if len(facts):
        strata = facts["relation_id"].to_numpy()
        kw = dict(resamples=resamples, seed=seed)
        out["monitor"] = estimate(facts["score"], strata, weights=facts["anchor_prob"], **kw)
        out["pfd"] = estimate(facts["pfd"], strata, **kw)
        out["ird"] = estimate(facts["ird"], strata, **kw)
        out["anchor_probability"] = estimate(facts["anchor_prob"], strata, **kw)
    out["frame_accuracy"] = frame_accuracy(outputs, resamples=resamples, seed=seed)
    return out
