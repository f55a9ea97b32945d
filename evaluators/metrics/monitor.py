"""MONITOR metrics (Wang et al., Sec. 4): PFD, IRD and MONITOR per fact, relation and overall,
frame accuracies and the mean primary-anchor probability.

A fact counts for the distances only when its primary anchor (the greedy answer to
"{gold}. Q0(x)") equals the gold after trimming punctuation, the probe's rule. Its anchor
probabilities P+_l are those of the object's own tokens under the positive prompt (the
``object`` stage; L counts the object's subwords, Eq. 1), never those of a trailing "."; the
foreign anchors P_j,l (paraphrase j) and P-_m,l (negative m) are read from the ``foreign``
stage (teacher-forced log-probs, or the compat run's ``watched_logprobs``), cut or
zero-padded to L. Missing tokens count as probability 0.

Where no fact of a relation (or of the run) has a matched anchor, PFD, IRD, MONITOR and the
anchor probability are ``null`` with a ``reason``, and ``notes`` says so in one line.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics.stats import estimate, rnd, summarise
from factprobe.evaluators.metrics.text import normalise

ALPHAS = (1 / 3, 1 / 3, 1 / 3)
DISTANCES = ("monitor", "pfd", "ird", "anchor_probability")


def fact_distances(anchor: np.ndarray, paraphrases: list[np.ndarray],
                   negatives: list[np.ndarray]) -> tuple[float, float]:
    """(PFD, IRD) of one fact (Eqs. 1 and 2): mean over prompts of the mean absolute
    difference, token by token, between the anchor's probabilities under the positive prompt
    and under each paraphrase (PFD, divided by the real R) or negative prompt (IRD, the real
    M). A foreign anchor is cut or zero-padded to the anchor's L tokens.

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
    """The MONITOR summand of a fact (Eq. 3's numerator): sqrt(a1 PFD^2 + a2 IRD^2 +
    a3 PFD IRD).

    >>> round(float(fact_score(0.1, 0.2)), 4)
    0.1528
    """
    a1, a2, a3 = alphas
    pfd, ird = np.asarray(pfd, dtype=float), np.asarray(ird, dtype=float)
    return np.sqrt(a1 * pfd ** 2 + a2 * ird ** 2 + a3 * pfd * ird)


def monitor_score(pfd: np.ndarray, ird: np.ndarray, anchor_mean: np.ndarray, *,
                  alphas=ALPHAS) -> float:
    """Eq. 3: sum_c sqrt(a1 PFD^2 + a2 IRD^2 + a3 PFD IRD) / sum_c mean_l P+_l. Lower is
    better.

    >>> round(monitor_score(np.array([0.1, 0.3]), np.array([0.2, 0.1]), np.array([0.8, 0.6])), 4)
    0.2578
    """
    return float(fact_score(pfd, ird, alphas=alphas).sum() / np.asarray(anchor_mean).sum())


def anchor_matched(text: str, gold: str, n_tokens: int = 1) -> bool:
    """The probe's rule: the greedy anchor equals the gold, both trimmed of punctuation.

    >>> anchor_matched(" Paris.", "Paris"), anchor_matched(" Paris is", "Paris")
    (True, False)
    >>> anchor_matched(" Washington, D.C.", "Washington, D.C.")
    True
    """
    from factprobe.probes.methods.monitor import anchor_ok
    return n_tokens > 0 and anchor_ok(text, gold)


def _probs(logprobs) -> np.ndarray:
    return np.exp(np.asarray([] if logprobs is None else logprobs, dtype=float))


def object_probs(outputs: pd.DataFrame, matched: set) -> dict[str, np.ndarray]:
    """P+_l of every matched fact: its object's tokens under the positive prompt (the
    ``object`` stage). A matched fact without its row is a user error (an incomplete run, or
    one written before the anchor was cut to the object's tokens)."""
    if not matched:
        return {}
    obj = outputs[outputs["stage"] == "object"]
    if obj.empty:
        raise UserError("outputs.parquet has no 'object' rows: it was written by an older "
                        "factprobe, whose anchor included the trailing punctuation the model "
                        "adds; rerun 'factprobe eval monitor'")
    got = {fid: _probs(lp) for fid, lp in zip(obj["fact_id"], obj["token_logprobs"])}
    missing = sorted(matched - set(got))
    if missing:
        raise UserError(f"{len(missing)} fact(s) whose anchor matched the gold have no "
                        f"'object' row (e.g. {missing[0]}): the run is incomplete; rerun "
                        f"'factprobe eval monitor'")
    return {fid: got[fid] for fid in sorted(matched)}


