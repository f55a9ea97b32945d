"""MONITOR's metric set: PFD, IRD, MONITOR (overall and per relation), anchor probability,
frame accuracies and validity. ``notes`` lists, one line each, what ``factprobe eval monitor``
tells on stderr after the run (relations where no anchor matched)."""
from __future__ import annotations

import pandas as pd

from factprobe.evaluators.metrics import details as D
from factprobe.evaluators.metrics import monitor as MO
from factprobe.evaluators.metrics.suite import (
    OPTIONS,
    VALIDITY_HEADLINES,
    Headline,
    MethodMetrics,
    MetricsOptions,
    need_stage,
)
from factprobe.evaluators.metrics.validity import validity


def monitor_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                    options: MetricsOptions = OPTIONS) -> dict:
    """PFD, IRD, MONITOR (overall and per relation), anchor probability, frame accuracies and
    validity."""
    need_stage(outputs, "anchor", "monitor")
    kw = dict(resamples=options.resamples, seed=options.seed)
    out = {"method": "monitor", "options": options.as_dict(),
           **MO.summary(outputs, alphas=tuple(options.alphas), **kw)}
    anc = MO.anchors(outputs)
    anc = anc.assign(score=anc["matched"] * anc["anchor_prob"])
    out["validity"] = validity(anc, planted, column="matched", score="score",
                               accuracy_means="primary anchor equals the gold",
                               score_means="primary-anchor probability over the object's "
                                           "tokens (0 when the anchor is not the gold)", **kw)
    ft = MO.frame_table(outputs)
    if len(ft):
        per = ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean().reset_index()
        out["validity_frames"] = validity(per, planted, column="correct",
                                          accuracy_means="frame accuracy (mean over the "
                                                         "fact's frame-context prompts)",
                                          score_means="same", **kw)
    return out


def monitor_facts(outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    """Per-fact frame accuracy (without frames: whether the anchor matched the gold)."""
    ft = MO.frame_table(outputs)
    if ft.empty:
        anc = MO.anchors(outputs)
        return {"": anc.rename(columns={"matched": "correct"})}
    return {"": ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean()
            .reset_index()}


def per_fact_table(outputs: pd.DataFrame, options: MetricsOptions) -> pd.DataFrame:
    """PFD, IRD, anchor probability, summand and MONITOR of every fact whose anchor matched."""
    return MO.per_fact(outputs, alphas=tuple(options.alphas))


HEADLINES: dict[str, Headline] = {
    "monitor": (("monitor",), "MONITOR", True),
    "pfd": (("pfd",), "PFD", True),
    "ird": (("ird",), "IRD", True),
    "anchor_probability": (("anchor_probability",), "anchor prob.", True),
    "frame_accuracy_avg": (("frame_accuracy", "avg"), "frame acc. avg", True),
    "frame_accuracy_max": (("frame_accuracy", "max"), "frame acc. max", False),
    "frame_accuracy_min": (("frame_accuracy", "min"), "frame acc. min", False),
    "anchor_match": (("anchor_match",), "anchor = gold", True),
    **VALIDITY_HEADLINES,
}

METRICS = MethodMetrics(
    name="monitor", compute=monitor_metrics, stage="anchor",
    columns=("relation_id", "fact_id", "gold", "text", "token_logprobs"),
    facts=monitor_facts, headlines=HEADLINES, main="monitor", family="MONITOR",
    validity_blocks=("validity", "validity_frames"),
    lower_is_better=frozenset({"monitor", "pfd", "ird"}),
    fact_tables=(("monitor_per_fact", per_fact_table),),
    plots=frozenset({"monitor_vs_accuracy"}),
    # the anchor is the greedy answer after the fact's own gold ("{y*}. Q0(x)"): no other
    # fact's gold is ever its anchor, so only the frames' answers are re-read
    link_shuffle_skip={"validity": "undefined for MONITOR's anchor: it is generated after "
                                   "the fact's own gold ('{y*}. Q0(x)'), so another fact's "
                                   "gold is never its anchor"},
    link_shuffle_stages=("frames",), details=D.monitor)
