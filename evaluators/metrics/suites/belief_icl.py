"""BELIEF-ICL's metric set on a decoder LM: the BELIEF set per in-context setting, with lemma
matching, confidence from samples and the one-word generation rate."""
from __future__ import annotations

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import belief as B
from factprobe.evaluators.metrics import belief_icl as BI
from factprobe.evaluators.metrics import details as D
from factprobe.evaluators.metrics import lemmas
from factprobe.evaluators.metrics.suite import (
    OPTIONS,
    Headline,
    MethodMetrics,
    MetricsOptions,
    cfg_value,
    need_stage,
)
from factprobe.evaluators.metrics.suites import belief
from factprobe.evaluators.metrics.validity import validity


def belief_icl_rows(outputs: pd.DataFrame, mode: str = "contiguous") -> pd.DataFrame:
    greedy = need_stage(outputs, "greedy", "belief-icl")
    keys = ["fact_id", "template_id", "subject_name"]
    sets = {c: set(map(tuple, g[keys].to_numpy().tolist()))
            for c, g in greedy.groupby("context", sort=True)}
    full = set().union(*sets.values())
    for c, s in sets.items():
        if s != full:
            raise UserError(f"context {c} has {len(s)} of the run's {len(full)} prompts: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval belief-icl'")
    dup = greedy.duplicated(["context"] + keys)
    if dup.any():
        raise UserError("outputs.parquet has duplicate greedy rows for one prompt: it mixes "
                        "runs; rerun 'factprobe eval belief-icl' into an empty folder")
    belief.check_templates(greedy, "belief-icl")
    return BI.icl_rows(outputs, mode)


def belief_icl_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                       options: MetricsOptions = OPTIONS) -> dict:
    """The BELIEF metric set per in-context setting, with lemma matching, confidence from
    samples and the one-word generation rate."""
    mode = cfg_value(cfg, "lemma_match", "contiguous")
    rows = belief_icl_rows(outputs, mode)
    kw = dict(resamples=options.resamples, seed=options.seed)
    samples = outputs[outputs["stage"] == "samples"]
    if len(samples):
        n = samples.groupby(["context", "fact_id", "prompt_id"]).size()
        if n.nunique() > 1:
            raise UserError(f"sampled prompts have between {n.min()} and {n.max()} samples: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval "
                            f"belief-icl'")
    conf = BI.sample_confidence(outputs, rows, mode)
    out: dict = {"method": "belief-icl", "options": options.as_dict(),
                 "prompts": int(len(rows)), "contexts": {}}
    for ctx, g in rows.groupby("context", sort=True):
        c = conf[conf["context"] == ctx]
        block = B.belief_summary(g, samplings=options.samplings, bins=options.bins,
                                 same=lambda a, b: lemmas.same_answer(a, b, mode),
                                 confidence=c,
                                 subject=cfg_value(cfg, "coverage_subject", "best"), **kw)
        if c.empty:
            block.pop("overconfidence", None)
        block["sampled_prompts"] = int(len(c))
        block["sampled_pairs"] = int(c["fact_id"].nunique()) if len(c) else 0
        block["one_word_rate"] = BI.one_word_rate(g, **kw)
        facts = g.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean().reset_index()
        block["validity"] = validity(facts, planted, column="correct",
                                     accuracy_means="greedy answer matches the gold (mean "
                                                    "over the pair's prompts)",
                                     score_means="same (share of the pair's prompts answered "
                                                 "correctly)", **kw)
        if len(c):
            sf = c.groupby(["relation_id", "fact_id"], sort=True)["gold_share"].mean()
            sf = sf.reset_index()
            block["validity_samples"] = validity(
                sf, planted, column="gold_share", accuracy_means="share of samples naming "
                "the gold", score_means="same", **kw)
        out["contexts"][ctx] = block
    return out


def belief_icl_facts(outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    """Per context: per-pair Acc@1, with the correctly answered prompts (``units``)."""
    rows = belief_icl_rows(outputs, cfg_value(cfg, "lemma_match", "contiguous"))
    out = {}
    for ctx, g in rows.groupby("context", sort=True):
        facts = B.pair_accuracy(g)
        facts.attrs["units"] = B.covered_units(g)
        out[ctx] = facts
    return out


# BELIEF's headlines but the bias level (no content-free prompts), plus the one-word rate.
HEADLINES: dict[str, Headline] = {
    **{k: v for k, v in belief.HEADLINES.items() if not k.startswith("bias")},
    "one_word_rate": (("one_word_rate",), "one-word rate", True),
}

METRICS = MethodMetrics(
    name="belief-icl", compute=belief_icl_metrics, stage="greedy",
    columns=("relation_id", "fact_id", "template_id", "subject_name", "context", "prompt_id",
             "gold_names", "text"),
    facts=belief_icl_facts, headlines=HEADLINES, main="acc1", family="BELIEF",
    validity_blocks=("validity", "validity_samples"),
    lower_is_better=frozenset({"acc1_range", "acc1_std"}), contexts=True,
    plots=frozenset({"calibration", "accuracy_vs_examples"}),
    details=D.belief_icl, matrix=("sharing", belief.sharing))