def anchors(outputs: pd.DataFrame) -> pd.DataFrame:
    """One row per fact: whether its anchor matched the gold and its primary-anchor
    probability (1/L) sum_l P+_l over the object's tokens (0 when it did not match)."""
    a = outputs[outputs["stage"] == "anchor"]
    if a["fact_id"].duplicated().any():
        raise UserError("outputs.parquet has several anchor rows for one fact: it mixes runs; "
                        "rerun 'factprobe eval monitor' into an empty folder")
    n_tok = [len(t) if t is not None else 0 for t in a["token_ids"]] \
        if "token_ids" in a.columns else [1] * len(a)
    # the probe scored the object of every anchor its rule (--anchor-match) accepted: a fact
    # with an object row matched, whichever rule the run used
    scored = set(outputs.loc[outputs["stage"] == "object", "fact_id"])
    matched = [anchor_matched(t, g, n) or f in scored
               for t, g, n, f in zip(a["text"], a["gold"], n_tok, a["fact_id"])]
    plus = object_probs(outputs, {f for f, m in zip(a["fact_id"], matched) if m})
    prob = [float(plus[f].mean()) if m and len(plus[f]) else 0.0
            for f, m in zip(a["fact_id"], matched)]
    return pd.DataFrame({"relation_id": a["relation_id"].to_numpy(),
                         "fact_id": a["fact_id"].to_numpy(), "matched": np.array(matched, float),
                         "anchor_prob": prob}).sort_values(["relation_id", "fact_id"],
                                                           kind="stable").reset_index(drop=True)


def per_fact(outputs: pd.DataFrame, *, alphas=ALPHAS) -> pd.DataFrame:
    """PFD, IRD, mean anchor probability, anchor length L and the MONITOR summand (``score``)
    and ratio (``monitor`` = score / anchor probability) for every fact whose anchor matched
    its gold. A matched fact without its foreign-anchor rows is a user error (an incomplete
    run)."""
    cols = ["relation_id", "fact_id", "pfd", "ird", "anchor_prob", "score", "monitor",
            "paraphrases", "negatives", "anchor_tokens"]
    ok = anchors(outputs)
    matched = set(ok.loc[ok["matched"] > 0, "fact_id"])
    plus = object_probs(outputs, matched)
    foreign = outputs[outputs["stage"] == "foreign"]
    missing = sorted(matched - set(foreign["fact_id"]))
    if missing:
        raise UserError(f"{len(missing)} fact(s) whose anchor matched the gold have no "
                        f"foreign-anchor rows (e.g. {missing[0]}): the run is incomplete; "
                        f"rerun 'factprobe eval monitor'")
    # every matched fact gets one foreign row per paraphrase and negative prompt (R + M, as
    # the probe recorded them on its object row)
    obj = outputs[outputs["stage"] == "object"].drop_duplicates("fact_id").set_index("fact_id")
    want = {}
    if {"n_paraphrases", "n_negatives"} <= set(obj.columns):
        want = {fid: {("paraphrase", j) for j in range(int(r))} |
                {("negative", m) for m in range(int(n))}
                for fid, r, n in zip(obj.index, obj["n_paraphrases"], obj["n_negatives"])}
    rows = []
    for fid, g in foreign[foreign["fact_id"].isin(matched)].groupby("fact_id", sort=True):
        a = plus[fid]
        use_watched = "watched_logprobs" in g.columns and g["watched_logprobs"].notna().any()
        col = "watched_logprobs" if use_watched else "token_logprobs"
        probs = {(f, int(i)): _probs(v) for f, i, v in zip(g["frame"], g["index"], g[col])}
        if fid in want and set(probs) != want[fid]:
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
                     "paraphrases": len(par), "negatives": len(neg), "anchor_tokens": len(a)})
    return pd.DataFrame(rows, columns=cols)


def frame_correct(text: str, gold: str) -> bool:
    """A frame's greedy answer is right when, normalised, it is the gold or starts with it
    on a word boundary.

    >>> frame_correct(" Paris, France", "Paris"), frame_correct(" Parisian", "Paris")
    (True, False)
    """
    t, g = normalise(str(text or "")), normalise(str(gold))
    return bool(g) and (t == g or t.startswith(g + " "))


