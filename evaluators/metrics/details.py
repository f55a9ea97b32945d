"""What the explorer shows of one run's answers to one fact, per method: the exact prompts
(as ids into the page's prompt table), the options ranked by score with the gold marked
(ZP-LKE, prompt baselines), the generations and whether they matched (BELIEF-ICL, MONITOR), the
mask's top-k (BELIEF).

Correctness comes from the metric modules' own row functions (``mc_predictions``,
``response_correct``, ``belief_rows``, ``icl_rows``, ``anchors``, ``frame_table``), so a ✓ on
the page is the ✓ the metrics counted. Each method's suite names its extractor
(:attr:`MethodMetrics.details <factprobe.evaluators.metrics.suite.MethodMetrics>`); a method
without one shows its per-fact results without details.

Each extractor takes the run's own rows and gives ``{fact_id: detail}`` and, where the method
has no per-fact gold probability in its comparison rows, ``{setting: {fact_id: confidence}}``.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics import belief as B
from factprobe.evaluators.metrics import belief_icl as BI
from factprobe.evaluators.metrics import lemmas
from factprobe.evaluators.metrics import monitor as MO
from factprobe.evaluators.metrics import zp_lke as Z
from factprobe.evaluators.metrics.suite import MetricsOptions, cfg_value

Details = tuple[dict[str, dict], dict[str, dict[str, float | None]]]

MC_KEYS = ("seed", "n_examples", "template_id", "corrupted")


def _num(v, digits: int = 4):
    """
    >>> _num(0.123456), _num(float("nan")), _num(None), _num(True)
    (0.1235, None, None, 1.0)
    """
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else round(v, digits)


def _key(row: dict, keys) -> dict:
    out = {}
    for k in keys:
        v = row.get(k)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        out[k] = int(v) if isinstance(v, (int, np.integer, float)) else str(v)
    return out


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def multiple_choice(rows: pd.DataFrame, cfg, options: MetricsOptions) -> Details:
    """ZP-LKE and the prompt baselines: every question's options by log-probability (the
    ranking ``mc_predictions`` picks its answer from; ties: lower option first), the gold's
    normalised probability, and the greedy response with whether it contains the gold."""
    mc = rows[rows["stage"] == "mc"]
    keys = [k for k in Z.QUESTION_KEYS if k in mc.columns]
    preds = Z.mc_predictions(mc, ties_against_gold=bool(cfg_value(cfg, "compat", False)))
    verdict = {tuple(x[k] for k in keys): x for x in preds.to_dict("records")}
    out: dict[str, dict] = {}
    for qk, g in mc.sort_values(keys + ["option"], kind="stable").groupby(keys, sort=True):
        first = g.iloc[0].to_dict()
        lp = g["logprob"].to_numpy(dtype=float)
        prob = np.exp(lp - lp.max()) / np.exp(lp - lp.max()).sum()
        order = np.argsort(-lp, kind="stable")
        # columns taken out once: a cell read through .iloc costs more than the rest of the
        # report (~1,400 questions x 20 options on the sample)
        texts = g["option_text"].tolist() if "option_text" in g else [""] * len(g)
        golds = g["is_gold"].tolist()
        opts = [{"text": _text(texts[i]), "logprob": _num(lp[i]), "prob": _num(prob[i]),
                 "gold": bool(golds[i])} for i in order]
        v = verdict[qk]
        out.setdefault(str(first["fact_id"]), {"questions": [], "responses": []})[
            "questions"].append({"key": _key(first, MC_KEYS), "prompt": str(first["prompt_id"]),
                                 "options": opts, "correct": bool(v["correct"]),
                                 "gold_prob": _num(v["gold_prob"])})
    resp = rows[rows["stage"] == "response"]
    if len(resp):
        ok = Z.response_correct(resp).to_numpy()
        for x, c in zip(resp.to_dict("records"), ok):
            out.setdefault(str(x["fact_id"]), {"questions": [], "responses": []})[
                "responses"].append({"key": _key(x, MC_KEYS), "prompt": str(x["prompt_id"]),
                                     "text": _text(x.get("text")), "correct": bool(c)})
    return out, {}


def belief(rows: pd.DataFrame, cfg, options: MetricsOptions) -> Details:
    """BELIEF on a masked LM: per prompt the mask's top-k with probabilities, the gold names'
    probability and whether the top-1 token counts as the gold (``belief_rows``; a prompt
    without a single-token gold name is shown but not scored)."""
    scored = B.belief_rows(rows, match=cfg_value(cfg, "match", "exact"))
    verdict = {(f, p): (c, gp) for f, p, c, gp in zip(scored["fact_id"], scored["prompt_id"],
                                                     scored["correct"], scored["gold_prob"])}
    prompts = rows[rows["stage"] == "prompts"].sort_values(["fact_id", "template_id"],
                                                           kind="stable")
    out: dict[str, dict] = {}
    for x in prompts.to_dict("records"):
        fid, pid = str(x["fact_id"]), str(x["prompt_id"])
        c, gp = verdict.get((x["fact_id"], x["prompt_id"]), (None, None))
        out.setdefault(fid, {"prompts": []})["prompts"].append({
            "template_id": str(x.get("template_id") or ""), "prompt": pid,
            "top": [[str(t), _num(p)] for t, p in zip(x["top_tokens"], x["top_probs"])],
            "correct": None if c is None else bool(c), "gold_prob": _num(gp)})
    conf = scored.groupby("fact_id", sort=True)["gold_prob"].mean()
    return out, {"": {str(f): _num(v) for f, v in conf.items()}}


def belief_icl(rows: pd.DataFrame, cfg, options: MetricsOptions) -> Details:
    """BELIEF-ICL: per context and prompt the greedy answer and whether it matches a gold name
    (lemma match, ``icl_rows``), and the sampled answers with their counts and matches."""
    mode = (cfg or {}).get("lemma_match", "contiguous") if isinstance(cfg, dict) else \
        getattr(cfg, "lemma_match", "contiguous")
    greedy = BI.icl_rows(rows, mode).sort_values(["context", "fact_id", "template_id"],
                                                 kind="stable")
    samples = rows[rows["stage"] == "samples"]
    lemmas.warm([_text(t) for t in samples["text"]])
    drawn: dict[tuple, Counter] = {}
    for c, f, p, t in zip(samples["context"], samples["fact_id"], samples["prompt_id"],
                          samples["text"]):
        drawn.setdefault((c, f, p), Counter())[_text(t)] += 1
    out: dict[str, dict] = {}
    share: dict[str, dict[str, list]] = {}
    for x in greedy.to_dict("records"):
        fid = str(x["fact_id"])
        gold = list(x["gold_names"])
        counted = drawn.get((x["context"], x["fact_id"], x["prompt_id"]), Counter())
        smp = [[t, n, bool(BI.icl_correct(t, gold, mode))]
               for t, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))]
        if counted:
            hits = sum(n for _, n, ok in smp if ok) / sum(counted.values())
            share.setdefault(str(x["context"]), {}).setdefault(fid, []).append(hits)
        out.setdefault(fid, {"generations": []})["generations"].append({
            "context": str(x["context"]), "template_id": str(x.get("template_id") or ""),
            "prompt": str(x["prompt_id"]), "text": x["prediction"],
            "correct": bool(x["correct"]), "one_word": bool(x["one_word"]), "samples": smp})
    return out, {ctx: {f: _num(np.mean(v)) for f, v in sorted(facts.items())}
                 for ctx, facts in share.items()}


def monitor(rows: pd.DataFrame, cfg, options: MetricsOptions) -> Details:
    """MONITOR: the anchor (greedy answer to the positive prompt) and whether it is the gold,
    its probability over the object's tokens, the frame prompts' answers and their
    correctness, and PFD / IRD / MONITOR where the anchor matched."""
    anc = MO.anchors(rows).set_index("fact_id")
    per = MO.per_fact(rows, alphas=tuple(options.alphas)).set_index("fact_id")
    ft = MO.frame_table(rows)
    fr = rows[rows["stage"] == "frames"]
    out: dict[str, dict] = {}
    for x in rows[rows["stage"] == "anchor"].to_dict("records"):
        fid = str(x["fact_id"])
        a = anc.loc[x["fact_id"]]
        d = {"anchor": {"prompt": str(x["prompt_id"]), "text": _text(x.get("text")),
                        "matched": bool(a["matched"]), "prob": _num(a["anchor_prob"])},
             "frames": []}
        if x["fact_id"] in per.index:
            p = per.loc[x["fact_id"]]
            d["scores"] = {k: _num(p[k]) for k in ("pfd", "ird", "monitor")}
        out[fid] = d
    ok = ft["correct"].to_numpy()
    for i, x in enumerate(fr.to_dict("records")):
        out.setdefault(str(x["fact_id"]), {"frames": []})["frames"].append({
            "key": str(ft["key"].iloc[i]), "frame": str(x.get("frame") or ""),
            "template_id": str(x["template_id"]) if isinstance(x.get("template_id"), str) else "",
            "prompt": str(x["prompt_id"]), "text": _text(x.get("text")), "correct": bool(ok[i])})
    for d in out.values():
        d["frames"].sort(key=lambda f: (f["frame"], f["key"]))
    return out, {}