def frame_key(frame: str, index, negative=None) -> str:
    """The name of a prompt within its relation: "q{j}-neg{m}" for the combination of
    paraphrase j and negative context m, "paraphrase-{j}" / "negative-{m}" for the prompts
    MONITOR reads.

    >>> frame_key("combination", 2, 4), frame_key("paraphrase", 1)
    ('q2-neg4', 'paraphrase-1')
    """
    if frame == "combination":
        return f"q{int(index)}-neg{int(negative)}"
    return f"{frame}-{int(index)}"


def frame_table(outputs: pd.DataFrame) -> pd.DataFrame:
    """One row per greedy answer of the ``frames`` stage: its relation, fact, prompt ``key``
    (:func:`frame_key`) and ``correct``."""
    fr = outputs[outputs["stage"] == "frames"]
    neg = fr["negative"] if "negative" in fr.columns else pd.Series([None] * len(fr))
    return pd.DataFrame({"relation_id": fr["relation_id"].to_numpy(),
                         "fact_id": fr["fact_id"].to_numpy(), "frame": fr["frame"].to_numpy(),
                         "key": [frame_key(f, i, m) for f, i, m in
                                 zip(fr["frame"], fr["index"], neg)],
                         "correct": [float(frame_correct(t, g))
                                     for t, g in zip(fr["text"], fr["gold"])]})


def frame_accuracy(outputs: pd.DataFrame, *, resamples: int = 1000, seed: int = 0) -> dict:
    """The paper's accuracies (Table 4): per relation, the accuracy of each prompt over the
    relation's facts (by default the R x M frame-context combinations); the relation's
    ``avg`` (share of its prompts answered right), ``max`` and ``min`` over its own prompts;
    then each averaged over relations. ``avg`` has an interval (facts resampled within
    relations) and ``micro`` (the share of all answers, relations pooled).

    >>> out = pd.DataFrame({"stage": ["frames"] * 6, "relation_id": ["r"] * 4 + ["s"] * 2,
    ...     "fact_id": ["a", "a", "b", "b", "c", "c"], "frame": ["combination"] * 6,
    ...     "index": [0, 1, 0, 1, 0, 1], "negative": [0] * 6,
    ...     "gold": ["Paris"] * 2 + ["Oslo"] * 2 + ["Lima"] * 2,
    ...     "text": [" Paris", " Rome", " Oslo.", " Oslo", " Lima", " Quito"]})
    >>> f = frame_accuracy(out, resamples=0)
    >>> f["avg"]["value"], f["avg"]["micro"], f["max"], f["min"]
    (0.625, 0.6667, 1.0, 0.25)
    >>> f["per_frame"]["r"]
    {'q0-neg0': 1.0, 'q1-neg0': 0.5}
    """
    ft = frame_table(outputs)
    if ft.empty:
        return {}
    acc = ft.groupby(["relation_id", "key"], sort=True)["correct"].mean()
    per = ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].agg(["sum", "size"])
    s = summarise(per.reset_index(), "sum", weights="size", resamples=resamples, seed=seed)
    avg = {"value": s["macro"], "ci_low": s["macro_ci_low"], "ci_high": s["macro_ci_high"],
           "n": s["n"], "micro": s["value"], "micro_ci_low": s["ci_low"],
           "micro_ci_high": s["ci_high"], "per_relation": s["per_relation"]}
    rel_max = acc.groupby(level=0).max()
    rel_min = acc.groupby(level=0).min()
    per_relation = {rel: {"max": rnd(rel_max[rel]), "min": rnd(rel_min[rel]),
                          "prompts": int(acc.loc[rel].size)} for rel in rel_max.index}
    per_frame = {rel: {k: rnd(v) for k, v in acc.loc[rel].items()} for rel in rel_max.index}
    return {"avg": dict(sorted(avg.items())), "max": rnd(rel_max.mean()),
            "min": rnd(rel_min.mean()), "per_relation": per_relation, "per_frame": per_frame}


def no_anchor(facts: int) -> str:
    """
    >>> no_anchor(12)
    'no primary anchor equals its gold (0 of 12 facts)'
    """
    return f"no primary anchor equals its gold (0 of {facts} facts)"


def null_metric(facts: int) -> dict:
    return {"value": None, "ci_low": None, "ci_high": None, "n": 0, "reason": no_anchor(facts)}


UNMATCHED = "primary anchor is not the gold"


def unmatched(anc: pd.DataFrame) -> dict:
    """The facts the distances leave out (their primary anchor is not the gold), per relation,
    and the relations left out whole.

    >>> a = pd.DataFrame({"relation_id": ["P1", "P1", "P2"], "matched": [True, False, False]})
    >>> unmatched(a)
    {'facts': 2, 'of': 3, 'reasons': {'primary anchor is not the gold': {'P1': 1, 'P2': 1}}, 'relations': ['P2']}
    """
    miss = anc[~anc["matched"].astype(bool)]
    per = {str(r): int(n) for r, n in miss.groupby("relation_id").size().sort_index().items()}
    sizes = anc.groupby("relation_id").size()
    return {"facts": len(miss), "of": len(anc), "reasons": {UNMATCHED: per} if per else {},
            "relations": [r for r, n in per.items() if n == int(sizes[r])]}


def summary(outputs: pd.DataFrame, *, alphas=ALPHAS, resamples: int = 1000,
            seed: int = 0) -> dict:
    """The MONITOR metric set of one run. Relations (or a run) without a matched anchor get
    ``null`` distances with the reason, and a line in ``notes``."""
    anc = anchors(outputs)
    facts = per_fact(outputs, alphas=alphas)
    out: dict = {"facts": len(anc), "facts_with_anchor": len(facts),
                 "alphas": {"a1": rnd(alphas[0], 6), "a2": rnd(alphas[1], 6),
                            "a3": rnd(alphas[2], 6)},
                 "anchor_match": summarise(anc, "matched", resamples=resamples, seed=seed)}
    sizes = anc.groupby("relation_id").size()
    empty = [rel for rel in sizes.index if rel not in set(facts["relation_id"])]
    notes = [f"no anchor matched in relation {rel} ({int(sizes[rel])} facts): "
             f"MONITOR/PFD/IRD are null" for rel in empty]
    if len(empty) > 1:
        notes = [f"no anchor matched in {len(empty)} relations, whose MONITOR/PFD/IRD are "
                 f"null: " + ", ".join(f"{rel} ({int(sizes[rel])} facts)" for rel in empty)]
    out["skipped"] = unmatched(anc)
    partial = {r: n for r, n in out["skipped"]["reasons"].get(UNMATCHED, {}).items()
               if r not in empty}
    if partial:
        notes.append(f"MONITOR/PFD/IRD leave out {sum(partial.values())} facts ({UNMATCHED}): "
                     + ", ".join(f"{r} {n} of {int(sizes[r])}" for r, n in partial.items()))
    if len(facts):
        strata = facts["relation_id"].to_numpy()
        kw = dict(resamples=resamples, seed=seed)
        out["monitor"] = estimate(facts["score"], strata, weights=facts["anchor_prob"], **kw)
        out["pfd"] = estimate(facts["pfd"], strata, **kw)
        out["ird"] = estimate(facts["ird"], strata, **kw)
        out["anchor_probability"] = estimate(facts["anchor_prob"], strata, **kw)
        for name in DISTANCES:
            rels = out[name].setdefault("per_relation", {})
            rels.update({rel: null_metric(int(sizes[rel])) for rel in empty})
            out[name]["per_relation"] = dict(sorted(rels.items()))
    else:
        for name in DISTANCES:
            out[name] = null_metric(len(anc))
            out[name]["per_relation"] = {rel: null_metric(int(sizes[rel])) for rel in empty}
        if len(empty) != 1:
            notes = [(f"no anchor matched in any relation ({len(anc)} facts): "
                      f"MONITOR/PFD/IRD are null")]
    a = outputs[outputs["stage"] == "anchor"]
    blank = int(sum(not str(t or "").strip() for t in a["text"]))
    if blank * 2 > len(a):
        # generation stops at a line break: a model that answers on the next line (one taught
        # an answer cue) gives empty anchors under the paper's frames
        notes.append(f"{blank} of {len(a)} primary anchors are empty (the answer starts with "
                     f"a line break, where generation stops); a model taught an answer cue "
                     f"needs it, e.g. --answer-suffix '\\nAnswer:'")
    out["frame_accuracy"] = frame_accuracy(outputs, resamples=resamples, seed=seed)
    out["notes"] = notes
    return out
